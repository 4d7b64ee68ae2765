/* SPDX-License-Identifier: ISC */
/*
 * record.c - sealing and opening mbsc/1 transport frames (see record.h and
 * docs/protocol.md).  Vectors: tests/vectors/mbsc1/protocol_vectors.json.
 */
/* The tag-check mutant exists only in the fuzzers' build, never in libmbsc. */
#if defined(MBSC_FUZZ_MUTANT_NO_TAG_CHECK) && !defined(MBSC_FUZZING_BUILD)
#error "MBSC_FUZZ_MUTANT_NO_TAG_CHECK is for the fuzz mutant build only"
#endif
#include <string.h>

#include "record/record.h"

static const uint8_t stream_label[] = {'m', 'b', 's', 'c', '/', '1', ' ',
                                       's', 't', 'r', 'e', 'a', 'm'};
static const uint8_t rekey_label[] = {'m', 'b', 's', 'c', '/', '1', ' ', 'r', 'e', 'k', 'e', 'y'};

int mbsc_record_derive_stream(mbsc_stream *st, const mbsc_cipher *c,
                              const uint8_t k[MBSC_DIRECTION_KEY_BYTES])
{
    uint8_t input[sizeof stream_label + 1];
    uint8_t out[64]; /* cipher key || IV || unused */
    size_t kb = mbsc_cipher_key_bytes(c), ib = mbsc_cipher_iv_bytes(c);
    int rc;

    MBSC_STATIC_ASSERT(MBSC_CIPHER_MAX_KEY_BYTES + MBSC_CIPHER_MAX_IV_BYTES <= 64,
                       "key and IV must fit in one BLAKE2b-512 output");
    memcpy(input, stream_label, sizeof stream_label);
    input[sizeof stream_label] = (uint8_t)mbsc_cipher_id(c);
    /* Keyed BLAKE2b (RFC 7693's own keyed mode), not HMAC. */
    crypto_generichash_blake2b(out, sizeof out, input, sizeof input, k, MBSC_DIRECTION_KEY_BYTES);
    rc = mbsc_stream_init(st, c, out, kb, out + kb, ib);
    mbsc_wipe(out, sizeof out);
    return rc;
}

void mbsc_record_next_key(uint8_t k[MBSC_DIRECTION_KEY_BYTES])
{
    uint8_t next[MBSC_DIRECTION_KEY_BYTES];

    crypto_generichash_blake2b(next, sizeof next, rekey_label, sizeof rekey_label, k,
                               MBSC_DIRECTION_KEY_BYTES);
    memcpy(k, next, sizeof next);
    mbsc_wipe(next, sizeof next);
}

/* Record the first failure and destroy every secret of the direction. */
static long poison(struct mbsc_record_dir *d, int error)
{
    mbsc_stream_wipe(&d->stream);
    mbsc_wipe(d->k, sizeof d->k);
    d->error = error;
    return error;
}

int mbsc_record_init(struct mbsc_record_dir *d, const mbsc_cipher *c,
                     const uint8_t k[MBSC_DIRECTION_KEY_BYTES])
{
    int rc;

    memset(d, 0, sizeof *d);
    if (c == NULL || k == NULL)
        return (int)poison(d, MBSC_ERR_INVALID_ARG);
    d->cipher = c;
    memcpy(d->k, k, sizeof d->k);
    rc = mbsc_record_derive_stream(&d->stream, c, d->k);
    return rc == MBSC_OK ? MBSC_OK : (int)poison(d, rc);
}

/*
 * Common start of seal and open: the sticky error, the counter limit, and
 * the rekey that precedes frames 65536, 131072, ...  Then the one-time key,
 * taken from the keystream before the payload's bytes.
 */
static int begin_frame(struct mbsc_record_dir *d, uint8_t otk[MBSC_ONETIME_KEY_BYTES])
{
    if (d->error != MBSC_OK)
        return d->error;
    if (d->counter == UINT64_MAX)
        return (int)poison(d, MBSC_ERR_COUNTER_EXHAUSTED);
    if (d->counter != 0 && d->counter % MBSC_REKEY_AFTER_FRAMES == 0) {
        int rc;
        /* Unused keystream of the old key is discarded with its state. */
        mbsc_record_next_key(d->k);
        rc = mbsc_record_derive_stream(&d->stream, d->cipher, d->k);
        if (rc != MBSC_OK)
            return (int)poison(d, rc);
    }
    memset(otk, 0, MBSC_ONETIME_KEY_BYTES);
    mbsc_stream_xor(&d->stream, otk, otk, MBSC_ONETIME_KEY_BYTES);
    return MBSC_OK;
}

/* tag = Poly1305(otk, c || le64(n) || le64(i)) */
static void compute_tag(uint8_t tag[MBSC_TAG_BYTES], const uint8_t otk[MBSC_ONETIME_KEY_BYTES],
                        const uint8_t *c, size_t n, uint64_t i)
{
    crypto_onetimeauth_poly1305_state mac;
    uint8_t lengths[16];

    mbsc_store64_le(lengths, (uint64_t)n);
    mbsc_store64_le(lengths + 8, i);
    crypto_onetimeauth_poly1305_init(&mac, otk);
    crypto_onetimeauth_poly1305_update(&mac, c, n);
    crypto_onetimeauth_poly1305_update(&mac, lengths, sizeof lengths);
    crypto_onetimeauth_poly1305_final(&mac, tag);
    mbsc_wipe(&mac, sizeof mac);
}

long mbsc_record_seal(struct mbsc_record_dir *d, uint8_t *out, size_t cap, const uint8_t *payload,
                      size_t n)
{
    uint8_t otk[MBSC_ONETIME_KEY_BYTES];
    uint8_t *c = out + MBSC_FRAME_HEADER_BYTES;
    int rc;

    if (d->error != MBSC_OK)
        return d->error;
    if (n > MBSC_MAX_PAYLOAD)
        return poison(d, MBSC_ERR_PAYLOAD_TOO_LONG);
    if (out == NULL || (payload == NULL && n != 0) || cap < n + MBSC_FRAME_OVERHEAD)
        return poison(d, out == NULL ? MBSC_ERR_INVALID_ARG : MBSC_ERR_BUFFER_TOO_SMALL);
    rc = begin_frame(d, otk);
    if (rc != MBSC_OK)
        return rc;
    mbsc_store16_be(out, (uint16_t)(n + MBSC_TAG_BYTES));
    mbsc_stream_xor(&d->stream, c, payload, n);
    compute_tag(c + n, otk, c, n, d->counter);
    mbsc_wipe(otk, sizeof otk);
    d->counter++;
    return (long)(n + MBSC_FRAME_OVERHEAD);
}

long mbsc_record_open(struct mbsc_record_dir *d, uint8_t *payload, const uint8_t *body,
                      size_t body_len)
{
    uint8_t otk[MBSC_ONETIME_KEY_BYTES];
    uint8_t tag[MBSC_TAG_BYTES];
    size_t n;
    int rc, bad;

    if (d->error != MBSC_OK)
        return d->error;
    if (body_len < MBSC_TAG_BYTES || body_len > MBSC_MAX_FRAME_BODY)
        return poison(d, MBSC_ERR_FRAME_LENGTH);
    if (body == NULL || payload == NULL)
        return poison(d, MBSC_ERR_INVALID_ARG);
    n = body_len - MBSC_TAG_BYTES;
    rc = begin_frame(d, otk);
    if (rc != MBSC_OK)
        return rc;
    compute_tag(tag, otk, body, n, d->counter);
    mbsc_wipe(otk, sizeof otk);
    /* Constant-time comparison; nothing is decrypted unless it matches. */
    bad = crypto_verify_16(tag, body + n);
#ifdef MBSC_FUZZ_MUTANT_NO_TAG_CHECK
    /* The fuzzers' mutant only (tests/fuzz/, make fuzz-mutant): with the
     * comparison gone, the frames target must find a forgery. */
    bad = 0;
#endif
    mbsc_wipe(tag, sizeof tag);
    if (bad != 0)
        return poison(d, MBSC_ERR_BAD_TAG);
    mbsc_stream_xor(&d->stream, payload, body, n);
    d->counter++;
    return (long)n;
}

void mbsc_record_wipe(struct mbsc_record_dir *d)
{
    mbsc_wipe(d, sizeof *d);
}
