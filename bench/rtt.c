/* SPDX-License-Identifier: ISC */
/*
 * rtt.c - Modbus/TCP round trips over loopback (read 10 holding registers,
 * µs), plain libmodbus and through mbsc on the path mbsc_modbus_connect()
 * picks and on the pump ("<cipher>-pump"), with the serving thread's CPU
 * time per request beside them (docs/bench.md, "What each figure is").
 *
 * On the slave, modbus_reply() writes into a socketpair that the server
 * reads back: the figure is what an unchanged libmodbus application sees.
 * All connections stay open and the transports take turns round by round.
 * The threads must run at the same time, so the pin is lifted meanwhile.
 */
#include <errno.h>
#include <modbus.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mbsc/modbus.h"

#include "bench.h"

#define RTT_REGISTERS  10
#define MAX_TRANSPORTS (1 + 2 * MBSC_CIPHER_COUNT)

struct servers {
    modbus_t *plain;
    modbus_mapping_t *map;
    int listen_fd;
    pthread_t plain_thread, secure_thread;
    int plain_running, secure_running;
    mbsc_keypair master, slave;
    mbsc_allowlist *allow;
    mbsc_config *scfg;
    mbsc_modbus_server *srv;
    char address[96];
};

/* Serve the one plaintext client until it closes the connection. */
static void *plain_serve(void *arg)
{
    struct servers *sv = arg;
    uint8_t query[MODBUS_TCP_MAX_ADU_LENGTH];
    int rc;

    if (modbus_tcp_accept(sv->plain, &sv->listen_fd) >= 0)
        while ((rc = modbus_receive(sv->plain, query)) >= 0)
            if (rc > 0)
                (void)modbus_reply(sv->plain, query, rc, sv->map);
    return NULL;
}

static void *secure_serve(void *arg)
{
    (void)mbsc_modbus_server_run(((struct servers *)arg)->srv);
    return NULL;
}

/* The plaintext server on 127.0.0.1 and a free port; the port, or -1 with why. */
static int plain_start(struct servers *sv, char *why, size_t why_len)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    sv->plain = modbus_new_tcp("127.0.0.1", 0); /* port 0: the kernel picks one */
    if (sv->map == NULL || sv->plain == NULL)
        return snprintf(why, why_len, "plain server: out of memory"), -1;
    sv->listen_fd = modbus_tcp_listen(sv->plain, 1);
    if (sv->listen_fd < 0 || getsockname(sv->listen_fd, (struct sockaddr *)(void *)&sa, &len) != 0)
        return snprintf(why, why_len, "plain server: listen: %s", modbus_strerror(errno)), -1;
    if (pthread_create(&sv->plain_thread, NULL, plain_serve, sv) != 0)
        return snprintf(why, why_len, "plain server: cannot start a thread"), -1;
    sv->plain_running = 1;
    return ntohs(sa.sin_port);
}

/* A slave that allows every cipher and the one master; 0, or -1 with why. */
static int secure_start(struct servers *sv, char *why, size_t why_len)
{
    int rc;

    sv->allow = mbsc_allowlist_new();
    sv->scfg = mbsc_config_new(MBSC_ROLE_SLAVE);
    if (sv->allow == NULL || sv->scfg == NULL || sv->map == NULL ||
        mbsc_keypair_generate(&sv->master) != MBSC_OK ||
        mbsc_keypair_generate(&sv->slave) != MBSC_OK ||
        mbsc_allowlist_add(sv->allow, sv->master.public_key, "bench", NULL) != MBSC_OK ||
        mbsc_config_set_keypair(sv->scfg, &sv->slave) != MBSC_OK ||
        mbsc_config_set_allowlist(sv->scfg, sv->allow) != MBSC_OK)
        return snprintf(why, why_len, "secure server: set-up failed"), -1;
    if (mbsc_modbus_server_new(&sv->srv, "127.0.0.1:0", sv->scfg, sv->map, why, why_len) != MBSC_OK)
        return -1;
    /* Every client of the group (one per cipher, and per path) has the one bench key. */
    rc = mbsc_server_set_limit(mbsc_modbus_server_core(sv->srv), MBSC_SERVER_MAX_SESSIONS_PER_KEY,
                               64);
    if (rc == MBSC_OK)
        rc = mbsc_modbus_server_address(sv->srv, sv->address, sizeof sv->address);
    if (rc != MBSC_OK)
        return snprintf(why, why_len, "secure server: %s", mbsc_strerror(rc)), -1;
    if (pthread_create(&sv->secure_thread, NULL, secure_serve, sv) != 0)
        return snprintf(why, why_len, "secure server: cannot start a thread"), -1;
    sv->secure_running = 1;
    return 0;
}

/* Call after the clients have been closed. */
static void servers_stop(struct servers *sv)
{
    if (sv->plain_running)
        pthread_join(sv->plain_thread, NULL);
    if (sv->listen_fd >= 0)
        close(sv->listen_fd);
    if (sv->plain != NULL) {
        modbus_close(sv->plain);
        modbus_free(sv->plain);
    }
    if (sv->secure_running) {
        mbsc_modbus_server_stop(sv->srv);
        pthread_join(sv->secure_thread, NULL);
    }
    mbsc_modbus_server_free(sv->srv);
    mbsc_config_free(sv->scfg);
    mbsc_allowlist_free(sv->allow);
    if (sv->map != NULL)
        modbus_mapping_free(sv->map);
    mbsc_keypair_wipe(&sv->master);
    mbsc_keypair_wipe(&sv->slave);
}

/* A client offering only cipher c, on the pump if pump; NULL with why on failure. */
static modbus_t *secure_connect(struct servers *sv, const mbsc_cipher *c, int pump, char *why,
                                size_t why_len)
{
    mbsc_config *mcfg = mbsc_config_new(MBSC_ROLE_MASTER);
    modbus_t *ctx = NULL;
    int err = MBSC_OK;

    /* Read by mbsc_modbus_connect() only; the bench is the only thread connecting. */
    if (pump && setenv(MBSC_MODBUS_PUMP_ENV, "1", 1) != 0)
        bench_fail("cannot set %s", MBSC_MODBUS_PUMP_ENV);
    if (mcfg == NULL || mbsc_config_set_keypair(mcfg, &sv->master) != MBSC_OK ||
        mbsc_config_set_peer_public_key(mcfg, sv->slave.public_key) != MBSC_OK ||
        mbsc_config_set_ciphers(mcfg, mbsc_cipher_name(c)) != MBSC_OK)
        snprintf(why, why_len, "%s: client set-up failed", mbsc_cipher_name(c));
    else
        ctx = mbsc_modbus_connect(sv->address, mcfg, 5000, &err, why, why_len);
    if (pump)
        (void)unsetenv(MBSC_MODBUS_PUMP_ENV);
    mbsc_config_free(mcfg); /* the session copied what it needs */
    if (ctx != NULL && mbsc_modbus_cipher(ctx) != c)
        snprintf(why, why_len, "%s: the slave chose another cipher", mbsc_cipher_name(c));
    else if (ctx != NULL && pump && mbsc_modbus_path(ctx) != MBSC_MODBUS_PATH_PUMP)
        snprintf(why, why_len, "%s: %s=1 did not force the pump", mbsc_cipher_name(c),
                 MBSC_MODBUS_PUMP_ENV);
    else
        return ctx;
    mbsc_modbus_close(ctx);
    return NULL;
}

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
static double thread_cpu_ns(const struct transport *t)
{
    struct timespec ts;

    if (!t->has_slave_clock || clock_gettime(t->slave_clock, &ts) != 0)
        return 0;
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One timed request; returns its round trip in µs. */
static double one_request(struct transport *t)
{
    uint16_t regs[RTT_REGISTERS];
    uint64_t t0 = bench_now_ns();
    int rc = modbus_read_registers(t->ctx, 0, RTT_REGISTERS, regs), e = errno;
    uint64_t t1 = bench_now_ns();

    if (rc != RTT_REGISTERS)
        bench_fail("%s: read registers failed: %s", t->name,
                   t->secure && mbsc_modbus_error(t->ctx) != MBSC_OK
                       ? mbsc_strerror(mbsc_modbus_error(t->ctx))
                       : modbus_strerror(e));
    return (double)(t1 - t0) / 1000.0;
}

static void measure(struct bench_ctx *ctx, struct transport *tr, size_t n)
{
    const struct bench_plan *plan = &ctx->plan;
    double requests = (double)plan->rtt_rounds * plan->rtt_per_round;

    for (size_t j = 0; j < n; j++)
        for (unsigned w = 0; w < 20; w++) /* warm-up: caches, TCP windows */
            (void)one_request(&tr[j]);
    for (unsigned rnd = 0; rnd < plan->rtt_rounds; rnd++)
        for (size_t k = 0; k < n; k++) {
            struct transport *t = &tr[(k + rnd) % n];
            double c0 = thread_cpu_ns(t);
            for (unsigned it = 0; it < plan->rtt_per_round; it++)
                bench_samples_add(&t->rtt, one_request(t));
            t->slave_cpu_ns += thread_cpu_ns(t) - c0;
        }
    for (size_t j = 0; j < n; j++) {
        bench_csv_p50_p99(ctx->figures, tr[j].name, "rtt_us", 0, &tr[j].rtt, "us");
        if (tr[j].has_slave_clock)
            bench_csv_num(ctx->figures, tr[j].name, "slave_cpu_us", 0,
                          tr[j].slave_cpu_ns / 1000.0 / requests, "us");
    }
}

void bench_rtt(struct bench_ctx *ctx)
{
    struct servers sv = {.listen_fd = -1, .map = modbus_mapping_new(0, 0, 100, 0)};
    struct transport tr[MAX_TRANSPORTS];
    char why[MBSC_WHY_SIZE] = "", path_why[MBSC_WHY_SIZE] = "";
    size_t n = 1;
    int port, secure_ok, path;

    memset(tr, 0, sizeof tr);
    bench_pin_lift(1);
    if ((port = plain_start(&sv, why, sizeof why)) < 0) {
        servers_stop(&sv);
        bench_pin_lift(0);
        snprintf(ctx->rtt_note, sizeof ctx->rtt_note, "round trips skipped: %s", why);
        return;
    }
    snprintf(tr[0].name, sizeof tr[0].name, "%s", BENCH_PLAINTEXT);
    tr[0].has_slave_clock = pthread_getcpuclockid(sv.plain_thread, &tr[0].slave_clock) == 0;
    tr[0].ctx = modbus_new_tcp("127.0.0.1", port);
    if (tr[0].ctx == NULL || modbus_connect(tr[0].ctx) != 0)
        bench_fail("plaintext: cannot connect to 127.0.0.1:%d: %s", port, modbus_strerror(errno));

    /* The mbsc rows are skipped, not fatal, if the adapter cannot run: the
     * other groups' figures are still worth having.  Each cipher on the
     * default path, then each on the pump. */
    secure_ok = secure_start(&sv, why, sizeof why) == 0;
    for (size_t i = 0; secure_ok && i < 2 * ctx->n_ciphers; i++, n++) {
        const mbsc_cipher *c = ctx->ciphers[i % ctx->n_ciphers];
        int pump = i >= ctx->n_ciphers;

        snprintf(tr[n].name, sizeof tr[n].name, "%s%s", mbsc_cipher_name(c), pump ? "-pump" : "");
        tr[n].secure = 1;
        tr[n].has_slave_clock = pthread_getcpuclockid(sv.secure_thread, &tr[n].slave_clock) == 0;
        secure_ok = (tr[n].ctx = secure_connect(&sv, c, pump, why, sizeof why)) != NULL;
    }
    n -= !secure_ok && n > 1; /* the failed connection is no transport */
    measure(ctx, tr, secure_ok ? n : 1);
    path = mbsc_modbus_probe_path(path_why, sizeof path_why);
    if (secure_ok)
        snprintf(ctx->rtt_note, sizeof ctx->rtt_note,
                 "127.0.0.1, %u requests per transport, threads not pinned; cipher rows on the "
                 "%s path (%s), -pump rows forced onto the pump",
                 ctx->plan.rtt_rounds * ctx->plan.rtt_per_round, mbsc_modbus_path_name(path),
                 path_why);
    else
        snprintf(ctx->rtt_note, sizeof ctx->rtt_note, "mbsc round trips skipped: %s", why);
    modbus_close(tr[0].ctx); /* the plaintext one; the others are mbsc's */
    modbus_free(tr[0].ctx);
    for (size_t j = 1; j < n; j++)
        mbsc_modbus_close(tr[j].ctx);
    servers_stop(&sv);
    bench_pin_lift(0);
}
