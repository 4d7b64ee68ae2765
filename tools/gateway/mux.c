/* SPDX-License-Identifier: ISC */
/*
 * mux.c - many requesters over one upstream connection.
 *
 * Most PLCs accept very few TCP clients, and many answer one request at a
 * time, so every master of the gateway shares one connection:
 *
 *  - each request gets a transaction id of the gateway's own on the way
 *    up (a counter that skips ids still in flight), and its answer goes
 *    back to its requester with the requester's id restored; unit ids pass
 *    unchanged;
 *  - at most max_in_flight requests are upstream at once (default 1);
 *  - the others wait in one queue per requester, served round-robin, so
 *    that a requester that pipelines cannot starve the others; a full
 *    queue answers exception 06 (server device busy);
 *  - a request not answered within timeout_ms of its arrival is answered
 *    with exception 0B (gateway target device failed to respond); its id
 *    is retired, so a late answer finds no request and is dropped;
 *  - when the upstream cannot be reached, queued and new requests are
 *    answered with unreachable_code (0A, gateway path unavailable, in
 *    server mode) until a connection is ready again; requests in flight on
 *    a connection that breaks get 0B (the PLC may or may not have acted);
 *  - an answer that does not fit its request (adu_check.c) is dropped and
 *    logged, never forwarded: its request times out.
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "sock/sock.h"
#include "gw.h"
#include "internal.h"

struct gw_req {
    uint64_t origin;
    uint16_t up_tid;
    int64_t due_ns;
    size_t len;
    uint8_t adu[GW_MAX_ADU]; /* as the requester sent it */
    struct gw_req *next;     /* in its origin's queue */
};

/* A requester with queued requests (only those have an entry). */
struct gw_origin {
    uint64_t id;
    struct gw_req *head, *tail;
    unsigned n;
    struct gw_origin *next; /* round-robin ring order (a list: head is served next) */
};

struct gw_mux {
    struct gw_mux_config cfg;
    gw_reply_fn reply;
    void *user;
    struct gw_upstream *up;
    struct gw_req **flight; /* cfg.max_in_flight slots */
    unsigned n_flight;
    struct gw_origin *rr_head, *rr_tail;
    unsigned n_queued;
    uint16_t next_tid;
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
    m->flight = calloc(m->cfg.max_in_flight, sizeof *m->flight);
    if (m->flight == NULL) {
        free(m);
        return NULL;
    }
    m->reply = reply;
    m->user = user;
    m->next_tid = 1;
    return m;
}

static void req_free(struct gw_req *r)
{
    sodium_memzero(r, sizeof *r); /* process data: not secret, but not kept either */
    free(r);
}

void gw_mux_free(struct gw_mux *m)
{
    unsigned i;

    if (m == NULL)
        return;
    while (m->rr_head != NULL) {
        struct gw_origin *o = m->rr_head;

        m->rr_head = o->next;
        while (o->head != NULL) {
            struct gw_req *r = o->head;

            o->head = r->next;
            req_free(r);
        }
        free(o);
    }
    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL)
            req_free(m->flight[i]);
    free(m->flight);
    free(m);
}

void gw_mux_attach(struct gw_mux *m, struct gw_upstream *u)
{
    m->up = u;
}

/* Answer r's requester with exception code, and free r. */
static void answer_exception(struct gw_mux *m, struct gw_req *r, uint8_t code)
{
    uint8_t ex[9];
    size_t n = gw_exception(r->adu, code, ex);

    m->reply(m->user, r->origin, ex, n);
    req_free(r);
}

static struct gw_origin *find_origin(const struct gw_mux *m, uint64_t id, struct gw_origin **prev)
{
    struct gw_origin *o, *p = NULL;

    for (o = m->rr_head; o != NULL; p = o, o = o->next)
        if (o->id == id)
            break;
    if (prev != NULL)
        *prev = p;
    return o;
}

static void unlink_origin(struct gw_mux *m, struct gw_origin *o, struct gw_origin *prev)
{
    if (prev != NULL)
        prev->next = o->next;
    else
        m->rr_head = o->next;
    if (m->rr_tail == o)
        m->rr_tail = prev;
}

unsigned gw_mux_pending(const struct gw_mux *m, uint64_t origin)
{
    const struct gw_origin *o = find_origin(m, origin, NULL);
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
        struct gw_origin *o = m->rr_head;

        m->rr_head = o->next;
        while (o->head != NULL) {
            struct gw_req *r = o->head;

            o->head = r->next;
            m->n_queued--;
            m->st.unreachable++;
            answer_exception(m, r, code);
        }
        free(o);
    }
    m->rr_tail = NULL;
}

static int tid_in_flight(const struct gw_mux *m, uint16_t tid)
{
    unsigned i;

    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL && m->flight[i]->up_tid == tid)
            return 1;
    return 0;
}

/* Take the next request round-robin: the head origin's first, then it goes to the back. */
static struct gw_req *pop_next(struct gw_mux *m)
{
    struct gw_origin *o = m->rr_head;
    struct gw_req *r;

    if (o == NULL)
        return NULL;
    r = o->head;
    o->head = r->next;
    if (o->head == NULL)
        o->tail = NULL;
    o->n--;
    m->n_queued--;
    m->rr_head = o->next;
    if (m->rr_tail == o)
        m->rr_tail = NULL;
    o->next = NULL;
    if (o->n == 0) {
        free(o);
    } else if (m->rr_tail != NULL) {
        m->rr_tail->next = o;
        m->rr_tail = o;
    } else {
        m->rr_head = m->rr_tail = o;
    }
    r->next = NULL;
    return r;
}

/* Put r back at the front of its origin's queue (the upstream had no room). */
static int push_front(struct gw_mux *m, struct gw_req *r)
{
    struct gw_origin *o = find_origin(m, r->origin, NULL);

    if (o == NULL) {
        o = calloc(1, sizeof *o);
        if (o == NULL)
            return -1;
        o->id = r->origin;
        o->next = m->rr_head;
        m->rr_head = o;
        if (m->rr_tail == NULL)
            m->rr_tail = o;
    }
    r->next = o->head;
    o->head = r;
    if (o->tail == NULL)
        o->tail = r;
    o->n++;
    m->n_queued++;
    return 0;
}

/* Send queued requests while there is a free slot and the upstream takes them. */
static void pump(struct gw_mux *m)
{
    while (m->up != NULL && gw_upstream_state(m->up) == GW_UP_READY &&
           m->n_flight < m->cfg.max_in_flight && m->n_queued > 0) {
        struct gw_req *r = pop_next(m);
        uint8_t out[GW_MAX_ADU];
        unsigned slot;
        int rc;

        for (slot = 0; m->flight[slot] != NULL; slot++) {
        }
        do {
            r->up_tid = m->next_tid++;
        } while (tid_in_flight(m, r->up_tid));
        memcpy(out, r->adu, r->len);
        mbsc_store16_be(out, r->up_tid);
        m->flight[slot] = r;
        m->n_flight++;
        rc = gw_upstream_send(m->up, out, r->len);
        if (rc == MBSC_ERR_WOULD_BLOCK && m->flight[slot] == r) {
            m->flight[slot] = NULL;
            m->n_flight--;
            if (push_front(m, r) != 0)
                answer_exception(m, r, GW_EXC_BUSY);
            return;
        }
        if (rc == MBSC_OK && m->flight[slot] == r)
            m->st.forwarded++;
    }
}

int gw_mux_submit(struct gw_mux *m, uint64_t origin, const uint8_t *adu, size_t len, int64_t now_ns)
{
    struct gw_origin *o;
    struct gw_req *r;

    if (len > GW_MAX_ADU)
        return MBSC_ERR_INVALID_ARG;
    r = calloc(1, sizeof *r);
    if (r == NULL)
        return MBSC_ERR_NOMEM;
    r->origin = origin;
    r->len = len;
    memcpy(r->adu, adu, len);
    r->due_ns = now_ns + (int64_t)m->cfg.timeout_ms * 1000000;
    if (m->up == NULL || gw_upstream_state(m->up) == GW_UP_BACKOFF) {
        m->st.unreachable++;
        answer_exception(m, r, m->cfg.unreachable_code);
        return MBSC_OK;
    }
    o = find_origin(m, origin, NULL);
    if (o != NULL && o->n >= m->cfg.max_queue) {
        m->st.busy++;
        answer_exception(m, r, GW_EXC_BUSY);
        return MBSC_OK;
    }
    if (o == NULL) {
        o = calloc(1, sizeof *o);
        if (o == NULL) {
            req_free(r);
            return MBSC_ERR_NOMEM;
        }
        o->id = origin;
        if (m->rr_tail != NULL)
            m->rr_tail->next = o;
        else
            m->rr_head = o;
        m->rr_tail = o;
    }
    if (o->tail != NULL)
        o->tail->next = r;
    else
        o->head = r;
    o->tail = r;
    o->n++;
    m->n_queued++;
    pump(m);
    return MBSC_OK;
}

void gw_mux_forget(struct gw_mux *m, uint64_t origin)
{
    struct gw_origin *prev, *o = find_origin(m, origin, &prev);
    unsigned i;

    if (o != NULL) {
        unlink_origin(m, o, prev);
        while (o->head != NULL) {
            struct gw_req *r = o->head;

            o->head = r->next;
            m->n_queued--;
            req_free(r);
        }
        free(o);
    }
    /* In flight: the answer will come; with origin 0 it goes nowhere. */
    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL && m->flight[i]->origin == origin)
            m->flight[i]->origin = 0;
}

/* ---- upstream hooks ---- */

static void on_answer(void *user, const uint8_t *adu, size_t len)
{
    struct gw_mux *m = user;
    uint16_t tid = mbsc_load16_be(adu);
    struct gw_req *r = NULL;
    const char *bad;
    unsigned i;

    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL && m->flight[i]->up_tid == tid)
            break;
    if (i == m->cfg.max_in_flight) {
        m->st.dropped++;
        gw_log(GW_WARN,
               "dropped an answer from %s with transaction id %u: no request waits "
               "for it (late, after its timeout, or never asked)",
               gw_upstream_name(m->up), tid);
        return;
    }
    r = m->flight[i];
    bad = gw_check_answer(r->adu, r->len, adu, len);
    if (bad != NULL) {
        m->st.dropped++;
        gw_log(GW_WARN, "dropped a malformed answer from %s to function 0x%02x: %s",
               gw_upstream_name(m->up), r->adu[GW_MBAP], bad);
        return; /* the request times out */
    }
    m->flight[i] = NULL;
    m->n_flight--;
    m->st.answered++;
    if (r->origin != 0) {
        uint8_t out[GW_MAX_ADU];

        memcpy(out, adu, len);
        memcpy(out, r->adu, 2); /* the requester's own transaction id */
        m->reply(m->user, r->origin, out, len);
        sodium_memzero(out, sizeof out);
    }
    req_free(r);
    pump(m);
}

static void on_up(void *user)
{
    struct gw_mux *m = user;

    gw_log(GW_INFO, "upstream %s connected", gw_upstream_name(m->up));
    pump(m);
}

static void on_down(void *user, int was_ready, const char *why)
{
    struct gw_mux *m = user;
    unsigned i;

    for (i = 0; i < m->cfg.max_in_flight; i++) {
        struct gw_req *r = m->flight[i];

        if (r == NULL)
            continue;
        m->flight[i] = NULL;
        m->n_flight--;
        m->st.timed_out++;
        if (r->origin != 0)
            answer_exception(m, r, GW_EXC_TARGET_FAILED);
        else
            req_free(r);
    }
    if (was_ready) {
        gw_log(GW_WARN, "upstream %s lost: %s; reconnecting", gw_upstream_name(m->up), why);
    } else {
        gw_log(GW_WARN, "upstream %s unreachable: %s", gw_upstream_name(m->up), why);
        fail_queued(m, m->cfg.unreachable_code);
    }
}

struct gw_upstream_hooks gw_mux_hooks(struct gw_mux *m)
{
    struct gw_upstream_hooks h;

    h.user = m;
    h.answer = on_answer;
    h.up = on_up;
    h.down = on_down;
    return h;
}

/* ---- time ---- */

void gw_mux_tick(struct gw_mux *m, int64_t now_ns)
{
    struct gw_origin *o, *prev = NULL, *next;
    unsigned i;

    for (i = 0; i < m->cfg.max_in_flight; i++) {
        struct gw_req *r = m->flight[i];

        if (r == NULL || now_ns < r->due_ns)
            continue;
        m->flight[i] = NULL;
        m->n_flight--;
        m->st.timed_out++;
        gw_log(GW_WARN, "no answer from %s within %u ms to function 0x%02x: exception 0x0B",
               m->up != NULL ? gw_upstream_name(m->up) : "upstream", m->cfg.timeout_ms,
               r->adu[GW_MBAP]);
        if (r->origin != 0)
            answer_exception(m, r, GW_EXC_TARGET_FAILED);
        else
            req_free(r);
    }
    /* Queued requests keep their order, so only each queue's head can be due first. */
    for (o = m->rr_head; o != NULL; o = next) {
        next = o->next;
        while (o->head != NULL && now_ns >= o->head->due_ns) {
            struct gw_req *r = o->head;

            o->head = r->next;
            if (o->head == NULL)
                o->tail = NULL;
            o->n--;
            m->n_queued--;
            m->st.timed_out++;
            answer_exception(m, r, GW_EXC_TARGET_FAILED);
        }
        if (o->n == 0) {
            unlink_origin(m, o, prev);
            free(o);
        } else {
            prev = o;
        }
    }
    pump(m);
}

int gw_mux_timeout(const struct gw_mux *m, int64_t now_ns)
{
    const struct gw_origin *o;
    int t = -1;
    unsigned i;

    for (i = 0; i < m->cfg.max_in_flight; i++)
        if (m->flight[i] != NULL)
            t = gw_min_timeout(t, gw_ms_until(m->flight[i]->due_ns, now_ns));
    for (o = m->rr_head; o != NULL; o = o->next)
        t = gw_min_timeout(t, gw_ms_until(o->head->due_ns, now_ns));
    return t;
}

void gw_mux_get_stats(const struct gw_mux *m, struct gw_mux_stats *st)
{
    *st = m->st;
}
