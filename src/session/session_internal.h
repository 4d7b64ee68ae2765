/* SPDX-License-Identifier: ISC */
/*
 * session_internal.h - what the session engine shares with its config and
 * with the tests.  Not installed.
 */
#ifndef MBSC_SESSION_INTERNAL_H
#define MBSC_SESSION_INTERNAL_H

#include "internal.h"
#include "mbsc/keys.h"
#include "mbsc/session.h"

struct mbsc_config {
    enum mbsc_role role;
    int has_keypair;
    mbsc_keypair keypair;
    int has_peer_key;
    uint8_t peer_key[MBSC_KEY_BYTES];
    const mbsc_allowlist *allowlist; /* borrowed */
    int has_psk;
    uint8_t psk[MBSC_KEY_BYTES];
    uint8_t ciphers[MBSC_MAX_CIPHER_OFFER]; /* wire ids, in order */
    size_t n_ciphers;
    unsigned handshake_timeout_ms;
    size_t max_payload; /* largest transport payload a session buffers */
};

/*
 * Slave: check the master's key of message 1 against al from now on, for a
 * server that takes a new config (mbsc_server_set_config): the session no
 * longer reads the allow-list it was made with.  Only message 1 reads it;
 * after that the server holds the confirmed key against its current list.
 */
void mbsc_session_use_allowlist(mbsc_session *s, const mbsc_allowlist *al);

/*
 * Slave: the static key that message 1 carried and the allow-list
 * accepted, before the session is confirmed (MBSC_ERR_STATE before
 * message 1, or once the session failed).  Not yet proof of anything:
 * message 1 may be a replay.  A server uses it to end, at a reload, the
 * handshakes of masters that the new allow-list no longer lists.
 */
int mbsc_session_claimed_key(const mbsc_session *s, uint8_t key[MBSC_KEY_BYTES]);

/*
 * Payloads received whole and not yet taken: the opened one and the whole
 * frames buffered behind it (0 when none is opened: then every whole frame
 * has been).  For the drivers' "do not wait while this is not 0" rule
 * (mbsc_link_pending, mbsc_conn_pending).
 */
size_t mbsc_session_pending_payloads(const mbsc_session *s);

/* Bytes of one session whose payloads are at most max_payload bytes (session.c). */
size_t mbsc_session_footprint_for(size_t max_payload);

/*
 * mbsc_session_new, with hook(&noise, hook_arg) called on the fresh
 * handshake state before the first message is written (hook may be NULL).
 * A hook error fails the creation with that code.  Only the tests pass a
 * hook (src/testing/session_testing.c).
 */
struct mbsc_noise;
typedef int (*mbsc_session_noise_hook)(struct mbsc_noise *hs, const void *hook_arg);
mbsc_session *mbsc_session_create(const mbsc_config *cfg, mbsc_session_noise_hook hook,
                                  const void *hook_arg, int *err);

/*
 * mbsc_session_new with a fixed ephemeral private key instead of a random
 * one, so that tests can reproduce published handshake bytes.  Defined in
 * src/testing/session_testing.c, linked only into the tests (never into
 * libmbsc): a reused ephemeral key destroys forward secrecy.
 */
mbsc_session *mbsc_session_new_for_testing(const mbsc_config *cfg,
                                           const uint8_t e_priv[MBSC_KEY_BYTES], int *err);

/*
 * The record layer state of one direction (sending nonzero: ours, else the
 * peer's), for code that must reach a position no test can wait for: the
 * fuzzers move both ends of a direction to just before a rekey or the end
 * of the frame counter (mbsc_session_set_counters_for_testing).
 */
struct mbsc_record_dir;
struct mbsc_record_dir *mbsc_session_record_dir(mbsc_session *s, int sending);

/*
 * Tests only (src/testing/session_testing.c, never in libmbsc): set the
 * frame counter of the established session's sending direction to send and
 * of its receiving direction to recv, as if that many frames had passed
 * under the current keys (no rekey is done).  Give the peer's opposite
 * directions the same values, or every later frame fails its tag.
 * Returns MBSC_OK, or MBSC_ERR_STATE if s is not established.
 */
int mbsc_session_set_counters_for_testing(mbsc_session *s, uint64_t send, uint64_t recv);

#endif /* MBSC_SESSION_INTERNAL_H */
