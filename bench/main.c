/* SPDX-License-Identifier: ISC */
/*
 * main.c - mbsc-bench: run the measurement groups in order and write the
 * results as one CSV (csv.h; bench/report.py makes the tables).  See
 * docs/bench.md for what each figure means.
 *
 * Order: identify the machine and the clocks, pin, warm up; then footprint
 * (not timed), setup, throughput, per-frame latency, handshake, round trips.
 * Output files are opened before measuring, so that a mistyped path fails
 * at once instead of after two minutes.
 */
#include <errno.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "clock.h"
#include "csv.h"
#include "impls.h"
#include "machine.h"
#include "options.h"
#include "pin.h"

/*
 * The two plans.  Default: about 2 minutes on a 2-core x86 server, a bit
 * more on a Raspberry Pi 4 (slower ciphers make the fixed-duration samples
 * no longer, but handshakes and round trips take longer).  Quick: the same
 * rows in a few seconds, for CI and for trying the options; its p99 rests
 * on few samples.
 */
static const struct bench_plan default_plan = {
    .name = "default",
    .warmup_ns = 500000000,
    .stream_rounds = 301,
    .stream_sample_ns = 2000000,
    .setup_rounds = 301,
    .setup_sample_ns = 1000000,
    .frame_rounds = 200,
    .frame_per_round = 250,
    .handshake_rounds = 500,
    .rtt_rounds = 100,
    .rtt_per_round = 100,
};

static const struct bench_plan quick_plan = {
    .name = "quick",
    .warmup_ns = 200000000,
    .stream_rounds = 31,
    .stream_sample_ns = 500000,
    .setup_rounds = 51,
    .setup_sample_ns = 200000,
    .frame_rounds = 20,
    .frame_per_round = 100,
    .handshake_rounds = 50,
    .rtt_rounds = 20,
    .rtt_per_round = 50,
};

static FILE *open_output(const char *path, const char *what)
{
    FILE *f = fopen(path, "w");

    if (f == NULL) {
        fprintf(stderr, "%s: cannot write %s %s: %s\n", BENCH_PROG, what, path, strerror(errno));
        exit(2);
    }
    return f;
}

/* Run one group, telling the user what is going on and how long it took. */
static void run_group(struct bench_ctx *ctx, const char *what, void (*group)(struct bench_ctx *))
{
    uint64_t t0 = bench_now_ns();

    fprintf(stderr, "%s: %s ...", BENCH_PROG, what);
    group(ctx);
    fprintf(stderr, " %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
}

int main(int argc, char **argv)
{
    static struct bench_ctx ctx;
    struct bench_options opt;
    struct bench_machine machine;
    FILE *csv = stdout;
    uint64_t start;
    int rc = bench_parse_options(argc, argv, &opt), selected_any = 0;

    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (sodium_init() < 0)
        bench_fail("sodium_init failed");
    /* A peer closing a socket must not kill the run (the adapter already
     * avoids SIGPIPE; libmodbus's plain server path is ours to protect). */
    signal(SIGPIPE, SIG_IGN);
    if (opt.csv != NULL)
        csv = open_output(opt.csv, "CSV file");

    memset(&ctx, 0, sizeof ctx);
    ctx.plan = opt.quick ? quick_plan : default_plan;
    for (unsigned id = 1; id <= MBSC_CIPHER_COUNT; id++)
        selected_any |= opt.only[id];
    for (unsigned id = 1; id <= MBSC_CIPHER_COUNT; id++)
        if (!selected_any || opt.only[id])
            ctx.ciphers[ctx.n_ciphers++] = mbsc_cipher_by_id(id);
    ctx.baselines = !selected_any || opt.only[MBSC_CIPHER_CHACHA20];
    bench_results_init(&ctx.results);

    bench_machine_probe(&machine);
    bench_clock_init();
    start = bench_now_ns();
    bench_pin(ctx.pin_desc, sizeof ctx.pin_desc);
    bench_spin_ns(ctx.plan.warmup_ns);
    bench_cycles_init(&ctx.cycles, opt.cpu_mhz);
    ctx.timer_overhead_ns = bench_clock_overhead_ns();

    fprintf(stderr, "%s: %s run; cycles: %s\n", BENCH_PROG, ctx.plan.name,
            bench_cycles_short(&ctx.cycles));
    bench_footprint(&ctx);
    run_group(&ctx, "key and IV setup", bench_setup);
    run_group(&ctx, "keystream throughput, 16 B to 1 MiB", bench_stream);
    run_group(&ctx, "per-frame seal and open", bench_frame);
    run_group(&ctx, "every cipher implementation side by side", bench_impls);
    run_group(&ctx, "Noise handshakes", bench_handshake);
    run_group(&ctx, "Modbus round trips over loopback", bench_rtt);

    fputs(BENCH_CSV_HEADER "\n", csv);
    bench_describe(&ctx, &machine, csv);
    for (size_t i = 0; i < ctx.results.n; i++) {
        const struct bench_row *row = &ctx.results.rows[i];

        bench_csv_num(csv, row->cipher, row->metric, row->size_bytes, row->value, row->unit);
    }
    if (csv == stdout ? fflush(csv) != 0 || ferror(csv) : (ferror(csv) || fclose(csv) != 0))
        bench_fail("error writing %s", opt.csv != NULL ? opt.csv : "the CSV");
    fprintf(stderr, "%s: done in %.1f s\n", BENCH_PROG, (double)(bench_now_ns() - start) / 1e9);
    bench_cycles_close(&ctx.cycles);
    bench_results_free(&ctx.results);
    return 0;
}
