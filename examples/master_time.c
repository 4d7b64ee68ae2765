/* SPDX-License-Identifier: ISC */
/*
 * master_time.c - secure_master's clock and its interruptions: the
 * monotonic time of round trips and polls, and SIGINT/SIGTERM, which end a
 * poll with its summary (master.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "master.h"

uint64_t master_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint32_t master_elapsed_us(uint64_t t0)
{
    uint64_t dt = (master_now_ns() - t0) / 1000u;

    return dt > UINT32_MAX ? UINT32_MAX : (uint32_t)dt;
}

volatile sig_atomic_t master_interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    master_interrupted = 1;
}

/*
 * SIGINT and SIGTERM end a poll with its summary instead of killing the
 * program mid-line.  No SA_RESTART: the sleep between reads is cut short.
 */
void master_catch_interrupts(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGINT, &sa, NULL);
    (void)sigaction(SIGTERM, &sa, NULL);
}

void master_sleep_ms(unsigned long ms)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !master_interrupted)
        ;
}
