/* SPDX-License-Identifier: ISC */
/*
 * loop.h - the gateway's one event loop: descriptors, timers and work at
 * the end of a turn (time itself is clock.h's).
 *
 * Every part of the gateway (listeners, masters, local clients, upstreams,
 * the control socket, signals) registers what it waits for here, with a
 * callback and its own data, as in redis's ae.h; the loop knows nothing of
 * Modbus or mbsc and never calls up into a mode.  No descriptor is found
 * by its position in an array.
 *
 * One turn: wait (epoll) until a descriptor is ready or the earliest timer
 * is due; call the callbacks of the ready descriptors, then of the due
 * timers, then the work deferred during the turn.  The rule that keeps
 * callbacks from freeing what another callback is walking: a watch or a
 * timer removed during a turn is only marked, and freed after the turn;
 * a callback that wants to free its own object (a connection that ended)
 * does it with gw_loop_defer(), never from inside a walk.
 *
 * Single-threaded; only signals.c's handler touches anything
 * asynchronously, and that only through its self-pipe.
 */
#ifndef MBSC_GATEWAY_LOOP_H
#define MBSC_GATEWAY_LOOP_H

#include <stddef.h>
#include <stdint.h>

/* Events of a watch: what to wait for, and what happened. */
#define GW_IO_IN  0x1u /* readable (for a listener: a connection waits) */
#define GW_IO_OUT 0x2u /* writable (for a connect in progress: it finished) */
#define GW_IO_ERR                                                                                  \
    0x4u /* error or hang-up: reported whatever was asked; read or write to learn which */

struct gw_loop;
struct gw_watch;
struct gw_timer;

typedef void (*gw_io_fn)(void *data, unsigned events);
typedef void (*gw_timer_fn)(void *data);
typedef void (*gw_task_fn)(void *data);

/* A new loop, or NULL with why (out of memory, no epoll descriptor). */
struct gw_loop *gw_loop_new(char *why, size_t why_len);
/* Free the loop and whatever watches and timers are left (their data is the owners'). */
void gw_loop_free(struct gw_loop *l);

/*
 * Watch fd (owned by the caller, who closes it after gw_watch_remove) for
 * events; fn(data, happened) is called when some are ready.  NULL on
 * failure with errno set (ENOMEM, or epoll_ctl's error).
 */
struct gw_watch *gw_watch_add(struct gw_loop *l, int fd, unsigned events, gw_io_fn fn, void *data);
/* Wait for other events from now on (a no-op when they are the same); 0 or -1 with errno. */
int gw_watch_set(struct gw_watch *w, unsigned events);
unsigned gw_watch_events(const struct gw_watch *w);
/* Stop watching; no callback comes after this, even one already ready this turn.  NULL is allowed.
 */
void gw_watch_remove(struct gw_watch *w);

/* A timer, disarmed; NULL when out of memory. */
struct gw_timer *gw_timer_new(struct gw_loop *l, gw_timer_fn fn, void *data);
/* Call fn once at due_ns (CLOCK_MONOTONIC, gw_now_ns); re-arming replaces the time. */
void gw_timer_at(struct gw_timer *t, int64_t due_ns);
/* The same, ms milliseconds from now; ms < 0 disarms. */
void gw_timer_in(struct gw_timer *t, int ms);
void gw_timer_disarm(struct gw_timer *t);
int gw_timer_armed(const struct gw_timer *t);
/* Disarm and free (after the turn, so a timer may free itself); NULL is allowed. */
void gw_timer_free(struct gw_timer *t);

/*
 * Run fn(data) once after the callbacks of this turn (or of the next, when
 * called between turns): closing and freeing go here.  -1 when out of
 * memory, in which case the caller must not lose the work: it may retry
 * or do it itself if it is safe where it stands.
 */
int gw_loop_defer(struct gw_loop *l, gw_task_fn fn, void *data);

/*
 * Call fn(data) before every wait, e.g. to re-arm a timer from a library's
 * "next timeout" query.  Up to a handful per loop; -1 when full or out of
 * memory.
 */
int gw_loop_before_wait(struct gw_loop *l, gw_task_fn fn, void *data);

/*
 * Call fn(data) once, as the last thing before the loop sleeps (after the
 * deferred work): for sends kept back during the turn, so that the process
 * woken by them finds this one asleep instead of waiting for its CPU.
 * -1 when out of memory (the caller sends at once instead).
 * gw_loop_forget_before_sleep() drops what is planned for data (freed).
 */
int gw_loop_before_sleep(struct gw_loop *l, gw_task_fn fn, void *data);
void gw_loop_forget_before_sleep(struct gw_loop *l, const void *data);

/*
 * Turn until gw_loop_stop().  Returns the status given to gw_loop_stop(),
 * or -1 after a failure of epoll_wait itself (logged by the caller:
 * gw_loop_error() says what).
 */
int gw_loop_run(struct gw_loop *l);
void gw_loop_stop(struct gw_loop *l, int status);
const char *gw_loop_error(const struct gw_loop *l);

#endif /* MBSC_GATEWAY_LOOP_H */
