/* SPDX-License-Identifier: ISC */
/*
 * registry.c - the cipher descriptor table, the choice of implementation,
 * and the public cipher API.
 *
 * Argument and length checks live here, once, so that each implementation
 * only deals with valid input.  The table is ordered by wire id.
 *
 * Choice of implementation: one atomic int per cipher holds the index of
 * the implementation that mbsc_stream_init() will use.  It is decided the
 * first time it is needed (MBSC_CIPHER_IMPL, else the best one the CPU
 * supports); threads that race there compute and store the same value.
 * mbsc_cipher_force_impl() overwrites it.  mbsc_stream_init() copies the
 * implementation into the stream, so mbsc_stream_xor() is one indirect
 * call, as before, with no test per call.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cipher/cipher_impl.h"

/* Implementations per cipher, portable first, then by preference. */
const struct mbsc_cipher mbsc_cipher_chacha20 = {
    .name = "chacha20",
    .id = MBSC_CIPHER_CHACHA20,
    .key_bytes = 32,
    .iv_bytes = 12,
    .impls = {&mbsc_chacha20_ref,
#if defined(MBSC_SIMD_X86)
              &mbsc_chacha20_avx2, &mbsc_chacha20_avx512,
#elif defined(MBSC_SIMD_AARCH64) || defined(MBSC_SIMD_ARM)
              /* neon_scalar preferred from instruction counts, not from
               * timings (docs/bench.md, Raspberry Pi 4 estimates). */
              &mbsc_chacha20_neon, &mbsc_chacha20_neon_scalar,
#endif
              NULL},
};

const struct mbsc_cipher mbsc_cipher_trivium = {
    .name = "trivium",
    .id = MBSC_CIPHER_TRIVIUM,
    .key_bytes = 10,
    .iv_bytes = 10,
    .impls = {&mbsc_trivium_64,
#if defined(MBSC_SIMD_X86)
              &mbsc_trivium_avx512,
#endif
              NULL},
};

const struct mbsc_cipher mbsc_cipher_rabbit = {
    .name = "rabbit",
    .id = MBSC_CIPHER_RABBIT,
    .key_bytes = 16,
    .iv_bytes = 8,
    .iv_optional = 1, /* RFC 4503 key-only mode */
    .impls = {&mbsc_rabbit_ref,
#if defined(MBSC_SIMD_X86)
              &mbsc_rabbit_avx2, &mbsc_rabbit_avx512,
#elif defined(MBSC_SIMD_AARCH64) || defined(MBSC_SIMD_ARM)
              &mbsc_rabbit_neon,
#endif
              NULL},
};

const struct mbsc_cipher mbsc_cipher_enocoro128v2 = {
    .name = "enocoro128v2",
    .id = MBSC_CIPHER_ENOCORO128V2,
    .key_bytes = 16,
    .iv_bytes = 8,
    .impls = {&mbsc_enocoro128v2_ct,
#if defined(MBSC_SIMD_X86)
              &mbsc_enocoro128v2_ssse3, &mbsc_enocoro128v2_vbmi,
#elif defined(MBSC_SIMD_AARCH64) || defined(MBSC_SIMD_ARM)
              &mbsc_enocoro128v2_neon,
#endif
              NULL},
};

static const struct mbsc_cipher *const cipher_table[MBSC_CIPHER_COUNT] = {
    &mbsc_cipher_chacha20,
    &mbsc_cipher_trivium,
    &mbsc_cipher_rabbit,
    &mbsc_cipher_enocoro128v2,
};

#define ENV_IMPL       "MBSC_CIPHER_IMPL"
#define CHOICE_UNSET   (-1) /* not decided yet */
#define CHOICE_INVALID (-2) /* MBSC_CIPHER_IMPL names nothing usable */

static atomic_int choice[MBSC_CIPHER_COUNT] = {CHOICE_UNSET, CHOICE_UNSET, CHOICE_UNSET,
                                               CHOICE_UNSET};

static size_t impl_count(const struct mbsc_cipher *c)
{
    size_t n = 0;

    while (n < MBSC_CIPHER_MAX_IMPLS && c->impls[n] != NULL)
        n++;
    return n;
}

static int impl_supported(const struct mbsc_cipher_impl *impl)
{
    return (mbsc_cpu_features() & impl->cpu_needs) == impl->cpu_needs;
}

/* Index of the implementation of c called name[0..len), or -1. */
static int impl_index(const struct mbsc_cipher *c, const char *name, size_t len)
{
    for (size_t i = 0; i < impl_count(c); i++)
        if (strlen(c->impls[i]->name) == len && memcmp(c->impls[i]->name, name, len) == 0)
            return (int)i;
    return -1;
}

static int best_impl(const struct mbsc_cipher *c)
{
    int best = 0;

    for (size_t i = 1; i < impl_count(c); i++)
        if (impl_supported(c->impls[i]))
            best = (int)i;
    return best;
}

/*
 * What MBSC_CIPHER_IMPL ("cipher:impl,cipher:impl") asks for c: an index,
 * CHOICE_UNSET if it says nothing about c, or CHOICE_INVALID if it names
 * an implementation of c that is unknown or unsupported, or if any entry
 * is malformed or names an unknown cipher (a typo must not go unnoticed).
 */
static int env_choice(const struct mbsc_cipher *c)
{
    const char *p = getenv(ENV_IMPL);
    int result = CHOICE_UNSET;

    if (p == NULL)
        return CHOICE_UNSET;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        const char *colon;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const struct mbsc_cipher *named = NULL;

        colon = memchr(p, ':', len);
        if (colon == NULL)
            return CHOICE_INVALID;
        for (size_t i = 0; i < MBSC_CIPHER_COUNT; i++)
            if (strlen(cipher_table[i]->name) == (size_t)(colon - p) &&
                memcmp(cipher_table[i]->name, p, (size_t)(colon - p)) == 0)
                named = cipher_table[i];
        if (named == NULL)
            return CHOICE_INVALID;
        if (named == c) {
            int i = impl_index(c, colon + 1, len - (size_t)(colon + 1 - p));
            if (i < 0 || !impl_supported(c->impls[i]))
                return CHOICE_INVALID;
            result = i;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return result;
}

static int default_choice(const struct mbsc_cipher *c)
{
    int env = env_choice(c);

    return env == CHOICE_UNSET ? best_impl(c) : env;
}

/* The current choice for c: an index or CHOICE_INVALID. */
static int current_choice(const struct mbsc_cipher *c)
{
    atomic_int *slot = &choice[c->id - 1];
    int v = atomic_load_explicit(slot, memory_order_relaxed);

    if (v == CHOICE_UNSET) {
        int expected = CHOICE_UNSET;
        v = default_choice(c);
        /* A concurrent force_impl() wins over the default. */
        if (!atomic_compare_exchange_strong(slot, &expected, v))
            v = expected;
    }
    return v;
}

MBSC_API const mbsc_cipher *mbsc_cipher_by_name(const char *name)
{
    size_t i;

    if (name == NULL)
        return NULL;
    for (i = 0; i < MBSC_ARRAY_LEN(cipher_table); i++)
        if (strcmp(cipher_table[i]->name, name) == 0)
            return cipher_table[i];
    return NULL;
}

MBSC_API const mbsc_cipher *mbsc_cipher_by_id(unsigned id)
{
    if (id < 1 || id > MBSC_ARRAY_LEN(cipher_table))
        return NULL;
    return cipher_table[id - 1];
}

MBSC_API const char *mbsc_cipher_name(const mbsc_cipher *c)
{
    return c->name;
}
MBSC_API unsigned mbsc_cipher_id(const mbsc_cipher *c)
{
    return c->id;
}
MBSC_API size_t mbsc_cipher_key_bytes(const mbsc_cipher *c)
{
    return c->key_bytes;
}
MBSC_API size_t mbsc_cipher_iv_bytes(const mbsc_cipher *c)
{
    return c->iv_bytes;
}

MBSC_API size_t mbsc_cipher_state_bytes(const mbsc_cipher *c)
{
    size_t most = 0;

    for (size_t i = 0; i < impl_count(c); i++)
        if (c->impls[i]->state_bytes > most)
            most = c->impls[i]->state_bytes;
    return most;
}

MBSC_API size_t mbsc_cipher_impl_count(const mbsc_cipher *c)
{
    return impl_count(c);
}

MBSC_API const char *mbsc_cipher_impl_name(const mbsc_cipher *c, size_t i)
{
    return i < impl_count(c) ? c->impls[i]->name : NULL;
}

MBSC_API int mbsc_cipher_impl_supported(const mbsc_cipher *c, size_t i)
{
    return i < impl_count(c) && impl_supported(c->impls[i]);
}

MBSC_API int mbsc_cipher_force_impl(const mbsc_cipher *c, const char *name)
{
    int i;

    if (c == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (name == NULL) {
        atomic_store(&choice[c->id - 1], default_choice(c));
        return MBSC_OK;
    }
    i = impl_index(c, name, strlen(name));
    if (i < 0 || !impl_supported(c->impls[i]))
        return MBSC_ERR_CIPHER_IMPL;
    atomic_store(&choice[c->id - 1], i);
    return MBSC_OK;
}

MBSC_API const char *mbsc_cipher_impl_selected(const mbsc_cipher *c)
{
    int i = current_choice(c);

    return i < 0 ? NULL : c->impls[i]->name;
}

MBSC_API const char *mbsc_stream_impl_name(const mbsc_stream *st)
{
    return st != NULL && st->impl_ != NULL ? st->impl_->name : NULL;
}

int mbsc_cipher_start(const struct mbsc_cipher_impl **impl, void *state, size_t state_cap,
                      const mbsc_cipher *c, const uint8_t *key, size_t key_len, const uint8_t *iv,
                      size_t iv_len)
{
    const struct mbsc_cipher_impl *chosen;
    int i;

    *impl = NULL;
    mbsc_wipe(state, state_cap);
    if (c == NULL || key == NULL || (iv == NULL && iv_len != 0))
        return MBSC_ERR_INVALID_ARG;
    if (key_len != c->key_bytes)
        return MBSC_ERR_KEY_LENGTH;
    if (iv_len != c->iv_bytes && !(c->iv_optional && iv_len == 0))
        return MBSC_ERR_IV_LENGTH;
    i = current_choice(c);
    if (i < 0)
        return MBSC_ERR_CIPHER_IMPL;
    chosen = c->impls[i];
    if (chosen->state_bytes > state_cap)
        return MBSC_ERR_CIPHER_IMPL; /* a reserve too small for this build */
    chosen->init(state, key, iv_len ? iv : NULL, iv_len);
    *impl = chosen;
    return MBSC_OK;
}

MBSC_API int mbsc_stream_init(mbsc_stream *st, const mbsc_cipher *c, const uint8_t *key,
                              size_t key_len, const uint8_t *iv, size_t iv_len)
{
    const struct mbsc_cipher_impl *impl;
    int rc;

    if (st == NULL)
        return MBSC_ERR_INVALID_ARG;
    mbsc_stream_wipe(st);
    rc = mbsc_cipher_start(&impl, st->state_.bytes_, sizeof st->state_.bytes_, c, key, key_len, iv,
                           iv_len);
    if (rc != MBSC_OK)
        return rc;
    st->impl_ = impl;
    st->cipher_ = c;
    return MBSC_OK;
}

MBSC_API void mbsc_stream_xor(mbsc_stream *st, uint8_t *out, const uint8_t *in, size_t len)
{
    if (len == 0)
        return;
    if (st == NULL || st->cipher_ == NULL) {
        /* Never hand back plaintext from a stream that cannot encrypt. */
        if (out != NULL)
            memset(out, 0, len);
        return;
    }
    st->impl_->xor_stream(st->state_.bytes_, out, in, len);
}

MBSC_API void mbsc_stream_wipe(mbsc_stream *st)
{
    if (st != NULL)
        mbsc_wipe(st, sizeof *st);
}
