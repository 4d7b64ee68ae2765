/* SPDX-License-Identifier: ISC */
/*
 * rabbit_neon.c - Rabbit (RFC 4503) with the next-state function in NEON,
 * for AArch64 and 32-bit ARM (built with -mfpu=neon there, run only when
 * HWCAP_NEON is set: cpu.c).
 *
 * The method of rabbit_avx2.c on two q registers (X0..X3, X4..X7): the
 * eight squarings are four vmull_u32 (two 32x32->64-bit products each),
 * g_j = low XOR high half by vmovn/vshrn; the neighbours g_(j-1), g_(j-2)
 * come from vext across the two halves; the per-lane rotations (16 and 8,
 * or 16 and none) are variable shifts (vshl with a vector of counts; a
 * count of -32 gives 0); extraction unzips even and odd words (vuzp).  The
 * counter system stays scalar (as rabbit_ref.c: the carry from bit 32 of a
 * 64-bit sum), its words moved into vector registers once per block.
 * Bytes load and store with vld1q_u8 / vst1q_u8: little-endian lanes are
 * the RFC's byte order (big-endian ARM is refused below).
 *
 * Constant time: additions, XORs, shifts by constant vectors, vmull
 * (data-independent timing on the Cortex-A cores we target: A53, A72,
 * A76), lane moves; branches only on lengths and the buffer position.
 */
#include "rabbit.h"

#include <arm_neon.h>

#if defined(__ARM_BIG_ENDIAN)
#error "rabbit_neon.c assumes little-endian lanes; build with --disable-simd"
#endif

static const uint32_t rabbit_a[8] = {0x4D34D34Du, 0xD34D34D3u, 0x34D34D34u, 0x4D34D34Du,
                                     0xD34D34D3u, 0x34D34D34u, 0x4D34D34Du, 0xD34D34D3u};
static const int32_t rot1_l[4] = {16, 8, 16, 8}, rot1_r[4] = {-16, -24, -16, -24};
static const int32_t rot2_l[4] = {16, 0, 16, 0}, rot2_r[4] = {-16, -32, -16, -32};

/* The counters (RFC 4503 2.5), carry from bit 32 of a 64-bit sum. */
MBSC_ALWAYS_INLINE void rabbit_counters(uint32_t c[8], uint32_t *carry)
{
    uint32_t b = *carry;

    for (unsigned j = 0; j < 8; j++) {
        uint64_t t = (uint64_t)c[j] + rabbit_a[j] + b;
        c[j] = (uint32_t)t;
        b = (uint32_t)(t >> 32);
    }
    *carry = b;
}

MBSC_ALWAYS_INLINE uint32x2_t rabbit_g2(uint32x2_t v)
{
    uint64x2_t sq = vmull_u32(v, v);

    return veor_u32(vmovn_u64(sq), vshrn_n_u64(sq, 32));
}

MBSC_ALWAYS_INLINE uint32x4_t rotv(uint32x4_t x, int32x4_t l, int32x4_t r)
{
    return vorrq_u32(vshlq_u32(x, l), vshlq_u32(x, r));
}

/* One iteration; x[0] = X0..X3, x[1] = X4..X7; returns the 16 bytes. */
MBSC_ALWAYS_INLINE uint8x16_t rabbit_step(uint32x4_t x[2], uint32_t c[8], uint32_t *carry)
{
    const int32x4_t r1l = vld1q_s32(rot1_l), r1r = vld1q_s32(rot1_r);
    const int32x4_t r2l = vld1q_s32(rot2_l), r2r = vld1q_s32(rot2_r);
    uint32x4_t v0, v1, g0, g1, p0, p1, q0, q1, e, o, h, l, s;
    uint32x4x2_t eo;

    rabbit_counters(c, carry);
    v0 = vaddq_u32(x[0], vcombine_u32(vcreate_u32((uint64_t)c[0] | ((uint64_t)c[1] << 32)),
                                      vcreate_u32((uint64_t)c[2] | ((uint64_t)c[3] << 32))));
    v1 = vaddq_u32(x[1], vcombine_u32(vcreate_u32((uint64_t)c[4] | ((uint64_t)c[5] << 32)),
                                      vcreate_u32((uint64_t)c[6] | ((uint64_t)c[7] << 32))));
    g0 = vcombine_u32(rabbit_g2(vget_low_u32(v0)), rabbit_g2(vget_high_u32(v0)));
    g1 = vcombine_u32(rabbit_g2(vget_low_u32(v1)), rabbit_g2(vget_high_u32(v1)));
    /* g_(j-1) and g_(j-2) for lanes 0..3 and 4..7. */
    p0 = vextq_u32(g1, g0, 3);
    p1 = vextq_u32(g0, g1, 3);
    q0 = vextq_u32(g1, g0, 2);
    q1 = vextq_u32(g0, g1, 2);
    x[0] = vaddq_u32(vaddq_u32(g0, rotv(p0, r1l, r1r)), rotv(q0, r2l, r2r));
    x[1] = vaddq_u32(vaddq_u32(g1, rotv(p1, r1l, r1r)), rotv(q1, r2l, r2r));
    /* S = X(2i) ^ (X(2i+5) >> 16) ^ (X(2i+3) << 16), i = 0..3 */
    eo = vuzpq_u32(x[0], x[1]);
    e = eo.val[0];          /* X0 X2 X4 X6 */
    o = eo.val[1];          /* X1 X3 X5 X7 */
    h = vextq_u32(o, o, 2); /* X5 X7 X1 X3 */
    l = vextq_u32(o, o, 1); /* X3 X5 X7 X1 */
    s = veorq_u32(veorq_u32(e, vshrq_n_u32(h, 16)), vshlq_n_u32(l, 16));
    return vreinterpretq_u8_u32(s);
}

static void rabbit_neon_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct rabbit_state *st = state;
    uint32x4_t x[2];
    uint32_t c[8], carry;
    size_t i = 0;

    if (len == 0) {
        return;
    }
    while (st->used < sizeof st->ks && i < len) {
        out[i] = (uint8_t)(in[i] ^ st->ks[st->used++]);
        i++;
    }
    if (i == len) {
        return;
    }
    x[0] = vld1q_u32(st->x);
    x[1] = vld1q_u32(st->x + 4);
    for (unsigned j = 0; j < 8; j++) {
        c[j] = st->c[j];
    }
    carry = st->carry;

    for (; len - i >= 16; i += 16) {
        uint8x16_t ks = rabbit_step(x, c, &carry);
        vst1q_u8(out + i, veorq_u8(vld1q_u8(in + i), ks));
    }
    if (i < len) {
        vst1q_u8(st->ks, rabbit_step(x, c, &carry));
        st->used = 0;
        while (i < len) {
            out[i] = (uint8_t)(in[i] ^ st->ks[st->used++]);
            i++;
        }
    }

    vst1q_u32(st->x, x[0]);
    vst1q_u32(st->x + 4, x[1]);
    for (unsigned j = 0; j < 8; j++) {
        st->c[j] = c[j];
    }
    st->carry = carry;
}

const struct mbsc_cipher_impl mbsc_rabbit_neon = {
    .name = "neon",
    .cpu_needs = MBSC_CPU_NEON,
    .state_bytes = sizeof(struct rabbit_state),
    .init = mbsc_rabbit_init,
    .xor_stream = rabbit_neon_xor,
};
