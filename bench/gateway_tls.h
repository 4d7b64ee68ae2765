/* SPDX-License-Identifier: ISC */
/*
 * gateway_tls.h - what make bench-gateway needs for its Modbus/TCP
 * Security rows (gateway_tls.c): certificates, a TLS master, and a stunnel
 * pair to compare the gateway with.  Built only with OpenSSL
 * (MBSC_BENCH_TLS).
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

#include "tls_client.h"

/* The test certificates into dir, by srcdir's tests/tls_certs.sh; 0, or -1 with why. */
int bench_tls_certs(const char *srcdir, const char *dir, char *why, size_t why_len);

/* c connected to hostport as the master "operator" (TLS 1.3); 0, or -1 with why. */
int bench_tls_master(struct tls_client *c, const char *dir, const char *hostport, char *why,
                     size_t why_len);

/* One read of 10 holding registers from address 0 of unit 1; 0, or -1 with why. */
int bench_tls_read10(struct tls_client *c, char *why, size_t why_len);

/*
 * A stunnel pair in front of the PLC at plc_port: a client-mode stunnel
 * that plain Modbus/TCP clients reach at *addr, TLS 1.3 with suite (e.g.
 * TLS_CHACHA20_POLY1305_SHA256) to a server-mode stunnel that requires the
 * operator's certificate and connects to the PLC.  One process serves
 * both.  0 with *pid, or -1 with why (no stunnel installed, or it did not
 * start).
 */
int bench_stunnel_start(const char *dir, int plc_port, const char *suite, char *addr,
                        size_t addr_len, pid_t *pid, char *why, size_t why_len);
void bench_stunnel_stop(pid_t pid);

#endif /* MBSC_BENCH_GATEWAY_TLS_H */
