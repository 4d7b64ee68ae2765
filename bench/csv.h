/* SPDX-License-Identifier: ISC */
/*
 * csv.h - the results in long format, one figure per line:
 *     cipher,metric,size_bytes,value,unit
 * size_bytes is empty where no message size applies.  Long rather than
 * wide so that runs from several boards concatenate and load into any
 * tool (R, pandas, a spreadsheet's pivot table) without reshaping.
 */
#ifndef MBSC_BENCH_CSV_H
#define MBSC_BENCH_CSV_H

#include <stdio.h>

#include "results.h"

/* The first line of every such file. */
#define BENCH_CSV_HEADER "cipher,metric,size_bytes,value,unit"

/* 0, or -1 if writing failed. */
int bench_csv_write(const struct bench_results *r, FILE *f);

#endif /* MBSC_BENCH_CSV_H */
