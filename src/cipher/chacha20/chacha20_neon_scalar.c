/* SPDX-License-Identifier: ISC */
/*
 * chacha20_neon_scalar.c - ChaCha20 (RFC 8439), five blocks per batch:
 * four in NEON registers and a fifth in general-purpose registers, in the
 * same loop.
 *
 * Why: while the NEON unit works on four blocks, the integer ALUs of an
 * ARM core have nothing to do.  A fifth block computed there, its
 * instructions interleaved with the NEON ones, costs few extra cycles per
 * batch on a core that can issue both kinds together (the Cortex-A72 of a
 * Raspberry Pi 4 issues up to three instructions per cycle, with two NEON
 * and two integer pipes); this is what OpenSSL's ARM ChaCha20 code does.
 * The NEON half is chacha20_neon.c's (macros in chacha20_neon.h); the
 * scalar half is the RFC's quarter round on sixteen uint32_t locals.  The
 * compiler interleaves the two instruction streams, which are independent
 * until the output.  docs/bench.md has the estimate of what it buys
 * (nothing here can time an ARM core).
 *
 * Batches of two to four blocks go to the four-block NEON kernel, a lone
 * block to the portable code (the driver, chacha20_ref.c).
 *
 * Built with NEON flags for this file only; on 32-bit ARM only when the
 * kernel reports HWCAP_NEON (cpu.c), as chacha20_neon.c.
 *
 * Instruction counts per double round (gcc 12 -O2, the round loop): on
 * AArch64, 120 NEON and 96 integer instructions, nothing spilled (31
 * general-purpose registers hold the sixteen words); chacha20_neon.c has
 * the same 120 NEON instructions for four blocks.  On ARMv7 the sixteen
 * words do not fit beside the pointers in its 13 or so free registers:
 * 104 integer instructions and 62 loads and stores (34 of them already
 * in chacha20_neon.c, whose 16 q registers are too few as well).  Either
 * way the NEON instructions stay the bound, so the fifth block should
 * come almost free; the registry prefers this implementation on both, on
 * that estimate (docs/bench.md), not on a timing.
 *
 * Constant time: additions, XORs, rotations and shifts by constant counts,
 * permutes; branches only on the public block counts.  No table lookups.
 *
 * Vectors: every published ChaCha20 vector and the libsodium cross-check
 * run through this implementation (tests/check_cipher.c), in CI under
 * qemu-aarch64 and qemu-arm.
 */
#include "chacha20_neon.h"

/* Block 4 of the batch (counter input[12] + 4) from the scalar words. */
static void put_scalar_block(uint8_t *out, const uint8_t *in, size_t nxor, uint8_t *tail,
                             const uint32_t s[16])
{
    if (nxor == 5u) {
        uint8_t *o = out + 4u * CHACHA20_BLOCK_BYTES;
        const uint8_t *i = in + 4u * CHACHA20_BLOCK_BYTES;
        for (unsigned w = 0; w < 16u; w++) {
            mbsc_store32_le(o + 4u * w, mbsc_load32_le(i + 4u * w) ^ s[w]);
        }
    } else { /* nxor == 4, the fifth block is the tail */
        for (unsigned w = 0; w < 16u; w++) {
            mbsc_store32_le(tail + 4u * w, s[w]);
        }
    }
}

static void chacha20_kernel_neon_scalar(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                                        size_t nxor, uint8_t *tail)
{
    static const uint32_t lane_offsets[4] = {0, 1, 2, 3};
    uint32x4_t ctr, x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15;
    uint32_t s[16];

    if (nxor + (tail != NULL) < 5u) {
        mbsc_chacha20_kernel_neon(input, out, in, nxor, tail);
        return;
    }

    ctr = vaddq_u32(vdupq_n_u32(input[12]), vld1q_u32(lane_offsets));
    x0 = vdupq_n_u32(input[0]);
    x1 = vdupq_n_u32(input[1]);
    x2 = vdupq_n_u32(input[2]);
    x3 = vdupq_n_u32(input[3]);
    x4 = vdupq_n_u32(input[4]);
    x5 = vdupq_n_u32(input[5]);
    x6 = vdupq_n_u32(input[6]);
    x7 = vdupq_n_u32(input[7]);
    x8 = vdupq_n_u32(input[8]);
    x9 = vdupq_n_u32(input[9]);
    x10 = vdupq_n_u32(input[10]);
    x11 = vdupq_n_u32(input[11]);
    x12 = ctr;
    x13 = vdupq_n_u32(input[13]);
    x14 = vdupq_n_u32(input[14]);
    x15 = vdupq_n_u32(input[15]);
    {
        /* The fifth block in scalar locals (kept in registers where the
         * target has enough of them). */
        uint32_t s0 = input[0], s1 = input[1], s2 = input[2], s3 = input[3];
        uint32_t s4 = input[4], s5 = input[5], s6 = input[6], s7 = input[7];
        uint32_t s8 = input[8], s9 = input[9], s10 = input[10], s11 = input[11];
        uint32_t s12 = input[12] + 4u, s13 = input[13], s14 = input[14], s15 = input[15];

        for (int r = 0; r < 10; r++) {
            /* Columns, then diagonals; each NEON quarter round beside a
             * scalar one, so the two pipelines fill together. */
            QR(x0, x4, x8, x12);
            CHACHA20_QR(s0, s4, s8, s12);
            QR(x1, x5, x9, x13);
            CHACHA20_QR(s1, s5, s9, s13);
            QR(x2, x6, x10, x14);
            CHACHA20_QR(s2, s6, s10, s14);
            QR(x3, x7, x11, x15);
            CHACHA20_QR(s3, s7, s11, s15);
            QR(x0, x5, x10, x15);
            CHACHA20_QR(s0, s5, s10, s15);
            QR(x1, x6, x11, x12);
            CHACHA20_QR(s1, s6, s11, s12);
            QR(x2, x7, x8, x13);
            CHACHA20_QR(s2, s7, s8, s13);
            QR(x3, x4, x9, x14);
            CHACHA20_QR(s3, s4, s9, s14);
        }
        s[0] = s0 + input[0];
        s[1] = s1 + input[1];
        s[2] = s2 + input[2];
        s[3] = s3 + input[3];
        s[4] = s4 + input[4];
        s[5] = s5 + input[5];
        s[6] = s6 + input[6];
        s[7] = s7 + input[7];
        s[8] = s8 + input[8];
        s[9] = s9 + input[9];
        s[10] = s10 + input[10];
        s[11] = s11 + input[11];
        s[12] = s12 + input[12] + 4u;
        s[13] = s13 + input[13];
        s[14] = s14 + input[14];
        s[15] = s15 + input[15];
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
    put_scalar_block(out, in, nxor, tail, s);
    /* s[] is keystream in a stack array: wipe it (the q registers and the
     * scalar locals cannot be wiped from C). */
    mbsc_wipe(s, sizeof s);
}

static void chacha20_neon_scalar_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    mbsc_chacha20_xor_with(state, out, in, len, chacha20_kernel_neon_scalar, 5u);
}

const struct mbsc_cipher_impl mbsc_chacha20_neon_scalar = {
    .name = "neon_scalar",
    .cpu_needs = MBSC_CPU_NEON,
    .state_bytes = sizeof(struct chacha20_state),
    .init = mbsc_chacha20_init,
    .xor_stream = chacha20_neon_scalar_xor,
};
