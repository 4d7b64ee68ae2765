/* SPDX-License-Identifier: ISC */
/*
 * tests/json.h - a small JSON reader for test data (RFC 8259).
 *
 * Parses a whole document into a tree ("DOM") of json_value nodes, owned by
 * the root: json_free(root) releases everything.  Lookups never allocate
 * and return NULL when the key, the index or the type does not match, so
 * they chain: json_get(json_at(json_get(root, "vectors"), 3), "messages").
 *
 * Accepted: objects, arrays, strings (escapes \" \\ \/ \b \f \n \r \t and
 * \uXXXX, surrogate pairs included, stored as UTF-8), numbers, true, false,
 * null, whitespace between tokens.  Rejected with a message naming the line
 * and column: anything else, including trailing commas, leading zeros,
 * control characters inside strings, lone surrogates, duplicate keys in one
 * object, text after the document, nesting deeper than JSON_MAX_DEPTH.
 * Raw bytes of 0x80 and above inside strings are copied as they are (the
 * reader does not validate UTF-8).
 *
 * For test code only: it favours clarity over speed, and allocation
 * failures are reported as parse errors.
 */
#ifndef MBSC_TESTS_JSON_H
#define MBSC_TESTS_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 64

typedef enum json_type {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} json_type;

typedef struct json_value json_value;

/* One member of an object. */
struct json_member {
    char *key;      /* NUL-terminated (may also contain NULs) */
    size_t key_len; /* bytes, without the terminator */
    json_value *value;
};

struct json_value {
    json_type type;
    union {
        int boolean; /* JSON_BOOL: 0 or 1 */
        struct {
            double value;    /* always set */
            int is_int;      /* 1 if the text is an integer that fits int64 */
            int64_t int_val; /* exact value when is_int */
        } number;
        struct {
            char *chars; /* NUL-terminated UTF-8 (may also contain NULs) */
            size_t len;  /* bytes, without the terminator */
        } string;
        struct {
            json_value **items;
            size_t count;
        } array;
        struct {
            struct json_member *members; /* in document order */
            size_t count;
        } object;
    } u;
};

/*
 * Parse len bytes of text.  Returns the root, or NULL with a message
 * ("line 3, column 14: expected ':'") in err (err_cap bytes, always
 * NUL-terminated if err_cap > 0; err may be NULL).
 */
json_value *json_parse(const char *text, size_t len, char *err, size_t err_cap);

/* Free a tree returned by json_parse (NULL is fine).  Only roots. */
void json_free(json_value *root);

/* Type of v; JSON_NULL for a NULL pointer too. */
json_type json_type_of(const json_value *v);

/* Object member by key (exact, NUL-terminated key); NULL if absent. */
const json_value *json_get(const json_value *obj, const char *key);

/* Array element i; NULL if out of range or not an array. */
const json_value *json_at(const json_value *arr, size_t i);

/* Elements of an array or members of an object; 0 for anything else. */
size_t json_count(const json_value *v);

/* The string's characters (NUL-terminated), or NULL if v is not a string. */
const char *json_string(const json_value *v);

/*
 * Integer value: returns 1 and sets *out if v is a number written as an
 * integer that fits int64_t (no fraction, no exponent); 0 otherwise.
 */
int json_int(const json_value *v, int64_t *out);

/* Numeric value as a double; returns 0 if v is not a number. */
int json_number(const json_value *v, double *out);

/* Boolean: returns 1 and sets *out (0 or 1) if v is true or false. */
int json_bool(const json_value *v, int *out);

#endif /* MBSC_TESTS_JSON_H */
