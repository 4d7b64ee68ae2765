/* SPDX-License-Identifier: ISC */
/*
 * cycles.c - the cycle source (see cycles.h for the order of preference).
 */
#define _GNU_SOURCE /* syscall() for perf_event_open, which glibc does not wrap */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/perf_event.h>
#include <sys/syscall.h>
#endif

#include "clock.h"
#include "cycles.h"

#ifdef __linux__
/* A per-thread counter of user-space core cycles, or -1 with why set. */
static int perf_open(char *why, size_t why_len)
{
    struct perf_event_attr attr;
    uint64_t before = 0, after = 0;
    int fd;

    memset(&attr, 0, sizeof attr);
    attr.type = PERF_TYPE_HARDWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_HW_CPU_CYCLES;
    /* User space only: allowed at perf_event_paranoid 2, the Debian
     * default, and the cipher code runs entirely in user space anyway. */
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
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
#endif

/* One addition per cycle, each waiting for the previous one: the empty asm
 * tells the compiler x may have changed, so it can neither merge nor
 * reorder the additions. */
#define ADD1(x, y)                                                                                 \
    do {                                                                                           \
        x += y;                                                                                    \
        __asm__ volatile("" : "+r"(x));                                                            \
    } while (0)
#define ADD4(x, y)                                                                                 \
    ADD1(x, y);                                                                                    \
    ADD1(x, y);                                                                                    \
    ADD1(x, y);                                                                                    \
    ADD1(x, y)
#define ADDS_PER_ITER 16u

static uint64_t add_chain(uint64_t iters, uint64_t x)
{
    uint64_t y = 1;

    __asm__ volatile("" : "+r"(y)); /* y is not a known constant */
    for (uint64_t i = 0; i < iters; i++) {
        ADD4(x, y);
        ADD4(x, y);
        ADD4(x, y);
        ADD4(x, y);
    }
    return x;
}

/* MHz from one run of the add chain of the given length. */
static double chain_mhz(uint64_t iters, uint64_t *sink)
{
    uint64_t t0 = bench_now_ns(), dt;

    *sink += add_chain(iters, *sink);
    dt = bench_now_ns() - t0;
    return (double)iters * ADDS_PER_ITER / (double)(dt ? dt : 1) * 1000.0;
}

/* The fastest of a few short runs: preemption and stolen time can only make
 * a run slower, never faster than one addition per cycle. */
static double estimate_mhz(uint64_t iters)
{
    uint64_t sink = 0;
    double best = 0.0;

    for (int run = 0; run < 4; run++) {
        double mhz = chain_mhz(iters, &sink);
        if (mhz > best)
            best = mhz;
    }
    __asm__ volatile("" : : "r"(sink)); /* keep the chain alive */
    return best;
}

/* Chain length for a run of about 0.5 ms. */
static uint64_t size_chain(void)
{
    uint64_t iters = 1u << 10, sink = 0, t0, dt;

    for (;;) {
        t0 = bench_now_ns();
        sink += add_chain(iters, sink);
        dt = bench_now_ns() - t0;
        if (dt >= 200000 || iters >= (1ull << 34))
            break;
        iters *= 2;
    }
    __asm__ volatile("" : : "r"(sink));
    return (uint64_t)((double)iters * 500000.0 / (double)(dt ? dt : 1)) + 1;
}

/* A cpufreq figure in MHz (kHz in the file), 0 if absent. */
static double cpufreq_mhz(const char *file)
{
    char path[128];
    FILE *f;
    double khz = 0.0;

    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cpufreq/%s", file);
    f = fopen(path, "r");
    if (f == NULL)
        return 0.0;
    if (fscanf(f, "%lf", &khz) != 1)
        khz = 0.0;
    fclose(f);
    return khz / 1000.0;
}

/* The report line, from what is known so far. */
static void describe(struct bench_cycles *cy)
{
    switch (cy->source) {
    case BENCH_CYCLES_PERF:
        snprintf(cy->desc, sizeof cy->desc,
                 "perf_event_open (PERF_COUNT_HW_CPU_CYCLES, user space, this thread)%s",
                 cy->user_mhz_ignored ? "; --cpu-mhz ignored" : "");
        break;
    case BENCH_CYCLES_USER_MHZ:
        snprintf(cy->desc, sizeof cy->desc, "time x %.0f MHz from --cpu-mhz (%s)", cy->mhz,
                 cy->why);
        break;
    case BENCH_CYCLES_ESTIMATE:
        snprintf(cy->desc, sizeof cy->desc,
                 "time x core clock estimated by a dependent-add loop in each round: mean "
                 "%.0f MHz, range %.0f-%.0f over %u estimates (%s; %s; --cpu-mhz N overrides)",
                 cy->refreshes ? cy->mhz_sum / cy->refreshes : cy->mhz, cy->mhz_min, cy->mhz_max,
                 cy->refreshes, cy->why, cy->cpufreq);
        break;
    }
}

void bench_cycles_init(struct bench_cycles *cy, double user_mhz)
{
    memset(cy, 0, sizeof *cy);
    cy->perf_fd = -1;
    snprintf(cy->why, sizeof cy->why, "perf_event_open: not Linux");
#ifdef __linux__
    cy->perf_fd = perf_open(cy->why, sizeof cy->why);
#endif
    if (cy->perf_fd >= 0) {
        cy->source = BENCH_CYCLES_PERF;
        cy->user_mhz_ignored = user_mhz > 0;
    } else if (user_mhz > 0) {
        cy->source = BENCH_CYCLES_USER_MHZ;
        cy->mhz = user_mhz;
    } else {
        double cur = cpufreq_mhz("scaling_cur_freq"), max = cpufreq_mhz("cpuinfo_max_freq");

        cy->source = BENCH_CYCLES_ESTIMATE;
        snprintf(cy->cpufreq, sizeof cy->cpufreq, "no cpufreq in /sys");
        if (max > 0)
            snprintf(cy->cpufreq, sizeof cy->cpufreq, "cpufreq: now %.0f MHz, max %.0f MHz", cur,
                     max);
        cy->chain_iters = size_chain();
        bench_cycles_refresh(cy);
    }
    describe(cy);
}

void bench_cycles_refresh(struct bench_cycles *cy)
{
    if (cy->source != BENCH_CYCLES_ESTIMATE)
        return;
    cy->mhz = estimate_mhz(cy->chain_iters);
    if (cy->refreshes == 0 || cy->mhz < cy->mhz_min)
        cy->mhz_min = cy->mhz;
    if (cy->refreshes == 0 || cy->mhz > cy->mhz_max)
        cy->mhz_max = cy->mhz;
    cy->mhz_sum += cy->mhz;
    cy->refreshes++;
    describe(cy);
}

void bench_cycles_close(struct bench_cycles *cy)
{
    if (cy->perf_fd >= 0)
        close(cy->perf_fd);
    cy->perf_fd = -1;
}

const char *bench_cycles_short(const struct bench_cycles *cy)
{
    switch (cy->source) {
    case BENCH_CYCLES_PERF: return "perf cycle counter";
    case BENCH_CYCLES_USER_MHZ: return "time x --cpu-mhz";
    case BENCH_CYCLES_ESTIMATE: break;
    }
    return "time x estimated clock";
}

static uint64_t read_counter(const struct bench_cycles *cy)
{
    uint64_t c = 0;

    if (read(cy->perf_fd, &c, sizeof c) != (ssize_t)sizeof c)
        c = 0;
    return c;
}

void bench_span_begin(const struct bench_cycles *cy, struct bench_span *sp)
{
    sp->c0 = cy->perf_fd >= 0 ? read_counter(cy) : 0;
    sp->t0 = bench_now_ns();
}

void bench_span_end(const struct bench_cycles *cy, struct bench_span *sp)
{
    uint64_t t1 = bench_now_ns();

    sp->ns = t1 - sp->t0;
    if (cy->perf_fd >= 0)
        sp->cycles = (double)(read_counter(cy) - sp->c0);
    else
        sp->cycles = (double)sp->ns * cy->mhz / 1000.0;
}
