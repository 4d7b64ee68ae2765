/* SPDX-License-Identifier: ISC */
/*
 * tls_role.h - the role a Modbus/TCP Security client certificate carries
 * (tls_role.c), and its subject for the log.
 *
 * MB-TCP-Security v36: the role is the value of the
 * certificate extension 1.3.6.1.4.1.50316.802.1, one ASN.1 UTF8String; a
 * certificate without it has no role, which the policy treats as a
 * master without a role (mbsc/policy.h: it may do nothing).  This gateway
 * is stricter than "take the first one": an extension that is there but is
 * not exactly one DER UTF8String of 1 to GW_TLS_ROLE_MAX bytes of printable
 * UTF-8, or that appears twice (RFC 5280, 4.2: a certificate must not hold
 * an extension twice), refuses the certificate, so that no two readers of
 * one certificate can see two different roles.
 */
#ifndef MBSC_GATEWAY_TLS_ROLE_H
#define MBSC_GATEWAY_TLS_ROLE_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/x509.h>

/* The role's OID, in dotted form and as the DER contents of an OBJECT IDENTIFIER. */
#define GW_TLS_ROLE_OID "1.3.6.1.4.1.50316.802.1"
#define GW_TLS_ROLE_MAX 64u /* bytes of the role, without its NUL */

/* What the role extension of a certificate says. */
enum gw_tls_role_status {
    GW_TLS_ROLE_OK = 0,    /* one extension, one good UTF8String: the role */
    GW_TLS_ROLE_ABSENT,    /* no extension: no role */
    GW_TLS_ROLE_MALFORMED, /* not one DER UTF8String, empty, or not printable UTF-8 */
    GW_TLS_ROLE_TOO_LONG,  /* a UTF8String over GW_TLS_ROLE_MAX bytes */
    GW_TLS_ROLE_REPEATED   /* the extension twice or more */
};

/*
 * The extension's value (the contents of its OCTET STRING: the DER of the
 * role) into role (NUL-terminated): GW_TLS_ROLE_OK, _MALFORMED or
 * _TOO_LONG.  It reads bytes only, so that it can be tested on bytes.
 */
enum gw_tls_role_status gw_tls_role_parse(const uint8_t *der, size_t len,
                                          char role[GW_TLS_ROLE_MAX + 1]);

/*
 * The role of certificate x into role: GW_TLS_ROLE_OK (role set),
 * _ABSENT (role ""), or why it is refused.
 */
enum gw_tls_role_status gw_tls_cert_role(const X509 *x, char role[GW_TLS_ROLE_MAX + 1]);

/* "malformed", "over 64 bytes", ...: for the refusal log. */
const char *gw_tls_role_status_text(enum gw_tls_role_status s);

#endif /* MBSC_GATEWAY_TLS_ROLE_H */
