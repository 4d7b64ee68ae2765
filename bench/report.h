/* SPDX-License-Identifier: ISC */
/*
 * report.h - the human tables: stdout, and the same tables as Markdown for
 * --markdown FILE.
 */
#ifndef MBSC_BENCH_REPORT_H
#define MBSC_BENCH_REPORT_H

#include <stdio.h>

#include "bench.h"
#include "machine.h"

void bench_report(struct bench_ctx *ctx, const struct bench_machine *m, FILE *out, int markdown);

#endif /* MBSC_BENCH_REPORT_H */
