/* SPDX-License-Identifier: ISC */
/*
 * gateway_tls.h - what make bench-gateway needs for its Modbus/TCP
 * Security row (gateway_tls.c): certificates and a TLS master.  Built only
 * with OpenSSL (MBSC_BENCH_TLS).
 *
 * The TLS master is tests/tls_client.c, the OpenSSL client the tests check
 * the gateway's listener against; the certificates are tests/tls_certs.sh's
 * (a CA, "gateway" for 127.0.0.1 and localhost, "operator" with the role
 * operator).
 */
#ifndef MBSC_BENCH_GATEWAY_TLS_H
#define MBSC_BENCH_GATEWAY_TLS_H

#include <stddef.h>
#include <sys/types.h>

#include "gw_harness.h"

#include "tls_client.h"

/* The test certificates into dir, by srcdir's tests/tls_certs.sh; 0, or -1 with why. */
int bench_tls_certs(const char *srcdir, const char *dir, char *why, size_t why_len);

/* c connected to hostport as the master "operator" (TLS 1.3); 0, or -1 with why. */
int bench_tls_master(struct tls_client *c, const char *dir, const char *hostport, char *why,
                     size_t why_len);

/* One read of 10 holding registers from address 0 of unit 1; 0, or -1 with why. */
int bench_tls_read10(struct tls_client *c, char *why, size_t why_len);

/* The second line a gateway prints with --listen-tls ("listening tls on
 * HOST:PORT") into addr; 0, or -1. */
int bench_tls_read_address(struct gwp *g, char *addr, size_t len);

#endif /* MBSC_BENCH_GATEWAY_TLS_H */
