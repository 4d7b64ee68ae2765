/* SPDX-License-Identifier: ISC */
/*
 * csv.c - write the results table as CSV (see csv.h).
 */
#include "csv.h"

int bench_csv_write(const struct bench_results *r, FILE *f)
{
    fputs(BENCH_CSV_HEADER "\n", f);
    for (size_t i = 0; i < r->n; i++) {
        const struct bench_row *row = &r->rows[i];

        fprintf(f, "%s,%s,", row->cipher, row->metric);
        if (row->size_bytes != BENCH_NO_SIZE)
            fprintf(f, "%zu", row->size_bytes);
        /* Counts (bytes) print as integers, measured figures with six
         * significant digits: more would only be noise. */
        if (row->value >= 0 && row->value < 1e15 &&
            row->value == (double)(unsigned long long)row->value)
            fprintf(f, ",%.0f,%s\n", row->value, row->unit);
        else
            fprintf(f, ",%.6g,%s\n", row->value, row->unit);
    }
    return ferror(f) ? -1 : 0;
}
