/* SPDX-License-Identifier: ISC */
/*
 * plot_script.h - what gnuplot is given to draw the PNG: whitespace-separated
 * data tables and the script plot.gp that reads them, written into one
 * directory.  Apart from running gnuplot (plot.c) so that a test can read
 * what the picture will say without gnuplot.
 */
#ifndef MBSC_BENCH_PLOT_SCRIPT_H
#define MBSC_BENCH_PLOT_SCRIPT_H

#include "bench.h"
#include "machine.h"

/* The files bench_plot_write writes, all in the directory it is given:
 * the tables gnuplot reads and the script, for removing them afterwards. */
#define BENCH_N_PLOT_FILES 4u
extern const char *const bench_plot_files[BENCH_N_PLOT_FILES];

/* Write the tables and dir/plot.gp, which draws the PNG png (an absolute
 * path: the script changes to dir).  0, or -1 if a file could not be written. */
int bench_plot_write(const struct bench_ctx *ctx, const struct bench_machine *m, const char *dir,
                     const char *png);

#endif /* MBSC_BENCH_PLOT_SCRIPT_H */
