/* SPDX-License-Identifier: ISC */
/*
 * check_mux.c - the gateway's multiplexer (tools/gateway/mux.c) against a
 * fake upstream (mux_fake.c) and a clock the test moves: answers reach the
 * requester whose request they answer and nobody else, for ever; upstream
 * turns are shared per master identity (group); a reply callback may
 * forget its requester or submit again while the multiplexer is answering
 * (issue 19, items 1, 3 and 5).
 *
 * Requests are reads of holding registers (function 03, Modbus Application
 * Protocol v1.1b3, section 6.3), one register each, whose address names
 * the requester, so that the test can tell whose request went upstream.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "mux_fake.h"

Suite *mux_suite(void);

#define MS ((int64_t)1000000)

static struct gw_mux *mux;
static struct gw_upstream up;

/* What the reply callback saw, and what it does. */
static struct {
    unsigned n;      /* replies */
    unsigned to[16]; /* replies per origin (origins 1..15) */
    uint64_t last_origin;
    uint8_t last[MBSC_ADU_MAX];
    size_t last_len;
    int forget_self, forget_next; /* forget the origin answered, and origin + 1 */
    int resubmit;                 /* the origin answered asks again */
    unsigned resubmit_left;
    int64_t now;
} rep;

static uint64_t group_of_origin[16];

static size_t read_request(uint8_t adu[12], uint16_t tid, uint16_t addr)
{
    const uint8_t r[12] = {(uint8_t)(tid >> 8),  (uint8_t)tid,  0, 0, 0, 6, 1, 0x03,
                           (uint8_t)(addr >> 8), (uint8_t)addr, 0, 1};

    memcpy(adu, r, sizeof r);
    return sizeof r;
}

/* The answer to the read req (as sent upstream), one register of value v. */
static size_t read_answer(uint8_t ans[11], const uint8_t *req, uint16_t v)
{
    const uint8_t a[11] = {req[0],    req[1], 0, 0, 0, 5, req[6], 0x03, 2, (uint8_t)(v >> 8),
                           (uint8_t)v};

    memcpy(ans, a, sizeof a);
    return sizeof a;
}

static uint16_t answer_value(const uint8_t *adu, size_t len)
{
    return (uint16_t)(len == 11 && adu[7] == 0x03 ? adu[9] << 8 | adu[10] : 0);
}

static void submit(uint64_t origin, uint16_t tid, int64_t now)
{
    uint8_t adu[12];
    size_t n = read_request(adu, tid, (uint16_t)origin);

    ck_assert_int_eq(gw_mux_submit(mux, origin, group_of_origin[origin], adu, n, now), MBSC_OK);
}

static void on_reply(void *user, uint64_t origin, const uint8_t *adu, size_t len)
{
    (void)user;
    ck_assert_uint_lt(origin, 16);
    ck_assert_uint_le(len, sizeof rep.last);
    rep.n++;
    rep.to[origin]++;
    rep.last_origin = origin;
    memcpy(rep.last, adu, len);
    rep.last_len = len;
    if (rep.forget_self)
        gw_mux_forget(mux, origin);
    if (rep.forget_next)
        gw_mux_forget(mux, origin + 1);
    if (rep.resubmit && rep.resubmit_left > 0) {
        rep.resubmit_left--;
        submit(origin, (uint16_t)(adu[0] << 8 | adu[1]), rep.now);
    }
}

static void mux_open(unsigned in_flight, unsigned queue, unsigned timeout_ms)
{
    struct gw_mux_config cfg = {in_flight, queue, timeout_ms, MBSC_EXC_GATEWAY_PATH_UNAVAILABLE, 0};
    struct gw_upstream_hooks h;
    unsigned i;

    memset(&rep, 0, sizeof rep);
    for (i = 0; i < 16; i++)
        group_of_origin[i] = 1000 + i; /* each origin alone, unless a test says otherwise */
    fake_log_lines = 0;
    mux = gw_mux_new(&cfg, on_reply, NULL);
    ck_assert_ptr_nonnull(mux);
    h = gw_mux_hooks(mux);
    fake_up_init(&up, &h);
    gw_mux_attach(mux, &up);
}

static void mux_close(void)
{
    gw_mux_free(mux);
    fake_up_free(&up);
    mux = NULL;
}

/* Answer the last request sent upstream with value v. */
static void answer_last(uint16_t v)
{
    const struct fake_sent *s = fake_up_last(&up);
    uint8_t ans[11];

    ck_assert_ptr_nonnull(s);
    fake_up_answer(&up, ans, read_answer(ans, s->adu, v), 1);
}

/* ---- answers go to their requester only (item 3) ---- */

/*
 * An upstream that knows a request is lost (a serial line: no answer in
 * its timeout, a bad CRC) says so through the failed hook: its requester
 * gets that code at once, the next request goes, and a failure for a
 * request no longer in flight changes nothing.
 */
START_TEST(t_upstream_fails_one_request)
{
    struct gw_mux_stats st;
    uint16_t tid;

    mux_open(1, 16, 1000);
    fake_up_ready(&up);
    submit(1, 0x0101, 0);
    submit(2, 0x0202, 0);
    ck_assert_uint_eq(up.n_sent, 1);
    tid = (uint16_t)(fake_up_last(&up)->adu[0] << 8 | fake_up_last(&up)->adu[1]);
    up.h.failed(up.h.user, tid, MBSC_EXC_GATEWAY_TARGET_FAILED);
    ck_assert_uint_eq(rep.n, 1);
    ck_assert_uint_eq(rep.to[1], 1);
    ck_assert_uint_eq(rep.last_len, 9);
    ck_assert_uint_eq((unsigned)rep.last[0] << 8 | rep.last[1], 0x0101);
    ck_assert_uint_eq(rep.last[7], 0x83);
    ck_assert_uint_eq(rep.last[8], MBSC_EXC_GATEWAY_TARGET_FAILED);
    ck_assert_uint_eq(up.n_sent, 2);
    /* Said again, or for an id never sent: nothing. */
    up.h.failed(up.h.user, tid, MBSC_EXC_GATEWAY_TARGET_FAILED);
    up.h.failed(up.h.user, 0x7777, MBSC_EXC_GATEWAY_TARGET_FAILED);
    ck_assert_uint_eq(rep.n, 1);
    answer_last(7);
    ck_assert_uint_eq(rep.n, 2);
    ck_assert_uint_eq(rep.last_origin, 2);
    ck_assert_uint_eq(answer_value(rep.last, rep.last_len), 7);
    gw_mux_get_stats(mux, &st);
    ck_assert_uint_eq(st.timed_out, 1);
    ck_assert_uint_eq(st.answered, 1);
    ck_assert_uint_eq(st.dropped, 0);
    mux_close();
}
END_TEST

START_TEST(t_late_answer_reaches_nobody)
{
    struct gw_mux_stats st;
    uint8_t late_req[MBSC_ADU_MAX], ans[11];
    unsigned i;

    mux_open(1, 16, 1000);
    fake_up_ready(&up);
    /* Origin 1 reads; the device does not answer in time. */
    submit(1, 0x0101, 0);
    ck_assert_uint_eq(up.n_sent, 1);
    memcpy(late_req, up.sent[0].adu, up.sent[0].len);
    gw_mux_tick(mux, 1001 * MS);
    ck_assert_uint_eq(rep.to[1], 1);
    ck_assert_uint_eq(rep.last[7], 0x83); /* exception 0B */
    ck_assert_uint_eq(rep.last[8], 0x0B);
    /* Origin 2 pushes the transaction ids round: 65536 reads, all answered but the last. */
    for (i = 0; i < 65536; i++) {
        submit(2, (uint16_t)i, 2000 * MS);
        ck_assert_uint_eq(up.n_sent, 2 + i);
        if (i < 65535)
            answer_last(7);
    }
    ck_assert_uint_eq(rep.to[2], 65535);
    /* The device's late answer to origin 1's read comes now, on the same connection. */
    fake_up_answer(&up, ans, read_answer(ans, late_req, 0xDEAD), 1);
    ck_assert_msg(rep.to[2] == 65535 && answer_value(rep.last, rep.last_len) != 0xDEAD,
                  "origin 1's late answer went to origin %u", (unsigned)rep.last_origin);
    ck_assert_uint_eq(rep.to[1], 1);
    gw_mux_get_stats(mux, &st);
    ck_assert_uint_eq(st.late, 1);
    ck_assert_uint_eq(st.dropped, 1);
    /* Origin 2's own answer still reaches it. */
    answer_last(7);
    ck_assert_uint_eq(rep.to[2], 65536);
    ck_assert_uint_eq(answer_value(rep.last, rep.last_len), 7);
    mux_close();
}
END_TEST

START_TEST(t_ids_used_up_reconnect)
{
    unsigned i;

    mux_open(1, 16, 10);
    fake_up_ready(&up);
    /* Every id times out in turn: none may go out twice on this connection. */
    for (i = 0; i < 65536; i++) {
        submit(1, (uint16_t)i, (int64_t)i * 20 * MS);
        gw_mux_tick(mux, ((int64_t)i * 20 + 11) * MS);
    }
    ck_assert_uint_eq(up.n_sent, 65536);
    ck_assert_uint_eq(rep.to[1], 65536);
    /* One more: no id is free, so the connection is made again instead. */
    submit(1, 1, (int64_t)65536 * 20 * MS);
    ck_assert_msg(up.reused == 0,
                  "%llu ids went out again on one connection with no answer to them",
                  (unsigned long long)up.reused);
    ck_assert_uint_eq(up.n_sent, 65536);
    ck_assert_uint_eq(up.resets, 1);
    ck_assert_int_eq(up.state, GW_UP_IDLE);
    ck_assert_uint_eq(gw_mux_pending(mux, 1), 1); /* waits for the new connection */
    fake_up_ready(&up);
    ck_assert_uint_eq(up.n_sent, 65537);
    ck_assert_uint_eq(fake_up_last(&up)->connection, 2);
    answer_last(9);
    ck_assert_uint_eq(rep.to[1], 65537);
    ck_assert_uint_eq(answer_value(rep.last, rep.last_len), 9);
    mux_close();
}
END_TEST

START_TEST(t_late_answers_logged_once_per_interval)
{
    struct gw_mux_stats st;
    uint8_t reqs[50][12], ans[11];
    unsigned i, lines;

    mux_open(1, 64, 10);
    fake_up_ready(&up);
    for (i = 0; i < 50; i++) {
        submit(1, (uint16_t)i, (int64_t)i * 20 * MS);
        memcpy(reqs[i], fake_up_last(&up)->adu, 12);
        gw_mux_tick(mux, ((int64_t)i * 20 + 11) * MS);
    }
    lines = fake_log_lines;
    for (i = 0; i < 50; i++)
        fake_up_answer(&up, ans, read_answer(ans, reqs[i], 1), 1);
    gw_mux_get_stats(mux, &st);
    ck_assert_uint_eq(st.late, 50);
    ck_assert_msg(fake_log_lines == lines + 1, "%u lines for 50 late answers; the last: %s",
                  fake_log_lines - lines, fake_log_last);
    /* The others are counted in one line when the interval is over. */
    ck_assert_int_gt(gw_mux_timeout(mux, 2000 * MS), 0);
    gw_mux_tick(mux, 20000 * MS);
    ck_assert_uint_eq(fake_log_lines, lines + 2);
    ck_assert_msg(strstr(fake_log_last, "dropped 49 more answers") != NULL, "%s", fake_log_last);
    mux_close();
}
END_TEST

/* ---- turns per master identity (item 5) ---- */

START_TEST(t_fair_per_group)
{
    unsigned served[5] = {0, 0, 0, 0, 0}, turn, o;
    uint64_t prev = 0;

    mux_open(1, 8, 60000);
    /* Origins 1, 2 and 3 are sessions of one master (group 100); origin 4 is another master. */
    group_of_origin[1] = group_of_origin[2] = group_of_origin[3] = 100;
    group_of_origin[4] = 200;
    for (o = 1; o <= 4; o++) {
        submit(o, 1, 0);
        submit(o, 2, 0);
    }
    /* Each answered origin asks again at once: every queue stays full. */
    rep.resubmit = 1;
    rep.resubmit_left = 1000;
    fake_up_ready(&up);
    for (turn = 0; turn < 60; turn++) {
        const struct fake_sent *s = fake_up_last(&up);
        uint64_t who;

        ck_assert_ptr_nonnull(s);
        who = (uint64_t)(s->adu[8] << 8 | s->adu[9]);
        ck_assert_uint_ge(who, 1);
        ck_assert_uint_le(who, 4);
        served[who]++;
        /* The lone master never waits two turns in a row. */
        ck_assert_msg(who == 4 || prev == 4 || turn == 0,
                      "turn %u: the master with three sessions got two turns in a row "
                      "(served so far: %u %u %u, the other master %u)",
                      turn, served[1], served[2], served[3], served[4]);
        prev = who;
        answer_last((uint16_t)who);
    }
    ck_assert_uint_ge(served[4], 29);
    for (o = 1; o <= 3; o++)
        ck_assert_uint_ge(served[o], 9); /* and its sessions share its turns */
    mux_close();
}
END_TEST

START_TEST(t_queue_limit_per_group)
{
    struct gw_mux_stats st;
    unsigned o, i;

    mux_open(1, 4, 60000);
    group_of_origin[1] = group_of_origin[2] = group_of_origin[3] = 100;
    /* Not connected yet: everything queues. */
    for (o = 1; o <= 3; o++)
        for (i = 0; i < 3; i++)
            submit(o, (uint16_t)i, 0);
    gw_mux_get_stats(mux, &st);
    ck_assert_msg(st.busy == 5, "%llu of 9 requests of one master refused with 4 places",
                  (unsigned long long)st.busy);
    ck_assert_uint_eq(gw_mux_total(mux), 4);
    /* Another master has places of its own. */
    for (i = 0; i < 4; i++)
        submit(4, (uint16_t)i, 0);
    gw_mux_get_stats(mux, &st);
    ck_assert_uint_eq(st.busy, 5);
    ck_assert_uint_eq(gw_mux_total(mux), 8);
    mux_close();
}
END_TEST

/* ---- a reply may forget or submit (item 1) ---- */

START_TEST(t_reply_forgets_while_requests_expire)
{
    unsigned o;

    mux_open(1, 16, 100);
    /* The connection is still being made: all requests queue. */
    for (o = 1; o <= 4; o++) {
        submit(o, 1, 0);
        submit(o, 2, 0);
    }
    /* Each answer ends its requester and the next one, as a CLOSED event would. */
    rep.forget_self = rep.forget_next = 1;
    gw_mux_tick(mux, 200 * MS);
    /* Origin 1's first answer forgets 1 and 2, then origin 3's forgets 3 and 4. */
    ck_assert_uint_eq(rep.n, 2);
    ck_assert_uint_eq(rep.to[1], 1);
    ck_assert_uint_eq(rep.to[3], 1);
    ck_assert_uint_eq(gw_mux_total(mux), 0);
    mux_close();
}
END_TEST

START_TEST(t_reply_forgets_in_flight_and_queued)
{
    mux_open(2, 16, 100);
    fake_up_ready(&up);
    submit(1, 1, 0);
    submit(2, 1, 0);
    submit(1, 2, 0);
    submit(2, 2, 0);
    ck_assert_uint_eq(up.n_sent, 2);
    /* The connection breaks: the requests in flight get 0B, and each answer forgets its origin. */
    rep.forget_self = 1;
    fake_up_down(&up, 1);
    ck_assert_uint_eq(rep.to[1], 1);
    ck_assert_uint_eq(rep.to[2], 1);
    ck_assert_uint_eq(gw_mux_total(mux), 0);
    mux_close();
}
END_TEST

START_TEST(t_reply_submits_again)
{
    mux_open(1, 16, 100);
    /* Unreachable: every request is answered 0A at once, and each answer asks again. */
    fake_up_down(&up, 0);
    rep.resubmit = 1;
    rep.resubmit_left = 200;
    submit(1, 1, 0);
    ck_assert_uint_eq(rep.to[1], 201);
    ck_assert_uint_eq(rep.last[7], 0x83);
    ck_assert_uint_eq(rep.last[8], 0x0A);
    ck_assert_uint_eq(gw_mux_total(mux), 0);
    mux_close();
}
END_TEST

START_TEST(t_send_breaks_connection)
{
    mux_open(1, 16, 100);
    fake_up_ready(&up);
    /* The send itself finds the connection broken (reported at once, as upstream.c does). */
    up.break_on_send = 1;
    rep.forget_self = 1;
    submit(1, 1, 0);
    ck_assert_uint_eq(rep.to[1], 1);
    ck_assert_uint_eq(rep.last[8], 0x0B);
    ck_assert_uint_eq(gw_mux_total(mux), 0);
    mux_close();
}
END_TEST

/*
 * Requests that go up in one go are sent corked, so that they leave in
 * one segment: four queued while the connection was being made go out
 * together when it is ready (one outermost uncork), and an answer that
 * lets the next one go sends it in a corked go of its own.  Inside one
 * event of the upstream's (begin .. end), the answers it brings reach
 * their requesters only at its end, after the requests they let go.
 */
START_TEST(t_requests_pumped_together_leave_together)
{
    unsigned i;

    mux_open(4, 16, 1000);
    for (i = 1; i <= 4; i++)
        submit(i, 1, 0);
    ck_assert_uint_eq(up.n_sent, 0);
    fake_up_ready(&up);
    ck_assert_uint_eq(up.n_sent, 4);
    ck_assert_uint_eq(up.corked_sends, 1);
    ck_assert_uint_eq(up.corked, 0);
    submit(5, 1, 0); /* four in flight: it waits */
    ck_assert_uint_eq(up.n_sent, 4);
    answer_last(7);
    ck_assert_uint_eq(rep.n, 1);
    ck_assert_uint_eq(up.n_sent, 5);
    ck_assert_uint_eq(up.corked_sends, 2);
    ck_assert_uint_eq(up.corked, 0);
    submit(6, 1, 0);
    up.h.begin(up.h.user);
    answer_last(8);
    ck_assert_uint_eq(up.n_sent, 6); /* the next request is on its way ... */
    ck_assert_uint_eq(rep.n, 1);     /* ... and the answer waits for the end */
    up.h.end(up.h.user);
    ck_assert_uint_eq(rep.n, 2);
    ck_assert_uint_eq(answer_value(rep.last, rep.last_len), 8);
    mux_close();
}
END_TEST

Suite *mux_suite(void)
{
    Suite *s = suite_create("mux");
    TCase *tc = tcase_create("mux");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, t_upstream_fails_one_request);
    tcase_add_test(tc, t_late_answer_reaches_nobody);
    tcase_add_test(tc, t_ids_used_up_reconnect);
    tcase_add_test(tc, t_late_answers_logged_once_per_interval);
    tcase_add_test(tc, t_fair_per_group);
    tcase_add_test(tc, t_queue_limit_per_group);
    tcase_add_test(tc, t_reply_forgets_while_requests_expire);
    tcase_add_test(tc, t_reply_forgets_in_flight_and_queued);
    tcase_add_test(tc, t_reply_submits_again);
    tcase_add_test(tc, t_send_breaks_connection);
    tcase_add_test(tc, t_requests_pumped_together_leave_together);
    suite_add_tcase(s, tc);
    return s;
}
