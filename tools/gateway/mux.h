/* SPDX-License-Identifier: ISC */
/*
 * mux.h - many requesters over one upstream (mux.c): the gateway's own
 * transaction ids, N requests in flight, fair queues, timeouts.
 */
#ifndef MBSC_GATEWAY_MUX_H
#define MBSC_GATEWAY_MUX_H

#include <stddef.h>
#include <stdint.h>

#include "upstream.h"

/*
 * Re-entrancy (the rule both modes rely on): the multiplexer never calls
 * reply while it walks its own queues, flight slots or groups.  Answers,
 * its own and upstream's, go to an outbox first; the outermost call into
 * the multiplexer (gw_mux_submit, gw_mux_forget, gw_mux_tick, and the
 * upstream hooks) delivers them one by one just before it returns, when
 * nothing of the multiplexer is being walked.  So reply may call
 * gw_mux_forget (its requester is gone) and gw_mux_submit (the next
 * request) on the same multiplexer: those calls only change queues and
 * the outbox, and what they answer is delivered by the same outermost
 * call.  reply must not call gw_mux_free.  The caller's own lists are the
 * caller's to protect: a reply that finds its requester gone marks it and
 * frees it at the end of the loop turn (client_mode.c), or the library
 * does (mbsc_server defers the free of a closed connection).
 */

struct gw_mux;

/* An answer (or an exception made by the gateway) for requester origin. */
typedef void (*gw_reply_fn)(void *user, uint64_t origin, const uint8_t *adu, size_t len);

struct gw_mux_config {
    unsigned max_in_flight;   /* >= 1 */
    unsigned max_queue;       /* requests queued per group, >= 1 */
    unsigned timeout_ms;      /* from submission to answer */
    uint8_t unreachable_code; /* exception when the upstream cannot be reached */
    /*
     * 1: no log line per request that times out (a serial line reports a
     * unit that does not answer once, and counts the rest).
     */
    int quiet_timeouts;
};

/*
 * dropped counts every answer from upstream that went to nobody: late
 * (its request had timed out), malformed, or for no request sent; late
 * counts the first kind alone.
 */
struct gw_mux_stats {
    uint64_t forwarded, answered, timed_out, unreachable, busy, dropped, late;
};

/* A multiplexer over u (borrowed); it sets u's hooks to itself. */
struct gw_mux *gw_mux_new(const struct gw_mux_config *cfg, gw_reply_fn reply, void *user);
/* The hooks to give gw_upstream_new (they point to mux). */
struct gw_upstream_hooks gw_mux_hooks(struct gw_mux *mux);
void gw_mux_attach(struct gw_mux *mux, struct gw_upstream *u);
void gw_mux_free(struct gw_mux *mux);
/*
 * The route behind mux is going away (a reload removed it): every queued
 * request is answered with code now, every request in flight with 0B (it
 * left: the PLC may or may not act on it), and nothing is sent upstream
 * any more.  The multiplexer may then be freed, outside a walk.
 */
void gw_mux_shutdown(struct gw_mux *mux, uint8_t code);

/*
 * One request (a checked ADU) from origin, which belongs to group (the
 * requester's identity: server mode, the master's key; client mode, the
 * local client itself).  Groups take turns upstream, and so do the
 * origins of one group; max_queue counts a group's queued requests.
 * Answered through reply, at once (upstream unreachable, queue full) or
 * later.  MBSC_OK or MBSC_ERR_NOMEM.
 */
int gw_mux_submit(struct gw_mux *mux, uint64_t origin, uint64_t group, const uint8_t *adu,
                  size_t len, int64_t now_ns);
/* The origin is gone: forget its queued requests, drop its answers. */
void gw_mux_forget(struct gw_mux *mux, uint64_t origin);
/* Requests of origin queued or in flight. */
unsigned gw_mux_pending(const struct gw_mux *mux, uint64_t origin);
/* Requests queued or in flight, all origins. */
unsigned gw_mux_total(const struct gw_mux *mux);
/* Expire requests, send what may go. */
void gw_mux_tick(struct gw_mux *mux, int64_t now_ns);
int gw_mux_timeout(const struct gw_mux *mux, int64_t now_ns);
void gw_mux_get_stats(const struct gw_mux *mux, struct gw_mux_stats *st);

#endif /* MBSC_GATEWAY_MUX_H */
