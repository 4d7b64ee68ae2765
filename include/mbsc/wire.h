/* SPDX-License-Identifier: ISC */
/*
 * mbsc/wire.h - every constant of the mbsc/1 wire protocol, in one place
 * (docs/protocol.md).  Changing any of them changes the protocol: the
 * published protocol vectors (tests/vectors/mbsc1) would no longer match.
 *
 * Included by mbsc/session.h; the record layer includes only this header,
 * so that it does not depend on the session's API to learn a size.
 */
#ifndef MBSC_WIRE_H
#define MBSC_WIRE_H

/* ---- Frames ---------------------------------------------------------------- */

#define MBSC_FRAME_HEADER_BYTES 2u    /* big-endian body length L */
#define MBSC_MAX_FRAME_BODY     4096u /* largest L accepted or sent */
#define MBSC_TAG_BYTES          16u   /* Poly1305 tag at the end of a body */
#define MBSC_MAX_PAYLOAD        (MBSC_MAX_FRAME_BODY - MBSC_TAG_BYTES) /* 4080 */
#define MBSC_FRAME_OVERHEAD     (MBSC_FRAME_HEADER_BYTES + MBSC_TAG_BYTES)
#define MBSC_ONETIME_KEY_BYTES  32u /* Poly1305 key: the first keystream bytes of a frame */

/* ---- Keys of the transport ------------------------------------------------- */

/* A direction's key k (one half of Noise Split()), and what is derived from it. */
#define MBSC_DIRECTION_KEY_BYTES 32u
/* Cipher key and IV = keyed BLAKE2b-512(k, MBSC_STREAM_LABEL || cipher id). */
#define MBSC_STREAM_LABEL "mbsc/1 stream"
/* Before frame MBSC_REKEY_AFTER_FRAMES * n: k = keyed BLAKE2b-256(k, MBSC_REKEY_LABEL). */
#define MBSC_REKEY_LABEL        "mbsc/1 rekey"
#define MBSC_REKEY_AFTER_FRAMES 65536u /* frames per direction per key */

/* ---- Handshake ------------------------------------------------------------- */

/* Noise_IKpsk2_25519_ChaChaPoly_BLAKE2b, with this prologue (no NUL). */
#define MBSC_PROLOGUE             "mbsc/1"
#define MBSC_HANDSHAKE_HASH_BYTES 64u /* the Noise handshake hash h (BLAKE2b) */
/* Message 1 payload: version, count n, then n cipher ids. */
#define MBSC_PROTOCOL_VERSION   1u
#define MBSC_OFFER_HEADER_BYTES 2u  /* version, count */
#define MBSC_MAX_CIPHER_OFFER   16u /* cipher ids in a master's offer */
/* Message 2 payload: the chosen cipher id. */
#define MBSC_CHOICE_BYTES 1u

#endif /* MBSC_WIRE_H */
