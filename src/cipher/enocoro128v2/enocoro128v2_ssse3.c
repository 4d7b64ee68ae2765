/* SPDX-License-Identifier: ISC */
/*
 * enocoro128v2_ssse3.c - Enocoro-128v2 with its S-box evaluated sixteen at
 * a time by in-register nibble shuffles (SSSE3 pshufb), constant time.
 *
 * Built with -mssse3 for this file only and run only when cpuid reports
 * SSSE3 (cpu.c).  Key setup and the last len mod 4 rounds of a call are the
 * portable code's.
 *
 * Four rounds at a time, with the 32-byte buffer in two xmm registers: the
 * sixteen S-box inputs of four rounds are known before the first of them
 * (enocoro128v2.h explains why), so they are gathered from the
 * registers by two byte shuffles and go through the S-box together; the
 * a_0/a_1 chain of the four rounds runs in scalar registers; and lambda of
 * four rounds is applied at once (enocoro_ssse3_groups explains how).
 * No buffer byte is stored or loaded inside the loop.
 *
 * Measured and not kept: taking the four S-boxes that depend on recent
 * a_0 values out of the group's evaluation (two extra two-lane
 * evaluations per group, so that the main one never waits for the a_0
 * chain) made a 260-byte seal slower here, 1.00 us against 0.83: the loop
 * is short of issue slots, not waiting on latency.
 *
 * The S-box from its construction (enocoro128v2_ct.c), as
 * six 16-entry nibble tables, each one pshufb: pshufb selects a byte of a
 * register by the low four bits of the index, inside the register, so the
 * secret nibble picks a value without addressing memory.
 *   zh = A[xh] ^ B[xl],  zl = B'[xh] ^ S4[xl]
 *        with A[n] = s4[n] ^ 0xa, B[n] = 4 s4[n], B'[n] = 4 s4[n] ^ 5
 *        (products in GF(2^4) mod x^4+x+1)
 *   s8 = H[zh] | L[zl]
 *        with H[n] = rotl8(s4[n] << 4, 1), L[n] = s4[n] << 1: the final
 *        rotation split by nibble, the two parts on disjoint bits.
 * The tables were derived from s4 and checked against the full s8 table
 * of the specification for all 256 inputs; the published vectors check them again
 * (tests/check_cipher.c runs them through this implementation).
 */
#include "enocoro128v2.h"

#include <tmmintrin.h>

/* s8 on each of the 16 bytes of x (the tables above). */
MBSC_ALWAYS_INLINE __m128i enocoro_sbox_v(__m128i x)
{
    const __m128i tab_s4 = _mm_setr_epi8(0x01, 0x03, 0x09, 0x0a, 0x05, 0x0e, 0x07, 0x02, 0x0d, 0x00,
                                         0x0c, 0x0f, 0x04, 0x08, 0x06, 0x0b);
    const __m128i tab_a = _mm_setr_epi8(0x0b, 0x09, 0x03, 0x00, 0x0f, 0x04, 0x0d, 0x08, 0x07, 0x0a,
                                        0x06, 0x05, 0x0e, 0x02, 0x0c, 0x01);
    const __m128i tab_b = _mm_setr_epi8(0x04, 0x0c, 0x02, 0x0e, 0x07, 0x0d, 0x0f, 0x08, 0x01, 0x00,
                                        0x05, 0x09, 0x03, 0x06, 0x0b, 0x0a);
    const __m128i tab_bp = _mm_setr_epi8(0x01, 0x09, 0x07, 0x0b, 0x02, 0x08, 0x0a, 0x0d, 0x04, 0x05,
                                         0x00, 0x0c, 0x06, 0x03, 0x0e, 0x0f);
    const __m128i tab_h =
        _mm_setr_epi8(0x20, 0x60, 0x21, 0x41, (char)0xa0, (char)0xc1, (char)0xe0, 0x40, (char)0xa1,
                      0x00, (char)0x81, (char)0xe1, (char)0x80, 0x01, (char)0xc0, 0x61);
    const __m128i tab_l = _mm_setr_epi8(0x02, 0x06, 0x12, 0x14, 0x0a, 0x1c, 0x0e, 0x04, 0x1a, 0x00,
                                        0x18, 0x1e, 0x08, 0x10, 0x0c, 0x16);
    const __m128i nib = _mm_set1_epi8(0x0f);
    __m128i xl = _mm_and_si128(x, nib);
    __m128i xh = _mm_and_si128(_mm_srli_epi16(x, 4), nib);
    __m128i zh = _mm_xor_si128(_mm_shuffle_epi8(tab_a, xh), _mm_shuffle_epi8(tab_b, xl));
    __m128i zl = _mm_xor_si128(_mm_shuffle_epi8(tab_bp, xh), _mm_shuffle_epi8(tab_s4, xl));

    return _mm_or_si128(_mm_shuffle_epi8(tab_h, zh), _mm_shuffle_epi8(tab_l, zl));
}

/* rho of one round with the S-box outputs s = S(b_2) | S(b_7) << 8 |
 * S(b_16) << 16 | S(b_29) << 24 (enocoro128v2_ct.c). */
MBSC_ALWAYS_INLINE void enocoro_rho(uint32_t s, uint32_t *a0, uint32_t *a1)
{
    uint32_t u0 = *a0 ^ (s & 0xFFu);
    uint32_t u1 = *a1 ^ ((s >> 8) & 0xFFu);

    *a0 = u0 ^ u1 ^ ((s >> 16) & 0xFFu);
    *a1 = u0 ^ ((u1 << 1) ^ (0x11Du & (0u - (u1 >> 7)))) ^ (s >> 24);
}

/*
 * The buffer in logical order, b_0..b_15 and b_16..b_31, from the circular
 * array at start index top (public): two byte shuffles per half, the
 * index vector computed from top (byte j of a source register is taken
 * where (top + i) mod 32 selects it; bit 7 of a pshufb index gives 0).
 */
MBSC_ALWAYS_INLINE void enocoro_load_logical(const struct enocoro_state *st, __m128i *l, __m128i *h)
{
    const __m128i m0 = _mm_loadu_si128((const __m128i *)(const void *)st->b);
    const __m128i m1 = _mm_loadu_si128((const __m128i *)(const void *)(st->b + 16));
    const __m128i iota = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m128i top = _mm_set1_epi8((char)st->top);
    const __m128i mask31 = _mm_set1_epi8(31), sixteen = _mm_set1_epi8(16);
    const __m128i bit7 = _mm_set1_epi8(-128);
    __m128i j, sel0, sel1;

    /* j = (top + i) & 31 for i = 0..15, then 16..31. */
    j = _mm_and_si128(_mm_add_epi8(iota, top), mask31);
    sel0 = _mm_or_si128(j, _mm_and_si128(_mm_slli_epi16(j, 3), bit7));
    j = _mm_xor_si128(j, sixteen);
    sel1 = _mm_or_si128(j, _mm_and_si128(_mm_slli_epi16(j, 3), bit7));
    *l = _mm_or_si128(_mm_shuffle_epi8(m0, sel0), _mm_shuffle_epi8(m1, sel1));
    j = _mm_and_si128(_mm_add_epi8(_mm_add_epi8(iota, sixteen), top), mask31);
    sel0 = _mm_or_si128(j, _mm_and_si128(_mm_slli_epi16(j, 3), bit7));
    j = _mm_xor_si128(j, sixteen);
    sel1 = _mm_or_si128(j, _mm_and_si128(_mm_slli_epi16(j, 3), bit7));
    *h = _mm_or_si128(_mm_shuffle_epi8(m0, sel0), _mm_shuffle_epi8(m1, sel1));
}

/*
 * 4 * groups rounds from the current position, out = in ^ z, with the whole buffer in two xmm
 * registers in logical order (L = b_0..b_15, H = b_16..b_31) and lambda
 * done four rounds at a time.  Four rounds of lambda move the buffer up
 * by four places and leave, in the places written meanwhile (notation of
 * enocoro128v2_ct.c, b_i the bytes before the four rounds t..t+3):
 *   b'_(3..6)   = b_(-1..2) ^ b_(3..6)    (b_2 ^ b_6 of each round)
 *   b'_(8..11)  = b_(4..7)  ^ b_(12..15)  (b_7 ^ b_15)
 *   b'_(17..20) = b_(13..16) ^ b_(25..28) (b_16 ^ b_28)
 *   b'_(0..3)  ^= a_0 of rounds t+3, t+2, t+1, t   (b_31 ^ a_0)
 * where the shift by four supplies the first operand of each XOR: so
 * lambda is two byte-aligns, three masked XORs and the four a_0 bytes.
 * Nothing is written to memory inside the block; the S-box inputs are
 * gathered from L and H by two byte shuffles.
 */
static void enocoro_ssse3_groups(struct enocoro_state *st, uint8_t *out, const uint8_t *in,
                                 size_t groups)
{
    /* Gather: byte 4k+s = S-box input s (b_2, b_7, b_16, b_29) of round
     * t+k, i.e. places 2-k, 7-k, 16-k, 29-k (-1 = 31); 0x80 gives 0. */
    const __m128i from_l =
        _mm_setr_epi8(2, 7, -128, -128, 1, 6, 15, -128, 0, 5, 14, -128, -128, 4, 13, -128);
    const __m128i from_h = _mm_setr_epi8(-128, -128, 0, 13, -128, -128, -128, 12, -128, -128, -128,
                                         11, 15, -128, -128, 10);
    const __m128i m_3_6 = _mm_setr_epi8(0, 0, 0, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i m_8_11 = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, -1, -1, -1, -1, 0, 0, 0, 0);
    const __m128i m_1_4 = _mm_setr_epi8(0, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    __m128i l, h;
    uint32_t a0 = st->a0, a1 = st->a1;

    enocoro_load_logical(st, &l, &h);
    for (size_t g = 0; g < groups; g++, out += 4, in += 4) {
        /* b_31 ^ a_0 is round t+3's b_2 (lane 12). */
        __m128i x = _mm_or_si128(_mm_shuffle_epi8(l, from_l), _mm_shuffle_epi8(h, from_h));
        __m128i sv, l2, h2;
        uint64_t s01, s23;
        uint32_t a0s;

        x = _mm_xor_si128(x, _mm_slli_si128(_mm_cvtsi32_si128((int)a0), 12));
        sv = enocoro_sbox_v(x);
        s01 = (uint64_t)_mm_cvtsi128_si64(sv);
        s23 = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(sv, sv));

        a0s = a0 << 24;
        out[0] = (uint8_t)(in[0] ^ a1);
        enocoro_rho((uint32_t)s01, &a0, &a1);
        a0s |= a0 << 16;
        out[1] = (uint8_t)(in[1] ^ a1);
        enocoro_rho((uint32_t)(s01 >> 32), &a0, &a1);
        a0s |= a0 << 8;
        out[2] = (uint8_t)(in[2] ^ a1);
        enocoro_rho((uint32_t)s23, &a0, &a1);
        a0s |= a0;
        out[3] = (uint8_t)(in[3] ^ a1);
        enocoro_rho((uint32_t)(s23 >> 32), &a0, &a1);

        /* lambda, four rounds at once (see above). */
        l2 = _mm_alignr_epi8(l, h, 12); /* b'_i = b_(i-4) */
        h2 = _mm_alignr_epi8(h, l, 12);
        l2 = _mm_xor_si128(l2, _mm_and_si128(l, m_3_6));
        l2 = _mm_xor_si128(l2, _mm_and_si128(_mm_srli_si128(l, 4), m_8_11));
        h2 = _mm_xor_si128(h2, _mm_and_si128(_mm_srli_si128(h, 8), m_1_4));
        l = _mm_xor_si128(l2, _mm_cvtsi32_si128((int)a0s));
        h = h2;
    }
    /* Stored in logical order: the start index is 0 again. */
    _mm_storeu_si128((__m128i *)(void *)st->b, l);
    _mm_storeu_si128((__m128i *)(void *)(st->b + 16), h);
    st->top = 0;
    st->a0 = (uint8_t)a0;
    st->a1 = (uint8_t)a1;
}

/*
 * The stream: groups of four rounds in registers from wherever the stream
 * is, and the last len mod 4 rounds with the portable code.  Branches on
 * len only.
 */
static void enocoro_ssse3_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct enocoro_state *st = state;
    size_t groups = len / 4u;

    if (len == 0) {
        return;
    }
    if (groups > 0) {
        enocoro_ssse3_groups(st, out, in, groups);
    }
    mbsc_enocoro_rounds(st, out + 4u * groups, in + 4u * groups, len % 4u);
}

const struct mbsc_cipher_impl mbsc_enocoro128v2_ssse3 = {
    .name = "ssse3",
    .cpu_needs = MBSC_CPU_SSSE3,
    .state_bytes = sizeof(struct enocoro_state),
    .init = mbsc_enocoro_init,
    .xor_stream = enocoro_ssse3_xor,
};
