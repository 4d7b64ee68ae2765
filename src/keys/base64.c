/* SPDX-License-Identifier: ISC */
/*
 * base64.c - canonical standard base64 (RFC 4648 section 4, padded) of
 * fixed-length data, in constant time.
 *
 * Private keys pass through here, so no branch and no table lookup depends
 * on a data byte or character: each character is mapped with range masks
 * (as libsodium's codecs.c does), errors are OR-ed into one flag, and the
 * only branch on the data is the final "valid or not".
 *
 * Canonical means the one encoding an encoder produces: exact length, "="
 * padding present, and the unused low bits of the last data character zero
 * (RFC 4648 section 3.5 lets decoders reject other forms; we must, or two
 * files would spell one key).
 */
#include <string.h>

#include "internal.h"
#include "keys/keyio.h"
#include "mbsc/keys.h"

/* All-ones if lo <= x <= hi, else 0.  x, lo, hi < 2^31. */
static uint32_t range_mask(uint32_t x, uint32_t lo, uint32_t hi)
{
    uint32_t below = (x - lo) >> 31; /* 1 if x < lo */
    uint32_t above = (hi - x) >> 31; /* 1 if x > hi */
    return ((below | above) ^ 1u) * 0xffffffffu;
}

/* The character for a 6-bit value. */
static char b64_char(uint32_t v)
{
    uint32_t c = 0;

    c |= range_mask(v, 0, 25) & (v + 'A');
    c |= range_mask(v, 26, 51) & (v - 26 + 'a');
    c |= range_mask(v, 52, 61) & (v - 52 + '0');
    c |= range_mask(v, 62, 62) & (uint32_t)'+';
    c |= range_mask(v, 63, 63) & (uint32_t)'/';
    return (char)c;
}

/* The 6-bit value of character ch; *bad becomes nonzero if ch is not one. */
static uint32_t b64_value(unsigned char ch, uint32_t *bad)
{
    uint32_t c = ch;
    uint32_t upper = range_mask(c, 'A', 'Z');
    uint32_t lower = range_mask(c, 'a', 'z');
    uint32_t digit = range_mask(c, '0', '9');
    uint32_t plus = range_mask(c, '+', '+');
    uint32_t slash = range_mask(c, '/', '/');

    *bad |= ~(upper | lower | digit | plus | slash) & 1u;
    return (upper & (c - 'A')) | (lower & (c - 'a' + 26)) | (digit & (c - '0' + 52)) |
           (plus & 62u) | (slash & 63u);
}

/* Characters in the encoding of n bytes, or 0 if that overflows size_t. */
static size_t encoded_len(size_t n)
{
    size_t groups = n / 3 + (n % 3 != 0);
    return groups > SIZE_MAX / 4 - 1 ? 0 : groups * 4;
}

int mbsc_base64_encode(char *out, size_t out_size, const uint8_t *in, size_t in_len)
{
    size_t full = in_len / 3, rest = in_len % 3, i;
    char *o = out;

    size_t need = encoded_len(in_len);

    if ((need == 0 && in_len != 0) || out_size <= need)
        return MBSC_ERR_BUFFER_TOO_SMALL;
    for (i = 0; i < full; i++, in += 3) {
        uint32_t w = (uint32_t)in[0] << 16 | (uint32_t)in[1] << 8 | in[2];
        *o++ = b64_char(w >> 18);
        *o++ = b64_char((w >> 12) & 63u);
        *o++ = b64_char((w >> 6) & 63u);
        *o++ = b64_char(w & 63u);
    }
    if (rest != 0) {
        uint32_t w = (uint32_t)in[0] << 16 | (rest == 2 ? (uint32_t)in[1] << 8 : 0u);
        *o++ = b64_char(w >> 18);
        *o++ = b64_char((w >> 12) & 63u);
        *o++ = rest == 2 ? b64_char((w >> 6) & 63u) : '=';
        *o++ = '=';
    }
    *o = '\0';
    return MBSC_OK;
}

int mbsc_base64_decode(uint8_t *out, size_t out_len, const char *in, size_t in_len)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t full = out_len / 3, rest = out_len % 3, i;
    uint32_t bad = 0;
    uint8_t *o = out;

    if (in_len != encoded_len(out_len) || (in_len == 0 && out_len != 0)) {
        sodium_memzero(out, out_len);
        return MBSC_ERR_KEY_FILE_FORMAT;
    }
    for (i = 0; i < full; i++, s += 4) {
        uint32_t w = b64_value(s[0], &bad) << 18 | b64_value(s[1], &bad) << 12 |
                     b64_value(s[2], &bad) << 6 | b64_value(s[3], &bad);
        *o++ = (uint8_t)(w >> 16);
        *o++ = (uint8_t)(w >> 8);
        *o++ = (uint8_t)w;
    }
    if (rest == 1) {
        /* xx== : 12 bits, the low 4 must be zero */
        uint32_t w = b64_value(s[0], &bad) << 6 | b64_value(s[1], &bad);
        bad |= (w & 15u) | (s[2] ^ (uint32_t)'=') | (s[3] ^ (uint32_t)'=');
        *o = (uint8_t)(w >> 4);
    } else if (rest == 2) {
        /* xxx= : 18 bits, the low 2 must be zero */
        uint32_t w =
            b64_value(s[0], &bad) << 12 | b64_value(s[1], &bad) << 6 | b64_value(s[2], &bad);
        bad |= (w & 3u) | (s[3] ^ (uint32_t)'=');
        o[0] = (uint8_t)(w >> 10);
        o[1] = (uint8_t)(w >> 2);
    }
    if (bad != 0) {
        sodium_memzero(out, out_len);
        return MBSC_ERR_KEY_FILE_FORMAT;
    }
    return MBSC_OK;
}

MBSC_API int mbsc_key_to_base64(char out[MBSC_KEY_BASE64_SIZE], const uint8_t key[MBSC_KEY_BYTES])
{
    if (out == NULL || key == NULL)
        return MBSC_ERR_INVALID_ARG;
    return mbsc_base64_encode(out, MBSC_KEY_BASE64_SIZE, key, MBSC_KEY_BYTES);
}

MBSC_API int mbsc_key_from_base64(uint8_t key[MBSC_KEY_BYTES], const char *b64, size_t len)
{
    if (key == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (b64 == NULL) {
        sodium_memzero(key, MBSC_KEY_BYTES);
        return MBSC_ERR_INVALID_ARG;
    }
    return mbsc_base64_decode(key, MBSC_KEY_BYTES, b64, len);
}
