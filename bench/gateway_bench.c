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
 * With --compare PATH (another build's mbsc-gateway, e.g. the one before a
 * change), both gateways are measured in the same run: the round trips in
 * interleaved rounds (each round times every path in turn), the requests
 * per second in alternating runs, so that what the machine does meanwhile
 * falls on both alike.
 *
 * Timings on a shared machine are noisy: compare rows of one run, not runs.
 *
 *   bench/mbsc-gateway-bench [--count N] [--seconds S] [--masters M] [--compare PATH]
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

#define ROUNDS 10 /* round trips are timed in this many interleaved rounds */

/* One path's round trips, gathered over the rounds. */
struct path {
    char name[80];
    modbus_t *ctx;
    double *t;
    int n;
    double median, p99;
};

static void path_open(struct path *p, const char *name, modbus_t *ctx, int count)
{
    uint16_t v[10];
    int i;

    snprintf(p->name, sizeof p->name, "%s", name);
    p->ctx = ctx;
    p->t = calloc((size_t)count, sizeof *p->t);
    p->n = 0;
    if (p->t == NULL)
        die("out of memory");
    for (i = 0; i < 100; i++) /* untimed: connections, caches, the PLC's first answers */
        if (modbus_read_registers(ctx, 0, 10, v) != 10) {
            fprintf(stderr, "mbsc-gateway-bench: %s: ", name);
            die(modbus_strerror(errno));
        }
}

/* n more timed reads of 10 holding registers. */
static void path_round(struct path *p, int n)
{
    uint16_t v[10];
    int i;

    for (i = 0; i < n; i++) {
        double t0 = now_us();

        if (modbus_read_registers(p->ctx, 0, 10, v) != 10) {
            fprintf(stderr, "mbsc-gateway-bench: %s: ", p->name);
            die(modbus_strerror(errno));
        }
        p->t[p->n++] = now_us() - t0;
    }
}

static void path_done(struct path *p)
{
    qsort(p->t, (size_t)p->n, sizeof *p->t, cmp_double);
    p->median = p->t[p->n / 2];
    p->p99 = p->t[(size_t)((double)p->n * 0.99)];
    free(p->t);
    p->t = NULL;
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

static void start_server(struct gwp *g, const char *program, int plc_port, const char *in_flight)
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
    gw_program = program;
    if (!gw_spawn(g, args))
        die("the server gateway did not start (run from the build directory)");
}

static void start_client(struct gwp *g, const char *program, const char *server)
{
    const char *args[] = {"client",
                          "--listen",
                          "127.0.0.1:0",
                          "--upstream",
                          server,
                          "--key",
                          path_of("client.key"),
                          "--peer",
                          path_of("gw.pub"),
                          NULL};

    gw_program = program;
    if (!gw_spawn(g, args))
        die("the client gateway did not start");
}

/* Runs per program in the requests/s rows: the median of five resists one noisy run. */
#define THROUGHPUT_RUNS 5

/* Requests per second with in_flight: the median over runs alternating between the programs. */
static void throughput_rows(const char *const *programs, int n_prog, int plc_port, int m,
                            int seconds, const char *in_flight)
{
    double rps[2][THROUGHPUT_RUNS], med[2] = {0, 0};
    int run, k, failures[2] = {0, 0};

    for (run = 0; run < THROUGHPUT_RUNS; run++)
        for (k = 0; k < n_prog; k++) {
            struct gwp srv;
            int f = 0;

            start_server(&srv, programs[k], plc_port, in_flight);
            rps[k][run] = throughput(srv.addr, m, seconds, &f);
            failures[k] += f;
            (void)gw_finish(&srv, SIGTERM);
        }
    for (k = 0; k < n_prog; k++) {
        qsort(rps[k], THROUGHPUT_RUNS, sizeof rps[k][0], cmp_double);
        med[k] = rps[k][THROUGHPUT_RUNS / 2];
        printf(
            "  --max-in-flight %s, %-10s %10.0f requests/s (median; range %.0f-%.0f; %d failed)\n",
            in_flight, k == 0 ? "this build" : "compared", med[k], rps[k][0],
            rps[k][THROUGHPUT_RUNS - 1], failures[k]);
    }
    if (n_prog == 2)
        printf("  --max-in-flight %s: this build / compared %.2f\n", in_flight, med[0] / med[1]);
}

int main(int argc, char **argv)
{
    int count = 2000, seconds = 2, m = 50, i, k, r, n_prog = 1, n_paths = 0;
    const char *programs[2] = {"tools/mbsc-gateway", NULL};
    struct plc plc[3]; /* the harness's PLC serves one connection: one for each path's server */
    struct gwp srv[2], cli[2];
    struct path paths[5];
    char why[MBSC_WHY_SIZE], plc_addr[32];

    for (i = 1; i < argc; i += 2) {
        if (i + 1 == argc)
            die("usage: mbsc-gateway-bench [--count N>=100] [--seconds S>=1] [--masters 1-256] "
                "[--compare PATH]");
        else if (strcmp(argv[i], "--count") == 0)
            count = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0)
            seconds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--masters") == 0)
            m = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--compare") == 0 && n_prog == 1)
            programs[n_prog++] = argv[i + 1];
        else
            die("usage: mbsc-gateway-bench [--count N>=100] [--seconds S>=1] [--masters 1-256] "
                "[--compare PATH]");
    }
    if (count < 100 || seconds < 1 || m < 1 || m > MAX_MASTERS ||
        (n_prog == 2 && programs[1][0] != '/'))
        die("usage: mbsc-gateway-bench [--count N>=100] [--seconds S>=1] [--masters 1-256] "
            "[--compare /ABSOLUTE/PATH/mbsc-gateway]");
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
    memset(plc, 0, sizeof plc);
    for (k = 0; k < 3; k++)
        if (plc_start(&plc[k], 0) != 0)
            die("PLC");
    snprintf(plc_addr, sizeof plc_addr, "127.0.0.1:%d", plc[0].port);

    path_open(&paths[n_paths++], "direct (plain Modbus/TCP)", plain(plc_addr), count);
    for (k = 0; k < n_prog; k++) {
        char name[80];

        start_server(&srv[k], programs[k], plc[1 + k].port, "1");
        start_client(&cli[k], programs[k], srv[k].addr);
        snprintf(name, sizeof name, "one gateway%s (mbsc master -> server gw)",
                 k == 0 ? "" : ", compared");
        path_open(&paths[n_paths++], name, secure(srv[k].addr, &masters_kp[0]), count);
        snprintf(name, sizeof name, "two gateways%s (plain -> client gw -> server gw)",
                 k == 0 ? "" : ", compared");
        path_open(&paths[n_paths++], name, plain(cli[k].addr), count);
    }
    /* Every round times every path in turn: a busy moment falls on all of them. */
    for (r = 0; r < ROUNDS; r++)
        for (i = 0; i < n_paths; i++)
            path_round(&paths[i], count / ROUNDS);
    for (i = 0; i < n_paths; i++)
        path_done(&paths[i]);
    for (k = 0; k < n_prog; k++) {
        (void)gw_finish(&cli[k], SIGTERM);
        (void)gw_finish(&srv[k], SIGTERM);
    }
    for (i = 0; i < n_paths; i++) {
        /* The direct path and the client gateways' are plain libmodbus contexts. */
        if (i == 0 || i % 2 == 0) {
            modbus_close(paths[i].ctx);
            modbus_free(paths[i].ctx);
        } else {
            mbsc_modbus_close(paths[i].ctx);
        }
    }

    printf("Round trip of one read of 10 holding registers, %d requests per path in %d "
           "interleaved rounds, loopback%s%s:\n",
           ROUNDS * (count / ROUNDS), ROUNDS, n_prog == 2 ? "; compared: " : "",
           n_prog == 2 ? programs[1] : "");
    printf("  %-58s %10s %10s %12s\n", "path", "median us", "p99 us", "added (med)");
    for (i = 0; i < n_paths; i++)
        printf("  %-58s %10.1f %10.1f %12.1f\n", paths[i].name, paths[i].median, paths[i].p99,
               paths[i].median - paths[0].median);
    if (n_prog == 2)
        printf("  added, this build / compared: one gateway %.2f, two gateways %.2f\n",
               (paths[1].median - paths[0].median) / (paths[3].median - paths[0].median),
               (paths[2].median - paths[0].median) / (paths[4].median - paths[0].median));

    printf("\n%d masters through one server gateway, %d s per run, the median of %d runs%s:\n", m,
           seconds, THROUGHPUT_RUNS, n_prog == 2 ? " of each, alternating" : "");
    throughput_rows(programs, n_prog, plc[1].port, m, seconds, "1");
    throughput_rows(programs, n_prog, plc[1].port, m, seconds, "8");

    for (k = 0; k < 3; k++)
        plc_free(&plc[k]);
    unlink(path_of("gw.key"));
    unlink(path_of("gw.pub"));
    unlink(path_of("client.key"));
    unlink(path_of("allow.txt"));
    rmdir(dir);
    return 0;
}
