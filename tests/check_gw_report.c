/* SPDX-License-Identifier: ISC */
/*
 * check_gw_report.c - how the gateway reports, apart from the process:
 * when an unreachable upstream is logged (tools/gateway/outage.c, against
 * the schedule outage.h documents) and the fields of journald's native
 * protocol (tools/gateway/journal.c, against systemd's description of it,
 * systemd.io/JOURNAL_NATIVE_PROTOCOL).
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "journal.h"
#include "outage.h"

Suite *gw_report_suite(void);

#define S ((int64_t)1000000000)

/* ---- outage.c ---- */

START_TEST(test_outage_schedule)
{
    struct gw_outage o;
    int64_t t;
    int lines = 0;
    int64_t at[16];

    memset(&o, 0, sizeof o);
    /* One failed attempt a second for 200 s, the same cause each time. */
    for (t = 0; t <= 200 * S; t += S) {
        enum gw_outage_say say = gw_outage_failed(&o, t, 0);

        if (t == 0)
            ck_assert_int_eq(say, GW_OUTAGE_FIRST);
        else if (say != GW_OUTAGE_QUIET) {
            ck_assert_int_eq(say, GW_OUTAGE_STILL);
            ck_assert_int_lt(lines, 16);
            at[lines++] = t;
        }
    }
    /* After 10 s, then 20 s, 40 s, 80 s more (the next, 160 s more, is beyond). */
    ck_assert_int_eq(lines, 4);
    ck_assert_int_eq(at[0], 10 * S);
    ck_assert_int_eq(at[1], 30 * S);
    ck_assert_int_eq(at[2], 70 * S);
    ck_assert_int_eq(at[3], 150 * S);
    ck_assert_uint_eq(o.attempts, 201);
    ck_assert_uint_eq(o.total, 201);
}
END_TEST

START_TEST(test_outage_at_most_hourly)
{
    struct gw_outage o;
    int64_t t, last = 0, gap = 0;

    memset(&o, 0, sizeof o);
    /* An attempt every 5 s for two days: no gap between lines beyond an hour. */
    for (t = 0; t <= 48 * 3600 * S; t += 5 * S)
        if (gw_outage_failed(&o, t, 0) != GW_OUTAGE_QUIET) {
            if (t - last > gap)
                gap = t - last;
            last = t;
        }
    ck_assert_int_le(gap, 3600 * S);
    ck_assert_int_ge(gap, 3600 * S - 5 * S);
    ck_assert_int_ge(last, 48 * 3600 * S - 3600 * S);
}
END_TEST

START_TEST(test_outage_new_cause_and_end)
{
    struct gw_outage o;
    uint64_t attempts = 0;
    int64_t lasted = 0;

    memset(&o, 0, sizeof o);
    ck_assert_int_eq(gw_outage_failed(&o, 0, 0), GW_OUTAGE_FIRST);
    ck_assert_int_eq(gw_outage_failed(&o, 10 * S, 0), GW_OUTAGE_STILL);
    ck_assert_int_eq(gw_outage_failed(&o, 30 * S, 0), GW_OUTAGE_STILL);
    /* The next line is due at 70 s; a new cause is news 1 s after the last line. */
    ck_assert_int_eq(gw_outage_failed(&o, 30 * S + S / 2, 1), GW_OUTAGE_QUIET);
    ck_assert_int_eq(gw_outage_failed(&o, 31 * S, 1), GW_OUTAGE_STILL);
    ck_assert_int_eq(gw_outage_failed(&o, 41 * S, 0), GW_OUTAGE_QUIET);
    ck_assert_int_eq(gw_outage_ended(&o, 45 * S, &attempts, &lasted), 1);
    ck_assert_uint_eq(attempts, 6);
    ck_assert_int_eq(lasted, 45 * S);
    /* Once: a second connection ends nothing, and the next failure is a first again. */
    ck_assert_int_eq(gw_outage_ended(&o, 46 * S, &attempts, &lasted), 0);
    ck_assert_int_eq(gw_outage_failed(&o, 50 * S, 0), GW_OUTAGE_FIRST);
    ck_assert_uint_eq(o.total, 7);
}
END_TEST

START_TEST(test_duration_text)
{
    char b[32];

    gw_duration_text(850 * (S / 1000), b, sizeof b);
    ck_assert_str_eq(b, "850 ms");
    gw_duration_text(37 * S, b, sizeof b);
    ck_assert_str_eq(b, "37 s");
    gw_duration_text(12 * 60 * S + 59 * S, b, sizeof b);
    ck_assert_str_eq(b, "12 min");
    gw_duration_text(3 * 3600 * S + 5 * 60 * S, b, sizeof b);
    ck_assert_str_eq(b, "3 h 5 min");
    gw_duration_text(24 * 3600 * S + 4 * 3600 * S, b, sizeof b);
    ck_assert_str_eq(b, "1 day 4 h");
    gw_duration_text(2 * 24 * 3600 * S, b, sizeof b);
    ck_assert_str_eq(b, "2 days 0 h");
    gw_duration_text(-5, b, sizeof b);
    ck_assert_str_eq(b, "0 ms");
}
END_TEST

/* ---- journal.c ---- */

START_TEST(test_journal_fields)
{
    /* Written out from the protocol's description, byte by byte. */
    static const char expect[] = "PRIORITY=4\n"
                                 "MESSAGE=refused master bob\n"
                                 "MBSC_REASON\n"
                                 "\x09\x00\x00\x00\x00\x00\x00\x00"
                                 "two\nlines\n";
    char buf[256];
    size_t len = 0;

    ck_assert_int_eq(gw_journal_field(buf, sizeof buf, &len, "PRIORITY", "4"), 0);
    ck_assert_int_eq(gw_journal_field(buf, sizeof buf, &len, "MESSAGE", "refused master bob"), 0);
    /* A newline in a value (text from a file or a peer) cannot start a field of its own. */
    ck_assert_int_eq(gw_journal_field(buf, sizeof buf, &len, "MBSC_REASON", "two\nlines"), 0);
    ck_assert_uint_eq(len, sizeof expect - 1);
    ck_assert_mem_eq(buf, expect, len);
}
END_TEST

START_TEST(test_journal_refuses)
{
    char buf[17];
    size_t len = 3;

    memcpy(buf, "XY\n", 3);
    /* Names: upper case, digits and '_', not first '_' (journald's own) or a digit. */
    ck_assert_int_eq(gw_journal_name_ok("MBSC_MASTER"), 1);
    ck_assert_int_eq(gw_journal_name_ok("mbsc_master"), 0);
    ck_assert_int_eq(gw_journal_name_ok("_PID"), 0);
    ck_assert_int_eq(gw_journal_name_ok("1A"), 0);
    ck_assert_int_eq(gw_journal_name_ok(""), 0);
    ck_assert_int_eq(gw_journal_name_ok("A=B"), 0);
    ck_assert_int_eq(gw_journal_field(buf, sizeof buf, &len, "_PID", "1"), -1);
    /* What does not fit leaves the buffer as it was. */
    ck_assert_int_eq(gw_journal_field(buf, sizeof buf, &len, "MESSAGE", "0123456789"), -1);
    ck_assert_int_eq(gw_journal_field(buf, sizeof buf, &len, "M", "a\nb"), 0);
    ck_assert_uint_eq(len, 3 + 2 + 8 + 3 + 1);
    ck_assert_int_eq(gw_journal_field(buf, sizeof buf, &len, "M", ""), -1);
    ck_assert_uint_eq(len, 17);
    ck_assert_mem_eq(buf, "XY\nM\n\x03\0\0\0\0\0\0\0a\nb\n", 17);
}
END_TEST

Suite *gw_report_suite(void)
{
    Suite *s = suite_create("gw_report");
    TCase *tc = tcase_create("gw_report");

    tcase_add_test(tc, test_outage_schedule);
    tcase_add_test(tc, test_outage_at_most_hourly);
    tcase_add_test(tc, test_outage_new_cause_and_end);
    tcase_add_test(tc, test_duration_text);
    tcase_add_test(tc, test_journal_fields);
    tcase_add_test(tc, test_journal_refuses);
    suite_add_tcase(s, tc);
    return s;
}
