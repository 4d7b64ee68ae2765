/* SPDX-License-Identifier: ISC */
/*
 * gateway_tls.c - certificates, a TLS master and a stunnel pair for make
 * bench-gateway's Modbus/TCP Security rows (gateway_tls.h).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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

/* A port nothing listens on now (the kernel's choice); 0 if none. */
static int free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;

    if (fd < 0)
        return 0;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* Whether the log file holds needle (stunnel writes it when it has read its configuration). */
static int log_has(const char *path, const char *needle)
{
    char buf[8192];
    size_t n;
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

int bench_stunnel_start(const char *dir, int plc_port, const char *suite, char *addr,
                        size_t addr_len, pid_t *pid, char *why, size_t why_len)
{
    char conf[512], log[512];
    int p_client = free_port(), p_server = free_port(), i;
    FILE *f;

    if (run_script("command -v stunnel4 >/dev/null 2>&1 || command -v stunnel >/dev/null 2>&1", "",
                   "") != 0) {
        snprintf(why, why_len, "stunnel is not installed (apt-get install stunnel4)");
        return -1;
    }
    if (p_client == 0 || p_server == 0 || p_client == p_server) {
        snprintf(why, why_len, "no free ports for stunnel");
        return -1;
    }
    snprintf(conf, sizeof conf, "%s/stunnel-bench.conf", dir);
    snprintf(log, sizeof log, "%s/stunnel-bench.log", dir);
    f = fopen(conf, "w");
    if (f == NULL) {
        snprintf(why, why_len, "cannot write %s", conf);
        return -1;
    }
    /* Both ends as the gateway's: certificates checked both ways, TLS 1.3 only, one suite. */
    fprintf(f,
            "foreground = yes\npid =\ndebug = 5\noutput = %s\n"
            "[bench-client]\nclient = yes\naccept = 127.0.0.1:%d\nconnect = 127.0.0.1:%d\n"
            "cert = %s/operator.pem\nkey = %s/operator.key\nCAfile = %s/ca.pem\n"
            "verifyChain = yes\ncheckHost = localhost\nsslVersionMin = TLSv1.3\n"
            "ciphersuites = %s\n"
            "[bench-server]\naccept = 127.0.0.1:%d\nconnect = 127.0.0.1:%d\n"
            "cert = %s/gateway.pem\nkey = %s/gateway.key\nCAfile = %s/ca.pem\n"
            "verifyChain = yes\nsslVersionMin = TLSv1.3\nciphersuites = %s\n",
            log, p_client, p_server, dir, dir, dir, suite, p_server, plc_port, dir, dir, dir,
            suite);
    if (fclose(f) != 0) {
        snprintf(why, why_len, "cannot write %s", conf);
        return -1;
    }
    unlink(log);
    *pid = fork();
    if (*pid < 0) {
        snprintf(why, why_len, "fork failed");
        return -1;
    }
    if (*pid == 0) {
        int null = open("/dev/null", O_WRONLY);

        (void)prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the bench */
        /* In the foreground stunnel logs to stderr too: its log file is enough. */
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execlp("stunnel4", "stunnel4", conf, (char *)NULL);
        execlp("stunnel", "stunnel", conf, (char *)NULL);
        _exit(127);
    }
    for (i = 0; i < 100 && !log_has(log, "Configuration successful"); i++)
        poll(NULL, 0, 50);
    if (i == 100) {
        bench_stunnel_stop(*pid);
        snprintf(why, why_len, "stunnel did not start (its log: %s)", log);
        return -1;
    }
    snprintf(addr, addr_len, "127.0.0.1:%d", p_client);
    return 0;
}

void bench_stunnel_stop(pid_t pid)
{
    int st;

    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
}
