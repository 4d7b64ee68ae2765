/* SPDX-License-Identifier: ISC */
/*
 * rabbit_avx2.c - Rabbit (RFC 4503) with the next-state function in AVX2.
 *
 * Built with -mavx2 for this file only, run only when the CPU and OS
 * support AVX2 (cpu.c).  Key and IV setup are the portable code's
 * (rabbit_ref.c); this file produces the keystream.
 *
 * The eight state words X0..X7 live in one ymm register for the whole
 * call.  Per block (RFC 4503 2.5, 2.6):
 *
 * - Counters: C0..C7 + A0..A7 + b, with the carry rippling from C0 to C7
 *   and out into the next step, is one 256-bit addition of little-endian
 *   words, so it is four 64-bit add-with-carry steps in scalar registers
 *   (unsigned __int128: add/adc, no comparison, no branch).
 * - g: the eight sums X_j + C_j in one vpaddd; their eight 64-bit squares
 *   in two vpmuludq (even lanes, then odd lanes shifted down); g_j = low
 *   XOR high half, folded with a shift and XOR and the two halves blended.
 * - X_j = g_j + rotl(g_(j-1), 16 or 8) + (rotl(g_(j-2), 16) or g_(j-2)):
 *   the lanes j-1 and j-2 by a cross-lane permute (vpermd), the rotations
 *   by one byte shuffle each (rotations by 16 and 8 move whole bytes; even
 *   and odd lanes get their own pattern).
 * - Extraction: three vpermd gather X_(2i), X_(2i+5), X_(2i+3), then two
 *   shifts and two XORs give the 16 keystream bytes in the low half, in
 *   x86's little-endian order, which is the RFC's byte order for them.
 *
 * Constant time: additions, XORs, shifts, multiplications (vpmuludq's
 * timing does not depend on its operands), permutes and shuffles with
 * constant patterns; branches only on lengths and the public buffer
 * position.
 */
#include "rabbit.h"

#include <immintrin.h>

/* A0 | A1 << 32, A2 | A3 << 32, ... (RFC 4503 2.5). */
#define RABBIT_A01 UINT64_C(0xD34D34D34D34D34D)
#define RABBIT_A23 UINT64_C(0x4D34D34D34D34D34)
#define RABBIT_A45 UINT64_C(0x34D34D34D34D34D3)
#define RABBIT_A67 UINT64_C(0xD34D34D34D34D34D)

struct rabbit_avx2_regs {
    __m256i x;      /* X0..X7 */
    uint64_t c[4];  /* C0 | C1 << 32, ... */
    uint64_t carry; /* b */
};

/* C = C + A + b as one 256-bit number; b = the carry out. */
MBSC_ALWAYS_INLINE void rabbit_counters(uint64_t c[4], uint64_t *carry)
{
    unsigned __int128 t;

    t = (unsigned __int128)c[0] + RABBIT_A01 + *carry;
    c[0] = (uint64_t)t;
    t = (unsigned __int128)c[1] + RABBIT_A23 + (uint64_t)(t >> 64);
    c[1] = (uint64_t)t;
    t = (unsigned __int128)c[2] + RABBIT_A45 + (uint64_t)(t >> 64);
    c[2] = (uint64_t)t;
    t = (unsigned __int128)c[3] + RABBIT_A67 + (uint64_t)(t >> 64);
    c[3] = (uint64_t)t;
    *carry = (uint64_t)(t >> 64);
}

/* One iteration of the system; returns the 16 keystream bytes. */
MBSC_ALWAYS_INLINE __m128i rabbit_step(struct rabbit_avx2_regs *r)
{
    const __m256i prev1 = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6);
    const __m256i prev2 = _mm256_setr_epi32(6, 7, 0, 1, 2, 3, 4, 5);
    /* Even lanes rotl 16, odd lanes rotl 8 / even rotl 16, odd as is. */
    const __m256i rot1 = _mm256_setr_epi8(2, 3, 0, 1, 7, 4, 5, 6, 10, 11, 8, 9, 15, 12, 13, 14, 2,
                                          3, 0, 1, 7, 4, 5, 6, 10, 11, 8, 9, 15, 12, 13, 14);
    const __m256i rot2 = _mm256_setr_epi8(2, 3, 0, 1, 4, 5, 6, 7, 10, 11, 8, 9, 12, 13, 14, 15, 2,
                                          3, 0, 1, 4, 5, 6, 7, 10, 11, 8, 9, 12, 13, 14, 15);
    const __m256i sel_e = _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0);
    const __m256i sel_h = _mm256_setr_epi32(5, 7, 1, 3, 0, 0, 0, 0);
    const __m256i sel_l = _mm256_setr_epi32(3, 5, 7, 1, 0, 0, 0, 0);
    __m256i c, v, pe, po, g, x, s;

    rabbit_counters(r->c, &r->carry);
    c = _mm256_setr_epi64x((long long)r->c[0], (long long)r->c[1], (long long)r->c[2],
                           (long long)r->c[3]);
    v = _mm256_add_epi32(r->x, c);
    pe = _mm256_mul_epu32(v, v); /* squares of lanes 0, 2, 4, 6 */
    po = _mm256_srli_epi64(v, 32);
    po = _mm256_mul_epu32(po, po);                        /* squares of lanes 1, 3, 5, 7 */
    pe = _mm256_xor_si256(pe, _mm256_srli_epi64(pe, 32)); /* g in the low halves */
    po = _mm256_xor_si256(po, _mm256_slli_epi64(po, 32)); /* g in the high halves */
    g = _mm256_blend_epi32(pe, po, 0xAA);
    x = _mm256_add_epi32(g, _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(g, prev1), rot1));
    x = _mm256_add_epi32(x, _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(g, prev2), rot2));
    r->x = x;
    /* S = X(2i) ^ (X(2i+5) >> 16) ^ (X(2i+3) << 16), i = 0..3 */
    s = _mm256_xor_si256(_mm256_permutevar8x32_epi32(x, sel_e),
                         _mm256_srli_epi32(_mm256_permutevar8x32_epi32(x, sel_h), 16));
    s = _mm256_xor_si256(s, _mm256_slli_epi32(_mm256_permutevar8x32_epi32(x, sel_l), 16));
    return _mm256_castsi256_si128(s);
}

static void rabbit_avx2_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct rabbit_state *st = state;
    struct rabbit_avx2_regs r;
    size_t i = 0;

    if (len == 0) {
        return;
    }
    /* 1. Bytes left over from the previous call's last block. */
    while (st->used < sizeof st->ks && i < len) {
        out[i] = (uint8_t)(in[i] ^ st->ks[st->used++]);
        i++;
    }
    if (i == len) {
        return;
    }
    r.x = _mm256_loadu_si256((const __m256i *)(const void *)st->x);
    for (unsigned j = 0; j < 4; j++) {
        r.c[j] = (uint64_t)st->c[2 * j] | ((uint64_t)st->c[2 * j + 1] << 32);
    }
    r.carry = st->carry;

    /* 2. Whole blocks. */
    for (; len - i >= 16; i += 16) {
        __m128i ks = rabbit_step(&r);
        __m128i m = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
        _mm_storeu_si128((__m128i *)(void *)(out + i), _mm_xor_si128(m, ks));
    }
    /* 3. A partial last block: keep its unused bytes for the next call. */
    if (i < len) {
        _mm_storeu_si128((__m128i *)(void *)st->ks, rabbit_step(&r));
        st->used = 0;
        while (i < len) {
            out[i] = (uint8_t)(in[i] ^ st->ks[st->used++]);
            i++;
        }
    }

    _mm256_storeu_si256((__m256i *)(void *)st->x, r.x);
    for (unsigned j = 0; j < 4; j++) {
        st->c[2 * j] = (uint32_t)r.c[j];
        st->c[2 * j + 1] = (uint32_t)(r.c[j] >> 32);
    }
    st->carry = (uint32_t)r.carry;
}

const struct mbsc_cipher_impl mbsc_rabbit_avx2 = {
    .name = "avx2",
    .cpu_needs = MBSC_CPU_AVX2,
    .state_bytes = sizeof(struct rabbit_state),
    .init = mbsc_rabbit_init,
    .xor_stream = rabbit_avx2_xor,
};
