/* SPDX-License-Identifier: ISC */
/*
 * clock.h - the gateway's time: one monotonic clock and the arithmetic of
 * timeouts.  On its own so that the multiplexer can be linked into its
 * tests and fuzz target without the loop or main().
 */
#ifndef MBSC_GATEWAY_CLOCK_H
#define MBSC_GATEWAY_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t gw_now_ns(void);
/* Milliseconds from now_ns until at_ns, rounded up, >= 0, at most an hour. */
int gw_ms_until(int64_t at_ns, int64_t now_ns);
/* The smaller of two poll()-style timeouts, where -1 is "none". */
int gw_min_timeout(int a, int b);

#endif /* MBSC_GATEWAY_CLOCK_H */
