/* SPDX-License-Identifier: ISC */
/*
 * common.c - what both bench programs share (common.h).
 *
 * The command line is parsed by hand rather than with getopt_long: every
 * mistake must come out as exactly one line "PROG: <reason>" with exit
 * status 2, which getopt's own messages do not give.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mbsc/version.h"

#include "common.h"

const char *bench_prog = "bench"; /* main() names its program first thing */

static __attribute__((format(printf, 1, 0))) void say(const char *fmt, va_list ap)
{
    fflush(stdout);
    fprintf(stderr, "%s: ", bench_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void bench_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    say(fmt, ap);
    va_end(ap);
    exit(1);
}

int bench_bad_arg(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    say(fmt, ap);
    va_end(ap);
    return 2;
}

void bench_samples_add(struct bench_samples *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        double *v = realloc(s->v, cap * sizeof *v);

        if (v == NULL)
            bench_fail("out of memory");
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
}

void bench_samples_free(struct bench_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double bench_percentile(struct bench_samples *s, double p)
{
    double exact = p / 100.0 * (double)s->n;
    size_t rank = (size_t)exact;

    if (s->n == 0)
        return 0.0;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    rank += (double)rank < exact; /* ceil() without libm */
    return s->v[(rank < 1 ? 1 : rank > s->n ? s->n : rank) - 1];
}

double bench_median(struct bench_samples *s)
{
    return bench_percentile(s, 50.0);
}

int bench_options(int argc, char **argv, const struct bench_option *opts, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        const struct bench_option *o = opts;
        size_t len = 0;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return fputs(usage, stdout), 1;
        if (strcmp(arg, "--version") == 0)
            return printf("%s (mbsc) %s\n", bench_prog, mbsc_version()), 1;
        for (; o->name != NULL; o++) {
            len = strlen(o->name);
            if (strncmp(arg, o->name, len) == 0 &&
                (arg[len] == '\0' || (arg[len] == '=' && o->value != NULL)))
                break;
        }
        if (o->name == NULL)
            return bench_bad_arg(arg[0] == '-' ? "unknown option '%s' (see --help)"
                                               : "unexpected argument '%s' (see --help)",
                                 arg);
        if (o->flag != NULL) {
            *o->flag = 1;
            continue;
        }
        if (arg[len] == '=')
            val = arg + len + 1;
        else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
            val = argv[++i]; /* "--csv --quick" is a forgotten value, not a file */
        if (val == NULL)
            return bench_bad_arg("%s needs a value (see --help)", o->name);
        if (val[0] == '\0')
            return bench_bad_arg("%s needs a non-empty value", o->name);
        *o->value = val;
    }
    return 0;
}

FILE *bench_csv_open(const char *path)
{
    FILE *f = path != NULL ? fopen(path, "w") : stdout;

    if (f == NULL) {
        bench_bad_arg("cannot write CSV file %s: %s", path, strerror(errno));
        exit(2);
    }
    fputs(BENCH_CSV_HEADER "\n", f);
    return f;
}

void bench_csv_close(FILE *f, const char *path)
{
    if (f == stdout ? fflush(f) != 0 || ferror(f) : (ferror(f) || fclose(f) != 0))
        bench_fail("error writing %s", path != NULL ? path : "the CSV");
}

void bench_csv_num(FILE *f, const char *subject, const char *metric, size_t size, double value,
                   const char *unit)
{
    fprintf(f, "%s,%s,", subject, metric);
    if (size != 0)
        fprintf(f, "%zu", size);
    /* Counts print as integers, measured figures with six significant
     * digits: more would only be noise. */
    if (value >= 0 && value < 1e15 && value == (double)(unsigned long long)value)
        fprintf(f, ",%.0f,%s\n", value, unit);
    else
        fprintf(f, ",%.6g,%s\n", value, unit);
}

void bench_csv_text(FILE *f, const char *subject, const char *metric, const char *text)
{
    fprintf(f, "%s,%s,,", subject, metric);
    if (strpbrk(text, ",\"\n") == NULL) {
        fputs(text, f);
    } else {
        fputc('"', f);
        for (const char *c = text; *c != '\0'; c++) {
            if (*c == '"')
                fputc('"', f);
            fputc(*c == '\n' ? ' ' : *c, f);
        }
        fputc('"', f);
    }
    fputs(",text\n", f);
}

void bench_csv_p50_p99(FILE *f, const char *subject, const char *metric, size_t size,
                       struct bench_samples *s, const char *unit)
{
    char name[64];

    snprintf(name, sizeof name, "%s_p50", metric);
    bench_csv_num(f, subject, name, size, bench_median(s), unit);
    snprintf(name, sizeof name, "%s_p99", metric);
    bench_csv_num(f, subject, name, size, bench_percentile(s, 99), unit);
    bench_samples_free(s);
}
