/* SPDX-License-Identifier: ISC */
/*
 * rabbit.h - what the Rabbit implementations share: the state layout and
 * the key/IV setup (rabbit_ref.c).
 */
#ifndef MBSC_RABBIT_H
#define MBSC_RABBIT_H

#include "cipher/cipher_impl.h"

struct rabbit_state {
    uint32_t x[8];  /* state variables X0..X7 */
    uint32_t c[8];  /* counter variables C0..C7 */
    uint32_t carry; /* counter carry bit b (0 or 1) */
    uint32_t used;  /* bytes of ks[] already consumed; 16 = none buffered */
    uint8_t ks[16]; /* keystream of the current, partly used block */
};

MBSC_STATIC_ASSERT(sizeof(struct rabbit_state) <= MBSC_STREAM_STATE_BYTES,
                   "Rabbit state must fit in mbsc_stream");

/* Key setup and IV setup (RFC 4503 2.3, 2.4), portable. */
void mbsc_rabbit_init(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len);

#endif /* MBSC_RABBIT_H */
