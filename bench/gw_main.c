/* SPDX-License-Identifier: ISC */
/*
 * gw_main.c - mbsc-gateway-bench (make bench-gateway): what a request pays
 * on its way to a PLC through mbsc-gateway and through the alternatives
 * (the paths of docs/bench.md), on loopback; then requests/s through one
 * server gateway and the serial line.  With --compare PATH another build's
 * mbsc-gateway gets its own gw1/gw2 paths ("-compared") in the same rounds,
 * and its own load runs.
 *
 * Every path has its own PLC and processes, so that each process's counters
 * belong to one path.  All paths are timed in the same interleaved rounds
 * (a busy moment of a shared machine falls on all of them), then each runs
 * once more under strace, which would slow the timed rounds.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <sodium.h>

#include "gw_bench.h"
#include "mbsc/modbus.h"
#ifdef MBSC_BENCH_TLS
#include "tls_client.h"
#endif

#define STRACE_COUNT 300 /* requests of the counted run */
#define MAX_PATHS    24

static struct gw_path paths[MAX_PATHS];
static int n_paths;

/* A path with its own PLC, for the caller to connect. */
static struct gw_path *new_path(const char *name, const char *desc)
{
    struct gw_path *p = &paths[n_paths++];

    if (n_paths > MAX_PATHS)
        bench_fail("too many paths");
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->desc, sizeof p->desc, "%s", desc);
    if (plc_start(&p->plc, 0) != 0)
        bench_fail("PLC");
    return p;
}

static void close_path(struct gw_path *p)
{
    int st;

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
    for (int i = p->n_proc - p->n_relay; i < p->n_proc; i++)
        if (kill(p->proc[i].pid, SIGTERM) == 0)
            waitpid(p->proc[i].pid, &st, 0);
    plc_free(&p->plc);
    bench_samples_free(&p->t);
}

/* A pair of relays (suite NULL: haproxy, else stunnel) as a path, or a row saying why not. */
static void relay_path(const char *name, const char *desc, const char *certs, const char *suite,
                       FILE *csv)
{
    char addr[64], why[512];
    struct gw_path *p = new_path(name, desc);

    if (gw_relay_pair(p, certs, suite, addr, sizeof addr, why, sizeof why) == 0) {
        p->ctx = gw_plain(addr);
        return;
    }
    bench_csv_text(csv, name, "missing", why);
    close_path(&paths[--n_paths]);
}

static void mbsc_paths(const char *program, const char *tag, const char *cipher)
{
    char name[40], up[MBSC_ADDRSTRLEN];
    const char *one[] = {"--ciphers", cipher, NULL};
    const char *key = gw_file("client.key"), *peer = gw_file("gw.pub");
    const char *client[] = {"client", "--listen",    "127.0.0.1:0", "--upstream", up,
                            "--key",  key,           "--peer",      peer,         "--cipher",
                            cipher,   "--log-level", "warning",     NULL};
    struct gw_path *p;

    snprintf(name, sizeof name, "gw1-%s%s", cipher, tag);
    p = new_path(name, "mbsc master -> server gw -> PLC");
    gw_start_server(&p->gw[p->n_gw++], program, p->plc.port, one);
    gw_add_proc(p, "server-gw", p->gw[0].pid);
    p->ctx = gw_secure(p->gw[0].addr, &gw_masters_kp[0], cipher);
    p->is_mbsc = 1;

    snprintf(name, sizeof name, "gw2-%s%s", cipher, tag);
    p = new_path(name, "plain -> client gw -> server gw -> PLC");
    gw_start_server(&p->gw[p->n_gw++], program, p->plc.port, one);
    snprintf(up, sizeof up, "%s", p->gw[0].addr);
    gw_program = program;
    if (!gw_spawn(&p->gw[p->n_gw++], client))
        bench_fail("the client gateway %s did not start", program);
    gw_add_proc(p, "client-gw", p->gw[1].pid); /* client side first, as on the path */
    gw_add_proc(p, "server-gw", p->gw[0].pid);
    p->ctx = gw_plain(p->gw[1].addr);
}

/* The TLS master and the stunnel pairs; a missing one says why in the CSV. */
static void tls_paths(const char *srcdir, FILE *csv)
{
#ifdef MBSC_BENCH_TLS
    static const char *const suites[][2] = {
        {"stunnel-chacha20poly1305", "TLS_CHACHA20_POLY1305_SHA256"},
        {"stunnel-aes128gcm", "TLS_AES_128_GCM_SHA256"}};
    static struct tls_client master;
    char why[512], certs[128], cert[200], key[200], ca[200], addr[64];
    const char *extra[] = {
        "--listen-tls", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key, "--tls-ca", ca, NULL};
    struct gw_path *p;

    snprintf(certs, sizeof certs, "%s", gw_file("tls"));
    if (mkdir(certs, 0700) != 0 || gw_tls_certs(srcdir, certs, why, sizeof why) != 0) {
        bench_csv_text(csv, "tls-master", "missing", why);
        return;
    }
    snprintf(cert, sizeof cert, "%s/gateway.pem", certs);
    snprintf(key, sizeof key, "%s/gateway.key", certs);
    snprintf(ca, sizeof ca, "%s/ca.pem", certs);
    p = new_path("tls-master", "Modbus/TCP Security master -> server gw -> PLC");
    gw_start_server(&p->gw[p->n_gw++], "tools/mbsc-gateway", p->plc.port, extra);
    gw_add_proc(p, "server-gw", p->gw[0].pid);
    if (gw_tls_address(&p->gw[0], addr, sizeof addr) != 0 ||
        gw_tls_master(&master, certs, addr, why, sizeof why) != 0)
        bench_fail("TLS master: %s", why);
    p->tls = &master;
    for (size_t s = 0; s < 2; s++)
        relay_path(suites[s][0], "plain -> stunnel -> TLS 1.3 -> stunnel -> PLC", certs,
                   suites[s][1], csv);
#else
    (void)srcdir;
    bench_csv_text(csv, "tls-master", "missing", "built without OpenSSL");
    bench_csv_text(csv, "stunnel-chacha20poly1305", "missing", "built without OpenSSL");
#endif
}

static void write_keys(void)
{
    char why[MBSC_WHY_SIZE], b64[MBSC_KEY_BASE64_SIZE];
    mbsc_keypair gw_client_kp; /* the client gateway's */
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
        bench_fail("keys");
    for (int i = 0; i < GW_MAX_MASTERS; i++) {
        if (mbsc_keypair_generate(&gw_masters_kp[i]) != MBSC_OK)
            bench_fail("keys");
        (void)mbsc_key_to_base64(b64, gw_masters_kp[i].public_key);
        fprintf(f, "%s master-%d\n", b64, i);
    }
    (void)mbsc_key_to_base64(b64, gw_client_kp.public_key);
    fprintf(f, "%s client-gateway\n", b64);
    mbsc_keypair_wipe(&gw_client_kp);
    if (fclose(f) != 0)
        bench_fail("allow-list");
}

/* The round trips and counters of every path, then each path under strace. */
static void path_rows(int count, FILE *csv)
{
    int i;

    fprintf(stderr, "%s: %d paths, %d round trips each in %d rounds ...\n", bench_prog, n_paths,
            count / GW_ROUNDS * GW_ROUNDS, GW_ROUNDS);
    bench_csv_num(csv, "gateway", "requests_per_path", 0, count / GW_ROUNDS * GW_ROUNDS,
                  "requests");
    bench_csv_num(csv, "gateway", "rounds", 0, GW_ROUNDS, "rounds");
    gw_time(paths, n_paths, count);
    for (i = 0; i < n_paths; i++) {
        bench_csv_text(csv, paths[i].name, "path", paths[i].desc);
        gw_rtt_csv(&paths[i], csv);
        gw_counters_csv(&paths[i], csv);
    }
    fprintf(stderr, "%s: system calls: each path under strace -c -f ...\n", bench_prog);
    bench_csv_num(csv, "gateway", "strace_requests", 0, STRACE_COUNT, "requests");
    for (i = 0; i < n_paths; i++)
        if (gw_strace_csv(&paths[i], STRACE_COUNT, csv) != 0) {
            bench_csv_text(csv, "gateway", "strace", "strace is not installed or cannot attach");
            break;
        }
}

static const char usage[] =
    "Usage: mbsc-gateway-bench [--count N>=100] [--seconds S>=1] [--csv FILE]\n"
    "         [--compare /ABS/PATH/mbsc-gateway] [--srcdir DIR] [--serial] [--help] [--version]\n"
    "(docs/bench.md says what each option and figure is)\n";

int main(int argc, char **argv)
{
    int count = 2000, seconds = 2, serial_only = 0, n_prog = 1, rc;
    const char *programs[2] = {"tools/mbsc-gateway", NULL}, *srcdir = ".", *csv_path = NULL;
    const char *count_s = NULL, *seconds_s = NULL;
    const struct bench_option opts[] = {{"--count", NULL, &count_s},
                                        {"--seconds", NULL, &seconds_s},
                                        {"--compare", NULL, &programs[1]},
                                        {"--csv", NULL, &csv_path},
                                        {"--srcdir", NULL, &srcdir},
                                        {"--serial", &serial_only, NULL},
                                        {NULL, NULL, NULL}};
    struct rlimit rl;
    FILE *csv;
    char cmd[200], addr[64];

    bench_prog = "mbsc-gateway-bench";
    if ((rc = bench_options(argc, argv, opts, usage)) != 0)
        return rc == 1 ? 0 : 2;
    if (count_s != NULL && (count = atoi(count_s)) < 100)
        return bench_bad_arg("--count needs a number of requests of at least 100, not '%s'",
                             count_s);
    if (seconds_s != NULL && (seconds = atoi(seconds_s)) < 1)
        return bench_bad_arg("--seconds needs a number of seconds of at least 1, not '%s'",
                             seconds_s);
    if (programs[1] != NULL && programs[1][0] != '/')
        return bench_bad_arg("--compare needs an absolute path, not '%s'", programs[1]);
    n_prog += programs[1] != NULL;
    if (sodium_init() < 0)
        bench_fail("sodium_init");
    signal(SIGPIPE, SIG_IGN);
    /* 1000 masters need more than the usual 1024 descriptors, here and in
     * the gateway, which inherits the limit. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
    csv = bench_csv_open(csv_path);
    write_keys();
    bench_csv_text(csv, "gateway", "program", bench_prog);
    if (n_prog == 2)
        bench_csv_text(csv, "gateway", "compared", programs[1]);
    if (!serial_only) {
        struct gw_path *p = new_path("direct", "plain client -> PLC");

        fprintf(stderr, "%s: starting the paths ...\n", bench_prog);
        snprintf(addr, sizeof addr, "127.0.0.1:%d", p->plc.port);
        p->ctx = gw_plain(addr);
        for (int k = 0; k < n_prog; k++)
            for (unsigned c = 1; c <= MBSC_CIPHER_COUNT; c++)
                mbsc_paths(programs[k], k == 0 ? "" : "-compared",
                           mbsc_cipher_name(mbsc_cipher_by_id(c)));
        tls_paths(srcdir, csv);
        relay_path("haproxy-pair", "plain -> haproxy -> haproxy -> PLC (TCP mode)", NULL, NULL,
                   csv);
        path_rows(count, csv);
        for (int i = 0; i < n_paths; i++)
            close_path(&paths[i]);
        fflush(csv);
        gw_load_rows(programs, n_prog, seconds, csv);
    }
    gw_serial_rows(count, csv);
    bench_csv_close(csv, csv_path);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", gw_dir);
    (void)!system(cmd); /* a directory left in /tmp: nothing the figures depend on */
    return 0;
}
