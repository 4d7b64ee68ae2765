/* SPDX-License-Identifier: ISC */
/*
 * testutil.h - small helpers shared by the Check suites.
 *
 * Test data lives under $(srcdir)/tests; automake exports `srcdir` to the
 * test environment, so tests find their files in VPATH builds and in
 * `make distcheck` as well.
 */
#ifndef MBSC_TESTUTIL_H
#define MBSC_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Read the whole file at $srcdir/relpath (srcdir defaults to ".") into a
 * NUL-terminated malloc'd buffer; *len gets its size without the NUL.
 * Returns NULL (and prints why on stderr) if it cannot.
 */
char *tu_read_srcfile(const char *relpath, size_t *len);

/* Value of one hex digit, or -1. */
int tu_hex_digit(char c);

/*
 * Decode hex_len hex digits at hex into out (at most cap bytes).
 * Returns the number of bytes, or -1 on an odd length, a bad digit or
 * a result longer than cap.
 */
long tu_hex_decode(uint8_t *out, size_t cap, const char *hex, size_t hex_len);

/* tu_hex_decode of a NUL-terminated string into a new malloc'd buffer. */
uint8_t *tu_hex_alloc(const char *hex, size_t *len);

/* Fill buf with bytes from a fixed-seed generator (reproducible tests). */
void tu_fill_pattern(uint8_t *buf, size_t len, uint32_t seed);

/* CLOCK_MONOTONIC in milliseconds, for timing what a test waits for. */
long long tu_now_ms(void);

#endif /* MBSC_TESTUTIL_H */
