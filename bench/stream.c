/* SPDX-License-Identifier: ISC */
/*
 * stream.c - keystream throughput and cycles per byte: of each selected
 * cipher by message size (bench_stream), and of every implementation this
 * CPU supports side by side with a frame's seal (bench_impls).  docs/bench.md
 * ("What each figure is") says what each row is.
 *
 * A sample XORs one message in place a calibrated number of times on a
 * stream that keeps running, as a record direction does (mbsc keeps unused
 * keystream between calls, so small messages share blocks); streams restart
 * once per round, outside the timing, so that none nears ChaCha20's 256 GiB
 * limit.  The buffer stays in the caches up to 8 KiB.  A fixed nonce is
 * fine: the data is junk and no ciphertext leaves the process.  The
 * side-by-side rows are "cipher:impl" with metrics of their own (impl_*),
 * so that they never mix with the per-cipher rows.
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
    unsigned reps[N_SIZES];
    struct bench_samples nspb[N_SIZES], cpb[N_SIZES], seal;
};

struct batch {
    struct subject *s;
    uint8_t *buf; /* size + crypto_aead_chacha20poly1305_ietf_ABYTES bytes */
    size_t size;
    const uint8_t *key, *nonce;
    int failed;
};

static void run_batch(void *p, unsigned reps)
{
    struct batch *b = p;
    unsigned long long clen;

    for (unsigned r = 0; r < reps; r++)
        if (b->s->kind == K_MBSC)
            mbsc_stream_xor(&b->s->st, b->buf, b->buf, b->size);
        else if (b->s->kind == K_SODIUM_STREAM)
            b->failed |=
                crypto_stream_chacha20_ietf_xor(b->buf, b->buf, b->size, b->nonce, b->key) != 0;
        else
            b->failed |= crypto_aead_chacha20poly1305_ietf_encrypt(
                             b->buf, &clen, b->buf, b->size, NULL, 0, NULL, b->nonce, b->key) != 0;
}

/* One timed batch, kept as a sample unless it is a warm-up. */
static void time_batch(struct bench_ctx *ctx, struct batch *b, size_t z, int keep)
{
    double bytes = (double)b->size * b->s->reps[z], cycles;
    uint64_t ns = bench_time_batch(&ctx->cycles, run_batch, b, b->s->reps[z], &cycles);

    if (b->failed)
        bench_fail("%s: encryption failed", b->s->name);
    if (keep) {
        bench_samples_add(&b->s->nspb[z], (double)ns / bytes);
        bench_samples_add(&b->s->cpb[z], cycles / bytes);
    }
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

/* The subjects of a group: each cipher, or each implementation, then the baselines. */
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
    return n;
}

/* (Re)start an mbsc subject at keystream position 0, its implementation forced if named. */
static void restart(struct subject *s, const uint8_t *key, const uint8_t *iv,
                    const uint8_t k[MBSC_DIRECTION_KEY_BYTES])
{
    if (s->kind != K_MBSC)
        return;
    if ((s->impl != NULL && (mbsc_cipher_force_impl(s->cipher, s->impl) != MBSC_OK ||
                             mbsc_record_init(&s->tx, s->cipher, k) != MBSC_OK)) ||
        mbsc_stream_init(&s->st, s->cipher, key, mbsc_cipher_key_bytes(s->cipher), iv,
                         mbsc_cipher_iv_bytes(s->cipher)) != MBSC_OK)
        bench_fail("%s: cannot start this cipher", s->name);
    if (s->impl != NULL && strcmp(mbsc_stream_impl_name(&s->st), s->impl) != 0)
        bench_fail("%s: the stream runs %s instead", s->name, mbsc_stream_impl_name(&s->st));
}

/* Cache-line aligned, as a network buffer usually is, with random keys. */
static uint8_t *buffer(uint8_t *key, uint8_t *iv, uint8_t *k)
{
    void *mem = NULL;

    if (posix_memalign(&mem, 64, BULK_BYTES + crypto_aead_chacha20poly1305_ietf_ABYTES) != 0)
        bench_fail("out of memory");
    randombytes_buf(mem, BULK_BYTES);
    randombytes_buf(key, 32);
    randombytes_buf(iv, 32);
    randombytes_buf(k, MBSC_DIRECTION_KEY_BYTES);
    return mem;
}

void bench_stream(struct bench_ctx *ctx)
{
    static struct subject subjects[MAX_SUBJECTS];
    uint8_t key[32], iv[32], k[MBSC_DIRECTION_KEY_BYTES], *buf = buffer(key, iv, k);
    size_t n = add_subjects(ctx, subjects, 0);

    for (size_t j = 0; j < n; j++) {
        restart(&subjects[j], key, iv, k);
        for (size_t z = 0; z < N_SIZES; z++) {
            struct batch b = {&subjects[j], buf, sizes[z], key, iv, 0};
            subjects[j].reps[z] = bench_calibrate_reps(run_batch, &b, ctx->plan.stream_sample_ns);
        }
    }
    for (unsigned rnd = 0; rnd <= ctx->plan.stream_rounds; rnd++) {
        /* This round's cycles use this round's clock (when estimated). */
        bench_cycles_refresh(&ctx->cycles);
        for (size_t j = 0; j < n; j++)
            restart(&subjects[j], key, iv, k);
        for (size_t z = 0; z < N_SIZES; z++)
            for (size_t q = 0; q < n; q++) {
                /* Rotate who goes first; round 0 warms up. */
                struct batch b = {&subjects[(q + rnd) % n], buf, sizes[z], key, iv, 0};
                time_batch(ctx, &b, z, rnd > 0);
            }
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
                        const uint8_t *key, uint8_t *nonce, double overhead)
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
    uint8_t key[32], iv[32], k[MBSC_DIRECTION_KEY_BYTES], *buf = buffer(key, iv, k);
    uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES] = {0};
    uint8_t payload[FRAME_BYTES], frame[FRAME_BYTES + 64];
    unsigned rounds = ctx->plan.stream_rounds / 4 + 3, frames = ctx->plan.frame_per_round;
    size_t n = add_subjects(ctx, subjects, 1);

    randombytes_buf(payload, sizeof payload);
    for (size_t j = 0; j < n; j++) {
        struct batch b = {&subjects[j], buf, BULK_BYTES, key, iv, 0};
        restart(&subjects[j], key, iv, k);
        if (subjects[j].kind != K_SODIUM_AEAD)
            subjects[j].reps[0] = bench_calibrate_reps(run_batch, &b, ctx->plan.stream_sample_ns);
    }
    for (unsigned rnd = 0; rnd <= rounds; rnd++) {
        bench_cycles_refresh(&ctx->cycles);
        for (size_t q = 0; q < n; q++) {
            struct subject *s = &subjects[(q + rnd) % n];
            struct batch b = {s, buf, BULK_BYTES, key, iv, 0};

            restart(s, key, iv, k);
            if (s->kind != K_SODIUM_AEAD)
                time_batch(ctx, &b, 0, rnd > 0);
            for (unsigned it = 0; s->kind != K_SODIUM_STREAM && it < frames; it++) {
                double ns =
                    seal_once(s, payload, frame, sizeof frame, key, nonce, ctx->timer_overhead_ns);
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
    sodium_memzero(k, sizeof k);
    free(buf);
}
