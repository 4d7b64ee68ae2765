/* SPDX-License-Identifier: ISC */
/*
 * enocoro128v2_pshufb_sbox.h - the Enocoro-128v2 S-box on sixteen bytes
 * at once by nibble shuffles (pshufb), shared by the SSSE3 and the
 * AVX-512 VBMI implementations; each includes it under its own target
 * flags.
 *
 * The S-box from its construction (enocoro128v2_ct.c), as six 16-entry
 * nibble tables, each one pshufb: pshufb selects a byte of a register by
 * the low four bits of the index, inside the register, so the secret
 * nibble picks a value without addressing memory.
 *   zh = A[xh] ^ B[xl],  zl = B'[xh] ^ S4[xl]
 *        with A[n] = s4[n] ^ 0xa, B[n] = 4 s4[n], B'[n] = 4 s4[n] ^ 5
 *        (products in GF(2^4) mod x^4+x+1)
 *   s8 = H[zh] | L[zl]
 *        with H[n] = rotl8(s4[n] << 4, 1), L[n] = s4[n] << 1: the final
 *        rotation split by nibble, the two parts on disjoint bits.
 * The tables were derived from s4 and checked against the full s8 table
 * of the specification for all 256 inputs; the published vectors check
 * them again (tests/check_cipher.c runs them through both implementations).
 * Two more, XH[n] = 2 H[n] and XL[n] = 2 L[n] ^ 0x1d (mod 0x11d), give
 * 2 s8 ^ 0x1d beside s8, which rho needs (multiplication by 2 is linear).
 *
 * Constant time: the secret bytes only ever select inside registers.
 */
#ifndef MBSC_ENOCORO128V2_PSHUFB_SBOX_H
#define MBSC_ENOCORO128V2_PSHUFB_SBOX_H

#include <tmmintrin.h>

#include "internal.h"

/*
 * s8 on each of the 16 bytes of x.  Also *xs = 2 s8 ^ 0x1d, because rho
 * needs it: multiplication by 2 is linear and the last step is
 * s8 = H[zh] | L[zl] (on disjoint bits), so 2 s8 = 2H[zh] ^ 2L[zl], two
 * more lookups beside the last two instead of a computation after them
 * (tab_xh[n] = 2 tab_h[n], tab_xl[n] = 2 tab_l[n] ^ 0x1d, mod 0x11d).
 */
MBSC_ALWAYS_INLINE __m128i enocoro_sbox(__m128i x, __m128i *xs)
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
    const __m128i tab_xh =
        _mm_setr_epi8(0x40, (char)0xc0, 0x42, (char)0x82, 0x5d, (char)0x9f, (char)0xdd, (char)0x80,
                      0x5f, 0x00, 0x1f, (char)0xdf, 0x1d, 0x02, (char)0x9d, (char)0xc2);
    const __m128i tab_xl = _mm_setr_epi8(0x19, 0x11, 0x39, 0x35, 0x09, 0x25, 0x01, 0x15, 0x29, 0x1d,
                                         0x2d, 0x21, 0x0d, 0x3d, 0x05, 0x31);
    const __m128i nib = _mm_set1_epi8(0x0f);
    __m128i xl = _mm_and_si128(x, nib);
    __m128i xh = _mm_and_si128(_mm_srli_epi16(x, 4), nib);
    __m128i zh = _mm_xor_si128(_mm_shuffle_epi8(tab_a, xh), _mm_shuffle_epi8(tab_b, xl));
    __m128i zl = _mm_xor_si128(_mm_shuffle_epi8(tab_bp, xh), _mm_shuffle_epi8(tab_s4, xl));

    *xs = _mm_xor_si128(_mm_shuffle_epi8(tab_xh, zh), _mm_shuffle_epi8(tab_xl, zl));
    return _mm_or_si128(_mm_shuffle_epi8(tab_h, zh), _mm_shuffle_epi8(tab_l, zl));
}

#endif /* MBSC_ENOCORO128V2_PSHUFB_SBOX_H */
