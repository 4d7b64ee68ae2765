/* SPDX-License-Identifier: ISC */
/*
 * up_kinds.c - which kind of upstream a target takes (up_kinds.h).
 */
#include <stdio.h>

#include "route.h"
#include "serial_target.h"
#include "up_kinds.h"

const struct gw_up_kind *gw_up_kind_for(const char *target, const mbsc_config *cfg, char *why,
                                        size_t why_len)
{
    if (gw_route_check_target(target, "upstream", why, why_len) != 0)
        return NULL;
    if (gw_serial_target_is(target)) {
        if (cfg != NULL) {
            snprintf(why, why_len,
                     "upstream %s: a serial line goes behind a server gateway, not a client one",
                     target);
            return NULL;
        }
        return &gw_up_rtu;
    }
    if (cfg != NULL)
        return &gw_up_mbsc;
    return gw_route_is_tls(target) ? &gw_up_tls : &gw_up_plain;
}
