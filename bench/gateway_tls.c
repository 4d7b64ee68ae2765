/* SPDX-License-Identifier: ISC */
/*
 * gateway_tls.c - certificates, a TLS master and a stunnel pair for make
 * bench-gateway's Modbus/TCP Security rows (gateway_tls.h).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gateway_tls.h"

/* Run the shell script with its two arguments; its exit status, or -1. */
static int run_script(const char *script, const char *a1, const char *a2)
{
    int st;
    pid_t pid = fork();

    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", script, "sh", a1, a2, (char *)NULL);
        _exit(127);
    }
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int bench_tls_certs(const char *srcdir, const char *dir, char *why, size_t why_len)
{
    /* tls_certs.sh is sourced, as tls.test does; its output is not the bench's. */
    if (run_script(". \"$1/tests/tls_certs.sh\" && tls_make_certs \"$2\" >/dev/null 2>&1", srcdir,
                   dir) != 0) {
        snprintf(why, why_len,
                 "%s/tests/tls_certs.sh could not make the certificates (is the openssl command "
                 "installed? is --srcdir right?)",
                 srcdir);
        return -1;
    }
    return 0;
}

int bench_tls_master(struct tls_client *c, const char *dir, const char *hostport, char *why,
                     size_t why_len)
{
    char ca[512], cert[512], key[512];
    struct tls_client_opts o;

    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    snprintf(cert, sizeof cert, "%s/operator.pem", dir);
    snprintf(key, sizeof key, "%s/operator.key", dir);
    memset(&o, 0, sizeof o);
    o.ca = ca;
    o.cert = cert;
    o.key = key;
    o.version = TLS1_3_VERSION;
    o.timeout_ms = 5000;
    if (tls_client_init(c, &o, why, why_len) != 0)
        return -1;
    if (tls_client_connect(c, hostport, 0, why, why_len) != 0) {
        tls_client_free(c);
        return -1;
    }
    return 0;
}

int bench_tls_read10(struct tls_client *c, char *why, size_t why_len)
{
    static const uint8_t pdu[] = {0x03, 0x00, 0x00, 0x00, 0x0A};
    uint8_t ans[260];
    long n = tls_client_request(c, 1, pdu, sizeof pdu, ans, sizeof ans, why, why_len);

    if (n < 0)
        return -1;
    if (n != 22 || ans[0] != 0x03 || ans[1] != 20) {
        snprintf(why, why_len, "not the answer to a read of 10 registers (%ld bytes, 0x%02x)", n,
                 n > 0 ? ans[0] : 0);
        return -1;
    }
    return 0;
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int bench_tls_read_address(struct gwp *g, char *addr, size_t len)
{
    char line[128];
    size_t n = 0;
    double end = now_us() + 10e6;

    while (n < sizeof line - 1 && now_us() < end) {
        struct pollfd pfd = {g->out_fd, POLLIN, 0};

        if (poll(&pfd, 1, 100) <= 0)
            continue;
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
