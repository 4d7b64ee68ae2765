/* SPDX-License-Identifier: ISC */
/*
 * server_mode.c - mbsc masters in, plain Modbus/TCP to the PLC out.
 *
 * The masters' sessions are an mbsc_server's (mbsc/server.h); this file
 * decides what happens to each request: MBAP and PDU checks, then the
 * policy for the master's role (exception 01 for a refusal, logged with
 * the master's name, the function code and the address; the PLC never
 * sees it), then the multiplexer (mux.c) to the PLC.  The role is the one
 * the allow-list gave at the last (re)load (mbsc_server_apply_allowlist),
 * so a changed role applies to the master's next request.
 *
 * An answer can end a session: mbsc_server_reply() to a master whose
 * socket has closed reports CLOSED at once, and on_event() then forgets
 * the master in the multiplexer and in the masters array (whose last
 * entry takes its place).  That is safe because the multiplexer delivers
 * answers only when it walks nothing of its own (mux.c), the library
 * frees a closed connection only at the end of its step, and no code here
 * keeps a pointer into the masters array across a reply, a close or a
 * call into the multiplexer.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "gw.h"

struct master {
    mbsc_server_conn_id id;
    uint64_t group; /* the multiplexer's share: one per master key (group_of) */
    char name[MBSC_ALLOWLIST_NAME_MAX + 1];
    char role[MBSC_ALLOWLIST_NAME_MAX + 1]; /* "" for none */
    char address[MBSC_ADDRSTRLEN];
    const char *cipher;
    time_t since;
    uint64_t requests, refusals;
};

struct gw_server {
    const struct gw_options *o;
    struct gw_secrets cur;
    struct gw_secrets *retired; /* configs that handshakes may still read */
    size_t n_retired;
    mbsc_server *srv;
    struct gw_upstream *up;
    struct gw_mux *mux;
    struct master *masters;
    size_t n_masters, cap_masters;
    int draining;
    struct gw_control *control; /* --control, or NULL */
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

static void reply(void *user, uint64_t origin, const uint8_t *adu, size_t len)
{
    struct gw_server *g = user;

    if (mbsc_server_reply(g->srv, origin, adu, len) != MBSC_OK) {
        /* The master left meanwhile: nobody to answer. */
    }
}

static void answer_exception(struct gw_server *g, mbsc_server_conn_id id, const uint8_t *req,
                             uint8_t code)
{
    uint8_t ex[9];

    reply(g, id, ex, gw_exception(req, code, ex));
}

static void on_request(void *user, mbsc_server *srv, const struct mbsc_server_conn_info *ci,
                       const uint8_t *p, size_t len)
{
    struct gw_server *g = user;
    struct master *m = find_master(g, ci->id);
    char why[512];
    uint8_t code;

    if (len < GW_MBAP + 1 || len > GW_MAX_ADU || gw_adu_length(p) != len) {
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
    code = gw_check_request(p, len);
    if (code != 0) {
        answer_exception(g, ci->id, p, code);
        return;
    }
    if (g->cur.policy != NULL && mbsc_policy_check(g->cur.policy, ci->peer_role, p + GW_MBAP,
                                                   len - GW_MBAP, why, sizeof why) != MBSC_OK) {
        m->refusals++;
        gw_log(GW_WARN, "refused master %s: function 0x%02x address %u: %s", m->name, p[GW_MBAP],
               gw_first_address(p, len), why);
        answer_exception(g, ci->id, p, (uint8_t)MBSC_POLICY_REFUSAL_EXCEPTION);
        return;
    }
    if (g->draining) {
        answer_exception(g, ci->id, p, GW_EXC_PATH_UNAVAILABLE);
        return;
    }
    gw_log(GW_DEBUG, "master %s: function 0x%02x address %u unit %u", m->name, p[GW_MBAP],
           gw_first_address(p, len), p[6]);
    if (gw_mux_submit(g->mux, ci->id, m->group, p, len, gw_now_ns()) != MBSC_OK)
        answer_exception(g, ci->id, p, GW_EXC_BUSY);
}

/*
 * The multiplexer shares the PLC among master keys, not connections: every
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
        gw_mux_forget(g->mux, ev->conn->id);
        m = find_master(g, ev->conn->id);
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

static void retire(struct gw_server *g, struct gw_secrets *old)
{
    struct gw_secrets *n = realloc(g->retired, (g->n_retired + 1) * sizeof *n);

    mbsc_policy_free(old->policy); /* only ever used inside a request callback */
    old->policy = NULL;
    if (n == NULL) {
        /* Keep it alive for good rather than free what a handshake may read. */
        memset(old, 0, sizeof *old);
        return;
    }
    g->retired = n;
    g->retired[g->n_retired++] = *old;
    memset(old, 0, sizeof *old);
}

static void free_retired(struct gw_server *g, int force)
{
    struct mbsc_server_stats st;
    size_t i;

    if (g->n_retired == 0)
        return;
    mbsc_server_get_stats(g->srv, &st);
    if (!force && st.unconfirmed != 0)
        return;
    for (i = 0; i < g->n_retired; i++)
        gw_secrets_free(&g->retired[i]);
    free(g->retired);
    g->retired = NULL;
    g->n_retired = 0;
}

static void reload(struct gw_server *g)
{
    struct gw_secrets ns;
    char why[GW_WHY_SIZE];
    size_t i;
    int closed;

    gw_notify("RELOADING=1");
    if (gw_secrets_load(&ns, g->o, why, sizeof why) != 0) {
        gw_log(GW_ERR, "reload failed, the old configuration stays in force: %s", why);
        gw_notify("READY=1");
        return;
    }
    if (mbsc_server_set_config(g->srv, ns.cfg, why, sizeof why) != MBSC_OK) {
        gw_log(GW_ERR, "reload failed, the old configuration stays in force: %s", why);
        gw_secrets_free(&ns);
        gw_notify("READY=1");
        return;
    }
    retire(g, &g->cur);
    g->cur = ns;
    /* Say which roles change, then let the server apply the new list. */
    for (i = 0; i < g->n_masters; i++) {
        struct master *m = &g->masters[i];
        uint8_t key[MBSC_KEY_BYTES];
        const char *name = NULL, *role = NULL;

        if (mbsc_server_conn_public_key(g->srv, m->id, key) != MBSC_OK ||
            mbsc_allowlist_find(g->cur.allow, key, &name, &role) < 0)
            continue; /* closed below */
        if (strcmp(m->role, role != NULL ? role : "") != 0)
            gw_log(GW_INFO, "master %s: role %s -> %s from its next request", m->name,
                   m->role[0] != '\0' ? m->role : "none", role != NULL ? role : "none");
        snprintf(m->name, sizeof m->name, "%s", name);
        snprintf(m->role, sizeof m->role, "%s", role != NULL ? role : "");
    }
    closed = mbsc_server_apply_allowlist(g->srv, g->cur.allow);
    gw_log(GW_INFO, "reloaded: %zu masters in %s%s%s, %d disconnected",
           mbsc_allowlist_count(g->cur.allow), g->o->authorized, g->cur.policy ? ", policy " : "",
           g->cur.policy ? g->o->policy : "", closed > 0 ? closed : 0);
    gw_notify("READY=1");
}

/* ---- status (SIGUSR1) ---- */

static const char *up_state_name(enum gw_up_state s)
{
    switch (s) {
    case GW_UP_READY: return "connected";
    case GW_UP_CONNECTING: return "connecting";
    case GW_UP_BACKOFF: return "unreachable";
    default: return "idle";
    }
}

/* The status lines (control.c prints them, or logs them on SIGUSR1). */
static void status_write(void *user, FILE *out)
{
    struct gw_server *g = user;
    struct gw_mux_stats ms;
    size_t i;

    gw_mux_get_stats(g->mux, &ms);
    fprintf(out,
            "upstream %s %s (%llu connections), %zu masters; forwarded %llu, answered "
            "%llu, timed out %llu, unreachable %llu, busy %llu, dropped answers %llu "
            "(late %llu)\n",
            gw_upstream_name(g->up), up_state_name(gw_upstream_state(g->up)),
            (unsigned long long)gw_upstream_connects(g->up), g->n_masters,
            (unsigned long long)ms.forwarded, (unsigned long long)ms.answered,
            (unsigned long long)ms.timed_out, (unsigned long long)ms.unreachable,
            (unsigned long long)ms.busy, (unsigned long long)ms.dropped,
            (unsigned long long)ms.late);
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

/* ---- the loop ---- */

static int run(struct gw_server *g)
{
    int64_t drain_until = 0;

    for (;;) {
        struct pollfd pfd[3 + GW_CONTROL_FDS];
        int64_t now = gw_now_ns();
        int t = gw_min_timeout(mbsc_server_next_timeout(g->srv), gw_mux_timeout(g->mux, now));
        int up_fd = gw_upstream_fd(g->up), sfd = mbsc_server_fd(g->srv);
        size_t n_ctl;
        unsigned sig;

        t = gw_min_timeout(t, gw_upstream_timeout(g->up, now));
        t = gw_min_timeout(t, gw_control_timeout(g->control, now));
        if (g->draining)
            t = gw_min_timeout(t, gw_ms_until(drain_until, now));
        if (sfd < 0)
            t = gw_min_timeout(t, 10); /* no epoll: step often */
        pfd[0].fd = sfd;
        pfd[0].events = POLLIN;
        pfd[1].fd = gw_signals_fd();
        pfd[1].events = POLLIN;
        pfd[2].fd = up_fd;
        pfd[2].events = gw_upstream_events(g->up);
        pfd[0].revents = pfd[1].revents = pfd[2].revents = 0;
        n_ctl = gw_control_pollfds(g->control, pfd + 3);
        if (poll(pfd, (nfds_t)(3 + n_ctl), t) < 0) {
            size_t i;

            for (i = 0; i < 3 + n_ctl; i++)
                pfd[i].revents = 0;
        }
        sig = gw_signals_take();
        if (sig & GW_SIG_RELOAD)
            reload(g);
        if (sig & GW_SIG_STATUS)
            gw_status_log(status_write, g);
        gw_control_io(g->control, pfd + 3, n_ctl, status_write, g, gw_now_ns());
        if ((sig & GW_SIG_STOP) && !g->draining) {
            g->draining = 1;
            drain_until = gw_now_ns() + (int64_t)g->o->drain_ms * 1000000;
            gw_notify("STOPPING=1");
            (void)mbsc_server_stop_accepting(g->srv); /* new masters are refused */
            gw_log(GW_INFO, "stopping: %u requests to finish", gw_mux_total(g->mux));
        }
        if (mbsc_server_step(g->srv, 0) != MBSC_OK) {
            gw_log(GW_ERR, "the listener failed: stopping");
            return GW_EX_FAILURE;
        }
        if (up_fd >= 0 && up_fd == gw_upstream_fd(g->up))
            gw_upstream_io(g->up, pfd[2].revents);
        now = gw_now_ns();
        gw_upstream_tick(g->up, now);
        gw_mux_tick(g->mux, now);
        free_retired(g, 0);
        if (g->draining && (gw_mux_total(g->mux) == 0 || now >= drain_until)) {
            (void)mbsc_server_step(g->srv, 0); /* send the last answers */
            gw_log(GW_INFO, "stopped");
            return GW_EX_OK;
        }
    }
}

int gw_server_mode(const struct gw_options *o)
{
    struct gw_server g;
    struct gw_mux_config mc;
    struct gw_upstream_hooks hooks;
    char why[GW_WHY_SIZE], addr[MBSC_ADDRSTRLEN];
    int rc = GW_EX_FAILURE;

    memset(&g, 0, sizeof g);
    g.o = o;
    crypto_shorthash_keygen(g.group_key);
    if (gw_secrets_load(&g.cur, o, why, sizeof why) != 0) {
        gw_log(GW_ERR, "%s", why);
        return GW_EX_FAILURE;
    }
    mc.max_in_flight = (unsigned)o->max_in_flight;
    mc.max_queue = (unsigned)o->max_queue;
    mc.timeout_ms = (unsigned)o->request_timeout_ms;
    mc.unreachable_code = GW_EXC_PATH_UNAVAILABLE;
    g.mux = gw_mux_new(&mc, reply, &g);
    if (g.mux == NULL)
        goto out;
    hooks = gw_mux_hooks(g.mux);
    g.up = gw_upstream_new(o->upstream, NULL, (unsigned)o->connect_timeout_ms,
                           (unsigned)o->reconnect_max_ms, &hooks);
    if (g.up == NULL)
        goto out;
    gw_mux_attach(g.mux, g.up);
    if (mbsc_server_new(&g.srv, o->listen, g.cur.cfg, why, sizeof why) != MBSC_OK) {
        gw_log(GW_ERR, "%s", why);
        goto out;
    }
    mbsc_server_set_request_fn(g.srv, on_request, &g);
    mbsc_server_set_event_fn(g.srv, on_event, &g);
    if (o->max_connections != 0)
        (void)mbsc_server_set_limit(g.srv, MBSC_SERVER_MAX_CONNECTIONS,
                                    (unsigned)o->max_connections);
    if (o->handshake_timeout_ms != 0)
        (void)mbsc_server_set_limit(g.srv, MBSC_SERVER_HANDSHAKE_TIMEOUT_MS,
                                    (unsigned)o->handshake_timeout_ms);
    if (o->max_sessions_per_master != 0)
        (void)mbsc_server_set_limit(g.srv, MBSC_SERVER_MAX_SESSIONS_PER_KEY,
                                    (unsigned)o->max_sessions_per_master);
    (void)mbsc_server_set_limit(g.srv, MBSC_SERVER_IDLE_TIMEOUT_MS, (unsigned)o->idle_timeout_ms);
    if (mbsc_server_address(g.srv, addr, sizeof addr) != MBSC_OK)
        goto out;
    if (o->control != NULL && (g.control = gw_control_open(o->control, why, sizeof why)) == NULL) {
        gw_log(GW_ERR, "%s", why);
        goto out;
    }
    /* Scripts wait for this line instead of sleeping: flush it at once. */
    if (printf("listening on %s\n", addr) < 0 || fflush(stdout) == EOF) {
        gw_log(GW_ERR, "cannot write to stdout");
        goto out;
    }
    gw_log(GW_INFO, "server mode on %s, PLC at %s, %zu masters allowed%s%s", addr, o->upstream,
           mbsc_allowlist_count(g.cur.allow), g.cur.policy ? ", policy " : ", no policy",
           g.cur.policy ? o->policy : "");
    gw_notify("READY=1");
    rc = run(&g);
out:
    gw_control_close(g.control);
    mbsc_server_free(g.srv); /* before the configs it borrows */
    gw_mux_free(g.mux);
    gw_upstream_free(g.up);
    free(g.masters);
    free_retired(&g, 1);
    gw_secrets_free(&g.cur);
    sodium_memzero(g.group_key, sizeof g.group_key);
    return rc;
}
