/* SPDX-License-Identifier: ISC */
/* kat_reader.c - see kat_reader.h. */
#include "kat_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Split "name = value"; returns value or NULL if the line is not that field. */
static const char *field(const char *line, const char *name)
{
    size_t n = strlen(name);

    if (strncmp(line, name, n) != 0)
        return NULL;
    line += n;
    while (*line == ' ')
        line++;
    if (*line != '=')
        return NULL;
    line++;
    while (*line == ' ')
        line++;
    return line;
}

static int parse_error(const char *relpath, unsigned line, const char *what)
{
    fprintf(stderr, "%s:%u: %s\n", relpath, line, what);
    return -1;
}

int kat_load(struct kat_file *kf, const char *relpath)
{
    size_t len, cap = 0;
    char *text = tu_read_srcfile(relpath, &len);
    char *p, *next;
    char last_comment[160] = "";
    unsigned lineno = 0, expect = 0; /* 0 key, 1 iv, 2 offset, 3 keystream */
    struct kat_case *c = NULL;
    int rc = 0;

    memset(kf, 0, sizeof *kf);
    if (text == NULL)
        return -1;
    for (p = text; p != NULL && *p != '\0' && rc == 0; p = next) {
        const char *v;
        long n;

        next = strchr(p, '\n');
        if (next != NULL)
            *next++ = '\0';
        lineno++;
        if (p[0] == '#') {
            snprintf(last_comment, sizeof last_comment, "%s", p);
            continue;
        }
        if (p[0] == '\0') {
            if (expect != 0)
                rc = parse_error(relpath, lineno, "case cut short by a blank line");
            continue;
        }
        switch (expect) {
        case 0:
            if ((v = field(p, "key")) == NULL) {
                rc = parse_error(relpath, lineno, "expected 'key ='");
                break;
            }
            if (kf->count == cap) {
                struct kat_case *grown;
                cap = cap ? 2 * cap : 64;
                grown = realloc(kf->cases, cap * sizeof *grown);
                if (grown == NULL) {
                    rc = parse_error(relpath, lineno, "out of memory");
                    break;
                }
                kf->cases = grown;
            }
            c = &kf->cases[kf->count++];
            memset(c, 0, sizeof *c);
            c->line = lineno;
            snprintf(c->source, sizeof c->source, "%s", last_comment);
            n = tu_hex_decode(c->key, sizeof c->key, v, strlen(v));
            if (n < 0)
                rc = parse_error(relpath, lineno, "bad key hex");
            c->key_len = (size_t)n;
            break;
        case 1:
            if ((v = field(p, "iv")) == NULL ||
                (n = tu_hex_decode(c->iv, sizeof c->iv, v, strlen(v))) < 0) {
                rc = parse_error(relpath, lineno, "expected 'iv = hex'");
                break;
            }
            c->iv_len = (size_t)n;
            break;
        case 2: {
            char *end;
            if ((v = field(p, "offset")) == NULL || *v == '\0') {
                rc = parse_error(relpath, lineno, "expected 'offset = decimal'");
                break;
            }
            c->offset = strtoul(v, &end, 10);
            if (*end != '\0')
                rc = parse_error(relpath, lineno, "bad offset");
            break;
        }
        case 3:
            if ((v = field(p, "keystream")) == NULL ||
                (c->keystream = tu_hex_alloc(v, &c->keystream_len)) == NULL ||
                c->keystream_len == 0)
                rc = parse_error(relpath, lineno, "expected 'keystream = hex'");
            break;
        }
        expect = (expect + 1) % 4;
    }
    if (rc == 0 && expect != 0)
        rc = parse_error(relpath, lineno, "file ends inside a case");
    if (rc == 0 && kf->count == 0)
        rc = parse_error(relpath, lineno, "no cases");
    free(text);
    if (rc != 0)
        kat_free(kf);
    return rc;
}

void kat_free(struct kat_file *kf)
{
    size_t i;

    for (i = 0; i < kf->count; i++)
        free(kf->cases[i].keystream);
    free(kf->cases);
    memset(kf, 0, sizeof *kf);
}
