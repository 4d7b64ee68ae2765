/* SPDX-License-Identifier: ISC */
/*
 * clock.c - the conditions of every timing: the clock, batch calibration,
 * the core the measuring thread is pinned to, and where cycles per byte
 * come from (bench.h says in which order).
 */
#define _GNU_SOURCE /* syscall() for perf_event_open; sched_setaffinity, CPU_SET */

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/perf_event.h>
#include <sys/syscall.h>
#endif

#include "bench.h"

static clockid_t bench_clock = CLOCK_MONOTONIC;
const char *bench_clock_name = "CLOCK_MONOTONIC";

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Median of the time between two consecutive reads of clock id. */
static double overhead_of(clockid_t id)
{
    struct bench_samples s = {0};
    double median;

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

    /* NTP never slews the raw clock; but read by a system call (older
     * kernels) it costs several times the vDSO read, and its noise would
     * then outweigh the slewing it avoids. */
    if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) == 0 &&
        overhead_of(CLOCK_MONOTONIC_RAW) <= 2.0 * overhead_of(CLOCK_MONOTONIC) + 10.0) {
        bench_clock = CLOCK_MONOTONIC_RAW;
        bench_clock_name = "CLOCK_MONOTONIC_RAW";
    }
#endif
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
    fn(arg, 1); /* first touch: page faults, cold caches */
    for (unsigned reps = 1;; reps *= 8) {
        uint64_t t0 = bench_now_ns(), dt;
        double scaled;

        fn(arg, reps);
        dt = bench_now_ns() - t0;
        /* Scale from a batch of at least 1/8 of the target: short batches
         * are mostly clock noise and would give a wrong scale. */
        if (dt < target_ns / 8 && reps < (1u << 26))
            continue;
        scaled = (double)reps * (double)target_ns / (double)(dt ? dt : 1);
        return scaled < 1.0 ? 1 : scaled > (double)(1u << 28) ? 1u << 28 : (unsigned)scaled;
    }
}

#ifdef __linux__
static cpu_set_t original, pinned_set;
static int pinned;

void bench_pin(char *desc, size_t len)
{
    /* size_t: glibc's CPU_* macros take size_t, and -Wconversion objects to an int. */
    size_t cpu = 0, allowed = 0;

    if (sched_getaffinity(0, sizeof original, &original) != 0) {
        snprintf(desc, len, "not pinned (sched_getaffinity: %s)", strerror(errno));
        return;
    }
    /* The highest-numbered allowed CPU: CPU 0 usually takes more of the
     * interrupts and housekeeping work. */
    for (size_t i = 0; i < (size_t)CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &original))
            cpu = i, allowed++;
    CPU_ZERO(&pinned_set);
    CPU_SET(cpu, &pinned_set);
    if (allowed == 0)
        snprintf(desc, len, "not pinned (no CPU in the affinity mask)");
    else if (sched_setaffinity(0, sizeof pinned_set, &pinned_set) != 0)
        snprintf(desc, len, "not pinned (sched_setaffinity: %s)", strerror(errno));
    else
        snprintf(desc, len, "pinned to CPU %zu of %zu allowed (sched_setaffinity)", cpu, allowed);
    pinned = allowed != 0 && strncmp(desc, "pinned", 6) == 0;
}

/* Threads created while lifted inherit the original set. */
void bench_pin_lift(int lift)
{
    if (pinned)
        (void)sched_setaffinity(0, sizeof original, lift ? &original : &pinned_set);
}

/* A per-thread counter of user-space core cycles, or -1 with why set. */
static int perf_open(char *why, size_t why_len)
{
    /* User space only: allowed at perf_event_paranoid 2, the Debian
     * default, and the cipher code runs entirely in user space anyway. */
    struct perf_event_attr attr = {.type = PERF_TYPE_HARDWARE,
                                   .size = sizeof attr,
                                   .config = PERF_COUNT_HW_CPU_CYCLES,
                                   .exclude_kernel = 1,
                                   .exclude_hv = 1};
    uint64_t before = 0, after = 0;
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);

    if (fd < 0) {
        snprintf(why, why_len, "perf_event_open: %s", strerror(errno));
        return -1;
    }
    /* Some hypervisors accept the event and then never count. */
    if (read(fd, &before, sizeof before) != (ssize_t)sizeof before)
        before = 0;
    bench_spin_ns(2000000);
    if (read(fd, &after, sizeof after) != (ssize_t)sizeof after || after <= before) {
        snprintf(why, why_len, "perf_event_open: the cycle counter does not count");
        close(fd);
        return -1;
    }
    return fd;
}
#else
void bench_pin(char *desc, size_t len)
{
    snprintf(desc, len, "not pinned (no sched_setaffinity on this system)");
}

void bench_pin_lift(int lift)
{
    (void)lift;
}

static int perf_open(char *why, size_t why_len)
{
    snprintf(why, why_len, "perf_event_open: not Linux");
    return -1;
}
#endif

/* Additions, each waiting for the previous one: the empty asm takes x + y
 * and tells the compiler x is now unknown, so it can neither merge nor
 * reorder them; one a cycle on every core this targets.  Unrolled, so that
 * the loop's own instructions fit beside them on a narrow core. */
#define ADD1          __asm__ volatile("" : "=r"(x) : "0"(x + y));
#define ADD4          ADD1 ADD1 ADD1 ADD1
#define ADDS_PER_ITER 16u
static uint64_t add_chain(uint64_t iters, uint64_t x)
{
    uint64_t y = 1;

    __asm__ volatile("" : "+r"(y)); /* y is not a known constant */
    for (uint64_t i = 0; i < iters; i++) {
        ADD4 ADD4 ADD4 ADD4
    }
    return x;
}

/* Nanoseconds of one run of the add chain. */
static uint64_t chain_ns(uint64_t iters)
{
    uint64_t t0 = bench_now_ns(), x = add_chain(iters, t0), dt = bench_now_ns() - t0;

    __asm__ volatile("" : : "r"(x)); /* keep the chain alive */
    return dt ? dt : 1;
}

/* A cpufreq figure in MHz (kHz in the file), 0 if absent. */
static double cpufreq_mhz(const char *file)
{
    char path[128];
    double khz = 0.0;
    FILE *f;

    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cpufreq/%s", file);
    if ((f = fopen(path, "r")) == NULL)
        return 0.0;
    if (fscanf(f, "%lf", &khz) != 1)
        khz = 0.0;
    fclose(f);
    return khz / 1000.0;
}

static void describe(struct bench_cycles *cy)
{
    if (cy->source == BENCH_CYCLES_PERF)
        snprintf(cy->desc, sizeof cy->desc,
                 "perf_event_open (PERF_COUNT_HW_CPU_CYCLES, user space, this thread)%s", cy->why);
    else if (cy->source == BENCH_CYCLES_USER_MHZ)
        snprintf(cy->desc, sizeof cy->desc, "time x %.0f MHz from --cpu-mhz (%s)", cy->mhz,
                 cy->why);
    else
        snprintf(cy->desc, sizeof cy->desc,
                 "time x core clock estimated by a dependent-add loop in each round: mean "
                 "%.0f MHz, range %.0f-%.0f over %u estimates (%s; %s; --cpu-mhz N overrides)",
                 cy->refreshes ? cy->mhz_sum / cy->refreshes : cy->mhz, cy->mhz_min, cy->mhz_max,
                 cy->refreshes, cy->why, cy->cpufreq);
}

void bench_cycles_init(struct bench_cycles *cy, double user_mhz)
{
    memset(cy, 0, sizeof *cy);
    if ((cy->perf_fd = perf_open(cy->why, sizeof cy->why)) >= 0) {
        cy->source = BENCH_CYCLES_PERF;
        snprintf(cy->why, sizeof cy->why, "%s", user_mhz > 0 ? "; --cpu-mhz ignored" : "");
    } else if (user_mhz > 0) {
        cy->source = BENCH_CYCLES_USER_MHZ;
        cy->mhz = user_mhz;
    } else {
        double max = cpufreq_mhz("cpuinfo_max_freq");
        uint64_t iters = 1u << 10, dt;

        cy->source = BENCH_CYCLES_ESTIMATE;
        snprintf(cy->cpufreq, sizeof cy->cpufreq, "no cpufreq in /sys");
        if (max > 0)
            snprintf(cy->cpufreq, sizeof cy->cpufreq, "cpufreq: now %.0f MHz, max %.0f MHz",
                     cpufreq_mhz("scaling_cur_freq"), max);
        /* A chain of about 0.5 ms, scaled from one of at least 0.2 ms. */
        while ((dt = chain_ns(iters)) < 200000 && iters < (1ull << 34))
            iters *= 2;
        cy->chain_iters = (uint64_t)((double)iters * 500000.0 / (double)dt) + 1;
        bench_cycles_refresh(cy);
    }
    describe(cy);
}

void bench_cycles_refresh(struct bench_cycles *cy)
{
    if (cy->source != BENCH_CYCLES_ESTIMATE)
        return;
    /* The fastest of a few runs: preemption and stolen time can only make a
     * run slower, never faster than one addition per cycle. */
    cy->mhz = 0.0;
    for (int run = 0; run < 4; run++) {
        double mhz =
            1000.0 * ADDS_PER_ITER * (double)cy->chain_iters / (double)chain_ns(cy->chain_iters);
        cy->mhz = mhz > cy->mhz ? mhz : cy->mhz;
    }
    cy->mhz_min = cy->refreshes == 0 || cy->mhz < cy->mhz_min ? cy->mhz : cy->mhz_min;
    cy->mhz_max = cy->refreshes++ == 0 || cy->mhz > cy->mhz_max ? cy->mhz : cy->mhz_max;
    cy->mhz_sum += cy->mhz;
    describe(cy);
}

const char *bench_cycles_short(const struct bench_cycles *cy)
{
    return cy->source == BENCH_CYCLES_PERF       ? "perf cycle counter"
           : cy->source == BENCH_CYCLES_USER_MHZ ? "time x --cpu-mhz"
                                                 : "time x estimated clock";
}

static uint64_t read_counter(const struct bench_cycles *cy)
{
    uint64_t c = 0;

    if (cy->perf_fd < 0 || read(cy->perf_fd, &c, sizeof c) != (ssize_t)sizeof c)
        c = 0;
    return c;
}

uint64_t bench_time_batch(const struct bench_cycles *cy, bench_batch_fn fn, void *arg,
                          unsigned reps, double *cycles)
{
    uint64_t c0 = read_counter(cy), t0 = bench_now_ns(), ns;

    fn(arg, reps);
    ns = bench_now_ns() - t0;
    *cycles = cy->perf_fd >= 0 ? (double)(read_counter(cy) - c0) : (double)ns * cy->mhz / 1000.0;
    return ns;
}
