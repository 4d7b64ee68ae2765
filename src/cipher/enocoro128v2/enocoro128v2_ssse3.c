/*
 * enocoro128v2_ssse3.c - Enocoro-128v2 with its S-box evaluated sixteen at
 * a time by in-register nibble shuffles (SSSE3 pshufb), constant time.
 *
 * Built with -mssse3 for this file only and run only when cpuid reports
 * SSSE3 (cpu.c).  The rounds, the 4-round lookahead that supplies sixteen
 * S-box inputs at once, and why that is exact, are in
 * enocoro128v2_lookahead.h; key setup and the rounds outside whole
 * 32-round blocks are the portable code's.
 *
 * The S-box from its construction (enocoro128v2_ct.c, notes "S-box"), as
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
 * of the notes for all 256 inputs; the published vectors check them again
 * (tests/check_cipher.c runs them through this implementation).
 */
#include "enocoro128v2.h"

#include <tmmintrin.h>

MBSC_ALWAYS_INLINE void enocoro_sbox16(uint64_t *lo, uint64_t *hi)
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
    /* Output word k = round k: bytes S(b_2), S(b_7), S(b_16), S(b_29), from
     * input byte 4s + 3 - k (enocoro128v2_lookahead.h). */
    const __m128i order = _mm_setr_epi8(3, 7, 11, 15, 2, 6, 10, 14, 1, 5, 9, 13, 0, 4, 8, 12);
    const __m128i nib = _mm_set1_epi8(0x0f);
    __m128i x = _mm_set_epi64x((long long)*hi, (long long)*lo);
    __m128i xl = _mm_and_si128(x, nib);
    __m128i xh = _mm_and_si128(_mm_srli_epi16(x, 4), nib);
    __m128i zh = _mm_xor_si128(_mm_shuffle_epi8(tab_a, xh), _mm_shuffle_epi8(tab_b, xl));
    __m128i zl = _mm_xor_si128(_mm_shuffle_epi8(tab_bp, xh), _mm_shuffle_epi8(tab_s4, xl));
    __m128i s = _mm_or_si128(_mm_shuffle_epi8(tab_h, zh), _mm_shuffle_epi8(tab_l, zl));

    s = _mm_shuffle_epi8(s, order);
    *lo = (uint64_t)_mm_cvtsi128_si64(s);
    *hi = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(s, s));
}

#include "enocoro128v2_lookahead.h"

const struct mbsc_cipher_impl mbsc_enocoro128v2_ssse3 = {
    .name = "ssse3",
    .cpu_needs = MBSC_CPU_SSSE3,
    .state_bytes = sizeof(struct enocoro_state),
    .init = mbsc_enocoro_init,
    .xor_stream = enocoro_lookahead_xor,
};
