/* SPDX-License-Identifier: ISC */
/*
 * results.h - every figure of a run as one row of a long table
 * (cipher, metric, size, value, unit): the CSV is this table as it stands.
 */
#ifndef MBSC_BENCH_RESULTS_H
#define MBSC_BENCH_RESULTS_H

#include <stddef.h>

/* size_bytes of a row to which no message size applies. */
#define BENCH_NO_SIZE ((size_t)0)

struct bench_row {
    char cipher[32];
    char metric[24];
    size_t size_bytes; /* BENCH_NO_SIZE or the message size */
    double value;
    const char *unit; /* a string literal */
};

struct bench_results {
    struct bench_row *rows;
    size_t n, cap;
};

void bench_results_init(struct bench_results *r);
void bench_results_free(struct bench_results *r);

/* Append a row (a later row with the same key replaces the earlier one). */
void bench_results_add(struct bench_results *r, const char *cipher, const char *metric,
                       size_t size_bytes, double value, const char *unit);

#endif /* MBSC_BENCH_RESULTS_H */
