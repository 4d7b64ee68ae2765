/* SPDX-License-Identifier: ISC */
/*
 * check_tls_role.c - the Modbus/TCP Security role's value
 * (tools/gateway/tls_role.c, gw_tls_role_parse) on bytes.
 *
 * The vectors are written from the rules, not from the parser: a DER
 * UTF8String is tag 0x0C, primitive, its length in the shortest form
 * (X.690, 8.1.3 and 10.1: the long form only from 128 on, never the
 * indefinite form); the text is UTF-8 as RFC 3629 defines it (section 3:
 * no overlong forms, no surrogates D800-DFFF, nothing above 10FFFF; its
 * section 10 names C0 80 as the overlong NUL to refuse); the role is 1 to
 * 64 bytes without control characters (MB-TCP-Security v36, R-21 to R-23;
 * the 64-byte bound and the refusal of controls are this gateway's,
 * docs/tls.md).  Whole certificates (absent, twice) are tests/tls.test's.
 */
#include <check.h>
#include <string.h>

#include "tls_role.h"

Suite *tls_role_suite(void);

static char role[GW_TLS_ROLE_MAX + 1];

/* The DER of a UTF8String with text (short form), into buf; its length. */
static size_t utf8string(uint8_t *buf, const char *text, size_t n)
{
    buf[0] = 0x0C;
    buf[1] = (uint8_t)n;
    memcpy(buf + 2, text, n);
    return n + 2;
}

static enum gw_tls_role_status parse_text(const char *text, size_t n)
{
    uint8_t buf[200];

    return gw_tls_role_parse(buf, utf8string(buf, text, n), role);
}

START_TEST(test_good_roles)
{
    static const uint8_t operator_der[] = {0x0C, 0x08, 'o', 'p', 'e', 'r', 'a', 't', 'o', 'r'};
    char max[GW_TLS_ROLE_MAX];

    ck_assert_int_eq(gw_tls_role_parse(operator_der, sizeof operator_der, role), GW_TLS_ROLE_OK);
    ck_assert_str_eq(role, "operator");
    /* Two-, three- and four-byte characters: u-umlaut, the euro sign, U+10348. */
    ck_assert_int_eq(parse_text("B\xC3\xBC"
                                "ro-\xE2\x82\xAC-\xF0\x90\x8D\x88",
                                14),
                     GW_TLS_ROLE_OK);
    ck_assert_str_eq(role, "B\xC3\xBC"
                           "ro-\xE2\x82\xAC-\xF0\x90\x8D\x88");
    /* The largest character there is, U+10FFFF. */
    ck_assert_int_eq(parse_text("\xF4\x8F\xBF\xBF", 4), GW_TLS_ROLE_OK);
    memset(max, 'r', sizeof max);
    ck_assert_int_eq(parse_text(max, sizeof max), GW_TLS_ROLE_OK);
    ck_assert_uint_eq(strlen(role), GW_TLS_ROLE_MAX);
}
END_TEST

START_TEST(test_length_rules)
{
    uint8_t buf[200];
    char text[130];

    memset(text, 'r', sizeof text);
    /* 65 bytes, short form: over the bound. */
    ck_assert_int_eq(parse_text(text, 65), GW_TLS_ROLE_TOO_LONG);
    ck_assert_str_eq(role, "");
    /* 128 bytes need the long form 81 80: well-formed DER, too long. */
    buf[0] = 0x0C;
    buf[1] = 0x81;
    buf[2] = 0x80;
    memcpy(buf + 3, text, 128);
    ck_assert_int_eq(gw_tls_role_parse(buf, 131, role), GW_TLS_ROLE_TOO_LONG);
    /* The long form for 8 bytes is not DER. */
    buf[2] = 0x08;
    memcpy(buf + 3, "operator", 8);
    ck_assert_int_eq(gw_tls_role_parse(buf, 11, role), GW_TLS_ROLE_MALFORMED);
    /* 82 00 08: a length in two bytes whose first is 0. */
    buf[1] = 0x82;
    buf[2] = 0x00;
    buf[3] = 0x08;
    memcpy(buf + 4, "operator", 8);
    ck_assert_int_eq(gw_tls_role_parse(buf, 12, role), GW_TLS_ROLE_MALFORMED);
    /* The indefinite form (80 ... 00 00) is BER, never DER. */
    buf[1] = 0x80;
    memcpy(buf + 2, "operator\0\0", 10);
    ck_assert_int_eq(gw_tls_role_parse(buf, 12, role), GW_TLS_ROLE_MALFORMED);
    /* Empty, shorter than said, a byte after the string, nothing at all. */
    ck_assert_int_eq(parse_text("", 0), GW_TLS_ROLE_MALFORMED);
    utf8string(buf, "operator", 8);
    ck_assert_int_eq(gw_tls_role_parse(buf, 9, role), GW_TLS_ROLE_MALFORMED);
    buf[10] = 0x00;
    ck_assert_int_eq(gw_tls_role_parse(buf, 11, role), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(gw_tls_role_parse(buf, 1, role), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(gw_tls_role_parse(buf, 0, role), GW_TLS_ROLE_MALFORMED);
}
END_TEST

START_TEST(test_other_types)
{
    /* IA5String (0x16), PrintableString (0x13), BMPString (0x1E), OCTET STRING (0x04). */
    static const uint8_t tags[] = {0x16, 0x13, 0x1E, 0x04, 0x2C /* constructed UTF8String */};
    uint8_t buf[20];
    size_t i;

    for (i = 0; i < sizeof tags; i++) {
        utf8string(buf, "operator", 8);
        buf[0] = tags[i];
        ck_assert_int_eq(gw_tls_role_parse(buf, 10, role), GW_TLS_ROLE_MALFORMED);
        ck_assert_str_eq(role, "");
    }
}
END_TEST

START_TEST(test_not_utf8)
{
    /* RFC 3629: overlong NUL (section 10), overlong '/', a surrogate, past U+10FFFF, F5. */
    ck_assert_int_eq(parse_text("a\xC0\x80", 3), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(parse_text("\xE0\x80\xAF", 3), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(parse_text("\xED\xA0\x80", 3), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(parse_text("\xF4\x90\x80\x80", 4), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(parse_text("\xF5\x80\x80\x80", 4), GW_TLS_ROLE_MALFORMED);
    /* A lone continuation byte, a character cut short, FF. */
    ck_assert_int_eq(parse_text("op\x80", 3), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(parse_text("op\xE2\x82", 4), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(parse_text("op\xFF", 3), GW_TLS_ROLE_MALFORMED);
}
END_TEST

START_TEST(test_controls)
{
    /* A newline would forge a log line; NUL would cut the role short; DEL; C1's NEL (U+0085). */
    ck_assert_int_eq(parse_text("op\nerator", 9), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(parse_text("op\0erator", 9), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(parse_text("op\x7F", 3), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(parse_text("op\xC2\x85", 4), GW_TLS_ROLE_MALFORMED);
    ck_assert_int_eq(parse_text("op\terator", 9), GW_TLS_ROLE_MALFORMED);
}
END_TEST

Suite *tls_role_suite(void)
{
    Suite *s = suite_create("tls_role");
    TCase *tc = tcase_create("parse");

    tcase_add_test(tc, test_good_roles);
    tcase_add_test(tc, test_length_rules);
    tcase_add_test(tc, test_other_types);
    tcase_add_test(tc, test_not_utf8);
    tcase_add_test(tc, test_controls);
    suite_add_tcase(s, tc);
    return s;
}
