/* SPDX-License-Identifier: ISC */
/*
 * tls_ctx.h - what the gateway's TLS files (tls_masters.c, up_tls.c) take
 * from a loaded struct gw_tls (tls_conf.h): OpenSSL contexts made once per
 * configuration.
 *
 * Both contexts: TLS 1.2 and 1.3 only (MB-TCP-Security v36, R-01, R-34);
 * TLS 1.3's AES-GCM and ChaCha20-Poly1305 suites; TLS 1.2 with ECDHE and
 * AEAD only (ECDHE-ECDSA and ECDHE-RSA with AES-GCM or ChaCha20-Poly1305),
 * unless --tls-legacy-ciphers adds RSA key exchange for old devices
 * (AES128-GCM-SHA256, AES256-GCM-SHA384 and the specification's
 * AES128-SHA256); no renegotiation, no compression; no session
 * resumption, on either side: every connection verifies its peer's chain
 * against the CA in force, so that a reload with a new CA applies to
 * every new connection, and a role is always the one of the certificate
 * just verified.
 */
#ifndef MBSC_GATEWAY_TLS_CTX_H
#define MBSC_GATEWAY_TLS_CTX_H

#include <openssl/ssl.h>

#include "tls_conf.h"

/* The cipher lists (OpenSSL's syntax), for the tests and the documentation. */
#define GW_TLS13_SUITES "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"
#define GW_TLS12_CIPHERS                                                                           \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:"     \
    "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"
#define GW_TLS12_LEGACY_CIPHERS "AES256-GCM-SHA384:AES128-GCM-SHA256:AES128-SHA256"

/*
 * The listener's context (NULL without --listen-tls): client certificate
 * required and verified against --tls-ca; tls_masters.c adds the role
 * check in its own verify callback.
 */
SSL_CTX *gw_tls_server_ctx(const struct gw_tls *t);
/* The CA of the listener, to verify again the masters already connected after a reload. */
X509_STORE *gw_tls_server_store(const struct gw_tls *t);

/* The upstreams' context (NULL without mbaps:// targets): the device's chain verified. */
SSL_CTX *gw_tls_client_ctx(const struct gw_tls *t);
/* --upstream-tls-name, the name every device's certificate must carry, or NULL: its HOST. */
const char *gw_tls_upstream_name(const struct gw_tls *t);

/*
 * The last OpenSSL error of this thread as text (and the queue emptied),
 * or fallback if there is none.
 */
const char *gw_tls_error(char *buf, size_t len, const char *fallback);

#endif /* MBSC_GATEWAY_TLS_CTX_H */
