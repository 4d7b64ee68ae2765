/* SPDX-License-Identifier: ISC */
/*
 * up_plain.c - the upstream kind "plain Modbus/TCP": the PLC behind a
 * server gateway.  Requests go out as they are; the byte stream that comes
 * back is cut into ADUs by the MBAP length field (Modbus Messaging on
 * TCP/IP Implementation Guide v1.0b, 3.1.3).  A header that cannot start an
 * ADU ends the connection, since the stream can no longer be followed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#include "up_kinds.h"
#include "upstream_kind.h"

static int plain_connected(struct gw_upstream *u, char *why, size_t why_len)
{
    (void)why;
    (void)why_len;
    u->k.plain.in_len = u->k.plain.out_len = 0;
    gw_up_ready(u);
    return 0;
}

static unsigned plain_events(const struct gw_upstream *u)
{
    return GW_IO_IN | (u->k.plain.out_len > 0 ? GW_IO_OUT : 0u);
}

/* Send what waits; -1 after gw_up_fail. */
static int plain_flush(struct gw_upstream *u)
{
    struct gw_up_plain_state *p = &u->k.plain;
    size_t had = p->out_len;

    while (p->out_len > 0) {
        ssize_t n = send(u->fd, p->out, p->out_len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            char why[512];

            snprintf(why, sizeof why, "send to %s: %s", u->name,
                     n < 0 ? strerror(errno) : "nothing sent");
            gw_up_fail(u, why);
            return -1;
        }
        memmove(p->out, p->out + n, p->out_len - (size_t)n);
        p->out_len -= (size_t)n;
    }
    if ((p->out_len > 0) != (had > 0))
        gw_up_rewatch(u);
    return 0;
}

/* Cut whole ADUs off the input; -1 after gw_up_fail. */
static int plain_deliver(struct gw_upstream *u)
{
    struct gw_up_plain_state *p = &u->k.plain;
    size_t at = 0;

    while (p->in_len - at >= MBSC_MBAP_LENGTH_END) {
        uint8_t adu[MBSC_ADU_MAX];
        size_t n = mbsc_adu_length(p->in + at);

        if (n == 0) {
            gw_up_fail(u, "malformed MBAP header from the PLC: the stream cannot be followed "
                          "any more");
            return -1;
        }
        if (p->in_len - at < n)
            break;
        /* A copy: the answer hook may send, and a failure resets the buffers. */
        memcpy(adu, p->in + at, n);
        at += n;
        gw_up_deliver(u, adu, n);
        if (u->state != GW_UP_READY)
            return -1;
    }
    memmove(p->in, p->in + at, p->in_len - at);
    p->in_len -= at;
    return 0;
}

static void plain_io(struct gw_upstream *u, unsigned happened)
{
    struct gw_up_plain_state *p = &u->k.plain;

    if ((happened & (GW_IO_OUT | GW_IO_ERR)) && p->out_len > 0 && plain_flush(u) != 0)
        return;
    if (!(happened & (GW_IO_IN | GW_IO_ERR)))
        return;
    for (;;) {
        size_t room = sizeof p->in - p->in_len;
        ssize_t n = recv(u->fd, p->in + p->in_len, room, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            char why[512];

            snprintf(why, sizeof why, "%s closed the connection%s%s", u->name, n < 0 ? ": " : "",
                     n < 0 ? strerror(errno) : "");
            gw_up_fail(u, why);
            return;
        }
        p->in_len += (size_t)n;
        if (plain_deliver(u) != 0)
            return;
        /*
         * Less than there was room for: the socket is drained.  The loop's
         * epoll is level-triggered, so whatever comes next wakes it again;
         * another recv() now would only return EAGAIN, one system call per
         * answer for nothing.
         */
        if ((size_t)n < room)
            return;
    }
}

static int plain_send(struct gw_upstream *u, const uint8_t *adu, size_t len)
{
    struct gw_up_plain_state *p = &u->k.plain;

    if (len > sizeof p->out - p->out_len)
        return MBSC_ERR_WOULD_BLOCK;
    memcpy(p->out + p->out_len, adu, len);
    p->out_len += len;
    if (u->corked)
        return MBSC_OK;   /* plain_flush_kept sends it */
    (void)plain_flush(u); /* a failure is reported through the down hook */
    if (u->state == GW_UP_READY && p->out_len > 0)
        gw_up_rewatch(u);
    return MBSC_OK;
}

static void plain_flush_kept(struct gw_upstream *u)
{
    if (plain_flush(u) == 0 && u->k.plain.out_len > 0)
        gw_up_rewatch(u);
}

static void plain_drop(struct gw_upstream *u)
{
    /* Process data, not kept. */
    sodium_memzero(&u->k.plain, sizeof u->k.plain);
}

static void plain_describe(const struct gw_upstream *u, char *buf, size_t len)
{
    (void)u;
    snprintf(buf, len, "plain Modbus/TCP");
}

const struct gw_up_kind gw_up_plain = {
    .name = "plain",
    .scheme = NULL,
    .connected = plain_connected,
    .events = plain_events,
    .io = plain_io,
    .send = plain_send,
    .flush = plain_flush_kept,
    .drop = plain_drop,
    .describe = plain_describe,
};
