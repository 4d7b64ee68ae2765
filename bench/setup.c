/* SPDX-License-Identifier: ISC */
/*
 * setup.c - what a cipher costs before its first byte (docs/bench.md, "What
 * each figure is"): its memory (not timed; the code size comes from
 * bench/code_sizes.sh at build time, since the objects are not where the
 * bench runs), and one mbsc_stream_init, paid per direction at the end of
 * the handshake and at every rekey.  An init takes from tens of ns to a few
 * µs, so it is timed in calibrated batches and divided.
 */
#include <sodium.h>
#include <string.h>

#include "mbsc/session.h"

#include "bench.h"
#include "code_sizes.h"

static const struct {
    const char *cipher, *impl;
    long text_bytes;
} code_sizes[] = BENCH_IMPL_CODE_SIZES;

void bench_footprint(struct bench_ctx *ctx)
{
    mbsc_config *large = mbsc_config_new(MBSC_ROLE_MASTER);
    double large_bytes = -1;

    if (large != NULL && mbsc_config_set_max_payload(large, MBSC_MAX_PAYLOAD) == MBSC_OK)
        large_bytes = (double)mbsc_config_session_footprint(large);
    mbsc_config_free(large);
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        const char *name = mbsc_cipher_name(ctx->ciphers[i]);
        long code = -1;

        bench_csv_num(ctx->figures, name, "state_bytes", 0,
                      (double)mbsc_cipher_state_bytes(ctx->ciphers[i]), "bytes");
        bench_csv_num(ctx->figures, name, "session_bytes", 0, (double)mbsc_session_footprint(),
                      "bytes");
        if (large_bytes > 0)
            bench_csv_num(ctx->figures, name, "session_bytes_4080", 0, large_bytes, "bytes");
        /* All of the cipher's objects: every implementation of it. */
        for (size_t k = 0; code_sizes[k].cipher != NULL; k++)
            if (strcmp(code_sizes[k].cipher, name) == 0)
                code = (code < 0 ? 0 : code) + code_sizes[k].text_bytes;
        if (code >= 0)
            bench_csv_num(ctx->figures, name, "code_bytes", 0, (double)code, "bytes");
    }
}

struct setup_arg {
    const mbsc_cipher *cipher;
    mbsc_stream st;
    uint8_t key[MBSC_CIPHER_MAX_KEY_BYTES], iv[MBSC_CIPHER_MAX_IV_BYTES];
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
    struct bench_samples samples[MBSC_CIPHER_COUNT] = {{0}};
    unsigned reps[MBSC_CIPHER_COUNT];

    for (size_t i = 0; i < n; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].cipher = ctx->ciphers[i];
        randombytes_buf(args[i].key, sizeof args[i].key);
        randombytes_buf(args[i].iv, sizeof args[i].iv);
        reps[i] = bench_calibrate_reps(run_inits, &args[i], ctx->plan.setup_sample_ns);
    }
    for (unsigned rnd = 0; rnd <= ctx->plan.setup_rounds; rnd++) {
        for (size_t k = 0; k < n; k++) {
            size_t i = (k + rnd) % n; /* rotate who goes first */
            uint64_t t0 = bench_now_ns();
            run_inits(&args[i], reps[i]);
            if (rnd > 0) /* round 0 warms up */
                bench_samples_add(&samples[i], (double)(bench_now_ns() - t0) / reps[i]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (args[i].failed)
            bench_fail("%s: mbsc_stream_init failed", mbsc_cipher_name(args[i].cipher));
        bench_csv_num(ctx->figures, mbsc_cipher_name(args[i].cipher), "setup_ns", 0,
                      bench_median(&samples[i]), "ns");
        mbsc_stream_wipe(&args[i].st);
        bench_samples_free(&samples[i]);
    }
}
