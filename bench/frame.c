/* SPDX-License-Identifier: ISC */
/*
 * frame.c - per-frame latency of mbsc_record_seal and mbsc_record_open.
 *
 * What one Modbus request costs in crypto on each side: the one-time
 * Poly1305 key (32 keystream bytes), the XOR, the tag, and for open the
 * constant-time tag check before the decryption.  Two record directions
 * share a key, as the master's sending side and the slave's receiving side
 * do.  Every iteration seals a fresh frame on the sender and opens that very
 * frame on the receiver, so open always verifies a real tag; the two calls
 * are timed separately, one call per sample, and the clock's read overhead
 * is subtracted (on a Raspberry Pi 4 the clock ticks every 18.5 ns, which
 * limits the resolution of these figures there).
 *
 * Payloads: a 12-byte read request ADU (read 10 holding registers) and a
 * 260-byte ADU, the largest Modbus/TCP allows.  The directions are reset
 * at the start of every round (outside the timing), so no sample includes
 * the rekey every 65536 frames (a BLAKE2b and a cipher setup, see
 * setup_ns).
 *
 * Two figures per cipher, both honest:
 *   seal/open: the keystream is generated inside the call (records without
 *     a keystream buffer: the one-time key and the payload's keystream in
 *     one cipher call), what a frame costs in CPU time;
 *   ahead: records with the session's keystream buffer (one Modbus frame's
 *     worth), refilled between frames outside the timing as the link does
 *     while the peer works (mbsc_record_refill): the critical path of a
 *     request, Poly1305 and an XOR.
 * No third "seal plus refill" figure: with a buffer of one frame, a refill
 * generates the very bytes an unbuffered seal generates, so the sum is the
 * seal/open figure (docs/bench.md, "ChaCha20 on x86-64 and the frame's
 * critical path").
 *
 * When libsodium is a baseline, its ChaCha20-Poly1305 AEAD is measured the
 * same way: encrypt with a nonce incremented per frame, decrypt (verify)
 * that ciphertext.  It has no keystream to prepare: its one figure is the
 * baseline of both.
 */
#include <sodium.h>
#include <string.h>

#include "record/record.h"

#include "bench.h"
#include "clock.h"
#include "stats.h"

/* MBAP header (transaction 1, protocol 0, length 6, unit 1) and PDU
 * "read holding registers": function 3, address 0, quantity 10. */
static const uint8_t read_request[12] = {0x00, 0x01, 0x00, 0x00, 0x00, 0x06,
                                         0x01, 0x03, 0x00, 0x00, 0x00, 0x0a};

struct lat {
    struct bench_samples seal, open;
};

/* The session's keystream buffer for Modbus frames (session.c's layout). */
#define AHEAD_BYTES ((MBSC_RECORD_KEYSTREAM_PER_FRAME(MBSC_DEFAULT_MAX_PAYLOAD) + 15u) & ~15u)

struct frame_subject {
    const char *name;
    const mbsc_cipher *cipher;                 /* NULL: libsodium's AEAD */
    struct mbsc_record_dir tx, rx;             /* keystream generated in the call */
    struct mbsc_record_dir tx_ahead, rx_ahead; /* keystream refilled ahead */
    /* 16-byte aligned, as a session's (session.c). */
    _Alignas(16) uint8_t ks_tx[AHEAD_BYTES];
    _Alignas(16) uint8_t ks_rx[AHEAD_BYTES];
    uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];
    struct lat lat[BENCH_N_FRAME_SIZES];
    struct lat ahead[BENCH_N_FRAME_SIZES];
};

static double net(uint64_t dt, double overhead)
{
    double v = (double)dt - overhead;

    return v > 0 ? v : 0;
}

/* One frame through an mbsc record pair: tx seals, rx opens. */
static void mbsc_frame(struct frame_subject *s, struct mbsc_record_dir *tx,
                       struct mbsc_record_dir *rx, const uint8_t *payload, size_t n, uint8_t *frame,
                       size_t cap, uint8_t *out, struct lat *lat, double overhead, int keep)
{
    uint64_t t0, t1, t2, t3;
    long sealed, opened;

    t0 = bench_now_ns();
    sealed = mbsc_record_seal(tx, frame, cap, payload, n);
    t1 = bench_now_ns();
    if (sealed != (long)(n + MBSC_FRAME_OVERHEAD))
        bench_fail("%s: mbsc_record_seal returned %ld", s->name, sealed);
    t2 = bench_now_ns();
    opened = mbsc_record_open(rx, out, frame + MBSC_FRAME_HEADER_BYTES,
                              (size_t)sealed - MBSC_FRAME_HEADER_BYTES);
    t3 = bench_now_ns();
    if (opened != (long)n || memcmp(out, payload, n) != 0)
        bench_fail("%s: mbsc_record_open returned %ld: the frame did not verify", s->name, opened);
    if (keep) {
        bench_samples_add(&lat->seal, net(t1 - t0, overhead));
        bench_samples_add(&lat->open, net(t3 - t2, overhead));
    }
}

/* One message through libsodium's AEAD. */
static void aead_frame(struct frame_subject *s, const uint8_t *key, const uint8_t *payload,
                       size_t n, uint8_t *frame, uint8_t *out, struct lat *lat, double overhead,
                       int keep)
{
    unsigned long long clen = 0, mlen = 0;
    uint64_t t0, t1, t2, t3;
    int rc;

    t0 = bench_now_ns();
    sodium_increment(s->nonce, sizeof s->nonce);
    rc = crypto_aead_chacha20poly1305_ietf_encrypt(frame, &clen, payload, n, NULL, 0, NULL,
                                                   s->nonce, key);
    t1 = bench_now_ns();
    if (rc != 0)
        bench_fail("%s: encryption failed", s->name);
    t2 = bench_now_ns();
    rc = crypto_aead_chacha20poly1305_ietf_decrypt(out, &mlen, NULL, frame, clen, NULL, 0, s->nonce,
                                                   key);
    t3 = bench_now_ns();
    if (rc != 0 || mlen != n)
        bench_fail("%s: decryption failed", s->name);
    if (keep) {
        bench_samples_add(&lat->seal, net(t1 - t0, overhead));
        bench_samples_add(&lat->open, net(t3 - t2, overhead));
    }
}

static void reset(struct frame_subject *s, const uint8_t k[MBSC_DIRECTION_KEY_BYTES])
{
    if (s->cipher == NULL)
        return;
    if (mbsc_record_init(&s->tx, s->cipher, k) != MBSC_OK ||
        mbsc_record_init(&s->rx, s->cipher, k) != MBSC_OK ||
        mbsc_record_init_buffered(&s->tx_ahead, s->cipher, k, s->ks_tx, sizeof s->ks_tx) !=
            MBSC_OK ||
        mbsc_record_init_buffered(&s->rx_ahead, s->cipher, k, s->ks_rx, sizeof s->ks_rx) != MBSC_OK)
        bench_fail("%s: mbsc_record_init failed", s->name);
}

static void add_results(struct bench_ctx *ctx, struct frame_subject *s)
{
    for (size_t z = 0; z < BENCH_N_FRAME_SIZES; z++) {
        struct lat *lat = &s->lat[z];
        size_t size = bench_frame_sizes[z];

        bench_results_add(&ctx->results, s->name, "seal_ns_p50", size, bench_median(&lat->seal),
                          "ns");
        bench_results_add(&ctx->results, s->name, "seal_ns_p99", size,
                          bench_percentile(&lat->seal, 99), "ns");
        bench_results_add(&ctx->results, s->name, "open_ns_p50", size, bench_median(&lat->open),
                          "ns");
        bench_results_add(&ctx->results, s->name, "open_ns_p99", size,
                          bench_percentile(&lat->open, 99), "ns");
        bench_samples_free(&lat->seal);
        bench_samples_free(&lat->open);
        if (s->cipher == NULL)
            continue;
        lat = &s->ahead[z];
        bench_results_add(&ctx->results, s->name, "seal_ahead_ns_p50", size,
                          bench_median(&lat->seal), "ns");
        bench_results_add(&ctx->results, s->name, "seal_ahead_ns_p99", size,
                          bench_percentile(&lat->seal, 99), "ns");
        bench_results_add(&ctx->results, s->name, "open_ahead_ns_p50", size,
                          bench_median(&lat->open), "ns");
        bench_results_add(&ctx->results, s->name, "open_ahead_ns_p99", size,
                          bench_percentile(&lat->open, 99), "ns");
        bench_samples_free(&lat->seal);
        bench_samples_free(&lat->open);
    }
}

void bench_frame(struct bench_ctx *ctx)
{
    enum { MAX_SUBJECTS = MBSC_CIPHER_COUNT + 1 };
    static struct frame_subject subjects[MAX_SUBJECTS];
    uint8_t k[MBSC_DIRECTION_KEY_BYTES], aead_key[crypto_aead_chacha20poly1305_ietf_KEYBYTES];
    uint8_t payload[MBSC_MAX_PAYLOAD], frame[MBSC_MAX_FRAME_BODY + MBSC_FRAME_HEADER_BYTES];
    uint8_t out[MBSC_MAX_PAYLOAD];
    size_t n = 0, per_cell = (size_t)ctx->plan.frame_rounds * ctx->plan.frame_per_round;
    double overhead = ctx->timer_overhead_ns;

    memset(subjects, 0, sizeof subjects);
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        subjects[n].name = mbsc_cipher_name(ctx->ciphers[i]);
        subjects[n++].cipher = ctx->ciphers[i];
    }
    if (ctx->baselines)
        subjects[n++].name = BENCH_SODIUM_AEAD;
    for (size_t j = 0; j < n; j++)
        for (size_t z = 0; z < BENCH_N_FRAME_SIZES; z++) {
            bench_samples_init(&subjects[j].lat[z].seal, per_cell);
            bench_samples_init(&subjects[j].lat[z].open, per_cell);
            bench_samples_init(&subjects[j].ahead[z].seal, per_cell);
            bench_samples_init(&subjects[j].ahead[z].open, per_cell);
        }
    randombytes_buf(k, sizeof k);
    randombytes_buf(aead_key, sizeof aead_key);
    randombytes_buf(payload, sizeof payload);
    memcpy(payload, read_request, sizeof read_request);

    for (unsigned rnd = 0; rnd <= ctx->plan.frame_rounds; rnd++) {
        for (size_t j = 0; j < n; j++)
            reset(&subjects[j], k);
        for (size_t z = 0; z < BENCH_N_FRAME_SIZES; z++) {
            for (size_t q = 0; q < n; q++) {
                struct frame_subject *s = &subjects[(q + rnd) % n];
                /*
                 * Each kind of record in its own run of frames, in the
                 * loop shape of the AEAD baseline (seal, open, seal, ...):
                 * interleaved, the refills and the buffered calls between
                 * two unbuffered seals made those about 10 ns slower
                 * (other block counts for the branch predictor).  Round 0
                 * warms up; so does the first frame of each run, which
                 * follows other code.
                 */
                for (unsigned it = 0; it < ctx->plan.frame_per_round; it++) {
                    int keep = rnd > 0 && it > 0;
                    if (s->cipher != NULL)
                        mbsc_frame(s, &s->tx, &s->rx, payload, bench_frame_sizes[z], frame,
                                   sizeof frame, out, &s->lat[z], overhead, keep);
                    else
                        aead_frame(s, aead_key, payload, bench_frame_sizes[z], frame, out,
                                   &s->lat[z], overhead, keep);
                }
                for (unsigned it = 0; s->cipher != NULL && it < ctx->plan.frame_per_round; it++) {
                    int keep = rnd > 0 && it > 0;
                    /* Untimed, as the link does it while the peer works. */
                    mbsc_record_refill(&s->tx_ahead, 0);
                    mbsc_record_refill(&s->rx_ahead, 0);
                    mbsc_frame(s, &s->tx_ahead, &s->rx_ahead, payload, bench_frame_sizes[z], frame,
                               sizeof frame, out, &s->ahead[z], overhead, keep);
                }
            }
        }
    }
    for (size_t j = 0; j < n; j++) {
        add_results(ctx, &subjects[j]);
        mbsc_record_wipe(&subjects[j].tx);
        mbsc_record_wipe(&subjects[j].rx);
        mbsc_record_wipe(&subjects[j].tx_ahead);
        mbsc_record_wipe(&subjects[j].rx_ahead);
    }
    sodium_memzero(k, sizeof k);
    sodium_memzero(aead_key, sizeof aead_key);
}
