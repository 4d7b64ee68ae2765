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
#define MBSC_CIPHER_CHACHA20 1u
#define MBSC_CIPHER_TRIVIUM 2u
#define MBSC_CIPHER_RABBIT 3u
#define MBSC_CIPHER_ENOCORO128V2 4u
#define MBSC_CIPHER_COUNT 4u

/* Largest key and IV of any cipher, for callers sizing buffers. */
#define MBSC_CIPHER_MAX_KEY_BYTES 32u
#define MBSC_CIPHER_MAX_IV_BYTES 12u

/*
 * Bytes reserved for the state of any cipher.  Part of the ABI: every
 * implementation checks at compile time that its state fits.
 */
#define MBSC_STREAM_STATE_BYTES 512u

/*
 * Keystream state, allocated by the caller (on the stack, in a struct).
 * Its fields are private: use only the functions below.
 */
typedef struct mbsc_stream {
    const mbsc_cipher *cipher_; /* private: NULL until initialised */
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
 * MBSC_STREAM_STATE_BYTES).  For footprint reports.
 */
MBSC_API size_t mbsc_cipher_state_bytes(const mbsc_cipher *c);

/*
 * Set up st for cipher c with the given key and IV, at keystream position 0.
 * key_len must equal mbsc_cipher_key_bytes(c) and iv_len
 * mbsc_cipher_iv_bytes(c); Rabbit also accepts iv_len 0 (RFC 4503 key-only
 * mode, iv may then be NULL).
 *
 * Returns MBSC_OK, or MBSC_ERR_INVALID_ARG (st, c or key NULL, or iv NULL
 * with a non-zero iv_len), MBSC_ERR_KEY_LENGTH, MBSC_ERR_IV_LENGTH.  On
 * failure st is left wiped and unusable.
 */
MBSC_API MBSC_WUR int mbsc_stream_init(mbsc_stream *st, const mbsc_cipher *c,
                                       const uint8_t *key, size_t key_len,
                                       const uint8_t *iv, size_t iv_len);

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
MBSC_API void mbsc_stream_xor(mbsc_stream *st, uint8_t *out, const uint8_t *in,
                              size_t len);

/* Erase the whole state (sodium_memzero); st can then be initialised again. */
MBSC_API void mbsc_stream_wipe(mbsc_stream *st);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_CIPHER_H */
