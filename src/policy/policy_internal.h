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

/* Where a request names what it touches in a table: byte offsets in its PDU. */
struct policy_touch_rule {
    uint8_t table;      /* enum policy_table */
    uint8_t access;     /* enum policy_access */
    uint8_t address_at; /* the 16-bit big-endian address */
    uint8_t count_at;   /* the 16-bit quantity; 0: the one address */
};

/* What the policy knows about one function code (policy_functions.c). */
struct policy_function {
    const char *name; /* as the specification names it; NULL: a code it does not name */
    /* 1 or 2: decided by the table rules, by these touches; 0: by "function" rules. */
    uint8_t touches;
    struct policy_touch_rule touch[2];
    /* 2: a 16-bit sub-function follows the code, 1: a byte; 0: none. */
    uint8_t sub_bytes;
    uint8_t sub_slot;     /* enum policy_sub_slot, when sub_bytes != 0 */
    const char *sub_word; /* "sub-function", "MEI type" */
    /* Set when a rule naming the code whole grants more than it seems: why,
     * and the narrower rule to write (the warning's text after the code). */
    const char *whole_risk;
};

/* The entry of code; one with no name and nothing set for codes it does not know. */
const struct policy_function *mbsc_policy_function(unsigned code);

/* Shortest PDU that holds the fields f's decision reads. */
size_t mbsc_policy_min_length(const struct policy_function *f);

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
