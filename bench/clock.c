/* SPDX-License-Identifier: ISC */
/*
 * clock.c - clock choice, reading, overhead and batch calibration.
 */
#include <time.h>

#include "bench.h"
#include "clock.h"
#include "stats.h"

static clockid_t bench_clock = CLOCK_MONOTONIC;
static const char *bench_clock_label = "CLOCK_MONOTONIC";

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Median of the time between two consecutive reads of clock id. */
static double overhead_of(clockid_t id)
{
    struct bench_samples s;
    double median;

    bench_samples_init(&s, 1001);
    for (unsigned i = 0; i < 1001; i++) {
        uint64_t a = read_clock(id), b = read_clock(id);
        bench_samples_add(&s, (double)(b - a));
    }
    median = bench_median(&s);
    bench_samples_free(&s);
    return median;
}

void bench_clock_init(void)
{
#ifdef CLOCK_MONOTONIC_RAW
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) == 0) {
        double raw = overhead_of(CLOCK_MONOTONIC_RAW), mono = overhead_of(CLOCK_MONOTONIC);
        /* A raw clock read by system call (older kernels) costs several
         * times the vDSO read: its noise would then outweigh the slewing it
         * avoids, which is tiny over the microseconds of one sample. */
        if (raw <= 2.0 * mono + 10.0) {
            bench_clock = CLOCK_MONOTONIC_RAW;
            bench_clock_label = "CLOCK_MONOTONIC_RAW";
        }
    }
#endif
}

const char *bench_clock_name(void)
{
    return bench_clock_label;
}

uint64_t bench_now_ns(void)
{
    return read_clock(bench_clock);
}

double bench_clock_overhead_ns(void)
{
    return overhead_of(bench_clock);
}

void bench_spin_ns(uint64_t ns)
{
    uint64_t end = bench_now_ns() + ns;

    while (bench_now_ns() < end)
        ;
}

unsigned bench_calibrate_reps(bench_batch_fn fn, void *arg, uint64_t target_ns)
{
    unsigned reps = 1;

    fn(arg, 1); /* first touch: page faults, cold caches */
    for (;;) {
        uint64_t t0 = bench_now_ns(), dt;
        fn(arg, reps);
        dt = bench_now_ns() - t0;
        /* Scale from a batch of at least 1/8 of the target (or from a single
         * operation that is already that long): short batches are mostly
         * clock noise and would give a wrong scale. */
        if (dt >= target_ns / 8 || reps >= (1u << 26)) {
            double scaled = (double)reps * (double)target_ns / (double)(dt ? dt : 1);
            if (scaled < 1.0)
                return 1;
            if (scaled > (double)(1u << 28))
                return 1u << 28;
            return (unsigned)scaled;
        }
        reps *= 8;
    }
}
