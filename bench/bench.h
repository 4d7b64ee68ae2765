/* SPDX-License-Identifier: ISC */
/*
 * bench.h - what every part of mbsc-bench shares.
 *
 * main.c (command line, order of the groups) -> one file per kind of
 * measurement (setup.c, stream.c, frame.c, rtt.c) ->
 * describe.c (the machine, as text rows).  clock.c and common.c are below
 * them all, so that nothing calls back into main.c.
 */
#ifndef MBSC_BENCH_H
#define MBSC_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "mbsc.h" /* the public API; groups add internal headers they need */

/* Result names of the rows that are not one of mbsc's four ciphers. */
#define BENCH_SODIUM_STREAM "libsodium-chacha20"
#define BENCH_SODIUM_AEAD   "libsodium-chacha20poly1305"
#define BENCH_PLAINTEXT     "plaintext"

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

/*
 * Cycles per byte (clock.c).  The x86 time-stamp counter ticks at a fixed
 * rate, not at the core clock, so it is not used.  In order of preference:
 * perf_event_open's user-space cycle counter for this thread (usually not
 * inside virtual machines); time x --cpu-mhz; time x a clock estimated with
 * a chain of dependent additions (one per cycle on x86-64 and Cortex-A53
 * to A76), refreshed in every round because the clock moves (boost,
 * thermal limits, a busy host).  cpufreq's figures are shown beside the
 * estimate as a cross-check.
 */
enum bench_cycle_source { BENCH_CYCLES_PERF = 1, BENCH_CYCLES_USER_MHZ, BENCH_CYCLES_ESTIMATE };

struct bench_cycles {
    enum bench_cycle_source source;
    int perf_fd;                      /* -1 unless source is PERF */
    double mhz;                       /* frequency that turns time into cycles (not PERF) */
    uint64_t chain_iters;             /* ESTIMATE: add-chain length of a ~0.5 ms refresh */
    double mhz_sum, mhz_min, mhz_max; /* ESTIMATE: over all refreshes */
    unsigned refreshes;
    char why[128];    /* why perf is not used, or that --cpu-mhz is ignored */
    char cpufreq[96]; /* what cpufreq says, for comparison */
    char desc[512];   /* one line for the report: source, and why */
};

struct bench_ctx {
    struct bench_plan plan;
    const mbsc_cipher *ciphers[MBSC_CIPHER_COUNT]; /* selected, in table order */
    size_t n_ciphers;
    int baselines; /* libsodium rows: only when chacha20 is selected */
    struct bench_cycles cycles;
    double timer_overhead_ns; /* subtracted from single-operation samples */
    char pin_desc[160];       /* how the measuring thread is pinned */
    char rtt_note[640];       /* why RTT rows are missing, or how they ran */
    /* Every figure's CSV row, in the order measured: they follow the run's
     * description, which is only complete at the end. */
    FILE *figures;
};

/* clock.c: the clock (CLOCK_MONOTONIC_RAW unless it costs a system call),
 * busy waiting, batch calibration, the cycle source above, and keeping the
 * measuring thread on one core (a thread that migrates pays for cold
 * caches; the round-trip group lifts the pin while its threads run). */
extern const char *bench_clock_name;
void bench_clock_init(void);
uint64_t bench_now_ns(void);
double bench_clock_overhead_ns(void); /* median cost of one reading */
void bench_spin_ns(uint64_t ns);
/* The batch size that makes fn(arg, reps) last about target_ns: long enough
 * that the clock's resolution (18.5 ns on a Raspberry Pi 4) does not matter. */
typedef void (*bench_batch_fn)(void *arg, unsigned reps);
unsigned bench_calibrate_reps(bench_batch_fn fn, void *arg, uint64_t target_ns);
void bench_cycles_init(struct bench_cycles *cy, double user_mhz); /* user_mhz 0: not given */
void bench_cycles_refresh(struct bench_cycles *cy);               /* ESTIMATE: about 2 ms */
const char *bench_cycles_short(const struct bench_cycles *cy);
/* Nanoseconds and cycles of fn(arg, reps). */
uint64_t bench_time_batch(const struct bench_cycles *cy, bench_batch_fn fn, void *arg,
                          unsigned reps, double *cycles);
void bench_pin(char *desc, size_t len);
void bench_pin_lift(int lift); /* 1: the original CPU set until bench_pin_lift(0) */

/* The measurement groups, in the order main.c runs them. */
void bench_footprint(struct bench_ctx *ctx);
void bench_setup(struct bench_ctx *ctx);
void bench_stream(struct bench_ctx *ctx);
void bench_frame(struct bench_ctx *ctx);
void bench_impls(struct bench_ctx *ctx);
void bench_handshake(struct bench_ctx *ctx);
void bench_rtt(struct bench_ctx *ctx); /* built with libmodbus only */

/* describe.c: the run's description as text rows of the CSV: machine,
 * build, libraries, clocks, pinning, plan, each cipher's implementation. */
void bench_describe(const struct bench_ctx *ctx, FILE *f);

#endif /* MBSC_BENCH_H */
