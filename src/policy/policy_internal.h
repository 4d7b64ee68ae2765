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

#define POLICY_ROLE_SIZE 64 /* a role name (1 to 63 characters) and its NUL */

struct policy_role {
    char name[POLICY_ROLE_SIZE];
    struct policy_ranges rights[POLICY_TABLE_COUNT][POLICY_ACCESS_COUNT];
    uint8_t functions[128 / 8]; /* bit f: the role may use function code f */
};

struct mbsc_policy {
    struct policy_role *roles;
    size_t count, cap;
};

/* The role called name, or NULL. */
const struct policy_role *mbsc_policy_find_role(const mbsc_policy *policy, const char *name);

#endif /* MBSC_POLICY_INTERNAL_H */
