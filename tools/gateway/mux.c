/* SPDX-License-Identifier: ISC */
/*
 * mux.c - many requesters over one upstream connection.
 *
 * Most PLCs accept very few TCP clients, and many answer one request at a
 * time, so every master of the gateway shares one connection:
 *
 *  - each request gets a transaction id of the gateway's own on the way
 *    up, and its answer goes back to its requester with the requester's
 *    id restored; unit ids pass unchanged;
 *  - at most max_in_flight requests are upstream at once (default 1);
 *  - the others wait in one queue per requester (origin); requesters
 *    belong to groups (server mode: every session of one master key;
 *    client mode: each local client alone), groups take turns round-robin
 *    and so do the origins inside a group, so that neither a requester
 *    that pipelines nor a master that opens many sessions can starve the
 *    others; a group with max_queue requests queued is answered exception
 *    06 (server device busy);
 *  - a request not answered within timeout_ms of its arrival is answered
 *    with exception 0B (gateway target device failed to respond);
 *  - when the upstream cannot be reached, queued and new requests are
 *    answered with unreachable_code (0A, gateway path unavailable, in
 *    server mode) until a connection is ready again; requests in flight on
 *    a connection that breaks get 0B (the PLC may or may not have acted);
 *  - an answer that does not fit its request (adu_check.c) is dropped and
 *    logged, never forwarded: its request times out.
 *
 * Transaction ids.  An answer is matched to its request by the 16-bit id
 * alone, so an id must never be given to a new request while an answer to
 * an earlier one may still come with it: the answer would go to the wrong
 * requester (one who may not even be allowed to read what it carries).
 * An id is taken while its request is in flight; when the request times
 * out, its id stays taken (retired) for as long as the connection lasts,
 * because a slow device may still answer.  Only a new connection frees
 * them: no answer sent on an old TCP connection (or mbsc session) can
 * arrive on a new one.  When every id is taken, the multiplexer makes the
 * connection again instead of reusing one.  So a late answer finds no
 * request, for ever; it is counted (late, dropped) and dropped, and logged
 * at most once per DROP_LOG_INTERVAL_NS with the count of the others.
 *
 * Re-entrancy.  reply may call back into the multiplexer: a server-mode
 * answer to a master whose socket has closed ends its session at once,
 * and the CLOSED event forgets the origin; a client-mode requester may
 * submit again.  So nothing here calls reply while it walks its queues,
 * groups or flight slots: every answer goes to the outbox, and the
 * outermost call into the multiplexer (the public functions and the
 * upstream hooks, counted by depth) delivers the outbox just before it
 * returns, taking each answer off the outbox before its reply runs.  Calls
 * made from reply see depth > 0: they change queues and the outbox only,
 * and what they answer is delivered by the same outermost call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "adu_check.h"
#include "clock.h"
#include "log.h"
#include "mux.h"

#define TID_COUNT 65536u
#define TID_WORDS (TID_COUNT / 64u)
/* At most one log line about dropped answers per interval; the rest are counted. */
#define DROP_LOG_INTERVAL_NS ((int64_t)10 * 1000000000)

struct gw_req {
    uint64_t origin, group;
    uint16_t up_tid;
    int64_t due_ns;
    size_t len;
    uint8_t adu[MBSC_ADU_MAX]; /* as the requester sent it; in the outbox, its answer */
    struct gw_req *next;       /* in its origin's queue, or in the outbox */
};

struct gw_group;

/* A requester with queued requests (only those have an entry). */
struct gw_origin {
    uint64_t id;
    struct gw_group *group;
    struct gw_req *head, *tail;
    unsigned n;
    struct gw_origin *next; /* its group's round-robin order (head is served next) */
};

/* A group with queued requests (only those have an entry). */
struct gw_group {
    uint64_t id;
    struct gw_origin *head, *tail;
    unsigned n;            /* requests queued, all its origins */
    struct gw_group *next; /* the multiplexer's round-robin order (head is served next) */
};

struct gw_mux {
    struct gw_mux_config cfg;
    gw_reply_fn reply;
    void *user;
    struct gw_upstream *up;
    struct gw_req **flight; /* cfg.max_in_flight slots */
    unsigned n_flight;
    struct gw_group *rr_head, *rr_tail;
    unsigned n_queued;
    struct gw_req *out_head, *out_tail; /* answers not delivered yet */
    unsigned depth;                     /* calls into the multiplexer under way */
    uint16_t next_tid;
    uint64_t tid_taken[TID_WORDS]; /* on this connection: in flight, or retired */
    int64_t now_ns;                /* the latest time a caller gave */
    int64_t drop_log_at;           /* no line about a dropped answer before this */
    uint64_t drop_unlogged;        /* dropped since the last such line */
    struct gw_mux_stats st;
};

struct gw_mux *gw_mux_new(const struct gw_mux_config *cfg, gw_reply_fn reply, void *user)
{
    struct gw_mux *m = calloc(1, sizeof *m);

    if (m == NULL)
        return NULL;
    m->cfg = *cfg;
    if (m->cfg.max_in_flight == 0)
        m->cfg.max_in_flight = 1;
    if (m->cfg.max_queue == 0)
        m->cfg.max_queue = 1;
    m->flight = calloc(m->cfg.max_in_flight, sizeof *m->flight);
    if (m->flight == NULL) {
        free(m);
        return NULL;
    }
    m->reply = reply;
    m->user = user;
    m->next_tid = 1;
    m->drop_log_at = INT64_MIN;
    return m;
}

static void req_free(struct gw_req *r)
{
    sodium_memzero(r, sizeof *r); /* process data: not secret, but not kept either */
    free(r);
}

static void free_list(struct gw_req *r)
{
    while (r != NULL) {
        struct gw_req *next = r->next;

        req_free(r);
        r = next;
    }
}

void gw_mux_free(struct gw_mux *m)
{
    unsigned i;

    if (m == NULL)
        return;
    while (m->rr_head != NULL) {
        struct gw_group *g = m->rr_head;

        m->rr_head = g->next;
        while (g->head != NULL) {
            struct gw_origin *o = g->head;

            g->head = o->next;
            free_list(o->head);
            free(o);
        }
        free(g);
    }
    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL)
            req_free(m->flight[i]);
    free_list(m->out_head);
    free(m->flight);
    free(m);
}

void gw_mux_attach(struct gw_mux *m, struct gw_upstream *u)
{
    m->up = u;
}

static const char *up_name(const struct gw_mux *m)
{
    return m->up != NULL ? gw_upstream_name(m->up) : "upstream";
}

/* ---- the outbox: answers wait here until nothing is being walked ---- */

static void outbox_put(struct gw_mux *m, struct gw_req *r)
{
    r->next = NULL;
    if (m->out_tail != NULL)
        m->out_tail->next = r;
    else
        m->out_head = r;
    m->out_tail = r;
}

/* r's answer is exception code (r becomes its answer). */
static void answer_exception(struct gw_mux *m, struct gw_req *r, uint8_t code)
{
    uint8_t ex[9];

    r->len = mbsc_adu_exception(r->adu, code, ex);
    memcpy(r->adu, ex, r->len);
    outbox_put(m, r);
}

/* r's answer is upstream's adu, with the requester's own transaction id. */
static void answer_upstream(struct gw_mux *m, struct gw_req *r, const uint8_t *adu, size_t len)
{
    memcpy(r->adu + 2, adu + 2, len - 2);
    r->len = len;
    outbox_put(m, r);
}

static void enter(struct gw_mux *m)
{
    m->depth++;
}

/*
 * The end of a call into the multiplexer.  The outermost one delivers the
 * outbox, still counted in depth, so that calls reply makes only queue.
 */
static void leave(struct gw_mux *m)
{
    if (m->depth > 1) {
        m->depth--;
        return;
    }
    while (m->out_head != NULL) {
        struct gw_req *r = m->out_head;

        m->out_head = r->next;
        if (m->out_head == NULL)
            m->out_tail = NULL;
        if (r->origin != 0) /* 0: forgotten meanwhile */
            m->reply(m->user, r->origin, r->adu, r->len);
        req_free(r);
    }
    m->depth--;
}

/* ---- groups and their origins' queues ---- */

static struct gw_group *find_group(const struct gw_mux *m, uint64_t id, struct gw_group **prev)
{
    struct gw_group *g, *p = NULL;

    for (g = m->rr_head; g != NULL; p = g, g = g->next)
        if (g->id == id)
            break;
    if (prev != NULL)
        *prev = p;
    return g;
}

static struct gw_origin *find_in_group(const struct gw_group *g, uint64_t id,
                                       struct gw_origin **prev)
{
    struct gw_origin *o, *p = NULL;

    for (o = g->head; o != NULL; p = o, o = o->next)
        if (o->id == id)
            break;
    if (prev != NULL)
        *prev = p;
    return o;
}

/* origin's entry, in whichever group holds it. */
static struct gw_origin *find_origin(const struct gw_mux *m, uint64_t id)
{
    struct gw_group *g;

    for (g = m->rr_head; g != NULL; g = g->next) {
        struct gw_origin *o = find_in_group(g, id, NULL);

        if (o != NULL)
            return o;
    }
    return NULL;
}

static void unlink_group(struct gw_mux *m, struct gw_group *g, struct gw_group *prev)
{
    if (prev != NULL)
        prev->next = g->next;
    else
        m->rr_head = g->next;
    if (m->rr_tail == g)
        m->rr_tail = prev;
    g->next = NULL;
}

static void unlink_origin(struct gw_group *g, struct gw_origin *o, struct gw_origin *prev)
{
    if (prev != NULL)
        prev->next = o->next;
    else
        g->head = o->next;
    if (g->tail == o)
        g->tail = prev;
    o->next = NULL;
}

static void append_group(struct gw_mux *m, struct gw_group *g)
{
    if (m->rr_tail != NULL)
        m->rr_tail->next = g;
    else
        m->rr_head = g;
    m->rr_tail = g;
}

static void append_origin(struct gw_group *g, struct gw_origin *o)
{
    if (g->tail != NULL)
        g->tail->next = o;
    else
        g->head = o;
    g->tail = o;
}

/*
 * The queue of r's origin, made if needed.  first: the group and the
 * origin are served next (a request put back because the upstream had no
 * room keeps its turn); otherwise a new group or origin waits its turn at
 * the back.  NULL when out of memory.
 */
static struct gw_origin *queue_of(struct gw_mux *m, const struct gw_req *r, int first)
{
    struct gw_group *gp = NULL, *g = find_group(m, r->group, &gp);
    struct gw_origin *op = NULL, *o = g != NULL ? find_in_group(g, r->origin, &op) : NULL;
    int new_group = 0;

    if (g == NULL) {
        g = calloc(1, sizeof *g);
        if (g == NULL)
            return NULL;
        g->id = r->group;
        gp = m->rr_tail;
        append_group(m, g);
        new_group = 1;
    }
    if (o == NULL) {
        o = calloc(1, sizeof *o);
        if (o == NULL) {
            if (new_group) {
                unlink_group(m, g, gp);
                free(g);
            }
            return NULL;
        }
        o->id = r->origin;
        o->group = g;
        op = g->tail;
        append_origin(g, o);
    }
    if (first) {
        unlink_group(m, g, gp);
        g->next = m->rr_head;
        m->rr_head = g;
        if (m->rr_tail == NULL)
            m->rr_tail = g;
        unlink_origin(g, o, op);
        o->next = g->head;
        g->head = o;
        if (g->tail == NULL)
            g->tail = o;
    }
    return o;
}

static void queue_add(struct gw_mux *m, struct gw_origin *o, struct gw_req *r, int first)
{
    if (first) {
        r->next = o->head;
        o->head = r;
        if (o->tail == NULL)
            o->tail = r;
    } else {
        r->next = NULL;
        if (o->tail != NULL)
            o->tail->next = r;
        else
            o->head = r;
        o->tail = r;
    }
    o->n++;
    o->group->n++;
    m->n_queued++;
}

/* Take o's first request off its queue (the entries stay, maybe empty). */
static struct gw_req *queue_take(struct gw_mux *m, struct gw_origin *o)
{
    struct gw_req *r = o->head;

    o->head = r->next;
    if (o->head == NULL)
        o->tail = NULL;
    o->n--;
    o->group->n--;
    m->n_queued--;
    r->next = NULL;
    return r;
}

unsigned gw_mux_pending(const struct gw_mux *m, uint64_t origin)
{
    const struct gw_origin *o = find_origin(m, origin);
    unsigned n = o != NULL ? o->n : 0, i;

    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL && m->flight[i]->origin == origin)
            n++;
    return n;
}

unsigned gw_mux_total(const struct gw_mux *m)
{
    return m->n_queued + m->n_flight;
}

/* Every queued request gets code (the upstream cannot be reached). */
static void fail_queued(struct gw_mux *m, uint8_t code)
{
    while (m->rr_head != NULL) {
        struct gw_group *g = m->rr_head;

        m->rr_head = g->next;
        while (g->head != NULL) {
            struct gw_origin *o = g->head;

            g->head = o->next;
            while (o->head != NULL) {
                m->st.unreachable++;
                answer_exception(m, queue_take(m, o), code);
            }
            free(o);
        }
        free(g);
    }
    m->rr_tail = NULL;
}

/*
 * The next request round-robin: the head group's head origin's first; the
 * origin then goes to the back of its group, the group to the back of the
 * ring (each only while it has requests queued).
 */
static struct gw_req *pop_next(struct gw_mux *m)
{
    struct gw_group *g = m->rr_head;
    struct gw_origin *o = g->head;
    struct gw_req *r = queue_take(m, o);

    unlink_origin(g, o, NULL);
    if (o->n > 0)
        append_origin(g, o);
    else
        free(o);
    unlink_group(m, g, NULL);
    if (g->n > 0)
        append_group(m, g);
    else
        free(g);
    return r;
}

/* ---- transaction ids ---- */

static int tid_is_taken(const struct gw_mux *m, unsigned tid)
{
    return (int)((m->tid_taken[tid / 64] >> (tid % 64)) & 1u);
}

static void tid_release(struct gw_mux *m, unsigned tid)
{
    m->tid_taken[tid / 64] &= ~((uint64_t)1 << (tid % 64));
}

/* The first id not taken from next_tid on, now taken; -1 if every id is. */
static long tid_take(struct gw_mux *m)
{
    unsigned i = 0;

    while (i < TID_COUNT) {
        unsigned tid = (m->next_tid + i) & 0xFFFFu;
        uint64_t w = m->tid_taken[tid / 64];

        if (w == UINT64_MAX) {
            i += 64 - tid % 64; /* the rest of a full word */
            continue;
        }
        if (!((w >> (tid % 64)) & 1u)) {
            m->tid_taken[tid / 64] = w | (uint64_t)1 << (tid % 64);
            m->next_tid = (uint16_t)(tid + 1);
            return (long)tid;
        }
        i++;
    }
    return -1;
}

/* Send queued requests while there is a free slot and the upstream takes them. */
static void pump_some(struct gw_mux *m)
{
    while (m->up != NULL && gw_upstream_state(m->up) == GW_UP_READY &&
           m->n_flight < m->cfg.max_in_flight && m->n_queued > 0) {
        uint8_t out[MBSC_ADU_MAX];
        struct gw_req *r;
        unsigned slot;
        long tid = tid_take(m);
        int rc;

        if (tid < 0) {
            /* Reusing an id could hand a late answer to the wrong master. */
            gw_log(GW_WARN,
                   "every transaction id to %s is in flight or retired after a timeout: "
                   "connecting again, since no late answer can arrive on a new connection",
                   up_name(m));
            gw_upstream_reset(m->up, "transaction ids used up by requests that timed out");
            return;
        }
        r = pop_next(m);
        for (slot = 0; m->flight[slot] != NULL; slot++) {
        }
        r->up_tid = (uint16_t)tid;
        memcpy(out, r->adu, r->len);
        out[0] = (uint8_t)(r->up_tid >> 8);
        out[1] = (uint8_t)r->up_tid;
        m->flight[slot] = r;
        m->n_flight++;
        rc = gw_upstream_send(m->up, out, r->len);
        if (rc == MBSC_ERR_WOULD_BLOCK && m->flight[slot] == r) {
            struct gw_origin *o;

            m->flight[slot] = NULL;
            m->n_flight--;
            tid_release(m, r->up_tid); /* it never left */
            o = queue_of(m, r, 1);
            if (o != NULL)
                queue_add(m, o, r, 1);
            else
                answer_exception(m, r, MBSC_EXC_SERVER_DEVICE_BUSY);
            return;
        }
        if (rc == MBSC_OK && m->flight[slot] == r)
            m->st.forwarded++;
    }
}

/* What goes up in one go leaves in one segment (gw_upstream_cork). */
static void pump(struct gw_mux *m)
{
    struct gw_upstream *up = m->up;

    if (up == NULL)
        return;
    gw_upstream_cork(up);
    pump_some(m);
    gw_upstream_uncork(up);
}

int gw_mux_submit(struct gw_mux *m, uint64_t origin, uint64_t group, const uint8_t *adu, size_t len,
                  int64_t now_ns)
{
    struct gw_group *g;
    struct gw_origin *o;
    struct gw_req *r;

    if (len > MBSC_ADU_MAX || len < MBSC_MBAP_BYTES + 1)
        return MBSC_ERR_INVALID_ARG;
    r = calloc(1, sizeof *r);
    if (r == NULL)
        return MBSC_ERR_NOMEM;
    enter(m);
    m->now_ns = now_ns;
    r->origin = origin;
    r->group = group;
    r->len = len;
    memcpy(r->adu, adu, len);
    r->due_ns = now_ns + (int64_t)m->cfg.timeout_ms * 1000000;
    g = find_group(m, group, NULL);
    if (m->up == NULL || gw_upstream_state(m->up) == GW_UP_BACKOFF) {
        m->st.unreachable++;
        answer_exception(m, r, m->cfg.unreachable_code);
    } else if (g != NULL && g->n >= m->cfg.max_queue) {
        m->st.busy++;
        answer_exception(m, r, MBSC_EXC_SERVER_DEVICE_BUSY);
    } else if ((o = queue_of(m, r, 0)) == NULL) {
        req_free(r);
        leave(m);
        return MBSC_ERR_NOMEM;
    } else {
        queue_add(m, o, r, 0);
        pump(m);
    }
    leave(m);
    return MBSC_OK;
}

void gw_mux_forget(struct gw_mux *m, uint64_t origin)
{
    struct gw_group *g, *gp = NULL;
    struct gw_req *r;
    unsigned i;

    enter(m);
    for (g = m->rr_head; g != NULL; gp = g, g = g->next) {
        struct gw_origin *op, *o = find_in_group(g, origin, &op);

        if (o == NULL)
            continue;
        unlink_origin(g, o, op);
        while (o->head != NULL)
            req_free(queue_take(m, o));
        free(o);
        if (g->n == 0) {
            unlink_group(m, g, gp);
            free(g);
        }
        break;
    }
    /* In flight: the answer will come; with origin 0 it goes nowhere. */
    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL && m->flight[i]->origin == origin)
            m->flight[i]->origin = 0;
    for (r = m->out_head; r != NULL; r = r->next)
        if (r->origin == origin)
            r->origin = 0;
    leave(m);
}

/* ---- upstream hooks ---- */

/* An answer that goes to nobody: counted, and logged at most once per interval. */
static void drop_answer(struct gw_mux *m, uint16_t tid, int late)
{
    m->st.dropped++;
    if (late)
        m->st.late++;
    if (m->now_ns < m->drop_log_at) {
        m->drop_unlogged++;
        return;
    }
    gw_log(GW_WARN, "dropped an answer from %s with transaction id %u: %s", up_name(m), tid,
           late ? "it came after its request's timeout (the id is not used again on this "
                  "connection)"
                : "no request was sent with that id");
    m->drop_log_at = m->now_ns + DROP_LOG_INTERVAL_NS;
}

/* The line that counts the dropped answers not logged one by one. */
static void log_unlogged_drops(struct gw_mux *m)
{
    if (m->drop_unlogged == 0 || m->now_ns < m->drop_log_at)
        return;
    gw_log(GW_WARN,
           "dropped %llu more answers from %s that no request waited for (late, or never "
           "asked); the status counts them",
           (unsigned long long)m->drop_unlogged, up_name(m));
    m->drop_unlogged = 0;
    m->drop_log_at = m->now_ns + DROP_LOG_INTERVAL_NS;
}

static void on_answer(void *user, const uint8_t *adu, size_t len)
{
    struct gw_mux *m = user;
    uint16_t tid = (uint16_t)(adu[0] << 8 | adu[1]);
    struct gw_req *r = NULL;
    const char *bad;
    unsigned i;

    enter(m);
    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL && m->flight[i]->up_tid == tid)
            break;
    if (i == m->cfg.max_in_flight) {
        drop_answer(m, tid, tid_is_taken(m, tid));
        leave(m);
        return;
    }
    r = m->flight[i];
    bad = gw_check_answer(r->adu, r->len, adu, len);
    if (bad != NULL) {
        m->st.dropped++;
        gw_log(GW_WARN, "dropped a malformed answer from %s to function 0x%02x: %s", up_name(m),
               r->adu[MBSC_MBAP_BYTES], bad);
        leave(m);
        return; /* the request times out */
    }
    m->flight[i] = NULL;
    m->n_flight--;
    tid_release(m, tid);
    m->st.answered++;
    if (r->origin != 0)
        answer_upstream(m, r, adu, len);
    else
        req_free(r);
    pump(m);
    leave(m);
}

static void on_up(void *user)
{
    struct gw_mux *m = user;

    enter(m);
    pump(m);
    leave(m);
}

void gw_mux_shutdown(struct gw_mux *m, uint8_t code)
{
    unsigned i;

    enter(m);
    m->up = NULL; /* nothing goes out any more */
    for (i = 0; i < m->cfg.max_in_flight; i++) {
        struct gw_req *r = m->flight[i];

        if (r == NULL)
            continue;
        m->flight[i] = NULL;
        m->n_flight--;
        m->st.timed_out++;
        /* It left: the PLC may or may not act on it. */
        if (r->origin != 0)
            answer_exception(m, r, MBSC_EXC_GATEWAY_TARGET_FAILED);
        else
            req_free(r);
    }
    fail_queued(m, code);
    leave(m);
}

/*
 * The upstream says no answer will come to the request with tid: it gets
 * code.  Its id is free again at once, since the upstream guarantees that
 * nothing with it will follow.  Not in flight any more (it timed out here
 * first, or its requester left): nothing to do.
 */
static void on_failed(void *user, uint16_t tid, uint8_t code)
{
    struct gw_mux *m = user;
    struct gw_req *r;
    unsigned i;

    enter(m);
    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL && m->flight[i]->up_tid == tid)
            break;
    if (i < m->cfg.max_in_flight) {
        r = m->flight[i];
        m->flight[i] = NULL;
        m->n_flight--;
        tid_release(m, tid);
        m->st.timed_out++;
        if (r->origin != 0)
            answer_exception(m, r, code);
        else
            req_free(r);
        pump(m);
    }
    leave(m);
}

/* The upstream has room again after refusing a send: what waits may go. */
static void on_room(void *user)
{
    struct gw_mux *m = user;

    enter(m);
    pump(m);
    leave(m);
}

static void on_down(void *user, int was_ready, const char *why)
{
    struct gw_mux *m = user;
    unsigned i;

    enter(m);
    for (i = 0; i < m->cfg.max_in_flight; i++) {
        struct gw_req *r = m->flight[i];

        if (r == NULL)
            continue;
        m->flight[i] = NULL;
        m->n_flight--;
        m->st.timed_out++;
        if (r->origin != 0)
            answer_exception(m, r, MBSC_EXC_GATEWAY_TARGET_FAILED);
        else
            req_free(r);
    }
    /* Nothing sent on the connection that ended can be answered on the next one. */
    memset(m->tid_taken, 0, sizeof m->tid_taken);
    /* The upstream has logged it (upstream.c). */
    (void)why;
    if (!was_ready)
        fail_queued(m, m->cfg.unreachable_code);
    leave(m);
}

/* One event of the upstream's: the answers it brings are delivered at its end. */
static void on_begin(void *user)
{
    enter(user);
}

static void on_end(void *user)
{
    leave(user);
}

struct gw_upstream_hooks gw_mux_hooks(struct gw_mux *m)
{
    struct gw_upstream_hooks h;

    h.user = m;
    h.answer = on_answer;
    h.up = on_up;
    h.down = on_down;
    h.room = on_room;
    h.failed = on_failed;
    h.begin = on_begin;
    h.end = on_end;
    return h;
}

/* ---- time ---- */

/* Queued requests of every origin that are due get 0B; emptied entries go. */
static void expire_queued(struct gw_mux *m, int64_t now_ns)
{
    struct gw_group *g, *gp = NULL, *gnext;

    for (g = m->rr_head; g != NULL; g = gnext) {
        struct gw_origin *o, *op = NULL, *onext;

        gnext = g->next;
        for (o = g->head; o != NULL; o = onext) {
            onext = o->next;
            /* An origin's requests keep their order: only its head can be due first. */
            while (o->head != NULL && now_ns >= o->head->due_ns) {
                m->st.timed_out++;
                answer_exception(m, queue_take(m, o), MBSC_EXC_GATEWAY_TARGET_FAILED);
            }
            if (o->n == 0) {
                unlink_origin(g, o, op);
                free(o);
            } else {
                op = o;
            }
        }
        if (g->n == 0) {
            unlink_group(m, g, gp);
            free(g);
        } else {
            gp = g;
        }
    }
}

void gw_mux_tick(struct gw_mux *m, int64_t now_ns)
{
    unsigned i;

    enter(m);
    m->now_ns = now_ns;
    for (i = 0; i < m->cfg.max_in_flight; i++) {
        struct gw_req *r = m->flight[i];

        if (r == NULL || now_ns < r->due_ns)
            continue;
        /* Its id stays taken: the answer may still come, on this connection. */
        m->flight[i] = NULL;
        m->n_flight--;
        m->st.timed_out++;
        if (!m->cfg.quiet_timeouts)
            gw_log(GW_WARN, "no answer from %s within %u ms to function 0x%02x: exception 0x0B",
                   up_name(m), m->cfg.timeout_ms, r->adu[MBSC_MBAP_BYTES]);
        if (r->origin != 0)
            answer_exception(m, r, MBSC_EXC_GATEWAY_TARGET_FAILED);
        else
            req_free(r);
    }
    expire_queued(m, now_ns);
    log_unlogged_drops(m);
    pump(m);
    leave(m);
}

int gw_mux_timeout(const struct gw_mux *m, int64_t now_ns)
{
    const struct gw_group *g;
    int t = -1;
    unsigned i;

    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL)
            t = gw_min_timeout(t, gw_ms_until(m->flight[i]->due_ns, now_ns));
    for (g = m->rr_head; g != NULL; g = g->next) {
        const struct gw_origin *o;

        for (o = g->head; o != NULL; o = o->next)
            t = gw_min_timeout(t, gw_ms_until(o->head->due_ns, now_ns));
    }
    if (m->drop_unlogged > 0)
        t = gw_min_timeout(t, gw_ms_until(m->drop_log_at, now_ns));
    return t;
}

void gw_mux_get_stats(const struct gw_mux *m, struct gw_mux_stats *st)
{
    *st = m->st;
}
