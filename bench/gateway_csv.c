/* SPDX-License-Identifier: ISC */
/*
 * gateway_csv.c - read the CSV of make bench-gateway (see gateway_csv.h).
 * Strict: a file that is not what mbsc-gateway-bench writes is refused
 * with its line, rather than drawn as something it is not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "gateway_csv.h"

#define FIX "make bench-gateway writes this file: run it first"

/* The units mbsc-gateway-bench writes, as the literals bench_row keeps. */
static const char *known_unit(const char *s)
{
    static const char *const units[] = {"us", "requests/s"};

    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(units[i], s) == 0)
            return units[i];
    return NULL;
}

/* Split line (newline already removed) at its four commas; 0 if it has
 * not exactly five fields. */
static int split5(char *line, char *field[5])
{
    int n = 0;

    field[n++] = line;
    for (char *p = line; *p; p++)
        if (*p == ',') {
            if (n == 5)
                return 0;
            *p = '\0';
            field[n++] = p + 1;
        }
    return n == 5;
}

static int parse_row(char *line, struct bench_results *r, char *why, size_t why_len)
{
    char *f[5], *end;
    const char *unit;
    double value;
    unsigned long long size = 0;

    if (!split5(line, f)) {
        snprintf(why, why_len, "not 5 comma-separated fields");
        return -1;
    }
    if (strncmp(f[0], "gateway-", 8) != 0 || strlen(f[0]) >= sizeof r->rows->cipher) {
        snprintf(why, why_len, "'%.40s' is not a path of the gateway bench", f[0]);
        return -1;
    }
    if (f[1][0] == '\0' || strlen(f[1]) >= sizeof r->rows->metric) {
        snprintf(why, why_len, "bad metric '%.40s'", f[1]);
        return -1;
    }
    if (f[2][0] != '\0') {
        errno = 0;
        size = strtoull(f[2], &end, 10);
        if (errno != 0 || *end != '\0' || f[2][0] == '-') {
            snprintf(why, why_len, "bad size '%.40s'", f[2]);
            return -1;
        }
    }
    value = strtod(f[3], &end);
    if (f[3][0] == '\0' || *end != '\0' || !(value >= 0 && value < 1e15)) {
        snprintf(why, why_len, "bad value '%.40s'", f[3]);
        return -1;
    }
    if ((unit = known_unit(f[4])) == NULL) {
        snprintf(why, why_len, "unknown unit '%.40s'", f[4]);
        return -1;
    }
    bench_results_add(r, f[0], f[1], (size_t)size, value, unit);
    return 0;
}

int bench_gateway_csv_read(const char *path, struct bench_results *r, char *why, size_t why_len)
{
    static const char *const paths[] = {BENCH_GW_DIRECT, BENCH_GW_ONE, BENCH_GW_TWO};
    FILE *f = fopen(path, "r");
    char line[256], row_why[128];
    unsigned lineno = 0;
    double v;

    if (f == NULL) {
        snprintf(why, why_len, "cannot read %s: %s (%s)", path, strerror(errno), FIX);
        return -1;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        size_t len = strlen(line);

        lineno++;
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            snprintf(why, why_len, "%s:%u: line too long (%s)", path, lineno, FIX);
            fclose(f);
            return -1;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (lineno == 1) {
            if (strcmp(line, BENCH_CSV_HEADER) != 0) {
                snprintf(why, why_len, "%s:1: not the header '%s' (%s)", path, BENCH_CSV_HEADER,
                         FIX);
                fclose(f);
                return -1;
            }
            continue;
        }
        if (parse_row(line, r, row_why, sizeof row_why) != 0) {
            snprintf(why, why_len, "%s:%u: %s (%s)", path, lineno, row_why, FIX);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (!bench_results_get(r, paths[i], "rtt_us_p50", BENCH_NO_SIZE, &v)) {
            snprintf(why, why_len, "%s has no %s,rtt_us_p50 row (%s)", path, paths[i], FIX);
            return -1;
        }
    return 0;
}
