/* SPDX-License-Identifier: ISC */
/*
 * link.h - one non-blocking link: a socket and the session on it.
 *
 * Internal to the library.  Every layer that moves bytes between a TCP
 * socket and an mbsc_session (the blocking connection in conn/, the server
 * in server/) does it here, driven by the session's state query
 * (mbsc_session_state): reads go straight into the session's input buffer
 * (mbsc_session_input_buf/ack), writes come straight from its output.  No
 * layer keeps an input buffer, a flush loop or a read function of its own.
 *
 * The link never blocks and never waits: the caller polls (poll, epoll)
 * for the events mbsc_link_events() names and calls mbsc_link_flush() /
 * mbsc_link_read() when they come.
 */
#ifndef MBSC_LINK_H
#define MBSC_LINK_H

#include <stddef.h>

#include "mbsc/session.h"

struct mbsc_link {
    int fd;          /* non-blocking socket, owned by the caller */
    mbsc_session *s; /* owned by the caller */
    int os_err;      /* errno of the last socket failure, 0 for none or EOF */
    const char *op;  /* "send" or "recv": the step that failed */
    int eof;         /* the peer closed its side (the session has been told) */
};

/* Attach fd and s; nothing moves yet. */
void mbsc_link_init(struct mbsc_link *l, int fd, mbsc_session *s);

/*
 * POLLIN and/or POLLOUT as the session asks: POLLOUT while output waits,
 * POLLIN while the input has room (and the peer has not closed).  0 once
 * the session has failed.
 */
short mbsc_link_events(const struct mbsc_link *l);

/*
 * Send the session's output until it is empty or the socket is full; once
 * it is empty, refill the session's keystream (mbsc_session_refill).
 * MBSC_OK (whether or not all went), MBSC_ERR_PEER_CLOSED (EPIPE,
 * ECONNRESET) or MBSC_ERR_IO, with l->os_err and l->op set.
 */
int mbsc_link_flush(struct mbsc_link *l);

/*
 * One recv() into the session's input buffer, then the session opens what
 * is whole (when nothing waits, the session's keystream is refilled).  MBSC_OK (bytes read),
 * MBSC_ERR_WOULD_BLOCK (nothing waiting, or no room in the input: take the payload first), the
 * session's error (authentication, framing, handshake), MBSC_ERR_PEER_CLOSED at the end of the
 * stream with the session told (it then holds MBSC_ERR_PEER_CLOSED or MBSC_ERR_TRUNCATED, and
 * l->eof is set), or a socket error with l->os_err.
 */
int mbsc_link_read(struct mbsc_link *l);

/* 1 while output waits to be sent. */
int mbsc_link_output_pending(const struct mbsc_link *l);

#endif /* MBSC_LINK_H */
