/* SPDX-License-Identifier: ISC */
/*
 * gw_common.c - what every part of mbsc-gateway-bench uses (gw_bench.h):
 * the key files, the clock, child processes, one request and the timed
 * rounds, and connecting and starting gateways.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gw_bench.h"
#include "mbsc/modbus.h"

char gw_dir[64];
mbsc_keypair gw_server_kp, gw_masters_kp[GW_MAX_MASTERS];

const char *gw_file(const char *name)
{
    static char paths[8][128];
    static int next;
    char *p = paths[next++ % 8];

    snprintf(p, 128, "%s/%s", gw_dir, name);
    return p;
}

void gw_add_proc(struct gw_path *p, const char *name, pid_t pid)
{
    p->proc[p->n_proc] = (struct gw_proc){.pid = pid};
    snprintf(p->proc[p->n_proc++].name, sizeof p->proc[0].name, "%.*s", (int)strcspn(name, "."),
             name);
}

double gw_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

pid_t gw_exec(const char *const *argv, const char *log)
{
    pid_t pid = fork();

    if (pid == 0) {
        int fd = log != NULL ? open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600) : -1, n = 0;
        char *v[12];

        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        /* exec wants writable strings: copies, in the child only. */
        while (argv[n] != NULL && n < 11) {
            v[n] = strdup(argv[n]);
            n++;
        }
        v[n] = NULL;
        execvp(v[0], v);
        _exit(127);
    }
    return pid;
}

int gw_wait_for(int (*ready)(const void *), const void *arg, pid_t pid)
{
    double end = gw_now_us() + 10e6;
    int st;

    while (!ready(arg)) {
        if (gw_now_us() > end || (pid > 0 && waitpid(pid, &st, WNOHANG) == pid))
            return 0;
        poll(NULL, 0, 10);
    }
    return 1;
}

void gw_read10(struct gw_path *p)
{
    uint16_t v[10];

    if (p->tls != NULL) {
#ifdef MBSC_BENCH_TLS
        char why[256];

        if (gw_tls_read10(p->tls, why, sizeof why) != 0)
            bench_fail("%s: %s", p->name, why);
#endif
        return;
    }
    if (modbus_read_registers(p->ctx, 0, 10, v) != 10)
        bench_fail("%s: %s", p->name, modbus_strerror(errno));
}

void gw_rtt_csv(struct gw_path *p, FILE *csv)
{
    bench_csv_p50_p99(csv, p->name, "rtt_us", 0, &p->t, "us");
}

modbus_t *gw_plain(const char *hostport)
{
    char host[64], port[8];
    modbus_t *ctx;

    if (mbsc_parse_hostport(hostport, host, sizeof host, port, sizeof port) != MBSC_OK)
        bench_fail("bad address %s", hostport);
    ctx = modbus_new_tcp(host, atoi(port));
    if (ctx == NULL || modbus_connect(ctx) != 0)
        bench_fail("plain connect to %s failed", hostport);
    modbus_set_response_timeout(ctx, 5, 0);
    return ctx;
}

modbus_t *gw_secure(const char *hostport, const mbsc_keypair *kp, const char *cipher)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    char why[256];
    int err = 0;
    modbus_t *ctx;

    if (cfg == NULL || mbsc_config_set_keypair(cfg, kp) != MBSC_OK ||
        mbsc_config_set_peer_public_key(cfg, gw_server_kp.public_key) != MBSC_OK ||
        (cipher != NULL && mbsc_config_set_ciphers(cfg, cipher) != MBSC_OK))
        bench_fail("master config");
    ctx = mbsc_modbus_connect(hostport, cfg, 10000, &err, why, sizeof why);
    mbsc_config_free(cfg);
    if (ctx == NULL)
        bench_fail("%s", why);
    modbus_set_response_timeout(ctx, 5, 0);
    return ctx;
}

void gw_start_server(struct gwp *g, const char *program, int plc_port, const char *const *extra)
{
    char up[32];
    const char *args[32] = {
        "server",          "--listen",     "127.0.0.1:0",        "--upstream",  up,       "--key",
        gw_file("gw.key"), "--authorized", gw_file("allow.txt"), "--log-level", "warning"};
    int n = 11;

    /* Warnings only: a gateway that logs each of 1000 masters would fill
     * the pipe the harness reads its log from, and stall. */
    snprintf(up, sizeof up, "127.0.0.1:%d", plc_port);
    while (extra != NULL && *extra != NULL && n < 31)
        args[n++] = *extra++;
    gw_program = program;
    if (!gw_spawn(g, args))
        bench_fail("the server gateway %s did not start (run from the build directory)", program);
}
