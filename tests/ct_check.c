/* SPDX-License-Identifier: ISC */
/*
 * ct_check.c - constant-time check of every cipher implementation, run
 * under valgrind's memcheck by `make check-ct` (the ctgrind technique).
 *
 * Keys, IVs, direction keys and plaintexts are marked undefined with
 * VALGRIND_MAKE_MEM_UNDEFINED.  Memcheck then follows them, and everything
 * computed from them, through the code, and reports every conditional
 * branch and every memory address that depends on them ("Conditional jump
 * or move depends on uninitialised value(s)", "Use of uninitialised value
 * of size 8").  Those are exactly the timing leaks we must not have.  The
 * program counts memcheck's errors (VALGRIND_COUNT_ERRORS) around each
 * implementation and fails if any appeared.
 *
 * Covered, per cipher and per implementation valgrind can execute (forced
 * one by one): key and IV setup, keystream of many lengths and chunkings
 * (every batch size and tail), and sealing and opening frames through the
 * record layer (keyed BLAKE2b derivation, one-time key, XOR, Poly1305 and
 * its constant-time comparison in libsodium), both without a keystream
 * buffer and with keystream generated ahead (mbsc_record_refill between
 * frames, the session's buffer size and a larger one, frames longer than
 * the buffer, and a rekey done by a refill).  Two points are public by
 * design and declassified: the sealed frame (it goes on the wire) is marked
 * defined before it is opened, and the verdict of the tag comparison in
 * mbsc_record_open (tests/ct_check.supp).
 *
 * Memcheck does not report a conditional move (cmov, csel) on a secret:
 * it only propagates the undefinedness; such a select is constant time.
 *
 * Not covered: implementations valgrind cannot execute (AVX-512: valgrind
 * reports no AVX-512 to the program, so they are listed and skipped; their
 * header comments argue constant time by construction).
 *
 * Self-test first: a deliberate secret-indexed table look-up and a
 * deliberate secret-dependent branch must each raise memcheck's error
 * count, else the harness proves nothing and the run fails.
 *
 * Exit: 0 all clean, 1 a leak (or a failed self-test), 77 not under
 * valgrind.
 */
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <valgrind/memcheck.h>

#include "mbsc.h"
#include "record/record.h"

#define SECRET(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#define PUBLIC(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))

static unsigned long errors_now(void)
{
    return (unsigned long)VALGRIND_COUNT_ERRORS;
}

/* --- Self-test: leaks the harness must catch ------------------------------ */

static volatile uint8_t leak_sink;

__attribute__((noinline)) static void leaky_lookup(const uint8_t *secret)
{
    static const uint8_t table[256] = {1, 2, 3};

    leak_sink = table[secret[0]]; /* address depends on the secret */
}

__attribute__((noinline)) static void leaky_branch(const uint8_t *secret)
{
    if (secret[0] & 1) /* branch depends on the secret */
        leak_sink = 1;
    else
        leak_sink = 2;
}

static int self_test(void)
{
    uint8_t secret[1] = {0x5a};
    unsigned long before;
    int ok = 1;

    fprintf(stderr, "ct_check: self-test: two deliberate leaks follow; memcheck must report "
                    "both\n");
    SECRET(secret, sizeof secret);
    before = errors_now();
    leaky_lookup(secret);
    if (errors_now() == before) {
        fprintf(stderr, "ct_check: FAIL: a secret-indexed table look-up went unnoticed\n");
        ok = 0;
    }
    before = errors_now();
    leaky_branch(secret);
    if (errors_now() == before) {
        fprintf(stderr, "ct_check: FAIL: a secret-dependent branch went unnoticed\n");
        ok = 0;
    }
    if (ok)
        fprintf(stderr, "ct_check: self-test passed: both deliberate leaks were reported\n");
    return ok;
}

/* --- The ciphers ------------------------------------------------------- */

static uint8_t buf[6000];

/* Keystream: setup and many lengths on a stream whose key and IV are secret. */
static int run_keystream(const mbsc_cipher *c)
{
    uint8_t key[MBSC_CIPHER_MAX_KEY_BYTES], iv[MBSC_CIPHER_MAX_IV_BYTES];
    mbsc_stream st;
    size_t len;

    memset(key, 0x42, sizeof key);
    memset(iv, 0x24, sizeof iv);
    SECRET(key, sizeof key);
    SECRET(iv, sizeof iv);
    if (mbsc_stream_init(&st, c, key, mbsc_cipher_key_bytes(c), iv, mbsc_cipher_iv_bytes(c)) !=
        MBSC_OK)
        return 0;
    memset(buf, 0, sizeof buf);
    SECRET(buf, sizeof buf); /* plaintext is secret too */
    /* 0..1100 bytes in steps that hit every tail, then one long call. */
    for (len = 0; len <= 1100; len += 13)
        mbsc_stream_xor(&st, buf, buf, len);
    mbsc_stream_xor(&st, buf, buf, sizeof buf);
    mbsc_stream_wipe(&st);
    return 1;
}

/*
 * Seal and open frames through the record layer, keys and payloads secret.
 * ks_cap 0: the keystream is generated inside seal and open.  Otherwise
 * both directions own a keystream buffer of ks_cap bytes and are refilled
 * between frames (mbsc_record_refill, as the link does), so seal and open
 * take their keystream from the buffer, and frames longer than it also
 * from the cipher.  Near the end the counters jump to the first frame of
 * a new key, so that a refill performs the rekey (BLAKE2b of the
 * direction key, a new cipher setup, the old keystream wiped) with the
 * key secret as well.
 */
static int run_record(const mbsc_cipher *c, size_t ks_cap)
{
    static const size_t lengths[] = {0, 1, 12, 31, 64, 260, 1000, 4080, 260, 12};
    static uint8_t frame[MBSC_MAX_PAYLOAD + MBSC_FRAME_OVERHEAD];
    static uint8_t payload[MBSC_MAX_PAYLOAD], opened[MBSC_MAX_PAYLOAD];
    static uint8_t ks_tx[1024], ks_rx[1024];
    struct mbsc_record_dir tx, rx;
    uint8_t k[MBSC_DIRECTION_KEY_BYTES];
    int ok = 1;

    if (ks_cap > sizeof ks_tx)
        return 0;
    memset(k, 0x77, sizeof k);
    SECRET(k, sizeof k);
    if (mbsc_record_init_buffered(&tx, c, k, ks_cap ? ks_tx : NULL, ks_cap) != MBSC_OK ||
        mbsc_record_init_buffered(&rx, c, k, ks_cap ? ks_rx : NULL, ks_cap) != MBSC_OK)
        return 0;
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        size_t n = lengths[i];
        long sealed, got;

        if (ks_cap != 0 && i == 8) {
            /* The next frame is the first of a new key on both sides. */
            tx.counter = rx.counter = MBSC_REKEY_AFTER_FRAMES;
        }
        mbsc_record_refill(&tx, 0);
        mbsc_record_refill(&rx, 0);
        memset(payload, (int)(0x30 + i), n);
        SECRET(payload, n);
        sealed = mbsc_record_seal(&tx, frame, sizeof frame, payload, n);
        if (sealed != (long)(n + MBSC_FRAME_OVERHEAD))
            return 0;
        PUBLIC(frame, (size_t)sealed); /* what goes on the wire is public */
        got = mbsc_record_open(&rx, opened, frame + MBSC_FRAME_HEADER_BYTES,
                               (size_t)sealed - MBSC_FRAME_HEADER_BYTES);
        if (got != (long)n)
            return 0;
        PUBLIC(opened, n);
        PUBLIC(payload, n);
        ok &= memcmp(opened, payload, n) == 0;
    }
    /* A forged frame: the failure path must not leak either. */
    mbsc_record_refill(&rx, 0);
    frame[MBSC_FRAME_HEADER_BYTES] ^= 1;
    ok &= mbsc_record_open(&rx, opened, frame + MBSC_FRAME_HEADER_BYTES, 20 + MBSC_TAG_BYTES) ==
          MBSC_ERR_BAD_TAG;
    mbsc_record_wipe(&tx);
    mbsc_record_wipe(&rx);
    return ok;
}

/* The session's buffer for 260-byte Modbus payloads (32 + 260, rounded up
 * to 16 as session.c does), and a larger one that spans several frames. */
#define CT_KS_MODBUS ((MBSC_RECORD_KEYSTREAM_PER_FRAME(260u) + 15u) & ~(size_t)15u)
#define CT_KS_LARGE  1024u

int main(void)
{
    int failures = 0, ran = 0;

    if (!RUNNING_ON_VALGRIND) {
        fprintf(stderr, "ct_check: must run under valgrind's memcheck (make check-ct)\n");
        return 77;
    }
    if (sodium_init() < 0) {
        fprintf(stderr, "ct_check: sodium_init failed\n");
        return 1;
    }
    if (!self_test())
        return 1;

    for (unsigned id = 1; id <= MBSC_CIPHER_COUNT; id++) {
        const mbsc_cipher *c = mbsc_cipher_by_id(id);

        for (size_t i = 0; i < mbsc_cipher_impl_count(c); i++) {
            const char *impl = mbsc_cipher_impl_name(c, i);
            unsigned long before;
            int worked;

            if (!mbsc_cipher_impl_supported(c, i)) {
                fprintf(stderr,
                        "ct_check: %s:%s: not executable under valgrind: skipped "
                        "(constant time by construction, see its source)\n",
                        mbsc_cipher_name(c), impl);
                continue;
            }
            if (mbsc_cipher_force_impl(c, impl) != MBSC_OK) {
                fprintf(stderr, "ct_check: %s:%s: cannot be forced\n", mbsc_cipher_name(c), impl);
                failures++;
                continue;
            }
            before = errors_now();
            worked = run_keystream(c) && run_record(c, 0) && run_record(c, CT_KS_MODBUS) &&
                     run_record(c, CT_KS_LARGE);
            ran++;
            if (!worked) {
                fprintf(stderr, "ct_check: FAIL: %s:%s: a call failed\n", mbsc_cipher_name(c),
                        impl);
                failures++;
            } else if (errors_now() != before) {
                fprintf(stderr,
                        "ct_check: FAIL: %s:%s: %lu secret-dependent branch(es) or index(es), "
                        "see memcheck's reports above\n",
                        mbsc_cipher_name(c), impl, errors_now() - before);
                failures++;
            } else {
                fprintf(stderr,
                        "ct_check: %s:%s: constant time (keystream; seal, open and "
                        "refill, unbuffered and with keystream ahead)\n",
                        mbsc_cipher_name(c), impl);
            }
        }
        if (mbsc_cipher_force_impl(c, NULL) != MBSC_OK)
            failures++;
    }
    fprintf(stderr, "ct_check: %d implementation(s) checked, %d failure(s)\n", ran, failures);
    return failures == 0 && ran > 0 ? 0 : 1;
}
