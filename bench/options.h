/* SPDX-License-Identifier: ISC */
/*
 * options.h - the command line of mbsc-bench.
 */
#ifndef MBSC_BENCH_OPTIONS_H
#define MBSC_BENCH_OPTIONS_H

#include <stdio.h>

#include "mbsc/cipher.h"

struct bench_options {
    int quick;
    const char *csv;                 /* NULL: stdout */
    double cpu_mhz;                  /* 0: not given */
    int only[MBSC_CIPHER_COUNT + 1]; /* by wire id; all zero: every cipher */
};

/*
 * Parse argv.  Returns 0 to run, 1 after printing --help or --version (exit 0), 2 after
 * printing one line "mbsc-bench: <reason>" on stderr (exit 2).
 */
int bench_parse_options(int argc, char **argv, struct bench_options *o);

void bench_usage(FILE *f);

#endif /* MBSC_BENCH_OPTIONS_H */
