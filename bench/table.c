/* SPDX-License-Identifier: ISC */
/*
 * table.c - render a table as text or Markdown (see table.h).  Cells are
 * ASCII ("us", not "µs") so that byte counts are column widths.
 */
#include <stdarg.h>
#include <string.h>

#include "table.h"

void table_init(struct table *t, const char *title)
{
    memset(t, 0, sizeof *t);
    snprintf(t->title, sizeof t->title, "%s", title);
}

void table_col(struct table *t, const char *head)
{
    if (t->ncols == TABLE_MAX_COLS)
        return;
    snprintf(t->head[t->ncols], TABLE_CELL, "%s", head);
    t->left[t->ncols] = t->ncols == 0;
    t->ncols++;
}

/* Column of the next table_cell in the current row. */
static size_t next_col(const struct table *t)
{
    size_t c = 0;

    while (c < t->ncols && t->cell[t->nrows - 1][c][0] != '\0')
        c++;
    return c;
}

void table_row(struct table *t)
{
    if (t->nrows < TABLE_MAX_ROWS)
        t->nrows++;
}

void table_cell(struct table *t, const char *fmt, ...)
{
    va_list ap;
    size_t c;

    if (t->nrows == 0 || (c = next_col(t)) == t->ncols)
        return;
    va_start(ap, fmt);
    vsnprintf(t->cell[t->nrows - 1][c], TABLE_CELL, fmt, ap);
    va_end(ap);
    if (t->cell[t->nrows - 1][c][0] == '\0') /* an empty cell would end the row */
        snprintf(t->cell[t->nrows - 1][c], TABLE_CELL, "-");
}

void table_note(struct table *t, const char *fmt, ...)
{
    va_list ap;

    if (t->nnotes == TABLE_MAX_NOTES)
        return;
    va_start(ap, fmt);
    vsnprintf(t->note[t->nnotes++], sizeof t->note[0], fmt, ap);
    va_end(ap);
}

static void print_cell(FILE *f, const char *s, size_t width, int left)
{
    fprintf(f, left ? "%-*s" : "%*s", (int)width, s);
}

void table_print_text(const struct table *t, FILE *f)
{
    size_t w[TABLE_MAX_COLS], total = 0;

    for (size_t c = 0; c < t->ncols; c++) {
        w[c] = strlen(t->head[c]);
        for (size_t r = 0; r < t->nrows; r++)
            if (strlen(t->cell[r][c]) > w[c])
                w[c] = strlen(t->cell[r][c]);
        total += w[c] + (c ? 2 : 0);
    }
    fprintf(f, "\n%s\n", t->title);
    for (size_t c = 0; c < t->ncols; c++) {
        fputs(c ? "  " : "", f);
        print_cell(f, t->head[c], w[c], t->left[c]);
    }
    fputc('\n', f);
    for (size_t i = 0; i < total; i++)
        fputc('-', f);
    fputc('\n', f);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            fputs(c ? "  " : "", f);
            print_cell(f, t->cell[r][c], w[c], t->left[c]);
        }
        fputc('\n', f);
    }
    for (size_t i = 0; i < t->nnotes; i++)
        fprintf(f, "  %s\n", t->note[i]);
}

/* Text as Markdown shows it literally: "*" would start emphasis, "<name>"
 * would be taken for an HTML tag, "|" would end a table cell. */
static void md_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else {
            if (strchr("\\*_|`[]", *s) != NULL)
                fputc('\\', f);
            fputc(*s, f);
        }
    }
}

void table_print_markdown(const struct table *t, FILE *f)
{
    fputs("\n**", f);
    md_text(f, t->title);
    fputs("**\n\n|", f);
    for (size_t c = 0; c < t->ncols; c++) {
        fputc(' ', f);
        md_text(f, t->head[c]);
        fputs(" |", f);
    }
    fputs("\n|", f);
    for (size_t c = 0; c < t->ncols; c++)
        fputs(t->left[c] ? "---|" : "---:|", f);
    fputc('\n', f);
    for (size_t r = 0; r < t->nrows; r++) {
        fputc('|', f);
        for (size_t c = 0; c < t->ncols; c++) {
            fputc(' ', f);
            md_text(f, t->cell[r][c]);
            fputs(" |", f);
        }
        fputc('\n', f);
    }
    if (t->nnotes > 0)
        fputc('\n', f);
    for (size_t i = 0; i < t->nnotes; i++) {
        md_text(f, t->note[i]);
        /* Two trailing spaces: a line break inside one paragraph. */
        fputs(i + 1 < t->nnotes ? "  \n" : "\n", f);
    }
}
