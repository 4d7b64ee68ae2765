/* SPDX-License-Identifier: ISC */
/*
 * check_gw_loop.c - the gateway's event loop (tools/gateway/loop.c): the
 * order of a turn, and the rule that a callback never sees a watch or a
 * timer another callback of the same turn has removed; and the answers
 * kept for the moment before it sleeps (answers_out.c).
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "answers_out.h"
#include "loop.h"

Suite *gw_loop_suite(void);

static struct gw_loop *loop;
static char trace[256];

static void note(const char *what)
{
    strncat(trace, what, sizeof trace - strlen(trace) - 1);
}

static void setup(void)
{
    char why[128];

    trace[0] = '\0';
    loop = gw_loop_new(why, sizeof why);
    ck_assert_msg(loop != NULL, "%s", why);
}

static void teardown(void)
{
    gw_loop_free(loop);
}

static void nonblocking_pipe(int p[2])
{
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    ck_assert_int_eq(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
}

/* ---- two ready descriptors; the first callback removes the second's watch ---- */

struct pair_ctx {
    int fd;
    struct gw_watch *self, *victim;
    const char *name;
};

static void on_ready(void *data, unsigned events)
{
    struct pair_ctx *c = data;
    char b;

    ck_assert(events & GW_IO_IN);
    note(c->name);
    if (read(c->fd, &b, 1) != 1)
        ck_abort_msg("read");
    if (c->victim != NULL) {
        gw_watch_remove(c->victim);
        c->victim = NULL;
    }
    gw_loop_stop(loop, 7);
}

START_TEST(test_removed_watch_is_not_called)
{
    int a[2], b[2];
    struct pair_ctx ca = {0}, cb = {0};

    nonblocking_pipe(a);
    nonblocking_pipe(b);
    ca.fd = a[0];
    ca.name = "a";
    cb.fd = b[0];
    cb.name = "b";
    ca.self = gw_watch_add(loop, a[0], GW_IO_IN, on_ready, &ca);
    cb.self = gw_watch_add(loop, b[0], GW_IO_IN, on_ready, &cb);
    ck_assert_ptr_nonnull(ca.self);
    ck_assert_ptr_nonnull(cb.self);
    /* Whichever runs first removes the other: exactly one callback in the turn. */
    ca.victim = cb.self;
    cb.victim = ca.self;
    ck_assert_int_eq(write(a[1], "x", 1), 1);
    ck_assert_int_eq(write(b[1], "y", 1), 1);
    ck_assert_int_eq(gw_loop_run(loop), 7);
    ck_assert_uint_eq(strlen(trace), 1);
    /* The one that ran cleared its victim; the other still names the survivor. */
    gw_watch_remove(ca.victim != NULL ? ca.victim : cb.victim);
    close(a[0]);
    close(a[1]);
    close(b[0]);
    close(b[1]);
}
END_TEST

/* ---- timers fire in time order, may free themselves, re-arm for later ---- */

static struct gw_timer *t1, *t2, *t3;
static int rounds;

static void fire1(void *data)
{
    (void)data;
    note("1");
    gw_timer_free(t1); /* itself, in its own callback */
}

static void fire2(void *data)
{
    (void)data;
    note("2");
    if (++rounds < 3)
        gw_timer_in(t2, 0); /* "now": the next turn, not this walk */
    else
        gw_timer_in(t3, 1);
}

static void fire3(void *data)
{
    (void)data;
    note("3");
    gw_loop_stop(loop, 0);
}

START_TEST(test_timers)
{
    t1 = gw_timer_new(loop, fire1, NULL);
    t2 = gw_timer_new(loop, fire2, NULL);
    t3 = gw_timer_new(loop, fire3, NULL);
    rounds = 0;
    gw_timer_in(t2, 20);
    gw_timer_in(t1, 1);
    ck_assert(!gw_timer_armed(t3));
    ck_assert_int_eq(gw_loop_run(loop), 0);
    ck_assert_str_eq(trace, "12223");
    gw_timer_free(t2);
    gw_timer_free(t3);
}
END_TEST

/* ---- deferred work runs after the callbacks, in order, and may defer more ---- */

static void task_b(void *data)
{
    (void)data;
    note("b");
    gw_loop_stop(loop, 0);
}

static void task_a(void *data)
{
    (void)data;
    note("a");
    ck_assert_int_eq(gw_loop_defer(loop, task_b, NULL), 0);
}

static void on_defer_ready(void *data, unsigned events)
{
    int fd = *(int *)data;
    char b;

    (void)events;
    if (read(fd, &b, 1) != 1)
        ck_abort_msg("read");
    ck_assert_int_eq(gw_loop_defer(loop, task_a, NULL), 0);
    note("r");
}

START_TEST(test_defer)
{
    int p[2];
    struct gw_watch *w;

    nonblocking_pipe(p);
    w = gw_watch_add(loop, p[0], GW_IO_IN, on_defer_ready, &p[0]);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(write(p[1], "x", 1), 1);
    ck_assert_int_eq(gw_loop_run(loop), 0);
    ck_assert_str_eq(trace, "rab");
    gw_watch_remove(w);
    close(p[0]);
    close(p[1]);
}
END_TEST

/*
 * ---- what is kept for the moment before sleeping runs after the deferred
 * work, or between two callbacks of a busy turn; forgotten, it does not ----
 */

static void last_note(void *data)
{
    (void)data;
    note("L");
}

static void task_stop(void *data)
{
    (void)data;
    note("t");
    gw_loop_stop(loop, 0);
}

struct busy_ctx {
    int fd;
    const char *name;
};

static void on_busy(void *data, unsigned events)
{
    struct busy_ctx *c = data;
    char b;

    (void)events;
    if (read(c->fd, &b, 1) != 1)
        ck_abort_msg("read");
    note(c->name);
    ck_assert_int_eq(gw_loop_before_sleep(loop, last_note, c), 0);
    ck_assert_int_eq(gw_loop_defer(loop, task_stop, NULL), 0);
}

START_TEST(test_before_sleep)
{
    int p[2], q[2];
    struct busy_ctx a, b;
    struct gw_watch *wa, *wb;

    nonblocking_pipe(p);
    nonblocking_pipe(q);
    a.fd = p[0];
    a.name = "a";
    b.fd = q[0];
    b.name = "b";
    wa = gw_watch_add(loop, p[0], GW_IO_IN, on_busy, &a);
    wb = gw_watch_add(loop, q[0], GW_IO_IN, on_busy, &b);
    ck_assert_ptr_nonnull(wa);
    ck_assert_ptr_nonnull(wb);
    ck_assert_int_eq(write(p[1], "x", 1), 1);
    ck_assert_int_eq(write(q[1], "x", 1), 1);
    ck_assert_int_eq(gw_loop_run(loop), 0);
    /* One turn, two callbacks: the first's runs before the second, the second's last. */
    ck_assert_msg(strcmp(trace, "aLbttL") == 0 || strcmp(trace, "bLattL") == 0, "trace %s", trace);

    /* Planned, then forgotten (its data freed): it does not run. */
    trace[0] = '\0';
    ck_assert_int_eq(write(p[1], "x", 1), 1);
    ck_assert_int_eq(gw_loop_before_sleep(loop, last_note, &b), 0);
    gw_loop_forget_before_sleep(loop, &b);
    ck_assert_int_eq(gw_loop_run(loop), 0);
    ck_assert_str_eq(trace, "atL");
    gw_watch_remove(wa);
    gw_watch_remove(wb);
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(q[1]);
}
END_TEST

/* ---- answers kept until the loop sleeps: all of them, in order, once ---- */

static struct gw_answers_out answers;

static void send_noted(void *user, uint64_t to, const uint8_t *adu, size_t len)
{
    char s[8];

    (void)user;
    snprintf(s, sizeof s, "%c%zu", (char)('0' + (int)to), len);
    note(s);
    ck_assert_uint_eq(adu[0], (uint8_t)to);
}

static void on_answers_ready(void *data, unsigned events)
{
    int fd = *(int *)data;
    uint8_t adu[12] = {0};
    char b;

    (void)events;
    if (read(fd, &b, 1) != 1)
        ck_abort_msg("read");
    adu[0] = 1;
    gw_answers_out_put(&answers, 1, adu, 12);
    adu[0] = 2;
    gw_answers_out_put(&answers, 2, adu, 9);
    note("r");
    ck_assert_int_eq(gw_loop_defer(loop, task_stop, NULL), 0);
}

START_TEST(test_answers_out)
{
    int p[2];
    struct gw_watch *w;
    uint8_t adu[12] = {3};

    nonblocking_pipe(p);
    gw_answers_out_init(&answers, loop, send_noted, NULL);
    w = gw_watch_add(loop, p[0], GW_IO_IN, on_answers_ready, &p[0]);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(write(p[1], "x", 1), 1);
    ck_assert_int_eq(gw_loop_run(loop), 0);
    ck_assert_str_eq(trace, "rt11229");
    /* Kept, then freed with its owner: never sent, and nothing runs later. */
    trace[0] = '\0';
    gw_answers_out_put(&answers, 3, adu, 12);
    gw_answers_out_free(&answers);
    ck_assert_int_eq(write(p[1], "x", 1), 1);
    gw_answers_out_init(&answers, loop, send_noted, NULL);
    ck_assert_int_eq(gw_loop_run(loop), 0);
    ck_assert_str_eq(trace, "rt11229");
    gw_answers_out_free(&answers);
    gw_watch_remove(w);
    close(p[0]);
    close(p[1]);
}
END_TEST

/* ---- a watch that waits for nothing is not woken by a hang-up ---- */

static void on_hup(void *data, unsigned events)
{
    (void)data;
    (void)events;
    note("h");
}

static void stop_now(void *data)
{
    (void)data;
    gw_loop_stop(loop, 0);
}

START_TEST(test_parked_watch)
{
    int p[2];
    struct gw_watch *w;
    struct gw_timer *t = gw_timer_new(loop, stop_now, NULL);

    nonblocking_pipe(p);
    w = gw_watch_add(loop, p[0], GW_IO_IN, on_hup, NULL);
    ck_assert_int_eq(gw_watch_set(w, 0), 0);
    close(p[1]); /* a hang-up on p[0] */
    gw_timer_in(t, 20);
    ck_assert_int_eq(gw_loop_run(loop), 0);
    ck_assert_str_eq(trace, "");
    /* Waiting again: the hang-up shows. */
    ck_assert_int_eq(gw_watch_set(w, GW_IO_IN), 0);
    gw_timer_in(t, 20);
    ck_assert_int_eq(gw_loop_run(loop), 0);
    ck_assert_ptr_nonnull(strchr(trace, 'h'));
    gw_watch_remove(w);
    gw_timer_free(t);
    close(p[0]);
}
END_TEST

Suite *gw_loop_suite(void)
{
    Suite *s = suite_create("gw_loop");
    TCase *tc = tcase_create("loop");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_removed_watch_is_not_called);
    tcase_add_test(tc, test_timers);
    tcase_add_test(tc, test_defer);
    tcase_add_test(tc, test_parked_watch);
    tcase_add_test(tc, test_before_sleep);
    tcase_add_test(tc, test_answers_out);
    suite_add_tcase(s, tc);
    return s;
}
