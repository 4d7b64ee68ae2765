/* SPDX-License-Identifier: ISC */
/*
 * enocoro128v2_ct.c - Enocoro-128v2 stream cipher, portable constant-time C11.
 *
 * Specification: Hitachi, Ltd., "Pseudorandom Number Generator Enocoro",
 * Enocoro-128v2 specification and reference code (2010), standardised in
 * ISO/IEC 29192-3:2012 (lightweight stream ciphers).  128-bit key, 64-bit
 * IV.
 *
 * Vectors: tests/kat/enocoro128v2.txt - Hitachi's official test vectors
 * (enocoro_tv_20100202, Enocoro-128v2 TEST1..TEST10, 1024 bytes each).
 *
 * State: a 32-byte buffer b_0..b_31 and two state bytes a_0, a_1.  Each
 * round outputs a_1 and then applies rho (state update through four S-boxes
 * and the linear map L = [[1,1],[1,2]] over GF(2^8) mod 0x11d) and lambda
 * (buffer shift with three XOR feedbacks and the old a_0).
 *
 * Constant time, the S-box: the usual implementation reads a 256-byte table
 * at a secret index, which leaks the index through the cache.  Here s8 is
 * computed from its algebraic construction (the specification's S-box):
 *   y = s4 on both nibbles; z = [[1,4],[4,1]] y ^ 0xa5 over GF(2^4) mod
 *   x^4+x+1; s8 = rotl8(s4 on both nibbles of z, 1).
 * s4 is a 16-entry nibble table packed into one 64-bit constant and read
 * with a shift, (S4_PACKED >> 4n) & 0xf: a register operation whose timing
 * does not depend on the shift amount (barrel shifter; 32-bit targets use
 * two 32-bit shifts, see S4_AT).  Multiplication
 * by 4 in GF(2^4) and xtime in GF(2^8) are masks and shifts with the
 * reduction selected by an all-ones/all-zeros mask made from the top bit,
 * so no branch and no memory address depends on a key or state byte (the
 * products by 3 and 6 are by constants: shifts and adds).  The computed s8
 * was checked against the specification's table for all 256 inputs
 * and in every byte lane.
 *
 * Speed: the four S-boxes of a round are evaluated together, one byte lane
 * each of a 32-bit word (SWAR); only the 16 nibble look-ups are done one by
 * one.  The buffer is circular with a moving start index `top` (logical
 * b_i = b[(top + i) mod 32], top decreasing by one per round) so lambda
 * moves no bytes.  top depends only on the number of rounds, so indexing
 * by it is public.  The bulk path runs 32 rounds at a time, in passes of
 * eight unrolled rounds, so every buffer address is a public offset.
 */
#include "enocoro128v2.h"

/*
 * The round and the S-box are MBSC_ALWAYS_INLINE: they are too large for
 * GCC's -O2 inlining heuristics once the bulk loop uses them 32 times; left
 * alone it emits a call per output byte (about 15% slower).
 */

/* s4 = 1 3 9 a 5 e 7 2 d 0 c f 4 8 6 b, entry n in bits 4n..4n+3. */
#define S4_PACKED UINT64_C(0xB684FC0D27E5A931)

/*
 * s4 of the nibble at bit position k of w, left at position k.
 *
 * With 64-bit registers (SIZE_MAX as the proxy) this is one shift of the
 * packed constant.  On 32-bit targets the compiler emulates a variable
 * 64-bit shift with 32-bit instructions and may branch on the count (GCC
 * for i386 tests bit 5 of it and jumps), which would leak the secret
 * nibble; there the two 32-bit halves are shifted and the right one is
 * picked with a mask made from the nibble's top bit.
 */
#if SIZE_MAX > 0xFFFFFFFFu
#define S4_AT(w, k) ((uint32_t)((S4_PACKED >> (((w) >> (k)) & 0xfu) * 4u) & 0xfu) << (k))
#else
#define S4_LO       ((uint32_t)S4_PACKED)
#define S4_HI       ((uint32_t)(S4_PACKED >> 32))
#define S4_AT(w, k) (enocoro_s4_32(((w) >> (k)) & 0xfu) << (k))

MBSC_ALWAYS_INLINE uint32_t enocoro_s4_32(uint32_t n)
{
    uint32_t sh = (n & 7u) * 4u;
    uint32_t hi = 0u - (n >> 3); /* all ones for entries 8..15 */

    return ((S4_LO >> sh) ^ (((S4_LO ^ S4_HI) >> sh) & hi)) & 0xfu;
}
#endif

/* s4 on each of the eight nibbles of w, written out (GCC -O2 keeps such
 * loops rolled). */
MBSC_ALWAYS_INLINE uint32_t enocoro_s4x8(uint32_t w)
{
    return S4_AT(w, 0) | S4_AT(w, 4) | S4_AT(w, 8) | S4_AT(w, 12) | S4_AT(w, 16) | S4_AT(w, 20) |
           S4_AT(w, 24) | S4_AT(w, 28);
}

/*
 * s8 on each byte lane of x.
 *
 * Multiplication by 4 = x^2 in GF(2^4) mod x^4+x+1, for y = (y3 y2 y1 y0):
 * y*x^2 = y0 x^2 + y1 x^3 + y2 (x+1) + y3 (x^2+x), i.e. bits 0,1 shifted up
 * by two, plus 0011 if y2 and 0110 if y3 - done for all eight nibbles at
 * once with per-nibble masks (the products by 3 and 6 of 0/1 lanes cannot
 * carry into the next nibble).  Then z_h = y_h ^ 4 y_l ^ a and
 * z_l = 4 y_h ^ y_l ^ 5 is y XOR the nibble-swapped products XOR 0xa5.
 */
MBSC_ALWAYS_INLINE uint32_t enocoro_s8x4(uint32_t x)
{
    uint32_t y = enocoro_s4x8(x);
    uint32_t m = ((y << 2) & 0xCCCCCCCCu) ^ (((y >> 2) & 0x11111111u) * 3u) ^
                 (((y >> 3) & 0x11111111u) * 6u);
    uint32_t z = y ^ ((m << 4) & 0xF0F0F0F0u) ^ ((m >> 4) & 0x0F0F0F0Fu) ^ 0xA5A5A5A5u;
    uint32_t v = enocoro_s4x8(z);

    return ((v << 1) & 0xFEFEFEFEu) | ((v >> 7) & 0x01010101u);
}

/* v * 0x02 in GF(2^8) mod x^8+x^4+x^3+x^2+1 (0x11d), v < 256. */
static inline uint32_t enocoro_xtime(uint32_t v)
{
    return (v << 1) ^ (0x11Du & (0u - (v >> 7)));
}

/*
 * One round Next() at start index t: rho and lambda, both from the old
 * values.  The S-box inputs b_2, b_7, b_16, b_29 are read before lambda
 * overwrites b_2, b_7 and b_16.  In memory lambda is four in-place XORs:
 * the byte at logical position 2 becomes the new b_3 (and so on), and the
 * old b_31 becomes the new b_0 once top moves down by one.
 */
MBSC_ALWAYS_INLINE void enocoro_round(uint8_t b[32], unsigned t, uint32_t *a0, uint32_t *a1)
{
#define B(i) b[(t + (i)) & 31u]
    uint32_t s = enocoro_s8x4((uint32_t)B(2) | ((uint32_t)B(7) << 8) | ((uint32_t)B(16) << 16) |
                              ((uint32_t)B(29) << 24));
    uint32_t u0 = *a0 ^ (s & 0xFFu);
    uint32_t u1 = *a1 ^ ((s >> 8) & 0xFFu);

    B(2) ^= B(6);
    B(7) ^= B(15);
    B(16) ^= B(28);
    B(31) ^= (uint8_t)*a0;
#undef B
    *a0 = u0 ^ u1 ^ ((s >> 16) & 0xFFu);
    *a1 = u0 ^ enocoro_xtime(u1) ^ (s >> 24);
}

void mbsc_enocoro_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len)
{
    static const uint8_t c[8] = {0x66, 0xe9, 0x4b, 0xd4, 0xef, 0x8a, 0x2c, 0x3b};
    struct enocoro_state *st = state;
    uint32_t a0 = 0x88, a1 = 0x4c, ctr = 0x01;
    unsigned i, t = 0;

    (void)iv_len; /* always 8, checked by the registry */
    for (i = 0; i < 16; i++) {
        st->b[i] = key[i];
    }
    for (i = 0; i < 8; i++) {
        st->b[16 + i] = iv[i];
        st->b[24 + i] = c[i];
    }

    /* 96 rounds, each after injecting 0x02^round into b_31.  96 is a
     * multiple of 32, so top is back at 0 afterwards. */
    for (i = 0; i < 96; i++) {
        st->b[(t + 31) & 31u] ^= (uint8_t)ctr;
        ctr = enocoro_xtime(ctr);
        enocoro_round(st->b, t, &a0, &a1);
        t = (t - 1) & 31u;
    }
    st->a0 = (uint8_t)a0;
    st->a1 = (uint8_t)a1;
    st->top = (uint8_t)t;
}

void mbsc_enocoro_vec_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len)
{
    struct enocoro_vec_state *vs = state;

    mbsc_enocoro_init(&vs->s, key, iv, iv_len);
    vs->ready = 0;
}

/* n single rounds from the current top, out = in ^ z. */
void mbsc_enocoro_rounds(struct enocoro_state *st, uint8_t *out, const uint8_t *in, size_t n)
{
    uint32_t a0 = st->a0, a1 = st->a1;
    unsigned t = st->top;
    size_t i;

    for (i = 0; i < n; i++) {
        out[i] = (uint8_t)(in[i] ^ a1);
        enocoro_round(st->b, t, &a0, &a1);
        t = (t - 1) & 31u;
    }
    st->a0 = (uint8_t)a0;
    st->a1 = (uint8_t)a1;
    st->top = (uint8_t)t;
}

/*
 * 32 rounds from top = 0 (which is where they end again), out = in ^ z,
 * as four passes of eight unrolled rounds.  Within a pass every buffer
 * index is the pass's start (public) plus a constant.  Fully unrolling
 * the 32 rounds was about 15% faster but 24 KB of code; since the vector
 * implementations took over the bulk on x86-64 and ARM, this code mostly
 * serves targets without them, and 8 KB is the budget (docs/bench.md).
 */
static void enocoro_32(struct enocoro_state *st, uint8_t *out, const uint8_t *in)
{
    /* a_0, a_1 in locals: out may alias anything, so through a pointer
     * they would be reloaded after every output byte. */
    uint32_t a0 = st->a0, a1 = st->a1;

    for (unsigned q = 0; q < 32u; q += 8u) {
#define R(j)                                                                                       \
    out[q + (j)] = (uint8_t)(in[q + (j)] ^ a1);                                                    \
    enocoro_round(st->b, (32u - q - (j)) & 31u, &a0, &a1)
        R(0);
        R(1);
        R(2);
        R(3);
        R(4);
        R(5);
        R(6);
        R(7);
#undef R
    }
    st->a0 = (uint8_t)a0;
    st->a1 = (uint8_t)a1;
}

static void enocoro_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct enocoro_state *st = state;
    size_t head = st->top; /* rounds until top is 0 again */

    /* Every branch here depends on len and top only, both public. */
    if (len == 0) {
        return; /* also keeps NULL + 0 pointer arithmetic away */
    }
    if (head >= len) {
        mbsc_enocoro_rounds(st, out, in, len);
        return;
    }
    mbsc_enocoro_rounds(st, out, in, head);
    out += head;
    in += head;
    len -= head;
    for (; len >= 32; len -= 32, out += 32, in += 32) {
        enocoro_32(st, out, in);
    }
    mbsc_enocoro_rounds(st, out, in, len);
}

const struct mbsc_cipher_impl mbsc_enocoro128v2_ct = {
    .name = "ct",
    .cpu_needs = 0,
    .state_bytes = sizeof(struct enocoro_state),
    .init = mbsc_enocoro_init,
    .xor_stream = enocoro_xor,
};
