/* SPDX-License-Identifier: ISC */
/*
 * loop.c - the gateway's event loop (loop.h): epoll, a short list of
 * timers and deferred work.
 *
 * Timers are few (a handful per route, one per control client, one for
 * the mbsc server), so a list scanned once a turn beats a heap.  A watch
 * that waits for nothing is taken out of the epoll set, so that a socket
 * the gateway does not read for now (back-pressure) cannot wake it with a
 * hang-up over and over; it is put back when it waits for something again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "clock.h"
#include "loop.h"

#define EVENTS_PER_WAIT 64
#define BEFORE_WAIT_MAX 8

struct gw_watch {
    struct gw_loop *l;
    int fd;
    unsigned events;
    int in_set; /* registered with epoll (events != 0) */
    int dead;
    gw_io_fn fn;
    void *data;
    struct gw_watch *next_dead;
};

struct gw_timer {
    struct gw_loop *l;
    int64_t due_ns;
    int armed, firing, dead;
    gw_timer_fn fn;
    void *data;
    struct gw_timer *prev, *next;
};

struct task {
    gw_task_fn fn;
    void *data;
};

struct hook {
    gw_task_fn fn;
    void *data;
};

struct gw_loop {
    int epfd;
    struct gw_timer *timers; /* every timer, armed or not */
    struct gw_watch *dead_watches;
    int dead_timers;
    struct task *tasks;
    size_t n_tasks, cap_tasks;
    struct task *last; /* gw_loop_before_sleep */
    size_t n_last, cap_last;
    struct hook before[BEFORE_WAIT_MAX];
    size_t n_before;
    int stopped, status;
    char error[128];
};

/* ---- the loop ---- */

struct gw_loop *gw_loop_new(char *why, size_t why_len)
{
    struct gw_loop *l = calloc(1, sizeof *l);

    if (l == NULL) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        snprintf(why, why_len, "epoll_create1: %s", strerror(errno));
        free(l);
        return NULL;
    }
    return l;
}

static void sweep(struct gw_loop *l)
{
    struct gw_timer *t, *next;

    while (l->dead_watches != NULL) {
        struct gw_watch *w = l->dead_watches;

        l->dead_watches = w->next_dead;
        free(w);
    }
    if (l->dead_timers == 0)
        return;
    for (t = l->timers; t != NULL; t = next) {
        next = t->next;
        if (!t->dead)
            continue;
        if (t->prev != NULL)
            t->prev->next = t->next;
        else
            l->timers = t->next;
        if (t->next != NULL)
            t->next->prev = t->prev;
        free(t);
    }
    l->dead_timers = 0;
}

void gw_loop_free(struct gw_loop *l)
{
    if (l == NULL)
        return;
    sweep(l);
    while (l->timers != NULL) {
        struct gw_timer *t = l->timers;

        l->timers = t->next;
        free(t);
    }
    free(l->tasks);
    free(l->last);
    close(l->epfd);
    free(l);
}

/* ---- watches ---- */

static uint32_t epoll_events(unsigned events)
{
    return (events & GW_IO_IN ? (uint32_t)EPOLLIN : 0u) |
           (events & GW_IO_OUT ? (uint32_t)EPOLLOUT : 0u);
}

/* Make the epoll set agree with w->events. */
static int sync_set(struct gw_watch *w)
{
    struct epoll_event ev;
    int op;

    memset(&ev, 0, sizeof ev);
    ev.events = epoll_events(w->events);
    ev.data.ptr = w;
    if (w->events == 0) {
        if (!w->in_set)
            return 0;
        op = EPOLL_CTL_DEL;
    } else {
        op = w->in_set ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    }
    if (epoll_ctl(w->l->epfd, op, w->fd, &ev) != 0)
        return -1;
    w->in_set = w->events != 0;
    return 0;
}

struct gw_watch *gw_watch_add(struct gw_loop *l, int fd, unsigned events, gw_io_fn fn, void *data)
{
    struct gw_watch *w = calloc(1, sizeof *w);

    if (w == NULL)
        return NULL;
    w->l = l;
    w->fd = fd;
    w->events = events & (GW_IO_IN | GW_IO_OUT);
    w->fn = fn;
    w->data = data;
    if (sync_set(w) != 0) {
        int e = errno;

        free(w);
        errno = e;
        return NULL;
    }
    return w;
}

int gw_watch_set(struct gw_watch *w, unsigned events)
{
    unsigned old = w->events;

    events &= GW_IO_IN | GW_IO_OUT;
    if (w->dead || events == old)
        return 0;
    w->events = events;
    if (sync_set(w) != 0) {
        w->events = old;
        return -1;
    }
    return 0;
}

unsigned gw_watch_events(const struct gw_watch *w)
{
    return w->events;
}

void gw_watch_remove(struct gw_watch *w)
{
    if (w == NULL || w->dead)
        return;
    if (w->in_set)
        (void)epoll_ctl(w->l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
    w->in_set = 0;
    w->dead = 1;
    w->next_dead = w->l->dead_watches;
    w->l->dead_watches = w;
}

/* ---- timers ---- */

struct gw_timer *gw_timer_new(struct gw_loop *l, gw_timer_fn fn, void *data)
{
    struct gw_timer *t = calloc(1, sizeof *t);

    if (t == NULL)
        return NULL;
    t->l = l;
    t->fn = fn;
    t->data = data;
    t->next = l->timers;
    if (l->timers != NULL)
        l->timers->prev = t;
    l->timers = t;
    return t;
}

void gw_timer_at(struct gw_timer *t, int64_t due_ns)
{
    if (t->dead)
        return;
    t->due_ns = due_ns;
    t->armed = 1;
    t->firing = 0; /* a new time: not part of the walk under way */
}

void gw_timer_in(struct gw_timer *t, int ms)
{
    if (ms < 0)
        gw_timer_disarm(t);
    else
        gw_timer_at(t, gw_now_ns() + (int64_t)ms * 1000000);
}

void gw_timer_disarm(struct gw_timer *t)
{
    t->armed = 0;
    t->firing = 0;
}

int gw_timer_armed(const struct gw_timer *t)
{
    return t->armed;
}

void gw_timer_free(struct gw_timer *t)
{
    if (t == NULL || t->dead)
        return;
    gw_timer_disarm(t);
    t->dead = 1;
    t->l->dead_timers = 1;
}

/* Milliseconds until the earliest armed timer (-1: none). */
static int next_timeout(const struct gw_loop *l, int64_t now)
{
    const struct gw_timer *t;
    int ms = -1;

    for (t = l->timers; t != NULL; t = t->next)
        if (t->armed && !t->dead)
            ms = gw_min_timeout(ms, gw_ms_until(t->due_ns, now));
    return ms;
}

/*
 * Fire what is due now, earliest first (a late turn may find several due).
 * The timers due at the start are marked first, so that a callback arming
 * a timer (its own included) for "now" does not make this walk go round
 * for ever: it fires in the next turn.  Arming, disarming or freeing a
 * marked timer unmarks it.
 */
static void fire_timers(struct gw_loop *l)
{
    int64_t now = gw_now_ns();
    struct gw_timer *t;

    for (t = l->timers; t != NULL; t = t->next)
        t->firing = t->armed && !t->dead && t->due_ns <= now;
    for (;;) {
        struct gw_timer *first = NULL;

        for (t = l->timers; t != NULL; t = t->next)
            if (t->firing && (first == NULL || t->due_ns < first->due_ns))
                first = t;
        if (first == NULL)
            return;
        first->firing = 0;
        first->armed = 0;
        first->fn(first->data);
    }
}

/* ---- deferred work ---- */

/* Append fn(data) to a growing list of tasks; -1 when out of memory. */
static int task_push(struct task **list, size_t *n, size_t *cap, gw_task_fn fn, void *data)
{
    if (*n == *cap) {
        size_t grown = *cap != 0 ? 2 * *cap : 16;
        struct task *t = realloc(*list, grown * sizeof *t);

        if (t == NULL)
            return -1;
        *list = t;
        *cap = grown;
    }
    (*list)[*n].fn = fn;
    (*list)[*n].data = data;
    (*n)++;
    return 0;
}

int gw_loop_defer(struct gw_loop *l, gw_task_fn fn, void *data)
{
    return task_push(&l->tasks, &l->n_tasks, &l->cap_tasks, fn, data);
}

/* Tasks may defer more: they run in the same drain, in order. */
static void run_tasks(struct gw_loop *l)
{
    size_t i;

    for (i = 0; i < l->n_tasks; i++) {
        struct task t = l->tasks[i]; /* the array may move under the call */

        t.fn(t.data);
    }
    l->n_tasks = 0;
}

int gw_loop_before_sleep(struct gw_loop *l, gw_task_fn fn, void *data)
{
    return task_push(&l->last, &l->n_last, &l->cap_last, fn, data);
}

void gw_loop_forget_before_sleep(struct gw_loop *l, const void *data)
{
    size_t i;

    for (i = 0; i < l->n_last; i++)
        if (l->last[i].data == data)
            l->last[i].fn = NULL;
}

/* What was kept for the moment before sleeping; it may plan more (for the next turn). */
static void run_last(struct gw_loop *l)
{
    size_t i, n = l->n_last;

    if (n == 0)
        return;
    for (i = 0; i < n; i++) {
        struct task t = l->last[i]; /* the array may move under the call */

        if (t.fn != NULL)
            t.fn(t.data);
    }
    memmove(l->last, l->last + n, (l->n_last - n) * sizeof *l->last);
    l->n_last -= n;
}

int gw_loop_before_wait(struct gw_loop *l, gw_task_fn fn, void *data)
{
    if (l->n_before == BEFORE_WAIT_MAX)
        return -1;
    l->before[l->n_before].fn = fn;
    l->before[l->n_before].data = data;
    l->n_before++;
    return 0;
}

/* ---- turns ---- */

int gw_loop_run(struct gw_loop *l)
{
    struct epoll_event ev[EVENTS_PER_WAIT];

    l->stopped = 0;
    while (!l->stopped) {
        int n, i;
        size_t h;

        for (h = 0; h < l->n_before; h++)
            l->before[h].fn(l->before[h].data);
        run_tasks(l); /* what the hooks deferred, before sleeping on it */
        run_last(l);
        sweep(l);
        if (l->stopped)
            break;
        n = epoll_wait(l->epfd, ev, EVENTS_PER_WAIT,
                       l->n_tasks > 0 ? 0 : next_timeout(l, gw_now_ns()));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(l->error, sizeof l->error, "epoll_wait: %s", strerror(errno));
            return -1;
        }
        for (i = 0; i < n; i++) {
            struct gw_watch *w = ev[i].data.ptr;
            unsigned happened = 0;

            if (w->dead)
                continue; /* removed by an earlier callback of this turn */
            if (ev[i].events & EPOLLIN)
                happened |= GW_IO_IN;
            if (ev[i].events & EPOLLOUT)
                happened |= GW_IO_OUT;
            if (ev[i].events & (EPOLLERR | EPOLLHUP))
                happened |= GW_IO_ERR;
            w->fn(w->data, happened);
            /*
             * More to do in this turn: what was kept back goes now, so that
             * the masters it answers do not wait for the rest of a long turn
             * (the sleep that would hand them the CPU is still far).
             */
            if (i + 1 < n)
                run_last(l);
        }
        fire_timers(l);
        run_tasks(l);
        run_last(l); /* also when a task stopped the loop: nothing kept is lost */
        sweep(l);
    }
    return l->status;
}

void gw_loop_stop(struct gw_loop *l, int status)
{
    l->stopped = 1;
    l->status = status;
}

const char *gw_loop_error(const struct gw_loop *l)
{
    return l->error;
}
