/* SPDX-License-Identifier: ISC */
/*
 * tests/json.c - a small JSON reader for test data; see json.h.
 *
 * A recursive-descent parser over RFC 8259's grammar.  Each parse_* function
 * consumes one production, returns a new node or NULL after recording the
 * first error (later errors are ignored, so the message points at the
 * cause).
 */
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

struct parser {
    const char *start, *p, *end;
    char *err;
    size_t err_cap;
    int failed;
    int depth;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail_at(struct parser *ps, const char *fmt, ...);

static void fail_at(struct parser *ps, const char *fmt, ...)
{
    const char *q;
    unsigned long line = 1, col = 1;
    size_t n = 0;
    va_list ap;

    if (ps->failed)
        return;
    ps->failed = 1;
    if (ps->err == NULL || ps->err_cap == 0)
        return;
    for (q = ps->start; q < ps->p; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    {
        int k = snprintf(ps->err, ps->err_cap, "line %lu, column %lu: ", line, col);
        if (k > 0)
            n = (size_t)k < ps->err_cap ? (size_t)k : ps->err_cap - 1;
    }
    va_start(ap, fmt);
    vsnprintf(ps->err + n, ps->err_cap - n, fmt, ap);
    va_end(ap);
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static json_value *new_value(struct parser *ps, json_type type)
{
    json_value *v = calloc(1, sizeof *v);

    if (v == NULL)
        fail_at(ps, "out of memory");
    else
        v->type = type;
    return v;
}

/* Free v and everything below it. */
static void free_value(json_value *v)
{
    size_t i;

    if (v == NULL)
        return;
    switch (v->type) {
    case JSON_STRING: free(v->u.string.chars); break;
    case JSON_ARRAY:
        for (i = 0; i < v->u.array.count; i++)
            free_value(v->u.array.items[i]);
        free(v->u.array.items);
        break;
    case JSON_OBJECT:
        for (i = 0; i < v->u.object.count; i++) {
            free(v->u.object.members[i].key);
            free_value(v->u.object.members[i].value);
        }
        free(v->u.object.members);
        break;
    default: break;
    }
    free(v);
}

/*
 * Make room for `need` elements of `elem` bytes in buf (capacity *cap).
 * Returns the (possibly moved) buffer, or NULL with buf still valid.
 */
static void *grow(void *buf, size_t *cap, size_t need, size_t elem)
{
    size_t ncap;
    void *nb;

    if (need <= *cap)
        return buf;
    ncap = *cap ? *cap * 2 : 8;
    while (ncap < need)
        ncap *= 2;
    if (ncap > SIZE_MAX / elem)
        return NULL;
    nb = realloc(buf, ncap * elem);
    if (nb != NULL)
        *cap = ncap;
    return nb;
}

/* Four hex digits after "\u"; -1 on error. */
static long read_u16(struct parser *ps)
{
    long v = 0;
    int i, d;

    if (ps->end - ps->p < 4) {
        fail_at(ps, "truncated \\u escape");
        return -1;
    }
    for (i = 0; i < 4; i++) {
        d = tu_hex_digit(ps->p[i]);
        if (d < 0) {
            fail_at(ps, "bad hex digit in \\u escape");
            return -1;
        }
        v = v * 16 + d;
    }
    ps->p += 4;
    return v;
}

/* Append code point cp as UTF-8; returns the bytes written (1..4). */
static size_t put_utf8(char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/*
 * A string token; ps->p is at the opening quote.  The decoded text is never
 * longer than the source, so one buffer of the source's size is enough.
 */
static char *parse_string_raw(struct parser *ps, size_t *out_len)
{
    const char *q;
    char *buf, *o;
    unsigned long cp;
    long u, lo;

    ps->p++; /* opening quote */
    for (q = ps->p; q < ps->end && *q != '"'; q++)
        if (*q == '\\' && q + 1 < ps->end)
            q++;
    if (q >= ps->end) {
        fail_at(ps, "unterminated string");
        return NULL;
    }
    buf = malloc((size_t)(q - ps->p) + 1);
    if (buf == NULL) {
        fail_at(ps, "out of memory");
        return NULL;
    }
    o = buf;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;

        if (c < 0x20) {
            fail_at(ps, "control character in string");
            goto bad;
        }
        if (c != '\\') {
            *o++ = (char)c;
            ps->p++;
            continue;
        }
        ps->p++; /* backslash; the scan above guarantees a next byte */
        switch (*ps->p++) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u':
            u = read_u16(ps);
            if (u < 0)
                goto bad;
            cp = (unsigned long)u;
            if (u >= 0xD800 && u <= 0xDBFF) {
                /* a high surrogate must be followed by \u and a low one */
                if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                    fail_at(ps, "lone high surrogate");
                    goto bad;
                }
                ps->p += 2;
                lo = read_u16(ps);
                if (lo < 0)
                    goto bad;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    fail_at(ps, "high surrogate without a low one");
                    goto bad;
                }
                cp = 0x10000 + (((unsigned long)u - 0xD800) << 10) + ((unsigned long)lo - 0xDC00);
            } else if (u >= 0xDC00 && u <= 0xDFFF) {
                fail_at(ps, "lone low surrogate");
                goto bad;
            }
            /* 6 source bytes ("\uXXXX") give at most 3 UTF-8 bytes, and a
             * pair (12 bytes) gives 4: the buffer is large enough. */
            o += put_utf8(o, cp);
            break;
        default:
            ps->p--;
            fail_at(ps, "unknown escape '\\%c'", *ps->p);
            goto bad;
        }
    }
    ps->p++; /* closing quote */
    *o = '\0';
    *out_len = (size_t)(o - buf);
    return buf;
bad:
    free(buf);
    return NULL;
}

static json_value *parse_value(struct parser *ps);

static json_value *parse_string(struct parser *ps)
{
    json_value *v;
    size_t len;
    char *s = parse_string_raw(ps, &len);

    if (s == NULL)
        return NULL;
    v = new_value(ps, JSON_STRING);
    if (v == NULL) {
        free(s);
        return NULL;
    }
    v->u.string.chars = s;
    v->u.string.len = len;
    return v;
}

static int is_digit(const struct parser *ps, const char *q)
{
    return q < ps->end && *q >= '0' && *q <= '9';
}

static json_value *parse_number(struct parser *ps)
{
    const char *q = ps->p;
    int neg = 0, is_int = 1;
    uint64_t mag = 0, limit;
    char tmp[128];
    size_t n;
    json_value *v;

    if (*q == '-') {
        neg = 1;
        q++;
    }
    if (!is_digit(ps, q)) {
        ps->p = q;
        fail_at(ps, "expected a digit");
        return NULL;
    }
    if (*q == '0' && is_digit(ps, q + 1)) {
        ps->p = q;
        fail_at(ps, "leading zero in number");
        return NULL;
    }
    limit = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
    for (; is_digit(ps, q); q++) {
        unsigned d = (unsigned)(*q - '0');
        if (mag > (limit - d) / 10)
            is_int = 0; /* too large for int64: keep only the double */
        else
            mag = mag * 10 + d;
    }
    if (q < ps->end && *q == '.') {
        is_int = 0;
        q++;
        if (!is_digit(ps, q)) {
            ps->p = q;
            fail_at(ps, "expected a digit after '.'");
            return NULL;
        }
        while (is_digit(ps, q))
            q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        is_int = 0;
        q++;
        if (q < ps->end && (*q == '+' || *q == '-'))
            q++;
        if (!is_digit(ps, q)) {
            ps->p = q;
            fail_at(ps, "expected a digit in the exponent");
            return NULL;
        }
        while (is_digit(ps, q))
            q++;
    }
    n = (size_t)(q - ps->p);
    if (n >= sizeof tmp) {
        fail_at(ps, "number too long");
        return NULL;
    }
    v = new_value(ps, JSON_NUMBER);
    if (v == NULL)
        return NULL;
    memcpy(tmp, ps->p, n);
    tmp[n] = '\0';
    v->u.number.value = strtod(tmp, NULL);
    v->u.number.is_int = is_int;
    if (is_int)
        v->u.number.int_val =
            neg ? (mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    ps->p = q;
    return v;
}

static json_value *parse_literal(struct parser *ps)
{
    static const struct {
        const char *text;
        json_type type;
        int boolean;
    } lits[] = {{"true", JSON_BOOL, 1}, {"false", JSON_BOOL, 0}, {"null", JSON_NULL, 0}};
    size_t i, n;
    json_value *v;

    for (i = 0; i < sizeof lits / sizeof lits[0]; i++) {
        n = strlen(lits[i].text);
        if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, lits[i].text, n) == 0) {
            v = new_value(ps, lits[i].type);
            if (v != NULL) {
                v->u.boolean = lits[i].boolean;
                ps->p += n;
            }
            return v;
        }
    }
    fail_at(ps, "unexpected character '%c'", *ps->p);
    return NULL;
}

static json_value *parse_array(struct parser *ps)
{
    json_value *v = new_value(ps, JSON_ARRAY), *item, **items;
    size_t cap = 0;

    if (v == NULL)
        return NULL;
    ps->p++; /* '[' */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return v;
    }
    for (;;) {
        item = parse_value(ps);
        if (item == NULL)
            goto bad;
        items = grow(v->u.array.items, &cap, v->u.array.count + 1, sizeof *items);
        if (items == NULL) {
            free_value(item);
            fail_at(ps, "out of memory");
            goto bad;
        }
        v->u.array.items = items;
        items[v->u.array.count++] = item;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return v;
        }
        fail_at(ps, "expected ',' or ']' in array");
        goto bad;
    }
bad:
    free_value(v);
    return NULL;
}

static int has_key(const json_value *obj, const char *key, size_t len)
{
    size_t i;

    for (i = 0; i < obj->u.object.count; i++)
        if (obj->u.object.members[i].key_len == len &&
            memcmp(obj->u.object.members[i].key, key, len) == 0)
            return 1;
    return 0;
}

static json_value *parse_object(struct parser *ps)
{
    json_value *v = new_value(ps, JSON_OBJECT), *val;
    struct json_member *members;
    size_t cap = 0, klen, n;
    const char *key_pos;
    char *key;

    if (v == NULL)
        return NULL;
    ps->p++; /* '{' */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return v;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            fail_at(ps, "expected a string key in object");
            goto bad;
        }
        key_pos = ps->p;
        key = parse_string_raw(ps, &klen);
        if (key == NULL)
            goto bad;
        if (has_key(v, key, klen)) {
            ps->p = key_pos;
            fail_at(ps, "duplicate key \"%s\"", key);
            free(key);
            goto bad;
        }
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            fail_at(ps, "expected ':' after object key");
            free(key);
            goto bad;
        }
        ps->p++;
        val = parse_value(ps);
        if (val == NULL) {
            free(key);
            goto bad;
        }
        n = v->u.object.count;
        members = grow(v->u.object.members, &cap, n + 1, sizeof *members);
        if (members == NULL) {
            free(key);
            free_value(val);
            fail_at(ps, "out of memory");
            goto bad;
        }
        v->u.object.members = members;
        members[n].key = key;
        members[n].key_len = klen;
        members[n].value = val;
        v->u.object.count = n + 1;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return v;
        }
        fail_at(ps, "expected ',' or '}' in object");
        goto bad;
    }
bad:
    free_value(v);
    return NULL;
}

static json_value *parse_value(struct parser *ps)
{
    json_value *v;

    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail_at(ps, "unexpected end of input");
        return NULL;
    }
    switch (*ps->p) {
    case '{':
    case '[':
        if (ps->depth >= JSON_MAX_DEPTH) {
            fail_at(ps, "nesting deeper than %d", JSON_MAX_DEPTH);
            return NULL;
        }
        ps->depth++;
        v = *ps->p == '{' ? parse_object(ps) : parse_array(ps);
        ps->depth--;
        return v;
    case '"': return parse_string(ps);
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9': return parse_number(ps);
    default: return parse_literal(ps);
    }
}

json_value *json_parse(const char *text, size_t len, char *err, size_t err_cap)
{
    struct parser ps;
    json_value *root;

    memset(&ps, 0, sizeof ps);
    ps.err = err;
    ps.err_cap = err_cap;
    if (err != NULL && err_cap > 0)
        err[0] = '\0';
    if (text == NULL) {
        if (err != NULL && err_cap > 0)
            snprintf(err, err_cap, "no input");
        return NULL;
    }
    ps.start = ps.p = text;
    ps.end = text + len;
    root = parse_value(&ps);
    if (root == NULL)
        return NULL;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        fail_at(&ps, "unexpected text after the document");
        free_value(root);
        return NULL;
    }
    return root;
}

void json_free(json_value *root)
{
    free_value(root);
}

json_type json_type_of(const json_value *v)
{
    return v != NULL ? v->type : JSON_NULL;
}

const json_value *json_get(const json_value *obj, const char *key)
{
    size_t i, len;

    if (obj == NULL || obj->type != JSON_OBJECT || key == NULL)
        return NULL;
    len = strlen(key);
    for (i = 0; i < obj->u.object.count; i++)
        if (obj->u.object.members[i].key_len == len &&
            memcmp(obj->u.object.members[i].key, key, len) == 0)
            return obj->u.object.members[i].value;
    return NULL;
}

const json_value *json_at(const json_value *arr, size_t i)
{
    if (arr == NULL || arr->type != JSON_ARRAY || i >= arr->u.array.count)
        return NULL;
    return arr->u.array.items[i];
}

size_t json_count(const json_value *v)
{
    if (v == NULL)
        return 0;
    if (v->type == JSON_ARRAY)
        return v->u.array.count;
    if (v->type == JSON_OBJECT)
        return v->u.object.count;
    return 0;
}

const char *json_string(const json_value *v)
{
    return v != NULL && v->type == JSON_STRING ? v->u.string.chars : NULL;
}

int json_int(const json_value *v, int64_t *out)
{
    if (v == NULL || v->type != JSON_NUMBER || !v->u.number.is_int)
        return 0;
    if (out != NULL)
        *out = v->u.number.int_val;
    return 1;
}

int json_number(const json_value *v, double *out)
{
    if (v == NULL || v->type != JSON_NUMBER)
        return 0;
    if (out != NULL)
        *out = v->u.number.value;
    return 1;
}

int json_bool(const json_value *v, int *out)
{
    if (v == NULL || v->type != JSON_BOOL)
        return 0;
    if (out != NULL)
        *out = v->u.boolean;
    return 1;
}
