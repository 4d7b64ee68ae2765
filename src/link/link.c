/* SPDX-License-Identifier: ISC */
/*
 * link.c - moving bytes between a socket and a session (link.h).
 *
 * The session's state query decides everything: the link reads only when
 * the session has room, so a peer that sends faster than its payloads are
 * taken is pushed back by TCP, and writes only what the session has sealed.
 *
 * Keystream ahead of the frame: once the output has gone to the socket,
 * and when a read finds nothing waiting, the peer is working and we wait
 * for it; the link then has the session generate the next frames'
 * keystream (mbsc_session_refill), so that the next seal or open costs
 * Poly1305 and an XOR.
 */
#include <poll.h>

#include "sock/sock.h"
#include "internal.h"
#include "link/link.h"

void mbsc_link_init(struct mbsc_link *l, int fd, mbsc_session *s)
{
    l->fd = fd;
    l->s = s;
    l->os_err = 0;
    l->op = "";
    l->eof = 0;
}

short mbsc_link_events(const struct mbsc_link *l)
{
    unsigned st = mbsc_session_state(l->s);
    short ev = 0;

    if (st & MBSC_SESSION_CLOSED)
        return 0;
    if (st & MBSC_SESSION_SEND)
        ev |= POLLOUT;
    if ((st & MBSC_SESSION_RECV) && !l->eof)
        ev |= POLLIN;
    return ev;
}

int mbsc_link_output_pending(const struct mbsc_link *l)
{
    return (mbsc_session_state(l->s) & MBSC_SESSION_SEND) != 0;
}

int mbsc_link_flush(struct mbsc_link *l)
{
    for (;;) {
        size_t n, sent;
        const uint8_t *p = mbsc_session_output(l->s, &n);
        int r;

        if (n == 0) {
            mbsc_session_refill(l->s);
            return MBSC_OK;
        }
        r = mbsc_sock_send(l->fd, p, n, &sent, &l->os_err);
        if (r == MBSC_ERR_WOULD_BLOCK)
            return MBSC_OK;
        if (r != MBSC_OK) {
            l->op = "send";
            return r;
        }
        mbsc_session_output_consumed(l->s, sent);
    }
}

int mbsc_link_read(struct mbsc_link *l)
{
    size_t room, got;
    uint8_t *dst = mbsc_session_input_buf(l->s, &room);
    int r;

    if (mbsc_session_error(l->s) != MBSC_OK)
        return mbsc_session_error(l->s);
    if (room == 0 || l->eof)
        return MBSC_ERR_WOULD_BLOCK;
    r = mbsc_sock_recv(l->fd, dst, room, &got, &l->os_err);
    if (r == MBSC_OK)
        return mbsc_session_input_ack(l->s, got);
    if (r == MBSC_ERR_PEER_CLOSED && l->os_err == 0) {
        /* The end of the stream, not a reset: the session decides what it means. */
        l->eof = 1;
        (void)mbsc_session_feed_eof(l->s);
        return MBSC_ERR_PEER_CLOSED;
    }
    if (r == MBSC_ERR_WOULD_BLOCK)
        mbsc_session_refill(l->s); /* nothing to read: the peer is still at work */
    else
        l->op = "recv";
    return r;
}
