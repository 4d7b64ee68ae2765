/* SPDX-License-Identifier: ISC */
/*
 * route.h - which upstream a request goes to, by its unit id.
 *
 * A plant puts several PLCs (and later serial lines) behind one gateway
 * and addresses them by unit id, as Modbus/TCP gateways do.  A route is
 * "UNITS=TARGET" on the command line (--route, repeatable) or
 * "route = UNITS TARGET" in the configuration file; UNITS is N, N-M, or a
 * comma-separated list of those, in 1..255; TARGET is HOST:PORT (plain
 * Modbus/TCP) or rtu:DEVICE[,BAUD[,FORMAT]][,NAME=VALUE...] (a serial
 * line, serial_target.h).  --upstream TARGET is the default route: units
 * no route names, and unit 0.
 *
 * Targets are kept in one spelling (a serial line's defaults written out),
 * so that routes to one target, however written, share it; two targets
 * that give one serial device different settings are refused.
 *
 * Unit 0 is the broadcast of the serial line: it goes to the default
 * route only, and a route may not name it.
 *
 * This file only parses and looks up; route tables are plain values that
 * a reload builds whole beside the one in force and swaps in all at once.
 */
#ifndef MBSC_GATEWAY_ROUTE_H
#define MBSC_GATEWAY_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#define GW_MAX_ROUTES    64u
#define GW_TARGET_MAX    300u /* a TARGET string, with its NUL */
#define GW_ROUTE_WHERE   96u  /* "FILE:LINE" or "--route", for messages */
#define GW_ROUTE_DEFAULT (-1) /* gw_route_lookup: the default route */
#define GW_ROUTE_NONE    (-2) /* gw_route_lookup: no route, no default */

struct gw_route {
    uint8_t units[32]; /* bit u: unit u goes here */
    char units_text[64];
    char target[GW_TARGET_MAX];
    char where[GW_ROUTE_WHERE];
};

struct gw_route_table {
    struct gw_route routes[GW_MAX_ROUTES];
    size_t n;
    int16_t by_unit[256];               /* route index, or GW_ROUTE_DEFAULT */
    char default_target[GW_TARGET_MAX]; /* "" when there is none */
    char default_where[GW_ROUTE_WHERE];
};

/* An empty table: every unit to the default route, no default yet. */
void gw_route_table_init(struct gw_route_table *t);

/*
 * Add a route from "UNITS=TARGET" (sep '=') or "UNITS TARGET" (sep ' ', a
 * configuration file's value); where names the place for messages.  0, or
 * -1 with why saying what is wrong and the fix (a unit out of 1..255, a
 * unit another route already has, a malformed target, too many routes).
 */
int gw_route_add(struct gw_route_table *t, const char *spec, char sep, const char *where, char *why,
                 size_t why_len);

/* Set the default route's target (--upstream); 0 or -1 with why. */
int gw_route_set_default(struct gw_route_table *t, const char *target, const char *where, char *why,
                         size_t why_len);

/* The route index for unit, GW_ROUTE_DEFAULT, or GW_ROUTE_NONE. */
int gw_route_lookup(const struct gw_route_table *t, uint8_t unit);

/*
 * A target "mbaps://HOST:PORT" is a Modbus/TCP Security device (TLS,
 * up_tls.c); gw_route_hostport is the HOST:PORT of any target.
 */
#define GW_TLS_SCHEME "mbaps://"
int gw_route_is_tls(const char *target);
const char *gw_route_hostport(const char *target);

/* Whether a target is well formed ([mbaps://]HOST:PORT, rtu:...); 0 or -1 with why naming where. */
int gw_route_check_target(const char *target, const char *where, char *why, size_t why_len);

#endif /* MBSC_GATEWAY_ROUTE_H */
