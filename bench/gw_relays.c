/* SPDX-License-Identifier: ISC */
/*
 * gw_relays.c - the pairs of relays the gateway is measured against
 * (gw_bench.h): two haproxy processes in TCP mode (a relay pair that does
 * nothing to the bytes) and two stunnel processes (TLS 1.3 between them,
 * one suite), client side and PLC side, as two gateways would run.
 *
 * Each side is its own process, so that its counters are its own; each
 * runs in the foreground with one thread where it lets us say so, and is
 * ready when its port is listening (read from /proc/net/tcp, so that no
 * test connection reaches the PLC).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gw_bench.h"

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

/* Whether something listens on 127.0.0.1:port (state 0A in /proc/net/tcp). */
static int listening(int port)
{
    char line[256], want[32];
    int found = 0;
    FILE *f = fopen("/proc/net/tcp", "r");

    if (f == NULL)
        return 0;
    snprintf(want, sizeof want, "0100007F:%04X 00000000:0000 0A", port);
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = strstr(line, want) != NULL;
    fclose(f);
    return found;
}

/* Run argv with its output in log, gone with the bench; its pid, or -1. */
static pid_t spawn(const char *const *argv, const char *log)
{
    pid_t pid = fork();

    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char *v[8];
        int n = 0;

        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        /* exec wants writable strings: copies, in the child only. */
        while (argv[n] != NULL && n < 7) {
            v[n] = strdup(argv[n]);
            n++;
        }
        v[n] = NULL;
        execvp(v[0], v);
        _exit(127);
    }
    return pid;
}

/* Start argv (one side of a pair) and wait until it listens on port; 0 or -1 with why. */
static int start_side(struct gw_path *p, const char *name, const char *const *argv, int port,
                      const char *log, char *why, size_t why_len)
{
    pid_t pid = spawn(argv, log);
    double end = gw_now_us() + 10e6;
    int st;

    if (pid < 0) {
        snprintf(why, why_len, "fork failed");
        return -1;
    }
    p->relay[p->n_relay++] = pid;
    while (!listening(port)) {
        if (gw_now_us() > end || waitpid(pid, &st, WNOHANG) == pid) {
            snprintf(why, why_len, "%s did not start (its output: %s)", argv[0], log);
            return -1;
        }
        poll(NULL, 0, 20);
    }
    snprintf(p->proc[p->n_proc].name, sizeof p->proc[0].name, "%s", name);
    p->proc[p->n_proc].pid = pid;
    p->proc[p->n_proc++].syscalls = -1;
    return 0;
}

static int installed(const char *cmd)
{
    char sh[128];

    snprintf(sh, sizeof sh, "command -v %s >/dev/null 2>&1", cmd);
    return system(sh) == 0;
}

static int write_file(const char *path, const char *text, char *why, size_t why_len)
{
    FILE *f = fopen(path, "w");

    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        snprintf(why, why_len, "cannot write %s", path);
        return -1;
    }
    return 0;
}

static int haproxy_side(struct gw_path *p, const char *name, int port, int up, char *why,
                        size_t why_len)
{
    char conf[1024], path[128], log[160];
    const char *argv[] = {"haproxy", "-db", "-f", path, NULL};

    /* One thread, TCP mode, timeouts long enough never to end a run. */
    snprintf(conf, sizeof conf,
             "global\n    nbthread 1\n    maxconn 100\n"
             "defaults\n    mode tcp\n    timeout connect 5s\n    timeout client 1h\n"
             "    timeout server 1h\n"
             "listen relay\n    bind 127.0.0.1:%d\n    server up 127.0.0.1:%d\n",
             port, up);
    snprintf(path, sizeof path, "%s", gw_file(name));
    snprintf(log, sizeof log, "%s.log", path);
    if (write_file(path, conf, why, why_len) != 0)
        return -1;
    return start_side(p, name, argv, port, log, why, why_len);
}

int gw_haproxy_pair(struct gw_path *p, int plc_port, char *addr, size_t len, char *why,
                    size_t why_len)
{
    int client = free_port(), server = free_port();

    if (!installed("haproxy")) {
        snprintf(why, why_len, "haproxy is not installed (apt-get install haproxy)");
        return -1;
    }
    if (client == 0 || server == 0 || client == server) {
        snprintf(why, why_len, "no free ports");
        return -1;
    }
    if (haproxy_side(p, "haproxy-server", server, plc_port, why, why_len) != 0 ||
        haproxy_side(p, "haproxy-client", client, server, why, why_len) != 0)
        return -1;
    /* Client side first in the tables, as on the path. */
    {
        struct gw_proc t = p->proc[0];

        p->proc[0] = p->proc[1];
        p->proc[1] = t;
    }
    snprintf(addr, len, "127.0.0.1:%d", client);
    return 0;
}

static int stunnel_side(struct gw_path *p, const char *name, const char *certs, const char *suite,
                        int port, int up, char *why, size_t why_len)
{
    char conf[1536], path[128], log[160];
    const char *argv[] = {"stunnel4", path, NULL};
    int client = strstr(name, "client") != NULL;

    /* Both ends as the gateway's: certificates checked both ways, TLS 1.3 only, one suite. */
    snprintf(path, sizeof path, "%s", gw_file(name));
    snprintf(log, sizeof log, "%s.log", path);
    snprintf(conf, sizeof conf,
             "foreground = yes\npid =\n[%s]\nclient = %s\naccept = 127.0.0.1:%d\n"
             "connect = 127.0.0.1:%d\ncert = %s/%s.pem\nkey = %s/%s.key\nCAfile = %s/ca.pem\n"
             "verifyChain = yes\n%ssslVersionMin = TLSv1.3\nciphersuites = %s\n",
             name, client ? "yes" : "no", port, up, certs, client ? "operator" : "gateway", certs,
             client ? "operator" : "gateway", certs, client ? "checkHost = localhost\n" : "",
             suite);
    if (write_file(path, conf, why, why_len) != 0)
        return -1;
    return start_side(p, name, argv, port, log, why, why_len);
}

int gw_stunnel_pair(struct gw_path *p, const char *certs, const char *suite, int plc_port,
                    char *addr, size_t len, char *why, size_t why_len)
{
    int client = free_port(), server = free_port();
    char cname[48], sname[48];

    if (!installed("stunnel4")) {
        snprintf(why, why_len, "stunnel is not installed (apt-get install stunnel4)");
        return -1;
    }
    if (client == 0 || server == 0 || client == server) {
        snprintf(why, why_len, "no free ports");
        return -1;
    }
    snprintf(cname, sizeof cname, "stunnel-client");
    snprintf(sname, sizeof sname, "stunnel-server");
    /* The file names carry the suite: two pairs run at once. */
    if (strstr(suite, "AES") != NULL) {
        snprintf(cname, sizeof cname, "stunnel-client-aes");
        snprintf(sname, sizeof sname, "stunnel-server-aes");
    }
    if (stunnel_side(p, sname, certs, suite, server, plc_port, why, why_len) != 0 ||
        stunnel_side(p, cname, certs, suite, client, server, why, why_len) != 0)
        return -1;
    {
        struct gw_proc t = p->proc[0];

        p->proc[0] = p->proc[1];
        p->proc[1] = t;
    }
    snprintf(p->proc[0].name, sizeof p->proc[0].name, "stunnel-client");
    snprintf(p->proc[1].name, sizeof p->proc[1].name, "stunnel-server");
    snprintf(addr, len, "127.0.0.1:%d", client);
    return 0;
}

void gw_relays_stop(struct gw_path *p)
{
    int st;

    for (int i = 0; i < p->n_relay; i++) {
        kill(p->relay[i], SIGTERM);
        waitpid(p->relay[i], &st, 0);
    }
    p->n_relay = 0;
}
