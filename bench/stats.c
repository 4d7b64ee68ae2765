/* SPDX-License-Identifier: ISC */
/*
 * stats.c - samples and order statistics (see stats.h).
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "stats.h"

void bench_samples_init(struct bench_samples *s, size_t expected)
{
    memset(s, 0, sizeof *s);
    s->cap = expected ? expected : 16;
    s->v = bench_xmalloc(s->cap * sizeof *s->v);
}

void bench_samples_free(struct bench_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

void bench_samples_add(struct bench_samples *s, double x)
{
    if (s->n == s->cap) {
        double *v = realloc(s->v, 2 * s->cap * sizeof *v);
        if (v == NULL)
            bench_fail("out of memory");
        s->v = v;
        s->cap *= 2;
    }
    s->v[s->n++] = x;
    s->sorted = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double bench_percentile(struct bench_samples *s, double p)
{
    size_t rank;

    if (s->n == 0)
        return 0.0;
    if (!s->sorted) {
        qsort(s->v, s->n, sizeof *s->v, cmp_double);
        s->sorted = 1;
    }
    {
        /* ceil() without libm: the rank is a small count. */
        double exact = p / 100.0 * (double)s->n;
        rank = (size_t)exact;
        if ((double)rank < exact)
            rank++;
    }
    if (rank < 1)
        rank = 1;
    if (rank > s->n)
        rank = s->n;
    return s->v[rank - 1];
}

double bench_median(struct bench_samples *s)
{
    return bench_percentile(s, 50.0);
}
