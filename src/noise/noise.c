/* SPDX-License-Identifier: ISC */
/*
 * noise/noise.c - Noise handshakes for 25519_ChaChaPoly_BLAKE2b.
 *
 * Noise Protocol Framework, revision 34 (2018-07-11):
 *   5.1 CipherState, 5.2 SymmetricState, 5.3 HandshakeState,
 *   7.5 IK, 7.4 NN, 9 (psk modifiers), 12.1/12.3/12.8 (the functions).
 * Vectors: tests/vectors/noise/noise_vectors.json (cacophony, snow, noise-c,
 * flynn/noise; see its README) and tests/vectors/mbsc1/.
 *
 * The patterns are a token table, so the three handshakes share one
 * WriteMessage and one ReadMessage.  Only the handshake is here: after
 * Split() mbsc uses its own record layer, so there is no transport
 * CipherState.
 *
 * Every function that holds secrets in locals leaves through one exit that
 * wipes them.  Any failure wipes the whole state and makes it refuse every
 * later call with the same code (fail() below).
 */
#include <string.h>

#include "internal.h"
#include "mbsc/init.h"
#include "noise/noise.h"

/* ---- Patterns ---------------------------------------------------------- */

enum token { T_END = 0, T_E, T_S, T_EE, T_ES, T_SE, T_SS, T_PSK };

#define MAX_MESSAGES 2
#define MAX_TOKENS   5 /* per message, the T_END sentinel included */

struct pattern {
    const char *name;        /* full protocol name, at most HASHLEN bytes */
    uint8_t pre_initiator_s; /* pre-message "-> s" */
    uint8_t pre_responder_s; /* pre-message "<- s" */
    uint8_t psk;             /* psk modifier: every `e` also does MixKey */
    uint8_t n_messages;      /* message i is sent by the initiator if i even */
    uint8_t msgs[MAX_MESSAGES][MAX_TOKENS];
};

/* clang-format off */
static const struct pattern patterns[] = {
    [MBSC_NOISE_NN] = {
        .name = "Noise_NN_25519_ChaChaPoly_BLAKE2b",
        .n_messages = 2,
        .msgs = {{T_E, T_END},                     /* -> e */
                 {T_E, T_EE, T_END}},              /* <- e, ee */
    },
    [MBSC_NOISE_IK] = {                            /* <- s ... */
        .name = "Noise_IK_25519_ChaChaPoly_BLAKE2b",
        .pre_responder_s = 1,
        .n_messages = 2,
        .msgs = {{T_E, T_ES, T_S, T_SS, T_END},    /* -> e, es, s, ss */
                 {T_E, T_EE, T_SE, T_END}},        /* <- e, ee, se */
    },
    [MBSC_NOISE_IKPSK2] = {                        /* <- s ... */
        .name = "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2b",
        .pre_responder_s = 1,
        .psk = 1,
        .n_messages = 2,
        .msgs = {{T_E, T_ES, T_S, T_SS, T_END},    /* -> e, es, s, ss */
                 {T_E, T_EE, T_SE, T_PSK, T_END}}, /* <- e, ee, se, psk */
    },
};
/* clang-format on */

/* Lifecycle (state_).  Any other value, zero included: not initialized. */
#define ST_ACTIVE   0x6e730001u /* messages left to write or read */
#define ST_COMPLETE 0x6e730002u /* all messages done, Split() allowed */
#define ST_SPLIT    0x6e730003u /* keys handed out, secrets wiped */
#define ST_FAILED   0x6e7300ffu /* wiped; error_ is returned forever */

static const struct pattern *pattern_of(const mbsc_noise *hs)
{
    return &patterns[hs->pattern_];
}

/* Does the party in role `initiator` own a static key in pattern pat? */
static int role_has_static(const struct pattern *pat, int initiator)
{
    unsigned m;
    const uint8_t *t;

    if (initiator ? pat->pre_initiator_s : pat->pre_responder_s)
        return 1;
    for (m = initiator ? 0u : 1u; m < pat->n_messages; m += 2)
        for (t = pat->msgs[m]; *t != T_END; t++)
            if (*t == T_S)
                return 1;
    return 0;
}

/* Make hs refuse every later call with err (the first error sticks). */
static int fail(mbsc_noise *hs, int err)
{
    if (hs->state_ == ST_FAILED)
        return hs->error_;
    mbsc_wipe(hs, sizeof *hs);
    hs->state_ = ST_FAILED;
    hs->error_ = err;
    return err;
}

/* Do [a, a+alen) and [b, b+blen) share a byte? */
static int overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;

    if (a == NULL || b == NULL || alen == 0 || blen == 0)
        return 0;
    return pa < pb + blen && pb < pa + alen;
}

/* ---- SymmetricState and its CipherState (spec 5.1, 5.2) ---------------- */

/* h = HASH(h || data) */
static void mix_hash(mbsc_noise *hs, const uint8_t *data, size_t len)
{
    crypto_generichash_blake2b_state st;

    crypto_generichash_blake2b_init(&st, NULL, 0, MBSC_NOISE_HASHLEN);
    crypto_generichash_blake2b_update(&st, hs->h_, sizeof hs->h_);
    if (len > 0)
        crypto_generichash_blake2b_update(&st, data, len);
    crypto_generichash_blake2b_final(&st, hs->h_, sizeof hs->h_);
    mbsc_wipe(&st, sizeof st);
}

/* ck, temp_k = HKDF(ck, ikm, 2); InitializeKey(temp_k[0..32]) */
static void mix_key(mbsc_noise *hs, const uint8_t *ikm, size_t len)
{
    uint8_t temp_k[MBSC_NOISE_HASHLEN];

    mbsc_noise_hkdf(hs->ck_, ikm, len, hs->ck_, temp_k, NULL);
    memcpy(hs->k_, temp_k, MBSC_NOISE_KEYLEN); /* truncate to 32 (spec 5.2) */
    hs->n_ = 0;
    hs->has_k_ = 1;
    mbsc_wipe(temp_k, sizeof temp_k);
}

/* ck, temp_h, temp_k = HKDF(ck, ikm, 3); MixHash(temp_h); InitializeKey */
static void mix_key_and_hash(mbsc_noise *hs, const uint8_t *ikm, size_t len)
{
    uint8_t temp_h[MBSC_NOISE_HASHLEN];
    uint8_t temp_k[MBSC_NOISE_HASHLEN];

    mbsc_noise_hkdf(hs->ck_, ikm, len, hs->ck_, temp_h, temp_k);
    mix_hash(hs, temp_h, sizeof temp_h);
    memcpy(hs->k_, temp_k, MBSC_NOISE_KEYLEN);
    hs->n_ = 0;
    hs->has_k_ = 1;
    mbsc_wipe(temp_h, sizeof temp_h);
    mbsc_wipe(temp_k, sizeof temp_k);
}

/* ChaChaPoly nonce (spec 12.3): 32 zero bits, then n little-endian. */
static void make_nonce(uint8_t nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES], uint64_t n)
{
    memset(nonce, 0, 4);
    mbsc_store64_le(nonce + 4, n);
}

MBSC_STATIC_ASSERT(crypto_aead_chacha20poly1305_IETF_NPUBBYTES == 12,
                   "IETF ChaCha20-Poly1305 nonce");
MBSC_STATIC_ASSERT(crypto_aead_chacha20poly1305_IETF_KEYBYTES == MBSC_NOISE_KEYLEN,
                   "ChaChaPoly key");
MBSC_STATIC_ASSERT(crypto_aead_chacha20poly1305_IETF_ABYTES == MBSC_NOISE_TAGLEN, "Poly1305 tag");

/*
 * EncryptAndHash: out receives len bytes, plus a tag once a key is set.
 * Without a key the plaintext is copied and still hashed (spec 5.2).
 * pt is not NULL.
 */
static int encrypt_and_hash(mbsc_noise *hs, uint8_t *out, const uint8_t *pt, size_t len)
{
    uint8_t nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];

    if (!hs->has_k_) {
        if (len > 0)
            memcpy(out, pt, len);
        mix_hash(hs, out, len);
        return MBSC_OK;
    }
    /* n = 2^64-1 is reserved (spec 5.1); a handshake never gets near it. */
    if (hs->n_ == UINT64_MAX)
        return MBSC_ERR_COUNTER_EXHAUSTED;
    make_nonce(nonce, hs->n_);
    crypto_aead_chacha20poly1305_ietf_encrypt(out, NULL, pt, len, hs->h_, sizeof hs->h_, NULL,
                                              nonce, hs->k_);
    hs->n_++;
    mix_hash(hs, out, len + MBSC_NOISE_TAGLEN);
    return MBSC_OK;
}

/*
 * DecryptAndHash: ct is len bytes (a tag included once a key is set; the
 * caller checked len >= TAGLEN then).  h is the AD, and the ciphertext (not
 * the plaintext) is hashed afterwards.  out is not NULL.
 */
static int decrypt_and_hash(mbsc_noise *hs, uint8_t *out, const uint8_t *ct, size_t len)
{
    uint8_t nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];

    if (!hs->has_k_) {
        if (len > 0)
            memcpy(out, ct, len);
        mix_hash(hs, ct, len);
        return MBSC_OK;
    }
    if (len < MBSC_NOISE_TAGLEN)
        return MBSC_ERR_HANDSHAKE_MESSAGE;
    if (hs->n_ == UINT64_MAX)
        return MBSC_ERR_COUNTER_EXHAUSTED;
    make_nonce(nonce, hs->n_);
    if (crypto_aead_chacha20poly1305_ietf_decrypt(out, NULL, NULL, ct, len, hs->h_, sizeof hs->h_,
                                                  nonce, hs->k_) != 0)
        return MBSC_ERR_HANDSHAKE_DECRYPT;
    hs->n_++;
    mix_hash(hs, ct, len);
    return MBSC_OK;
}

/* ---- DH (spec 12.1) ---------------------------------------------------- */

/*
 * out = X25519(priv, pub).  An all-zero result means pub has low order
 * (or is the identity): abort, as docs/protocol.md requires.  libsodium already
 * refuses those inputs; the explicit check keeps the rule visible and
 * independent of the libsodium version.
 */
static int dh(uint8_t out[MBSC_NOISE_DHLEN], const uint8_t priv[MBSC_NOISE_DHLEN],
              const uint8_t pub[MBSC_NOISE_DHLEN])
{
    int r = crypto_scalarmult(out, priv, pub);

    if ((r != 0) | sodium_is_zero(out, MBSC_NOISE_DHLEN))
        return MBSC_ERR_WEAK_KEY;
    return MBSC_OK;
}

/*
 * ee, es, se, ss: MixKey(DH(ours, theirs)).  The first letter names the
 * initiator's key, the second the responder's (spec 7.3), so each side
 * picks its own key and the peer's key by its role.
 */
static int dh_token(mbsc_noise *hs, uint8_t tok)
{
    uint8_t shared[MBSC_NOISE_DHLEN];
    int ours_e, theirs_e, have, ret;

    memset(shared, 0, sizeof shared);
    switch (tok) {
    case T_EE: ours_e = 1, theirs_e = 1; break;
    case T_ES: ours_e = hs->initiator_, theirs_e = !hs->initiator_; break;
    case T_SE: ours_e = !hs->initiator_, theirs_e = hs->initiator_; break;
    case T_SS: ours_e = 0, theirs_e = 0; break;
    default: ret = MBSC_ERR_STATE; goto done;
    }
    have = (ours_e ? hs->has_e_ : hs->has_s_) && (theirs_e ? hs->has_re_ : hs->has_rs_);
    if (!have) {
        ret = MBSC_ERR_STATE; /* a key the pattern promised is missing */
        goto done;
    }
    ret = dh(shared, ours_e ? hs->e_priv_ : hs->s_priv_, theirs_e ? hs->re_ : hs->rs_);
    if (ret != MBSC_OK)
        goto done;
    mix_key(hs, shared, sizeof shared);
done:
    mbsc_wipe(shared, sizeof shared);
    return ret;
}

/* ---- HandshakeState (spec 5.3) ----------------------------------------- */

/* Keys and tags the next message adds to its payload (see noise.h). */
static size_t overhead(const mbsc_noise *hs)
{
    const struct pattern *pat = pattern_of(hs);
    const uint8_t *t = pat->msgs[hs->msg_index_];
    int keyed = hs->has_k_;
    size_t n = 0;

    for (; *t != T_END; t++) {
        switch (*t) {
        case T_E:
            n += MBSC_NOISE_DHLEN;
            if (pat->psk)
                keyed = 1;
            break;
        case T_S: n += MBSC_NOISE_DHLEN + (keyed ? MBSC_NOISE_TAGLEN : 0u); break;
        default: /* ee es se ss psk: all MixKey */ keyed = 1; break;
        }
    }
    return n + (keyed ? MBSC_NOISE_TAGLEN : 0u);
}

/*
 * Is it hs's turn to write (writing = 1) or read (0)?  MBSC_OK or the
 * error to fail with.
 */
static int check_turn(const mbsc_noise *hs, int writing)
{
    int initiator_sends;

    if (hs->state_ == ST_FAILED)
        return hs->error_;
    if (hs->state_ != ST_ACTIVE || hs->pattern_ >= MBSC_ARRAY_LEN(patterns) ||
        hs->msg_index_ >= pattern_of(hs)->n_messages)
        return MBSC_ERR_STATE;
    initiator_sends = (hs->msg_index_ % 2) == 0;
    if ((initiator_sends == (hs->initiator_ != 0)) != (writing != 0))
        return MBSC_ERR_STATE;
    return MBSC_OK;
}

/* After a message: the next one, or done (secrets no longer needed go). */
static void advance(mbsc_noise *hs)
{
    hs->msg_index_++;
    if (hs->msg_index_ < pattern_of(hs)->n_messages)
        return;
    hs->state_ = ST_COMPLETE;
    mbsc_wipe(hs->k_, sizeof hs->k_);
    mbsc_wipe(hs->s_priv_, sizeof hs->s_priv_);
    mbsc_wipe(hs->e_priv_, sizeof hs->e_priv_);
    mbsc_wipe(hs->psk_, sizeof hs->psk_);
    hs->has_k_ = 0;
}

int mbsc_noise_init(mbsc_noise *hs, enum mbsc_noise_pattern p, int initiator,
                    const uint8_t *prologue, size_t prologue_len,
                    const uint8_t s_priv[MBSC_NOISE_DHLEN], const uint8_t rs_pub[MBSC_NOISE_DHLEN],
                    const uint8_t psk[MBSC_NOISE_KEYLEN])
{
    const struct pattern *pat;
    size_t name_len;
    int ret = MBSC_OK;

    if (hs == NULL)
        return MBSC_ERR_INVALID_ARG;
    mbsc_wipe(hs, sizeof *hs);
    if ((unsigned)p >= MBSC_ARRAY_LEN(patterns) || (prologue == NULL && prologue_len > 0)) {
        ret = MBSC_ERR_INVALID_ARG;
        goto done;
    }
    pat = &patterns[p];
    initiator = initiator != 0;
    /* Keys given exactly when the pattern uses them: a mix-up is a bug. */
    if ((s_priv != NULL) != role_has_static(pat, initiator) ||
        (rs_pub != NULL) != (initiator ? pat->pre_responder_s : pat->pre_initiator_s) ||
        (psk != NULL && !pat->psk)) {
        ret = MBSC_ERR_INVALID_ARG;
        goto done;
    }
    name_len = strlen(pat->name);
    if (mbsc_init() != MBSC_OK || name_len > MBSC_NOISE_HASHLEN) {
        ret = MBSC_ERR_STATE;
        goto done;
    }
    hs->pattern_ = (uint8_t)p;
    hs->initiator_ = (uint8_t)initiator;
    if (s_priv != NULL) {
        memcpy(hs->s_priv_, s_priv, MBSC_NOISE_DHLEN);
        if (crypto_scalarmult_base(hs->s_pub_, hs->s_priv_) != 0) {
            ret = MBSC_ERR_WEAK_KEY;
            goto done;
        }
        hs->has_s_ = 1;
    }
    if (rs_pub != NULL) {
        memcpy(hs->rs_, rs_pub, MBSC_NOISE_DHLEN);
        hs->has_rs_ = 1;
    }
    if (psk != NULL)
        memcpy(hs->psk_, psk, MBSC_NOISE_KEYLEN); /* else the zeros of wipe */

    /* InitializeSymmetric: a name of at most HASHLEN bytes is zero-padded,
     * not hashed.  MixHash(prologue) happens even when it is empty. */
    memcpy(hs->h_, pat->name, name_len);
    memcpy(hs->ck_, hs->h_, sizeof hs->ck_);
    mix_hash(hs, prologue, prologue_len);
    /* Pre-messages: the initiator's first, then the responder's. */
    if (pat->pre_initiator_s)
        mix_hash(hs, initiator ? hs->s_pub_ : hs->rs_, MBSC_NOISE_DHLEN);
    if (pat->pre_responder_s)
        mix_hash(hs, initiator ? hs->rs_ : hs->s_pub_, MBSC_NOISE_DHLEN);
    hs->state_ = ST_ACTIVE;
done:
    if (ret != MBSC_OK)
        ret = fail(hs, ret);
    return ret;
}

int mbsc_noise_abort(mbsc_noise *hs, int err)
{
    return hs == NULL ? MBSC_ERR_INVALID_ARG : fail(hs, err);
}

int mbsc_noise_next_overhead(const mbsc_noise *hs)
{
    if (hs == NULL || hs->state_ != ST_ACTIVE || hs->pattern_ >= MBSC_ARRAY_LEN(patterns) ||
        hs->msg_index_ >= pattern_of(hs)->n_messages)
        return MBSC_ERR_STATE;
    return (int)overhead(hs);
}

/* The `e` token of WriteMessage: a fresh key pair, sent in clear. */
static int write_e(mbsc_noise *hs, uint8_t out[MBSC_NOISE_DHLEN])
{
    if (hs->has_e_)
        return MBSC_ERR_STATE;
    if (!hs->e_fixed_)
        randombytes_buf(hs->e_priv_, sizeof hs->e_priv_);
    hs->e_fixed_ = 0;
    /* Clamping is done inside crypto_scalarmult_base. */
    if (crypto_scalarmult_base(hs->e_pub_, hs->e_priv_) != 0)
        return MBSC_ERR_WEAK_KEY;
    hs->has_e_ = 1;
    memcpy(out, hs->e_pub_, MBSC_NOISE_DHLEN);
    mix_hash(hs, hs->e_pub_, MBSC_NOISE_DHLEN);
    if (pattern_of(hs)->psk)
        mix_key(hs, hs->e_pub_, MBSC_NOISE_DHLEN); /* spec 9.2 */
    return MBSC_OK;
}

int mbsc_noise_write_message(mbsc_noise *hs, const uint8_t *payload, size_t payload_len,
                             uint8_t *out, size_t out_cap, size_t *out_len)
{
    static const uint8_t empty[1] = {0};
    const uint8_t *t;
    size_t ovh, off = 0, len;
    int ret;

    if (hs == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (out_len != NULL)
        *out_len = 0;
    if (out == NULL || out_len == NULL || (payload == NULL && payload_len > 0)) {
        ret = MBSC_ERR_INVALID_ARG;
        goto done;
    }
    ret = check_turn(hs, 1);
    if (ret != MBSC_OK)
        goto done;
    if (payload == NULL)
        payload = empty;
    ovh = overhead(hs);
    if (payload_len > MBSC_NOISE_MAX_MESSAGE - ovh) {
        ret = MBSC_ERR_PAYLOAD_TOO_LONG;
        goto done;
    }
    if (out_cap < ovh + payload_len) {
        ret = MBSC_ERR_BUFFER_TOO_SMALL;
        goto done;
    }
    if (overlap(payload, payload_len, out, out_cap)) {
        ret = MBSC_ERR_INVALID_ARG;
        goto done;
    }

    for (t = pattern_of(hs)->msgs[hs->msg_index_]; *t != T_END; t++) {
        switch (*t) {
        case T_E:
            ret = write_e(hs, out + off);
            off += MBSC_NOISE_DHLEN;
            break;
        case T_S:
            len = MBSC_NOISE_DHLEN + (hs->has_k_ ? MBSC_NOISE_TAGLEN : 0u);
            ret = hs->has_s_ ? encrypt_and_hash(hs, out + off, hs->s_pub_, MBSC_NOISE_DHLEN)
                             : MBSC_ERR_STATE;
            off += len;
            break;
        case T_PSK: mix_key_and_hash(hs, hs->psk_, sizeof hs->psk_); break;
        default: ret = dh_token(hs, *t); break;
        }
        if (ret != MBSC_OK)
            goto done;
    }
    ret = encrypt_and_hash(hs, out + off, payload, payload_len);
    if (ret != MBSC_OK)
        goto done;
    off += payload_len + (hs->has_k_ ? MBSC_NOISE_TAGLEN : 0u);
    if (off != ovh + payload_len) { /* the table and overhead() disagree */
        ret = MBSC_ERR_STATE;
        goto done;
    }
    advance(hs);
    *out_len = off;
done:
    if (ret != MBSC_OK) {
        if (out != NULL)
            mbsc_wipe(out, out_cap);
        ret = fail(hs, ret);
    }
    return ret;
}

int mbsc_noise_read_message(mbsc_noise *hs, const uint8_t *msg, size_t msg_len,
                            uint8_t *payload_out, size_t payload_cap, size_t *payload_len)
{
    uint8_t rs[MBSC_NOISE_DHLEN];
    uint8_t dummy[1];
    const uint8_t *t;
    size_t ovh, off = 0, len;
    int ret;

    if (hs == NULL)
        return MBSC_ERR_INVALID_ARG;
    memset(rs, 0, sizeof rs);
    if (payload_len != NULL)
        *payload_len = 0;
    if (msg == NULL || payload_len == NULL || (payload_out == NULL && payload_cap > 0)) {
        ret = MBSC_ERR_INVALID_ARG;
        goto done;
    }
    ret = check_turn(hs, 0);
    if (ret != MBSC_OK)
        goto done;
    ovh = overhead(hs);
    if (msg_len > MBSC_NOISE_MAX_MESSAGE || msg_len < ovh) {
        ret = MBSC_ERR_HANDSHAKE_MESSAGE;
        goto done;
    }
    if (payload_cap < msg_len - ovh) {
        ret = MBSC_ERR_BUFFER_TOO_SMALL;
        goto done;
    }
    if (overlap(msg, msg_len, payload_out, payload_cap)) {
        ret = MBSC_ERR_INVALID_ARG;
        goto done;
    }

    for (t = pattern_of(hs)->msgs[hs->msg_index_]; *t != T_END; t++) {
        switch (*t) {
        case T_E:
            if (hs->has_re_ || msg_len - off < MBSC_NOISE_DHLEN) {
                ret = hs->has_re_ ? MBSC_ERR_STATE : MBSC_ERR_HANDSHAKE_MESSAGE;
                break;
            }
            memcpy(hs->re_, msg + off, MBSC_NOISE_DHLEN);
            hs->has_re_ = 1;
            off += MBSC_NOISE_DHLEN;
            mix_hash(hs, hs->re_, MBSC_NOISE_DHLEN);
            if (pattern_of(hs)->psk)
                mix_key(hs, hs->re_, MBSC_NOISE_DHLEN); /* spec 9.2 */
            break;
        case T_S:
            len = MBSC_NOISE_DHLEN + (hs->has_k_ ? MBSC_NOISE_TAGLEN : 0u);
            if (hs->has_rs_ || msg_len - off < len) {
                ret = hs->has_rs_ ? MBSC_ERR_STATE : MBSC_ERR_HANDSHAKE_MESSAGE;
                break;
            }
            ret = decrypt_and_hash(hs, rs, msg + off, len);
            /*
             * The static key is encrypted under a key that the sender
             * derived from our static key (es in IK): when it does not
             * decrypt, the sender most likely holds a wrong public key for
             * us (or e or s were altered).  Say so, apart from a payload
             * that fails later, which can only be tampering.
             */
            if (ret == MBSC_ERR_HANDSHAKE_DECRYPT)
                ret = MBSC_ERR_WRONG_PEER_KEY;
            if (ret != MBSC_OK)
                break;
            off += len;
            memcpy(hs->rs_, rs, sizeof rs);
            hs->has_rs_ = 1;
            break;
        case T_PSK: mix_key_and_hash(hs, hs->psk_, sizeof hs->psk_); break;
        default: ret = dh_token(hs, *t); break;
        }
        if (ret != MBSC_OK)
            goto done;
    }
    /* What is left is the payload (with its tag once keyed). */
    len = msg_len - off;
    if (len != msg_len - ovh + (hs->has_k_ ? MBSC_NOISE_TAGLEN : 0u)) {
        ret = MBSC_ERR_STATE; /* the table and overhead() disagree */
        goto done;
    }
    ret = decrypt_and_hash(hs, payload_out != NULL ? payload_out : dummy, msg + off, len);
    if (ret != MBSC_OK)
        goto done;
    advance(hs);
    *payload_len = msg_len - ovh;
done:
    if (ret != MBSC_OK) {
        if (payload_out != NULL)
            mbsc_wipe(payload_out, payload_cap);
        ret = fail(hs, ret);
    }
    mbsc_wipe(rs, sizeof rs);
    mbsc_wipe(dummy, sizeof dummy);
    return ret;
}

int mbsc_noise_is_complete(const mbsc_noise *hs)
{
    return hs != NULL && (hs->state_ == ST_COMPLETE || hs->state_ == ST_SPLIT);
}

const uint8_t *mbsc_noise_remote_static(const mbsc_noise *hs)
{
    if (hs == NULL || !hs->has_rs_ ||
        (hs->state_ != ST_ACTIVE && hs->state_ != ST_COMPLETE && hs->state_ != ST_SPLIT))
        return NULL;
    return hs->rs_;
}

int mbsc_noise_split(mbsc_noise *hs, uint8_t k_initiator_to_responder[MBSC_NOISE_KEYLEN],
                     uint8_t k_responder_to_initiator[MBSC_NOISE_KEYLEN],
                     uint8_t handshake_hash[MBSC_NOISE_HASHLEN])
{
    uint8_t temp_k1[MBSC_NOISE_HASHLEN], temp_k2[MBSC_NOISE_HASHLEN];
    uint8_t rs[MBSC_NOISE_DHLEN];
    uint8_t has_rs, pattern, initiator;
    int ret = MBSC_OK;

    if (hs == NULL)
        return MBSC_ERR_INVALID_ARG;
    memset(temp_k1, 0, sizeof temp_k1);
    memset(temp_k2, 0, sizeof temp_k2);
    if (hs->state_ == ST_FAILED)
        ret = hs->error_;
    else if (k_initiator_to_responder == NULL || k_responder_to_initiator == NULL)
        ret = MBSC_ERR_INVALID_ARG;
    else if (hs->state_ != ST_COMPLETE)
        ret = MBSC_ERR_STATE;
    if (ret != MBSC_OK) {
        ret = fail(hs, ret);
        goto done;
    }
    /* temp_k1, temp_k2 = HKDF(ck, zerolen, 2), each cut to 32 bytes. */
    mbsc_noise_hkdf(hs->ck_, NULL, 0, temp_k1, temp_k2, NULL);
    memcpy(k_initiator_to_responder, temp_k1, MBSC_NOISE_KEYLEN);
    memcpy(k_responder_to_initiator, temp_k2, MBSC_NOISE_KEYLEN);
    if (handshake_hash != NULL)
        memcpy(handshake_hash, hs->h_, MBSC_NOISE_HASHLEN);

    /* Keep only what is public and still useful: the peer's identity. */
    memcpy(rs, hs->rs_, sizeof rs);
    has_rs = hs->has_rs_;
    pattern = hs->pattern_;
    initiator = hs->initiator_;
    mbsc_wipe(hs, sizeof *hs);
    memcpy(hs->rs_, rs, sizeof rs);
    hs->has_rs_ = has_rs;
    hs->pattern_ = pattern;
    hs->initiator_ = initiator;
    hs->state_ = ST_SPLIT;
done:
    mbsc_wipe(temp_k1, sizeof temp_k1);
    mbsc_wipe(temp_k2, sizeof temp_k2);
    mbsc_wipe(rs, sizeof rs);
    return ret;
}

void mbsc_noise_wipe(mbsc_noise *hs)
{
    if (hs != NULL)
        mbsc_wipe(hs, sizeof *hs);
}
