/*
 * server.c - a libmodbus slave behind the secure channel: one poll() loop,
 * no threads.
 *
 * Each TCP connection has an mbsc_session (slave role), an input buffer and
 * the session's output.  An authenticated, decrypted payload that is a
 * well-formed ADU is written into a socketpair, read back by libmodbus with
 * modbus_receive(), answered with modbus_reply() from the application's
 * mapping, and the reply read from the pair is sealed and sent.  Requests
 * of one connection are answered in order; a connection whose socket does
 * not take its replies is not read any further until it does (TCP pushes
 * back on a master that floods), so nothing one connection does can block
 * the others.
 *
 * One libmodbus context and one pair serve every connection.  Requests are
 * handled one at a time and run to completion (write, modbus_receive,
 * modbus_reply, read back), and a 3.1.6 context keeps no state between two
 * of them (the reply's transaction id comes from the request), so a
 * context per connection would only cost two more descriptors each, below
 * an FD_SETSIZE ceiling, for nothing.
 *
 * libmodbus reads a request in steps whose lengths come from the function
 * code, select()ing before each: the context's timeouts are set to the
 * minimum, so a PDU that announces more bytes than its ADU holds makes
 * modbus_receive() fail at once (the whole ADU is already in the pair),
 * and the exception replies that "flush" first sleep for a microsecond
 * instead of the 0.5 s default.  Bytes of an ADU that libmodbus did not
 * read (a function code it does not know, bytes after a complete PDU) are
 * dropped after each request, so they cannot open the next one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "modbus/modbus_internal.h"

#define DEFAULT_MAX_CONNECTIONS 256u
/* Connections taken per step, so that the others get served too. */
#define ACCEPT_BATCH 16
/* Accepting pauses after an error (EMFILE...) that would otherwise repeat at once. */
#define ACCEPT_PAUSE_MS 250
/* One recv() per connection and step. */
#define CONN_IN_BYTES 4096u
#define DETAIL_BYTES  160u

MBSC_STATIC_ASSERT(ATOMIC_INT_LOCK_FREE == 2, "stop() needs a lock-free atomic int");

struct srv_conn {
    unsigned id;
    int fd; /* -1 once closed (freed at the end of the step) */
    mbsc_session *s;
    const mbsc_cipher *cipher; /* kept from the handshake: a failed session forgets it */
    int connected;             /* handshake over, CONNECTED reported */
    int out_pending;           /* session output not all sent yet */
    int64_t deadline_ns;       /* handshake must be over by then */
    size_t in_pos, in_end;     /* in[in_pos, in_end): received, not fed yet */
    char peer[MBSC_ADDRSTRLEN];
    uint8_t in[CONN_IN_BYTES];
};

struct mbsc_modbus_server {
    mbsc_listener *listener;
    const mbsc_config *cfg; /* borrowed */
    modbus_mapping_t *map;  /* borrowed */
    modbus_t *mb;           /* the one libmodbus context; its socket is pair[1] */
    int pair[2];            /* pair[0] is ours */
    int wake[2];            /* self-pipe: stop() writes, poll() wakes */
    atomic_int stop;
    mbsc_modbus_event_fn fn;
    void *user;
    unsigned max_conns;
    unsigned last_id;
    int64_t accept_resume_ns; /* accepting paused until then; 0: not paused */
    struct srv_conn **conns;
    size_t nconns, cap_conns;
    struct pollfd *pfds;
    size_t cap_pfds;
};

/* Fixed slots of the pollfd array; connections follow in conns order. */
enum { SLOT_WAKE = 0, SLOT_LISTENER = 1, SLOT_CONNS = 2 };

/* --- Events ---------------------------------------------------------------- */

static void event_init(struct mbsc_modbus_event *ev, enum mbsc_modbus_event_type type,
                       const struct srv_conn *c)
{
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    ev->connection_id = c->id;
    ev->peer_address = c->peer;
    if (c->connected) {
        ev->peer_name = mbsc_session_peer_name(c->s);
        ev->cipher = c->cipher;
    }
}

static void emit(const mbsc_modbus_server *srv, const struct mbsc_modbus_event *ev)
{
    if (srv->fn != NULL)
        srv->fn(srv->user, ev);
}

/* A connection that never got a slot (limit reached, accept error). */
static void emit_refused(mbsc_modbus_server *srv, const char *peer, int err, const char *detail)
{
    struct mbsc_modbus_event ev;

    memset(&ev, 0, sizeof ev);
    ev.type = MBSC_MODBUS_EVENT_CLOSED;
    ev.connection_id = ++srv->last_id;
    ev.peer_address = peer;
    ev.error = err;
    ev.detail = detail;
    emit(srv, &ev);
}

/* --- Connections ------------------------------------------------------------ */

/* Report and close; the slot is freed by sweep_closed() at the end of the step. */
static void conn_close(mbsc_modbus_server *srv, struct srv_conn *c, int err, const char *detail)
{
    struct mbsc_modbus_event ev;

    if (c->fd < 0)
        return;
    /* Closed before the event: whoever reacts to it finds the descriptor gone. */
    mbsc_sock_close(c->fd);
    c->fd = -1;
    event_init(&ev, MBSC_MODBUS_EVENT_CLOSED, c);
    ev.error = err;
    ev.detail = detail;
    emit(srv, &ev);
    mbsc_session_free(c->s);
    c->s = NULL;
}

/* Close because of a session error, in words an operator can act on. */
static void conn_fail(mbsc_modbus_server *srv, struct srv_conn *c, int err)
{
    const char *detail = mbsc_strerror(err);

    if (err == MBSC_ERR_UNKNOWN_PEER)
        detail = "unknown master key (not in the allow-list)";
    else if (err == MBSC_ERR_TRUNCATED)
        detail = "peer closed in the middle of a frame";
    conn_close(srv, c, err, detail);
}

/* The master closed its side. */
static void conn_eof(mbsc_modbus_server *srv, struct srv_conn *c)
{
    int err = mbsc_session_feed_eof(c->s);

    if (err == MBSC_ERR_PEER_CLOSED && c->connected)
        conn_close(srv, c, MBSC_OK, "peer closed");
    else if (err == MBSC_ERR_PEER_CLOSED)
        conn_close(srv, c, err, "peer closed during the handshake");
    else
        conn_fail(srv, c, err);
}

/* err and os_err as mbsc_sock_send() and mbsc_sock_recv() report them. */
static void conn_socket_error(mbsc_modbus_server *srv, struct srv_conn *c, int err, int os_err)
{
    char detail[DETAIL_BYTES];

    mbsc_why(detail, sizeof detail, "socket: %s", mbsc_os_error(os_err));
    conn_close(srv, c, err, detail);
}

/* Send the session's output as far as the socket takes it now. */
static void conn_flush(mbsc_modbus_server *srv, struct srv_conn *c)
{
    for (;;) {
        size_t n;
        const uint8_t *out = mbsc_session_output(c->s, &n);
        size_t sent;
        int os_err, r;

        c->out_pending = n != 0;
        if (n == 0)
            return;
        r = mbsc_sock_send(c->fd, out, n, &sent, &os_err);
        if (r != MBSC_OK) {
            if (r != MBSC_ERR_WOULD_BLOCK)
                conn_socket_error(srv, c, r, os_err);
            return;
        }
        mbsc_session_output_consumed(c->s, sent);
    }
}

static void conn_check_connected(mbsc_modbus_server *srv, struct srv_conn *c)
{
    struct mbsc_modbus_event ev;

    if (c->connected || !mbsc_session_established(c->s))
        return;
    c->cipher = mbsc_session_cipher(c->s);
    c->connected = 1;
    event_init(&ev, MBSC_MODBUS_EVENT_CONNECTED, c);
    emit(srv, &ev);
}

/* --- libmodbus ---------------------------------------------------------------- */

/* Drop whatever waits on one end of the pair. */
static void drain(int fd)
{
    uint8_t sink[MODBUS_TCP_MAX_ADU_LENGTH];
    size_t got;
    int os_err;

    while (mbsc_sock_recv(fd, sink, sizeof sink, &got, &os_err) == MBSC_OK)
        continue;
}

/* Read libmodbus's reply (one send() of at most one ADU) from our end. */
static int read_reply(mbsc_modbus_server *srv, uint8_t rsp[MBSC_MODBUS_MAX_ADU], size_t *len,
                      char *detail, size_t detail_len)
{
    uint8_t buf[MBSC_MODBUS_MAX_ADU + 1];
    size_t got = 0, k;
    int os_err;

    while (got < sizeof buf &&
           mbsc_sock_recv(srv->pair[0], buf + got, sizeof buf - got, &k, &os_err) == MBSC_OK)
        got += k;
    if (got == 0)
        return MBSC_OK; /* libmodbus chose not to answer */
    if (mbsc_modbus_check_adu(buf, got) != MBSC_OK) {
        drain(srv->pair[0]);
        mbsc_why(detail, detail_len, "modbus_reply produced %zu bytes that are not one ADU", got);
        return MBSC_ERR_MODBUS;
    }
    memcpy(rsp, buf, got);
    *len = got;
    return MBSC_OK;
}

/*
 * One request through libmodbus: adu in, the reply (*rsp_len bytes, 0 for
 * none) out.  MBSC_ERR_BAD_ADU when libmodbus cannot parse the request,
 * MBSC_ERR_MODBUS when it fails otherwise; detail says what happened.
 */
static int modbus_exchange(mbsc_modbus_server *srv, const uint8_t *adu, size_t len,
                           uint8_t rsp[MBSC_MODBUS_MAX_ADU], size_t *rsp_len, char *detail,
                           size_t detail_len)
{
    uint8_t req[MODBUS_TCP_MAX_ADU_LENGTH];
    size_t sent;
    int n, e;

    *rsp_len = 0;
    if (mbsc_sock_send(srv->pair[0], adu, len, &sent, &e) != MBSC_OK || sent != len) {
        drain(srv->pair[1]);
        mbsc_why(detail, detail_len, "cannot pass the request to libmodbus: %s", mbsc_os_error(e));
        return MBSC_ERR_MODBUS;
    }
    n = modbus_receive(srv->mb, req);
    e = errno;
    drain(srv->pair[1]); /* what libmodbus did not read of this ADU */
    if (n < 0) {
        mbsc_why(detail, detail_len, "request rejected by libmodbus: %s", mb_errno_text(e));
        return MBSC_ERR_BAD_ADU;
    }
    if (n == 0)
        return MBSC_OK; /* not for this slave: no reply (libmodbus's choice) */
    if (modbus_reply(srv->mb, req, n, srv->map) < 0) {
        e = errno;
        drain(srv->pair[0]);
        mbsc_why(detail, detail_len, "modbus_reply: %s", mb_errno_text(e));
        return MBSC_ERR_MODBUS;
    }
    return read_reply(srv, rsp, rsp_len, detail, detail_len);
}

/* One opened payload: keep-alive, request, or the end of the connection. */
static void conn_request(mbsc_modbus_server *srv, struct srv_conn *c, const uint8_t *adu,
                         size_t len)
{
    struct mbsc_modbus_event ev;
    uint8_t rsp[MBSC_MODBUS_MAX_ADU];
    char detail[DETAIL_BYTES];
    size_t rsp_len;
    int r;

    if (len == 0)
        return; /* keep-alive */
    if (mbsc_modbus_check_adu(adu, len) != MBSC_OK) {
        conn_close(srv, c, MBSC_ERR_BAD_ADU, "malformed Modbus/TCP ADU (MBAP header)");
        return;
    }
    event_init(&ev, MBSC_MODBUS_EVENT_REQUEST, c);
    ev.adu = adu;
    ev.adu_len = len;
    emit(srv, &ev);
    r = modbus_exchange(srv, adu, len, rsp, &rsp_len, detail, sizeof detail);
    if (r != MBSC_OK) {
        conn_close(srv, c, r, detail);
        return;
    }
    if (rsp_len == 0)
        return;
    /* The output was empty (see conn_process): a reply always fits. */
    r = mbsc_session_send(c->s, rsp, rsp_len);
    if (r != MBSC_OK)
        conn_fail(srv, c, r);
}

/*
 * Handle everything buffered, one request at a time, as long as the
 * replies are sent: a request is taken only with the output empty.
 */
static void conn_process(mbsc_modbus_server *srv, struct srv_conn *c)
{
    uint8_t adu[MBSC_MODBUS_MAX_ADU];
    size_t len;
    int r;

    while (c->fd >= 0) {
        conn_flush(srv, c);
        if (c->fd < 0 || c->out_pending)
            return; /* POLLOUT brings us back */
        conn_check_connected(srv, c);
        r = mbsc_session_recv(c->s, adu, sizeof adu, &len);
        if (r == 1) {
            conn_request(srv, c, adu, len);
            continue;
        }
        if (r == MBSC_ERR_BUFFER_TOO_SMALL) {
            conn_close(srv, c, MBSC_ERR_BAD_ADU, "payload longer than a Modbus/TCP ADU");
            return;
        }
        if (r < 0) {
            conn_fail(srv, c, r);
            return;
        }
        if (c->in_pos == c->in_end)
            return;
        r = mb_feed_buffered(c->s, c->in, &c->in_pos, &c->in_end);
        if (r != MBSC_OK) {
            conn_fail(srv, c, r);
            return;
        }
    }
}

static void conn_read(mbsc_modbus_server *srv, struct srv_conn *c)
{
    size_t got;
    int os_err;
    int r = mbsc_sock_recv(c->fd, c->in, sizeof c->in, &got, &os_err);

    if (r == MBSC_OK) {
        c->in_pos = 0;
        c->in_end = got;
    } else if (r == MBSC_ERR_PEER_CLOSED && os_err == 0) {
        conn_eof(srv, c); /* the end of the stream, not a reset */
    } else if (r != MBSC_ERR_WOULD_BLOCK) {
        conn_socket_error(srv, c, r, os_err);
    }
}

/* Read only with nothing buffered and nothing unsent: that is the back-pressure. */
static int conn_wants_input(const struct srv_conn *c)
{
    return c->in_pos == c->in_end && !c->out_pending;
}

static void conn_service(mbsc_modbus_server *srv, struct srv_conn *c, short revents)
{
    if (c->fd < 0 || revents == 0)
        return;
    if (revents & POLLNVAL) {
        conn_close(srv, c, MBSC_ERR_IO, "socket: invalid descriptor");
        return;
    }
    if (c->out_pending)
        conn_flush(srv, c); /* POLLOUT, or an error that send() reports */
    if (c->fd >= 0 && conn_wants_input(c) && (revents & (POLLIN | POLLHUP | POLLERR)))
        conn_read(srv, c);
    conn_process(srv, c);
}

static void conn_free(struct srv_conn *c)
{
    mbsc_session_free(c->s);
    mbsc_wipe(c, sizeof *c);
    free(c);
}

static int conns_reserve(mbsc_modbus_server *srv)
{
    struct srv_conn **grown;
    size_t cap;

    if (srv->nconns < srv->cap_conns)
        return MBSC_OK;
    cap = srv->cap_conns == 0 ? 16 : 2 * srv->cap_conns;
    grown = realloc(srv->conns, cap * sizeof *grown);
    if (grown == NULL)
        return MBSC_ERR_NOMEM;
    srv->conns = grown;
    srv->cap_conns = cap;
    return MBSC_OK;
}

static int conn_add(mbsc_modbus_server *srv, int fd, const char *peer)
{
    struct srv_conn *c;
    int err = MBSC_ERR_NOMEM;

    if (conns_reserve(srv) != MBSC_OK)
        return MBSC_ERR_NOMEM;
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return MBSC_ERR_NOMEM;
    c->s = mbsc_session_new(srv->cfg, &err);
    if (c->s == NULL) {
        free(c);
        return err;
    }
    c->id = ++srv->last_id;
    c->fd = fd;
    memcpy(c->peer, peer, sizeof c->peer);
    c->deadline_ns =
        mbsc_monotonic_ns() + (int64_t)mbsc_config_handshake_timeout(srv->cfg) * 1000000;
    srv->conns[srv->nconns++] = c;
    return MBSC_OK;
}

static unsigned live_connections(const mbsc_modbus_server *srv)
{
    unsigned n = 0;
    size_t i;

    for (i = 0; i < srv->nconns; i++)
        n += srv->conns[i]->fd >= 0;
    return n;
}

static void sweep_closed(mbsc_modbus_server *srv)
{
    size_t i, kept = 0;

    for (i = 0; i < srv->nconns; i++) {
        if (srv->conns[i]->fd >= 0)
            srv->conns[kept++] = srv->conns[i];
        else
            conn_free(srv->conns[i]);
    }
    srv->nconns = kept;
}

static void expire_handshakes(mbsc_modbus_server *srv, int64_t now)
{
    size_t i;

    for (i = 0; i < srv->nconns; i++) {
        struct srv_conn *c = srv->conns[i];

        if (c->fd >= 0 && !c->connected && now >= c->deadline_ns)
            conn_close(srv, c, MBSC_ERR_HANDSHAKE_TIMEOUT, "handshake timeout");
    }
}

/* --- Accepting ---------------------------------------------------------------- */

static void accept_one_more(mbsc_modbus_server *srv, int fd, const char *peer)
{
    char detail[DETAIL_BYTES];
    int r;

    if (live_connections(srv) >= srv->max_conns) {
        mbsc_sock_close(fd);
        mbsc_why(detail, sizeof detail, "too many connections (limit %u): refused", srv->max_conns);
        emit_refused(srv, peer, MBSC_ERR_FD_LIMIT, detail);
        return;
    }
    r = conn_add(srv, fd, peer);
    if (r != MBSC_OK) {
        mbsc_sock_close(fd);
        mbsc_why(detail, sizeof detail, "refused: %s", mbsc_strerror(r));
        emit_refused(srv, peer, r, detail);
    }
}

static void accept_some(mbsc_modbus_server *srv)
{
    char peer[MBSC_ADDRSTRLEN], why[MBSC_WHY_SIZE];
    int i, fd, r;

    for (i = 0; i < ACCEPT_BATCH; i++) {
        r = mbsc_listener_accept_fd(srv->listener, 0, &fd, peer, why, sizeof why);
        if (r == MBSC_ERR_TIMEOUT)
            return; /* nobody else is waiting */
        if (r != MBSC_OK) {
            /* EMFILE and the like leave the client queued: poll() would spin. */
            srv->accept_resume_ns = mbsc_monotonic_ns() + (int64_t)ACCEPT_PAUSE_MS * 1000000;
            emit_refused(srv, peer, r, why);
            return;
        }
        accept_one_more(srv, fd, peer);
    }
}

static int accepting(const mbsc_modbus_server *srv, int64_t now)
{
    return srv->accept_resume_ns == 0 || now >= srv->accept_resume_ns;
}

/* --- The loop ------------------------------------------------------------------ */

static size_t fill_pollfds(const mbsc_modbus_server *srv, struct pollfd *fds, size_t cap,
                           int64_t now)
{
    size_t i, n = SLOT_CONNS + srv->nconns;

    for (i = 0; i < n && i < cap; i++) {
        fds[i].fd = -1;
        fds[i].events = 0;
        fds[i].revents = 0;
    }
    if (cap > SLOT_WAKE) {
        fds[SLOT_WAKE].fd = srv->wake[0];
        fds[SLOT_WAKE].events = POLLIN;
    }
    if (cap > SLOT_LISTENER && accepting(srv, now)) {
        fds[SLOT_LISTENER].fd = mbsc_listener_fd(srv->listener);
        fds[SLOT_LISTENER].events = POLLIN;
    }
    for (i = 0; i < srv->nconns && SLOT_CONNS + i < cap; i++) {
        const struct srv_conn *c = srv->conns[i];
        struct pollfd *p = &fds[SLOT_CONNS + i];

        if (c->fd < 0)
            continue;
        p->fd = c->fd;
        p->events = (short)((c->out_pending ? POLLOUT : 0) | (conn_wants_input(c) ? POLLIN : 0));
    }
    return n;
}

/* Milliseconds from now to at_ns, rounded up (rounding down would spin). */
static int ms_until(int64_t at_ns, int64_t now)
{
    int64_t left = at_ns - now;

    if (left <= 0)
        return 0;
    left = (left + 999999) / 1000000;
    return left > INT_MAX ? INT_MAX : (int)left;
}

static int next_timeout_at(const mbsc_modbus_server *srv, int64_t now)
{
    int64_t next = 0;
    size_t i;

    for (i = 0; i < srv->nconns; i++) {
        const struct srv_conn *c = srv->conns[i];

        if (c->fd >= 0 && !c->connected && (next == 0 || c->deadline_ns < next))
            next = c->deadline_ns;
    }
    if (!accepting(srv, now) && (next == 0 || srv->accept_resume_ns < next))
        next = srv->accept_resume_ns;
    return next == 0 ? -1 : ms_until(next, now);
}

static void drain_wake(mbsc_modbus_server *srv)
{
    char sink[64];

    while (read(srv->wake[0], sink, sizeof sink) > 0)
        continue;
}

static int pollfds_reserve(mbsc_modbus_server *srv, size_t n)
{
    struct pollfd *grown;

    if (n <= srv->cap_pfds)
        return MBSC_OK;
    grown = realloc(srv->pfds, n * sizeof *grown);
    if (grown == NULL)
        return MBSC_ERR_NOMEM;
    srv->pfds = grown;
    srv->cap_pfds = n;
    return MBSC_OK;
}

MBSC_API int mbsc_modbus_server_step(mbsc_modbus_server *srv, int timeout_ms)
{
    int64_t now;
    size_t i, n, nconns;
    int wait, listener_ready;

    if (srv == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (pollfds_reserve(srv, SLOT_CONNS + srv->nconns) != MBSC_OK)
        return MBSC_ERR_NOMEM;
    now = mbsc_monotonic_ns();
    nconns = srv->nconns;
    n = fill_pollfds(srv, srv->pfds, srv->cap_pfds, now);
    wait = next_timeout_at(srv, now);
    if (timeout_ms >= 0 && (wait < 0 || timeout_ms < wait))
        wait = timeout_ms;
    if (poll(srv->pfds, (nfds_t)n, wait) < 0)
        return errno == EINTR ? MBSC_OK : MBSC_ERR_IO;
    if (srv->pfds[SLOT_LISTENER].revents & POLLNVAL)
        return MBSC_ERR_IO;
    if (srv->pfds[SLOT_WAKE].revents != 0)
        drain_wake(srv);
    listener_ready = (srv->pfds[SLOT_LISTENER].revents & (POLLIN | POLLERR | POLLHUP)) != 0;
    for (i = 0; i < nconns; i++)
        conn_service(srv, srv->conns[i], srv->pfds[SLOT_CONNS + i].revents);
    expire_handshakes(srv, mbsc_monotonic_ns());
    sweep_closed(srv);
    if (listener_ready)
        accept_some(srv);
    return MBSC_OK;
}

MBSC_API size_t mbsc_modbus_server_fds(const mbsc_modbus_server *srv, struct pollfd *fds,
                                       size_t cap)
{
    if (srv == NULL)
        return 0;
    return fill_pollfds(srv, fds, fds != NULL ? cap : 0, mbsc_monotonic_ns());
}

MBSC_API int mbsc_modbus_server_next_timeout(const mbsc_modbus_server *srv)
{
    return srv != NULL ? next_timeout_at(srv, mbsc_monotonic_ns()) : -1;
}

MBSC_API int mbsc_modbus_server_run(mbsc_modbus_server *srv)
{
    int r = MBSC_OK;

    if (srv == NULL)
        return MBSC_ERR_INVALID_ARG;
    while (r == MBSC_OK && !atomic_load(&srv->stop))
        r = mbsc_modbus_server_step(srv, -1);
    atomic_store(&srv->stop, 0);
    drain_wake(srv);
    return r;
}

MBSC_API void mbsc_modbus_server_stop(mbsc_modbus_server *srv)
{
    int saved = errno; /* a signal handler must not change errno */
    ssize_t k;

    if (srv == NULL)
        return;
    atomic_store(&srv->stop, 1);
    /* write(2) is async-signal-safe; a full pipe already wakes poll(). */
    k = write(srv->wake[1], "", 1);
    (void)k;
    errno = saved;
}

/* --- Setup and queries -------------------------------------------------------- */

MBSC_API void mbsc_modbus_server_set_event_fn(mbsc_modbus_server *srv, mbsc_modbus_event_fn fn,
                                              void *user)
{
    if (srv == NULL)
        return;
    srv->fn = fn;
    srv->user = user;
}

MBSC_API int mbsc_modbus_server_address(const mbsc_modbus_server *srv, char *buf, size_t len)
{
    if (srv == NULL)
        return MBSC_ERR_INVALID_ARG;
    return mbsc_listener_address(srv->listener, buf, len);
}

MBSC_API int mbsc_modbus_server_set_max_connections(mbsc_modbus_server *srv, unsigned n)
{
    if (srv == NULL || n == 0)
        return MBSC_ERR_INVALID_ARG;
    srv->max_conns = n;
    return MBSC_OK;
}

MBSC_API unsigned mbsc_modbus_server_connections(const mbsc_modbus_server *srv)
{
    return srv != NULL ? live_connections(srv) : 0;
}

static int wake_pipe(int wake[2], char *why, size_t why_len)
{
    int i;

    if (pipe(wake) != 0) {
        int e = errno;

        wake[0] = wake[1] = -1;
        mbsc_why(why, why_len, "pipe: %s", mbsc_os_error(e));
        return mbsc_sock_fd_error(e, MBSC_ERR_IO);
    }
    for (i = 0; i < 2; i++) {
        int fl = fcntl(wake[i], F_GETFL);

        /* Both ends non-blocking: stop() must never block in a signal handler. */
        if (fl < 0 || fcntl(wake[i], F_SETFL, fl | O_NONBLOCK) != 0 ||
            fcntl(wake[i], F_SETFD, FD_CLOEXEC) != 0) {
            mbsc_why(why, why_len, "pipe: fcntl: %s", mbsc_os_error(errno));
            return MBSC_ERR_IO;
        }
    }
    return MBSC_OK;
}

/* The libmodbus context: timeouts at their minimum (see the top of the file). */
static int server_context(mbsc_modbus_server *srv, char *why, size_t why_len)
{
    srv->mb = mb_context_new(srv->pair[1]);
    if (srv->mb == NULL) {
        mbsc_why(why, why_len, "modbus_new_tcp: out of memory");
        return MBSC_ERR_NOMEM;
    }
    if (modbus_set_indication_timeout(srv->mb, 0, 1) != 0 ||
        modbus_set_byte_timeout(srv->mb, 0, 1) != 0 ||
        modbus_set_response_timeout(srv->mb, 0, 1) != 0) {
        mbsc_why(why, why_len, "libmodbus timeouts: %s", mb_errno_text(errno));
        return MBSC_ERR_MODBUS;
    }
    return MBSC_OK;
}

/* A config that cannot make sessions fails here, not at the first client. */
static int check_config(const mbsc_config *cfg, char *why, size_t why_len)
{
    int err = MBSC_ERR_INVALID_ARG;
    mbsc_session *s = mbsc_session_new(cfg, &err);

    if (s == NULL) {
        mbsc_why(why, why_len, "mbsc_modbus_server_new: cannot make a session: %s",
                 mbsc_strerror(err));
        return err;
    }
    mbsc_session_free(s);
    return MBSC_OK;
}

MBSC_API int mbsc_modbus_server_new(mbsc_modbus_server **out, const char *hostport,
                                    const mbsc_config *cfg, modbus_mapping_t *map, char *why,
                                    size_t why_len)
{
    mbsc_modbus_server *srv;
    int r;

    mbsc_why(why, why_len, "%s", "");
    if (out == NULL || hostport == NULL || cfg == NULL || map == NULL ||
        mbsc_config_role(cfg) != MBSC_ROLE_SLAVE) {
        mbsc_why(why, why_len,
                 "mbsc_modbus_server_new: needs an address, a slave's config and "
                 "a mapping");
        return MBSC_ERR_INVALID_ARG;
    }
    *out = NULL;
    r = check_config(cfg, why, why_len);
    if (r != MBSC_OK)
        return r;
    srv = calloc(1, sizeof *srv);
    if (srv == NULL) {
        mbsc_why(why, why_len, "out of memory");
        return MBSC_ERR_NOMEM;
    }
    srv->cfg = cfg;
    srv->map = map;
    srv->max_conns = DEFAULT_MAX_CONNECTIONS;
    srv->wake[0] = srv->wake[1] = -1;
    atomic_init(&srv->stop, 0);
    r = mb_socketpair(srv->pair, why, why_len);
    if (r == MBSC_OK)
        r = wake_pipe(srv->wake, why, why_len);
    if (r == MBSC_OK)
        r = server_context(srv, why, why_len);
    if (r == MBSC_OK)
        r = mbsc_listen(hostport, &srv->listener, why, why_len);
    if (r != MBSC_OK) {
        mbsc_modbus_server_free(srv);
        return r;
    }
    *out = srv;
    return MBSC_OK;
}

MBSC_API void mbsc_modbus_server_free(mbsc_modbus_server *srv)
{
    size_t i;

    if (srv == NULL)
        return;
    for (i = 0; i < srv->nconns; i++)
        conn_close(srv, srv->conns[i], MBSC_OK, "server stopped");
    sweep_closed(srv);
    free(srv->conns);
    free(srv->pfds);
    mbsc_listener_close(srv->listener);
    if (srv->mb != NULL) {
        modbus_close(srv->mb); /* closes pair[1] */
        modbus_free(srv->mb);
    } else {
        mbsc_sock_close(srv->pair[1]);
    }
    mbsc_sock_close(srv->pair[0]);
    mbsc_sock_close(srv->wake[0]);
    mbsc_sock_close(srv->wake[1]);
    free(srv);
}
