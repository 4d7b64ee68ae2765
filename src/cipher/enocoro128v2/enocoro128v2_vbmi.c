/* SPDX-License-Identifier: ISC */
/*
 * enocoro128v2_vbmi.c - Enocoro-128v2 with the whole state in vector
 * registers (AVX-512 VL, BW, VBMI): the buffer in one ymm register, moved
 * by byte permutes (vpermb), and the a_0/a_1 chain in byte 0 of xmm
 * registers, so that no byte crosses between vector and scalar registers
 * inside the loop.
 *
 * Built with -mavx512f -mavx512bw -mavx512vl -mavx512vbmi for this file
 * only, and run only when cpuid reports all four and XGETBV says the OS
 * saves the opmask and zmm registers (cpu.c).  Key setup and the last
 * len mod 4 rounds of a call are the portable code's; the state is
 * struct enocoro_vec_state (enocoro128v2.h), which keeps the next group's
 * constants between calls.
 *
 * Four rounds per group (enocoro128v2.h says why the sixteen S-box inputs
 * of four rounds are known at their start), evaluated together by nibble
 * shuffles, and:
 *   - rho is linear over GF(2^8) once the S-box outputs are known:
 *       a_0' = a_0 ^ a_1 ^ (s_0 ^ s_1 ^ s_2)
 *       a_1' = a_0 ^ 2 a_1 ^ (s_0 ^ 2 s_1 ^ s_3)
 *     (s_0..s_3 the S-boxes at b_2, b_7, b_16, b_29), so the brackets of
 *     the four rounds are computed together from the S-box batch, and the
 *     loop-carried chain per round is one byte add and one byte shuffle in
 *     parallel, then one three-input XOR (vpternlogd): two cycles.  (In
 *     scalar registers the same round takes five.)
 *   - multiplication by 2 mod 0x11d without a branch or a table in memory:
 *     2v = (v + v) ^ (v >= 0x80 ? 0x1d : 0), and pshufb of a register
 *     holding 0x1d in every byte, indexed by v, gives 0x1d when bit 7 of v
 *     is clear and 0 when it is set (pshufb zeroes a byte whose index has
 *     bit 7 set); so 2v = (v + v) ^ 0x1d ^ pshufb(0x1d.., v), and the
 *     constant 0x1d is folded into the precomputed brackets.
 *   - lambda of the group and the gather of the next group's S-box inputs
 *     run beside the group's four rounds: they need only the buffer at the
 *     group's start.  Only four of the next group's sixteen inputs, at
 *     places 2, 1, 0 and 31, take the a_0 values of this group; they are
 *     XORed in as those come, from the register that collects them (am).
 *     The buffer is kept without the last group's a_0 bytes (places 0..3):
 *     lambda is linear, so they are XORed into its output where four
 *     rounds move them (places 3..7), and the buffer's own chain never
 *     waits for the rounds.
 *
 * The S-box as a 256-byte table in four zmm registers read by vpermi2b,
 * and other variants, were measured slower here: docs/bench.md, section
 * "Enocoro-128v2 in vector registers".
 *
 * Constant time by construction: valgrind cannot execute AVX-512, so
 * `make check-ct` cannot check this file.  Every operation on key or state
 * data is a register operation whose timing does not depend on the values:
 * XOR, byte addition, shifts by constants, and byte shuffles and permutes
 * whose index is a secret byte in a register (pshufb, vpermb select inside
 * registers; no secret value ever forms a memory address).  Loads and
 * stores use public addresses only (the caller's buffers and the state at
 * fixed offsets); the only branches are on len.
 *
 * Vectors: tests/check_cipher.c forces this implementation for every
 * published vector on CPUs that have it.
 */
#include "enocoro128v2.h"
#include "enocoro128v2_pshufb_sbox.h"

#include <immintrin.h>

/* a ^ b ^ c */
#define XOR3(a, b, c) _mm_ternarylogic_epi32((a), (b), (c), 0x96)

/*
 * The per-round constants of rho from a batch x of S-box inputs, byte
 * 4k + s = input s (b_2, b_7, b_16, b_29) of round k; in byte 4k:
 *   wc = s_0 ^ s_1 ^ s_2              (a_0' = a_0 ^ a_1 ^ wc)
 *   vc = s_0 ^ 2 s_1 ^ s_3 ^ 0x1d     (a_1' = a_0 ^ vc ^ 2 a_1 ^ 0x1d)
 */
MBSC_ALWAYS_INLINE void enocoro_consts(__m128i x, __m128i *wc, __m128i *vc)
{
    __m128i xs;
    __m128i sv = enocoro_sbox(x, &xs);

    *wc = XOR3(sv, _mm_srli_epi32(sv, 8), _mm_srli_epi32(sv, 16));
    *vc = XOR3(sv, _mm_srli_epi32(xs, 8), _mm_srli_epi32(sv, 24));
}

/*
 * One round k of a group, a_0 = a0, a_1 = a1 in byte 0, its constants in
 * byte 4k of wc and vc.  2 a_1 ^ 0x1d = (a_1 + a_1) ^ pshufb(0x1d.., a_1).
 * The keystream byte (a_1 before the round) and the new a_0 are shifted
 * into the top byte of z and of am.  In round 0 the constants come last
 * (from the S-boxes just evaluated), so they are XORed in last; in the
 * other rounds a_1 comes last, so a_0 ^ vc is formed first and a_1' is
 * one three-input XOR after 2 a_1.
 */
#define ENOCORO_ROUND(k)                                                                           \
    do {                                                                                           \
        __m128i x2_ = XOR3(a0, _mm_add_epi8(a1, a1), _mm_shuffle_epi8(k1d, a1));                   \
        z = _mm_alignr_epi8(a1, z, 1);                                                             \
        if ((k) == 0) {                                                                            \
            a0 = XOR3(a0, a1, wc);                                                                 \
            a1 = _mm_xor_si128(x2_, vc);                                                           \
        } else {                                                                                   \
            __m128i v_ = _mm_xor_si128(a0, _mm_srli_si128(vc, 4 * (k)));                           \
            a0 = XOR3(a0, a1, _mm_srli_si128(wc, 4 * (k)));                                        \
            a1 = XOR3(_mm_add_epi8(a1, a1), _mm_shuffle_epi8(k1d, a1), v_);                        \
        }                                                                                          \
        am = _mm_alignr_epi8(a0, am, 1);                                                           \
    } while (0)

/*
 * One group of four rounds: lambda of the buffer (kept without the a_0
 * bytes of the group before, which enter lambda's output instead) and the
 * gather of the next group's S-box inputs run beside the four rounds
 * (they need only this group's start); the inputs at places 2, 1, 0 and
 * 31 take a_0 after rounds 0..3 as those come; then the sixteen S-boxes
 * of the next group are evaluated.
 */
#define ENOCORO_GROUP()                                                                            \
    do {                                                                                           \
        __m128i x_;                                                                                \
        bp = _mm256_ternarylogic_epi32(                                                            \
            _mm256_alignr_epi32(bp, bp, 7), _mm256_maskz_permutexvar_epi8(fb_mask, fb_idx, bp),    \
            _mm256_maskz_permutexvar_epi8(0xF8u, merge2_idx, _mm256_castsi128_si256(am)), 0x96);   \
        x_ = _mm256_castsi256_si128(_mm256_permutexvar_epi8(gather, bp));                          \
        ENOCORO_ROUND(0);                                                                          \
        ENOCORO_ROUND(1);                                                                          \
        ENOCORO_ROUND(2);                                                                          \
        x_ = _mm_xor_si128(x_, _mm_maskz_shuffle_epi8(0x0111, am, tight_idx));                     \
        ENOCORO_ROUND(3);                                                                          \
        x_ = _mm_xor_si128(x_, _mm_maskz_shuffle_epi8(0x1000, a0, zero));                          \
        enocoro_consts(x_, &wc, &vc);                                                              \
    } while (0)

/* 4 * groups rounds from the current position, out = in ^ z. */
static void enocoro_vbmi_groups(struct enocoro_vec_state *vs, uint8_t *out, const uint8_t *in,
                                size_t groups)
{
    struct enocoro_state *st = &vs->s;
    const __m128i k1d = _mm_set1_epi8(0x1d);
    /* S-box inputs of the four rounds k of a group, byte 4k + s, from the
     * buffer at the group's start: places 2-k, 7-k, 16-k, 29-k (-1 = 31).
     * Places 0..2 and 31 (tight_idx) still lack a_0 terms. */
    const __m256i gather = _mm256_setr_epi8(2, 7, 16, 29, 1, 6, 15, 28, 0, 5, 14, 27, 31, 4, 13, 26,
                                            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    /* Places 2, 1, 0 take a_0 after rounds 0, 1, 2 (am bytes 13..15
     * after round 2, to bytes 0, 4, 8); place 31 takes a_0 after round 3
     * (byte 0 of a0, to byte 12). */
    const __m128i tight_idx = _mm_setr_epi8(13, 0, 0, 0, 14, 0, 0, 0, 15, 0, 0, 0, 0, 0, 0, 0);
    const __m128i zero = _mm_setzero_si128();
    /* lambda: feedback sources, b_i for places 3..6, b_(i+4) for 8..11,
     * b_(i+8) for 17..20; zero elsewhere (mask). */
    const __m256i fb_idx = _mm256_setr_epi8(0, 0, 0, 3, 4, 5, 6, 0, 12, 13, 14, 15, 0, 0, 0, 0, 0,
                                            25, 26, 27, 28, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __mmask32 fb_mask = 0x001E0F78u;
    /* Places 0..3 of the buffer take a_0 before rounds 3, 2, 1, 0 of the
     * last group: am bytes 14, 13, 12, 11 (at the end). */
    const __m256i merge_idx = _mm256_setr_epi8(14, 13, 12, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                               0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __mmask32 am_mask = 0xFu;
    /* The same bytes where four rounds of lambda take them: places 0..3
     * move to 4..7 and place 3 also feeds back into place 3, so lambda of
     * the buffer with them is lambda of the buffer without them, XOR
     * these (one permute of am, off the buffer's own chain). */
    const __m256i merge2_idx = _mm256_setr_epi8(0, 0, 0, 11, 14, 13, 12, 11, 0, 0, 0, 0, 0, 0, 0, 0,
                                                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    __m256i bp;
    __m128i a0 = _mm_cvtsi32_si128(st->a0), a1 = _mm_cvtsi32_si128(st->a1);
    __m128i am, z = _mm_setzero_si128();
    __m128i wc, vc;
    size_t g = 0;

    /* am as the rounds before would have left it: the first group's
     * lambda takes a_0 of its round 0 from byte 15 (bytes 12..14, a_0 of
     * earlier rounds, are already in the buffer: zero). */
    am = _mm_slli_si128(a0, 15);
    if (vs->ready) {
        /* Left by the last call, which ended here with top = 0. */
        bp = _mm256_loadu_si256((const __m256i *)(const void *)st->b);
        wc = _mm_loadu_si128((const __m128i *)(const void *)vs->wc);
        vc = _mm_loadu_si128((const __m128i *)(const void *)vs->vc);
    } else {
        /* The buffer in logical order, b_i = b[(top + i) & 31] (vpermb
         * reads the low five bits of each index), is complete: no a_0 to
         * merge. */
        const __m256i iota =
            _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                             20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
        __m256i idx = _mm256_add_epi8(iota, _mm256_set1_epi8((char)st->top));
        __m128i x;

        bp = _mm256_permutexvar_epi8(idx, _mm256_loadu_si256((const __m256i *)(const void *)st->b));
        x = _mm256_castsi256_si128(_mm256_permutexvar_epi8(gather, bp));
        x = _mm_xor_si128(x, _mm_maskz_shuffle_epi8(0x1000, a0, _mm_setzero_si128()));
        enocoro_consts(x, &wc, &vc);
    }

    for (; g + 4 <= groups; g += 4, out += 16, in += 16) {
        ENOCORO_GROUP();
        ENOCORO_GROUP();
        ENOCORO_GROUP();
        ENOCORO_GROUP();
        _mm_storeu_si128((__m128i *)(void *)out,
                         _mm_xor_si128(z, _mm_loadu_si128((const __m128i *)(const void *)in)));
    }
    for (; g < groups; g++, out += 4, in += 4) {
        ENOCORO_GROUP();
        mbsc_store32_le(out, mbsc_load32_le(in) ^ (uint32_t)_mm_extract_epi32(z, 3));
    }
    {
        __m256i b = _mm256_xor_si256(
            bp, _mm256_maskz_permutexvar_epi8(am_mask, merge_idx, _mm256_castsi128_si256(am)));

        /* Stored in logical order: the start index is 0 again. */
        _mm256_storeu_si256((__m256i *)(void *)st->b, b);
    }
    _mm_storeu_si128((__m128i *)(void *)vs->wc, wc);
    _mm_storeu_si128((__m128i *)(void *)vs->vc, vc);
    vs->ready = 1;
    st->top = 0;
    st->a0 = (uint8_t)_mm_cvtsi128_si32(a0);
    st->a1 = (uint8_t)_mm_cvtsi128_si32(a1);
}

/*
 * The stream: groups of four rounds in registers from wherever the stream
 * is, and the last len mod 4 rounds with the portable code.  Branches on
 * len only.
 */
static void enocoro_vbmi_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct enocoro_vec_state *vs = state;
    size_t groups = len / 4u;

    if (len == 0) {
        return;
    }
    if (groups > 0) {
        enocoro_vbmi_groups(vs, out, in, groups);
    }
    if (len % 4u != 0) {
        /* Single rounds move the stream off the group boundary. */
        vs->ready = 0;
        mbsc_enocoro_rounds(&vs->s, out + 4u * groups, in + 4u * groups, len % 4u);
    }
}

const struct mbsc_cipher_impl mbsc_enocoro128v2_vbmi = {
    .name = "vbmi",
    .cpu_needs = MBSC_CPU_AVX512F | MBSC_CPU_AVX512VL | MBSC_CPU_AVX512BW | MBSC_CPU_AVX512VBMI,
    .state_bytes = sizeof(struct enocoro_vec_state),
    .init = mbsc_enocoro_vec_init,
    .xor_stream = enocoro_vbmi_xor,
};
