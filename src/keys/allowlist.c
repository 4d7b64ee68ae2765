/* SPDX-License-Identifier: ISC */
/*
 * allowlist.c - the slave's list of accepted master keys (docs/keys.md "Keys
 * on disk"): one "<base64 key> <name> [role]" per line, "#" comments,
 * blank lines ignored, a bad line or a repeated key reported with its line.
 *
 * Entries are stored in file order in one array.  Lookup compares the
 * candidate with every entry in constant time (the key being looked up
 * comes out of a handshake and identifies a peer); duplicate detection at
 * load time sorts the public keys and may take its time.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "keys/keyio.h"
#include "mbsc/keys.h"

#define WORD_SIZE (MBSC_ALLOWLIST_NAME_MAX + 1)

struct allow_entry {
    uint8_t key[MBSC_KEY_BYTES];
    char name[WORD_SIZE];
    char role[WORD_SIZE]; /* "" if none */
    unsigned long line;   /* 1-based line in the file, 0 if added by the API */
};

struct mbsc_allowlist {
    struct allow_entry *entries;
    size_t count, cap;
};

MBSC_API mbsc_allowlist *mbsc_allowlist_new(void)
{
    if (mbsc_init() != MBSC_OK)
        return NULL;
    return calloc(1, sizeof(mbsc_allowlist));
}

MBSC_API void mbsc_allowlist_free(mbsc_allowlist *al)
{
    if (al == NULL)
        return;
    if (al->entries != NULL) {
        mbsc_wipe(al->entries, al->count * sizeof *al->entries);
        free(al->entries);
    }
    free(al);
}

MBSC_API size_t mbsc_allowlist_count(const mbsc_allowlist *al)
{
    return al == NULL ? 0 : al->count;
}

/* 1 if s[0..n) is a valid name or role: 1 to 63 of [A-Za-z0-9._-]. */
static int valid_word(const char *s, size_t n)
{
    size_t i;

    if (n == 0 || n > MBSC_ALLOWLIST_NAME_MAX)
        return 0;
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

/* Append without checks beyond capacity; name and role already validated. */
static int append(mbsc_allowlist *al, const uint8_t key[MBSC_KEY_BYTES], const char *name,
                  size_t name_len, const char *role, size_t role_len, unsigned long line)
{
    struct allow_entry *e;

    /* find() returns the index as an int */
    if (al->count >= (size_t)INT_MAX)
        return MBSC_ERR_NOMEM;
    if (al->count == al->cap) {
        /* public data: a plain realloc, no wiping of the old block */
        size_t cap = al->cap == 0 ? 16 : al->cap * 2;
        struct allow_entry *grown;
        if (cap > SIZE_MAX / sizeof *grown)
            return MBSC_ERR_NOMEM;
        grown = realloc(al->entries, cap * sizeof *grown);
        if (grown == NULL)
            return MBSC_ERR_NOMEM;
        al->entries = grown;
        al->cap = cap;
    }
    e = &al->entries[al->count];
    memset(e, 0, sizeof *e);
    memcpy(e->key, key, MBSC_KEY_BYTES);
    memcpy(e->name, name, name_len);
    if (role != NULL)
        memcpy(e->role, role, role_len);
    e->line = line;
    al->count++;
    return MBSC_OK;
}

MBSC_API int mbsc_allowlist_add(mbsc_allowlist *al, const uint8_t public_key[MBSC_KEY_BYTES],
                                const char *name, const char *role)
{
    size_t name_len, role_len = 0, i;

    if (al == NULL || public_key == NULL || name == NULL)
        return MBSC_ERR_INVALID_ARG;
    name_len = strnlen(name, WORD_SIZE);
    if (!valid_word(name, name_len))
        return MBSC_ERR_INVALID_ARG;
    if (role != NULL) {
        role_len = strnlen(role, WORD_SIZE);
        if (!valid_word(role, role_len))
            return MBSC_ERR_INVALID_ARG;
    }
    for (i = 0; i < al->count; i++) {
        if (memcmp(al->entries[i].key, public_key, MBSC_KEY_BYTES) == 0)
            return MBSC_ERR_ALLOWLIST_DUPLICATE;
    }
    return append(al, public_key, name, name_len, role, role_len, 0);
}

MBSC_API int mbsc_allowlist_find(const mbsc_allowlist *al, const uint8_t public_key[MBSC_KEY_BYTES],
                                 const char **name, const char **role)
{
    size_t i, index = 0, found = 0;

    if (name != NULL)
        *name = NULL;
    if (role != NULL)
        *role = NULL;
    if (al == NULL || public_key == NULL)
        return MBSC_ERR_INVALID_ARG;
    /* No early exit and no branch on the comparison: sodium_memcmp gives 0
     * or -1, turned into an all-ones or all-zeros mask.  Keys are unique,
     * so at most one entry matches. */
    for (i = 0; i < al->count; i++) {
        size_t hit = (size_t)(sodium_memcmp(al->entries[i].key, public_key, MBSC_KEY_BYTES) + 1);
        size_t mask = (size_t)0 - hit;
        index = (index & ~mask) | (i & mask);
        found |= hit;
    }
    if (!found)
        return MBSC_ERR_UNKNOWN_PEER;
    if (name != NULL)
        *name = al->entries[index].name;
    if (role != NULL && al->entries[index].role[0] != '\0')
        *role = al->entries[index].role;
    return (int)index;
}

MBSC_API int mbsc_allowlist_get(const mbsc_allowlist *al, size_t index,
                                uint8_t public_key[MBSC_KEY_BYTES], const char **name,
                                const char **role)
{
    const struct allow_entry *e;

    if (al == NULL || index >= al->count)
        return MBSC_ERR_INVALID_ARG;
    e = &al->entries[index];
    if (public_key != NULL)
        memcpy(public_key, e->key, MBSC_KEY_BYTES);
    if (name != NULL)
        *name = e->name;
    if (role != NULL)
        *role = e->role[0] != '\0' ? e->role : NULL;
    return MBSC_OK;
}

/* --- Parsing -------------------------------------------------------------- */

static int cmp_entry(const void *a, const void *b)
{
    const struct allow_entry *x = *(const struct allow_entry *const *)a;
    const struct allow_entry *y = *(const struct allow_entry *const *)b;
    int c = memcmp(x->key, y->key, MBSC_KEY_BYTES);

    if (c != 0)
        return c;
    return (x->line > y->line) - (x->line < y->line);
}

/*
 * Find the earliest line that repeats a key of an earlier line: sorting by
 * (key, line) puts each key's listings side by side in file order.
 * Returns 1 and sets *line and *first, 0 if none, MBSC_ERR_NOMEM.
 */
static int first_duplicate(const mbsc_allowlist *al, unsigned long *line, unsigned long *first)
{
    const struct allow_entry **v;
    size_t i;
    int found = 0;

    if (al->count < 2)
        return 0;
    v = malloc(al->count * sizeof *v);
    if (v == NULL)
        return MBSC_ERR_NOMEM;
    for (i = 0; i < al->count; i++)
        v[i] = &al->entries[i];
    qsort(v, al->count, sizeof *v, cmp_entry);
    for (i = 1; i < al->count; i++) {
        if (memcmp(v[i - 1]->key, v[i]->key, MBSC_KEY_BYTES) == 0 &&
            (!found || v[i]->line < *line)) {
            *line = v[i]->line;
            *first = v[i - 1]->line;
            found = 1;
        }
    }
    free(v);
    return found;
}

#define MAX_FIELDS 3

/*
 * Parse one line (without its LF or CRLF) and append its entry, if any.
 * Returns MBSC_OK, MBSC_ERR_ALLOWLIST_SYNTAX with *msg set, or
 * MBSC_ERR_NOMEM.
 */
static int parse_line(mbsc_allowlist *al, const char *s, size_t n, unsigned long line,
                      const char **msg)
{
    const char *field[MAX_FIELDS + 1];
    size_t flen[MAX_FIELDS + 1];
    const char *hash = memchr(s, '#', n);
    size_t nf = 0, i = 0;
    uint8_t key[MBSC_KEY_BYTES];

    if (hash != NULL)
        n = (size_t)(hash - s);
    while (nf <= MAX_FIELDS) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n)
            break;
        field[nf] = s + i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        flen[nf] = (size_t)(s + i - field[nf]);
        nf++;
    }
    if (nf == 0)
        return MBSC_OK; /* blank or comment only */
    if (mbsc_key_from_base64(key, field[0], flen[0]) != MBSC_OK) {
        *msg = "bad base64 key (expected 44 characters of canonical base64)";
        return MBSC_ERR_ALLOWLIST_SYNTAX;
    }
    if (nf == 1) {
        *msg = "missing name after the key";
        return MBSC_ERR_ALLOWLIST_SYNTAX;
    }
    if (nf > MAX_FIELDS) {
        *msg = "too many fields (expected: KEY NAME [ROLE])";
        return MBSC_ERR_ALLOWLIST_SYNTAX;
    }
    if (!valid_word(field[1], flen[1])) {
        *msg = "bad name (use 1 to 63 letters, digits, '-', '_' or '.')";
        return MBSC_ERR_ALLOWLIST_SYNTAX;
    }
    if (nf == 3 && !valid_word(field[2], flen[2])) {
        *msg = "bad role (use 1 to 63 letters, digits, '-', '_' or '.')";
        return MBSC_ERR_ALLOWLIST_SYNTAX;
    }
    return append(al, key, field[1], flen[1], nf == 3 ? field[2] : NULL, nf == 3 ? flen[2] : 0,
                  line);
}

MBSC_API int mbsc_allowlist_parse(mbsc_allowlist **out, const char *text, size_t len,
                                  const char *name_for_errors, char *why, size_t why_len)
{
    const char *src = name_for_errors != NULL ? name_for_errors : "allow-list";
    const char *msg = NULL;
    unsigned long line = 0, dup_line = 0, first_line = 0;
    mbsc_allowlist *al;
    size_t pos = 0;
    int rc = MBSC_OK, dup;

    mbsc_why(why, why_len, "%s", "");
    if (out == NULL || (text == NULL && len > 0)) {
        mbsc_why(why, why_len, "invalid argument");
        return MBSC_ERR_INVALID_ARG;
    }
    *out = NULL;
    al = mbsc_allowlist_new();
    if (al == NULL) {
        mbsc_why(why, why_len, "%s: out of memory", src);
        return MBSC_ERR_NOMEM;
    }
    while (pos < len && rc == MBSC_OK) {
        const char *lf = memchr(text + pos, '\n', len - pos);
        size_t end = lf != NULL ? (size_t)(lf - text) : len;
        size_t n = end - pos;

        line++;
        if (n > 0 && text[pos + n - 1] == '\r')
            n--;
        if (n > MBSC_ALLOWLIST_LINE_MAX) {
            msg = NULL; /* "line too long", formatted below */
            rc = MBSC_ERR_ALLOWLIST_SYNTAX;
        } else {
            rc = parse_line(al, text + pos, n, line, &msg);
        }
        pos = lf != NULL ? end + 1 : len;
    }
    /* A duplicate on an earlier line than the syntax error is reported first. */
    if (rc == MBSC_OK || rc == MBSC_ERR_ALLOWLIST_SYNTAX) {
        dup = first_duplicate(al, &dup_line, &first_line);
        if (dup < 0)
            rc = dup;
        else if (dup > 0)
            rc = MBSC_ERR_ALLOWLIST_DUPLICATE;
    }
    if (rc == MBSC_ERR_ALLOWLIST_SYNTAX && msg == NULL)
        mbsc_why(why, why_len, "%s:%lu: line too long (over %u bytes)", src, line,
                 MBSC_ALLOWLIST_LINE_MAX);
    else if (rc == MBSC_ERR_ALLOWLIST_SYNTAX)
        mbsc_why(why, why_len, "%s:%lu: %s", src, line, msg);
    else if (rc == MBSC_ERR_ALLOWLIST_DUPLICATE)
        mbsc_why(why, why_len, "%s:%lu: key already listed on line %lu", src, dup_line, first_line);
    else if (rc == MBSC_ERR_NOMEM)
        mbsc_why(why, why_len, "%s: out of memory", src);
    if (rc != MBSC_OK) {
        mbsc_allowlist_free(al);
        return rc;
    }
    *out = al;
    return MBSC_OK;
}

MBSC_API int mbsc_allowlist_load(mbsc_allowlist **out, const char *path, char *why, size_t why_len)
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
    /* A buffer the size of the file, not of the limit. */
    rc = mbsc_keyio_read_alloc(path, MBSC_KEYIO_PUBLIC, MBSC_ALLOWLIST_MAX_BYTES, &buf, &len, why,
                               why_len);
    if (rc == MBSC_ERR_BUFFER_TOO_SMALL)
        rc = MBSC_ERR_ALLOWLIST_SYNTAX;
    else if (rc == MBSC_OK)
        rc = mbsc_allowlist_parse(out, (const char *)buf, len, path, why, why_len);
    free(buf);
    return rc;
}
