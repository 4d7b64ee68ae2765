/* SPDX-License-Identifier: ISC */
/*
 * secrets.h - the key, the PSK, the allow-list (or the peer's key), the
 * policy and the TLS certificates, keys and CAs, loaded as one bundle
 * (secrets.c), so that a reload replaces all of them or none.
 */
#ifndef MBSC_GATEWAY_SECRETS_H
#define MBSC_GATEWAY_SECRETS_H

#include <stddef.h>

#include <mbsc.h>

#include "options.h"

struct gw_tls;

/* Everything a reload replaces at once. */
struct gw_secrets {
    mbsc_config *cfg;      /* NULL for a server with a TLS listener only */
    mbsc_allowlist *allow; /* server mode with --listen */
    mbsc_policy *policy;   /* server mode, NULL without --policy */
    struct gw_tls *tls;    /* server mode, NULL without TLS (tls_conf.h) */
};

/*
 * Load the key, PSK, allow-list (server) or peer key (client), policy and
 * TLS files named by o into s.  0, or -1 with why naming the file (and
 * line).  Warnings (a policy rule that grants more than it seems, a master
 * whose role the policy does not name) are logged as they are found.
 */
int gw_secrets_load(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len);
/*
 * --check: load every part named by o, on and on past a part that fails,
 * logging what is wrong with each (and the warnings a start would log).
 * The number of parts that failed, and in *masters those the allow-list
 * lists; nothing is kept.
 */
unsigned gw_secrets_check(const struct gw_options *o, size_t *masters);
void gw_secrets_free(struct gw_secrets *s);

#endif /* MBSC_GATEWAY_SECRETS_H */
