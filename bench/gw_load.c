/* SPDX-License-Identifier: ISC */
/*
 * gw_load.c - requests per second through one server gateway with 1, 50
 * and 1000 mbsc masters polling at once, each one request at a time
 * (gw_bench.h), and with 50 masters and --max-in-flight 8.
 *
 * One thread per master, connected one after the other (the server admits
 * a few handshakes per source address at once); the clock starts when all
 * are.  Each figure is the median of a few runs; with --compare the runs
 * alternate between the two programs, so that what the machine does
 * meanwhile falls on both alike.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "gw_bench.h"
#include "mbsc/modbus.h"

#define RUNS  3
#define STACK (128 * 1024) /* a poller needs little; 1000 default stacks would be 8 GB */

struct poller {
    pthread_t th;
    modbus_t *ctx;
    unsigned long done, failed;
};

static pthread_barrier_t start; /* the clock starts when every master is connected */
static double until_us;         /* set before start opens */

static void *poll_main(void *arg)
{
    struct poller *p = arg;
    uint16_t v[10];

    pthread_barrier_wait(&start);
    while (gw_now_us() < until_us)
        *(modbus_read_registers(p->ctx, 0, 10, v) == 10 ? &p->done : &p->failed) += 1;
    return NULL;
}

/* Requests per second of m masters through the gateway at addr. */
static double one_run(const char *addr, int m, int seconds, unsigned long *failed)
{
    struct poller *p = calloc((size_t)m, sizeof *p);
    pthread_attr_t attr;
    unsigned long total = 0;
    double t0;

    if (p == NULL)
        bench_fail("out of memory");
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK);
    pthread_barrier_init(&start, NULL, (unsigned)m + 1);
    for (int i = 0; i < m; i++) {
        p[i].ctx = gw_secure(addr, &gw_masters_kp[i], NULL);
        if (pthread_create(&p[i].th, &attr, poll_main, &p[i]) != 0)
            bench_fail("pthread_create (master %d)", i);
    }
    t0 = gw_now_us();
    until_us = t0 + seconds * 1e6;
    pthread_barrier_wait(&start);
    for (int i = 0; i < m; i++) {
        pthread_join(p[i].th, NULL);
        total += p[i].done;
        *failed += p[i].failed;
        mbsc_modbus_close(p[i].ctx);
    }
    pthread_barrier_destroy(&start);
    pthread_attr_destroy(&attr);
    free(p);
    return (double)total / ((gw_now_us() - t0) / 1e6);
}

void gw_load_rows(const char *const *programs, int n_prog, int seconds, FILE *csv)
{
    static const struct {
        int masters;
        const char *in_flight, *metric;
    } rows[] = {{1, "1", "rps_masters_1"},
                {50, "1", "rps_masters_50"},
                {1000, "1", "rps_masters_1000"},
                {50, "8", "rps_masters_50_inflight_8"}};
    struct plc plc;

    memset(&plc, 0, sizeof plc);
    if (plc_start(&plc, 0) != 0)
        bench_fail("PLC");
    bench_csv_num(csv, "gw1-load", "seconds_per_run", 0, seconds, "s");
    bench_csv_num(csv, "gw1-load", "runs", 0, RUNS, "runs");
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const char *extra[] = {"--max-in-flight", rows[r].in_flight, "--max-connections", "1100",
                               NULL};
        struct bench_samples rps[2] = {{0}};
        unsigned long failed[2] = {0, 0};
        char metric[48];

        fprintf(stderr, "%s: requests/s, %d masters, --max-in-flight %s ...\n", bench_prog,
                rows[r].masters, rows[r].in_flight);
        for (int run = 0; run < RUNS; run++)
            for (int k = 0; k < n_prog; k++) {
                struct gwp srv;

                gw_start_server(&srv, programs[k], plc.port, extra);
                bench_samples_add(&rps[k], one_run(srv.addr, rows[r].masters, seconds, &failed[k]));
                (void)gw_finish(&srv, SIGTERM);
            }
        for (int k = 0; k < n_prog; k++) {
            const char *subject = k == 0 ? "gw1-load" : "gw1-load-compared";

            bench_csv_num(csv, subject, rows[r].metric, 0, bench_median(&rps[k]), "requests/s");
            bench_samples_free(&rps[k]);
            snprintf(metric, sizeof metric, "%s_failed", rows[r].metric);
            bench_csv_num(csv, subject, metric, 0, (double)failed[k], "requests");
        }
    }
    plc_free(&plc);
}
