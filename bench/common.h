/* SPDX-License-Identifier: ISC */
/*
 * common.h - what both bench programs share: giving up, samples and their
 * order statistics, the command line, and the CSV they write, one figure a
 * line:
 *     cipher,metric,size_bytes,value,unit
 * "cipher" is the subject: a cipher, an implementation (chacha20:avx2), a
 * baseline, a gateway path (gw1-chacha20), a process on a path
 * (gw2-rabbit/client-gw), or "machine"/"run"/"gateway" for the description
 * of the run.  size_bytes is empty where no message size applies.  Rows
 * whose unit is "text" carry words in value (quoted as RFC 4180 says).
 * Long rather than wide so that runs from several boards concatenate and
 * load into any tool without reshaping; bench/report.py typesets it.
 */
#ifndef MBSC_BENCH_COMMON_H
#define MBSC_BENCH_COMMON_H

#include <stddef.h>
#include <stdio.h>

#define BENCH_CSV_HEADER "cipher,metric,size_bytes,value,unit"

extern const char *bench_prog; /* the program's name, for its messages (main sets it) */

/* "PROG: <reason>" on stderr; bench_fail then exits 1, bench_bad_arg returns 2. */
void bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
int bench_bad_arg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Samples of one figure.  Medians and percentiles rather than means: on a
 * shared machine a few samples are hit by preemption, and they must not
 * move the figure.  All zero is an empty set. */
struct bench_samples {
    double *v;
    size_t n, cap;
};

void bench_samples_add(struct bench_samples *s, double x);
void bench_samples_free(struct bench_samples *s);
/* The p-th percentile by the nearest-rank rule (a value really observed). */
double bench_percentile(struct bench_samples *s, double p);
double bench_median(struct bench_samples *s);

/* An option: a flag (*flag = 1), or one with a value (*value), given as
 * --name VALUE or --name=VALUE.  opts ends with a NULL name. */
struct bench_option {
    const char *name;
    int *flag;
    const char **value;
};

/* 0 to run, 1 after --help or --version (exit 0), 2 after a one-line reason. */
int bench_options(int argc, char **argv, const struct bench_option *opts, const char *usage);

/* The CSV with its header line, opened before measuring so that a wrong
 * path fails at once (NULL: stdout); any write error is fatal at the close. */
FILE *bench_csv_open(const char *path);
void bench_csv_close(FILE *f, const char *path);
/* One figure; size 0 leaves size_bytes empty. */
void bench_csv_num(FILE *f, const char *subject, const char *metric, size_t size, double value,
                   const char *unit);
void bench_csv_text(FILE *f, const char *subject, const char *metric, const char *text);
/* METRIC_p50 and METRIC_p99 of s as two rows; frees s. */
void bench_csv_p50_p99(FILE *f, const char *subject, const char *metric, size_t size,
                       struct bench_samples *s, const char *unit);

#endif /* MBSC_BENCH_COMMON_H */
