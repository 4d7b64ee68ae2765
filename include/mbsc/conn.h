/* SPDX-License-Identifier: ISC */
/*
 * mbsc/conn.h - secure sessions over TCP, for callers without an event loop.
 *
 * A thin blocking layer over mbsc/session.h: connect or accept a TCP
 * connection (IPv4 or IPv6 through getaddrinfo), run the handshake within a
 * deadline, then send and receive whole payloads with timeouts.  Every
 * socket has TCP_NODELAY (Modbus is request/response: Nagle would add
 * latency to every exchange) and no call raises SIGPIPE.  Sockets are
 * non-blocking internally; timeouts are in milliseconds, negative means
 * wait forever.
 *
 * Addresses are "HOST:PORT" or "[V6ADDR]:PORT"; HOST may be a name, an
 * IPv4 or an IPv6 literal in brackets.  Port 0 in mbsc_listen() picks a free
 * port (read it back with mbsc_listener_address()).
 *
 * Functions that can fail take an optional `char *why, size_t why_len`
 * receiving one line naming the cause ("connect 10.0.0.7:1502: Connection
 * refused"); it is always NUL-terminated when why_len > 0.
 *
 * Descriptors are kept below FD_SETSIZE, because libmodbus 3.1.6 select()s on
 * them: a connection that would get a larger one is refused with
 * MBSC_ERR_FD_LIMIT.  (mbsc_server, which never hands its sockets to
 * libmodbus, has no such limit, nor has mbsc_tcp_connect_start().)  Every
 * connection moves bytes through one link (mbsc/link.h) driven by
 * mbsc_session_state().
 *
 * Waiting on mbsc_conn_fd() with poll(): a payload may have arrived and
 * be buffered inside the connection already (a master often sends its
 * first request in the same segment as the frame that confirms the
 * session, and a read may bring several frames), and no event will
 * announce it.  Wait only while mbsc_conn_pending() is 0.
 *
 * Programs with their own event loop take the sockets from here
 * (mbsc_listener_accept_fd(), mbsc_tcp_connect_start() and _finish()) and
 * drive a session on each with mbsc/link.h.
 *
 * Thread-safety: one connection or listener per thread at a time; distinct
 * objects are independent.
 */
#ifndef MBSC_CONN_H
#define MBSC_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "mbsc/export.h"
#include "mbsc/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbsc_conn mbsc_conn;
typedef struct mbsc_listener mbsc_listener;

/* Longest "[v6addr%scope]:port" string produced by this API, with its NUL. */
#define MBSC_ADDRSTRLEN 72u

/*
 * Split "HOST:PORT" / "[V6ADDR]:PORT" into host and port strings.  Returns
 * MBSC_OK, MBSC_ERR_INVALID_ARG (NULL) or MBSC_ERR_ADDRESS (empty host,
 * missing or non-numeric port, port > 65535, unbalanced brackets, brackets
 * around something that is not an IPv6 literal, spaces or control
 * characters, too long).  The port is 1 to 5 digits, no sign.
 */
MBSC_API MBSC_WUR int mbsc_parse_hostport(const char *hostport, char *host, size_t host_len,
                                          char *port, size_t port_len);

/*
 * Connect to a slave and run the handshake as master (cfg's role must be
 * MBSC_ROLE_MASTER).  timeout_ms bounds the TCP connect and the handshake
 * together.  On success *out is an established connection.
 * Errors: MBSC_ERR_ADDRESS, MBSC_ERR_RESOLVE, MBSC_ERR_CONNECT,
 * MBSC_ERR_HANDSHAKE_TIMEOUT, MBSC_ERR_PEER_CLOSED (the slave hung up: it
 * does not know our key, or no common cipher), the handshake errors of
 * mbsc/error.h, MBSC_ERR_FD_LIMIT, MBSC_ERR_NOMEM.  A TCP connect that
 * times out is MBSC_ERR_CONNECT ("timed out" in why).  Name resolution
 * (getaddrinfo) blocks and is not bounded by timeout_ms.  When a name has
 * several addresses they are tried in turn; why names the last failure.
 */
MBSC_API MBSC_WUR int mbsc_connect(const char *hostport, const mbsc_config *cfg, int timeout_ms,
                                   mbsc_conn **out, char *why, size_t why_len);

/*
 * Listen on hostport (SO_REUSEADDR; for a "[::]" address IPv6-only is left
 * at the system default).  Errors: MBSC_ERR_ADDRESS, MBSC_ERR_RESOLVE,
 * MBSC_ERR_BIND, MBSC_ERR_FD_LIMIT (out of descriptors), MBSC_ERR_NOMEM.
 * The FD_SETSIZE rule applies to connections only: a listening socket is
 * only ever poll()ed.
 */
MBSC_API MBSC_WUR int mbsc_listen(const char *hostport, mbsc_listener **out, char *why,
                                  size_t why_len);

/* The listening socket, for poll(). */
MBSC_API int mbsc_listener_fd(const mbsc_listener *l);

/*
 * The bound address as "HOST:PORT" with the real port (after port 0).
 * MBSC_OK, MBSC_ERR_BUFFER_TOO_SMALL or MBSC_ERR_INVALID_ARG.
 */
MBSC_API int mbsc_listener_address(const mbsc_listener *l, char *buf, size_t len);

/* Close the listening socket and free; NULL is allowed. */
MBSC_API void mbsc_listener_close(mbsc_listener *l);

/*
 * Accept one TCP connection without any handshake: for event loops that
 * drive mbsc_session themselves.  Waits up to timeout_ms (0: do not wait,
 * MBSC_ERR_TIMEOUT if nobody is waiting).  *fd_out is non-blocking, has
 * TCP_NODELAY and close-on-exec; peer (if not NULL, MBSC_ADDRSTRLEN bytes)
 * gets "HOST:PORT".  MBSC_ERR_FD_LIMIT if the descriptor would be
 * >= FD_SETSIZE (the connection is then closed at once).
 */
MBSC_API MBSC_WUR int mbsc_listener_accept_fd(mbsc_listener *l, int timeout_ms, int *fd_out,
                                              char *peer, char *why, size_t why_len);

/*
 * A non-blocking TCP connect to "HOST:PORT", for programs with their own
 * event loop (the other side of mbsc_listener_accept_fd()): no handshake,
 * the socket comes out connected, for mbsc/link.h or plain Modbus/TCP.
 * Caller-allocated; fd and addr may be read, the rest is private.  While
 * connecting, the struct owns fd; on success it hands it to the caller.
 *
 *     mbsc_tcp_connect tc;
 *     r = mbsc_tcp_connect_start(&tc, "plc.example:502", why, sizeof why);
 *     // MBSC_OK: the loop polls tc.fd for POLLOUT; each time it is ready:
 *     r = mbsc_tcp_connect_finish(&tc, &fd, why, sizeof why);
 *     // MBSC_OK: fd is connected; MBSC_ERR_WOULD_BLOCK: poll tc.fd again
 *     // (it may be another descriptor); else failed, why says so.
 *     // The program's timer expired first: mbsc_tcp_connect_cancel(&tc).
 *
 * A name may have several addresses (localhost: ::1 and 127.0.0.1): the
 * first MBSC_TCP_CONNECT_ADDRS are tried in turn, each when the one before
 * has failed, so tc.fd may change between calls (the old descriptor is
 * closed: drop it from the poll set).  The caller's own timer bounds the
 * whole attempt.
 */
#define MBSC_TCP_CONNECT_ADDRS 8u

typedef struct mbsc_tcp_connect {
    /* Readable by the caller (never write them): */
    int fd;                     /* the socket being connected: poll it for POLLOUT; -1 if none */
    char addr[MBSC_ADDRSTRLEN]; /* the address being tried, "HOST:PORT" or "[V6]:PORT" */
    /* Private: */
    struct sockaddr_storage next_[MBSC_TCP_CONNECT_ADDRS];
    socklen_t next_len_[MBSC_TCP_CONNECT_ADDRS];
    unsigned n_next_, at_;
} mbsc_tcp_connect;

/*
 * Resolve hostport (getaddrinfo: this blocks for a name, never for a
 * numeric address) and start connecting to its first address that takes
 * a connect: a non-blocking, close-on-exec socket with TCP_NODELAY.
 * MBSC_OK: tc->fd is connecting (poll it for POLLOUT, then call
 * mbsc_tcp_connect_finish()).  Errors, with tc->fd -1 and nothing to
 * release: MBSC_ERR_INVALID_ARG (NULL), MBSC_ERR_ADDRESS, MBSC_ERR_RESOLVE,
 * MBSC_ERR_NOMEM, MBSC_ERR_FD_LIMIT (out of descriptors), MBSC_ERR_CONNECT
 * (every address failed at once, say with ENETUNREACH; why names the last
 * address and the cause).
 */
MBSC_API MBSC_WUR int mbsc_tcp_connect_start(mbsc_tcp_connect *tc, const char *hostport, char *why,
                                             size_t why_len);

/*
 * Call when poll() reports POLLOUT, POLLERR or POLLHUP on tc->fd (any
 * other time is harmless).  MBSC_OK: connected; *fd_out is the socket,
 * now the caller's (tc->fd becomes -1), and tc->addr the address reached.
 * MBSC_ERR_WOULD_BLOCK: not over yet; either still in progress, or the
 * address tc->addr failed (why names it and the cause) and the next one
 * is being tried on a new tc->fd: poll tc->fd for POLLOUT again.
 * MBSC_ERR_CONNECT: the last address failed too (why: "connect
 * 10.0.0.7:502: Connection refused"); MBSC_ERR_FD_LIMIT: no descriptor
 * for the next one; nothing is left to release.  MBSC_ERR_INVALID_ARG:
 * NULL, or no connect under way.
 */
MBSC_API MBSC_WUR int mbsc_tcp_connect_finish(mbsc_tcp_connect *tc, int *fd_out, char *why,
                                              size_t why_len);

/* Give up: close the socket being connected, if any (tc->fd becomes -1).  NULL is allowed. */
MBSC_API void mbsc_tcp_connect_cancel(mbsc_tcp_connect *tc);

/*
 * Accept one connection and run the handshake as slave (cfg's role must be
 * MBSC_ROLE_SLAVE) within the config's handshake timeout.  accept_timeout_ms
 * bounds the wait for a connection.  A client that fails the handshake is
 * disconnected and reported through the return code and why; the listener
 * stays usable.  Note that this blocks for up to the handshake timeout on
 * a silent client: servers with many clients should use mbsc_server
 * (mbsc/server.h), as the libmodbus adapter does.  Like a slave session,
 * it returns only once the master's first frame has confirmed the session
 * (key confirmation: the master sends it right after the handshake).
 */
MBSC_API MBSC_WUR int mbsc_accept(mbsc_listener *l, const mbsc_config *cfg, int accept_timeout_ms,
                                  mbsc_conn **out, char *why, size_t why_len);

/*
 * Seal and send one payload (0 to the configured maximum bytes,
 * mbsc_config_set_max_payload(): 260 by default) within timeout_ms.
 * MBSC_ERR_TIMEOUT: the frame is sealed and queued but not all sent; the
 * rest goes out first with the next send or recv (do not send it again);
 * the connection stays usable.  MBSC_ERR_WOULD_BLOCK: earlier output is
 * still waiting and nothing was queued.  MBSC_ERR_PEER_CLOSED (EPIPE,
 * ECONNRESET) and MBSC_ERR_IO end the connection.
 */
MBSC_API MBSC_WUR int mbsc_conn_send(mbsc_conn *c, const uint8_t *payload, size_t len,
                                     int timeout_ms);

/*
 * Receive one payload into buf within timeout_ms; *len gets its length.
 * MBSC_ERR_TIMEOUT leaves the connection usable.  At the end of the
 * stream: MBSC_ERR_TRUNCATED if the peer closed inside a frame, otherwise
 * MBSC_ERR_PEER_CLOSED; payloads that arrived before are delivered first.
 * Those, authentication and framing errors end the connection.
 */
MBSC_API MBSC_WUR int mbsc_conn_recv(mbsc_conn *c, uint8_t *buf, size_t cap, size_t *len,
                                     int timeout_ms);

/*
 * The socket, for poll() (POLLIN: a payload may be coming); owned by the
 * connection.  Wait on it only while mbsc_conn_pending() is 0.
 */
MBSC_API int mbsc_conn_fd(const mbsc_conn *c);

/*
 * Payloads already received whole and not yet returned by
 * mbsc_conn_recv(): the next that many calls return at once, without the
 * socket.  Wait on mbsc_conn_fd() only when it is 0; otherwise no event
 * would come for them.  It can be more than 0 right after mbsc_accept()
 * (the master's first request came with the confirming keep-alive), after
 * mbsc_connect(), and after any mbsc_conn_recv().  0 for NULL.
 */
MBSC_API size_t mbsc_conn_pending(const mbsc_conn *c);

/* The session inside (queries: cipher, peer name...); owned by the connection. */
MBSC_API mbsc_session *mbsc_conn_session(mbsc_conn *c);

/* The peer's "HOST:PORT". */
MBSC_API const char *mbsc_conn_peer_address(const mbsc_conn *c);

/* Close the socket, wipe and free; NULL is allowed. */
MBSC_API void mbsc_conn_close(mbsc_conn *c);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_CONN_H */
