/*
 * registry.c - the cipher descriptor table and the public cipher API.
 *
 * Argument and length checks live here, once, so that each implementation
 * only deals with valid input.  The table is ordered by wire id.
 */
#include <string.h>

#include "cipher/cipher_impl.h"

static const struct mbsc_cipher *const cipher_table[MBSC_CIPHER_COUNT] = {
    &mbsc_cipher_chacha20,
    &mbsc_cipher_trivium,
    &mbsc_cipher_rabbit,
    &mbsc_cipher_enocoro128v2,
};

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

MBSC_API const char *mbsc_cipher_name(const mbsc_cipher *c) { return c->name; }
MBSC_API unsigned mbsc_cipher_id(const mbsc_cipher *c) { return c->id; }
MBSC_API size_t mbsc_cipher_key_bytes(const mbsc_cipher *c) { return c->key_bytes; }
MBSC_API size_t mbsc_cipher_iv_bytes(const mbsc_cipher *c) { return c->iv_bytes; }
MBSC_API size_t mbsc_cipher_state_bytes(const mbsc_cipher *c) { return c->state_bytes; }

MBSC_API int mbsc_stream_init(mbsc_stream *st, const mbsc_cipher *c,
                              const uint8_t *key, size_t key_len,
                              const uint8_t *iv, size_t iv_len)
{
    if (st == NULL)
        return MBSC_ERR_INVALID_ARG;
    mbsc_stream_wipe(st);
    if (c == NULL || key == NULL || (iv == NULL && iv_len != 0))
        return MBSC_ERR_INVALID_ARG;
    if (key_len != c->key_bytes)
        return MBSC_ERR_KEY_LENGTH;
    if (iv_len != c->iv_bytes && !(c->iv_optional && iv_len == 0))
        return MBSC_ERR_IV_LENGTH;
    c->init(st->state_.bytes_, key, iv_len ? iv : NULL, iv_len);
    st->cipher_ = c;
    return MBSC_OK;
}

MBSC_API void mbsc_stream_xor(mbsc_stream *st, uint8_t *out, const uint8_t *in,
                              size_t len)
{
    if (len == 0)
        return;
    if (st == NULL || st->cipher_ == NULL) {
        /* Never hand back plaintext from a stream that cannot encrypt. */
        if (out != NULL)
            memset(out, 0, len);
        return;
    }
    st->cipher_->xor_stream(st->state_.bytes_, out, in, len);
}

MBSC_API void mbsc_stream_wipe(mbsc_stream *st)
{
    if (st != NULL)
        mbsc_wipe(st, sizeof *st);
}
