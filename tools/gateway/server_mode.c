/* SPDX-License-Identifier: ISC */
/*
 * server_mode.c - mbsc masters in, plain Modbus/TCP to the PLCs out.
 *
 * The masters' sessions are an mbsc_server's (mbsc/server.h); those of
 * Modbus/TCP Security masters, beside them or alone (--listen-tls), are
 * tls_masters.c's.  This file decides what happens to each request of
 * either, in the order docs/policy.md gives ("The order of checks"): the payload must be one
 * Modbus/TCP ADU (else the session ends); its shape (exception 03 or 02); the policy for the
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
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "adu_check.h"
#include "clock.h"
#include "answers_out.h"
#include "control.h"
#include "log.h"
#include "loop.h"
#include "modes.h"
#include "routing.h"
#include "secrets.h"
#include "signals.h"
#include "status_fmt.h"
#include "tls_masters.h"

/*
 * What the masters of one name did since the gateway started, over all
 * their sessions, for counters that never go down (Prometheus): a session
 * that ends keeps its share here.  One per name of the allow-list that has
 * connected; a reload forgets the names no longer listed, once none of
 * their sessions is left.
 */
struct tally {
    char name[MBSC_ALLOWLIST_NAME_MAX + 1];
    uint64_t sessions, requests, refusals;
    uint64_t live; /* sessions connected now */
    struct tally *next;
};

struct master {
    mbsc_server_conn_id id;
    struct tally *tally; /* NULL when out of memory: its counts go nowhere */
    uint64_t origin;     /* for the routes: the gateway's own number, never GW_TLS_ORIGIN_BIT */
    uint64_t group;      /* the multiplexer's share: one per master key (group_of) */
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
    struct gw_answers_out answers; /* mbsc masters' answers, sent before the loop sleeps */
    struct master *masters;
    size_t n_masters, cap_masters;
    uint64_t next_origin;
    int draining;
    struct gw_timer *drain_timer;
    struct gw_control *control; /* --control, or NULL */
    char addr[MBSC_ADDRSTRLEN]; /* the mbsc listener's, "" without one */
    uint8_t group_key[crypto_shorthash_KEYBYTES];
    struct tally *tallies;
    uint64_t policy_refusals; /* requests refused by the policy, all masters, since the start */
    time_t started;
};

static struct tally *tally_for(struct gw_server *g, const char *name)
{
    struct tally *t;

    for (t = g->tallies; t != NULL; t = t->next)
        if (strcmp(t->name, name) == 0)
            return t;
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->next = g->tallies;
    g->tallies = t;
    return t;
}

/* The session of m counts under its (new) name from now on. */
static void master_tally(struct gw_server *g, struct master *m)
{
    if (m->tally != NULL)
        m->tally->live--;
    m->tally = tally_for(g, m->name);
    if (m->tally != NULL)
        m->tally->live++;
}

/* Forget the names with no session that the allow-list al no longer lists (al NULL: all). */
static void prune_tallies(struct gw_server *g, const mbsc_allowlist *al)
{
    struct tally **p = &g->tallies;

    while (*p != NULL) {
        struct tally *t = *p;
        size_t i, n = mbsc_allowlist_count(al);
        int listed = 0;

        for (i = 0; i < n && !listed; i++) {
            const char *name = NULL;

            listed = mbsc_allowlist_get(al, i, NULL, &name, NULL) == MBSC_OK &&
                     strcmp(name, t->name) == 0;
        }
        if (t->live > 0 || listed) {
            p = &t->next;
            continue;
        }
        *p = t->next;
        free(t);
    }
}

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

static void send_answer(void *user, uint64_t id, const uint8_t *adu, size_t len)
{
    struct gw_server *g = user;

    if (mbsc_server_reply(g->srv, (mbsc_server_conn_id)id, adu, len) != MBSC_OK) {
        /* The master left meanwhile: nobody to answer. */
    }
}

/*
 * An answer for origin: an mbsc master's goes through the server when the
 * loop is about to sleep (answers_out.h), a TLS master's through TLS.
 */
static void reply(void *user, uint64_t origin, const uint8_t *adu, size_t len)
{
    struct gw_server *g = user;
    struct master *m;

    if (origin & GW_TLS_ORIGIN_BIT) {
        gw_tls_masters_reply(g->tls, origin, adu, len);
        return;
    }
    m = find_origin(g, origin);
    if (m != NULL)
        gw_answers_out_put(&g->answers, m->id, adu, len);
}

static void answer_exception(struct gw_server *g, uint64_t origin, const uint8_t *req, uint8_t code)
{
    uint8_t ex[MBSC_EXCEPTION_ADU_BYTES];

    reply(g, origin, ex, mbsc_adu_exception(req, code, ex));
}

/* Who sent a request, mbsc or TLS master, for the routes and the log. */
struct requester {
    uint64_t origin, group;
    const char *label; /* "master NAME", "TLS master \"SUBJECT\" (role R)" */
    const char *name;  /* the allow-list's name, or the certificate's subject */
    const char *role;  /* NULL: none */
    const char *peer;  /* HOST:PORT */
    int tls;           /* the role comes from a certificate */
};

/* A request the policy refused: one line, and for the journal its parts as fields. */
static void log_refusal(const struct requester *r, const uint8_t *p, size_t len, const char *why)
{
    char function[8], address[8];
    struct gw_field f[] = {
        {"MBSC_MASTER", r->name},    {"MBSC_ROLE", r->role != NULL ? r->role : "none"},
        {"MBSC_FUNCTION", function}, {"MBSC_ADDRESS", address},
        {"MBSC_PEER", r->peer},      {"MBSC_REASON", why}};

    snprintf(function, sizeof function, "0x%02x", p[MBSC_MBAP_BYTES]);
    snprintf(address, sizeof address, "%u", gw_first_address(p, len));
    gw_logf(GW_WARN, f, sizeof f / sizeof f[0], "refused %s: function %s address %s: %s", r->label,
            function, address, why);
}

/*
 * One request (one ADU whose MBAP header is good) of a master, mbsc or
 * TLS: its shape, the policy for its role, the route (docs/policy.md, "The
 * order of checks").  Returns 1 if the policy refused it.  The answer may
 * end the master's session: nothing of the caller's master may be used
 * after this without finding it again.
 */
static int serve(struct gw_server *g, const struct requester *r, const uint8_t *p, size_t len)
{
    char why[512];
    uint8_t code = gw_check_request(p, len);

    if (code != 0) {
        answer_exception(g, r->origin, p, code);
        return 0;
    }
    if (g->cur.policy != NULL &&
        mbsc_policy_check(g->cur.policy, r->role, p + MBSC_MBAP_BYTES, len - MBSC_MBAP_BYTES, why,
                          sizeof why) != MBSC_OK) {
        if (r->tls && r->role == NULL)
            snprintf(why, sizeof why,
                     "its certificate has no role (extension 1.3.6.1.4.1.50316.802.1), and a "
                     "policy is in force; issue it a certificate with one (docs/tls.md)");
        g->policy_refusals++;
        log_refusal(r, p, len, why);
        answer_exception(g, r->origin, p, (uint8_t)MBSC_POLICY_REFUSAL_EXCEPTION);
        return 1;
    }
    if (g->draining) {
        answer_exception(g, r->origin, p, MBSC_EXC_GATEWAY_PATH_UNAVAILABLE);
        return 0;
    }
    gw_log(GW_DEBUG, "%s: function 0x%02x address %u unit %u", r->label, p[MBSC_MBAP_BYTES],
           gw_first_address(p, len), p[6]);
    if (gw_routing_submit(g->routing, r->origin, r->group, p, len) != MBSC_OK)
        answer_exception(g, r->origin, p, MBSC_EXC_SERVER_DEVICE_BUSY);
    return 0;
}

static void on_request(void *user, mbsc_server *srv, const struct mbsc_server_conn_info *ci,
                       const uint8_t *p, size_t len)
{
    struct gw_server *g = user;
    struct master *m = find_master(g, ci->id);
    char label[MBSC_ALLOWLIST_NAME_MAX + 16], name[MBSC_ALLOWLIST_NAME_MAX + 1];
    char address[MBSC_ADDRSTRLEN];
    struct requester r;

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
    if (m->tally != NULL)
        m->tally->requests++;
    /* Copies: m may move in the array while the request is answered. */
    snprintf(name, sizeof name, "%s", m->name);
    snprintf(address, sizeof address, "%s", m->address);
    snprintf(label, sizeof label, "master %s", m->name);
    r.origin = m->origin;
    r.group = m->group;
    r.label = label;
    r.name = name;
    r.role = ci->peer_role;
    r.peer = address;
    r.tls = 0;
    if (serve(g, &r, p, len)) {
        m = find_master(g, ci->id);
        if (m != NULL) {
            m->refusals++;
            if (m->tally != NULL)
                m->tally->refusals++;
        }
    }
}

/* A Modbus/TCP Security master's request (tls_masters.h). */
static int on_tls_request(void *user, const struct gw_tls_master_info *mi, const uint8_t *adu,
                          size_t len)
{
    char label[300];
    struct requester r;

    snprintf(label, sizeof label, "TLS master \"%s\" (role %s)", mi->subject,
             mi->role != NULL ? mi->role : "none");
    r.origin = mi->origin;
    r.group = mi->group;
    r.label = label;
    r.name = mi->subject;
    r.role = mi->role;
    r.peer = mi->peer;
    r.tls = 1;
    return serve(user, &r, adu, len);
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
    master_tally(g, m);
    if (m->tally != NULL)
        m->tally->sessions++;
}

static void on_event(void *user, const struct mbsc_server_event *ev)
{
    struct gw_server *g = user;
    const struct mbsc_server_conn_info *ci = ev->conn;
    struct master *m;
    char why[512];

    switch (ev->type) {
    case MBSC_SERVER_EVENT_CONNECTED: {
        const char *role = ci->peer_role != NULL ? ci->peer_role : "none";
        struct gw_field f[] = {
            {"MBSC_MASTER", ci->peer_name}, {"MBSC_ROLE", role}, {"MBSC_PEER", ci->peer_address}};

        add_master(g, ci);
        gw_logf(GW_INFO, f, 3, "master %s (role %s) connected from %s with %s", ci->peer_name, role,
                ci->peer_address, ci->cipher != NULL ? mbsc_cipher_name(ci->cipher) : "?");
        break;
    }
    case MBSC_SERVER_EVENT_CLOSED: {
        struct gw_field f[] = {
            {"MBSC_MASTER", NULL}, {"MBSC_PEER", ci->peer_address}, {"MBSC_REASON", why}};

        m = find_master(g, ci->id);
        if (m != NULL)
            gw_routing_forget(g->routing, m->origin);
        f[0].value = m != NULL ? m->name : ci->peer_name != NULL ? ci->peer_name : "?";
        if (ev->error == MBSC_OK)
            snprintf(why, sizeof why, "%s", ev->detail != NULL ? ev->detail : "closed");
        else
            snprintf(why, sizeof why, "%s%s%s", mbsc_strerror(ev->error),
                     ev->detail != NULL ? ": " : "", ev->detail != NULL ? ev->detail : "");
        gw_logf(GW_INFO, f, 3, "master %s from %s disconnected: %s", f[0].value, ci->peer_address,
                why);
        if (m != NULL) {
            if (m->tally != NULL)
                m->tally->live--;
            *m = g->masters[--g->n_masters];
        }
        break;
    }
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
        master_tally(g, m); /* a renamed master counts under its new name */
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
        int n;

        note_role_changes(g, g->cur.allow);
        n = mbsc_server_apply_allowlist(g->srv, g->cur.allow);
        closed += n > 0 ? n : 0;
        prune_tallies(g, g->cur.allow);
    }
    if (!same(no.listen, g->o->listen) || !same(no.listen_tls, g->o->listen_tls))
        gw_log(GW_WARN, "listen or listen-tls changed: it takes effect at the next start");
    if (no.control != NULL && (g->o->control == NULL || strcmp(no.control, g->o->control) != 0))
        gw_log(GW_WARN, "control changed to %s: it takes effect at the next start", no.control);
    gw_options_free(g->o);
    *g->o = no;
    gw_log_set_level(g->o->log_level != 0 ? (enum gw_level)g->o->log_level : GW_INFO);
    if (g->srv != NULL) {
        size_t n_allowed = mbsc_allowlist_count(g->cur.allow);

        snprintf(what, sizeof what, "%zu master%s in %s%s", n_allowed, n_allowed == 1 ? "" : "s",
                 g->o->authorized, g->tls != NULL ? " and the TLS files" : "");
    } else {
        snprintf(what, sizeof what, "the TLS files");
    }
    gw_log(GW_INFO, "reloaded: %s%s%s, %zu route%s by unit id, %d disconnected", what,
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

/* Where the gateway takes masters: the mbsc listener, or the TLS one when alone. */
static const char *listen_address(const struct gw_server *g)
{
    return g->srv != NULL ? g->addr : gw_tls_masters_address(g->tls);
}

/* The first text line: where, how many masters, what waits, what was refused. */
static void status_summary(const struct gw_server *g, const struct mbsc_server_stats *st, FILE *out)
{
    unsigned q = gw_routing_total(g->routing);
    unsigned long long c = (unsigned long long)st->refused,
                       p = (unsigned long long)g->policy_refusals;
    /* mbsc and TLS masters alike; each kind has its lines below. */
    size_t n = g->n_masters + (g->tls != NULL ? gw_tls_masters_count(g->tls) : 0);

    fprintf(out,
            "server mode on %s, %zu master%s, %u request%s queued or in flight, refused %llu "
            "connection%s and %llu request%s\n",
            listen_address(g), n, n == 1 ? "" : "s", q, q == 1 ? "" : "s", c, c == 1 ? "" : "s", p,
            p == 1 ? "" : "s");
}

static void status_master_text(const struct master *m, FILE *out)
{
    char since[32];

    gw_time_utc(m->since, since, sizeof since);
    fprintf(out,
            "master %s role %s cipher %s from %s connected-since %s requests %llu "
            "refusals %llu\n",
            m->name, m->role[0] != '\0' ? m->role : "none", m->cipher, m->address, since,
            (unsigned long long)m->requests, (unsigned long long)m->refusals);
}

/* The library's reasons for refusing a connection before it confirmed, by name. */
struct refusal_reason {
    const char *name;
    size_t offset; /* in struct mbsc_server_stats, a uint64_t */
};

#define R(field)                                                                                   \
    {                                                                                              \
#field, offsetof(struct mbsc_server_stats, field)                                          \
    }
static const struct refusal_reason refusal_reasons[] = {
    R(unknown_keys), R(bad_handshakes), R(closed_early), R(timed_out),    R(replays),
    R(per_address),  R(evicted),        R(full),         R(fd_exhausted), R(per_key),
};
#undef R

static uint64_t reason_count(const struct mbsc_server_stats *st, const struct refusal_reason *r)
{
    return *(const uint64_t *)(const void *)((const char *)st + r->offset);
}

static void status_json(const struct gw_server *g, const struct mbsc_server_stats *st, FILE *out)
{
    char since[32];
    const struct tally *t;
    size_t i;

    gw_time_utc(g->started, since, sizeof since);
    fputc('{', out);
    gw_json_kv_str(out, 1, "mode", "server");
    gw_json_kv_str(out, 0, "listen", g->srv != NULL ? g->addr : NULL);
    gw_json_kv_str(out, 0, "listen_tls", g->tls != NULL ? gw_tls_masters_address(g->tls) : NULL);
    gw_json_kv_str(out, 0, "version", mbsc_version());
    gw_json_kv_str(out, 0, "started", since);
    gw_json_kv_u64(out, 0, "masters_connected", g->n_masters);
    gw_json_kv_u64(out, 0, "tls_masters_connected",
                   g->tls != NULL ? gw_tls_masters_count(g->tls) : 0);
    gw_json_kv_u64(out, 0, "requests_pending", gw_routing_total(g->routing));
    gw_json_kv_u64(out, 0, "requests", st->requests);
    fputs(",\"refusals\":{", out);
    gw_json_kv_u64(out, 1, "total", st->refused + g->policy_refusals);
    gw_json_kv_u64(out, 0, "connections", st->refused);
    gw_json_kv_u64(out, 0, "policy", g->policy_refusals);
    fputs(",\"connections_by_reason\":{", out);
    for (i = 0; i < sizeof refusal_reasons / sizeof refusal_reasons[0]; i++)
        gw_json_kv_u64(out, i == 0, refusal_reasons[i].name, reason_count(st, &refusal_reasons[i]));
    fputs("}},\"routes\":", out);
    gw_routing_status(g->routing, GW_STATUS_JSON, out);
    fputs(",\"masters\":[", out);
    for (i = 0; i < g->n_masters; i++) {
        const struct master *m = &g->masters[i];

        gw_time_utc(m->since, since, sizeof since);
        fputs(i > 0 ? ",{" : "{", out);
        gw_json_kv_str(out, 1, "name", m->name);
        gw_json_kv_str(out, 0, "role", m->role[0] != '\0' ? m->role : NULL);
        gw_json_kv_str(out, 0, "cipher", m->cipher);
        gw_json_kv_str(out, 0, "address", m->address);
        gw_json_kv_str(out, 0, "connected_since", since);
        gw_json_kv_u64(out, 0, "requests", m->requests);
        gw_json_kv_u64(out, 0, "refusals", m->refusals);
        fputc('}', out);
    }
    fputs("],\"master_totals\":[", out);
    for (t = g->tallies; t != NULL; t = t->next) {
        fputs(t != g->tallies ? ",{" : "{", out);
        gw_json_kv_str(out, 1, "name", t->name);
        gw_json_kv_u64(out, 0, "sessions_now", t->live);
        gw_json_kv_u64(out, 0, "sessions", t->sessions);
        gw_json_kv_u64(out, 0, "requests", t->requests);
        gw_json_kv_u64(out, 0, "refusals", t->refusals);
        fputc('}', out);
    }
    fputs("]}\n", out);
}

/* One family with a sample per master name: the tally's field at offset. */
static void prom_masters(const struct gw_server *g, FILE *out, const char *name, const char *type,
                         const char *help, size_t offset)
{
    const struct tally *t;

    gw_prom_family(out, name, type, help);
    for (t = g->tallies; t != NULL; t = t->next) {
        fprintf(out, "%s{master=\"", name);
        gw_prom_label_value(out, t->name);
        fprintf(out, "\"} %" PRIu64 "\n",
                *(const uint64_t *)(const void *)((const char *)t + offset));
    }
}

static void status_prometheus(const struct gw_server *g, const struct mbsc_server_stats *st,
                              FILE *out)
{
    size_t i;

    gw_prom_family(out, "mbsc_gateway_info", "gauge", "The gateway's mode, address and version.");
    fputs("mbsc_gateway_info{mode=\"server\",listen=\"", out);
    gw_prom_label_value(out, listen_address(g));
    fprintf(out, "\",version=\"%s\"} 1\n", mbsc_version());
    gw_prom_family(out, "mbsc_gateway_start_time_seconds", "gauge",
                   "When the gateway started, in seconds since the epoch.");
    fprintf(out, "mbsc_gateway_start_time_seconds %lld\n", (long long)g->started);
    gw_prom_family(out, "mbsc_gateway_masters", "gauge", "Master sessions connected now.");
    fprintf(out, "mbsc_gateway_masters %zu\n", g->n_masters);
    gw_prom_family(out, "mbsc_gateway_tls_masters", "gauge",
                   "Modbus/TCP Security (TLS) master connections now.");
    fprintf(out, "mbsc_gateway_tls_masters %zu\n",
            g->tls != NULL ? gw_tls_masters_count(g->tls) : 0);
    gw_prom_family(out, "mbsc_gateway_requests_pending", "gauge",
                   "Requests queued or in flight, all routes.");
    fprintf(out, "mbsc_gateway_requests_pending %u\n", gw_routing_total(g->routing));
    gw_prom_family(out, "mbsc_gateway_requests_total", "counter",
                   "Requests received from masters.");
    fprintf(out, "mbsc_gateway_requests_total %" PRIu64 "\n", st->requests);
    gw_prom_family(out, "mbsc_gateway_refusals_total", "counter",
                   "Connections refused before their session confirmed, and requests refused "
                   "by the policy, together.");
    fprintf(out, "mbsc_gateway_refusals_total %" PRIu64 "\n", st->refused + g->policy_refusals);
    gw_prom_family(out, "mbsc_gateway_refused_connections_total", "counter",
                   "Connections refused before their session confirmed, by reason.");
    for (i = 0; i < sizeof refusal_reasons / sizeof refusal_reasons[0]; i++)
        fprintf(out, "mbsc_gateway_refused_connections_total{reason=\"%s\"} %" PRIu64 "\n",
                refusal_reasons[i].name, reason_count(st, &refusal_reasons[i]));
    gw_prom_family(out, "mbsc_gateway_policy_refusals_total", "counter",
                   "Requests refused by the policy (answered with exception 01).");
    fprintf(out, "mbsc_gateway_policy_refusals_total %" PRIu64 "\n", g->policy_refusals);
    gw_routing_status(g->routing, GW_STATUS_PROMETHEUS, out);
    prom_masters(g, out, "mbsc_gateway_master_sessions", "gauge",
                 "Sessions of the master connected now.", offsetof(struct tally, live));
    prom_masters(g, out, "mbsc_gateway_master_sessions_total", "counter",
                 "Sessions of the master since the gateway started.",
                 offsetof(struct tally, sessions));
    prom_masters(g, out, "mbsc_gateway_master_requests_total", "counter",
                 "Requests of the master since the gateway started.",
                 offsetof(struct tally, requests));
    prom_masters(g, out, "mbsc_gateway_master_refusals_total", "counter",
                 "Requests of the master refused by the policy since the gateway started.",
                 offsetof(struct tally, refusals));
}

static void status_write(void *user, enum gw_status_format fmt, FILE *out)
{
    struct gw_server *g = user;
    struct mbsc_server_stats st;
    size_t i;

    memset(&st, 0, sizeof st);
    if (g->srv != NULL)
        mbsc_server_get_stats(g->srv, &st);
    switch (fmt) {
    case GW_STATUS_TEXT:
        status_summary(g, &st, out);
        gw_routing_status(g->routing, GW_STATUS_TEXT, out);
        if (g->tls != NULL)
            gw_tls_masters_status(g->tls, out);
        for (i = 0; i < g->n_masters; i++)
            status_master_text(&g->masters[i], out);
        break;
    case GW_STATUS_JSON: status_json(g, &st, out); break;
    case GW_STATUS_PROMETHEUS: status_prometheus(g, &st, out); break;
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
        gw_answers_out_flush(&g->answers);
        step_server(g); /* the last answers go out */
        gw_log(GW_INFO, "stopped");
        gw_loop_stop(g->loop, GW_EX_OK);
    }
}

static void on_drain_timeout(void *data)
{
    struct gw_server *g = data;

    gw_answers_out_flush(&g->answers);
    step_server(g);
    gw_log(GW_INFO, "stopped after %lu ms with %u request%s unanswered", g->o->drain_ms,
           gw_routing_total(g->routing), gw_routing_total(g->routing) == 1 ? "" : "s");
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
        gw_log(GW_INFO, "stopping: %u request%s to finish", gw_routing_total(g->routing),
               gw_routing_total(g->routing) == 1 ? "" : "s");
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
    gw_answers_out_init(&g->answers, g->loop, send_answer, g);
    /* First: a gateway that already runs with this control socket is not disturbed at all. */
    if (o->control != NULL && (g->control = gw_control_open(g->loop, o->control, status_write, g,
                                                            why, sizeof why)) == NULL) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    ps.max_in_flight = (unsigned)o->max_in_flight;
    ps.max_queue = (unsigned)o->max_queue;
    ps.request_timeout_ms = (unsigned)o->request_timeout_ms;
    ps.unreachable_code = MBSC_EXC_GATEWAY_PATH_UNAVAILABLE;
    ps.up.connect_timeout_ms = (unsigned)o->connect_timeout_ms;
    ps.up.backoff_max_ms = (unsigned)o->reconnect_max_ms;
    ps.up.request_timeout_ms = (unsigned)o->request_timeout_ms;
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
    g.started = time(NULL);
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
            if (g.srv != NULL) {
                size_t n_allowed = mbsc_allowlist_count(g.cur.allow);

                gw_log(GW_INFO,
                       "server mode on %s, %zu route%s by unit id%s%s, %zu master%s allowed%s%s",
                       g.addr, o->routes.n, o->routes.n == 1 ? "" : "s",
                       o->upstream != NULL ? ", default " : "",
                       o->upstream != NULL ? o->upstream : "", n_allowed, n_allowed == 1 ? "" : "s",
                       g.cur.policy ? ", policy " : ", no policy", g.cur.policy ? o->policy : "");
            }
            if (g.tls != NULL)
                gw_log(GW_INFO,
                       "Modbus/TCP Security masters on %s (TLS 1.2 and 1.3, client certificates "
                       "of %s), %zu route%s by unit id%s%s%s%s",
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
    gw_answers_out_free(&g.answers);
    mbsc_server_free(g.srv); /* before the configs it borrows; its CLOSED events forget */
    gw_routing_free(g.routing);
    gw_watch_remove(g.srv_watch);
    gw_watch_remove(g.sig_watch);
    gw_timer_free(g.srv_timer);
    gw_timer_free(g.drain_timer);
    gw_loop_free(g.loop);
    free(g.masters);
    while (g.tallies != NULL) {
        struct tally *t = g.tallies;

        g.tallies = t->next;
        free(t);
    }
    gw_secrets_free(&g.cur);
    sodium_memzero(g.group_key, sizeof g.group_key);
    return rc;
}
