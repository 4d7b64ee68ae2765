/* SPDX-License-Identifier: ISC */
/*
 * check_protocol.c - the mbsc/1 wire protocol against
 * tests/vectors/mbsc1/protocol_vectors.json, produced by an independent
 * implementation written from the protocol description (see that folder's README.md):
 * key derivation and rekey, whole handshakes with fixed ephemeral keys,
 * and one direction of records per cipher across the first rekey.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "mbsc.h"
#include "record/record.h"
#include "session/session_internal.h"
#include "testutil.h"

Suite *protocol_suite(void);

static json_value *vectors;

static const json_value *section(const char *name)
{
    const json_value *v = json_get(vectors, name);
    ck_assert_msg(v != NULL && json_type_of(v) == JSON_ARRAY, "no array '%s'", name);
    return v;
}

/* Decode field `name` of obj as hex of exactly len bytes (len 0: any). */
static size_t hex_field(const json_value *obj, const char *name, uint8_t *out, size_t cap)
{
    const char *hex = json_string(json_get(obj, name));
    long n;

    ck_assert_msg(hex != NULL, "missing field %s", name);
    n = tu_hex_decode(out, cap, hex, strlen(hex));
    ck_assert_msg(n >= 0, "field %s: bad hex or longer than %zu bytes", name, cap);
    return (size_t)n;
}

static unsigned int_field(const json_value *obj, const char *name)
{
    int64_t v;
    ck_assert_msg(json_int(json_get(obj, name), &v) == 1, "missing integer %s", name);
    return (unsigned)v;
}

static void assert_bytes(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len,
                         const char *what, int index)
{
    ck_assert_msg(got_len == want_len, "vector %d, %s: %zu bytes, expected %zu", index, what,
                  got_len, want_len);
    for (size_t i = 0; i < want_len; i++)
        ck_assert_msg(got[i] == want[i], "vector %d, %s: byte %zu is %02x, expected %02x", index,
                      what, i, got[i], want[i]);
}

/* ---- key derivation ------------------------------------------------------- */

START_TEST(key_derivation)
{
    const json_value *v = json_at(section("key_derivation"), (size_t)_i);
    uint8_t k[32], want[64], ks[64], next[32];
    const mbsc_cipher *c;
    mbsc_stream st;

    ck_assert_uint_eq(hex_field(v, "k", k, sizeof k), 32);
    c = mbsc_cipher_by_id(int_field(v, "cipher_id"));
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(mbsc_record_derive_stream(&st, c, k), MBSC_OK);
    memset(ks, 0, sizeof ks);
    mbsc_stream_xor(&st, ks, ks, sizeof ks);
    ck_assert_uint_eq(hex_field(v, "keystream_first_64", want, sizeof want), 64);
    assert_bytes(ks, 64, want, 64, "first 64 keystream bytes", _i);

    memcpy(next, k, 32);
    mbsc_record_next_key(next);
    ck_assert_uint_eq(hex_field(v, "rekeyed_k", want, sizeof want), 32);
    assert_bytes(next, 32, want, 32, "rekeyed k", _i);
    mbsc_stream_wipe(&st);
}
END_TEST

/* ---- whole handshakes ----------------------------------------------------- */

/* Move everything a has to send into b; returns b's feed result. */
static int deliver(mbsc_session *from, mbsc_session *to)
{
    size_t len, used;
    const uint8_t *p = mbsc_session_output(from, &len);
    int rc = mbsc_session_feed(to, p, len, &used);

    mbsc_session_output_consumed(from, len);
    ck_assert_uint_eq(used, len);
    return rc;
}

static void assert_output(mbsc_session *s, const json_value *v, const char *field, int index)
{
    uint8_t want[512];
    size_t want_len = hex_field(v, field, want, sizeof want), len;
    const uint8_t *got = mbsc_session_output(s, &len);

    assert_bytes(got, len, want, want_len, field, index);
}

START_TEST(handshake)
{
    const json_value *v = json_at(section("handshakes"), (size_t)_i);
    const json_value *offer = json_get(v, "offer");
    uint8_t master_priv[32], slave_priv[32], master_e[32], slave_e[32], psk[32], zero[32] = {0};
    uint8_t slave_pub[32], master_pub[32], buf[512], want[512];
    size_t n_ids = json_count(offer), len, want_len, i;
    mbsc_keypair mkp, skp;
    mbsc_allowlist *al = mbsc_allowlist_new();
    mbsc_config *mcfg = mbsc_config_new(MBSC_ROLE_MASTER);
    mbsc_config *scfg = mbsc_config_new(MBSC_ROLE_SLAVE);
    mbsc_session *m, *s, *s2;
    int err;

    hex_field(v, "master_static", master_priv, 32);
    hex_field(v, "slave_static", slave_priv, 32);
    hex_field(v, "master_ephemeral", master_e, 32);
    hex_field(v, "slave_ephemeral", slave_e, 32);
    hex_field(v, "slave_static_public", slave_pub, 32);
    hex_field(v, "master_static_public", master_pub, 32);
    hex_field(v, "psk", psk, 32);
    ck_assert_int_eq(mbsc_keypair_from_private(&mkp, master_priv), MBSC_OK);
    ck_assert_int_eq(mbsc_keypair_from_private(&skp, slave_priv), MBSC_OK);
    assert_bytes(mkp.public_key, 32, master_pub, 32, "master public key", _i);
    assert_bytes(skp.public_key, 32, slave_pub, 32, "slave public key", _i);

    /* The master offers the vector's list as ids, unknown ones included:
     * set_cipher_ids refuses unknown ids, so build the config by hand. */
    ck_assert_uint_le(n_ids, MBSC_MAX_CIPHER_OFFER);
    for (i = 0; i < n_ids; i++) {
        int64_t id;
        ck_assert_int_eq(json_int(json_at(offer, i), &id), 1);
        mcfg->ciphers[i] = (uint8_t)id;
    }
    mcfg->n_ciphers = n_ids;
    ck_assert_int_eq(mbsc_config_set_keypair(mcfg, &mkp), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(mcfg, slave_pub), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_keypair(scfg, &skp), MBSC_OK);
    ck_assert_int_eq(mbsc_allowlist_add(al, master_pub, "vector-master", NULL), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_allowlist(scfg, al), MBSC_OK);
    /* An all-zero PSK in the vectors is the "no PSK" default. */
    if (memcmp(psk, zero, 32) != 0) {
        ck_assert_int_eq(mbsc_config_set_psk(mcfg, psk), MBSC_OK);
        ck_assert_int_eq(mbsc_config_set_psk(scfg, psk), MBSC_OK);
    }

    m = mbsc_session_new_for_testing(mcfg, master_e, &err);
    ck_assert_msg(m != NULL, "master: %s", mbsc_strerror(err));
    s = mbsc_session_new_for_testing(scfg, slave_e, &err);
    ck_assert_msg(s != NULL, "slave: %s", mbsc_strerror(err));

    assert_output(m, v, "message1_frame", _i);
    {
        /* A second slave sees the same message 1: same keys, for the master's own frames. */
        size_t m1_len;
        const uint8_t *m1 = mbsc_session_output(m, &m1_len);
        size_t used;

        s2 = mbsc_session_new_for_testing(scfg, slave_e, &err);
        ck_assert_msg(s2 != NULL, "slave 2: %s", mbsc_strerror(err));
        ck_assert_int_eq(mbsc_session_feed(s2, m1, m1_len, &used), MBSC_OK);
        ck_assert_uint_eq(used, m1_len);
        mbsc_session_output_consumed(s2, MBSC_FRAME_HEADER_BYTES + MBSC_MAX_FRAME_BODY);
    }
    ck_assert_int_eq(deliver(m, s), MBSC_OK);
    /* Key confirmation: message 1 alone establishes nothing and names nobody. */
    ck_assert(!mbsc_session_established(s));
    ck_assert_ptr_null(mbsc_session_peer_name(s));
    assert_output(s, v, "message2_frame", _i);
    ck_assert_int_eq(deliver(s, m), MBSC_OK);
    ck_assert(mbsc_session_established(m));

    ck_assert_uint_eq(mbsc_cipher_id(mbsc_session_cipher(m)), int_field(v, "chosen"));
    want_len = hex_field(v, "handshake_hash", want, sizeof want);
    ck_assert_int_eq(mbsc_session_handshake_hash(m, buf), MBSC_OK);
    assert_bytes(buf, 64, want, want_len, "master handshake hash", _i);

    /*
     * The master's frame 0 is now its confirmation keep-alive, which the
     * vectors predate: slave 2 takes it (and the master's request as frame
     * 1); slave 1 takes the vector's first request frame as its frame 0.
     */
    mbsc_session_output(m, &len);
    ck_assert_uint_eq(len, MBSC_FRAME_OVERHEAD);
    ck_assert_int_eq(deliver(m, s2), MBSC_OK);
    ck_assert(mbsc_session_established(s2));
    ck_assert_int_eq(mbsc_session_recv(s2, buf, sizeof buf, &len), 0); /* consumed */

    want_len = hex_field(v, "first_request_frame", want, sizeof want);
    {
        size_t used;
        ck_assert_int_eq(mbsc_session_feed(s, want, want_len, &used), MBSC_OK);
        ck_assert_uint_eq(used, want_len);
    }
    ck_assert(mbsc_session_established(s));
    ck_assert_uint_eq(mbsc_cipher_id(mbsc_session_cipher(s)), int_field(v, "chosen"));
    want_len = hex_field(v, "handshake_hash", want, sizeof want);
    ck_assert_int_eq(mbsc_session_handshake_hash(s, buf), MBSC_OK);
    assert_bytes(buf, 64, want, want_len, "slave handshake hash", _i);
    ck_assert_str_eq(mbsc_session_peer_name(s), "vector-master");

    /* First request and response: the Split() keys at work. */
    want_len = hex_field(v, "first_request_adu", want, sizeof want);
    ck_assert_int_eq(mbsc_session_recv(s, buf, sizeof buf, &len), 1);
    assert_bytes(buf, len, want, want_len, "request at the slave", _i);
    ck_assert_int_eq(mbsc_session_send(m, want, want_len), MBSC_OK);
    ck_assert_int_eq(deliver(m, s2), MBSC_OK);
    ck_assert_int_eq(mbsc_session_recv(s2, buf, sizeof buf, &len), 1);
    assert_bytes(buf, len, want, want_len, "master's request at slave 2", _i);

    want_len = hex_field(v, "first_response_adu", want, sizeof want);
    ck_assert_int_eq(mbsc_session_send(s, want, want_len), MBSC_OK);
    assert_output(s, v, "first_response_frame", _i);
    ck_assert_int_eq(deliver(s, m), MBSC_OK);
    ck_assert_int_eq(mbsc_session_recv(m, buf, sizeof buf, &len), 1);
    assert_bytes(buf, len, want, want_len, "response at the master", _i);

    mbsc_session_free(m);
    mbsc_session_free(s);
    mbsc_session_free(s2);
    mbsc_config_free(mcfg);
    mbsc_config_free(scfg);
    mbsc_allowlist_free(al);
    mbsc_keypair_wipe(&mkp);
    mbsc_keypair_wipe(&skp);
}
END_TEST

/* ---- one direction of records across the first rekey ---------------------- */

/*
 * Each vector runs twice: without keystream buffers, and with buffers
 * (a small one on the sealer, a large one on the opener) refilled between
 * frames, as the session does, the sealer after every frame and the opener
 * after every third.  Both must give the published bytes.
 */
START_TEST(records)
{
    const json_value *v = json_at(section("records"), (size_t)_i / 2);
    int buffered = _i % 2;
    static uint8_t seal_ks[48], open_ks[1024];
    const json_value *frames = json_get(v, "frames");
    const mbsc_cipher *c = mbsc_cipher_by_id(int_field(v, "cipher_id"));
    static uint8_t payload[MBSC_MAX_PAYLOAD], frame[MBSC_MAX_PAYLOAD + 18],
        opened[MBSC_MAX_PAYLOAD];
    static uint8_t want[MBSC_MAX_PAYLOAD + 18];
    struct mbsc_record_dir sealer, opener;
    uint8_t k[32];
    size_t next = 0, checked = 0;
    uint64_t i, last;

    ck_assert_ptr_nonnull(c);
    hex_field(v, "k", k, 32);
    ck_assert_int_eq(
        mbsc_record_init_buffered(&sealer, c, k, buffered ? seal_ks : NULL, sizeof seal_ks),
        MBSC_OK);
    ck_assert_int_eq(
        mbsc_record_init_buffered(&opener, c, k, buffered ? open_ks : NULL, sizeof open_ks),
        MBSC_OK);
    last = (uint64_t)int_field(json_at(frames, json_count(frames) - 1), "i");

    /* Frames not listed carry empty payloads (see the vector's note). */
    for (i = 0; i <= last; i++) {
        const json_value *f = NULL;
        size_t n = 0, want_len;
        long len, got;

        if (next < json_count(frames) && int_field(json_at(frames, next), "i") == i)
            f = json_at(frames, next++);
        if (f != NULL)
            n = hex_field(f, "payload", payload, sizeof payload);
        len = mbsc_record_seal(&sealer, frame, sizeof frame, payload, n);
        ck_assert_msg(len == (long)(n + 18), "frame %llu: seal returned %ld", (unsigned long long)i,
                      len);
        if (f != NULL) {
            want_len = hex_field(f, "frame", want, sizeof want);
            assert_bytes(frame, (size_t)len, want, want_len, "frame", (int)i);
            checked++;
        }
        /* And the receiving side opens every one of them. */
        got = mbsc_record_open(&opener, opened, frame + 2, (size_t)len - 2);
        ck_assert_msg(got == (long)n, "frame %llu: open returned %ld (%s)", (unsigned long long)i,
                      got, got < 0 ? mbsc_strerror((int)got) : "");
        ck_assert(n == 0 || memcmp(opened, payload, n) == 0);
        if (buffered) {
            mbsc_record_refill(&sealer, 0);
            if (i % 3 == 0)
                mbsc_record_refill(&opener, 300);
        }
    }
    ck_assert_uint_eq(checked, json_count(frames));
    ck_assert_uint_ge(last, MBSC_REKEY_AFTER_FRAMES + 1);
    mbsc_record_wipe(&sealer);
    mbsc_record_wipe(&opener);
}
END_TEST

START_TEST(vectors_unreadable)
{
    ck_abort_msg("tests/vectors/mbsc1/protocol_vectors.json could not be read or parsed");
}
END_TEST

Suite *protocol_suite(void)
{
    Suite *s = suite_create("protocol");
    TCase *tc = tcase_create("mbsc1_vectors");
    size_t len;
    char err[200];
    char *text = tu_read_srcfile("tests/vectors/mbsc1/protocol_vectors.json", &len);

    vectors = text != NULL ? json_parse(text, len, err, sizeof err) : NULL;
    free(text);
    if (vectors == NULL) {
        tcase_add_test(tc, vectors_unreadable);
    } else {
        tcase_add_loop_test(tc, key_derivation, 0,
                            (int)json_count(json_get(vectors, "key_derivation")));
        tcase_add_loop_test(tc, handshake, 0, (int)json_count(json_get(vectors, "handshakes")));
        tcase_add_loop_test(tc, records, 0, 2 * (int)json_count(json_get(vectors, "records")));
    }
    suite_add_tcase(s, tc);
    return s;
}
