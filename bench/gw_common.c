/* SPDX-License-Identifier: ISC */
/*
 * gw_common.c - what every part of mbsc-gateway-bench uses (gw_bench.h):
 * the key files, giving up, the clock and quantiles, one request, and
 * connecting and starting gateways.  Below gw_main.c and the measuring
 * files, so that none of them calls back into another.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gw_bench.h"
#include "mbsc/modbus.h"
#ifdef MBSC_BENCH_TLS
#include "gateway_tls.h"
#endif

char gw_dir[64];
mbsc_keypair gw_server_kp, gw_client_kp, gw_masters_kp[GW_MAX_MASTERS];

void gw_die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, GW_PROG ": ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

const char *gw_file(const char *name)
{
    static char paths[8][128];
    static int next;
    char *p = paths[next++ % 8];

    snprintf(p, 128, "%s/%s", gw_dir, name);
    return p;
}

double gw_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

void gw_sort(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
}

double gw_quantile(const double *sorted, size_t n, double q)
{
    size_t rank = (size_t)(q * (double)n + 0.999999);

    return n == 0 ? 0 : sorted[rank == 0 ? 0 : (rank > n ? n : rank) - 1];
}

void gw_read10(struct gw_path *p)
{
    uint16_t v[10];

#ifdef MBSC_BENCH_TLS
    char why[256];

    if (p->tls != NULL) {
        if (bench_tls_read10(p->tls, why, sizeof why) != 0)
            gw_die("%s: %s", p->name, why);
        return;
    }
#endif
    if (modbus_read_registers(p->ctx, 0, 10, v) != 10)
        gw_die("%s: %s", p->name, modbus_strerror(errno));
}

modbus_t *gw_plain(const char *hostport)
{
    char host[64], port[8];
    modbus_t *ctx;

    if (mbsc_parse_hostport(hostport, host, sizeof host, port, sizeof port) != MBSC_OK)
        gw_die("bad address %s", hostport);
    ctx = modbus_new_tcp(host, atoi(port));
    if (ctx == NULL || modbus_connect(ctx) != 0)
        gw_die("plain connect to %s failed", hostport);
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
        gw_die("master config");
    ctx = mbsc_modbus_connect(hostport, cfg, 10000, &err, why, sizeof why);
    mbsc_config_free(cfg);
    if (ctx == NULL)
        gw_die("%s", why);
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
    args[n] = NULL;
    gw_program = program;
    if (!gw_spawn(g, args))
        gw_die("the server gateway %s did not start (run from the build directory)", program);
}
