/* SPDX-License-Identifier: ISC */
/*
 * clock.h - wall-clock timing for the bench.
 *
 * CLOCK_MONOTONIC_RAW is preferred: NTP never slews it, so a sample is not
 * stretched or shrunk while the clock is being corrected.  On kernels that
 * serve it by a system call instead of the vDSO it costs far more to read;
 * bench_clock_init() then falls back to CLOCK_MONOTONIC.
 */
#ifndef MBSC_BENCH_CLOCK_H
#define MBSC_BENCH_CLOCK_H

#include <stdint.h>

/* Pick the clock; call once before any other function here. */
void bench_clock_init(void);

/* Name of the clock in use, e.g. "CLOCK_MONOTONIC_RAW". */
const char *bench_clock_name(void);

/* Nanoseconds since an arbitrary start. */
uint64_t bench_now_ns(void);

/* Median cost of one reading (two back-to-back reads, minus nothing). */
double bench_clock_overhead_ns(void);

/* Busy-wait for ns nanoseconds (lets a frequency governor ramp the clock up). */
void bench_spin_ns(uint64_t ns);

/*
 * An operation measured in batches: run it reps times.  The batch size is
 * chosen by bench_calibrate_reps so that one batch lasts about target_ns,
 * long enough that the cost of reading the clock and the clock's resolution
 * (18.5 ns on a Raspberry Pi 4) do not matter.
 */
typedef void (*bench_batch_fn)(void *arg, unsigned reps);
unsigned bench_calibrate_reps(bench_batch_fn fn, void *arg, uint64_t target_ns);

#endif /* MBSC_BENCH_CLOCK_H */
