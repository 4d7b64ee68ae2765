/* SPDX-License-Identifier: ISC */
/*
 * server_mode.c - mbsc masters in, plain Modbus/TCP to the PLCs out.
 *
 * The masters' sessions are an mbsc_server's (mbsc/server.h); those of
 * Modbus/TCP Security masters, beside them or alone (--listen-tls), are
 * tls_masters.c's.  This file decides what happens to each request of
 * either, in the order docs/policy.md gives
 * ("The order of checks"): the payload must be one Modbus/TCP ADU (else
 * the session ends); its shape (exception 03 or 02); the policy for the
 * master's role (exception 01, logged with the master's name, the function
 * code and the address; the PLC never sees it); then the route of its unit
 * id (exception 0A when there is none) and that route's multiplexer.  The
 * role is the one the allow-list gave when the master confirmed, or at the
 * last reload (mbsc_server_apply_allowlist); a TLS master's is its
 * certificate's (tls_role.h).  Each master has an origin of the gateway's
 * own for the routes (mux.h): a TLS master's has GW_TLS_ORIGIN_BIT.
 *
 * An answer can end a session: mbsc_server_reply() to a master whose
 * socket has closed reports CLOSED at once, and on_event() then forgets
 * the master in the routes and in the masters array (whose last entry
 * takes its place).  That is safe because the multiplexer delivers answers
 * only when it walks nothing of its own (mux.c), the library frees a
 * closed connection only at the end of its step, and no code here keeps a
 * pointer into the masters array across a reply, a close or a call into
 * the routes.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "adu_check.h"
#include "clock.h"
#include "control.h"
#include "log.h"
#include "loop.h"
#include "modes.h"
#include "routing.h"
#include "secrets.h"
#include "signals.h"
#include "tls_masters.h"

struct master {
    mbsc_server_conn_id id;
    uint64_t origin; /* for the routes: the gateway's own number, never GW_TLS_ORIGIN_BIT */
    uint64_t group;  /* the multiplexer's share: one per master key (group_of) */
    char name[MBSC_ALLOWLIST_NAME_MAX + 1];
    char role[MBSC_ALLOWLIST_NAME_MAX + 1]; /* "" for none */
    char address[MBSC_ADDRSTRLEN];
    const char *cipher;
    time_t since;
    uint64_t requests, refusals;
};

struct gw_server {
    struct gw_options *o; /* in force; a reload replaces its contents */
    int argc;
    char **argv;
    struct gw_loop *loop;
    struct gw_secrets cur;
    mbsc_server *srv;           /* NULL without --listen */
    struct gw_tls_masters *tls; /* NULL without --listen-tls */
    struct gw_watch *srv_watch;
    struct gw_timer *srv_timer; /* the server's next deadline */
    struct gw_watch *sig_watch;
    struct gw_routing *routing;
    struct master *masters;
    size_t n_masters, cap_masters;
    uint64_t next_origin;
    int draining;
    struct gw_timer *drain_timer;
    struct gw_control *control; /* --control, or NULL */
    char addr[MBSC_ADDRSTRLEN]; /* the mbsc listener's, "" without one */
    uint8_t group_key[crypto_shorthash_KEYBYTES];
};

static struct master *find_master(struct gw_server *g, mbsc_server_conn_id id)
{
    size_t i;

    for (i = 0; i < g->n_masters; i++)
        if (g->masters[i].id == id)
            return &g->masters[i];
    return NULL;
}

static struct master *find_origin(struct gw_server *g, uint64_t origin)
{
    size_t i;

    for (i = 0; i < g->n_masters; i++)
        if (g->masters[i].origin == origin)
            return &g->masters[i];
    return NULL;
}

/* An answer for origin: an mbsc master's goes through the server, a TLS master's through TLS. */
static void reply(void *user, uint64_t origin, const uint8_t *adu, size_t len)
{
    struct gw_server *g = user;
    struct master *m;

    if (origin & GW_TLS_ORIGIN_BIT) {
        gw_tls_masters_reply(g->tls, origin, adu, len);
        return;
    }
    m = find_origin(g, origin);
    if (m == NULL || mbsc_server_reply(g->srv, m->id, adu, len) != MBSC_OK) {
        /* The master left meanwhile: nobody to answer. */
    }
}

static void answer_exception(struct gw_server *g, uint64_t origin, const uint8_t *req, uint8_t code)
{
    uint8_t ex[MBSC_EXCEPTION_ADU_BYTES];

    reply(g, origin, ex, mbsc_adu_exception(req, code, ex));
}

/*
 * One request (one ADU whose MBAP header is good) of a master, mbsc or
 * TLS, named who in the log: its shape, the policy for role, the route
 * (docs/policy.md, "The order of checks").  A TLS master's role comes
 * from its certificate, not the allow-list: tls says so, for the fix a
 * refusal names.  Returns 1 if the policy refused it.
 */
static int serve(struct gw_server *g, uint64_t origin, uint64_t group, const char *who,
                 const char *role, int tls, const uint8_t *p, size_t len)
{
    char why[512];
    uint8_t code = gw_check_request(p, len);

    if (code != 0) {
        answer_exception(g, origin, p, code);
        return 0;
    }
    if (g->cur.policy != NULL &&
        mbsc_policy_check(g->cur.policy, role, p + MBSC_MBAP_BYTES, len - MBSC_MBAP_BYTES, why,
                          sizeof why) != MBSC_OK) {
        if (tls && role == NULL)
            snprintf(why, sizeof why,
                     "its certificate has no role (extension 1.3.6.1.4.1.50316.802.1), and a "
                     "policy is in force; issue it a certificate with one (docs/tls.md)");
        gw_log(GW_WARN, "refused %s: function 0x%02x address %u: %s", who, p[MBSC_MBAP_BYTES],
               gw_first_address(p, len), why);
        answer_exception(g, origin, p, (uint8_t)MBSC_POLICY_REFUSAL_EXCEPTION);
        return 1;
    }
    if (g->draining) {
        answer_exception(g, origin, p, MBSC_EXC_GATEWAY_PATH_UNAVAILABLE);
        return 0;
    }
    gw_log(GW_DEBUG, "%s: function 0x%02x address %u unit %u", who, p[MBSC_MBAP_BYTES],
           gw_first_address(p, len), p[6]);
    if (gw_routing_submit(g->routing, origin, group, p, len) != MBSC_OK)
        answer_exception(g, origin, p, MBSC_EXC_SERVER_DEVICE_BUSY);
    return 0;
}

static void on_request(void *user, mbsc_server *srv, const struct mbsc_server_conn_info *ci,
                       const uint8_t *p, size_t len)
{
    struct gw_server *g = user;
    struct master *m = find_master(g, ci->id);
    char who[MBSC_ALLOWLIST_NAME_MAX + 16];

    if (len < MBSC_ADU_MIN || len > MBSC_ADU_MAX || mbsc_adu_length(p) != len) {
        /* docs/protocol.md: an authenticated payload that is not an ADU ends the session. */
        (void)mbsc_server_close(srv, ci->id, MBSC_ERR_BAD_ADU,
                                "the master sent a payload that is not a Modbus/TCP ADU");
        return;
    }
    if (m == NULL) {
        (void)mbsc_server_close(srv, ci->id, MBSC_ERR_STATE, "unknown connection");
        return;
    }
    m->requests++;
    snprintf(who, sizeof who, "master %s", m->name);
    /* m may move in the array (a reply that finds a master gone): nothing of it after this. */
    if (serve(g, m->origin, m->group, who, ci->peer_role, 0, p, len)) {
        m = find_master(g, ci->id);
        if (m != NULL)
            m->refusals++;
    }
}

/* A Modbus/TCP Security master's request (tls_masters.h). */
static int on_tls_request(void *user, const struct gw_tls_master_info *mi, const uint8_t *adu,
                          size_t len)
{
    char who[300];

    snprintf(who, sizeof who, "TLS master \"%s\" (role %s)", mi->subject,
             mi->role != NULL ? mi->role : "none");
    return serve(user, mi->origin, mi->group, who, mi->role, 1, adu, len);
}

static void on_tls_closed(void *user, uint64_t origin)
{
    struct gw_server *g = user;

    gw_routing_forget(g->routing, origin);
}

/*
 * The multiplexer shares a PLC among master keys, not connections: every
 * session of one key is in one group.  A keyed hash (a key of this process
 * only) reduces the key to 64 bits, so that no master can choose a key
 * whose group is another master's.
 */
static uint64_t group_of(const struct gw_server *g, mbsc_server_conn_id id)
{
    uint8_t key[MBSC_KEY_BYTES], h[crypto_shorthash_BYTES];
    uint64_t group = 0;
    size_t i;

    if (mbsc_server_conn_public_key(g->srv, id, key) != MBSC_OK)
        return id; /* cannot happen for a confirmed session: then a group of its own */
    crypto_shorthash(h, key, sizeof key, g->group_key);
    for (i = 0; i < sizeof h; i++)
        group = group << 8 | h[i];
    return group;
}

static void add_master(struct gw_server *g, const struct mbsc_server_conn_info *ci)
{
    struct master *m;

    if (g->n_masters == g->cap_masters) {
        size_t cap = g->cap_masters ? 2 * g->cap_masters : 16;
        struct master *n = realloc(g->masters, cap * sizeof *n);

        if (n == NULL) {
            (void)mbsc_server_close(g->srv, ci->id, MBSC_ERR_NOMEM, "out of memory");
            return;
        }
        g->masters = n;
        g->cap_masters = cap;
    }
    m = &g->masters[g->n_masters++];
    memset(m, 0, sizeof *m);
    m->id = ci->id;
    m->origin = ++g->next_origin;
    m->group = group_of(g, ci->id);
    snprintf(m->name, sizeof m->name, "%s", ci->peer_name != NULL ? ci->peer_name : "?");
    snprintf(m->role, sizeof m->role, "%s", ci->peer_role != NULL ? ci->peer_role : "");
    snprintf(m->address, sizeof m->address, "%s", ci->peer_address);
    m->cipher = ci->cipher != NULL ? mbsc_cipher_name(ci->cipher) : "?";
    m->since = time(NULL);
}

static void on_event(void *user, const struct mbsc_server_event *ev)
{
    struct gw_server *g = user;
    struct master *m;

    switch (ev->type) {
    case MBSC_SERVER_EVENT_CONNECTED:
        add_master(g, ev->conn);
        gw_log(GW_INFO, "master %s (role %s) connected from %s with %s", ev->conn->peer_name,
               ev->conn->peer_role != NULL ? ev->conn->peer_role : "none", ev->conn->peer_address,
               ev->conn->cipher != NULL ? mbsc_cipher_name(ev->conn->cipher) : "?");
        break;
    case MBSC_SERVER_EVENT_CLOSED:
        m = find_master(g, ev->conn->id);
        if (m != NULL)
            gw_routing_forget(g->routing, m->origin);
        if (ev->error == MBSC_OK)
            gw_log(GW_INFO, "master %s from %s disconnected: %s",
                   m != NULL ? m->name : ev->conn->peer_name, ev->conn->peer_address,
                   ev->detail != NULL ? ev->detail : "closed");
        else
            gw_log(GW_INFO, "master %s from %s disconnected: %s%s%s",
                   m != NULL ? m->name : ev->conn->peer_name, ev->conn->peer_address,
                   mbsc_strerror(ev->error), ev->detail != NULL ? ": " : "",
                   ev->detail != NULL ? ev->detail : "");
        if (m != NULL)
            *m = g->masters[--g->n_masters];
        break;
    case MBSC_SERVER_EVENT_LOG: gw_log(GW_INFO, "%s", ev->detail); break;
    }
}

/* ---- reload (SIGHUP) ---- */

/* Say which masters' roles change with the allow-list al (before it applies). */
static void note_role_changes(struct gw_server *g, const mbsc_allowlist *al)
{
    size_t i;

    for (i = 0; i < g->n_masters; i++) {
        struct master *m = &g->masters[i];
        uint8_t key[MBSC_KEY_BYTES];
        const char *name = NULL, *role = NULL;

        if (mbsc_server_conn_public_key(g->srv, m->id, key) != MBSC_OK ||
            mbsc_allowlist_find(al, key, &name, &role) < 0)
            continue; /* closed by mbsc_server_apply_allowlist */
        if (strcmp(m->role, role != NULL ? role : "") != 0)
            gw_log(GW_INFO, "master %s: role %s -> %s from its next request", m->name,
                   m->role[0] != '\0' ? m->role : "none", role != NULL ? role : "none");
        snprintf(m->name, sizeof m->name, "%s", name);
        snprintf(m->role, sizeof m->role, "%s", role != NULL ? role : "");
    }
}

static int same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/*
 * Re-read everything: the configuration file (with the command line over
 * it, as at start), the key, PSK, allow-list and policy, the TLS
 * certificates, keys and CAs, and the routes.  All of it applies, or
 * none: the old configuration stays whole when anything is wrong.
 * Settings a running gateway cannot change (where it listens, its limits)
 * are reported and wait for a restart.
 */
static void reload(struct gw_server *g)
{
    struct gw_options no;
    struct gw_secrets ns;
    char why[GW_WHY_SIZE], what[GW_WHY_SIZE];
    int closed = 0;

    gw_notify("RELOADING=1");
    gw_options_init(&no);
    if (gw_options_parse(&no, g->argc, g->argv) >= 0 || no.mode != GW_MODE_SERVER) {
        gw_log(GW_ERR, "reload failed, the old configuration stays in force: %s",
               no.mode != GW_MODE_SERVER && no.mode != GW_MODE_NONE
                   ? "the configuration now says client mode; restart to change the mode"
                   : "see the error above");
        goto fail_options;
    }
    /* The listeners stay until a restart: the new files must still serve them. */
    if ((g->srv != NULL && no.listen == NULL) || (g->tls != NULL && no.listen_tls == NULL)) {
        gw_log(GW_ERR,
               "reload failed, the old configuration stays in force: %s was removed; "
               "restart to stop listening there",
               g->srv != NULL && no.listen == NULL ? "listen" : "listen-tls");
        goto fail_options;
    }
    if (gw_secrets_load(&ns, &no, why, sizeof why) != 0) {
        gw_log(GW_ERR, "reload failed, the old configuration stays in force: %s", why);
        goto fail_options;
    }
    if (g->srv != NULL && mbsc_server_set_config(g->srv, ns.cfg, why, sizeof why) != MBSC_OK) {
        gw_log(GW_ERR, "reload failed, the old configuration stays in force: %s", why);
        goto fail_secrets;
    }
    gw_routing_set_tls(g->routing, ns.tls);
    if (gw_routing_reload(g->routing, &no.routes, why, sizeof why) != 0) {
        /* The config in force a moment ago was accepted then: it is again. */
        gw_routing_set_tls(g->routing, g->cur.tls);
        if (g->srv != NULL &&
            mbsc_server_set_config(g->srv, g->cur.cfg, what, sizeof what) != MBSC_OK)
            gw_log(GW_ERR, "reload: the old configuration could not be put back: %s", what);
        gw_log(GW_ERR, "reload failed, the old configuration stays in force: routes: %s", why);
        goto fail_secrets;
    }
    /* TLS masters connected meanwhile are held against the new CA. */
    if (g->tls != NULL)
        closed += gw_tls_masters_set_tls(g->tls, ns.tls);
    /* Nothing reads the old config once the server has the new one (mbsc/server.h). */
    gw_secrets_free(&g->cur);
    g->cur = ns;
    if (g->srv != NULL) {
        note_role_changes(g, g->cur.allow);
        int n = mbsc_server_apply_allowlist(g->srv, g->cur.allow);

        closed += n > 0 ? n : 0;
    }
    if (!same(no.listen, g->o->listen) || !same(no.listen_tls, g->o->listen_tls))
        gw_log(GW_WARN, "listen or listen-tls changed: it takes effect at the next start");
    gw_options_free(g->o);
    *g->o = no;
    if (g->srv != NULL)
        snprintf(what, sizeof what, "%zu masters in %s", mbsc_allowlist_count(g->cur.allow),
                 g->o->authorized);
    else
        snprintf(what, sizeof what, "TLS files");
    gw_log(GW_INFO, "reloaded: %s%s%s%s, %zu route%s, %d disconnected", what,
           g->srv != NULL && g->tls != NULL ? " and TLS files" : "",
           g->cur.policy ? ", policy " : "", g->cur.policy ? g->o->policy : "", g->o->routes.n,
           g->o->routes.n == 1 ? "" : "s", closed);
    gw_notify("READY=1");
    return;
fail_secrets:
    gw_secrets_free(&ns);
fail_options:
    gw_options_free(&no);
    gw_notify("READY=1");
}

/* ---- status (SIGUSR1, --control) ---- */

static void status_write(void *user, FILE *out)
{
    struct gw_server *g = user;
    /* mbsc and TLS masters alike; each kind has its lines below. */
    size_t i, n = g->n_masters + (g->tls != NULL ? gw_tls_masters_count(g->tls) : 0);

    fprintf(out, "server mode on %s, %zu master%s, %u request%s queued or in flight\n",
            g->srv != NULL ? g->addr : gw_tls_masters_address(g->tls), n, n == 1 ? "" : "s",
            gw_routing_total(g->routing), gw_routing_total(g->routing) == 1 ? "" : "s");
    gw_routing_status(g->routing, out);
    if (g->tls != NULL)
        gw_tls_masters_status(g->tls, out);
    for (i = 0; i < g->n_masters; i++) {
        const struct master *m = &g->masters[i];
        char since[32];
        struct tm tm;

        gmtime_r(&m->since, &tm);
        strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(out,
                "master %s role %s cipher %s from %s connected-since %s requests %llu "
                "refusals %llu\n",
                m->name, m->role[0] != '\0' ? m->role : "none", m->cipher, m->address, since,
                (unsigned long long)m->requests, (unsigned long long)m->refusals);
    }
}

/* ---- the loop's callbacks ---- */

static void step_server(struct gw_server *g)
{
    if (g->srv != NULL && mbsc_server_step(g->srv, 0) != MBSC_OK) {
        gw_log(GW_ERR, "the listener failed: stopping");
        gw_loop_stop(g->loop, GW_EX_FAILURE);
    }
}

static void on_server_io(void *data, unsigned happened)
{
    (void)happened;
    step_server(data);
}

static void on_server_timer(void *data)
{
    step_server(data);
}

/* Before each wait: the server's next deadline, and the end of a drain. */
static void before_wait(void *data)
{
    struct gw_server *g = data;
    int t = g->srv != NULL ? mbsc_server_next_timeout(g->srv) : -1;

    if (g->srv != NULL && g->srv_watch == NULL)
        t = gw_min_timeout(t, 10); /* no epoll descriptor: step often */
    gw_timer_in(g->srv_timer, t);
    if (g->draining && gw_routing_total(g->routing) == 0) {
        step_server(g); /* the last answers go out */
        gw_log(GW_INFO, "stopped");
        gw_loop_stop(g->loop, GW_EX_OK);
    }
}

static void on_drain_timeout(void *data)
{
    struct gw_server *g = data;

    step_server(g);
    gw_log(GW_INFO, "stopped after %lu ms with %u requests unanswered", g->o->drain_ms,
           gw_routing_total(g->routing));
    gw_loop_stop(g->loop, GW_EX_OK);
}

static void on_signal(void *data, unsigned happened)
{
    struct gw_server *g = data;
    unsigned sig = gw_signals_take();

    (void)happened;
    if (sig & GW_SIG_RELOAD)
        reload(g);
    if (sig & GW_SIG_STATUS)
        gw_status_log(status_write, g);
    if ((sig & GW_SIG_STOP) && !g->draining) {
        g->draining = 1;
        gw_notify("STOPPING=1");
        if (g->srv != NULL)
            (void)mbsc_server_stop_accepting(g->srv); /* new masters are refused */
        if (g->tls != NULL)
            gw_tls_masters_stop_accepting(g->tls);
        gw_log(GW_INFO, "stopping: %u requests to finish", gw_routing_total(g->routing));
        gw_timer_in(g->drain_timer, (int)g->o->drain_ms);
    }
}

/* ---- start ---- */

/* The listener of Modbus/TCP Security masters (--listen-tls). */
static int start_tls(struct gw_server *g)
{
    const struct gw_options *o = g->o;
    struct gw_tls_master_limits lim;
    struct gw_tls_master_hooks hooks;
    char why[GW_WHY_SIZE];

    memset(&lim, 0, sizeof lim);
    lim.max_connections = (unsigned)o->max_connections;
    lim.handshake_ms = (unsigned)o->handshake_timeout_ms;
    lim.idle_ms = (unsigned)o->idle_timeout_ms;
    lim.max_queue = (unsigned)o->max_queue;
    lim.max_per_cert = (unsigned)o->max_sessions_per_master;
    hooks.user = g;
    hooks.request = on_tls_request;
    hooks.closed = on_tls_closed;
    g->tls = gw_tls_masters_new(g->loop, o->listen_tls, g->cur.tls, &lim, &hooks, why, sizeof why);
    if (g->tls == NULL) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    return 0;
}

/* The mbsc_server of mbsc masters (--listen). */
static int start_mbsc(struct gw_server *g)
{
    const struct gw_options *o = g->o;
    char why[GW_WHY_SIZE];
    int fd;

    if (mbsc_server_new(&g->srv, o->listen, g->cur.cfg, why, sizeof why) != MBSC_OK) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    mbsc_server_set_request_fn(g->srv, on_request, g);
    mbsc_server_set_event_fn(g->srv, on_event, g);
    if (o->max_connections != 0)
        (void)mbsc_server_set_limit(g->srv, MBSC_SERVER_MAX_CONNECTIONS,
                                    (unsigned)o->max_connections);
    if (o->handshake_timeout_ms != 0)
        (void)mbsc_server_set_limit(g->srv, MBSC_SERVER_HANDSHAKE_TIMEOUT_MS,
                                    (unsigned)o->handshake_timeout_ms);
    if (o->max_sessions_per_master != 0)
        (void)mbsc_server_set_limit(g->srv, MBSC_SERVER_MAX_SESSIONS_PER_KEY,
                                    (unsigned)o->max_sessions_per_master);
    (void)mbsc_server_set_limit(g->srv, MBSC_SERVER_IDLE_TIMEOUT_MS, (unsigned)o->idle_timeout_ms);
    if (mbsc_server_address(g->srv, g->addr, sizeof g->addr) != MBSC_OK)
        return -1;
    fd = mbsc_server_fd(g->srv);
    if (fd >= 0 && (g->srv_watch = gw_watch_add(g->loop, fd, GW_IO_IN, on_server_io, g)) == NULL) {
        gw_log(GW_ERR, "out of memory");
        return -1;
    }
    return 0;
}

static int start(struct gw_server *g)
{
    struct gw_path_settings ps;
    char why[GW_WHY_SIZE];
    const struct gw_options *o = g->o;

    g->loop = gw_loop_new(why, sizeof why);
    if (g->loop == NULL) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    ps.max_in_flight = (unsigned)o->max_in_flight;
    ps.max_queue = (unsigned)o->max_queue;
    ps.request_timeout_ms = (unsigned)o->request_timeout_ms;
    ps.unreachable_code = MBSC_EXC_GATEWAY_PATH_UNAVAILABLE;
    ps.up.connect_timeout_ms = (unsigned)o->connect_timeout_ms;
    ps.up.backoff_max_ms = (unsigned)o->reconnect_max_ms;
    ps.up.tls = g->cur.tls;
    g->routing = gw_routing_new(g->loop, &o->routes, NULL, &ps, reply, g, why, sizeof why);
    if (g->routing == NULL) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    g->srv_timer = gw_timer_new(g->loop, on_server_timer, g);
    g->drain_timer = gw_timer_new(g->loop, on_drain_timeout, g);
    g->sig_watch = gw_watch_add(g->loop, gw_signals_fd(), GW_IO_IN, on_signal, g);
    if (g->srv_timer == NULL || g->drain_timer == NULL || g->sig_watch == NULL ||
        gw_loop_before_wait(g->loop, before_wait, g) != 0) {
        gw_log(GW_ERR, "out of memory");
        return -1;
    }
    if (o->listen_tls != NULL && start_tls(g) != 0)
        return -1;
    if (o->listen != NULL && start_mbsc(g) != 0)
        return -1;
    if (o->control != NULL && (g->control = gw_control_open(g->loop, o->control, status_write, g,
                                                            why, sizeof why)) == NULL) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    return 0;
}

int gw_server_mode(struct gw_options *o, int argc, char **argv)
{
    struct gw_server g;
    char why[GW_WHY_SIZE];
    int rc = GW_EX_FAILURE;

    memset(&g, 0, sizeof g);
    g.o = o;
    g.argc = argc;
    g.argv = argv;
    crypto_shorthash_keygen(g.group_key);
    if (gw_secrets_load(&g.cur, o, why, sizeof why) != 0) {
        gw_log(GW_ERR, "%s", why);
        return GW_EX_FAILURE;
    }
    if (start(&g) == 0) {
        /*
         * Scripts wait for these lines instead of sleeping: flush them at
         * once.  The mbsc listener's comes first, then the TLS listener's.
         */
        if ((g.srv != NULL && printf("listening on %s\n", g.addr) < 0) ||
            (g.tls != NULL && printf("listening tls on %s\n", gw_tls_masters_address(g.tls)) < 0) ||
            fflush(stdout) == EOF) {
            gw_log(GW_ERR, "cannot write to stdout");
        } else {
            if (g.srv != NULL)
                gw_log(GW_INFO, "server mode on %s, %zu route%s%s%s, %zu masters allowed%s%s",
                       g.addr, o->routes.n, o->routes.n == 1 ? "" : "s",
                       o->upstream != NULL ? ", default " : "",
                       o->upstream != NULL ? o->upstream : "", mbsc_allowlist_count(g.cur.allow),
                       g.cur.policy ? ", policy " : ", no policy", g.cur.policy ? o->policy : "");
            if (g.tls != NULL)
                gw_log(GW_INFO,
                       "Modbus/TCP Security masters on %s (TLS 1.2 and 1.3, client certificates "
                       "of %s), %zu route%s%s%s%s%s",
                       gw_tls_masters_address(g.tls), o->tls_ca, o->routes.n,
                       o->routes.n == 1 ? "" : "s", o->upstream != NULL ? ", default " : "",
                       o->upstream != NULL ? o->upstream : "",
                       g.cur.policy ? ", policy " : ", no policy", g.cur.policy ? o->policy : "");
            gw_notify("READY=1");
            rc = gw_loop_run(g.loop);
            if (rc < 0) {
                gw_log(GW_ERR, "%s: stopping", gw_loop_error(g.loop));
                rc = GW_EX_FAILURE;
            }
        }
    }
    gw_control_close(g.control);
    gw_tls_masters_free(g.tls); /* before the TLS files it borrows */
    mbsc_server_free(g.srv);    /* before the configs it borrows; its CLOSED events forget */
    gw_routing_free(g.routing);
    gw_watch_remove(g.srv_watch);
    gw_watch_remove(g.sig_watch);
    gw_timer_free(g.srv_timer);
    gw_timer_free(g.drain_timer);
    gw_loop_free(g.loop);
    free(g.masters);
    gw_secrets_free(&g.cur);
    sodium_memzero(g.group_key, sizeof g.group_key);
    return rc;
}
