/* SPDX-License-Identifier: ISC */
/*
 * main.c - mbsc-bench: read the command line, run the measurement groups in
 * order and write the results as one CSV (common.h).  docs/bench.md says
 * what each figure means.
 */
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "bench.h"

/*
 * Default: about 2 minutes on a 2-core x86 server, a bit more on a
 * Raspberry Pi 4 (slower ciphers make the fixed-duration samples no longer,
 * but handshakes and round trips take longer).  Quick: the same rows in a
 * few seconds, for CI and for trying the options; its p99 rests on few
 * samples.
 */
static const struct bench_plan default_plan = {"default", 500000000, 301, 2000000, 301, 1000000,
                                               200,       250,       500, 100,     100};
static const struct bench_plan quick_plan = {"quick", 200000000, 31, 500000, 51, 200000,
                                             20,      100,       50, 20,     50};

static const char usage[] =
    "Usage: mbsc-bench [--quick] [--csv FILE] [--cpu-mhz N] [--only CIPHER,...]\n"
    "                  [--help] [--version]\n"
    "\n"
    "Measure mbsc's ciphers and secure channel on this machine (docs/bench.md says\n"
    "what and how) into one long CSV (cipher,metric,size_bytes,value,unit), from\n"
    "which bench/report.py makes the tables and the picture.  Progress goes to\n"
    "stderr.  A default run takes about 2 minutes.\n"
    "\n"
    "  --quick            fewer repetitions, same rows (under 15 s)\n"
    "  --csv FILE         the CSV to FILE instead of stdout\n"
    "  --cpu-mhz N        core clock for cycles per byte when the perf cycle\n"
    "                     counter is unavailable (default: estimated)\n"
    "  --only LIST        measure only these ciphers (comma-separated: chacha20,\n"
    "                     trivium, rabbit, enocoro128v2); the libsodium baselines\n"
    "                     are measured when chacha20 is in the list, the plaintext\n"
    "                     libmodbus round trip always\n"
    "  --help             this text\n"
    "  --version          print mbsc-bench's version and exit\n";

/* only[id] for each cipher in list; only[0] 1: a list was given. */
static int parse_only(const char *list, int only[MBSC_CIPHER_COUNT + 1])
{
    char buf[256], *save = NULL;

    if (strlen(list) >= sizeof buf)
        return bench_bad_arg("--only: list too long: '%s'", list);
    if (list[0] == ',' || list[strlen(list) - 1] == ',' || strstr(list, ",,") != NULL)
        return bench_bad_arg("--only needs a comma-separated list of ciphers, not '%s'", list);
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        const mbsc_cipher *c = mbsc_cipher_by_name(tok);
        if (c == NULL)
            return bench_bad_arg(
                "--only: unknown cipher '%s' (chacha20, trivium, rabbit, enocoro128v2)", tok);
        if (only[mbsc_cipher_id(c)]++)
            return bench_bad_arg("--only: cipher '%s' given twice", tok);
    }
    only[0] = 1;
    return 0;
}

/* Run one group, telling the user what is going on and how long it took. */
static void run_group(struct bench_ctx *ctx, const char *what, void (*group)(struct bench_ctx *))
{
    uint64_t t0 = bench_now_ns();

    fprintf(stderr, "%s: %s ...", bench_prog, what);
    group(ctx);
    fprintf(stderr, " %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
}

int main(int argc, char **argv)
{
    static struct bench_ctx ctx;
    int quick = 0, only[MBSC_CIPHER_COUNT + 1] = {0}, rc;
    const char *csv_path = NULL, *mhz = NULL, *only_list = NULL;
    const struct bench_option opts[] = {{"--quick", &quick, NULL},
                                        {"--csv", NULL, &csv_path},
                                        {"--cpu-mhz", NULL, &mhz},
                                        {"--only", NULL, &only_list},
                                        {NULL, NULL, NULL}};
    double cpu_mhz = 0;
    char *end = NULL;
    uint64_t start;
    FILE *csv;
    char buf[4096];
    size_t n;

    bench_prog = "mbsc-bench";
    if ((rc = bench_options(argc, argv, opts, usage)) != 0)
        return rc == 1 ? 0 : 2;
    if (mhz != NULL && ((cpu_mhz = strtod(mhz, &end)),
                        end == mhz || *end != '\0' || !(cpu_mhz >= 1.0 && cpu_mhz <= 100000.0)))
        return bench_bad_arg("--cpu-mhz needs a frequency in MHz between 1 and 100000, not '%s'",
                             mhz);
    if (only_list != NULL && parse_only(only_list, only) != 0)
        return 2;
    if (sodium_init() < 0)
        bench_fail("sodium_init failed");
    /* A peer closing a socket must not kill the run (the adapter already
     * avoids SIGPIPE; libmodbus's plain server path is ours to protect). */
    signal(SIGPIPE, SIG_IGN);
    csv = bench_csv_open(csv_path);
    if ((ctx.figures = tmpfile()) == NULL)
        bench_fail("cannot make a temporary file for the figures");
    ctx.plan = quick ? quick_plan : default_plan;
    for (unsigned id = 1; id <= MBSC_CIPHER_COUNT; id++)
        if (!only[0] || only[id])
            ctx.ciphers[ctx.n_ciphers++] = mbsc_cipher_by_id(id);
    ctx.baselines = !only[0] || only[MBSC_CIPHER_CHACHA20];

    bench_clock_init();
    start = bench_now_ns();
    bench_pin(ctx.pin_desc, sizeof ctx.pin_desc);
    bench_spin_ns(ctx.plan.warmup_ns);
    bench_cycles_init(&ctx.cycles, cpu_mhz);
    ctx.timer_overhead_ns = bench_clock_overhead_ns();

    fprintf(stderr, "%s: %s run; cycles: %s\n", bench_prog, ctx.plan.name,
            bench_cycles_short(&ctx.cycles));
    bench_footprint(&ctx);
    run_group(&ctx, "key and IV setup", bench_setup);
    run_group(&ctx, "keystream throughput, 16 B to 1 MiB", bench_stream);
    run_group(&ctx, "per-frame seal and open", bench_frame);
    run_group(&ctx, "every cipher implementation side by side", bench_impls);
    run_group(&ctx, "Noise handshakes", bench_handshake);
#ifdef MBSC_HAVE_LIBMODBUS
    run_group(&ctx, "Modbus round trips over loopback", bench_rtt);
#else
    snprintf(ctx.rtt_note, sizeof ctx.rtt_note,
             "round trips skipped: mbsc was built without libmodbus");
#endif

    bench_describe(&ctx, csv);
    rewind(ctx.figures);
    while ((n = fread(buf, 1, sizeof buf, ctx.figures)) > 0)
        fwrite(buf, 1, n, csv);
    if (ferror(ctx.figures))
        bench_fail("cannot read back the figures");
    bench_csv_close(csv, csv_path);
    fprintf(stderr, "%s: done in %.1f s\n", bench_prog, (double)(bench_now_ns() - start) / 1e9);
    return 0;
}
