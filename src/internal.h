/* SPDX-License-Identifier: ISC */
/*
 * internal.h - the one private header shared by every mbsc source file.
 *
 * Byte-order helpers (never cast byte pointers to wider types: that breaks
 * on big-endian machines and on strict-alignment ARM), rotations, and the
 * secret-handling helpers from libsodium.
 */
#ifndef MBSC_INTERNAL_H
#define MBSC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "mbsc/error.h"
#include "mbsc/export.h"
#include "mbsc/init.h"

#define MBSC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/*
 * For small helpers in hot loops that GCC's -O2 heuristics refuse to inline
 * once they are used many times (a call per byte or block otherwise).
 * Correct either way.
 */
#if defined(__GNUC__)
#define MBSC_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define MBSC_ALWAYS_INLINE static inline
#endif

/* Compile-time assertion usable at file scope. */
#define MBSC_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)

static inline uint32_t mbsc_load32_le(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline void mbsc_store32_le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint64_t mbsc_load64_le(const uint8_t *p)
{
    return (uint64_t)mbsc_load32_le(p) | ((uint64_t)mbsc_load32_le(p + 4) << 32);
}

static inline void mbsc_store64_le(uint8_t *p, uint64_t v)
{
    mbsc_store32_le(p, (uint32_t)v);
    mbsc_store32_le(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t mbsc_load16_be(const uint8_t *p)
{
    return (uint16_t)(((unsigned)p[0] << 8) | p[1]);
}

static inline void mbsc_store16_be(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline uint32_t mbsc_rotl32(uint32_t x, unsigned n)
{
    return (x << (n & 31u)) | (x >> ((32u - n) & 31u));
}

static inline uint8_t mbsc_rotl8(uint8_t x, unsigned n)
{
    return (uint8_t)((x << (n & 7u)) | (x >> ((8u - n) & 7u)));
}

#if defined(__GNUC__)
#define MBSC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define MBSC_PRINTF(f, a)
#endif

/*
 * Format one line of explanation into why, if why is not NULL and why_len
 * > 0 (always NUL-terminated then; truncated if too long).  why.c.
 */
void mbsc_why(char *why, size_t why_len, const char *fmt, ...) MBSC_PRINTF(3, 4);

/* strerror(err), thread-safe (a thread-local buffer).  why.c. */
const char *mbsc_os_error(int err);

/* Wipe secrets in a way the compiler may not optimise away. */
#define mbsc_wipe(p, n) sodium_memzero((p), (n))

#endif /* MBSC_INTERNAL_H */
