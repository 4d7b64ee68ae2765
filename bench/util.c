/* SPDX-License-Identifier: ISC */
/*
 * util.c - how every part of mbsc-bench gives up: a message and exit 1.
 *
 * In a file of their own, below every group, so that the files main.c
 * calls do not call back into main.c (an include ring).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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

void *bench_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL)
        bench_fail("out of memory");
    return p;
}
