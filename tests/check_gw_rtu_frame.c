/* SPDX-License-Identifier: ISC */
/*
 * check_gw_rtu_frame.c - Modbus RTU frames (tools/gateway/rtu_frame.c).
 *
 * Known answers: the CRC of the frames in tests/kat/modbus_rtu_crc.txt
 * (the Serial Line specification's example, the Modicon guide's, the CRC
 * catalogue's check value), and the length of every answer example of the
 * Modbus Application Protocol Specification v1.1b3, section 6
 * (tests/kat/modbus_map_examples.txt), told from its first bytes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbsc.h>

#include "rtu_frame.h"
#include "testutil.h"

Suite *gw_rtu_frame_suite(void);

/* Hex bytes separated by spaces, up to stop (or the end) into out; the count, or -1. */
static long hex_words(const char *s, const char *stop, uint8_t *out, size_t cap)
{
    size_t n = 0;

    while (s < stop && *s != '\0') {
        int hi, lo;

        if (*s == ' ') {
            s++;
            continue;
        }
        hi = tu_hex_digit(s[0]);
        lo = tu_hex_digit(s[1]);
        if (hi < 0 || lo < 0 || n == cap)
            return -1;
        out[n++] = (uint8_t)(hi << 4 | lo);
        s += 2;
    }
    return (long)n;
}

START_TEST(test_crc_vectors)
{
    size_t len;
    char *text = tu_read_srcfile("tests/kat/modbus_rtu_crc.txt", &len);
    char *line, *save = NULL;
    int cases = 0;

    ck_assert_ptr_nonnull(text);
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        uint8_t frame[GW_RTU_MAX];
        const char *eq = strchr(line, '=');
        unsigned want;
        long n;

        if (line[0] == '#' || line[0] == '\0')
            continue;
        ck_assert_msg(eq != NULL && sscanf(eq + 1, " %x", &want) == 1, "bad line: %s", line);
        n = hex_words(line, eq, frame, sizeof frame - 2);
        ck_assert_msg(n > 0, "bad bytes: %s", line);
        ck_assert_msg(gw_rtu_crc16(frame, (size_t)n) == want, "%s: got %04X", line,
                      gw_rtu_crc16(frame, (size_t)n));
        /* Low byte first: the frame with its CRC passes, one flipped bit anywhere does not. */
        frame[n] = (uint8_t)(want & 0xFF);
        frame[n + 1] = (uint8_t)(want >> 8);
        if (n + 2 >= (long)GW_RTU_MIN) {
            long bit;

            ck_assert(gw_rtu_crc_ok(frame, (size_t)n + 2));
            for (bit = 0; bit < (n + 2) * 8; bit++) {
                frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                ck_assert_msg(!gw_rtu_crc_ok(frame, (size_t)n + 2), "%s: bit %ld", line, bit);
                frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            }
        }
        cases++;
    }
    free(text);
    ck_assert_int_eq(cases, 3); /* a shrunk file must fail */
}
END_TEST

/* The Modicon guide's query as a Modbus/TCP ADU, to RTU and back. */
START_TEST(test_adu_to_rtu_and_back)
{
    static const uint8_t adu[] = {0x12, 0x34, 0, 0, 0, 6, 0x11, 0x03, 0x00, 0x6B, 0x00, 0x03};
    static const uint8_t rtu[] = {0x11, 0x03, 0x00, 0x6B, 0x00, 0x03, 0x76, 0x87};
    uint8_t out[GW_RTU_MAX], back[MBSC_ADU_MAX];
    size_t n = gw_rtu_from_adu(adu, sizeof adu, out);

    ck_assert_uint_eq(n, sizeof rtu);
    ck_assert_mem_eq(out, rtu, sizeof rtu);
    n = gw_rtu_to_adu(rtu, sizeof rtu, 0x1234, back);
    ck_assert_uint_eq(n, sizeof adu);
    ck_assert_mem_eq(back, adu, sizeof adu);
    ck_assert_uint_eq(mbsc_adu_length(back), sizeof adu);
}
END_TEST

/*
 * Every answer example of MAP section 6, as an RTU frame from unit 0x11:
 * each of its prefixes gives 0 (more needed) or its whole length, never
 * another; the whole frame gives its length, except diagnostics (0x08),
 * whose answer's length the frame does not say.  Its exception is 5.
 */
START_TEST(test_answer_lengths_of_spec_examples)
{
    size_t len;
    char *text = tu_read_srcfile("tests/kat/modbus_map_examples.txt", &len);
    char *line, *save = NULL;
    uint8_t req[MBSC_PDU_MAX];
    size_t req_len = 0;
    int answers = 0;

    ck_assert_ptr_nonnull(text);
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char section[8], kind[4];
        uint8_t frame[GW_RTU_MAX];
        int used = 0;
        long n, got;
        size_t have;

        if (line[0] == '#' || line[0] == '\0')
            continue;
        ck_assert(sscanf(line, "%7s %3s %n", section, kind, &used) == 2);
        if (strcmp(kind, "REQ") == 0) {
            n = hex_words(line + used, line + strlen(line), req, sizeof req);
            ck_assert(n > 0);
            req_len = (size_t)n;
            continue;
        }
        frame[0] = 0x11;
        n = hex_words(line + used, line + strlen(line), frame + 1, sizeof frame - 3);
        ck_assert(n > 0);
        n += 1;
        frame[n] = frame[n + 1] = 0; /* the CRC's bytes: their value does not matter here */
        n += 2;
        for (have = 0; have < (size_t)n; have++) {
            got = gw_rtu_answer_length(req, req_len, frame, have);
            ck_assert_msg(got == 0 || got == n || (req[0] == 0x08 && got == GW_RTU_ANSWER_UNKNOWN),
                          "%s: after %zu bytes: %ld, the frame has %ld", section, have, got, n);
        }
        got = gw_rtu_answer_length(req, req_len, frame, (size_t)n);
        if (req[0] == 0x08)
            ck_assert_int_eq(got, GW_RTU_ANSWER_UNKNOWN);
        else
            ck_assert_msg(got == n, "%s: %ld, the frame has %ld", section, got, n);
        frame[1] = (uint8_t)(req[0] | 0x80);
        ck_assert_int_eq(gw_rtu_answer_length(req, req_len, frame, 2), 5);
        /* Another function code than the request's: the frame cannot say. */
        frame[1] = (uint8_t)(req[0] == 0x03 ? 0x04 : 0x03);
        ck_assert_int_eq(gw_rtu_answer_length(req, req_len, frame, 2), GW_RTU_ANSWER_UNKNOWN);
        answers++;
    }
    free(text);
    ck_assert_int_eq(answers, 18);
}
END_TEST

/*
 * The timers of the Serial Line specification, 2.5.1.1: t3.5 is 3.5
 * character times (11 bits each in 8E1, 10 in 8N1) up to 19200 baud and
 * 1.750 ms above.  The expected values are that arithmetic done by hand:
 * 11 bits at 19200 baud take 572.916 us; 3.5 of them 2005.208 us.
 */
START_TEST(test_timers)
{
    ck_assert_int_eq(gw_rtu_char_ns(19200, 11), 572916);
    ck_assert_int_eq(gw_rtu_char_ns(9600, 10), 1041666);
    ck_assert_int_eq(gw_rtu_t35_ns(19200, 11), 2005208);
    ck_assert_int_eq(gw_rtu_t35_ns(9600, 11), 4010416);
    ck_assert_int_eq(gw_rtu_t35_ns(9600, 10), 3645833);
    ck_assert_int_eq(gw_rtu_t35_ns(38400, 11), 1750000);
    ck_assert_int_eq(gw_rtu_t35_ns(115200, 10), 1750000);
}
END_TEST

Suite *gw_rtu_frame_suite(void)
{
    Suite *s = suite_create("gw_rtu_frame");
    TCase *tc = tcase_create("frames");

    tcase_add_test(tc, test_crc_vectors);
    tcase_add_test(tc, test_adu_to_rtu_and_back);
    tcase_add_test(tc, test_answer_lengths_of_spec_examples);
    tcase_add_test(tc, test_timers);
    suite_add_tcase(s, tc);
    return s;
}
