/* SPDX-License-Identifier: ISC */
/*
 * gateway_bench.c - what mbsc-gateway costs on this machine (make bench-gateway).
 *
 * On loopback, against a plain libmodbus server (the tests' PLC thread,
 * tests/gw_harness.c), one request at a time (read 10 holding registers):
 *
 *   direct        a plain libmodbus client straight to the PLC;
 *   one gateway   an mbsc master (mbsc_modbus_connect) -> server gateway -> PLC;
 *   two gateways  a plain libmodbus client -> client gateway -> server gateway -> PLC;
 *
 * each with the median and the 99th percentile of the round trip, and what
 * the gateways add to the direct median.  Then requests per second through
 * one server gateway with 50 masters polling at once (each one request at a
 * time), with --max-in-flight 1 (the default) and 8.
 *
 * Timings on a shared machine are noisy: compare rows of one run, not runs.
 *
 *   bench/mbsc-gateway-bench [--count N] [--seconds S] [--masters M]
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "mbsc.h"
#include "mbsc/modbus.h"
#include "gw_harness.h"

#define MAX_MASTERS 256

static char dir[64];
static mbsc_keypair gw_kp, client_kp, masters_kp[MAX_MASTERS];

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static const char *path_of(const char *name)
{
    static char paths[8][128];
    static int next;
    char *p = paths[next++ % 8];

    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

static int die(const char *what)
{
    fprintf(stderr, "mbsc-gateway-bench: %s\n", what);
    exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

struct row {
    const char *name;
    double median, p99;
};

/* count timed reads after 100 untimed ones. */
static struct row measure(const char *name, modbus_t *ctx, int count)
{
    double *t = calloc((size_t)count, sizeof *t);
    struct row r = {name, 0, 0};
    uint16_t v[10];
    int i;

    if (t == NULL)
        die("out of memory");
    for (i = 0; i < 100; i++)
        if (modbus_read_registers(ctx, 0, 10, v) != 10)
            die(modbus_strerror(errno));
    for (i = 0; i < count; i++) {
        double t0 = now_us();

        if (modbus_read_registers(ctx, 0, 10, v) != 10)
            die(modbus_strerror(errno));
        t[i] = now_us() - t0;
    }
    qsort(t, (size_t)count, sizeof *t, cmp_double);
    r.median = t[count / 2];
    r.p99 = t[(size_t)((double)count * 0.99)];
    free(t);
    return r;
}

static modbus_t *plain(const char *hostport)
{
    char host[64], port[8];
    modbus_t *ctx;

    if (mbsc_parse_hostport(hostport, host, sizeof host, port, sizeof port) != MBSC_OK)
        die("bad address");
    ctx = modbus_new_tcp(host, atoi(port));
    if (ctx == NULL || modbus_connect(ctx) != 0)
        die("plain connect failed");
    modbus_set_response_timeout(ctx, 5, 0);
    return ctx;
}

static modbus_t *secure(const char *hostport, const mbsc_keypair *kp)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    char why[256];
    int err = 0;
    modbus_t *ctx;

    if (cfg == NULL || mbsc_config_set_keypair(cfg, kp) != MBSC_OK ||
        mbsc_config_set_peer_public_key(cfg, gw_kp.public_key) != MBSC_OK)
        die("master config");
    ctx = mbsc_modbus_connect(hostport, cfg, 10000, &err, why, sizeof why);
    mbsc_config_free(cfg);
    if (ctx == NULL)
        die(why);
    modbus_set_response_timeout(ctx, 5, 0);
    return ctx;
}

struct poller {
    modbus_t *ctx;
    double until_us;
    unsigned long done;
    int failed;
    pthread_barrier_t *start;
};

static void *poll_main(void *arg)
{
    struct poller *p = arg;
    modbus_t *ctx = p->ctx;
    uint16_t v[10];

    pthread_barrier_wait(p->start); /* until_us is set */
    while (now_us() < p->until_us) {
        if (modbus_read_registers(ctx, 0, 10, v) == 10)
            p->done++;
        else
            p->failed++;
    }
    return NULL;
}

/* Requests per second of m masters polling through the gateway at addr. */
static double throughput(const char *addr, int m, int seconds, int *failures)
{
    struct poller *p = calloc((size_t)m, sizeof *p);
    pthread_t *th = calloc((size_t)m, sizeof *th);
    pthread_barrier_t start;
    unsigned long total = 0;
    double t0;
    int i;

    if (p == NULL || th == NULL)
        die("out of memory");
    /*
     * Connected one after the other (the server admits 4 handshakes per
     * source address at once); the clock starts when all are.
     */
    pthread_barrier_init(&start, NULL, (unsigned)m + 1);
    for (i = 0; i < m; i++) {
        p[i].ctx = secure(addr, &masters_kp[i]);
        p[i].start = &start;
        if (pthread_create(&th[i], NULL, poll_main, &p[i]) != 0)
            die("pthread_create");
    }
    t0 = now_us();
    for (i = 0; i < m; i++)
        p[i].until_us = t0 + seconds * 1e6;
    pthread_barrier_wait(&start);
    *failures = 0;
    for (i = 0; i < m; i++) {
        pthread_join(th[i], NULL);
        total += p[i].done;
        *failures += p[i].failed;
        mbsc_modbus_close(p[i].ctx);
    }
    pthread_barrier_destroy(&start);
    free(p);
    free(th);
    return (double)total / ((now_us() - t0) / 1e6);
}

static void write_allowlist(int m)
{
    FILE *f = fopen(path_of("allow.txt"), "w");
    char b64[MBSC_KEY_BASE64_SIZE];
    int i;

    if (f == NULL)
        die("allow-list");
    for (i = 0; i < m; i++) {
        (void)mbsc_key_to_base64(b64, masters_kp[i].public_key);
        fprintf(f, "%s master-%d\n", b64, i);
    }
    (void)mbsc_key_to_base64(b64, client_kp.public_key);
    fprintf(f, "%s client-gateway\n", b64);
    if (fclose(f) != 0 || chmod(path_of("allow.txt"), 0644) != 0)
        die("allow-list");
}

static void start_server(struct gwp *g, int plc_port, const char *in_flight)
{
    char up[32];
    const char *args[] = {"server",
                          "--listen",
                          "127.0.0.1:0",
                          "--upstream",
                          up,
                          "--key",
                          path_of("gw.key"),
                          "--authorized",
                          path_of("allow.txt"),
                          "--max-in-flight",
                          in_flight,
                          NULL};

    snprintf(up, sizeof up, "127.0.0.1:%d", plc_port);
    if (!gw_spawn(g, args))
        die("the server gateway did not start (run from the build directory)");
}

int main(int argc, char **argv)
{
    int count = 2000, seconds = 3, m = 50, i, failures;
    struct plc plc;
    struct gwp srv, cli;
    struct row rows[3];
    modbus_t *ctx;
    char why[MBSC_WHY_SIZE];
    double rps1, rps8;

    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--count") == 0)
            count = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0)
            seconds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--masters") == 0)
            m = atoi(argv[i + 1]);
    }
    if (count < 100 || seconds < 1 || m < 1 || m > MAX_MASTERS)
        die("usage: mbsc-gateway-bench [--count N>=100] [--seconds S>=1] [--masters 1-256]");
    if (sodium_init() < 0)
        die("sodium_init");
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof dir, "/tmp/mbsc-gwbench-XXXXXX");
    if (mkdtemp(dir) == NULL || mbsc_keypair_generate(&gw_kp) != MBSC_OK ||
        mbsc_keypair_generate(&client_kp) != MBSC_OK ||
        mbsc_private_key_save(path_of("gw.key"), gw_kp.private_key, 0, why, sizeof why) !=
            MBSC_OK ||
        mbsc_private_key_save(path_of("client.key"), client_kp.private_key, 0, why, sizeof why) !=
            MBSC_OK ||
        mbsc_public_key_save(path_of("gw.pub"), gw_kp.public_key, 0, why, sizeof why) != MBSC_OK)
        die("keys");
    for (i = 0; i < m; i++)
        if (mbsc_keypair_generate(&masters_kp[i]) != MBSC_OK)
            die("keys");
    write_allowlist(m);
    memset(&plc, 0, sizeof plc);
    if (plc_start(&plc, 0) != 0)
        die("PLC");

    {
        char addr[32];

        snprintf(addr, sizeof addr, "127.0.0.1:%d", plc.port);
        ctx = plain(addr);
        rows[0] = measure("direct (plain Modbus/TCP)", ctx, count);
        modbus_close(ctx);
        modbus_free(ctx);
    }
    start_server(&srv, plc.port, "1");
    {
        const char *args[] = {"client",          "--listen", "127.0.0.1:0",         "--upstream",
                              srv.addr,          "--key",    path_of("client.key"), "--peer",
                              path_of("gw.pub"), NULL};

        if (!gw_spawn(&cli, args))
            die("the client gateway did not start");
    }
    ctx = secure(srv.addr, &masters_kp[0]);
    rows[1] = measure("one gateway (mbsc master -> server gw)", ctx, count);
    mbsc_modbus_close(ctx);
    ctx = plain(cli.addr);
    rows[2] = measure("two gateways (plain -> client gw -> server gw)", ctx, count);
    modbus_close(ctx);
    modbus_free(ctx);
    (void)gw_finish(&cli, SIGTERM);

    printf("Round trip of one read of 10 holding registers, %d requests, loopback:\n", count);
    printf("  %-48s %10s %10s %12s\n", "path", "median us", "p99 us", "added (med)");
    for (i = 0; i < 3; i++)
        printf("  %-48s %10.1f %10.1f %12.1f\n", rows[i].name, rows[i].median, rows[i].p99,
               rows[i].median - rows[0].median);

    rps1 = throughput(srv.addr, m, seconds, &failures);
    printf("\n%d masters through one server gateway, %d s each:\n", m, seconds);
    printf("  --max-in-flight 1: %10.0f requests/s (%d failed)\n", rps1, failures);
    (void)gw_finish(&srv, SIGTERM);
    start_server(&srv, plc.port, "8");
    rps8 = throughput(srv.addr, m, seconds, &failures);
    printf("  --max-in-flight 8: %10.0f requests/s (%d failed)\n", rps8, failures);
    (void)gw_finish(&srv, SIGTERM);

    plc_free(&plc);
    unlink(path_of("gw.key"));
    unlink(path_of("gw.pub"));
    unlink(path_of("client.key"));
    unlink(path_of("allow.txt"));
    rmdir(dir);
    return 0;
}
