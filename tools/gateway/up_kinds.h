/* SPDX-License-Identifier: ISC */
/*
 * up_kinds.h - which kind of upstream a target takes (up_kinds.c): the one
 * place that knows every kind, so that a new one (a serial line, a
 * Modbus/TCP Security device) is added here and in its own file, and
 * nowhere else.
 */
#ifndef MBSC_GATEWAY_UP_KINDS_H
#define MBSC_GATEWAY_UP_KINDS_H

#include <stddef.h>

#include <mbsc.h>

#include "upstream.h"

extern const struct gw_up_kind gw_up_plain, gw_up_mbsc, gw_up_tls, gw_up_rtu;

/*
 * The kind for target: with cfg (client mode), an mbsc session; without,
 * plain Modbus/TCP for "HOST:PORT", Modbus/TCP Security (up_tls.c) for
 * "mbaps://HOST:PORT", a Modbus RTU serial line (up_rtu.c) for "rtu:...".
 * NULL with why (naming the target and the forms it may take) for a target
 * no kind takes.
 */
const struct gw_up_kind *gw_up_kind_for(const char *target, const mbsc_config *cfg, char *why,
                                        size_t why_len);

#endif /* MBSC_GATEWAY_UP_KINDS_H */
