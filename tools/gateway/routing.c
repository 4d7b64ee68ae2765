/* SPDX-License-Identifier: ISC */
/*
 * routing.c - the live routes (routing.h): a path per target, each an
 * upstream and its multiplexer, and a table from unit id to path.
 *
 * A reload builds the new set of paths beside the old one, taking over the
 * paths whose target stays, and only then swaps: if anything cannot be
 * made, nothing changed.
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "routing.h"
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

static const char *state_name(enum gw_up_state s)
{
    switch (s) {
    case GW_UP_READY: return "connected";
    case GW_UP_CONNECTING: return "connecting";
    case GW_UP_BACKOFF: return "unreachable";
    case GW_UP_IDLE: break;
    }
    return "idle";
}

void gw_routing_status(const struct gw_routing *r, FILE *out)
{
    size_t i;

    for (i = 0; i < r->set.n; i++) {
        const struct path *p = r->set.v[i];
        struct gw_mux_stats ms;
        char kind[64];
        unsigned long long n = (unsigned long long)gw_upstream_connects(p->up);

        gw_mux_get_stats(p->mux, &ms);
        gw_upstream_describe(p->up, kind, sizeof kind);
        if (p->is_default)
            fprintf(out, "upstream %s%s%s", p->target, p->units[0] != '\0' ? " units " : "",
                    p->units);
        else
            fprintf(out, "route %s %s", p->units, p->target);
        fprintf(out,
                " (%s) %s (%llu connection%s); forwarded %llu, answered %llu, timed out %llu, "
                "unreachable %llu, busy %llu, dropped answers %llu (late %llu)\n",
                kind, state_name(gw_upstream_state(p->up)), n, n == 1 ? "" : "s",
                (unsigned long long)ms.forwarded, (unsigned long long)ms.answered,
                (unsigned long long)ms.timed_out, (unsigned long long)ms.unreachable,
                (unsigned long long)ms.busy, (unsigned long long)ms.dropped,
                (unsigned long long)ms.late);
    }
}
