/* SPDX-License-Identifier: ISC */
/*
 * stats.c - giving up, samples and their order statistics, and the long
 * table of figures (bench.h): a run has about 300 rows, so a linear search
 * for a row's key is plenty.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void bench_fail(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fprintf(stderr, "%s: ", BENCH_PROG);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* Double the capacity of the array *v of cap elements of size each. */
static void grow(void *v, size_t *cap, size_t size)
{
    size_t n = *cap ? 2 * *cap : 64;
    void *p = realloc(*(void **)v, n * size);

    if (p == NULL)
        bench_fail("out of memory");
    *(void **)v = p;
    *cap = n;
}

void bench_samples_add(struct bench_samples *s, double x)
{
    if (s->n == s->cap)
        grow(&s->v, &s->cap, sizeof *s->v);
    s->v[s->n++] = x;
}

void bench_samples_free(struct bench_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double bench_percentile(struct bench_samples *s, double p)
{
    double exact = p / 100.0 * (double)s->n;
    size_t rank = (size_t)exact;

    if (s->n == 0)
        return 0.0;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    rank += (double)rank < exact; /* ceil() without libm */
    return s->v[(rank < 1 ? 1 : rank > s->n ? s->n : rank) - 1];
}

double bench_median(struct bench_samples *s)
{
    return bench_percentile(s, 50.0);
}

void bench_add(struct bench_ctx *ctx, const char *subject, const char *metric, size_t size,
               double value, const char *unit)
{
    struct bench_row *row = NULL;

    for (size_t i = 0; i < ctx->n_rows && row == NULL; i++)
        if (ctx->rows[i].size_bytes == size && strcmp(ctx->rows[i].cipher, subject) == 0 &&
            strcmp(ctx->rows[i].metric, metric) == 0)
            row = &ctx->rows[i];
    if (row == NULL) {
        if (ctx->n_rows == ctx->cap_rows)
            grow(&ctx->rows, &ctx->cap_rows, sizeof *ctx->rows);
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
