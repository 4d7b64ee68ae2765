/* SPDX-License-Identifier: ISC */
/*
 * check_gw_route.c - the gateway's routes by unit id (tools/gateway/route.c):
 * what parses, what is refused with which message, and the lookup.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "route.h"

Suite *gw_route_suite(void);

static struct gw_route_table t;
static char why[512];

static int add(const char *spec)
{
    why[0] = '\0';
    return gw_route_add(&t, spec, '=', "--route", why, sizeof why);
}

START_TEST(test_lookup)
{
    gw_route_table_init(&t);
    ck_assert_int_eq(gw_route_lookup(&t, 7), GW_ROUTE_NONE);
    ck_assert_int_eq(add("1-10=10.0.0.1:502"), 0);
    ck_assert_int_eq(add("20,22,30-31=plc2.example:1502"), 0);
    ck_assert_int_eq(add("40=[fd00::1]:502"), 0);
    ck_assert_int_eq(gw_route_lookup(&t, 1), 0);
    ck_assert_int_eq(gw_route_lookup(&t, 10), 0);
    ck_assert_int_eq(gw_route_lookup(&t, 11), GW_ROUTE_NONE);
    ck_assert_int_eq(gw_route_lookup(&t, 22), 1);
    ck_assert_int_eq(gw_route_lookup(&t, 21), GW_ROUTE_NONE);
    ck_assert_int_eq(gw_route_lookup(&t, 31), 1);
    ck_assert_int_eq(gw_route_lookup(&t, 40), 2);
    ck_assert_int_eq(gw_route_lookup(&t, 0), GW_ROUTE_NONE);
    ck_assert_int_eq(gw_route_set_default(&t, "127.0.0.1:502", "--upstream", why, sizeof why), 0);
    ck_assert_int_eq(gw_route_lookup(&t, 0), GW_ROUTE_DEFAULT);
    ck_assert_int_eq(gw_route_lookup(&t, 255), GW_ROUTE_DEFAULT);
    ck_assert_int_eq(gw_route_lookup(&t, 5), 0);
    /* A second route to the same target joins the first: one connection per device. */
    ck_assert_int_eq(add("50=10.0.0.1:502"), 0);
    ck_assert_int_eq(gw_route_lookup(&t, 50), 0);
    ck_assert_uint_eq(t.n, 3);
    ck_assert_str_eq(t.routes[0].units_text, "1-10,50");
}
END_TEST

static const struct {
    const char *spec, *message;
} bad[] = {
    {"5", "is not UNITS=HOST:PORT"},
    {"256=10.0.0.1:502", "bad units '256'"},
    {"0=10.0.0.1:502", "unit 0 is the broadcast address"},
    {"0-3=10.0.0.1:502", "unit 0 is the broadcast address"},
    {"10-5=10.0.0.1:502", "units 10-5 run backwards; write 5-10"},
    {"1,,2=10.0.0.1:502", "bad units"},
    {"a=10.0.0.1:502", "bad units"},
    {"=10.0.0.1:502", "the units must be"},
    {"1-=10.0.0.1:502", "bad units"},
    {"3=10.0.0.1", "'10.0.0.1' is not HOST:PORT"},
    {"3=10.0.0.1:99999", "is not HOST:PORT"},
    {"5=10.0.0.2:502", "unit 5 is already routed to 10.0.0.1:502 by --route"},
};

START_TEST(test_refused)
{
    gw_route_table_init(&t);
    ck_assert_int_eq(add("1-10=10.0.0.1:502"), 0);
    ck_assert_int_eq(add(bad[_i].spec), -1);
    ck_assert_msg(strstr(why, bad[_i].message) != NULL, "'%s': got '%s'", bad[_i].spec, why);
    ck_assert_ptr_nonnull(strstr(why, "--route"));
    /* Nothing of a refused route stays. */
    ck_assert_uint_eq(t.n, 1);
    ck_assert_int_eq(gw_route_lookup(&t, 11), GW_ROUTE_NONE);
}
END_TEST

START_TEST(test_config_form)
{
    gw_route_table_init(&t);
    ck_assert_int_eq(gw_route_add(&t, "1-3   10.0.0.1:502", ' ', "gw.conf:4", why, sizeof why), 0);
    ck_assert_str_eq(t.routes[0].target, "10.0.0.1:502");
    ck_assert_int_eq(gw_route_add(&t, "4", ' ', "gw.conf:5", why, sizeof why), -1);
    ck_assert_ptr_nonnull(strstr(why, "gw.conf:5: '4' is not 'UNITS HOST:PORT'"));
}
END_TEST

START_TEST(test_too_many)
{
    char spec[64];
    unsigned i;

    gw_route_table_init(&t);
    for (i = 1; i <= GW_MAX_ROUTES; i++) {
        snprintf(spec, sizeof spec, "%u=10.0.0.%u:502", i, i);
        ck_assert_int_eq(add(spec), 0);
    }
    ck_assert_int_eq(add("200=10.0.1.1:502"), -1);
    ck_assert_ptr_nonnull(strstr(why, "more than"));
}
END_TEST

Suite *gw_route_suite(void)
{
    Suite *s = suite_create("gw_route");
    TCase *tc = tcase_create("routes");

    tcase_add_test(tc, test_lookup);
    tcase_add_loop_test(tc, test_refused, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, test_config_form);
    tcase_add_test(tc, test_too_many);
    suite_add_tcase(s, tc);
    return s;
}
