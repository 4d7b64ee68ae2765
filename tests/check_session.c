/* SPDX-License-Identifier: ISC */
/*
 * check_session.c - the session engine wired back to back in memory: every
 * cipher and payload size, tampering of every bit, replays and reordering,
 * each handshake failure with its own error, the rekey boundary in both
 * directions, and any chunking of the input.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "mbsc.h"
#include "noise/noise.h"
#include "record/record.h"
#include "session/session_internal.h"
#include "testutil.h"

Suite *session_suite(void);

static const char *const cipher_names[MBSC_CIPHER_COUNT] = {"chacha20", "trivium", "rabbit",
                                                            "enocoro128v2"};

/* ---- fixtures --------------------------------------------------------------- */

struct pair {
    struct tu_peers peers;
    mbsc_session *m, *s;
};

/* Configs for a master and a slave that know each other; sessions not yet made. */
static void pair_config(struct pair *p, const char *ciphers)
{
    tu_peers_setup(&p->peers, "plc-1", "operator", ciphers);
    p->m = p->s = NULL;
}

/* The same for sessions that carry payloads up to max_payload bytes. */
static void pair_config_max(struct pair *p, const char *ciphers, size_t max_payload)
{
    pair_config(p, ciphers);
    ck_assert_int_eq(mbsc_config_set_max_payload(p->peers.mcfg, max_payload), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_max_payload(p->peers.scfg, max_payload), MBSC_OK);
}

static void pair_sessions(struct pair *p)
{
    int err;

    p->m = mbsc_session_new(p->peers.mcfg, &err);
    ck_assert_msg(p->m != NULL, "master: %s", mbsc_strerror(err));
    p->s = mbsc_session_new(p->peers.scfg, &err);
    ck_assert_msg(p->s != NULL, "slave: %s", mbsc_strerror(err));
}

static void pair_free(struct pair *p)
{
    mbsc_session_free(p->m);
    mbsc_session_free(p->s);
    tu_peers_teardown(&p->peers);
}

/* Take all of a session's output into a caller buffer. */
static size_t take_output(mbsc_session *from, uint8_t *buf, size_t cap)
{
    size_t len;
    const uint8_t *p = mbsc_session_output(from, &len);

    ck_assert_uint_le(len, cap);
    memcpy(buf, p, len);
    mbsc_session_output_consumed(from, len);
    return len;
}

/*
 * Feed bytes in chunks of `chunk` (0 = all at once), collecting every
 * payload into got[] (lengths in got_len[]).  Returns the first error or
 * MBSC_OK; *n_got counts payloads.
 */
static int feed_all(mbsc_session *to, const uint8_t *bytes, size_t len, size_t chunk,
                    uint8_t (*got)[MBSC_MAX_PAYLOAD], size_t *got_len, size_t max_got,
                    size_t *n_got)
{
    size_t pos = 0;

    while (pos < len) {
        size_t step = chunk == 0 || len - pos < chunk ? len - pos : chunk;
        size_t used = 0;
        int rc = mbsc_session_feed(to, bytes + pos, step, &used);
        uint8_t sink[MBSC_MAX_PAYLOAD];
        size_t plen;
        int r;

        pos += used;
        while ((r = mbsc_session_recv(to, *n_got < max_got ? got[*n_got] : sink, MBSC_MAX_PAYLOAD,
                                      &plen)) == 1) {
            if (*n_got < max_got)
                got_len[*n_got] = plen;
            (*n_got)++;
        }
        if (rc != MBSC_OK)
            return rc;
        if (r < 0)
            return r;
    }
    return MBSC_OK;
}

/* Move a's whole output to b; payloads delivered to b are counted in *n. */
static int deliver(mbsc_session *a, mbsc_session *b, size_t *n)
{
    static uint8_t buf[2 * (MBSC_MAX_FRAME_BODY + 2)];
    size_t len = take_output(a, buf, sizeof buf), dummy = 0;

    return feed_all(b, buf, len, 0, NULL, NULL, 0, n != NULL ? n : &dummy);
}

static void handshake(struct pair *p)
{
    size_t n = 0;

    ck_assert_int_eq(deliver(p->m, p->s, NULL), MBSC_OK);
    /* Key confirmation: message 1 alone does not establish the slave. */
    ck_assert(!mbsc_session_established(p->s));
    ck_assert_ptr_null(mbsc_session_peer_name(p->s));
    ck_assert_int_eq(deliver(p->s, p->m, NULL), MBSC_OK);
    ck_assert(mbsc_session_established(p->m));
    ck_assert(!mbsc_session_established(p->s));
    /* The master's keep-alive confirms, and the slave keeps it to itself. */
    ck_assert_int_eq(deliver(p->m, p->s, &n), MBSC_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert(mbsc_session_established(p->s));
}

/* The rest of a handshake whose message 1 the slave has already taken. */
static void handshake_rest(struct pair *p)
{
    ck_assert_int_eq(deliver(p->s, p->m, NULL), MBSC_OK);
    ck_assert_int_eq(deliver(p->m, p->s, NULL), MBSC_OK);
    ck_assert(mbsc_session_established(p->m) && mbsc_session_established(p->s));
}

/* Seal payload on `from`, deliver, and check `to` gets exactly it. */
static void round_trip(mbsc_session *from, mbsc_session *to, const uint8_t *payload, size_t n)
{
    static uint8_t got[1][MBSC_MAX_PAYLOAD];
    size_t got_len[1] = {0}, n_got = 0;
    static uint8_t buf[MBSC_MAX_FRAME_BODY + 2];
    size_t len;

    ck_assert_int_eq(mbsc_session_send(from, payload, n), MBSC_OK);
    len = take_output(from, buf, sizeof buf);
    ck_assert_uint_eq(len, n + MBSC_FRAME_OVERHEAD);
    ck_assert_int_eq(feed_all(to, buf, len, 0, got, got_len, 1, &n_got), MBSC_OK);
    ck_assert_uint_eq(n_got, 1);
    ck_assert_uint_eq(got_len[0], n);
    ck_assert(n == 0 || memcmp(got[0], payload, n) == 0);
}

/* ---- handshake and payloads for every cipher -------------------------------- */

/* Loop: cipher _i % 4; the default (Modbus) configuration, then the largest. */
START_TEST(every_cipher_every_size)
{
    static uint8_t payload[MBSC_MAX_PAYLOAD];
    struct pair p;
    size_t n, max = _i < (int)MBSC_CIPHER_COUNT ? MBSC_DEFAULT_MAX_PAYLOAD : MBSC_MAX_PAYLOAD;

    pair_config_max(&p, cipher_names[_i % (int)MBSC_CIPHER_COUNT], max);
    pair_sessions(&p);
    handshake(&p);
    ck_assert_str_eq(mbsc_cipher_name(mbsc_session_cipher(p.m)),
                     cipher_names[_i % (int)MBSC_CIPHER_COUNT]);
    ck_assert_str_eq(mbsc_cipher_name(mbsc_session_cipher(p.s)),
                     cipher_names[_i % (int)MBSC_CIPHER_COUNT]);
    ck_assert_str_eq(mbsc_session_peer_name(p.s), "plc-1");
    ck_assert_str_eq(mbsc_session_peer_role(p.s), "operator");
    ck_assert_ptr_null(mbsc_session_peer_name(p.m));
    {
        uint8_t key[32], hm[64], hs[64];
        ck_assert_int_eq(mbsc_session_peer_public_key(p.s, key), MBSC_OK);
        ck_assert(memcmp(key, p.peers.master_kp.public_key, 32) == 0);
        ck_assert_int_eq(mbsc_session_peer_public_key(p.m, key), MBSC_OK);
        ck_assert(memcmp(key, p.peers.slave_kp.public_key, 32) == 0);
        ck_assert_int_eq(mbsc_session_handshake_hash(p.m, hm), MBSC_OK);
        ck_assert_int_eq(mbsc_session_handshake_hash(p.s, hs), MBSC_OK);
        ck_assert(memcmp(hm, hs, 64) == 0);
    }
    for (n = 0; n <= max; n += n < 300 ? 1 : 53) {
        tu_fill_pattern(payload, n, (uint32_t)n + 1);
        round_trip(p.m, p.s, payload, n);
        /* Every other size with the keystream refilled ahead in between. */
        if (n % 2)
            mbsc_session_refill(p.s);
        round_trip(p.s, p.m, payload, n);
        if (n % 3 == 0) {
            mbsc_session_refill(p.m);
            mbsc_session_refill(p.s);
        }
    }
    tu_fill_pattern(payload, max, 99);
    round_trip(p.m, p.s, payload, max);
    round_trip(p.s, p.m, payload, max);
    pair_free(&p);
}
END_TEST

START_TEST(default_policy_picks_chacha20)
{
    struct pair p;

    pair_config(&p, NULL);
    pair_sessions(&p);
    handshake(&p);
    ck_assert_str_eq(mbsc_cipher_name(mbsc_session_cipher(p.m)), "chacha20");
    pair_free(&p);
}
END_TEST

START_TEST(masters_order_decides)
{
    struct pair p;

    pair_config(&p, "enocoro128v2, rabbit,chacha20");
    ck_assert_int_eq(mbsc_config_set_ciphers(p.peers.scfg, "chacha20,rabbit"), MBSC_OK);
    pair_sessions(&p);
    handshake(&p);
    ck_assert_str_eq(mbsc_cipher_name(mbsc_session_cipher(p.m)), "rabbit");
    ck_assert_str_eq(mbsc_cipher_name(mbsc_session_cipher(p.s)), "rabbit");
    pair_free(&p);
}
END_TEST

START_TEST(cipher_list_parsing)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    unsigned ids[2] = {4, 2}, bad[2] = {1, 5};

    ck_assert_int_eq(mbsc_config_set_ciphers(cfg, "trivium"), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_ciphers(cfg, "aes"), MBSC_ERR_UNKNOWN_CIPHER);
    ck_assert_int_eq(mbsc_config_set_ciphers(cfg, ""), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_config_set_ciphers(cfg, "rabbit,,trivium"), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_config_set_ciphers(cfg, "rabbit,rabbit"), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_config_set_ciphers(cfg, "rabbit,"), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_config_set_cipher_ids(cfg, ids, 2), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_cipher_ids(cfg, bad, 2), MBSC_ERR_UNKNOWN_CIPHER);
    ck_assert_int_eq(mbsc_config_set_cipher_ids(cfg, ids, 0), MBSC_ERR_INVALID_ARG);
    ck_assert_ptr_null(mbsc_config_new((enum mbsc_role)7));
    /* A master cannot take an allow-list, a slave no peer key. */
    ck_assert_int_eq(mbsc_config_set_allowlist(cfg, (const mbsc_allowlist *)cfg),
                     MBSC_ERR_INVALID_ARG);
    mbsc_config_free(cfg);
}
END_TEST

START_TEST(incomplete_config_refused)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    mbsc_keypair kp;
    int err = 0;

    ck_assert_int_eq(mbsc_keypair_generate(&kp), MBSC_OK);
    ck_assert_ptr_null(mbsc_session_new(cfg, &err));
    ck_assert_int_eq(err, MBSC_ERR_STATE);
    ck_assert_int_eq(mbsc_config_set_keypair(cfg, &kp), MBSC_OK);
    ck_assert_ptr_null(mbsc_session_new(cfg, &err)); /* no peer key yet */
    ck_assert_int_eq(err, MBSC_ERR_STATE);
    ck_assert_ptr_null(mbsc_session_new(NULL, &err));
    ck_assert_int_eq(err, MBSC_ERR_INVALID_ARG);
    mbsc_config_free(cfg);
}
END_TEST

/* ---- input chunking ------------------------------------------------------------ */

/* The whole exchange one byte at a time, then many frames in one buffer. */
START_TEST(byte_at_a_time_and_many_frames_at_once)
{
    static uint8_t got[40][MBSC_MAX_PAYLOAD];
    static uint8_t buf[2 * (MBSC_MAX_FRAME_BODY + 2)];
    size_t got_len[40], n_got = 0, len, i;
    uint8_t payload[64];
    struct pair p;

    pair_config_max(&p, cipher_names[_i], MBSC_MAX_PAYLOAD); /* 40 frames queued at once */
    pair_sessions(&p);
    len = take_output(p.m, buf, sizeof buf);
    ck_assert_int_eq(feed_all(p.s, buf, len, 1, got, got_len, 40, &n_got), MBSC_OK);
    len = take_output(p.s, buf, sizeof buf);
    ck_assert_int_eq(feed_all(p.m, buf, len, 1, got, got_len, 40, &n_got), MBSC_OK);
    len = take_output(p.m, buf, sizeof buf); /* the confirmation keep-alive */
    ck_assert_int_eq(feed_all(p.s, buf, len, 1, got, got_len, 40, &n_got), MBSC_OK);
    ck_assert(mbsc_session_established(p.m) && mbsc_session_established(p.s));
    ck_assert_uint_eq(n_got, 0);

    /* 40 frames of 0..39 bytes, sealed back to back. */
    for (i = 0; i < 40; i++) {
        tu_fill_pattern(payload, i, (uint32_t)i + 7);
        ck_assert_int_eq(mbsc_session_send(p.m, payload, i), MBSC_OK);
    }
    len = take_output(p.m, buf, sizeof buf);
    /* All at once for chacha20, chunks of 7, 14, 21 bytes for the others. */
    ck_assert_int_eq(
        feed_all(p.s, buf, len, _i == 0 ? 0 : (size_t)_i * 7, got, got_len, 40, &n_got), MBSC_OK);
    ck_assert_uint_eq(n_got, 40);
    for (i = 0; i < 40; i++) {
        tu_fill_pattern(payload, i, (uint32_t)i + 7);
        ck_assert_uint_eq(got_len[i], i);
        ck_assert(i == 0 || memcmp(got[i], payload, i) == 0);
    }

    /* And the other direction one byte at a time. */
    n_got = 0;
    for (i = 0; i < 10; i++)
        ck_assert_int_eq(mbsc_session_send(p.s, payload, 30), MBSC_OK);
    len = take_output(p.s, buf, sizeof buf);
    ck_assert_int_eq(feed_all(p.m, buf, len, 1, got, got_len, 40, &n_got), MBSC_OK);
    ck_assert_uint_eq(n_got, 10);
    pair_free(&p);
}
END_TEST

/* ---- tampering ------------------------------------------------------------------ */

/*
 * Flip each bit of byte _i / 4 of a sealed frame (length bytes, ciphertext,
 * tag), each on a new pair.  The receiver must deliver nothing and fail,
 * whatever follows: a later genuine frame and enough padding to complete
 * any length.  One test per byte, not per bit: a forked test costs more
 * than its handshake under qemu-user and the sanitizers.
 */
START_TEST(every_bit_flip_rejected)
{
    static uint8_t got[4][MBSC_MAX_PAYLOAD];
    static uint8_t pad[MBSC_MAX_FRAME_BODY + 2];
    uint8_t frame[64], next[64], payload[20];
    size_t got_len[4], n_got = 0, len, next_len;
    int cipher = _i % (int)MBSC_CIPHER_COUNT;
    int byte = _i / (int)MBSC_CIPHER_COUNT;
    struct pair p;
    int bit, rc;

    tu_fill_pattern(payload, sizeof payload, 5);
    for (bit = byte * 8; bit < byte * 8 + 8; bit++) {
        pair_config(&p, cipher_names[cipher]);
        pair_sessions(&p);
        handshake(&p);
        ck_assert_int_eq(mbsc_session_send(p.m, payload, sizeof payload), MBSC_OK);
        len = take_output(p.m, frame, sizeof frame);
        ck_assert_uint_eq(len, sizeof payload + MBSC_FRAME_OVERHEAD);
        ck_assert_int_eq(mbsc_session_send(p.m, payload, sizeof payload), MBSC_OK);
        next_len = take_output(p.m, next, sizeof next);
        ck_assert_uint_lt((size_t)bit, len * 8);

        frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        n_got = 0;
        rc = feed_all(p.s, frame, len, 0, got, got_len, 4, &n_got);
        if (rc == MBSC_OK)
            rc = feed_all(p.s, next, next_len, 0, got, got_len, 4, &n_got);
        if (rc == MBSC_OK)
            rc = feed_all(p.s, pad, sizeof pad, 0, got, got_len, 4, &n_got);
        ck_assert_msg(rc == MBSC_ERR_BAD_TAG || rc == MBSC_ERR_FRAME_LENGTH, "bit %d: %s", bit,
                      mbsc_strerror(rc));
        ck_assert_msg(n_got == 0, "bit %d: %zu payloads delivered", bit, n_got);
        /* Sticky, and the session is done. */
        ck_assert_int_eq(mbsc_session_error(p.s), rc);
        ck_assert_int_eq(mbsc_session_send(p.s, payload, 1), rc);
        ck_assert(!mbsc_session_established(p.s));
        pair_free(&p);
    }
}
END_TEST

enum disorder { REPLAY, REORDER, DROP, DUPLICATE_LAST };

START_TEST(replay_reorder_drop_rejected)
{
    static uint8_t got[4][MBSC_MAX_PAYLOAD];
    uint8_t f[3][64], payload[12] = {0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 1};
    size_t flen[3], got_len[4], n_got = 0, i;
    const size_t *order;
    static const size_t orders[][3] = {[REPLAY] = {0, 0, 1},
                                       [REORDER] = {1, 0, 2},
                                       [DROP] = {0, 2, 1},
                                       [DUPLICATE_LAST] = {0, 1, 1}};
    size_t expect_ok[] = {[REPLAY] = 1, [REORDER] = 0, [DROP] = 1, [DUPLICATE_LAST] = 2};
    struct pair p;
    int rc = MBSC_OK;

    pair_config(&p, cipher_names[_i % 4]);
    pair_sessions(&p);
    handshake(&p);
    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(mbsc_session_send(p.m, payload, sizeof payload), MBSC_OK);
        flen[i] = take_output(p.m, f[i], sizeof f[i]);
    }
    order = orders[_i / 4];
    for (i = 0; i < 3 && rc == MBSC_OK; i++)
        rc = feed_all(p.s, f[order[i]], flen[order[i]], 0, got, got_len, 4, &n_got);
    ck_assert_int_eq(rc, MBSC_ERR_BAD_TAG);
    ck_assert_uint_eq(n_got, expect_ok[_i / 4]);
    pair_free(&p);
}
END_TEST

START_TEST(truncated_frame_at_eof)
{
    static uint8_t got[2][MBSC_MAX_PAYLOAD];
    uint8_t frame[64], payload[10] = {0};
    size_t got_len[2], n_got = 0, len;
    struct pair p;

    pair_config(&p, NULL);
    pair_sessions(&p);
    handshake(&p);
    ck_assert_int_eq(mbsc_session_send(p.m, payload, sizeof payload), MBSC_OK);
    len = take_output(p.m, frame, sizeof frame);
    ck_assert_int_eq(feed_all(p.s, frame, len - 1 - (size_t)_i, 0, got, got_len, 2, &n_got),
                     MBSC_OK);
    ck_assert_int_eq(mbsc_session_feed_eof(p.s), MBSC_ERR_TRUNCATED);
    ck_assert_int_eq(mbsc_session_error(p.s), MBSC_ERR_TRUNCATED);
    ck_assert_uint_eq(n_got, 0);
    /* A clean close between frames is not a truncation. */
    ck_assert_int_eq(mbsc_session_feed_eof(p.m), MBSC_ERR_PEER_CLOSED);
    pair_free(&p);
}
END_TEST

START_TEST(oversized_and_undersized_lengths)
{
    uint8_t hdr[2];
    size_t used;
    struct pair p;

    pair_config(&p, NULL);
    pair_sessions(&p);
    /* Before the handshake: a length above the limit fails at once. */
    mbsc_store16_be(hdr, (uint16_t)(MBSC_MAX_FRAME_BODY + 1));
    ck_assert_int_eq(mbsc_session_feed(p.s, hdr, 2, &used), MBSC_ERR_FRAME_LENGTH);
    pair_free(&p);

    pair_config(&p, NULL);
    pair_sessions(&p);
    handshake(&p);
    /* After it: a body shorter than a tag is impossible. */
    mbsc_store16_be(hdr, (uint16_t)(MBSC_TAG_BYTES - 1));
    ck_assert_int_eq(mbsc_session_feed(p.s, hdr, 2, &used), MBSC_ERR_FRAME_LENGTH);
    mbsc_store16_be(hdr, 0xffff);
    ck_assert_int_eq(mbsc_session_feed(p.m, hdr, 2, &used), MBSC_ERR_FRAME_LENGTH);
    pair_free(&p);
}
END_TEST

/* ---- handshake failures, each with its own error ------------------------------- */

START_TEST(wrong_slave_key)
{
    mbsc_keypair other;
    struct pair p;

    pair_config(&p, NULL);
    ck_assert_int_eq(mbsc_keypair_generate(&other), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(p.peers.mcfg, other.public_key), MBSC_OK);
    pair_sessions(&p);
    ck_assert_int_eq(deliver(p.m, p.s, NULL), MBSC_ERR_WRONG_PEER_KEY);
    {
        size_t len;
        mbsc_session_output(p.s, &len);
        ck_assert_uint_eq(len, 0); /* no answer */
    }
    mbsc_keypair_wipe(&other);
    pair_free(&p);
}
END_TEST

START_TEST(unknown_master_key)
{
    mbsc_keypair stranger;
    struct pair p;
    uint8_t key[32];
    size_t len;

    pair_config(&p, NULL);
    ck_assert_int_eq(mbsc_keypair_generate(&stranger), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_keypair(p.peers.mcfg, &stranger), MBSC_OK);
    pair_sessions(&p);
    ck_assert_int_eq(deliver(p.m, p.s, NULL), MBSC_ERR_UNKNOWN_PEER);
    mbsc_session_output(p.s, &len);
    ck_assert_uint_eq(len, 0);
    ck_assert_ptr_null(mbsc_session_peer_name(p.s));
    ck_assert_int_eq(mbsc_session_peer_public_key(p.s, key), MBSC_ERR_STATE);
    /* The refused key is there for the operator, and it is the stranger's. */
    ck_assert_int_eq(mbsc_session_refused_key(p.s, key), MBSC_OK);
    ck_assert_mem_eq(key, stranger.public_key, 32);
    mbsc_keypair_wipe(&stranger);
    pair_free(&p);
}
END_TEST

START_TEST(wrong_psk)
{
    uint8_t psk1[32], psk2[32];
    struct pair p;

    memset(psk1, 1, sizeof psk1);
    memset(psk2, 2, sizeof psk2);
    pair_config(&p, NULL);
    /* _i == 0: both have a PSK but differ; 1: only the master has one. */
    ck_assert_int_eq(mbsc_config_set_psk(p.peers.mcfg, psk1), MBSC_OK);
    if (_i == 0)
        ck_assert_int_eq(mbsc_config_set_psk(p.peers.scfg, psk2), MBSC_OK);
    pair_sessions(&p);
    ck_assert_int_eq(deliver(p.m, p.s, NULL), MBSC_OK); /* the slave cannot tell */
    ck_assert_int_eq(deliver(p.s, p.m, NULL), MBSC_ERR_PSK_MISMATCH);
    ck_assert(!mbsc_session_established(p.m));
    pair_free(&p);

    /* The same PSK on both sides works. */
    pair_config(&p, NULL);
    ck_assert_int_eq(mbsc_config_set_psk(p.peers.mcfg, psk1), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_psk(p.peers.scfg, psk1), MBSC_OK);
    pair_sessions(&p);
    handshake(&p);
    pair_free(&p);
}
END_TEST

START_TEST(no_common_cipher)
{
    struct pair p;
    size_t len;

    pair_config(&p, "trivium,rabbit");
    ck_assert_int_eq(mbsc_config_set_ciphers(p.peers.scfg, "chacha20,enocoro128v2"), MBSC_OK);
    pair_sessions(&p);
    ck_assert_int_eq(deliver(p.m, p.s, NULL), MBSC_ERR_NO_COMMON_CIPHER);
    mbsc_session_output(p.s, &len);
    ck_assert_uint_eq(len, 0);
    pair_free(&p);
}
END_TEST

/*
 * A man in the middle rewrites the cipher offer.  He cannot read it (it is
 * encrypted), so he flips bits of the payload part of message 1: byte _i
 * of the 6-byte offer plus its 16-byte tag.  The handshake fails.
 */
START_TEST(offer_rewritten_in_transit)
{
    uint8_t msg[256];
    size_t len, used;
    struct pair p;
    /* frame header, e, encrypted s: then the encrypted offer */
    size_t offer_at = 2 + 32 + 48;

    pair_config(&p, NULL);
    pair_sessions(&p);
    len = take_output(p.m, msg, sizeof msg);
    ck_assert_uint_eq(len, offer_at + 6 + 16);
    msg[offer_at + (size_t)_i] ^= 0x03; /* e.g. turn id 1 into 2 */
    ck_assert_int_eq(mbsc_session_feed(p.s, msg, len, &used), MBSC_ERR_HANDSHAKE_DECRYPT);
    ck_assert(!mbsc_session_established(p.s));
    pair_free(&p);
}
END_TEST

/*
 * Offers built by hand with a raw Noise initiator: malformed ones fail with
 * their own error; unknown ids, id 0 and repeats are skipped.
 */
static int slave_reads_offer(const uint8_t *offer, size_t offer_len, unsigned *chosen)
{
    uint8_t msg[512];
    size_t len = 0, used;
    struct pair p;
    mbsc_noise hs;
    int rc;

    pair_config(&p, NULL);
    pair_sessions(&p);
    ck_assert_int_eq(mbsc_noise_init(&hs, MBSC_NOISE_IKPSK2, 1, (const uint8_t *)"mbsc/1", 6,
                                     p.peers.master_kp.private_key, p.peers.slave_kp.public_key,
                                     NULL),
                     MBSC_OK);
    ck_assert_int_eq(mbsc_noise_write_message(&hs, offer, offer_len, msg + 2, sizeof msg - 2, &len),
                     MBSC_OK);
    mbsc_store16_be(msg, (uint16_t)len);
    rc = mbsc_session_feed(p.s, msg, len + 2, &used);
    *chosen = 0;
    if (rc == MBSC_OK) {
        /* The slave is not confirmed yet: read its choice from message 2. */
        uint8_t choice[16];
        size_t out_len, choice_len = 0;
        const uint8_t *out = mbsc_session_output(p.s, &out_len);

        ck_assert_uint_gt(out_len, 2);
        ck_assert_int_eq(
            mbsc_noise_read_message(&hs, out + 2, out_len - 2, choice, sizeof choice, &choice_len),
            MBSC_OK);
        ck_assert_uint_eq(choice_len, 1);
        *chosen = choice[0];
    }
    mbsc_noise_wipe(&hs);
    pair_free(&p);
    return rc;
}

START_TEST(malformed_offers)
{
    static const uint8_t v2[] = {2, 1, 1}, count0[] = {1, 0}, short1[] = {1, 2, 1},
                         trailing[] = {1, 1, 1, 0}, empty[] = {0};
    uint8_t count17[2 + 17];
    static const uint8_t skip[] = {1, 5, 0, 9, 3, 3, 1}; /* 0 and 9 unknown: pick 3 */
    unsigned chosen;

    ck_assert_int_eq(slave_reads_offer(v2, sizeof v2, &chosen), MBSC_ERR_BAD_VERSION);
    ck_assert_int_eq(slave_reads_offer(empty, 0, &chosen), MBSC_ERR_BAD_VERSION);
    ck_assert_int_eq(slave_reads_offer(count0, sizeof count0, &chosen), MBSC_ERR_BAD_OFFER);
    ck_assert_int_eq(slave_reads_offer(short1, sizeof short1, &chosen), MBSC_ERR_BAD_OFFER);
    ck_assert_int_eq(slave_reads_offer(trailing, sizeof trailing, &chosen), MBSC_ERR_BAD_OFFER);
    memset(count17, 1, sizeof count17);
    count17[1] = 17;
    ck_assert_int_eq(slave_reads_offer(count17, sizeof count17, &chosen), MBSC_ERR_BAD_OFFER);
    ck_assert_int_eq(slave_reads_offer(skip, sizeof skip, &chosen), MBSC_OK);
    ck_assert_uint_eq(chosen, 3);
}
END_TEST

/* A slave (raw Noise responder) that picks a cipher the master did not offer. */
START_TEST(choice_not_offered)
{
    uint8_t msg[512], payload[64];
    size_t len, plen, used;
    struct pair p;
    mbsc_noise hs;
    uint8_t choice = _i == 0 ? 3 : 9; /* offered list is chacha20 only */

    pair_config(&p, "chacha20");
    pair_sessions(&p);
    len = take_output(p.m, msg, sizeof msg);
    ck_assert_int_eq(mbsc_noise_init(&hs, MBSC_NOISE_IKPSK2, 0, (const uint8_t *)"mbsc/1", 6,
                                     p.peers.slave_kp.private_key, NULL, NULL),
                     MBSC_OK);
    ck_assert_int_eq(mbsc_noise_read_message(&hs, msg + 2, len - 2, payload, sizeof payload, &plen),
                     MBSC_OK);
    ck_assert_int_eq(mbsc_noise_write_message(&hs, &choice, 1, msg + 2, sizeof msg - 2, &len),
                     MBSC_OK);
    mbsc_store16_be(msg, (uint16_t)len);
    ck_assert_int_eq(mbsc_session_feed(p.m, msg, len + 2, &used), MBSC_ERR_BAD_CHOICE);
    mbsc_noise_wipe(&hs);
    pair_free(&p);
}
END_TEST

/* ---- API misuse leaves the session intact ------------------------------------- */

START_TEST(caller_mistakes_are_not_fatal)
{
    static uint8_t big[MBSC_MAX_PAYLOAD + 1];
    uint8_t small[4];
    size_t len, n = 0;
    struct pair p;
    int rc, sent = 0;

    pair_config_max(&p, NULL, MBSC_MAX_PAYLOAD);
    pair_sessions(&p);
    ck_assert_int_eq(mbsc_session_send(p.m, small, 1), MBSC_ERR_STATE);
    ck_assert_int_eq(mbsc_session_recv(p.m, small, sizeof small, &len), 0);
    handshake(&p);
    ck_assert_int_eq(mbsc_session_send(p.m, big, sizeof big), MBSC_ERR_PAYLOAD_TOO_LONG);
    ck_assert_int_eq(mbsc_session_send(p.m, NULL, 3), MBSC_ERR_INVALID_ARG);
    /* Fill the output until it refuses, then drain it: nothing is lost. */
    while ((rc = mbsc_session_send(p.m, big, MBSC_MAX_PAYLOAD)) == MBSC_OK)
        sent++;
    ck_assert_int_eq(rc, MBSC_ERR_WOULD_BLOCK);
    ck_assert_int_ge(sent, 2);
    ck_assert_int_eq(deliver(p.m, p.s, &n), MBSC_OK);
    ck_assert_uint_eq(n, (size_t)sent);
    /* A payload larger than the caller's buffer stays until it fits. */
    round_trip(p.m, p.s, big, 3);
    ck_assert_int_eq(mbsc_session_send(p.m, big, 10), MBSC_OK);
    {
        uint8_t buf[64];
        size_t used, blen = take_output(p.m, buf, sizeof buf);
        ck_assert_int_eq(mbsc_session_feed(p.s, buf, blen, &used), MBSC_OK);
        ck_assert_int_eq(mbsc_session_recv(p.s, small, sizeof small, &len),
                         MBSC_ERR_BUFFER_TOO_SMALL);
        ck_assert_int_eq(mbsc_session_recv(p.s, buf, sizeof buf, &len), 1);
        ck_assert_uint_eq(len, 10);
    }
    ck_assert(mbsc_session_established(p.m) && mbsc_session_established(p.s));
    pair_free(&p);
}
END_TEST

/* ---- rekey --------------------------------------------------------------------- */

/*
 * Frames up to 65540 in both directions, request/response: the rekey before
 * frame 65536 happens on each side independently and must agree.
 * Loop: cipher _i % 4; from 4 on, both sides refill their keystream between
 * frames.  The first cipher of each half walks every frame from 0, so the
 * counters are seen to reach the boundary by themselves; the others start
 * 10 frames before it (counters set as if those frames had passed): the
 * counting is the same code for every cipher, and the whole walk takes
 * minutes under qemu-user and the sanitizers.
 */
START_TEST(rekey_boundary_both_directions)
{
    uint8_t req[12] = {0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 1}, buf[64], got[64];
    size_t len, used, glen;
    uint32_t i, first = _i % (int)MBSC_CIPHER_COUNT == 0 ? 0 : MBSC_REKEY_AFTER_FRAMES - 10;
    struct pair p;

    pair_config(&p, cipher_names[_i % (int)MBSC_CIPHER_COUNT]);
    pair_sessions(&p);
    handshake(&p);
    if (first != 0) {
        ck_assert_int_eq(mbsc_session_set_counters_for_testing(p.m, first, first), MBSC_OK);
        ck_assert_int_eq(mbsc_session_set_counters_for_testing(p.s, first, first), MBSC_OK);
    }
    for (i = first; i <= MBSC_REKEY_AFTER_FRAMES + 4; i++) {
        req[0] = (uint8_t)(i >> 8);
        req[1] = (uint8_t)i;
        ck_assert_int_eq(mbsc_session_send(p.m, req, sizeof req), MBSC_OK);
        len = take_output(p.m, buf, sizeof buf);
        ck_assert_int_eq(mbsc_session_feed(p.s, buf, len, &used), MBSC_OK);
        ck_assert_msg(mbsc_session_recv(p.s, got, sizeof got, &glen) == 1, "frame %u", i);
        ck_assert(glen == sizeof req && memcmp(got, req, glen) == 0);
        ck_assert_int_eq(mbsc_session_send(p.s, got, glen), MBSC_OK);
        len = take_output(p.s, buf, sizeof buf);
        ck_assert_int_eq(mbsc_session_feed(p.m, buf, len, &used), MBSC_OK);
        ck_assert_msg(mbsc_session_recv(p.m, got, sizeof got, &glen) == 1, "frame %u", i);
        ck_assert(glen == sizeof req && memcmp(got, req, glen) == 0);
        if (_i >= (int)MBSC_CIPHER_COUNT) {
            mbsc_session_refill(p.m);
            mbsc_session_refill(p.s);
        }
    }
    pair_free(&p);
}
END_TEST

/* ---- key confirmation ------------------------------------------------------------ */

/*
 * A captured message 1 replayed to a fresh slave: it answers, but without
 * the master's ephemeral key nobody can seal a frame it opens, so it never
 * becomes established nor names the master; any frame fails it and wipes
 * the name it had learnt.
 */
START_TEST(replayed_message1_never_confirms)
{
    static uint8_t m1[MBSC_MAX_FRAME_BODY + 2], forged[64];
    mbsc_session *replay;
    struct pair p;
    size_t m1_len, used, n = 0;
    uint8_t key[32];
    int err;

    pair_config(&p, NULL);
    pair_sessions(&p);
    m1_len = take_output(p.m, m1, sizeof m1);
    ck_assert_int_eq(mbsc_session_feed(p.s, m1, m1_len, &used), MBSC_OK);
    handshake_rest(&p);

    replay = mbsc_session_new(p.peers.scfg, &err);
    ck_assert_ptr_nonnull(replay);
    ck_assert_int_eq(mbsc_session_feed(replay, m1, m1_len, &used), MBSC_OK);
    ck_assert(!mbsc_session_established(replay));
    ck_assert_ptr_null(mbsc_session_peer_name(replay));
    ck_assert_ptr_null(mbsc_session_peer_role(replay));
    ck_assert_ptr_null(mbsc_session_cipher(replay));
    ck_assert_int_eq(mbsc_session_peer_public_key(replay, key), MBSC_ERR_STATE);
    ck_assert_uint_eq(mbsc_session_state(replay) & MBSC_SESSION_ESTABLISHED, 0);
    /* The slave never sends a frame before it is confirmed. */
    ck_assert_int_eq(mbsc_session_send(replay, forged, 4), MBSC_ERR_STATE);

    /* The real master's keep-alive belongs to the other session's keys. */
    ck_assert_int_eq(mbsc_session_send(p.m, NULL, 0), MBSC_OK);
    ck_assert_int_eq(deliver(p.m, replay, &n), MBSC_ERR_BAD_TAG);
    ck_assert(!mbsc_session_established(replay));
    ck_assert_ptr_null(mbsc_session_peer_name(replay));
    ck_assert_uint_ne(mbsc_session_state(replay) & MBSC_SESSION_CLOSED, 0);
    mbsc_session_free(replay);
    pair_free(&p);
}
END_TEST

/* A confirmed slave that fails later forgets its peer's name, role and key. */
START_TEST(failed_session_forgets_peer)
{
    static uint8_t junk[40];
    struct pair p;
    uint8_t key[32];
    size_t used;

    pair_config(&p, NULL);
    pair_sessions(&p);
    handshake(&p);
    ck_assert_str_eq(mbsc_session_peer_name(p.s), "plc-1");
    ck_assert_str_eq(mbsc_session_peer_role(p.s), "operator");
    ck_assert_int_eq(mbsc_session_peer_public_key(p.s, key), MBSC_OK);
    mbsc_store16_be(junk, (uint16_t)(sizeof junk - 2));
    ck_assert_int_eq(mbsc_session_feed(p.s, junk, sizeof junk, &used), MBSC_ERR_BAD_TAG);
    ck_assert_ptr_null(mbsc_session_peer_name(p.s));
    ck_assert_ptr_null(mbsc_session_peer_role(p.s));
    ck_assert_int_eq(mbsc_session_peer_public_key(p.s, key), MBSC_ERR_STATE);
    ck_assert_int_eq(mbsc_session_refused_key(p.s, key), MBSC_ERR_STATE);
    pair_free(&p);
}
END_TEST

/* A first frame with a payload confirms and is delivered (only an empty one is kept). */
START_TEST(first_request_confirms_too)
{
    static uint8_t buf[2 * (MBSC_MAX_FRAME_BODY + 2)];
    static const uint8_t req[] = {0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 1};
    struct pair p;
    uint8_t got[64];
    size_t len, used, glen;

    pair_config(&p, NULL);
    pair_sessions(&p);
    ck_assert_int_eq(deliver(p.m, p.s, NULL), MBSC_OK);
    ck_assert_int_eq(deliver(p.s, p.m, NULL), MBSC_OK);
    /* Drop the keep-alive in transit: the request is then frame 0... which
     * does not open, because the master sealed it as frame 1. */
    len = take_output(p.m, buf, sizeof buf);
    ck_assert_uint_eq(len, MBSC_FRAME_OVERHEAD);
    ck_assert_int_eq(mbsc_session_send(p.m, req, sizeof req), MBSC_OK);
    len = take_output(p.m, buf, sizeof buf);
    ck_assert_int_eq(mbsc_session_feed(p.s, buf, len, &used), MBSC_ERR_BAD_TAG);
    pair_free(&p);

    /* Keep-alive and request in one segment: confirmed, and the request arrives. */
    pair_config(&p, NULL);
    pair_sessions(&p);
    ck_assert_int_eq(deliver(p.m, p.s, NULL), MBSC_OK);
    ck_assert_int_eq(deliver(p.s, p.m, NULL), MBSC_OK);
    ck_assert_int_eq(mbsc_session_send(p.m, req, sizeof req), MBSC_OK);
    len = take_output(p.m, buf, sizeof buf);
    ck_assert_uint_eq(len, 2 * MBSC_FRAME_OVERHEAD + sizeof req);
    ck_assert_int_eq(mbsc_session_feed(p.s, buf, len, &used), MBSC_OK);
    ck_assert_uint_eq(used, len);
    ck_assert(mbsc_session_established(p.s));
    ck_assert_int_eq(mbsc_session_recv(p.s, got, sizeof got, &glen), 1);
    ck_assert(glen == sizeof req && memcmp(got, req, glen) == 0);
    pair_free(&p);
}
END_TEST

/* ---- driver API ------------------------------------------------------------------- */

/* Flags follow the session; zero-copy input and payloads work in any chunking. */
START_TEST(state_query_and_zero_copy)
{
    static uint8_t wire[2 * (MBSC_MAX_FRAME_BODY + 2)];
    uint8_t payload[100];
    struct pair p;
    size_t len, room, plen, pos, i, n_got = 0;
    unsigned st;
    size_t chunk = (size_t)_i + 1;

    pair_config(&p, NULL);
    pair_sessions(&p);
    st = mbsc_session_state(p.m);
    ck_assert_uint_eq(st, MBSC_SESSION_SEND | MBSC_SESSION_RECV);
    ck_assert_uint_eq(mbsc_session_state(p.s), MBSC_SESSION_RECV);
    handshake(&p);
    ck_assert_uint_eq(mbsc_session_state(p.s), MBSC_SESSION_RECV | MBSC_SESSION_ESTABLISHED);

    for (i = 0; i < 3; i++) {
        tu_fill_pattern(payload, sizeof payload, (uint32_t)i);
        ck_assert_int_eq(mbsc_session_send(p.m, payload, sizeof payload - i), MBSC_OK);
    }
    len = take_output(p.m, wire, sizeof wire);
    for (pos = 0; pos < len;) {
        uint8_t *dst = mbsc_session_input_buf(p.s, &room);
        size_t take = len - pos < chunk ? len - pos : chunk;

        ck_assert_uint_gt(room, 0);
        if (take > room)
            take = room;
        memcpy(dst, wire + pos, take);
        pos += take;
        ck_assert_int_eq(mbsc_session_input_ack(p.s, take), MBSC_OK);
        while (mbsc_session_state(p.s) & MBSC_SESSION_PAYLOAD) {
            const uint8_t *got = mbsc_session_payload(p.s, &plen);

            tu_fill_pattern(payload, sizeof payload, (uint32_t)n_got);
            ck_assert_ptr_nonnull(got);
            ck_assert_uint_eq(plen, sizeof payload - n_got);
            ck_assert(memcmp(got, payload, plen) == 0);
            ck_assert_int_eq(mbsc_session_payload_ack(p.s), MBSC_OK);
            n_got++;
        }
    }
    ck_assert_uint_eq(n_got, 3);
    ck_assert_ptr_null(mbsc_session_payload(p.s, &plen));
    /* More than offered is refused and changes nothing. */
    (void)mbsc_session_input_buf(p.s, &room);
    ck_assert_int_eq(mbsc_session_input_ack(p.s, room + 1), MBSC_ERR_INVALID_ARG);
    ck_assert(mbsc_session_established(p.s));
    ck_assert_int_eq(mbsc_session_send(p.s, payload, 10), MBSC_OK);
    ck_assert_uint_ne(mbsc_session_state(p.s) & MBSC_SESSION_SEND, 0);
    ck_assert_int_eq(mbsc_session_feed_eof(p.s), MBSC_ERR_PEER_CLOSED);
    st = mbsc_session_state(p.s);
    ck_assert_uint_eq(st & (MBSC_SESSION_CLOSED | MBSC_SESSION_RECV | MBSC_SESSION_SEND),
                      MBSC_SESSION_CLOSED);
    (void)mbsc_session_input_buf(p.s, &room);
    ck_assert_uint_eq(room, 0);
    pair_free(&p);
}
END_TEST

/* Frames buffered behind a waiting payload fill the input; taking it makes room. */
START_TEST(input_full_behind_payload)
{
    static uint8_t wire[4 * (MBSC_MAX_FRAME_BODY + 2)], big[MBSC_MAX_PAYLOAD];
    struct pair p;
    size_t len, room, pos = 0, plen, n_got = 0;

    pair_config_max(&p, NULL, MBSC_MAX_PAYLOAD);
    pair_sessions(&p);
    handshake(&p);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(mbsc_session_send(p.m, big, sizeof big), MBSC_OK);
        len = take_output(p.m, wire + pos, sizeof wire - pos);
        pos += len;
    }
    len = pos;
    pos = 0;
    while (pos < len) {
        uint8_t *dst = mbsc_session_input_buf(p.s, &room);
        size_t take = len - pos < room ? len - pos : room;

        if (room == 0) {
            ck_assert_uint_eq(mbsc_session_state(p.s) & MBSC_SESSION_RECV, 0);
            ck_assert_ptr_nonnull(mbsc_session_payload(p.s, &plen));
            ck_assert_int_eq(mbsc_session_payload_ack(p.s), MBSC_OK);
            n_got++;
            continue;
        }
        memcpy(dst, wire + pos, take);
        pos += take;
        ck_assert_int_eq(mbsc_session_input_ack(p.s, take), MBSC_OK);
    }
    while (mbsc_session_payload(p.s, &plen) != NULL) {
        ck_assert_uint_eq(plen, sizeof big);
        ck_assert_int_eq(mbsc_session_payload_ack(p.s), MBSC_OK);
        n_got++;
    }
    ck_assert_uint_eq(n_got, 3);
    pair_free(&p);
}
END_TEST

/* ---- small sessions ------------------------------------------------------------ */

START_TEST(max_payload_setting_and_footprint)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    size_t modbus, large;

    ck_assert_ptr_nonnull(cfg);
    ck_assert_uint_eq(mbsc_config_max_payload(cfg), 260);
    ck_assert_int_eq(mbsc_config_set_max_payload(cfg, MBSC_MAX_PAYLOAD + 1), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_config_set_max_payload(NULL, 100), MBSC_ERR_INVALID_ARG);
    ck_assert_uint_eq(mbsc_config_max_payload(cfg), 260); /* unchanged */
    modbus = mbsc_config_session_footprint(cfg);
    /* The goal of issue 11: a Modbus session, buffers included, under 3,000 bytes. */
    ck_assert_uint_lt(modbus, 3000);
    ck_assert_uint_eq(modbus, mbsc_session_footprint());
    ck_assert_uint_eq(modbus, mbsc_config_session_footprint(NULL));
    ck_assert_int_eq(mbsc_config_set_max_payload(cfg, MBSC_MAX_PAYLOAD), MBSC_OK);
    large = mbsc_config_session_footprint(cfg);
    /* Input and output each hold two largest frames, plus the payload. */
    ck_assert_uint_ge(large - modbus, 5 * (MBSC_MAX_PAYLOAD - 260));
    ck_assert_int_eq(mbsc_config_set_max_payload(cfg, 0), MBSC_OK);
    ck_assert_uint_le(mbsc_config_session_footprint(cfg), modbus);
    mbsc_config_free(cfg);
}
END_TEST

/*
 * The reserve a direction keeps for its cipher state fits every
 * implementation of every cipher (the registry refuses one that does not,
 * which would fail every handshake with that cipher).
 */
START_TEST(cipher_state_reserve_fits)
{
    for (unsigned id = 1; id <= MBSC_CIPHER_COUNT; id++) {
        const mbsc_cipher *c = mbsc_cipher_by_id(id);
        ck_assert_uint_le(mbsc_cipher_state_bytes(c), MBSC_RECORD_STATE_BYTES);
        ck_assert_uint_le(MBSC_RECORD_STATE_BYTES, MBSC_STREAM_STATE_BYTES);
    }
}
END_TEST

/*
 * Loop: the slave keeps the default limit (260) or 0, the master is
 * configured for 4080 bytes.  A 260-byte payload passes (the limit is
 * inclusive); one byte more fails the slave when the frame's length prefix
 * arrives: nothing of its body is read, and the session is closed.
 */
START_TEST(frame_above_configured_maximum)
{
    static uint8_t payload[MBSC_DEFAULT_MAX_PAYLOAD + 1], buf[2 * (MBSC_MAX_FRAME_BODY + 2)];
    size_t limit = _i == 0 ? MBSC_DEFAULT_MAX_PAYLOAD : 0, len, used, n = 0, room;
    struct pair p;

    pair_config(&p, NULL);
    ck_assert_int_eq(mbsc_config_set_max_payload(p.peers.mcfg, MBSC_MAX_PAYLOAD), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_max_payload(p.peers.scfg, limit), MBSC_OK);
    pair_sessions(&p);
    handshake(&p);
    tu_fill_pattern(payload, sizeof payload, 5);
    ck_assert_int_eq(mbsc_session_send(p.m, payload, limit), MBSC_OK);
    ck_assert_int_eq(deliver(p.m, p.s, &n), MBSC_OK);
    ck_assert_uint_eq(n, 1);
    /* The slave's own sends keep to its limit, without harm. */
    ck_assert_int_eq(mbsc_session_send(p.s, payload, limit + 1), MBSC_ERR_PAYLOAD_TOO_LONG);
    ck_assert(mbsc_session_established(p.s));

    ck_assert_int_eq(mbsc_session_send(p.m, payload, limit + 1), MBSC_OK);
    len = take_output(p.m, buf, sizeof buf);
    ck_assert_uint_eq(len, limit + 1 + MBSC_FRAME_OVERHEAD);
    ck_assert_int_eq(mbsc_session_feed(p.s, buf, 1, &used), MBSC_OK); /* half a prefix */
    ck_assert_int_eq(mbsc_session_feed(p.s, buf + 1, len - 1, &used), MBSC_ERR_FRAME_LENGTH);
    ck_assert_uint_le(used, 1);
    ck_assert_int_eq(mbsc_session_error(p.s), MBSC_ERR_FRAME_LENGTH);
    ck_assert(mbsc_session_state(p.s) & MBSC_SESSION_CLOSED);
    (void)mbsc_session_input_buf(p.s, &room);
    ck_assert_uint_eq(room, 0);
    pair_free(&p);
}
END_TEST

/* Frame sizes for the buffered-record test: around block and buffer edges. */
static const size_t record_sizes[] = {0,  1,   12,  31, 32, 33,   63,   64,
                                      65, 100, 260, 0,  0,  1000, 4080, 7};

/*
 * Loop: cipher _i % 4, keystream buffer _i / 4 of {1, 48, 304, 1024} bytes.
 * A buffered sealer against an unbuffered one with the same key: the same
 * frames, byte for byte, over every size, whatever the refill pattern, and
 * across two rekeys (the counters are moved to just before the boundaries,
 * on both sides alike); an unbuffered opener opens the buffered frames and
 * a buffered opener the unbuffered ones.
 */
START_TEST(buffered_records_same_bytes)
{
    static const size_t caps[4] = {1, 48, 304, 1024};
    static uint8_t ks_seal[1024], ks_open[1024];
    static uint8_t payload[MBSC_MAX_PAYLOAD], a[MBSC_MAX_PAYLOAD + 18], b[MBSC_MAX_PAYLOAD + 18];
    static uint8_t opened[MBSC_MAX_PAYLOAD];
    const mbsc_cipher *c = mbsc_cipher_by_id((unsigned)(_i % (int)MBSC_CIPHER_COUNT) + 1);
    size_t cap = caps[_i / (int)MBSC_CIPHER_COUNT];
    struct mbsc_record_dir plain_tx, buf_tx, plain_rx, buf_rx;
    uint8_t k[MBSC_DIRECTION_KEY_BYTES];
    unsigned frame;

    tu_fill_pattern(k, sizeof k, (uint32_t)_i + 11);
    ck_assert_int_eq(mbsc_record_init(&plain_tx, c, k), MBSC_OK);
    ck_assert_int_eq(mbsc_record_init_buffered(&buf_tx, c, k, ks_seal, cap), MBSC_OK);
    ck_assert_int_eq(mbsc_record_init(&plain_rx, c, k), MBSC_OK);
    ck_assert_int_eq(mbsc_record_init_buffered(&buf_rx, c, k, ks_open, cap), MBSC_OK);
    for (frame = 0; frame < 160; frame++) {
        size_t n = record_sizes[frame % (sizeof record_sizes / sizeof record_sizes[0])];
        long la, lb;

        if (frame == 50 || frame == 100) {
            /* Just before frame 65536, then 131072: the next rekeys come soon. */
            uint64_t to = (frame == 50 ? 1u : 2u) * (uint64_t)MBSC_REKEY_AFTER_FRAMES - 3;
            ck_assert_uint_eq(plain_tx.counter, buf_tx.counter);
            plain_tx.counter = buf_tx.counter = plain_rx.counter = buf_rx.counter = to;
            if (frame == 100) /* the key of epoch 1 was taken at frame 65536 already */
                ck_assert_uint_eq(buf_tx.epoch, 1);
        }
        tu_fill_pattern(payload, n, frame);
        la = mbsc_record_seal(&plain_tx, a, sizeof a, payload, n);
        lb = mbsc_record_seal(&buf_tx, b, sizeof b, payload, n);
        ck_assert_int_eq(la, (long)(n + MBSC_FRAME_OVERHEAD));
        ck_assert_int_eq(lb, la);
        ck_assert_msg(memcmp(a, b, (size_t)la) == 0, "frame %u (%zu bytes) differs", frame, n);
        /* Cross-open: each opener gets the other sealer's frame. */
        ck_assert_int_eq(mbsc_record_open(&buf_rx, opened, a + 2, (size_t)la - 2), (long)n);
        ck_assert(n == 0 || memcmp(opened, payload, n) == 0);
        ck_assert_int_eq(mbsc_record_open(&plain_rx, opened, b + 2, (size_t)lb - 2), (long)n);
        ck_assert(n == 0 || memcmp(opened, payload, n) == 0);
        /* Refill patterns: always, every third frame, twice in a row, with a want. */
        if (frame % 2 == 0)
            mbsc_record_refill(&buf_tx, 0);
        if (frame % 3 == 0) {
            mbsc_record_refill(&buf_rx, 40);
            mbsc_record_refill(&buf_rx, 0);
        }
        /* A refill on a direction without a buffer changes nothing. */
        mbsc_record_refill(&plain_tx, 0);
    }
    ck_assert_uint_eq(buf_tx.epoch, 2);
    /* A failure wipes the buffered keystream with the rest. */
    ck_assert_int_eq(mbsc_record_open(&buf_rx, opened, a + 2, 16), MBSC_ERR_BAD_TAG);
    for (size_t j = 0; j < cap; j++)
        ck_assert_uint_eq(ks_open[j], 0);
    mbsc_record_wipe(&buf_tx);
    for (size_t j = 0; j < cap; j++)
        ck_assert_uint_eq(ks_seal[j], 0);
    mbsc_record_wipe(&plain_tx);
    mbsc_record_wipe(&plain_rx);
    mbsc_record_wipe(&buf_rx);
}
END_TEST

Suite *session_suite(void)
{
    Suite *s = suite_create("session");
    TCase *tc;

    tc = tcase_create("handshake_and_payloads");
    tcase_add_loop_test(tc, every_cipher_every_size, 0, 2 * (int)MBSC_CIPHER_COUNT);
    tcase_add_test(tc, default_policy_picks_chacha20);
    tcase_add_test(tc, masters_order_decides);
    tcase_add_test(tc, cipher_list_parsing);
    tcase_add_test(tc, incomplete_config_refused);
    tcase_add_loop_test(tc, byte_at_a_time_and_many_frames_at_once, 0, MBSC_CIPHER_COUNT);
    tcase_add_test(tc, caller_mistakes_are_not_fatal);
    suite_add_tcase(s, tc);

    tc = tcase_create("tampering");
    /* 38-byte frame (20-byte payload): 304 bits, a test per byte and cipher */
    tcase_add_loop_test(tc, every_bit_flip_rejected, 0, (int)MBSC_CIPHER_COUNT * 38);
    tcase_add_loop_test(tc, replay_reorder_drop_rejected, 0, 4 * 4);
    tcase_add_loop_test(tc, truncated_frame_at_eof, 0, 10);
    tcase_add_test(tc, oversized_and_undersized_lengths);
    suite_add_tcase(s, tc);

    tc = tcase_create("handshake_failures");
    tcase_add_test(tc, wrong_slave_key);
    tcase_add_test(tc, unknown_master_key);
    tcase_add_loop_test(tc, wrong_psk, 0, 2);
    tcase_add_test(tc, no_common_cipher);
    tcase_add_loop_test(tc, offer_rewritten_in_transit, 0, 6 + 16);
    tcase_add_test(tc, malformed_offers);
    tcase_add_loop_test(tc, choice_not_offered, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("key_confirmation");
    tcase_add_test(tc, replayed_message1_never_confirms);
    tcase_add_test(tc, failed_session_forgets_peer);
    tcase_add_test(tc, first_request_confirms_too);
    suite_add_tcase(s, tc);

    tc = tcase_create("small_sessions");
    tcase_add_test(tc, max_payload_setting_and_footprint);
    tcase_add_test(tc, cipher_state_reserve_fits);
    tcase_add_loop_test(tc, frame_above_configured_maximum, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("driver_api");
    tcase_add_loop_test(tc, state_query_and_zero_copy, 0, 40);
    tcase_add_test(tc, input_full_behind_payload);
    suite_add_tcase(s, tc);

    tc = tcase_create("rekey");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, rekey_boundary_both_directions, 0, 2 * (int)MBSC_CIPHER_COUNT);
    tcase_add_loop_test(tc, buffered_records_same_bytes, 0, (int)MBSC_CIPHER_COUNT * 4);
    suite_add_tcase(s, tc);
    return s;
}
