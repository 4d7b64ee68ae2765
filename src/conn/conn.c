/* SPDX-License-Identifier: ISC */
/*
 * conn.c - blocking, timed connections over the sans-I/O session engine.
 *
 * A connection is a link (mbsc/link.h: a non-blocking TCP socket and an
 * mbsc_session).  Every call moves bytes the same way (conn_pump): send
 * what the session has queued, poll the socket until the call's deadline
 * for what the session's state asks, and read straight into the session's
 * input.  A read may bring several frames; the session stops at each opened
 * payload and keeps the rest buffered for the next call.
 *
 * Errors that end a connection (the peer closed, a socket error, any
 * session error) stick: later calls return the same code at once, and the
 * socket is shut down so that the peer learns about it without waiting for
 * mbsc_conn_close().  Timeouts do not end a connection.
 */
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "mbsc/conn.h"
#include "mbsc/link.h"
#include "session/session_internal.h"
#include "sock/sock.h"

struct mbsc_conn {
    int fd;
    int error; /* MBSC_OK, or the socket error that ended the connection */
    mbsc_session *session;
    mbsc_link link; /* fd and session; attached once fd is known */
    char peer[MBSC_ADDRSTRLEN];
};

struct mbsc_listener {
    int fd;
    char addr[MBSC_ADDRSTRLEN];
};

/* --- Connection state ---------------------------------------------------- */

static int conn_error(const mbsc_conn *c)
{
    return c->error != MBSC_OK ? c->error : mbsc_session_error(c->session);
}

/*
 * End the connection with err (the first error wins).  shutdown() rather
 * than close(): the descriptor stays valid for the caller's poll() until
 * mbsc_conn_close().
 */
static int conn_end(mbsc_conn *c, int err)
{
    if (c->error == MBSC_OK)
        c->error = err;
    (void)shutdown(c->fd, SHUT_RDWR);
    return c->error;
}

/* The session is created before any network activity: a bad config costs no connection. */
static int conn_new(const mbsc_config *cfg, mbsc_conn **out, char *why, size_t why_len)
{
    mbsc_conn *c = calloc(1, sizeof *c);
    int err = MBSC_ERR_NOMEM;

    *out = NULL;
    if (c == NULL) {
        mbsc_why(why, why_len, "out of memory");
        return MBSC_ERR_NOMEM;
    }
    c->fd = -1;
    c->session = mbsc_session_new(cfg, &err);
    if (c->session == NULL) {
        mbsc_why(why, why_len, "cannot start a session: %s", mbsc_strerror(err));
        free(c);
        return err;
    }
    mbsc_link_init(&c->link, -1, c->session);
    *out = c;
    return MBSC_OK;
}

/* --- Moving bytes -------------------------------------------------------- */

/*
 * One round of I/O before deadline d: flush, then wait until the socket can
 * take more output or (if want_input) has input, and read it into the
 * session.  Returns MBSC_OK (something may have moved: the caller looks
 * again), MBSC_ERR_TIMEOUT, or an error with *op naming the failed step and
 * *os_err its errno (0 for the end of the stream).  A session error
 * (authentication, framing) is left in the session for the caller to see.
 */
static int conn_pump(mbsc_conn *c, const mbsc_deadline *d, int want_input, int *os_err,
                     const char **op)
{
    short events, revents = 0;
    int r;

    *os_err = 0;
    *op = "send";
    r = mbsc_link_flush(&c->link);
    if (r != MBSC_OK) {
        *os_err = c->link.os_err;
        return r;
    }
    events = mbsc_link_events(&c->link); /* no POLLIN while a payload waits */
    if (!want_input)
        events &= (short)~POLLIN;
    if (events == 0)
        return MBSC_OK;
    *op = "poll";
    r = mbsc_sock_wait(c->fd, events, d, &revents, os_err);
    if (r != MBSC_OK || (events & POLLIN) == 0 || (revents & (POLLIN | POLLHUP | POLLERR)) == 0)
        return r; /* output is flushed at the start of the next round */
    *op = "recv";
    r = mbsc_link_read(&c->link);
    *os_err = c->link.os_err;
    if (r == MBSC_ERR_WOULD_BLOCK || (r != MBSC_OK && mbsc_session_error(c->session) == r &&
                                      r != MBSC_ERR_PEER_CLOSED && r != MBSC_ERR_TRUNCATED))
        return MBSC_OK; /* nothing yet, or a session error the caller finds */
    if (r == MBSC_ERR_TRUNCATED)
        return MBSC_ERR_PEER_CLOSED; /* the stream ended inside a frame */
    return r;
}

/* Pump until the session's output is all sent or d expires. */
static int conn_flush_all(mbsc_conn *c, const mbsc_deadline *d)
{
    const char *op;
    int os_err, r;

    while (mbsc_link_output_pending(&c->link)) {
        r = conn_pump(c, d, 0, &os_err, &op);
        if (r == MBSC_ERR_TIMEOUT)
            return r;
        if (r != MBSC_OK)
            return conn_end(c, r);
    }
    return MBSC_OK;
}

/* --- Handshake ----------------------------------------------------------- */

/* The peer hung up before the handshake was over: say what that usually means. */
static int handshake_closed(mbsc_conn *c, int os_err, char *why, size_t why_len)
{
    const char *cause = os_err != 0 ? mbsc_os_error(os_err) : "connection closed";

    /* Ends the session (TRUNCATED or PEER_CLOSED); the caller only needs "closed". */
    (void)mbsc_session_feed_eof(c->session);
    if (mbsc_session_role(c->session) == MBSC_ROLE_MASTER)
        mbsc_why(why, why_len,
                 "handshake with %s: the slave closed the connection during the handshake "
                 "(%s): it may not know our key, or we share no cipher",
                 c->peer, cause);
    else
        mbsc_why(why, why_len,
                 "handshake with %s: the master closed the connection during the handshake "
                 "(%s): it may expect another slave key or PSK",
                 c->peer, cause);
    return conn_end(c, MBSC_ERR_PEER_CLOSED);
}

/* Run the handshake to its end (our last message sent) before deadline d. */
static int conn_handshake(mbsc_conn *c, const mbsc_deadline *d, char *why, size_t why_len)
{
    const char *op;
    int os_err, r;

    for (;;) {
        r = mbsc_session_error(c->session);
        if (r != MBSC_OK) {
            mbsc_why(why, why_len, "handshake with %s: %s", c->peer, mbsc_strerror(r));
            return conn_end(c, r);
        }
        if (mbsc_session_established(c->session) && !mbsc_link_output_pending(&c->link))
            return MBSC_OK;
        r = conn_pump(c, d, !mbsc_session_established(c->session), &os_err, &op);
        if (r == MBSC_ERR_TIMEOUT) {
            mbsc_why(why, why_len, "handshake with %s: timed out", c->peer);
            return conn_end(c, MBSC_ERR_HANDSHAKE_TIMEOUT);
        }
        if (r == MBSC_ERR_PEER_CLOSED)
            return handshake_closed(c, os_err, why, why_len);
        if (r != MBSC_OK) {
            mbsc_why(why, why_len, "handshake with %s: %s: %s", c->peer, op, mbsc_os_error(os_err));
            return conn_end(c, r);
        }
    }
}

/* --- Connecting ---------------------------------------------------------- */

MBSC_API int mbsc_connect(const char *hostport, const mbsc_config *cfg, int timeout_ms,
                          mbsc_conn **out, char *why, size_t why_len)
{
    struct addrinfo *ai;
    mbsc_deadline d;
    mbsc_conn *c;
    int r;

    mbsc_why(why, why_len, "%s", "");
    if (out == NULL || cfg == NULL || mbsc_config_role(cfg) != MBSC_ROLE_MASTER) {
        mbsc_why(why, why_len, "mbsc_connect: needs a master's config and an output pointer");
        return MBSC_ERR_INVALID_ARG;
    }
    *out = NULL;
    mbsc_deadline_start(&d, timeout_ms);
    r = conn_new(cfg, &c, why, why_len);
    if (r != MBSC_OK)
        return r;
    r = mbsc_addr_resolve(hostport, 0, &ai, why, why_len);
    if (r == MBSC_OK) {
        r = mbsc_sock_connect(ai, &d, &c->fd, c->peer, why, why_len);
        freeaddrinfo(ai);
    }
    mbsc_link_init(&c->link, c->fd, c->session);
    if (r == MBSC_OK)
        r = conn_handshake(c, &d, why, why_len);
    if (r != MBSC_OK) {
        mbsc_conn_close(c);
        return r;
    }
    mbsc_why(why, why_len, "%s", ""); /* an address that failed before one worked */
    *out = c;
    return MBSC_OK;
}

/* --- Listening and accepting --------------------------------------------- */

MBSC_API int mbsc_listen(const char *hostport, mbsc_listener **out, char *why, size_t why_len)
{
    struct addrinfo *ai;
    mbsc_listener *l;
    int r;

    mbsc_why(why, why_len, "%s", "");
    if (out == NULL) {
        mbsc_why(why, why_len, "mbsc_listen: no output pointer");
        return MBSC_ERR_INVALID_ARG;
    }
    *out = NULL;
    l = calloc(1, sizeof *l);
    if (l == NULL) {
        mbsc_why(why, why_len, "out of memory");
        return MBSC_ERR_NOMEM;
    }
    r = mbsc_addr_resolve(hostport, 1, &ai, why, why_len);
    if (r == MBSC_OK) {
        r = mbsc_sock_listen(ai, &l->fd, why, why_len);
        freeaddrinfo(ai);
    }
    if (r != MBSC_OK) {
        free(l);
        return r;
    }
    /* Read back, not copied from hostport: port 0 has become a real port. */
    (void)mbsc_addr_local(l->fd, l->addr, sizeof l->addr);
    mbsc_why(why, why_len, "%s", "");
    *out = l;
    return MBSC_OK;
}

MBSC_API int mbsc_listener_fd(const mbsc_listener *l)
{
    return l != NULL ? l->fd : -1;
}

MBSC_API int mbsc_listener_address(const mbsc_listener *l, char *buf, size_t len)
{
    size_t n;

    if (l == NULL || buf == NULL || len == 0)
        return MBSC_ERR_INVALID_ARG;
    n = strlen(l->addr);
    if (n >= len) {
        buf[0] = '\0';
        return MBSC_ERR_BUFFER_TOO_SMALL;
    }
    memcpy(buf, l->addr, n + 1);
    return MBSC_OK;
}

MBSC_API void mbsc_listener_close(mbsc_listener *l)
{
    if (l == NULL)
        return;
    mbsc_sock_close(l->fd);
    free(l);
}

MBSC_API int mbsc_listener_accept_fd(mbsc_listener *l, int timeout_ms, int *fd_out, char *peer,
                                     char *why, size_t why_len)
{
    char scratch[MBSC_ADDRSTRLEN];
    mbsc_deadline d;

    mbsc_why(why, why_len, "%s", "");
    if (fd_out != NULL)
        *fd_out = -1;
    if (peer != NULL)
        peer[0] = '\0';
    if (l == NULL || fd_out == NULL) {
        mbsc_why(why, why_len, "mbsc_listener_accept_fd: NULL listener or fd_out");
        return MBSC_ERR_INVALID_ARG;
    }
    mbsc_deadline_start(&d, timeout_ms);
    return mbsc_sock_accept(l->fd, l->addr, &d, fd_out, peer != NULL ? peer : scratch, why,
                            why_len);
}

/* The config's timeout as poll() milliseconds (it is unsigned, poll's is int). */
static int handshake_timeout_ms(const mbsc_config *cfg)
{
    unsigned ms = mbsc_config_handshake_timeout(cfg);

    return ms > (unsigned)INT_MAX ? INT_MAX : (int)ms;
}

MBSC_API int mbsc_accept(mbsc_listener *l, const mbsc_config *cfg, int accept_timeout_ms,
                         mbsc_conn **out, char *why, size_t why_len)
{
    mbsc_deadline d;
    mbsc_conn *c;
    int r;

    mbsc_why(why, why_len, "%s", "");
    if (l == NULL || out == NULL || cfg == NULL || mbsc_config_role(cfg) != MBSC_ROLE_SLAVE) {
        mbsc_why(why, why_len,
                 "mbsc_accept: needs a listener, a slave's config and an output pointer");
        return MBSC_ERR_INVALID_ARG;
    }
    *out = NULL;
    r = conn_new(cfg, &c, why, why_len);
    if (r != MBSC_OK)
        return r;
    r = mbsc_listener_accept_fd(l, accept_timeout_ms, &c->fd, c->peer, why, why_len);
    mbsc_link_init(&c->link, c->fd, c->session);
    if (r == MBSC_OK) {
        /* The handshake clock starts when the client is there, not when we began waiting. */
        mbsc_deadline_start(&d, handshake_timeout_ms(cfg));
        r = conn_handshake(c, &d, why, why_len);
    }
    if (r != MBSC_OK) {
        mbsc_conn_close(c);
        return r;
    }
    mbsc_why(why, why_len, "%s", "");
    *out = c;
    return MBSC_OK;
}

/* --- Payloads ------------------------------------------------------------ */

/*
 * MBSC_ERR_TIMEOUT means the frame is sealed and queued but the peer has
 * not taken all of it: the rest goes out first with the next send or recv,
 * so the payload must not be sent again.  MBSC_ERR_WOULD_BLOCK means it was
 * not even queued, because earlier output is still waiting.
 */
MBSC_API int mbsc_conn_send(mbsc_conn *c, const uint8_t *payload, size_t len, int timeout_ms)
{
    mbsc_deadline d;
    int r;

    if (c == NULL || (payload == NULL && len != 0))
        return MBSC_ERR_INVALID_ARG;
    if (len > MBSC_MAX_PAYLOAD)
        return MBSC_ERR_PAYLOAD_TOO_LONG;
    r = conn_error(c);
    if (r != MBSC_OK)
        return r;
    mbsc_deadline_start(&d, timeout_ms);
    while ((r = mbsc_session_send(c->session, payload, len)) == MBSC_ERR_WOULD_BLOCK) {
        r = conn_flush_all(c, &d);
        if (r != MBSC_OK)
            return r == MBSC_ERR_TIMEOUT ? MBSC_ERR_WOULD_BLOCK : r;
    }
    if (r != MBSC_OK)
        return mbsc_session_error(c->session) != MBSC_OK ? conn_end(c, r) : r;
    return conn_flush_all(c, &d);
}

MBSC_API int mbsc_conn_recv(mbsc_conn *c, uint8_t *buf, size_t cap, size_t *len, int timeout_ms)
{
    mbsc_deadline d;
    const char *op;
    int os_err, r;

    if (len != NULL)
        *len = 0;
    if (c == NULL || len == NULL || (buf == NULL && cap != 0))
        return MBSC_ERR_INVALID_ARG;
    mbsc_deadline_start(&d, timeout_ms);
    for (;;) {
        /* What was already received is delivered even after a later failure. */
        r = mbsc_session_recv(c->session, buf, cap, len);
        if (r == 1)
            return MBSC_OK;
        if (r == MBSC_ERR_BUFFER_TOO_SMALL)
            return r; /* the payload stays for a larger buffer */
        if (r < 0)
            return conn_end(c, r);
        r = conn_error(c);
        if (r != MBSC_OK)
            return r;
        r = conn_pump(c, &d, 1, &os_err, &op);
        if (r == MBSC_ERR_TIMEOUT)
            return r;
        if (r != MBSC_OK && !(r == MBSC_ERR_PEER_CLOSED && os_err == 0))
            return conn_end(c, r);
        /* At the end of the stream the session holds PEER_CLOSED or TRUNCATED. */
    }
}

/* --- Accessors ----------------------------------------------------------- */

MBSC_API int mbsc_conn_fd(const mbsc_conn *c)
{
    return c != NULL ? c->fd : -1;
}

MBSC_API size_t mbsc_conn_pending(const mbsc_conn *c)
{
    return c != NULL ? mbsc_session_pending_payloads(c->session) : 0;
}

MBSC_API mbsc_session *mbsc_conn_session(mbsc_conn *c)
{
    return c != NULL ? c->session : NULL;
}

MBSC_API const char *mbsc_conn_peer_address(const mbsc_conn *c)
{
    return c != NULL ? c->peer : "";
}

MBSC_API void mbsc_conn_close(mbsc_conn *c)
{
    if (c == NULL)
        return;
    if (c->fd >= 0)
        mbsc_sock_close(c->fd);
    mbsc_session_free(c->session);
    mbsc_wipe(c, sizeof *c);
    free(c);
}
