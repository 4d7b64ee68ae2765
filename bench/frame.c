/* SPDX-License-Identifier: ISC */
/*
 * frame.c - per-frame latency of mbsc_record_seal and mbsc_record_open, and
 * of libsodium's ChaCha20-Poly1305 when it is a baseline (docs/bench.md,
 * "What each figure is").
 *
 * Every iteration seals a fresh frame and opens that very frame with a
 * direction of the same key, so that open always verifies a real tag.  One
 * call per sample, the clock's read overhead subtracted (a Raspberry Pi 4's
 * clock ticks every 18.5 ns).  The directions are reset every round outside
 * the timing, so that no sample includes the rekey every 65536 frames.
 * "ahead" rows use the session's keystream buffer, refilled between frames
 * outside the timing as the link does while the peer works.  No "seal plus
 * refill" row: with a buffer of one frame, a refill generates the very
 * bytes an unbuffered seal does (docs/bench.md).
 */
#include <sodium.h>
#include <string.h>

#include "record/record.h"

#include "bench.h"

/* The session's keystream buffer for Modbus frames (session.c's layout). */
#define AHEAD_BYTES ((MBSC_RECORD_KEYSTREAM_PER_FRAME(MBSC_DEFAULT_MAX_PAYLOAD) + 15u) & ~15u)

/* Payloads: a read request ADU and the largest ADU. */
static const size_t sizes[] = {12, 260};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

/* MBAP header (transaction 1, protocol 0, length 6, unit 1) and PDU
 * "read holding registers": function 3, address 0, quantity 10. */
static const uint8_t read_request[12] = {0x00, 0x01, 0x00, 0x00, 0x00, 0x06,
                                         0x01, 0x03, 0x00, 0x00, 0x00, 0x0a};

struct frame_subject {
    const char *name;
    const mbsc_cipher *cipher;               /* NULL: libsodium's AEAD */
    struct mbsc_record_dir dir[2][2];        /* [ahead][tx, rx] */
    _Alignas(16) uint8_t ks[2][AHEAD_BYTES]; /* 16-byte aligned, as a session's */
    uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];
    struct bench_samples lat[2][N_SIZES][2]; /* [ahead][size][seal, open] */
};

/* One frame sealed and opened, each call timed. */
static void one_frame(struct frame_subject *s, int ahead, const uint8_t *key,
                      const uint8_t *payload, size_t n, struct bench_samples *lat, double overhead,
                      int keep)
{
    static uint8_t frame[MBSC_MAX_FRAME_BODY + MBSC_FRAME_HEADER_BYTES], out[MBSC_MAX_PAYLOAD];
    unsigned long long clen = 0, mlen = 0;
    uint64_t t[4];
    long sealed, opened;

    if (s->cipher != NULL) {
        t[0] = bench_now_ns();
        sealed = mbsc_record_seal(&s->dir[ahead][0], frame, sizeof frame, payload, n);
        t[1] = bench_now_ns();
        if (sealed != (long)(n + MBSC_FRAME_OVERHEAD))
            bench_fail("%s: mbsc_record_seal returned %ld", s->name, sealed);
        t[2] = bench_now_ns();
        opened = mbsc_record_open(&s->dir[ahead][1], out, frame + MBSC_FRAME_HEADER_BYTES,
                                  (size_t)sealed - MBSC_FRAME_HEADER_BYTES);
        t[3] = bench_now_ns();
    } else {
        t[0] = bench_now_ns();
        sodium_increment(s->nonce, sizeof s->nonce);
        sealed = crypto_aead_chacha20poly1305_ietf_encrypt(frame, &clen, payload, n, NULL, 0, NULL,
                                                           s->nonce, key);
        t[1] = bench_now_ns();
        if (sealed != 0)
            bench_fail("%s: encryption failed", s->name);
        t[2] = bench_now_ns();
        opened = crypto_aead_chacha20poly1305_ietf_decrypt(out, &mlen, NULL, frame, clen, NULL, 0,
                                                           s->nonce, key) == 0
                     ? (long)mlen
                     : -1;
        t[3] = bench_now_ns();
    }
    if (opened != (long)n || memcmp(out, payload, n) != 0)
        bench_fail("%s: opening returned %ld: the frame did not verify", s->name, opened);
    for (int op = 0; keep && op < 2; op++) {
        double v = (double)(t[2 * op + 1] - t[2 * op]) - overhead;
        bench_samples_add(&lat[op], v > 0 ? v : 0);
    }
}

void bench_frame(struct bench_ctx *ctx)
{
    static struct frame_subject subjects[MBSC_CIPHER_COUNT + 1];
    static const char *const names[2][2] = {{"seal_ns", "open_ns"},
                                            {"seal_ahead_ns", "open_ahead_ns"}};
    uint8_t k[MBSC_DIRECTION_KEY_BYTES], aead_key[crypto_aead_chacha20poly1305_ietf_KEYBYTES];
    uint8_t payload[MBSC_MAX_PAYLOAD];
    size_t n = 0;

    memset(subjects, 0, sizeof subjects);
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        subjects[n].name = mbsc_cipher_name(ctx->ciphers[i]);
        subjects[n++].cipher = ctx->ciphers[i];
    }
    if (ctx->baselines)
        subjects[n++].name = BENCH_SODIUM_AEAD;
    randombytes_buf(k, sizeof k);
    randombytes_buf(aead_key, sizeof aead_key);
    randombytes_buf(payload, sizeof payload);
    memcpy(payload, read_request, sizeof read_request);

    for (unsigned rnd = 0; rnd <= ctx->plan.frame_rounds; rnd++) {
        for (size_t j = 0; j < n; j++)
            for (int d = 0; subjects[j].cipher != NULL && d < 4; d++)
                if ((d < 2 ? mbsc_record_init(&subjects[j].dir[0][d], subjects[j].cipher, k)
                           : mbsc_record_init_buffered(&subjects[j].dir[1][d - 2],
                                                       subjects[j].cipher, k, subjects[j].ks[d - 2],
                                                       AHEAD_BYTES)) != MBSC_OK)
                    bench_fail("%s: mbsc_record_init failed", subjects[j].name);
        for (size_t z = 0; z < N_SIZES; z++)
            for (size_t q = 0; q < n; q++) {
                struct frame_subject *s = &subjects[(q + rnd) % n];
                /*
                 * Each kind of record in its own run of frames, in the loop
                 * shape of the AEAD baseline (seal, open, seal, ...):
                 * interleaved, the refills and the buffered calls between
                 * two unbuffered seals made those about 10 ns slower (other
                 * block counts for the branch predictor).  Round 0 warms
                 * up; so does the first frame of each run, which follows
                 * other code.
                 */
                for (int ahead = 0; ahead < (s->cipher != NULL ? 2 : 1); ahead++)
                    for (unsigned it = 0; it < ctx->plan.frame_per_round; it++) {
                        if (ahead) { /* untimed, as the link does it while the peer works */
                            mbsc_record_refill(&s->dir[1][0], 0);
                            mbsc_record_refill(&s->dir[1][1], 0);
                        }
                        one_frame(s, ahead, aead_key, payload, sizes[z], s->lat[ahead][z],
                                  ctx->timer_overhead_ns, rnd > 0 && it > 0);
                    }
            }
    }
    for (size_t j = 0; j < n; j++) {
        for (size_t z = 0; z < N_SIZES; z++)
            for (int ahead = 0; ahead < (subjects[j].cipher != NULL ? 2 : 1); ahead++)
                for (int op = 0; op < 2; op++)
                    bench_csv_p50_p99(ctx->figures, subjects[j].name, names[ahead][op], sizes[z],
                                      &subjects[j].lat[ahead][z][op], "ns");
        for (int d = 0; d < 4; d++)
            mbsc_record_wipe(&subjects[j].dir[d / 2][d % 2]);
    }
    sodium_memzero(k, sizeof k);
    sodium_memzero(aead_key, sizeof aead_key);
}
