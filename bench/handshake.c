/* SPDX-License-Identifier: ISC */
/*
 * handshake.c - the Noise IKpsk2 handshake, both sides, in memory: two
 * sans-I/O sessions back to back, from creating both (the master draws its
 * ephemeral key there) to both being established.  No sockets, so that it
 * is the CPU cost of a connection's start (docs/bench.md).  The master
 * offers only the cipher being measured; ciphers alternate round by round.
 */
#include <sodium.h>
#include <string.h>

#include "mbsc/keys.h"
#include "mbsc/session.h"

#include "bench.h"

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

/* One complete handshake; returns its duration in ns. */
static uint64_t one_handshake(const mbsc_config *mcfg, const mbsc_config *scfg, const char *name)
{
    uint64_t t0, t1;
    mbsc_session *m, *s;
    int err = MBSC_OK, rc;

    t0 = bench_now_ns();
    m = mbsc_session_new(mcfg, &err);
    s = m != NULL ? mbsc_session_new(scfg, &err) : NULL;
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
    if (strcmp(mbsc_cipher_name(mbsc_session_cipher(m)), name) != 0)
        bench_fail("%s: the handshake chose %s", name, mbsc_cipher_name(mbsc_session_cipher(m)));
    mbsc_session_free(m);
    mbsc_session_free(s);
    return t1 - t0;
}

void bench_handshake(struct bench_ctx *ctx)
{
    size_t n = ctx->n_ciphers;
    mbsc_keypair master, slave;
    mbsc_allowlist *allow = mbsc_allowlist_new();
    mbsc_config *mcfg[MBSC_CIPHER_COUNT], *scfg = mbsc_config_new(MBSC_ROLE_SLAVE);
    struct bench_samples samples[MBSC_CIPHER_COUNT] = {{0}};

    if (allow == NULL || scfg == NULL || mbsc_keypair_generate(&master) != MBSC_OK ||
        mbsc_keypair_generate(&slave) != MBSC_OK ||
        mbsc_allowlist_add(allow, master.public_key, "bench", NULL) != MBSC_OK ||
        mbsc_config_set_keypair(scfg, &slave) != MBSC_OK ||
        mbsc_config_set_allowlist(scfg, allow) != MBSC_OK)
        bench_fail("handshake: cannot set up the slave");
    for (size_t i = 0; i < n; i++) {
        mcfg[i] = mbsc_config_new(MBSC_ROLE_MASTER);
        if (mcfg[i] == NULL || mbsc_config_set_keypair(mcfg[i], &master) != MBSC_OK ||
            mbsc_config_set_peer_public_key(mcfg[i], slave.public_key) != MBSC_OK ||
            mbsc_config_set_ciphers(mcfg[i], mbsc_cipher_name(ctx->ciphers[i])) != MBSC_OK)
            bench_fail("handshake: cannot set up the master");
    }

    for (unsigned rnd = 0; rnd <= ctx->plan.handshake_rounds; rnd++) {
        for (size_t k = 0; k < n; k++) {
            size_t i = (k + rnd) % n;
            uint64_t dt = one_handshake(mcfg[i], scfg, mbsc_cipher_name(ctx->ciphers[i]));
            if (rnd > 0)
                bench_samples_add(&samples[i], (double)dt / 1000.0);
        }
    }

    for (size_t i = 0; i < n; i++) {
        bench_csv_num(ctx->figures, mbsc_cipher_name(ctx->ciphers[i]), "handshake_us", 0,
                      bench_median(&samples[i]), "us");
        bench_samples_free(&samples[i]);
        mbsc_config_free(mcfg[i]);
    }
    mbsc_config_free(scfg);
    mbsc_allowlist_free(allow);
    mbsc_keypair_wipe(&master);
    mbsc_keypair_wipe(&slave);
}
