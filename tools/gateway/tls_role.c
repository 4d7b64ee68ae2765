/* SPDX-License-Identifier: ISC */
/*
 * tls_role.c - the role extension's value (tls_role.h).
 *
 * The value is the DER of one UTF8String (X.690, 8.1 and 10.1: tag 0x0C,
 * primitive; the length in its shortest form).  Anything else is refused
 * rather than guessed at: BER forms, another string type, bytes after the
 * string.  The text must be UTF-8 as RFC 3629 defines it (no overlong
 * forms, no surrogates, nothing above U+10FFFF) without control
 * characters, because it is printed in logs and compared with the
 * policy's role names.
 */
#include <string.h>

#include <openssl/objects.h>
#include <openssl/x509v3.h>

#include "tls_role.h"

#define TAG_UTF8STRING 0x0Cu

/* The length of one UTF-8 character at s (n bytes left), or 0 if it is not one (RFC 3629, 4). */
static size_t utf8_char(const uint8_t *s, size_t n)
{
    uint32_t c;
    size_t len, i;

    if (s[0] < 0x80)
        return s[0] >= 0x20 && s[0] != 0x7F ? 1 : 0; /* no C0 control, no DEL */
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        len = 2, c = s[0] & 0x1Fu;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        len = 3, c = s[0] & 0x0Fu;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        len = 4, c = s[0] & 0x07u;
    else
        return 0;
    if (n < len)
        return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xC0u) != 0x80u)
            return 0;
        c = c << 6 | (s[i] & 0x3Fu);
    }
    if ((len == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) ||
        (len == 4 && (c < 0x10000 || c > 0x10FFFF)))
        return 0; /* overlong, a surrogate, or beyond Unicode */
    if (c >= 0x80 && c <= 0x9F)
        return 0; /* C1 controls */
    return len;
}

enum gw_tls_role_status gw_tls_role_parse(const uint8_t *der, size_t len,
                                          char role[GW_TLS_ROLE_MAX + 1])
{
    size_t n, head, i;

    role[0] = '\0';
    if (len < 2 || der[0] != TAG_UTF8STRING)
        return GW_TLS_ROLE_MALFORMED;
    if (der[1] < 0x80) {
        n = der[1];
        head = 2;
    } else if (der[1] == 0x81 && len >= 3 && der[2] >= 0x80) {
        n = der[2]; /* DER: the long form only for 128 and more */
        head = 3;
    } else if (der[1] == 0x82 && len >= 4 && der[2] != 0) {
        n = (size_t)der[2] << 8 | der[3];
        head = 4;
    } else {
        return GW_TLS_ROLE_MALFORMED; /* indefinite, non-minimal or absurd lengths */
    }
    if (len - head != n)
        return GW_TLS_ROLE_MALFORMED; /* short, or bytes after the string */
    if (n == 0)
        return GW_TLS_ROLE_MALFORMED;
    if (n > GW_TLS_ROLE_MAX)
        return GW_TLS_ROLE_TOO_LONG;
    for (i = 0; i < n;) {
        size_t c = utf8_char(der + head + i, n - i);

        if (c == 0)
            return GW_TLS_ROLE_MALFORMED;
        i += c;
    }
    memcpy(role, der + head, n);
    role[n] = '\0';
    return GW_TLS_ROLE_OK;
}

enum gw_tls_role_status gw_tls_cert_role(const X509 *x, char role[GW_TLS_ROLE_MAX + 1])
{
    ASN1_OBJECT *oid = OBJ_txt2obj(GW_TLS_ROLE_OID, 1);
    enum gw_tls_role_status st;
    int at;

    role[0] = '\0';
    if (oid == NULL)
        return GW_TLS_ROLE_MALFORMED; /* out of memory: refuse rather than guess */
    at = X509_get_ext_by_OBJ(x, oid, -1);
    if (at < 0) {
        st = GW_TLS_ROLE_ABSENT;
    } else if (X509_get_ext_by_OBJ(x, oid, at) >= 0) {
        st = GW_TLS_ROLE_REPEATED;
    } else {
        const ASN1_OCTET_STRING *v = X509_EXTENSION_get_data(X509_get_ext(x, at));

        st = v == NULL
                 ? GW_TLS_ROLE_MALFORMED
                 : gw_tls_role_parse(ASN1_STRING_get0_data(v), (size_t)ASN1_STRING_length(v), role);
    }
    ASN1_OBJECT_free(oid);
    return st;
}

const char *gw_tls_role_status_text(enum gw_tls_role_status s)
{
    switch (s) {
    case GW_TLS_ROLE_OK: return "a role";
    case GW_TLS_ROLE_ABSENT: return "no role";
    case GW_TLS_ROLE_MALFORMED:
        return "role extension malformed (not one DER UTF8String of printable UTF-8)";
    case GW_TLS_ROLE_TOO_LONG: return "role over 64 bytes";
    case GW_TLS_ROLE_REPEATED: return "role extension present more than once";
    }
    return "?";
}
