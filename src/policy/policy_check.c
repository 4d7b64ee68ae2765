/* SPDX-License-Identifier: ISC */
/*
 * policy_check.c - may this role make this request?
 *
 * The library's function table (mbsc/pdu.h, mbsc_pdu_ranges) says which
 * table a request touches, how (read or write) and which addresses.  A
 * request is allowed only if one of the role's ranges for that table and
 * access holds every address it touches (ranges are merged when the
 * policy is parsed, so one is enough).  Other codes are decided by the
 * role's "function" rules (policy_functions.c for the sub-functions).
 *
 * The check reads only the fields it needs and refuses a PDU too short for
 * them; it does not judge whether the request is otherwise well formed:
 * the servers check the shape first (docs/policy.md, "The order of
 * checks").  Nothing here is secret: roles, addresses and
 * function codes are what the master sent in the clear of its session.
 */
#include <string.h>

#include "internal.h"
#include "mbsc/pdu.h"
#include "policy/policy_internal.h"

static int covered(const struct policy_ranges *set, unsigned long first, unsigned long last)
{
    size_t i;

    for (i = 0; i < set->count; i++) {
        if (set->v[i].first <= first && last <= set->v[i].last)
            return 1;
    }
    return 0;
}

/*
 * A function the table rules do not decide: a "function" rule naming the
 * code whole allows it, else one naming its sub-function (0x08) or MEI
 * type (0x2B), when it has them.
 */
static int check_function(const struct policy_role *r, const struct policy_function *f,
                          const uint8_t *pdu, size_t len, char *why, size_t why_len)
{
    unsigned fc = pdu[0];
    const struct policy_ranges *subs;
    unsigned long sub;

    if (fc < POLICY_FUNCTION_CODES && ((unsigned)r->functions[fc / 8] >> (fc % 8) & 1u) != 0)
        return MBSC_OK;
    subs = f->sub_bytes != 0 ? &r->subs[f->sub_slot] : NULL;
    if (subs == NULL || subs->count == 0) {
        mbsc_why(why, why_len, "role %s may not use function 0x%02x", r->name, fc);
        return MBSC_ERR_POLICY_DENIED;
    }
    if (len < 1u + f->sub_bytes) {
        mbsc_why(why, why_len, "request too short for function 0x%02x (no %s)", fc, f->sub_word);
        return MBSC_ERR_POLICY_DENIED;
    }
    sub = (unsigned long)mbsc_pdu_subfunction(pdu, len);
    if (covered(subs, sub, sub))
        return MBSC_OK;
    mbsc_why(why, why_len, "role %s may not use function 0x%02x %s 0x%0*lx", r->name, fc,
             f->sub_word, 2 * (int)f->sub_bytes, sub);
    return MBSC_ERR_POLICY_DENIED;
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
    struct mbsc_pdu_range t[2];
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
    n = mbsc_pdu_ranges(pdu, pdu_len, t);
    if (n < 0) {
        mbsc_why(why, why_len, "request too short for function 0x%02x", fc);
        return MBSC_ERR_POLICY_DENIED;
    }
    if (n == 0)
        return check_function(r, mbsc_policy_function(fc), pdu, pdu_len, why, why_len);
    for (i = 0; i < n; i++) {
        /* The policy's tables are the four of mbsc/pdu.h, in the same order. */
        enum policy_table table = (enum policy_table)(t[i].table - MBSC_PDU_COILS);
        enum policy_access access = t[i].access == MBSC_PDU_WRITE ? POLICY_WRITE : POLICY_READ;
        /* A quantity of 0 touches nothing, but is judged at its address. */
        unsigned long first = t[i].first, last = first + (t[i].count > 0 ? t[i].count - 1 : 0);

        if (last > 0xFFFF || !covered(&r->rights[table][access], first, last)) {
            mbsc_why(why, why_len, "role %s may not %s %s %lu-%lu (function 0x%02x)", role,
                     mbsc_policy_access_names[access], mbsc_policy_table_names[table], first, last,
                     fc);
            return MBSC_ERR_POLICY_DENIED;
        }
    }
    return MBSC_OK;
}
