/* SPDX-License-Identifier: ISC */
/*
 * footprint.c - memory footprint of each cipher, as the study reports it:
 * the cipher state (what mbsc_stream actually uses of its fixed reserve),
 * a whole session (what one connection costs in RAM, all buffers
 * included: the Modbus configuration, and one sized for 4080-byte
 * payloads), and the cipher's machine code (measured at build time, see
 * bench/code_sizes.sh).  Nothing here is timed.
 */
#include <string.h>

#include "mbsc/session.h"

#include "bench.h"
#include "code_sizes.h"

static const struct {
    const char *name;
    long text_bytes;
} code_sizes[] = BENCH_CODE_SIZES;

void bench_footprint(struct bench_ctx *ctx)
{
    /* A session sized for the largest payloads (4080 bytes), for comparison. */
    mbsc_config *large = mbsc_config_new(MBSC_ROLE_MASTER);
    double large_bytes = -1;

    if (large != NULL && mbsc_config_set_max_payload(large, MBSC_MAX_PAYLOAD) == MBSC_OK)
        large_bytes = (double)mbsc_config_session_footprint(large);
    mbsc_config_free(large);
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        const mbsc_cipher *c = ctx->ciphers[i];
        const char *name = mbsc_cipher_name(c);

        bench_results_add(&ctx->results, name, "state_bytes", BENCH_NO_SIZE,
                          (double)mbsc_cipher_state_bytes(c), "bytes");
        bench_results_add(&ctx->results, name, "session_bytes", BENCH_NO_SIZE,
                          (double)mbsc_session_footprint(), "bytes");
        if (large_bytes > 0)
            bench_results_add(&ctx->results, name, "session_bytes_4080", BENCH_NO_SIZE, large_bytes,
                              "bytes");
        for (size_t k = 0; k < sizeof code_sizes / sizeof code_sizes[0]; k++)
            if (strcmp(code_sizes[k].name, name) == 0 && code_sizes[k].text_bytes >= 0)
                bench_results_add(&ctx->results, name, "code_bytes", BENCH_NO_SIZE,
                                  (double)code_sizes[k].text_bytes, "bytes");
    }
}
