/* SPDX-License-Identifier: ISC */
/*
 * up_mbsc.c - the upstream kind "mbsc session": a client gateway's one
 * session to a server gateway or any mbsc slave, as master, driven through
 * the library's public link (mbsc/link.h) so that nothing blocks: the
 * handshake advances with the loop, every request is one sealed frame,
 * every opened payload one answer.  A new connection always runs a new
 * handshake; a session that fails (a bad tag, the peer's close) ends the
 * connection and its keys are wiped with it.
 *
 * docs/protocol.md: an authenticated payload that is not one Modbus/TCP
 * ADU is a protocol error, which ends the session.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "up_kinds.h"
#include "upstream_kind.h"

static void session_failed(struct gw_upstream *u, int r)
{
    struct gw_up_mbsc_state *m = &u->k.mbsc;
    char why[1024];

    snprintf(why, sizeof why, "mbsc session with %s ended: %s%s%s", u->name, mbsc_strerror(r),
             m->link.os_err != 0 ? ": " : "", m->link.os_err != 0 ? strerror(m->link.os_err) : "");
    gw_up_fail(u, why);
}

static int mbsc_connected(struct gw_upstream *u, char *why, size_t why_len)
{
    struct gw_up_mbsc_state *m = &u->k.mbsc;
    int r = MBSC_ERR_INVALID_ARG;

    /* A master's session has message 1 in its output at once. */
    m->s = mbsc_session_new(u->cfg, &r);
    if (m->s == NULL) {
        snprintf(why, why_len, "cannot start a session: %s", mbsc_strerror(r));
        return -1;
    }
    mbsc_link_init(&m->link, u->fd, m->s);
    r = mbsc_link_flush(&m->link);
    if (r != MBSC_OK) {
        snprintf(why, why_len, "handshake with %s: %s", u->name, mbsc_strerror(r));
        return -1;
    }
    return 0;
}

static unsigned mbsc_events(const struct gw_upstream *u)
{
    short e = mbsc_link_events(&u->k.mbsc.link);

    return (e & POLLIN ? GW_IO_IN : 0u) | (e & POLLOUT ? GW_IO_OUT : 0u);
}

/* Take every payload that has arrived; -1 once the connection is gone. */
static int take_payloads(struct gw_upstream *u)
{
    struct gw_up_mbsc_state *m = &u->k.mbsc;

    for (;;) {
        uint8_t adu[MBSC_ADU_MAX];
        size_t n = 0;
        int r = mbsc_link_recv(&m->link, adu, sizeof adu, &n);

        if (r == 0)
            return 0;
        if (r == MBSC_ERR_BUFFER_TOO_SMALL) {
            gw_up_fail(u, "the mbsc peer sent a payload longer than a Modbus/TCP ADU");
            return -1;
        }
        if (r < 0) {
            session_failed(u, r);
            return -1;
        }
        if (u->state == GW_UP_CONNECTING && mbsc_session_established(m->s))
            gw_up_ready(u);
        if (n == 0)
            continue; /* a keep-alive */
        if (n < MBSC_ADU_MIN || mbsc_adu_length(adu) != n) {
            sodium_memzero(adu, sizeof adu);
            gw_up_fail(u, "the mbsc peer sent a payload that is not a Modbus/TCP ADU");
            return -1;
        }
        gw_up_deliver(u, adu, n);
        sodium_memzero(adu, n); /* plaintext of the session */
        if (u->state != GW_UP_READY)
            return -1;
    }
}

static void mbsc_io(struct gw_upstream *u, unsigned happened)
{
    struct gw_up_mbsc_state *m = &u->k.mbsc;
    int had_output = mbsc_link_output_pending(&m->link);
    int r;

    if (had_output && (happened & (GW_IO_OUT | GW_IO_ERR))) {
        r = mbsc_link_flush(&m->link);
        if (r != MBSC_OK) {
            session_failed(u, r);
            return;
        }
    }
    if (take_payloads(u) != 0)
        return;
    /* The handshake's last message, the confirming frame, answers that went out. */
    r = mbsc_link_flush(&m->link);
    if (r != MBSC_OK) {
        session_failed(u, r);
        return;
    }
    if (u->state == GW_UP_CONNECTING && mbsc_session_established(m->s))
        gw_up_ready(u);
    if (u->state == GW_UP_READY && had_output && !mbsc_link_output_pending(&m->link))
        gw_up_room(u);
    if (u->fd >= 0)
        gw_up_rewatch(u);
}

static int mbsc_send(struct gw_upstream *u, const uint8_t *adu, size_t len)
{
    struct gw_up_mbsc_state *m = &u->k.mbsc;
    int r = mbsc_link_send(&m->link, adu, len);

    if (r == MBSC_ERR_WOULD_BLOCK) {
        gw_up_rewatch(u); /* POLLOUT: flush, then the room hook */
        return r;
    }
    if (r != MBSC_OK) {
        session_failed(u, r);
        return MBSC_OK; /* taken; its requester hears from the multiplexer */
    }
    gw_up_rewatch(u);
    return MBSC_OK;
}

static void mbsc_drop(struct gw_upstream *u)
{
    mbsc_session_free(u->k.mbsc.s); /* wipes the session's keys */
    memset(&u->k.mbsc, 0, sizeof u->k.mbsc);
}

static void mbsc_describe(const struct gw_upstream *u, char *buf, size_t len)
{
    const mbsc_cipher *c =
        u->state == GW_UP_READY && u->k.mbsc.s != NULL ? mbsc_session_cipher(u->k.mbsc.s) : NULL;

    snprintf(buf, len, "mbsc%s%s", c != NULL ? " with " : "", c != NULL ? mbsc_cipher_name(c) : "");
}

const struct gw_up_kind gw_up_mbsc = {
    .name = "mbsc",
    .scheme = NULL,
    .connected = mbsc_connected,
    .events = mbsc_events,
    .io = mbsc_io,
    .send = mbsc_send,
    .drop = mbsc_drop,
    .describe = mbsc_describe,
};
