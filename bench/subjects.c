/* SPDX-License-Identifier: ISC */
/*
 * subjects.c - what a run measures: the message sizes of the throughput
 * and latency groups and the names of the throughput rows.  Apart from the
 * groups, so that the writers (and the plot's test) need none of the
 * measuring code.
 */
#include "bench.h"

/* Modbus-sized up to bulk. */
const size_t bench_stream_sizes[BENCH_N_STREAM_SIZES] = {16, 64, 256, 1024, 8192, 1048576};

/* A read request ADU and the largest ADU. */
const size_t bench_frame_sizes[BENCH_N_FRAME_SIZES] = {12, 260};

size_t bench_stream_rows(const struct bench_ctx *ctx, const char **names)
{
    size_t n = 0;

    for (size_t i = 0; i < ctx->n_ciphers; i++)
        names[n++] = mbsc_cipher_name(ctx->ciphers[i]);
    if (ctx->baselines) {
        names[n++] = BENCH_SODIUM_STREAM;
        names[n++] = BENCH_SODIUM_AEAD;
    }
    return n;
}
