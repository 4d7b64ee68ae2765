/* SPDX-License-Identifier: ISC */
/*
 * check_noise.c - the Noise handshake layer (src/noise/).
 *
 * Expected values come from outside the project only:
 *  - tests/vectors/noise/noise_vectors.json: 19 published vectors
 *    (cacophony, snow, noise-c, flynn/noise; see its README) for IKpsk2, IK
 *    and NN, one test case each: both sides run with the fixed ephemerals,
 *    every handshake message and payload, the handshake hash where given,
 *    then the transport messages with the Split() keys (the AEAD done here
 *    with libsodium, as mbsc has no Noise transport).
 *  - tests/vectors/mbsc1/protocol_vectors.json: the handshakes of mbsc/1
 *    (prologue "mbsc/1", zero and non-zero psk), Noise part only.
 *  - HMAC-BLAKE2b values computed with Python's hmac and hashlib.
 * The rest are properties: low-order keys, bit flips, truncation, call
 * order, wrong psk, wrong responder key, buffer sizes, sticky failure.
 */
#include <check.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json.h"
#include "noise/noise.h"
#include "testutil.h"

Suite *noise_suite(void);

#define NOISE_VECTORS      "tests/vectors/noise/noise_vectors.json"
#define MBSC1_VECTORS      "tests/vectors/mbsc1/protocol_vectors.json"
#define N_NOISE_VECTORS    19
#define N_MBSC1_HANDSHAKES 4
#define MSG_MAX            1024 /* every message these tests build is smaller */

/* --- Helpers -------------------------------------------------------------- */

static json_value *load_json(const char *relpath)
{
    char err[200];
    size_t len;
    char *text = tu_read_srcfile(relpath, &len);
    json_value *root;

    if (text == NULL)
        ck_abort_msg("cannot read %s (see stderr)", relpath);
    root = json_parse(text, len, err, sizeof err);
    free(text);
    if (root == NULL)
        ck_abort_msg("%s: %s", relpath, err);
    return root;
}

static const char *field(const json_value *obj, const char *key)
{
    const char *s = json_string(json_get(obj, key));

    ck_assert_msg(s != NULL, "missing string field \"%s\"", key);
    return s;
}

/* Decode hex that must be exactly want bytes. */
static void hex_exact(uint8_t *out, size_t want, const char *hex)
{
    size_t n = strlen(hex);

    ck_assert_msg(n == 2 * want && tu_hex_decode(out, want, hex, n) == (long)want,
                  "expected %zu bytes of hex, got \"%s\"", want, hex);
}

static uint8_t *hex_alloc(const char *hex, size_t *len)
{
    uint8_t *p = tu_hex_alloc(hex, len);

    ck_assert_msg(p != NULL, "bad hex \"%s\"", hex);
    return p;
}

static void pub_of(uint8_t pub[32], const uint8_t priv[32])
{
    ck_assert_int_eq(crypto_scalarmult_base(pub, priv), 0);
}

/* Noise transport AEAD (spec 5.1, 12.3): nonce 0^32 || le64(n), empty AD. */
static void transport_nonce(uint8_t nonce[12], uint64_t n)
{
    memset(nonce, 0, 12);
    mbsc_store64_le(nonce + 4, n);
}

/* --- Published vectors ------------------------------------------------------ */

static json_value *noise_root;

static void noise_vectors_setup(void)
{
    noise_root = load_json(NOISE_VECTORS);
}

static void noise_vectors_teardown(void)
{
    json_free(noise_root);
    noise_root = NULL;
}

static enum mbsc_noise_pattern pattern_by_name(const char *name)
{
    if (strcmp(name, "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2b") == 0)
        return MBSC_NOISE_IKPSK2;
    if (strcmp(name, "Noise_IK_25519_ChaChaPoly_BLAKE2b") == 0)
        return MBSC_NOISE_IK;
    if (strcmp(name, "Noise_NN_25519_ChaChaPoly_BLAKE2b") == 0)
        return MBSC_NOISE_NN;
    ck_abort_msg("unexpected protocol %s", name);
    return MBSC_NOISE_NN;
}

/* The psk of one side: NULL for non-psk patterns, else exactly one key. */
static const uint8_t *vector_psk(const json_value *v, const char *key, enum mbsc_noise_pattern p,
                                 uint8_t buf[32])
{
    const json_value *arr = json_get(v, key);

    if (p != MBSC_NOISE_IKPSK2) {
        ck_assert_msg(json_count(arr) == 0, "%s given for a non-psk pattern", key);
        return NULL;
    }
    ck_assert_msg(json_count(arr) == 1, "%s must hold one psk for psk2", key);
    hex_exact(buf, 32, json_string(json_at(arr, 0)));
    return buf;
}

START_TEST(test_vector_count)
{
    ck_assert_uint_eq(json_count(json_get(noise_root, "vectors")), N_NOISE_VECTORS);
}
END_TEST

START_TEST(test_noise_vector)
{
    const json_value *v = json_at(json_get(noise_root, "vectors"), (size_t)_i);
    const json_value *msgs = json_get(v, "messages");
    enum mbsc_noise_pattern p;
    uint8_t init_s[32], resp_s[32], init_rs[32], init_e[32], resp_e[32];
    uint8_t init_psk_buf[32], resp_psk_buf[32], pub[32];
    const uint8_t *init_psk, *resp_psk;
    uint8_t *init_prologue, *resp_prologue;
    size_t init_prologue_len, resp_prologue_len;
    uint8_t ki1[32], ki2[32], kr1[32], kr2[32], hi[64], hr[64], hh[64];
    uint64_t n1 = 0, n2 = 0;
    mbsc_noise ini, resp;
    size_t i, count;
    int statics;

    ck_assert_ptr_nonnull(v);
    p = pattern_by_name(field(v, "protocol_name"));
    statics = p != MBSC_NOISE_NN;
    count = json_count(msgs);
    ck_assert_uint_ge(count, 2);

    init_prologue = hex_alloc(field(v, "init_prologue"), &init_prologue_len);
    resp_prologue = hex_alloc(field(v, "resp_prologue"), &resp_prologue_len);
    hex_exact(init_e, 32, field(v, "init_ephemeral"));
    hex_exact(resp_e, 32, field(v, "resp_ephemeral"));
    if (statics) {
        hex_exact(init_s, 32, field(v, "init_static"));
        hex_exact(resp_s, 32, field(v, "resp_static"));
        hex_exact(init_rs, 32, field(v, "init_remote_static"));
    }
    init_psk = vector_psk(v, "init_psks", p, init_psk_buf);
    resp_psk = vector_psk(v, "resp_psks", p, resp_psk_buf);

    ck_assert_int_eq(mbsc_noise_init(&ini, p, 1, init_prologue, init_prologue_len,
                                     statics ? init_s : NULL, statics ? init_rs : NULL, init_psk),
                     MBSC_OK);
    ck_assert_int_eq(mbsc_noise_init(&resp, p, 0, resp_prologue, resp_prologue_len,
                                     statics ? resp_s : NULL, NULL, resp_psk),
                     MBSC_OK);
    ck_assert_int_eq(mbsc_noise_set_ephemeral_for_testing(&ini, init_e), MBSC_OK);
    ck_assert_int_eq(mbsc_noise_set_ephemeral_for_testing(&resp, resp_e), MBSC_OK);
    free(init_prologue);
    free(resp_prologue);

    /* Handshake: message i is written by the initiator when i is even. */
    for (i = 0; !mbsc_noise_is_complete(&ini); i++) {
        mbsc_noise *w = i % 2 == 0 ? &ini : &resp;
        mbsc_noise *r = i % 2 == 0 ? &resp : &ini;
        const json_value *m = json_at(msgs, i);
        size_t pl_len, ct_len, out_len, got_len;
        uint8_t *pl, *ct, out[MSG_MAX], got[MSG_MAX];
        int ovh;

        ck_assert_msg(i < count, "vector ends inside the handshake");
        ck_assert(!mbsc_noise_is_complete(&resp));
        pl = hex_alloc(field(m, "payload"), &pl_len);
        ct = hex_alloc(field(m, "ciphertext"), &ct_len);
        ovh = mbsc_noise_next_overhead(w);
        ck_assert_int_ge(ovh, 0);
        ck_assert_uint_eq(ct_len, pl_len + (size_t)ovh);
        ck_assert_int_eq(mbsc_noise_next_overhead(r), ovh);

        ck_assert_int_eq(mbsc_noise_write_message(w, pl, pl_len, out, sizeof out, &out_len),
                         MBSC_OK);
        ck_assert_uint_eq(out_len, ct_len);
        ck_assert_msg(memcmp(out, ct, ct_len) == 0, "message %zu differs", i);

        ck_assert_int_eq(mbsc_noise_read_message(r, ct, ct_len, got, sizeof got, &got_len),
                         MBSC_OK);
        ck_assert_uint_eq(got_len, pl_len);
        ck_assert(pl_len == 0 || memcmp(got, pl, pl_len) == 0);
        free(pl);
        free(ct);
    }
    ck_assert_uint_eq(i, 2); /* IK, IKpsk2 and NN have two messages */
    ck_assert(mbsc_noise_is_complete(&resp));
    ck_assert_int_eq(mbsc_noise_next_overhead(&ini), MBSC_ERR_STATE);

    /* Identities: each side sees the other's static key. */
    if (statics) {
        pub_of(pub, init_s);
        ck_assert_ptr_nonnull(mbsc_noise_remote_static(&resp));
        ck_assert_mem_eq(mbsc_noise_remote_static(&resp), pub, 32);
        ck_assert_mem_eq(mbsc_noise_remote_static(&ini), init_rs, 32);
    } else {
        ck_assert_ptr_null(mbsc_noise_remote_static(&ini));
        ck_assert_ptr_null(mbsc_noise_remote_static(&resp));
    }

    ck_assert_int_eq(mbsc_noise_split(&ini, ki1, ki2, hi), MBSC_OK);
    ck_assert_int_eq(mbsc_noise_split(&resp, kr1, kr2, hr), MBSC_OK);
    ck_assert_mem_eq(ki1, kr1, 32);
    ck_assert_mem_eq(ki2, kr2, 32);
    ck_assert_mem_eq(hi, hr, 64);
    if (json_get(v, "handshake_hash") != NULL) {
        hex_exact(hh, 64, field(v, "handshake_hash"));
        ck_assert_mem_eq(hi, hh, 64);
    }
    if (statics) /* the identity outlives Split() */
        ck_assert_mem_eq(mbsc_noise_remote_static(&resp), pub, 32);

    /* Transport: even messages initiator -> responder with the first key,
     * odd ones back with the second; a nonce counter per direction. */
    for (; i < count; i++) {
        const json_value *m = json_at(msgs, i);
        int forward = i % 2 == 0;
        const uint8_t *k_send = forward ? ki1 : kr2;
        const uint8_t *k_recv = forward ? kr1 : ki2;
        uint64_t *n = forward ? &n1 : &n2;
        size_t pl_len, ct_len;
        uint8_t *pl = hex_alloc(field(m, "payload"), &pl_len);
        uint8_t *ct = hex_alloc(field(m, "ciphertext"), &ct_len);
        uint8_t out[MSG_MAX], got[MSG_MAX], nonce[12];
        unsigned long long out_len, got_len;

        ck_assert_uint_lt(pl_len + 16, sizeof out);
        transport_nonce(nonce, *n);
        ck_assert_int_eq(crypto_aead_chacha20poly1305_ietf_encrypt(out, &out_len, pl, pl_len, NULL,
                                                                   0, NULL, nonce, k_send),
                         0);
        ck_assert_uint_eq(out_len, ct_len);
        ck_assert_msg(memcmp(out, ct, ct_len) == 0, "transport message %zu differs", i);
        ck_assert_int_eq(crypto_aead_chacha20poly1305_ietf_decrypt(got, &got_len, NULL, ct, ct_len,
                                                                   NULL, 0, nonce, k_recv),
                         0);
        ck_assert_uint_eq(got_len, pl_len);
        ck_assert(pl_len == 0 || memcmp(got, pl, pl_len) == 0);
        (*n)++;
        free(pl);
        free(ct);
    }
    mbsc_noise_wipe(&ini);
    mbsc_noise_wipe(&resp);
}
END_TEST

/* --- mbsc/1 handshakes (Noise part of the protocol vectors) ---------------- */

static json_value *mbsc1_root;

static void mbsc1_setup(void)
{
    mbsc1_root = load_json(MBSC1_VECTORS);
}

static void mbsc1_teardown(void)
{
    json_free(mbsc1_root);
    mbsc1_root = NULL;
}

START_TEST(test_mbsc1_handshake)
{
    const json_value *arr = json_get(mbsc1_root, "handshakes");
    const json_value *v = json_at(arr, (size_t)_i);
    uint8_t ms[32], ss[32], me[32], se[32], psk[32], spub[32], mpub[32];
    uint8_t ki1[32], ki2[32], kr1[32], kr2[32], hi[64], hr[64], want[64];
    uint8_t *prologue, *frame, *pl, out[MSG_MAX], got[MSG_MAX];
    size_t prologue_len, frame_len, pl_len, out_len, got_len, m;
    mbsc_noise ini, resp;
    static const char *const frames[2] = {"message1_frame", "message2_frame"};
    static const char *const payloads[2] = {"message1_payload", "message2_payload"};

    ck_assert_uint_eq(json_count(arr), N_MBSC1_HANDSHAKES);
    ck_assert_ptr_nonnull(v);
    prologue = hex_alloc(field(v, "prologue"), &prologue_len);
    ck_assert_uint_eq(prologue_len, 6);
    ck_assert_mem_eq(prologue, "mbsc/1", 6); /* docs/protocol.md */
    hex_exact(psk, 32, field(v, "psk"));
    hex_exact(ms, 32, field(v, "master_static"));
    hex_exact(ss, 32, field(v, "slave_static"));
    hex_exact(me, 32, field(v, "master_ephemeral"));
    hex_exact(se, 32, field(v, "slave_ephemeral"));
    hex_exact(spub, 32, field(v, "slave_static_public"));
    hex_exact(mpub, 32, field(v, "master_static_public"));

    /* An all-zero psk is passed as NULL: the two must mean the same. */
    ck_assert_int_eq(mbsc_noise_init(&ini, MBSC_NOISE_IKPSK2, 1, prologue, prologue_len, ms, spub,
                                     sodium_is_zero(psk, 32) ? NULL : psk),
                     MBSC_OK);
    ck_assert_int_eq(
        mbsc_noise_init(&resp, MBSC_NOISE_IKPSK2, 0, prologue, prologue_len, ss, NULL, psk),
        MBSC_OK);
    free(prologue);
    ck_assert_int_eq(mbsc_noise_set_ephemeral_for_testing(&ini, me), MBSC_OK);
    ck_assert_int_eq(mbsc_noise_set_ephemeral_for_testing(&resp, se), MBSC_OK);

    for (m = 0; m < 2; m++) {
        mbsc_noise *w = m == 0 ? &ini : &resp, *r = m == 0 ? &resp : &ini;

        frame = hex_alloc(field(v, frames[m]), &frame_len);
        pl = hex_alloc(field(v, payloads[m]), &pl_len);
        /* A frame is be16(length) then the Noise message. */
        ck_assert_uint_ge(frame_len, 2);
        ck_assert_uint_eq(mbsc_load16_be(frame), frame_len - 2);
        ck_assert_int_eq(mbsc_noise_write_message(w, pl, pl_len, out, sizeof out, &out_len),
                         MBSC_OK);
        ck_assert_uint_eq(out_len, frame_len - 2);
        ck_assert_mem_eq(out, frame + 2, out_len);
        ck_assert_int_eq(
            mbsc_noise_read_message(r, frame + 2, frame_len - 2, got, sizeof got, &got_len),
            MBSC_OK);
        ck_assert_uint_eq(got_len, pl_len);
        ck_assert_mem_eq(got, pl, pl_len);
        if (m == 0) /* the slave can check the master before answering */
            ck_assert_mem_eq(mbsc_noise_remote_static(&resp), mpub, 32);
        free(frame);
        free(pl);
    }
    ck_assert_int_eq(mbsc_noise_split(&ini, ki1, ki2, hi), MBSC_OK);
    ck_assert_int_eq(mbsc_noise_split(&resp, kr1, kr2, hr), MBSC_OK);
    hex_exact(want, 64, field(v, "handshake_hash"));
    ck_assert_mem_eq(hi, want, 64);
    ck_assert_mem_eq(hr, want, 64);
    hex_exact(want, 32, field(v, "k_master_to_slave"));
    ck_assert_mem_eq(ki1, want, 32);
    ck_assert_mem_eq(kr1, want, 32);
    hex_exact(want, 32, field(v, "k_slave_to_master"));
    ck_assert_mem_eq(ki2, want, 32);
    ck_assert_mem_eq(kr2, want, 32);
}
END_TEST

/* --- HMAC-BLAKE2b ------------------------------------------------------------ */

/*
 * Values from Python 3: hmac.new(key, data, hashlib.blake2b).hexdigest(),
 * with key = bytes(range(key_len)).  Key lengths 0, 64 (Noise's), 128 (one
 * block) and 200 (longer than a block: hashed first).
 */
START_TEST(test_hmac_blake2b)
{
    static const struct {
        size_t key_len;
        const char *data_hex; /* NULL: bytes(range(256)) */
        const char *mac;
    } kats[] = {
        {0, "",
         "198cd2006f66ff83fbbd913f78aca2251caf4f19fe9475aade8cf2091b99a684"
         "66775177424f58286886cbae8229644cec747237d4b721735485e17372fdf59c"},
        {64, "01",
         "b7b5d574009695761d348b4bc1b58c61eb470672ad6444fb5d81585fefa50dea"
         "17294447cdbc700a47964b2315eb9c9e8154422ee3f73de73ad55f42739828cc"},
        {128, "4869205468657265",
         "d67a1cb3610869567dce4f41e4220ca5a467e8d36e391a55562d0799aecbebbb"
         "8657631777e8043ffc59b06abf91d87b4277f6b3c6b6c8a1186c9e2c272287b3"},
        {200, NULL,
         "46d5d3d894349ee58738daf82fa8e58407abe775c7580fe4a1165b53cc79680d"
         "88a1461610ddfecadd854d9949d15fec8c8bbd64722b8fca706588e5783979d7"},
    };
    uint8_t key[256], data[256], mac[64], want[64];
    size_t i, j, data_len;

    for (j = 0; j < sizeof key; j++)
        key[j] = (uint8_t)j;
    for (i = 0; i < MBSC_ARRAY_LEN(kats); i++) {
        if (kats[i].data_hex == NULL) {
            for (j = 0; j < 256; j++)
                data[j] = (uint8_t)j;
            data_len = 256;
        } else {
            long n = tu_hex_decode(data, sizeof data, kats[i].data_hex, strlen(kats[i].data_hex));
            ck_assert_int_ge(n, 0);
            data_len = (size_t)n;
        }
        hex_exact(want, 64, kats[i].mac);
        mbsc_hmac_blake2b(mac, kats[i].key_len ? key : NULL, kats[i].key_len,
                          data_len ? data : NULL, data_len);
        ck_assert_msg(memcmp(mac, want, 64) == 0, "HMAC case %zu", i);
    }
}
END_TEST

/* --- Properties: a test pair with fixed keys ------------------------------ */

struct pair {
    mbsc_noise ini, resp;
    uint8_t init_s[32], resp_s[32], init_pub[32], resp_pub[32];
    uint8_t msg[2][MSG_MAX]; /* the two handshake messages, once written */
    size_t msg_len[2];
};

static const uint8_t payload1[] = {0x01, 0x04, 0x01, 0x02, 0x03, 0x04}; /* an offer */
static const uint8_t payload2[] = {0x01};                               /* a choice */

static int has_statics(enum mbsc_noise_pattern p)
{
    return p != MBSC_NOISE_NN;
}

/*
 * Both sides of pattern p with reproducible keys.  rs: what the initiator
 * believes is the responder's static key (NULL: the right one).
 */
static void pair_init(struct pair *pr, enum mbsc_noise_pattern p, const uint8_t *init_psk,
                      const uint8_t *resp_psk, const uint8_t *rs)
{
    static const uint8_t prologue[] = {'m', 'b', 's', 'c', '/', '1'};
    uint8_t e[32];
    int st = has_statics(p);

    memset(pr, 0, sizeof *pr);
    tu_fill_pattern(pr->init_s, 32, 1);
    tu_fill_pattern(pr->resp_s, 32, 2);
    pub_of(pr->init_pub, pr->init_s);
    pub_of(pr->resp_pub, pr->resp_s);
    ck_assert_int_eq(mbsc_noise_init(&pr->ini, p, 1, prologue, sizeof prologue,
                                     st ? pr->init_s : NULL,
                                     st ? (rs != NULL ? rs : pr->resp_pub) : NULL, init_psk),
                     MBSC_OK);
    ck_assert_int_eq(mbsc_noise_init(&pr->resp, p, 0, prologue, sizeof prologue,
                                     st ? pr->resp_s : NULL, NULL, resp_psk),
                     MBSC_OK);
    tu_fill_pattern(e, 32, 3);
    ck_assert_int_eq(mbsc_noise_set_ephemeral_for_testing(&pr->ini, e), MBSC_OK);
    tu_fill_pattern(e, 32, 4);
    ck_assert_int_eq(mbsc_noise_set_ephemeral_for_testing(&pr->resp, e), MBSC_OK);
}

/* Message m (0 or 1) written by its sender into pr->msg[m]. */
static void pair_write(struct pair *pr, int m)
{
    mbsc_noise *w = m == 0 ? &pr->ini : &pr->resp;
    const uint8_t *pl = m == 0 ? payload1 : payload2;
    size_t pl_len = m == 0 ? sizeof payload1 : sizeof payload2;

    ck_assert_int_eq(mbsc_noise_write_message(w, pl, pl_len, pr->msg[m], MSG_MAX, &pr->msg_len[m]),
                     MBSC_OK);
}

/* Message m read by its receiver; returns the code. */
static int pair_read(struct pair *pr, int m, const uint8_t *msg, size_t len)
{
    mbsc_noise *r = m == 0 ? &pr->resp : &pr->ini;
    uint8_t got[MSG_MAX];
    size_t got_len = 12345, i;
    int ret = mbsc_noise_read_message(r, msg, len, got, sizeof got, &got_len);

    if (ret != MBSC_OK) {
        ck_assert_uint_eq(got_len, 0);
        for (i = 0; i < sizeof got; i++) /* nothing half-decrypted leaks */
            ck_assert_uint_eq(got[i], 0);
    }
    return ret;
}

/* The secret parts of a state are all zero. */
static void assert_wiped(const mbsc_noise *hs)
{
    ck_assert(sodium_is_zero(hs->ck_, sizeof hs->ck_));
    ck_assert(sodium_is_zero(hs->h_, sizeof hs->h_));
    ck_assert(sodium_is_zero(hs->k_, sizeof hs->k_));
    ck_assert(sodium_is_zero(hs->s_priv_, sizeof hs->s_priv_));
    ck_assert(sodium_is_zero(hs->e_priv_, sizeof hs->e_priv_));
    ck_assert(sodium_is_zero(hs->psk_, sizeof hs->psk_));
}

/* After a failure with err: wiped, and every call answers err. */
static void assert_dead(mbsc_noise *hs, int err)
{
    uint8_t buf[MSG_MAX], k1[32], k2[32], e[32];
    size_t len;

    assert_wiped(hs);
    ck_assert_ptr_null(mbsc_noise_remote_static(hs));
    ck_assert(!mbsc_noise_is_complete(hs));
    ck_assert_int_eq(mbsc_noise_write_message(hs, payload1, sizeof payload1, buf, sizeof buf, &len),
                     err);
    memset(buf, 0x55, 200);
    ck_assert_int_eq(mbsc_noise_read_message(hs, buf, 200, buf + 200, 100, &len), err);
    ck_assert_int_eq(mbsc_noise_split(hs, k1, k2, NULL), err);
    memset(e, 1, sizeof e);
    ck_assert_int_eq(mbsc_noise_set_ephemeral_for_testing(hs, e), err);
    ck_assert_int_eq(mbsc_noise_next_overhead(hs), MBSC_ERR_STATE);
}

static const enum mbsc_noise_pattern all_patterns[] = {MBSC_NOISE_NN, MBSC_NOISE_IK,
                                                       MBSC_NOISE_IKPSK2};

/* --- Low-order points ------------------------------------------------------- */

/*
 * Curve25519 points of small order (encodings, little-endian): 0, 1, the two
 * of order 8, p-1 (order 2), and the non-canonical p and p+1.  The loop also
 * sets the top bit of each, which X25519 ignores.
 */
static const char *const low_order_hex[] = {
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0100000000000000000000000000000000000000000000000000000000000000",
    "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
    "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
};
#define N_LOW_ORDER (2 * (int)MBSC_ARRAY_LEN(low_order_hex))

static void low_order_point(uint8_t pt[32], int i)
{
    hex_exact(pt, 32, low_order_hex[i / 2]);
    if (i % 2)
        pt[31] |= 0x80;
}

/* The initiator's `e` in message 1 replaced by a low-order point. */
START_TEST(test_low_order_e_message1)
{
    struct pair pr;
    uint8_t pt[32], out[MSG_MAX];
    size_t i, len;

    low_order_point(pt, _i);
    for (i = 0; i < MBSC_ARRAY_LEN(all_patterns); i++) {
        pair_init(&pr, all_patterns[i], NULL, NULL, NULL);
        pair_write(&pr, 0);
        memcpy(pr.msg[0], pt, 32);
        if (all_patterns[i] == MBSC_NOISE_NN) {
            /* No DH while reading NN's message 1: the responder's ee fails. */
            ck_assert_int_eq(pair_read(&pr, 0, pr.msg[0], pr.msg_len[0]), MBSC_OK);
            ck_assert_int_eq(mbsc_noise_write_message(&pr.resp, payload2, sizeof payload2, out,
                                                      sizeof out, &len),
                             MBSC_ERR_WEAK_KEY);
            ck_assert_uint_eq(len, 0);
            ck_assert(sodium_is_zero(out, sizeof out));
        } else {
            ck_assert_int_eq(pair_read(&pr, 0, pr.msg[0], pr.msg_len[0]), MBSC_ERR_WEAK_KEY);
        }
        assert_dead(&pr.resp, MBSC_ERR_WEAK_KEY);
    }
}
END_TEST

/* The responder's `e` in message 2 replaced by a low-order point. */
START_TEST(test_low_order_e_message2)
{
    struct pair pr;
    uint8_t pt[32];
    size_t i;

    low_order_point(pt, _i);
    for (i = 0; i < MBSC_ARRAY_LEN(all_patterns); i++) {
        pair_init(&pr, all_patterns[i], NULL, NULL, NULL);
        pair_write(&pr, 0);
        ck_assert_int_eq(pair_read(&pr, 0, pr.msg[0], pr.msg_len[0]), MBSC_OK);
        pair_write(&pr, 1);
        memcpy(pr.msg[1], pt, 32);
        ck_assert_int_eq(pair_read(&pr, 1, pr.msg[1], pr.msg_len[1]), MBSC_ERR_WEAK_KEY);
        assert_dead(&pr.ini, MBSC_ERR_WEAK_KEY);
    }
}
END_TEST

/* An initiator told a low-order responder key fails at its first DH (es). */
START_TEST(test_low_order_remote_static)
{
    struct pair pr;
    uint8_t pt[32], out[MSG_MAX];
    size_t len = 99;

    low_order_point(pt, _i);
    pair_init(&pr, _i % 4 < 2 ? MBSC_NOISE_IK : MBSC_NOISE_IKPSK2, NULL, NULL, pt);
    memset(out, 0xaa, sizeof out);
    ck_assert_int_eq(
        mbsc_noise_write_message(&pr.ini, payload1, sizeof payload1, out, sizeof out, &len),
        MBSC_ERR_WEAK_KEY);
    ck_assert_uint_eq(len, 0);
    ck_assert(sodium_is_zero(out, sizeof out));
    assert_dead(&pr.ini, MBSC_ERR_WEAK_KEY);
}
END_TEST

/* --- Tampering ---------------------------------------------------------------- */

/*
 * Single-bit flips in either message are rejected.  IK and IKpsk2
 * authenticate each message as it is read.  NN's message 1 carries no key
 * yet, so its reader cannot notice; the initiator does, at message 2,
 * because h covers message 1.
 *
 * Each flip costs two X25519 operations, slow under valgrind, so by default
 * one bit per byte is flipped (a different bit in successive bytes), plus
 * every bit of the first and last byte of `e` (bit 255 is ignored by X25519
 * but must still be caught, through h).  MBSC_TEST_ALL_BITS=1 flips every
 * bit.
 */
static int flip_this_bit(size_t bit, int all)
{
    size_t byte = bit / 8;

    return all || byte == 0 || byte == 31 || bit % 8 == byte % 8;
}

START_TEST(test_bit_flips)
{
    enum mbsc_noise_pattern p = all_patterns[_i];
    const char *env = getenv("MBSC_TEST_ALL_BITS");
    int all = env != NULL && strcmp(env, "1") == 0;
    struct pair before1, before2, pr;
    size_t bit;
    int m;

    /* The states just before message 1 and message 2 are read. */
    pair_init(&before1, p, NULL, NULL, NULL);
    pair_write(&before1, 0);
    before2 = before1;
    ck_assert_int_eq(pair_read(&before2, 0, before2.msg[0], before2.msg_len[0]), MBSC_OK);
    pair_write(&before2, 1);

    for (m = 0; m < 2; m++) {
        const struct pair *base = m == 0 ? &before1 : &before2;

        for (bit = 0; bit < 8 * base->msg_len[m]; bit++) {
            uint8_t msg[MSG_MAX];
            int ret;

            if (!flip_this_bit(bit, all))
                continue;
            pr = *base;
            memcpy(msg, base->msg[m], base->msg_len[m]);
            msg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            if (m == 0 && p == MBSC_NOISE_NN) {
                ck_assert_int_eq(pair_read(&pr, 0, msg, base->msg_len[0]), MBSC_OK);
                pair_write(&pr, 1);
                ret = pair_read(&pr, 1, pr.msg[1], pr.msg_len[1]);
            } else {
                ret = pair_read(&pr, m, msg, base->msg_len[m]);
            }
            /* In IK message 1, e and the encrypted s come first: damage
             * there makes s undecryptable, reported as a wrong key. */
            if (m == 0 && p != MBSC_NOISE_NN && bit < 8 * (32 + 48))
                ck_assert_msg(ret == MBSC_ERR_WRONG_PEER_KEY, "pattern %d message %d bit %zu: %d",
                              (int)p, m, bit, ret);
            else
                ck_assert_msg(ret == MBSC_ERR_HANDSHAKE_DECRYPT,
                              "pattern %d message %d bit %zu: %d", (int)p, m, bit, ret);
        }
    }
}
END_TEST

/*
 * Every shorter length (and one byte more) is rejected: shorter than the
 * keys and tags is a malformed message, anything else fails its tag.
 */
START_TEST(test_truncated)
{
    enum mbsc_noise_pattern p = all_patterns[_i];
    struct pair pr, base;
    uint8_t *big;
    size_t len;
    int m, ovh;

    pair_init(&base, p, NULL, NULL, NULL);
    pair_write(&base, 0);
    for (m = 0; m < 2; m++) {
        ovh = mbsc_noise_next_overhead(m == 0 ? &base.resp : &base.ini);
        ck_assert_int_gt(ovh, 0);
        for (len = 0; len <= base.msg_len[m] + 1; len++) {
            int ret;

            if (len == base.msg_len[m])
                continue;
            pr = base;
            ret = pair_read(&pr, m, base.msg[m], len);
            if (len < (size_t)ovh)
                ck_assert_int_eq(ret, MBSC_ERR_HANDSHAKE_MESSAGE);
            else if (p == MBSC_NOISE_NN && m == 0)
                ck_assert_int_eq(ret, MBSC_OK); /* plaintext payload; see above */
            else
                ck_assert_msg(ret == MBSC_ERR_HANDSHAKE_DECRYPT, "message %d length %zu: %d", m,
                              len, ret);
        }
        /* advance base by one message */
        ck_assert_int_eq(pair_read(&base, m, base.msg[m], base.msg_len[m]), MBSC_OK);
        if (m == 0)
            pair_write(&base, 1);
    }

    /* Longer than any Noise message. */
    big = calloc(1, MBSC_NOISE_MAX_MESSAGE + 1);
    ck_assert_ptr_nonnull(big);
    pair_init(&pr, p, NULL, NULL, NULL);
    pair_write(&pr, 0);
    memcpy(big, pr.msg[0], pr.msg_len[0]);
    ck_assert_int_eq(pair_read(&pr, 0, big, MBSC_NOISE_MAX_MESSAGE + 1),
                     MBSC_ERR_HANDSHAKE_MESSAGE);
    free(big);
}
END_TEST

/* --- Wrong keys ------------------------------------------------------------------ */

START_TEST(test_wrong_psk)
{
    struct pair pr;
    uint8_t psk_a[32], psk_b[32], zero[32];

    tu_fill_pattern(psk_a, 32, 5);
    tu_fill_pattern(psk_b, 32, 6);
    memset(zero, 0, sizeof zero);

    /* _i = 0: two different keys; 1: a key against none; 2: none against a key */
    pair_init(&pr, MBSC_NOISE_IKPSK2, _i == 2 ? NULL : psk_a, _i == 1 ? NULL : psk_b, NULL);
    pair_write(&pr, 0);
    /* psk2 enters at the end of message 2: the responder cannot tell... */
    ck_assert_int_eq(pair_read(&pr, 0, pr.msg[0], pr.msg_len[0]), MBSC_OK);
    pair_write(&pr, 1);
    /* ...and the initiator sees message 2 fail (docs/protocol.md). */
    ck_assert_int_eq(pair_read(&pr, 1, pr.msg[1], pr.msg_len[1]), MBSC_ERR_HANDSHAKE_DECRYPT);
    assert_dead(&pr.ini, MBSC_ERR_HANDSHAKE_DECRYPT);

    /* NULL means 32 zero bytes. */
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, zero, NULL);
    pair_write(&pr, 0);
    ck_assert_int_eq(pair_read(&pr, 0, pr.msg[0], pr.msg_len[0]), MBSC_OK);
    pair_write(&pr, 1);
    ck_assert_int_eq(pair_read(&pr, 1, pr.msg[1], pr.msg_len[1]), MBSC_OK);
}
END_TEST

/* The initiator encrypts to the wrong responder key: message 1 fails. */
START_TEST(test_wrong_responder_key)
{
    struct pair pr;
    uint8_t other_s[32], other_pub[32];

    tu_fill_pattern(other_s, 32, 7);
    pub_of(other_pub, other_s);
    pair_init(&pr, _i == 0 ? MBSC_NOISE_IK : MBSC_NOISE_IKPSK2, NULL, NULL, other_pub);
    pair_write(&pr, 0);
    ck_assert_int_eq(pair_read(&pr, 0, pr.msg[0], pr.msg_len[0]), MBSC_ERR_WRONG_PEER_KEY);
    assert_dead(&pr.resp, MBSC_ERR_WRONG_PEER_KEY);
}
END_TEST

/* --- Call order and arguments ---------------------------------------------------- */

START_TEST(test_call_order)
{
    struct pair pr;
    mbsc_noise zeroed;
    uint8_t buf[MSG_MAX], k1[32], k2[32], e[32];
    size_t len;

    memset(e, 7, sizeof e);

    /* The initiator speaks first. */
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    ck_assert_int_eq(pair_read(&pr, 1, pr.msg[0], 64), MBSC_ERR_STATE);
    assert_dead(&pr.ini, MBSC_ERR_STATE);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.resp, NULL, 0, buf, sizeof buf, &len),
                     MBSC_ERR_STATE);
    assert_dead(&pr.resp, MBSC_ERR_STATE);

    /* No Split() before the end; nobody writes twice in a row. */
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    ck_assert_int_eq(mbsc_noise_split(&pr.resp, k1, k2, NULL), MBSC_ERR_STATE);
    assert_dead(&pr.resp, MBSC_ERR_STATE);
    pair_write(&pr, 0);
    ck_assert_int_eq(mbsc_noise_set_ephemeral_for_testing(&pr.ini, e), MBSC_ERR_STATE);
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    pair_write(&pr, 0);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.ini, NULL, 0, buf, sizeof buf, &len),
                     MBSC_ERR_STATE);
    assert_dead(&pr.ini, MBSC_ERR_STATE);

    /* After the last message: no more messages, one Split(). */
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    pair_write(&pr, 0);
    ck_assert_int_eq(pair_read(&pr, 0, pr.msg[0], pr.msg_len[0]), MBSC_OK);
    ck_assert(!mbsc_noise_is_complete(&pr.resp));
    pair_write(&pr, 1);
    ck_assert(mbsc_noise_is_complete(&pr.resp));
    ck_assert_int_eq(pair_read(&pr, 1, pr.msg[1], pr.msg_len[1]), MBSC_OK);
    ck_assert(mbsc_noise_is_complete(&pr.ini));
    /* secrets no longer needed are gone once complete */
    ck_assert(sodium_is_zero(pr.ini.s_priv_, 32) && sodium_is_zero(pr.ini.e_priv_, 32));
    ck_assert_int_eq(mbsc_noise_split(&pr.ini, k1, k2, NULL), MBSC_OK);
    ck_assert(mbsc_noise_is_complete(&pr.ini));
    assert_wiped(&pr.ini);
    ck_assert_mem_eq(mbsc_noise_remote_static(&pr.ini), pr.resp_pub, 32);
    ck_assert_int_eq(mbsc_noise_split(&pr.ini, k1, k2, NULL), MBSC_ERR_STATE);
    assert_dead(&pr.ini, MBSC_ERR_STATE);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.resp, NULL, 0, buf, sizeof buf, &len),
                     MBSC_ERR_STATE);
    assert_dead(&pr.resp, MBSC_ERR_STATE);

    /* A state that was never initialized. */
    memset(&zeroed, 0, sizeof zeroed);
    ck_assert_int_eq(mbsc_noise_next_overhead(&zeroed), MBSC_ERR_STATE);
    ck_assert_int_eq(mbsc_noise_write_message(&zeroed, NULL, 0, buf, sizeof buf, &len),
                     MBSC_ERR_STATE);
    assert_dead(&zeroed, MBSC_ERR_STATE);

    /* A failed state comes back to life only through init. */
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    pair_write(&pr, 0);
    ck_assert_int_eq(pair_read(&pr, 0, pr.msg[0], pr.msg_len[0]), MBSC_OK);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.resp, NULL, 0, buf, 10, &len),
                     MBSC_ERR_BUFFER_TOO_SMALL);
    assert_dead(&pr.resp, MBSC_ERR_BUFFER_TOO_SMALL);
    ck_assert_int_eq(
        mbsc_noise_init(&pr.resp, MBSC_NOISE_IKPSK2, 0, NULL, 0, pr.resp_s, NULL, NULL), MBSC_OK);
    ck_assert_int_eq(mbsc_noise_next_overhead(&pr.resp), 96);

    /* NULL state */
    ck_assert_int_eq(mbsc_noise_write_message(NULL, NULL, 0, buf, sizeof buf, &len),
                     MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_noise_read_message(NULL, buf, 10, NULL, 0, &len), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_noise_split(NULL, k1, k2, NULL), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_noise_set_ephemeral_for_testing(NULL, e), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_noise_next_overhead(NULL), MBSC_ERR_STATE);
    ck_assert(!mbsc_noise_is_complete(NULL));
    ck_assert_ptr_null(mbsc_noise_remote_static(NULL));
    mbsc_noise_wipe(NULL);
}
END_TEST

START_TEST(test_init_args)
{
    static const uint8_t prologue[] = "mbsc/1";
    uint8_t s[32], rs[32], psk[32];
    mbsc_noise hs;
    size_t len;
    uint8_t buf[MSG_MAX];
    const struct {
        int p, initiator;
        int s, rs, psk; /* which keys are passed */
        int ok;
    } cases[] = {
        {MBSC_NOISE_NN, 1, 0, 0, 0, 1},
        {MBSC_NOISE_NN, 0, 0, 0, 0, 1},
        {MBSC_NOISE_NN, 1, 1, 0, 0, 0},
        {MBSC_NOISE_NN, 1, 0, 1, 0, 0},
        {MBSC_NOISE_NN, 0, 0, 0, 1, 0},
        {MBSC_NOISE_IK, 1, 1, 1, 0, 1},
        {MBSC_NOISE_IK, 0, 1, 0, 0, 1},
        {MBSC_NOISE_IK, 1, 0, 1, 0, 0},
        {MBSC_NOISE_IK, 1, 1, 0, 0, 0},
        {MBSC_NOISE_IK, 0, 1, 1, 0, 0},
        {MBSC_NOISE_IK, 0, 0, 0, 0, 0},
        {MBSC_NOISE_IK, 1, 1, 1, 1, 0},
        {MBSC_NOISE_IKPSK2, 1, 1, 1, 1, 1},
        {MBSC_NOISE_IKPSK2, 1, 1, 1, 0, 1},
        {MBSC_NOISE_IKPSK2, 0, 1, 0, 1, 1},
        {MBSC_NOISE_IKPSK2, 0, 0, 0, 1, 0},
        {MBSC_NOISE_IKPSK2, 0, 1, 1, 1, 0},
        {MBSC_NOISE_IKPSK2, 1, 0, 1, 1, 0},
        {3, 1, 0, 0, 0, 0},
        {-1, 0, 0, 0, 0, 0},
    };
    size_t i;

    memset(s, 1, sizeof s);
    memset(rs, 9, sizeof rs);
    memset(psk, 3, sizeof psk);
    for (i = 0; i < MBSC_ARRAY_LEN(cases); i++) {
        int ret = mbsc_noise_init(&hs, (enum mbsc_noise_pattern)cases[i].p, cases[i].initiator,
                                  prologue, 6, cases[i].s ? s : NULL, cases[i].rs ? rs : NULL,
                                  cases[i].psk ? psk : NULL);
        ck_assert_msg(ret == (cases[i].ok ? MBSC_OK : MBSC_ERR_INVALID_ARG), "case %zu: %d", i,
                      ret);
        if (!cases[i].ok)
            assert_dead(&hs, MBSC_ERR_INVALID_ARG);
    }
    ck_assert_int_eq(mbsc_noise_init(NULL, MBSC_NOISE_NN, 1, NULL, 0, NULL, NULL, NULL),
                     MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_noise_init(&hs, MBSC_NOISE_NN, 1, NULL, 6, NULL, NULL, NULL),
                     MBSC_ERR_INVALID_ARG);
    /* init revives a failed state; an empty prologue may be NULL */
    ck_assert_int_eq(mbsc_noise_init(&hs, MBSC_NOISE_NN, 1, NULL, 0, NULL, NULL, NULL), MBSC_OK);
    ck_assert_int_eq(mbsc_noise_write_message(&hs, NULL, 0, buf, sizeof buf, &len), MBSC_OK);
    ck_assert_uint_eq(len, 32); /* NN message 1: e, payload in clear */
    mbsc_noise_wipe(&hs);
}
END_TEST

START_TEST(test_buffers)
{
    struct pair pr;
    uint8_t out[MSG_MAX], got[MSG_MAX], *big, *big_out, *big_got;
    size_t len = 77, got_len, max_payload;
    int ovh;

    /* Output one byte too small: refused, zeroed, and fatal. */
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    ovh = mbsc_noise_next_overhead(&pr.ini);
    ck_assert_int_eq(ovh, 96); /* e, s and its tag, the payload's tag */
    memset(out, 0xaa, sizeof out);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.ini, payload1, sizeof payload1, out,
                                              sizeof payload1 + 95, &len),
                     MBSC_ERR_BUFFER_TOO_SMALL);
    ck_assert_uint_eq(len, 0);
    ck_assert(sodium_is_zero(out, sizeof payload1 + 95));
    assert_dead(&pr.ini, MBSC_ERR_BUFFER_TOO_SMALL);

    /* Payload buffer one byte too small. */
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    pair_write(&pr, 0);
    ck_assert_int_eq(mbsc_noise_read_message(&pr.resp, pr.msg[0], pr.msg_len[0], got,
                                             sizeof payload1 - 1, &got_len),
                     MBSC_ERR_BUFFER_TOO_SMALL);
    assert_dead(&pr.resp, MBSC_ERR_BUFFER_TOO_SMALL);

    /* Buffers that overlap. */
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    memcpy(out + 200, payload1, sizeof payload1);
    ck_assert_int_eq(
        mbsc_noise_write_message(&pr.ini, out + 200, sizeof payload1, out, sizeof out, &len),
        MBSC_ERR_INVALID_ARG);
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    pair_write(&pr, 0);
    ck_assert_int_eq(
        mbsc_noise_read_message(&pr.resp, pr.msg[0], pr.msg_len[0], pr.msg[0] + 10, 200, &got_len),
        MBSC_ERR_INVALID_ARG);

    /* NULL where a buffer is required. */
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.ini, NULL, 1, out, sizeof out, &len),
                     MBSC_ERR_INVALID_ARG);
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.ini, NULL, 0, NULL, 0, &len),
                     MBSC_ERR_INVALID_ARG);
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.ini, NULL, 0, out, sizeof out, NULL),
                     MBSC_ERR_INVALID_ARG);

    /* Empty payloads, with NULL pointers, still carry a tag. */
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.ini, NULL, 0, out, sizeof out, &len), MBSC_OK);
    ck_assert_uint_eq(len, 96);
    ck_assert_int_eq(mbsc_noise_read_message(&pr.resp, out, len, NULL, 0, &got_len), MBSC_OK);
    ck_assert_uint_eq(got_len, 0);
    ck_assert_int_eq(mbsc_noise_next_overhead(&pr.resp), 48);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.resp, NULL, 0, out, sizeof out, &len), MBSC_OK);
    ck_assert_uint_eq(len, 48);
    ck_assert_int_eq(mbsc_noise_read_message(&pr.ini, out, len, NULL, 0, &got_len), MBSC_OK);

    /* The largest message, 65535 bytes, and one byte more. */
    max_payload = MBSC_NOISE_MAX_MESSAGE - 96;
    big = malloc(max_payload + 1);
    big_out = malloc(MBSC_NOISE_MAX_MESSAGE + 1);
    big_got = malloc(max_payload + 1);
    ck_assert(big != NULL && big_out != NULL && big_got != NULL);
    tu_fill_pattern(big, max_payload + 1, 8);
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    ck_assert_int_eq(mbsc_noise_write_message(&pr.ini, big, max_payload + 1, big_out,
                                              MBSC_NOISE_MAX_MESSAGE + 1, &len),
                     MBSC_ERR_PAYLOAD_TOO_LONG);
    pair_init(&pr, MBSC_NOISE_IKPSK2, NULL, NULL, NULL);
    ck_assert_int_eq(
        mbsc_noise_write_message(&pr.ini, big, max_payload, big_out, MBSC_NOISE_MAX_MESSAGE, &len),
        MBSC_OK);
    ck_assert_uint_eq(len, MBSC_NOISE_MAX_MESSAGE);
    ck_assert_int_eq(
        mbsc_noise_read_message(&pr.resp, big_out, len, big_got, max_payload, &got_len), MBSC_OK);
    ck_assert_uint_eq(got_len, max_payload);
    ck_assert_mem_eq(big_got, big, max_payload);
    free(big);
    free(big_out);
    free(big_got);
}
END_TEST

/* --- The production path: random ephemerals --------------------------------- */

static void random_handshake(const uint8_t init_s[32], const uint8_t resp_s[32], uint8_t msg1_e[32],
                             uint8_t k1[32], uint8_t k2[32])
{
    static const uint8_t prologue[] = {'m', 'b', 's', 'c', '/', '1'};
    uint8_t resp_pub[32], init_pub[32], zero[32], msg[MSG_MAX], got[MSG_MAX];
    uint8_t r1[32], r2[32], hi[64], hr[64];
    size_t len, got_len;
    mbsc_noise ini, resp;

    memset(zero, 0, sizeof zero);
    pub_of(resp_pub, resp_s);
    pub_of(init_pub, init_s);
    ck_assert_int_eq(
        mbsc_noise_init(&ini, MBSC_NOISE_IKPSK2, 1, prologue, 6, init_s, resp_pub, NULL), MBSC_OK);
    ck_assert_int_eq(mbsc_noise_init(&resp, MBSC_NOISE_IKPSK2, 0, prologue, 6, resp_s, NULL, zero),
                     MBSC_OK);
    ck_assert_int_eq(
        mbsc_noise_write_message(&ini, payload1, sizeof payload1, msg, sizeof msg, &len), MBSC_OK);
    memcpy(msg1_e, msg, 32);
    ck_assert_int_eq(mbsc_noise_read_message(&resp, msg, len, got, sizeof got, &got_len), MBSC_OK);
    ck_assert_mem_eq(got, payload1, sizeof payload1);
    ck_assert_mem_eq(mbsc_noise_remote_static(&resp), init_pub, 32);
    ck_assert_int_eq(
        mbsc_noise_write_message(&resp, payload2, sizeof payload2, msg, sizeof msg, &len), MBSC_OK);
    ck_assert_int_eq(mbsc_noise_read_message(&ini, msg, len, got, sizeof got, &got_len), MBSC_OK);
    ck_assert_mem_eq(got, payload2, sizeof payload2);
    ck_assert_int_eq(mbsc_noise_split(&ini, k1, k2, hi), MBSC_OK);
    ck_assert_int_eq(mbsc_noise_split(&resp, r1, r2, hr), MBSC_OK);
    ck_assert_mem_eq(k1, r1, 32);
    ck_assert_mem_eq(k2, r2, 32);
    ck_assert_mem_eq(hi, hr, 64);
    ck_assert(memcmp(k1, k2, 32) != 0);
}

START_TEST(test_random_ephemeral)
{
    uint8_t init_s[32], resp_s[32], e1[32], e2[32], a1[32], a2[32], b1[32], b2[32];

    tu_fill_pattern(init_s, 32, 11);
    tu_fill_pattern(resp_s, 32, 12);
    random_handshake(init_s, resp_s, e1, a1, a2);
    random_handshake(init_s, resp_s, e2, b1, b2);
    /* fresh ephemerals each time, hence fresh keys */
    ck_assert(memcmp(e1, e2, 32) != 0);
    ck_assert(memcmp(a1, b1, 32) != 0);
    ck_assert(memcmp(a2, b2, 32) != 0);
}
END_TEST

/* --- Suite ---------------------------------------------------------------------- */

Suite *noise_suite(void)
{
    Suite *s = suite_create("noise");
    TCase *tc;

    tc = tcase_create("vectors");
    tcase_add_checked_fixture(tc, noise_vectors_setup, noise_vectors_teardown);
    tcase_add_test(tc, test_vector_count);
    tcase_add_loop_test(tc, test_noise_vector, 0, N_NOISE_VECTORS);
    suite_add_tcase(s, tc);

    tc = tcase_create("mbsc1");
    tcase_add_checked_fixture(tc, mbsc1_setup, mbsc1_teardown);
    tcase_add_loop_test(tc, test_mbsc1_handshake, 0, N_MBSC1_HANDSHAKES);
    suite_add_tcase(s, tc);

    tc = tcase_create("hmac");
    tcase_add_test(tc, test_hmac_blake2b);
    suite_add_tcase(s, tc);

    tc = tcase_create("low_order");
    tcase_add_loop_test(tc, test_low_order_e_message1, 0, N_LOW_ORDER);
    tcase_add_loop_test(tc, test_low_order_e_message2, 0, N_LOW_ORDER);
    tcase_add_loop_test(tc, test_low_order_remote_static, 0, N_LOW_ORDER);
    suite_add_tcase(s, tc);

    tc = tcase_create("tampering");
    tcase_add_loop_test(tc, test_bit_flips, 0, (int)MBSC_ARRAY_LEN(all_patterns));
    tcase_add_loop_test(tc, test_truncated, 0, (int)MBSC_ARRAY_LEN(all_patterns));
    tcase_add_loop_test(tc, test_wrong_psk, 0, 3);
    tcase_add_loop_test(tc, test_wrong_responder_key, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("api");
    tcase_add_test(tc, test_call_order);
    tcase_add_test(tc, test_init_args);
    tcase_add_test(tc, test_buffers);
    tcase_add_test(tc, test_random_ephemeral);
    suite_add_tcase(s, tc);

    return s;
}
