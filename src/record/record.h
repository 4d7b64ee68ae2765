/* SPDX-License-Identifier: ISC */
/*
 * record.h - one direction of the mbsc/1 transport (docs/protocol.md, Transport).
 *
 * A direction holds the current direction key k, the cipher state running
 * under the key derived from it, and the 64-bit frame counter.  Frame i
 * carrying payload p (n bytes):
 *
 *   otk = next 32 keystream bytes           (one-time Poly1305 key)
 *   c   = p XOR next n keystream bytes
 *   tag = Poly1305(otk, c || le64(n) || le64(i))
 *   wire: be16(n + 16) || c || tag
 *
 * Every MBSC_REKEY_AFTER_FRAMES frames, k = BLAKE2b-256(key = k,
 * "mbsc/1 rekey") and the cipher restarts under the new key; the counter
 * keeps counting.  No I/O, no allocation.
 */
#ifndef MBSC_RECORD_H
#define MBSC_RECORD_H

#include "internal.h"
#include "mbsc/cipher.h"
#include "mbsc/session.h"

#define MBSC_DIRECTION_KEY_BYTES 32u
#define MBSC_ONETIME_KEY_BYTES   32u

struct mbsc_record_dir {
    mbsc_stream stream;                  /* keystream under the current key */
    uint8_t k[MBSC_DIRECTION_KEY_BYTES]; /* current direction key */
    const mbsc_cipher *cipher;
    uint64_t counter; /* index of the next frame */
    int error;        /* sticky: MBSC_OK or the first failure */
};

/*
 * Derive the cipher key and IV from a direction key (keyed BLAKE2b-512 over
 * "mbsc/1 stream" || id) and start the keystream.  Exposed for the protocol
 * vector tests.
 */
int mbsc_record_derive_stream(mbsc_stream *st, const mbsc_cipher *c,
                              const uint8_t k[MBSC_DIRECTION_KEY_BYTES]);

/* k = BLAKE2b-256(key = k, "mbsc/1 rekey"), in place. */
void mbsc_record_next_key(uint8_t k[MBSC_DIRECTION_KEY_BYTES]);

/* Start a direction with key k (copied) and cipher c, counter 0. */
int mbsc_record_init(struct mbsc_record_dir *d, const mbsc_cipher *c,
                     const uint8_t k[MBSC_DIRECTION_KEY_BYTES]);

/*
 * Seal payload (n <= MBSC_MAX_PAYLOAD bytes) as one whole frame, length
 * prefix included, into out (cap >= n + MBSC_FRAME_OVERHEAD).  Returns the
 * frame size or a negative error; a failure poisons the direction.
 * payload and out must not overlap.
 */
MBSC_WUR long mbsc_record_seal(struct mbsc_record_dir *d, uint8_t *out, size_t cap,
                               const uint8_t *payload, size_t n);

/*
 * Open one frame body (c || tag, the bytes after the length prefix; its
 * length body_len comes from that prefix and must be 16..MBSC_MAX_FRAME_BODY).
 * The tag is verified in constant time before anything is decrypted; only
 * then is the plaintext written to payload (body_len - 16 bytes; payload
 * may equal body).  Returns the payload length or a negative error; any
 * failure poisons the direction and wipes its secrets.
 */
MBSC_WUR long mbsc_record_open(struct mbsc_record_dir *d, uint8_t *payload, const uint8_t *body,
                               size_t body_len);

/* Wipe the direction (keys, keystream state). */
void mbsc_record_wipe(struct mbsc_record_dir *d);

#endif /* MBSC_RECORD_H */
