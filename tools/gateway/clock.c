/* SPDX-License-Identifier: ISC */
/*
 * clock.c - the gateway's time: one monotonic clock and the arithmetic
 * poll() timeouts need.  On its own so that the multiplexer can be linked
 * into its tests and fuzz target without the program's main().
 */
#include <time.h>

#include "clock.h"

int64_t gw_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int gw_ms_until(int64_t at_ns, int64_t now_ns)
{
    int64_t ms;

    if (at_ns <= now_ns)
        return 0;
    ms = (at_ns - now_ns + 999999) / 1000000;
    return ms > 3600000 ? 3600000 : (int)ms;
}

int gw_min_timeout(int a, int b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a < b ? a : b;
}
