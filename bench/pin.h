/* SPDX-License-Identifier: ISC */
/*
 * pin.h - keep the measuring thread on one core.
 *
 * A thread that migrates between cores pays for cold caches and, on a
 * machine with unlike cores, runs at another speed.  The round-trip group
 * needs several threads running at once, so it lifts the pin while it runs.
 */
#ifndef MBSC_BENCH_PIN_H
#define MBSC_BENCH_PIN_H

#include <stddef.h>

/* Pin the calling thread to one allowed CPU; desc says what happened. */
int bench_pin(char *desc, size_t len);

/* Give the calling thread back its original CPU set (threads it creates
 * inherit that set), and pin it again afterwards. */
void bench_unpin(void);
void bench_repin(void);

#endif /* MBSC_BENCH_PIN_H */
