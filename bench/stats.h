/* SPDX-License-Identifier: ISC */
/*
 * stats.h - a growable array of samples and the order statistics the bench
 * reports.  Medians and percentiles rather than means: on a shared machine
 * a few samples are hit by preemption, and they must not move the figure.
 */
#ifndef MBSC_BENCH_STATS_H
#define MBSC_BENCH_STATS_H

#include <stddef.h>

struct bench_samples {
    double *v;
    size_t n, cap;
    int sorted;
};

void bench_samples_init(struct bench_samples *s, size_t expected);
void bench_samples_free(struct bench_samples *s);
void bench_samples_add(struct bench_samples *s, double x);

/*
 * The p-th percentile (0 < p <= 100) by the nearest-rank rule: the smallest
 * sample with at least p % of the samples at or below it, so p99 is a value
 * that was really observed.  Sorts the samples; 0 when there are none.
 */
double bench_percentile(struct bench_samples *s, double p);
double bench_median(struct bench_samples *s);

#endif /* MBSC_BENCH_STATS_H */
