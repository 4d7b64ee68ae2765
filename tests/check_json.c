/* SPDX-License-Identifier: ISC */
/*
 * check_json.c - the test-data JSON reader (tests/json.c): what it accepts,
 * what it rejects, and that the project's vector files parse.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "testutil.h"

Suite *json_suite(void);

static json_value *parse_str(const char *text, char *err, size_t err_cap)
{
    return json_parse(text, strlen(text), err, err_cap);
}

START_TEST(test_json_values)
{
    static const char doc[] =
        "{\"s\": \"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\u0000z\",\n"
        " \"n\": [0, -1, 42, 9223372036854775807, -9223372036854775808,\n"
        "        9223372036854775808, 1.5, -2e3, 1E+2],\n"
        " \"t\": true, \"f\": false, \"z\": null, \"e\": {}, \"a\": [],\n"
        " \"nested\": {\"x\": [{\"y\": \"deep\"}]}}";
    static const char want_s[] = "a\"b\\c/d\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80\0z";
    char err[128];
    json_value *root = parse_str(doc, err, sizeof err);
    const json_value *s, *n;
    int64_t i;
    double d;
    int b;

    ck_assert_msg(root != NULL, "%s", err);
    ck_assert_int_eq(json_type_of(root), JSON_OBJECT);
    ck_assert_uint_eq(json_count(root), 8);

    s = json_get(root, "s");
    ck_assert_int_eq(json_type_of(s), JSON_STRING);
    ck_assert_uint_eq(s->u.string.len, sizeof want_s - 1);
    ck_assert_mem_eq(json_string(s), want_s, sizeof want_s - 1);

    n = json_get(root, "n");
    ck_assert_uint_eq(json_count(n), 9);
    ck_assert(json_int(json_at(n, 0), &i) && i == 0);
    ck_assert(json_int(json_at(n, 1), &i) && i == -1);
    ck_assert(json_int(json_at(n, 2), &i) && i == 42);
    ck_assert(json_int(json_at(n, 3), &i) && i == INT64_MAX);
    ck_assert(json_int(json_at(n, 4), &i) && i == INT64_MIN);
    ck_assert(!json_int(json_at(n, 5), &i)); /* too large: double only */
    ck_assert(json_number(json_at(n, 5), &d) && d == 9223372036854775808.0);
    ck_assert(!json_int(json_at(n, 6), &i));
    ck_assert(json_number(json_at(n, 6), &d) && d == 1.5);
    ck_assert(json_number(json_at(n, 7), &d) && d == -2000.0);
    ck_assert(json_number(json_at(n, 8), &d) && d == 100.0);
    ck_assert_ptr_null(json_at(n, 9));

    ck_assert(json_bool(json_get(root, "t"), &b) && b == 1);
    ck_assert(json_bool(json_get(root, "f"), &b) && b == 0);
    ck_assert_int_eq(json_type_of(json_get(root, "z")), JSON_NULL);
    ck_assert_ptr_nonnull(json_get(root, "z"));
    ck_assert_int_eq(json_type_of(json_get(root, "e")), JSON_OBJECT);
    ck_assert_uint_eq(json_count(json_get(root, "e")), 0);
    ck_assert_int_eq(json_type_of(json_get(root, "a")), JSON_ARRAY);
    ck_assert_uint_eq(json_count(json_get(root, "a")), 0);
    ck_assert_str_eq(
        json_string(json_get(json_at(json_get(json_get(root, "nested"), "x"), 0), "y")), "deep");

    /* Lookups of the wrong kind give NULL and chain safely. */
    ck_assert_ptr_null(json_get(root, "missing"));
    ck_assert_ptr_null(json_get(n, "s"));
    ck_assert_ptr_null(json_at(root, 0));
    ck_assert_ptr_null(json_string(n));
    ck_assert_ptr_null(json_get(json_at(json_get(root, "missing"), 3), "x"));
    ck_assert(!json_int(NULL, &i));
    ck_assert(!json_bool(json_get(root, "z"), &b));
    json_free(root);
    json_free(NULL);

    /* Any value may be the document. */
    root = parse_str("  \"only\"\n", err, sizeof err);
    ck_assert_str_eq(json_string(root), "only");
    json_free(root);
}
END_TEST

static const char *const malformed[] = {
    "",
    "   ",
    "{",
    "[1,]",
    "{\"a\":1,}",
    "[1 2]",
    "{\"a\" 1}",
    "{\"a\":1 \"b\":2}",
    "{1:2}",
    "01",
    "1.",
    ".5",
    "-",
    "+1",
    "1e",
    "NaN",
    "tru",
    "nul",
    "\"abc",
    "\"\\x\"",
    "\"\\u12\"",
    "\"\\u12g4\"",
    "\"\\ud800\"",
    "\"\\ud800\\u0041\"",
    "\"\\udc00\"",
    "\"tab\there\"",
    "\"new\nline\"",
    "[1] x",
    "{} {}",
    "{\"a\":1,\"a\":2}",
    "'single'",
};

START_TEST(test_json_malformed)
{
    char err[128];
    json_value *v;

    memset(err, 0, sizeof err);
    v = parse_str(malformed[_i], err, sizeof err);
    ck_assert_msg(v == NULL, "accepted: %s", malformed[_i]);
    ck_assert_msg(strncmp(err, "line ", 5) == 0, "no position in \"%s\"", err);
}
END_TEST

START_TEST(test_json_error_position)
{
    char err[128];

    ck_assert_ptr_null(parse_str("{\n  \"a\": ?}", err, sizeof err));
    ck_assert_msg(strstr(err, "line 2, column 8") != NULL, "%s", err);
    /* a small err buffer is truncated, never overrun */
    ck_assert_ptr_null(parse_str("[1,]", err, 8));
    ck_assert_uint_eq(strlen(err), 7);
    ck_assert_ptr_null(parse_str("[1,]", NULL, 0));
    ck_assert_ptr_null(json_parse(NULL, 0, err, sizeof err));
}
END_TEST

START_TEST(test_json_depth)
{
    char doc[2 * (JSON_MAX_DEPTH + 1) + 1], err[128];
    json_value *v;
    int i;

    for (i = 0; i < JSON_MAX_DEPTH; i++) {
        doc[i] = '[';
        doc[JSON_MAX_DEPTH + i] = ']';
    }
    doc[2 * JSON_MAX_DEPTH] = '\0';
    v = parse_str(doc, err, sizeof err);
    ck_assert_msg(v != NULL, "%s", err);
    json_free(v);

    for (i = 0; i <= JSON_MAX_DEPTH; i++) {
        doc[i] = '[';
        doc[JSON_MAX_DEPTH + 1 + i] = ']';
    }
    doc[2 * (JSON_MAX_DEPTH + 1)] = '\0';
    ck_assert_ptr_null(parse_str(doc, err, sizeof err));
}
END_TEST

/* Not NUL-terminated input: only len bytes are read. */
START_TEST(test_json_length)
{
    static const char text[] = "[1, 2]garbage";
    json_value *v = json_parse(text, 6, NULL, 0);

    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(json_count(v), 2);
    json_free(v);
    ck_assert_ptr_null(json_parse(text, 5, NULL, 0));
}
END_TEST

START_TEST(test_json_vector_files)
{
    static const char *const files[] = {"tests/vectors/noise/noise_vectors.json",
                                        "tests/vectors/mbsc1/protocol_vectors.json"};
    char err[128];
    size_t len;
    char *text = tu_read_srcfile(files[_i], &len);
    json_value *v;

    ck_assert_msg(text != NULL, "cannot read %s", files[_i]);
    v = json_parse(text, len, err, sizeof err);
    free(text);
    ck_assert_msg(v != NULL, "%s: %s", files[_i], err);
    ck_assert_int_eq(json_type_of(v), JSON_OBJECT);
    ck_assert_ptr_nonnull(json_string(json_get(v, "description")));
    json_free(v);
}
END_TEST

Suite *json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("reader");

    tcase_add_test(tc, test_json_values);
    tcase_add_loop_test(tc, test_json_malformed, 0, (int)(sizeof malformed / sizeof malformed[0]));
    tcase_add_test(tc, test_json_error_position);
    tcase_add_test(tc, test_json_depth);
    tcase_add_test(tc, test_json_length);
    tcase_add_loop_test(tc, test_json_vector_files, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}
