/* SPDX-License-Identifier: ISC */
/*
 * check_cipher.c - the cipher layer: published vectors, libsodium
 * cross-check, and properties every cipher must have, each run through
 * every implementation of the cipher that this machine can execute
 * (forced one by one with mbsc_cipher_force_impl()); the implementations
 * it cannot execute are listed on stderr by impls_listed.
 *
 * Expected values come only from tests/kat/ (RFC 8439, eSTREAM, RFC 4503,
 * Hitachi's Enocoro vectors; sources in each file's header) and from
 * libsodium's independent ChaCha20.
 */
#include <check.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kat_reader.h"
#include "mbsc.h"
#include "testutil.h"

Suite *cipher_suite(void);

static const char *const cipher_names[MBSC_CIPHER_COUNT] = {"chacha20", "trivium", "rabbit",
                                                            "enocoro128v2"};

static struct kat_file kat_files[MBSC_CIPHER_COUNT];

static const mbsc_cipher *cipher_at(int i)
{
    const mbsc_cipher *c = mbsc_cipher_by_name(cipher_names[i]);
    ck_assert_ptr_nonnull(c);
    return c;
}

/* A stream initialised now runs implementation impl. */
static void init_fixed_impl_check(mbsc_stream *st, const mbsc_cipher *c, const char *impl)
{
    uint8_t key[MBSC_CIPHER_MAX_KEY_BYTES] = {0}, iv[MBSC_CIPHER_MAX_IV_BYTES] = {0};

    ck_assert_int_eq(
        mbsc_stream_init(st, c, key, mbsc_cipher_key_bytes(c), iv, mbsc_cipher_iv_bytes(c)),
        MBSC_OK);
    ck_assert_str_eq(mbsc_stream_impl_name(st), impl);
    mbsc_stream_wipe(st);
    ck_assert_ptr_null(mbsc_stream_impl_name(st));
}

/*
 * Calls body(cipher_index, impl_name, arg) once per implementation of the
 * cipher that this CPU supports, with that implementation forced; then
 * restores the default choice.
 */
typedef void impl_body(int ci, const char *impl, int arg);

static void for_each_impl(int ci, impl_body *body, int arg)
{
    const mbsc_cipher *c = cipher_at(ci);
    size_t n = mbsc_cipher_impl_count(c), ran = 0;

    ck_assert_uint_ge(n, 1);
    for (size_t k = 0; k < n; k++) {
        const char *name = mbsc_cipher_impl_name(c, k);
        mbsc_stream st;

        if (!mbsc_cipher_impl_supported(c, k))
            continue;
        ck_assert_int_eq(mbsc_cipher_force_impl(c, name), MBSC_OK);
        ck_assert_str_eq(mbsc_cipher_impl_selected(c), name);
        init_fixed_impl_check(&st, c, name);
        body(ci, name, arg);
        ran++;
    }
    ck_assert_uint_ge(ran, 1); /* the portable one always runs */
    ck_assert_int_eq(mbsc_cipher_force_impl(c, NULL), MBSC_OK);
}

/* Discard n keystream bytes, in uneven steps so that buffering is exercised. */
static void skip_keystream(mbsc_stream *st, unsigned long n)
{
    uint8_t junk[1000];
    size_t step = 1;

    memset(junk, 0, sizeof junk);
    while (n > 0) {
        size_t k = step < n ? step : (size_t)n;
        mbsc_stream_xor(st, junk, junk, k);
        n -= k;
        step = step * 3 + 1;
        if (step > sizeof junk)
            step = sizeof junk - 7;
    }
}

/* --- Published vectors, 16 to a test case -------------------------------- */

/* A forked test costs more than 16 vectors under qemu-user and the
 * sanitizers; a failure still names its vector's file line. */
#define KATS_PER_TEST 16

static void run_kat(int cipher_index, const char *impl, int i)
{
    const struct kat_case *kc = &kat_files[cipher_index].cases[i];
    const mbsc_cipher *c = cipher_at(cipher_index);
    uint8_t iv[16];
    size_t iv_len = kc->iv_len;
    uint8_t *ks = calloc(1, kc->keystream_len);
    mbsc_stream st;
    size_t pos, chunk;

    ck_assert_ptr_nonnull(ks);
    memcpy(iv, kc->iv, kc->iv_len);
    if (c == mbsc_cipher_by_name("chacha20") && kc->iv_len == 8) {
        /*
         * Original-variant ChaCha20 (64-bit nonce): for block counters below
         * 2^32 its stream equals the IETF stream with nonce 0^4 || nonce
         * (RFC 8439 section 2.3 vs. Bernstein's layout; see the file header).
         */
        memset(iv, 0, 4);
        memcpy(iv + 4, kc->iv, 8);
        iv_len = 12;
    }
    ck_assert_int_eq(mbsc_stream_init(&st, c, kc->key, kc->key_len, iv, iv_len), MBSC_OK);
    skip_keystream(&st, kc->offset);
    /* Chunk size varies per vector: 1, 2, ..., 13 bytes, then the rest. */
    chunk = (size_t)(i % 13) + 1;
    for (pos = 0; pos < kc->keystream_len; pos += chunk) {
        size_t k = kc->keystream_len - pos < chunk ? kc->keystream_len - pos : chunk;
        mbsc_stream_xor(&st, ks + pos, ks + pos, k);
    }
    for (pos = 0; pos < kc->keystream_len; pos++)
        ck_assert_msg(ks[pos] == kc->keystream[pos],
                      "%s:%s vector at line %u (%s): keystream byte %lu is %02x, expected %02x",
                      cipher_names[cipher_index], impl, kc->line, kc->source,
                      (unsigned long)pos + kc->offset, ks[pos], kc->keystream[pos]);
    mbsc_stream_wipe(&st);
    free(ks);
}

static void run_kats(int cipher_index, int group)
{
    size_t v, end = (size_t)(group + 1) * KATS_PER_TEST;

    if (end > kat_files[cipher_index].count)
        end = kat_files[cipher_index].count;
    for (v = (size_t)group * KATS_PER_TEST; v < end; v++)
        for_each_impl(cipher_index, run_kat, (int)v);
}

START_TEST(kat_chacha20)
{
    run_kats(0, _i);
}
END_TEST
START_TEST(kat_trivium)
{
    run_kats(1, _i);
}
END_TEST
START_TEST(kat_rabbit)
{
    run_kats(2, _i);
}
END_TEST
START_TEST(kat_enocoro128v2)
{
    run_kats(3, _i);
}
END_TEST

START_TEST(kat_file_unreadable)
{
    ck_abort_msg("vector file tests/kat/%s.txt could not be read or parsed (see stderr)",
                 cipher_names[_i]);
}
END_TEST

/* --- ChaCha20 against libsodium ------------------------------------------ */

/*
 * Random key, nonce, initial block counter, length and chunking; our stream
 * skipped to 64 * counter must equal crypto_stream_chacha20_ietf_xor_ic.
 * The randomness is seeded per iteration, so a failure is reproducible.
 */
static void chacha20_vs_libsodium(int ci, const char *impl, int _i)
{
    static const uint8_t seed_base[randombytes_SEEDBYTES] = {'m', 'b', 's', 'c'};
    uint8_t seed[randombytes_SEEDBYTES];
    uint8_t rnd[32 + 12 + 8];
    uint8_t in[3000], ours[3000], theirs[3000];
    const mbsc_cipher *c = mbsc_cipher_by_name("chacha20");
    mbsc_stream st;
    uint32_t ic;
    size_t len, pos, chunk;

    memcpy(seed, seed_base, sizeof seed);
    seed[31] = (uint8_t)_i;
    seed[30] = (uint8_t)(_i >> 8);
    randombytes_buf_deterministic(rnd, sizeof rnd, seed);
    ic = (uint32_t)(rnd[44] | rnd[45] << 8) % 2048u;
    len = (size_t)(rnd[46] | rnd[47] << 8) % sizeof in;
    chunk = (size_t)rnd[48] % 150u + 1;
    /* Every third iteration in one call, so that whole SIMD batches (up to
     * 16 blocks) run too. */
    if (_i % 3 == 0)
        chunk = sizeof in;
    tu_fill_pattern(in, len, (uint32_t)_i + 1u);

    ck_assert_int_eq(crypto_stream_chacha20_ietf_xor_ic(theirs, in, len, rnd + 32, ic, rnd), 0);
    ck_assert_int_eq(mbsc_stream_init(&st, c, rnd, 32, rnd + 32, 12), MBSC_OK);
    skip_keystream(&st, 64ul * ic);
    for (pos = 0; pos < len;) {
        size_t k = len - pos < chunk ? len - pos : chunk;
        mbsc_stream_xor(&st, ours + pos, in + pos, k);
        pos += k;
        if (chunk != sizeof in)
            chunk = chunk * 7 % 151 + 1; /* vary the chunk size along the way */
    }
    ck_assert_msg(memcmp(ours, theirs, len) == 0,
                  "%s: iteration %d (counter %u, length %zu) differs from libsodium", impl, _i, ic,
                  len);
    mbsc_stream_wipe(&st);
    (void)ci;
}

/* 300 iterations, 30 to a test: a forked test costs more than 30 iterations
 * under qemu-user and the sanitizers. */
START_TEST(chacha20_matches_libsodium)
{
    for (int iteration = _i * 30; iteration < _i * 30 + 30; iteration++)
        for_each_impl(0, chacha20_vs_libsodium, iteration);
}
END_TEST

/* --- Properties, looped over the four ciphers ----------------------------- */

static void init_fixed(mbsc_stream *st, int ci, uint8_t fill)
{
    const mbsc_cipher *c = cipher_at(ci);
    uint8_t key[MBSC_CIPHER_MAX_KEY_BYTES], iv[MBSC_CIPHER_MAX_IV_BYTES];

    memset(key, fill, sizeof key);
    memset(iv, (uint8_t)(fill ^ 0x5a), sizeof iv);
    ck_assert_int_eq(
        mbsc_stream_init(st, c, key, mbsc_cipher_key_bytes(c), iv, mbsc_cipher_iv_bytes(c)),
        MBSC_OK);
}

static void chunked_equals_one_shot_body(int _i, const char *impl, int arg)
{
    (void)impl;
    (void)arg;
    enum { N = 5000 };
    static uint8_t msg[N], one[N], chunked[N];
    mbsc_stream a, b;
    size_t pos = 0, step = 0;

    tu_fill_pattern(msg, N, 7);
    init_fixed(&a, _i, 0x11);
    init_fixed(&b, _i, 0x11);
    mbsc_stream_xor(&a, one, msg, N);
    /* Chunk sizes 0, 1, 2, ... 200, 0, ... including empty calls. */
    while (pos < N) {
        size_t k = step % 201;
        if (k > N - pos)
            k = N - pos;
        mbsc_stream_xor(&b, chunked + pos, msg + pos, k);
        pos += k;
        step++;
    }
    ck_assert_msg(memcmp(one, chunked, N) == 0, "%s:%s: chunked output differs", cipher_names[_i],
                  impl);
    /* And byte at a time over the first 300 bytes. */
    init_fixed(&b, _i, 0x11);
    for (pos = 0; pos < 300; pos++)
        mbsc_stream_xor(&b, chunked + pos, msg + pos, 1);
    ck_assert_msg(memcmp(one, chunked, 300) == 0, "%s:%s: byte-at-a-time differs", cipher_names[_i],
                  impl);
}
START_TEST(chunked_equals_one_shot)
{
    for_each_impl(_i, chunked_equals_one_shot_body, 0);
}
END_TEST

static void in_place_equals_out_of_place_body(int _i, const char *impl, int arg)
{
    (void)impl;
    (void)arg;
    uint8_t msg[777], out[777], inplace[777];
    mbsc_stream a, b;

    tu_fill_pattern(msg, sizeof msg, 9);
    memcpy(inplace, msg, sizeof msg);
    init_fixed(&a, _i, 0x22);
    init_fixed(&b, _i, 0x22);
    mbsc_stream_xor(&a, out, msg, sizeof msg);
    mbsc_stream_xor(&b, inplace, inplace, 100);
    mbsc_stream_xor(&b, inplace + 100, inplace + 100, sizeof msg - 100);
    ck_assert(memcmp(out, inplace, sizeof msg) == 0);
    ck_assert(memcmp(out, msg, sizeof msg) != 0);
    /* Decrypting is the same operation. */
    init_fixed(&a, _i, 0x22);
    mbsc_stream_xor(&a, out, out, sizeof msg);
    ck_assert(memcmp(out, msg, sizeof msg) == 0);
}
START_TEST(in_place_equals_out_of_place)
{
    for_each_impl(_i, in_place_equals_out_of_place_body, 0);
}
END_TEST

/* Every length from 0 to three ChaCha20 blocks gives a prefix of the stream. */
static void lengths_zero_to_three_blocks_body(int _i, const char *impl, int arg)
{
    (void)impl;
    (void)arg;
    uint8_t ref[3 * 64], buf[3 * 64];
    mbsc_stream st;
    size_t len;

    memset(ref, 0, sizeof ref);
    init_fixed(&st, _i, 0x33);
    mbsc_stream_xor(&st, ref, ref, sizeof ref);
    for (len = 0; len <= sizeof ref; len++) {
        memset(buf, 0, sizeof buf);
        init_fixed(&st, _i, 0x33);
        mbsc_stream_xor(&st, buf, buf, len);
        ck_assert_msg(memcmp(buf, ref, len) == 0, "%s:%s: length %zu", cipher_names[_i], impl, len);
        if (len < sizeof ref)
            ck_assert_msg(buf[len] == 0, "%s:%s: wrote past length %zu", cipher_names[_i], impl,
                          len);
    }
}
START_TEST(lengths_zero_to_three_blocks)
{
    for_each_impl(_i, lengths_zero_to_three_blocks_body, 0);
}
END_TEST

START_TEST(wrong_lengths_rejected)
{
    const mbsc_cipher *c = cipher_at(_i);
    uint8_t key[64] = {0}, iv[64] = {0};
    size_t kb = mbsc_cipher_key_bytes(c), ib = mbsc_cipher_iv_bytes(c);
    mbsc_stream st;

    ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb - 1, iv, ib), MBSC_ERR_KEY_LENGTH);
    ck_assert_ptr_null(st.cipher_);
    ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb + 1, iv, ib), MBSC_ERR_KEY_LENGTH);
    ck_assert_int_eq(mbsc_stream_init(&st, c, key, 0, iv, ib), MBSC_ERR_KEY_LENGTH);
    ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb, iv, ib - 1), MBSC_ERR_IV_LENGTH);
    ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb, iv, ib + 1), MBSC_ERR_IV_LENGTH);
    ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb, iv, 64), MBSC_ERR_IV_LENGTH);
    /* Only Rabbit has a key-only mode (RFC 4503 A.1). */
    ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb, NULL, 0),
                     mbsc_cipher_id(c) == MBSC_CIPHER_RABBIT ? MBSC_OK : MBSC_ERR_IV_LENGTH);
    ck_assert_int_eq(mbsc_stream_init(&st, NULL, key, kb, iv, ib), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_stream_init(&st, c, NULL, kb, iv, ib), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb, NULL, ib), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_stream_init(NULL, c, key, kb, iv, ib), MBSC_ERR_INVALID_ARG);
    /* A failed init leaves a stream that only produces zeros. */
    {
        uint8_t buf[40];
        memset(buf, 0xab, sizeof buf);
        ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb + 1, iv, ib), MBSC_ERR_KEY_LENGTH);
        mbsc_stream_xor(&st, buf, buf, sizeof buf);
        for (size_t i = 0; i < sizeof buf; i++)
            ck_assert_uint_eq(buf[i], 0);
    }
}
END_TEST

static void wipe_clears_state_body(int _i, const char *impl, int arg)
{
    (void)impl;
    (void)arg;
    mbsc_stream st;
    uint8_t buf[100];
    const uint8_t *raw = (const uint8_t *)&st;
    size_t i, nonzero = 0;

    init_fixed(&st, _i, 0x44);
    mbsc_stream_xor(&st, buf, buf, 37); /* leave a partly used buffer */
    for (i = 0; i < sizeof st; i++)
        nonzero += raw[i] != 0;
    ck_assert_msg(nonzero > 0, "state unexpectedly all zero before wipe");
    mbsc_stream_wipe(&st);
    for (i = 0; i < sizeof st; i++)
        ck_assert_msg(raw[i] == 0, "%s:%s: byte %zu survives the wipe", cipher_names[_i], impl, i);
    /* A wiped stream refuses to pass plaintext through. */
    memset(buf, 0x5c, sizeof buf);
    mbsc_stream_xor(&st, buf, buf, sizeof buf);
    for (i = 0; i < sizeof buf; i++)
        ck_assert_uint_eq(buf[i], 0);
}
START_TEST(wipe_clears_state)
{
    for_each_impl(_i, wipe_clears_state_body, 0);
}
END_TEST

START_TEST(state_fits_and_keys_matter)
{
    const mbsc_cipher *c = cipher_at(_i);
    uint8_t a[64] = {0}, b[64] = {0};
    mbsc_stream st;

    ck_assert_uint_gt(mbsc_cipher_state_bytes(c), 0);
    ck_assert_uint_le(mbsc_cipher_state_bytes(c), MBSC_STREAM_STATE_BYTES);
    ck_assert_uint_le(mbsc_cipher_key_bytes(c), MBSC_CIPHER_MAX_KEY_BYTES);
    ck_assert_uint_le(mbsc_cipher_iv_bytes(c), MBSC_CIPHER_MAX_IV_BYTES);
    /* Different keys and different IVs give different streams. */
    init_fixed(&st, _i, 0x01);
    mbsc_stream_xor(&st, a, a, sizeof a);
    init_fixed(&st, _i, 0x02);
    mbsc_stream_xor(&st, b, b, sizeof b);
    ck_assert(memcmp(a, b, sizeof a) != 0);
}
END_TEST

START_TEST(registry_lookup)
{
    unsigned id;

    for (id = 1; id <= MBSC_CIPHER_COUNT; id++) {
        const mbsc_cipher *c = mbsc_cipher_by_id(id);
        ck_assert_ptr_nonnull(c);
        ck_assert_uint_eq(mbsc_cipher_id(c), id);
        ck_assert_str_eq(mbsc_cipher_name(c), cipher_names[id - 1]);
        ck_assert_ptr_eq(mbsc_cipher_by_name(cipher_names[id - 1]), c);
    }
    ck_assert_ptr_null(mbsc_cipher_by_id(0));
    ck_assert_ptr_null(mbsc_cipher_by_id(MBSC_CIPHER_COUNT + 1));
    ck_assert_ptr_null(mbsc_cipher_by_name(NULL));
    ck_assert_ptr_null(mbsc_cipher_by_name(""));
    ck_assert_ptr_null(mbsc_cipher_by_name("ChaCha20"));
    ck_assert_ptr_null(mbsc_cipher_by_name("chacha20 "));
    /* Sizes from the specifications. */
    ck_assert_uint_eq(mbsc_cipher_key_bytes(mbsc_cipher_by_id(1)), 32);
    ck_assert_uint_eq(mbsc_cipher_iv_bytes(mbsc_cipher_by_id(1)), 12);
    ck_assert_uint_eq(mbsc_cipher_key_bytes(mbsc_cipher_by_id(2)), 10);
    ck_assert_uint_eq(mbsc_cipher_iv_bytes(mbsc_cipher_by_id(2)), 10);
    ck_assert_uint_eq(mbsc_cipher_key_bytes(mbsc_cipher_by_id(3)), 16);
    ck_assert_uint_eq(mbsc_cipher_iv_bytes(mbsc_cipher_by_id(3)), 8);
    ck_assert_uint_eq(mbsc_cipher_key_bytes(mbsc_cipher_by_id(4)), 16);
    ck_assert_uint_eq(mbsc_cipher_iv_bytes(mbsc_cipher_by_id(4)), 8);
    ck_assert_str_eq(mbsc_strerror(MBSC_ERR_KEY_LENGTH), "wrong key length for this cipher");
    ck_assert_str_eq(mbsc_strerror(12345), "unknown error");
}
END_TEST

/* --- Implementations ------------------------------------------------------ */

/*
 * Every supported implementation gives the portable one's stream: every
 * message length from 0 to 1100 bytes (0 to 17 ChaCha20 blocks, so each
 * batch size and tail of every kernel) starting at every position 0..70 of
 * the stream, and random chunkings of 20000 bytes.
 */
static uint8_t agree_ref[20000];

static void agree_body(int ci, const char *impl, int arg)
{
    static uint8_t buf[20000];
    mbsc_stream st;
    size_t start, len, pos;
    uint32_t rnd = 12345u + (uint32_t)arg;

    for (start = 0; start <= 70; start += 7) {
        for (len = 0; len <= 1100; len += len > 200 ? 4u : 1u) {
            init_fixed(&st, ci, 0x66);
            skip_keystream(&st, start);
            memset(buf, 0, len + 1);
            mbsc_stream_xor(&st, buf, buf, len);
            ck_assert_msg(memcmp(buf, agree_ref + start, len) == 0,
                          "%s:%s: %zu bytes from position %zu differ from the portable code",
                          cipher_names[ci], impl, len, start);
            ck_assert_msg(buf[len] == 0, "%s:%s: wrote past %zu bytes", cipher_names[ci], impl,
                          len);
        }
    }
    init_fixed(&st, ci, 0x66);
    memset(buf, 0, sizeof buf);
    for (pos = 0; pos < sizeof buf;) {
        size_t k;
        rnd = rnd * 1103515245u + 12345u;
        k = (rnd >> 16) % 1500u;
        if (k > sizeof buf - pos)
            k = sizeof buf - pos;
        mbsc_stream_xor(&st, buf + pos, buf + pos, k);
        pos += k;
    }
    ck_assert_msg(memcmp(buf, agree_ref, sizeof buf) == 0, "%s:%s: chunked stream differs",
                  cipher_names[ci], impl);
    mbsc_stream_wipe(&st);
}

START_TEST(impls_agree)
{
    const mbsc_cipher *c = cipher_at(_i);
    mbsc_stream st;

    ck_assert_int_eq(mbsc_cipher_force_impl(c, mbsc_cipher_impl_name(c, 0)), MBSC_OK);
    init_fixed(&st, _i, 0x66);
    memset(agree_ref, 0, sizeof agree_ref);
    mbsc_stream_xor(&st, agree_ref, agree_ref, sizeof agree_ref);
    mbsc_stream_wipe(&st);
    for_each_impl(_i, agree_body, _i);
}
END_TEST

/* The listing: names present and distinct, the portable one always runs. */
START_TEST(impls_listed)
{
    const mbsc_cipher *c = cipher_at(_i);
    size_t n = mbsc_cipher_impl_count(c);

    ck_assert_uint_ge(n, 1);
    ck_assert_int_eq(mbsc_cipher_impl_supported(c, 0), 1);
    ck_assert_ptr_null(mbsc_cipher_impl_name(c, n));
    ck_assert_int_eq(mbsc_cipher_impl_supported(c, n), 0);
    for (size_t k = 0; k < n; k++) {
        const char *name = mbsc_cipher_impl_name(c, k);
        ck_assert_ptr_nonnull(name);
        for (size_t j = 0; j < k; j++)
            ck_assert_str_ne(name, mbsc_cipher_impl_name(c, j));
        if (!mbsc_cipher_impl_supported(c, k))
            fprintf(stderr, "check_cipher: %s:%s is not supported by this CPU: not run\n",
                    cipher_names[_i], name);
    }
    ck_assert_uint_le(mbsc_cipher_state_bytes(c), MBSC_STREAM_STATE_BYTES);
}
END_TEST

/* Forcing: unknown or unsupported names are errors that change nothing. */
START_TEST(force_impl_errors)
{
    const mbsc_cipher *c = cipher_at(_i);
    const char *before = mbsc_cipher_impl_selected(c);
    size_t n = mbsc_cipher_impl_count(c);

    ck_assert_ptr_nonnull(before);
    ck_assert_int_eq(mbsc_cipher_force_impl(c, "no-such-impl"), MBSC_ERR_CIPHER_IMPL);
    ck_assert_int_eq(mbsc_cipher_force_impl(c, ""), MBSC_ERR_CIPHER_IMPL);
    ck_assert_int_eq(mbsc_cipher_force_impl(NULL, "ref"), MBSC_ERR_INVALID_ARG);
    ck_assert_str_eq(mbsc_cipher_impl_selected(c), before);
    for (size_t k = 0; k < n; k++) {
        if (mbsc_cipher_impl_supported(c, k))
            continue;
        ck_assert_int_eq(mbsc_cipher_force_impl(c, mbsc_cipher_impl_name(c, k)),
                         MBSC_ERR_CIPHER_IMPL);
        ck_assert_str_eq(mbsc_cipher_impl_selected(c), before);
    }
    /* The default is the last (most preferred) supported one. */
    ck_assert_int_eq(mbsc_cipher_force_impl(c, NULL), MBSC_OK);
    for (size_t k = n; k-- > 0;) {
        if (mbsc_cipher_impl_supported(c, k)) {
            ck_assert_str_eq(mbsc_cipher_impl_selected(c), mbsc_cipher_impl_name(c, k));
            break;
        }
    }
}
END_TEST

/* MBSC_CIPHER_IMPL, re-read by force_impl(c, NULL). */
START_TEST(env_var_selects)
{
    const mbsc_cipher *c = cipher_at(_i);
    const char *portable = mbsc_cipher_impl_name(c, 0);
    char spec[128];
    uint8_t key[MBSC_CIPHER_MAX_KEY_BYTES] = {0}, iv[MBSC_CIPHER_MAX_IV_BYTES] = {0};
    size_t kb = mbsc_cipher_key_bytes(c), ib = mbsc_cipher_iv_bytes(c);
    mbsc_stream st;

    snprintf(spec, sizeof spec, "trivium:64,%s:%s", cipher_names[_i], portable);
    ck_assert_int_eq(setenv("MBSC_CIPHER_IMPL", spec, 1), 0);
    ck_assert_int_eq(mbsc_cipher_force_impl(c, NULL), MBSC_OK);
    ck_assert_str_eq(mbsc_cipher_impl_selected(c), portable);
    ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb, iv, ib), MBSC_OK);
    ck_assert_str_eq(mbsc_stream_impl_name(&st), portable);

    /* Unknown implementation, unknown cipher, malformed entry: init fails. */
    {
        static const char *const bad[] = {":nope", ":ref,nosuchcipher:ref", "", ":"};
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            snprintf(spec, sizeof spec, "%s%s", cipher_names[_i], bad[b]);
            ck_assert_int_eq(setenv("MBSC_CIPHER_IMPL", spec, 1), 0);
            ck_assert_int_eq(mbsc_cipher_force_impl(c, NULL), MBSC_OK);
            ck_assert_msg(mbsc_cipher_impl_selected(c) == NULL, "MBSC_CIPHER_IMPL=%s accepted",
                          spec);
            ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb, iv, ib), MBSC_ERR_CIPHER_IMPL);
            ck_assert_ptr_null(st.cipher_);
        }
    }
    /* The API call overrides the variable. */
    ck_assert_int_eq(mbsc_cipher_force_impl(c, portable), MBSC_OK);
    ck_assert_int_eq(mbsc_stream_init(&st, c, key, kb, iv, ib), MBSC_OK);
    ck_assert_int_eq(unsetenv("MBSC_CIPHER_IMPL"), 0);
    ck_assert_int_eq(mbsc_cipher_force_impl(c, NULL), MBSC_OK);
    ck_assert_ptr_nonnull(mbsc_cipher_impl_selected(c));
    ck_assert_str_ne(mbsc_strerror(MBSC_ERR_CIPHER_IMPL), "unknown error");
    mbsc_stream_wipe(&st);
}
END_TEST

Suite *cipher_suite(void)
{
    const TTest *kat_tests[MBSC_CIPHER_COUNT];
    Suite *s = suite_create("cipher");
    TCase *tc;
    int i;

    kat_tests[0] = kat_chacha20;
    kat_tests[1] = kat_trivium;
    kat_tests[2] = kat_rabbit;
    kat_tests[3] = kat_enocoro128v2;

    for (i = 0; i < (int)MBSC_CIPHER_COUNT; i++) {
        static const char *const tcase_names[MBSC_CIPHER_COUNT] = {
            "kat_chacha20", "kat_trivium", "kat_rabbit", "kat_enocoro128v2"};
        char path[64];

        snprintf(path, sizeof path, "tests/kat/%s.txt", cipher_names[i]);
        tc = tcase_create(tcase_names[i]); /* Check keeps the pointer */
        if (kat_load(&kat_files[i], path) == 0)
            tcase_add_loop_test(tc, kat_tests[i], 0,
                                (int)((kat_files[i].count + KATS_PER_TEST - 1) / KATS_PER_TEST));
        else
            tcase_add_loop_test(tc, kat_file_unreadable, i, i + 1);
        suite_add_tcase(s, tc);
    }

    tc = tcase_create("chacha20_vs_libsodium");
    tcase_add_loop_test(tc, chacha20_matches_libsodium, 0, 10);
    suite_add_tcase(s, tc);

    tc = tcase_create("properties");
    tcase_add_loop_test(tc, chunked_equals_one_shot, 0, MBSC_CIPHER_COUNT);
    tcase_add_loop_test(tc, in_place_equals_out_of_place, 0, MBSC_CIPHER_COUNT);
    tcase_add_loop_test(tc, lengths_zero_to_three_blocks, 0, MBSC_CIPHER_COUNT);
    tcase_add_loop_test(tc, wrong_lengths_rejected, 0, MBSC_CIPHER_COUNT);
    tcase_add_loop_test(tc, wipe_clears_state, 0, MBSC_CIPHER_COUNT);
    tcase_add_loop_test(tc, state_fits_and_keys_matter, 0, MBSC_CIPHER_COUNT);
    tcase_add_test(tc, registry_lookup);
    suite_add_tcase(s, tc);

    tc = tcase_create("implementations");
    tcase_add_loop_test(tc, impls_listed, 0, MBSC_CIPHER_COUNT);
    tcase_add_loop_test(tc, impls_agree, 0, MBSC_CIPHER_COUNT);
    tcase_add_loop_test(tc, force_impl_errors, 0, MBSC_CIPHER_COUNT);
    tcase_add_loop_test(tc, env_var_selects, 0, MBSC_CIPHER_COUNT);
    suite_add_tcase(s, tc);
    return s;
}
