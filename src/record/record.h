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
 *
 * Keystream ahead of the frame: a direction may own a keystream buffer
 * (caller storage).  mbsc/1 consumes one continuous keystream per key, so
 * bytes generated early, in large batches, are exactly the bytes the next
 * frames would have generated: seal and open take their keystream from the
 * buffer first and from the cipher only for what the buffer lacks.
 * mbsc_record_refill(), called when nothing waits (after a frame went to
 * the socket, while the peer works), tops the buffer up, and also does a
 * due rekey, so that the critical path of the next frame is Poly1305 and
 * an XOR.  At a rekey the unused keystream of the old key is wiped, as the
 * protocol says; the wire bytes are the same with or without a buffer.
 */
#ifndef MBSC_RECORD_H
#define MBSC_RECORD_H

#include "cipher/cipher_impl.h"
#include "internal.h"
#include "mbsc/cipher.h"
#include "mbsc/wire.h"

/*
 * The cipher state a direction reserves: the largest state of any
 * implementation (mbsc_cipher_state_bytes(); ChaCha20's 136 bytes on
 * x86-64 and ARM), not the public mbsc_stream's 512-byte ABI reserve.
 * mbsc_cipher_start() refuses an implementation that would not fit, and
 * tests/check_session.c checks every cipher against it.
 */
#define MBSC_RECORD_STATE_BYTES 144u

/* Keystream bytes one frame of payload n consumes. */
#define MBSC_RECORD_KEYSTREAM_PER_FRAME(n) (MBSC_ONETIME_KEY_BYTES + (n))

struct mbsc_record_dir {
    const struct mbsc_cipher_impl *impl; /* NULL until started, and once wiped */
    union {
        uint64_t align;
        uint8_t bytes[MBSC_RECORD_STATE_BYTES];
    } state;                             /* keystream under the current key */
    uint8_t k[MBSC_DIRECTION_KEY_BYTES]; /* current direction key */
    const mbsc_cipher *cipher;
    uint64_t counter; /* index of the next frame */
    uint64_t epoch;   /* counter / MBSC_REKEY_AFTER_FRAMES of k */
    /* Keystream generated ahead: ks[ks_pos .. ks_end) is unused, in order. */
    uint8_t *ks; /* caller storage, or NULL: no buffer */
    size_t ks_cap, ks_pos, ks_end;
    int error; /* sticky: MBSC_OK or the first failure */
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

/* Start a direction with key k (copied) and cipher c, counter 0, no buffer. */
int mbsc_record_init(struct mbsc_record_dir *d, const mbsc_cipher *c,
                     const uint8_t k[MBSC_DIRECTION_KEY_BYTES]);

/*
 * The same with a keystream buffer of ks_cap bytes (caller storage that
 * must outlive the direction; ks NULL or ks_cap 0: none), filled at once.
 * A buffer of MBSC_RECORD_KEYSTREAM_PER_FRAME(max payload) bytes or more
 * covers a whole frame.
 */
int mbsc_record_init_buffered(struct mbsc_record_dir *d, const mbsc_cipher *c,
                              const uint8_t k[MBSC_DIRECTION_KEY_BYTES], uint8_t *ks,
                              size_t ks_cap);

/*
 * Off the critical path: do a rekey that the next frame needs, and top the
 * keystream buffer up when less than want bytes wait (want 0 or beyond the
 * capacity: fill it whenever it is not full).  Nothing on a direction
 * without a buffer or that has failed.
 */
void mbsc_record_refill(struct mbsc_record_dir *d, size_t want);

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

/* Wipe the direction (keys, keystream state, the buffered keystream). */
void mbsc_record_wipe(struct mbsc_record_dir *d);

#endif /* MBSC_RECORD_H */
