/* SPDX-License-Identifier: ISC */
/*
 * results.c - the long table of figures (see results.h).  A run produces
 * about 150 rows, so a linear search is plenty.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "results.h"

void bench_results_init(struct bench_results *r)
{
    memset(r, 0, sizeof *r);
}

void bench_results_free(struct bench_results *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}

static struct bench_row *find(const struct bench_results *r, const char *cipher, const char *metric,
                              size_t size_bytes)
{
    for (size_t i = 0; i < r->n; i++) {
        struct bench_row *row = &r->rows[i];
        if (row->size_bytes == size_bytes && strcmp(row->cipher, cipher) == 0 &&
            strcmp(row->metric, metric) == 0)
            return row;
    }
    return NULL;
}

void bench_results_add(struct bench_results *r, const char *cipher, const char *metric,
                       size_t size_bytes, double value, const char *unit)
{
    struct bench_row *row = find(r, cipher, metric, size_bytes);

    if (row == NULL) {
        if (r->n == r->cap) {
            size_t cap = r->cap ? 2 * r->cap : 64;
            struct bench_row *rows = realloc(r->rows, cap * sizeof *rows);
            if (rows == NULL)
                bench_fail("out of memory");
            r->rows = rows;
            r->cap = cap;
        }
        row = &r->rows[r->n++];
        memset(row, 0, sizeof *row);
        snprintf(row->cipher, sizeof row->cipher, "%s", cipher);
        snprintf(row->metric, sizeof row->metric, "%s", metric);
        row->size_bytes = size_bytes;
    }
    row->value = value;
    row->unit = unit;
}
