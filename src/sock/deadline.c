/* SPDX-License-Identifier: ISC */
/*
 * deadline.c - the monotonic clock and deadlines of the socket layer.
 *
 * CLOCK_MONOTONIC, because a wall clock that steps (NTP, an operator)
 * would stretch or cut every timeout.  A deadline is kept as the instant
 * it expires, so that a wait interrupted by a signal resumes with the time
 * that is really left.
 */
#include <limits.h>
#include <time.h>

#include "sock/sock.h"

int64_t mbsc_monotonic_ns(void)
{
    struct timespec ts;

    /* CLOCK_MONOTONIC cannot fail with a valid pointer on POSIX systems. */
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

void mbsc_deadline_start(mbsc_deadline *d, int timeout_ms)
{
    d->never = timeout_ms < 0;
    d->at_ns = d->never ? 0 : mbsc_monotonic_ns() + (int64_t)timeout_ms * 1000000;
}

int mbsc_deadline_poll_ms(const mbsc_deadline *d)
{
    int64_t left;

    if (d->never)
        return -1;
    left = d->at_ns - mbsc_monotonic_ns();
    if (left <= 0)
        return 0;
    /* Round up: rounding down would spin on poll(0) in the last millisecond. */
    left = (left + 999999) / 1000000;
    return left > INT_MAX ? INT_MAX : (int)left;
}
