/* SPDX-License-Identifier: ISC */
/*
 * outage.h - when to say that an upstream cannot be reached (outage.c).
 *
 * A PLC switched off for the night, or a server gateway whose allow-list
 * does not list us, fails every reconnection attempt, a few a second at
 * first, one every --reconnect-max later, for hours.  One line per attempt
 * buries everything else; no line at all hides the outage.  So: the first
 * failure is logged at once, with its cause; then one line, with the count
 * of attempts, how long it has lasted and the latest cause, after 10 s,
 * after a further 20 s, 40 s, ... at most one an hour; and one line when a
 * connection is made again.  A cause that changes (the PLC's port now
 * open, but its handshake refused; a serial adapter plugged in, but the
 * gateway's user may not open it) is news: it is logged at the next
 * failure that comes 1 s or more after the last line, whatever the
 * interval has grown to (attempts are at least 100 ms apart and soon
 * --reconnect-max, so a cause that flaps cannot flood the log).  Pure arithmetic on times given by
 * the caller, so that it is tested without waiting.
 */
#ifndef MBSC_GATEWAY_OUTAGE_H
#define MBSC_GATEWAY_OUTAGE_H

#include <stddef.h>
#include <stdint.h>

#define GW_OUTAGE_FIRST_REPEAT_NS ((int64_t)10 * 1000000000)   /* the first "still" line */
#define GW_OUTAGE_MAX_REPEAT_NS   ((int64_t)3600 * 1000000000) /* at most one an hour */
#define GW_OUTAGE_NEWS_GAP_NS     ((int64_t)1000000000)        /* a new cause, after a line */

struct gw_outage {
    int active;          /* attempts have failed since the last connection */
    int64_t since_ns;    /* the first failure */
    uint64_t attempts;   /* failed attempts in this outage */
    uint64_t total;      /* failed attempts ever (for the status view) */
    int64_t next_ns;     /* no "still" line before this */
    int64_t interval_ns; /* the wait before the line after next */
    int64_t logged_ns;   /* the last line */
};

enum gw_outage_say {
    GW_OUTAGE_QUIET = 0, /* counted, not logged */
    GW_OUTAGE_FIRST,     /* the first failure: log it */
    GW_OUTAGE_STILL      /* log "still unreachable after N attempts, T" */
};

/* A failed attempt at now_ns (changed: its cause is not the one last logged): what to log. */
enum gw_outage_say gw_outage_failed(struct gw_outage *o, int64_t now_ns, int changed);

/*
 * A connection was made at now_ns.  1 if it ends an outage (log it once,
 * with *attempts and *lasted_ns), else 0.
 */
int gw_outage_ended(struct gw_outage *o, int64_t now_ns, uint64_t *attempts, int64_t *lasted_ns);

/* A duration for people: "850 ms", "37 s", "12 min", "3 h 5 min", "2 days 4 h". */
void gw_duration_text(int64_t ns, char *buf, size_t len);

#endif /* MBSC_GATEWAY_OUTAGE_H */
