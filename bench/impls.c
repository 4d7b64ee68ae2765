/* SPDX-License-Identifier: ISC */
/*
 * impls.c - every implementation of every selected cipher, side by side.
 *
 * For each implementation this CPU supports (forced with
 * mbsc_cipher_force_impl, one at a time, restored afterwards): keystream
 * throughput and cycles per byte on 1 MiB messages, and the latency of
 * sealing one 260-byte frame through the record layer (one-time key,
 * XOR, Poly1305: everything a Modbus reply costs in crypto).  libsodium's
 * ChaCha20 and ChaCha20-Poly1305 encrypt are measured in the same rounds,
 * so the ratios in the report come from one run, with every subject
 * interleaved round by round as in the other groups.
 *
 * Rows are named "cipher:impl" (the baselines by their usual names) with
 * metrics of their own (impl_*), so they never mix with the other groups'
 * per-cipher rows.  Code sizes per implementation come from
 * bench/code_sizes.sh.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"

#include "bench.h"
#include "clock.h"
#include "code_sizes.h"
#include "impls.h"
#include "stats.h"

#define IMPL_BULK_BYTES  1048576u
#define IMPL_FRAME_BYTES 260u

static const struct {
    const char *cipher, *impl;
    long text_bytes;
} impl_code_sizes[] = BENCH_IMPL_CODE_SIZES;

long bench_impl_code_bytes(const char *cipher, const char *impl)
{
    for (size_t k = 0; impl_code_sizes[k].cipher != NULL; k++)
        if (strcmp(impl_code_sizes[k].cipher, cipher) == 0 &&
            strcmp(impl_code_sizes[k].impl, impl) == 0)
            return impl_code_sizes[k].text_bytes;
    return -1;
}

enum kind { K_MBSC, K_SODIUM_STREAM, K_SODIUM_AEAD };

struct subject {
    char name[32];
    enum kind kind;
    const mbsc_cipher *cipher;
    const char *impl;
    mbsc_stream st;
    struct mbsc_record_dir tx;
    unsigned reps;
    struct bench_samples cpb, nspb, seal;
};

struct batch {
    struct subject *s;
    uint8_t *buf;
    const uint8_t *key, *nonce;
    int failed;
};

static void bulk_batch(void *p, unsigned reps)
{
    struct batch *b = p;

    for (unsigned r = 0; r < reps; r++) {
        if (b->s->kind == K_MBSC)
            mbsc_stream_xor(&b->s->st, b->buf, b->buf, IMPL_BULK_BYTES);
        else
            b->failed |= crypto_stream_chacha20_ietf_xor(b->buf, b->buf, IMPL_BULK_BYTES, b->nonce,
                                                         b->key) != 0;
    }
}

/* Start s with its implementation forced; the choice is undone by the caller. */
static void start(struct subject *s, const uint8_t *key, const uint8_t *iv,
                  const uint8_t k[MBSC_DIRECTION_KEY_BYTES])
{
    if (s->kind != K_MBSC)
        return;
    if (mbsc_cipher_force_impl(s->cipher, s->impl) != MBSC_OK ||
        mbsc_stream_init(&s->st, s->cipher, key, mbsc_cipher_key_bytes(s->cipher), iv,
                         mbsc_cipher_iv_bytes(s->cipher)) != MBSC_OK ||
        mbsc_record_init(&s->tx, s->cipher, k) != MBSC_OK)
        bench_fail("%s: cannot start this implementation", s->name);
    if (strcmp(mbsc_stream_impl_name(&s->st), s->impl) != 0)
        bench_fail("%s: the stream runs %s instead", s->name, mbsc_stream_impl_name(&s->st));
}

static double seal_once(struct subject *s, const uint8_t *payload, uint8_t *frame, size_t cap,
                        const uint8_t *key, uint8_t *nonce, double overhead)
{
    uint64_t t0, t1;
    unsigned long long clen;
    long rc;

    if (s->kind == K_MBSC) {
        t0 = bench_now_ns();
        rc = mbsc_record_seal(&s->tx, frame, cap, payload, IMPL_FRAME_BYTES);
        t1 = bench_now_ns();
        if (rc != (long)(IMPL_FRAME_BYTES + MBSC_FRAME_OVERHEAD))
            bench_fail("%s: mbsc_record_seal returned %ld", s->name, rc);
    } else {
        t0 = bench_now_ns();
        sodium_increment(nonce, crypto_aead_chacha20poly1305_ietf_NPUBBYTES);
        rc = crypto_aead_chacha20poly1305_ietf_encrypt(frame, &clen, payload, IMPL_FRAME_BYTES,
                                                       NULL, 0, NULL, nonce, key);
        t1 = bench_now_ns();
        if (rc != 0)
            bench_fail("%s: encryption failed", s->name);
    }
    return (double)(t1 - t0) > overhead ? (double)(t1 - t0) - overhead : 0.0;
}

void bench_impls(struct bench_ctx *ctx)
{
    enum { MAX_SUBJECTS = MBSC_CIPHER_COUNT * 8 + 2 };
    static struct subject subjects[MAX_SUBJECTS];
    uint8_t key[32], iv[32], k[MBSC_DIRECTION_KEY_BYTES];
    uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES] = {0};
    uint8_t payload[IMPL_FRAME_BYTES], frame[IMPL_FRAME_BYTES + 64];
    unsigned rounds = ctx->plan.stream_rounds / 4 + 3, frames = ctx->plan.frame_per_round;
    size_t n = 0;
    uint8_t *buf;
    void *mem = NULL;

    memset(subjects, 0, sizeof subjects);
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        const mbsc_cipher *c = ctx->ciphers[i];
        for (size_t m = 0; m < mbsc_cipher_impl_count(c) && n < MAX_SUBJECTS - 2; m++) {
            if (!mbsc_cipher_impl_supported(c, m))
                continue;
            snprintf(subjects[n].name, sizeof subjects[n].name, "%s:%s", mbsc_cipher_name(c),
                     mbsc_cipher_impl_name(c, m));
            subjects[n].kind = K_MBSC;
            subjects[n].cipher = c;
            subjects[n++].impl = mbsc_cipher_impl_name(c, m);
        }
    }
    if (ctx->baselines) {
        snprintf(subjects[n].name, sizeof subjects[n].name, "%s", BENCH_SODIUM_STREAM);
        subjects[n++].kind = K_SODIUM_STREAM;
        snprintf(subjects[n].name, sizeof subjects[n].name, "%s", BENCH_SODIUM_AEAD);
        subjects[n++].kind = K_SODIUM_AEAD;
    }
    if (posix_memalign(&mem, 64, IMPL_BULK_BYTES) != 0)
        bench_fail("out of memory");
    buf = mem;
    randombytes_buf(buf, IMPL_BULK_BYTES);
    randombytes_buf(key, sizeof key);
    randombytes_buf(iv, sizeof iv);
    randombytes_buf(k, sizeof k);
    randombytes_buf(payload, sizeof payload);

    for (size_t j = 0; j < n; j++) {
        struct batch b = {&subjects[j], buf, key, iv, 0};
        start(&subjects[j], key, iv, k);
        if (subjects[j].kind != K_SODIUM_AEAD)
            subjects[j].reps = bench_calibrate_reps(bulk_batch, &b, ctx->plan.stream_sample_ns);
        bench_samples_init(&subjects[j].cpb, rounds);
        bench_samples_init(&subjects[j].nspb, rounds);
        bench_samples_init(&subjects[j].seal, (size_t)rounds * frames);
    }

    for (unsigned rnd = 0; rnd <= rounds; rnd++) {
        bench_cycles_refresh(&ctx->cycles);
        for (size_t q = 0; q < n; q++) {
            struct subject *s = &subjects[(q + rnd) % n];
            struct batch b = {s, buf, key, iv, 0};

            start(s, key, iv, k); /* streams restart: never near a limit */
            if (s->kind != K_SODIUM_AEAD) {
                struct bench_span sp;
                double bytes = (double)IMPL_BULK_BYTES * s->reps;

                bench_span_begin(&ctx->cycles, &sp);
                bulk_batch(&b, s->reps);
                bench_span_end(&ctx->cycles, &sp);
                if (b.failed)
                    bench_fail("%s: encryption failed", s->name);
                if (rnd > 0) {
                    bench_samples_add(&s->nspb, (double)sp.ns / bytes);
                    bench_samples_add(&s->cpb, sp.cycles / bytes);
                }
            }
            if (s->kind != K_SODIUM_STREAM)
                for (unsigned it = 0; it < frames; it++) {
                    double ns = seal_once(s, payload, frame, sizeof frame, key, nonce,
                                          ctx->timer_overhead_ns);
                    if (rnd > 0 && it > 0)
                        bench_samples_add(&s->seal, ns);
                }
        }
    }

    for (size_t j = 0; j < n; j++) {
        struct subject *s = &subjects[j];
        if (s->kind != K_SODIUM_AEAD) {
            double nspb = bench_median(&s->nspb);
            bench_results_add(&ctx->results, s->name, "impl_mibps", IMPL_BULK_BYTES,
                              nspb > 0 ? 1e9 / nspb / 1048576.0 : 0.0, "MiB/s");
            bench_results_add(&ctx->results, s->name, "impl_cpb", IMPL_BULK_BYTES,
                              bench_median(&s->cpb), "cycles/byte");
        }
        if (s->kind != K_SODIUM_STREAM)
            bench_results_add(&ctx->results, s->name, "impl_seal_ns", IMPL_FRAME_BYTES,
                              bench_median(&s->seal), "ns");
        if (s->kind == K_MBSC) {
            long code = bench_impl_code_bytes(mbsc_cipher_name(s->cipher), s->impl);
            if (code >= 0)
                bench_results_add(&ctx->results, s->name, "impl_code_bytes", BENCH_NO_SIZE,
                                  (double)code, "bytes");
            mbsc_stream_wipe(&s->st);
            mbsc_record_wipe(&s->tx);
        }
        bench_samples_free(&s->cpb);
        bench_samples_free(&s->nspb);
        bench_samples_free(&s->seal);
    }
    for (size_t i = 0; i < ctx->n_ciphers; i++)
        if (mbsc_cipher_force_impl(ctx->ciphers[i], NULL) != MBSC_OK)
            bench_fail("%s: cannot restore the default implementation",
                       mbsc_cipher_name(ctx->ciphers[i]));
    sodium_memzero(key, sizeof key);
    sodium_memzero(k, sizeof k);
    free(mem);
}

size_t bench_impl_rows(const struct bench_ctx *ctx, char names[][32], size_t cap)
{
    size_t n = 0;

    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        const mbsc_cipher *c = ctx->ciphers[i];
        for (size_t m = 0; m < mbsc_cipher_impl_count(c) && n < cap; m++)
            if (mbsc_cipher_impl_supported(c, m))
                snprintf(names[n++], 32, "%s:%s", mbsc_cipher_name(c), mbsc_cipher_impl_name(c, m));
    }
    return n;
}
