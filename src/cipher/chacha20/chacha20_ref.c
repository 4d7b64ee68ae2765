/* SPDX-License-Identifier: ISC */
/*
 * chacha20_ref.c - ChaCha20, IETF variant, portable C11.
 *
 * Spec: RFC 8439 "ChaCha20 and Poly1305 for IETF Protocols", sections 2.1
 * (quarter round), 2.2 (state layout), 2.3 (block function) and 2.4
 * (encryption).  Key 32 bytes, nonce 12 bytes, 32-bit block counter starting
 * at 0, so keystream byte 64 is the first byte of block 1.
 * Vectors: tests/kat/chacha20.txt (RFC 8439 sections 2.3.2, 2.4.2, 2.6.2,
 * A.1, A.2, A.4, A.5, and draft-strombergson-chacha-test-vectors, whose
 * 8-byte-IV cases equal this stream with nonce 00000000 || iv8).
 *
 * Choices worth explaining:
 *
 * - Byte order.  Every byte/word conversion goes through mbsc_load32_le /
 *   mbsc_store32_le, never a pointer cast, so the code is right on big-endian
 *   (s390x) and on strict-alignment targets, and `in`/`out` need no alignment.
 *
 * - Bulk path.  Whole 64-byte blocks are XORed straight from `in` to `out`
 *   by chacha20_block_xor(): the sixteen working words are scalar locals
 *   (registers, no address taken), so no keystream block is ever written to
 *   memory in the bulk path and there is no stack array to wipe.  The block
 *   buffer in the state is used only for a trailing partial block, whose
 *   unused bytes serve the next call, so the keystream continues across
 *   calls of any length.  Reading each input word before writing the output
 *   word keeps out == in safe.
 *
 * - One driver for every implementation.  mbsc_chacha20_xor_with() (the
 *   buffer, the counter, batching) is shared by the vector implementations
 *   beside this file (chacha20.h); they only bring a kernel that computes
 *   several blocks at once.
 *
 * - Counter exhaustion.  RFC 8439 gives one (key, nonce) 2^32 blocks
 *   (256 GiB).  The counter is never wrapped: that would repeat block 0 and
 *   leak the XOR of two plaintexts.  When block 2^32-1 has been produced the
 *   `exhausted` flag is set and every later byte of output is zero (out is
 *   overwritten with zeros, not left equal to the plaintext).  The flag is
 *   checked once per block, not per byte.  Bytes of block 2^32-1 still held
 *   in the buffer are valid keystream and are served first.
 *
 * - Constant time.  The only branches are on lengths, the buffer position
 *   and the public block counter; there are no table lookups.
 *
 * - Wiping.  The registry wipes the whole state (sodium_memzero) when the
 *   stream is discarded; this file keeps no keystream or key material in
 *   stack arrays, so there is nothing else to wipe here.  (Register spills
 *   of scalar locals cannot be wiped from portable C.)
 */
#include "chacha20.h"

#include <string.h>

/*
 * The 20 rounds of RFC 8439 section 2.3 on sixteen scalar words, followed by
 * the feed-forward addition of the input words.  Declares x0..x15.
 */
#define CHACHA20_CORE(in)                                                                          \
    uint32_t x0 = (in)[0], x1 = (in)[1], x2 = (in)[2], x3 = (in)[3];                               \
    uint32_t x4 = (in)[4], x5 = (in)[5], x6 = (in)[6], x7 = (in)[7];                               \
    uint32_t x8 = (in)[8], x9 = (in)[9], x10 = (in)[10], x11 = (in)[11];                           \
    uint32_t x12 = (in)[12], x13 = (in)[13], x14 = (in)[14], x15 = (in)[15];                       \
    for (int round_ = 0; round_ < 10; round_++) {                                                  \
        CHACHA20_QR(x0, x4, x8, x12);                                                              \
        CHACHA20_QR(x1, x5, x9, x13);                                                              \
        CHACHA20_QR(x2, x6, x10, x14);                                                             \
        CHACHA20_QR(x3, x7, x11, x15);                                                             \
        CHACHA20_QR(x0, x5, x10, x15);                                                             \
        CHACHA20_QR(x1, x6, x11, x12);                                                             \
        CHACHA20_QR(x2, x7, x8, x13);                                                              \
        CHACHA20_QR(x3, x4, x9, x14);                                                              \
    }                                                                                              \
    x0 += (in)[0];                                                                                 \
    x1 += (in)[1];                                                                                 \
    x2 += (in)[2];                                                                                 \
    x3 += (in)[3];                                                                                 \
    x4 += (in)[4];                                                                                 \
    x5 += (in)[5];                                                                                 \
    x6 += (in)[6];                                                                                 \
    x7 += (in)[7];                                                                                 \
    x8 += (in)[8];                                                                                 \
    x9 += (in)[9];                                                                                 \
    x10 += (in)[10];                                                                               \
    x11 += (in)[11];                                                                               \
    x12 += (in)[12];                                                                               \
    x13 += (in)[13];                                                                               \
    x14 += (in)[14];                                                                               \
    x15 += (in)[15]

/* out[0..63] = in[0..63] XOR block(input); out == in allowed. */
static void chacha20_block_xor(const uint32_t input[16], uint8_t *out, const uint8_t *in)
{
    CHACHA20_CORE(input);
    /* Each input word is loaded before the output word is stored. */
    mbsc_store32_le(out + 0, mbsc_load32_le(in + 0) ^ x0);
    mbsc_store32_le(out + 4, mbsc_load32_le(in + 4) ^ x1);
    mbsc_store32_le(out + 8, mbsc_load32_le(in + 8) ^ x2);
    mbsc_store32_le(out + 12, mbsc_load32_le(in + 12) ^ x3);
    mbsc_store32_le(out + 16, mbsc_load32_le(in + 16) ^ x4);
    mbsc_store32_le(out + 20, mbsc_load32_le(in + 20) ^ x5);
    mbsc_store32_le(out + 24, mbsc_load32_le(in + 24) ^ x6);
    mbsc_store32_le(out + 28, mbsc_load32_le(in + 28) ^ x7);
    mbsc_store32_le(out + 32, mbsc_load32_le(in + 32) ^ x8);
    mbsc_store32_le(out + 36, mbsc_load32_le(in + 36) ^ x9);
    mbsc_store32_le(out + 40, mbsc_load32_le(in + 40) ^ x10);
    mbsc_store32_le(out + 44, mbsc_load32_le(in + 44) ^ x11);
    mbsc_store32_le(out + 48, mbsc_load32_le(in + 48) ^ x12);
    mbsc_store32_le(out + 52, mbsc_load32_le(in + 52) ^ x13);
    mbsc_store32_le(out + 56, mbsc_load32_le(in + 56) ^ x14);
    mbsc_store32_le(out + 60, mbsc_load32_le(in + 60) ^ x15);
}

/* out[0..63] = block(input), serialised little-endian (section 2.3). */
static void chacha20_block(const uint32_t input[16], uint8_t out[64])
{
    CHACHA20_CORE(input);
    mbsc_store32_le(out + 0, x0);
    mbsc_store32_le(out + 4, x1);
    mbsc_store32_le(out + 8, x2);
    mbsc_store32_le(out + 12, x3);
    mbsc_store32_le(out + 16, x4);
    mbsc_store32_le(out + 20, x5);
    mbsc_store32_le(out + 24, x6);
    mbsc_store32_le(out + 28, x7);
    mbsc_store32_le(out + 32, x8);
    mbsc_store32_le(out + 36, x9);
    mbsc_store32_le(out + 40, x10);
    mbsc_store32_le(out + 44, x11);
    mbsc_store32_le(out + 48, x12);
    mbsc_store32_le(out + 52, x13);
    mbsc_store32_le(out + 56, x14);
    mbsc_store32_le(out + 60, x15);
}

/* The portable kernel: one block (nxor + (tail != NULL) == 1). */
void mbsc_chacha20_kernel_ref(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                              size_t nxor, uint8_t *tail)
{
    if (nxor > 0u) {
        chacha20_block_xor(input, out, in);
    } else {
        chacha20_block(input, tail);
    }
}

void mbsc_chacha20_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len)
{
    struct chacha20_state *st = state;

    (void)iv_len; /* always 12: checked by the registry */
    /* "expand 32-byte k" read as four little-endian words. */
    st->input[0] = 0x61707865u;
    st->input[1] = 0x3320646eu;
    st->input[2] = 0x79622d32u;
    st->input[3] = 0x6b206574u;
    for (unsigned i = 0; i < 8u; i++) {
        st->input[4u + i] = mbsc_load32_le(key + 4u * i);
    }
    st->input[12] = 0u; /* block counter: the stream starts at block 0 */
    st->input[13] = mbsc_load32_le(iv + 0);
    st->input[14] = mbsc_load32_le(iv + 4);
    st->input[15] = mbsc_load32_le(iv + 8);
    memset(st->buf, 0, sizeof st->buf);
    st->pos = CHACHA20_BLOCK_BYTES;
    st->exhausted = 0u;
}

/*
 * out = in XOR ks for the partial blocks at either end of a call, eight
 * bytes at a time (a frame's keystream starts and ends inside a block, so
 * this runs on every frame): memcpy moves the words, no casts of byte
 * pointers, and XOR does not care about byte order.  out == in allowed.
 */
static void xor_partial(uint8_t *out, const uint8_t *in, const uint8_t *ks, size_t n)
{
    size_t i = 0;

    for (; i + 8u <= n; i += 8u) {
        uint64_t x, y;
        memcpy(&x, in + i, 8);
        memcpy(&y, ks + i, 8);
        x ^= y;
        memcpy(out + i, &x, 8);
    }
    for (; i < n; i++)
        out[i] = (uint8_t)(in[i] ^ ks[i]);
}

/*
 * Every branch below is on lengths, the buffer position and the public
 * block counter.
 */
void mbsc_chacha20_xor_kernels(struct chacha20_state *st, uint8_t *out, const uint8_t *in,
                               size_t len, chacha20_kernel *kernel, size_t lanes,
                               chacha20_kernel *single)
{
    if (len == 0u) {
        return; /* in may be NULL */
    }

    /* 1. Unused keystream left in the buffer by the previous call. */
    if (st->pos < CHACHA20_BLOCK_BYTES) {
        size_t avail = CHACHA20_BLOCK_BYTES - st->pos;
        size_t n = len < avail ? len : avail;
        xor_partial(out, in, st->buf + st->pos, n);
        st->pos += (uint32_t)n;
        out += n;
        in += n;
        len -= n;
    }

    /*
     * 2. Batches: whole blocks straight from in to out; the block of a
     * trailing partial one goes to the buffer, in the same batch.
     */
    while (len > 0u) {
        size_t full = len / CHACHA20_BLOCK_BYTES;
        size_t nxor = full < lanes ? full : lanes;
        size_t ntail = (full < lanes && len % CHACHA20_BLOCK_BYTES != 0u) ? 1u : 0u;
        /* Blocks left before the 32-bit counter would wrap (RFC 8439). */
        uint64_t room = ((uint64_t)1 << 32) - st->input[12];

        if (st->exhausted) {
            memset(out, 0, len);
            return;
        }
        if (nxor + ntail > room) {
            nxor = (size_t)room; /* room < lanes here */
            ntail = 0u;
        }
        if (nxor + ntail == 1u) {
            single(st->input, out, in, nxor, ntail ? st->buf : NULL);
        } else {
            kernel(st->input, out, in, nxor, ntail ? st->buf : NULL);
        }
        /* Never wrap the counter: that would repeat block 0. */
        if (nxor + ntail == room) {
            st->exhausted = 1u;
        }
        st->input[12] += (uint32_t)(nxor + ntail);
        out += nxor * CHACHA20_BLOCK_BYTES;
        in += nxor * CHACHA20_BLOCK_BYTES;
        len -= nxor * CHACHA20_BLOCK_BYTES;
        if (ntail) {
            xor_partial(out, in, st->buf, len);
            st->pos = (uint32_t)len;
            return;
        }
    }
}

void mbsc_chacha20_xor_with(struct chacha20_state *st, uint8_t *out, const uint8_t *in, size_t len,
                            chacha20_kernel *kernel, size_t lanes)
{
    mbsc_chacha20_xor_kernels(st, out, in, len, kernel, lanes, mbsc_chacha20_kernel_ref);
}

static void chacha20_ref_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    mbsc_chacha20_xor_with(state, out, in, len, mbsc_chacha20_kernel_ref, 1u);
}

const struct mbsc_cipher_impl mbsc_chacha20_ref = {
    .name = "ref",
    .cpu_needs = 0,
    .state_bytes = sizeof(struct chacha20_state),
    .init = mbsc_chacha20_init,
    .xor_stream = chacha20_ref_xor,
};
