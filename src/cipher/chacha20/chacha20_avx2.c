/* SPDX-License-Identifier: ISC */
/*
 * chacha20_avx2.c - ChaCha20 (RFC 8439) in AVX2: eight blocks at once in
 * vectors and a ninth in scalar registers, short inputs two blocks per
 * register.
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
 * Registers: sixteen state rows and the two shuffle masks do not fit in
 * x86-64's sixteen ymm registers, and the spills the compiler chose put
 * stores and reloads (with their store-forwarding latency) on the
 * dependency chains.  As OpenSSL's ChaCha20_8x does, the four rows c
 * (words 8-11) live in memory and two at a time in registers: a column
 * pair of quarter rounds uses c0, c1, the next pair and the first
 * diagonal pair use c2, c3, the last diagonal pair c0, c1 again, so each
 * double round moves only four rows to and from memory, far from their
 * use.  An empty asm with a memory clobber marks each switch, so that the
 * compiler keeps to that plan.
 *
 * A ninth block in scalar registers: the vector units are the limit (each
 * quarter round is 16 vector instructions on three ports), while the
 * integer ports sit idle, so a full batch is nine blocks, the ninth
 * computed with general-purpose registers in the same loop (the trick of
 * OpenSSL's NEON code).  About 5% with the c rows in memory, 4% more with
 * the ninth block, on this project's development machine (docs/bench.md);
 * clang builds leave the ninth block out (SCALAR_LANE below).
 *
 * Short inputs: the driver (chacha20.h) asks for exactly the blocks a call
 * needs, and only those are stored.  Up to six blocks (a Modbus frame's
 * one-time key and payload are one to five) use the "horizontal" layout
 * of chacha20_avx512.c instead, one ymm register per state row holding
 * two blocks, one to three such quads interleaved: a sixth of the work of
 * the eight-lane batch per block for one or two blocks, and still less
 * for five or six.  Single blocks come here too (one quad beats the
 * scalar block).  Seven or eight blocks take the full batch, whose scalar
 * block is then computed and dropped.
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

/* --- Short inputs: up to six blocks, rows in registers ---------------- */

/* The quarter round on the columns of a register quad: rows a, b, c, d,
 * two blocks per register (one per 128-bit lane). */
#define ROWS_QR(a, b, c, d)                                                                        \
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

/* Diagonals into columns and back, rows a, c, d moved (not b, whose
 * update ends one quarter round and starts the next; chacha20_avx512.c
 * explains the word orders). */
#define DIAG(a, c, d)                                                                              \
    do {                                                                                           \
        a = _mm256_shuffle_epi32(a, 0x93);                                                         \
        c = _mm256_shuffle_epi32(c, 0x39);                                                         \
        d = _mm256_shuffle_epi32(d, 0x4e);                                                         \
    } while (0)
#define DIAG_UNDO(a, c, d)                                                                         \
    do {                                                                                           \
        a = _mm256_shuffle_epi32(a, 0x39);                                                         \
        c = _mm256_shuffle_epi32(c, 0x93);                                                         \
        d = _mm256_shuffle_epi32(d, 0x4e);                                                         \
    } while (0)

/* Blocks first and first + 1: the low and high 128-bit lanes of the rows. */
static inline void put_pair(uint8_t *out, const uint8_t *in, size_t first, size_t nxor,
                            uint8_t *tail, __m256i a, __m256i b, __m256i c, __m256i d)
{
    put_block(out, in, first, nxor, tail, _mm256_permute2x128_si256(a, b, 0x20),
              _mm256_permute2x128_si256(c, d, 0x20));
    put_block(out, in, first + 1u, nxor, tail, _mm256_permute2x128_si256(a, b, 0x31),
              _mm256_permute2x128_si256(c, d, 0x31));
}

/*
 * One, two or three quads (nq, a constant at each call site) of two
 * blocks each, interleaved so that their dependency chains share the
 * ports.  Lanes past the blocks asked for are computed and dropped.
 */
MBSC_ALWAYS_INLINE void short_kernel(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                                     size_t nxor, uint8_t *tail, int nq)
{
    const __m256i rot16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2,
                                           3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    const __m256i rot8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3,
                                          0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
    const __m256i a0 =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)input));
    const __m256i b0 =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(input + 4)));
    const __m256i c0 =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(input + 8)));
    /* Row d of block m: word 12 (the counter) + m. */
    const __m256i d0 = _mm256_add_epi32(
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(input + 12))),
        _mm256_setr_epi32(0, 0, 0, 0, 1, 0, 0, 0));
    const __m256i two = _mm256_setr_epi32(2, 0, 0, 0, 2, 0, 0, 0);
    const __m256i d1 = _mm256_add_epi32(d0, two), d2 = _mm256_add_epi32(d1, two);
    __m256i a = a0, b = b0, c = c0, d = d0;
    __m256i e = a0, f = b0, g = c0, h = d1;
    __m256i i = a0, j = b0, k = c0, l = d2;

    for (int r = 0; r < 10; r++) {
        ROWS_QR(a, b, c, d);
        if (nq > 1)
            ROWS_QR(e, f, g, h);
        if (nq > 2)
            ROWS_QR(i, j, k, l);
        DIAG(a, c, d);
        if (nq > 1)
            DIAG(e, g, h);
        if (nq > 2)
            DIAG(i, k, l);
        ROWS_QR(a, b, c, d);
        if (nq > 1)
            ROWS_QR(e, f, g, h);
        if (nq > 2)
            ROWS_QR(i, j, k, l);
        DIAG_UNDO(a, c, d);
        if (nq > 1)
            DIAG_UNDO(e, g, h);
        if (nq > 2)
            DIAG_UNDO(i, k, l);
    }
    put_pair(out, in, 0, nxor, tail, _mm256_add_epi32(a, a0), _mm256_add_epi32(b, b0),
             _mm256_add_epi32(c, c0), _mm256_add_epi32(d, d0));
    if (nq > 1)
        put_pair(out, in, 2, nxor, tail, _mm256_add_epi32(e, a0), _mm256_add_epi32(f, b0),
                 _mm256_add_epi32(g, c0), _mm256_add_epi32(h, d1));
    if (nq > 2)
        put_pair(out, in, 4, nxor, tail, _mm256_add_epi32(i, a0), _mm256_add_epi32(j, b0),
                 _mm256_add_epi32(k, c0), _mm256_add_epi32(l, d2));
}

/* --- Full batches: eight lanes and a scalar block ---------------------- */

/*
 * The ninth, scalar block pays with gcc (about 4% here) but costs clang
 * about 10%: clang's schedule of the two interleaved loops leaves the
 * vector ports idle.  Measured with gcc 12 and clang 14 on this project's
 * development machine; clang builds use eight lanes.
 */
#if defined(__clang__)
#define SCALAR_LANE 0
#else
#define SCALAR_LANE 1
#endif
#define BATCH_BLOCKS (8u + SCALAR_LANE)

/* Block 8 (the scalar one): w[0..15] its keystream words. */
static inline void put_scalar_block(uint8_t *out, const uint8_t *in, size_t nxor, uint8_t *tail,
                                    const uint32_t w[16])
{
    if (nxor > 8u) {
        for (unsigned i = 0; i < 16u; i++)
            mbsc_store32_le(out + 512u + 4u * i, mbsc_load32_le(in + 512u + 4u * i) ^ w[i]);
    } else {
        for (unsigned i = 0; i < 16u; i++)
            mbsc_store32_le(tail + 4u * i, w[i]);
    }
}

/*
 * Eight vector blocks and the ninth in scalar registers (stored only when
 * asked for: for seven or eight blocks it is computed on ports that would
 * idle anyway, which costs less than a second copy of this loop).
 */
static void kernel_avx2(const uint32_t input[16], uint8_t *out, const uint8_t *in, size_t nxor,
                        uint8_t *tail)
{
    /* The ninth block, counter input[12] + 8: the driver asks for nine
     * blocks only when that counter does not wrap, and a wrapped one of a
     * shorter batch is never stored. */
    uint32_t s0 = input[0], s1 = input[1], s2 = input[2], s3 = input[3];
    uint32_t s4 = input[4], s5 = input[5], s6 = input[6], s7 = input[7];
    uint32_t s8 = input[8], s9 = input[9], s10 = input[10], s11 = input[11];
    uint32_t s12 = input[12] + 8u, s13 = input[13], s14 = input[14], s15 = input[15];
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
    __m256i x8, x9, x10, x11;
    __m256i x12 = ctr, x13 = _mm256_set1_epi32((int)input[13]);
    __m256i x14 = _mm256_set1_epi32((int)input[14]), x15 = _mm256_set1_epi32((int)input[15]);
    /* Rows c in memory (see the top of this file). */
    __m256i cp[4] = {_mm256_set1_epi32((int)input[8]), _mm256_set1_epi32((int)input[9]),
                     _mm256_set1_epi32((int)input[10]), _mm256_set1_epi32((int)input[11])};

    /* The array's address escapes: the compiler must keep it in memory at
     * every memory clobber below. */
    __asm__ volatile("" : : "r"(cp) : "memory");
    for (int r = 0; r < 10; r++) {
        __m256i c0 = cp[0], c1 = cp[1], c2, c3;

        /* Columns 0, 1. */
        QR(x0, x4, c0, x12);
        if (SCALAR_LANE)
            CHACHA20_QR(s0, s4, s8, s12);
        QR(x1, x5, c1, x13);
        if (SCALAR_LANE)
            CHACHA20_QR(s1, s5, s9, s13);
        cp[0] = c0;
        cp[1] = c1;
        __asm__ volatile("" ::: "memory");
        c2 = cp[2];
        c3 = cp[3];
        /* Columns 2, 3, then diagonals (0, 5, 10, 15) and (1, 6, 11, 12). */
        QR(x2, x6, c2, x14);
        if (SCALAR_LANE)
            CHACHA20_QR(s2, s6, s10, s14);
        QR(x3, x7, c3, x15);
        if (SCALAR_LANE)
            CHACHA20_QR(s3, s7, s11, s15);
        QR(x0, x5, c2, x15);
        if (SCALAR_LANE)
            CHACHA20_QR(s0, s5, s10, s15);
        QR(x1, x6, c3, x12);
        if (SCALAR_LANE)
            CHACHA20_QR(s1, s6, s11, s12);
        cp[2] = c2;
        cp[3] = c3;
        __asm__ volatile("" ::: "memory");
        c0 = cp[0];
        c1 = cp[1];
        /* Diagonals (2, 7, 8, 13) and (3, 4, 9, 14). */
        QR(x2, x7, c0, x13);
        if (SCALAR_LANE)
            CHACHA20_QR(s2, s7, s8, s13);
        QR(x3, x4, c1, x14);
        if (SCALAR_LANE)
            CHACHA20_QR(s3, s4, s9, s14);
        cp[0] = c0;
        cp[1] = c1;
        __asm__ volatile("" ::: "memory");
    }
    x8 = cp[0];
    x9 = cp[1];
    x10 = cp[2];
    x11 = cp[3];
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
    if (SCALAR_LANE && nxor + (tail != NULL) == 9u) {
        const uint32_t w[16] = {
            s0 + input[0],        s1 + input[1],   s2 + input[2],   s3 + input[3],
            s4 + input[4],        s5 + input[5],   s6 + input[6],   s7 + input[7],
            s8 + input[8],        s9 + input[9],   s10 + input[10], s11 + input[11],
            s12 + input[12] + 8u, s13 + input[13], s14 + input[14], s15 + input[15]};
        put_scalar_block(out, in, nxor, tail, w);
    }
}

/* Up to BATCH_BLOCKS blocks: the kernel of chacha20.h. */
void mbsc_chacha20_kernel_avx2(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                               size_t nxor, uint8_t *tail)
{
    size_t n = nxor + (tail != NULL);

    if (n <= 2u)
        short_kernel(input, out, in, nxor, tail, 1);
    else if (n <= 4u)
        short_kernel(input, out, in, nxor, tail, 2);
    else if (n <= 6u)
        short_kernel(input, out, in, nxor, tail, 3);
    else
        kernel_avx2(input, out, in, nxor, tail);
}

static void chacha20_avx2_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    mbsc_chacha20_xor_kernels(state, out, in, len, mbsc_chacha20_kernel_avx2, BATCH_BLOCKS,
                              mbsc_chacha20_kernel_avx2);
}

const struct mbsc_cipher_impl mbsc_chacha20_avx2 = {
    .name = "avx2",
    .cpu_needs = MBSC_CPU_AVX2,
    .state_bytes = sizeof(struct chacha20_state),
    .init = mbsc_chacha20_init,
    .xor_stream = chacha20_avx2_xor,
};
