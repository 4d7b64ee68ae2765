/* SPDX-License-Identifier: ISC */
/*
 * trivium_avx512.c - Trivium, the three registers in three 64-bit lanes of
 * one ymm register, taps by AVX-512 VBMI2 concatenated shifts.
 *
 * Built with -mavx512vl -mavx512vbmi2 for this file only; run only when
 * cpuid says AVX-512 F, VL and VBMI2 and XGETBV says the OS saves the
 * AVX-512 state (cpu.c).  Spec and conventions as in trivium_64.c (eSTREAM
 * "Trivium Specifications", sections 2.1 and 2.2, with the reference
 * code's bit order); vectors: tests/kat/trivium.txt.
 *
 * Word layout.  Instead of the registers' cells, this file keeps the bits
 * each register has received: word w of register X holds the 64 bits
 * inserted into X during step w (bit t = the bit of clock t).  A bit
 * inserted at clock c is in cell k during clock c + k, so during step s
 * (clocks 64s .. 64s+63) tap cell k reads the 64 bits inserted from clock
 * 64s - k on: bits 128 - k .. 191 - k of the 128-bit pair formed by words
 * s-2 (low) and s-1 (high).  Every tap has 66 <= k <= 111, so every tap is
 * one 64-bit window of that pair, which VPSHRDVQ extracts in one
 * instruction with a different shift in each lane; the new word needs no
 * shifting into place at all: it simply becomes the newer word of the
 * next pair.  Lane 0 is A (s_1..s_93), lane 1 B, lane 2 C, lane 3 unused
 * (zero).  Shift 128 - k for the taps, lane by lane (A, B, C):
 *   lin1: s_66, s_162, s_243 -> 62, 59, 62
 *   lin2: s_93, s_177, s_288 -> 35, 44, 17
 *   and1: s_91, s_175, s_286 -> 37, 46, 19
 *   and2: s_92, s_176, s_287 -> 36, 45, 18
 *   feed: s_69, s_171, s_264 -> 59, 50, 41
 * With lin = lin1 ^ lin2, u = lin ^ (and1 & and2) and v = feed, section
 * 2.1 reads t1 = u_A ^ v_B, t2 = u_B ^ v_C, t3 = u_C ^ v_A, and A gets t3,
 * B t1, C t2: the new words are rotate(u) ^ v, with one lane permute
 * (C, A, B), and the keystream word is z = lin_A ^ lin_B ^ lin_C.
 *
 * Why this is faster than the scalar code: there, the 12 double shifts per
 * step all go to one execution port on Intel cores, and the state update
 * costs 9 more shifts and ORs; here a step is 5 shifts, an XOR, a ternary
 * logic op, a permute and an XOR, and the critical path from one step to
 * the next is shift, ternlog, permute, XOR (about 6 cycles for 8 bytes).
 * The keystream words of four steps are summed across lanes together (a
 * 4 x 4 transpose) and XORed into 32 bytes of input at once.  An AVX2
 * variant (without VBMI2's concatenated shifts, two permutes per step) was
 * slower than the scalar code; see trivium_64.c.  So was, by 15 %, a
 * variant with A, B in one xmm register and C in another, where in-lane
 * unpacks replace the permute: it needs ten shifts per step instead of
 * five, and the shifts, not the permute's latency, became the limit.
 *
 * Constant time by construction: valgrind cannot execute AVX-512, so
 * `make check-ct` cannot check this file; it needs no checking of that
 * kind because every operation on key or state data is a shift by a
 * constant amount, AND, XOR or a permute with a constant pattern, and the
 * only branches and memory indices are on lengths and the public buffer
 * position.
 * Byte order: x86-64 only, so a 64-bit lane stored to memory is already
 * the eSTREAM little-endian packing of its 64 keystream bits.
 * Wiping: the registry wipes the state; vector locals cannot be wiped from C.
 */
#include "cipher/cipher_impl.h"

#include <immintrin.h>
#include <string.h>

struct trivium_avx512_state {
    uint64_t older[4]; /* word s-2 of A, B, C, then 0 */
    uint64_t newer[4]; /* word s-1 */
    uint8_t buf[8];    /* keystream of the last step; bytes [pos, 8) unused */
    uint32_t pos;      /* 8 = buffer empty */
};

MBSC_STATIC_ASSERT(sizeof(struct trivium_avx512_state) <= MBSC_STREAM_STATE_BYTES,
                   "trivium avx512 state must fit in mbsc_stream");
MBSC_STATIC_ASSERT(_Alignof(struct trivium_avx512_state) <= _Alignof(uint64_t),
                   "trivium avx512 state must not need more than uint64_t alignment");

/* Per-lane shift counts (A, B, C, unused), see the table above. */
struct trivium_taps {
    __m256i lin1, lin2, and1, and2, feed;
};

static inline struct trivium_taps trivium_taps(void)
{
    struct trivium_taps t;

    t.lin1 = _mm256_setr_epi64x(62, 59, 62, 0);
    t.lin2 = _mm256_setr_epi64x(35, 44, 17, 0);
    t.and1 = _mm256_setr_epi64x(37, 46, 19, 0);
    t.and2 = _mm256_setr_epi64x(36, 45, 18, 0);
    t.feed = _mm256_setr_epi64x(59, 50, 41, 0);
    return t;
}

/* Lane order C, A, B, unused: new A = u_C ^ v_A, and so on. */
#define TRIVIUM_ROTATE 0xD2 /* lanes 2, 0, 1, 3 */
/* (x & y) ^ w as a VPTERNLOG truth table (x = 0xF0, y = 0xCC, w = 0xAA). */
#define TRIVIUM_AND_XOR 0x6A

/*
 * One step: from the pair older:newer, returns the next words (lane 3
 * stays 0) and sets *lin to the three lanes whose XOR is the keystream.
 */
static inline __m256i trivium_step(__m256i older, __m256i newer, const struct trivium_taps *t,
                                   __m256i *lin)
{
    const __m256i l = _mm256_xor_si256(_mm256_shrdv_epi64(older, newer, t->lin1),
                                       _mm256_shrdv_epi64(older, newer, t->lin2));
    const __m256i u =
        _mm256_ternarylogic_epi64(_mm256_shrdv_epi64(older, newer, t->and1),
                                  _mm256_shrdv_epi64(older, newer, t->and2), l, TRIVIUM_AND_XOR);
    const __m256i v = _mm256_shrdv_epi64(older, newer, t->feed);

    *lin = l;
    return _mm256_xor_si256(_mm256_permute4x64_epi64(u, TRIVIUM_ROTATE), v);
}

/* The keystream word of one step: lin_A ^ lin_B ^ lin_C. */
static inline uint64_t trivium_z(__m256i lin)
{
    const __m128i lo = _mm256_castsi256_si128(lin);
    const __m128i hi = _mm256_extracti128_si256(lin, 1); /* C and 0 */
    const __m128i x = _mm_xor_si128(lo, hi);

    return (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(x, _mm_unpackhi_epi64(x, x)));
}

/* The keystream words of four steps, lane j = step j: a 4 x 4 transpose
 * of the lin vectors folded into XORs (lane 3 of each is 0). */
static inline __m256i trivium_z4(__m256i l0, __m256i l1, __m256i l2, __m256i l3)
{
    /* Lanes (l0_A ^ l0_B, l1_A ^ l1_B, l0_C, l1_C), likewise for l2, l3. */
    const __m256i x01 =
        _mm256_xor_si256(_mm256_unpacklo_epi64(l0, l1), _mm256_unpackhi_epi64(l0, l1));
    const __m256i x23 =
        _mm256_xor_si256(_mm256_unpacklo_epi64(l2, l3), _mm256_unpackhi_epi64(l2, l3));

    return _mm256_xor_si256(_mm256_permute2x128_si256(x01, x23, 0x20),
                            _mm256_permute2x128_si256(x01, x23, 0x31));
}

/*
 * The pair of a register of length n whose cells are the 128-bit value
 * hi:lo with cell i at bit n - i, as trivium_64.c loads them: cell k must
 * end up at bit 128 - k of the pair, so the value moves up by 128 - n.
 * The bits below the oldest cell are never read.
 */
static void trivium_pair(uint64_t *older, uint64_t *newer, uint64_t lo, uint64_t hi, unsigned n)
{
    const unsigned sh = 128u - n; /* 17..44 for the three registers */

    *older = lo << sh;
    *newer = (hi << sh) | (lo >> (64u - sh));
}

static void trivium_avx512_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len)
{
    struct trivium_avx512_state *st = state;
    const struct trivium_taps t = trivium_taps();
    /* K and V as 80-bit little-endian integers: low 64 bits, high 16 bits. */
    const uint64_t k_lo = mbsc_load64_le(key);
    const uint64_t k_hi = (uint64_t)key[8] | ((uint64_t)key[9] << 8);
    const uint64_t v_lo = mbsc_load64_le(iv);
    const uint64_t v_hi = (uint64_t)iv[8] | ((uint64_t)iv[9] << 8);
    __m256i older, newer, lin;

    (void)iv_len; /* always 10: checked by the registry */

    /* A = K << 13 (s_81..s_93 = 0), B = V << 4 (s_174..s_177 = 0),
     * C = 7 (s_286 = s_287 = s_288 = 1), cell i at bit N - i. */
    memset(st, 0, sizeof *st);
    trivium_pair(&st->older[0], &st->newer[0], k_lo << 13, (k_lo >> 51) | (k_hi << 13), 93u);
    trivium_pair(&st->older[1], &st->newer[1], v_lo << 4, (v_lo >> 60) | (v_hi << 4), 84u);
    trivium_pair(&st->older[2], &st->newer[2], 7u, 0u, 111u);

    older = _mm256_loadu_si256((const __m256i *)(const void *)st->older);
    newer = _mm256_loadu_si256((const __m256i *)(const void *)st->newer);
    for (unsigned i = 0; i < 18u; i++) { /* 4 x 288 = 18 x 64 clocks */
        const __m256i next = trivium_step(older, newer, &t, &lin);
        older = newer;
        newer = next;
    }
    _mm256_storeu_si256((__m256i *)(void *)st->older, older);
    _mm256_storeu_si256((__m256i *)(void *)st->newer, newer);
    st->pos = 8u;
}

static void trivium_avx512_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct trivium_avx512_state *st = state;
    const struct trivium_taps t = trivium_taps();
    __m256i older, newer, l0, l1, l2, l3;

    if (len == 0u) {
        return; /* in may be NULL */
    }

    /* 1. Unused keystream bytes from the previous call. */
    while (st->pos < 8u && len > 0u) {
        *out++ = (uint8_t)(*in++ ^ st->buf[st->pos++]);
        len--;
    }
    if (len == 0u) {
        return;
    }

    older = _mm256_loadu_si256((const __m256i *)(const void *)st->older);
    newer = _mm256_loadu_si256((const __m256i *)(const void *)st->newer);

    /* 2. Bulk: four steps, 32 bytes, per iteration. */
    while (len >= 32u) {
        const __m256i w0 = trivium_step(older, newer, &t, &l0);
        const __m256i w1 = trivium_step(newer, w0, &t, &l1);
        const __m256i w2 = trivium_step(w0, w1, &t, &l2);
        const __m256i w3 = trivium_step(w1, w2, &t, &l3);
        const __m256i m = _mm256_loadu_si256((const __m256i *)(const void *)in);

        _mm256_storeu_si256((__m256i *)(void *)out,
                            _mm256_xor_si256(m, trivium_z4(l0, l1, l2, l3)));
        older = w2;
        newer = w3;
        out += 32;
        in += 32;
        len -= 32u;
    }

    /* 3. Whole words, then a buffered step for the last len (< 8) bytes. */
    while (len > 0u) {
        const __m256i next = trivium_step(older, newer, &t, &l0);
        const uint64_t z = trivium_z(l0);

        older = newer;
        newer = next;
        if (len >= 8u) {
            mbsc_store64_le(out, mbsc_load64_le(in) ^ z);
            out += 8;
            in += 8;
            len -= 8u;
        } else {
            mbsc_store64_le(st->buf, z);
            for (size_t i = 0; i < len; i++) {
                out[i] = (uint8_t)(in[i] ^ st->buf[i]);
            }
            st->pos = (uint32_t)len;
            len = 0u;
        }
    }

    _mm256_storeu_si256((__m256i *)(void *)st->older, older);
    _mm256_storeu_si256((__m256i *)(void *)st->newer, newer);
}

const struct mbsc_cipher_impl mbsc_trivium_avx512 = {
    .name = "avx512",
    .cpu_needs = MBSC_CPU_AVX512F | MBSC_CPU_AVX512VL | MBSC_CPU_AVX512VBMI2,
    .state_bytes = sizeof(struct trivium_avx512_state),
    .init = trivium_avx512_init,
    .xor_stream = trivium_avx512_xor,
};
