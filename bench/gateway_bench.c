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
 * and, built with OpenSSL, two Modbus/TCP Security paths for comparison,
 * in the same interleaved rounds (gateway_tls.h):
 *
 *   TLS master    tests/tls_client.c, TLS 1.3 -> the server gateway's TLS listener -> PLC;
 *   stunnel pair  a plain libmodbus client -> client-mode stunnel -> TLS 1.3 ->
 *                 server-mode stunnel -> PLC (when stunnel4 is installed);
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
 * Then a serial line (when socat is installed): a pty pair made by socat,
 * libmodbus's RTU server in a thread on one end, and one request at a time
 * at 19200 and 115200 baud 8N1, straight from a libmodbus RTU master and
 * through a server gateway (mbsc master -> server gw -> rtu:...), beside
 * the time the two frames would take on a real wire (their bits at that
 * rate, plus t3.5 after each).  A pty moves bytes at once whatever its
 * rate, so the rows show what the gateway adds, not the wire.
 *
 * Timings on a shared machine are noisy: compare rows of one run, not runs.
 *
 * With --csv FILE, the figures also go to FILE in mbsc-bench's long CSV
 * format (bench/csv.h), one path per "cipher" (gateway-direct, gateway-one,
 * gateway-two; "-compared" for --compare's): make bench reads it back for
 * its plot (bench/gateway_csv.h).
 *
 *   bench/mbsc-gateway-bench [--count N] [--seconds S] [--masters M] [--compare PATH]
 *                            [--csv FILE] [--srcdir DIR]   (tests/tls_certs.sh's tree)
 *                            [--serial]   (the serial line rows only)
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "mbsc.h"
#include "mbsc/modbus.h"
#include "gw_harness.h"
#ifdef MBSC_BENCH_TLS
#include "gateway_tls.h"
#endif

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
#ifdef MBSC_BENCH_TLS
    struct tls_client *tls; /* instead of ctx: a Modbus/TCP Security master */
#endif
    double *t;
    int n;
    double median, p99;
};

/* One read of 10 holding registers on p's connection, or the end of the bench. */
static void read10(struct path *p)
{
    uint16_t v[10];

#ifdef MBSC_BENCH_TLS
    char why[256];

    if (p->tls != NULL) {
        if (bench_tls_read10(p->tls, why, sizeof why) != 0) {
            fprintf(stderr, "mbsc-gateway-bench: %s: ", p->name);
            die(why);
        }
        return;
    }
#endif
    if (modbus_read_registers(p->ctx, 0, 10, v) != 10) {
        fprintf(stderr, "mbsc-gateway-bench: %s: ", p->name);
        die(modbus_strerror(errno));
    }
}

/* p with room for count timed reads on ctx (NULL for a TLS path: set p->tls). */
static void path_init(struct path *p, const char *name, modbus_t *ctx, int count)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ctx = ctx;
    p->t = calloc((size_t)count, sizeof *p->t);
    if (p->t == NULL)
        die("out of memory");
}

/* Untimed reads first: connections, caches, the PLC's first answers. */
static void path_warm(struct path *p)
{
    int i;

    for (i = 0; i < 100; i++)
        read10(p);
}

static void path_open(struct path *p, const char *name, modbus_t *ctx, int count)
{
    path_init(p, name, ctx, count);
    path_warm(p);
}

/* n more timed reads of 10 holding registers. */
static void path_round(struct path *p, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        double t0 = now_us();

        read10(p);
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
                            int seconds, const char *in_flight, FILE *csv)
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
    for (k = 0; csv != NULL && k < n_prog; k++)
        fprintf(csv, "gateway-one%s,rps_inflight_%s,,%.0f,requests/s\n", k == 0 ? "" : "-compared",
                in_flight, med[k]);
}

/* ---- a serial line: socat's pty pair, libmodbus's RTU server in a thread ---- */

struct rtu_line {
    pid_t socat;
    char gw_end[128], dev_end[128];
    modbus_t *dev;
    modbus_mapping_t *map;
    pthread_t th;
    int stop[2];
};

static void *rtu_dev_main(void *arg)
{
    struct rtu_line *l = arg;

    for (;;) {
        uint8_t q[MODBUS_RTU_MAX_ADU_LENGTH];
        struct pollfd pfd[2] = {{modbus_get_socket(l->dev), POLLIN, 0}, {l->stop[0], POLLIN, 0}};
        int rc;

        if (poll(pfd, 2, -1) < 0 && errno != EINTR)
            break;
        if (pfd[1].revents != 0 || (pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL)))
            break;
        if (!(pfd[0].revents & POLLIN))
            continue;
        rc = modbus_receive(l->dev, q);
        if (rc > 0)
            modbus_reply(l->dev, q, rc, l->map);
    }
    return NULL;
}

/* A pty pair named NAME-gw and NAME-dev, the device (unit 1, 8N1) on NAME-dev. */
static void rtu_line_up(struct rtu_line *l, const char *name, int baud)
{
    char a[200], b[200];
    struct stat st;
    double end = now_us() + 10e6;

    snprintf(l->gw_end, sizeof l->gw_end, "%s-gw", path_of(name));
    snprintf(l->dev_end, sizeof l->dev_end, "%s-dev", path_of(name));
    snprintf(a, sizeof a, "pty,raw,echo=0,link=%s", l->gw_end);
    snprintf(b, sizeof b, "pty,raw,echo=0,link=%s", l->dev_end);
    l->socat = fork();
    if (l->socat < 0)
        die("fork");
    if (l->socat == 0) {
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the bench */
        execlp("socat", "socat", a, b, (char *)NULL);
        _exit(127);
    }
    while (stat(l->gw_end, &st) != 0 || stat(l->dev_end, &st) != 0) {
        if (now_us() > end)
            die("socat made no pty pair");
        poll(NULL, 0, 10);
    }
    l->map = modbus_mapping_new(0, 0, 100, 0);
    /* A pty has no parity: 8N1 on both ends. */
    l->dev = modbus_new_rtu(l->dev_end, baud, 'N', 8, 1);
    if (l->map == NULL || l->dev == NULL || modbus_set_slave(l->dev, 1) != 0 ||
        modbus_connect(l->dev) != 0 || pipe(l->stop) != 0 ||
        pthread_create(&l->th, NULL, rtu_dev_main, l) != 0)
        die("the RTU device did not start");
}

static void rtu_line_down(struct rtu_line *l)
{
    int st;

    (void)!write(l->stop[1], "s", 1);
    pthread_join(l->th, NULL);
    close(l->stop[0]);
    close(l->stop[1]);
    modbus_close(l->dev);
    modbus_free(l->dev);
    modbus_mapping_free(l->map);
    kill(l->socat, SIGTERM);
    waitpid(l->socat, &st, 0);
}

static modbus_t *rtu_master(const char *dev, int baud)
{
    modbus_t *ctx = modbus_new_rtu(dev, baud, 'N', 8, 1);

    if (ctx == NULL || modbus_set_slave(ctx, 1) != 0 || modbus_connect(ctx) != 0)
        die("the RTU master did not start");
    modbus_set_response_timeout(ctx, 5, 0);
    return ctx;
}

/* The rows of one rate: straight to the device, and through a server gateway. */
static void serial_rows(int baud, int count)
{
    struct rtu_line direct, behind;
    struct path p[2];
    struct gwp srv;
    char route[200];
    const char *args[] = {
        "server",          "--listen",     "127.0.0.1:0",        "--route", route, "--key",
        path_of("gw.key"), "--authorized", path_of("allow.txt"), NULL};
    /* Read 10 registers: a request of 8 bytes and an answer of 25; 10 bits a character in 8N1. */
    double char_us = 10e6 / baud, t35_us = baud > 19200 ? 1750 : 3.5 * char_us;
    double wire_us = (8 + 25) * char_us + 2 * t35_us;
    modbus_t *m;
    int r, i;

    rtu_line_up(&direct, "direct", baud);
    rtu_line_up(&behind, "behind", baud);
    snprintf(route, sizeof route, "1=rtu:%s,%d,8N1", behind.gw_end, baud);
    gw_program = "tools/mbsc-gateway";
    if (!gw_spawn(&srv, args))
        die("the serial gateway did not start");
    path_open(&p[0], "direct (libmodbus RTU master on a pty)", rtu_master(direct.gw_end, baud),
              count);
    m = secure(srv.addr, &masters_kp[0]);
    if (modbus_set_slave(m, 1) != 0)
        die("unit 1");
    path_open(&p[1], "one gateway (mbsc master -> server gw -> pty)", m, count);
    for (r = 0; r < ROUNDS; r++)
        for (i = 0; i < 2; i++)
            path_round(&p[i], count / ROUNDS);
    for (i = 0; i < 2; i++)
        path_done(&p[i]);
    (void)gw_finish(&srv, SIGTERM);
    modbus_close(p[0].ctx);
    modbus_free(p[0].ctx);
    mbsc_modbus_close(p[1].ctx);
    rtu_line_down(&direct);
    rtu_line_down(&behind);
    printf("  %d baud 8N1: the frames on a real wire %.0f us (33 characters %.0f us, t3.5 %.0f "
           "us after each)\n",
           baud, wire_us, 33 * char_us, t35_us);
    for (i = 0; i < 2; i++)
        printf("  %-58s %10.1f %10.1f %12.1f\n", p[i].name, p[i].median, p[i].p99,
               p[i].median - p[0].median);
}

static void serial_section(int count)
{
    if (system("socat -V >/dev/null 2>&1") != 0) {
        printf("\nSerial line rows: not measured, socat is not installed (apt-get install "
               "socat).\n");
        return;
    }
    printf("\nRound trip of one read of 10 holding registers over a serial line on a pty (socat),"
           " libmodbus's RTU server, %d requests per path in %d interleaved rounds:\n",
           ROUNDS * (count / ROUNDS), ROUNDS);
    printf("  %-58s %10s %10s %12s\n", "path", "median us", "p99 us", "added (med)");
    serial_rows(19200, count);
    serial_rows(115200, count);
}

#ifdef MBSC_BENCH_TLS
/* What the Modbus/TCP Security paths run on, for the end of the bench. */
struct tls_side {
    struct gwp gw;
    int gw_up;
    struct tls_client master;
    int master_up;
    pid_t stunnel;
    char note[600]; /* why a path is missing, printed under the table */
};

/* The second line a gateway prints with --listen-tls: "listening tls on HOST:PORT". */
static int read_tls_address(struct gwp *g, char *addr, size_t len)
{
    char line[128];
    size_t n = 0;
    double end = now_us() + 10e6;

    while (n < sizeof line - 1 && now_us() < end) {
        struct pollfd pfd = {g->out_fd, POLLIN, 0};

        if (poll(&pfd, 1, 100) <= 0)
            continue;
        if (read(g->out_fd, line + n, 1) != 1 || line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    if (strncmp(line, "listening tls on ", 17) != 0 || strlen(line + 17) >= len)
        return -1;
    memcpy(addr, line + 17, strlen(line + 17) + 1); /* it fits: checked above */
    return 0;
}

/*
 * After the other paths: a TLS master through a server gateway's TLS
 * listener to the PLC at plc_gw, and a stunnel pair to the PLC at
 * plc_stunnel; how many paths were opened (a missing one says why in
 * ts->note).
 */
static int tls_paths(struct tls_side *ts, const char *srcdir, int plc_gw, int plc_stunnel,
                     struct path *p, int count)
{
    char why[512], up[32], tls_addr[64], st_addr[64], certs[128], cert[200], key[200], ca[200];
    const char *args[] = {"server",
                          "--listen",
                          "127.0.0.1:0",
                          "--key",
                          path_of("gw.key"),
                          "--authorized",
                          path_of("allow.txt"),
                          "--listen-tls",
                          "127.0.0.1:0",
                          "--tls-cert",
                          cert,
                          "--tls-key",
                          key,
                          "--tls-ca",
                          ca,
                          "--upstream",
                          up,
                          NULL};
    int n = 0;

    memset(ts, 0, sizeof *ts);
    snprintf(certs, sizeof certs, "%s", path_of("tls"));
    if (mkdir(certs, 0700) != 0 || bench_tls_certs(srcdir, certs, why, sizeof why) != 0) {
        snprintf(ts->note, sizeof ts->note, "  (no TLS rows: %s)\n", why);
        return 0;
    }
    snprintf(cert, sizeof cert, "%s/gateway.pem", certs);
    snprintf(key, sizeof key, "%s/gateway.key", certs);
    snprintf(ca, sizeof ca, "%s/ca.pem", certs);
    snprintf(up, sizeof up, "127.0.0.1:%d", plc_gw);
    gw_program = "tools/mbsc-gateway";
    if (!gw_spawn(&ts->gw, args) || read_tls_address(&ts->gw, tls_addr, sizeof tls_addr) != 0)
        die("the gateway with a TLS listener did not start");
    ts->gw_up = 1;
    if (bench_tls_master(&ts->master, certs, tls_addr, why, sizeof why) != 0)
        die(why);
    ts->master_up = 1;
    path_init(&p[n], "TLS master (Modbus/TCP Security -> server gw)", NULL, count);
    p[n].tls = &ts->master;
    path_warm(&p[n++]);
    if (bench_stunnel_start(certs, plc_stunnel, "TLS_CHACHA20_POLY1305_SHA256", st_addr,
                            sizeof st_addr, &ts->stunnel, why, sizeof why) != 0) {
        snprintf(ts->note, sizeof ts->note, "  (no stunnel pair: %s)\n", why);
        return n;
    }
    path_open(&p[n++], "stunnel pair (plain -> stunnel -> TLS 1.3 -> stunnel)", plain(st_addr),
              count);
    return n;
}

/* The TLS side's processes and connections gone, its certificates removed. */
static void tls_side_end(struct tls_side *ts, struct path *p, int n)
{
    char cmd[200];

    if (n == 2) {
        modbus_close(p[1].ctx);
        modbus_free(p[1].ctx);
    }
    bench_stunnel_stop(ts->stunnel);
    if (ts->master_up)
        tls_client_free(&ts->master);
    if (ts->gw_up)
        (void)gw_finish(&ts->gw, SIGTERM);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path_of("tls"));
    if (system(cmd) != 0) {
        /* a directory left in /tmp: nothing the figures depend on */
    }
}
#endif

/* The CSV names of the round-trip paths, in the order main() opens them. */
static const char *const csv_names[] = {"gateway-direct", "gateway-one", "gateway-two",
                                        "gateway-one-compared", "gateway-two-compared"};

int main(int argc, char **argv)
{
    int count = 2000, seconds = 2, m = 50, i, k, r, n_prog = 1, n_paths = 0, serial_only = 0;
    const char *programs[2] = {"tools/mbsc-gateway", NULL}, *csv_path = NULL, *srcdir = ".";
    FILE *csv = NULL;
    /* The harness's PLC serves one connection: one for each path's server. */
    struct plc plc[5];
    struct gwp srv[2], cli[2];
    struct path paths[7];
    int n_mbsc_paths;
#ifdef MBSC_BENCH_TLS
    struct tls_side ts;
    int n_tls = 0;
#endif
    char why[MBSC_WHY_SIZE], plc_addr[32];

    for (i = 1; i < argc; i += 2) {
        if (strcmp(argv[i], "--serial") == 0) {
            serial_only = 1;
            i--;
        } else if (i + 1 == argc)
            die("usage: mbsc-gateway-bench [--count N>=100] [--seconds S>=1] [--masters 1-256] "
                "[--compare PATH] [--csv FILE] [--srcdir DIR] [--serial]");
        else if (strcmp(argv[i], "--count") == 0)
            count = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0)
            seconds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--masters") == 0)
            m = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--compare") == 0 && n_prog == 1)
            programs[n_prog++] = argv[i + 1];
        else if (strcmp(argv[i], "--csv") == 0)
            csv_path = argv[i + 1];
        else if (strcmp(argv[i], "--srcdir") == 0)
            srcdir = argv[i + 1];
        else
            die("usage: mbsc-gateway-bench [--count N>=100] [--seconds S>=1] [--masters 1-256] "
                "[--compare PATH] [--csv FILE] [--srcdir DIR] [--serial]");
    }
    if (count < 100 || seconds < 1 || m < 1 || m > MAX_MASTERS ||
        (n_prog == 2 && programs[1][0] != '/'))
        die("usage: mbsc-gateway-bench [--count N>=100] [--seconds S>=1] [--masters 1-256] "
            "[--compare /ABSOLUTE/PATH/mbsc-gateway] [--csv FILE]");
    /* Opened before measuring: a wrong path fails at once, not after a minute. */
    if (csv_path != NULL && (csv = fopen(csv_path, "w")) == NULL) {
        fprintf(stderr, "mbsc-gateway-bench: cannot write %s: %s\n", csv_path, strerror(errno));
        exit(2);
    }
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
    if (serial_only) {
        serial_section(count);
        unlink(path_of("gw.key"));
        unlink(path_of("gw.pub"));
        unlink(path_of("client.key"));
        unlink(path_of("allow.txt"));
        rmdir(dir);
        return 0;
    }
    memset(plc, 0, sizeof plc);
    memset(paths, 0, sizeof paths);
    for (k = 0; k < 5; k++)
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
    n_mbsc_paths = n_paths;
#ifdef MBSC_BENCH_TLS
    n_tls = tls_paths(&ts, srcdir, plc[3].port, plc[4].port, &paths[n_paths], count);
    n_paths += n_tls;
#else
    (void)srcdir;
#endif
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
#ifdef MBSC_BENCH_TLS
    tls_side_end(&ts, &paths[n_mbsc_paths], n_tls);
#endif
    for (i = 0; i < n_mbsc_paths; i++) {
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
#ifdef MBSC_BENCH_TLS
    fputs(ts.note, stdout);
#endif
    if (n_prog == 2)
        printf("  added, this build / compared: one gateway %.2f, two gateways %.2f\n",
               (paths[1].median - paths[0].median) / (paths[3].median - paths[0].median),
               (paths[2].median - paths[0].median) / (paths[4].median - paths[0].median));

    printf("\n%d masters through one server gateway, %d s per run, the median of %d runs%s:\n", m,
           seconds, THROUGHPUT_RUNS, n_prog == 2 ? " of each, alternating" : "");
    if (csv != NULL) {
        fputs("cipher,metric,size_bytes,value,unit\n", csv);
        for (i = 0; i < n_mbsc_paths; i++)
            fprintf(csv, "%s,rtt_us_p50,,%.6g,us\n%s,rtt_us_p99,,%.6g,us\n", csv_names[i],
                    paths[i].median, csv_names[i], paths[i].p99);
    }
    throughput_rows(programs, n_prog, plc[1].port, m, seconds, "1", csv);
    throughput_rows(programs, n_prog, plc[1].port, m, seconds, "8", csv);
    serial_section(count);
    if (csv != NULL && (ferror(csv) || fclose(csv) != 0))
        die("error writing the CSV file");

    for (k = 0; k < 5; k++)
        plc_free(&plc[k]);
    unlink(path_of("gw.key"));
    unlink(path_of("gw.pub"));
    unlink(path_of("client.key"));
    unlink(path_of("allow.txt"));
    rmdir(dir);
    return 0;
}
