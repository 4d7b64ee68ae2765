/* SPDX-License-Identifier: ISC */
/*
 * sock.h - the socket layer: deadlines, addresses, TCP sockets.
 *
 * Internal to the library, and its lowest networking layer: the link
 * (src/link/), the connection (src/conn/), the server (src/server/) and the
 * libmodbus adapter (src/modbus/) all move bytes and keep time with these
 * helpers, and nothing here knows about sessions, links or connections,
 * so that every layer above can use it without a ring.  Every function
 * returns an mbsc error code and describes failures in `why` (one line
 * naming the address and the cause), so that no caller has to look at
 * errno.  Sockets made here are non-blocking, close-on-exec and have
 * TCP_NODELAY; the blocking connect, listen and accept keep them below
 * FD_SETSIZE (libmodbus 3.1.6 select()s on them).
 *
 *   deadline.c     CLOCK_MONOTONIC and deadlines;
 *   addr.c         "HOST:PORT" parsing, resolving and formatting;
 *   sock.c         connect, listen and accept with a deadline, send, recv,
 *                  poll one descriptor, close;
 *   tcp_connect.c  the public non-blocking connect (mbsc/conn.h).
 */
#ifndef MBSC_SOCK_H
#define MBSC_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "mbsc/conn.h"

struct addrinfo;

/* --- Deadlines (deadline.c; CLOCK_MONOTONIC: immune to wall-clock steps) -- */

typedef struct mbsc_deadline {
    int64_t at_ns; /* monotonic time at which it expires */
    int never;     /* a negative timeout: wait forever */
} mbsc_deadline;

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t mbsc_monotonic_ns(void);

/* A deadline timeout_ms from now; negative means never. */
void mbsc_deadline_start(mbsc_deadline *d, int timeout_ms);

/* Milliseconds left, rounded up, for poll(): -1 if never, 0 once expired. */
int mbsc_deadline_poll_ms(const mbsc_deadline *d);

/* --- Addresses (addr.c) -------------------------------------------------- */

/*
 * Resolve "HOST:PORT" for a TCP socket; passive for bind().  On success
 * *res must be released with freeaddrinfo().  MBSC_ERR_ADDRESS,
 * MBSC_ERR_RESOLVE or MBSC_ERR_NOMEM otherwise.
 */
int mbsc_addr_resolve(const char *hostport, int passive, struct addrinfo **res, char *why,
                      size_t why_len);

/*
 * Numeric "HOST:PORT" or "[V6ADDR]:PORT" of a socket address into buf
 * (MBSC_ADDRSTRLEN bytes are always enough).  IPv4-mapped IPv6 addresses
 * are shown as IPv4.  MBSC_OK, or MBSC_ERR_BUFFER_TOO_SMALL / MBSC_ERR_IO
 * with buf set to "?".
 */
int mbsc_addr_format(const struct sockaddr *sa, socklen_t sa_len, char *buf, size_t len);

/* The local address of socket fd, as mbsc_addr_format writes it. */
int mbsc_addr_local(int fd, char *buf, size_t len);

/* --- Sockets (sock.c) ---------------------------------------------------- */

/*
 * Make a non-blocking, close-on-exec TCP socket with TCP_NODELAY for the
 * address sa (addr is its text, for messages) and start connect() on it.
 * MBSC_OK with *fd_out connecting (or connected already), MBSC_ERR_CONNECT
 * (why: "connect ADDR: cause"), MBSC_ERR_FD_LIMIT.  No FD_SETSIZE check.
 */
int mbsc_sock_connect_begin(const struct sockaddr *sa, socklen_t sa_len, const char *addr,
                            int *fd_out, char *why, size_t why_len);

/*
 * The outcome of a connect begun on fd, once poll() has reported the
 * socket writable (or failed): MBSC_OK, or MBSC_ERR_CONNECT with why.
 */
int mbsc_sock_connect_result(int fd, const char *addr, char *why, size_t why_len);

/*
 * Connect to each address of ai in turn until one answers or d expires.
 * *fd_out gets the connected socket, peer (MBSC_ADDRSTRLEN bytes) the
 * address reached.  MBSC_ERR_CONNECT (refused, unreachable, timed out; why
 * names the last address tried), MBSC_ERR_FD_LIMIT.
 */
int mbsc_sock_connect(const struct addrinfo *ai, const mbsc_deadline *d, int *fd_out, char *peer,
                      char *why, size_t why_len);

/*
 * Listen on the first address of ai that can be bound (SO_REUSEADDR).
 * MBSC_ERR_BIND (why names the last address tried), MBSC_ERR_FD_LIMIT.
 */
int mbsc_sock_listen(const struct addrinfo *ai, int *fd_out, char *why, size_t why_len);

/*
 * Accept one connection on the non-blocking listening socket lfd before d
 * expires.  name is the listener's address, for messages.
 * MBSC_ERR_TIMEOUT, MBSC_ERR_FD_LIMIT, MBSC_ERR_IO.
 */
int mbsc_sock_accept(int lfd, const char *name, const mbsc_deadline *d, int *fd_out, char *peer,
                     char *why, size_t why_len);

/*
 * poll() fd for events until d expires; *revents gets what happened
 * (POLLERR and POLLHUP count as ready: the next read or write reports
 * them).  MBSC_OK, MBSC_ERR_TIMEOUT, or MBSC_ERR_IO with *os_err = errno.
 */
int mbsc_sock_wait(int fd, short events, const mbsc_deadline *d, short *revents, int *os_err);

/*
 * One send() without blocking or SIGPIPE.  MBSC_OK with *sent > 0,
 * MBSC_ERR_WOULD_BLOCK if the socket takes nothing now, MBSC_ERR_PEER_CLOSED
 * (EPIPE, ECONNRESET) or MBSC_ERR_IO, with *os_err = errno.
 */
int mbsc_sock_send(int fd, const uint8_t *buf, size_t len, size_t *sent, int *os_err);

/*
 * One recv() without blocking.  MBSC_OK with *got > 0, MBSC_ERR_WOULD_BLOCK
 * if nothing is waiting, MBSC_ERR_PEER_CLOSED at end of stream or on
 * ECONNRESET, MBSC_ERR_IO, with *os_err = errno (0 at end of stream).
 */
int mbsc_sock_recv(int fd, uint8_t *buf, size_t cap, size_t *got, int *os_err);

/*
 * Whether socket fd has failed or hung up, without reading from it (for a
 * reader that must not take bytes now): MBSC_OK if neither, else
 * MBSC_ERR_PEER_CLOSED (reset, or hung up: *os_err 0) or MBSC_ERR_IO, with
 * *os_err = the pending error (SO_ERROR), which this clears.
 */
int mbsc_sock_failed(int fd, int *os_err);

/* close() that keeps the caller's errno (for cleanup paths); fd < 0 is ignored. */
void mbsc_sock_close(int fd);

/*
 * Probe a TCP connection's peer while it is silent (TCP keepalive), so that
 * a connection whose peer's host has gone ends (ETIMEDOUT, or the reset
 * its host sends once it is back) within about dead_ms of silence: the
 * first probe after half of it, then three probes a sixth apart (whole
 * seconds, at least one).  0 leaves the socket as it is.  Best effort: a
 * system without the per-socket settings keeps its own.
 */
void mbsc_sock_probe_peer(int fd, unsigned dead_ms);

/*
 * The code for errno value e after a call that makes a descriptor:
 * MBSC_ERR_FD_LIMIT when the process or the system has none left (EMFILE,
 * ENFILE), else otherwise.
 */
int mbsc_sock_fd_error(int e, int otherwise);

#endif /* MBSC_SOCK_H */
