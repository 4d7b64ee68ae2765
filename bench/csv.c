/* SPDX-License-Identifier: ISC */
/*
 * csv.c - write rows of the long CSV (csv.h).
 */
#include <string.h>

#include "csv.h"

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
