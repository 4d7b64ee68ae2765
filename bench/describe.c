/* SPDX-License-Identifier: ISC */
/*
 * describe.c - what a run's figures need beside them to mean anything
 * (bench.h): which machine, compiler and libraries, how time and cycles
 * were measured, how many rounds, and which implementation of each cipher
 * the library picked.  Text rows of the CSV; figures from different boards
 * are only comparable with these beside them.
 */
#include <sodium.h>

#include "config.h"
#include "bench.h"
#include "clock.h"
#include "code_sizes.h"
#include "csv.h"
#include "impls.h"
#include "machine.h"

void bench_describe(const struct bench_ctx *ctx, const struct bench_machine *m, FILE *f)
{
    static char names[MBSC_CIPHER_COUNT * 8][32];
    size_t n = bench_impl_rows(ctx, names, MBSC_CIPHER_COUNT * 8);
    const struct bench_plan *p = &ctx->plan;
    char line[256];

    bench_csv_text(f, "run", "program", BENCH_PROG " " PACKAGE_VERSION);
    bench_csv_text(f, "run", "plan", p->name);
    snprintf(line, sizeof line,
             "throughput %u, setup %u, frames %u x %u, handshakes %u, round trips %u x %u",
             p->stream_rounds, p->setup_rounds, p->frame_rounds, p->frame_per_round,
             p->handshake_rounds, p->rtt_rounds, p->rtt_per_round);
    bench_csv_text(f, "run", "rounds", line);
    bench_csv_text(f, "machine", "cpu", m->cpu);
    bench_csv_num(f, "machine", "cores", 0, (double)m->cores, "cores");
    bench_csv_text(f, "machine", "system", m->system);
    bench_csv_text(f, "machine", "compiler", m->compiler);
    bench_csv_text(f, "machine", "cflags", m->cflags[0] ? m->cflags : "(none)");
    bench_csv_text(f, "machine", "host", m->host);
    bench_csv_text(f, "machine", "libsodium", sodium_version_string());
    bench_csv_text(f, "machine", "libmodbus", bench_rtt_libmodbus_version());
    bench_csv_text(f, "machine", "clock", bench_clock_name());
    bench_csv_num(f, "machine", "clock_read_ns", 0, ctx->timer_overhead_ns, "ns");
    bench_csv_text(f, "machine", "cycles", ctx->cycles.desc);
    bench_csv_text(f, "machine", "cycles_short", bench_cycles_short(&ctx->cycles));
    bench_csv_text(f, "machine", "pinning", ctx->pin_desc);
    bench_csv_text(f, "machine", "code_size_tool", BENCH_CODE_SIZE_WHAT);
    bench_csv_text(f, "rtt", "note", ctx->rtt_note);
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        const char *impl = mbsc_cipher_impl_selected(ctx->ciphers[i]);

        bench_csv_text(f, mbsc_cipher_name(ctx->ciphers[i]), "impl", impl != NULL ? impl : "?");
    }
    /* Every implementation the side-by-side table measured, in its order. */
    for (size_t i = 0; i < n; i++)
        bench_csv_text(f, names[i], "implementation", "measured");
}
