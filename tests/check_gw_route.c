/* SPDX-License-Identifier: ISC */
/*
 * check_gw_route.c - the gateway's routes by unit id (tools/gateway/route.c):
 * what parses, what is refused with which message, and the lookup.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    /* Serial lines: the setting that is wrong and the fix. */
    {"20=rtu:/dev/ttyUSB0,19200,8X1",
     "rtu:/dev/ttyUSB0,19200,8X1: parity 'X' in format 8X1 is not N, E or O (none, even, odd); "
     "fix: "},
    {"20=rtu:/dev/ttyUSB0,0", "baud rate '0' is not one a serial port is set to; fix: "},
    {"20=rtu:/dev/ttyUSB0,12345", "baud rate '12345' is not one"},
    {"20=rtu:/dev/ttyUSB0,fast", "baud rate 'fast' is not one"},
    {"20=rtu:/dev/ttyUSB0,19200,7E1", "7 data bits in format 7E1: Modbus RTU frames have 8"},
    {"20=rtu:/dev/ttyUSB0,19200,8E3", "3 stop bits in format 8E3; fix: 1 or 2"},
    {"20=rtu:/dev/ttyUSB0,19200,8E", "format '8E' is not data bits, parity and stop bits"},
    {"20=rtu:ttyUSB0", "the device must be an absolute path; fix: "},
    {"20=rtu:", "names no serial device; fix: rtu:DEVICE"},
    {"20=rtu:,9600", "names no serial device"},
    {"20=rtu:/etc/passwd", "/etc/passwd is a regular file, not a serial port; fix: "},
    {"20=rtu:/dev", "/dev is a directory, not a serial port"},
    {"20=rtu:/dev/ttyUSB0,19200,8E1,speed=3", "unknown setting 'speed'"},
    {"20=rtu:/dev/ttyUSB0,19200,8E1,rs485=maybe", "rs485 is yes"},
    {"20=rtu:/dev/ttyUSB0,19200,8E1,timeout=0", "timeout is the milliseconds"},
    {"20=rtu:/dev/ttyUSB0,19200,8E1,turnaround=x", "turnaround is the milliseconds"},
    {"20=rtu:/dev/ttyUSB0,19200,8E1,9600", "'9600' after the format"},
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
    ck_assert_int_eq(
        gw_route_add(&t, "7 rtu:/dev/ttyUSB0,19200,8X1", ' ', "gw.conf:7", why, sizeof why), -1);
    ck_assert_msg(strstr(why, "gw.conf:7: rtu:/dev/ttyUSB0,19200,8X1: parity 'X'") != NULL, "%s",
                  why);
}
END_TEST

/*
 * Routes to one serial line share it however they spell it; one device
 * with two sets of settings is refused where the second is written.
 */
START_TEST(test_serial_lines)
{
    gw_route_table_init(&t);
    ck_assert_int_eq(add("1-10=rtu:/dev/ttyUSB0"), 0);
    ck_assert_str_eq(t.routes[0].target, "rtu:/dev/ttyUSB0,19200,8E1");
    ck_assert_int_eq(add("20=rtu:/dev/ttyUSB0,19200,8e1"), 0);
    ck_assert_uint_eq(t.n, 1);
    ck_assert_str_eq(t.routes[0].units_text, "1-10,20");
    ck_assert_int_eq(gw_route_lookup(&t, 20), 0);
    ck_assert_int_eq(add("30=rtu:/dev/ttyUSB1,9600,8N2,timeout=300,rs485=yes"), 0);
    ck_assert_str_eq(t.routes[1].target, "rtu:/dev/ttyUSB1,9600,8N2,rs485=yes,timeout=300");
    ck_assert_int_eq(add("31=rtu:/dev/ttyUSB1,9600,8N2,rs485=yes,timeout=300,turnaround=100"), 0);
    ck_assert_uint_eq(t.n, 2);
    ck_assert_int_eq(
        gw_route_add(&t, "40 rtu:/dev/ttyUSB0,9600", ' ', "gw.conf:9", why, sizeof why), -1);
    ck_assert_msg(strstr(why, "gw.conf:9: rtu:/dev/ttyUSB0,9600,8E1 gives serial line "
                              "/dev/ttyUSB0 other settings than --route does "
                              "(rtu:/dev/ttyUSB0,19200,8E1); ") != NULL,
                  "%s", why);
    ck_assert_ptr_nonnull(strstr(why, "fix: write the same ones in both"));
    ck_assert_uint_eq(t.n, 2);
    ck_assert_int_eq(gw_route_lookup(&t, 40), GW_ROUTE_NONE);
    /* The default route: the same line joins, other settings are refused. */
    ck_assert_int_eq(
        gw_route_set_default(&t, "rtu:/dev/ttyUSB0,19200", "gw.conf:2", why, sizeof why), 0);
    ck_assert_str_eq(t.default_target, t.routes[0].target);
    ck_assert_int_eq(gw_route_set_default(&t, "rtu:/dev/ttyUSB1", "gw.conf:2", why, sizeof why),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "gw.conf:2: rtu:/dev/ttyUSB1,19200,8E1 gives serial line "
                                      "/dev/ttyUSB1 other settings than --route does"));
    ck_assert_int_eq(
        gw_route_set_default(&t, "rtu:/dev/ttyUSB2,115200,8N1", "--upstream", why, sizeof why), 0);
    ck_assert_int_eq(add("50=rtu:/dev/ttyUSB2,115200,8O1"), -1);
    ck_assert_ptr_nonnull(strstr(why, "other settings than --upstream does"));
}
END_TEST

/*
 * A character device that is not a tty (/dev/null, of the class mem) is
 * refused where the route is written, by its class in sysfs; without that
 * entry (no sysfs here) the device is taken as a serial port, as a
 * pseudo-terminal is, and the open says otherwise later.
 */
START_TEST(test_character_device_not_a_tty)
{
    char link[64];
    int rc;

    gw_route_table_init(&t);
    rc = gw_route_add(&t, "9 rtu:/dev/null", ' ', "gw.conf:3", why, sizeof why);
    if (readlink("/sys/dev/char/1:3/subsystem", link, sizeof link) > 0) {
        ck_assert_int_eq(rc, -1);
        ck_assert_msg(strstr(why, "gw.conf:3: rtu:/dev/null: /dev/null is not a serial port (a "
                                  "character device of class mem); fix: name the serial "
                                  "device") != NULL,
                      "%s", why);
    } else {
        ck_assert_int_eq(rc, 0);
    }
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
    tcase_add_test(tc, test_serial_lines);
    tcase_add_test(tc, test_character_device_not_a_tty);
    tcase_add_test(tc, test_too_many);
    suite_add_tcase(s, tc);
    return s;
}
