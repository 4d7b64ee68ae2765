/* SPDX-License-Identifier: ISC */
/*
 * chacha20_neon.c - ChaCha20 (RFC 8439), four blocks at once in NEON
 * (Advanced SIMD), for AArch64 and for 32-bit ARM (Raspberry Pi OS armhf).
 *
 * AArch64 always has Advanced SIMD.  On 32-bit ARM, Debian's armhf baseline
 * does not include NEON, so this file alone is built with -mfpu=neon
 * (configure.ac) and the registry runs it only when the kernel reports
 * HWCAP_NEON (cpu.c).
 *
 * The macros are in chacha20_neon.h, shared with chacha20_neon_scalar.c.
 * Layout as in chacha20_avx2.c, with 4 lanes: q register x[i] holds word i
 * of four consecutive blocks.  Rotation by 16 is a halfword swap (vrev32),
 * the others a shift left and a shift-right-and-insert (vsri).  The 4 x 4
 * transposes (vtrn, then combining 64-bit halves) leave each block as four
 * q registers, XORed into the output with byte loads and stores (vld1q_u8
 * / vst1q_u8: no alignment needed, and byte order is that of the RFC on
 * the little-endian ARM targets we build for; big-endian ARM is refused
 * at compile time).
 *
 * Constant time: additions, XORs, shifts with constant counts, permutes;
 * branches only on the public block counts.  No table lookups.
 *
 * Vectors: every published ChaCha20 vector and the libsodium cross-check
 * run through this implementation (tests/check_cipher.c), in CI under
 * qemu-aarch64 and qemu-arm.
 */
#include "chacha20_neon.h"

void mbsc_chacha20_kernel_neon(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                               size_t nxor, uint8_t *tail)
{
    static const uint32_t lane_offsets[4] = {0, 1, 2, 3};
    const uint32x4_t ctr = vaddq_u32(vdupq_n_u32(input[12]), vld1q_u32(lane_offsets));
    uint32x4_t x0 = vdupq_n_u32(input[0]), x1 = vdupq_n_u32(input[1]);
    uint32x4_t x2 = vdupq_n_u32(input[2]), x3 = vdupq_n_u32(input[3]);
    uint32x4_t x4 = vdupq_n_u32(input[4]), x5 = vdupq_n_u32(input[5]);
    uint32x4_t x6 = vdupq_n_u32(input[6]), x7 = vdupq_n_u32(input[7]);
    uint32x4_t x8 = vdupq_n_u32(input[8]), x9 = vdupq_n_u32(input[9]);
    uint32x4_t x10 = vdupq_n_u32(input[10]), x11 = vdupq_n_u32(input[11]);
    uint32x4_t x12 = ctr, x13 = vdupq_n_u32(input[13]);
    uint32x4_t x14 = vdupq_n_u32(input[14]), x15 = vdupq_n_u32(input[15]);

    for (int r = 0; r < 10; r++) {
        QR(x0, x4, x8, x12);
        QR(x1, x5, x9, x13);
        QR(x2, x6, x10, x14);
        QR(x3, x7, x11, x15);
        QR(x0, x5, x10, x15);
        QR(x1, x6, x11, x12);
        QR(x2, x7, x8, x13);
        QR(x3, x4, x9, x14);
    }
#define ADD(x, i) x = vaddq_u32(x, vdupq_n_u32(input[i]))
    ADD(x0, 0);
    ADD(x1, 1);
    ADD(x2, 2);
    ADD(x3, 3);
    ADD(x4, 4);
    ADD(x5, 5);
    ADD(x6, 6);
    ADD(x7, 7);
    ADD(x8, 8);
    ADD(x9, 9);
    ADD(x10, 10);
    ADD(x11, 11);
    x12 = vaddq_u32(x12, ctr);
    ADD(x13, 13);
    ADD(x14, 14);
    ADD(x15, 15);
#undef ADD

    TRANSPOSE4(x0, x1, x2, x3);
    TRANSPOSE4(x4, x5, x6, x7);
    TRANSPOSE4(x8, x9, x10, x11);
    TRANSPOSE4(x12, x13, x14, x15);
    put_block(out, in, 0, nxor, tail, x0, x4, x8, x12);
    put_block(out, in, 1, nxor, tail, x1, x5, x9, x13);
    put_block(out, in, 2, nxor, tail, x2, x6, x10, x14);
    put_block(out, in, 3, nxor, tail, x3, x7, x11, x15);
}

static void chacha20_neon_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    mbsc_chacha20_xor_with(state, out, in, len, mbsc_chacha20_kernel_neon, 4u);
}

const struct mbsc_cipher_impl mbsc_chacha20_neon = {
    .name = "neon",
    .cpu_needs = MBSC_CPU_NEON,
    .state_bytes = sizeof(struct chacha20_state),
    .init = mbsc_chacha20_init,
    .xor_stream = chacha20_neon_xor,
};
