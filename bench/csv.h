/* SPDX-License-Identifier: ISC */
/*
 * csv.h - every figure of both bench programs in long format, one a line:
 *     cipher,metric,size_bytes,value,unit
 * "cipher" is the subject: a cipher, an implementation (chacha20:avx2), a
 * baseline, a gateway path (gw1-chacha20), a process on a path
 * (gw2-rabbit/client-gw), or "machine"/"run"/"gateway" for the description
 * of the run.  size_bytes is empty where no message size applies.  Rows
 * whose unit is "text" carry words, not a number, in value (quoted as RFC
 * 4180 says when they hold a comma or a quote): the machine description,
 * which implementation ran, why a row is missing.  Long rather than wide so
 * that runs from several boards concatenate and load into any tool without
 * reshaping; bench/report.py turns it into the tables and the picture.
 */
#ifndef MBSC_BENCH_CSV_H
#define MBSC_BENCH_CSV_H

#include <stddef.h>
#include <stdio.h>

/* The first line of every such file. */
#define BENCH_CSV_HEADER "cipher,metric,size_bytes,value,unit"

/* One figure; size 0 leaves size_bytes empty. */
void bench_csv_num(FILE *f, const char *subject, const char *metric, size_t size, double value,
                   const char *unit);
/* One row of words (unit "text"). */
void bench_csv_text(FILE *f, const char *subject, const char *metric, const char *text);

#endif /* MBSC_BENCH_CSV_H */
