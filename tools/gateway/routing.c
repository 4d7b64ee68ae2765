/* SPDX-License-Identifier: ISC */
/*
 * routing.c - the live routes (routing.h): a path per target, each an
 * upstream and its multiplexer, and a table from unit id to path.
 *
 * A reload builds the new set of paths beside the old one, taking over the
 * paths whose target stays, and only then swaps: if anything cannot be
 * made, nothing changed.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "outage.h"
#include "routing.h"
#include "serial_target.h"
#include "up_kinds.h"

struct path {
    char target[GW_TARGET_MAX];
    char units[64 * 4]; /* "default", or the units' text (routes to one target joined) */
    int is_default;
    struct gw_upstream *up;
    struct gw_mux *mux;
    struct gw_timer *tick; /* the multiplexer's next deadline */
};

/* The paths in force, and the one each unit id goes to (NULL: none). */
struct path_set {
    struct path *v[GW_MAX_ROUTES + 1];
    size_t n;
    struct path *by_unit[256];
};

struct gw_routing {
    struct gw_loop *loop;
    const mbsc_config *cfg;
    struct gw_path_settings ps;
    gw_reply_fn reply;
    void *user;
    struct path_set set;
};

/* ---- one path ---- */

static void on_tick(void *data)
{
    struct path *p = data;

    gw_mux_tick(p->mux, gw_now_ns());
}

static void path_free(struct path *p)
{
    if (p == NULL)
        return;
    gw_mux_free(p->mux);
    gw_upstream_free(p->up);
    gw_timer_free(p->tick);
    free(p);
}

static struct path *path_new(struct gw_routing *r, const char *target, char *why, size_t why_len)
{
    struct path *p = calloc(1, sizeof *p);
    const struct gw_up_kind *kind;
    struct gw_mux_config mc;
    struct gw_upstream_hooks hooks;

    if (p == NULL) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    snprintf(p->target, sizeof p->target, "%s", target);
    mc.max_in_flight = r->ps.max_in_flight;
    mc.max_queue = r->ps.max_queue;
    mc.timeout_ms = r->ps.request_timeout_ms;
    mc.unreachable_code = r->ps.unreachable_code;
    /* A serial line reports a unit that does not answer once, not each request. */
    mc.quiet_timeouts = gw_serial_target_is(target);
    p->mux = gw_mux_new(&mc, r->reply, r->user);
    p->tick = gw_timer_new(r->loop, on_tick, p);
    if (p->mux == NULL || p->tick == NULL) {
        snprintf(why, why_len, "out of memory");
        path_free(p);
        return NULL;
    }
    kind = gw_up_kind_for(target, r->cfg, why, why_len);
    if (kind == NULL) {
        path_free(p);
        return NULL;
    }
    hooks = gw_mux_hooks(p->mux);
    p->up = gw_upstream_new(r->loop, kind, target, r->cfg, &r->ps.up, &hooks, why, why_len);
    if (p->up == NULL) {
        path_free(p);
        return NULL;
    }
    gw_mux_attach(p->mux, p->up);
    return p;
}

/* ---- sets of paths ---- */

static struct path *find_target(const struct path_set *s, const char *target)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->v[i]->target, target) == 0)
            return s->v[i];
    return NULL;
}

/* What a set of paths will be, before anything changes. */
struct plan {
    struct {
        char target[GW_TARGET_MAX];
        char units[sizeof(((struct path *)0)->units)];
        int is_default;
        struct path *reuse; /* a path of the set in force, with this target */
        struct path *fresh; /* or a new one */
    } e[GW_MAX_ROUTES + 1];
    size_t n;
};

/* The entry for target, added if new; NULL with why if a path cannot be made. */
static int plan_entry(struct gw_routing *r, struct plan *pl, const char *target, char *why,
                      size_t why_len)
{
    size_t i;

    for (i = 0; i < pl->n; i++)
        if (strcmp(pl->e[i].target, target) == 0)
            return (int)i;
    snprintf(pl->e[i].target, sizeof pl->e[i].target, "%s", target);
    pl->e[i].units[0] = '\0';
    pl->e[i].is_default = 0;
    pl->e[i].reuse = find_target(&r->set, target);
    pl->e[i].fresh = NULL;
    if (pl->e[i].reuse == NULL && (pl->e[i].fresh = path_new(r, target, why, why_len)) == NULL)
        return -1;
    pl->n++;
    return (int)i;
}

static void plan_drop(struct plan *pl)
{
    size_t i;

    for (i = 0; i < pl->n; i++)
        path_free(pl->e[i].fresh);
    pl->n = 0;
}

/* Plan the paths of t; 0, or -1 with why and nothing made. */
static int plan_make(struct gw_routing *r, const struct gw_route_table *t, struct plan *pl,
                     char *why, size_t why_len)
{
    size_t i;
    int k;

    pl->n = 0;
    for (i = 0; i < t->n; i++) {
        size_t have;

        k = plan_entry(r, pl, t->routes[i].target, why, why_len);
        if (k < 0) {
            plan_drop(pl);
            return -1;
        }
        have = strlen(pl->e[k].units);
        snprintf(pl->e[k].units + have, sizeof pl->e[k].units - have, "%s%s", have > 0 ? "," : "",
                 t->routes[i].units_text);
    }
    if (t->default_target[0] != '\0') {
        k = plan_entry(r, pl, t->default_target, why, why_len);
        if (k < 0) {
            plan_drop(pl);
            return -1;
        }
        pl->e[k].is_default = 1;
    }
    return 0;
}

/*
 * Make the plan the set in force: paths whose target stays are kept, the
 * others close (their queued requests get 0A, those in flight 0B), and
 * every unit points at its path.
 */
static void plan_commit(struct gw_routing *r, struct plan *pl, const struct gw_route_table *t)
{
    struct path_set next;
    struct path *def = NULL;
    size_t i, u;

    memset(&next, 0, sizeof next);
    for (i = 0; i < pl->n; i++) {
        struct path *p = pl->e[i].reuse != NULL ? pl->e[i].reuse : pl->e[i].fresh;

        snprintf(p->units, sizeof p->units, "%s", pl->e[i].units);
        p->is_default = pl->e[i].is_default;
        if (p->is_default)
            def = p;
        next.v[next.n++] = p;
    }
    for (u = 0; u < 256; u++) {
        int idx = gw_route_lookup(t, (uint8_t)u);

        /* Unit 0, the broadcast, and the units no route names: the default, or nothing. */
        next.by_unit[u] = idx >= 0 && u != 0 ? find_target(&next, t->routes[idx].target) : def;
    }
    for (i = 0; i < r->set.n; i++) {
        struct path *p = r->set.v[i];

        if (find_target(&next, p->target) == p)
            continue;
        gw_mux_shutdown(p->mux, MBSC_EXC_GATEWAY_PATH_UNAVAILABLE);
        path_free(p);
    }
    r->set = next;
    pl->n = 0;
}

/* ---- the routing ---- */

/* Before each wait: each multiplexer's timer at its next deadline. */
static void arm_ticks(void *data)
{
    struct gw_routing *r = data;
    int64_t now = gw_now_ns();
    size_t i;

    for (i = 0; i < r->set.n; i++)
        gw_timer_in(r->set.v[i]->tick, gw_mux_timeout(r->set.v[i]->mux, now));
}

struct gw_routing *gw_routing_new(struct gw_loop *loop, const struct gw_route_table *t,
                                  const mbsc_config *cfg, const struct gw_path_settings *ps,
                                  gw_reply_fn reply, void *user, char *why, size_t why_len)
{
    struct gw_routing *r = calloc(1, sizeof *r);
    struct plan *pl = calloc(1, sizeof *pl);

    if (r == NULL || pl == NULL) {
        snprintf(why, why_len, "out of memory");
        free(r);
        free(pl);
        return NULL;
    }
    r->loop = loop;
    r->cfg = cfg;
    r->ps = *ps;
    r->reply = reply;
    r->user = user;
    if (plan_make(r, t, pl, why, why_len) != 0) {
        free(pl);
        free(r);
        return NULL;
    }
    plan_commit(r, pl, t);
    free(pl);
    if (gw_loop_before_wait(loop, arm_ticks, r) != 0) {
        snprintf(why, why_len, "out of memory");
        gw_routing_free(r);
        return NULL;
    }
    return r;
}

void gw_routing_free(struct gw_routing *r)
{
    size_t i;

    if (r == NULL)
        return;
    for (i = 0; i < r->set.n; i++)
        path_free(r->set.v[i]);
    free(r);
}

int gw_routing_reload(struct gw_routing *r, const struct gw_route_table *t, char *why,
                      size_t why_len)
{
    struct plan *pl = calloc(1, sizeof *pl);

    if (pl == NULL) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    if (plan_make(r, t, pl, why, why_len) != 0) {
        free(pl);
        return -1;
    }
    plan_commit(r, pl, t);
    free(pl);
    return 0;
}

int gw_routing_submit(struct gw_routing *r, uint64_t origin, uint64_t group, const uint8_t *adu,
                      size_t len)
{
    struct path *p = r->set.by_unit[adu[6]];

    if (p == NULL) {
        uint8_t ex[MBSC_EXCEPTION_ADU_BYTES];

        r->reply(r->user, origin, ex,
                 mbsc_adu_exception(adu, MBSC_EXC_GATEWAY_PATH_UNAVAILABLE, ex));
        return MBSC_OK;
    }
    return gw_mux_submit(p->mux, origin, group, adu, len, gw_now_ns());
}

int gw_routing_has_path(const struct gw_routing *r, uint8_t unit)
{
    return r->set.by_unit[unit] != NULL;
}

void gw_routing_forget(struct gw_routing *r, uint64_t origin)
{
    size_t i;

    for (i = 0; i < r->set.n; i++)
        gw_mux_forget(r->set.v[i]->mux, origin);
}

unsigned gw_routing_pending(const struct gw_routing *r, uint64_t origin)
{
    unsigned n = 0;
    size_t i;

    for (i = 0; i < r->set.n; i++)
        n += gw_mux_pending(r->set.v[i]->mux, origin);
    return n;
}

unsigned gw_routing_total(const struct gw_routing *r)
{
    unsigned n = 0;
    size_t i;

    for (i = 0; i < r->set.n; i++)
        n += gw_mux_total(r->set.v[i]->mux);
    return n;
}

void gw_routing_set_config(struct gw_routing *r, const mbsc_config *cfg)
{
    size_t i;

    r->cfg = cfg;
    for (i = 0; i < r->set.n; i++)
        gw_upstream_set_config(r->set.v[i]->up, cfg);
}

void gw_routing_set_tls(struct gw_routing *r, const struct gw_tls *tls)
{
    size_t i;

    r->ps.up.tls = tls;
    for (i = 0; i < r->set.n; i++)
        gw_upstream_set_tls(r->set.v[i]->up, tls);
}

/* The state in words; a serial port is opened, not connected. */
static const char *state_name(enum gw_up_state s, int serial)
{
    switch (s) {
    case GW_UP_READY: return serial ? "open" : "connected";
    case GW_UP_CONNECTING: return serial ? "opening" : "connecting";
    case GW_UP_BACKOFF: return "unreachable";
    case GW_UP_IDLE: break;
    }
    return "idle";
}

/* What the status view says of one path. */
struct path_view {
    const struct path *p;
    char kind[768]; /* a serial line's settings, counters and last error */
    char route[sizeof(((struct path *)0)->units) + 16];
    const char *state;
    int serial; /* a serial line: opened, not connected */
    uint64_t connects, failures, failing;
    int64_t outage_ns;
    struct gw_mux_stats ms;
};

static void path_view(const struct path *p, int64_t now, struct path_view *v)
{
    v->p = p;
    gw_mux_get_stats(p->mux, &v->ms);
    gw_upstream_describe(p->up, v->kind, sizeof v->kind);
    v->serial = gw_serial_target_is(p->target);
    v->state = state_name(gw_upstream_state(p->up), v->serial);
    v->connects = gw_upstream_connects(p->up);
    v->failures = gw_upstream_failures(p->up);
    v->failing = gw_upstream_failures_in_a_row(p->up);
    v->outage_ns = gw_upstream_outage_ns(p->up, now);
    /* The label that tells the routes apart: "default", the units, or both. */
    snprintf(v->route, sizeof v->route, "%s%s%s", p->is_default ? "default" : "",
             p->is_default && p->units[0] != '\0' ? "," : "", p->units);
}

static void status_text(const struct path_view *v, FILE *out)
{
    const struct path *p = v->p;
    unsigned long long n = (unsigned long long)v->connects;
    char lasted[32];

    if (p->is_default)
        fprintf(out, "upstream %s%s%s", p->target, p->units[0] != '\0' ? " units " : "", p->units);
    else
        fprintf(out, "route %s %s", p->units, p->target);
    fprintf(out, " (%s) %s", v->kind, v->state);
    if (v->failing > 0) {
        gw_duration_text(v->outage_ns, lasted, sizeof lasted);
        /* Connected after connections that ended unanswered: the outage ends with an answer. */
        if (gw_upstream_state(p->up) == GW_UP_READY)
            fprintf(out, ", no answer yet, after %llu failed attempt%s over %s",
                    (unsigned long long)v->failing, v->failing == 1 ? "" : "s", lasted);
        else
            fprintf(out, " for %s, %llu failed attempt%s", lasted, (unsigned long long)v->failing,
                    v->failing == 1 ? "" : "s");
    }
    fprintf(out,
            " (%llu %s%s); forwarded %llu, answered %llu, timed out %llu, "
            "unreachable %llu, busy %llu, dropped answers %llu (late %llu)\n",
            n, v->serial ? "opening" : "connection", n == 1 ? "" : "s",
            (unsigned long long)v->ms.forwarded, (unsigned long long)v->ms.answered,
            (unsigned long long)v->ms.timed_out, (unsigned long long)v->ms.unreachable,
            (unsigned long long)v->ms.busy, (unsigned long long)v->ms.dropped,
            (unsigned long long)v->ms.late);
}

static void status_json(const struct path_view *v, FILE *out)
{
    const struct path *p = v->p;

    fputc('{', out);
    gw_json_kv_str(out, 1, "route", v->route);
    fprintf(out, ",\"default\":%s", p->is_default ? "true" : "false");
    gw_json_kv_str(out, 0, "units", p->units[0] != '\0' ? p->units : NULL);
    gw_json_kv_str(out, 0, "target", p->target);
    gw_json_kv_str(out, 0, "kind", v->kind);
    gw_json_kv_str(out, 0, "state", v->state);
    gw_json_kv_u64(out, 0, "connections", v->connects);
    gw_json_kv_u64(out, 0, "failed_attempts", v->failures);
    gw_json_kv_u64(out, 0, "failed_attempts_in_a_row", v->failing);
    gw_json_kv_u64(out, 0, "unreachable_for_ms", (uint64_t)(v->outage_ns / 1000000));
    gw_json_kv_u64(out, 0, "forwarded", v->ms.forwarded);
    gw_json_kv_u64(out, 0, "answered", v->ms.answered);
    gw_json_kv_u64(out, 0, "timed_out", v->ms.timed_out);
    gw_json_kv_u64(out, 0, "unreachable", v->ms.unreachable);
    gw_json_kv_u64(out, 0, "busy", v->ms.busy);
    gw_json_kv_u64(out, 0, "dropped_answers", v->ms.dropped);
    gw_json_kv_u64(out, 0, "late_answers", v->ms.late);
    fputc('}', out);
}

/* One Prometheus family: a sample per path. */
struct route_family {
    const char *name, *type, *help;
    size_t offset; /* in struct path_view; a uint64_t */
};

#define V(field) offsetof(struct path_view, field)
static const struct route_family route_families[] = {
    {"mbsc_gateway_route_connections_total", "counter", "Connections made to the route's target.",
     V(connects)},
    {"mbsc_gateway_route_failed_attempts_total", "counter",
     "Connection attempts to the route's target that failed.", V(failures)},
    {"mbsc_gateway_route_forwarded_total", "counter", "Requests sent to the route's target.",
     V(ms.forwarded)},
    {"mbsc_gateway_route_answered_total", "counter", "Answers from the route's target.",
     V(ms.answered)},
    {"mbsc_gateway_route_timed_out_total", "counter",
     "Requests answered with exception 0B (no answer in time, or the connection broke).",
     V(ms.timed_out)},
    {"mbsc_gateway_route_unreachable_total", "counter",
     "Requests answered at once because the target could not be reached.", V(ms.unreachable)},
    {"mbsc_gateway_route_busy_total", "counter",
     "Requests answered with exception 06 (the master's queue was full).", V(ms.busy)},
    {"mbsc_gateway_route_dropped_answers_total", "counter",
     "Answers from the target that no request waited for, or malformed.", V(ms.dropped)},
    {"mbsc_gateway_route_late_answers_total", "counter",
     "Answers that came after their request had timed out.", V(ms.late)},
};
#undef V

static void prom_labels(const struct path_view *v, FILE *out)
{
    fputs("{route=\"", out);
    gw_prom_label_value(out, v->route);
    fputs("\",target=\"", out);
    gw_prom_label_value(out, v->p->target);
    fputs("\"}", out);
}

static void status_prometheus(const struct path_view *v, size_t n, FILE *out)
{
    size_t f, i;

    gw_prom_family(out, "mbsc_gateway_route_up", "gauge",
                   "1 while the connection to the route's target is up, else 0.");
    for (i = 0; i < n; i++) {
        fputs("mbsc_gateway_route_up", out);
        prom_labels(&v[i], out);
        fprintf(out, " %d\n", gw_upstream_state(v[i].p->up) == GW_UP_READY);
    }
    for (f = 0; f < sizeof route_families / sizeof route_families[0]; f++) {
        const struct route_family *rf = &route_families[f];

        gw_prom_family(out, rf->name, rf->type, rf->help);
        for (i = 0; i < n; i++) {
            fputs(rf->name, out);
            prom_labels(&v[i], out);
            fprintf(out, " %" PRIu64 "\n",
                    *(const uint64_t *)(const void *)((const char *)&v[i] + rf->offset));
        }
    }
}

void gw_routing_status(const struct gw_routing *r, enum gw_status_format fmt, FILE *out)
{
    struct path_view v[GW_MAX_ROUTES + 1];
    int64_t now = gw_now_ns();
    size_t i;

    for (i = 0; i < r->set.n; i++)
        path_view(r->set.v[i], now, &v[i]);
    switch (fmt) {
    case GW_STATUS_TEXT:
        for (i = 0; i < r->set.n; i++)
            status_text(&v[i], out);
        break;
    case GW_STATUS_JSON:
        fputc('[', out);
        for (i = 0; i < r->set.n; i++) {
            if (i > 0)
                fputc(',', out);
            status_json(&v[i], out);
        }
        fputc(']', out);
        break;
    case GW_STATUS_PROMETHEUS: status_prometheus(v, r->set.n, out); break;
    }
}
