/* SPDX-License-Identifier: ISC */
/*
 * verify.h - "mbsc-gateway --check": validate a configuration and start
 * nothing (verify.c).
 */
#ifndef MBSC_GATEWAY_VERIFY_H
#define MBSC_GATEWAY_VERIFY_H

#include "options.h"

/*
 * Load everything o names as a start would (key, PSK, allow-list or peer
 * key, policy, the kind of every route's target, the control socket's
 * path), reporting every problem, not only the first, and the warnings a
 * start would log; listen on nothing and connect to nothing.  GW_EX_OK
 * after one line on stdout that says what was checked, or GW_EX_USAGE.
 */
int gw_check(const struct gw_options *o);

#endif /* MBSC_GATEWAY_VERIFY_H */
