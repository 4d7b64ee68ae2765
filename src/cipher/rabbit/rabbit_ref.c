/* SPDX-License-Identifier: ISC */
/*
 * rabbit_ref.c - Rabbit stream cipher, portable C11 reference implementation.
 *
 * Specification: RFC 4503, "A Description of the Rabbit Stream Cipher
 * Algorithm" (Boesgaard, Vesterager, Zenner, May 2006): section 2.3 key
 * setup, 2.4 IV setup, 2.5 next-state function and counter system, 2.6
 * extraction.  128-bit key, 64-bit IV; an IV length of 0 selects the RFC's
 * key-only mode (RFC 4503 Appendix A.1), which is not the same as an
 * all-zero IV.
 *
 * Vectors: tests/kat/rabbit.txt - RFC 4503 Appendix A.1/A.2 (byte-reversed
 * to byte arrays, see that file's header) and the ECRYPT eSTREAM "verified"
 * Rabbit vectors (Profile S3, 128-bit key, 64-bit IV).
 *
 * Byte order: the RFC prints key, IV and output blocks as big-endian octet
 * strings, but the cipher consumes the key and IV as little-endian integers
 * and emits each 128-bit block S least significant octet first.  With byte
 * arrays that is simply: key, IV and keystream words are all little-endian
 * 32-bit words (mbsc_load32_le / mbsc_store32_le), on every host.
 *
 * Constant time: everything is 32-bit additions, XORs, fixed rotations and
 * one 32x32->64-bit multiplication per state word in g().  The counter
 * carry is taken from bit 32 of a 64-bit sum instead of a comparison, so no
 * branch and no memory index depends on the key or the state.  (The
 * multiply is constant time on every target we build for: x86-64, AArch64,
 * s390x, and ARMv7-A's UMULL; it is not on some microcontrollers such as
 * Cortex-M0 without a single-cycle multiplier.)
 *
 * Layout: each call of rabbit_next() yields one 16-byte block.  Whole blocks
 * are XORed straight from registers into the output; only a trailing
 * partial block is written to ks[] and consumed by later calls, so many
 * small calls give the same bytes as one large one.
 *
 * Secrets on the stack: the key words k[] of the key setup are wiped.  The
 * per-block temporaries (g0..g7, s[]) are scalars the compiler keeps in
 * registers; they are not wiped, to keep the hot path lean.
 */
#include "rabbit.h"

/*
 * rabbit_next() is MBSC_ALWAYS_INLINE: it has several call sites and is too
 * large for GCC's -O2 inlining heuristics, which then cost a call per block
 * (about 12% of throughput).
 */

/* g(u, v) of RFC 4503 2.5: square of the 32-bit sum, high XOR low half. */
static inline uint32_t rabbit_g(uint32_t u, uint32_t v)
{
    uint32_t s = u + v;
    uint64_t sq = (uint64_t)s * s;

    return (uint32_t)sq ^ (uint32_t)(sq >> 32);
}

/*
 * One counter step (RFC 4503 2.5): Cj = Cj + Aj + b mod 2^32, with the
 * carry b read from bit 32 of a 64-bit sum - arithmetic, not a comparison.
 */
static inline uint32_t rabbit_ctr(uint32_t *c, uint32_t a, uint32_t b)
{
    uint64_t t = (uint64_t)*c + a + b;

    *c = (uint32_t)t;
    return (uint32_t)(t >> 32);
}

/*
 * One iteration of the system: counter update, then next-state function
 * (RFC 4503 2.5).  The counter constants A0..A7 cycle through three values.
 * Written out rather than looped: GCC -O2 keeps short loops rolled, which
 * halved its throughput here.
 */
MBSC_ALWAYS_INLINE void rabbit_next(uint32_t x[8], uint32_t c[8], uint32_t *carry)
{
    uint32_t b = *carry;
    uint32_t g0, g1, g2, g3, g4, g5, g6, g7;

    b = rabbit_ctr(&c[0], 0x4D34D34Du, b);
    b = rabbit_ctr(&c[1], 0xD34D34D3u, b);
    b = rabbit_ctr(&c[2], 0x34D34D34u, b);
    b = rabbit_ctr(&c[3], 0x4D34D34Du, b);
    b = rabbit_ctr(&c[4], 0xD34D34D3u, b);
    b = rabbit_ctr(&c[5], 0x34D34D34u, b);
    b = rabbit_ctr(&c[6], 0x4D34D34Du, b);
    *carry = rabbit_ctr(&c[7], 0xD34D34D3u, b);

    g0 = rabbit_g(x[0], c[0]);
    g1 = rabbit_g(x[1], c[1]);
    g2 = rabbit_g(x[2], c[2]);
    g3 = rabbit_g(x[3], c[3]);
    g4 = rabbit_g(x[4], c[4]);
    g5 = rabbit_g(x[5], c[5]);
    g6 = rabbit_g(x[6], c[6]);
    g7 = rabbit_g(x[7], c[7]);

    x[0] = g0 + mbsc_rotl32(g7, 16) + mbsc_rotl32(g6, 16);
    x[1] = g1 + mbsc_rotl32(g0, 8) + g7;
    x[2] = g2 + mbsc_rotl32(g1, 16) + mbsc_rotl32(g0, 16);
    x[3] = g3 + mbsc_rotl32(g2, 8) + g1;
    x[4] = g4 + mbsc_rotl32(g3, 16) + mbsc_rotl32(g2, 16);
    x[5] = g5 + mbsc_rotl32(g4, 8) + g3;
    x[6] = g6 + mbsc_rotl32(g5, 16) + mbsc_rotl32(g4, 16);
    x[7] = g7 + mbsc_rotl32(g6, 8) + g5;
}

/*
 * Extraction (RFC 4503 2.6) as four little-endian 32-bit words:
 * S[31..0] = X0 ^ (X5 >> 16) ^ (X3 << 16) combines lo16(X0) ^ hi16(X5) in
 * the low half with hi16(X0) ^ lo16(X3) in the high half, and so on.
 */
static inline void rabbit_extract(const uint32_t x[8], uint32_t s[4])
{
    s[0] = x[0] ^ (x[5] >> 16) ^ (x[3] << 16);
    s[1] = x[2] ^ (x[7] >> 16) ^ (x[5] << 16);
    s[2] = x[4] ^ (x[1] >> 16) ^ (x[7] << 16);
    s[3] = x[6] ^ (x[3] >> 16) ^ (x[1] << 16);
}

void mbsc_rabbit_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len)
{
    struct rabbit_state *st = state;
    uint32_t k[4];
    unsigned j;

    /*
     * Key setup (RFC 4503 2.3).  The sub-keys K0..K7 are the 16-bit halves
     * of the little-endian key words: k[i] = K(2i+1) || K(2i).  Then
     * X(2i) = K(2i+1) || K(2i) = k[i], the odd X and all C are re-pairings
     * of neighbouring halves, written out below.
     */
    for (j = 0; j < 4; j++) {
        k[j] = mbsc_load32_le(key + 4 * j);
    }
    st->x[0] = k[0];
    st->x[2] = k[1];
    st->x[4] = k[2];
    st->x[6] = k[3];
    st->x[1] = (k[3] << 16) | (k[2] >> 16);             /* K6 || K5 */
    st->x[3] = (k[0] << 16) | (k[3] >> 16);             /* K0 || K7 */
    st->x[5] = (k[1] << 16) | (k[0] >> 16);             /* K2 || K1 */
    st->x[7] = (k[2] << 16) | (k[1] >> 16);             /* K4 || K3 */
    st->c[0] = mbsc_rotl32(k[2], 16);                   /* K4 || K5 */
    st->c[2] = mbsc_rotl32(k[3], 16);                   /* K6 || K7 */
    st->c[4] = mbsc_rotl32(k[0], 16);                   /* K0 || K1 */
    st->c[6] = mbsc_rotl32(k[1], 16);                   /* K2 || K3 */
    st->c[1] = (k[0] & 0xFFFF0000u) | (k[1] & 0xFFFFu); /* K1 || K2 */
    st->c[3] = (k[1] & 0xFFFF0000u) | (k[2] & 0xFFFFu); /* K3 || K4 */
    st->c[5] = (k[2] & 0xFFFF0000u) | (k[3] & 0xFFFFu); /* K5 || K6 */
    st->c[7] = (k[3] & 0xFFFF0000u) | (k[0] & 0xFFFFu); /* K7 || K0 */
    st->carry = 0;

    for (j = 0; j < 4; j++) {
        rabbit_next(st->x, st->c, &st->carry);
    }
    for (j = 0; j < 8; j++) {
        st->c[j] ^= st->x[(j + 4) & 7];
    }

    /*
     * IV setup (RFC 4503 2.4), applied directly to the master state: each
     * mbsc stream is initialised with key and IV together, so the master
     * state is never needed again.  iv_len is public (0 or 8, checked by
     * the registry), so branching on it leaks nothing.
     */
    if (iv_len != 0) {
        uint32_t i0 = mbsc_load32_le(iv);
        uint32_t i2 = mbsc_load32_le(iv + 4);
        uint32_t i1 = (i2 & 0xFFFF0000u) | (i0 >> 16);
        uint32_t i3 = (i2 << 16) | (i0 & 0xFFFFu);

        st->c[0] ^= i0;
        st->c[1] ^= i1;
        st->c[2] ^= i2;
        st->c[3] ^= i3;
        st->c[4] ^= i0;
        st->c[5] ^= i1;
        st->c[6] ^= i2;
        st->c[7] ^= i3;
        for (j = 0; j < 4; j++) {
            rabbit_next(st->x, st->c, &st->carry);
        }
    }

    /* Nothing buffered; drop any keystream left from a previous key. */
    st->used = sizeof st->ks;
    mbsc_wipe(st->ks, sizeof st->ks);
    mbsc_wipe(k, sizeof k);
}

static void rabbit_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct rabbit_state *st = state;
    uint32_t s[4];
    size_t i = 0;

    /* Also keeps NULL + 0 pointer arithmetic out of the picture. */
    if (len == 0) {
        return;
    }

    /* 1. Bytes left over from the previous call's last block. */
    while (st->used < sizeof st->ks && i < len) {
        out[i] = (uint8_t)(in[i] ^ st->ks[st->used++]);
        i++;
    }

    /* 2. Whole blocks, XORed as four little-endian words. */
    for (; len - i >= 16; i += 16) {
        rabbit_next(st->x, st->c, &st->carry);
        rabbit_extract(st->x, s);
        mbsc_store32_le(out + i, mbsc_load32_le(in + i) ^ s[0]);
        mbsc_store32_le(out + i + 4, mbsc_load32_le(in + i + 4) ^ s[1]);
        mbsc_store32_le(out + i + 8, mbsc_load32_le(in + i + 8) ^ s[2]);
        mbsc_store32_le(out + i + 12, mbsc_load32_le(in + i + 12) ^ s[3]);
    }

    /* 3. A partial last block: keep its unused bytes for the next call. */
    if (i < len) {
        rabbit_next(st->x, st->c, &st->carry);
        rabbit_extract(st->x, s);
        mbsc_store32_le(st->ks, s[0]);
        mbsc_store32_le(st->ks + 4, s[1]);
        mbsc_store32_le(st->ks + 8, s[2]);
        mbsc_store32_le(st->ks + 12, s[3]);
        st->used = 0;
        while (i < len) {
            out[i] = (uint8_t)(in[i] ^ st->ks[st->used++]);
            i++;
        }
    }
}

const struct mbsc_cipher_impl mbsc_rabbit_ref = {
    .name = "ref",
    .cpu_needs = 0,
    .state_bytes = sizeof(struct rabbit_state),
    .init = mbsc_rabbit_init,
    .xor_stream = rabbit_xor,
};
