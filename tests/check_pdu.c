/* SPDX-License-Identifier: ISC */
/*
 * check_pdu.c - the Modbus function table (mbsc/pdu.h).
 *
 * Known answers: every request/response example of the Modbus Application
 * Protocol Specification v1.1b3, section 6 (tests/kat/modbus_map_examples.txt)
 * must be a well-formed request, a well-formed answer to its own request,
 * and not an answer to the others.  Properties beside them: the quantity
 * limits of section 6 at their edges, every truncation and extension of a
 * fixed-size request refused with 03, ranges past 0xFFFF with 02.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbsc/pdu.h"
#include "testutil.h"

Suite *pdu_suite(void);

#define MAX_EXAMPLES 32

struct example {
    char section[8];
    uint8_t req[MBSC_PDU_MAX], ans[MBSC_PDU_MAX];
    size_t req_len, ans_len;
};

static struct example ex[MAX_EXAMPLES];
static size_t n_ex;

/* Hex bytes separated by spaces into out; the count, or -1. */
static long parse_hex_words(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;

    while (*s != '\0' && *s != '\n') {
        int hi, lo;

        while (*s == ' ')
            s++;
        if (*s == '\0' || *s == '\n')
            break;
        hi = tu_hex_digit(s[0]);
        lo = tu_hex_digit(s[1]);
        if (hi < 0 || lo < 0 || n == cap)
            return -1;
        out[n++] = (uint8_t)(hi << 4 | lo);
        s += 2;
    }
    return (long)n;
}

static void load_examples(void)
{
    size_t len;
    char *text = tu_read_srcfile("tests/kat/modbus_map_examples.txt", &len);
    char *line, *save = NULL;
    unsigned lineno = 0;

    ck_assert_ptr_nonnull(text);
    n_ex = 0;
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char section[8], kind[4];
        int used = 0;
        long n;

        lineno++;
        if (line[0] == '#' || line[0] == '\0')
            continue;
        ck_assert_msg(sscanf(line, "%7s %3s %n", section, kind, &used) == 2,
                      "modbus_map_examples.txt: malformed line: %s", line);
        if (strcmp(kind, "REQ") == 0) {
            ck_assert_uint_lt(n_ex, MAX_EXAMPLES);
            snprintf(ex[n_ex].section, sizeof ex[n_ex].section, "%s", section);
            n = parse_hex_words(line + used, ex[n_ex].req, sizeof ex[n_ex].req);
            ck_assert_msg(n > 0, "bad request bytes: %s", line);
            ex[n_ex].req_len = (size_t)n;
            n_ex++;
        } else {
            ck_assert_msg(strcmp(kind, "ANS") == 0 && n_ex > 0 &&
                              strcmp(ex[n_ex - 1].section, section) == 0,
                          "an ANS line must follow its REQ: %s", line);
            n = parse_hex_words(line + used, ex[n_ex - 1].ans, sizeof ex[n_ex - 1].ans);
            ck_assert_msg(n > 0, "bad answer bytes: %s", line);
            ex[n_ex - 1].ans_len = (size_t)n;
        }
    }
    free(text);
    ck_assert_uint_eq(n_ex, 18); /* 6.1-6.12, 6.14-6.18, 6.21: a shrunk file must fail */
}

START_TEST(test_spec_examples)
{
    size_t i, j;

    load_examples();
    for (i = 0; i < n_ex; i++) {
        const char *bad;

        ck_assert_msg(mbsc_pdu_lookup(ex[i].req, ex[i].req_len) != NULL, "%s: not in the table",
                      ex[i].section);
        ck_assert_msg(mbsc_pdu_check_request(ex[i].req, ex[i].req_len) == 0,
                      "%s: request refused with %u", ex[i].section,
                      mbsc_pdu_check_request(ex[i].req, ex[i].req_len));
        bad = mbsc_pdu_check_answer(ex[i].req, ex[i].req_len, ex[i].ans, ex[i].ans_len);
        ck_assert_msg(bad == NULL, "%s: answer refused: %s", ex[i].section, bad);
        for (j = 0; j < n_ex; j++) {
            if (j == i || memcmp(ex[j].ans, ex[i].ans, 1) != 0)
                continue;
            ck_assert_msg(
                mbsc_pdu_check_answer(ex[i].req, ex[i].req_len, ex[j].ans, ex[j].ans_len) != NULL,
                "%s's answer passes as an answer to %s", ex[j].section, ex[i].section);
        }
    }
}
END_TEST

/* Every request with a fixed length, cut short by one byte or one byte too long: 03. */
START_TEST(test_fixed_lengths)
{
    size_t i;

    load_examples();
    for (i = 0; i < n_ex; i++) {
        const struct mbsc_pdu_function *f = mbsc_pdu_lookup(ex[i].req, ex[i].req_len);
        uint8_t longer[MBSC_PDU_MAX];
        size_t cut;

        for (cut = 1; cut < ex[i].req_len; cut++)
            ck_assert_msg(mbsc_pdu_check_request(ex[i].req, cut) != 0 ||
                              mbsc_pdu_lookup(ex[i].req, cut) != f,
                          "%s cut to %zu bytes passes", ex[i].section, cut);
        memcpy(longer, ex[i].req, ex[i].req_len);
        longer[ex[i].req_len] = 0;
        ck_assert_msg(mbsc_pdu_check_request(longer, ex[i].req_len + 1) ==
                          MBSC_EXC_ILLEGAL_DATA_VALUE,
                      "%s with one byte more passes", ex[i].section);
    }
}
END_TEST

/* Quantity edges of 6.1-6.4, 6.11, 6.12, 6.17. */
static uint8_t read_request(uint8_t fc, unsigned start, unsigned qty)
{
    uint8_t p[5] = {fc, (uint8_t)(start >> 8), (uint8_t)start, (uint8_t)(qty >> 8), (uint8_t)qty};

    return mbsc_pdu_check_request(p, sizeof p);
}

START_TEST(test_read_quantities)
{
    ck_assert_uint_eq(read_request(0x01, 0, 0), MBSC_EXC_ILLEGAL_DATA_VALUE);
    ck_assert_uint_eq(read_request(0x01, 0, 1), 0);
    ck_assert_uint_eq(read_request(0x01, 0, 2000), 0);
    ck_assert_uint_eq(read_request(0x01, 0, 2001), MBSC_EXC_ILLEGAL_DATA_VALUE);
    ck_assert_uint_eq(read_request(0x02, 0, 2001), MBSC_EXC_ILLEGAL_DATA_VALUE);
    ck_assert_uint_eq(read_request(0x03, 0, 125), 0);
    ck_assert_uint_eq(read_request(0x03, 0, 126), MBSC_EXC_ILLEGAL_DATA_VALUE);
    ck_assert_uint_eq(read_request(0x04, 0, 0), MBSC_EXC_ILLEGAL_DATA_VALUE);
    /* The last register may be read, one past it not. */
    ck_assert_uint_eq(read_request(0x03, 0xFFFF, 1), 0);
    ck_assert_uint_eq(read_request(0x03, 0xFFFF, 2), MBSC_EXC_ILLEGAL_DATA_ADDRESS);
    ck_assert_uint_eq(read_request(0x01, 0xFFF0, 17), MBSC_EXC_ILLEGAL_DATA_ADDRESS);
}
END_TEST

START_TEST(test_write_quantities)
{
    uint8_t p[MBSC_PDU_MAX];
    unsigned q;

    /* 0x10: quantity 1..123, byte count 2 x quantity. */
    for (q = 0; q <= 124; q++) {
        memset(p, 0, sizeof p);
        p[0] = 0x10;
        p[4] = (uint8_t)q;
        p[5] = (uint8_t)(2 * q);
        ck_assert_uint_eq(mbsc_pdu_check_request(p, 6 + 2 * q),
                          q >= 1 && q <= 123 ? 0 : MBSC_EXC_ILLEGAL_DATA_VALUE);
    }
    /* A byte count that disagrees with the quantity, or with the bytes that follow. */
    p[4] = 2;
    p[5] = 3;
    ck_assert_uint_eq(mbsc_pdu_check_request(p, 9), MBSC_EXC_ILLEGAL_DATA_VALUE);
    p[5] = 4;
    ck_assert_uint_eq(mbsc_pdu_check_request(p, 9), MBSC_EXC_ILLEGAL_DATA_VALUE);
    ck_assert_uint_eq(mbsc_pdu_check_request(p, 10), 0);
    /* 0x0F: quantity 1..1968, ceil(quantity / 8) bytes. */
    memset(p, 0, sizeof p);
    p[0] = 0x0F;
    p[3] = 1968 >> 8;
    p[4] = 1968 & 0xFF;
    p[5] = 246;
    ck_assert_uint_eq(mbsc_pdu_check_request(p, 6 + 246), 0);
    p[4] = 1969 & 0xFF;
    ck_assert_uint_eq(mbsc_pdu_check_request(p, 6 + 247), MBSC_EXC_ILLEGAL_DATA_VALUE);
    /* 0x05: only 0xFF00 and 0x0000. */
    {
        uint8_t on[5] = {0x05, 0, 1, 0xFF, 0x00}, bad[5] = {0x05, 0, 1, 0x00, 0x01};

        ck_assert_uint_eq(mbsc_pdu_check_request(on, 5), 0);
        ck_assert_uint_eq(mbsc_pdu_check_request(bad, 5), MBSC_EXC_ILLEGAL_DATA_VALUE);
    }
    /* 0x17: write quantity 1..121. */
    memset(p, 0, sizeof p);
    p[0] = 0x17;
    p[4] = 1;
    p[8] = 121;
    p[9] = 242;
    ck_assert_uint_eq(mbsc_pdu_check_request(p, 10 + 242), 0);
    p[8] = 122;
    p[9] = 244;
    ck_assert_uint_eq(mbsc_pdu_check_request(p, 10 + 244), MBSC_EXC_ILLEGAL_DATA_VALUE);
}
END_TEST

START_TEST(test_ranges)
{
    struct mbsc_pdu_range r[2];
    uint8_t rw[] = {0x17, 0x00, 0x03, 0x00, 0x06, 0x00, 0x0E, 0x00,
                    0x03, 0x06, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF};
    uint8_t fifo[] = {0x18, 0xFF, 0xF0}, coil[] = {0x05, 0x00, 0xAC, 0xFF, 0x00};
    uint8_t diag[] = {0x08, 0x00, 0x01, 0x00, 0x00};

    ck_assert_int_eq(mbsc_pdu_ranges(rw, sizeof rw, r), 2);
    ck_assert_int_eq(r[0].table, MBSC_PDU_HOLDING_REGISTERS);
    ck_assert_int_eq(r[0].access, MBSC_PDU_READ);
    ck_assert_uint_eq(r[0].first, 3);
    ck_assert_uint_eq(r[0].count, 6);
    ck_assert_int_eq(r[1].access, MBSC_PDU_WRITE);
    ck_assert_uint_eq(r[1].first, 14);
    ck_assert_uint_eq(r[1].count, 3);
    ck_assert_int_eq(mbsc_pdu_ranges(rw, 8, r), -1);
    /* The FIFO pointer and what may follow it, clamped at the last address. */
    ck_assert_int_eq(mbsc_pdu_ranges(fifo, sizeof fifo, r), 1);
    ck_assert_uint_eq(r[0].first, 0xFFF0);
    ck_assert_uint_eq(r[0].count, 16);
    ck_assert_uint_eq(mbsc_pdu_check_request(fifo, sizeof fifo), 0);
    ck_assert_int_eq(mbsc_pdu_ranges(coil, sizeof coil, r), 1);
    ck_assert_int_eq(r[0].table, MBSC_PDU_COILS);
    ck_assert_int_eq(r[0].access, MBSC_PDU_WRITE);
    ck_assert_uint_eq(r[0].count, 1);
    ck_assert_int_eq(mbsc_pdu_ranges(diag, sizeof diag, r), 0);
    ck_assert_int_eq(mbsc_pdu_subfunction(diag, sizeof diag), 1);
}
END_TEST

START_TEST(test_unknown_and_mei)
{
    uint8_t user[] = {0x41, 0x01, 0x02}, mei_other[] = {0x2B, 0x0F, 0x00};
    uint8_t canopen[] = {0x2B, 0x0D, 0x00, 0x01}, devid_bad[] = {0x2B, 0x0E, 0x05, 0x00};
    uint8_t empty = 0;

    /* User-defined codes (65-72) and unknown MEI types are the device's to judge. */
    ck_assert_ptr_null(mbsc_pdu_lookup(user, sizeof user));
    ck_assert_uint_eq(mbsc_pdu_check_request(user, sizeof user), 0);
    ck_assert_ptr_null(mbsc_pdu_lookup(mei_other, sizeof mei_other));
    ck_assert_ptr_null(mbsc_pdu_lookup(mei_other, 1));
    ck_assert_str_eq(mbsc_pdu_lookup(canopen, sizeof canopen)->name, "canopen general reference");
    ck_assert_int_eq(mbsc_pdu_subfunction(canopen, sizeof canopen), 0x0D);
    ck_assert_uint_eq(mbsc_pdu_check_request(devid_bad, sizeof devid_bad),
                      MBSC_EXC_ILLEGAL_DATA_VALUE);
    ck_assert_uint_eq(mbsc_pdu_check_request(&empty, 0), MBSC_EXC_ILLEGAL_FUNCTION);
}
END_TEST

START_TEST(test_answers)
{
    uint8_t rd[] = {0x03, 0x00, 0x6B, 0x00, 0x03};
    uint8_t exc[] = {0x83, 0x02}, exc0[] = {0x83, 0x00}, exc_long[] = {0x83, 0x02, 0x00};
    uint8_t short_count[] = {0x03, 0x04, 0x02, 0x2B, 0x00, 0x00};
    uint8_t other_fc[] = {0x04, 0x06, 0, 0, 0, 0, 0, 0};
    uint8_t echo_req[] = {0x06, 0x00, 0x01, 0x00, 0x03},
            echo_bad[] = {0x06, 0x00, 0x01, 0x00, 0x04};
    uint8_t user_req[] = {0x41}, user_ans[] = {0x41, 1, 2, 3};

    ck_assert_ptr_null(mbsc_pdu_check_answer(rd, sizeof rd, exc, sizeof exc));
    ck_assert_ptr_nonnull(mbsc_pdu_check_answer(rd, sizeof rd, exc0, sizeof exc0));
    ck_assert_ptr_nonnull(mbsc_pdu_check_answer(rd, sizeof rd, exc_long, sizeof exc_long));
    ck_assert_ptr_nonnull(mbsc_pdu_check_answer(rd, sizeof rd, short_count, sizeof short_count));
    ck_assert_ptr_nonnull(mbsc_pdu_check_answer(rd, sizeof rd, other_fc, sizeof other_fc));
    ck_assert_ptr_nonnull(mbsc_pdu_check_answer(echo_req, 5, echo_bad, 5));
    ck_assert_ptr_null(mbsc_pdu_check_answer(user_req, 1, user_ans, sizeof user_ans));
}
END_TEST

START_TEST(test_adu)
{
    uint8_t h[6] = {0x12, 0x34, 0, 0, 0, 6}, out[MBSC_EXCEPTION_ADU_BYTES];
    uint8_t req[] = {0x12, 0x34, 0, 0, 0, 6, 0x11, 0x03, 0, 0, 0, 1};

    ck_assert_uint_eq(mbsc_adu_length(h), 12);
    h[5] = 1; /* a unit id and no function code */
    ck_assert_uint_eq(mbsc_adu_length(h), 0);
    h[5] = 254;
    ck_assert_uint_eq(mbsc_adu_length(h), MBSC_ADU_MAX);
    h[5] = 255;
    ck_assert_uint_eq(mbsc_adu_length(h), 0);
    h[5] = 6;
    h[3] = 1; /* protocol id 1 */
    ck_assert_uint_eq(mbsc_adu_length(h), 0);
    ck_assert_uint_eq(mbsc_adu_exception(req, MBSC_EXC_GATEWAY_PATH_UNAVAILABLE, out), 9);
    ck_assert_mem_eq(out, "\x12\x34\x00\x00\x00\x03\x11\x83\x0a", 9);
    ck_assert_str_eq(mbsc_pdu_exception_text(2), "illegal data address");
}
END_TEST

START_TEST(test_table_is_ordered_and_complete)
{
    static const int codes[] = {1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 15, 16, 17, 20, 21, 22, 23, 24, 43};
    const struct mbsc_pdu_function *f;
    size_t i, k = 0;
    int last = 0;

    for (i = 0; (f = mbsc_pdu_function_at(i)) != NULL; i++) {
        ck_assert_int_ge(f->code, last);
        if (f->code != last) {
            ck_assert_uint_lt(k, sizeof codes / sizeof codes[0]);
            ck_assert_int_eq(f->code, codes[k++]);
        }
        last = f->code;
        ck_assert_ptr_nonnull(f->name);
    }
    ck_assert_uint_eq(k, sizeof codes / sizeof codes[0]);
}
END_TEST

Suite *pdu_suite(void)
{
    Suite *s = suite_create("pdu");
    TCase *tc = tcase_create("table");

    tcase_add_test(tc, test_spec_examples);
    tcase_add_test(tc, test_fixed_lengths);
    tcase_add_test(tc, test_read_quantities);
    tcase_add_test(tc, test_write_quantities);
    tcase_add_test(tc, test_ranges);
    tcase_add_test(tc, test_unknown_and_mei);
    tcase_add_test(tc, test_answers);
    tcase_add_test(tc, test_adu);
    tcase_add_test(tc, test_table_is_ordered_and_complete);
    suite_add_tcase(s, tc);
    return s;
}
