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
 *
 * A handshake that fails is explained with its likely cause, as
 * secure_master does: the session says what happened ("the peer closed
 * the connection"), this file knows what that means for a master (see
 * docs/protocol.md, "Message 1" and "Message 2").  A slave refuses in
 * silence, closing without a word, both a key it does not list and a
 * message 1 made for another slave's key, so from here those look alike
 * and the message names both (the slave's log tells which); a reply that
 * fails to authenticate means that the PSKs differ; and the first bytes
 * that came back, peeked before the session reads them, tell a plain
 * Modbus/TCP port (an MBAP header) from another protocol.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#include "up_kinds.h"
#include "upstream_kind.h"

/* An MBAP header (Modbus Messaging on TCP/IP, 3.1.3): protocol id 0, length 2..254. */
static int answered_mbap(const struct gw_up_mbsc_state *m)
{
    unsigned length;

    if (m->n_first < 6 || m->first[2] != 0 || m->first[3] != 0)
        return 0;
    length = (unsigned)m->first[4] << 8 | m->first[5];
    return length >= 2 && length <= 254;
}

/* What a handshake that failed with r most likely means; NULL when r says it well enough. */
static const char *handshake_cause(const struct gw_upstream *u, int r)
{
    const struct gw_up_mbsc_state *m = &u->k.mbsc;

    if (r == MBSC_ERR_PSK_MISMATCH)
        return "the pre-shared keys differ: the server's reply does not authenticate with "
               "ours (give both ends the same --psk file, or neither)";
    if (answered_mbap(m))
        return "not an mbsc port: it answered with a Modbus/TCP header (a plain Modbus/TCP "
               "server or a PLC?); --upstream must be the mbsc port of a server gateway or "
               "secure slave, by convention 1502";
    if (m->n_first > 0 && (r == MBSC_ERR_FRAME_LENGTH || r == MBSC_ERR_HANDSHAKE_MESSAGE ||
                           r == MBSC_ERR_TRUNCATED || r == MBSC_ERR_BAD_VERSION))
        return "not an mbsc port: what it answered is no mbsc handshake (another protocol?); "
               "--upstream must be the mbsc port of a server gateway or secure slave";
    if (m->n_first == 0 && (r == MBSC_ERR_PEER_CLOSED || r == MBSC_ERR_IO))
        return "the server closed the connection without answering our handshake: our key "
               "is not in its allow-list, or --peer is not its public key (its log says "
               "which), or it is not an mbsc port";
    return NULL;
}

static void session_failed(struct gw_upstream *u, int r)
{
    struct gw_up_mbsc_state *m = &u->k.mbsc;
    const char *cause = u->state == GW_UP_CONNECTING ? handshake_cause(u, r) : NULL;
    char why[1024];

    if (cause != NULL)
        snprintf(why, sizeof why, "handshake with %s failed: %s", u->name, cause);
    else
        snprintf(why, sizeof why, "mbsc session with %s ended: %s%s%s", u->name, mbsc_strerror(r),
                 m->link.os_err != 0 ? ": " : "",
                 m->link.os_err != 0 ? strerror(m->link.os_err) : "");
    gw_up_fail(u, why);
}

/* During the handshake: keep the first bytes the peer sends, before the session reads them. */
static void peek_first(struct gw_upstream *u)
{
    struct gw_up_mbsc_state *m = &u->k.mbsc;
    ssize_t n;

    if (u->state != GW_UP_CONNECTING || m->n_first > 0)
        return;
    do
        n = recv(u->fd, m->first, sizeof m->first, MSG_PEEK | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n > 0)
        m->n_first = (size_t)n;
}

/* The handshake timed out with the TCP connection made. */
static void mbsc_stalled(const struct gw_upstream *u, char *buf, size_t len)
{
    if (u->k.mbsc.n_first == 0)
        snprintf(buf, len,
                 "the port took the connection and never answered our handshake: not an mbsc "
                 "port (a plain Modbus/TCP server waits, silent, for the rest of a request), "
                 "or the server is overloaded");
    else if (answered_mbap(&u->k.mbsc))
        snprintf(buf, len, "not an mbsc port: it answered with a Modbus/TCP header");
    else
        snprintf(buf, len, "the answer to our handshake stopped short");
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

/*
 * Take every payload that has arrived, reading the socket once: the
 * loop's epoll is level-triggered, so bytes that come after this read
 * wake it again, and a second read would mostly return EAGAIN (one system
 * call per answer for nothing).  -1 once the connection is gone.
 */
static int take_payloads(struct gw_upstream *u)
{
    struct gw_up_mbsc_state *m = &u->k.mbsc;
    int have_read = 0;

    for (;;) {
        uint8_t adu[MBSC_ADU_MAX];
        size_t n = 0;
        int r = mbsc_session_recv(m->s, adu, sizeof adu, &n);

        if (r == 0 && !have_read) {
            have_read = 1;
            r = mbsc_link_read(&m->link);
            if (r == MBSC_OK || (r == MBSC_ERR_PEER_CLOSED && m->link.eof))
                continue; /* at the end of the stream the session holds the code */
            if (r == MBSC_ERR_WOULD_BLOCK)
                return 0;
        }
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

    if (happened & (GW_IO_IN | GW_IO_ERR))
        peek_first(u);
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
    int r;

    /* Corked: sealed into the session's output, sent by mbsc_flush_kept. */
    if (u->corked && mbsc_session_send(m->s, adu, len) == MBSC_OK)
        return MBSC_OK;
    r = mbsc_link_send(&m->link, adu, len);

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

static void mbsc_flush_kept(struct gw_upstream *u)
{
    int r = mbsc_link_flush(&u->k.mbsc.link);

    if (r != MBSC_OK) {
        session_failed(u, r);
        return;
    }
    gw_up_rewatch(u);
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
    .flush = mbsc_flush_kept,
    .drop = mbsc_drop,
    .describe = mbsc_describe,
    .stalled = mbsc_stalled,
};
