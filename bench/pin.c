/* SPDX-License-Identifier: ISC */
/*
 * pin.c - CPU affinity (bench.h).
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET: Linux, not POSIX */

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "bench.h"

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

/* Threads created meanwhile inherit the original set. */
void bench_unpin(void)
{
    if (pinned)
        (void)sched_setaffinity(0, sizeof original, &original);
}

void bench_repin(void)
{
    if (pinned)
        (void)sched_setaffinity(0, sizeof pinned_set, &pinned_set);
}
#else
void bench_pin(char *desc, size_t len)
{
    snprintf(desc, len, "not pinned (no sched_setaffinity on this system)");
}

void bench_unpin(void)
{
}

void bench_repin(void)
{
}
#endif
