/* SPDX-License-Identifier: ISC */
/*
 * chacha20_neon.h - what the two NEON ChaCha20 implementations share: the
 * quarter round on four blocks in q registers, the 4 x 4 transpose, the
 * output of one block, and the four-block kernel (chacha20_neon.c), which
 * chacha20_neon_scalar.c also uses for batches of two to four blocks.
 * Included only by files built with NEON enabled.
 */
#ifndef MBSC_CHACHA20_NEON_H
#define MBSC_CHACHA20_NEON_H

#include "chacha20.h"

#include <arm_neon.h>

#if defined(__ARM_BIG_ENDIAN)
#error "the NEON ChaCha20 code assumes little-endian lanes; build with --disable-simd"
#endif

#define ROT16(x)   vreinterpretq_u32_u16(vrev32q_u16(vreinterpretq_u16_u32(x)))
#define ROTL(x, n) vsriq_n_u32(vshlq_n_u32((x), (n)), (x), 32 - (n))

#define QR(a, b, c, d)                                                                             \
    do {                                                                                           \
        a = vaddq_u32(a, b);                                                                       \
        d = ROT16(veorq_u32(d, a));                                                                \
        c = vaddq_u32(c, d);                                                                       \
        b = veorq_u32(b, c);                                                                       \
        b = ROTL(b, 12);                                                                           \
        a = vaddq_u32(a, b);                                                                       \
        d = veorq_u32(d, a);                                                                       \
        d = ROTL(d, 8);                                                                            \
        c = vaddq_u32(c, d);                                                                       \
        b = veorq_u32(b, c);                                                                       \
        b = ROTL(b, 7);                                                                            \
    } while (0)

/* Words w0..w3 (lane j = block j) to: w_k = the four words of block k. */
#define TRANSPOSE4(w0, w1, w2, w3)                                                                 \
    do {                                                                                           \
        uint32x4x2_t p01_ = vtrnq_u32(w0, w1);                                                     \
        uint32x4x2_t p23_ = vtrnq_u32(w2, w3);                                                     \
        w0 = vcombine_u32(vget_low_u32(p01_.val[0]), vget_low_u32(p23_.val[0]));                   \
        w1 = vcombine_u32(vget_low_u32(p01_.val[1]), vget_low_u32(p23_.val[1]));                   \
        w2 = vcombine_u32(vget_high_u32(p01_.val[0]), vget_high_u32(p23_.val[0]));                 \
        w3 = vcombine_u32(vget_high_u32(p01_.val[1]), vget_high_u32(p23_.val[1]));                 \
    } while (0)

static inline void put16(uint8_t *out, const uint8_t *in, uint32x4_t ks)
{
    uint8x16_t m = vld1q_u8(in);
    vst1q_u8(out, veorq_u8(m, vreinterpretq_u8_u32(ks)));
}

static inline void put_block(uint8_t *out, const uint8_t *in, size_t b, size_t nxor, uint8_t *tail,
                             uint32x4_t w0, uint32x4_t w1, uint32x4_t w2, uint32x4_t w3)
{
    if (b < nxor) {
        uint8_t *o = out + 64u * b;
        const uint8_t *i = in + 64u * b;
        put16(o, i, w0);
        put16(o + 16, i + 16, w1);
        put16(o + 32, i + 32, w2);
        put16(o + 48, i + 48, w3);
    } else if (b == nxor && tail != NULL) {
        vst1q_u8(tail, vreinterpretq_u8_u32(w0));
        vst1q_u8(tail + 16, vreinterpretq_u8_u32(w1));
        vst1q_u8(tail + 32, vreinterpretq_u8_u32(w2));
        vst1q_u8(tail + 48, vreinterpretq_u8_u32(w3));
    }
}

/* Blocks input[12] .. input[12] + 3, as a chacha20_kernel (chacha20.h). */
void mbsc_chacha20_kernel_neon(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                               size_t nxor, uint8_t *tail);

#endif /* MBSC_CHACHA20_NEON_H */
