/* SPDX-License-Identifier: ISC */
/*
 * tls_conf.h - the gateway's Modbus/TCP Security settings and files
 * (tls_conf.c; tls_off.c in a build without OpenSSL).
 *
 * A struct gw_tls holds what one configuration loaded: the TLS listener's
 * certificate, key and CA (--tls-cert, --tls-key, --tls-ca), and the
 * upstreams' (--upstream-tls-cert, -key, -ca, -name).  It is part of the
 * bundle a reload replaces all or nothing (secrets.h): a new one is loaded
 * whole beside the one in force, and the old one is freed after the swap.
 * Connections made with the old one keep it (OpenSSL counts references)
 * until they end.  This header does not need OpenSSL; tls_ctx.h gives the
 * TLS files of the gateway what they need from a struct gw_tls.
 */
#ifndef MBSC_GATEWAY_TLS_CONF_H
#define MBSC_GATEWAY_TLS_CONF_H

#include <stddef.h>

#include "options.h"

struct gw_tls;

/* 1 when this program was built with OpenSSL (./configure without --without-openssl). */
int gw_tls_built_in(void);

/*
 * The TLS settings of o make sense together (a listener has its
 * certificate, key and CA; an mbaps:// target has the upstream ones); 0,
 * or -1 after a log line naming the setting and the fix.  A build without
 * OpenSSL refuses every TLS setting here.
 */
int gw_tls_check_options(const struct gw_options *o);

/*
 * Load the files o names, under the rules of mbsc's own key files
 * (mbsc/keys.h: the key mode 0600 or stricter, every file and directory
 * writable by its owner only): *out is NULL when o sets no TLS at all.
 * 0, or -1 with why naming the file and what is wrong.
 */
int gw_tls_load(struct gw_tls **out, const struct gw_options *o, char *why, size_t why_len);
void gw_tls_free(struct gw_tls *t);

#endif /* MBSC_GATEWAY_TLS_CONF_H */
