/* SPDX-License-Identifier: ISC */
/*
 * policy_check.c - may this role make this request?
 *
 * The request's function code says which table it touches, how (read or
 * write) and where its address and quantity fields are (Modbus Application
 * Protocol v1.1b3, section 6).  A request is allowed only if one of the
 * role's ranges for that table and access holds every address it touches
 * (ranges are merged when the policy is parsed, so one is enough).
 *
 * The check reads only the fields it needs and refuses a PDU too short for
 * them; it does not judge whether the request is otherwise well formed (the
 * ADU check before it does).  Nothing here is secret: roles, addresses and
 * function codes are what the master sent in the clear of its session.
 */
#include <string.h>

#include "internal.h"
#include "policy/policy_internal.h"

/* What one request needs: up to two (table, access, first, count) touches. */
struct touch {
    enum policy_table table;
    enum policy_access access;
    unsigned long first, count;
};

static unsigned long be16_at(const uint8_t *p)
{
    return ((unsigned long)p[0] << 8) | p[1];
}

/*
 * Fill t[] with what the request touches and return how many (0 for a
 * function the table rules do not decide), or -1 if the PDU is too short
 * for its address fields.
 */
static int request_touches(const uint8_t *pdu, size_t len, struct touch t[2])
{
    switch (pdu[0]) {
    case 0x01: /* read coils */
    case 0x02: /* read discrete inputs */
    case 0x03: /* read holding registers */
    case 0x04: /* read input registers */
        if (len < 5)
            return -1;
        t[0].table = pdu[0] == 0x01   ? POLICY_COILS
                     : pdu[0] == 0x02 ? POLICY_DISCRETE_INPUTS
                     : pdu[0] == 0x03 ? POLICY_HOLDING_REGISTERS
                                      : POLICY_INPUT_REGISTERS;
        t[0].access = POLICY_READ;
        t[0].first = be16_at(pdu + 1);
        t[0].count = be16_at(pdu + 3);
        return 1;
    case 0x05: /* write single coil */
    case 0x06: /* write single register */
    case 0x16: /* mask write register: changes one register */
        if (len < 3)
            return -1;
        t[0].table = pdu[0] == 0x05 ? POLICY_COILS : POLICY_HOLDING_REGISTERS;
        t[0].access = POLICY_WRITE;
        t[0].first = be16_at(pdu + 1);
        t[0].count = 1;
        return 1;
    case 0x0F: /* write multiple coils */
    case 0x10: /* write multiple registers */
        if (len < 5)
            return -1;
        t[0].table = pdu[0] == 0x0F ? POLICY_COILS : POLICY_HOLDING_REGISTERS;
        t[0].access = POLICY_WRITE;
        t[0].first = be16_at(pdu + 1);
        t[0].count = be16_at(pdu + 3);
        return 1;
    case 0x17: /* read/write multiple registers: both rights */
        if (len < 9)
            return -1;
        t[0].table = t[1].table = POLICY_HOLDING_REGISTERS;
        t[0].access = POLICY_READ;
        t[0].first = be16_at(pdu + 1);
        t[0].count = be16_at(pdu + 3);
        t[1].access = POLICY_WRITE;
        t[1].first = be16_at(pdu + 5);
        t[1].count = be16_at(pdu + 7);
        return 2;
    default: return 0;
    }
}

static int covered(const struct policy_ranges *set, unsigned long first, unsigned long last)
{
    size_t i;

    for (i = 0; i < set->count; i++) {
        if (set->v[i].first <= first && last <= set->v[i].last)
            return 1;
    }
    return 0;
}

const struct policy_role *mbsc_policy_find_role(const mbsc_policy *p, const char *name)
{
    size_t i;

    if (p == NULL || name == NULL)
        return NULL;
    for (i = 0; i < p->count; i++) {
        if (strcmp(p->roles[i].name, name) == 0)
            return &p->roles[i];
    }
    return NULL;
}

MBSC_API int mbsc_policy_has_role(const mbsc_policy *p, const char *role)
{
    return mbsc_policy_find_role(p, role) != NULL;
}

MBSC_API int mbsc_policy_check(const mbsc_policy *p, const char *role, const uint8_t *pdu,
                               size_t pdu_len, char *why, size_t why_len)
{
    const struct policy_role *r;
    struct touch t[2];
    unsigned fc;
    int n, i;

    mbsc_why(why, why_len, "%s", "");
    if (p == NULL || pdu == NULL) {
        mbsc_why(why, why_len, "invalid argument");
        return MBSC_ERR_INVALID_ARG;
    }
    if (pdu_len == 0) {
        mbsc_why(why, why_len, "empty request (no function code)");
        return MBSC_ERR_POLICY_DENIED;
    }
    fc = pdu[0];
    if (role == NULL) {
        mbsc_why(why, why_len,
                 "the master has no role, and a policy is in force (function 0x%02x); give "
                 "it one in the allow-list",
                 fc);
        return MBSC_ERR_POLICY_DENIED;
    }
    r = mbsc_policy_find_role(p, role);
    if (r == NULL) {
        mbsc_why(why, why_len, "role %s is not in the policy (function 0x%02x)", role, fc);
        return MBSC_ERR_POLICY_DENIED;
    }
    n = request_touches(pdu, pdu_len, t);
    if (n < 0) {
        mbsc_why(why, why_len, "request too short for function 0x%02x", fc);
        return MBSC_ERR_POLICY_DENIED;
    }
    if (n == 0) {
        if (fc < 0x80 && ((unsigned)r->functions[fc / 8] >> (fc % 8) & 1u) != 0)
            return MBSC_OK;
        mbsc_why(why, why_len, "role %s may not use function 0x%02x", role, fc);
        return MBSC_ERR_POLICY_DENIED;
    }
    for (i = 0; i < n; i++) {
        /* A quantity of 0 touches nothing, but is judged at its address. */
        unsigned long last = t[i].first + (t[i].count > 0 ? t[i].count - 1 : 0);
        if (last > 0xFFFF || !covered(&r->rights[t[i].table][t[i].access], t[i].first, last)) {
            mbsc_why(why, why_len, "role %s may not %s %s %lu-%lu (function 0x%02x)", role,
                     mbsc_policy_access_names[t[i].access], mbsc_policy_table_names[t[i].table],
                     t[i].first, last, fc);
            return MBSC_ERR_POLICY_DENIED;
        }
    }
    return MBSC_OK;
}
