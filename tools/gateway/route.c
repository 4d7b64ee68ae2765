/* SPDX-License-Identifier: ISC */
/*
 * route.c - unit ids to upstreams (route.h): parsing and lookup.
 *
 * Every error says where (the option or FILE:LINE), what is wrong and the
 * fix, because a gateway that routes a unit to the wrong PLC writes to
 * the wrong machine: an overlap between two routes is an error, never
 * "the last one wins".
 */
#include <stdio.h>
#include <string.h>

#include <mbsc.h>

#include "route.h"
#include "serial_target.h"

void gw_route_table_init(struct gw_route_table *t)
{
    size_t u;

    memset(t, 0, sizeof *t);
    for (u = 0; u < 256; u++)
        t->by_unit[u] = GW_ROUTE_DEFAULT;
}

int gw_route_is_tls(const char *target)
{
    return strncmp(target, GW_TLS_SCHEME, sizeof GW_TLS_SCHEME - 1) == 0;
}

const char *gw_route_hostport(const char *target)
{
    return gw_route_is_tls(target) ? target + sizeof GW_TLS_SCHEME - 1 : target;
}

int gw_route_check_target(const char *target, const char *where, char *why, size_t why_len)
{
    char host[GW_TARGET_MAX], port[8];
    struct gw_serial_target st;

    if (gw_serial_target_is(target))
        return gw_serial_target_parse(target, &st, where, why, why_len);
    if (mbsc_parse_hostport(gw_route_hostport(target), host, sizeof host, port, sizeof port) !=
        MBSC_OK) {
        snprintf(why, why_len,
                 "%s: '%s' is not HOST:PORT (e.g. 192.168.1.10:502 or [fd00::10]:502), "
                 "mbaps://HOST:PORT (e.g. mbaps://meter1.plant:802) nor "
                 "rtu:DEVICE[,BAUD[,FORMAT]] (e.g. rtu:/dev/ttyUSB0,19200,8E1)",
                 where, target);
        return -1;
    }
    return 0;
}

/*
 * target checked and in its one spelling into out (a serial line's
 * defaults written out), so that routes that name one device alike share
 * it; 0 or -1 with why.
 */
static int canonical_target(const char *target, char *out, size_t out_len, const char *where,
                            char *why, size_t why_len)
{
    struct gw_serial_target st;

    if (strlen(target) >= out_len) {
        snprintf(why, why_len, "%s: the target is longer than %zu characters", where, out_len - 1);
        return -1;
    }
    if (!gw_serial_target_is(target)) {
        if (gw_route_check_target(target, where, why, why_len) != 0)
            return -1;
        snprintf(out, out_len, "%s", target);
        return 0;
    }
    if (gw_serial_target_parse(target, &st, where, why, why_len) != 0)
        return -1;
    gw_serial_target_format(&st, out, out_len);
    return 0;
}

/* The device of a serial target ("" for others), into dev. */
static void device_of(const char *target, char *dev, size_t len)
{
    const char *p = target + strlen(GW_SERIAL_PREFIX), *comma;

    dev[0] = '\0';
    if (!gw_serial_target_is(target))
        return;
    comma = strchr(p, ',');
    snprintf(dev, len, "%.*s", comma != NULL ? (int)(comma - p) : (int)strlen(p), p);
}

/*
 * One serial line has one set of settings: a target (canonical) that names
 * the device of another with other settings is refused.  other_where is the
 * place of the other one.  0 or -1 with why.
 */
static int same_line_same_settings(const char *target, const char *other, const char *other_where,
                                   const char *where, char *why, size_t why_len)
{
    char dev[GW_TARGET_MAX], other_dev[GW_TARGET_MAX];

    device_of(target, dev, sizeof dev);
    device_of(other, other_dev, sizeof other_dev);
    if (dev[0] == '\0' || strcmp(dev, other_dev) != 0 || strcmp(target, other) == 0)
        return 0;
    snprintf(why, why_len,
             "%s: %s gives serial line %s other settings than %s does (%s); one line has one "
             "baud rate, format and settings, shared by its routes: fix: write the same ones in "
             "both",
             where, target, dev, other_where, other);
    return -1;
}

/* target against every route of t and its default; 0 or -1 with why. */
static int check_lines(const struct gw_route_table *t, const char *target, const char *where,
                       char *why, size_t why_len)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        if (same_line_same_settings(target, t->routes[i].target, t->routes[i].where, where, why,
                                    why_len) != 0)
            return -1;
    if (t->default_target[0] != '\0' &&
        same_line_same_settings(target, t->default_target, t->default_where, where, why, why_len) !=
            0)
        return -1;
    return 0;
}

/* A unit number: 1 to 3 decimal digits, 0..255; the end of it in *end. */
static int parse_unit(const char *s, const char **end, unsigned *out)
{
    unsigned v = 0;
    size_t n = 0;

    while (s[n] >= '0' && s[n] <= '9' && n < 4)
        v = v * 10 + (unsigned)(s[n++] - '0');
    if (n == 0 || n > 3 || v > 255)
        return -1;
    *end = s + n;
    *out = v;
    return 0;
}

/* UNITS into r->units; 0 or -1 with why. */
static int parse_units(struct gw_route *r, const char *s, size_t len, char *why, size_t why_len)
{
    char text[sizeof r->units_text];
    const char *p = text;

    if (len == 0 || len >= sizeof text) {
        snprintf(why, why_len,
                 "%s: the units must be N, N-M or a list of them separated by commas, in 1..255 "
                 "(e.g. 1-10,20)",
                 r->where);
        return -1;
    }
    memcpy(text, s, len);
    text[len] = '\0';
    for (;;) {
        unsigned lo, hi, u;

        if (parse_unit(p, &p, &lo) != 0)
            goto bad;
        hi = lo;
        if (*p == '-' && parse_unit(p + 1, &p, &hi) != 0)
            goto bad;
        if (hi < lo) {
            snprintf(why, why_len, "%s: units %u-%u run backwards; write %u-%u", r->where, lo, hi,
                     hi, lo);
            return -1;
        }
        if (lo == 0) {
            snprintf(why, why_len,
                     "%s: unit 0 is the broadcast address: it always goes to the default route "
                     "(--upstream); leave it out of the route",
                     r->where);
            return -1;
        }
        for (u = lo; u <= hi; u++)
            r->units[u / 8] |= (uint8_t)(1u << (u % 8));
        if (*p == '\0')
            break;
        if (*p != ',')
            goto bad;
        p++;
    }
    memcpy(r->units_text, text, len + 1);
    return 0;
bad:
    snprintf(why, why_len,
             "%s: bad units '%s': write N, N-M or a list of them separated by commas, each in "
             "1..255 (e.g. 1-10,20)",
             r->where, text);
    return -1;
}

int gw_route_add(struct gw_route_table *t, const char *spec, char sep, const char *where, char *why,
                 size_t why_len)
{
    struct gw_route r;
    const char *split = strchr(spec, sep);
    const char *target;
    unsigned u;

    memset(&r, 0, sizeof r);
    snprintf(r.where, sizeof r.where, "%s", where);
    if (split == NULL) {
        snprintf(why, why_len,
                 sep == '='
                     ? "%s: '%s' is not UNITS=HOST:PORT or UNITS=rtu:DEVICE (e.g. --route "
                       "1-10=192.168.1.10:502)"
                     : "%s: '%s' is not 'UNITS HOST:PORT' or 'UNITS rtu:DEVICE' (e.g. route = "
                       "1-10 192.168.1.10:502)",
                 where, spec);
        return -1;
    }
    if (parse_units(&r, spec, (size_t)(split - spec), why, why_len) != 0)
        return -1;
    target = split + 1;
    while (sep == ' ' && *target == ' ')
        target++;
    if (canonical_target(target, r.target, sizeof r.target, where, why, why_len) != 0 ||
        check_lines(t, r.target, where, why, why_len) != 0)
        return -1;
    for (u = 1; u < 256; u++) {
        int other = t->by_unit[u];

        if (!((unsigned)r.units[u / 8] >> (u % 8) & 1u) || other < 0)
            continue;
        snprintf(why, why_len,
                 "%s: unit %u is already routed to %s by %s; a unit has one route: take it out "
                 "of one of them",
                 where, u, t->routes[other].target, t->routes[other].where);
        return -1;
    }
    /* Routes to one target share its connection: many devices take one client only. */
    for (u = 0; u < t->n; u++) {
        struct gw_route *same = &t->routes[u];
        size_t have = strlen(same->units_text);
        unsigned v;

        if (strcmp(same->target, r.target) != 0)
            continue;
        if (have + 1 + strlen(r.units_text) >= sizeof same->units_text) {
            snprintf(why, why_len, "%s: too many unit lists for %s; join them into ranges", where,
                     r.target);
            return -1;
        }
        same->units_text[have] = ','; /* it fits: measured above */
        memcpy(same->units_text + have + 1, r.units_text, strlen(r.units_text) + 1);
        for (v = 1; v < 256; v++)
            if ((unsigned)r.units[v / 8] >> (v % 8) & 1u) {
                same->units[v / 8] |= (uint8_t)(1u << (v % 8));
                t->by_unit[v] = (int16_t)u;
            }
        return 0;
    }
    if (t->n == GW_MAX_ROUTES) {
        snprintf(why, why_len, "%s: more than %u routes; group units into ranges (e.g. 1-10)",
                 where, GW_MAX_ROUTES);
        return -1;
    }
    t->routes[t->n] = r;
    for (u = 1; u < 256; u++)
        if ((unsigned)r.units[u / 8] >> (u % 8) & 1u)
            t->by_unit[u] = (int16_t)t->n;
    t->n++;
    return 0;
}

int gw_route_set_default(struct gw_route_table *t, const char *target, const char *where, char *why,
                         size_t why_len)
{
    char canon[GW_TARGET_MAX];

    t->default_target[0] = '\0'; /* the new one is checked against the routes alone */
    if (canonical_target(target, canon, sizeof canon, where, why, why_len) != 0 ||
        check_lines(t, canon, where, why, why_len) != 0)
        return -1;
    snprintf(t->default_target, sizeof t->default_target, "%s", canon);
    snprintf(t->default_where, sizeof t->default_where, "%s", where);
    return 0;
}

int gw_route_lookup(const struct gw_route_table *t, uint8_t unit)
{
    int r = t->by_unit[unit];

    if (r >= 0)
        return r;
    return t->default_target[0] != '\0' ? GW_ROUTE_DEFAULT : GW_ROUTE_NONE;
}
