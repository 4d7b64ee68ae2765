/* SPDX-License-Identifier: ISC */
/*
 * trivium_64.c - Trivium, 80-bit key and IV, 64 clocks per step.
 *
 * Spec: C. De Canniere and B. Preneel, "Trivium Specifications" (eSTREAM
 * phase 3), sections 2.1 (key stream generation) and 2.2 (key and IV
 * setup), with the key/IV bit order and output bit order of the eSTREAM
 * phase-3 reference code trivium.c, which all published vectors use (the
 * conventions below).  Vectors: tests/kat/trivium.txt (eSTREAM
 * Trivium 80/80-bit test vectors, sets 1-6).
 *
 * Conventions (eSTREAM), with key bytes k[0..9] read as one 80-bit
 * little-endian integer K (likewise V for the IV):
 *   s_j      = bit (80 - j) of K, j = 1..80   (s_1 = MSB of k[9]);
 *   s_(93+j) = bit (80 - j) of V, j = 1..80;
 *   keystream bit z_1 is bit 0 (LSB) of output byte 0, z_8 its bit 7, ...
 *
 * Register layout.  Each register of length N (A: s_1..s_93, N = 93;
 * B: s_94..s_177, N = 84; C: s_178..s_288, N = 111) is kept as a 128-bit
 * value R = hi:lo (two uint64_t) whose bit (N - i) holds the register's
 * i-th cell (A's cell i is s_i, B's is s_(93+i), C's is s_(177+i)).  The
 * newest cell sits at the top and the oldest at bit 0, which buys three
 * things:
 *   - Loading is a shift: A = K << 13 (s_81..s_93 = 0 land in bits 0..12),
 *     B = V << 4 (s_174..s_177 = 0 in bits 0..3), C = 7 (s_286..s_288 = 1).
 *   - Over the next 64 clocks, tap cell k takes the values cell k, k-1, ...,
 *     k-63 of the current register, i.e. bits N-k .. N-k+63 of R: one
 *     64-bit window, TRIVIUM_TAP(R, N-k), whose bit t is the value at clock t.
 *     This is valid because the lowest taps (s_66, s_162, s_243) are
 *     cells 66, 69 and 66 of their registers: a bit inserted into cell 1
 *     is first read 65 or more clocks later, so no bit inserted during a
 *     step is read during the same step.
 *   - The 64 new bits t (bit t = value inserted at clock t) end up in cells
 *     64-t, i.e. bits N-64+t: the new register is (R >> 64) | (t << (N-64)),
 *     which is lo' = hi | t << (N-64) and hi' = t >> (128-N).
 * The keystream word z then has bit t = z_(t+1) of the step, which is the
 * eSTREAM LSB-first packing exactly: mbsc_store64_le(z) gives the 8 bytes.
 * hi never holds more than N-64 significant bits, so nothing needs masking.
 *
 * Initialisation is 1152 = 18 x 64 clocks, so it is 18 steps.
 *
 * Vector variant: the three registers in three 64-bit lanes of AVX2
 * registers (variable shifts for the taps, two lane permutes per step) was
 * measured against this code on the development machine (x86-64 with
 * AVX-512): 2.14-2.27 cycles/byte against 1.88-1.95 here, because every
 * step needs two cross-lane permutes on its critical path.  It was not
 * kept.  trivium_avx512.c (AVX-512 VBMI2: one concatenated shift per tap,
 * one permute per step) is faster and is chosen where the CPU has it.
 *
 * Scalar alternative measured and not kept: the registers as the words of
 * inserted bits (trivium_avx512.c's layout), unrolled by three steps so
 * that register renaming replaces the state update.  It needs 15 double
 * shifts per step instead of 12 (s_93, s_177 and s_288 stop being free),
 * and on Intel cores shrd issues on one port only, so it was 5-10 % slower
 * here (gcc 12 -O2), and spilled more.
 *
 * Constant time: shifts by constant amounts, AND/XOR only; the only
 * branches are on lengths and the public buffer position.
 * Byte order: only mbsc_load64_le / mbsc_store64_le, never pointer casts.
 * Wiping: the registry wipes the whole state; key and keystream otherwise
 * only live in scalar locals (registers), which portable C cannot wipe.
 */
#include "cipher/cipher_impl.h"

#include <string.h>

struct trivium_state {
    uint64_t a_lo, a_hi; /* A = s_1..s_93 as described above */
    uint64_t b_lo, b_hi; /* B = s_94..s_177 */
    uint64_t c_lo, c_hi; /* C = s_178..s_288 */
    uint8_t buf[8];      /* keystream of the last step; bytes [pos, 8) unused */
    uint32_t pos;        /* 8 = buffer empty */
};

MBSC_STATIC_ASSERT(sizeof(struct trivium_state) <= MBSC_STREAM_STATE_BYTES,
                   "trivium state must fit in mbsc_stream");
MBSC_STATIC_ASSERT(_Alignof(struct trivium_state) <= _Alignof(uint64_t),
                   "trivium state must not need more than uint64_t alignment");

/* Register lengths. */
#define TRIVIUM_NA 93u
#define TRIVIUM_NB 84u
#define TRIVIUM_NC 111u

/*
 * 64 successive values of the cell whose bit in R = hi:lo is at position s
 * (0 < s < 64): bits s .. s+63 of R.  Position 0 is plain lo; it is not
 * expressed through this macro because hi << 64 would be undefined.
 */
#if defined(__SIZEOF_INT128__) && defined(__x86_64__)
/* The same through a 128-bit shift: one shrd instead of shr, shl, or and a
 * mov, which the loop is short of issue slots for on x86-64. */
#define TRIVIUM_TAP(lo, hi, s) ((uint64_t)((((unsigned __int128)(hi) << 64) | (lo)) >> (s)))
#else
#define TRIVIUM_TAP(lo, hi, s) (((lo) >> (s)) | ((hi) << (64u - (s))))
#endif

/*
 * 64 clocks of Trivium on the registers *a_lo..*c_hi (updated in place);
 * returns the 64 keystream bits (bit t = output of clock t).  Called with
 * pointers to locals so that, inlined, everything stays in registers.
 * Tap positions are N - (cell index within the register):
 *   A: s_66 -> 27, s_69 -> 24, s_91 -> 2, s_92 -> 1, s_93 -> 0
 *   B: s_162 -> 15, s_171 -> 6, s_175 -> 2, s_176 -> 1, s_177 -> 0
 *   C: s_243 -> 45, s_264 -> 24, s_286 -> 2, s_287 -> 1, s_288 -> 0
 */
static inline uint64_t trivium_step(uint64_t *a_lo, uint64_t *a_hi, uint64_t *b_lo, uint64_t *b_hi,
                                    uint64_t *c_lo, uint64_t *c_hi)
{
    const uint64_t al = *a_lo, ah = *a_hi;
    const uint64_t bl = *b_lo, bh = *b_hi;
    const uint64_t cl = *c_lo, ch = *c_hi;

    /* The 64 values of each tap over this step (see the layout above). */
    const uint64_t s66 = TRIVIUM_TAP(al, ah, 27u);
    const uint64_t s69 = TRIVIUM_TAP(al, ah, 24u);
    const uint64_t s91 = TRIVIUM_TAP(al, ah, 2u);
    const uint64_t s92 = TRIVIUM_TAP(al, ah, 1u);
    const uint64_t s93 = al;
    const uint64_t s162 = TRIVIUM_TAP(bl, bh, 15u);
    const uint64_t s171 = TRIVIUM_TAP(bl, bh, 6u);
    const uint64_t s175 = TRIVIUM_TAP(bl, bh, 2u);
    const uint64_t s176 = TRIVIUM_TAP(bl, bh, 1u);
    const uint64_t s177 = bl;
    const uint64_t s243 = TRIVIUM_TAP(cl, ch, 45u);
    const uint64_t s264 = TRIVIUM_TAP(cl, ch, 24u);
    const uint64_t s286 = TRIVIUM_TAP(cl, ch, 2u);
    const uint64_t s287 = TRIVIUM_TAP(cl, ch, 1u);
    const uint64_t s288 = cl;
    uint64_t t1, t2, t3, z;

    t1 = s66 ^ s93;
    t2 = s162 ^ s177;
    t3 = s243 ^ s288;
    z = t1 ^ t2 ^ t3;
    t1 ^= (s91 & s92) ^ s171;
    t2 ^= (s175 & s176) ^ s264;
    t3 ^= (s286 & s287) ^ s69;

    /* R' = (R >> 64) | (new << (N - 64)); A gets t3, B gets t1, C gets t2. */
    *a_lo = ah | (t3 << (TRIVIUM_NA - 64u));
    *a_hi = t3 >> (128u - TRIVIUM_NA);
    *b_lo = bh | (t1 << (TRIVIUM_NB - 64u));
    *b_hi = t1 >> (128u - TRIVIUM_NB);
    *c_lo = ch | (t2 << (TRIVIUM_NC - 64u));
    *c_hi = t2 >> (128u - TRIVIUM_NC);
    return z;
}

static void trivium_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len)
{
    struct trivium_state *st = state;
    /* K and V as 80-bit little-endian integers: low 64 bits, high 16 bits. */
    uint64_t k_lo = mbsc_load64_le(key);
    uint64_t k_hi = (uint64_t)key[8] | ((uint64_t)key[9] << 8);
    uint64_t v_lo = mbsc_load64_le(iv);
    uint64_t v_hi = (uint64_t)iv[8] | ((uint64_t)iv[9] << 8);
    uint64_t a_lo, a_hi, b_lo, b_hi, c_lo, c_hi;

    (void)iv_len; /* always 10: checked by the registry */

    a_lo = k_lo << 13; /* A = K << 13 */
    a_hi = (k_lo >> 51) | (k_hi << 13);
    b_lo = v_lo << 4; /* B = V << 4 */
    b_hi = (v_lo >> 60) | (v_hi << 4);
    c_lo = 7u; /* s_286 = s_287 = s_288 = 1 */
    c_hi = 0u;

    for (unsigned i = 0; i < 18u; i++) { /* 4 x 288 = 18 x 64 clocks */
        (void)trivium_step(&a_lo, &a_hi, &b_lo, &b_hi, &c_lo, &c_hi);
    }

    st->a_lo = a_lo;
    st->a_hi = a_hi;
    st->b_lo = b_lo;
    st->b_hi = b_hi;
    st->c_lo = c_lo;
    st->c_hi = c_hi;
    memset(st->buf, 0, sizeof st->buf);
    st->pos = 8u;
}

static void trivium_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct trivium_state *st = state;
    uint64_t a_lo, a_hi, b_lo, b_hi, c_lo, c_hi;

    if (len == 0u) {
        return; /* in may be NULL */
    }

    /* 1. Unused keystream bytes from the previous call. */
    while (st->pos < 8u && len > 0u) {
        *out++ = (uint8_t)(*in++ ^ st->buf[st->pos++]);
        len--;
    }
    if (len == 0u) {
        return;
    }

    /*
     * The registers are copied to locals that never have their address
     * escape, so the compiler keeps them in registers: stores through the
     * uint8_t *out may alias the state and would otherwise force a reload
     * and write-back of the state on every step.
     */
    a_lo = st->a_lo;
    a_hi = st->a_hi;
    b_lo = st->b_lo;
    b_hi = st->b_hi;
    c_lo = st->c_lo;
    c_hi = st->c_hi;

    /* 2. Bulk: 64 clocks per 8 bytes, XORed as one little-endian word. */
    while (len >= 8u) {
        uint64_t z = trivium_step(&a_lo, &a_hi, &b_lo, &b_hi, &c_lo, &c_hi);
        mbsc_store64_le(out, mbsc_load64_le(in) ^ z);
        out += 8;
        in += 8;
        len -= 8u;
    }

    /* 3. Tail: buffer one more step, use len (< 8) bytes of it. */
    if (len > 0u) {
        uint64_t z = trivium_step(&a_lo, &a_hi, &b_lo, &b_hi, &c_lo, &c_hi);
        mbsc_store64_le(st->buf, z);
        for (size_t i = 0; i < len; i++) {
            out[i] = (uint8_t)(in[i] ^ st->buf[i]);
        }
        st->pos = (uint32_t)len;
    }

    st->a_lo = a_lo;
    st->a_hi = a_hi;
    st->b_lo = b_lo;
    st->b_hi = b_hi;
    st->c_lo = c_lo;
    st->c_hi = c_hi;
}

const struct mbsc_cipher_impl mbsc_trivium_64 = {
    .name = "64",
    .cpu_needs = 0,
    .state_bytes = sizeof(struct trivium_state),
    .init = trivium_init,
    .xor_stream = trivium_xor,
};
