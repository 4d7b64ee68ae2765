/* SPDX-License-Identifier: ISC */
/*
 * noise/noise.h - the Noise handshake layer (internal, not installed).
 *
 * Noise Protocol Framework, revision 34 (2018-07-11), for the suite
 * 25519_ChaChaPoly_BLAKE2b and three patterns:
 *
 *   Noise_IKpsk2_25519_ChaChaPoly_BLAKE2b   mbsc/1 (docs/protocol.md, "Handshake")
 *   Noise_IK_25519_ChaChaPoly_BLAKE2b       same without the psk
 *   Noise_NN_25519_ChaChaPoly_BLAKE2b       ephemeral keys only
 *
 * The two simpler patterns exist so that every published vector in
 * tests/vectors/noise/ can be run; they share the code of IKpsk2 through a
 * small token table in noise.c.
 *
 * Conventions:
 *  - No I/O and no allocation.  An mbsc_noise belongs to its caller (stack,
 *    struct member) and must not be used by two threads at once.  Its fields
 *    are private.
 *  - Every function that can fail returns MBSC_OK or a negative mbsc_error.
 *  - Any failure is fatal and sticky: the state is wiped (sodium_memzero)
 *    and every later call returns the same error code, until
 *    mbsc_noise_init() or mbsc_noise_wipe().  This includes
 *    MBSC_ERR_BUFFER_TOO_SMALL and calls made out of order: a handshake is
 *    never retried half way.
 *  - Input and output buffers of one call must not overlap.
 *  - Transport (CipherState after Split) is not implemented: mbsc has its own
 *    record layer.  mbsc_noise_split() hands out the two keys.
 */
#ifndef MBSC_NOISE_H
#define MBSC_NOISE_H

#include <stddef.h>
#include <stdint.h>

#include "mbsc/export.h"

/* Sizes of the suite (Noise spec sections 4.1 to 4.3, 12). */
#define MBSC_NOISE_DHLEN       32u    /* X25519 key and shared secret */
#define MBSC_NOISE_KEYLEN      32u    /* ChaChaPoly key; also the psk length */
#define MBSC_NOISE_TAGLEN      16u    /* Poly1305 tag */
#define MBSC_NOISE_HASHLEN     64u    /* BLAKE2b */
#define MBSC_NOISE_BLOCKLEN    128u   /* BLAKE2b block, for HMAC */
#define MBSC_NOISE_MAX_MESSAGE 65535u /* spec section 3: any Noise message */

enum mbsc_noise_pattern { MBSC_NOISE_NN = 0, MBSC_NOISE_IK = 1, MBSC_NOISE_IKPSK2 = 2 };

/* Caller-allocated handshake state.  All fields are private. */
typedef struct mbsc_noise {
    /* SymmetricState (spec 5.2) with its CipherState (spec 5.1) */
    uint8_t ck_[MBSC_NOISE_HASHLEN];
    uint8_t h_[MBSC_NOISE_HASHLEN];
    uint8_t k_[MBSC_NOISE_KEYLEN];
    uint64_t n_;
    /* HandshakeState (spec 5.3) */
    uint8_t s_priv_[MBSC_NOISE_DHLEN];
    uint8_t s_pub_[MBSC_NOISE_DHLEN];
    uint8_t e_priv_[MBSC_NOISE_DHLEN];
    uint8_t e_pub_[MBSC_NOISE_DHLEN];
    uint8_t rs_[MBSC_NOISE_DHLEN];
    uint8_t re_[MBSC_NOISE_DHLEN];
    uint8_t psk_[MBSC_NOISE_KEYLEN];
    uint32_t state_;  /* lifecycle, see noise.c */
    int error_;       /* the sticky error once state_ says failed */
    uint8_t pattern_; /* enum mbsc_noise_pattern */
    uint8_t initiator_;
    uint8_t msg_index_; /* next handshake message, 0-based */
    uint8_t has_k_, has_s_, has_e_, has_rs_, has_re_, e_fixed_;
} mbsc_noise;

/*
 * Initialize hs for one handshake (Initialize(), spec 5.3): h is the
 * protocol name zero-padded to 64 bytes, ck = h, MixHash(prologue), then the
 * pre-message (for IK: the responder's static public key).
 *
 *   p          the pattern.
 *   initiator  non-zero for the initiator (mbsc's master), 0 for the
 *              responder (slave).
 *   prologue   prologue_len bytes (mbsc/1: "mbsc/1"); may be NULL if
 *              prologue_len is 0.
 *   s_priv     own static private key (any 32 bytes; X25519 clamps):
 *              required for IK and IKpsk2, must be NULL for NN.
 *   rs_pub     the responder's static public key: required for the
 *              initiator of IK and IKpsk2, must be NULL otherwise.
 *   psk        IKpsk2 only: the 32-byte pre-shared key, NULL meaning 32
 *              zero bytes; must be NULL for IK and NN.
 *
 * hs may hold anything before the call.  Returns MBSC_OK or
 * MBSC_ERR_INVALID_ARG (hs NULL, unknown p, a key given or missing against
 * the rules above), MBSC_ERR_STATE (libsodium failed to initialize).
 */
MBSC_WUR int mbsc_noise_init(mbsc_noise *hs, enum mbsc_noise_pattern p, int initiator,
                             const uint8_t *prologue, size_t prologue_len,
                             const uint8_t s_priv[MBSC_NOISE_DHLEN],
                             const uint8_t rs_pub[MBSC_NOISE_DHLEN],
                             const uint8_t psk[MBSC_NOISE_KEYLEN]);

/*
 * Tests only: use e_priv as this party's ephemeral private key instead of
 * drawing it with randombytes_buf().  Valid after init and before this
 * party writes its `e` token; MBSC_ERR_STATE otherwise.  Defined in
 * src/testing/noise_testing.c, which is linked only into the tests (never
 * into libmbsc): a reused ephemeral key destroys forward secrecy.
 */
MBSC_WUR int mbsc_noise_set_ephemeral_for_testing(mbsc_noise *hs,
                                                  const uint8_t e_priv[MBSC_NOISE_DHLEN]);

/*
 * Make hs fail with err, as any failed call does: the state is wiped and
 * every later call returns the first error.  Returns that sticky error, or
 * MBSC_ERR_INVALID_ARG if hs is NULL.  For code outside noise.c that checks
 * its own preconditions on hs (the tests' helper above).
 */
int mbsc_noise_abort(mbsc_noise *hs, int err);

/*
 * Bytes that the next handshake message adds to its payload (keys and
 * tags): the message is payload_len + this many bytes.  For IKpsk2: 96 for
 * message 1, 48 for message 2.  Returns the count (>= 0), or MBSC_ERR_STATE
 * when the handshake is complete, failed or not initialized (the state is
 * not changed: this is a query).
 */
int mbsc_noise_next_overhead(const mbsc_noise *hs);

/*
 * Write the next handshake message (WriteMessage(), spec 5.3): out receives
 * payload_len + mbsc_noise_next_overhead() bytes and *out_len that count.
 * payload may be NULL if payload_len is 0.  The message must fit in
 * MBSC_NOISE_MAX_MESSAGE bytes.
 *
 * Returns MBSC_OK, or MBSC_ERR_INVALID_ARG (NULL pointer), MBSC_ERR_STATE
 * (not this party's turn, handshake complete or failed),
 * MBSC_ERR_PAYLOAD_TOO_LONG (message over MBSC_NOISE_MAX_MESSAGE),
 * MBSC_ERR_BUFFER_TOO_SMALL (out_cap), MBSC_ERR_WEAK_KEY (an X25519 result
 * is all zeros: the peer's key has low order).  On failure out is zeroed
 * and *out_len is 0.
 */
MBSC_WUR int mbsc_noise_write_message(mbsc_noise *hs, const uint8_t *payload, size_t payload_len,
                                      uint8_t *out, size_t out_cap, size_t *out_len);

/*
 * Read the next handshake message (ReadMessage(), spec 5.3): payload_out
 * receives the decrypted payload (msg_len - overhead bytes) and
 * *payload_len its length.  payload_out may be NULL if payload_cap is 0.
 *
 * Returns MBSC_OK, or MBSC_ERR_INVALID_ARG, MBSC_ERR_STATE (not this
 * party's turn...), MBSC_ERR_HANDSHAKE_MESSAGE (message shorter than its
 * keys and tags, or longer than MBSC_NOISE_MAX_MESSAGE),
 * MBSC_ERR_BUFFER_TOO_SMALL (payload_cap), MBSC_ERR_WEAK_KEY (low-order
 * peer key), MBSC_ERR_WRONG_PEER_KEY (the peer's encrypted static key does
 * not decrypt: it encrypted to a different public key of ours, or the
 * message was altered), MBSC_ERR_HANDSHAKE_DECRYPT (another AEAD tag
 * failed: tampering or a wrong psk).  On failure payload_out is zeroed up to
 * payload_cap and *payload_len is 0.
 */
MBSC_WUR int mbsc_noise_read_message(mbsc_noise *hs, const uint8_t *msg, size_t msg_len,
                                     uint8_t *payload_out, size_t payload_cap, size_t *payload_len);

/* 1 once every handshake message has been written or read, else 0. */
int mbsc_noise_is_complete(const mbsc_noise *hs);

/*
 * The peer's static public key (32 bytes) once it is known: from init for
 * the initiator of IK/IKpsk2, after reading message 1 for the responder
 * (which can check it against its allow-list before writing message 2).
 * Stays available after mbsc_noise_split().  NULL if not known (NN, not yet
 * read, failed or wiped state).  The pointer is into hs.
 */
const uint8_t *mbsc_noise_remote_static(const mbsc_noise *hs);

/*
 * Split() (spec 5.2) once the handshake is complete: the two 32-byte
 * transport keys (first output: initiator to responder) and, if
 * handshake_hash is not NULL, the final h (channel binding, 64 bytes).
 * Then every secret in hs is wiped; only the remote static key stays.
 *
 * Returns MBSC_OK, or MBSC_ERR_INVALID_ARG, MBSC_ERR_STATE (handshake not
 * complete, already split, failed).
 */
MBSC_WUR int mbsc_noise_split(mbsc_noise *hs, uint8_t k_initiator_to_responder[MBSC_NOISE_KEYLEN],
                              uint8_t k_responder_to_initiator[MBSC_NOISE_KEYLEN],
                              uint8_t handshake_hash[MBSC_NOISE_HASHLEN]);

/* Erase all of hs (sodium_memzero).  hs may be NULL.  Then only init works. */
void mbsc_noise_wipe(mbsc_noise *hs);

/*
 * HMAC-BLAKE2b (RFC 2104 with BLAKE2b-512, block 128 bytes) and the Noise
 * HKDF (spec 4.3), in hkdf.c.  Exposed for noise.c and for tests.
 *
 * mbsc_hmac_blake2b: out = HMAC(key, data); a key longer than 128 bytes is
 * hashed first (RFC 2104).  key may be NULL if key_len is 0, data if
 * data_len is 0.
 *
 * mbsc_noise_hkdf: HKDF(ck, ikm) with two outputs (out3 NULL) or three.
 * The outputs are full 64-byte HMAC values; Noise uses the first 32 bytes
 * of an output wherever it needs a key.  ikm may be NULL if ikm_len is 0.
 */
void mbsc_hmac_blake2b(uint8_t out[MBSC_NOISE_HASHLEN], const uint8_t *key, size_t key_len,
                       const uint8_t *data, size_t data_len);
void mbsc_noise_hkdf(const uint8_t ck[MBSC_NOISE_HASHLEN], const uint8_t *ikm, size_t ikm_len,
                     uint8_t out1[MBSC_NOISE_HASHLEN], uint8_t out2[MBSC_NOISE_HASHLEN],
                     uint8_t out3[MBSC_NOISE_HASHLEN]);

#endif /* MBSC_NOISE_H */
