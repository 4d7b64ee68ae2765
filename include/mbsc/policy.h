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
 *     engineer   function    0x11 0x2b:0x0e 0x08:0x00
 *     guest      none
 *
 * Rules add up; nothing is allowed unless a rule allows it.  A master with
 * no role, or with a role the policy does not name, may do nothing.
 * Without a policy (a NULL mbsc_policy) the servers let every authorised
 * master do everything.
 *
 * A "function" rule names a code whole (0x11) or, for the two codes with
 * sub-functions, some of them: "0x08:SUB" a 16-bit diagnostics
 * sub-function (Modbus Application Protocol v1.1b3, 6.8), "0x2b:TYPE" an
 * MEI type (6.19-6.21), each also as a range ("0x08:0x0b-0x12").  A rule
 * that grants more than it seems loads, and leaves a warning that the
 * program should print (mbsc_policy_warning): 0x08 whole (restart,
 * listen-only mode), 0x2B whole (CANopen, MEI type 0x0D), 0x14 and 0x15
 * (file records, which no table rule limits).
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

/*
 * The index-th warning (from 0) that parsing left on policy, or NULL when
 * there are no more (or policy is NULL).  A warning is a rule that loaded
 * but grants more than it seems, as one line without a newline that names
 * the source and line, the role, what the rule also grants and the
 * narrower rule to write, e.g. "site.policy:7: role engineer: 'function
 * 0x08' (diagnostics) grants every diagnostics sub-function, among them
 * 0x0001 restart communications option ...; name the sub-functions the
 * role needs, e.g. 'function 0x08:0x00' (return query data)".  The string
 * belongs to policy.  Programs print every warning each time they load a
 * policy, at start and at reload:
 *
 *     for (size_t i = 0; (w = mbsc_policy_warning(policy, i)) != NULL; i++)
 *         fprintf(stderr, "warning: %s\n", w);
 */
MBSC_API const char *mbsc_policy_warning(const mbsc_policy *policy, size_t index);

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
 * Functions 0x01-0x06, 0x0F, 0x10, 0x16, 0x17 and 0x18 are decided by the
 * table rules (0x16, mask write, needs write access; 0x17 needs read
 * access to its read range and write access to its write range; 0x18, read
 * FIFO queue, read access to its FIFO pointer address and the 31 registers
 * after it, the queue it may return); every other
 * function code only by the role's "function" rules: a rule naming the code
 * whole, or, for 0x08 and 0x2B, one naming the request's sub-function (the
 * 16 bits after 0x08) or MEI type (the byte after 0x2B).  A request too
 * short to hold the sub-function is refused unless the code is allowed
 * whole.  Refusals of a sub-function name it, e.g. "role viewer may not use
 * function 0x08 sub-function 0x0001".
 */
MBSC_API int mbsc_policy_check(const mbsc_policy *policy, const char *role, const uint8_t *pdu,
                               size_t pdu_len, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_POLICY_H */
