/* SPDX-License-Identifier: ISC */
/*
 * report.c - the human tables (see report.h).  Everything shown comes from
 * the results table; a figure that was not measured (a cipher left out with
 * --only, RTT without libmodbus) shows as "-".
 */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "config.h"

#include "bench.h"
#include "clock.h"
#include "code_sizes.h"
#include "impls.h"
#include "paper.h"
#include "report.h"
#include "table.h"

/* Three significant figures or so: enough for figures that vary by a few
 * percent from run to run, short enough to keep the tables narrow. */
static void fmt(char *buf, size_t len, double v)
{
    /* Counts (bytes) and figures of 100 or more need no decimals. */
    if (v >= 100.0 || v == 0.0 || (v >= 0 && v < 1e9 && v == (double)(long)v))
        snprintf(buf, len, "%.0f", v);
    else if (v >= 10.0)
        snprintf(buf, len, "%.1f", v);
    else
        snprintf(buf, len, "%.2f", v);
}

/* A cell holding one result, or "-". */
static void cell_result(struct table *t, const struct bench_ctx *ctx, const char *cipher,
                        const char *metric, size_t size)
{
    double v;
    char buf[32];

    if (!bench_results_get(&ctx->results, cipher, metric, size, &v)) {
        table_cell(t, "-");
        return;
    }
    fmt(buf, sizeof buf, v);
    table_cell(t, "%s", buf);
}

/* A cell "median / p99" for a latency pair, or "-". */
static void cell_pair(struct table *t, const struct bench_ctx *ctx, const char *cipher,
                      const char *p50, const char *p99, size_t size)
{
    double a, b;
    char x[32], y[32];

    if (!bench_results_get(&ctx->results, cipher, p50, size, &a) ||
        !bench_results_get(&ctx->results, cipher, p99, size, &b)) {
        table_cell(t, "-");
        return;
    }
    fmt(x, sizeof x, a);
    fmt(y, sizeof y, b);
    table_cell(t, "%s / %s", x, y);
}

/* The implementation behind an mbsc cipher's rows ("-" for the baselines):
 * the one the registry selects, which every group used. */
static const char *impl_of(const char *name)
{
    const mbsc_cipher *c = mbsc_cipher_by_name(name);
    const char *impl = c != NULL ? mbsc_cipher_impl_selected(c) : NULL;

    return impl != NULL ? impl : (c != NULL ? "?" : "-");
}

static void size_label(char *buf, size_t len, size_t size)
{
    if (size >= 1048576 && size % 1048576 == 0)
        snprintf(buf, len, "%zu MiB", size / 1048576);
    else if (size >= 1024 && size % 1024 == 0)
        snprintf(buf, len, "%zu KiB", size / 1024);
    else
        snprintf(buf, len, "%zu B", size);
}

static void emit(const struct table *t, FILE *out, int markdown)
{
    if (markdown)
        table_print_markdown(t, out);
    else
        table_print_text(t, out);
}

/* Table 1: laid out like the study's, at 1 MiB, with its Pi 4 figures. */
static void table_paper(struct table *t, const struct bench_ctx *ctx)
{
    const char *names[BENCH_MAX_STREAM_ROWS];
    size_t n = bench_stream_rows(ctx, names), mib = 1048576;

    table_init(t, "The study's table on this machine: encrypting 1 MiB, beside its Raspberry Pi 4 "
                  "figures");
    table_col(t, "cipher");
    table_col(t, "impl");
    table_col(t, "time 1 MiB (us)");
    table_col(t, "MiB/s");
    table_col(t, "cycles/B");
    table_col(t, "state B");
    table_col(t, "code B");
    table_col(t, "Pi 4 MiB/s");
    table_col(t, "Pi 4 time (us)*");
    table_col(t, "Pi 4 cycles/B*");
    table_col(t, "here / Pi 4");
    for (size_t i = 0; i < n; i++) {
        double mibps, paper;
        char buf[32];
        int have = bench_results_get(&ctx->results, names[i], "throughput", mib, &mibps);

        table_row(t);
        table_cell(t, "%s", names[i]);
        table_cell(t, "%s", impl_of(names[i]));
        if (have && mibps > 0) {
            fmt(buf, sizeof buf, 1e6 / mibps);
            table_cell(t, "%s", buf);
        } else {
            table_cell(t, "-");
        }
        cell_result(t, ctx, names[i], "throughput", mib);
        cell_result(t, ctx, names[i], "cpb", mib);
        cell_result(t, ctx, names[i], "state_bytes", BENCH_NO_SIZE);
        cell_result(t, ctx, names[i], "code_bytes", BENCH_NO_SIZE);
        if (bench_paper_mibps(names[i], &paper)) {
            fmt(buf, sizeof buf, paper);
            table_cell(t, "%s", buf);
            fmt(buf, sizeof buf, 1e6 / paper);
            table_cell(t, "%s", buf);
            fmt(buf, sizeof buf, BENCH_PAPER_MHZ * 1e6 / (paper * 1048576.0));
            table_cell(t, "%s", buf);
            if (have)
                table_cell(t, "%.1fx", mibps / paper);
            else
                table_cell(t, "-");
        } else {
            table_cell(t, "-");
            table_cell(t, "-");
            table_cell(t, "-");
            table_cell(t, "-");
        }
    }
    table_note(t, "Pi 4: the study, %s.", BENCH_PAPER_BOARD);
    table_note(t,
               "* derived from the study's throughput: 1 MiB / throughput, and %.0f MHz / "
               "(bytes per second).",
               BENCH_PAPER_MHZ);
    table_note(t, "cycles/B: %s.  state B: mbsc_cipher_state_bytes.",
               bench_cycles_short(&ctx->cycles));
    table_note(t, "code B: %s.", BENCH_CODE_SIZE_WHAT);
}

/* Throughput or cycles per byte at every size. */
static void table_sizes(struct table *t, const struct bench_ctx *ctx, const char *metric,
                        const char *title)
{
    const char *names[BENCH_MAX_STREAM_ROWS];
    size_t n = bench_stream_rows(ctx, names);

    table_init(t, title);
    table_col(t, "cipher");
    table_col(t, "impl");
    for (size_t z = 0; z < BENCH_N_STREAM_SIZES; z++) {
        char label[32];
        size_label(label, sizeof label, bench_stream_sizes[z]);
        table_col(t, label);
    }
    for (size_t i = 0; i < n; i++) {
        table_row(t);
        table_cell(t, "%s", names[i]);
        table_cell(t, "%s", impl_of(names[i]));
        for (size_t z = 0; z < BENCH_N_STREAM_SIZES; z++)
            cell_result(t, ctx, names[i], metric, bench_stream_sizes[z]);
    }
}

static void table_vs_sodium(struct table *t, const struct bench_ctx *ctx)
{
    char title[128];

    snprintf(title, sizeof title, "ChaCha20: mbsc (%s) / libsodium (SIMD where the CPU has it)",
             impl_of("chacha20"));
    table_init(t, title);
    table_col(t, "message");
    table_col(t, "mbsc MiB/s");
    table_col(t, "libsodium MiB/s");
    table_col(t, "mbsc / libsodium");
    table_col(t, "libsodium AEAD MiB/s");
    for (size_t z = 0; z < BENCH_N_STREAM_SIZES; z++) {
        double ours, theirs;
        char label[32];

        size_label(label, sizeof label, bench_stream_sizes[z]);
        table_row(t);
        table_cell(t, "%s", label);
        cell_result(t, ctx, "chacha20", "throughput", bench_stream_sizes[z]);
        cell_result(t, ctx, BENCH_SODIUM_STREAM, "throughput", bench_stream_sizes[z]);
        if (bench_results_get(&ctx->results, "chacha20", "throughput", bench_stream_sizes[z],
                              &ours) &&
            bench_results_get(&ctx->results, BENCH_SODIUM_STREAM, "throughput",
                              bench_stream_sizes[z], &theirs) &&
            theirs > 0)
            table_cell(t, "%.2f", ours / theirs);
        else
            table_cell(t, "-");
        cell_result(t, ctx, BENCH_SODIUM_AEAD, "throughput", bench_stream_sizes[z]);
    }
    table_note(t, "libsodium's stream restarts at block 0 on every call: a message shorter "
                  "than 64 bytes costs it a whole block, while mbsc keeps the rest for the "
                  "next call.");
}

static void table_setup(struct table *t, const struct bench_ctx *ctx)
{
    table_init(t, "Setup and memory footprint");
    table_col(t, "cipher");
    table_col(t, "impl");
    table_col(t, "setup (ns)");
    table_col(t, "state B");
    table_col(t, "session B");
    table_col(t, "code B");
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        const char *name = mbsc_cipher_name(ctx->ciphers[i]);
        table_row(t);
        table_cell(t, "%s", name);
        table_cell(t, "%s", impl_of(name));
        cell_result(t, ctx, name, "setup_ns", BENCH_NO_SIZE);
        cell_result(t, ctx, name, "state_bytes", BENCH_NO_SIZE);
        cell_result(t, ctx, name, "session_bytes", BENCH_NO_SIZE);
        cell_result(t, ctx, name, "code_bytes", BENCH_NO_SIZE);
    }
    table_note(t, "setup: one mbsc_stream_init (key + IV), median.  session B: "
                  "mbsc_session_footprint(), one connection with its buffers, Modbus "
                  "configuration (260-byte payloads).");
    table_note(t, "code B: %s, all implementations of the cipher.", BENCH_CODE_SIZE_WHAT);
}

static void table_frames(struct table *t, const struct bench_ctx *ctx)
{
    table_init(t, "Per-frame latency in ns, median / p99 (payload = one Modbus ADU)");
    table_col(t, "cipher");
    table_col(t, "impl");
    table_col(t, "seal 12 B");
    table_col(t, "open 12 B");
    table_col(t, "seal 260 B");
    table_col(t, "open 260 B");
    for (size_t i = 0; i <= ctx->n_ciphers; i++) {
        const char *name;
        if (i == ctx->n_ciphers && !ctx->baselines)
            break;
        name = i < ctx->n_ciphers ? mbsc_cipher_name(ctx->ciphers[i]) : BENCH_SODIUM_AEAD;
        table_row(t);
        table_cell(t, "%s", name);
        table_cell(t, "%s", impl_of(name));
        for (size_t z = 0; z < BENCH_N_FRAME_SIZES; z++) {
            cell_pair(t, ctx, name, "seal_ns_p50", "seal_ns_p99", bench_frame_sizes[z]);
            cell_pair(t, ctx, name, "open_ns_p50", "open_ns_p99", bench_frame_sizes[z]);
        }
    }
    table_note(t,
               "mbsc_record_seal / mbsc_record_open, one call per sample, clock overhead "
               "(%.0f ns) subtracted; open verifies a fresh frame each time.",
               ctx->timer_overhead_ns);
    if (ctx->baselines)
        table_note(t,
                   "%s: crypto_aead_chacha20poly1305_ietf_encrypt / _decrypt, fresh nonce "
                   "per message.",
                   BENCH_SODIUM_AEAD);
}

/* A ratio cell a / b of two results, or "-". */
static void cell_ratio2(struct table *t, const struct bench_ctx *ctx, const char *a,
                        const char *metric_a, const char *b, const char *metric_b, size_t size)
{
    double x, y;

    if (bench_results_get(&ctx->results, a, metric_a, size, &x) &&
        bench_results_get(&ctx->results, b, metric_b, size, &y) && y > 0)
        table_cell(t, "%.2fx", x / y);
    else
        table_cell(t, "-");
}

static void cell_ratio(struct table *t, const struct bench_ctx *ctx, const char *a, const char *b,
                       const char *metric, size_t size)
{
    cell_ratio2(t, ctx, a, metric, b, metric, size);
}

/* Both figures of bench/frame.c against libsodium's AEAD, median, same run. */
static void table_ahead(struct table *t, const struct bench_ctx *ctx)
{
    static const char *const ops[4][2] = {{"seal_ns_p50", "seal_ns_p50"},
                                          {"seal_ahead_ns_p50", "seal_ns_p50"},
                                          {"open_ns_p50", "open_ns_p50"},
                                          {"open_ahead_ns_p50", "open_ns_p50"}};

    table_init(t, "Seal and open against libsodium AEAD, median ns: with the keystream "
                  "generated in the call, and the critical path with it refilled ahead");
    table_col(t, "cipher");
    table_col(t, "impl");
    table_col(t, "payload B");
    table_col(t, "seal");
    table_col(t, "vs AEAD");
    table_col(t, "seal ahead");
    table_col(t, "vs AEAD");
    table_col(t, "open");
    table_col(t, "vs AEAD");
    table_col(t, "open ahead");
    table_col(t, "vs AEAD");
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        const char *name = mbsc_cipher_name(ctx->ciphers[i]);
        for (size_t z = 0; z < BENCH_N_FRAME_SIZES; z++) {
            table_row(t);
            table_cell(t, "%s", name);
            table_cell(t, "%s", impl_of(name));
            table_cell(t, "%zu", bench_frame_sizes[z]);
            for (size_t o = 0; o < 4; o++) {
                cell_result(t, ctx, name, ops[o][0], bench_frame_sizes[z]);
                cell_ratio2(t, ctx, name, ops[o][0], BENCH_SODIUM_AEAD, ops[o][1],
                            bench_frame_sizes[z]);
            }
        }
    }
    table_note(t, "seal/open: no keystream buffer, the keystream is made in the call (a "
                  "frame's CPU cost).  ahead: the session's buffer, refilled between frames "
                  "outside the timing (mbsc_session_refill): Poly1305 and an XOR.");
    table_note(t, "vs AEAD: over crypto_aead_chacha20poly1305_ietf_encrypt / _decrypt in the "
                  "same run (< 1 is faster); '-' without --baselines.");
}

static void table_impls(struct table *t, const struct bench_ctx *ctx)
{
    static char names[MBSC_CIPHER_COUNT * 8][32];
    size_t n = bench_impl_rows(ctx, names, MBSC_CIPHER_COUNT * 8);
    const size_t mib = 1048576, frame = 260;

    table_init(t, "Every implementation side by side, in the same rounds: 1 MiB keystream, "
                  "seal of a 260-byte frame");
    table_col(t, "implementation");
    table_col(t, "default");
    table_col(t, "code B");
    table_col(t, "MiB/s");
    table_col(t, "cycles/B");
    table_col(t, "speed vs libsodium-chacha20");
    table_col(t, "seal 260 B (ns)");
    table_col(t, "seal vs libsodium AEAD");
    for (size_t i = 0; i < n; i++) {
        char cipher[32];
        const char *colon = strchr(names[i], ':');
        size_t clen = colon != NULL ? (size_t)(colon - names[i]) : 0;

        snprintf(cipher, sizeof cipher, "%.*s", (int)clen, names[i]);
        table_row(t);
        table_cell(t, "%s", names[i]);
        table_cell(t, "%s", colon != NULL && strcmp(impl_of(cipher), colon + 1) == 0 ? "yes" : "");
        cell_result(t, ctx, names[i], "impl_code_bytes", BENCH_NO_SIZE);
        cell_result(t, ctx, names[i], "impl_mibps", mib);
        cell_result(t, ctx, names[i], "impl_cpb", mib);
        cell_ratio(t, ctx, names[i], BENCH_SODIUM_STREAM, "impl_mibps", mib);
        cell_result(t, ctx, names[i], "impl_seal_ns", frame);
        cell_ratio(t, ctx, names[i], BENCH_SODIUM_AEAD, "impl_seal_ns", frame);
    }
    if (ctx->baselines) {
        table_row(t);
        table_cell(t, "%s", BENCH_SODIUM_STREAM);
        table_cell(t, "%s", "");
        table_cell(t, "-");
        cell_result(t, ctx, BENCH_SODIUM_STREAM, "impl_mibps", mib);
        cell_result(t, ctx, BENCH_SODIUM_STREAM, "impl_cpb", mib);
        table_cell(t, "1.00x");
        table_cell(t, "-");
        table_cell(t, "-");
        table_row(t);
        table_cell(t, "%s", BENCH_SODIUM_AEAD);
        table_cell(t, "%s", "");
        table_cell(t, "-");
        table_cell(t, "-");
        table_cell(t, "-");
        table_cell(t, "-");
        cell_result(t, ctx, BENCH_SODIUM_AEAD, "impl_seal_ns", frame);
        table_cell(t, "1.00x");
    }
    table_note(t, "Only the implementations this CPU supports (MBSC_CIPHER_IMPL or "
                  "mbsc_cipher_force_impl pick one).  Speed ratio: MiB/s over libsodium's "
                  "(> 1 is faster); seal ratio: ns over libsodium AEAD encrypt (< 1 is "
                  "faster).");
    table_note(t,
               "code B: .text of the implementation's own object; vector implementations "
               "also use the portable file's driver or key setup.  cycles/B: %s.",
               bench_cycles_short(&ctx->cycles));
}

static void table_connection(struct table *t, const struct bench_ctx *ctx)
{
    double plain;
    int have_plain =
        bench_results_get(&ctx->results, BENCH_PLAINTEXT, "rtt_us_p50", BENCH_NO_SIZE, &plain);

    table_init(t, "Connection: Noise handshake in memory, and Modbus round trip over loopback "
                  "(read 10 holding registers)");
    table_col(t, "transport");
    table_col(t, "handshake (us)");
    table_col(t, "RTT p50 (us)");
    table_col(t, "RTT p99 (us)");
    table_col(t, "p50 - plaintext (us)");
    table_col(t, "slave CPU/request (us)");
    for (size_t i = 0; i <= ctx->n_ciphers; i++) {
        const char *name = i == 0 ? BENCH_PLAINTEXT : mbsc_cipher_name(ctx->ciphers[i - 1]);
        double v;

        table_row(t);
        table_cell(t, "%s", i == 0 ? "plaintext libmodbus" : name);
        cell_result(t, ctx, name, "handshake_us", BENCH_NO_SIZE);
        cell_result(t, ctx, name, "rtt_us_p50", BENCH_NO_SIZE);
        cell_result(t, ctx, name, "rtt_us_p99", BENCH_NO_SIZE);
        if (i > 0 && have_plain &&
            bench_results_get(&ctx->results, name, "rtt_us_p50", BENCH_NO_SIZE, &v))
            table_cell(t, "%+.1f", v - plain);
        else
            table_cell(t, "-");
        cell_result(t, ctx, name, "slave_cpu_us", BENCH_NO_SIZE);
    }
    /* The same ciphers forced onto the pump (bench/rtt.c), where measured. */
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        char name[64];
        double v;

        snprintf(name, sizeof name, "%s-pump", mbsc_cipher_name(ctx->ciphers[i]));
        if (!bench_results_get(&ctx->results, name, "rtt_us_p50", BENCH_NO_SIZE, &v))
            continue;
        table_row(t);
        table_cell(t, "%s", name);
        table_cell(t, "-");
        cell_result(t, ctx, name, "rtt_us_p50", BENCH_NO_SIZE);
        cell_result(t, ctx, name, "rtt_us_p99", BENCH_NO_SIZE);
        if (have_plain)
            table_cell(t, "%+.1f", v - plain);
        else
            table_cell(t, "-");
        cell_result(t, ctx, name, "slave_cpu_us", BENCH_NO_SIZE);
    }
    table_note(t, "handshake: two sessions back to back, both sides' CPU time, median.");
    table_note(t, "slave CPU/request: CPU time of the slave's thread (user + system) over "
                  "all its requests, divided by their number.");
    table_note(t, "RTT: %s.", ctx->rtt_note);
}

static void header(const struct bench_ctx *ctx, const struct bench_machine *m, FILE *out,
                   int markdown)
{
    const char *item = markdown ? "- " : "  ";

    if (markdown)
        fprintf(out, "## mbsc-bench %s (%s run)\n\n", PACKAGE_VERSION, ctx->plan.name);
    else
        fprintf(out, "mbsc-bench %s (%s run): the four ciphers and the mbsc/1 channel\n",
                PACKAGE_VERSION, ctx->plan.name);
    fprintf(out, "%scpu:       %s; %ld online cores; %s\n", item, m->cpu, m->cores, m->system);
    fprintf(out, "%scompiler:  %s; CFLAGS: %s; host: %s\n", item, m->compiler,
            m->cflags[0] ? m->cflags : "(none)", m->host);
    fprintf(out, "%slibraries: libsodium %s, libmodbus %s\n", item, sodium_version_string(),
            bench_rtt_libmodbus_version());
    fprintf(out, "%sclock:     %s, %.0f ns per reading\n", item, bench_clock_name(),
            ctx->timer_overhead_ns);
    fprintf(out, "%scycles:    %s\n", item, ctx->cycles.desc);
    fprintf(out, "%spinning:   %s\n", item, ctx->pin_desc);
    fprintf(out,
            "%srounds:    throughput %u, setup %u, frames %u x %u, handshakes %u, round trips "
            "%u x %u; every group interleaves the ciphers round by round\n",
            item, ctx->plan.stream_rounds, ctx->plan.setup_rounds, ctx->plan.frame_rounds,
            ctx->plan.frame_per_round, ctx->plan.handshake_rounds, ctx->plan.rtt_rounds,
            ctx->plan.rtt_per_round);
}

void bench_report(struct bench_ctx *ctx, const struct bench_machine *m, FILE *out, int markdown)
{
    static struct table t; /* about 10 KiB: kept off the stack */

    header(ctx, m, out, markdown);
    table_paper(&t, ctx);
    emit(&t, out, markdown);
    table_sizes(&t, ctx, "throughput",
                "Keystream throughput in MiB/s by message size (mbsc_stream_xor in place, median)");
    emit(&t, out, markdown);
    table_sizes(&t, ctx, "cpb", "Cycles per byte by message size (median)");
    table_note(&t, "cycles: %s.", bench_cycles_short(&ctx->cycles));
    emit(&t, out, markdown);
    if (ctx->baselines) {
        table_vs_sodium(&t, ctx);
        emit(&t, out, markdown);
    }
    table_setup(&t, ctx);
    emit(&t, out, markdown);
    table_frames(&t, ctx);
    emit(&t, out, markdown);
    table_ahead(&t, ctx);
    emit(&t, out, markdown);
    table_impls(&t, ctx);
    emit(&t, out, markdown);
    table_connection(&t, ctx);
    emit(&t, out, markdown);
}
