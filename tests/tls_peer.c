/* SPDX-License-Identifier: ISC */
/*
 * tls_peer.c - Modbus/TCP Security peers on OpenSSL for tests/tls.test,
 * sharing no code with the gateway's TLS files.
 *
 *   tls-peer client --connect HOST:PORT --ca FILE [--cert FILE --key FILE]
 *                   [--name NAME] [--version 1.1|1.2|1.3] [--ciphers LIST]
 *                   [--suites LIST] [--unit N] [--timeout MS] [--again resume]
 *                   [--pdu HEX]...
 *     completes one handshake, prints "connected VERSION SUITE", sends each
 *     PDU (hex, function code first) and prints "answer HEX" for each
 *     answer; on a failure prints "failed: WHY" and exits 1.  --again
 *     resume then connects again offering the session of the first
 *     connection and prints "again resumed" or "again full handshake".
 *
 *   tls-peer device --ca FILE --cert FILE --key FILE
 *     a Modbus/TCP Security device on 127.0.0.1 (any free port): prints
 *     "listening on PORT", then serves one connection after another,
 *     client certificate required, until SIGTERM.  Holding register N
 *     holds 0x5000 + N (read with function 03); anything else gets
 *     exception 01.  Each connection is described on stderr: "device:
 *     client CN=... role R TLSv1.3".
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "mbsc.h"
#include "tls_client.h"

#define ROLE_OID "1.3.6.1.4.1.50316.802.1"

static int usage(void)
{
    fprintf(stderr, "usage: tls-peer client --connect HOST:PORT --ca FILE [--cert FILE --key "
                    "FILE] [--name NAME]\n"
                    "                [--version 1.1|1.2|1.3] [--ciphers LIST] [--suites LIST] "
                    "[--unit N] [--timeout MS] [--again resume] [--pdu HEX]...\n"
                    "       tls-peer device --ca FILE --cert FILE --key FILE\n");
    return 2;
}

static int unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;

    while (s[0] != '\0' && s[1] != '\0' && n < cap) {
        unsigned v;

        if (sscanf(s, "%2x", &v) != 1)
            return -1;
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return s[0] == '\0' ? (int)n : -1;
}

static int client(int argc, char **argv)
{
    struct tls_client_opts o;
    struct tls_client c;
    const char *hostport = NULL;
    char why[512];
    int unit = 1, again = 0, i;

    memset(&o, 0, sizeof o);
    for (i = 2; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];

        if (strcmp(a, "--connect") == 0)
            hostport = v;
        else if (strcmp(a, "--ca") == 0)
            o.ca = v;
        else if (strcmp(a, "--cert") == 0)
            o.cert = v;
        else if (strcmp(a, "--key") == 0)
            o.key = v;
        else if (strcmp(a, "--name") == 0)
            o.name = v;
        else if (strcmp(a, "--ciphers") == 0)
            o.ciphers = v;
        else if (strcmp(a, "--suites") == 0)
            o.suites = v;
        else if (strcmp(a, "--unit") == 0)
            unit = atoi(v);
        else if (strcmp(a, "--timeout") == 0)
            o.timeout_ms = atoi(v);
        else if (strcmp(a, "--again") == 0)
            again = strcmp(v, "resume") == 0;
        else if (strcmp(a, "--version") == 0)
            o.version = strcmp(v, "1.1") == 0   ? TLS1_1_VERSION
                        : strcmp(v, "1.2") == 0 ? TLS1_2_VERSION
                        : strcmp(v, "1.3") == 0 ? TLS1_3_VERSION
                                                : -1;
        else if (strcmp(a, "--pdu") != 0)
            return usage();
    }
    if (i != argc || hostport == NULL || o.ca == NULL || o.version < 0)
        return usage();
    if (tls_client_init(&c, &o, why, sizeof why) != 0 ||
        tls_client_connect(&c, hostport, 0, why, sizeof why) != 0) {
        printf("failed: %s\n", why);
        tls_client_free(&c);
        return 1;
    }
    printf("connected %s %s\n", tls_client_version(&c), tls_client_suite(&c));
    for (i = 2; i + 1 < argc; i += 2) {
        uint8_t pdu[MBSC_ADU_MAX], ans[MBSC_ADU_MAX];
        long n;
        int len;

        if (strcmp(argv[i], "--pdu") != 0)
            continue;
        len = unhex(argv[i + 1], pdu, sizeof pdu - MBSC_MBAP_BYTES);
        if (len <= 0) {
            tls_client_free(&c);
            return usage();
        }
        n = tls_client_request(&c, (uint8_t)unit, pdu, (size_t)len, ans, sizeof ans, why,
                               sizeof why);
        if (n < 0) {
            printf("failed: %s\n", why);
            tls_client_free(&c);
            return 1;
        }
        printf("answer ");
        for (len = 0; len < n; len++)
            printf("%02x", ans[len]);
        printf("\n");
        fflush(stdout);
    }
    if (again) {
        /* A second connection offering the first one's session. */
        tls_client_close(&c);
        if (tls_client_connect(&c, hostport, 1, why, sizeof why) != 0) {
            printf("failed: again: %s\n", why);
            tls_client_free(&c);
            return 1;
        }
        printf("again %s\n", c.reused ? "resumed" : "full handshake");
    }
    tls_client_free(&c);
    return 0;
}

/* ---- the device ---- */

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
    (void)sig;
    stopping = 1;
}

/* The role of the client's certificate as text, for the log. */
static void role_of(X509 *x, char *out, size_t len)
{
    ASN1_OBJECT *oid = OBJ_txt2obj(ROLE_OID, 1);
    int at = oid != NULL && x != NULL ? X509_get_ext_by_OBJ(x, oid, -1) : -1;

    snprintf(out, len, "none");
    if (at >= 0) {
        const ASN1_OCTET_STRING *v = X509_EXTENSION_get_data(X509_get_ext(x, at));
        const unsigned char *p = ASN1_STRING_get0_data(v);
        int n = ASN1_STRING_length(v);

        /* A short DER UTF8String: tag 0x0C, one length byte. */
        if (n >= 2 && p[0] == 0x0C && p[1] == n - 2)
            snprintf(out, len, "%.*s", n - 2, (const char *)p + 2);
        else
            snprintf(out, len, "malformed");
    }
    ASN1_OBJECT_free(oid);
}

/* Exactly len bytes; 0, or -1 at the end of the connection. */
static int read_full(SSL *ssl, uint8_t *buf, size_t len)
{
    size_t at = 0, got;

    while (at < len) {
        if (SSL_read_ex(ssl, buf + at, len - at, &got) != 1)
            return -1;
        at += got;
    }
    return 0;
}

static void serve(SSL *ssl)
{
    uint8_t h[MBSC_MBAP_BYTES], pdu[MBSC_ADU_MAX], ans[MBSC_ADU_MAX];
    size_t n, alen, written, i;

    while (!stopping && read_full(ssl, h, sizeof h) == 0) {
        n = (size_t)h[4] << 8 | h[5];
        if (n < 2 || n - 1 > sizeof pdu || read_full(ssl, pdu, n - 1) != 0)
            return;
        memcpy(ans, h, MBSC_MBAP_BYTES);
        alen = MBSC_MBAP_BYTES;
        if (pdu[0] == 0x03 && n - 1 == 5 && pdu[3] == 0 && pdu[4] >= 1 && pdu[4] <= 125) {
            unsigned first = (unsigned)pdu[1] << 8 | pdu[2];

            ans[alen++] = 0x03;
            ans[alen++] = (uint8_t)(2 * pdu[4]);
            for (i = 0; i < pdu[4]; i++) {
                unsigned v = 0x5000u + first + (unsigned)i;

                ans[alen++] = (uint8_t)(v >> 8);
                ans[alen++] = (uint8_t)v;
            }
        } else {
            ans[alen++] = (uint8_t)(pdu[0] | 0x80);
            ans[alen++] = 0x01;
        }
        ans[4] = (uint8_t)((alen - 6) >> 8);
        ans[5] = (uint8_t)(alen - 6);
        if (SSL_write_ex(ssl, ans, alen, &written) != 1)
            return;
    }
}

static int device(int argc, char **argv)
{
    const char *ca = NULL, *cert = NULL, *key = NULL;
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    struct sigaction act;
    SSL_CTX *ctx;
    int lfd, one = 1, i;

    for (i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--ca") == 0)
            ca = argv[i + 1];
        else if (strcmp(argv[i], "--cert") == 0)
            cert = argv[i + 1];
        else if (strcmp(argv[i], "--key") == 0)
            key = argv[i + 1];
        else
            return usage();
    }
    if (i != argc || ca == NULL || cert == NULL || key == NULL)
        return usage();
    ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    memset(&act, 0, sizeof act);
    act.sa_handler = on_term; /* no SA_RESTART: accept() returns at SIGTERM */
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    signal(SIGPIPE, SIG_IGN);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 8) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) {
        perror("tls-peer device: listen");
        return 1;
    }
    printf("listening on %u\n", (unsigned)ntohs(sa.sin_port));
    fflush(stdout);
    while (!stopping) {
        int fd = accept(lfd, NULL, NULL);
        SSL *ssl;

        if (fd < 0) {
            if (errno == EINTR)
                continue;
            perror("tls-peer device: accept");
            break;
        }
        ssl = SSL_new(ctx);
        if (ssl != NULL && SSL_set_fd(ssl, fd) == 1 && SSL_accept(ssl) == 1) {
            X509 *x = SSL_get1_peer_certificate(ssl);
            char subject[256] = "?", role[80];

            if (x != NULL)
                X509_NAME_oneline(X509_get_subject_name(x), subject, sizeof subject);
            role_of(x, role, sizeof role);
            fprintf(stderr, "device: client %s role %s %s\n", subject, role, SSL_get_version(ssl));
            X509_free(x);
            serve(ssl);
            (void)SSL_shutdown(ssl);
        } else {
            fprintf(stderr, "device: handshake refused\n");
            ERR_print_errors_fp(stderr);
        }
        ERR_clear_error();
        SSL_free(ssl);
        close(fd);
    }
    close(lfd);
    SSL_CTX_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && strcmp(argv[1], "client") == 0)
        return client(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "device") == 0)
        return device(argc, argv);
    return usage();
}
