/* SPDX-License-Identifier: ISC */
/*
 * tls_client.h - a Modbus/TCP Security client on OpenSSL, written for the
 * tests (tests/tls_peer.c) and the benchmark (bench/gateway_bench.c): the
 * peer the gateway's TLS listener is checked against.  It shares no code
 * with the gateway's TLS files.
 *
 * Blocking, one connection, one request at a time, each with a timeout.
 */
#ifndef MBSC_TEST_TLS_CLIENT_H
#define MBSC_TEST_TLS_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

struct tls_client_opts {
    const char *ca;      /* verify the server against this CA (PEM) */
    const char *cert;    /* client certificate (PEM), or NULL: none */
    const char *key;     /* its key */
    const char *name;    /* name the server's certificate must carry, or NULL: not checked */
    int version;         /* 0: 1.2 to 1.3; else exactly this (TLS1_1_VERSION ... TLS1_3_VERSION) */
    const char *ciphers; /* TLS 1.2 cipher list, or NULL */
    const char *suites;  /* TLS 1.3 suites, or NULL */
    int timeout_ms;      /* per connect, handshake, request (0: 5000) */
};

struct tls_client {
    SSL_CTX *ctx;
    SSL *ssl;
    SSL_SESSION *session; /* of the last connection, to offer for resumption */
    int fd;
    int timeout_ms;
    uint16_t tid;
    int reused; /* the last handshake resumed a session */
};

/* A context for o; 0, or -1 with why. */
int tls_client_init(struct tls_client *c, const struct tls_client_opts *o, char *why,
                    size_t why_len);
/*
 * Connect to "HOST:PORT" and complete the handshake (offering the last
 * session when resume is set); 0, or -1 with why (OpenSSL's reason, the
 * alert the server sent).
 */
int tls_client_connect(struct tls_client *c, const char *hostport, int resume, char *why,
                       size_t why_len);
/*
 * Send one request PDU to unit and read its answer PDU (function code
 * first) into ans; its length, or -1 with why (timeout, closed, bad MBAP).
 */
long tls_client_request(struct tls_client *c, uint8_t unit, const uint8_t *pdu, size_t len,
                        uint8_t *ans, size_t cap, char *why, size_t why_len);
/* The negotiated version and suite, "TLSv1.3", "TLS_AES_128_GCM_SHA256". */
const char *tls_client_version(const struct tls_client *c);
const char *tls_client_suite(const struct tls_client *c);
/* Close the connection (close_notify), keep the context. */
void tls_client_close(struct tls_client *c);
/* Close and free everything. */
void tls_client_free(struct tls_client *c);

#endif /* MBSC_TEST_TLS_CLIENT_H */
