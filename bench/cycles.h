/* SPDX-License-Identifier: ISC */
/*
 * cycles.h - where cycles per byte come from.
 *
 * The x86 time-stamp counter ticks at a fixed rate, not at the core clock,
 * so it is not used.  In order of preference:
 *   1. perf_event_open, PERF_COUNT_HW_CPU_CYCLES counted in user space only,
 *      for this thread: real core cycles (Linux with a PMU the kernel lets
 *      us use; usually not inside virtual machines);
 *   2. --cpu-mhz N: time x the frequency the user states;
 *   3. time x an estimated frequency, measured with a chain of dependent
 *      integer additions (one per cycle on every core this targets: x86-64
 *      since long ago, Cortex-A53/A72/A76).  The clock moves (boost,
 *      thermal limits, a busy host under a virtual machine), so the
 *      estimate is refreshed in every round of the throughput group and
 *      each round's samples use its own; the report gives the mean and
 *      the range.  cpufreq's figures, when the kernel has them, are shown
 *      beside the estimate as a cross-check.
 */
#ifndef MBSC_BENCH_CYCLES_H
#define MBSC_BENCH_CYCLES_H

#include <stdint.h>

enum bench_cycle_source {
    BENCH_CYCLES_PERF = 1,
    BENCH_CYCLES_USER_MHZ = 2,
    BENCH_CYCLES_ESTIMATE = 3
};

struct bench_cycles {
    enum bench_cycle_source source;
    int perf_fd;                      /* -1 unless source is PERF */
    double mhz;                       /* frequency used to turn time into cycles (not PERF) */
    uint64_t chain_iters;             /* ESTIMATE: add-chain length of a ~0.5 ms refresh */
    double mhz_sum, mhz_min, mhz_max; /* ESTIMATE: over all refreshes */
    unsigned refreshes;
    int user_mhz_ignored; /* --cpu-mhz given, but perf counts real cycles */
    char why[128];        /* why perf is not used */
    char cpufreq[96];     /* what cpufreq says, for comparison */
    char desc[512];       /* one line for the report: source, and why */
};

/* Choose the source; user_mhz is 0 when --cpu-mhz was not given. */
void bench_cycles_init(struct bench_cycles *cy, double user_mhz);
void bench_cycles_close(struct bench_cycles *cy);

/* ESTIMATE: measure the clock again (about 2 ms); other sources: nothing. */
void bench_cycles_refresh(struct bench_cycles *cy);

/* Short name of the source for table notes: "perf", "--cpu-mhz", "estimate". */
const char *bench_cycles_short(const struct bench_cycles *cy);

/* A measured interval: wall time, and core cycles from the chosen source. */
struct bench_span {
    uint64_t t0, c0;
    uint64_t ns;
    double cycles;
};

void bench_span_begin(const struct bench_cycles *cy, struct bench_span *sp);
void bench_span_end(const struct bench_cycles *cy, struct bench_span *sp);

#endif /* MBSC_BENCH_CYCLES_H */
