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

/* The labels of mbsc/wire.h, without their NUL. */
static const uint8_t stream_label[sizeof MBSC_STREAM_LABEL - 1] = MBSC_STREAM_LABEL;
static const uint8_t rekey_label[sizeof MBSC_REKEY_LABEL - 1] = MBSC_REKEY_LABEL;

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

/* Every secret of the direction: the key, the cipher state, the buffered keystream. */
static void wipe_secrets(struct mbsc_record_dir *d)
{
    if (d->ks != NULL)
        mbsc_wipe(d->ks, d->ks_cap);
    d->ks_pos = d->ks_end = 0;
    mbsc_wipe(&d->state, sizeof d->state);
    d->impl = NULL;
    mbsc_wipe(d->k, sizeof d->k);
}

/* Record the first failure and destroy every secret of the direction. */
static long poison(struct mbsc_record_dir *d, int error)
{
    wipe_secrets(d);
    d->error = error;
    return error;
}

/* The cipher under k, in the direction's compact state (mbsc_record_derive_stream's bytes). */
static int start_stream(struct mbsc_record_dir *d)
{
    uint8_t input[sizeof stream_label + 1];
    uint8_t out[64]; /* cipher key || IV || unused */
    size_t kb = mbsc_cipher_key_bytes(d->cipher), ib = mbsc_cipher_iv_bytes(d->cipher);
    int rc;

    memcpy(input, stream_label, sizeof stream_label);
    input[sizeof stream_label] = (uint8_t)mbsc_cipher_id(d->cipher);
    crypto_generichash_blake2b(out, sizeof out, input, sizeof input, d->k,
                               MBSC_DIRECTION_KEY_BYTES);
    rc = mbsc_cipher_start(&d->impl, d->state.bytes, sizeof d->state.bytes, d->cipher, out, kb,
                           out + kb, ib);
    mbsc_wipe(out, sizeof out);
    return rc;
}

/* Generate keystream straight from the cipher: out = in XOR keystream. */
static void cipher_xor(struct mbsc_record_dir *d, uint8_t *out, const uint8_t *in, size_t n)
{
    if (n != 0)
        d->impl->xor_stream(d->state.bytes, out, in, n);
}

/* Fill the buffer behind what waits in it (moved to the front). */
static void fill_buffer(struct mbsc_record_dir *d)
{
    size_t left = d->ks_end - d->ks_pos;

    if (d->ks_pos > 0) {
        memmove(d->ks, d->ks + d->ks_pos, left);
        d->ks_pos = 0;
        d->ks_end = left;
    }
    memset(d->ks + d->ks_end, 0, d->ks_cap - d->ks_end);
    cipher_xor(d, d->ks + d->ks_end, d->ks + d->ks_end, d->ks_cap - d->ks_end);
    d->ks_end = d->ks_cap;
}

/*
 * The rekey that precedes frames 65536, 131072, ...: due when the counter
 * has entered an epoch that the key does not belong to yet.  Unused
 * keystream of the old key is discarded with its state.
 */
static int rekey_if_due(struct mbsc_record_dir *d)
{
    uint64_t epoch = d->counter / MBSC_REKEY_AFTER_FRAMES;
    int rc;

    if (epoch == d->epoch)
        return MBSC_OK;
    if (d->ks != NULL)
        mbsc_wipe(d->ks, d->ks_cap);
    d->ks_pos = d->ks_end = 0;
    mbsc_record_next_key(d->k);
    rc = start_stream(d);
    if (rc != MBSC_OK)
        return rc;
    d->epoch = epoch;
    return MBSC_OK;
}

int mbsc_record_init_buffered(struct mbsc_record_dir *d, const mbsc_cipher *c,
                              const uint8_t k[MBSC_DIRECTION_KEY_BYTES], uint8_t *ks, size_t ks_cap)
{
    int rc;

    memset(d, 0, sizeof *d);
    if (ks != NULL && ks_cap != 0) {
        d->ks = ks;
        d->ks_cap = ks_cap;
    }
    if (c == NULL || k == NULL)
        return (int)poison(d, MBSC_ERR_INVALID_ARG);
    d->cipher = c;
    memcpy(d->k, k, sizeof d->k);
    rc = start_stream(d);
    if (rc != MBSC_OK)
        return (int)poison(d, rc);
    if (d->ks != NULL)
        fill_buffer(d);
    return MBSC_OK;
}

int mbsc_record_init(struct mbsc_record_dir *d, const mbsc_cipher *c,
                     const uint8_t k[MBSC_DIRECTION_KEY_BYTES])
{
    return mbsc_record_init_buffered(d, c, k, NULL, 0);
}

void mbsc_record_refill(struct mbsc_record_dir *d, size_t want)
{
    int rc;

    if (d->error != MBSC_OK || d->ks == NULL || d->counter == UINT64_MAX)
        return;
    rc = rekey_if_due(d);
    if (rc != MBSC_OK) {
        (void)poison(d, rc);
        return;
    }
    if (want == 0 || want > d->ks_cap)
        want = d->ks_cap;
    if (d->ks_end - d->ks_pos < want)
        fill_buffer(d);
}

/*
 * out = in XOR ks, sixteen bytes at a time, zeroing ks as it goes: on the
 * critical path once the keystream is buffered, so the wipe of the used
 * keystream shares the pass.  Those stores are kept by a compiler barrier
 * at the end (the technique of explicit_bzero): ks may be a stack scratch
 * that is never read again.  The 16-byte words are GNU C generic vectors
 * (one SSE2 or NEON register, two 64-bit words elsewhere): gcc -O2 does
 * not vectorise a loop of unknown length by itself.  memcpy moves the
 * words (no casts of byte pointers; XOR does not care about byte order);
 * out == in is allowed.
 */
typedef uint8_t xor_word __attribute__((vector_size(16)));

static void xor_and_clear(uint8_t *out, const uint8_t *in, uint8_t *ks, size_t n)
{
    static const xor_word zero;
    size_t j = 0;

    for (; j + 16 <= n; j += 16) {
        xor_word x, y;
        memcpy(&x, in + j, 16);
        memcpy(&y, ks + j, 16);
        x ^= y;
        memcpy(out + j, &x, 16);
        memcpy(ks + j, &zero, 16);
    }
    for (; j < n; j++) {
        out[j] = (uint8_t)(in[j] ^ ks[j]);
        ks[j] = 0;
    }
    /* As if the zeros were read: the compiler may not drop the stores
     * into a scratch array that is not read again (open's last use). */
    __asm__ __volatile__("" : : "r"(ks) : "memory");
}

/*
 * Wipe the one-time key where it was used, in the buffer or in scratch:
 * two 16-byte words and the same barrier.  Not sodium_memzero(): its one
 * 32-byte store costs 10 ns when the key straddles a 4 KiB page (the
 * buffer at page offset 4080), 138 instead of 128 ns for a 260-byte seal
 * ahead, which mbsc-bench showed for whichever cipher's buffer fell
 * there.  The session keeps its buffers 16-byte aligned (session.c), so
 * these words never straddle one.
 */
static void clear_onetime_key(uint8_t otk[MBSC_ONETIME_KEY_BYTES])
{
    static const xor_word zero;

    MBSC_STATIC_ASSERT(MBSC_ONETIME_KEY_BYTES == 2 * sizeof(xor_word),
                       "the one-time key is two 16-byte words");
    memcpy(otk, &zero, 16);
    memcpy(otk + 16, &zero, 16);
    __asm__ __volatile__("" : : "r"(otk) : "memory");
}

/*
 * out = in XOR the next n keystream bytes (in NULL: the keystream itself):
 * the buffered bytes first, wiped as they are used, then the cipher.
 */
static void take_keystream(struct mbsc_record_dir *d, uint8_t *out, const uint8_t *in, size_t n)
{
    size_t have = d->ks_end - d->ks_pos, t = n < have ? n : have;

    if (t != 0) {
        uint8_t *ks = d->ks + d->ks_pos; /* t != 0: there is a buffer */
        if (in == NULL) {
            memcpy(out, ks, t);
            mbsc_wipe(ks, t);
        } else {
            xor_and_clear(out, in, ks, t);
        }
        d->ks_pos += t;
        if (d->ks_pos == d->ks_end)
            d->ks_pos = d->ks_end = 0;
    }
    if (t < n) {
        if (in == NULL) {
            memset(out + t, 0, n - t);
            cipher_xor(d, out + t, out + t, n - t);
        } else {
            cipher_xor(d, out + t, in + t, n - t);
        }
    }
}

/*
 * Common start of seal and open: the sticky error, the counter limit, and
 * the rekey that precedes frames 65536, 131072, ... (already done if the
 * buffer was refilled).
 */
static int begin_frame(struct mbsc_record_dir *d)
{
    int rc;

    if (d->error != MBSC_OK)
        return d->error;
    if (d->counter == UINT64_MAX)
        return (int)poison(d, MBSC_ERR_COUNTER_EXHAUSTED);
    rc = rekey_if_due(d);
    if (rc != MBSC_OK)
        return (int)poison(d, rc);
    return MBSC_OK;
}

/*
 * tag = Poly1305(otk, c || le64(n) || le64(i)).  libsodium's one-shot call
 * is cheaper than init/update/final (measured: 43 against 55 ns for a
 * 12-byte payload, 103 against 110 ns for 260 bytes; docs/bench.md), but
 * needs the input in one piece: seal lays the lengths out where the tag
 * goes (mac_input has n + 16 bytes of room), open copies the ciphertext of
 * a Modbus-sized frame to the stack (for 260 bytes the copy and one-shot
 * call took 141 ns of the critical path against 153 streaming, same
 * bench) and streams longer ones rather than hold kilobytes of stack.
 */
#define ONESHOT_OPEN_MAX 512u

static void store_lengths(uint8_t lengths[16], size_t n, uint64_t i)
{
    mbsc_store64_le(lengths, (uint64_t)n);
    mbsc_store64_le(lengths + 8, i);
}

static void tag_oneshot(uint8_t tag[MBSC_TAG_BYTES], const uint8_t otk[MBSC_ONETIME_KEY_BYTES],
                        uint8_t *mac_input, size_t n, uint64_t i)
{
    store_lengths(mac_input + n, n, i);
    crypto_onetimeauth_poly1305(tag, mac_input, (unsigned long long)n + 16u, otk);
}

static void tag_streaming(uint8_t tag[MBSC_TAG_BYTES], const uint8_t otk[MBSC_ONETIME_KEY_BYTES],
                          const uint8_t *c, size_t n, uint64_t i)
{
    crypto_onetimeauth_poly1305_state mac;
    uint8_t lengths[16];

    store_lengths(lengths, n, i);
    crypto_onetimeauth_poly1305_init(&mac, otk);
    crypto_onetimeauth_poly1305_update(&mac, c, n);
    crypto_onetimeauth_poly1305_update(&mac, lengths, sizeof lengths);
    crypto_onetimeauth_poly1305_final(&mac, tag);
    mbsc_wipe(&mac, sizeof mac);
}

static void tag_of_body(uint8_t tag[MBSC_TAG_BYTES], const uint8_t otk[MBSC_ONETIME_KEY_BYTES],
                        const uint8_t *c, size_t n, uint64_t i)
{
    if (n <= ONESHOT_OPEN_MAX) {
        uint8_t copy[ONESHOT_OPEN_MAX + 16]; /* ciphertext and lengths: public */
        memcpy(copy, c, n);
        tag_oneshot(tag, otk, copy, n, i);
    } else {
        tag_streaming(tag, otk, c, n, i);
    }
}

/*
 * The keystream of a whole frame, the one-time key then the payload's
 * (32 + n bytes), in one piece: where it waits in the buffer when the
 * buffer holds that much (the critical path once refilled ahead), else in
 * scratch: the buffered bytes first (moved, and wiped in the buffer),
 * then the cipher in one call.  One call matters: a 260-byte frame is
 * five ChaCha20 blocks, one vector batch, where a call for the key and
 * another for the payload cost a whole block for 32 bytes and a batch.
 * The bytes returned count as consumed; the caller wipes them as it uses
 * them.  NULL, with nothing consumed, for a frame too large for scratch
 * (over ONESHOT_OPEN_MAX bytes of payload) that the buffer does not
 * cover: take_keystream() then serves the key and the payload in turn.
 */
#define FRAME_SCRATCH_BYTES (MBSC_ONETIME_KEY_BYTES + ONESHOT_OPEN_MAX)

static uint8_t *frame_keystream(struct mbsc_record_dir *d, uint8_t scratch[FRAME_SCRATCH_BYTES],
                                size_t n)
{
    size_t need = MBSC_ONETIME_KEY_BYTES + n, have = d->ks_end - d->ks_pos;
    uint8_t *ks;

    if (have >= need) {
        ks = d->ks + d->ks_pos; /* need > 0: there is a buffer */
        d->ks_pos += need;
        if (d->ks_pos == d->ks_end)
            d->ks_pos = d->ks_end = 0;
        return ks;
    }
    if (need > FRAME_SCRATCH_BYTES)
        return NULL;
    if (have != 0) {
        memcpy(scratch, d->ks + d->ks_pos, have);
        mbsc_wipe(d->ks + d->ks_pos, have);
        d->ks_pos = d->ks_end = 0;
    }
    memset(scratch + have, 0, need - have);
    cipher_xor(d, scratch + have, scratch + have, need - have);
    return scratch;
}

long mbsc_record_seal(struct mbsc_record_dir *d, uint8_t *out, size_t cap, const uint8_t *payload,
                      size_t n)
{
    uint8_t scratch[FRAME_SCRATCH_BYTES];
    uint8_t otk_copy[MBSC_ONETIME_KEY_BYTES];
    uint8_t tag[MBSC_TAG_BYTES];
    uint8_t *c = out + MBSC_FRAME_HEADER_BYTES, *ks, *otk;
    int rc;

    if (d->error != MBSC_OK)
        return d->error;
    if (n > MBSC_MAX_PAYLOAD)
        return poison(d, MBSC_ERR_PAYLOAD_TOO_LONG);
    if (out == NULL || (payload == NULL && n != 0) || cap < n + MBSC_FRAME_OVERHEAD)
        return poison(d, out == NULL ? MBSC_ERR_INVALID_ARG : MBSC_ERR_BUFFER_TOO_SMALL);
    rc = begin_frame(d);
    if (rc != MBSC_OK)
        return rc;
    mbsc_store16_be(out, (uint16_t)(n + MBSC_TAG_BYTES));
    ks = frame_keystream(d, scratch, n);
    if (ks != NULL) {
        otk = ks;
        if (n != 0)
            xor_and_clear(c, payload, ks + MBSC_ONETIME_KEY_BYTES, n);
    } else {
        otk = otk_copy;
        take_keystream(d, otk, NULL, MBSC_ONETIME_KEY_BYTES);
        take_keystream(d, c, payload, n);
    }
    tag_oneshot(tag, otk, c, n, d->counter); /* the lengths sit where the tag goes */
    clear_onetime_key(otk);
    memcpy(c + n, tag, sizeof tag);
    d->counter++;
    return (long)(n + MBSC_FRAME_OVERHEAD);
}

long mbsc_record_open(struct mbsc_record_dir *d, uint8_t *payload, const uint8_t *body,
                      size_t body_len)
{
    uint8_t scratch[FRAME_SCRATCH_BYTES];
    uint8_t otk_copy[MBSC_ONETIME_KEY_BYTES];
    uint8_t tag[MBSC_TAG_BYTES];
    uint8_t *ks, *otk;
    size_t n;
    int rc, bad;

    if (d->error != MBSC_OK)
        return d->error;
    if (body_len < MBSC_TAG_BYTES || body_len > MBSC_MAX_FRAME_BODY)
        return poison(d, MBSC_ERR_FRAME_LENGTH);
    if (body == NULL || payload == NULL)
        return poison(d, MBSC_ERR_INVALID_ARG);
    n = body_len - MBSC_TAG_BYTES;
    rc = begin_frame(d);
    if (rc != MBSC_OK)
        return rc;
    /* The payload's keystream, when in one piece with the key, waits
     * unused until the tag has been verified. */
    ks = frame_keystream(d, scratch, n);
    if (ks != NULL) {
        otk = ks;
    } else {
        otk = otk_copy;
        take_keystream(d, otk, NULL, MBSC_ONETIME_KEY_BYTES);
    }
    tag_of_body(tag, otk, body, n, d->counter);
    clear_onetime_key(otk);
    /* Constant-time comparison; nothing is decrypted unless it matches. */
    bad = crypto_verify_16(tag, body + n);
#ifdef MBSC_FUZZ_MUTANT_NO_TAG_CHECK
    /* The fuzzers' mutant only (tests/fuzz/, make fuzz-mutant): with the
     * comparison gone, the frames target must find a forgery. */
    bad = 0;
#endif
    mbsc_wipe(tag, sizeof tag);
    if (bad != 0) {
        if (ks != NULL)
            mbsc_wipe(ks + MBSC_ONETIME_KEY_BYTES, n); /* scratch or buffer */
        return poison(d, MBSC_ERR_BAD_TAG);
    }
    if (ks != NULL) {
        if (n != 0)
            xor_and_clear(payload, body, ks + MBSC_ONETIME_KEY_BYTES, n);
    } else {
        take_keystream(d, payload, body, n);
    }
    d->counter++;
    return (long)n;
}

void mbsc_record_wipe(struct mbsc_record_dir *d)
{
    wipe_secrets(d);
    mbsc_wipe(d, sizeof *d);
}
