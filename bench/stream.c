/* SPDX-License-Identifier: ISC */
/*
 * stream.c - keystream throughput and cycles per byte: of each selected
 * cipher by message size (bench_stream), and of every implementation this
 * CPU supports side by side with a frame's seal (bench_impls, rows
 * "cipher:impl" with metrics of their own, impl_*, that never mix with the
 * per-cipher rows).
 *
 * A sample XORs one message in place a calibrated number of times on a
 * stream that keeps running, as a record direction does (mbsc keeps unused
 * keystream between calls, so small messages share blocks); streams restart
 * once per round, outside the timing, so that none nears ChaCha20's 256 GiB
 * limit.  The buffer stays in the caches up to 8 KiB.  A fixed nonce is
 * fine: the data is junk and no ciphertext leaves the process.
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"

#include "bench.h"
#include "code_sizes.h"

#define BULK_BYTES   1048576u
#define FRAME_BYTES  260u
#define MAX_SUBJECTS (MBSC_CIPHER_COUNT * 8 + 2)

/* Message sizes: Modbus-sized up to bulk (bench/report.py lists the same). */
static const size_t sizes[] = {16, 64, 256, 1024, 8192, 1048576};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

static const struct {
    const char *cipher, *impl;
    long text_bytes;
} impl_code_sizes[] = BENCH_IMPL_CODE_SIZES;

enum kind { K_MBSC, K_SODIUM_STREAM, K_SODIUM_AEAD };

struct subject {
    char name[32];
    enum kind kind;
    const mbsc_cipher *cipher;
    const char *impl; /* forced in bench_impls; NULL: the library's choice */
    mbsc_stream st;
    struct mbsc_record_dir tx; /* bench_impls: the frames it seals */
    size_t size;               /* of the message the next batch encrypts */
    unsigned reps[N_SIZES];
    struct bench_samples nspb[N_SIZES], cpb[N_SIZES], seal;
};

/* Random keys, and a buffer cache-line aligned as a network buffer usually
 * is, with room for libsodium's AEAD tag. */
static uint8_t key[32], iv[32], dir_key[MBSC_DIRECTION_KEY_BYTES], *buf;

static void run_batch(void *p, unsigned reps)
{
    struct subject *s = p;
    unsigned long long clen;
    int failed = 0;

    for (unsigned r = 0; r < reps; r++)
        if (s->kind == K_MBSC)
            mbsc_stream_xor(&s->st, buf, buf, s->size);
        else if (s->kind == K_SODIUM_STREAM)
            failed |= crypto_stream_chacha20_ietf_xor(buf, buf, s->size, iv, key) != 0;
        else
            failed |= crypto_aead_chacha20poly1305_ietf_encrypt(buf, &clen, buf, s->size, NULL, 0,
                                                                NULL, iv, key) != 0;
    if (failed)
        bench_fail("%s: encryption failed", s->name);
}

/* One timed batch of size sizes[z] (BULK_BYTES for z 0 in bench_impls), a
 * sample unless it is a warm-up. */
static void time_batch(struct bench_ctx *ctx, struct subject *s, size_t size, size_t z, int keep)
{
    double bytes = (double)size * s->reps[z], cycles;
    uint64_t ns;

    s->size = size;
    ns = bench_time_batch(&ctx->cycles, run_batch, s, s->reps[z], &cycles);
    if (keep) {
        bench_samples_add(&s->nspb[z], (double)ns / bytes);
        bench_samples_add(&s->cpb[z], cycles / bytes);
    }
}

static void calibrate(struct bench_ctx *ctx, struct subject *s, size_t size, size_t z)
{
    s->size = size;
    s->reps[z] = bench_calibrate_reps(run_batch, s, ctx->plan.stream_sample_ns);
}

static void add_speed(struct bench_ctx *ctx, struct subject *s, size_t z, size_t size,
                      const char *mibps, const char *cpb)
{
    double nspb = bench_median(&s->nspb[z]);

    bench_csv_num(ctx->figures, s->name, mibps, size, nspb > 0 ? 1e9 / nspb / 1048576.0 : 0.0,
                  "MiB/s");
    bench_csv_num(ctx->figures, s->name, cpb, size, bench_median(&s->cpb[z]), "cycles/byte");
    bench_samples_free(&s->nspb[z]);
    bench_samples_free(&s->cpb[z]);
}

/* The subjects of a group: each cipher, or each implementation, then the
 * baselines; the buffer and keys made. */
static size_t add_subjects(const struct bench_ctx *ctx, struct subject *subjects, int per_impl)
{
    size_t n = 0;

    memset(subjects, 0, MAX_SUBJECTS * sizeof *subjects);
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        const mbsc_cipher *c = ctx->ciphers[i];
        for (size_t m = 0; m < (per_impl ? mbsc_cipher_impl_count(c) : 1); m++) {
            if (per_impl && !mbsc_cipher_impl_supported(c, m))
                continue;
            subjects[n].cipher = c;
            subjects[n].impl = per_impl ? mbsc_cipher_impl_name(c, m) : NULL;
            snprintf(subjects[n].name, sizeof subjects[0].name, "%s%s%s", mbsc_cipher_name(c),
                     per_impl ? ":" : "", per_impl ? subjects[n].impl : "");
            n++;
        }
    }
    if (ctx->baselines) {
        snprintf(subjects[n].name, sizeof subjects[0].name, "%s", BENCH_SODIUM_STREAM);
        subjects[n++].kind = K_SODIUM_STREAM;
        snprintf(subjects[n].name, sizeof subjects[0].name, "%s", BENCH_SODIUM_AEAD);
        subjects[n++].kind = K_SODIUM_AEAD;
    }
    if (posix_memalign((void **)&buf, 64, BULK_BYTES + crypto_aead_chacha20poly1305_ietf_ABYTES))
        bench_fail("out of memory");
    randombytes_buf(buf, BULK_BYTES);
    randombytes_buf(key, sizeof key);
    randombytes_buf(iv, sizeof iv);
    randombytes_buf(dir_key, sizeof dir_key);
    return n;
}

/* (Re)start an mbsc subject at keystream position 0, its implementation forced if named. */
static void restart(struct subject *s)
{
    if (s->kind != K_MBSC)
        return;
    if ((s->impl != NULL && (mbsc_cipher_force_impl(s->cipher, s->impl) != MBSC_OK ||
                             mbsc_record_init(&s->tx, s->cipher, dir_key) != MBSC_OK)) ||
        mbsc_stream_init(&s->st, s->cipher, key, mbsc_cipher_key_bytes(s->cipher), iv,
                         mbsc_cipher_iv_bytes(s->cipher)) != MBSC_OK)
        bench_fail("%s: cannot start this cipher", s->name);
    if (s->impl != NULL && strcmp(mbsc_stream_impl_name(&s->st), s->impl) != 0)
        bench_fail("%s: the stream runs %s instead", s->name, mbsc_stream_impl_name(&s->st));
}

void bench_stream(struct bench_ctx *ctx)
{
    static struct subject subjects[MAX_SUBJECTS];
    size_t n = add_subjects(ctx, subjects, 0);

    for (size_t j = 0; j < n; j++) {
        restart(&subjects[j]);
        for (size_t z = 0; z < N_SIZES; z++)
            calibrate(ctx, &subjects[j], sizes[z], z);
    }
    for (unsigned rnd = 0; rnd <= ctx->plan.stream_rounds; rnd++) {
        /* This round's cycles use this round's clock (when estimated). */
        bench_cycles_refresh(&ctx->cycles);
        for (size_t j = 0; j < n; j++)
            restart(&subjects[j]);
        for (size_t z = 0; z < N_SIZES; z++)
            for (size_t q = 0; q < n; q++) /* rotate who goes first; round 0 warms up */
                time_batch(ctx, &subjects[(q + rnd) % n], sizes[z], z, rnd > 0);
    }
    for (size_t j = 0; j < n; j++) {
        for (size_t z = 0; z < N_SIZES; z++)
            add_speed(ctx, &subjects[j], z, sizes[z], "throughput", "cpb");
        mbsc_stream_wipe(&subjects[j].st);
    }
    free(buf);
}

/* One frame sealed; its time in ns less the clock's overhead. */
static double seal_once(struct subject *s, const uint8_t *payload, uint8_t *frame, size_t cap,
                        uint8_t *nonce, double overhead)
{
    unsigned long long clen;
    uint64_t t0 = bench_now_ns(), t1;
    long rc;

    if (s->kind == K_MBSC) {
        rc = mbsc_record_seal(&s->tx, frame, cap, payload, FRAME_BYTES);
        t1 = bench_now_ns();
        rc = rc == (long)(FRAME_BYTES + MBSC_FRAME_OVERHEAD) ? 0 : rc;
    } else {
        sodium_increment(nonce, crypto_aead_chacha20poly1305_ietf_NPUBBYTES);
        rc = crypto_aead_chacha20poly1305_ietf_encrypt(frame, &clen, payload, FRAME_BYTES, NULL, 0,
                                                       NULL, nonce, key);
        t1 = bench_now_ns();
    }
    if (rc != 0)
        bench_fail("%s: sealing a frame failed (%ld)", s->name, rc);
    return (double)(t1 - t0) > overhead ? (double)(t1 - t0) - overhead : 0.0;
}

void bench_impls(struct bench_ctx *ctx)
{
    static struct subject subjects[MAX_SUBJECTS];
    uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES] = {0};
    uint8_t payload[FRAME_BYTES], frame[FRAME_BYTES + 64];
    unsigned rounds = ctx->plan.stream_rounds / 4 + 3, frames = ctx->plan.frame_per_round;
    size_t n = add_subjects(ctx, subjects, 1);

    randombytes_buf(payload, sizeof payload);
    for (size_t j = 0; j < n; j++) {
        restart(&subjects[j]);
        if (subjects[j].kind != K_SODIUM_AEAD)
            calibrate(ctx, &subjects[j], BULK_BYTES, 0);
    }
    for (unsigned rnd = 0; rnd <= rounds; rnd++) {
        bench_cycles_refresh(&ctx->cycles);
        for (size_t q = 0; q < n; q++) {
            struct subject *s = &subjects[(q + rnd) % n];

            restart(s);
            if (s->kind != K_SODIUM_AEAD)
                time_batch(ctx, s, BULK_BYTES, 0, rnd > 0);
            for (unsigned it = 0; s->kind != K_SODIUM_STREAM && it < frames; it++) {
                double ns =
                    seal_once(s, payload, frame, sizeof frame, nonce, ctx->timer_overhead_ns);
                if (rnd > 0 && it > 0)
                    bench_samples_add(&s->seal, ns);
            }
        }
    }
    for (size_t j = 0; j < n; j++) {
        struct subject *s = &subjects[j];
        if (s->kind != K_SODIUM_AEAD)
            add_speed(ctx, s, 0, BULK_BYTES, "impl_mibps", "impl_cpb");
        if (s->kind != K_SODIUM_STREAM)
            bench_csv_num(ctx->figures, s->name, "impl_seal_ns", FRAME_BYTES,
                          bench_median(&s->seal), "ns");
        for (size_t c = 0; s->kind == K_MBSC && impl_code_sizes[c].cipher != NULL; c++)
            if (strcmp(impl_code_sizes[c].cipher, mbsc_cipher_name(s->cipher)) == 0 &&
                strcmp(impl_code_sizes[c].impl, s->impl) == 0)
                bench_csv_num(ctx->figures, s->name, "impl_code_bytes", 0,
                              (double)impl_code_sizes[c].text_bytes, "bytes");
        mbsc_stream_wipe(&s->st);
        mbsc_record_wipe(&s->tx);
        bench_samples_free(&s->seal);
    }
    for (size_t i = 0; i < ctx->n_ciphers; i++)
        if (mbsc_cipher_force_impl(ctx->ciphers[i], NULL) != MBSC_OK)
            bench_fail("%s: cannot restore the default implementation",
                       mbsc_cipher_name(ctx->ciphers[i]));
    sodium_memzero(key, sizeof key);
    sodium_memzero(dir_key, sizeof dir_key);
    free(buf);
}
