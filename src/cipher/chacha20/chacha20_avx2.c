/* SPDX-License-Identifier: ISC */
/*
 * chacha20_avx2.c - ChaCha20 (RFC 8439), eight blocks at once in AVX2.
 *
 * Built with -mavx2 for this file only and run only when cpuid/xgetbv say
 * the CPU and OS support AVX2 (cpu.c), so the library still runs on older
 * x86-64 processors.
 *
 * Layout ("vertical"): vector register x[i] holds word i of eight
 * consecutive blocks, lane j being block counter + j, so the quarter
 * rounds of RFC 8439 section 2.1 run unchanged on whole registers, eight
 * blocks per instruction.  Rotations by 16 and 8 are byte shuffles
 * (vpshufb), by 12 and 7 two shifts and an OR.  At the end the 16 x 8
 * words are transposed into eight 64-byte blocks (unpack 32/64, then
 * 128-bit lane swaps) and XORed into the output with unaligned loads and
 * stores, which x86's little-endian byte order makes the RFC's
 * serialisation.
 *
 * Short inputs: the driver (chacha20.h) asks for exactly the blocks a call
 * needs; only those are stored, the remaining lanes are computed for free
 * in the same instructions.
 *
 * Constant time: additions, XORs, shifts and shuffles with constant
 * operands; branches only on the public block counts.  No table lookups.
 *
 * Vectors: every published ChaCha20 vector and the libsodium cross-check
 * run through this implementation (tests/check_cipher.c forces each).
 */
#include "chacha20.h"

#include <immintrin.h>

#define ROT16(x)   _mm256_shuffle_epi8((x), rot16)
#define ROT8(x)    _mm256_shuffle_epi8((x), rot8)
#define ROTS(x, n) _mm256_or_si256(_mm256_slli_epi32((x), (n)), _mm256_srli_epi32((x), 32 - (n)))

#define QR(a, b, c, d)                                                                             \
    do {                                                                                           \
        a = _mm256_add_epi32(a, b);                                                                \
        d = ROT16(_mm256_xor_si256(d, a));                                                         \
        c = _mm256_add_epi32(c, d);                                                                \
        b = ROTS(_mm256_xor_si256(b, c), 12);                                                      \
        a = _mm256_add_epi32(a, b);                                                                \
        d = ROT8(_mm256_xor_si256(d, a));                                                          \
        c = _mm256_add_epi32(c, d);                                                                \
        b = ROTS(_mm256_xor_si256(b, c), 7);                                                       \
    } while (0)

/* Store block pair (lo half = block k, hi half = block k + 4) of a 4-word
 * group transposed below: see mbsc_chacha20_kernel_avx2. */
static inline void put_block(uint8_t *out, const uint8_t *in, size_t b, size_t nxor, uint8_t *tail,
                             __m256i first, __m256i second)
{
    if (b < nxor) {
        uint8_t *o = out + 64u * b;
        const uint8_t *i = in + 64u * b;
        __m256i m0 = _mm256_loadu_si256((const __m256i *)(const void *)i);
        __m256i m1 = _mm256_loadu_si256((const __m256i *)(const void *)(i + 32));
        _mm256_storeu_si256((__m256i *)(void *)o, _mm256_xor_si256(m0, first));
        _mm256_storeu_si256((__m256i *)(void *)(o + 32), _mm256_xor_si256(m1, second));
    } else if (b == nxor && tail != NULL) {
        _mm256_storeu_si256((__m256i *)(void *)tail, first);
        _mm256_storeu_si256((__m256i *)(void *)(tail + 32), second);
    }
}

/* Transpose words w0..w3 (lane j = block j) into 4 vectors: result k holds
 * the four words of block k in its low 128 bits and of block k+4 in its
 * high 128 bits. */
#define TRANSPOSE4(w0, w1, w2, w3)                                                                 \
    do {                                                                                           \
        __m256i t0_ = _mm256_unpacklo_epi32(w0, w1);                                               \
        __m256i t1_ = _mm256_unpackhi_epi32(w0, w1);                                               \
        __m256i t2_ = _mm256_unpacklo_epi32(w2, w3);                                               \
        __m256i t3_ = _mm256_unpackhi_epi32(w2, w3);                                               \
        w0 = _mm256_unpacklo_epi64(t0_, t2_);                                                      \
        w1 = _mm256_unpackhi_epi64(t0_, t2_);                                                      \
        w2 = _mm256_unpacklo_epi64(t1_, t3_);                                                      \
        w3 = _mm256_unpackhi_epi64(t1_, t3_);                                                      \
    } while (0)

void mbsc_chacha20_kernel_avx2(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                               size_t nxor, uint8_t *tail)
{
    const __m256i rot16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2,
                                           3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    const __m256i rot8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3,
                                          0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
    const __m256i ctr = _mm256_add_epi32(_mm256_set1_epi32((int)input[12]),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i x0 = _mm256_set1_epi32((int)input[0]), x1 = _mm256_set1_epi32((int)input[1]);
    __m256i x2 = _mm256_set1_epi32((int)input[2]), x3 = _mm256_set1_epi32((int)input[3]);
    __m256i x4 = _mm256_set1_epi32((int)input[4]), x5 = _mm256_set1_epi32((int)input[5]);
    __m256i x6 = _mm256_set1_epi32((int)input[6]), x7 = _mm256_set1_epi32((int)input[7]);
    __m256i x8 = _mm256_set1_epi32((int)input[8]), x9 = _mm256_set1_epi32((int)input[9]);
    __m256i x10 = _mm256_set1_epi32((int)input[10]), x11 = _mm256_set1_epi32((int)input[11]);
    __m256i x12 = ctr, x13 = _mm256_set1_epi32((int)input[13]);
    __m256i x14 = _mm256_set1_epi32((int)input[14]), x15 = _mm256_set1_epi32((int)input[15]);

    for (int r = 0; r < 10; r++) {
        QR(x0, x4, x8, x12);
        QR(x1, x5, x9, x13);
        QR(x2, x6, x10, x14);
        QR(x3, x7, x11, x15);
        QR(x0, x5, x10, x15);
        QR(x1, x6, x11, x12);
        QR(x2, x7, x8, x13);
        QR(x3, x4, x9, x14);
    }
#define ADD(x, i) x = _mm256_add_epi32(x, _mm256_set1_epi32((int)input[i]))
    ADD(x0, 0);
    ADD(x1, 1);
    ADD(x2, 2);
    ADD(x3, 3);
    ADD(x4, 4);
    ADD(x5, 5);
    ADD(x6, 6);
    ADD(x7, 7);
    ADD(x8, 8);
    ADD(x9, 9);
    ADD(x10, 10);
    ADD(x11, 11);
    x12 = _mm256_add_epi32(x12, ctr);
    ADD(x13, 13);
    ADD(x14, 14);
    ADD(x15, 15);
#undef ADD

    TRANSPOSE4(x0, x1, x2, x3);
    TRANSPOSE4(x4, x5, x6, x7);
    TRANSPOSE4(x8, x9, x10, x11);
    TRANSPOSE4(x12, x13, x14, x15);

    /* Block k: words 0-3 from group 0, 4-7 from group 1, ...; 0x20 takes
     * the low 128-bit halves (block k), 0x31 the high ones (block k + 4). */
#define BLOCK(k, a, b, c, d)                                                                       \
    put_block(out, in, k, nxor, tail, _mm256_permute2x128_si256(a, b, 0x20),                       \
              _mm256_permute2x128_si256(c, d, 0x20));                                              \
    put_block(out, in, k + 4, nxor, tail, _mm256_permute2x128_si256(a, b, 0x31),                   \
              _mm256_permute2x128_si256(c, d, 0x31))
    BLOCK(0, x0, x4, x8, x12);
    BLOCK(1, x1, x5, x9, x13);
    BLOCK(2, x2, x6, x10, x14);
    BLOCK(3, x3, x7, x11, x15);
#undef BLOCK
}

static void chacha20_avx2_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    mbsc_chacha20_xor_with(state, out, in, len, mbsc_chacha20_kernel_avx2, 8u);
}

const struct mbsc_cipher_impl mbsc_chacha20_avx2 = {
    .name = "avx2",
    .cpu_needs = MBSC_CPU_AVX2,
    .state_bytes = sizeof(struct chacha20_state),
    .init = mbsc_chacha20_init,
    .xor_stream = chacha20_avx2_xor,
};
