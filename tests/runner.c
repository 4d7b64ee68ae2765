/* SPDX-License-Identifier: ISC */
/*
 * runner.c - main() of every Check program.  Each program is built with
 * -DTEST_SUITE=<unit>_suite and runs that one suite; a failing case makes
 * the program exit non-zero, which automake reports as FAIL.
 */
#include <check.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef TEST_SUITE
#error "build with -DTEST_SUITE=<unit>_suite"
#endif

Suite *TEST_SUITE(void);

int main(void)
{
    SRunner *sr;
    int failed;

    if (sodium_init() < 0) {
        fprintf(stderr, "sodium_init failed\n");
        return 99; /* automake: hard error */
    }
    sr = srunner_create(TEST_SUITE());
    /* CK_VERBOSITY=verbose lists every case; the log keeps failures anyway. */
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
