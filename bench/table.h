/* SPDX-License-Identifier: ISC */
/*
 * table.h - a small table of text cells that prints either as aligned
 * columns (stdout) or as Markdown (--markdown), so that both outputs show
 * the same figures laid out the same way.
 */
#ifndef MBSC_BENCH_TABLE_H
#define MBSC_BENCH_TABLE_H

#include <stdio.h>

#define TABLE_MAX_COLS  12
#define TABLE_MAX_ROWS  16
#define TABLE_MAX_NOTES 6
#define TABLE_CELL      48

struct table {
    char title[160];
    size_t ncols, nrows, nnotes;
    char head[TABLE_MAX_COLS][TABLE_CELL];
    int left[TABLE_MAX_COLS]; /* 1: left-aligned (names); numbers go right */
    char cell[TABLE_MAX_ROWS][TABLE_MAX_COLS][TABLE_CELL];
    char note[TABLE_MAX_NOTES][256];
};

void table_init(struct table *t, const char *title);
/* Add a column; the first one (names) is left-aligned. */
void table_col(struct table *t, const char *head);
/* Start a row; then table_cell once per column. */
void table_row(struct table *t);
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line printed under the table. */
void table_note(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void table_print_text(const struct table *t, FILE *f);
void table_print_markdown(const struct table *t, FILE *f);

#endif /* MBSC_BENCH_TABLE_H */
