/* SPDX-License-Identifier: ISC */
/*
 * plot.h - one PNG with two panels, drawn by gnuplot: keystream throughput
 * against message size for every cipher (log-log), and per-frame latency
 * (seal and open of a 12- and a 260-byte ADU, median with a bar up to p99).
 */
#ifndef MBSC_BENCH_PLOT_H
#define MBSC_BENCH_PLOT_H

#include "bench.h"
#include "machine.h"

/* 0 when the PNG was written, 1 when gnuplot is not installed (a message on
 * stderr; not an error), -1 when gnuplot failed (message on stderr). */
int bench_plot(const struct bench_ctx *ctx, const struct bench_machine *m, const char *png);

#endif /* MBSC_BENCH_PLOT_H */
