/* SPDX-License-Identifier: ISC */
/*
 * enocoro128v2_neon.c - Enocoro-128v2 four rounds at a time with the
 * buffer in NEON registers and the S-box evaluated sixteen at a time by
 * in-register nibble shuffles (tbl on AArch64, vtbl on 32-bit ARM),
 * constant time.
 *
 * The method of enocoro128v2_ssse3.c (the S-box tables, the gathering of
 * the sixteen S-box inputs of four rounds, and lambda of four rounds as a
 * shift by four places plus three masked XORs are explained there); here
 * the gathers and the rotation into logical order are one tbl from the
 * 32-byte buffer, and the shifts are vext.  tbl picks bytes of registers
 * by index (an index past the table gives 0): no memory address depends
 * on a secret.
 *
 * On 32-bit ARM this file alone is built with -mfpu=neon and the registry
 * runs it only when the kernel reports HWCAP_NEON (cpu.c).
 */
#include "enocoro128v2.h"

#include <arm_neon.h>

#if defined(__ARM_BIG_ENDIAN)
#error "enocoro128v2_neon.c assumes little-endian lanes; build with --disable-simd"
#endif

/* tbl with a 16-byte table, and with the 32-byte table l:h. */
#if defined(__aarch64__)
#define TBL16(t, i) vqtbl1q_u8((t), (i))
MBSC_ALWAYS_INLINE uint8x16_t tbl32(uint8x16_t l, uint8x16_t h, uint8x16_t i)
{
    uint8x16x2_t t;
    t.val[0] = l;
    t.val[1] = h;
    return vqtbl2q_u8(t, i);
}
#else
MBSC_ALWAYS_INLINE uint8x16_t tbl16_v7(uint8x16_t v, uint8x16_t i)
{
    uint8x8x2_t t;
    t.val[0] = vget_low_u8(v);
    t.val[1] = vget_high_u8(v);
    return vcombine_u8(vtbl2_u8(t, vget_low_u8(i)), vtbl2_u8(t, vget_high_u8(i)));
}
#define TBL16(t, i) tbl16_v7((t), (i))
MBSC_ALWAYS_INLINE uint8x16_t tbl32(uint8x16_t l, uint8x16_t h, uint8x16_t i)
{
    uint8x8x4_t t;
    t.val[0] = vget_low_u8(l);
    t.val[1] = vget_high_u8(l);
    t.val[2] = vget_low_u8(h);
    t.val[3] = vget_high_u8(h);
    return vcombine_u8(vtbl4_u8(t, vget_low_u8(i)), vtbl4_u8(t, vget_high_u8(i)));
}
#endif

static const uint8_t tab_s4[16] = {0x01, 0x03, 0x09, 0x0a, 0x05, 0x0e, 0x07, 0x02,
                                   0x0d, 0x00, 0x0c, 0x0f, 0x04, 0x08, 0x06, 0x0b};
static const uint8_t tab_a[16] = {0x0b, 0x09, 0x03, 0x00, 0x0f, 0x04, 0x0d, 0x08,
                                  0x07, 0x0a, 0x06, 0x05, 0x0e, 0x02, 0x0c, 0x01};
static const uint8_t tab_b[16] = {0x04, 0x0c, 0x02, 0x0e, 0x07, 0x0d, 0x0f, 0x08,
                                  0x01, 0x00, 0x05, 0x09, 0x03, 0x06, 0x0b, 0x0a};
static const uint8_t tab_bp[16] = {0x01, 0x09, 0x07, 0x0b, 0x02, 0x08, 0x0a, 0x0d,
                                   0x04, 0x05, 0x00, 0x0c, 0x06, 0x03, 0x0e, 0x0f};
static const uint8_t tab_h[16] = {0x20, 0x60, 0x21, 0x41, 0xa0, 0xc1, 0xe0, 0x40,
                                  0xa1, 0x00, 0x81, 0xe1, 0x80, 0x01, 0xc0, 0x61};
static const uint8_t tab_l[16] = {0x02, 0x06, 0x12, 0x14, 0x0a, 0x1c, 0x0e, 0x04,
                                  0x1a, 0x00, 0x18, 0x1e, 0x08, 0x10, 0x0c, 0x16};
/* Byte 4k+s = S-box input s (b_2, b_7, b_16, b_29) of round t+k: places
 * 2-k, 7-k, 16-k, 29-k of the buffer, -1 being 31. */
static const uint8_t gather[16] = {2, 7, 16, 29, 1, 6, 15, 28, 0, 5, 14, 27, 31, 4, 13, 26};
static const uint8_t m_3_6[16] = {0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static const uint8_t m_8_11[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
static const uint8_t m_1_4[16] = {0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static const uint8_t iota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

MBSC_ALWAYS_INLINE uint8x16_t enocoro_sbox_v(uint8x16_t x)
{
    uint8x16_t xl = vandq_u8(x, vdupq_n_u8(0x0f));
    uint8x16_t xh = vshrq_n_u8(x, 4);
    uint8x16_t zh = veorq_u8(TBL16(vld1q_u8(tab_a), xh), TBL16(vld1q_u8(tab_b), xl));
    uint8x16_t zl = veorq_u8(TBL16(vld1q_u8(tab_bp), xh), TBL16(vld1q_u8(tab_s4), xl));

    return vorrq_u8(TBL16(vld1q_u8(tab_h), zh), TBL16(vld1q_u8(tab_l), zl));
}

/* rho of one round with s = S(b_2) | S(b_7) << 8 | S(b_16) << 16 |
 * S(b_29) << 24 (enocoro128v2_ct.c). */
MBSC_ALWAYS_INLINE void enocoro_rho(uint32_t s, uint32_t *a0, uint32_t *a1)
{
    uint32_t u0 = *a0 ^ (s & 0xFFu);
    uint32_t u1 = *a1 ^ ((s >> 8) & 0xFFu);

    *a0 = u0 ^ u1 ^ ((s >> 16) & 0xFFu);
    *a1 = u0 ^ ((u1 << 1) ^ (0x11Du & (0u - (u1 >> 7)))) ^ (s >> 24);
}

/* 4 * groups rounds from the current position, out = in ^ z. */
static void enocoro_neon_groups(struct enocoro_state *st, uint8_t *out, const uint8_t *in,
                                size_t groups)
{
    const uint8x16_t g_idx = vld1q_u8(gather), zero = vdupq_n_u8(0);
    const uint8x16_t k36 = vld1q_u8(m_3_6), k811 = vld1q_u8(m_8_11), k14 = vld1q_u8(m_1_4);
    /* Logical order from the circular array: index (top + i) & 31. */
    const uint8x16_t top = vdupq_n_u8(st->top), m31 = vdupq_n_u8(31);
    const uint8x16_t i0 = vandq_u8(vaddq_u8(vld1q_u8(iota), top), m31);
    const uint8x16_t i1 = vandq_u8(vaddq_u8(i0, vdupq_n_u8(16)), m31);
    const uint8x16_t m0 = vld1q_u8(st->b), m1 = vld1q_u8(st->b + 16);
    uint8x16_t l = tbl32(m0, m1, i0), h = tbl32(m0, m1, i1);
    uint32_t a0 = st->a0, a1 = st->a1;

    for (size_t g = 0; g < groups; g++, out += 4, in += 4) {
        /* b_31 ^ a_0 is round t+3's b_2 (lane 12). */
        uint8x16_t x = veorq_u8(tbl32(l, h, g_idx),
                                vcombine_u8(vget_low_u8(zero), vcreate_u8((uint64_t)a0 << 32)));
        uint64x2_t sv = vreinterpretq_u64_u8(enocoro_sbox_v(x));
        uint64_t s01 = vgetq_lane_u64(sv, 0), s23 = vgetq_lane_u64(sv, 1);
        uint32_t a0s;
        uint8x16_t l2, h2;

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

        /* lambda, four rounds at once (enocoro128v2_ssse3.c). */
        l2 = vextq_u8(h, l, 12); /* b'_i = b_(i-4) */
        h2 = vextq_u8(l, h, 12);
        l2 = veorq_u8(l2, vandq_u8(l, k36));
        l2 = veorq_u8(l2, vandq_u8(vextq_u8(l, zero, 4), k811));
        h2 = veorq_u8(h2, vandq_u8(vextq_u8(h, zero, 8), k14));
        l = veorq_u8(l2, vcombine_u8(vcreate_u8((uint64_t)a0s), vget_low_u8(zero)));
        h = h2;
    }
    /* Stored in logical order: the start index is 0 again. */
    vst1q_u8(st->b, l);
    vst1q_u8(st->b + 16, h);
    st->top = 0;
    st->a0 = (uint8_t)a0;
    st->a1 = (uint8_t)a1;
}

/* Groups of four rounds, then the last len mod 4 rounds portably. */
static void enocoro_neon_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct enocoro_state *st = state;
    size_t groups = len / 4u;

    if (len == 0) {
        return;
    }
    if (groups > 0) {
        enocoro_neon_groups(st, out, in, groups);
    }
    mbsc_enocoro_rounds(st, out + 4u * groups, in + 4u * groups, len % 4u);
}

const struct mbsc_cipher_impl mbsc_enocoro128v2_neon = {
    .name = "neon",
    .cpu_needs = MBSC_CPU_NEON,
    .state_bytes = sizeof(struct enocoro_state),
    .init = mbsc_enocoro_init,
    .xor_stream = enocoro_neon_xor,
};
