/* SPDX-License-Identifier: ISC */
/*
 * enocoro128v2_ssse3.c - Enocoro-128v2 with the whole state in xmm
 * registers (SSSE3): the S-box evaluated sixteen at a time by nibble
 * shuffles (pshufb), the buffer in two registers, and the a_0/a_1 chain in
 * byte 0 of xmm registers; constant time.
 *
 * Built with -mssse3 for this file only and run only when cpuid reports
 * SSSE3 (cpu.c).  Key setup and the last len mod 4 rounds of a call are the
 * portable code's; the state is struct enocoro_vec_state (enocoro128v2.h),
 * which keeps the next group's constants between calls.
 *
 * The structure is enocoro128v2_vbmi.c's (its header explains it: rho as
 * a linear map with per-round constants from the S-box batch, multiplying
 * by 2 with a pshufb of 0x1d, lambda and the next gather beside the
 * rounds, the previous group's a_0 bytes entering lambda's output), with
 * what SSSE3 lacks done by hand: two XORs for each three-input XOR, byte
 * shuffles whose zeroed lanes have bit 7 set in the index instead of
 * zero-masking, and the 32-byte buffer in two registers L = b_0..b_15,
 * H = b_16..b_31, moved by byte-aligns and shuffles.  Four rounds of
 * lambda (b_i the bytes before them):
 *   L' = align(L, H, 12) ^ shuffle(L: b_(3..6) to 3..6, b_(12..15) to 8..11)
 *   H' = align(H, L, 12) ^ shuffle(H: b_(25..28) to 17..20)
 * and the a_0 bytes of the group before XORed in at places 3..7.
 *
 * Measured here against the version before it, which ran rho in scalar
 * registers and moved each group's S-box outputs to them and the a_0
 * values back: 8.4 cycles/byte against 9.5 (64 KiB, best of 301 runs,
 * side by side), because the chain takes three cycles a round in vector
 * registers against five in scalar ones and nothing crosses between the
 * two register files.  Built with -mavx2 (three-operand forms) it was 1%
 * faster, not worth a second file.
 *
 * The S-box: sixteen at a time by nibble shuffles,
 * enocoro128v2_pshufb_sbox.h (its tables and their derivation).
 *
 * Constant time: no table in memory, no branch but on len; `make check-ct`
 * runs this file under valgrind.
 */
#include "enocoro128v2.h"
#include "enocoro128v2_pshufb_sbox.h"

#include <tmmintrin.h>

/* a ^ b ^ c */
#define X3(a, b, c) _mm_xor_si128(_mm_xor_si128((a), (b)), (c))

/*
 * rho's constants from a batch x of S-box inputs (byte 4k + s = input s,
 * at b_2, b_7, b_16, b_29, of round k), in byte 4k:
 *   wc = s_0 ^ s_1 ^ s_2              (a_0' = a_0 ^ a_1 ^ wc)
 *   vc = s_0 ^ 2 s_1 ^ s_3 ^ 0x1d     (a_1' = a_0 ^ vc ^ 2 a_1 ^ 0x1d)
 */
MBSC_ALWAYS_INLINE void enocoro_consts(__m128i x, __m128i *wc, __m128i *vc)
{
    __m128i xs;
    __m128i sv = enocoro_sbox(x, &xs);

    *wc = X3(sv, _mm_srli_epi32(sv, 8), _mm_srli_epi32(sv, 16));
    *vc = X3(sv, _mm_srli_epi32(xs, 8), _mm_srli_epi32(sv, 24));
}

/*
 * Round k of a group, a_0 = a0, a_1 = a1 in byte 0, its constants in byte
 * 4k of wc and vc; 2 a_1 ^ 0x1d = (a_1 + a_1) ^ pshufb(0x1d.., a_1).  The
 * keystream byte (a_1 before the round) and the new a_0 are shifted into
 * the top byte of z and of am.
 */
#define ENOCORO_ROUND(k)                                                                           \
    do {                                                                                           \
        __m128i wk_ = (k) == 0 ? wc : _mm_srli_si128(wc, 4 * (k));                                 \
        __m128i vk_ = (k) == 0 ? vc : _mm_srli_si128(vc, 4 * (k));                                 \
        __m128i p_ = _mm_xor_si128(a0, vk_);                                                       \
        z = _mm_alignr_epi8(a1, z, 1);                                                             \
        a0 = _mm_xor_si128(_mm_xor_si128(a0, wk_), a1);                                            \
        a1 = _mm_xor_si128(_mm_xor_si128(_mm_add_epi8(a1, a1), p_), _mm_shuffle_epi8(k1d, a1));    \
        am = _mm_alignr_epi8(a0, am, 1);                                                           \
    } while (0)

/*
 * One group of four rounds: lambda and the gather of the next group's
 * S-box inputs first (they need only the group's start), the inputs at
 * places 2, 1, 0 (a_0 after rounds 0..2, from am) and 31 (a_0 after
 * round 3) as they come, then the next group's sixteen S-boxes.
 */
#define ENOCORO_GROUP()                                                                            \
    do {                                                                                           \
        __m128i l2_ =                                                                              \
            _mm_xor_si128(_mm_xor_si128(_mm_alignr_epi8(l, h, 12), _mm_shuffle_epi8(l, fb_l)),     \
                          _mm_shuffle_epi8(am, fold_idx));                                         \
        __m128i h2_ = _mm_xor_si128(_mm_alignr_epi8(h, l, 12), _mm_shuffle_epi8(h, fb_h));         \
        __m128i x_;                                                                                \
        l = l2_;                                                                                   \
        h = h2_;                                                                                   \
        x_ = _mm_or_si128(_mm_shuffle_epi8(l, g_l), _mm_shuffle_epi8(h, g_h));                     \
        ENOCORO_ROUND(0);                                                                          \
        ENOCORO_ROUND(1);                                                                          \
        ENOCORO_ROUND(2);                                                                          \
        x_ = _mm_xor_si128(x_, _mm_shuffle_epi8(am, tight_idx));                                   \
        ENOCORO_ROUND(3);                                                                          \
        x_ = _mm_xor_si128(x_, _mm_shuffle_epi8(a0, t12_idx));                                     \
        enocoro_consts(x_, &wc, &vc);                                                              \
    } while (0)

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

/* A shuffle index lane that gives 0. */
#define Z (-128)

/* 4 * groups rounds from the current position, out = in ^ z. */
static void enocoro_ssse3_groups(struct enocoro_vec_state *vs, uint8_t *out, const uint8_t *in,
                                 size_t groups)
{
    struct enocoro_state *st = &vs->s;
    const __m128i k1d = _mm_set1_epi8(0x1d);
    /* S-box inputs of round k in bytes 4k..4k+3: places 2-k, 7-k, 16-k,
     * 29-k (-1 = 31), from L (g_l) and from H (g_h). */
    const __m128i g_l = _mm_setr_epi8(2, 7, Z, Z, 1, 6, 15, Z, 0, 5, 14, Z, Z, 4, 13, Z);
    const __m128i g_h = _mm_setr_epi8(Z, Z, 0, 13, Z, Z, Z, 12, Z, Z, Z, 11, 15, Z, Z, 10);
    /* lambda's feedback sources (see the top of the file). */
    const __m128i fb_l = _mm_setr_epi8(Z, Z, Z, 3, 4, 5, 6, Z, 12, 13, 14, 15, Z, Z, Z, Z);
    const __m128i fb_h = _mm_setr_epi8(Z, 9, 10, 11, 12, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z);
    /* am holds a_0 after each round in its top bytes; at a group's start
     * bytes 11..14 are a_0 before rounds 0..3 of the group before, which
     * belong at places 3, 2, 1, 0 (merge_idx); four rounds of lambda move
     * them to places 4..7 and feed place 3 back into 3 (fold_idx). */
    const __m128i fold_idx = _mm_setr_epi8(Z, Z, Z, 11, 14, 13, 12, 11, Z, Z, Z, Z, Z, Z, Z, Z);
    const __m128i merge_idx = _mm_setr_epi8(14, 13, 12, 11, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z);
    /* After round 2: a_0 after rounds 0..2 to the inputs at places 2, 1,
     * 0 (bytes 0, 4, 8); after round 3, a_0 to place 31 (byte 12). */
    const __m128i tight_idx = _mm_setr_epi8(13, Z, Z, Z, 14, Z, Z, Z, 15, Z, Z, Z, Z, Z, Z, Z);
    const __m128i t12_idx = _mm_setr_epi8(Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, 0, Z, Z, Z);
    __m128i l, h;
    __m128i a0 = _mm_cvtsi32_si128(st->a0), a1 = _mm_cvtsi32_si128(st->a1);
    /* am as the rounds before would have left it: the buffer is complete,
     * and only a_0 of this call's first round is still to come (byte 15). */
    __m128i am = _mm_slli_si128(a0, 15), z = _mm_setzero_si128();
    __m128i wc, vc;
    size_t g = 0;

    if (vs->ready) {
        /* Left by the last call, which ended here with top = 0. */
        l = _mm_loadu_si128((const __m128i *)(const void *)st->b);
        h = _mm_loadu_si128((const __m128i *)(const void *)(st->b + 16));
        wc = _mm_loadu_si128((const __m128i *)(const void *)vs->wc);
        vc = _mm_loadu_si128((const __m128i *)(const void *)vs->vc);
    } else {
        __m128i x;

        enocoro_load_logical(st, &l, &h);
        x = _mm_or_si128(_mm_shuffle_epi8(l, g_l), _mm_shuffle_epi8(h, g_h));
        x = _mm_xor_si128(x, _mm_shuffle_epi8(a0, t12_idx));
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
        mbsc_store32_le(out,
                        mbsc_load32_le(in) ^ (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(z, 12)));
    }
    /* The last group's a_0 bytes; stored in logical order, so the start
     * index is 0 again. */
    l = _mm_xor_si128(l, _mm_shuffle_epi8(am, merge_idx));
    _mm_storeu_si128((__m128i *)(void *)st->b, l);
    _mm_storeu_si128((__m128i *)(void *)(st->b + 16), h);
    _mm_storeu_si128((__m128i *)(void *)vs->wc, wc);
    _mm_storeu_si128((__m128i *)(void *)vs->vc, vc);
    vs->ready = 1;
    st->top = 0;
    st->a0 = (uint8_t)_mm_cvtsi128_si32(a0);
    st->a1 = (uint8_t)_mm_cvtsi128_si32(a1);
}
#undef Z

/*
 * The stream: groups of four rounds in registers from wherever the stream
 * is, and the last len mod 4 rounds with the portable code.  Branches on
 * len only.
 */
static void enocoro_ssse3_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct enocoro_vec_state *vs = state;
    size_t groups = len / 4u;

    if (len == 0) {
        return;
    }
    if (groups > 0) {
        enocoro_ssse3_groups(vs, out, in, groups);
    }
    if (len % 4u != 0) {
        /* Single rounds move the stream off the group boundary. */
        vs->ready = 0;
        mbsc_enocoro_rounds(&vs->s, out + 4u * groups, in + 4u * groups, len % 4u);
    }
}

const struct mbsc_cipher_impl mbsc_enocoro128v2_ssse3 = {
    .name = "ssse3",
    .cpu_needs = MBSC_CPU_SSSE3,
    .state_bytes = sizeof(struct enocoro_vec_state),
    .init = mbsc_enocoro_vec_init,
    .xor_stream = enocoro_ssse3_xor,
};
