/* SPDX-License-Identifier: ISC */
/*
 * link.c - moving bytes between a socket and a session (mbsc/link.h).
 *
 * The session's state query decides everything: the link reads only when
 * the session has room and no opened payload waits, so a peer that sends
 * faster than its payloads are taken is pushed back by TCP, and an end of
 * stream is read only after every frame that came before it has been
 * opened and taken; it writes only what the session has sealed.
 *
 * Keystream ahead of the frame: once the output has gone to the socket,
 * and when a read finds nothing waiting, the peer is working and we wait
 * for it; the link then has the session generate the next frames'
 * keystream (mbsc_session_refill), so that the next seal or open costs
 * Poly1305 and an XOR.
 */
#include <poll.h>

#include "internal.h"
#include "mbsc/link.h"
#include "session/session_internal.h"
#include "sock/sock.h"

MBSC_API void mbsc_link_init(mbsc_link *l, int fd, mbsc_session *session)
{
    l->fd = fd;
    l->session = session;
    l->os_err = 0;
    l->op = "";
    l->eof = 0;
    l->reserved_[0] = l->reserved_[1] = NULL;
}

MBSC_API short mbsc_link_events(const mbsc_link *l)
{
    unsigned st = mbsc_session_state(l->session);
    short ev = 0;

    if (st & MBSC_SESSION_CLOSED)
        return 0;
    if (st & MBSC_SESSION_SEND)
        ev |= POLLOUT;
    if ((st & MBSC_SESSION_RECV) && !(st & MBSC_SESSION_PAYLOAD) && !l->eof)
        ev |= POLLIN;
    return ev;
}

MBSC_API int mbsc_link_output_pending(const mbsc_link *l)
{
    return (mbsc_session_state(l->session) & MBSC_SESSION_SEND) != 0;
}

MBSC_API size_t mbsc_link_pending(const mbsc_link *l)
{
    return mbsc_session_pending_payloads(l->session);
}

MBSC_API int mbsc_link_flush(mbsc_link *l)
{
    for (;;) {
        size_t n, sent;
        const uint8_t *p = mbsc_session_output(l->session, &n);
        int r;

        if (n == 0) {
            mbsc_session_refill(l->session);
            return MBSC_OK;
        }
        r = mbsc_sock_send(l->fd, p, n, &sent, &l->os_err);
        if (r == MBSC_ERR_WOULD_BLOCK)
            return MBSC_OK;
        if (r != MBSC_OK) {
            l->op = "send";
            return r;
        }
        mbsc_session_output_consumed(l->session, sent);
    }
}

/*
 * A payload waits, so nothing is read; but a loop woken by POLLERR or
 * POLLHUP (which poll reports whatever was asked) must learn that the
 * socket is gone, or it would be woken again at once, for ever.
 */
static int check_while_payload_waits(mbsc_link *l)
{
    int r = mbsc_sock_failed(l->fd, &l->os_err);

    if (r != MBSC_OK)
        l->op = "recv";
    return r != MBSC_OK ? r : MBSC_ERR_WOULD_BLOCK;
}

MBSC_API int mbsc_link_read(mbsc_link *l)
{
    size_t room, got;
    uint8_t *dst;
    int r;

    if (mbsc_session_error(l->session) != MBSC_OK)
        return mbsc_session_error(l->session);
    if (mbsc_session_state(l->session) & MBSC_SESSION_PAYLOAD)
        return check_while_payload_waits(l);
    dst = mbsc_session_input_buf(l->session, &room);
    if (room == 0 || l->eof)
        return MBSC_ERR_WOULD_BLOCK;
    r = mbsc_sock_recv(l->fd, dst, room, &got, &l->os_err);
    if (r == MBSC_OK)
        return mbsc_session_input_ack(l->session, got);
    if (r == MBSC_ERR_PEER_CLOSED && l->os_err == 0) {
        /* The end of the stream, not a reset: the session decides what it means. */
        l->eof = 1;
        (void)mbsc_session_feed_eof(l->session);
        return MBSC_ERR_PEER_CLOSED;
    }
    if (r == MBSC_ERR_WOULD_BLOCK)
        mbsc_session_refill(l->session); /* nothing to read: the peer is still at work */
    else
        l->op = "recv";
    return r;
}

MBSC_API int mbsc_link_recv(mbsc_link *l, uint8_t *buf, size_t cap, size_t *len)
{
    int r;

    if (len != NULL)
        *len = 0;
    if (l == NULL || len == NULL || (buf == NULL && cap != 0))
        return MBSC_ERR_INVALID_ARG;
    for (;;) {
        /* What was received is delivered first, even after a later failure. */
        r = mbsc_session_recv(l->session, buf, cap, len);
        if (r != 0)
            return r;
        r = mbsc_link_read(l);
        if (r == MBSC_ERR_WOULD_BLOCK)
            return 0;
        /* At the end of the stream the session holds the code; the next turn returns it. */
        if (r != MBSC_OK && !(r == MBSC_ERR_PEER_CLOSED && l->eof))
            return r;
    }
}

MBSC_API int mbsc_link_send(mbsc_link *l, const uint8_t *payload, size_t len)
{
    int r;

    if (l == NULL)
        return MBSC_ERR_INVALID_ARG;
    r = mbsc_session_send(l->session, payload, len);
    if (r == MBSC_ERR_WOULD_BLOCK) {
        /* The socket may have room the caller has not been told about yet. */
        r = mbsc_link_flush(l);
        if (r != MBSC_OK)
            return r;
        r = mbsc_session_send(l->session, payload, len);
    }
    if (r != MBSC_OK)
        return r;
    return mbsc_link_flush(l);
}
