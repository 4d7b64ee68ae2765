/* SPDX-License-Identifier: ISC */
/*
 * setup.c - key and IV setup time: one mbsc_stream_init, in ns.
 *
 * Setup is paid once per direction at the end of the handshake and again
 * at every rekey, and it differs a lot between the ciphers (ChaCha20 copies
 * words; Trivium clocks its state 1152 times; Rabbit and Enocoro iterate
 * too).  One init takes from tens of ns to a few µs, so it is timed in
 * batches (bench_calibrate_reps) and divided; the batches of the ciphers
 * are interleaved round by round.  The time includes what the API does
 * around the cipher's own init: wiping the 520-byte mbsc_stream first.
 */
#include <sodium.h>
#include <string.h>

#include "bench.h"
#include "clock.h"
#include "stats.h"

struct setup_arg {
    const mbsc_cipher *cipher;
    mbsc_stream st;
    uint8_t key[MBSC_CIPHER_MAX_KEY_BYTES];
    uint8_t iv[MBSC_CIPHER_MAX_IV_BYTES];
    int failed;
};

static void run_inits(void *p, unsigned reps)
{
    struct setup_arg *a = p;
    size_t kb = mbsc_cipher_key_bytes(a->cipher), ib = mbsc_cipher_iv_bytes(a->cipher);

    for (unsigned r = 0; r < reps; r++)
        a->failed |= mbsc_stream_init(&a->st, a->cipher, a->key, kb, a->iv, ib) != MBSC_OK;
}

void bench_setup(struct bench_ctx *ctx)
{
    size_t n = ctx->n_ciphers;
    struct setup_arg args[MBSC_CIPHER_COUNT];
    struct bench_samples samples[MBSC_CIPHER_COUNT];
    unsigned reps[MBSC_CIPHER_COUNT];

    for (size_t i = 0; i < n; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].cipher = ctx->ciphers[i];
        randombytes_buf(args[i].key, sizeof args[i].key);
        randombytes_buf(args[i].iv, sizeof args[i].iv);
        reps[i] = bench_calibrate_reps(run_inits, &args[i], ctx->plan.setup_sample_ns);
        bench_samples_init(&samples[i], ctx->plan.setup_rounds);
    }
    for (unsigned rnd = 0; rnd <= ctx->plan.setup_rounds; rnd++) {
        for (size_t k = 0; k < n; k++) {
            size_t i = (k + rnd) % n; /* rotate who goes first */
            uint64_t t0 = bench_now_ns(), dt;
            run_inits(&args[i], reps[i]);
            dt = bench_now_ns() - t0;
            if (rnd > 0) /* round 0 warms up */
                bench_samples_add(&samples[i], (double)dt / reps[i]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (args[i].failed)
            bench_fail("%s: mbsc_stream_init failed", mbsc_cipher_name(args[i].cipher));
        bench_results_add(&ctx->results, mbsc_cipher_name(args[i].cipher), "setup_ns",
                          BENCH_NO_SIZE, bench_median(&samples[i]), "ns");
        mbsc_stream_wipe(&args[i].st);
        bench_samples_free(&samples[i]);
    }
}
