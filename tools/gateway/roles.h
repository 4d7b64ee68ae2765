/* SPDX-License-Identifier: ISC */
/*
 * roles.h - masters of the allow-list that the policy lets do nothing
 * (roles.c).
 */
#ifndef MBSC_GATEWAY_ROLES_H
#define MBSC_GATEWAY_ROLES_H

#include <mbsc.h>

/*
 * With a policy, a master without a role, or with a role that no line of
 * the policy names (a typo: "opertor"), may do nothing at all, and finds
 * out only when every request comes back with exception 01.  Warn about
 * each, naming the allow-list's file and line: at start, at every reload,
 * and in --check.  Nothing happens without a policy (policy NULL).
 * Returns the number of warnings.
 */
unsigned gw_roles_warn(const mbsc_allowlist *allow, const char *allow_path,
                       const mbsc_policy *policy, const char *policy_path);

#endif /* MBSC_GATEWAY_ROLES_H */
