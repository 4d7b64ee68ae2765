/*
 * enocoro128v2_lookahead.h - Enocoro-128v2's bulk loop with a 4-round
 * lookahead: the sixteen S-box inputs of four rounds are gathered at once
 * and the sixteen S-boxes evaluated together in a vector register.
 *
 * Included by each vector implementation after it has defined
 *
 *   static inline void enocoro_sbox16(uint64_t *lo, uint64_t *hi)
 *
 * which replaces each of the 16 bytes of lo (bytes 0..7) and hi (8..15)
 * by s8 of it and reorders them as described at enocoro_group() below.
 *
 * Why the inputs of four rounds are known in advance (notation of
 * enocoro128v2_ct.c; the buffer moves up by one place per round and lambda
 * feeds back into places 0, 3, 8 and 17): the S-box inputs b_2, b_7, b_16,
 * b_29 of round t+k (k = 0..3) are the bytes at logical places 2-k, 7-k,
 * 16-k, 29-k before round t, because in those k rounds nothing is written
 * to them (the places written, 2, 7, 16 and 31 at round t+m, are never the
 * place read at round t+k for m < k), except b_(-1) = b_31, which round t
 * itself turns into b_31 ^ a_0.  So with the a_0 of round t, all sixteen
 * are there, as four runs of four neighbouring bytes:
 *
 *   b_(-1..2), b_(4..7), b_(13..16), b_(26..29)   (b_(-1) ^= a_0)
 *
 * The rounds then run as in the portable code, with the S-box outputs
 * taken from a register instead of computed.  Timing: the runs are loaded
 * at addresses fixed by the public round count (32 rounds unrolled, as in
 * the portable code), the S-box is a register operation, every branch is
 * on a public length.  Nothing is indexed by a secret.
 */
#ifndef MBSC_ENOCORO128V2_LOOKAHEAD_H
#define MBSC_ENOCORO128V2_LOOKAHEAD_H

#include "enocoro128v2.h"

/* The four bytes at logical places p..p+3 when top is t (t, p constant
 * after inlining), little-endian: byte 0 is place p. */
MBSC_ALWAYS_INLINE uint32_t enocoro_run(const uint8_t b[32], unsigned t, unsigned p)
{
    unsigned m = (t + p) & 31u;

    if (m <= 28u)
        return mbsc_load32_le(b + m);
    return (uint32_t)b[m] | ((uint32_t)b[(m + 1u) & 31u] << 8) |
           ((uint32_t)b[(m + 2u) & 31u] << 16) | ((uint32_t)b[(m + 3u) & 31u] << 24);
}

/* v * 0x02 in GF(2^8) mod 0x11d, v < 256. */
MBSC_ALWAYS_INLINE uint32_t enocoro_la_xtime(uint32_t v)
{
    return (v << 1) ^ (0x11Du & (0u - (v >> 7)));
}

/*
 * One round at start index t with the S-box outputs s = S(b_2) |
 * S(b_7) << 8 | S(b_16) << 16 | S(b_29) << 24 (enocoro128v2_ct.c).
 */
MBSC_ALWAYS_INLINE void enocoro_la_round(uint8_t b[32], unsigned t, uint32_t s, uint32_t *a0,
                                         uint32_t *a1)
{
#define B(i) b[(t + (i)) & 31u]
    uint32_t u0 = *a0 ^ (s & 0xFFu);
    uint32_t u1 = *a1 ^ ((s >> 8) & 0xFFu);

    B(2) ^= B(6);
    B(7) ^= B(15);
    B(16) ^= B(28);
    B(31) ^= (uint8_t)*a0;
#undef B
    *a0 = u0 ^ u1 ^ ((s >> 16) & 0xFFu);
    *a1 = u0 ^ enocoro_la_xtime(u1) ^ (s >> 24);
}

/*
 * Rounds j .. j+3 of a 32-round block that starts at top 0 (round j runs
 * at top (32 - j) & 31).  enocoro_sbox16() gets the runs as lo = run(-1) |
 * run(4) << 32, hi = run(13) | run(26) << 32 and returns, in 32-bit word
 * k of lo:hi, the outputs for round j+k in the order of enocoro_la_round.
 */
#define ENOCORO_GROUP(j)                                                                           \
    do {                                                                                           \
        const unsigned t_ = (32u - (j)) & 31u;                                                     \
        uint64_t lo_ = ((uint64_t)enocoro_run(st->b, t_, 31u) ^ a0) |                              \
                       ((uint64_t)enocoro_run(st->b, t_, 4u) << 32);                               \
        uint64_t hi_ =                                                                             \
            (uint64_t)enocoro_run(st->b, t_, 13u) | ((uint64_t)enocoro_run(st->b, t_, 26u) << 32); \
        enocoro_sbox16(&lo_, &hi_);                                                                \
        out[(j) + 0] = (uint8_t)(in[(j) + 0] ^ a1);                                                \
        enocoro_la_round(st->b, t_, (uint32_t)lo_, &a0, &a1);                                      \
        out[(j) + 1] = (uint8_t)(in[(j) + 1] ^ a1);                                                \
        enocoro_la_round(st->b, (t_ - 1u) & 31u, (uint32_t)(lo_ >> 32), &a0, &a1);                 \
        out[(j) + 2] = (uint8_t)(in[(j) + 2] ^ a1);                                                \
        enocoro_la_round(st->b, (t_ - 2u) & 31u, (uint32_t)hi_, &a0, &a1);                         \
        out[(j) + 3] = (uint8_t)(in[(j) + 3] ^ a1);                                                \
        enocoro_la_round(st->b, (t_ - 3u) & 31u, (uint32_t)(hi_ >> 32), &a0, &a1);                 \
    } while (0)

/* 32 rounds from top 0 (where they end again), out = in ^ z. */
static void enocoro_lookahead_32(struct enocoro_state *st, uint8_t *out, const uint8_t *in)
{
    uint32_t a0 = st->a0, a1 = st->a1;

    ENOCORO_GROUP(0);
    ENOCORO_GROUP(4);
    ENOCORO_GROUP(8);
    ENOCORO_GROUP(12);
    ENOCORO_GROUP(16);
    ENOCORO_GROUP(20);
    ENOCORO_GROUP(24);
    ENOCORO_GROUP(28);
    st->a0 = (uint8_t)a0;
    st->a1 = (uint8_t)a1;
}

/* The stream: single portable rounds up to top 0, then 32-round blocks. */
static void enocoro_lookahead_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct enocoro_state *st = state;
    size_t head = st->top; /* rounds until top is 0 again */

    /* Every branch here depends on len and top only, both public. */
    if (len == 0) {
        return;
    }
    if (head >= len) {
        mbsc_enocoro_rounds(st, out, in, len);
        return;
    }
    mbsc_enocoro_rounds(st, out, in, head);
    out += head;
    in += head;
    len -= head;
    for (; len >= 32; len -= 32, out += 32, in += 32) {
        enocoro_lookahead_32(st, out, in);
    }
    mbsc_enocoro_rounds(st, out, in, len);
}

#endif /* MBSC_ENOCORO128V2_LOOKAHEAD_H */
