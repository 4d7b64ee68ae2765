/* SPDX-License-Identifier: ISC */
/*
 * chacha20_avx512.c - ChaCha20 (RFC 8439), sixteen blocks at once in
 * AVX-512F.
 *
 * Built with -mavx512f for this file only; run only when cpuid says
 * AVX-512F and AVX2 and XGETBV says the OS saves the opmask and zmm
 * registers (cpu.c).
 *
 * Layout as in chacha20_avx2.c, with sixteen 32-bit lanes per register and
 * the native rotate (vprold), and 32 registers so nothing spills.  The
 * 16 x 16 transpose ends with each block in one zmm register: unpack
 * 32/64 within 128-bit lanes, then two rounds of 128-bit lane shuffles
 * (vshufi32x4).
 *
 * Short inputs (one to eight blocks: a Modbus frame's one-time key and
 * payload are one to five) use the other layout ("horizontal"): one zmm
 * register per row of the 4 x 4 state, its four 128-bit lanes four
 * consecutive blocks, so four blocks cost what one does.  Each double
 * round is the column quarter round on the four rows, a rotation of the
 * words of rows a, c, d (vpshufd) to bring the diagonals into columns,
 * the same quarter round, and the rotation back.  Five to
 * eight blocks run two such register quads, interleaved: their two
 * dependency chains fill the vector ports that one chain leaves idle.  The
 * sixteen-lane batch would compute sixteen blocks' worth of work for
 * them, and one quad is faster than the scalar block, so single blocks
 * come here too.
 *
 * Constant time by construction: valgrind cannot execute AVX-512, so
 * `make check-ct` cannot check this file; it needs no checking of that
 * kind because it has no table lookups and no memory index other than the
 * public block position, and no branch other than on the public block
 * counts: every operation on key or state data is an addition, XOR,
 * rotate or shuffle with constant operands.
 *
 * Vectors: tests/check_cipher.c forces this implementation for every
 * published vector and the libsodium cross-check on CPUs that have it.
 */
#include "chacha20.h"

#include <immintrin.h>

#define QR(a, b, c, d)                                                                             \
    do {                                                                                           \
        a = _mm512_add_epi32(a, b);                                                                \
        d = _mm512_rol_epi32(_mm512_xor_si512(d, a), 16);                                          \
        c = _mm512_add_epi32(c, d);                                                                \
        b = _mm512_rol_epi32(_mm512_xor_si512(b, c), 12);                                          \
        a = _mm512_add_epi32(a, b);                                                                \
        d = _mm512_rol_epi32(_mm512_xor_si512(d, a), 8);                                           \
        c = _mm512_add_epi32(c, d);                                                                \
        b = _mm512_rol_epi32(_mm512_xor_si512(b, c), 7);                                           \
    } while (0)

/* Words w0..w3 (lane j = block j) to: vector k holds in 128-bit lane m the
 * four words of block 4m + k. */
#define TRANSPOSE4(w0, w1, w2, w3)                                                                 \
    do {                                                                                           \
        __m512i t0_ = _mm512_unpacklo_epi32(w0, w1);                                               \
        __m512i t1_ = _mm512_unpackhi_epi32(w0, w1);                                               \
        __m512i t2_ = _mm512_unpacklo_epi32(w2, w3);                                               \
        __m512i t3_ = _mm512_unpackhi_epi32(w2, w3);                                               \
        w0 = _mm512_unpacklo_epi64(t0_, t2_);                                                      \
        w1 = _mm512_unpackhi_epi64(t0_, t2_);                                                      \
        w2 = _mm512_unpacklo_epi64(t1_, t3_);                                                      \
        w3 = _mm512_unpackhi_epi64(t1_, t3_);                                                      \
    } while (0)

static inline void put_block(uint8_t *out, const uint8_t *in, size_t b, size_t nxor, uint8_t *tail,
                             __m512i ks)
{
    if (b < nxor) {
        __m512i m = _mm512_loadu_si512((const void *)(in + 64u * b));
        _mm512_storeu_si512((void *)(out + 64u * b), _mm512_xor_si512(m, ks));
    } else if (b == nxor && tail != NULL) {
        _mm512_storeu_si512((void *)tail, ks);
    }
}

/* --- Short inputs: up to eight blocks, rows in registers ---------------- */

/* The quarter round on the four columns of a register quad (RFC 8439
 * section 2.1, applied to state rows a, b, c, d). */
#define ROWS_QR(a, b, c, d)                                                                        \
    do {                                                                                           \
        a = _mm512_add_epi32(a, b);                                                                \
        d = _mm512_rol_epi32(_mm512_xor_si512(d, a), 16);                                          \
        c = _mm512_add_epi32(c, d);                                                                \
        b = _mm512_rol_epi32(_mm512_xor_si512(b, c), 12);                                          \
        a = _mm512_add_epi32(a, b);                                                                \
        d = _mm512_rol_epi32(_mm512_xor_si512(d, a), 8);                                           \
        c = _mm512_add_epi32(c, d);                                                                \
        b = _mm512_rol_epi32(_mm512_xor_si512(b, c), 7);                                           \
    } while (0)

/*
 * Diagonals into columns: column j of the diagonal round must hold
 * (a[j-1], b[j], c[j+1], d[j+2]) (indices mod 4), i.e. words (0, 5, 10,
 * 15), (1, 6, 11, 12), ... of RFC 8439.  Rows a, c and d move, not b:
 * b's last update ends a quarter round and starts the next, while a, c
 * and d are ready several instructions before they are needed, so their
 * shuffles stay off the dependency chain that bounds a short batch.
 * vpshufd 0x93 takes words (3, 0, 1, 2), 0x39 (1, 2, 3, 0), 0x4e
 * (2, 3, 0, 1); DIAG_UNDO applies the inverses.
 */
#define DIAG(a, c, d)                                                                              \
    do {                                                                                           \
        a = _mm512_shuffle_epi32(a, (_MM_PERM_ENUM)0x93);                                          \
        c = _mm512_shuffle_epi32(c, (_MM_PERM_ENUM)0x39);                                          \
        d = _mm512_shuffle_epi32(d, (_MM_PERM_ENUM)0x4e);                                          \
    } while (0)
#define DIAG_UNDO(a, c, d)                                                                         \
    do {                                                                                           \
        a = _mm512_shuffle_epi32(a, (_MM_PERM_ENUM)0x39);                                          \
        c = _mm512_shuffle_epi32(c, (_MM_PERM_ENUM)0x93);                                          \
        d = _mm512_shuffle_epi32(d, (_MM_PERM_ENUM)0x4e);                                          \
    } while (0)

/* Blocks first .. first + 3 of a quad: lane m of rows a, b, c, d is block
 * first + m; a 4 x 4 transpose of 128-bit lanes makes each block one zmm. */
static inline void put_quad(uint8_t *out, const uint8_t *in, size_t first, size_t nxor,
                            uint8_t *tail, __m512i a, __m512i b, __m512i c, __m512i d)
{
    __m512i t0 = _mm512_shuffle_i32x4(a, b, 0x44); /* a.l0 a.l1 b.l0 b.l1 */
    __m512i t1 = _mm512_shuffle_i32x4(a, b, 0xEE); /* a.l2 a.l3 b.l2 b.l3 */
    __m512i t2 = _mm512_shuffle_i32x4(c, d, 0x44);
    __m512i t3 = _mm512_shuffle_i32x4(c, d, 0xEE);

    put_block(out, in, first, nxor, tail, _mm512_shuffle_i32x4(t0, t2, 0x88));
    put_block(out, in, first + 1u, nxor, tail, _mm512_shuffle_i32x4(t0, t2, 0xDD));
    put_block(out, in, first + 2u, nxor, tail, _mm512_shuffle_i32x4(t1, t3, 0x88));
    put_block(out, in, first + 3u, nxor, tail, _mm512_shuffle_i32x4(t1, t3, 0xDD));
}

/*
 * One quad (two: blocks 4..7 too, in the same loop).  Lanes past the
 * blocks asked for are computed and dropped; their counters may pass
 * 2^32 - 1 without harm, as nothing of them is stored.
 */
MBSC_ALWAYS_INLINE void short_kernel(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                                     size_t nxor, uint8_t *tail, int two)
{
    const __m512i a0 =
        _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)input));
    const __m512i b0 =
        _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(input + 4)));
    const __m512i c0 =
        _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(input + 8)));
    /* Row d of block m: word 12 (the counter) + m. */
    const __m512i d0 = _mm512_add_epi32(
        _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(input + 12))),
        _mm512_setr_epi32(0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0));
    const __m512i d1 =
        _mm512_add_epi32(d0, _mm512_setr_epi32(4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0));
    __m512i a = a0, b = b0, c = c0, d = d0;
    __m512i e = a0, f = b0, g = c0, h = d1;

    for (int r = 0; r < 10; r++) {
        ROWS_QR(a, b, c, d);
        if (two)
            ROWS_QR(e, f, g, h);
        DIAG(a, c, d);
        if (two)
            DIAG(e, g, h);
        ROWS_QR(a, b, c, d);
        if (two)
            ROWS_QR(e, f, g, h);
        DIAG_UNDO(a, c, d);
        if (two)
            DIAG_UNDO(e, g, h);
    }
    put_quad(out, in, 0, nxor, tail, _mm512_add_epi32(a, a0), _mm512_add_epi32(b, b0),
             _mm512_add_epi32(c, c0), _mm512_add_epi32(d, d0));
    if (two)
        put_quad(out, in, 4, nxor, tail, _mm512_add_epi32(e, a0), _mm512_add_epi32(f, b0),
                 _mm512_add_epi32(g, c0), _mm512_add_epi32(h, d1));
}

/* --- The sixteen-lane kernel ------------------------------------------- */

static void chacha20_kernel_avx512(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                                   size_t nxor, uint8_t *tail)
{
    const __m512i ctr =
        _mm512_add_epi32(_mm512_set1_epi32((int)input[12]),
                         _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    __m512i x[16];

    if (nxor + (tail != NULL) <= 4u) {
        short_kernel(input, out, in, nxor, tail, 0);
        return;
    }
    if (nxor + (tail != NULL) <= 8u) {
        short_kernel(input, out, in, nxor, tail, 1);
        return;
    }
    for (int i = 0; i < 16; i++)
        x[i] = _mm512_set1_epi32((int)input[i]);
    x[12] = ctr;
    for (int r = 0; r < 10; r++) {
        QR(x[0], x[4], x[8], x[12]);
        QR(x[1], x[5], x[9], x[13]);
        QR(x[2], x[6], x[10], x[14]);
        QR(x[3], x[7], x[11], x[15]);
        QR(x[0], x[5], x[10], x[15]);
        QR(x[1], x[6], x[11], x[12]);
        QR(x[2], x[7], x[8], x[13]);
        QR(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++)
        x[i] = _mm512_add_epi32(x[i], i == 12 ? ctr : _mm512_set1_epi32((int)input[i]));

    TRANSPOSE4(x[0], x[1], x[2], x[3]);
    TRANSPOSE4(x[4], x[5], x[6], x[7]);
    TRANSPOSE4(x[8], x[9], x[10], x[11]);
    TRANSPOSE4(x[12], x[13], x[14], x[15]);

    /*
     * Group g (words 4g..4g+3) vector k holds blocks k, k+4, k+8, k+12 in
     * its four 128-bit lanes.  For each k, a 4 x 4 transpose of 128-bit
     * lanes across the four groups gives the four whole blocks.
     */
    for (size_t k = 0; k < 4u; k++) {
        __m512i a = _mm512_shuffle_i32x4(x[k], x[4 + k], 0x44); /* g0.l0 g0.l1 g1.l0 g1.l1 */
        __m512i b = _mm512_shuffle_i32x4(x[k], x[4 + k], 0xEE); /* g0.l2 g0.l3 g1.l2 g1.l3 */
        __m512i c = _mm512_shuffle_i32x4(x[8 + k], x[12 + k], 0x44);
        __m512i d = _mm512_shuffle_i32x4(x[8 + k], x[12 + k], 0xEE);

        put_block(out, in, k, nxor, tail, _mm512_shuffle_i32x4(a, c, 0x88));
        put_block(out, in, k + 4u, nxor, tail, _mm512_shuffle_i32x4(a, c, 0xDD));
        put_block(out, in, k + 8u, nxor, tail, _mm512_shuffle_i32x4(b, d, 0x88));
        put_block(out, in, k + 12u, nxor, tail, _mm512_shuffle_i32x4(b, d, 0xDD));
    }
}

static void chacha20_avx512_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    /* Single blocks too: one quad is faster than the scalar block. */
    mbsc_chacha20_xor_kernels(state, out, in, len, chacha20_kernel_avx512, 16u,
                              chacha20_kernel_avx512);
}

const struct mbsc_cipher_impl mbsc_chacha20_avx512 = {
    .name = "avx512",
    .cpu_needs = MBSC_CPU_AVX512F | MBSC_CPU_AVX2,
    .state_bytes = sizeof(struct chacha20_state),
    .init = mbsc_chacha20_init,
    .xor_stream = chacha20_avx512_xor,
};
