/* SPDX-License-Identifier: ISC */
/*
 * tls_client.c - a blocking Modbus/TCP Security client (tls_client.h).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "mbsc.h"
#include "tls_client.h"

static void ossl_why(char *why, size_t len, const char *what)
{
    unsigned long e = ERR_get_error();
    const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;

    snprintf(why, len, "%s: %s", what, r != NULL ? r : errno != 0 ? strerror(errno) : "failed");
    ERR_clear_error();
}

int tls_client_init(struct tls_client *c, const struct tls_client_opts *o, char *why,
                    size_t why_len)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->timeout_ms = o->timeout_ms != 0 ? o->timeout_ms : 5000;
    c->ctx = SSL_CTX_new(TLS_client_method());
    if (c->ctx == NULL)
        goto fail;
    if (o->version != 0) {
        /* An old version is offered on purpose: let OpenSSL build such a hello. */
        if (o->version < TLS1_2_VERSION)
            SSL_CTX_set_security_level(c->ctx, 0);
        if (SSL_CTX_set_min_proto_version(c->ctx, o->version) != 1 ||
            SSL_CTX_set_max_proto_version(c->ctx, o->version) != 1)
            goto fail;
    } else if (SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION) != 1) {
        goto fail;
    }
    if ((o->ciphers != NULL && SSL_CTX_set_cipher_list(c->ctx, o->ciphers) != 1) ||
        (o->suites != NULL && SSL_CTX_set_ciphersuites(c->ctx, o->suites) != 1) ||
        SSL_CTX_load_verify_locations(c->ctx, o->ca, NULL) != 1)
        goto fail;
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    if (o->name != NULL && X509_VERIFY_PARAM_set1_host(SSL_CTX_get0_param(c->ctx), o->name, 0) != 1)
        goto fail;
    if (o->cert != NULL && (SSL_CTX_use_certificate_chain_file(c->ctx, o->cert) != 1 ||
                            SSL_CTX_use_PrivateKey_file(c->ctx, o->key, SSL_FILETYPE_PEM) != 1))
        goto fail;
    /* Sessions are kept here (resume), not in the context's cache. */
    SSL_CTX_set_session_cache_mode(c->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
    return 0;
fail:
    ossl_why(why, why_len, "TLS context");
    SSL_CTX_free(c->ctx);
    c->ctx = NULL;
    return -1;
}

static int tcp_connect(const char *hostport, int timeout_ms, char *why, size_t why_len)
{
    char host[256], port[8];
    struct addrinfo hints, *res = NULL;
    struct timeval tv;
    int fd = -1, one = 1, r;

    if (mbsc_parse_hostport(hostport, host, sizeof host, port, sizeof port) != MBSC_OK) {
        snprintf(why, why_len, "%s: not HOST:PORT", hostport);
        return -1;
    }
    if (host[0] == '[') { /* [V6ADDR] */
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    r = getaddrinfo(host, port, &hints, &res);
    if (r != 0) {
        snprintf(why, why_len, "%s: %s", hostport, gai_strerror(r));
        return -1;
    }
    fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
        connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        snprintf(why, why_len, "connect %s: %s", hostport, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

int tls_client_connect(struct tls_client *c, const char *hostport, int resume, char *why,
                       size_t why_len)
{
    int r;

    c->fd = tcp_connect(hostport, c->timeout_ms, why, why_len);
    if (c->fd < 0)
        return -1;
    c->ssl = SSL_new(c->ctx);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
        (resume && c->session != NULL && SSL_set_session(c->ssl, c->session) != 1)) {
        ossl_why(why, why_len, "TLS");
        tls_client_close(c);
        return -1;
    }
    errno = 0;
    r = SSL_connect(c->ssl);
    if (r != 1) {
        long v = SSL_get_verify_result(c->ssl);

        if (v != X509_V_OK)
            snprintf(why, why_len, "handshake: server certificate: %s",
                     X509_verify_cert_error_string(v));
        else
            ossl_why(why, why_len, "handshake");
        tls_client_close(c);
        return -1;
    }
    c->reused = SSL_session_reused(c->ssl);
    return 0;
}

/* Exactly len bytes, or -1 with why. */
static int read_full(struct tls_client *c, uint8_t *buf, size_t len, char *why, size_t why_len)
{
    size_t at = 0;

    while (at < len) {
        size_t got = 0;

        errno = 0;
        if (SSL_read_ex(c->ssl, buf + at, len - at, &got) != 1) {
            int e = SSL_get_error(c->ssl, 0);

            if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0))
                snprintf(why, why_len, "closed by the server");
            else if (errno == EAGAIN || errno == EWOULDBLOCK)
                snprintf(why, why_len, "no answer within %d ms", c->timeout_ms);
            else
                ossl_why(why, why_len, "read");
            return -1;
        }
        at += got;
    }
    return 0;
}

long tls_client_request(struct tls_client *c, uint8_t unit, const uint8_t *pdu, size_t len,
                        uint8_t *ans, size_t cap, char *why, size_t why_len)
{
    uint8_t adu[MBSC_ADU_MAX], head[MBSC_MBAP_BYTES];
    size_t written = 0, n;
    uint16_t tid = ++c->tid;

    if (len == 0 || len > MBSC_ADU_MAX - MBSC_MBAP_BYTES) {
        snprintf(why, why_len, "request too long");
        return -1;
    }
    adu[0] = (uint8_t)(tid >> 8);
    adu[1] = (uint8_t)tid;
    adu[2] = adu[3] = 0;
    adu[4] = (uint8_t)((len + 1) >> 8);
    adu[5] = (uint8_t)(len + 1);
    adu[6] = unit;
    memcpy(adu + MBSC_MBAP_BYTES, pdu, len);
    if (SSL_write_ex(c->ssl, adu, MBSC_MBAP_BYTES + len, &written) != 1) {
        /*
         * TLS 1.3: the server checks the certificate after the client has
         * finished, so a refusal may meet the first request; its alert
         * waits in the socket, before the reset: read it, it says why.
         */
        ossl_why(why, why_len, "write");
        (void)read_full(c, head, sizeof head, why, why_len);
        return -1;
    }
    if (read_full(c, head, sizeof head, why, why_len) != 0)
        return -1;
    n = (size_t)head[4] << 8 | head[5];
    if (head[0] != adu[0] || head[1] != adu[1] || head[2] != 0 || head[3] != 0 || n < 2 ||
        n - 1 > cap || head[6] != unit) {
        snprintf(why, why_len, "bad MBAP header in the answer");
        return -1;
    }
    if (read_full(c, ans, n - 1, why, why_len) != 0)
        return -1;
    return (long)(n - 1);
}

const char *tls_client_version(const struct tls_client *c)
{
    return c->ssl != NULL ? SSL_get_version(c->ssl) : "?";
}

const char *tls_client_suite(const struct tls_client *c)
{
    const SSL_CIPHER *s = c->ssl != NULL ? SSL_get_current_cipher(c->ssl) : NULL;

    return s != NULL ? SSL_CIPHER_get_name(s) : "?";
}

void tls_client_close(struct tls_client *c)
{
    if (c->ssl != NULL) {
        SSL_SESSION *s = SSL_get1_session(c->ssl);

        if (s != NULL) {
            SSL_SESSION_free(c->session);
            c->session = s;
        }
        (void)SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    ERR_clear_error();
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void tls_client_free(struct tls_client *c)
{
    tls_client_close(c);
    SSL_SESSION_free(c->session);
    SSL_CTX_free(c->ctx);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}
