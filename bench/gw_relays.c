/* SPDX-License-Identifier: ISC */
/*
 * gw_relays.c - the pairs of relays the gateway is measured against
 * (gw_bench.h): two haproxy processes in TCP mode (a relay pair that does
 * nothing to the bytes) or two stunnel processes (TLS 1.3 between them,
 * one suite), client side and PLC side, as two gateways would run.
 *
 * Each side is its own process, so that its counters are its own; each
 * runs in the foreground with one thread where it lets us say so, and is
 * ready when its port is listening (read from /proc/net/tcp, so that no
 * test connection reaches the PLC).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gw_bench.h"

/* A port nothing listens on now (the kernel's choice); 0 if none. */
static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;

    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Whether something listens on 127.0.0.1:*port (state 0A in /proc/net/tcp). */
static int listening(const void *port)
{
    char line[256], want[32];
    int found = 0;
    FILE *f = fopen("/proc/net/tcp", "r");

    snprintf(want, sizeof want, "0100007F:%04X 00000000:0000 0A", *(const int *)port);
    while (f != NULL && !found && fgets(line, sizeof line, f) != NULL)
        found = strstr(line, want) != NULL;
    if (f != NULL)
        fclose(f);
    return found;
}

/* One side: its configuration written, started, listening on port; 0 or -1 with why. */
static int start_side(struct gw_path *p, const char *name, const char *conf, int port, int haproxy,
                      char *why, size_t why_len)
{
    char path[128], log[160];
    const char *hargv[] = {"haproxy", "-db", "-f", path, NULL}, *sargv[] = {"stunnel4", path, NULL};
    const char *const *argv = haproxy ? hargv : sargv;
    FILE *f;
    pid_t pid;

    snprintf(path, sizeof path, "%s", gw_file(name));
    snprintf(log, sizeof log, "%s.log", path);
    if ((f = fopen(path, "w")) == NULL || fputs(conf, f) < 0 || fclose(f) != 0)
        return snprintf(why, why_len, "cannot write %s", path), -1;
    if ((pid = gw_exec(argv, log)) < 0)
        return snprintf(why, why_len, "fork failed"), -1;
    gw_add_proc(p, name, pid);
    p->n_relay++;
    if (!gw_wait_for(listening, &port, pid))
        return snprintf(why, why_len, "%s did not start (its output: %s)", argv[0], log), -1;
    return 0;
}

int gw_relay_pair(struct gw_path *p, const char *certs, const char *suite, char *addr, size_t len,
                  char *why, size_t why_len)
{
    int port[2] = {free_port(), free_port()}, up[2] = {port[1], p->plc.port};
    const char *prog = suite == NULL ? "haproxy" : "stunnel4";
    char sh[128], conf[1536], name[48];

    snprintf(sh, sizeof sh, "command -v %s >/dev/null 2>&1", prog);
    if (system(sh) != 0)
        return snprintf(why, why_len, "%s is not installed (apt-get install %s)",
                        suite == NULL ? "haproxy" : "stunnel", prog),
               -1;
    if (port[0] == 0 || port[1] == 0 || port[0] == port[1])
        return snprintf(why, why_len, "no free ports"), -1;
    /* Client side first, as on the path and in the tables; neither connects
     * upstream before a client connects to it. */
    for (int side = 0; side < 2; side++) {
        const char *who = side == 0 ? "client" : "server";
        const char *cert = side == 0 ? "operator" : "gateway";

        if (suite == NULL) /* one thread, TCP mode, timeouts that never end a run */
            snprintf(conf, sizeof conf,
                     "global\n    nbthread 1\n    maxconn 100\n"
                     "defaults\n    mode tcp\n    timeout connect 5s\n    timeout client 1h\n"
                     "    timeout server 1h\n"
                     "listen relay\n    bind 127.0.0.1:%d\n    server up 127.0.0.1:%d\n",
                     port[side], up[side]);
        else /* as the gateway's: certificates checked both ways, TLS 1.3 only, one suite */
            snprintf(conf, sizeof conf,
                     "foreground = yes\npid =\n[%s]\nclient = %s\naccept = 127.0.0.1:%d\n"
                     "connect = 127.0.0.1:%d\ncert = %s/%s.pem\nkey = %s/%s.key\n"
                     "CAfile = %s/ca.pem\nverifyChain = yes\n%ssslVersionMin = TLSv1.3\n"
                     "ciphersuites = %s\n",
                     who, side == 0 ? "yes" : "no", port[side], up[side], certs, cert, certs, cert,
                     certs, side == 0 ? "checkHost = localhost\n" : "", suite);
        snprintf(name, sizeof name, "%s-%s.%s", suite == NULL ? "haproxy" : "stunnel", who,
                 suite == NULL ? "cfg" : suite);
        if (start_side(p, name, conf, port[side], suite == NULL, why, why_len) != 0)
            return -1;
    }
    snprintf(addr, len, "127.0.0.1:%d", port[0]);
    return 0;
}
