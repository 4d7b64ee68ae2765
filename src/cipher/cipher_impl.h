/*
 * cipher_impl.h - the private side of the cipher descriptor table.
 *
 * Each implementation file defines one `const struct mbsc_cipher` and keeps
 * its state struct to itself; registry.c lists them and implements the
 * public API (argument checks, dispatch).  Implementations never allocate,
 * never do I/O and hold no global mutable state.
 */
#ifndef MBSC_CIPHER_IMPL_H
#define MBSC_CIPHER_IMPL_H

#include "internal.h"
#include "mbsc/cipher.h"

struct mbsc_cipher {
    const char *name;   /* public name, e.g. "chacha20" */
    unsigned id;        /* mbsc/1 wire id */
    size_t key_bytes;   /* the only accepted key length */
    size_t iv_bytes;    /* the accepted IV length */
    int iv_optional;    /* 1: iv_len 0 is accepted too (Rabbit key-only mode) */
    size_t state_bytes; /* sizeof the implementation's state */

    /*
     * Set up the state at keystream position 0.  The registry has already
     * checked every length; iv is NULL and iv_len 0 only if iv_optional.
     */
    void (*init)(void *state, const uint8_t *key, const uint8_t *iv,
                 size_t iv_len);

    /* out = in XOR next len keystream bytes; out == in allowed. */
    void (*xor_stream)(void *state, uint8_t *out, const uint8_t *in,
                       size_t len);
};

/* The implementations, one per file under src/cipher/<name>/. */
extern const struct mbsc_cipher mbsc_cipher_chacha20;
extern const struct mbsc_cipher mbsc_cipher_trivium;
extern const struct mbsc_cipher mbsc_cipher_rabbit;
extern const struct mbsc_cipher mbsc_cipher_enocoro128v2;

#endif /* MBSC_CIPHER_IMPL_H */
