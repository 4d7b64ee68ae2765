/* SPDX-License-Identifier: ISC */
/*
 * session.c - the sans-I/O engine: frames in, frames out, the handshake
 * (noise/) and the record layer (record/) tied together.  docs/design.md
 * "Layers"; the bytes are in docs/protocol.md.
 *
 * Input is one linear buffer that the driver reads into directly
 * (mbsc_session_input_buf/ack) or that mbsc_session_feed() copies into;
 * whole frames are opened from it in order, one payload at a time.  Output
 * is one linear buffer that sealed frames are appended to and the caller
 * drains.
 *
 * Key confirmation (docs/protocol.md): a slave derives its keys when
 * message 1 checks out, but message 1 can be replayed by anyone who saw it.
 * Only a master that holds the ephemeral key of this handshake can seal a
 * transport frame under the new keys, so the slave counts the session as
 * established, and names its peer, only once the first transport frame from
 * the master has opened.  The master sends an empty keep-alive right after
 * message 2 for that purpose; the slave's engine consumes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "noise/noise.h"
#include "record/record.h"
#include "session/session_internal.h"

/* Handshake payloads (docs/protocol.md): version, count, ids / one chosen id. */
#define OFFER_MAX_BYTES (MBSC_OFFER_HEADER_BYTES + MBSC_MAX_CIPHER_OFFER)

/* The wire constants (mbsc/wire.h) are the Noise layer's sizes. */
_Static_assert(MBSC_HANDSHAKE_HASH_BYTES == MBSC_NOISE_HASHLEN, "handshake hash is BLAKE2b's");
_Static_assert(MBSC_DIRECTION_KEY_BYTES == MBSC_NOISE_KEYLEN, "Split() gives 32-byte keys");

/*
 * The longest handshake message of Noise_IKpsk2: message 1 is e, s
 * (encrypted, with its tag) and the encrypted offer (with its tag).  Every
 * session can buffer it, whatever its largest payload.
 */
#define HANDSHAKE_MAX_BODY                                                                         \
    (2u * MBSC_NOISE_DHLEN + MBSC_NOISE_TAGLEN + OFFER_MAX_BYTES + MBSC_NOISE_TAGLEN)

/*
 * Keystream buffered ahead per direction: one whole largest frame (its
 * one-time key and payload, rounded up to 16 bytes; the implementations
 * keep partial blocks themselves, so nothing is lost between refills), so
 * that a refilled buffer covers the next frame.  Bounded for sessions that
 * carry large payloads, whose frames beyond it take keystream from the
 * cipher directly.
 */
#define KEYSTREAM_MAX_BYTES 1024u

/* Alignment of a session's allocation and of its buffers (see buffers[]). */
#define SESSION_ALIGN 16u

/*
 * Sizes of the buffers of a session whose payloads are at most max_payload
 * bytes.  Output and input each hold two largest frames: a reply can be
 * queued while one is in flight, and one read takes a pipelined frame
 * behind a partial one.
 */
struct session_layout {
    size_t max_body;                     /* largest frame body buffered */
    size_t payload_cap, in_cap, out_cap; /* opened payload, input, output */
    size_t ks_cap;                       /* keystream per direction */
    size_t total;                        /* all of the above, both directions */
};

static struct session_layout layout_for(size_t max_payload)
{
    struct session_layout l;
    size_t frame, ks = MBSC_RECORD_KEYSTREAM_PER_FRAME(max_payload);

    l.max_body = max_payload + MBSC_TAG_BYTES;
    if (l.max_body < HANDSHAKE_MAX_BODY)
        l.max_body = HANDSHAKE_MAX_BODY;
    frame = MBSC_FRAME_HEADER_BYTES + l.max_body;
    l.payload_cap = max_payload > OFFER_MAX_BYTES ? max_payload : OFFER_MAX_BYTES;
    l.in_cap = 2u * frame;
    l.out_cap = 2u * frame;
    ks = (ks + 15u) & ~(size_t)15u;
    l.ks_cap = ks < KEYSTREAM_MAX_BYTES ? ks : KEYSTREAM_MAX_BYTES;
    l.total = l.payload_cap + l.in_cap + l.out_cap + 2u * l.ks_cap;
    return l;
}

enum session_state {
    AWAIT_MESSAGE1, /* slave, before the master's first message */
    AWAIT_MESSAGE2, /* master, after sending message 1 */
    CONFIRMING,     /* slave, keys derived, before the master's first frame */
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
    /* Slave: the driver's check of message 1's ephemeral key, for replays. */
    mbsc_session_replay_fn replay_fn;
    void *replay_user;
    /* A key refused by the allow-list (public), for the operator's log. */
    uint8_t refused_key[MBSC_KEY_BYTES];
    int has_refused_key;
    uint8_t handshake_hash[MBSC_NOISE_HASHLEN];
    const mbsc_cipher *cipher;

    /* The handshake state until Split(), then the two record directions. */
    union {
        mbsc_noise noise; /* wiped once the handshake is over */
        struct {
            struct mbsc_record_dir tx, rx;
        } rec;
    } sec;

    size_t max_payload;        /* transport payloads sent and accepted */
    struct session_layout lay; /* sizes of the buffers below */

    /* Received bytes not yet opened: in[in_start .. in_end). */
    uint8_t *in;
    size_t in_start, in_end;

    /* The opened payload waiting for mbsc_session_recv(). */
    uint8_t *payload;
    size_t payload_len;
    int has_payload;

    /* Bytes to send: out[out_start .. out_end). */
    uint8_t *out;
    size_t out_start, out_end;

    /* Keystream generated ahead, one buffer per direction (record.h). */
    uint8_t *ks_tx, *ks_rx;

    /* ks_tx, ks_rx, in, out, payload: sized from max_payload at creation,
     * in an allocation aligned to SESSION_ALIGN (mbsc_session_create). */
    _Alignas(SESSION_ALIGN) uint8_t buffers[];
};

/* The allocation of a session: the struct and its buffers, rounded up to
 * SESSION_ALIGN as aligned_alloc() wants. */
static size_t session_bytes(const struct session_layout *lay)
{
    return (sizeof(struct mbsc_session) + lay->total + SESSION_ALIGN - 1u) &
           ~(size_t)(SESSION_ALIGN - 1u);
}

#define NOISE(s) (&(s)->sec.noise)
#define TX(s)    (&(s)->sec.rec.tx)
#define RX(s)    (&(s)->sec.rec.rx)

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
    /* The handshake state or both directions, whichever is live. */
    mbsc_wipe(&s->sec, sizeof s->sec);
    /* Both keystream buffers, input and output: all before the payload. */
    mbsc_wipe(s->buffers, s->lay.total - s->lay.payload_cap);
    mbsc_wipe(s->handshake_hash, sizeof s->handshake_hash);
    /* A failed session names nobody: its peer was never confirmed, or is gone. */
    mbsc_wipe(s->peer_key, sizeof s->peer_key);
    mbsc_wipe(s->peer_name, sizeof s->peer_name);
    mbsc_wipe(s->peer_role, sizeof s->peer_role);
    s->has_peer_key = s->has_peer_name = s->has_peer_role = 0;
    /* An authenticated payload already opened stays deliverable. */
    if (!s->has_payload)
        mbsc_wipe(s->payload, s->lay.payload_cap);
    s->in_start = s->in_end = 0;
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
    if (s->lay.out_cap - s->out_end >= need)
        return 1;
    if (s->out_start > 0) {
        memmove(s->out, s->out + s->out_start, s->out_end - s->out_start);
        s->out_end -= s->out_start;
        s->out_start = 0;
    }
    return s->lay.out_cap - s->out_end >= need;
}

/* Append a handshake message as one frame. */
static int write_handshake(mbsc_session *s, const uint8_t *payload, size_t payload_len)
{
    size_t cap, len = 0;
    uint8_t *frame;
    int rc;

    if (!reserve_output(s, MBSC_FRAME_HEADER_BYTES + HANDSHAKE_MAX_BODY))
        return MBSC_ERR_WOULD_BLOCK; /* cannot happen: handshakes come first */
    frame = s->out + s->out_end;
    cap = HANDSHAKE_MAX_BODY;
    rc = mbsc_noise_write_message(NOISE(s), payload, payload_len, frame + MBSC_FRAME_HEADER_BYTES,
                                  cap, &len);
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

    rc = mbsc_noise_split(NOISE(s), i2r, r2i, s->handshake_hash);
    /* The directions take the handshake state's place: it goes first. */
    mbsc_noise_wipe(NOISE(s));
    if (rc == MBSC_OK) {
        /* The first Split() key protects master-to-slave traffic. */
        int master = s->role == MBSC_ROLE_MASTER;
        rc = mbsc_record_init_buffered(TX(s), s->cipher, master ? i2r : r2i, s->ks_tx,
                                       s->lay.ks_cap);
        if (rc == MBSC_OK)
            rc = mbsc_record_init_buffered(RX(s), s->cipher, master ? r2i : i2r, s->ks_rx,
                                           s->lay.ks_cap);
    }
    mbsc_wipe(i2r, sizeof i2r);
    mbsc_wipe(r2i, sizeof r2i);
    if (rc != MBSC_OK)
        return rc;
    if (s->role == MBSC_ROLE_SLAVE) {
        s->state = CONFIRMING; /* until the master's first frame opens */
        return MBSC_OK;
    }
    s->state = ESTABLISHED;
    /* Key confirmation for the slave: an empty frame, right behind nothing
     * (message 1 is sent), so it can share a segment with the first request. */
    return mbsc_session_send(s, NULL, 0);
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

    /* Message 1 opens with the master's ephemeral key, in the clear (Noise "e"):
     * a replay is caught here, before it costs a single DH. */
    if (s->replay_fn != NULL && body_len >= MBSC_KEY_BYTES && s->replay_fn(s->replay_user, body))
        return MBSC_ERR_REPLAYED;
    rc = mbsc_noise_read_message(NOISE(s), body, body_len, offer, s->lay.payload_cap, &offer_len);
    if (rc != MBSC_OK)
        return rc;
    rs = mbsc_noise_remote_static(NOISE(s));
    if (rs == NULL)
        return MBSC_ERR_HANDSHAKE_MESSAGE;
    if (mbsc_allowlist_find(s->allowlist, rs, &name, &role) < 0) {
        memcpy(s->refused_key, rs, MBSC_KEY_BYTES);
        s->has_refused_key = 1;
        return MBSC_ERR_UNKNOWN_PEER;
    }
    /* Only an allowed key counts as the peer's identity (reported once confirmed). */
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
    if (offer_len < MBSC_OFFER_HEADER_BYTES)
        return MBSC_ERR_BAD_OFFER;
    count = offer[1];
    if (count < 1 || count > MBSC_MAX_CIPHER_OFFER || offer_len != MBSC_OFFER_HEADER_BYTES + count)
        return MBSC_ERR_BAD_OFFER;
    /* The master's order decides; ids we do not know or allow are skipped. */
    for (i = 0; i < count && chosen == 0; i++)
        if (offered(s->ciphers, s->n_ciphers, offer[MBSC_OFFER_HEADER_BYTES + i]))
            chosen = offer[MBSC_OFFER_HEADER_BYTES + i];
    mbsc_wipe(s->payload, offer_len);
    if (chosen == 0)
        return MBSC_ERR_NO_COMMON_CIPHER;
    s->cipher = mbsc_cipher_by_id(chosen);

    rc = write_handshake(s, &chosen, MBSC_CHOICE_BYTES);
    if (rc != MBSC_OK)
        return rc;
    return finish_handshake(s);
}

/* Master: message 2 carries the slave's choice, which we must have offered. */
static int handle_message2(mbsc_session *s, const uint8_t *body, size_t body_len)
{
    size_t len = 0;
    int rc;

    rc = mbsc_noise_read_message(NOISE(s), body, body_len, s->payload, s->lay.payload_cap, &len);
    if (rc == MBSC_ERR_HANDSHAKE_DECRYPT)
        /* Only the psk token separates a good reply from this one, unless it
         * was altered in transit: name the likely cause. */
        return MBSC_ERR_PSK_MISMATCH;
    if (rc != MBSC_OK)
        return rc;
    if (len != MBSC_CHOICE_BYTES || !offered(s->ciphers, s->n_ciphers, s->payload[0]))
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
    case AWAIT_MESSAGE1: return handle_message1(s, body, body_len);
    case AWAIT_MESSAGE2: return handle_message2(s, body, body_len);
    case CONFIRMING:
    case ESTABLISHED:
        n = mbsc_record_open(RX(s), s->payload, body, body_len);
        if (n < 0)
            return (int)n;
        if (s->state == CONFIRMING) {
            /* The master holds this handshake's keys: not a replay. */
            s->state = ESTABLISHED;
            if (n == 0)
                return MBSC_OK; /* the confirmation keep-alive is ours, not the caller's */
        }
        s->payload_len = (size_t)n;
        s->has_payload = 1;
        return MBSC_OK;
    case FAILED: break;
    }
    return s->error;
}

/* ---- public API ------------------------------------------------------------ */

mbsc_session *mbsc_session_create(const mbsc_config *cfg, mbsc_session_noise_hook hook,
                                  const void *hook_arg, int *err)
{
    struct session_layout lay;
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
    lay = layout_for(cfg->max_payload);
    s = aligned_alloc(SESSION_ALIGN, session_bytes(&lay));
    if (s == NULL) {
        if (err != NULL)
            *err = MBSC_ERR_NOMEM;
        return NULL;
    }
    memset(s, 0, session_bytes(&lay));
    s->lay = lay;
    s->max_payload = cfg->max_payload;
    /* The keystream first, 16-byte aligned like buffers[] (ks_cap is a
     * multiple of 16): record.c's 16-byte words then never straddle a
     * 4 KiB page, which costs about 10 ns a frame when one does. */
    s->ks_tx = s->buffers;
    s->ks_rx = s->ks_tx + lay.ks_cap;
    s->in = s->ks_rx + lay.ks_cap;
    s->out = s->in + lay.in_cap;
    s->payload = s->out + lay.out_cap;
    s->role = cfg->role;
    s->allowlist = cfg->allowlist;
    memcpy(s->ciphers, cfg->ciphers, cfg->n_ciphers);
    s->n_ciphers = cfg->n_ciphers;
    if (master) {
        memcpy(s->peer_key, cfg->peer_key, MBSC_KEY_BYTES);
        s->has_peer_key = 1;
    }

    rc = mbsc_noise_init(NOISE(s), MBSC_NOISE_IKPSK2, master, (const uint8_t *)MBSC_PROLOGUE,
                         strlen(MBSC_PROLOGUE), cfg->keypair.private_key,
                         master ? cfg->peer_key : NULL, cfg->has_psk ? cfg->psk : NULL);
    if (rc == MBSC_OK && hook != NULL)
        rc = hook(NOISE(s), hook_arg);
    if (rc == MBSC_OK && master) {
        /* Message 1: version, count, our ids in order of preference. */
        uint8_t offer[MBSC_OFFER_HEADER_BYTES + MBSC_MAX_CIPHER_OFFER];
        offer[0] = MBSC_PROTOCOL_VERSION;
        offer[1] = (uint8_t)s->n_ciphers;
        memcpy(offer + MBSC_OFFER_HEADER_BYTES, s->ciphers, s->n_ciphers);
        rc = write_handshake(s, offer, MBSC_OFFER_HEADER_BYTES + s->n_ciphers);
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
    return mbsc_session_create(cfg, NULL, NULL, err);
}

struct mbsc_record_dir *mbsc_session_record_dir(mbsc_session *s, int sending)
{
    return sending ? TX(s) : RX(s);
}

MBSC_API void mbsc_session_free(mbsc_session *s)
{
    if (s == NULL)
        return;
    mbsc_wipe(s, session_bytes(&s->lay));
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

/* ---- input ----------------------------------------------------------------- */

/* Body length of the frame at the head of the input (its header must be there). */
static size_t head_body_len(const mbsc_session *s)
{
    return mbsc_load16_be(s->in + s->in_start);
}

/*
 * A frame length is checked before a single body byte is waited for: a
 * handshake message must fit the buffers, a transport frame must carry a
 * tag and at most the configured largest payload.
 */
static int check_frame_length(const mbsc_session *s, size_t body_len)
{
    if (body_len > s->lay.max_body)
        return MBSC_ERR_FRAME_LENGTH;
    if ((s->state == CONFIRMING || s->state == ESTABLISHED) &&
        (body_len < MBSC_TAG_BYTES || body_len - MBSC_TAG_BYTES > s->max_payload))
        return MBSC_ERR_FRAME_LENGTH;
    return MBSC_OK;
}

/* Open whole frames from the input until a payload waits or bytes run out. */
static int process_input(mbsc_session *s)
{
    int rc = MBSC_OK;

    while (s->state != FAILED && !s->has_payload) {
        size_t avail = s->in_end - s->in_start, body_len;

        if (avail < MBSC_FRAME_HEADER_BYTES)
            break;
        body_len = head_body_len(s);
        rc = check_frame_length(s, body_len);
        if (rc != MBSC_OK)
            break;
        if (avail < MBSC_FRAME_HEADER_BYTES + body_len)
            break;
        rc = handle_frame(s, s->in + s->in_start + MBSC_FRAME_HEADER_BYTES, body_len);
        s->in_start += MBSC_FRAME_HEADER_BYTES + body_len;
        if (s->in_start == s->in_end)
            s->in_start = s->in_end = 0;
        if (rc != MBSC_OK)
            break;
    }
    if (rc != MBSC_OK)
        return fail(s, rc);
    return s->state == FAILED ? s->error : MBSC_OK;
}

/* Bytes until the next frame boundary of the input (at least 1). */
static size_t bytes_to_boundary(const mbsc_session *s)
{
    size_t avail = s->in_end - s->in_start;

    if (avail < MBSC_FRAME_HEADER_BYTES)
        return MBSC_FRAME_HEADER_BYTES - avail;
    return MBSC_FRAME_HEADER_BYTES + head_body_len(s) - avail;
}

MBSC_API uint8_t *mbsc_session_input_buf(mbsc_session *s, size_t *len)
{
    static uint8_t nothing[1];

    if (len == NULL)
        return nothing;
    *len = 0;
    if (s == NULL || s->state == FAILED)
        return nothing;
    if (s->in_start > 0) {
        /* Only a partial frame (or frames behind a waiting payload) remain. */
        memmove(s->in, s->in + s->in_start, s->in_end - s->in_start);
        s->in_end -= s->in_start;
        s->in_start = 0;
    }
    *len = s->lay.in_cap - s->in_end;
    return s->in + s->in_end;
}

MBSC_API int mbsc_session_input_ack(mbsc_session *s, size_t n)
{
    if (s == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (s->state == FAILED)
        return s->error;
    if (n > s->lay.in_cap - s->in_end)
        return MBSC_ERR_INVALID_ARG; /* more than input_buf offered: nothing changes */
    s->in_end += n;
    return process_input(s);
}

MBSC_API int mbsc_session_feed(mbsc_session *s, const uint8_t *in, size_t len, size_t *consumed)
{
    size_t pos = 0;
    int rc = MBSC_OK;

    if (consumed != NULL)
        *consumed = 0;
    if (s == NULL || consumed == NULL || (in == NULL && len != 0))
        return MBSC_ERR_INVALID_ARG;
    if (s->state == FAILED)
        return s->error;

    /*
     * Copy up to one frame boundary at a time, so that feeding stops right
     * after the frame that opened a payload, as the caller expects.
     */
    while (pos < len && !s->has_payload && rc == MBSC_OK) {
        size_t room, take = bytes_to_boundary(s);
        uint8_t *dst = mbsc_session_input_buf(s, &room);

        if (take > len - pos)
            take = len - pos;
        if (take > room)
            take = room;
        if (take == 0)
            break; /* frames wait behind a payload */
        memcpy(dst, in + pos, take);
        pos += take;
        rc = mbsc_session_input_ack(s, take);
    }
    *consumed = pos;
    return rc;
}

MBSC_API int mbsc_session_feed_eof(mbsc_session *s)
{
    if (s == NULL)
        return MBSC_ERR_INVALID_ARG;
    return fail(s, s->in_end > s->in_start ? MBSC_ERR_TRUNCATED : MBSC_ERR_PEER_CLOSED);
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
        (void)mbsc_session_payload_ack(s); /* a later failure shows on the next call */
        return 1;
    }
    if (s->state == FAILED)
        return s->error;
    return 0;
}

size_t mbsc_session_pending_payloads(const mbsc_session *s)
{
    size_t n, at;

    if (s == NULL || !s->has_payload)
        return 0;
    n = 1;
    /* A failed session opens nothing more: only the opened payload is left. */
    if (s->state == FAILED)
        return n;
    for (at = s->in_start; s->in_end - at >= MBSC_FRAME_HEADER_BYTES;) {
        size_t body_len = mbsc_load16_be(s->in + at);

        if (check_frame_length(s, body_len) != MBSC_OK ||
            s->in_end - at - MBSC_FRAME_HEADER_BYTES < body_len)
            break;
        n++;
        at += MBSC_FRAME_HEADER_BYTES + body_len;
    }
    return n;
}

MBSC_API const uint8_t *mbsc_session_payload(const mbsc_session *s, size_t *len)
{
    if (len != NULL)
        *len = 0;
    if (s == NULL || len == NULL || !s->has_payload)
        return NULL;
    *len = s->payload_len;
    return s->payload;
}

MBSC_API int mbsc_session_payload_ack(mbsc_session *s)
{
    if (s == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (s->has_payload) {
        mbsc_wipe(s->payload, s->payload_len);
        s->has_payload = 0;
        s->payload_len = 0;
    }
    /* Frames that arrived behind the payload open now. */
    return process_input(s);
}

MBSC_API unsigned mbsc_session_state(const mbsc_session *s)
{
    unsigned st = 0;

    if (s == NULL)
        return MBSC_SESSION_CLOSED;
    if (s->out_end > s->out_start)
        st |= MBSC_SESSION_SEND;
    if (s->has_payload)
        st |= MBSC_SESSION_PAYLOAD;
    if (s->state == FAILED)
        return st | MBSC_SESSION_CLOSED;
    if (s->state == ESTABLISHED)
        st |= MBSC_SESSION_ESTABLISHED;
    if (s->in_end - s->in_start < s->lay.in_cap)
        st |= MBSC_SESSION_RECV;
    return st;
}

MBSC_API void mbsc_session_set_replay_check(mbsc_session *s, mbsc_session_replay_fn fn, void *user)
{
    if (s == NULL || s->role != MBSC_ROLE_SLAVE)
        return;
    s->replay_fn = fn;
    s->replay_user = user;
}

MBSC_API int mbsc_session_refused_key(const mbsc_session *s, uint8_t public_key[MBSC_KEY_BYTES])
{
    if (s == NULL || public_key == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (!s->has_refused_key)
        return MBSC_ERR_STATE;
    memcpy(public_key, s->refused_key, MBSC_KEY_BYTES);
    return MBSC_OK;
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
    if (len > s->max_payload)
        return MBSC_ERR_PAYLOAD_TOO_LONG;
    if (!reserve_output(s, len + MBSC_FRAME_OVERHEAD))
        return MBSC_ERR_WOULD_BLOCK;
    n = mbsc_record_seal(TX(s), s->out + s->out_end, s->lay.out_cap - s->out_end, payload, len);
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

MBSC_API int mbsc_session_peer_public_key(const mbsc_session *s, uint8_t public_key[MBSC_KEY_BYTES])
{
    if (s == NULL || public_key == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (!s->has_peer_key || (s->role == MBSC_ROLE_SLAVE && s->state != ESTABLISHED))
        return MBSC_ERR_STATE;
    memcpy(public_key, s->peer_key, MBSC_KEY_BYTES);
    return MBSC_OK;
}

void mbsc_session_use_allowlist(mbsc_session *s, const mbsc_allowlist *al)
{
    if (s != NULL && s->role == MBSC_ROLE_SLAVE && al != NULL)
        s->allowlist = al;
}

int mbsc_session_claimed_key(const mbsc_session *s, uint8_t key[MBSC_KEY_BYTES])
{
    if (s == NULL || s->role != MBSC_ROLE_SLAVE || !s->has_peer_key)
        return MBSC_ERR_STATE;
    memcpy(key, s->peer_key, MBSC_KEY_BYTES);
    return MBSC_OK;
}

MBSC_API const char *mbsc_session_peer_name(const mbsc_session *s)
{
    return s != NULL && s->state == ESTABLISHED && s->has_peer_name ? s->peer_name : NULL;
}

MBSC_API const char *mbsc_session_peer_role(const mbsc_session *s)
{
    return s != NULL && s->state == ESTABLISHED && s->has_peer_role ? s->peer_role : NULL;
}

MBSC_API int mbsc_session_handshake_hash(const mbsc_session *s,
                                         uint8_t hash[MBSC_HANDSHAKE_HASH_BYTES])
{
    if (s == NULL || hash == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (s->state != ESTABLISHED)
        return MBSC_ERR_STATE;
    memcpy(hash, s->handshake_hash, sizeof s->handshake_hash);
    return MBSC_OK;
}

MBSC_API void mbsc_session_refill(mbsc_session *s)
{
    size_t frame_keystream;

    if (s == NULL || s->state != ESTABLISHED)
        return;
    /* Top up when less than one largest frame's keystream waits. */
    frame_keystream = MBSC_RECORD_KEYSTREAM_PER_FRAME(s->max_payload);
    mbsc_record_refill(TX(s), frame_keystream);
    mbsc_record_refill(RX(s), frame_keystream);
    /* A failed refill (a rekey that could not start its cipher) ends the session. */
    if (TX(s)->error != MBSC_OK || RX(s)->error != MBSC_OK)
        (void)fail(s, TX(s)->error != MBSC_OK ? TX(s)->error : RX(s)->error);
}

size_t mbsc_session_footprint_for(size_t max_payload)
{
    struct session_layout lay = layout_for(max_payload);

    return session_bytes(&lay);
}

MBSC_API size_t mbsc_session_footprint(void)
{
    return mbsc_session_footprint_for(MBSC_DEFAULT_MAX_PAYLOAD);
}
