/* SPDX-License-Identifier: ISC */
/*
 * stream.c - bulk keystream throughput (MiB/s) and cycles per byte.
 *
 * Each sample XORs one message of the given size in place a calibrated
 * number of times (so that a sample lasts about plan.stream_sample_ns) on a
 * stream that keeps running, as a record direction does: mbsc's API keeps
 * unused keystream between calls, so small messages share blocks.  The
 * throughput is size x repetitions / the median sample time; cycles per
 * byte is the median of the samples' cycles / bytes.
 *
 * Subjects: the selected mbsc ciphers and, when ChaCha20 is one of them,
 * libsodium's ChaCha20 (crypto_stream_chacha20_ietf_xor; it restarts at
 * block 0 on every call, so a 16-byte message costs it a whole block) and
 * its ChaCha20-Poly1305 AEAD (crypto_aead_chacha20poly1305_ietf_encrypt,
 * 16 more bytes out).  libsodium picks SIMD code for the CPU at
 * sodium_init(); mbsc's ciphers are portable C.
 *
 * The buffer is allocated once and stays hot in the caches up to 8 KiB;
 * 1 MiB messages stream through L2/L3.  A fixed nonce is fine here: the
 * data is junk and no ciphertext leaves the process.
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "clock.h"
#include "stats.h"

enum subject_kind { KIND_MBSC, KIND_SODIUM_STREAM, KIND_SODIUM_AEAD };

struct subject {
    const char *name;
    enum subject_kind kind;
    const mbsc_cipher *cipher; /* KIND_MBSC */
    mbsc_stream st;
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

    switch (b->s->kind) {
    case KIND_MBSC:
        for (unsigned r = 0; r < reps; r++)
            mbsc_stream_xor(&b->s->st, b->buf, b->buf, b->size);
        break;
    case KIND_SODIUM_STREAM:
        for (unsigned r = 0; r < reps; r++)
            b->failed |=
                crypto_stream_chacha20_ietf_xor(b->buf, b->buf, b->size, b->nonce, b->key) != 0;
        break;
    case KIND_SODIUM_AEAD:
        for (unsigned r = 0; r < reps; r++)
            b->failed |= crypto_aead_chacha20poly1305_ietf_encrypt(
                             b->buf, &clen, b->buf, b->size, NULL, 0, NULL, b->nonce, b->key) != 0;
        break;
    }
}

/* (Re)start an mbsc subject's keystream at position 0: outside the timing,
 * once per round, so that no stream ever nears ChaCha20's 256 GiB limit. */
static void restart(struct subject *s, const uint8_t *key, const uint8_t *iv)
{
    if (s->kind == KIND_MBSC &&
        mbsc_stream_init(&s->st, s->cipher, key, mbsc_cipher_key_bytes(s->cipher), iv,
                         mbsc_cipher_iv_bytes(s->cipher)) != MBSC_OK)
        bench_fail("%s: mbsc_stream_init failed", s->name);
}

void bench_stream(struct bench_ctx *ctx)
{
    enum { MAX_SUBJECTS = BENCH_MAX_STREAM_ROWS };
    struct subject subjects[MAX_SUBJECTS];
    struct bench_samples ns_per_byte[MAX_SUBJECTS][BENCH_N_STREAM_SIZES];
    struct bench_samples cyc_per_byte[MAX_SUBJECTS][BENCH_N_STREAM_SIZES];
    unsigned reps[MAX_SUBJECTS][BENCH_N_STREAM_SIZES];
    uint8_t key[32], iv[32];
    size_t n = 0, max_size = bench_stream_sizes[BENCH_N_STREAM_SIZES - 1];
    uint8_t *buf = NULL;
    void *mem = NULL;

    memset(subjects, 0, sizeof subjects);
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        subjects[n].name = mbsc_cipher_name(ctx->ciphers[i]);
        subjects[n].kind = KIND_MBSC;
        subjects[n++].cipher = ctx->ciphers[i];
    }
    if (ctx->baselines) {
        subjects[n].name = BENCH_SODIUM_STREAM;
        subjects[n++].kind = KIND_SODIUM_STREAM;
        subjects[n].name = BENCH_SODIUM_AEAD;
        subjects[n++].kind = KIND_SODIUM_AEAD;
    }
    /* Cache-line aligned, as a network buffer usually is. */
    if (posix_memalign(&mem, 64, max_size + crypto_aead_chacha20poly1305_ietf_ABYTES) != 0)
        bench_fail("out of memory");
    buf = mem;
    randombytes_buf(buf, max_size);
    randombytes_buf(key, sizeof key);
    randombytes_buf(iv, sizeof iv);

    for (size_t j = 0; j < n; j++) {
        restart(&subjects[j], key, iv);
        for (size_t z = 0; z < BENCH_N_STREAM_SIZES; z++) {
            struct batch b = {&subjects[j], buf, bench_stream_sizes[z], key, iv, 0};
            reps[j][z] = bench_calibrate_reps(run_batch, &b, ctx->plan.stream_sample_ns);
            bench_samples_init(&ns_per_byte[j][z], ctx->plan.stream_rounds);
            bench_samples_init(&cyc_per_byte[j][z], ctx->plan.stream_rounds);
        }
    }

    for (unsigned rnd = 0; rnd <= ctx->plan.stream_rounds; rnd++) {
        /* This round's cycles use this round's clock (when estimated). */
        bench_cycles_refresh(&ctx->cycles);
        for (size_t j = 0; j < n; j++)
            restart(&subjects[j], key, iv);
        for (size_t z = 0; z < BENCH_N_STREAM_SIZES; z++) {
            for (size_t k = 0; k < n; k++) {
                size_t j = (k + rnd) % n; /* rotate who goes first */
                struct batch b = {&subjects[j], buf, bench_stream_sizes[z], key, iv, 0};
                struct bench_span sp;
                double bytes = (double)b.size * reps[j][z];

                bench_span_begin(&ctx->cycles, &sp);
                run_batch(&b, reps[j][z]);
                bench_span_end(&ctx->cycles, &sp);
                if (b.failed)
                    bench_fail("%s: encryption failed", subjects[j].name);
                if (rnd == 0)
                    continue; /* warm-up round */
                bench_samples_add(&ns_per_byte[j][z], (double)sp.ns / bytes);
                bench_samples_add(&cyc_per_byte[j][z], sp.cycles / bytes);
            }
        }
    }

    for (size_t j = 0; j < n; j++) {
        for (size_t z = 0; z < BENCH_N_STREAM_SIZES; z++) {
            double nspb = bench_median(&ns_per_byte[j][z]);
            double mibps = nspb > 0 ? 1e9 / nspb / 1048576.0 : 0.0;

            bench_results_add(&ctx->results, subjects[j].name, "throughput", bench_stream_sizes[z],
                              mibps, "MiB/s");
            bench_results_add(&ctx->results, subjects[j].name, "cpb", bench_stream_sizes[z],
                              bench_median(&cyc_per_byte[j][z]), "cycles/byte");
            bench_samples_free(&ns_per_byte[j][z]);
            bench_samples_free(&cyc_per_byte[j][z]);
        }
        mbsc_stream_wipe(&subjects[j].st);
    }
    free(mem);
}
