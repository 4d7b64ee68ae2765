/* SPDX-License-Identifier: ISC */
/*
 * rtt.c - Modbus/TCP round trips over loopback, plain and through mbsc.
 *
 * The same request each time: read 10 holding registers, timed from the
 * client's call of modbus_read_registers() to its return, in µs.
 *
 *  - plaintext: a modbus_new_tcp() server in a thread (modbus_receive +
 *    modbus_reply) and a modbus_new_tcp() client; the baseline.
 *  - each cipher: one mbsc_modbus_server (its poll loop in a thread,
 *    allowing all four ciphers) and one mbsc_modbus_connect() client per
 *    cipher, offering only that cipher, on the path mbsc_modbus_connect()
 *    picks (the synchronous transport when libmodbus's layout is
 *    verified: no thread, no socketpair on the client); on the slave,
 *    modbus_reply() writes its reply into a socketpair that the server
 *    reads it back from: the figure is what an unchanged libmodbus
 *    application sees.
 *  - each cipher again as "<cipher>-pump": the same client forced onto the
 *    pump (MBSC_MODBUS_PUMP=1), where a request also crosses the client's
 *    socketpair and pump thread on the way out and back.
 *
 * Beside each round trip: the slave's CPU time per request, from the CPU
 * clock of the thread that serves it (pthread_getcpuclockid), read before
 * and after each transport's turn in a round.
 *
 * All connections stay open for the whole group and the transports take
 * turns round by round.  The threads must run at the same time, so this
 * group lifts the pin on the measuring thread (the threads it creates
 * inherit its CPU set) and restores it afterwards.  Loopback hides the
 * network: on a LAN add the wire time, the same for every row.
 */
#include <errno.h>
#include <modbus.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mbsc/modbus.h"

#include "bench.h"
#include "clock.h"
#include "pin.h"
#include "stats.h"

#define RTT_REGISTERS      10
#define RTT_TIMEOUT_MS     5000
#define RTT_MAX_TRANSPORTS (1 + 2 * MBSC_CIPHER_COUNT)

const char *bench_rtt_libmodbus_version(void)
{
    return LIBMODBUS_VERSION_STRING;
}

/* ---- the plaintext server ------------------------------------------------ */

struct plain_server {
    modbus_t *ctx;
    modbus_mapping_t *map;
    int listen_fd;
    pthread_t thread;
    int running;
};

/* Serve one client until it closes the connection. */
static void *plain_serve(void *arg)
{
    struct plain_server *ps = arg;
    uint8_t query[MODBUS_TCP_MAX_ADU_LENGTH];

    if (modbus_tcp_accept(ps->ctx, &ps->listen_fd) < 0)
        return NULL;
    for (;;) {
        int rc = modbus_receive(ps->ctx, query);
        if (rc > 0)
            (void)modbus_reply(ps->ctx, query, rc, ps->map);
        else if (rc < 0)
            break; /* the client closed: done */
    }
    return NULL;
}

/* Listen on 127.0.0.1 with a free port; returns the port or -1 with why. */
static int plain_start(struct plain_server *ps, char *why, size_t why_len)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    memset(ps, 0, sizeof *ps);
    ps->listen_fd = -1;
    ps->map = modbus_mapping_new(0, 0, 100, 0);
    ps->ctx = modbus_new_tcp("127.0.0.1", 0); /* port 0: the kernel picks one */
    if (ps->map == NULL || ps->ctx == NULL) {
        snprintf(why, why_len, "plain server: out of memory");
        return -1;
    }
    ps->listen_fd = modbus_tcp_listen(ps->ctx, 1);
    if (ps->listen_fd < 0 ||
        getsockname(ps->listen_fd, (struct sockaddr *)(void *)&sa, &len) != 0) {
        snprintf(why, why_len, "plain server: listen: %s", modbus_strerror(errno));
        return -1;
    }
    if (pthread_create(&ps->thread, NULL, plain_serve, ps) != 0) {
        snprintf(why, why_len, "plain server: cannot start a thread");
        return -1;
    }
    ps->running = 1;
    return ntohs(sa.sin_port);
}

/* Call after the client has closed its connection. */
static void plain_stop(struct plain_server *ps)
{
    if (ps->running)
        pthread_join(ps->thread, NULL);
    if (ps->listen_fd >= 0)
        close(ps->listen_fd);
    if (ps->ctx != NULL) {
        modbus_close(ps->ctx);
        modbus_free(ps->ctx);
    }
    if (ps->map != NULL)
        modbus_mapping_free(ps->map);
    memset(ps, 0, sizeof *ps);
}

/* ---- the mbsc server ----------------------------------------------------- */

struct secure_server {
    mbsc_keypair master, slave;
    mbsc_allowlist *allow;
    mbsc_config *scfg;
    modbus_mapping_t *map;
    mbsc_modbus_server *srv;
    char address[96];
    pthread_t thread;
    int running;
};

static void *secure_serve(void *arg)
{
    struct secure_server *ss = arg;

    (void)mbsc_modbus_server_run(ss->srv);
    return NULL;
}

/* A slave that allows every cipher and the one master; MBSC_OK or why. */
static int secure_start(struct secure_server *ss, char *why, size_t why_len)
{
    int rc;

    memset(ss, 0, sizeof *ss);
    ss->allow = mbsc_allowlist_new();
    ss->scfg = mbsc_config_new(MBSC_ROLE_SLAVE);
    ss->map = modbus_mapping_new(0, 0, 100, 0);
    if (ss->allow == NULL || ss->scfg == NULL || ss->map == NULL ||
        mbsc_keypair_generate(&ss->master) != MBSC_OK ||
        mbsc_keypair_generate(&ss->slave) != MBSC_OK ||
        mbsc_allowlist_add(ss->allow, ss->master.public_key, "bench", NULL) != MBSC_OK ||
        mbsc_config_set_keypair(ss->scfg, &ss->slave) != MBSC_OK ||
        mbsc_config_set_allowlist(ss->scfg, ss->allow) != MBSC_OK) {
        snprintf(why, why_len, "secure server: set-up failed");
        return MBSC_ERR_NOMEM;
    }
    rc = mbsc_modbus_server_new(&ss->srv, "127.0.0.1:0", ss->scfg, ss->map, why, why_len);
    if (rc != MBSC_OK)
        return rc;
    /* Every client of the group (one per cipher, and per path) has the one bench key. */
    rc = mbsc_server_set_limit(mbsc_modbus_server_core(ss->srv), MBSC_SERVER_MAX_SESSIONS_PER_KEY,
                               64);
    if (rc != MBSC_OK) {
        snprintf(why, why_len, "secure server: sessions per key: %s", mbsc_strerror(rc));
        return rc;
    }
    rc = mbsc_modbus_server_address(ss->srv, ss->address, sizeof ss->address);
    if (rc != MBSC_OK) {
        snprintf(why, why_len, "secure server: no address: %s", mbsc_strerror(rc));
        return rc;
    }
    if (pthread_create(&ss->thread, NULL, secure_serve, ss) != 0) {
        snprintf(why, why_len, "secure server: cannot start a thread");
        return MBSC_ERR_NOMEM;
    }
    ss->running = 1;
    return MBSC_OK;
}

/* Call after the clients have been closed. */
static void secure_stop(struct secure_server *ss)
{
    if (ss->running) {
        mbsc_modbus_server_stop(ss->srv);
        pthread_join(ss->thread, NULL);
    }
    mbsc_modbus_server_free(ss->srv);
    mbsc_config_free(ss->scfg);
    mbsc_allowlist_free(ss->allow);
    if (ss->map != NULL)
        modbus_mapping_free(ss->map);
    mbsc_keypair_wipe(&ss->master);
    mbsc_keypair_wipe(&ss->slave);
    memset(ss, 0, sizeof *ss);
}

/* A client offering only cipher c, on the pump if pump; NULL with why on failure. */
static modbus_t *secure_connect(struct secure_server *ss, const mbsc_cipher *c, int pump, char *why,
                                size_t why_len)
{
    mbsc_config *mcfg = mbsc_config_new(MBSC_ROLE_MASTER);
    modbus_t *ctx = NULL;
    int err = MBSC_OK;

    /* Read by mbsc_modbus_connect() only; the bench is the only thread connecting. */
    if (pump && setenv(MBSC_MODBUS_PUMP_ENV, "1", 1) != 0)
        bench_fail("cannot set %s", MBSC_MODBUS_PUMP_ENV);

    if (mcfg == NULL || mbsc_config_set_keypair(mcfg, &ss->master) != MBSC_OK ||
        mbsc_config_set_peer_public_key(mcfg, ss->slave.public_key) != MBSC_OK ||
        mbsc_config_set_ciphers(mcfg, mbsc_cipher_name(c)) != MBSC_OK)
        snprintf(why, why_len, "%s: client set-up failed", mbsc_cipher_name(c));
    else
        ctx = mbsc_modbus_connect(ss->address, mcfg, RTT_TIMEOUT_MS, &err, why, why_len);
    if (pump)
        (void)unsetenv(MBSC_MODBUS_PUMP_ENV);
    /* The session copied what it needs from the config. */
    mbsc_config_free(mcfg);
    if (ctx != NULL && mbsc_modbus_cipher(ctx) != c) {
        snprintf(why, why_len, "%s: the slave chose another cipher", mbsc_cipher_name(c));
        mbsc_modbus_close(ctx);
        ctx = NULL;
    }
    if (ctx != NULL && pump && mbsc_modbus_path(ctx) != MBSC_MODBUS_PATH_PUMP) {
        snprintf(why, why_len, "%s: %s=1 did not force the pump", mbsc_cipher_name(c),
                 MBSC_MODBUS_PUMP_ENV);
        mbsc_modbus_close(ctx);
        ctx = NULL;
    }
    return ctx;
}

/* ---- measurement ------------------------------------------------------------ */

struct transport {
    char name[32];
    modbus_t *ctx;
    int secure;
    struct bench_samples rtt; /* µs */
    clockid_t slave_clock;    /* CPU clock of the thread that serves it */
    int has_slave_clock;
    double slave_cpu_ns; /* the serving thread's CPU time during its requests */
};

/* CPU time of a thread's clock in ns (0 if it cannot be read). */
static double thread_cpu_ns(clockid_t c)
{
    struct timespec ts;

    if (clock_gettime(c, &ts) != 0)
        return 0;
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One timed request; returns its round trip in µs. */
static double one_request(struct transport *t)
{
    uint16_t regs[RTT_REGISTERS];
    uint64_t t0 = bench_now_ns();
    int rc = modbus_read_registers(t->ctx, 0, RTT_REGISTERS, regs);
    uint64_t t1 = bench_now_ns();

    if (rc != RTT_REGISTERS) {
        int e = errno;
        if (t->secure && mbsc_modbus_error(t->ctx) != MBSC_OK)
            bench_fail("%s: read registers failed: %s", t->name,
                       mbsc_strerror(mbsc_modbus_error(t->ctx)));
        bench_fail("%s: read registers failed: %s", t->name, modbus_strerror(e));
    }
    return (double)(t1 - t0) / 1000.0;
}

static void measure(struct bench_ctx *ctx, struct transport *tr, size_t n)
{
    const struct bench_plan *plan = &ctx->plan;

    for (size_t j = 0; j < n; j++) {
        bench_samples_init(&tr[j].rtt, (size_t)plan->rtt_rounds * plan->rtt_per_round);
        for (unsigned w = 0; w < 20; w++) /* warm-up: caches, TCP windows */
            (void)one_request(&tr[j]);
    }
    for (unsigned rnd = 0; rnd < plan->rtt_rounds; rnd++)
        for (size_t k = 0; k < n; k++) {
            struct transport *t = &tr[(k + rnd) % n];
            double c0 = t->has_slave_clock ? thread_cpu_ns(t->slave_clock) : 0;
            for (unsigned it = 0; it < plan->rtt_per_round; it++)
                bench_samples_add(&t->rtt, one_request(t));
            if (t->has_slave_clock)
                t->slave_cpu_ns += thread_cpu_ns(t->slave_clock) - c0;
        }
    for (size_t j = 0; j < n; j++) {
        bench_results_add(&ctx->results, tr[j].name, "rtt_us_p50", BENCH_NO_SIZE,
                          bench_median(&tr[j].rtt), "us");
        bench_results_add(&ctx->results, tr[j].name, "rtt_us_p99", BENCH_NO_SIZE,
                          bench_percentile(&tr[j].rtt, 99), "us");
        if (tr[j].has_slave_clock)
            bench_results_add(&ctx->results, tr[j].name, "slave_cpu_us", BENCH_NO_SIZE,
                              tr[j].slave_cpu_ns / 1000.0 /
                                  ((double)plan->rtt_rounds * plan->rtt_per_round),
                              "us");
        bench_samples_free(&tr[j].rtt);
    }
}

void bench_rtt(struct bench_ctx *ctx)
{
    struct plain_server ps;
    struct secure_server ss;
    struct transport tr[RTT_MAX_TRANSPORTS];
    char why[MBSC_WHY_SIZE] = "", secure_why[MBSC_WHY_SIZE] = "";
    size_t n = 0;
    int port, secure_ok;

    memset(tr, 0, sizeof tr);
    bench_unpin();
    port = plain_start(&ps, why, sizeof why);
    if (port < 0) {
        plain_stop(&ps);
        bench_repin();
        snprintf(ctx->rtt_note, sizeof ctx->rtt_note, "round trips skipped: %s", why);
        return;
    }
    snprintf(tr[n].name, sizeof tr[n].name, "%s", BENCH_PLAINTEXT);
    tr[n].has_slave_clock = pthread_getcpuclockid(ps.thread, &tr[n].slave_clock) == 0;
    tr[n].ctx = modbus_new_tcp("127.0.0.1", port);
    if (tr[n].ctx == NULL || modbus_connect(tr[n].ctx) != 0)
        bench_fail("plaintext: cannot connect to 127.0.0.1:%d: %s", port, modbus_strerror(errno));
    n++;

    /* The mbsc rows are skipped, not fatal, if the adapter cannot run: the
     * other groups' figures are still worth having. */
    secure_ok = secure_start(&ss, secure_why, sizeof secure_why) == MBSC_OK;
    /* Each cipher on the default path, then each on the pump. */
    for (size_t i = 0; secure_ok && i < 2 * ctx->n_ciphers; i++) {
        const mbsc_cipher *c = ctx->ciphers[i % ctx->n_ciphers];
        int pump = i >= ctx->n_ciphers;

        snprintf(tr[n].name, sizeof tr[n].name, "%s%s", mbsc_cipher_name(c), pump ? "-pump" : "");
        tr[n].secure = 1;
        tr[n].has_slave_clock = pthread_getcpuclockid(ss.thread, &tr[n].slave_clock) == 0;
        tr[n].ctx = secure_connect(&ss, c, pump, secure_why, sizeof secure_why);
        if (tr[n].ctx == NULL)
            secure_ok = 0;
        else
            n++;
    }
    if (secure_ok) {
        char path_why[MBSC_WHY_SIZE] = "";
        int path = mbsc_modbus_probe_path(path_why, sizeof path_why);

        measure(ctx, tr, n);
        snprintf(ctx->rtt_path, sizeof ctx->rtt_path, "%s", mbsc_modbus_path_name(path));
        snprintf(ctx->rtt_note, sizeof ctx->rtt_note,
                 "127.0.0.1, %u requests per transport, threads not pinned; cipher rows on the "
                 "%s path (%s), -pump rows forced onto the pump",
                 ctx->plan.rtt_rounds * ctx->plan.rtt_per_round, mbsc_modbus_path_name(path),
                 path_why);
    } else {
        size_t plain_only = 1;
        measure(ctx, tr, plain_only);
        snprintf(ctx->rtt_note, sizeof ctx->rtt_note, "mbsc round trips skipped: %s", secure_why);
    }

    for (size_t j = 0; j < n; j++) {
        if (tr[j].secure) {
            mbsc_modbus_close(tr[j].ctx);
        } else {
            modbus_close(tr[j].ctx);
            modbus_free(tr[j].ctx);
        }
    }
    plain_stop(&ps);
    secure_stop(&ss);
    bench_repin();
}
