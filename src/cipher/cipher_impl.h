/* SPDX-License-Identifier: ISC */
/*
 * cipher_impl.h - the private side of the cipher descriptor table.
 *
 * A cipher (struct mbsc_cipher: name, wire id, key and IV sizes) has one or
 * more implementations (struct mbsc_cipher_impl), each in its own file
 * under src/cipher/<name>/, named by technique (chacha20_ref.c,
 * chacha20_avx2.c, ...).  The portable one comes first in the list and
 * always works; the others name the CPU features they need, and are built
 * with the target flags for their file only, so the library still runs on
 * a CPU without them.  registry.c implements the public API (argument
 * checks, choice of implementation) on top of these tables.
 *
 * Implementations never allocate, never do I/O and hold no global mutable
 * state.  The implementations of one cipher need not share a state layout:
 * a stream keeps the implementation it was initialised with.
 */
#ifndef MBSC_CIPHER_IMPL_H
#define MBSC_CIPHER_IMPL_H

#include "cipher/cpu.h"
#include "internal.h"
#include "mbsc/cipher.h"

struct mbsc_cipher_impl {
    const char *name;   /* technique: "ref", "avx2", "neon", ... */
    unsigned cpu_needs; /* MBSC_CPU_* bits that must all be present */
    size_t state_bytes; /* sizeof the implementation's state */

    /*
     * Set up the state at keystream position 0.  The registry has already
     * checked every length; iv is NULL and iv_len 0 only if iv_optional.
     */
    void (*init)(void *state, const uint8_t *key, const uint8_t *iv, size_t iv_len);

    /* out = in XOR next len keystream bytes; out == in allowed. */
    void (*xor_stream)(void *state, uint8_t *out, const uint8_t *in, size_t len);
};

/* Most implementations a cipher may have (on any one target). */
#define MBSC_CIPHER_MAX_IMPLS 6u

struct mbsc_cipher {
    const char *name; /* public name, e.g. "chacha20" */
    unsigned id;      /* mbsc/1 wire id */
    size_t key_bytes; /* the only accepted key length */
    size_t iv_bytes;  /* the accepted IV length */
    int iv_optional;  /* 1: iv_len 0 is accepted too (Rabbit key-only mode) */
    /* Implementations built for this target, portable first, then in
     * increasing order of preference; NULL-terminated. */
    const struct mbsc_cipher_impl *impls[MBSC_CIPHER_MAX_IMPLS + 1];
};

/* The ciphers (registry.c). */
extern const struct mbsc_cipher mbsc_cipher_chacha20;
extern const struct mbsc_cipher mbsc_cipher_trivium;
extern const struct mbsc_cipher mbsc_cipher_rabbit;
extern const struct mbsc_cipher mbsc_cipher_enocoro128v2;

/*
 * Start a keystream in caller storage of state_cap bytes (8-byte aligned):
 * the checks and the choice of implementation of mbsc_stream_init(), for
 * holders of a state smaller than the public mbsc_stream (the record layer
 * keeps only what the largest implementation needs).  Sets *impl; returns
 * MBSC_OK, the errors of mbsc_stream_init(), or MBSC_ERR_CIPHER_IMPL when
 * the chosen implementation's state does not fit in state_cap.  The state
 * is wiped first and on every failure.
 */
int mbsc_cipher_start(const struct mbsc_cipher_impl **impl, void *state, size_t state_cap,
                      const mbsc_cipher *c, const uint8_t *key, size_t key_len, const uint8_t *iv,
                      size_t iv_len);

/*
 * The implementations, one per file.  Which exist depends on the target:
 * configure defines MBSC_SIMD_X86 (x86-64), MBSC_SIMD_AARCH64 or
 * MBSC_SIMD_ARM (32-bit ARM with NEON built per file) when it builds them.
 */
extern const struct mbsc_cipher_impl mbsc_chacha20_ref;
extern const struct mbsc_cipher_impl mbsc_chacha20_avx2;
extern const struct mbsc_cipher_impl mbsc_chacha20_avx512;
extern const struct mbsc_cipher_impl mbsc_chacha20_neon;
extern const struct mbsc_cipher_impl mbsc_chacha20_neon_scalar;
extern const struct mbsc_cipher_impl mbsc_trivium_64;
extern const struct mbsc_cipher_impl mbsc_trivium_avx512;
extern const struct mbsc_cipher_impl mbsc_rabbit_ref;
extern const struct mbsc_cipher_impl mbsc_rabbit_avx2;
extern const struct mbsc_cipher_impl mbsc_rabbit_avx512;
extern const struct mbsc_cipher_impl mbsc_rabbit_neon;
extern const struct mbsc_cipher_impl mbsc_enocoro128v2_ct;
extern const struct mbsc_cipher_impl mbsc_enocoro128v2_ssse3;
extern const struct mbsc_cipher_impl mbsc_enocoro128v2_vbmi;
extern const struct mbsc_cipher_impl mbsc_enocoro128v2_neon;

#endif /* MBSC_CIPHER_IMPL_H */
