/* SPDX-License-Identifier: ISC */
/*
 * mbsc/cipher.h - the four stream ciphers behind one descriptor table.
 *
 * WARNING: a raw stream cipher gives confidentiality only.  Nothing here
 * authenticates data, and reusing a (key, IV) pair reveals the XOR of the
 * two plaintexts.  Use the session API for traffic; use this API to build
 * protocols, to test and to benchmark.
 *
 * Ciphers (wire ids are fixed by the mbsc/1 protocol):
 *
 *   id  name            key  IV   standard
 *    1  "chacha20"      32   12   RFC 8439 (block counter starts at 0)
 *    2  "trivium"       10   10   eSTREAM / ISO/IEC 29192-3, eSTREAM bit order
 *    3  "rabbit"        16   8    RFC 4503 (IV length 0 = key-only mode)
 *    4  "enocoro128v2"  16   8    Hitachi Enocoro-128v2 / ISO/IEC 29192-3
 *
 * Descriptors are static and immutable: they need no freeing and can be
 * shared between threads.  An mbsc_stream belongs to its caller, needs no
 * allocation, and must not be used by two threads at once.  No function
 * here branches or indexes memory on key or state bytes.
 *
 * Implementations.  Each cipher has a portable implementation ("ref",
 * "64", "ct") and, depending on the CPU, vector ones ("avx2", "avx512",
 * "ssse3", "neon", ...).  All produce the same keystream.  The best one the
 * CPU supports is chosen once, when the first stream of that cipher is
 * initialised (cpuid/xgetbv on x86-64, getauxval(AT_HWCAP) on ARM); a
 * stream keeps the implementation it was initialised with, so choosing
 * costs nothing per call.  To compare or test them, list them with
 * mbsc_cipher_impl_count() / mbsc_cipher_impl_name() and force one with
 * mbsc_cipher_force_impl() or the environment variable
 *
 *   MBSC_CIPHER_IMPL=chacha20:avx2,enocoro128v2:ct
 *
 * (read once, at the first stream initialisation; the API call overrides
 * it).  Naming an implementation this build lacks, or one the CPU cannot
 * run, is an error (MBSC_ERR_CIPHER_IMPL), never a crash.
 */
#ifndef MBSC_CIPHER_H
#define MBSC_CIPHER_H

#include <stddef.h>
#include <stdint.h>

#include "mbsc/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Descriptor of one cipher; contents private. */
typedef struct mbsc_cipher mbsc_cipher;

/* Wire ids. */
#define MBSC_CIPHER_CHACHA20     1u
#define MBSC_CIPHER_TRIVIUM      2u
#define MBSC_CIPHER_RABBIT       3u
#define MBSC_CIPHER_ENOCORO128V2 4u
#define MBSC_CIPHER_COUNT        4u

/* Largest key and IV of any cipher, for callers sizing buffers. */
#define MBSC_CIPHER_MAX_KEY_BYTES 32u
#define MBSC_CIPHER_MAX_IV_BYTES  12u

/*
 * Bytes reserved for the state of any cipher.  Part of the ABI: every
 * implementation checks at compile time that its state fits.
 */
#define MBSC_STREAM_STATE_BYTES 512u

/*
 * Keystream state, allocated by the caller (on the stack, in a struct).
 * Its fields are private: use only the functions below.
 */
struct mbsc_cipher_impl;

typedef struct mbsc_stream {
    const mbsc_cipher *cipher_;           /* private: NULL until initialised */
    const struct mbsc_cipher_impl *impl_; /* private: the implementation */
    union {
        uint64_t align_;
        uint8_t bytes_[MBSC_STREAM_STATE_BYTES];
    } state_; /* private */
} mbsc_stream;

/* Look up "chacha20", "trivium", "rabbit" or "enocoro128v2"; NULL if unknown. */
MBSC_API const mbsc_cipher *mbsc_cipher_by_name(const char *name);

/* Look up a wire id 1..4; NULL if unknown. */
MBSC_API const mbsc_cipher *mbsc_cipher_by_id(unsigned id);

/* Properties of a descriptor.  c must not be NULL. */
MBSC_API const char *mbsc_cipher_name(const mbsc_cipher *c);
MBSC_API unsigned mbsc_cipher_id(const mbsc_cipher *c);
MBSC_API size_t mbsc_cipher_key_bytes(const mbsc_cipher *c);
MBSC_API size_t mbsc_cipher_iv_bytes(const mbsc_cipher *c);

/*
 * Bytes of the state actually used by cipher c (at most
 * MBSC_STREAM_STATE_BYTES): the largest of its implementations' states.
 * For footprint reports.
 */
MBSC_API size_t mbsc_cipher_state_bytes(const mbsc_cipher *c);

/*
 * Implementations of cipher c built into this library: indices 0 to
 * mbsc_cipher_impl_count(c) - 1, the portable one at index 0, the others
 * in increasing order of preference.  mbsc_cipher_impl_name() returns NULL
 * for an index out of range.  c must not be NULL.
 */
MBSC_API size_t mbsc_cipher_impl_count(const mbsc_cipher *c);
MBSC_API const char *mbsc_cipher_impl_name(const mbsc_cipher *c, size_t i);

/* 1 if this CPU (and OS) can run implementation i of c, else 0. */
MBSC_API int mbsc_cipher_impl_supported(const mbsc_cipher *c, size_t i);

/*
 * Make later mbsc_stream_init() calls for cipher c use the implementation
 * called name (streams already initialised keep theirs).  name NULL goes
 * back to the default: MBSC_CIPHER_IMPL if it names one for c, else the
 * best one the CPU supports.  Thread-safe.
 *
 * Returns MBSC_OK, MBSC_ERR_INVALID_ARG (c NULL), or MBSC_ERR_CIPHER_IMPL
 * (no implementation of that name in this build, or the CPU lacks the
 * instructions it needs; the previous choice then stays).
 */
MBSC_API MBSC_WUR int mbsc_cipher_force_impl(const mbsc_cipher *c, const char *name);

/*
 * Name of the implementation the next mbsc_stream_init() for c will use,
 * or NULL when MBSC_CIPHER_IMPL names one that cannot be used (init then
 * fails with MBSC_ERR_CIPHER_IMPL).
 */
MBSC_API const char *mbsc_cipher_impl_selected(const mbsc_cipher *c);

/* Name of the implementation st runs, or NULL if st is not initialised. */
MBSC_API const char *mbsc_stream_impl_name(const mbsc_stream *st);

/*
 * Set up st for cipher c with the given key and IV, at keystream position 0.
 * key_len must equal mbsc_cipher_key_bytes(c) and iv_len
 * mbsc_cipher_iv_bytes(c); Rabbit also accepts iv_len 0 (RFC 4503 key-only
 * mode, iv may then be NULL).  The stream uses the implementation that
 * mbsc_cipher_impl_selected(c) names at this moment.
 *
 * Returns MBSC_OK, or MBSC_ERR_INVALID_ARG (st, c or key NULL, or iv NULL
 * with a non-zero iv_len), MBSC_ERR_KEY_LENGTH, MBSC_ERR_IV_LENGTH,
 * MBSC_ERR_CIPHER_IMPL (MBSC_CIPHER_IMPL names an implementation that is
 * unknown or that this CPU cannot run).  On failure st is left wiped and
 * unusable.
 */
MBSC_API MBSC_WUR int mbsc_stream_init(mbsc_stream *st, const mbsc_cipher *c, const uint8_t *key,
                                       size_t key_len, const uint8_t *iv, size_t iv_len);

/*
 * out = in XOR the next len keystream bytes.  The keystream continues across
 * calls of any length: many small calls give the same bytes as one large one.
 * out == in (in place) is allowed; other overlaps are not.  in may be NULL
 * only when len is 0.
 *
 * On a stream that was never initialised, or has been wiped, out is filled
 * with zeros: plaintext is never passed through unencrypted.
 *
 * ChaCha20's 32-bit block counter limits one (key, IV) to 256 GiB; beyond
 * that the output is zeros as well.
 */
MBSC_API void mbsc_stream_xor(mbsc_stream *st, uint8_t *out, const uint8_t *in, size_t len);

/* Erase the whole state (sodium_memzero); st can then be initialised again. */
MBSC_API void mbsc_stream_wipe(mbsc_stream *st);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_CIPHER_H */
