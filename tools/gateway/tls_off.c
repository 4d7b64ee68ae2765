/* SPDX-License-Identifier: ISC */
/*
 * tls_off.c - Modbus/TCP Security in a build without OpenSSL
 * (./configure --without-openssl, or no libssl-dev): every TLS setting is
 * refused with a message that says how to get it, and nothing else
 * changes.  The functions of tls_conf.h, tls_masters.h and the mbaps
 * upstream kind exist so that the rest of the gateway is the same in
 * both builds; past the check of the settings, none of them is reached.
 */
#include <stdio.h>

#include "log.h"
#include "route.h"
#include "tls_conf.h"
#include "tls_masters.h"
#include "up_kinds.h"
#include "upstream_kind.h"

#define BUILT_WITHOUT                                                                              \
    "this mbsc-gateway was built without OpenSSL (./configure --without-openssl, or "              \
    "libssl-dev was missing): Modbus/TCP Security is not available; rebuild it with OpenSSL 3 "    \
    "(docs/tls.md)"

int gw_tls_built_in(void)
{
    return 0;
}

int gw_tls_check_options(const struct gw_options *o)
{
    const char *set = o->listen_tls != NULL          ? "listen-tls"
                      : o->tls_cert != NULL          ? "tls-cert"
                      : o->tls_key != NULL           ? "tls-key"
                      : o->tls_ca != NULL            ? "tls-ca"
                      : o->tls_legacy_ciphers        ? "tls-legacy-ciphers"
                      : o->upstream_tls_cert != NULL ? "upstream-tls-cert"
                      : o->upstream_tls_key != NULL  ? "upstream-tls-key"
                      : o->upstream_tls_ca != NULL   ? "upstream-tls-ca"
                      : o->upstream_tls_name != NULL ? "upstream-tls-name"
                                                     : NULL;
    size_t i;

    if (set == NULL && gw_route_is_tls(o->routes.default_target))
        set = o->routes.default_target;
    for (i = 0; set == NULL && i < o->routes.n; i++)
        if (gw_route_is_tls(o->routes.routes[i].target))
            set = o->routes.routes[i].target;
    if (set == NULL)
        return 0;
    gw_log(GW_ERR, "%s: %s", set, BUILT_WITHOUT);
    return -1;
}

int gw_tls_load(struct gw_tls **out, const struct gw_options *o, char *why, size_t why_len)
{
    (void)o;
    (void)why;
    (void)why_len;
    *out = NULL;
    return 0;
}

void gw_tls_free(struct gw_tls *t)
{
    (void)t;
}

struct gw_tls_masters *gw_tls_masters_new(struct gw_loop *loop, const char *hostport,
                                          const struct gw_tls *tls,
                                          const struct gw_tls_master_limits *lim,
                                          const struct gw_tls_master_hooks *hooks, char *why,
                                          size_t why_len)
{
    (void)loop;
    (void)hostport;
    (void)tls;
    (void)lim;
    (void)hooks;
    snprintf(why, why_len, "listen-tls: %s", BUILT_WITHOUT);
    return NULL;
}

void gw_tls_masters_free(struct gw_tls_masters *t)
{
    (void)t;
}

const char *gw_tls_masters_address(const struct gw_tls_masters *t)
{
    (void)t;
    return "";
}

void gw_tls_masters_reply(struct gw_tls_masters *t, uint64_t origin, const uint8_t *adu, size_t len)
{
    (void)t;
    (void)origin;
    (void)adu;
    (void)len;
}

int gw_tls_masters_set_tls(struct gw_tls_masters *t, const struct gw_tls *tls)
{
    (void)t;
    (void)tls;
    return 0;
}

void gw_tls_masters_stop_accepting(struct gw_tls_masters *t)
{
    (void)t;
}

size_t gw_tls_masters_count(const struct gw_tls_masters *t)
{
    (void)t;
    return 0;
}

void gw_tls_masters_status(const struct gw_tls_masters *t, FILE *out)
{
    (void)t;
    (void)out;
}

static int off_connected(struct gw_upstream *u, char *why, size_t why_len)
{
    snprintf(why, why_len, "%s: %s", u->name, BUILT_WITHOUT);
    return -1;
}

static unsigned off_events(const struct gw_upstream *u)
{
    (void)u;
    return GW_IO_IN;
}

static void off_io(struct gw_upstream *u, unsigned happened)
{
    (void)happened;
    gw_up_fail(u, BUILT_WITHOUT);
}

static int off_send(struct gw_upstream *u, const uint8_t *adu, size_t len)
{
    (void)u;
    (void)adu;
    (void)len;
    return MBSC_ERR_STATE;
}

static void off_drop(struct gw_upstream *u)
{
    (void)u;
}

static void off_describe(const struct gw_upstream *u, char *buf, size_t len)
{
    (void)u;
    snprintf(buf, len, "Modbus/TCP Security (not built)");
}

const struct gw_up_kind gw_up_tls = {
    .name = "mbaps",
    .scheme = GW_TLS_SCHEME,
    .connected = off_connected,
    .events = off_events,
    .io = off_io,
    .send = off_send,
    .drop = off_drop,
    .describe = off_describe,
};
