/* SPDX-License-Identifier: ISC */
/*
 * policy_parse.c - reading a policy file (format: docs/policy.md).
 *
 * One rule per line, fields separated by spaces or tabs, "#" to the end of
 * the line a comment:
 *
 *     ROLE read|write|read-write TABLE ADDRESSES...
 *     ROLE function CODE[:SUB[-SUB]]...
 *     ROLE none
 *
 * ADDRESSES and CODEs are comma-separated lists (possibly spread over
 * several fields) of numbers, decimal or 0x-hexadecimal; an address item is
 * N, N-M or "*" (0-65535).  A CODE with sub-functions (policy_functions.c)
 * may name some of them after a colon.  Ranges are collected per role,
 * table and access (and per code with sub-functions), then sorted and
 * merged once the whole file has been read.  The first bad line is
 * reported with its number, what is wrong and the fix.  A valid rule that
 * grants more than it seems leaves a warning on the policy.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "keys/keyio.h"
#include "mbsc/pdu.h"
#include "policy/policy_internal.h"

const char *const mbsc_policy_table_names[POLICY_TABLE_COUNT] = {
    [POLICY_COILS] = "coils",
    [POLICY_DISCRETE_INPUTS] = "discrete-inputs",
    [POLICY_HOLDING_REGISTERS] = "holding-registers",
    [POLICY_INPUT_REGISTERS] = "input-registers",
};

const char *const mbsc_policy_access_names[POLICY_ACCESS_COUNT] = {
    [POLICY_READ] = "read",
    [POLICY_WRITE] = "write",
};

/* Where the parser is, and the message of the first error. */
struct parse_ctx {
    mbsc_policy *p;
    const char *src;
    unsigned long line;
    const char *msg;
    char msg_buf[256]; /* for messages that name a function code */
};

/* Keep "SRC:LINE: " and the formatted text as one of p's warnings. */
static int add_warning(struct parse_ctx *c, const char *fmt, ...) MBSC_PRINTF(2, 3);

static int add_warning(struct parse_ctx *c, const char *fmt, ...)
{
    mbsc_policy *p = c->p;
    va_list ap;
    char *w;
    int at, n;

    if (p->warning_count == p->warning_cap) {
        size_t cap = p->warning_cap == 0 ? 4 : p->warning_cap * 2;
        char **grown = realloc(p->warnings, cap * sizeof *grown);
        if (grown == NULL)
            return MBSC_ERR_NOMEM;
        p->warnings = grown;
        p->warning_cap = cap;
    }
    at = snprintf(NULL, 0, "%s:%lu: ", c->src, c->line);
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (at < 0 || n < 0 || (w = malloc((size_t)at + (size_t)n + 1)) == NULL)
        return MBSC_ERR_NOMEM;
    (void)snprintf(w, (size_t)at + 1, "%s:%lu: ", c->src, c->line);
    va_start(ap, fmt);
    (void)vsnprintf(w + at, (size_t)n + 1, fmt, ap);
    va_end(ap);
    p->warnings[p->warning_count++] = w;
    return MBSC_OK;
}

/* A field of a line: s[0..n). */
struct field {
    const char *s;
    size_t n;
};

static int field_is(const struct field *f, const char *word)
{
    return f->n == strlen(word) && memcmp(f->s, word, f->n) == 0;
}

/* 1 if the field is a valid role name: 1 to 63 of [A-Za-z0-9._-]. */
static int valid_role(const struct field *f)
{
    size_t i;

    if (f->n == 0 || f->n >= POLICY_ROLE_SIZE)
        return 0;
    for (i = 0; i < f->n; i++) {
        char c = f->s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

/* Parse s[0..n) as a decimal or 0x-hex number <= max.  1 on success. */
static int parse_number(const char *s, size_t n, unsigned long max, unsigned long *out)
{
    unsigned long v = 0, base = 10;
    size_t i = 0;

    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        i = 2;
    }
    if (i == n)
        return 0;
    for (; i < n; i++) {
        char c = s[i];
        unsigned long d;
        if (c >= '0' && c <= '9')
            d = (unsigned long)(c - '0');
        else if (base == 16 && c >= 'a' && c <= 'f')
            d = (unsigned long)(c - 'a' + 10);
        else if (base == 16 && c >= 'A' && c <= 'F')
            d = (unsigned long)(c - 'A' + 10);
        else
            return 0;
        v = v * base + d;
        if (v > max)
            return 0;
    }
    *out = v;
    return 1;
}

static struct policy_role *role_for(mbsc_policy *p, const struct field *name)
{
    struct policy_role *r;
    size_t i;

    for (i = 0; i < p->count; i++) {
        if (strlen(p->roles[i].name) == name->n && memcmp(p->roles[i].name, name->s, name->n) == 0)
            return &p->roles[i];
    }
    if (p->count == p->cap) {
        size_t cap = p->cap == 0 ? 8 : p->cap * 2;
        struct policy_role *grown = realloc(p->roles, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;
        p->roles = grown;
        p->cap = cap;
    }
    r = &p->roles[p->count++];
    memset(r, 0, sizeof *r);
    memcpy(r->name, name->s, name->n);
    return r;
}

static int add_range(struct policy_ranges *set, unsigned long first, unsigned long last)
{
    if (set->count == set->cap) {
        size_t cap = set->cap == 0 ? 4 : set->cap * 2;
        struct policy_range *grown = realloc(set->v, cap * sizeof *grown);
        if (grown == NULL)
            return MBSC_ERR_NOMEM;
        set->v = grown;
        set->cap = cap;
    }
    set->v[set->count].first = (uint16_t)first;
    set->v[set->count].last = (uint16_t)last;
    set->count++;
    return MBSC_OK;
}

/*
 * Call item(ctx, s, n) for every comma-separated item of the fields;
 * an empty item (",," or a trailing comma) is an error.  Returns what the
 * first failing call returned, or MBSC_OK.
 */
typedef int (*item_fn)(void *ctx, const char *s, size_t n);

static int for_each_item(const struct field *f, size_t nf, item_fn item, void *ctx)
{
    size_t i;

    for (i = 0; i < nf; i++) {
        const char *s = f[i].s, *end = f[i].s + f[i].n;
        while (s <= end) {
            const char *comma = memchr(s, ',', (size_t)(end - s));
            const char *stop = comma != NULL ? comma : end;
            int rc = item(ctx, s, (size_t)(stop - s));
            if (rc != MBSC_OK)
                return rc;
            s = stop + 1;
        }
    }
    return MBSC_OK;
}

struct range_ctx {
    struct policy_ranges *set;
    const char **msg;
};

static int range_item(void *ctx, const char *s, size_t n)
{
    struct range_ctx *c = ctx;
    const char *dash = memchr(s, '-', n);
    unsigned long first, last;

    if (n == 1 && s[0] == '*') {
        first = 0;
        last = 0xFFFF;
    } else if (dash == NULL) {
        if (!parse_number(s, n, 0xFFFF, &first)) {
            *c->msg = "bad address (use N, N-M or *, each from 0 to 65535; addresses are "
                      "0-based, as on the wire)";
            return MBSC_ERR_POLICY_SYNTAX;
        }
        last = first;
    } else if (!parse_number(s, (size_t)(dash - s), 0xFFFF, &first) ||
               !parse_number(dash + 1, n - (size_t)(dash - s) - 1, 0xFFFF, &last)) {
        *c->msg = "bad address range (use N-M with 0 <= N <= M <= 65535)";
        return MBSC_ERR_POLICY_SYNTAX;
    } else if (first > last) {
        *c->msg = "address range runs backwards (write the lower address first: N-M)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    return add_range(c->set, first, last);
}

struct function_ctx {
    struct parse_ctx *at;
    struct policy_role *role;
};

/* The SUB or SUB-SUB after "CODE:", into the role's set for f. */
static int sub_item(struct function_ctx *c, const struct policy_function *f, const char *s,
                    size_t n)
{
    unsigned long max = f->sub_bytes == 2 ? 0xFFFF : 0xFF, first, last;
    const char *dash = memchr(s, '-', n);

    if (n == 0) {
        c->at->msg = "missing sub-function after ':' (no space after it; e.g. 0x08:0x00 or "
                     "0x2b:0x0e)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    if (dash == NULL ? !parse_number(s, n, max, &first)
                     : !parse_number(s, (size_t)(dash - s), max, &first) ||
                           !parse_number(dash + 1, n - (size_t)(dash - s) - 1, max, &last)) {
        c->at->msg = f->sub_bytes == 2
                         ? "bad diagnostics sub-function (use CODE:SUB or CODE:SUB-SUB with "
                           "SUB from 0 to 0xffff, e.g. 0x08:0x00 for return query data)"
                         : "bad MEI type (use CODE:TYPE or CODE:TYPE-TYPE with TYPE from 0 to "
                           "0xff, e.g. 0x2b:0x0e for read device identification)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    if (dash == NULL)
        last = first;
    else if (first > last) {
        c->at->msg = "sub-function range runs backwards (write the lower one first: "
                     "CODE:SUB-SUB)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    return add_range(&c->role->subs[f->sub_slot], first, last);
}

/* One item of a "function" rule: CODE, or CODE:SUB[-SUB] for a code with sub-functions. */
static int function_item(void *ctx, const char *s, size_t n)
{
    struct function_ctx *c = ctx;
    const char *colon = memchr(s, ':', n);
    size_t code_len = colon != NULL ? (size_t)(colon - s) : n;
    const struct policy_function *f;
    enum policy_table table;
    enum policy_access access;
    unsigned long code;
    int both;

    if (colon == s) {
        c->at->msg = "a sub-function needs its function code, with no space before ':' (e.g. "
                     "0x08:0x00 or 0x2b:0x0e)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    if (!parse_number(s, code_len, 0xFF, &code) || code == 0 || code >= POLICY_FUNCTION_CODES) {
        c->at->msg = "bad function code (use 1 to 127, decimal or 0x-hex, e.g. 0x2b, or "
                     "CODE:SUB for a sub-function, e.g. 0x2b:0x0e)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    f = mbsc_policy_function((unsigned)code);
    if (mbsc_policy_table_code((unsigned)code, &table, &access, &both)) {
        uint8_t fc = (uint8_t)code;
        const struct mbsc_pdu_function *pf = mbsc_pdu_lookup(&fc, 1);

        (void)snprintf(c->at->msg_buf, sizeof c->at->msg_buf,
                       "function 0x%02lx (%s) reads or writes a table, so the table rules "
                       "decide it: allow it with a rule such as 'ROLE %s %s 0-99'",
                       code, pf != NULL ? pf->name : "a table function",
                       both ? "read-write" : mbsc_policy_access_names[access],
                       mbsc_policy_table_names[table]);
        c->at->msg = c->at->msg_buf;
        return MBSC_ERR_POLICY_SYNTAX;
    }
    if (colon != NULL) {
        if (f->sub_bytes == 0) {
            (void)snprintf(c->at->msg_buf, sizeof c->at->msg_buf,
                           "function 0x%02lx has no sub-functions a rule can name (only 0x08 "
                           "diagnostics and 0x2b MEI types): write 'function 0x%02lx' alone",
                           code, code);
            c->at->msg = c->at->msg_buf;
            return MBSC_ERR_POLICY_SYNTAX;
        }
        return sub_item(c, f, colon + 1, n - code_len - 1);
    }
    c->role->functions[code / 8] |= (uint8_t)(1u << (code % 8));
    if (f->whole_risk != NULL)
        return add_warning(c->at, "role %s: 'function 0x%02lx' (%s) %s", c->role->name, code,
                           f->name, f->whole_risk);
    return MBSC_OK;
}

static int table_index(const struct field *f)
{
    int t;

    for (t = 0; t < POLICY_TABLE_COUNT; t++) {
        if (field_is(f, mbsc_policy_table_names[t]))
            return t;
    }
    return -1;
}

#define MAX_FIELDS 64

/* One line, without its line end.  MBSC_OK, MBSC_ERR_POLICY_SYNTAX with c->msg, NOMEM. */
static int parse_line(struct parse_ctx *c, const char *s, size_t n)
{
    mbsc_policy *p = c->p;
    const char **msg = &c->msg;
    struct field f[MAX_FIELDS];
    const char *hash = memchr(s, '#', n);
    struct policy_role *role;
    size_t nf = 0, i = 0;
    int read = 0, write = 0, table;

    if (hash != NULL)
        n = (size_t)(hash - s);
    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n)
            break;
        if (nf == MAX_FIELDS) {
            *msg = "too many fields (split the rule over several lines)";
            return MBSC_ERR_POLICY_SYNTAX;
        }
        f[nf].s = s + i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        f[nf].n = (size_t)(s + i - f[nf].s);
        nf++;
    }
    if (nf == 0)
        return MBSC_OK;
    if (!valid_role(&f[0])) {
        *msg = "bad role name (use 1 to 63 letters, digits, '-', '_' or '.', as in the "
               "allow-list)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    if (nf == 1) {
        *msg = "missing access after the role (read, write, read-write, function or none)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    role = role_for(p, &f[0]);
    if (role == NULL)
        return MBSC_ERR_NOMEM;
    if (field_is(&f[1], "none")) {
        if (nf > 2) {
            *msg = "'none' takes nothing after it (it only names a role that may do nothing)";
            return MBSC_ERR_POLICY_SYNTAX;
        }
        return MBSC_OK;
    }
    if (field_is(&f[1], "function")) {
        struct function_ctx fc = {c, role};
        if (nf == 2) {
            *msg = "missing function codes after 'function' (e.g. 'ROLE function 0x11' or "
                   "'ROLE function 0x2b:0x0e')";
            return MBSC_ERR_POLICY_SYNTAX;
        }
        return for_each_item(&f[2], nf - 2, function_item, &fc);
    }
    read = field_is(&f[1], "read") || field_is(&f[1], "read-write");
    write = field_is(&f[1], "write") || field_is(&f[1], "read-write");
    if (!read && !write) {
        *msg = "unknown access (use read, write, read-write, function or none)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    if (nf == 2) {
        *msg = "missing table (coils, discrete-inputs, holding-registers or input-registers)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    table = table_index(&f[2]);
    if (table < 0) {
        *msg = "unknown table (use coils, discrete-inputs, holding-registers or "
               "input-registers)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    if (write && (table == POLICY_DISCRETE_INPUTS || table == POLICY_INPUT_REGISTERS)) {
        *msg = "this table is read-only in Modbus (no function writes it): use 'read'";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    if (nf == 3) {
        *msg = "missing addresses (e.g. 0-99, or * for all)";
        return MBSC_ERR_POLICY_SYNTAX;
    }
    for (int a = POLICY_READ; a < POLICY_ACCESS_COUNT; a++) {
        struct range_ctx rc_ctx = {&role->rights[table][a], msg};
        int rc;
        if ((a == POLICY_READ && !read) || (a == POLICY_WRITE && !write))
            continue;
        rc = for_each_item(&f[3], nf - 3, range_item, &rc_ctx);
        if (rc != MBSC_OK)
            return rc;
    }
    return MBSC_OK;
}

static int cmp_range(const void *a, const void *b)
{
    const struct policy_range *x = a, *y = b;

    return (x->first > y->first) - (x->first < y->first);
}

/* Sort and merge overlapping or adjacent ranges, so one range covers a run. */
static void normalise(struct policy_ranges *set)
{
    size_t i, out = 0;

    if (set->count == 0)
        return;
    qsort(set->v, set->count, sizeof *set->v, cmp_range);
    for (i = 1; i < set->count; i++) {
        struct policy_range *last = &set->v[out];
        if ((unsigned long)set->v[i].first <= (unsigned long)last->last + 1) {
            if (set->v[i].last > last->last)
                last->last = set->v[i].last;
        } else {
            set->v[++out] = set->v[i];
        }
    }
    set->count = out + 1;
}

MBSC_API void mbsc_policy_free(mbsc_policy *p)
{
    size_t i;

    if (p == NULL)
        return;
    for (i = 0; i < p->count; i++) {
        for (int t = 0; t < POLICY_TABLE_COUNT; t++) {
            for (int a = 0; a < POLICY_ACCESS_COUNT; a++)
                free(p->roles[i].rights[t][a].v);
        }
        for (int k = 0; k < POLICY_SUB_COUNT; k++)
            free(p->roles[i].subs[k].v);
    }
    for (i = 0; i < p->warning_count; i++)
        free(p->warnings[i]);
    free(p->warnings);
    free(p->roles);
    free(p);
}

MBSC_API int mbsc_policy_parse(mbsc_policy **out, const char *text, size_t len,
                               const char *name_for_errors, char *why, size_t why_len)
{
    struct parse_ctx c = {NULL, name_for_errors != NULL ? name_for_errors : "policy", 0, NULL, ""};
    const char *src = c.src;
    mbsc_policy *p;
    size_t pos = 0, i;
    int rc = MBSC_OK;

    mbsc_why(why, why_len, "%s", "");
    if (out == NULL || (text == NULL && len > 0)) {
        mbsc_why(why, why_len, "invalid argument");
        return MBSC_ERR_INVALID_ARG;
    }
    *out = NULL;
    p = calloc(1, sizeof *p);
    if (p == NULL) {
        mbsc_why(why, why_len, "%s: out of memory", src);
        return MBSC_ERR_NOMEM;
    }
    c.p = p;
    while (pos < len && rc == MBSC_OK) {
        const char *lf = memchr(text + pos, '\n', len - pos);
        size_t end = lf != NULL ? (size_t)(lf - text) : len;
        size_t n = end - pos;

        c.line++;
        if (n > 0 && text[pos + n - 1] == '\r')
            n--;
        if (n > MBSC_POLICY_LINE_MAX) {
            c.msg = "line too long (split the rule over several lines)";
            rc = MBSC_ERR_POLICY_SYNTAX;
        } else if (memchr(text + pos, '\0', n) != NULL) {
            c.msg = "NUL byte in the line (is this a text file?)";
            rc = MBSC_ERR_POLICY_SYNTAX;
        } else {
            rc = parse_line(&c, text + pos, n);
        }
        pos = lf != NULL ? end + 1 : len;
    }
    if (rc == MBSC_ERR_POLICY_SYNTAX)
        mbsc_why(why, why_len, "%s:%lu: %s", src, c.line, c.msg);
    else if (rc == MBSC_ERR_NOMEM)
        mbsc_why(why, why_len, "%s: out of memory", src);
    if (rc != MBSC_OK) {
        mbsc_policy_free(p);
        return rc;
    }
    for (i = 0; i < p->count; i++) {
        for (int t = 0; t < POLICY_TABLE_COUNT; t++) {
            for (int a = 0; a < POLICY_ACCESS_COUNT; a++)
                normalise(&p->roles[i].rights[t][a]);
        }
        for (int k = 0; k < POLICY_SUB_COUNT; k++)
            normalise(&p->roles[i].subs[k]);
    }
    *out = p;
    return MBSC_OK;
}

MBSC_API int mbsc_policy_load(mbsc_policy **out, const char *path, char *why, size_t why_len)
{
    uint8_t *buf;
    size_t len = 0;
    int rc;

    mbsc_why(why, why_len, "%s", "");
    if (out == NULL || path == NULL) {
        mbsc_why(why, why_len, "invalid argument");
        return MBSC_ERR_INVALID_ARG;
    }
    *out = NULL;
    buf = malloc(MBSC_POLICY_MAX_BYTES);
    if (buf == NULL) {
        mbsc_why(why, why_len, "%s: out of memory", path);
        return MBSC_ERR_NOMEM;
    }
    rc = mbsc_keyio_read(path, MBSC_KEYIO_PUBLIC, buf, MBSC_POLICY_MAX_BYTES, &len, why, why_len);
    if (rc == MBSC_ERR_BUFFER_TOO_SMALL) {
        mbsc_why(why, why_len, "%s: larger than %u bytes: is this a policy file?", path,
                 MBSC_POLICY_MAX_BYTES);
        rc = MBSC_ERR_POLICY_SYNTAX;
    } else if (rc == MBSC_OK) {
        rc = mbsc_policy_parse(out, (const char *)buf, len, path, why, why_len);
    }
    free(buf);
    return rc;
}

MBSC_API const char *mbsc_policy_warning(const mbsc_policy *p, size_t index)
{
    return p != NULL && index < p->warning_count ? p->warnings[index] : NULL;
}
