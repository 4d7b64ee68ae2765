/* SPDX-License-Identifier: ISC */
/*
 * chacha20.h - what the ChaCha20 implementations share: the state layout,
 * the block-batch kernel interface, and the driver that turns kernels into
 * a byte stream (chacha20_ref.c).
 *
 * Every implementation uses the same state and the same driver; they
 * differ only in the kernel, which computes up to `lanes` consecutive
 * blocks at once (1 for the portable code, 4 for NEON, 72 for AVX2: eight
 * batches of 8 blocks in vectors and one scalar, 16 for AVX-512).  The driver hands a kernel
 * exactly the blocks the caller needs (the last call of a message asks for fewer than `lanes`), so
 * a short message costs its own blocks' share of a batch, never a wasted batch of keystream thrown
 * away, and one block alone goes to the scalar code unless the implementation has a faster
 * single-block kernel.  Kernels may compute fewer lanes for short batches (AVX-512 does).
 */
#ifndef MBSC_CHACHA20_H
#define MBSC_CHACHA20_H

#include "cipher/cipher_impl.h"

#define CHACHA20_BLOCK_BYTES 64u

/*
 * The quarter round of RFC 8439 section 2.1 on scalar words: the portable
 * code, and the block the AVX2 and NEON kernels compute in general-purpose
 * registers beside their vector blocks.
 */
#define CHACHA20_QR(a, b, c, d)                                                                    \
    do {                                                                                           \
        a += b;                                                                                    \
        d = mbsc_rotl32(d ^ a, 16);                                                                \
        c += d;                                                                                    \
        b = mbsc_rotl32(b ^ c, 12);                                                                \
        a += b;                                                                                    \
        d = mbsc_rotl32(d ^ a, 8);                                                                 \
        c += d;                                                                                    \
        b = mbsc_rotl32(b ^ c, 7);                                                                 \
    } while (0)

struct chacha20_state {
    /* Words 0..15 of RFC 8439 section 2.3; word 12 is the counter of the
     * next block to be produced. */
    uint32_t input[16];
    /* Keystream of the last partially used block; bytes [pos, 64) unused. */
    uint8_t buf[CHACHA20_BLOCK_BYTES];
    uint32_t pos;       /* 64 = buffer empty */
    uint32_t exhausted; /* 1 once block 2^32-1 has been produced */
};

MBSC_STATIC_ASSERT(sizeof(struct chacha20_state) <= MBSC_STREAM_STATE_BYTES,
                   "chacha20 state must fit in mbsc_stream");
MBSC_STATIC_ASSERT(_Alignof(struct chacha20_state) <= _Alignof(uint64_t),
                   "chacha20 state must not need more than uint64_t alignment");

/*
 * A kernel: the blocks with counters input[12], input[12] + 1, ... (no
 * wrap: the driver guarantees input[12] + n - 1 < 2^32).  The first nxor
 * are XORed from in to out (64 bytes each; out == in allowed); if tail is
 * not NULL, one more block is written to tail[0..63] as raw keystream.
 * nxor + (tail != NULL) is between 1 and the kernel's lane count.  The
 * kernel does not advance input[12]; the driver does.
 */
typedef void chacha20_kernel(const uint32_t input[16], uint8_t *out, const uint8_t *in, size_t nxor,
                             uint8_t *tail);

/* The portable one-block kernel (chacha20_ref.c). */
void mbsc_chacha20_kernel_ref(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                              size_t nxor, uint8_t *tail);
/* AVX2: batches of 8 vector lanes and a ninth, scalar block (chacha20_avx2.c). */
void mbsc_chacha20_kernel_avx2(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                               size_t nxor, uint8_t *tail);

/* Key and IV setup (RFC 8439 section 2.3), shared by all implementations. */
void mbsc_chacha20_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len);

/*
 * out = in XOR the next len keystream bytes, with batches of up to `lanes`
 * blocks from kernel (and single blocks from the portable kernel).
 */
void mbsc_chacha20_xor_with(struct chacha20_state *st, uint8_t *out, const uint8_t *in, size_t len,
                            chacha20_kernel *kernel, size_t lanes);

/* The same, with single blocks from `single` instead of the portable kernel. */
void mbsc_chacha20_xor_kernels(struct chacha20_state *st, uint8_t *out, const uint8_t *in,
                               size_t len, chacha20_kernel *kernel, size_t lanes,
                               chacha20_kernel *single);

#endif /* MBSC_CHACHA20_H */
