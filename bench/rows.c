/* SPDX-License-Identifier: ISC */
/*
 * rows.c - the table of figures of a run (bench.h): about 300 rows, so a
 * linear search for a row's key is plenty.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void bench_add(struct bench_ctx *ctx, const char *subject, const char *metric, size_t size,
               double value, const char *unit)
{
    struct bench_row *row = NULL;

    for (size_t i = 0; i < ctx->n_rows && row == NULL; i++)
        if (ctx->rows[i].size_bytes == size && strcmp(ctx->rows[i].cipher, subject) == 0 &&
            strcmp(ctx->rows[i].metric, metric) == 0)
            row = &ctx->rows[i];
    if (row == NULL) {
        if (ctx->n_rows == ctx->cap_rows) {
            size_t cap = ctx->cap_rows ? 2 * ctx->cap_rows : 64;
            struct bench_row *rows = realloc(ctx->rows, cap * sizeof *rows);

            if (rows == NULL)
                bench_fail("out of memory");
            ctx->rows = rows;
            ctx->cap_rows = cap;
        }
        row = &ctx->rows[ctx->n_rows++];
        snprintf(row->cipher, sizeof row->cipher, "%s", subject);
        snprintf(row->metric, sizeof row->metric, "%s", metric);
        row->size_bytes = size;
    }
    row->value = value;
    row->unit = unit;
}

void bench_add_p50_p99(struct bench_ctx *ctx, const char *subject, const char *metric, size_t size,
                       struct bench_samples *s, const char *unit)
{
    char name[24];

    snprintf(name, sizeof name, "%s_p50", metric);
    bench_add(ctx, subject, name, size, bench_median(s), unit);
    snprintf(name, sizeof name, "%s_p99", metric);
    bench_add(ctx, subject, name, size, bench_percentile(s, 99), unit);
    bench_samples_free(s);
}
