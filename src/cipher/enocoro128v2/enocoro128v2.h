/*
 * enocoro128v2.h - what the Enocoro-128v2 implementations share: the state
 * layout, the key/IV setup and single rounds (enocoro128v2_ct.c), and the
 * bulk loop with the S-box evaluated 16 at a time in vector registers
 * (enocoro128v2_lookahead.h, included by the vector implementations).
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

/* Key and IV setup: 96 rounds of the constant-time portable code. */
void mbsc_enocoro_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len);

/* n rounds of the portable code from the current top, out = in ^ z. */
void mbsc_enocoro_rounds(struct enocoro_state *st, uint8_t *out, const uint8_t *in, size_t n);

#endif /* MBSC_ENOCORO128V2_H */
