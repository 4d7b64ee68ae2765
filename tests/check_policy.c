/* SPDX-License-Identifier: ISC */
/*
 * check_policy.c - roles to rights (mbsc/policy.h): the file format, its
 * errors and warnings, the decision for every function code the table
 * rules govern, and sub-function rules.
 *
 * Request layouts are those of the Modbus Application Protocol
 * Specification v1.1b3, section 6 (function code, then big-endian address
 * and quantity fields; 0x08 diagnostics: a 16-bit sub-function, 6.8;
 * 0x2B: an MEI type byte, 0x0E read device identification 6.21, 0x0D
 * CANopen general reference 6.20; 0x18 read FIFO queue: the FIFO pointer
 * address, 6.18); the expected decisions follow from the policy text of
 * each test, not from the code under test.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mbsc.h"
#include "testutil.h"

Suite *policy_suite(void);

static const char policy_text[] =
    "# a policy for the tests\n"
    "operator   read        holding-registers  0-99\n"
    "operator   write       holding-registers  0-9,20   # and one more\n"
    "operator   write       holding-registers  10-19\n" /* merges with 0-9 and 20 */
    "operator   read-write  coils              0x10-0x1f\n"
    "operator   read        discrete-inputs    0-7 100\n"
    "operator   function    0x2b\n"
    "viewer     read        input-registers    *\r\n"
    "viewer     read        holding-registers  0-9 11-19\n" /* a hole at 10 */
    "\n"
    "guest      none\n";

static mbsc_policy *policy;

static void setup(void)
{
    char why[MBSC_WHY_SIZE];
    int rc = mbsc_policy_parse(&policy, policy_text, sizeof policy_text - 1, "test.policy", why,
                               sizeof why);

    ck_assert_msg(rc == MBSC_OK, "parse: %s (%s)", mbsc_strerror(rc), why);
}

static void teardown(void)
{
    mbsc_policy_free(policy);
    policy = NULL;
}

/* A request: function code, then 16-bit big-endian fields. */
static size_t pdu(uint8_t *out, unsigned fc, int nfields, const unsigned *fields)
{
    out[0] = (uint8_t)fc;
    for (int i = 0; i < nfields; i++) {
        out[1 + 2 * i] = (uint8_t)(fields[i] >> 8);
        out[2 + 2 * i] = (uint8_t)fields[i];
    }
    return 1 + 2 * (size_t)nfields;
}

static int check2(const char *role, unsigned fc, unsigned a, unsigned b, char *why)
{
    uint8_t buf[16];
    unsigned f[2] = {a, b};
    size_t n = pdu(buf, fc, 2, f);

    return mbsc_policy_check(policy, role, buf, n, why, MBSC_WHY_SIZE);
}

#define ALLOWED(role, fc, a, b)                                                                    \
    do {                                                                                           \
        char why_[MBSC_WHY_SIZE];                                                                  \
        int rc_ = check2(role, fc, a, b, why_);                                                    \
        ck_assert_msg(rc_ == MBSC_OK, "%s fc 0x%02x %u %u refused: %s", role, fc, a, b, why_);     \
        ck_assert_str_eq(why_, "");                                                                \
    } while (0)

#define REFUSED(role, fc, a, b, text)                                                              \
    do {                                                                                           \
        char why_[MBSC_WHY_SIZE];                                                                  \
        int rc_ = check2(role, fc, a, b, why_);                                                    \
        ck_assert_msg(rc_ == MBSC_ERR_POLICY_DENIED, "%s fc 0x%02x %u %u: got %s", role, fc, a, b, \
                      mbsc_strerror(rc_));                                                         \
        ck_assert_msg(strstr(why_, text) != NULL, "why '%s' lacks '%s'", why_, text);              \
    } while (0)

START_TEST(test_reads)
{
    ALLOWED("operator", 0x03, 0, 100); /* 0..99, the whole range */
    ALLOWED("operator", 0x03, 99, 1);
    REFUSED("operator", 0x03, 99, 2, "role operator may not read holding-registers 99-100");
    REFUSED("operator", 0x04, 0, 1, "may not read input-registers 0-0 (function 0x04)");
    ALLOWED("operator", 0x01, 16, 16); /* coils 0x10-0x1f */
    REFUSED("operator", 0x01, 15, 2, "read coils 15-16");
    ALLOWED("operator", 0x02, 0, 8);
    ALLOWED("operator", 0x02, 100, 1);
    REFUSED("operator", 0x02, 7, 2, "read discrete-inputs 7-8"); /* 8 is not listed */
    ALLOWED("viewer", 0x04, 0, 125);
    ALLOWED("viewer", 0x04, 65535, 1);
    /* The hole at 10: ranges are merged only where they touch. */
    ALLOWED("viewer", 0x03, 0, 10);
    ALLOWED("viewer", 0x03, 11, 9);
    REFUSED("viewer", 0x03, 5, 10, "read holding-registers 5-14");
}
END_TEST

START_TEST(test_writes)
{
    uint8_t buf[16];
    char why[MBSC_WHY_SIZE];
    unsigned mask[3] = {5, 0xFF00, 0x00FF};

    /* 0-9, 10-19 and 20 merge into one range 0-20. */
    ALLOWED("operator", 0x10, 0, 21);
    REFUSED("operator", 0x10, 0, 22, "write holding-registers 0-21 (function 0x10)");
    ALLOWED("operator", 0x06, 20, 0xABCD); /* single register: the value is not an address */
    REFUSED("operator", 0x06, 21, 0, "write holding-registers 21-21");
    ALLOWED("operator", 0x05, 0x1f, 0xFF00);
    REFUSED("operator", 0x05, 0x20, 0xFF00, "write coils 32-32");
    ALLOWED("operator", 0x0F, 0x10, 16);
    REFUSED("viewer", 0x10, 0, 1, "role viewer may not write holding-registers 0-0");
    REFUSED("viewer", 0x05, 0, 0xFF00, "may not write coils");
    /* Mask write (0x16: address, AND mask, OR mask) needs write access. */
    ck_assert_int_eq(
        mbsc_policy_check(policy, "operator", buf, pdu(buf, 0x16, 3, mask), why, sizeof why),
        MBSC_OK);
    mask[0] = 50;
    ck_assert_int_eq(
        mbsc_policy_check(policy, "operator", buf, pdu(buf, 0x16, 3, mask), why, sizeof why),
        MBSC_ERR_POLICY_DENIED);
    ck_assert_ptr_nonnull(strstr(why, "write holding-registers 50-50 (function 0x16)"));
}
END_TEST

/* 0x17: read address, read quantity, write address, write quantity, ... */
static int check_rw(const char *role, unsigned ra, unsigned rq, unsigned wa, unsigned wq, char *why)
{
    uint8_t buf[16];
    unsigned f[5] = {ra, rq, wa, wq, 0x0200}; /* byte count and a first value byte */

    return mbsc_policy_check(policy, role, buf, pdu(buf, 0x17, 5, f), why, MBSC_WHY_SIZE);
}

START_TEST(test_read_write_multiple_needs_both)
{
    char why[MBSC_WHY_SIZE];

    ck_assert_int_eq(check_rw("operator", 50, 10, 0, 1, why), MBSC_OK);
    ck_assert_int_eq(check_rw("operator", 95, 10, 0, 1, why), MBSC_ERR_POLICY_DENIED);
    ck_assert_ptr_nonnull(strstr(why, "read holding-registers 95-104 (function 0x17)"));
    ck_assert_int_eq(check_rw("operator", 0, 1, 20, 2, why), MBSC_ERR_POLICY_DENIED);
    ck_assert_ptr_nonnull(strstr(why, "write holding-registers 20-21 (function 0x17)"));
    /* viewer may read holding registers 0-9 but write none */
    ck_assert_int_eq(check_rw("viewer", 0, 1, 0, 1, why), MBSC_ERR_POLICY_DENIED);
    ck_assert_ptr_nonnull(strstr(why, "write holding-registers 0-0"));
}
END_TEST

START_TEST(test_address_wrap_refused)
{
    /* 65535 + 2 registers would run past the end of the address space. */
    REFUSED("viewer", 0x04, 65535, 2, "read input-registers 65535-65536");
    ALLOWED("viewer", 0x04, 65535, 1);
}
END_TEST

START_TEST(test_other_functions)
{
    uint8_t req[4] = {0x2B, 0x0E, 0x01, 0x00}; /* read device identification */
    char why[MBSC_WHY_SIZE];

    ck_assert_int_eq(mbsc_policy_check(policy, "operator", req, sizeof req, why, sizeof why),
                     MBSC_OK);
    ck_assert_int_eq(mbsc_policy_check(policy, "viewer", req, sizeof req, why, sizeof why),
                     MBSC_ERR_POLICY_DENIED);
    ck_assert_str_eq(why, "role viewer may not use function 0x2b");
    req[0] = 0x08; /* diagnostics: listed for nobody */
    ck_assert_int_eq(mbsc_policy_check(policy, "operator", req, sizeof req, why, sizeof why),
                     MBSC_ERR_POLICY_DENIED);
    req[0] = 0xAB; /* an exception response is never a request */
    ck_assert_int_eq(mbsc_policy_check(policy, "operator", req, sizeof req, why, sizeof why),
                     MBSC_ERR_POLICY_DENIED);
    ck_assert_int_eq(MBSC_POLICY_REFUSAL_EXCEPTION, 0x01); /* Illegal Function */
}
END_TEST

START_TEST(test_roles)
{
    char why[MBSC_WHY_SIZE];
    uint8_t req[5] = {0x03, 0, 0, 0, 1};

    ck_assert_int_eq(mbsc_policy_has_role(policy, "operator"), 1);
    ck_assert_int_eq(mbsc_policy_has_role(policy, "guest"), 1);
    ck_assert_int_eq(mbsc_policy_has_role(policy, "Operator"), 0); /* names are exact */
    ck_assert_int_eq(mbsc_policy_has_role(policy, NULL), 0);
    ck_assert_int_eq(mbsc_policy_has_role(NULL, "operator"), 0);
    ck_assert_int_eq(mbsc_policy_check(policy, "guest", req, sizeof req, why, sizeof why),
                     MBSC_ERR_POLICY_DENIED);
    ck_assert_ptr_nonnull(strstr(why, "role guest may not read holding-registers 0-0"));
    ck_assert_int_eq(mbsc_policy_check(policy, "intruder", req, sizeof req, why, sizeof why),
                     MBSC_ERR_POLICY_DENIED);
    ck_assert_str_eq(why, "role intruder is not in the policy (function 0x03)");
    ck_assert_int_eq(mbsc_policy_check(policy, NULL, req, sizeof req, why, sizeof why),
                     MBSC_ERR_POLICY_DENIED);
    ck_assert_ptr_nonnull(strstr(why, "has no role"));
    ck_assert_int_eq(mbsc_policy_check(NULL, "operator", req, sizeof req, why, sizeof why),
                     MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_policy_check(policy, "operator", NULL, 0, why, sizeof why),
                     MBSC_ERR_INVALID_ARG);
}
END_TEST

/*
 * 0x18 reads the count register at its FIFO pointer address and up to 31
 * queued registers after it (Modbus Application Protocol v1.1b3, 6.18):
 * read access to all 32 decides, clamped at the last address.
 */
START_TEST(test_fifo_queue)
{
    ALLOWED("operator", 0x18, 5, 0);  /* one field: the second is past the PDU's end */
    ALLOWED("operator", 0x18, 68, 0); /* 68-99 */
    REFUSED("operator", 0x18, 69, 0,
            "role operator may not read holding-registers 69-100 "
            "(function 0x18)");
    REFUSED("operator", 0x18, 99, 0, "read holding-registers 99-130");
    REFUSED("viewer", 0x18, 9, 0, "read holding-registers 9-40"); /* reaches the hole at 10 */
    REFUSED("viewer", 0x18, 0, 0, "read holding-registers 0-31");
    REFUSED("guest", 0x18, 0, 0, "role guest may not read holding-registers 0-31");
    ALLOWED("viewer", 0x04, 0xFFF0, 16); /* input registers, for contrast */
}
END_TEST

/* Every PDU shorter than its function's address fields is refused, and the
 * check reads no byte past the end (ASan in CI; the copy is exactly n bytes). */
START_TEST(test_short_requests)
{
    static const uint8_t codes[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
                                    0x0F, 0x10, 0x16, 0x17, 0x18};
    static const size_t need[] = {5, 5, 5, 5, 3, 3, 5, 5, 3, 9, 3};
    uint8_t full[16] = {0};
    char why[MBSC_WHY_SIZE];

    for (size_t c = 0; c < sizeof codes; c++) {
        for (size_t n = 0; n < need[c]; n++) {
            uint8_t *copy = malloc(n > 0 ? n : 1);
            full[0] = codes[c];
            memcpy(copy, full, n);
            ck_assert_int_eq(mbsc_policy_check(policy, "viewer", copy, n, why, sizeof why),
                             MBSC_ERR_POLICY_DENIED);
            free(copy);
        }
    }
}
END_TEST

/* --- Syntax errors: each names the file, the line and what to do --------- */

struct bad_policy {
    const char *text;
    unsigned line;
    const char *says;
};

static const struct bad_policy bad_policies[] = {
    {"op read holding-registers 0-9\nop! read coils 0\n", 2, "bad role name"},
    {"op\n", 1, "missing access after the role"},
    {"op readwrite coils 0\n", 1, "unknown access (use read, write, read-write"},
    {"op read\n", 1, "missing table"},
    {"op read holding 0-9\n", 1, "unknown table (use coils, discrete-inputs"},
    {"op write input-registers 0\n", 1, "read-only in Modbus"},
    {"op read-write discrete-inputs 0\n", 1, "read-only in Modbus"},
    {"op read coils\n", 1, "missing addresses"},
    {"op read coils 65536\n", 1, "bad address (use N, N-M or *"},
    {"op read coils 0-65536\n", 1, "bad address range"},
    {"op read coils 9-1\n", 1, "runs backwards"},
    {"op read coils 0,,2\n", 1, "bad address"},
    {"op read coils 0,\n", 1, "bad address"},
    {"op read coils -5\n", 1, "bad address range"},
    {"op read coils 0x\n", 1, "bad address"},
    {"op function\n", 1, "missing function codes"},
    {"op function 3\n", 1, "reads or writes a table"},
    {"op function 0x17\n", 1, "reads or writes a table"},
    {"op function 0\n", 1, "bad function code"},
    {"op function 0x80\n", 1, "bad function code"},
    {"op function ab\n", 1, "bad function code"},
    {"op none coils\n", 1, "'none' takes nothing after it"},
    {"op function 0x18\n", 1,
     "function 0x18 (read FIFO queue) reads or writes a table, so the table rules decide it: "
     "allow it with a rule such as 'ROLE read holding-registers 0-99'"},
    {"op function 0x17\n", 1, "'ROLE read-write holding-registers 0-99'"},
    {"op function 0x11\nop function 0x08:\n", 2, "missing sub-function after ':'"},
    {"op function :0x00\n", 1, "needs its function code, with no space before ':'"},
    {"op function 0x08 :0x00\n", 1, "needs its function code, with no space before ':'"},
    {"op function 0x08: 0x00\n", 1, "missing sub-function after ':' (no space after it"},
    {"op function 0x08:0x10000\n", 1, "bad diagnostics sub-function (use CODE:SUB"},
    {"op function 0x08:x\n", 1, "bad diagnostics sub-function"},
    {"op function 0x08:1:2\n", 1, "bad diagnostics sub-function"},
    {"op function 0x2b:0x100\n", 1, "bad MEI type (use CODE:TYPE"},
    {"op function 0x2b:0x0e-\n", 1, "bad MEI type"},
    {"op function 0x08:5-2\n", 1, "sub-function range runs backwards"},
    {"op function 0x11:0\n", 1,
     "function 0x11 has no sub-functions a rule can name (only 0x08 diagnostics and 0x2b MEI "
     "types): write 'function 0x11' alone"},
    {"op function 0x03:0\n", 1, "reads or writes a table"},
    {"op function 0x80:0\n", 1, "bad function code"},
    {"# comment\n\nok read coils 0\nop read coils 0 x\n", 4, "bad address"},
};

START_TEST(test_syntax_errors)
{
    const struct bad_policy *b = &bad_policies[_i];
    char why[MBSC_WHY_SIZE], want[64];
    mbsc_policy *p = (mbsc_policy *)(void *)&want; /* must be reset to NULL */
    int rc = mbsc_policy_parse(&p, b->text, strlen(b->text), "site.policy", why, sizeof why);

    ck_assert_int_eq(rc, MBSC_ERR_POLICY_SYNTAX);
    ck_assert_ptr_null(p);
    snprintf(want, sizeof want, "site.policy:%u: ", b->line);
    ck_assert_msg(strncmp(why, want, strlen(want)) == 0, "'%s' does not start with '%s'", why,
                  want);
    ck_assert_msg(strstr(why, b->says) != NULL, "'%s' lacks '%s'", why, b->says);
}
END_TEST

START_TEST(test_long_line_and_nul)
{
    char why[MBSC_WHY_SIZE];
    mbsc_policy *p;
    size_t n = MBSC_POLICY_LINE_MAX + 10;
    char *text = malloc(n);
    static const char nul[] = "op read coils 0\nop read\0 coils 1\n";

    memset(text, ' ', n);
    memcpy(text, "op read coils 0", 15);
    text[n - 1] = '\n';
    ck_assert_int_eq(mbsc_policy_parse(&p, text, n, NULL, why, sizeof why), MBSC_ERR_POLICY_SYNTAX);
    ck_assert_ptr_nonnull(strstr(why, "policy:1: line too long"));
    free(text);
    ck_assert_int_eq(mbsc_policy_parse(&p, nul, sizeof nul - 1, NULL, why, sizeof why),
                     MBSC_ERR_POLICY_SYNTAX);
    ck_assert_ptr_nonnull(strstr(why, "policy:2: NUL byte"));
}
END_TEST

/* --- Sub-functions and warnings ------------------------------------------ */

static int check_bytes(const mbsc_policy *p, const char *role, const uint8_t *req, size_t n,
                       char *why)
{
    uint8_t *copy = malloc(n); /* exactly n bytes: ASan sees a read past the end */
    int rc;

    ck_assert_ptr_nonnull(copy);
    memcpy(copy, req, n);
    rc = mbsc_policy_check(p, role, copy, n, why, MBSC_WHY_SIZE);
    free(copy);
    return rc;
}

START_TEST(test_subfunctions)
{
    static const char text[] = "tech     function 0x08:0x00 0x2b:0x0e   # echo, identification\n"
                               "counters function 0x08:0x0b-0x12,0x11\n"
                               "counters function 0x08:0x0B\n"
                               "eng      function 0x08 0x08:0x00\n";
    static const uint8_t echo[] = {0x08, 0x00, 0x00, 0x12, 0x34};
    static const uint8_t restart[] = {0x08, 0x00, 0x01, 0x00, 0x00};
    static const uint8_t listen_only[] = {0x08, 0x00, 0x04, 0x00, 0x00};
    static const uint8_t bus_messages[] = {0x08, 0x00, 0x0B, 0x00, 0x00};
    static const uint8_t overrun_count[] = {0x08, 0x00, 0x12, 0x00, 0x00};
    static const uint8_t clear_overrun[] = {0x08, 0x00, 0x14, 0x00, 0x00};
    static const uint8_t high_byte[] = {0x08, 0x01, 0x00, 0x00, 0x00}; /* 0x0100, not 0x00 */
    static const uint8_t device_id[] = {0x2B, 0x0E, 0x01, 0x00};
    static const uint8_t canopen[] = {0x2B, 0x0D, 0x00, 0x00, 0x00};
    char why[MBSC_WHY_SIZE];
    mbsc_policy *p;
    int rc = mbsc_policy_parse(&p, text, sizeof text - 1, "sub.policy", why, sizeof why);

    ck_assert_msg(rc == MBSC_OK, "parse: %s (%s)", mbsc_strerror(rc), why);
    /* 0x08:0x00 is return query data, and only it. */
    ck_assert_int_eq(check_bytes(p, "tech", echo, sizeof echo, why), MBSC_OK);
    ck_assert_int_eq(check_bytes(p, "tech", restart, sizeof restart, why), MBSC_ERR_POLICY_DENIED);
    ck_assert_str_eq(why, "role tech may not use function 0x08 sub-function 0x0001");
    ck_assert_int_eq(check_bytes(p, "tech", listen_only, sizeof listen_only, why),
                     MBSC_ERR_POLICY_DENIED);
    ck_assert_int_eq(check_bytes(p, "tech", high_byte, sizeof high_byte, why),
                     MBSC_ERR_POLICY_DENIED);
    ck_assert_str_eq(why, "role tech may not use function 0x08 sub-function 0x0100");
    /* 0x2b:0x0e is device identification, and not CANopen. */
    ck_assert_int_eq(check_bytes(p, "tech", device_id, sizeof device_id, why), MBSC_OK);
    ck_assert_int_eq(check_bytes(p, "tech", canopen, sizeof canopen, why), MBSC_ERR_POLICY_DENIED);
    ck_assert_str_eq(why, "role tech may not use function 0x2b MEI type 0x0d");
    /* A range, its ends included, merged with what touches it. */
    ck_assert_int_eq(check_bytes(p, "counters", bus_messages, sizeof bus_messages, why), MBSC_OK);
    ck_assert_int_eq(check_bytes(p, "counters", overrun_count, sizeof overrun_count, why), MBSC_OK);
    ck_assert_int_eq(check_bytes(p, "counters", clear_overrun, sizeof clear_overrun, why),
                     MBSC_ERR_POLICY_DENIED);
    ck_assert_int_eq(check_bytes(p, "counters", restart, sizeof restart, why),
                     MBSC_ERR_POLICY_DENIED);
    /* No rule for 0x2b at all: the refusal names the code only. */
    ck_assert_int_eq(check_bytes(p, "counters", device_id, sizeof device_id, why),
                     MBSC_ERR_POLICY_DENIED);
    ck_assert_str_eq(why, "role counters may not use function 0x2b");
    /* Too short to hold the sub-function: refused, nothing read past the end. */
    ck_assert_int_eq(check_bytes(p, "tech", echo, 2, why), MBSC_ERR_POLICY_DENIED);
    ck_assert_ptr_nonnull(strstr(why, "too short"));
    ck_assert_int_eq(check_bytes(p, "tech", echo, 1, why), MBSC_ERR_POLICY_DENIED);
    ck_assert_int_eq(check_bytes(p, "tech", device_id, 1, why), MBSC_ERR_POLICY_DENIED);
    ck_assert_int_eq(check_bytes(p, "tech", echo, 3, why), MBSC_OK);
    /* The whole code grants every sub-function, beside a narrower rule. */
    ck_assert_int_eq(check_bytes(p, "eng", restart, sizeof restart, why), MBSC_OK);
    ck_assert_int_eq(check_bytes(p, "eng", echo, 1, why), MBSC_OK);
    mbsc_policy_free(p);
}
END_TEST

START_TEST(test_whole_code_warnings)
{
    static const char text[] = "eng   function 0x08\n"
                               "eng   function 0x11,0x2B\n"
                               "# file records\n"
                               "files function 20 0x15\n"
                               "safe  function 0x11 0x07 0x0b 0x0c\n"
                               "safe  read holding-registers 0-9\n";
    static const struct {
        const char *start, *has1, *has2;
    } want[] = {
        {"w.policy:1: role eng: 'function 0x08' (diagnostics) grants every diagnostics "
         "sub-function",
         "0x0004 force listen only mode", "e.g. 'function 0x08:0x00' (return query data)"},
        {"w.policy:2: role eng: 'function 0x2b' (encapsulated interface transport) grants every "
         "MEI type",
         "0x0d CANopen general reference",
         "e.g. 'function 0x2b:0x0e' (read device "
         "identification)"},
        {"w.policy:4: role files: 'function 0x14' (read file record) lets the role read every "
         "record of every file",
         "not the register tables", NULL},
        {"w.policy:4: role files: 'function 0x15' (write file record) lets the role write every "
         "record of every file",
         "not the register tables", NULL},
    };
    static const char narrow[] = "safe function 0x08:0x00,0x08:0x0b 0x2b:0x0e 0x11 0x07\n"
                                 "safe read holding-registers 0-9\n";
    char why[MBSC_WHY_SIZE];
    mbsc_policy *p;
    size_t i;
    int rc = mbsc_policy_parse(&p, text, sizeof text - 1, "w.policy", why, sizeof why);

    ck_assert_msg(rc == MBSC_OK, "parse: %s (%s)", mbsc_strerror(rc), why);
    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *w = mbsc_policy_warning(p, i);

        ck_assert_msg(w != NULL, "warning %zu missing", i);
        ck_assert_msg(strncmp(w, want[i].start, strlen(want[i].start)) == 0,
                      "warning %zu: '%s' does not start with '%s'", i, w, want[i].start);
        ck_assert_msg(strstr(w, want[i].has1) != NULL, "warning %zu: '%s' lacks '%s'", i, w,
                      want[i].has1);
        ck_assert_msg(want[i].has2 == NULL || strstr(w, want[i].has2) != NULL,
                      "warning %zu: '%s' lacks '%s'", i, w, want[i].has2);
        ck_assert_ptr_null(strchr(w, '\n'));
    }
    /* The codes of "safe" grant nothing more than they say. */
    ck_assert_ptr_null(mbsc_policy_warning(p, i));
    ck_assert_ptr_null(mbsc_policy_warning(p, (size_t)-1));
    ck_assert_ptr_null(mbsc_policy_warning(NULL, 0));
    mbsc_policy_free(p);

    /* Nor do sub-function rules. */
    ck_assert_int_eq(mbsc_policy_parse(&p, narrow, sizeof narrow - 1, NULL, why, sizeof why),
                     MBSC_OK);
    ck_assert_ptr_null(mbsc_policy_warning(p, 0));
    mbsc_policy_free(p);
}
END_TEST

START_TEST(test_empty_policy_allows_nothing)
{
    char why[MBSC_WHY_SIZE];
    mbsc_policy *p;
    uint8_t req[5] = {0x03, 0, 0, 0, 1};

    ck_assert_int_eq(mbsc_policy_parse(&p, "", 0, NULL, why, sizeof why), MBSC_OK);
    ck_assert_int_eq(mbsc_policy_check(p, "operator", req, sizeof req, why, sizeof why),
                     MBSC_ERR_POLICY_DENIED);
    mbsc_policy_free(p);
    mbsc_policy_free(NULL);
}
END_TEST

/* --- Files ---------------------------------------------------------------- */

static void write_file(const char *path, const char *text, size_t len, mode_t mode)
{
    FILE *f = fopen(path, "wb");

    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(path, mode), 0);
}

START_TEST(test_load)
{
    char dir[] = "/tmp/mbsc-policy-XXXXXX", path[64], why[MBSC_WHY_SIZE];
    mbsc_policy *p;
    char *big;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/site.policy", dir);

    ck_assert_int_eq(mbsc_policy_load(&p, path, why, sizeof why), MBSC_ERR_KEY_FILE_UNREADABLE);
    ck_assert_ptr_nonnull(strstr(why, path));

    write_file(path, policy_text, sizeof policy_text - 1, 0644);
    ck_assert_int_eq(mbsc_policy_load(&p, path, why, sizeof why), MBSC_OK);
    ck_assert_int_eq(mbsc_policy_has_role(p, "viewer"), 1);
    mbsc_policy_free(p);

    /* Whoever may write the policy decides who may write the PLC. */
    ck_assert_int_eq(chmod(path, 0664), 0);
    ck_assert_int_eq(mbsc_policy_load(&p, path, why, sizeof why), MBSC_ERR_KEY_FILE_PERMISSIONS);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(why, path));

    write_file(path, "op read coils 0\nop write coils x\n", 33, 0600);
    ck_assert_int_eq(mbsc_policy_load(&p, path, why, sizeof why), MBSC_ERR_POLICY_SYNTAX);
    ck_assert_ptr_nonnull(strstr(why, ":2: bad address"));
    ck_assert_ptr_nonnull(strstr(why, path));

    big = malloc(MBSC_POLICY_MAX_BYTES + 1);
    memset(big, '\n', MBSC_POLICY_MAX_BYTES + 1);
    write_file(path, big, MBSC_POLICY_MAX_BYTES + 1, 0600);
    free(big);
    ck_assert_int_eq(mbsc_policy_load(&p, path, why, sizeof why), MBSC_ERR_POLICY_SYNTAX);
    ck_assert_ptr_nonnull(strstr(why, "larger than"));

    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

Suite *policy_suite(void)
{
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("decisions");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_reads);
    tcase_add_test(tc, test_writes);
    tcase_add_test(tc, test_read_write_multiple_needs_both);
    tcase_add_test(tc, test_address_wrap_refused);
    tcase_add_test(tc, test_other_functions);
    tcase_add_test(tc, test_roles);
    tcase_add_test(tc, test_fifo_queue);
    tcase_add_test(tc, test_short_requests);
    suite_add_tcase(s, tc);

    tc = tcase_create("sub-functions");
    tcase_add_test(tc, test_subfunctions);
    tcase_add_test(tc, test_whole_code_warnings);
    suite_add_tcase(s, tc);

    tc = tcase_create("syntax");
    tcase_add_loop_test(tc, test_syntax_errors, 0,
                        (int)(sizeof bad_policies / sizeof bad_policies[0]));
    tcase_add_test(tc, test_long_line_and_nul);
    tcase_add_test(tc, test_empty_policy_allows_nothing);
    suite_add_tcase(s, tc);

    tc = tcase_create("files");
    tcase_add_test(tc, test_load);
    suite_add_tcase(s, tc);
    return s;
}
