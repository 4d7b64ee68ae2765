/* SPDX-License-Identifier: ISC */
/*
 * server.c - the server object, its loop and its public calls (mbsc/server.h).
 *
 * One thread, one poller.  A step waits for readiness (or the nearest
 * deadline), serves the ready connections, hands out the requests answered
 * since the last step, accepts newcomers last (so that a flood of new
 * connections cannot starve the sessions already open), expires deadlines
 * and frees what was closed.  Deadlines need no timer wheel: every
 * unconfirmed connection gets the same handshake time, so the list in
 * accept order is also the list in deadline order, and confirmed sessions
 * move to the tail of theirs at each request, which keeps it in idle order.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/server_internal.h"

#define DEFAULT_MAX_UNCONFIRMED 64u
#define DEFAULT_MAX_CONNECTIONS 1024u
#define DEFAULT_MAX_PER_ADDRESS 4u
#define DEFAULT_HANDSHAKE_MS    2000u
#define DEFAULT_LOG_MS          10000u
#define DEFAULT_DEAD_PEER_MS    30000u
/*
 * Sessions per master key: a master normally holds one; a few more cover
 * a reconnection while the old session is still half-open (until the idle
 * timeout, the dead-peer probes or TCP end it), or a master that polls over
 * parallel connections.  Small, so that one key - stolen, or a master gone
 * wrong - takes a handful of the connection slots, not all of them.
 */
#define DEFAULT_MAX_PER_KEY 4u
#define READY_PER_STEP      256

MBSC_STATIC_ASSERT(ATOMIC_INT_LOCK_FREE == 2, "stop() needs a lock-free atomic int");

/* ---- shared with the other files ---------------------------------------------- */

struct srv_conn *srv_lookup(const mbsc_server *srv, mbsc_server_conn_id id)
{
    size_t slot = (size_t)(id & ((1u << SRV_SLOT_BITS) - 1u));
    struct srv_conn *c;

    if (id >> SRV_SLOT_BITS == 0 || slot >= srv->n_slots)
        return NULL;
    c = srv->slots[slot];
    return c != NULL && c->id == id && c->fd >= 0 ? c : NULL;
}

/* ---- budgets and slots --------------------------------------------------------- */

/* Slots for every connection the budget allows (ids carry the slot). */
static int size_slots(mbsc_server *srv, unsigned total)
{
    size_t want = (size_t)total, i;
    struct srv_conn **slots;
    size_t *free_slots;

    if (want <= srv->n_slots)
        return MBSC_OK;
    if (want >= (size_t)1 << SRV_SLOT_BITS)
        return MBSC_ERR_INVALID_ARG;
    slots = realloc(srv->slots, want * sizeof *slots);
    if (slots == NULL)
        return MBSC_ERR_NOMEM;
    srv->slots = slots;
    free_slots = realloc(srv->free_slots, want * sizeof *free_slots);
    if (free_slots == NULL)
        return MBSC_ERR_NOMEM;
    srv->free_slots = free_slots;
    /* New slots go below the free ones, highest first, so low slots come first. */
    memmove(srv->free_slots + (want - srv->n_slots), srv->free_slots,
            srv->n_free * sizeof *free_slots);
    for (i = 0; i < want - srv->n_slots; i++)
        srv->free_slots[i] = want - 1 - i;
    srv->n_free += want - srv->n_slots;
    for (i = srv->n_slots; i < want; i++)
        srv->slots[i] = NULL;
    srv->n_slots = want;
    return MBSC_OK;
}

MBSC_API int mbsc_server_set_limit(mbsc_server *srv, enum mbsc_server_limit which, unsigned value)
{
    int r;

    if (srv == NULL)
        return MBSC_ERR_INVALID_ARG;
    switch (which) {
    case MBSC_SERVER_MAX_CONNECTIONS:
        if (value == 0)
            return MBSC_ERR_INVALID_ARG;
        if (value > srv->fd_cap)
            value = srv->fd_cap;
        r = size_slots(srv, value);
        if (r != MBSC_OK)
            return r;
        srv->max_connections = value;
        if (srv->max_unconfirmed > value)
            srv->max_unconfirmed = value;
        return MBSC_OK;
    case MBSC_SERVER_MAX_UNCONFIRMED:
        if (value == 0)
            return MBSC_ERR_INVALID_ARG;
        srv->max_unconfirmed = value < srv->max_connections ? value : srv->max_connections;
        return MBSC_OK;
    case MBSC_SERVER_MAX_UNCONFIRMED_PER_ADDRESS:
        if (value == 0)
            return MBSC_ERR_INVALID_ARG;
        srv->max_per_address = value;
        return MBSC_OK;
    case MBSC_SERVER_HANDSHAKE_TIMEOUT_MS:
        if (value == 0 || value > (unsigned)INT_MAX)
            return MBSC_ERR_INVALID_ARG;
        srv->handshake_ms = value;
        return MBSC_OK;
    case MBSC_SERVER_IDLE_TIMEOUT_MS:
        if (value > (unsigned)INT_MAX)
            return MBSC_ERR_INVALID_ARG;
        srv->idle_ms = value;
        return MBSC_OK;
    case MBSC_SERVER_LOG_INTERVAL_MS:
        if (value == 0 || value > (unsigned)INT_MAX)
            return MBSC_ERR_INVALID_ARG;
        srv->log_ms = value;
        return MBSC_OK;
    case MBSC_SERVER_MAX_SESSIONS_PER_KEY:
        if (value == 0)
            return MBSC_ERR_INVALID_ARG;
        srv->max_per_key = value;
        return MBSC_OK;
    case MBSC_SERVER_DEAD_PEER_MS:
        if (value > (unsigned)INT_MAX)
            return MBSC_ERR_INVALID_ARG;
        srv->dead_peer_ms = value;
        return MBSC_OK;
    }
    return MBSC_ERR_INVALID_ARG;
}

MBSC_API unsigned mbsc_server_get_limit(const mbsc_server *srv, enum mbsc_server_limit which)
{
    if (srv == NULL)
        return 0;
    switch (which) {
    case MBSC_SERVER_MAX_CONNECTIONS: return srv->max_connections;
    case MBSC_SERVER_MAX_UNCONFIRMED: return srv->max_unconfirmed;
    case MBSC_SERVER_MAX_UNCONFIRMED_PER_ADDRESS: return srv->max_per_address;
    case MBSC_SERVER_HANDSHAKE_TIMEOUT_MS: return srv->handshake_ms;
    case MBSC_SERVER_IDLE_TIMEOUT_MS: return srv->idle_ms;
    case MBSC_SERVER_LOG_INTERVAL_MS: return srv->log_ms;
    case MBSC_SERVER_MAX_SESSIONS_PER_KEY: return srv->max_per_key;
    case MBSC_SERVER_DEAD_PEER_MS: return srv->dead_peer_ms;
    }
    return 0;
}

/* ---- the loop -------------------------------------------------------------------- */

static int accepting(const mbsc_server *srv, int64_t now)
{
    return srv->accept_resume_ns == 0 || now >= srv->accept_resume_ns;
}

/* The nearest deadline in ns (0: none). */
static int64_t next_due(const mbsc_server *srv, int64_t now)
{
    int64_t next = 0, t;

    if (srv->ready_head != NULL)
        return now;
    if (srv->unconfirmed.head != NULL)
        next = srv->unconfirmed.head->due_ns;
    if (srv->idle_ms != 0 && srv->confirmed.head != NULL) {
        t = srv->confirmed.head->due_ns + (int64_t)srv->idle_ms * 1000000;
        if (next == 0 || t < next)
            next = t;
    }
    t = srv_refusals_due(srv);
    if (t != 0 && (next == 0 || t < next))
        next = t;
    if (!accepting(srv, now) && (next == 0 || srv->accept_resume_ns < next))
        next = srv->accept_resume_ns;
    return next;
}

/* Milliseconds from now to at, rounded up (rounding down would spin). */
static int ms_until(int64_t at, int64_t now)
{
    int64_t left = at - now;

    if (left <= 0)
        return 0;
    left = (left + 999999) / 1000000;
    return left > INT_MAX ? INT_MAX : (int)left;
}

MBSC_API int mbsc_server_next_timeout(const mbsc_server *srv)
{
    int64_t now, due;

    if (srv == NULL)
        return -1;
    now = mbsc_monotonic_ns();
    due = next_due(srv, now);
    return due == 0 ? -1 : ms_until(due, now);
}

static void expire(mbsc_server *srv, int64_t now)
{
    while (srv->unconfirmed.head != NULL && srv->unconfirmed.head->due_ns <= now) {
        srv_conn_end(srv, srv->unconfirmed.head, MBSC_ERR_HANDSHAKE_TIMEOUT, "handshake timeout",
                     REFUSED_TIMEOUT);
    }
    while (srv->idle_ms != 0 && srv->confirmed.head != NULL &&
           srv->confirmed.head->due_ns + (int64_t)srv->idle_ms * 1000000 <= now) {
        struct srv_conn *c = srv->confirmed.head;

        if (!c->awaiting) {
            srv_conn_end(srv, c, MBSC_ERR_TIMEOUT, "idle timeout", REFUSED_OTHER);
            continue;
        }
        /*
         * Waiting for the application's answer is not idleness: its clock
         * starts again, at the tail.  Left at the head, it would hold up
         * the idle ones behind it and keep the deadline in the past (a loop
         * that never sleeps) until the answer came.
         */
        c->due_ns = now;
        srv_list_remove(&srv->confirmed, c);
        srv_list_push(&srv->confirmed, c);
    }
}

static void bury(mbsc_server *srv)
{
    while (srv->dead_head != NULL) {
        struct srv_conn *c = srv->dead_head;

        srv->dead_head = c->next_dead;
        srv_conn_free(c);
    }
}

static void serve_ready(mbsc_server *srv)
{
    struct srv_conn *list = srv->ready_head;

    srv->ready_head = NULL;
    while (list != NULL) {
        struct srv_conn *c = list;

        list = c->next_ready;
        c->ready = 0;
        c->next_ready = NULL;
        if (c->fd >= 0)
            srv_conn_process(srv, c);
    }
}

static void drain_wake(mbsc_server *srv)
{
    char sink[64];

    while (read(srv->wake[0], sink, sizeof sink) > 0)
        continue;
}

MBSC_API int mbsc_server_step(mbsc_server *srv, int timeout_ms)
{
    struct srv_ready ready[READY_PER_STEP];
    int64_t now, due;
    int n, i, wait, listener_ready = 0;

    if (srv == NULL)
        return MBSC_ERR_INVALID_ARG;
    now = mbsc_monotonic_ns();
    due = next_due(srv, now);
    wait = due == 0 ? -1 : ms_until(due, now);
    if (timeout_ms >= 0 && (wait < 0 || timeout_ms < wait))
        wait = timeout_ms;
    if (atomic_load(&srv->stop))
        wait = 0;
    if (srv->lfd >= 0 && accepting(srv, now) && srv->accept_resume_ns != 0) {
        srv->accept_resume_ns = 0;
        (void)srv_poller_mod(&srv->poller, srv->lfd, SRV_KEY_LISTENER, POLLIN);
    }
    n = srv_poller_wait(&srv->poller, ready, READY_PER_STEP, wait);
    if (n < 0)
        return n;
    for (i = 0; i < n; i++) {
        struct srv_conn *c;

        if (ready[i].key == SRV_KEY_WAKE) {
            drain_wake(srv);
        } else if (ready[i].key == SRV_KEY_LISTENER) {
            if (ready[i].revents & POLLNVAL)
                return MBSC_ERR_IO;
            listener_ready = 1;
        } else if ((c = srv_lookup(srv, ready[i].key)) != NULL) {
            srv_conn_io(srv, c, ready[i].revents);
        }
    }
    serve_ready(srv);
    if (listener_ready && srv->lfd >= 0 && accepting(srv, mbsc_monotonic_ns())) {
        srv_accept_some(srv);
        if (!accepting(srv, mbsc_monotonic_ns()))
            (void)srv_poller_mod(&srv->poller, srv->lfd, SRV_KEY_LISTENER, 0);
    }
    now = mbsc_monotonic_ns();
    expire(srv, now);
    srv_refusals_flush(srv, now, 0);
    bury(srv);
    return MBSC_OK;
}

MBSC_API int mbsc_server_run(mbsc_server *srv)
{
    int r = MBSC_OK;

    if (srv == NULL)
        return MBSC_ERR_INVALID_ARG;
    while (r == MBSC_OK && !atomic_load(&srv->stop))
        r = mbsc_server_step(srv, -1);
    atomic_store(&srv->stop, 0);
    drain_wake(srv);
    return r;
}

MBSC_API void mbsc_server_stop(mbsc_server *srv)
{
    int saved = errno; /* a signal handler must not change errno */
    ssize_t k;

    if (srv == NULL)
        return;
    atomic_store(&srv->stop, 1);
    /* write(2) is async-signal-safe; a full pipe already wakes the poller. */
    k = write(srv->wake[1], "", 1);
    (void)k;
    errno = saved;
}

/* ---- answers ------------------------------------------------------------------------ */

/* Answered outside the callback: hand out the next request at the next step. */
static void mark_ready(mbsc_server *srv, struct srv_conn *c)
{
    if (c->in_callback || c->ready)
        return;
    /*
     * Unless that step would find nothing to do: no payload waiting, the
     * session sound and the socket watched as it should be.  A master that
     * sends one request at a time is the common case, and a step marked
     * due at once costs the application's loop a wake-up and a poll for
     * every answer (mbsc_server_next_timeout() would say 0).
     */
    if (mbsc_link_pending(&c->link) == 0 && mbsc_session_error(c->s) == MBSC_OK &&
        mbsc_link_events(&c->link) == c->watched)
        return;
    c->ready = 1;
    c->next_ready = srv->ready_head;
    srv->ready_head = c;
}

static struct srv_conn *waiting_conn(mbsc_server *srv, mbsc_server_conn_id id, int *err)
{
    struct srv_conn *c = srv != NULL ? srv_lookup(srv, id) : NULL;

    *err = srv == NULL ? MBSC_ERR_INVALID_ARG : MBSC_ERR_PEER_CLOSED;
    if (c == NULL)
        return NULL;
    *err = MBSC_ERR_STATE;
    return c->awaiting ? c : NULL;
}

MBSC_API int mbsc_server_reply(mbsc_server *srv, mbsc_server_conn_id id, const uint8_t *payload,
                               size_t len)
{
    struct srv_conn *c;
    int r;

    c = waiting_conn(srv, id, &r);
    if (c == NULL)
        return r;
    if (payload == NULL || len == 0)
        return MBSC_ERR_INVALID_ARG; /* an empty frame is a keep-alive, not an answer */
    if (len > MBSC_MAX_PAYLOAD)
        return MBSC_ERR_PAYLOAD_TOO_LONG;
    /* The output was empty when the request was handed out: it fits. */
    r = mbsc_session_send(c->s, payload, len);
    if (r == MBSC_ERR_PAYLOAD_TOO_LONG)
        return r; /* above the configured maximum: the session is unchanged */
    if (r != MBSC_OK) {
        srv_conn_end(srv, c, r, mbsc_strerror(r), REFUSED_OTHER);
        return r;
    }
    c->awaiting = 0;
    if (!c->in_callback) {
        /* Sent now for latency; the rest of the work waits for the next step. */
        r = mbsc_link_flush(&c->link);
        if (r != MBSC_OK) {
            srv_conn_end(srv, c, r, "socket: send failed", REFUSED_CLOSED);
            return MBSC_ERR_PEER_CLOSED;
        }
        mark_ready(srv, c);
    }
    return MBSC_OK;
}

MBSC_API int mbsc_server_skip(mbsc_server *srv, mbsc_server_conn_id id)
{
    struct srv_conn *c;
    int r;

    c = waiting_conn(srv, id, &r);
    if (c == NULL)
        return r;
    c->awaiting = 0;
    mark_ready(srv, c);
    return MBSC_OK;
}

MBSC_API int mbsc_server_close(mbsc_server *srv, mbsc_server_conn_id id, int err,
                               const char *detail)
{
    struct srv_conn *c = srv != NULL ? srv_lookup(srv, id) : NULL;

    if (srv == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (c == NULL)
        return MBSC_ERR_PEER_CLOSED;
    srv_conn_end(srv, c, err, detail, REFUSED_OTHER);
    return MBSC_OK;
}

/* ---- setup and queries ------------------------------------------------------------- */

MBSC_API void mbsc_server_set_request_fn(mbsc_server *srv, mbsc_server_request_fn fn, void *user)
{
    if (srv == NULL)
        return;
    srv->request_fn = fn;
    srv->request_user = user;
}

MBSC_API void mbsc_server_set_event_fn(mbsc_server *srv, mbsc_server_event_fn fn, void *user)
{
    if (srv == NULL)
        return;
    srv->event_fn = fn;
    srv->event_user = user;
}

MBSC_API int mbsc_server_address(const mbsc_server *srv, char *buf, size_t len)
{
    if (srv == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (buf == NULL || len == 0)
        return MBSC_ERR_INVALID_ARG;
    if (strlen(srv->addr) >= len) {
        buf[0] = '\0';
        return MBSC_ERR_INVALID_ARG;
    }
    memcpy(buf, srv->addr, strlen(srv->addr) + 1);
    return MBSC_OK;
}

MBSC_API int mbsc_server_stop_accepting(mbsc_server *srv)
{
    if (srv == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (srv->listener == NULL)
        return MBSC_OK;
    /*
     * Close rather than stop watching: the kernel would otherwise go on
     * completing handshakes into the backlog, and those masters would wait
     * for an answer that never comes.  A closed port refuses at once, and
     * the connections already queued are reset.
     */
    srv_poller_del(&srv->poller, srv->lfd);
    mbsc_listener_close(srv->listener);
    srv->listener = NULL;
    srv->lfd = -1;
    srv->accept_resume_ns = 0;
    return MBSC_OK;
}

MBSC_API int mbsc_server_fd(const mbsc_server *srv)
{
    return srv != NULL ? srv_poller_fd(&srv->poller) : -1;
}

MBSC_API void mbsc_server_get_stats(const mbsc_server *srv, struct mbsc_server_stats *st)
{
    if (st == NULL)
        return;
    memset(st, 0, sizeof *st);
    if (srv != NULL)
        *st = srv->stats;
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

/* A config that cannot make sessions fails here, not at the first client. */
static int check_config(const mbsc_config *cfg, char *why, size_t why_len)
{
    int err = MBSC_ERR_INVALID_ARG;
    mbsc_session *s = mbsc_session_new(cfg, &err);

    if (s == NULL) {
        mbsc_why(why, why_len, "mbsc_server_new: cannot make a session: %s", mbsc_strerror(err));
        return err;
    }
    mbsc_session_free(s);
    return MBSC_OK;
}

static int server_open(mbsc_server *srv, const char *hostport, char *why, size_t why_len)
{
    unsigned hs = mbsc_config_handshake_timeout(srv->cfg);
    int r;

    srv->fd_cap = srv_fd_cap();
    srv->max_connections =
        DEFAULT_MAX_CONNECTIONS < srv->fd_cap ? DEFAULT_MAX_CONNECTIONS : srv->fd_cap;
    srv->max_unconfirmed = DEFAULT_MAX_UNCONFIRMED < srv->max_connections ? DEFAULT_MAX_UNCONFIRMED
                                                                          : srv->max_connections;
    srv->max_per_address = DEFAULT_MAX_PER_ADDRESS;
    srv->max_per_key = DEFAULT_MAX_PER_KEY;
    srv->handshake_ms = hs != 0 && hs < DEFAULT_HANDSHAKE_MS ? hs : DEFAULT_HANDSHAKE_MS;
    srv->log_ms = DEFAULT_LOG_MS;
    srv->dead_peer_ms = DEFAULT_DEAD_PEER_MS;
    r = size_slots(srv, srv->max_connections);
    if (r != MBSC_OK) {
        mbsc_why(why, why_len, "out of memory");
        return r;
    }
    r = srv_poller_init(&srv->poller, why, why_len);
    if (r == MBSC_OK)
        r = wake_pipe(srv->wake, why, why_len);
    if (r == MBSC_OK)
        r = mbsc_listen(hostport, &srv->listener, why, why_len);
    if (r != MBSC_OK)
        return r;
    srv->lfd = mbsc_listener_fd(srv->listener);
    if (mbsc_listener_address(srv->listener, srv->addr, sizeof srv->addr) != MBSC_OK)
        srv->addr[0] = '\0';
    if (srv_reserve_open(srv) != MBSC_OK ||
        srv_poller_add(&srv->poller, srv->wake[0], SRV_KEY_WAKE, POLLIN) != MBSC_OK ||
        srv_poller_add(&srv->poller, srv->lfd, SRV_KEY_LISTENER, POLLIN) != MBSC_OK) {
        mbsc_why(why, why_len, "cannot set up the poller: %s", mbsc_os_error(errno));
        return MBSC_ERR_IO;
    }
    return MBSC_OK;
}

MBSC_API int mbsc_server_new(mbsc_server **out, const char *hostport, const mbsc_config *cfg,
                             char *why, size_t why_len)
{
    mbsc_server *srv;
    int r;

    mbsc_why(why, why_len, "%s", "");
    if (out == NULL || hostport == NULL || cfg == NULL ||
        mbsc_config_role(cfg) != MBSC_ROLE_SLAVE) {
        mbsc_why(why, why_len, "mbsc_server_new: needs an address and a slave's config");
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
    srv->wake[0] = srv->wake[1] = -1;
    srv->reserve_fd = -1;
    srv->lfd = -1;
    srv->poller.epfd = -1;
    srv->next_seq = 1;
    atomic_init(&srv->stop, 0);
    srv_refusals_init(&srv->refusals);
    r = server_open(srv, hostport, why, why_len);
    if (r != MBSC_OK) {
        mbsc_server_free(srv);
        return r;
    }
    *out = srv;
    return MBSC_OK;
}

MBSC_API void mbsc_server_free(mbsc_server *srv)
{
    if (srv == NULL)
        return;
    while (srv->confirmed.head != NULL)
        srv_conn_end(srv, srv->confirmed.head, MBSC_OK, "server stopped", REFUSED_OTHER);
    while (srv->unconfirmed.head != NULL)
        srv_conn_end(srv, srv->unconfirmed.head, MBSC_OK, "server stopped", REFUSED_OTHER);
    bury(srv);
    srv_refusals_flush(srv, mbsc_monotonic_ns(), 1);
    mbsc_listener_close(srv->listener);
    srv_poller_close(&srv->poller);
    mbsc_sock_close(srv->wake[0]);
    mbsc_sock_close(srv->wake[1]);
    mbsc_sock_close(srv->reserve_fd);
    free(srv->slots);
    free(srv->free_slots);
    mbsc_wipe(srv, sizeof *srv);
    free(srv);
}

/* Every session, whatever its state, checks message 1 against al from now on. */
static void use_allowlist(struct srv_list *l, const mbsc_allowlist *al)
{
    struct srv_conn *c;

    for (c = l->head; c != NULL; c = c->next)
        mbsc_session_use_allowlist(c->s, al);
}

MBSC_API int mbsc_server_set_config(mbsc_server *srv, const mbsc_config *cfg, char *why,
                                    size_t why_len)
{
    int r;

    mbsc_why(why, why_len, "%s", "");
    if (srv == NULL || cfg == NULL || mbsc_config_role(cfg) != MBSC_ROLE_SLAVE) {
        mbsc_why(why, why_len, "mbsc_server_set_config: needs a server and a slave's config");
        return MBSC_ERR_INVALID_ARG;
    }
    r = check_config(cfg, why, why_len);
    if (r != MBSC_OK)
        return r;
    srv->cfg = cfg;
    /*
     * Connections waiting for message 1 judge it by the new list, and those
     * past it are judged again at confirmation (peer.c): nothing reads the
     * old config or its allow-list any more.
     */
    use_allowlist(&srv->unconfirmed, cfg->allowlist);
    use_allowlist(&srv->confirmed, cfg->allowlist);
    return MBSC_OK;
}

MBSC_API int mbsc_server_conn_public_key(const mbsc_server *srv, mbsc_server_conn_id conn,
                                         uint8_t public_key[MBSC_KEY_BYTES])
{
    const struct srv_conn *c;

    if (srv == NULL || public_key == NULL)
        return MBSC_ERR_INVALID_ARG;
    c = srv_lookup(srv, conn);
    if (c == NULL)
        return MBSC_ERR_PEER_CLOSED;
    if (!c->confirmed)
        return MBSC_ERR_STATE;
    memcpy(public_key, c->key, MBSC_KEY_BYTES);
    return MBSC_OK;
}

MBSC_API int mbsc_server_apply_allowlist(mbsc_server *srv, const mbsc_allowlist *al)
{
    struct srv_conn *c, *next;
    int closed = 0;

    if (srv == NULL || al == NULL)
        return MBSC_ERR_INVALID_ARG;
    for (c = srv->confirmed.head; c != NULL; c = next) {
        const char *name = NULL, *role = NULL;

        next = c->next; /* closing c takes it off the list */
        if (c->fd < 0)
            continue;
        if (mbsc_allowlist_find(al, c->key, &name, &role) < 0) {
            srv_conn_end(srv, c, MBSC_ERR_UNKNOWN_PEER, "removed from the allow-list",
                         REFUSED_OTHER);
            closed++;
            continue;
        }
        snprintf(c->name, sizeof c->name, "%s", name);
        snprintf(c->role, sizeof c->role, "%s", role != NULL ? role : "");
        c->info.peer_name = c->name;
        c->info.peer_role = role != NULL ? c->role : NULL;
    }
    /*
     * Handshakes past message 1 of masters no longer listed end too: they
     * would be refused at confirmation, but need not hold a slot till then.
     */
    for (c = srv->unconfirmed.head; c != NULL; c = next) {
        uint8_t key[MBSC_KEY_BYTES];

        next = c->next;
        if (c->fd < 0 || mbsc_session_claimed_key(c->s, key) != MBSC_OK ||
            mbsc_allowlist_find(al, key, NULL, NULL) >= 0)
            continue;
        srv_conn_end(srv, c, MBSC_ERR_UNKNOWN_PEER, "removed from the allow-list",
                     REFUSED_UNKNOWN_KEY);
        closed++;
    }
    return closed;
}
