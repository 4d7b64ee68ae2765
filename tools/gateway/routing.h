/* SPDX-License-Identifier: ISC */
/*
 * routing.h - the live routes (routing.c): for each target of the route
 * table, one upstream and one multiplexer, and the unit ids that go there.
 *
 * Routes to one target share its connection (many devices take one client
 * only).  Each path has its own connection, in-flight limit, queues,
 * backoff, counters and status line.  A request goes to the path of its
 * unit id; unit 0 and the units no route names go to the default route
 * (--upstream); with no default, they are answered with exception 0A
 * (gateway path unavailable).
 */
#ifndef MBSC_GATEWAY_ROUTING_H
#define MBSC_GATEWAY_ROUTING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "loop.h"
#include "mux.h"
#include "route.h"
#include "status_fmt.h"
#include "upstream.h"

struct gw_path_settings {
    unsigned max_in_flight, max_queue, request_timeout_ms;
    uint8_t unreachable_code; /* while a path's upstream cannot be reached */
    struct gw_upstream_settings up;
};

struct gw_routing;

/*
 * Paths for every target of t: plain Modbus/TCP when cfg is NULL,
 * otherwise mbsc sessions on cfg (borrowed, see gw_routing_set_config).
 * Answers go to reply (the multiplexer's rules, mux.h: never while one of
 * its lists is walked).  NULL with why.
 */
struct gw_routing *gw_routing_new(struct gw_loop *loop, const struct gw_route_table *t,
                                  const mbsc_config *cfg, const struct gw_path_settings *ps,
                                  gw_reply_fn reply, void *user, char *why, size_t why_len);
void gw_routing_free(struct gw_routing *r);

/*
 * One checked request of origin (of group, mux.h) to the path of its unit
 * id (adu[6]).  No path: answered at once with 0A through reply.
 * MBSC_OK or MBSC_ERR_NOMEM.
 */
int gw_routing_submit(struct gw_routing *r, uint64_t origin, uint64_t group, const uint8_t *adu,
                      size_t len);
/* Whether a request for unit would find a path. */
int gw_routing_has_path(const struct gw_routing *r, uint8_t unit);
/* The origin is gone: every path forgets it. */
void gw_routing_forget(struct gw_routing *r, uint64_t origin);
/* Requests of origin queued or in flight, on every path. */
unsigned gw_routing_pending(const struct gw_routing *r, uint64_t origin);
/* Requests queued or in flight, all origins, all paths. */
unsigned gw_routing_total(const struct gw_routing *r);

/* Client mode: the next mbsc session of every path uses cfg. */
void gw_routing_set_config(struct gw_routing *r, const mbsc_config *cfg);
/* The next connection of every mbaps:// path, and every new path, uses tls (a reload). */
void gw_routing_set_tls(struct gw_routing *r, const struct gw_tls *tls);

/*
 * A reload: make the paths those of t, all or nothing.  Paths whose target
 * is still routed keep their connection, queues and counters; new targets
 * get a path; a target no longer routed has its queued requests answered
 * with 0A and its requests in flight with 0B, and is closed.  0, or -1
 * with why and nothing changed.
 */
int gw_routing_reload(struct gw_routing *r, const struct gw_route_table *t, char *why,
                      size_t why_len);

/*
 * The paths in the status view.  Text: one line per path, the default
 * route's starting "upstream TARGET", the others "route UNITS TARGET";
 * then what it is, its state and its counters.  JSON: an array of one
 * object per path.  Prometheus: the families mbsc_gateway_route_*, one
 * sample per path, labelled route (the units, or "default") and target.
 */
void gw_routing_status(const struct gw_routing *r, enum gw_status_format fmt, FILE *out);

#endif /* MBSC_GATEWAY_ROUTING_H */
