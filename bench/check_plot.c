/* SPDX-License-Identifier: ISC */
/*
 * check_plot.c - what make bench's picture says (plot_script.h) and the
 * gateway figures it reads (gateway_csv.h): a Check suite run by make check.
 * It lives beside the bench, not in tests/, because the gateway bench
 * already uses tests/'s harness: a test of the bench in tests/ would make
 * the two directories a ring.
 *
 * The figures are made up (chosen to lie outside any fixed axis range) and
 * go into a bench context as the measuring groups would put them; the test
 * reads the data tables and the gnuplot script written from it: each panel
 * says which way is better and its axis covers its data, each line names
 * its implementation, a --quick run is marked, and the round-trip panel
 * has plaintext, the synchronous path, the pump and, when make
 * bench-gateway's CSV was read, one and two gateways with what they add.
 * When configure found gnuplot, gnuplot draws each script into a PNG.
 */
#include <check.h>
#include <errno.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "build_info.h"
#include "gateway_csv.h"
#include "machine.h"
#include "plot_script.h"

Suite *bench_plot_suite(void);

extern char **environ;

static struct bench_ctx ctx;
static struct bench_machine machine;
static char dir[256];
static char out_png[512] = "/nonexistent/out.png"; /* where the script says to draw */

/* Made-up figures: throughput 3 to 90000 MiB/s, latency 20 to 200000 ns,
 * round trips 20 to 9000 us, and the gateway bench's three paths. */
#define TP_MIN    3.0
#define TP_MAX    90000.0
#define LAT_MIN   20.0
#define LAT_MAX   200000.0
#define RTT_MIN   20.0
#define RTT_MAX   9000.0
#define GW_DIRECT 26.8
#define GW_ONE    63.1
#define GW_TWO    108.5

/* Which round trips fill() puts in. */
enum { RTT_NONE, RTT_PLAIN, RTT_ALL };

static void fill(const char *plan, int with_rtt)
{
    static const char *const ops[] = {"seal_ns_p50", "seal_ns_p99", "open_ns_p50", "open_ns_p99"};
    const char *names[BENCH_MAX_STREAM_ROWS];
    size_t n;

    bench_results_free(&ctx.results);
    bench_results_free(&ctx.gateway);
    memset(&ctx, 0, sizeof ctx);
    ctx.plan.name = plan;
    for (unsigned id = 1; id <= MBSC_CIPHER_COUNT; id++)
        ctx.ciphers[ctx.n_ciphers++] = mbsc_cipher_by_id(id);
    ctx.baselines = 1;
    bench_results_init(&ctx.results);
    bench_results_init(&ctx.gateway);
    n = bench_stream_rows(&ctx, names);
    for (size_t i = 0; i < n; i++)
        for (size_t z = 0; z < BENCH_N_STREAM_SIZES; z++)
            bench_results_add(&ctx.results, names[i], "throughput", bench_stream_sizes[z],
                              i == 0 && z == 0   ? TP_MIN
                              : i == 1 && z == 5 ? TP_MAX
                                                 : 500.0,
                              "MiB/s");
    for (size_t i = 0; i < ctx.n_ciphers + 1; i++) {
        const char *name = i < ctx.n_ciphers ? mbsc_cipher_name(ctx.ciphers[i]) : BENCH_SODIUM_AEAD;
        for (size_t z = 0; z < BENCH_N_FRAME_SIZES; z++)
            for (size_t o = 0; o < 4; o++)
                bench_results_add(&ctx.results, name, ops[o], bench_frame_sizes[z],
                                  i == 0 && z == 0 && o == 0   ? LAT_MIN
                                  : i == 3 && z == 1 && o == 3 ? LAT_MAX
                                                               : 300.0,
                                  "ns");
    }
    snprintf(machine.cpu, sizeof machine.cpu, "Test CPU");
    machine.compiler = "cc 1.0";
    if (with_rtt == RTT_NONE) { /* as mbsc-bench built without libmodbus */
        snprintf(ctx.rtt_note, sizeof ctx.rtt_note, "round trips skipped: no libmodbus");
        return;
    }
    bench_results_add(&ctx.results, BENCH_PLAINTEXT, "rtt_us_p50", BENCH_NO_SIZE, RTT_MIN, "us");
    bench_results_add(&ctx.results, BENCH_PLAINTEXT, "rtt_us_p99", BENCH_NO_SIZE, 60.0, "us");
    if (with_rtt == RTT_PLAIN) { /* as when the adapter could not run */
        snprintf(ctx.rtt_note, sizeof ctx.rtt_note, "mbsc round trips skipped: made-up reason");
        return;
    }
    for (size_t i = 0; i < ctx.n_ciphers; i++) {
        char pump[40];
        const char *name = mbsc_cipher_name(ctx.ciphers[i]);

        snprintf(pump, sizeof pump, "%s-pump", name);
        bench_results_add(&ctx.results, name, "rtt_us_p50", BENCH_NO_SIZE, 21.0, "us");
        bench_results_add(&ctx.results, name, "rtt_us_p99", BENCH_NO_SIZE, 70.0, "us");
        bench_results_add(&ctx.results, pump, "rtt_us_p50", BENCH_NO_SIZE, 80.0, "us");
        bench_results_add(&ctx.results, pump, "rtt_us_p99", BENCH_NO_SIZE, i == 2 ? RTT_MAX : 200.0,
                          "us");
    }
    snprintf(ctx.rtt_path, sizeof ctx.rtt_path, "sync");
    snprintf(ctx.rtt_note, sizeof ctx.rtt_note, "127.0.0.1, made-up figures");
}

static void add_gateway(void)
{
    bench_results_add(&ctx.gateway, BENCH_GW_DIRECT, "rtt_us_p50", BENCH_NO_SIZE, GW_DIRECT, "us");
    bench_results_add(&ctx.gateway, BENCH_GW_DIRECT, "rtt_us_p99", BENCH_NO_SIZE, 87.0, "us");
    bench_results_add(&ctx.gateway, BENCH_GW_ONE, "rtt_us_p50", BENCH_NO_SIZE, GW_ONE, "us");
    bench_results_add(&ctx.gateway, BENCH_GW_ONE, "rtt_us_p99", BENCH_NO_SIZE, 157.0, "us");
    bench_results_add(&ctx.gateway, BENCH_GW_TWO, "rtt_us_p50", BENCH_NO_SIZE, GW_TWO, "us");
    bench_results_add(&ctx.gateway, BENCH_GW_TWO, "rtt_us_p99", BENCH_NO_SIZE, 228.0, "us");
    snprintf(ctx.gateway_note, sizeof ctx.gateway_note, "gateways: test run of 2026-01-02");
}

static char *slurp(const char *name)
{
    char path[512];
    FILE *f;
    char *buf = calloc(1, 1 << 20);
    size_t n;

    ck_assert_ptr_nonnull(buf);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s was not written", path);
    n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Write the plot's files for ctx and return the script. */
static char *write_plot(void)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(dir, sizeof dir, "%s/check-bench-plot.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(bench_plot_write(&ctx, &machine, dir, out_png), 0);
    return slurp("plot.gp");
}

static void remove_plot(void)
{
    char path[512];

    for (size_t i = 0; i < BENCH_N_PLOT_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, bench_plot_files[i]);
        (void)unlink(path);
    }
    ck_assert_msg(rmdir(dir) == 0, "%s: %s (a file the test does not know of?)", dir,
                  strerror(errno));
}

/* The text of the panel whose title starts with title: up to the next plot. */
static const char *panel(const char *script, const char *title, char *out, size_t cap)
{
    char key[128];
    const char *p, *end;

    snprintf(key, sizeof key, "set title '%s", title);
    p = strstr(script, key);
    ck_assert_msg(p != NULL, "no panel titled '%s...'", title);
    end = strstr(p, "\nplot ");
    ck_assert_msg(end != NULL, "panel '%s' draws nothing", title);
    snprintf(out, cap, "%.*s", (int)(end - p), p);
    return out;
}

static void check_yrange(const char *text, const char *title, double lo, double hi)
{
    const char *p = strstr(text, "set yrange [");
    double a, b;

    ck_assert_msg(p != NULL, "panel '%s' has no y range", title);
    ck_assert_msg(sscanf(p, "set yrange [%lf:%lf]", &a, &b) == 2, "panel '%s': %.40s", title, p);
    ck_assert_msg(a <= lo && b >= hi, "panel '%s': y range [%g:%g] does not hold %g to %g", title,
                  a, b, lo, hi);
    /* Log axes: within a decade or two of the data, not a fixed guess. */
    ck_assert_msg(a >= lo / 100 && b <= hi * 100, "panel '%s': y range [%g:%g] is far from %g-%g",
                  title, a, b, lo, hi);
}

START_TEST(test_better_and_ranges)
{
    char text[8192];
    char *script;

    fill("default", RTT_ALL);
    script = write_plot();
    panel(script, "Keystream throughput", text, sizeof text);
    ck_assert_msg(strstr(text, "higher is better") != NULL, "throughput: no 'higher is better'");
    check_yrange(text, "Keystream throughput", TP_MIN, TP_MAX);
    panel(script, "Per-frame latency", text, sizeof text);
    ck_assert_msg(strstr(text, "lower is better") != NULL, "latency: no 'lower is better'");
    check_yrange(text, "Per-frame latency", LAT_MIN, LAT_MAX);
    panel(script, "Modbus request round trip", text, sizeof text);
    ck_assert_msg(strstr(text, "lower is better") != NULL, "round trip: no 'lower is better'");
    check_yrange(text, "Modbus request round trip", RTT_MIN, RTT_MAX);
    free(script);
    remove_plot();
}
END_TEST

START_TEST(test_lines_name_implementation)
{
    char want[128], *script, *latency;

    fill("default", RTT_ALL);
    script = write_plot();
    latency = slurp("latency.dat");
    for (size_t i = 0; i < ctx.n_ciphers; i++) {
        const char *name = mbsc_cipher_name(ctx.ciphers[i]);
        const char *impl = mbsc_cipher_impl_selected(ctx.ciphers[i]);

        ck_assert_ptr_nonnull(impl);
        snprintf(want, sizeof want, "'%s (%s)'", name, impl);
        ck_assert_msg(strstr(script, want) != NULL, "no line titled %s", want);
        snprintf(want, sizeof want, "%s %s", name, impl);
        ck_assert_msg(strstr(latency, want) != NULL, "latency.dat: no '%s'", want);
    }
    snprintf(want, sizeof want, "'%s (libsodium %s)'", BENCH_SODIUM_STREAM,
             sodium_version_string());
    ck_assert_msg(strstr(script, want) != NULL, "no line titled %s", want);
    free(latency);
    free(script);
    remove_plot();
}
END_TEST

START_TEST(test_quick_marked)
{
    char *script;

    fill("quick", RTT_ALL);
    script = write_plot();
    ck_assert_msg(strstr(script, "--quick") != NULL, "a quick run is not marked");
    free(script);
    remove_plot();
    fill("default", RTT_ALL);
    script = write_plot();
    ck_assert_msg(strstr(script, "--quick") == NULL, "a default run is marked quick");
    free(script);
    remove_plot();
}
END_TEST

/* The bar of rtt.dat named name whose detail contains detail: its median and note. */
static int find_bar(const char *table, const char *name, const char *detail, double *p50,
                    char *note, size_t note_cap)
{
    char line[512];
    const char *p = table;

    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char n[64], d[64], t[64];
        double a, b;
        int x;
        unsigned rgb;

        snprintf(line, sizeof line, "%.*s", (int)len, p);
        p += len + (nl != NULL);
        if (sscanf(line, "%d \"%63[^\"]\" \"%63[^\"]\" %lf %lf %u \"%63[^\"]\"", &x, n, d, &a, &b,
                   &rgb, t) == 7 &&
            strcmp(n, name) == 0 && strstr(d, detail) != NULL) {
            *p50 = a;
            snprintf(note, note_cap, "%s", t);
            return 1;
        }
    }
    return 0;
}

START_TEST(test_round_trip_panel)
{
    char note[64], *script, *table;
    double v;

    fill("default", RTT_ALL);
    add_gateway();
    script = write_plot();
    table = slurp("rtt.dat");
    ck_assert_msg(find_bar(table, "plaintext", "libmodbus", &v, note, sizeof note),
                  "no plaintext bar in:\n%s", table);
    ck_assert(v == RTT_MIN);
    ck_assert_msg(find_bar(table, "chacha20", "sync", &v, note, sizeof note), "no sync bar");
    ck_assert(v == 21.0);
    ck_assert_str_eq(note, "+1.0 us");
    ck_assert_msg(find_bar(table, "chacha20", "pump", &v, note, sizeof note), "no pump bar");
    ck_assert(v == 80.0);
    ck_assert_str_eq(note, "+60.0 us");
    ck_assert_msg(find_bar(table, "direct", "gateway bench", &v, note, sizeof note),
                  "no direct bar");
    ck_assert(v == GW_DIRECT);
    ck_assert_msg(find_bar(table, "1 gateway", "", &v, note, sizeof note), "no 1-gateway bar");
    ck_assert(v == GW_ONE);
    ck_assert_str_eq(note, "+36.3 us");
    ck_assert_msg(find_bar(table, "2 gateways", "", &v, note, sizeof note), "no 2-gateway bar");
    ck_assert(v == GW_TWO);
    ck_assert_str_eq(note, "+81.7 us");
    ck_assert_msg(strstr(script, ctx.gateway_note) != NULL, "the gateway figures' source is not "
                                                            "named");
    free(table);
    free(script);
    remove_plot();
}
END_TEST

/* The library's round trips could not be measured: the panel says why. */
START_TEST(test_round_trip_panel_without_mbsc)
{
    char note[64], *script, *table;
    double v;

    fill("default", RTT_PLAIN);
    add_gateway();
    script = write_plot();
    table = slurp("rtt.dat");
    ck_assert_msg(find_bar(table, "plaintext", "libmodbus", &v, note, sizeof note),
                  "no plaintext bar");
    ck_assert_msg(!find_bar(table, "chacha20", "", &v, note, sizeof note), "a chacha20 bar");
    ck_assert_msg(find_bar(table, "2 gateways", "", &v, note, sizeof note), "no 2-gateway bar");
    ck_assert_msg(strstr(script, "mbsc round trips skipped: made-up reason") != NULL,
                  "the panel does not say why the library's bars are missing");
    free(table);
    free(script);
    remove_plot();
}
END_TEST

START_TEST(test_round_trip_panel_without_gateways)
{
    char note[64], *script, *table;
    double v;

    fill("default", RTT_ALL);
    script = write_plot();
    table = slurp("rtt.dat");
    ck_assert_msg(find_bar(table, "chacha20", "pump", &v, note, sizeof note), "no pump bar");
    ck_assert_msg(!find_bar(table, "1 gateway", "", &v, note, sizeof note), "a gateway bar");
    ck_assert_msg(strstr(script, "make bench-gateway") != NULL,
                  "the panel does not say how to add the gateways");
    free(table);
    free(script);
    remove_plot();
}
END_TEST

/* gnuplot draws the script: the PNG exists and is one. */
static void draw(void)
{
    const char *tmp = getenv("TMPDIR");
    char script[600], gnuplot[] = BENCH_BUILD_GNUPLOT, *argv[3], magic[8] = {0};
    pid_t pid;
    int status = 0;
    FILE *f;

    snprintf(out_png, sizeof out_png, "%s/check-bench-plot-%ld.png", tmp && tmp[0] ? tmp : "/tmp",
             (long)getpid());
    free(write_plot());
    snprintf(script, sizeof script, "%s/plot.gp", dir);
    argv[0] = gnuplot;
    argv[1] = script;
    argv[2] = NULL;
    ck_assert_int_eq(posix_spawnp(&pid, BENCH_BUILD_GNUPLOT, NULL, NULL, argv, environ), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "gnuplot failed on %s", script);
    f = fopen(out_png, "rb");
    ck_assert_msg(f != NULL, "gnuplot wrote no %s", out_png);
    ck_assert_int_eq((int)fread(magic, 1, 8, f), 8);
    fclose(f);
    ck_assert_msg(memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0, "%s is not a PNG", out_png);
    (void)unlink(out_png);
    remove_plot();
}

START_TEST(test_gnuplot_draws)
{
    fill("quick", RTT_ALL);
    add_gateway();
    draw();
    fill("default", RTT_ALL);
    draw();
    fill("default", RTT_PLAIN);
    add_gateway();
    draw();
    fill("default", RTT_NONE);
    draw();
}
END_TEST

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_gateway_csv)
{
    char path[256], why[512];
    struct bench_results r;
    double v;
    const char *tmp = getenv("TMPDIR");

    snprintf(path, sizeof path, "%s/check-bench-plot-%ld.csv", tmp && tmp[0] ? tmp : "/tmp",
             (long)getpid());
    bench_results_init(&r);
    write_file(path, "cipher,metric,size_bytes,value,unit\n"
                     "gateway-direct,rtt_us_p50,,26.751,us\n"
                     "gateway-direct,rtt_us_p99,,87.336,us\n"
                     "gateway-one,rtt_us_p50,,63.149,us\n"
                     "gateway-two,rtt_us_p50,,108.485,us\n"
                     "gateway-one,rps_inflight_1,,14409,requests/s\n");
    ck_assert_msg(bench_gateway_csv_read(path, &r, why, sizeof why) == 0, "%s", why);
    ck_assert(bench_results_get(&r, BENCH_GW_TWO, "rtt_us_p50", BENCH_NO_SIZE, &v));
    ck_assert(v == 108.485);
    bench_results_free(&r);

    /* mbsc-bench's own CSV given by mistake: refused at its first row. */
    write_file(path, "cipher,metric,size_bytes,value,unit\nchacha20,setup_ns,,20.6,ns\n");
    ck_assert_int_eq(bench_gateway_csv_read(path, &r, why, sizeof why), -1);
    ck_assert_msg(strstr(why, ":2: 'chacha20' is not a path of the gateway bench") != NULL, "%s",
                  why);
    ck_assert_msg(strstr(why, "make bench-gateway") != NULL, "%s", why);
    bench_results_free(&r);

    /* A file cut short: the two gateways' row is missing. */
    write_file(path, "cipher,metric,size_bytes,value,unit\n"
                     "gateway-direct,rtt_us_p50,,26.751,us\n"
                     "gateway-one,rtt_us_p50,,63.149,us\n");
    ck_assert_int_eq(bench_gateway_csv_read(path, &r, why, sizeof why), -1);
    ck_assert_msg(strstr(why, "no gateway-two,rtt_us_p50 row") != NULL, "%s", why);
    bench_results_free(&r);

    /* No header; a bad number. */
    write_file(path, "gateway-direct,rtt_us_p50,,26.751,us\n");
    ck_assert_int_eq(bench_gateway_csv_read(path, &r, why, sizeof why), -1);
    ck_assert_msg(strstr(why, ":1: not the header") != NULL, "%s", why);
    bench_results_free(&r);
    write_file(path, "cipher,metric,size_bytes,value,unit\ngateway-one,rtt_us_p50,,6x,us\n");
    ck_assert_int_eq(bench_gateway_csv_read(path, &r, why, sizeof why), -1);
    ck_assert_msg(strstr(why, ":2: bad value '6x'") != NULL, "%s", why);
    bench_results_free(&r);
    (void)unlink(path);

    ck_assert_int_eq(bench_gateway_csv_read(path, &r, why, sizeof why), -1);
    ck_assert_msg(strstr(why, "cannot read") != NULL && strstr(why, "make bench-gateway") != NULL,
                  "%s", why);
    bench_results_free(&r);
}
END_TEST

Suite *bench_plot_suite(void)
{
    Suite *s = suite_create("bench_plot");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_better_and_ranges);
    tcase_add_test(tc, test_lines_name_implementation);
    tcase_add_test(tc, test_quick_marked);
    tcase_add_test(tc, test_round_trip_panel);
    tcase_add_test(tc, test_round_trip_panel_without_gateways);
    tcase_add_test(tc, test_round_trip_panel_without_mbsc);
    tcase_add_test(tc, test_gateway_csv);
    /* Drawing needs the gnuplot configure found; without one this case is
     * not run (and says so), the others still check the script. */
    if (BENCH_BUILD_GNUPLOT[0] != '\0') {
        tcase_add_test(tc, test_gnuplot_draws);
        tcase_set_timeout(tc, 60);
    } else {
        fprintf(stderr,
                "check_bench_plot: configure found no gnuplot: the scripts are not drawn\n");
    }
    suite_add_tcase(s, tc);
    return s;
}
