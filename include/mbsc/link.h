/* SPDX-License-Identifier: ISC */
/*
 * mbsc/link.h - a session over a non-blocking socket, in the caller's own
 * event loop.
 *
 * What mbsc/conn.h does with blocking calls and timeouts, a link does for a
 * program that already has a loop (poll, epoll, an event library) and many
 * descriptors in it: it moves bytes between one non-blocking socket and one
 * mbsc_session (mbsc/session.h), never blocks and never waits.  The loop
 * asks which events to wait for (mbsc_link_events()) and calls the link
 * when they come; the session's state query decides everything, so the
 * link reads only when the session has room (a peer that sends faster
 * than its payloads are taken is pushed back by TCP) and writes only what
 * the session has sealed.  It is the non-blocking counterpart of BearSSL's
 * br_sslio.  The library's own layers (mbsc/conn.h, mbsc/server.h, the
 * libmodbus adapter) move their bytes through it.
 *
 * Conventions (beside those of mbsc.h):
 *
 *  - mbsc_link is allocated by the caller (on the stack, inside another
 *    object) and needs no freeing: the link owns nothing.  The socket and
 *    the session stay the caller's; close and free them once the link is
 *    no longer used.  Its fields fd, session, os_err, op and eof may be
 *    read at any time; never write them.  The rest of the struct is
 *    private and may change between versions.
 *  - The socket must be a connected, non-blocking stream socket (TCP, or
 *    a UNIX socketpair).  mbsc_listener_accept_fd() and
 *    mbsc_tcp_connect_finish() (mbsc/conn.h) give such sockets; set
 *    O_NONBLOCK on any other.  No call raises SIGPIPE.
 *  - Events are poll()'s: POLLIN and POLLOUT from <poll.h> (for epoll,
 *    EPOLLIN and EPOLLOUT).  Call the link for POLLERR and POLLHUP too:
 *    mbsc_link_flush() when output waits, mbsc_link_read() or
 *    mbsc_link_recv() otherwise; they report what happened.
 *  - Results: MBSC_OK, MBSC_ERR_WOULD_BLOCK ("nothing more can move now",
 *    never an error), or an error.  Socket failures are
 *    MBSC_ERR_PEER_CLOSED (EPIPE, ECONNRESET) or MBSC_ERR_IO with the errno
 *    in os_err and the failed step ("send" or "recv") in op; they leave the
 *    session as it was, and the caller closes.  Session failures (a bad
 *    tag, a bad frame, a failed handshake) are the session's sticky error,
 *    also shown by mbsc_session_error(l->session).  Once either happened
 *    the connection is over.
 *  - While an opened payload waits in the session, the link reads nothing
 *    and mbsc_link_events() asks for no POLLIN: take it first.  A loop
 *    must therefore never wait while mbsc_link_pending() is not 0:
 *    payloads that have arrived already (several frames may come in one
 *    segment, the first request often with the handshake's last frame)
 *    would never wake it.  mbsc_link_recv() takes care of this.
 *  - One thread at a time per link; distinct links are independent.
 *
 * A loop with poll() (level-triggered):
 *
 *     mbsc_link_init(&l, fd, session);
 *     for (;;) {
 *         while ((r = mbsc_link_recv(&l, buf, sizeof buf, &n)) == 1)
 *             answer(&l, buf, n);           // may call mbsc_link_send()
 *         // (a master sends its first request here, once the read has
 *         // made mbsc_session_established() true: not after a wait)
 *         if (r == 0)
 *             r = mbsc_link_flush(&l);      // a handshake reply, say
 *         if (r < 0)
 *             break;                        // the end: r, l.op, l.os_err
 *         pfd.fd = l.fd;
 *         pfd.events = mbsc_link_events(&l);
 *         poll(&pfd, 1, timeout_ms);        // and the program's other fds
 *         if (pfd.revents & (POLLOUT | POLLERR | POLLHUP))
 *             r = mbsc_link_flush(&l);      // then back to the top
 *     }
 *
 * With edge-triggered epoll (EPOLLET), register EPOLLIN | EPOLLOUT once
 * and drive it the same way: mbsc_link_recv() reads until the socket is
 * empty or a payload opens, so after taking a payload call it again before
 * waiting (there will be no new edge for bytes already in the socket).
 * See mbsc_link_init(3) for a complete program.
 */
#ifndef MBSC_LINK_H
#define MBSC_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "mbsc/export.h"
#include "mbsc/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbsc_link {
    /* Readable by the caller (never write them): */
    int fd;                /* the socket given to mbsc_link_init() */
    mbsc_session *session; /* the session given to mbsc_link_init() */
    int os_err;            /* errno of the last socket failure; 0 for none or an end of stream */
    const char *op;        /* the step that failed: "send", "recv", or "" before any */
    int eof;               /* 1 once the peer's end of stream was read (the session was told) */
    /* Private: */
    void *reserved_[2]; /* room for later versions without changing the size */
} mbsc_link;

/*
 * Attach the non-blocking socket fd and the session (both stay the
 * caller's); nothing moves yet.  A master's session has handshake message
 * 1 ready at once, so its first events include POLLOUT.  l must not be
 * NULL.  A link may be initialised again for another socket or session.
 */
MBSC_API void mbsc_link_init(mbsc_link *l, int fd, mbsc_session *session);

/*
 * The events to wait for now: POLLOUT while sealed output waits, POLLIN
 * while the session has room for input, no payload waits and the peer has
 * not ended its stream.  0 once the session has failed or the stream has
 * ended with nothing left to send: the link has nothing more to do (look
 * at mbsc_session_error()).  0 with a payload waiting means "take it".
 * It may change after every call on the link or the session: ask again
 * before each wait (with epoll, modify the registration when it changed).
 */
MBSC_API short mbsc_link_events(const mbsc_link *l);

/*
 * Send the session's output until it is empty or the socket takes no
 * more; once it is empty, refill the session's keystream
 * (mbsc_session_refill(): the peer is working, we wait anyway).  MBSC_OK
 * whether or not everything went (mbsc_link_output_pending() tells),
 * MBSC_ERR_PEER_CLOSED (EPIPE, ECONNRESET) or MBSC_ERR_IO with l->os_err
 * set and l->op "send".  Call it when POLLOUT (or POLLERR, POLLHUP) comes,
 * and after anything that may have queued output (mbsc_session_send(), or
 * a handshake message read by mbsc_link_read()); cheap when nothing waits.
 */
MBSC_API int mbsc_link_flush(mbsc_link *l);

/*
 * One recv() straight into the session's input buffer, then the session
 * opens every whole frame, stopping at the first payload (when nothing
 * was waiting, the keystream is refilled instead).  Returns:
 *   MBSC_OK               bytes were read (a payload, a handshake message
 *                         with a reply in the output, or part of a frame);
 *   MBSC_ERR_WOULD_BLOCK  nothing to read now, or a payload waits (take it
 *                         first: nothing is read past it, so an end of
 *                         stream cannot overtake frames already received);
 *   MBSC_ERR_PEER_CLOSED  with l->eof set: the peer ended its stream; the
 *                         session has been told, and holds
 *                         MBSC_ERR_PEER_CLOSED, or MBSC_ERR_TRUNCATED if
 *                         it ended inside a frame;
 *   MBSC_ERR_PEER_CLOSED or MBSC_ERR_IO without l->eof: the socket failed
 *                         (reset, or hung up while a payload waited), with
 *                         l->os_err (0 for a hang-up) and l->op "recv";
 *   any other error       the session's (authentication, framing,
 *                         handshake), also its mbsc_session_error().
 * Read once per POLLIN (level-triggered), or until MBSC_ERR_WOULD_BLOCK
 * with edge-triggered epoll; payloads that opened wait in the session
 * (mbsc_link_pending()).
 */
MBSC_API int mbsc_link_read(mbsc_link *l);

/*
 * Take the next payload, reading the socket only when none has arrived
 * whole yet: the call that never leaves a payload behind.  Returns 1 with
 * the payload in buf and its length in *len (0 for a keep-alive, which a
 * program may ignore), 0 when no payload is whole yet (the socket is
 * drained: wait for mbsc_link_events()), MBSC_ERR_BUFFER_TOO_SMALL (the
 * payload stays; cap must hold the session's largest payload,
 * mbsc_config_max_payload()), or an error as mbsc_link_read() returns
 * them.  At the end of the stream, payloads that arrived before it are
 * returned first; then MBSC_ERR_PEER_CLOSED (or MBSC_ERR_TRUNCATED if the
 * stream ended inside a frame).  A slave returns nothing before its
 * session is confirmed; handshake replies it reads go to the output, so
 * flush after 0.  len must not be NULL; buf may be NULL when cap is 0.
 */
MBSC_API MBSC_WUR int mbsc_link_recv(mbsc_link *l, uint8_t *buf, size_t cap, size_t *len);

/*
 * Seal one payload and send what the socket takes now; the rest goes with
 * mbsc_link_flush() on POLLOUT.  MBSC_OK: queued (do not send it again).
 * MBSC_ERR_WOULD_BLOCK: earlier output still fills the session's buffer
 * and nothing was queued: wait for POLLOUT, flush, try again.
 * MBSC_ERR_STATE (the handshake is not over), MBSC_ERR_PAYLOAD_TOO_LONG
 * and MBSC_ERR_INVALID_ARG change nothing.  A socket error is returned as
 * by mbsc_link_flush() (the payload was queued, but the connection is
 * over).
 */
MBSC_API MBSC_WUR int mbsc_link_send(mbsc_link *l, const uint8_t *payload, size_t len);

/* 1 while sealed output waits to be sent (poll for POLLOUT), else 0. */
MBSC_API int mbsc_link_output_pending(const mbsc_link *l);

/*
 * Payloads already received whole and not yet taken: the opened one and
 * the frames that came behind it.  Never wait for the socket while this
 * is not 0: those payloads are in memory and no event will announce them.
 * Take them with mbsc_link_recv() (or mbsc_session_recv() /
 * mbsc_session_payload() on l->session).
 */
MBSC_API size_t mbsc_link_pending(const mbsc_link *l);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_LINK_H */
