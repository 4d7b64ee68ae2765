/* SPDX-License-Identifier: ISC */
/*
 * bench.h - what every part of mbsc-bench shares: the run plan, the set of
 * ciphers being measured, and the context that carries the results from the
 * measurement groups to the writers.
 *
 * The program is organised as: options.c (command line) -> main.c (order of
 * the groups) -> one file per group of measurements (setup.c, stream.c,
 * frame.c, impls.c, handshake.c, footprint.c, rtt.c) -> results.c (one long
 * table of rows) -> describe.c and csv.c (the CSV; bench/report.py makes
 * the tables and the picture); util.c, below them all, gives up with a
 * message.
 */
#ifndef MBSC_BENCH_H
#define MBSC_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mbsc.h" /* the public API; groups add internal headers they need */

#include "cycles.h"
#include "results.h"

#define BENCH_PROG "mbsc-bench"

/* Result names of the rows that are not one of mbsc's four ciphers. */
#define BENCH_SODIUM_STREAM "libsodium-chacha20"
#define BENCH_SODIUM_AEAD   "libsodium-chacha20poly1305"
#define BENCH_PLAINTEXT     "plaintext"

/* Message sizes of the throughput group: Modbus-sized up to bulk. */
#define BENCH_N_STREAM_SIZES 6u
extern const size_t bench_stream_sizes[BENCH_N_STREAM_SIZES];

/* Most rows of the throughput group: every cipher, then the two baselines. */
#define BENCH_MAX_STREAM_ROWS (MBSC_CIPHER_COUNT + 2)

/* The two frames of the latency group: a read request and the largest ADU. */
#define BENCH_N_FRAME_SIZES 2u
extern const size_t bench_frame_sizes[BENCH_N_FRAME_SIZES];

/*
 * How much each group measures.  Every group runs in rounds: one round
 * measures every subject once (at every size), so that drift caused by other
 * users of a shared machine lands on all subjects alike; round 0 is a
 * discarded warm-up.
 */
struct bench_plan {
    const char *name;          /* "default" or "quick" */
    uint64_t warmup_ns;        /* busy spin first, so that the clock ramps up */
    unsigned stream_rounds;    /* throughput samples per (subject, size) */
    uint64_t stream_sample_ns; /* target duration of one throughput sample */
    unsigned setup_rounds;     /* setup samples per cipher */
    uint64_t setup_sample_ns;  /* target duration of one batch of inits */
    unsigned frame_rounds;     /* latency: rounds ... */
    unsigned frame_per_round;  /* ... times frames per (subject, size) each */
    unsigned handshake_rounds; /* handshakes per cipher */
    unsigned rtt_rounds;       /* round trips: rounds ... */
    unsigned rtt_per_round;    /* ... times requests per transport each */
};

struct bench_ctx {
    struct bench_plan plan;
    const mbsc_cipher *ciphers[MBSC_CIPHER_COUNT]; /* selected, in table order */
    size_t n_ciphers;
    int baselines; /* libsodium rows: only when chacha20 is selected */
    struct bench_cycles cycles;
    double timer_overhead_ns; /* subtracted from single-operation samples */
    char pin_desc[160];       /* how the measuring thread is pinned */
    char rtt_note[640];       /* why RTT rows are missing (a why line), or how they ran */
    char rtt_path[16];        /* the path the cipher rows took ("sync"), "" if unknown */
    struct bench_results results;
};

/* Report a failure that makes the figures meaningless and exit 1 (util.c). */
void bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Allocate or exit 1: the bench has nothing useful to do without memory. */
void *bench_xmalloc(size_t n);

/*
 * Result names of the throughput rows (stream.c), in the order it measures
 * them and the writers show them: the selected ciphers, then the libsodium
 * baselines when they are measured.  names has room for
 * BENCH_MAX_STREAM_ROWS; returns the count.
 */
size_t bench_stream_rows(const struct bench_ctx *ctx, const char **names);

/* The measurement groups, in the order main.c runs them. */
void bench_footprint(struct bench_ctx *ctx);
void bench_setup(struct bench_ctx *ctx);
void bench_stream(struct bench_ctx *ctx);
void bench_frame(struct bench_ctx *ctx);
void bench_handshake(struct bench_ctx *ctx);
void bench_rtt(struct bench_ctx *ctx);

/* "3.1.6" when the RTT group is built, else a word saying why not. */
const char *bench_rtt_libmodbus_version(void);

/* The run's description as text rows of the CSV (describe.c): machine,
 * build, libraries, clocks, pinning, plan, and each cipher's implementation. */
struct bench_machine;
void bench_describe(const struct bench_ctx *ctx, const struct bench_machine *m, FILE *f);

#endif /* MBSC_BENCH_H */
