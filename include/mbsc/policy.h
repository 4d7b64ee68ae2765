/* SPDX-License-Identifier: ISC */
/*
 * mbsc/policy.h - roles to rights: which Modbus requests a master may make.
 *
 * The slave's allow-list gives each master an optional role.  A policy maps
 * roles to rights, as Modbus/TCP Security (MB-TCP-Security, R-16 to R-31)
 * has servers do: read and/or write access to address ranges of each of the
 * four Modbus tables, plus a list of other function codes a role may use.
 * A server checks every request against the master's role before the
 * request goes any further, and answers a refused one with exception 01
 * (Illegal Function), MBSC_POLICY_REFUSAL_EXCEPTION.
 *
 * The file format is described in docs/policy.md; in short, one rule per
 * line:
 *
 *     # ROLE     ACCESS      TABLE              ADDRESSES
 *     operator   read        holding-registers  0-99
 *     operator   write       holding-registers  0-9,20
 *     viewer     read        input-registers    *
 *     engineer   read-write  coils              0-15
 *     engineer   function    0x2b 0x11
 *     guest      none
 *
 * Rules add up; nothing is allowed unless a rule allows it.  A master with
 * no role, or with a role the policy does not name, may do nothing.
 * Without a policy (a NULL mbsc_policy) the servers let every authorised
 * master do everything.
 *
 * A policy is immutable once parsed: one may be shared by any number of
 * threads for mbsc_policy_check().  It does not depend on libmodbus.
 */
#ifndef MBSC_POLICY_H
#define MBSC_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "mbsc/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The Modbus exception code for a request the policy refuses. */
#define MBSC_POLICY_REFUSAL_EXCEPTION 0x01u

/* Largest policy file mbsc_policy_load() reads, and longest line. */
#define MBSC_POLICY_MAX_BYTES (256u * 1024u)
#define MBSC_POLICY_LINE_MAX  1024u

typedef struct mbsc_policy mbsc_policy;

/*
 * Parse a policy from len bytes of text; name_for_errors (NULL: "policy")
 * names the source in messages.  On success *out is a new policy (free it
 * with mbsc_policy_free) and MBSC_OK is returned.  On failure *out is NULL
 * and why (if not NULL) says "NAME:LINE: what is wrong" with the fix:
 * MBSC_ERR_POLICY_SYNTAX, MBSC_ERR_NOMEM or MBSC_ERR_INVALID_ARG.
 */
MBSC_API int mbsc_policy_parse(mbsc_policy **out, const char *text, size_t len,
                               const char *name_for_errors, char *why, size_t why_len);

/*
 * Read and parse the policy file at path.  The file decides who may write
 * what, so it is held to the allow-list's rules (mbsc/keys.h): a regular
 * file that group and others cannot write.  Errors as mbsc_policy_parse,
 * plus MBSC_ERR_KEY_FILE_UNREADABLE and MBSC_ERR_KEY_FILE_PERMISSIONS, and
 * MBSC_ERR_POLICY_SYNTAX for a file over MBSC_POLICY_MAX_BYTES.
 */
MBSC_API int mbsc_policy_load(mbsc_policy **out, const char *path, char *why, size_t why_len);

/* Release a policy.  NULL is allowed. */
MBSC_API void mbsc_policy_free(mbsc_policy *policy);

/* 1 if some line of the policy names role, else 0 (also for NULL). */
MBSC_API int mbsc_policy_has_role(const mbsc_policy *policy, const char *role);

/*
 * Decide whether a master with this role (NULL: the master has none) may
 * make the request whose PDU (function code and data: a Modbus/TCP ADU
 * without its 7-byte MBAP header) is pdu[0..pdu_len).
 *
 * Returns MBSC_OK if the policy allows it, or MBSC_ERR_POLICY_DENIED, with
 * why (if not NULL) naming the role, the function code and the table and
 * addresses that were refused, e.g. "role viewer may not write
 * holding-registers 10-19 (function 0x10)".  A PDU too short for its
 * function's address fields is refused too.  MBSC_ERR_INVALID_ARG if
 * policy or pdu is NULL.
 *
 * Functions 0x01-0x06, 0x0F, 0x10, 0x16 and 0x17 are decided by the table
 * rules (0x16, mask write, needs write access; 0x17 needs read access to
 * its read range and write access to its write range); every other
 * function code only by the role's "function" rules.
 */
MBSC_API int mbsc_policy_check(const mbsc_policy *policy, const char *role, const uint8_t *pdu,
                               size_t pdu_len, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_POLICY_H */
