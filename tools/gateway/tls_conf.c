/* SPDX-License-Identifier: ISC */
/*
 * tls_conf.c - the gateway's TLS settings and files (tls_conf.h,
 * tls_ctx.h), with OpenSSL 3.
 *
 * Files are read by the library's mbsc_trusted_file_read (mbsc/keys.h), so
 * that a certificate, a CA or a key is held to the rules of mbsc's own key
 * files: owned by this user or root, in directories nobody else can
 * write; a private key also readable by its owner only (mode 0600), as
 * --key.  OpenSSL then parses them from memory, and the copy of the key is
 * wiped.  PEM only: one certificate file holds the certificate first and
 * any intermediate CAs after it; a CA file holds one or more certificates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#include <mbsc.h>

#include "log.h"
#include "route.h"
#include "tls_ctx.h"

#define PEM_MAX_BYTES (256u * 1024u)
#define VERIFY_DEPTH  8

struct gw_tls {
    SSL_CTX *server; /* --listen-tls */
    SSL_CTX *client; /* mbaps:// upstreams */
    char *upstream_name;
};

int gw_tls_built_in(void)
{
    return 1;
}

const char *gw_tls_error(char *buf, size_t len, const char *fallback)
{
    unsigned long e = ERR_get_error();

    if (e == 0)
        snprintf(buf, len, "%s", fallback);
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

/* ---- checking the settings ---- */

static int any_tls_target(const struct gw_options *o)
{
    size_t i;

    /* --upstream is the default route only after the checks (options.c): look at both. */
    if ((o->upstream != NULL && gw_route_is_tls(o->upstream)) ||
        gw_route_is_tls(o->routes.default_target))
        return 1;
    for (i = 0; i < o->routes.n; i++)
        if (gw_route_is_tls(o->routes.routes[i].target))
            return 1;
    return 0;
}

int gw_tls_check_options(const struct gw_options *o)
{
    const char *missing;

    if (o->listen_tls != NULL) {
        missing = o->tls_cert == NULL  ? "tls-cert FILE (the gateway's certificate, PEM)"
                  : o->tls_key == NULL ? "tls-key FILE (its private key, PEM, mode 0600)"
                  : o->tls_ca == NULL  ? "tls-ca FILE (the CA that signs the masters' certificates)"
                                       : NULL;
        if (missing != NULL) {
            gw_log(GW_ERR, "listen-tls needs --%s; see docs/tls.md", missing);
            return -1;
        }
    } else if (o->tls_cert != NULL || o->tls_key != NULL || o->tls_ca != NULL) {
        gw_log(GW_WARN, "tls-cert, tls-key and tls-ca are the TLS listener's: without listen-tls "
                        "they are not used");
    }
    if (any_tls_target(o)) {
        missing = o->upstream_tls_cert == NULL
                      ? "upstream-tls-cert FILE (the certificate the gateway shows the devices)"
                  : o->upstream_tls_key == NULL ? "upstream-tls-key FILE (its private key)"
                  : o->upstream_tls_ca == NULL
                      ? "upstream-tls-ca FILE (the CA that signs the devices' certificates)"
                      : NULL;
        if (missing != NULL) {
            gw_log(GW_ERR, "an mbaps:// target needs --%s; see docs/tls.md", missing);
            return -1;
        }
    } else if (o->upstream_tls_cert != NULL || o->upstream_tls_key != NULL ||
               o->upstream_tls_ca != NULL || o->upstream_tls_name != NULL) {
        gw_log(GW_WARN, "the upstream-tls settings are for mbaps:// targets, and no route or "
                        "upstream is one: they are not used");
    }
    return 0;
}

/* ---- loading ---- */

/* The file at path into a new buffer (NUL-terminated) under mbsc's rules; NULL with why. */
static char *read_file(const char *path, int secret, size_t *len, char *why, size_t why_len)
{
    char *buf = malloc(PEM_MAX_BYTES + 1);
    struct stat st;

    if (buf == NULL) {
        snprintf(why, why_len, "%s: out of memory", path);
        return NULL;
    }
    if (mbsc_trusted_file_read(path, buf, PEM_MAX_BYTES, len, why, why_len) != MBSC_OK) {
        free(buf);
        return NULL;
    }
    buf[*len] = '\0';
    /* The library checked who may write it; a key must not be readable by others either. */
    if (secret && (stat(path, &st) != 0 || (st.st_mode & 077) != 0)) {
        snprintf(why, why_len,
                 "%s: permissions %04o are too open for a private key (must be 0600 or "
                 "stricter); fix: chmod 600 %s",
                 path, (unsigned)(st.st_mode & 07777), path);
        sodium_memzero(buf, *len);
        free(buf);
        return NULL;
    }
    return buf;
}

/* Keys are read unattended: one with a passphrase is refused, never asked for on a terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return 0;
}

static void free_secret(char *buf, size_t len)
{
    if (buf != NULL)
        sodium_memzero(buf, len);
    free(buf);
}

/* Every certificate of a PEM file into sk; 0, or -1 with why. */
static int read_certs(STACK_OF(X509) * sk, const char *path, char *why, size_t why_len)
{
    size_t len = 0;
    char *pem = read_file(path, 0, &len, why, why_len), err[256];
    BIO *bio;
    X509 *x;

    if (pem == NULL)
        return -1;
    bio = BIO_new_mem_buf(pem, (int)len);
    while (bio != NULL && (x = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL)) != NULL)
        if (!sk_X509_push(sk, x)) {
            X509_free(x);
            break;
        }
    BIO_free(bio);
    free(pem);
    if (sk_X509_num(sk) == 0) {
        snprintf(why, why_len, "%s: no PEM certificate in the file (%s)", path,
                 gw_tls_error(err, sizeof err, "empty"));
        return -1;
    }
    ERR_clear_error(); /* the end of the file is reported as an error */
    return 0;
}

/* The certificate (and its chain) and the key of a context; 0, or -1 with why. */
static int use_cert_and_key(SSL_CTX *ctx, const char *cert, const char *key, char *why,
                            size_t why_len)
{
    STACK_OF(X509) *sk = sk_X509_new_null();
    size_t len = 0;
    char *pem, err[256];
    EVP_PKEY *pk = NULL;
    BIO *bio;
    int i, rc = -1;

    if (sk == NULL || read_certs(sk, cert, why, why_len) != 0)
        goto out;
    if (SSL_CTX_use_certificate(ctx, sk_X509_value(sk, 0)) != 1) {
        snprintf(why, why_len, "%s: %s", cert, gw_tls_error(err, sizeof err, "refused"));
        goto out;
    }
    for (i = 1; i < sk_X509_num(sk); i++)
        if (SSL_CTX_add1_chain_cert(ctx, sk_X509_value(sk, i)) != 1) {
            snprintf(why, why_len, "%s: chain: %s", cert, gw_tls_error(err, sizeof err, "refused"));
            goto out;
        }
    pem = read_file(key, 1, &len, why, why_len);
    if (pem == NULL)
        goto out;
    bio = BIO_new_mem_buf(pem, (int)len);
    if (bio != NULL)
        pk = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
    BIO_free(bio);
    free_secret(pem, len);
    if (pk == NULL) {
        snprintf(why, why_len, "%s: not a PEM private key without a passphrase (%s)", key,
                 gw_tls_error(err, sizeof err, "unreadable"));
        goto out;
    }
    if (SSL_CTX_use_PrivateKey(ctx, pk) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(why, why_len, "%s: does not belong to the certificate in %s (%s)", key, cert,
                 gw_tls_error(err, sizeof err, "mismatch"));
        goto out;
    }
    rc = 0;
out:
    EVP_PKEY_free(pk);
    sk_X509_pop_free(sk, X509_free);
    return rc;
}

/* The CA that verifies the peers; server: also the names the client certificate request lists. */
static int use_ca(SSL_CTX *ctx, const char *ca, int server, char *why, size_t why_len)
{
    STACK_OF(X509) *sk = sk_X509_new_null();
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    char err[256];
    int i, rc = -1;

    if (sk == NULL || read_certs(sk, ca, why, why_len) != 0)
        goto out;
    for (i = 0; i < sk_X509_num(sk); i++) {
        X509 *x = sk_X509_value(sk, i);

        if (X509_STORE_add_cert(store, x) != 1 || (server && SSL_CTX_add_client_CA(ctx, x) != 1)) {
            snprintf(why, why_len, "%s: certificate %d: %s", ca, i + 1,
                     gw_tls_error(err, sizeof err, "refused"));
            goto out;
        }
    }
    rc = 0;
out:
    sk_X509_pop_free(sk, X509_free);
    return rc;
}

static SSL_CTX *new_ctx(int server, int legacy, char *why, size_t why_len)
{
    SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    char ciphers[512], err[256];

    snprintf(ciphers, sizeof ciphers, "%s%s%s", GW_TLS12_CIPHERS, legacy ? ":" : "",
             legacy ? GW_TLS12_LEGACY_CIPHERS : "");
    if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_cipher_list(ctx, ciphers) != 1 ||
        SSL_CTX_set_ciphersuites(ctx, GW_TLS13_SUITES) != 1) {
        snprintf(why, why_len, "TLS context: %s", gw_tls_error(err, sizeof err, "out of memory"));
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify_depth(ctx, VERIFY_DEPTH);
    if (server) {
        (void)SSL_CTX_set_num_tickets(ctx, 0); /* TLS 1.3: no resumption tickets either */
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    }
    return ctx;
}

/* "tls-cert: FILE: what" from "FILE: what", so that the setting is named too. */
static int fail(struct gw_tls *t, const char *setting, char *why, size_t why_len)
{
    char copy[GW_WHY_SIZE];

    snprintf(copy, sizeof copy, "%s", why);
    snprintf(why, why_len, "%s: %s", setting, copy);
    gw_tls_free(t);
    return -1;
}

int gw_tls_load(struct gw_tls **out, const struct gw_options *o, char *why, size_t why_len)
{
    struct gw_tls *t;

    *out = NULL;
    if (o->listen_tls == NULL && o->upstream_tls_ca == NULL)
        return 0;
    t = calloc(1, sizeof *t);
    if (t == NULL) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    if (o->listen_tls != NULL) {
        t->server = new_ctx(1, o->tls_legacy_ciphers, why, why_len);
        if (t->server == NULL)
            return fail(t, "listen-tls", why, why_len);
        if (use_cert_and_key(t->server, o->tls_cert, o->tls_key, why, why_len) != 0)
            return fail(t, "tls-cert/tls-key", why, why_len);
        if (use_ca(t->server, o->tls_ca, 1, why, why_len) != 0)
            return fail(t, "tls-ca", why, why_len);
    }
    if (o->upstream_tls_ca != NULL) {
        t->client = new_ctx(0, o->tls_legacy_ciphers, why, why_len);
        if (t->client == NULL)
            return fail(t, "upstream-tls", why, why_len);
        if (o->upstream_tls_cert != NULL &&
            use_cert_and_key(t->client, o->upstream_tls_cert, o->upstream_tls_key, why, why_len) !=
                0)
            return fail(t, "upstream-tls-cert/upstream-tls-key", why, why_len);
        if (use_ca(t->client, o->upstream_tls_ca, 0, why, why_len) != 0)
            return fail(t, "upstream-tls-ca", why, why_len);
        if (o->upstream_tls_name != NULL &&
            (t->upstream_name = strdup(o->upstream_tls_name)) == NULL) {
            snprintf(why, why_len, "out of memory");
            return fail(t, "upstream-tls-name", why, why_len);
        }
    }
    *out = t;
    return 0;
}

void gw_tls_free(struct gw_tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->server);
    SSL_CTX_free(t->client);
    free(t->upstream_name);
    free(t);
}

SSL_CTX *gw_tls_server_ctx(const struct gw_tls *t)
{
    return t != NULL ? t->server : NULL;
}

X509_STORE *gw_tls_server_store(const struct gw_tls *t)
{
    return t != NULL && t->server != NULL ? SSL_CTX_get_cert_store(t->server) : NULL;
}

SSL_CTX *gw_tls_client_ctx(const struct gw_tls *t)
{
    return t != NULL ? t->client : NULL;
}

const char *gw_tls_upstream_name(const struct gw_tls *t)
{
    return t != NULL ? t->upstream_name : NULL;
}
