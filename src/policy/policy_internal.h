/* SPDX-License-Identifier: ISC */
/*
 * policy_internal.h - the parsed form of a policy (mbsc/policy.h), shared
 * by the parser (policy_parse.c) and the request check (policy_check.c).
 */
#ifndef MBSC_POLICY_INTERNAL_H
#define MBSC_POLICY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mbsc/policy.h"

/* The four Modbus data tables (Modbus Application Protocol v1.1b3, 4.3). */
enum policy_table {
    POLICY_COILS,
    POLICY_DISCRETE_INPUTS,
    POLICY_HOLDING_REGISTERS,
    POLICY_INPUT_REGISTERS,
    POLICY_TABLE_COUNT
};

enum policy_access { POLICY_READ, POLICY_WRITE, POLICY_ACCESS_COUNT };

/* Names as they appear in policy files and messages. */
extern const char *const mbsc_policy_table_names[POLICY_TABLE_COUNT];
extern const char *const mbsc_policy_access_names[POLICY_ACCESS_COUNT];

/* An inclusive address range. */
struct policy_range {
    uint16_t first, last;
};

/*
 * A set of addresses: once parsing is done, sorted, with no two ranges
 * overlapping or adjacent (so a request is allowed only if a single range
 * holds all of it).
 */
struct policy_ranges {
    struct policy_range *v;
    size_t count, cap;
};

/* Function codes of requests (1 to 127; 128 and up are exception answers). */
#define POLICY_FUNCTION_CODES 128

/* The codes whose rules may name sub-functions: one set of them per role. */
enum policy_sub_slot { POLICY_SUB_DIAGNOSTICS, POLICY_SUB_MEI, POLICY_SUB_COUNT };

/*
 * What the policy adds to the function table of mbsc/pdu.h, which says
 * what each request touches (policy_functions.c): for the codes a rule
 * may narrow, where the sub-function is, and for the codes that grant
 * more than they seem when a rule names them whole, why.
 */
struct policy_function {
    const char *name; /* for messages; NULL: nothing to add */
    /* 2: a 16-bit sub-function follows the code, 1: a byte; 0: none. */
    uint8_t sub_bytes;
    uint8_t sub_slot;     /* enum policy_sub_slot, when sub_bytes != 0 */
    const char *sub_word; /* "sub-function", "MEI type" */
    /* Set when a rule naming the code whole grants more than it seems: why,
     * and the narrower rule to write (the warning's text after the code). */
    const char *whole_risk;
};

/* The entry of code; one with nothing set for codes the policy adds nothing to. */
const struct policy_function *mbsc_policy_function(unsigned code);

/*
 * Whether the table rules decide code (it names a range of one of the four
 * tables, mbsc_pdu_ranges); if so, the table and access of its first range
 * and whether it also has a second (0x17) in *table, *access, *both.
 */
int mbsc_policy_table_code(unsigned code, enum policy_table *table, enum policy_access *access,
                           int *both);

#define POLICY_ROLE_SIZE 64 /* a role name (1 to 63 characters) and its NUL */

struct policy_role {
    char name[POLICY_ROLE_SIZE];
    struct policy_ranges rights[POLICY_TABLE_COUNT][POLICY_ACCESS_COUNT];
    uint8_t functions[POLICY_FUNCTION_CODES / 8]; /* bit f: the role may use code f whole */
    struct policy_ranges subs[POLICY_SUB_COUNT];  /* sub-functions it may use */
};

struct mbsc_policy {
    struct policy_role *roles;
    size_t count, cap;
    char **warnings; /* "NAME:LINE: ..." for mbsc_policy_warning() */
    size_t warning_count, warning_cap;
};

/* The role called name, or NULL. */
const struct policy_role *mbsc_policy_find_role(const mbsc_policy *policy, const char *name);

#endif /* MBSC_POLICY_INTERNAL_H */
