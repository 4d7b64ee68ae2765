/*
 * session.c - the sans-I/O engine: frames in, frames out, the handshake
 * (noise/) and the record layer (record/) tied together.  DESIGN.md
 * "Wire protocol, version 1"; docs/protocol.md.
 *
 * Input is reassembled into whole frames (2-byte length, then the body);
 * a frame that is already whole in the caller's buffer is opened from
 * there without a copy.  Output is one linear buffer that sealed frames
 * are appended to and the caller drains.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "noise/noise.h"
#include "record/record.h"
#include "session/session_internal.h"

/* Room for two largest frames: a reply can be queued while one is in flight. */
#define OUTPUT_CAP (2u * (MBSC_FRAME_HEADER_BYTES + MBSC_MAX_FRAME_BODY))

/* Handshake payloads (DESIGN.md): version, count, ids / one chosen id. */
#define OFFER_HEADER_BYTES 2u

enum session_state {
    AWAIT_MESSAGE1, /* slave, before the master's first message */
    AWAIT_MESSAGE2, /* master, after sending message 1 */
    ESTABLISHED,
    FAILED
};

struct mbsc_session {
    enum mbsc_role role;
    enum session_state state;
    int error;

    /* Policy, copied from the config (the allow-list is borrowed). */
    const mbsc_allowlist *allowlist;
    uint8_t ciphers[MBSC_MAX_CIPHER_OFFER];
    size_t n_ciphers;

    /* Peer identity and session facts. */
    uint8_t peer_key[MBSC_KEY_BYTES];
    int has_peer_key;
    char peer_name[MBSC_ALLOWLIST_NAME_MAX + 1];
    char peer_role[MBSC_ALLOWLIST_NAME_MAX + 1];
    int has_peer_name, has_peer_role;
    uint8_t handshake_hash[MBSC_NOISE_HASHLEN];
    const mbsc_cipher *cipher;

    mbsc_noise noise; /* wiped once the handshake is over */
    struct mbsc_record_dir tx, rx;

    /* A frame being reassembled: header, then body. */
    uint8_t in[MBSC_FRAME_HEADER_BYTES + MBSC_MAX_FRAME_BODY];
    size_t in_len;

    /* The opened payload waiting for mbsc_session_recv(). */
    uint8_t payload[MBSC_MAX_FRAME_BODY];
    size_t payload_len;
    int has_payload;

    /* Bytes to send: out[out_start .. out_end). */
    uint8_t out[OUTPUT_CAP];
    size_t out_start, out_end;
};

/* ---- failure ------------------------------------------------------------ */

/*
 * The first error ends the session: every secret goes, the pending output
 * is dropped (a slave does not answer a failed handshake) and the error
 * sticks.  Returns the error.
 */
static int fail(mbsc_session *s, int error)
{
    if (s->state == FAILED)
        return s->error;
    mbsc_noise_wipe(&s->noise);
    mbsc_record_wipe(&s->tx);
    mbsc_record_wipe(&s->rx);
    mbsc_wipe(s->in, sizeof s->in);
    mbsc_wipe(s->out, sizeof s->out);
    mbsc_wipe(s->handshake_hash, sizeof s->handshake_hash);
    /* An authenticated payload already opened stays deliverable. */
    if (!s->has_payload)
        mbsc_wipe(s->payload, sizeof s->payload);
    s->in_len = 0;
    s->out_start = s->out_end = 0;
    s->cipher = NULL;
    s->state = FAILED;
    s->error = error;
    return error;
}

/* ---- output ------------------------------------------------------------- */

/* Make room for need bytes at the end of the output, or say it cannot. */
static int reserve_output(mbsc_session *s, size_t need)
{
    if (OUTPUT_CAP - s->out_end >= need)
        return 1;
    if (s->out_start > 0) {
        memmove(s->out, s->out + s->out_start, s->out_end - s->out_start);
        s->out_end -= s->out_start;
        s->out_start = 0;
    }
    return OUTPUT_CAP - s->out_end >= need;
}

/* Append a handshake message as one frame. */
static int write_handshake(mbsc_session *s, const uint8_t *payload, size_t payload_len)
{
    size_t cap, len = 0;
    uint8_t *frame;
    int rc;

    if (!reserve_output(s, MBSC_FRAME_HEADER_BYTES + MBSC_MAX_FRAME_BODY))
        return MBSC_ERR_WOULD_BLOCK; /* cannot happen: handshakes come first */
    frame = s->out + s->out_end;
    cap = MBSC_MAX_FRAME_BODY;
    rc = mbsc_noise_write_message(&s->noise, payload, payload_len,
                                  frame + MBSC_FRAME_HEADER_BYTES, cap, &len);
    if (rc != MBSC_OK)
        return rc;
    mbsc_store16_be(frame, (uint16_t)len);
    s->out_end += MBSC_FRAME_HEADER_BYTES + len;
    return MBSC_OK;
}

/* ---- handshake ---------------------------------------------------------- */

static int offered(const uint8_t *ids, size_t n, unsigned id)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* Split the handshake into the two record directions. */
static int finish_handshake(mbsc_session *s)
{
    uint8_t i2r[MBSC_NOISE_KEYLEN], r2i[MBSC_NOISE_KEYLEN];
    int rc;

    rc = mbsc_noise_split(&s->noise, i2r, r2i, s->handshake_hash);
    if (rc == MBSC_OK) {
        /* The first Split() key protects master-to-slave traffic. */
        int master = s->role == MBSC_ROLE_MASTER;
        rc = mbsc_record_init(&s->tx, s->cipher, master ? i2r : r2i);
        if (rc == MBSC_OK)
            rc = mbsc_record_init(&s->rx, s->cipher, master ? r2i : i2r);
    }
    mbsc_wipe(i2r, sizeof i2r);
    mbsc_wipe(r2i, sizeof r2i);
    mbsc_noise_wipe(&s->noise);
    if (rc != MBSC_OK)
        return rc;
    s->state = ESTABLISHED;
    return MBSC_OK;
}

/*
 * Slave: message 1 carries the master's static key and its cipher offer.
 * Check the key against the allow-list before answering anything.
 */
static int handle_message1(mbsc_session *s, const uint8_t *body, size_t body_len)
{
    uint8_t *offer = s->payload;
    size_t offer_len = 0, count, i;
    const char *name = NULL, *role = NULL;
    const uint8_t *rs;
    uint8_t chosen = 0;
    int rc;

    rc = mbsc_noise_read_message(&s->noise, body, body_len, offer, sizeof s->payload,
                                 &offer_len);
    if (rc != MBSC_OK)
        return rc;
    rs = mbsc_noise_remote_static(&s->noise);
    if (rs == NULL)
        return MBSC_ERR_HANDSHAKE_MESSAGE;
    if (mbsc_allowlist_find(s->allowlist, rs, &name, &role) < 0)
        return MBSC_ERR_UNKNOWN_PEER;
    /* Only an allowed key counts as the peer's identity. */
    memcpy(s->peer_key, rs, MBSC_KEY_BYTES);
    s->has_peer_key = 1;
    if (name != NULL) {
        snprintf(s->peer_name, sizeof s->peer_name, "%s", name);
        s->has_peer_name = 1;
    }
    if (role != NULL) {
        snprintf(s->peer_role, sizeof s->peer_role, "%s", role);
        s->has_peer_role = 1;
    }

    if (offer_len < 1 || offer[0] != MBSC_PROTOCOL_VERSION)
        return MBSC_ERR_BAD_VERSION;
    if (offer_len < OFFER_HEADER_BYTES)
        return MBSC_ERR_BAD_OFFER;
    count = offer[1];
    if (count < 1 || count > MBSC_MAX_CIPHER_OFFER || offer_len != OFFER_HEADER_BYTES + count)
        return MBSC_ERR_BAD_OFFER;
    /* The master's order decides; ids we do not know or allow are skipped. */
    for (i = 0; i < count && chosen == 0; i++)
        if (offered(s->ciphers, s->n_ciphers, offer[OFFER_HEADER_BYTES + i]))
            chosen = offer[OFFER_HEADER_BYTES + i];
    mbsc_wipe(s->payload, offer_len);
    if (chosen == 0)
        return MBSC_ERR_NO_COMMON_CIPHER;
    s->cipher = mbsc_cipher_by_id(chosen);

    rc = write_handshake(s, &chosen, 1);
    if (rc != MBSC_OK)
        return rc;
    return finish_handshake(s);
}

/* Master: message 2 carries the slave's choice, which we must have offered. */
static int handle_message2(mbsc_session *s, const uint8_t *body, size_t body_len)
{
    size_t len = 0;
    int rc;

    rc = mbsc_noise_read_message(&s->noise, body, body_len, s->payload, sizeof s->payload,
                                 &len);
    if (rc == MBSC_ERR_HANDSHAKE_DECRYPT)
        /* Only the psk token separates a good reply from this one, unless it
         * was altered in transit: name the likely cause. */
        return MBSC_ERR_PSK_MISMATCH;
    if (rc != MBSC_OK)
        return rc;
    if (len != 1 || !offered(s->ciphers, s->n_ciphers, s->payload[0]))
        return MBSC_ERR_BAD_CHOICE;
    s->cipher = mbsc_cipher_by_id(s->payload[0]);
    mbsc_wipe(s->payload, len);
    return finish_handshake(s);
}

/* ---- one whole frame ---------------------------------------------------- */

static int handle_frame(mbsc_session *s, const uint8_t *body, size_t body_len)
{
    long n;

    switch (s->state) {
    case AWAIT_MESSAGE1:
        return handle_message1(s, body, body_len);
    case AWAIT_MESSAGE2:
        return handle_message2(s, body, body_len);
    case ESTABLISHED:
        n = mbsc_record_open(&s->rx, s->payload, body, body_len);
        if (n < 0)
            return (int)n;
        s->payload_len = (size_t)n;
        s->has_payload = 1;
        return MBSC_OK;
    case FAILED:
        break;
    }
    return s->error;
}

/* ---- public API ------------------------------------------------------------ */

static mbsc_session *session_create(const mbsc_config *cfg, const uint8_t *e_priv, int *err)
{
    mbsc_session *s;
    int master, rc;

    if (err != NULL)
        *err = MBSC_OK;
    if (cfg == NULL) {
        if (err != NULL)
            *err = MBSC_ERR_INVALID_ARG;
        return NULL;
    }
    master = cfg->role == MBSC_ROLE_MASTER;
    if (!cfg->has_keypair || (master ? !cfg->has_peer_key : cfg->allowlist == NULL)) {
        if (err != NULL)
            *err = MBSC_ERR_STATE;
        return NULL;
    }
    s = calloc(1, sizeof *s);
    if (s == NULL) {
        if (err != NULL)
            *err = MBSC_ERR_NOMEM;
        return NULL;
    }
    s->role = cfg->role;
    s->allowlist = cfg->allowlist;
    memcpy(s->ciphers, cfg->ciphers, cfg->n_ciphers);
    s->n_ciphers = cfg->n_ciphers;
    if (master) {
        memcpy(s->peer_key, cfg->peer_key, MBSC_KEY_BYTES);
        s->has_peer_key = 1;
    }

    rc = mbsc_noise_init(&s->noise, MBSC_NOISE_IKPSK2, master, (const uint8_t *)MBSC_PROLOGUE,
                         strlen(MBSC_PROLOGUE), cfg->keypair.private_key,
                         master ? cfg->peer_key : NULL, cfg->has_psk ? cfg->psk : NULL);
    if (rc == MBSC_OK && e_priv != NULL)
        rc = mbsc_noise_set_ephemeral_for_testing(&s->noise, e_priv);
    if (rc == MBSC_OK && master) {
        /* Message 1: version, count, our ids in order of preference. */
        uint8_t offer[OFFER_HEADER_BYTES + MBSC_MAX_CIPHER_OFFER];
        offer[0] = MBSC_PROTOCOL_VERSION;
        offer[1] = (uint8_t)s->n_ciphers;
        memcpy(offer + OFFER_HEADER_BYTES, s->ciphers, s->n_ciphers);
        rc = write_handshake(s, offer, OFFER_HEADER_BYTES + s->n_ciphers);
    }
    if (rc != MBSC_OK) {
        if (err != NULL)
            *err = rc;
        mbsc_session_free(s);
        return NULL;
    }
    s->state = master ? AWAIT_MESSAGE2 : AWAIT_MESSAGE1;
    return s;
}

MBSC_API mbsc_session *mbsc_session_new(const mbsc_config *cfg, int *err)
{
    return session_create(cfg, NULL, err);
}

mbsc_session *mbsc_session_new_for_testing(const mbsc_config *cfg,
                                           const uint8_t e_priv[MBSC_KEY_BYTES], int *err)
{
    return session_create(cfg, e_priv, err);
}

MBSC_API void mbsc_session_free(mbsc_session *s)
{
    if (s == NULL)
        return;
    mbsc_wipe(s, sizeof *s);
    free(s);
}

MBSC_API const uint8_t *mbsc_session_output(mbsc_session *s, size_t *len)
{
    static const uint8_t nothing[1];

    if (s == NULL) {
        *len = 0;
        return nothing;
    }
    *len = s->out_end - s->out_start;
    return s->out + s->out_start;
}

MBSC_API void mbsc_session_output_consumed(mbsc_session *s, size_t n)
{
    size_t pending;

    if (s == NULL)
        return;
    pending = s->out_end - s->out_start;
    s->out_start += n < pending ? n : pending;
    if (s->out_start == s->out_end)
        s->out_start = s->out_end = 0;
}

MBSC_API int mbsc_session_feed(mbsc_session *s, const uint8_t *in, size_t len,
                               size_t *consumed)
{
    size_t pos = 0;
    int rc = MBSC_OK;

    if (consumed != NULL)
        *consumed = 0;
    if (s == NULL || consumed == NULL || (in == NULL && len != 0))
        return MBSC_ERR_INVALID_ARG;
    if (s->state == FAILED)
        return s->error;

    while (pos < len && !s->has_payload) {
        size_t body_len, take;

        /* The length prefix, possibly split across calls. */
        if (s->in_len < MBSC_FRAME_HEADER_BYTES) {
            s->in[s->in_len++] = in[pos++];
            if (s->in_len < MBSC_FRAME_HEADER_BYTES)
                continue;
            body_len = mbsc_load16_be(s->in);
            /* Checked before a single body byte is read. */
            if (body_len > MBSC_MAX_FRAME_BODY ||
                (s->state == ESTABLISHED && body_len < MBSC_TAG_BYTES)) {
                rc = MBSC_ERR_FRAME_LENGTH;
                break;
            }
        }
        body_len = mbsc_load16_be(s->in);

        if (s->in_len == MBSC_FRAME_HEADER_BYTES && len - pos >= body_len) {
            /* The whole body is in the caller's buffer: no copy. */
            rc = handle_frame(s, in + pos, body_len);
            pos += body_len;
            s->in_len = 0;
        } else {
            size_t have = s->in_len - MBSC_FRAME_HEADER_BYTES;
            take = body_len - have < len - pos ? body_len - have : len - pos;
            memcpy(s->in + s->in_len, in + pos, take);
            s->in_len += take;
            pos += take;
            if (s->in_len - MBSC_FRAME_HEADER_BYTES < body_len)
                continue;
            rc = handle_frame(s, s->in + MBSC_FRAME_HEADER_BYTES, body_len);
            s->in_len = 0;
        }
        if (rc != MBSC_OK)
            break;
    }
    *consumed = pos;
    return rc == MBSC_OK ? MBSC_OK : fail(s, rc);
}

MBSC_API int mbsc_session_feed_eof(mbsc_session *s)
{
    if (s == NULL)
        return MBSC_ERR_INVALID_ARG;
    return fail(s, s->in_len > 0 ? MBSC_ERR_TRUNCATED : MBSC_ERR_PEER_CLOSED);
}

MBSC_API int mbsc_session_recv(mbsc_session *s, uint8_t *out, size_t cap, size_t *len)
{
    if (s == NULL || len == NULL)
        return MBSC_ERR_INVALID_ARG;
    *len = 0;
    if (s->has_payload) {
        /* Payloads opened before a later failure are still delivered. */
        if (cap < s->payload_len)
            return MBSC_ERR_BUFFER_TOO_SMALL;
        if (s->payload_len > 0)
            memcpy(out, s->payload, s->payload_len);
        *len = s->payload_len;
        mbsc_wipe(s->payload, s->payload_len);
        s->has_payload = 0;
        s->payload_len = 0;
        return 1;
    }
    if (s->state == FAILED)
        return s->error;
    return 0;
}

MBSC_API int mbsc_session_send(mbsc_session *s, const uint8_t *payload, size_t len)
{
    long n;

    if (s == NULL || (payload == NULL && len != 0))
        return MBSC_ERR_INVALID_ARG;
    if (s->state == FAILED)
        return s->error;
    if (s->state != ESTABLISHED)
        return MBSC_ERR_STATE;
    if (len > MBSC_MAX_PAYLOAD)
        return MBSC_ERR_PAYLOAD_TOO_LONG;
    if (!reserve_output(s, len + MBSC_FRAME_OVERHEAD))
        return MBSC_ERR_WOULD_BLOCK;
    n = mbsc_record_seal(&s->tx, s->out + s->out_end, OUTPUT_CAP - s->out_end, payload, len);
    if (n < 0)
        return fail(s, (int)n);
    s->out_end += (size_t)n;
    return MBSC_OK;
}

MBSC_API int mbsc_session_established(const mbsc_session *s)
{
    return s != NULL && s->state == ESTABLISHED;
}

MBSC_API int mbsc_session_error(const mbsc_session *s)
{
    if (s == NULL)
        return MBSC_ERR_INVALID_ARG;
    return s->state == FAILED ? s->error : MBSC_OK;
}

MBSC_API enum mbsc_role mbsc_session_role(const mbsc_session *s)
{
    return s->role;
}

MBSC_API const mbsc_cipher *mbsc_session_cipher(const mbsc_session *s)
{
    return s != NULL && s->state == ESTABLISHED ? s->cipher : NULL;
}

MBSC_API int mbsc_session_peer_public_key(const mbsc_session *s,
                                          uint8_t public_key[MBSC_KEY_BYTES])
{
    if (s == NULL || public_key == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (!s->has_peer_key)
        return MBSC_ERR_STATE;
    memcpy(public_key, s->peer_key, MBSC_KEY_BYTES);
    return MBSC_OK;
}

MBSC_API const char *mbsc_session_peer_name(const mbsc_session *s)
{
    return s != NULL && s->has_peer_name ? s->peer_name : NULL;
}

MBSC_API const char *mbsc_session_peer_role(const mbsc_session *s)
{
    return s != NULL && s->has_peer_role ? s->peer_role : NULL;
}

MBSC_API int mbsc_session_handshake_hash(const mbsc_session *s, uint8_t hash[64])
{
    if (s == NULL || hash == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (s->state != ESTABLISHED)
        return MBSC_ERR_STATE;
    memcpy(hash, s->handshake_hash, sizeof s->handshake_hash);
    return MBSC_OK;
}

MBSC_API size_t mbsc_session_footprint(void)
{
    return sizeof(struct mbsc_session);
}
