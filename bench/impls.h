/* SPDX-License-Identifier: ISC */
/*
 * impls.h - the side-by-side group of cipher implementations (impls.c).
 */
#ifndef MBSC_BENCH_IMPLS_H
#define MBSC_BENCH_IMPLS_H

#include "bench.h"

/* Measure every supported implementation of the selected ciphers. */
void bench_impls(struct bench_ctx *ctx);

/* Row names "cipher:impl" of that group, in its order; returns the count. */
size_t bench_impl_rows(const struct bench_ctx *ctx, char names[][32], size_t cap);

/* .text bytes of one implementation's own object, or -1 if unknown. */
long bench_impl_code_bytes(const char *cipher, const char *impl);

#endif /* MBSC_BENCH_IMPLS_H */
