/* SPDX-License-Identifier: ISC */
/*
 * noise/hkdf.c - HMAC-BLAKE2b and the Noise HKDF.
 *
 * HMAC: RFC 2104 over BLAKE2b-512 (RFC 7693) with B = 128 (BLAKE2b's block)
 * and L = 64.  The inner and outer hashes are plain, unkeyed BLAKE2b: keyed
 * BLAKE2b is a different function and does not reproduce the Noise vectors.
 * HKDF: Noise specification revision 34, section 4.3 (RFC 5869 with an
 * empty info, the chaining key as salt).
 *
 * Checked by the Noise vectors (tests/vectors/noise/) and by HMAC vectors
 * computed with Python's hmac and hashlib modules (tests/check_noise.c).
 */
#include <string.h>

#include "internal.h"
#include "noise/noise.h"

MBSC_STATIC_ASSERT(MBSC_NOISE_HASHLEN == crypto_generichash_blake2b_BYTES_MAX,
                   "HASHLEN is BLAKE2b's full output");

/*
 * HMAC over the concatenation of two pieces (HKDF hashes out1 || 0x02
 * without a copy).  key_len <= MBSC_NOISE_BLOCKLEN: longer keys were
 * hashed by the caller.
 */
static void hmac2(uint8_t out[MBSC_NOISE_HASHLEN], const uint8_t *key, size_t key_len,
                  const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
    crypto_generichash_blake2b_state st;
    uint8_t pad[MBSC_NOISE_BLOCKLEN];
    uint8_t inner[MBSC_NOISE_HASHLEN];
    size_t i;

    /* inner = H((K ^ ipad) || a || b) */
    memset(pad, 0x36, sizeof pad);
    for (i = 0; i < key_len; i++)
        pad[i] ^= key[i];
    crypto_generichash_blake2b_init(&st, NULL, 0, MBSC_NOISE_HASHLEN);
    crypto_generichash_blake2b_update(&st, pad, sizeof pad);
    if (a_len > 0)
        crypto_generichash_blake2b_update(&st, a, a_len);
    if (b_len > 0)
        crypto_generichash_blake2b_update(&st, b, b_len);
    crypto_generichash_blake2b_final(&st, inner, sizeof inner);

    /* out = H((K ^ opad) || inner) */
    memset(pad, 0x5c, sizeof pad);
    for (i = 0; i < key_len; i++)
        pad[i] ^= key[i];
    crypto_generichash_blake2b_init(&st, NULL, 0, MBSC_NOISE_HASHLEN);
    crypto_generichash_blake2b_update(&st, pad, sizeof pad);
    crypto_generichash_blake2b_update(&st, inner, sizeof inner);
    crypto_generichash_blake2b_final(&st, out, MBSC_NOISE_HASHLEN);

    mbsc_wipe(&st, sizeof st);
    mbsc_wipe(pad, sizeof pad);
    mbsc_wipe(inner, sizeof inner);
}

void mbsc_hmac_blake2b(uint8_t out[MBSC_NOISE_HASHLEN], const uint8_t *key, size_t key_len,
                       const uint8_t *data, size_t data_len)
{
    uint8_t hashed_key[MBSC_NOISE_HASHLEN];

    if (key_len > MBSC_NOISE_BLOCKLEN) {
        /* RFC 2104: a key longer than the block is replaced by its hash. */
        crypto_generichash_blake2b(hashed_key, sizeof hashed_key, key, key_len, NULL, 0);
        hmac2(out, hashed_key, sizeof hashed_key, data, data_len, NULL, 0);
    } else {
        hmac2(out, key, key_len, data, data_len, NULL, 0);
    }
    mbsc_wipe(hashed_key, sizeof hashed_key);
}

/*
 * Spec 4.3:
 *   temp_key = HMAC(ck, ikm)
 *   out1 = HMAC(temp_key, 0x01)
 *   out2 = HMAC(temp_key, out1 || 0x02)
 *   out3 = HMAC(temp_key, out2 || 0x03)
 * ck is read only to compute temp_key, so out1 may be ck itself (MixKey
 * writes the new chaining key over the old one).
 */
void mbsc_noise_hkdf(const uint8_t ck[MBSC_NOISE_HASHLEN], const uint8_t *ikm, size_t ikm_len,
                     uint8_t out1[MBSC_NOISE_HASHLEN], uint8_t out2[MBSC_NOISE_HASHLEN],
                     uint8_t out3[MBSC_NOISE_HASHLEN])
{
    static const uint8_t one = 0x01, two = 0x02, three = 0x03;
    uint8_t temp_key[MBSC_NOISE_HASHLEN];

    hmac2(temp_key, ck, MBSC_NOISE_HASHLEN, ikm, ikm_len, NULL, 0);
    hmac2(out1, temp_key, sizeof temp_key, &one, 1, NULL, 0);
    hmac2(out2, temp_key, sizeof temp_key, out1, MBSC_NOISE_HASHLEN, &two, 1);
    if (out3 != NULL)
        hmac2(out3, temp_key, sizeof temp_key, out2, MBSC_NOISE_HASHLEN, &three, 1);
    mbsc_wipe(temp_key, sizeof temp_key);
}
