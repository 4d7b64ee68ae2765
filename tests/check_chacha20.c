/* SPDX-License-Identifier: ISC */
/*
 * check_chacha20.c - the ChaCha20 driver and kernels at their edges, on
 * every implementation this machine runs (forced one by one).
 *
 * The published vectors (tests/kat/chacha20.txt, check_cipher.c) start at
 * block counter 0 or 1.  Two properties they do not reach:
 *
 * - Every batch shape: messages of 1 to 160 blocks (plus a partial block)
 *   at every offset inside a block, so each kernel sees each block count
 *   it has a code path for (one to four zmm quads, one to three ymm
 *   pairs, eight lanes with and without the scalar ninth block, several
 *   such batches and a short rest in one AVX2 call of up to 72 blocks,
 *   sixteen lanes), compared with libsodium's
 *   crypto_stream_chacha20_ietf_xor_ic, an independent implementation.
 * - The end of the 32-bit block counter (RFC 8439 section 2.4: 2^32
 *   blocks per key and nonce).  Starting a few blocks before it, the
 *   keystream must equal libsodium's up to block 2^32 - 1, and every byte
 *   after it must be zero (chacha20_ref.c: the counter never wraps, which
 *   would repeat block 0).  The counter is set through the private state
 *   layout (chacha20.h), as no public call reaches it in reasonable time.
 */
#include <check.h>
#include <sodium.h>
#include <string.h>

#include "cipher/chacha20/chacha20.h"
#include "mbsc.h"

static const uint8_t key[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const uint8_t nonce[12] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5,
                                  0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab};

#define MAX_BLOCKS 161u
static uint8_t got[MAX_BLOCKS * 64u], want[MAX_BLOCKS * 64u];

/* A stream of implementation index i whose next block is `counter`. */
static void start_at(mbsc_stream *st, size_t i, uint32_t counter)
{
    const mbsc_cipher *c = mbsc_cipher_by_name("chacha20");
    struct chacha20_state *cs;

    ck_assert_int_eq(mbsc_cipher_force_impl(c, mbsc_cipher_impl_name(c, i)), MBSC_OK);
    ck_assert_int_eq(mbsc_stream_init(st, c, key, sizeof key, nonce, sizeof nonce), MBSC_OK);
    ck_assert_str_eq(mbsc_stream_impl_name(st), mbsc_cipher_impl_name(c, i));
    cs = (struct chacha20_state *)(void *)st->state_.bytes_;
    ck_assert_uint_eq(cs->input[12], 0);
    cs->input[12] = counter;
}

static void restore_default(void)
{
    ck_assert_int_eq(mbsc_cipher_force_impl(mbsc_cipher_by_name("chacha20"), NULL), MBSC_OK);
}

/* Implementation _i: every length of 0..160 blocks + 63 bytes, after every
 * skip of 0..63 bytes, against libsodium from the same position. */
START_TEST(batch_shapes_match_libsodium)
{
    const mbsc_cipher *c = mbsc_cipher_by_name("chacha20");

    if ((size_t)_i >= mbsc_cipher_impl_count(c) || !mbsc_cipher_impl_supported(c, (size_t)_i))
        return; /* not on this machine: check_cipher.c lists what runs */
    for (size_t skip = 0; skip < 64u; skip += 7u) {
        for (size_t len = 1; len + skip <= sizeof got; len += 61u) {
            mbsc_stream st;
            uint8_t sink[64];

            start_at(&st, (size_t)_i, 5u);
            memset(sink, 0, sizeof sink);
            mbsc_stream_xor(&st, sink, sink, skip);
            memset(got, 0x5c, len);
            mbsc_stream_xor(&st, got, got, len);
            mbsc_stream_wipe(&st);
            memset(want, 0x5c, sizeof want);
            crypto_stream_chacha20_ietf_xor_ic(want, want, skip + len, nonce, 5u, key);
            ck_assert_msg(memcmp(got, want + skip, len) == 0,
                          "chacha20:%s: %zu bytes after %zu differ from libsodium",
                          mbsc_cipher_impl_name(c, (size_t)_i), len, skip);
        }
    }
    restore_default();
}
END_TEST

/* Implementation _i: from `before` blocks short of the end of the
 * counter, one long call and then one more: keystream up to block
 * 2^32 - 1, zeros after. */
START_TEST(counter_end_gives_zeros_not_block_0)
{
    const mbsc_cipher *c = mbsc_cipher_by_name("chacha20");
    static const uint32_t befores[] = {1, 3, 5, 8, 9, 16, 17, 30, 71, 72, 73, 150};

    if ((size_t)_i >= mbsc_cipher_impl_count(c) || !mbsc_cipher_impl_supported(c, (size_t)_i))
        return;
    for (size_t b = 0; b < sizeof befores / sizeof befores[0]; b++) {
        uint32_t before = befores[b];
        size_t valid = (size_t)before * 64u;
        mbsc_stream st;
        uint8_t more[100];

        start_at(&st, (size_t)_i, (uint32_t)(0u - before));
        memset(got, 0x5c, sizeof got);
        mbsc_stream_xor(&st, got, got, sizeof got);
        memset(more, 0x5c, sizeof more);
        mbsc_stream_xor(&st, more, more, sizeof more);
        mbsc_stream_wipe(&st);
        memset(want, 0x5c, valid);
        crypto_stream_chacha20_ietf_xor_ic(want, want, valid, nonce, 0u - before, key);
        ck_assert_msg(memcmp(got, want, valid) == 0, "chacha20:%s: last %u blocks differ",
                      mbsc_cipher_impl_name(c, (size_t)_i), (unsigned)before);
        for (size_t j = valid; j < sizeof got; j++)
            ck_assert_msg(got[j] == 0, "chacha20:%s: byte %zu after the last block is %02x",
                          mbsc_cipher_impl_name(c, (size_t)_i), j - valid, got[j]);
        for (size_t j = 0; j < sizeof more; j++)
            ck_assert_uint_eq(more[j], 0);
    }
    restore_default();
}
END_TEST

Suite *chacha20_suite(void);

Suite *chacha20_suite(void)
{
    Suite *s = suite_create("chacha20");
    TCase *tc = tcase_create("edges");

    /* Indices beyond the implementations of this target return at once. */
    tcase_add_loop_test(tc, batch_shapes_match_libsodium, 0, 6);
    tcase_add_loop_test(tc, counter_end_gives_zeros_not_block_0, 0, 6);
    suite_add_tcase(s, tc);
    return s;
}
