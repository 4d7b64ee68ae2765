/* SPDX-License-Identifier: ISC */
/*
 * check_mux.c - the gateway's multiplexer (tools/gateway/mux.c) against a
 * fake upstream (mux_fake.c) and a clock the test moves: a reply callback
 * may forget its requester or submit again while the multiplexer is
 * answering (issue 19, item 1).
 *
 * Requests are reads of holding registers (function 03, Modbus Application
 * Protocol v1.1b3, section 6.3), one register each, whose address names
 * the requester, so that the test can tell whose request went upstream.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gw.h"
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
    uint8_t last[GW_MAX_ADU];
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
    struct gw_mux_config cfg = {in_flight, queue, timeout_ms, GW_EXC_PATH_UNAVAILABLE};
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

Suite *mux_suite(void)
{
    Suite *s = suite_create("mux");
    TCase *tc = tcase_create("mux");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, t_reply_forgets_while_requests_expire);
    tcase_add_test(tc, t_reply_forgets_in_flight_and_queued);
    tcase_add_test(tc, t_reply_submits_again);
    tcase_add_test(tc, t_send_breaks_connection);
    suite_add_tcase(s, tc);
    return s;
}
