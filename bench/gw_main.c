/* SPDX-License-Identifier: ISC */
/*
 * gw_main.c - mbsc-gateway-bench (make bench-gateway): what a request pays
 * on its way to a PLC through mbsc-gateway and through the alternatives, on
 * loopback, one read of 10 holding registers at a time:
 *
 *   direct                 a plain libmodbus client straight to the PLC;
 *   gw1-CIPHER             an mbsc master -> server gateway -> PLC;
 *   gw2-CIPHER             plain client -> client gateway -> server gateway -> PLC;
 *   tls-master             Modbus/TCP Security (TLS 1.3) -> server gateway -> PLC;
 *   haproxy-pair           plain client -> haproxy -> haproxy -> PLC (TCP mode: a
 *                          relay pair that does nothing, the yardstick);
 *   stunnel-chacha20poly1305, stunnel-aes128gcm
 *                          plain client -> stunnel -> TLS 1.3 -> stunnel -> PLC.
 *
 * Every path has its own PLC and processes, so each process's counters
 * belong to one path.  All paths are timed in the same interleaved rounds
 * (a busy moment of a shared machine falls on all of them), then each path
 * runs once more under strace to count system calls.  Then requests/s
 * through one server gateway (gw_load.c), and the serial line (gw_serial.c).
 * With --compare PATH another build's mbsc-gateway gets its own gw1/gw2
 * paths ("-compared") in the same rounds, and its own load runs.
 *
 * Output: one CSV (csv.h) on stdout or --csv FILE; bench/report.py makes
 * the tables.  Progress goes to stderr.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "csv.h"
#include "gw_bench.h"
#include "mbsc/modbus.h"
#ifdef MBSC_BENCH_TLS
#include "gateway_tls.h"
#endif

#define ROUNDS       10  /* the round trips are timed in this many interleaved rounds */
#define WARM         100 /* untimed requests first on every path */
#define STRACE_COUNT 300 /* requests of the counted run */
#define MAX_PATHS    24

static const char *const ciphers[] = {"chacha20", "trivium", "rabbit", "enocoro128v2"};

static void add_proc(struct gw_path *p, const char *name, pid_t pid)
{
    struct gw_proc *q = &p->proc[p->n_proc++];

    snprintf(q->name, sizeof q->name, "%s", name);
    q->pid = pid;
    q->syscalls = -1;
}

/* A path with its own PLC; the caller connects p->ctx or p->tls. */
static struct gw_path *new_path(struct gw_path *paths, int *n, const char *name, const char *desc)
{
    struct gw_path *p = &paths[*n];

    if (*n == MAX_PATHS)
        gw_die("too many paths");
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->desc, sizeof p->desc, "%s", desc);
    if (plc_start(&p->plc, 0) != 0)
        gw_die("PLC");
    (*n)++;
    return p;
}

static void mbsc_paths(struct gw_path *paths, int *n, const char *program, const char *tag,
                       const char *cipher)
{
    char name[40], desc[96], up[MBSC_ADDRSTRLEN];
    const char *one[] = {"--ciphers", cipher, NULL};
    struct gw_path *p;

    snprintf(name, sizeof name, "gw1-%s%s", cipher, tag);
    snprintf(desc, sizeof desc, "mbsc master -> server gw -> PLC");
    p = new_path(paths, n, name, desc);
    gw_start_server(&p->gw[p->n_gw++], program, p->plc.port, one);
    add_proc(p, "server-gw", p->gw[0].pid);
    p->ctx = gw_secure(p->gw[0].addr, &gw_masters_kp[0], cipher);
    p->is_mbsc = 1;

    snprintf(name, sizeof name, "gw2-%s%s", cipher, tag);
    snprintf(desc, sizeof desc, "plain -> client gw -> server gw -> PLC");
    p = new_path(paths, n, name, desc);
    gw_start_server(&p->gw[p->n_gw++], program, p->plc.port, one);
    snprintf(up, sizeof up, "%s", p->gw[0].addr);
    {
        const char *args[] = {"client",
                              "--listen",
                              "127.0.0.1:0",
                              "--upstream",
                              up,
                              "--key",
                              gw_file("client.key"),
                              "--peer",
                              gw_file("gw.pub"),
                              "--cipher",
                              cipher,
                              "--log-level",
                              "warning",
                              NULL};

        gw_program = program;
        if (!gw_spawn(&p->gw[p->n_gw++], args))
            gw_die("the client gateway %s did not start", program);
    }
    add_proc(p, "client-gw", p->gw[1].pid);
    add_proc(p, "server-gw", p->gw[0].pid);
    p->ctx = gw_plain(p->gw[1].addr);
}

#ifdef MBSC_BENCH_TLS
static struct tls_client tls_master;

/* The TLS master and the stunnel pairs; a missing one says why in the CSV. */
static void tls_paths(struct gw_path *paths, int *n, const char *srcdir, FILE *csv)
{
    static const char *const suites[][2] = {
        {"stunnel-chacha20poly1305", "TLS_CHACHA20_POLY1305_SHA256"},
        {"stunnel-aes128gcm", "TLS_AES_128_GCM_SHA256"}};
    char why[512], certs[128], cert[200], key[200], ca[200], addr[64];
    const char *extra[] = {
        "--listen-tls", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key, "--tls-ca", ca, NULL};
    struct gw_path *p;

    snprintf(certs, sizeof certs, "%s", gw_file("tls"));
    if (mkdir(certs, 0700) != 0 || bench_tls_certs(srcdir, certs, why, sizeof why) != 0) {
        bench_csv_text(csv, "tls-master", "missing", why);
        return;
    }
    snprintf(cert, sizeof cert, "%s/gateway.pem", certs);
    snprintf(key, sizeof key, "%s/gateway.key", certs);
    snprintf(ca, sizeof ca, "%s/ca.pem", certs);
    p = new_path(paths, n, "tls-master", "Modbus/TCP Security master -> server gw -> PLC");
    gw_start_server(&p->gw[p->n_gw++], "tools/mbsc-gateway", p->plc.port, extra);
    add_proc(p, "server-gw", p->gw[0].pid);
    if (bench_tls_read_address(&p->gw[0], addr, sizeof addr) != 0 ||
        bench_tls_master(&tls_master, certs, addr, why, sizeof why) != 0)
        gw_die("TLS master: %s", why);
    p->tls = &tls_master;
    for (size_t s = 0; s < 2; s++) {
        p = new_path(paths, n, suites[s][0], "plain -> stunnel -> TLS 1.3 -> stunnel -> PLC");
        if (gw_stunnel_pair(p, certs, suites[s][1], p->plc.port, addr, sizeof addr, why,
                            sizeof why) != 0) {
            bench_csv_text(csv, suites[s][0], "missing", why);
            plc_free(&p->plc);
            (*n)--;
            continue;
        }
        p->ctx = gw_plain(addr);
    }
}
#endif

static void close_path(struct gw_path *p)
{
    if (p->ctx != NULL && p->is_mbsc) {
        mbsc_modbus_close(p->ctx);
    } else if (p->ctx != NULL) {
        modbus_close(p->ctx);
        modbus_free(p->ctx);
    }
#ifdef MBSC_BENCH_TLS
    if (p->tls != NULL)
        tls_client_free(p->tls);
#endif
    for (int i = p->n_gw - 1; i >= 0; i--)
        (void)gw_finish(&p->gw[i], SIGTERM);
    gw_relays_stop(p);
    plc_free(&p->plc);
    free(p->t);
}

static void rtt_csv(struct gw_path *p, FILE *csv)
{
    gw_sort(p->t, (size_t)p->n);
    bench_csv_text(csv, p->name, "path", p->desc);
    bench_csv_num(csv, p->name, "rtt_us_p50", 0, gw_quantile(p->t, (size_t)p->n, 0.5), "us");
    bench_csv_num(csv, p->name, "rtt_us_p99", 0, gw_quantile(p->t, (size_t)p->n, 0.99), "us");
}

static void usage(void)
{
    fprintf(stderr, "usage: " GW_PROG " [--count N>=100] [--seconds S>=1] "
                    "[--compare /ABSOLUTE/PATH/mbsc-gateway] [--csv FILE] [--srcdir DIR] "
                    "[--serial]\n");
    exit(2);
}

static void write_keys(void)
{
    char why[MBSC_WHY_SIZE], b64[MBSC_KEY_BASE64_SIZE];
    FILE *f;

    snprintf(gw_dir, sizeof gw_dir, "/tmp/mbsc-gwbench-XXXXXX");
    if (mkdtemp(gw_dir) == NULL || mbsc_keypair_generate(&gw_server_kp) != MBSC_OK ||
        mbsc_keypair_generate(&gw_client_kp) != MBSC_OK ||
        mbsc_private_key_save(gw_file("gw.key"), gw_server_kp.private_key, 0, why, sizeof why) !=
            MBSC_OK ||
        mbsc_private_key_save(gw_file("client.key"), gw_client_kp.private_key, 0, why,
                              sizeof why) != MBSC_OK ||
        mbsc_public_key_save(gw_file("gw.pub"), gw_server_kp.public_key, 0, why, sizeof why) !=
            MBSC_OK ||
        (f = fopen(gw_file("allow.txt"), "w")) == NULL)
        gw_die("keys");
    for (int i = 0; i < GW_MAX_MASTERS; i++) {
        if (mbsc_keypair_generate(&gw_masters_kp[i]) != MBSC_OK)
            gw_die("keys");
        (void)mbsc_key_to_base64(b64, gw_masters_kp[i].public_key);
        fprintf(f, "%s master-%d\n", b64, i);
    }
    (void)mbsc_key_to_base64(b64, gw_client_kp.public_key);
    fprintf(f, "%s client-gateway\n", b64);
    if (fclose(f) != 0)
        gw_die("allow-list");
}

int main(int argc, char **argv)
{
    int count = 2000, seconds = 2, serial_only = 0, n = 0, n_prog = 1, i, r;
    const char *programs[2] = {"tools/mbsc-gateway", NULL}, *srcdir = ".";
    static struct gw_path paths[MAX_PATHS];
    struct rlimit rl;
    FILE *csv = stdout;
    char cmd[200];

    for (i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(argv[i], "--serial") == 0)
            serial_only = 1;
        else if (v == NULL)
            usage();
        else if (strcmp(argv[i], "--count") == 0 && (count = atoi(v)) >= 100)
            i++;
        else if (strcmp(argv[i], "--seconds") == 0 && (seconds = atoi(v)) >= 1)
            i++;
        else if (strcmp(argv[i], "--compare") == 0 && v[0] == '/' && n_prog == 1)
            programs[n_prog++] = argv[++i];
        else if (strcmp(argv[i], "--srcdir") == 0)
            srcdir = argv[++i];
        else if (strcmp(argv[i], "--csv") == 0) {
            /* Opened before measuring: a wrong path fails at once. */
            if ((csv = fopen(v, "w")) == NULL) {
                fprintf(stderr, GW_PROG ": cannot write %s: %s\n", v, strerror(errno));
                exit(2);
            }
            i++;
        } else
            usage();
    }
    if (sodium_init() < 0)
        gw_die("sodium_init");
    signal(SIGPIPE, SIG_IGN);
    /* 1000 masters need more than the usual 1024 descriptors, here and in
     * the gateway, which inherits the limit. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
    write_keys();
    fputs(BENCH_CSV_HEADER "\n", csv);
    bench_csv_text(csv, "gateway", "program", GW_PROG);
    if (n_prog == 2)
        bench_csv_text(csv, "gateway", "compared", programs[1]);
    if (serial_only) {
        gw_serial_rows(count, csv);
        goto out;
    }
    fprintf(stderr, GW_PROG ": starting the paths ...\n");
    {
        struct gw_path *d = new_path(paths, &n, "direct", "plain client -> PLC");
        char addr[32];

        snprintf(addr, sizeof addr, "127.0.0.1:%d", d->plc.port);
        d->ctx = gw_plain(addr);
    }
    for (int k = 0; k < n_prog; k++)
        for (size_t c = 0; c < sizeof ciphers / sizeof ciphers[0]; c++)
            mbsc_paths(paths, &n, programs[k], k == 0 ? "" : "-compared", ciphers[c]);
#ifdef MBSC_BENCH_TLS
    tls_paths(paths, &n, srcdir, csv);
#else
    bench_csv_text(csv, "tls-master", "missing", "built without OpenSSL");
    bench_csv_text(csv, "stunnel-chacha20poly1305", "missing", "built without OpenSSL");
#endif
    {
        char why[256], addr[64];
        struct gw_path *h =
            new_path(paths, &n, "haproxy-pair", "plain -> haproxy -> haproxy -> PLC (TCP mode)");

        if (gw_haproxy_pair(h, h->plc.port, addr, sizeof addr, why, sizeof why) == 0) {
            h->ctx = gw_plain(addr);
        } else {
            bench_csv_text(csv, "haproxy-pair", "missing", why);
            plc_free(&h->plc);
            n--;
        }
    }
    for (i = 0; i < n; i++) {
        paths[i].t = calloc((size_t)count, sizeof *paths[i].t);
        if (paths[i].t == NULL)
            gw_die("out of memory");
        for (r = 0; r < WARM; r++)
            gw_read10(&paths[i]);
        gw_counters_start(&paths[i]);
    }
    fprintf(stderr, GW_PROG ": %d paths, %d round trips each in %d rounds ...\n", n,
            count / ROUNDS * ROUNDS, ROUNDS);
    bench_csv_num(csv, "gateway", "requests_per_path", 0, count / ROUNDS * ROUNDS, "requests");
    bench_csv_num(csv, "gateway", "rounds", 0, ROUNDS, "rounds");
    /* Every round times every path in turn: a busy moment falls on all of them. */
    for (r = 0; r < ROUNDS; r++)
        for (i = 0; i < n; i++)
            for (int j = 0; j < count / ROUNDS; j++) {
                double t0 = gw_now_us();

                gw_read10(&paths[i]);
                paths[i].t[paths[i].n++] = gw_now_us() - t0;
            }
    for (i = 0; i < n; i++) {
        rtt_csv(&paths[i], csv);
        gw_counters_csv(&paths[i], csv);
    }
    fprintf(stderr, GW_PROG ": system calls: each path under strace -c -f ...\n");
    bench_csv_num(csv, "gateway", "strace_requests", 0, STRACE_COUNT, "requests");
    for (i = 0; i < n; i++) {
        if (paths[i].n_proc > 0 && gw_strace_run(&paths[i], STRACE_COUNT) != 0) {
            bench_csv_text(csv, "gateway", "strace", "strace is not installed or cannot attach");
            break;
        }
        for (int k = 0; k < paths[i].n_proc; k++) {
            char subject[128];

            snprintf(subject, sizeof subject, "%.39s/%.23s", paths[i].name, paths[i].proc[k].name);
            if (paths[i].proc[k].syscalls >= 0)
                bench_csv_num(csv, subject, "syscalls_strace", 0,
                              paths[i].proc[k].syscalls / STRACE_COUNT, "per_request");
        }
    }
    for (i = 0; i < n; i++)
        close_path(&paths[i]);
    fflush(csv);
    gw_load_rows(programs, n_prog, seconds, csv);
    gw_serial_rows(count, csv);
out:
    if (ferror(csv) || fclose(csv) != 0)
        gw_die("error writing the CSV");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", gw_dir);
    if (system(cmd) != 0) {
        /* a directory left in /tmp: nothing the figures depend on */
    }
    return 0;
}
