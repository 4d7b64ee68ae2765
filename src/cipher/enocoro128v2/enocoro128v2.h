/* SPDX-License-Identifier: ISC */
/*
 * enocoro128v2.h - what the Enocoro-128v2 implementations share: the state
 * layout, and the key/IV setup and single rounds (enocoro128v2_ct.c).
 *
 * The vector implementations (enocoro128v2_ssse3.c, enocoro128v2_vbmi.c,
 * enocoro128v2_neon.c) run four rounds at a time with the sixteen S-boxes
 * of those rounds evaluated together in a register.  Why the inputs of four rounds are
 * known in advance (notation of enocoro128v2_ct.c; the buffer moves up by
 * one place per round and lambda feeds back into places 0, 3, 8 and 17):
 * the S-box inputs b_2, b_7, b_16, b_29 of round t+k (k = 0..3) are the
 * bytes at logical places 2-k, 7-k, 16-k, 29-k before round t, because in
 * those k rounds nothing is written to them (the places written, 2, 7, 16
 * and 31 at round t+m, are never the place read at round t+k for m < k),
 * except b_(-1) = b_31, which round t itself turns into b_31 ^ a_0.  So
 * with the a_0 of round t, all sixteen are there:
 *
 *   b_(-1..2), b_(4..7), b_(13..16), b_(26..29)   (b_(-1) ^= a_0)
 */
#ifndef MBSC_ENOCORO128V2_H
#define MBSC_ENOCORO128V2_H

#include "cipher/cipher_impl.h"

struct enocoro_state {
    uint8_t b[32]; /* buffer: logical b_i is b[(top + i) & 31] */
    uint8_t a0;    /* state a_0 */
    uint8_t a1;    /* state a_1, the next keystream byte */
    uint8_t top;   /* public round position, 0..31 */
};

MBSC_STATIC_ASSERT(sizeof(struct enocoro_state) <= MBSC_STREAM_STATE_BYTES,
                   "Enocoro-128v2 state must fit in mbsc_stream");

/*
 * The state of the x86-64 vector implementations (enocoro128v2_ssse3.c,
 * enocoro128v2_vbmi.c): the portable state, and what the last call left
 * ready for the next.  They evaluate the next group's S-boxes at the end
 * of every group, so a call that ends on a group boundary keeps the next
 * group's rho constants, and the next call starts its first round at once
 * instead of waiting for a gather and an S-box evaluation (a seal makes
 * two calls: the one-time key, then the payload).  ready depends only on
 * the lengths of the calls, never on the data; the constants are as
 * secret as the state and are wiped with it (the registry and the record
 * layer wipe the whole state).
 */
struct enocoro_vec_state {
    struct enocoro_state s; /* first: mbsc_enocoro_init and _rounds use it */
    uint8_t ready;          /* 1: wc and vc are the next group's, top is 0 */
    uint8_t wc[16], vc[16]; /* rho's constants of the next four rounds */
};

MBSC_STATIC_ASSERT(sizeof(struct enocoro_vec_state) <= MBSC_STREAM_STATE_BYTES,
                   "Enocoro-128v2 vector state must fit in mbsc_stream");

/* Key and IV setup into a struct enocoro_vec_state (nothing ready). */
void mbsc_enocoro_vec_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len);

/* Key and IV setup: 96 rounds of the constant-time portable code. */
void mbsc_enocoro_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len);

/* n rounds of the portable code from the current top, out = in ^ z. */
void mbsc_enocoro_rounds(struct enocoro_state *st, uint8_t *out, const uint8_t *in, size_t n);

#endif /* MBSC_ENOCORO128V2_H */
