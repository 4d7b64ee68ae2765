/* SPDX-License-Identifier: ISC */
/*
 * setup.c - what a cipher costs before its first byte (docs/bench.md):
 * its memory (not timed; the code size comes from bench/code_sizes.sh at
 * build time, since the objects are not where the bench runs), one
 * mbsc_stream_init (paid per direction at the end of the handshake and at
 * every rekey; tens of ns to a few µs, so timed in calibrated batches),
 * and the Noise IKpsk2 handshake, both sides in memory: two sans-I/O
 * sessions back to back, so that it is the CPU cost of a connection's
 * start without the sockets.
 */
#include <sodium.h>
#include <string.h>

#include "mbsc/keys.h"
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

/* rounds + 1 rounds of one(arg, i) for each cipher i, who goes first
 * rotating, round 0 a warm-up; the median of each as a row. */
static void per_cipher(struct bench_ctx *ctx, unsigned rounds, double (*one)(void *, size_t),
                       void *arg, const char *metric, const char *unit)
{
    struct bench_samples samples[MBSC_CIPHER_COUNT] = {{0}};
    size_t n = ctx->n_ciphers;

    for (unsigned rnd = 0; rnd <= rounds; rnd++)
        for (size_t k = 0; k < n; k++) {
            double v = one(arg, (k + rnd) % n);
            if (rnd > 0)
                bench_samples_add(&samples[(k + rnd) % n], v);
        }
    for (size_t i = 0; i < n; i++) {
        bench_csv_num(ctx->figures, mbsc_cipher_name(ctx->ciphers[i]), metric, 0,
                      bench_median(&samples[i]), unit);
        bench_samples_free(&samples[i]);
    }
}

struct setup_arg {
    const mbsc_cipher *cipher;
    mbsc_stream st;
    uint8_t key[MBSC_CIPHER_MAX_KEY_BYTES], iv[MBSC_CIPHER_MAX_IV_BYTES];
    unsigned reps;
};

static void run_inits(void *p, unsigned reps)
{
    struct setup_arg *a = p;
    size_t kb = mbsc_cipher_key_bytes(a->cipher), ib = mbsc_cipher_iv_bytes(a->cipher);

    for (unsigned r = 0; r < reps; r++)
        if (mbsc_stream_init(&a->st, a->cipher, a->key, kb, a->iv, ib) != MBSC_OK)
            bench_fail("%s: mbsc_stream_init failed", mbsc_cipher_name(a->cipher));
}

/* ns per init of a batch of cipher i. */
static double one_setup(void *p, size_t i)
{
    struct setup_arg *a = (struct setup_arg *)p + i;
    uint64_t t0 = bench_now_ns();

    run_inits(a, a->reps);
    return (double)(bench_now_ns() - t0) / a->reps;
}

void bench_setup(struct bench_ctx *ctx)
{
    struct setup_arg args[MBSC_CIPHER_COUNT];

    memset(args, 0, sizeof args);
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        args[i].cipher = ctx->ciphers[i];
        randombytes_buf(args[i].key, sizeof args[i].key);
        randombytes_buf(args[i].iv, sizeof args[i].iv);
        args[i].reps = bench_calibrate_reps(run_inits, &args[i], ctx->plan.setup_sample_ns);
    }
    per_cipher(ctx, ctx->plan.setup_rounds, one_setup, args, "setup_ns", "ns");
    for (size_t i = 0; i < ctx->n_ciphers; i++)
        mbsc_stream_wipe(&args[i].st);
}

/* Move everything a has to send into b.  Returns MBSC_OK or the error. */
static int pump(mbsc_session *a, mbsc_session *b)
{
    size_t len, used = 0;
    const uint8_t *out = mbsc_session_output(a, &len);

    while (used < len) {
        size_t consumed = 0;
        int rc = mbsc_session_feed(b, out + used, len - used, &consumed);
        if (rc != MBSC_OK)
            return rc;
        if (consumed == 0)
            return MBSC_ERR_STATE; /* no payload can be waiting during a handshake */
        used += consumed;
    }
    mbsc_session_output_consumed(a, len);
    return MBSC_OK;
}

struct handshake_arg {
    mbsc_config *mcfg[MBSC_CIPHER_COUNT], *scfg; /* the master offers only cipher i */
    const mbsc_cipher *const *ciphers;
};

/* µs of one complete handshake with cipher i, from creating both sessions
 * (the master draws its ephemeral key there) to both being established. */
static double one_handshake(void *p, size_t i)
{
    struct handshake_arg *a = p;
    const char *name = mbsc_cipher_name(a->ciphers[i]);
    uint64_t t0 = bench_now_ns(), t1;
    int err = MBSC_OK, rc;
    mbsc_session *m = mbsc_session_new(a->mcfg[i], &err);
    mbsc_session *s = m != NULL ? mbsc_session_new(a->scfg, &err) : NULL;

    if (m == NULL || s == NULL)
        bench_fail("%s: mbsc_session_new: %s", name, mbsc_strerror(err));
    rc = pump(m, s);
    if (rc == MBSC_OK)
        rc = pump(s, m);
    if (rc == MBSC_OK)
        rc = pump(m, s); /* the master's keep-alive confirms the slave's session */
    t1 = bench_now_ns();
    if (rc != MBSC_OK || !mbsc_session_established(m) || !mbsc_session_established(s))
        bench_fail("%s: handshake failed: %s", name,
                   mbsc_strerror(rc != MBSC_OK ? rc : mbsc_session_error(m)));
    if (mbsc_session_cipher(m) != a->ciphers[i])
        bench_fail("%s: the handshake chose %s", name, mbsc_cipher_name(mbsc_session_cipher(m)));
    mbsc_session_free(m);
    mbsc_session_free(s);
    return (double)(t1 - t0) / 1000.0;
}

void bench_handshake(struct bench_ctx *ctx)
{
    struct handshake_arg a = {.scfg = mbsc_config_new(MBSC_ROLE_SLAVE), .ciphers = ctx->ciphers};
    mbsc_keypair master, slave;
    mbsc_allowlist *allow = mbsc_allowlist_new();

    if (allow == NULL || a.scfg == NULL || mbsc_keypair_generate(&master) != MBSC_OK ||
        mbsc_keypair_generate(&slave) != MBSC_OK ||
        mbsc_allowlist_add(allow, master.public_key, "bench", NULL) != MBSC_OK ||
        mbsc_config_set_keypair(a.scfg, &slave) != MBSC_OK ||
        mbsc_config_set_allowlist(a.scfg, allow) != MBSC_OK)
        bench_fail("handshake: cannot set up the slave");
    for (size_t i = 0; i < ctx->n_ciphers; i++)
        if ((a.mcfg[i] = mbsc_config_new(MBSC_ROLE_MASTER)) == NULL ||
            mbsc_config_set_keypair(a.mcfg[i], &master) != MBSC_OK ||
            mbsc_config_set_peer_public_key(a.mcfg[i], slave.public_key) != MBSC_OK ||
            mbsc_config_set_ciphers(a.mcfg[i], mbsc_cipher_name(ctx->ciphers[i])) != MBSC_OK)
            bench_fail("handshake: cannot set up the master");
    per_cipher(ctx, ctx->plan.handshake_rounds, one_handshake, &a, "handshake_us", "us");
    for (size_t i = 0; i < ctx->n_ciphers; i++)
        mbsc_config_free(a.mcfg[i]);
    mbsc_config_free(a.scfg);
    mbsc_allowlist_free(allow);
    mbsc_keypair_wipe(&master);
    mbsc_keypair_wipe(&slave);
}
