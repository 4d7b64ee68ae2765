/* SPDX-License-Identifier: ISC */
/*
 * check_init.c - mbsc_init() and the version API: init is idempotent and
 * safe from many threads at once; the version macros, mbsc_version() and
 * configure's PACKAGE_VERSION agree.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "mbsc.h"

Suite *init_suite(void);

START_TEST(test_init_idempotent)
{
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(mbsc_init(), MBSC_OK);
}
END_TEST

#define N_THREADS 8

static void *init_thread(void *arg)
{
    int *rc = arg;

    *rc = MBSC_OK;
    for (int i = 0; i < 1000 && *rc == MBSC_OK; i++)
        *rc = mbsc_init();
    return NULL;
}

START_TEST(test_init_threads)
{
    pthread_t t[N_THREADS];
    int rc[N_THREADS];

    for (int i = 0; i < N_THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, init_thread, &rc[i]), 0);
    for (int i = 0; i < N_THREADS; i++) {
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        ck_assert_int_eq(rc[i], MBSC_OK);
    }
}
END_TEST

START_TEST(test_init_error_text)
{
    ck_assert_ptr_nonnull(strstr(mbsc_strerror(MBSC_ERR_INIT), "libsodium"));
}
END_TEST

START_TEST(test_version_agrees)
{
    char built[32];

    ck_assert_str_eq(mbsc_version(), MBSC_VERSION_STRING);
    ck_assert_str_eq(MBSC_VERSION_STRING, PACKAGE_VERSION);
    snprintf(built, sizeof built, "%d.%d.%d", MBSC_VERSION_MAJOR, MBSC_VERSION_MINOR,
             MBSC_VERSION_PATCH);
    ck_assert_str_eq(built, MBSC_VERSION_STRING);
    ck_assert_int_eq(MBSC_VERSION_NUMBER,
                     (MBSC_VERSION_MAJOR << 16) | (MBSC_VERSION_MINOR << 8) | MBSC_VERSION_PATCH);
    ck_assert_int_lt(MBSC_VERSION_MINOR, 256);
    ck_assert_int_lt(MBSC_VERSION_PATCH, 256);
}
END_TEST

Suite *init_suite(void)
{
    Suite *s = suite_create("init");
    TCase *tc = tcase_create("init");

    tcase_add_test(tc, test_init_idempotent);
    tcase_add_test(tc, test_init_threads);
    tcase_add_test(tc, test_init_error_text);
    tcase_add_test(tc, test_version_agrees);
    suite_add_tcase(s, tc);
    return s;
}
