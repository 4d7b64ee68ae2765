/* SPDX-License-Identifier: ISC */
/*
 * gw_tls.c - the certificates and the TLS master of make bench-gateway's
 * Modbus/TCP Security row (gw_bench.h).  Built only with OpenSSL.  The
 * master is tests/tls_client.c, the OpenSSL client the tests check the
 * gateway's listener against; the certificates are tests/tls_certs.sh's.
 * Nothing here calls gw_common.c, which calls gw_tls_read10: no ring.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gw_bench.h"
#include "tls_client.h"

int gw_tls_certs(const char *srcdir, const char *dir, char *why, size_t why_len)
{
    char cmd[1024];

    /* tls_certs.sh is sourced, as tls.test does; its output is not the bench's. */
    snprintf(cmd, sizeof cmd, ". '%s/tests/tls_certs.sh' && tls_make_certs '%s' >/dev/null 2>&1",
             srcdir, dir);
    if (strchr(srcdir, '\'') == NULL && system(cmd) == 0)
        return 0;
    return snprintf(why, why_len,
                    "%s/tests/tls_certs.sh could not make the certificates (is the openssl "
                    "command installed? is --srcdir right?)",
                    srcdir),
           -1;
}

int gw_tls_master(struct tls_client *c, const char *dir, const char *hostport, char *why,
                  size_t why_len)
{
    char ca[512], cert[512], key[512];
    struct tls_client_opts o = {
        .ca = ca, .cert = cert, .key = key, .version = TLS1_3_VERSION, .timeout_ms = 5000};

    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    snprintf(cert, sizeof cert, "%s/operator.pem", dir);
    snprintf(key, sizeof key, "%s/operator.key", dir);
    if (tls_client_init(c, &o, why, why_len) != 0)
        return -1;
    if (tls_client_connect(c, hostport, 0, why, why_len) != 0) {
        tls_client_free(c);
        return -1;
    }
    return 0;
}

int gw_tls_read10(struct tls_client *c, char *why, size_t why_len)
{
    static const uint8_t pdu[] = {0x03, 0x00, 0x00, 0x00, 0x0A};
    uint8_t ans[260];
    long n = tls_client_request(c, 1, pdu, sizeof pdu, ans, sizeof ans, why, why_len);

    if (n >= 0 && (n != 22 || ans[0] != 0x03 || ans[1] != 20))
        snprintf(why, why_len, "not the answer to a read of 10 registers (%ld bytes, 0x%02x)", n,
                 n > 0 ? ans[0] : 0);
    return n == 22 && ans[0] == 0x03 && ans[1] == 20 ? 0 : -1;
}

int gw_tls_address(struct gwp *g, char *addr, size_t len)
{
    char line[128];
    size_t n = 0;

    /* Its second line, "listening tls on HOST:PORT", within 10 s. */
    for (int waits = 0; n < sizeof line - 1 && waits < 100;) {
        struct pollfd pfd = {g->out_fd, POLLIN, 0};

        if (poll(&pfd, 1, 100) <= 0) {
            waits++;
            continue;
        }
        if (read(g->out_fd, line + n, 1) != 1 || line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    if (strncmp(line, "listening tls on ", 17) != 0 || strlen(line + 17) >= len)
        return -1;
    memcpy(addr, line + 17, strlen(line + 17) + 1); /* it fits: checked above */
    return 0;
}
