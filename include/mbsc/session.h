/* SPDX-License-Identifier: ISC */
/*
 * mbsc/session.h - the mbsc/1 secure channel as a sans-I/O engine.
 *
 * A session never touches a socket, a clock or a thread.  The caller moves
 * bytes: what arrives from the network goes in with mbsc_session_feed(),
 * what the session wants sent comes out of mbsc_session_output() and is
 * acknowledged with mbsc_session_output_consumed().  Payloads (whole Modbus
 * ADUs) go in with mbsc_session_send() and come out with
 * mbsc_session_recv().  Any chunking of the input works, from one byte at a
 * time to many frames in one call.  Timeouts are the caller's business (the
 * connection layer in mbsc/conn.h does it for callers without an event loop).
 *
 * Life of a session:
 *   1. mbsc_config_new() + setters, once per process or per listener;
 *   2. mbsc_session_new(cfg): a master has handshake message 1 ready in its
 *      output at once; a slave waits for it;
 *   3. bytes flow until mbsc_session_established() is true.  A master is
 *      established once message 2 checks out; it then queues an empty
 *      keep-alive frame at once.  A slave is established only when that
 *      first transport frame from the master has opened (key confirmation:
 *      message 1 alone may be a replay, docs/protocol.md), and only then
 *      names its peer; the confirming keep-alive is not handed out;
 *   4. payloads flow; every frame is authenticated before it is decrypted;
 *   5. mbsc_session_free() wipes every secret.
 *
 * Errors are sticky: after the first failure (bad tag, bad frame length,
 * handshake failure...) the session's secrets are wiped, its pending output
 * is dropped (a slave never answers a failed handshake), and every later
 * call returns the same error, also available from mbsc_session_error().
 * Caller mistakes that change nothing (NULL, a payload that is too long, a
 * full output buffer, a call before the handshake is over) return an error
 * without killing the session.
 *
 * Thread-safety: a config may be shared by sessions in several threads once
 * it is no longer being modified.  A session must be used by one thread at
 * a time.
 */
#ifndef MBSC_SESSION_H
#define MBSC_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "mbsc/cipher.h"
#include "mbsc/export.h"
#include "mbsc/keys.h"
#include "mbsc/pdu.h"  /* MBSC_ADU_MAX, the default payload limit */
#include "mbsc/wire.h" /* the wire constants of mbsc/1 */

#ifdef __cplusplus
extern "C" {
#endif

#define MBSC_DEFAULT_HANDSHAKE_TIMEOUT_MS 10000u
/* Largest payload a session buffers unless configured: one Modbus/TCP ADU. */
#define MBSC_DEFAULT_MAX_PAYLOAD MBSC_ADU_MAX

enum mbsc_role {
    MBSC_ROLE_MASTER = 1, /* Modbus client, Noise initiator */
    MBSC_ROLE_SLAVE = 2   /* Modbus server, Noise responder */
};

/* ---- Configuration ------------------------------------------------------ */

typedef struct mbsc_config mbsc_config;

/*
 * A new configuration for one role, with the default cipher list (all four,
 * ChaCha20 first), no PSK (32 zero bytes on the wire, as WireGuard does) and
 * a 10 s handshake timeout.  NULL if out of memory or role is invalid.
 */
MBSC_API mbsc_config *mbsc_config_new(enum mbsc_role role);

/* Wipe and free; NULL is allowed.  Sessions made from it keep working. */
MBSC_API void mbsc_config_free(mbsc_config *cfg);

/* Our static key pair (copied).  Required for both roles. */
MBSC_API int mbsc_config_set_keypair(mbsc_config *cfg, const mbsc_keypair *kp);

/* Master only: the slave's static public key (copied).  Required. */
MBSC_API int mbsc_config_set_peer_public_key(mbsc_config *cfg,
                                             const uint8_t public_key[MBSC_KEY_BYTES]);

/*
 * Slave only: the masters allowed to connect.  Borrowed: it must stay
 * alive, unmodified, as long as the config and any session made from it.
 * Required for a slave.
 */
MBSC_API int mbsc_config_set_allowlist(mbsc_config *cfg, const mbsc_allowlist *al);

/* Optional pre-shared key (copied); NULL returns to "no PSK". */
MBSC_API int mbsc_config_set_psk(mbsc_config *cfg, const uint8_t psk[MBSC_KEY_BYTES]);

/*
 * Cipher policy from a comma-separated list of names, e.g. "rabbit,chacha20".
 * Master: the offer, in order of preference.  Slave: the ciphers it allows
 * (the master's order decides).  Returns MBSC_ERR_UNKNOWN_CIPHER for an
 * unknown name, MBSC_ERR_INVALID_ARG for an empty list, a repeated name or
 * more than MBSC_MAX_CIPHER_OFFER entries; the policy is then unchanged.
 */
MBSC_API int mbsc_config_set_ciphers(mbsc_config *cfg, const char *list);

/* The same by wire ids (1..4). */
MBSC_API int mbsc_config_set_cipher_ids(mbsc_config *cfg, const unsigned *ids, size_t n);

/* Handshake timeout used by the connection layer and the adapters. */
MBSC_API int mbsc_config_set_handshake_timeout(mbsc_config *cfg, unsigned timeout_ms);
MBSC_API unsigned mbsc_config_handshake_timeout(const mbsc_config *cfg);
MBSC_API enum mbsc_role mbsc_config_role(const mbsc_config *cfg);

/*
 * The largest payload (0 to MBSC_MAX_PAYLOAD bytes) that sessions made from
 * cfg send and accept; their buffers are sized from it at
 * mbsc_session_new().  The default, MBSC_DEFAULT_MAX_PAYLOAD (260), is the
 * largest Modbus/TCP ADU; layers that carry other payloads raise it.  Both
 * ends must agree: a frame from the peer with a longer payload is a
 * protocol error (MBSC_ERR_FRAME_LENGTH) that ends the session as soon as
 * its length prefix arrives, before any of its body is read; sending a
 * longer payload returns MBSC_ERR_PAYLOAD_TOO_LONG and changes nothing.
 * The wire protocol is unchanged.  Returns MBSC_OK, or MBSC_ERR_INVALID_ARG
 * (cfg NULL or max_payload above MBSC_MAX_PAYLOAD; the setting then stays).
 */
MBSC_API int mbsc_config_set_max_payload(mbsc_config *cfg, size_t max_payload);
MBSC_API size_t mbsc_config_max_payload(const mbsc_config *cfg);

/*
 * Bytes of memory one session made from cfg occupies, buffers included
 * (cfg NULL: the default configuration, as mbsc_session_footprint()).
 */
MBSC_API size_t mbsc_config_session_footprint(const mbsc_config *cfg);

/* ---- Sessions ----------------------------------------------------------- */

typedef struct mbsc_session mbsc_session;

/*
 * A session for one connection.  The config must be complete (key pair,
 * and the peer key or allow-list); what the session needs is copied, except
 * the allow-list.  Returns NULL and sets *err (if err is not NULL) to
 * MBSC_ERR_STATE for an incomplete config or MBSC_ERR_NOMEM.
 */
MBSC_API mbsc_session *mbsc_session_new(const mbsc_config *cfg, int *err);

/* Wipe and free; NULL is allowed. */
MBSC_API void mbsc_session_free(mbsc_session *s);

/*
 * Bytes waiting to be sent: returns a pointer to them and sets *len (0 when
 * there is nothing to send; the pointer is then not NULL but must not be
 * read).  The pointer stays valid until the next call on the session.
 * len must not be NULL.
 */
MBSC_API const uint8_t *mbsc_session_output(mbsc_session *s, size_t *len);

/* Tell the session that the first n bytes of its output were sent. */
MBSC_API void mbsc_session_output_consumed(mbsc_session *s, size_t n);

/*
 * Hand the session bytes received from the peer.  It consumes them in
 * order and sets *consumed; it stops early (consumed < len) when an opened
 * payload is waiting: take it with mbsc_session_recv() and feed the rest.
 * Handshake replies may appear in the output.  Returns MBSC_OK or a (sticky)
 * error.
 */
MBSC_API MBSC_WUR int mbsc_session_feed(mbsc_session *s, const uint8_t *in, size_t len,
                                        size_t *consumed);

/*
 * Tell the session that the peer closed the connection.  The session ends
 * with MBSC_ERR_TRUNCATED if part of a frame had arrived, otherwise with
 * MBSC_ERR_PEER_CLOSED, and returns that code (a session that had already
 * failed keeps and returns its first error).  A payload opened before can
 * still be taken with mbsc_session_recv().
 */
MBSC_API int mbsc_session_feed_eof(mbsc_session *s);

/*
 * Take the next opened payload: returns 1 and sets *len when one was copied
 * to out, 0 when none is waiting, MBSC_ERR_BUFFER_TOO_SMALL (the payload
 * stays) when cap is less than its length, or the session's error.  An
 * empty payload (a keep-alive) returns 1 with *len = 0.
 */
MBSC_API MBSC_WUR int mbsc_session_recv(mbsc_session *s, uint8_t *out, size_t cap, size_t *len);

/*
 * Seal one payload (0 to the configured maximum, mbsc_config_set_max_payload(),
 * bytes) into one frame appended to the output.  MBSC_ERR_STATE before the handshake is complete,
 * MBSC_ERR_PAYLOAD_TOO_LONG, MBSC_ERR_WOULD_BLOCK when the output has no
 * room (send it first); none of those changes the session.
 */
MBSC_API MBSC_WUR int mbsc_session_send(mbsc_session *s, const uint8_t *payload, size_t len);

/* ---- Driver API: one query, zero-copy input ------------------------------ */

/*
 * What a driver must do next, in one query (as BearSSL's
 * br_ssl_engine_current_state()).  Flags:
 *   MBSC_SESSION_SEND        output waits: mbsc_session_output() + _consumed();
 *   MBSC_SESSION_RECV        the input has room: read into mbsc_session_input_buf();
 *   MBSC_SESSION_PAYLOAD     an opened payload waits: mbsc_session_payload() or recv();
 *   MBSC_SESSION_ESTABLISHED handshake done (and, on a slave, confirmed);
 *   MBSC_SESSION_CLOSED      the session failed: mbsc_session_error() says why.
 * A driver that waits on a socket asks for POLLOUT while SEND is set and
 * POLLIN while RECV is set.  NULL gives MBSC_SESSION_CLOSED.
 */
#define MBSC_SESSION_SEND        0x01u
#define MBSC_SESSION_RECV        0x02u
#define MBSC_SESSION_PAYLOAD     0x04u
#define MBSC_SESSION_ESTABLISHED 0x08u
#define MBSC_SESSION_CLOSED      0x10u
MBSC_API unsigned mbsc_session_state(const mbsc_session *s);

/*
 * Zero-copy input: the free room at the end of the session's input buffer
 * (*len bytes, 0 when full or failed; the pointer is never NULL).  Read
 * from the socket straight into it, then call mbsc_session_input_ack()
 * with the number of bytes written.  Valid until the next call on s.
 */
MBSC_API uint8_t *mbsc_session_input_buf(mbsc_session *s, size_t *len);

/*
 * n bytes were written into the input buffer: open every whole frame,
 * stopping at the first payload (the rest stays buffered and opens once
 * the payload is taken).  MBSC_ERR_INVALID_ARG if n exceeds the room that
 * mbsc_session_input_buf() offered (nothing changes), else MBSC_OK or the
 * session's sticky error.
 */
MBSC_API MBSC_WUR int mbsc_session_input_ack(mbsc_session *s, size_t n);

/*
 * Zero-copy output of an opened payload: a pointer to it and its length
 * (NULL and 0 when none waits; an empty keep-alive gives a non-NULL pointer
 * and 0).  Valid until mbsc_session_payload_ack(), which wipes it and opens
 * what was buffered behind it (MBSC_OK or the sticky error).
 */
MBSC_API const uint8_t *mbsc_session_payload(const mbsc_session *s, size_t *len);
MBSC_API int mbsc_session_payload_ack(mbsc_session *s);

/* ---- Queries ------------------------------------------------------------ */

/* Queries accept NULL: they then report "not established", no cipher, etc. */

/*
 * 1 once the handshake is complete (a slave: and confirmed by the master's
 * first transport frame) and the session not failed, else 0.
 */
MBSC_API int mbsc_session_established(const mbsc_session *s);

/* MBSC_OK, or the sticky error that ended the session. */
MBSC_API int mbsc_session_error(const mbsc_session *s);

/* The session's role; s must not be NULL. */
MBSC_API enum mbsc_role mbsc_session_role(const mbsc_session *s);

/* The negotiated cipher; NULL before the handshake is complete. */
MBSC_API const mbsc_cipher *mbsc_session_cipher(const mbsc_session *s);

/*
 * The peer's authenticated static public key: MBSC_OK once known (slave:
 * once established, i.e. confirmed; master: from the config), else
 * MBSC_ERR_STATE.  A failed session forgets it (MBSC_ERR_STATE).
 */
MBSC_API int mbsc_session_peer_public_key(const mbsc_session *s,
                                          uint8_t public_key[MBSC_KEY_BYTES]);

/*
 * Slave: the allow-list name and role (NULL if none) of the authenticated
 * master, once the session is established (confirmed), valid until the
 * session fails or is freed.  Master, before confirmation, or after a
 * failure: NULL.
 */
MBSC_API const char *mbsc_session_peer_name(const mbsc_session *s);
MBSC_API const char *mbsc_session_peer_role(const mbsc_session *s);

/*
 * Slave: a check of each message 1 before any work is done on it.  fn gets
 * the master's ephemeral public key (the first MBSC_KEY_BYTES of message 1,
 * sent in the clear) and returns 1 if it has been seen before: the
 * handshake then fails with MBSC_ERR_REPLAYED.  A master draws a fresh
 * ephemeral key for every handshake, so a repeated one is a replay of a
 * captured message 1, which key confirmation would catch too, but only
 * after the replay cost two X25519 operations and a connection slot until
 * its deadline.  The server (mbsc/server.h) keeps such a memory; ignored
 * on a master.
 */
typedef int (*mbsc_session_replay_fn)(void *user, const uint8_t ephemeral[MBSC_KEY_BYTES]);
MBSC_API void mbsc_session_set_replay_check(mbsc_session *s, mbsc_session_replay_fn fn, void *user);

/*
 * Slave: after the handshake failed with MBSC_ERR_UNKNOWN_PEER, the static
 * public key that message 1 carried and the allow-list did not hold
 * (public, for the operator to paste into the allow-list if it is right).
 * MBSC_OK, or MBSC_ERR_STATE when no key was refused.  Message 1 proves
 * possession of that key's private half, but it may be a replay.
 */
MBSC_API int mbsc_session_refused_key(const mbsc_session *s, uint8_t public_key[MBSC_KEY_BYTES]);

/*
 * The Noise handshake hash (64 bytes), a unique identifier of this session
 * that both sides share (channel binding).  MBSC_ERR_STATE before the end
 * of the handshake.
 */
MBSC_API int mbsc_session_handshake_hash(const mbsc_session *s,
                                         uint8_t hash[MBSC_HANDSHAKE_HASH_BYTES]);

/*
 * Keystream ahead of the frame: generate now the keystream the next frames
 * will use (one largest frame's worth per direction), and do a rekey that
 * is due, so that the next mbsc_session_send() and the next frame opened
 * cost only Poly1305 and an XOR.  Call it when the session is idle: after
 * its output went to the socket, or when a read would block.  Optional:
 * without it the keystream is generated while sealing and opening, with
 * the same bytes on the wire.  A failure here ends the session (its error
 * shows in mbsc_session_error()); NULL, or a session not established, does
 * nothing.
 */
MBSC_API void mbsc_session_refill(mbsc_session *s);

/*
 * Bytes of memory one session of the default configuration
 * (MBSC_DEFAULT_MAX_PAYLOAD) occupies, buffers included; see
 * mbsc_config_session_footprint() for another configuration.
 */
MBSC_API size_t mbsc_session_footprint(void);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_SESSION_H */
