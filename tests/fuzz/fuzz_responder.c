/* SPDX-License-Identifier: ISC */
/*
 * fuzz_responder.c - a slave session fed arbitrary message-1 bytes.
 *
 * Input byte 0 picks the mode:
 *   even: the rest is fed to a fresh slave as it is, in two pieces (byte 1
 *         says where to cut), as a master (or anyone) could send it;
 *   odd:  "crafted": byte 1 picks the initiator's static key (the allowed
 *         master, or a key in no allow-list) and its PSK (the slave's, or
 *         another); the rest is the message-1 payload, which this harness
 *         encrypts into a genuine Noise IKpsk2 message 1 and frames.  That
 *         reaches the slave's offer parsing with any payload at all.
 *
 * Properties, for every input:
 *   - a failed slave has emitted nothing (its output is empty);
 *   - the slave emits at most one frame, and if it does, that frame is a
 *     message 2 (48 bytes of Noise plus the 1-byte choice) answering a
 *     message 1 from the allowed master (the harness decrypts message 1
 *     with the slave's key to know): only an allowed master key reaches
 *     the end of the handshake; an established slave names that master;
 * and for crafted inputs, where the harness knows the answer from
 * docs/design.md's rules (version 1, count 1..16, no trailing bytes, first
 * offered id the slave allows, ids 0 / unknown / repeated skipped):
 *   - a valid offer from the allowed master gets exactly one message 2,
 *     which the harness's initiator opens, with the expected cipher id;
 *     the harness then confirms the keys as the master does (an empty
 *     frame, docs/design.md "Key confirmation") and the slave must be
 *     established with the allow-list's name for it;
 *   - anything else (stranger key, bad offer, no common cipher) fails the
 *     slave, and it emits nothing.
 * A wrong PSK is not the slave's to see (docs/design.md): with psk2 it only
 * affects message 2, which the harness's initiator then fails to open.
 *
 * The slave allows the ciphers given by input byte 1's high bits, so that
 * "no common cipher" is reachable.
 */
#include <string.h>

#include <sodium.h>

#include "fuzz_common.h"
#include "noise/noise.h"
#include "record/record.h"
#include "session/session_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    return 0;
}

/* docs/design.md "Precise rules": the id the slave must choose, or 0 for failure. */
static unsigned expected_choice(const uint8_t *p, size_t n, unsigned allowed_mask)
{
    size_t i, count;

    if (n < 2 || p[0] != 1)
        return 0;
    count = p[1];
    if (count < 1 || count > 16 || n != 2 + count)
        return 0;
    for (i = 0; i < count; i++) {
        unsigned id = p[2 + i];
        if (id >= 1 && id <= 4 && (allowed_mask & (1u << id)) != 0)
            return id;
    }
    return 0;
}

/*
 * Did the allowed master send the message 1 that starts wire?  Read with a
 * responder of our own that holds the slave's key (the harness's oracle).
 */
static int sent_by_master(const uint8_t *wire, size_t len)
{
    uint8_t payload[MBSC_MAX_FRAME_BODY];
    const uint8_t *rs;
    size_t body, plen = 0;
    mbsc_noise r;
    int ok;

    if (len < 2)
        return 0;
    body = (size_t)wire[0] << 8 | wire[1];
    if (len - 2 < body)
        return 0;
    FUZZ_CHECK(mbsc_noise_init(&r, MBSC_NOISE_IKPSK2, 0, (const uint8_t *)MBSC_PROLOGUE,
                               strlen(MBSC_PROLOGUE), fuzz_keys.slave.private_key, NULL,
                               NULL) == MBSC_OK);
    ok = mbsc_noise_read_message(&r, wire + 2, body, payload, sizeof payload, &plen) == MBSC_OK &&
         (rs = mbsc_noise_remote_static(&r)) != NULL &&
         memcmp(rs, fuzz_keys.master.public_key, 32) == 0;
    mbsc_noise_wipe(&r);
    return ok;
}

/*
 * Key confirmation (docs/design.md): finish the handshake as the master would,
 * with an empty frame sealed under the new keys; the slave must then be
 * established with the allowed master as its peer.
 */
static void confirm(mbsc_session *s, mbsc_noise *ini, unsigned id)
{
    uint8_t k_i2r[32], k_r2i[32], frame[MBSC_FRAME_OVERHEAD];
    struct mbsc_record_dir tx;
    size_t n = 0;
    long len;
    const char *name;

    FUZZ_CHECK(mbsc_noise_split(ini, k_i2r, k_r2i, NULL) == MBSC_OK);
    FUZZ_CHECK(mbsc_record_init(&tx, mbsc_cipher_by_id(id), k_i2r) == MBSC_OK);
    len = mbsc_record_seal(&tx, frame, sizeof frame, NULL, 0);
    FUZZ_CHECK(len == (long)sizeof frame);
    FUZZ_ASSERT(
        fuzz_feed(s, frame, sizeof frame, NULL, 0, &n) == MBSC_OK && mbsc_session_established(s),
        "slave not established by the master's confirmation (error %d)", mbsc_session_error(s));
    name = mbsc_session_peer_name(s);
    FUZZ_ASSERT(name != NULL && strcmp(name, "master") == 0, "peer name is not the allow-list's");
    mbsc_record_wipe(&tx);
    sodium_memzero(k_i2r, sizeof k_i2r);
    sodium_memzero(k_r2i, sizeof k_r2i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = {data, size};
    uint8_t mode = fuzz_byte(&in), opt = fuzz_byte(&in);
    unsigned allowed[4], n_allowed = 0, mask = 0, id, expect = 0;
    uint8_t frame[2 + MBSC_NOISE_MAX_MESSAGE];
    const uint8_t *wire;
    size_t wire_len, out_len, i;
    const uint8_t *out;
    mbsc_noise ini;
    int crafted = mode & 1, allowed_key = 0, same_psk = 1, rc;
    mbsc_config *cfg;
    mbsc_session *s;

    /* Slave policy: ids whose bit is set in opt's high nibble; none = all. */
    for (id = 1; id <= 4; id++)
        if ((opt >> (3 + id)) & 1u) {
            allowed[n_allowed++] = id;
            mask |= 1u << id;
        }
    if (n_allowed == 0)
        mask = 0x1e;
    cfg = fuzz_slave_config(n_allowed ? allowed : NULL, n_allowed);
    s = fuzz_session(cfg);

    if (crafted) {
        uint8_t psk[32];
        const uint8_t *payload;
        size_t plen, mlen = 0;

        allowed_key = (opt & 1) == 0;
        same_psk = (opt & 2) == 0;
        memset(psk, same_psk ? 0 : 0x5a, sizeof psk);
        payload = fuzz_take(&in, in.n, &plen);
        FUZZ_CHECK(mbsc_noise_init(&ini, MBSC_NOISE_IKPSK2, 1, (const uint8_t *)MBSC_PROLOGUE,
                                   strlen(MBSC_PROLOGUE),
                                   allowed_key ? fuzz_keys.master.private_key
                                               : fuzz_keys.stranger.private_key,
                                   fuzz_keys.slave.public_key, psk) == MBSC_OK);
        FUZZ_CHECK(mbsc_noise_set_ephemeral_for_testing(&ini, fuzz_keys.master_e) == MBSC_OK);
        if (plen > MBSC_MAX_FRAME_BODY - 96)
            plen = MBSC_MAX_FRAME_BODY - 96;
        FUZZ_CHECK(mbsc_noise_write_message(&ini, payload, plen, frame + 2, sizeof frame - 2,
                                            &mlen) == MBSC_OK);
        frame[0] = (uint8_t)(mlen >> 8);
        frame[1] = (uint8_t)mlen;
        wire = frame;
        wire_len = mlen + 2;
        expect = allowed_key ? expected_choice(payload, plen, mask) : 0;
        rc = fuzz_feed(s, wire, wire_len, NULL, 0, &i);
    } else {
        size_t cut;
        wire = in.p;
        wire_len = in.n;
        cut = wire_len == 0 ? 0 : opt % (wire_len + 1);
        rc = fuzz_feed(s, wire, cut, NULL, 0, &i);
        if (rc == MBSC_OK)
            rc = fuzz_feed(s, wire + cut, wire_len - cut, NULL, 0, &i);
    }

    out = mbsc_session_output(s, &out_len);
    /* A failed slave emits nothing. */
    if (rc != MBSC_OK || mbsc_session_error(s) != MBSC_OK)
        FUZZ_ASSERT(out_len == 0, "failed slave (%d) has %zu bytes of output", rc, out_len);
    /* At most one frame, a message 2, and only to the allowed master: the
     * harness decrypts the first frame's message 1 with the slave's key to
     * learn who sent it (the slave itself names its peer only once the
     * session is confirmed). */
    if (out_len != 0) {
        FUZZ_ASSERT(fuzz_count_frames(out, out_len) == 1, "slave output is not one frame");
        FUZZ_ASSERT(out_len == 2 + 48 + 1, "slave frame of %zu bytes is not a message 2", out_len);
        FUZZ_ASSERT(sent_by_master(wire, wire_len), "slave answered a message 1 that is not "
                                                    "from the allowed master");
    }
    if (mbsc_session_established(s)) {
        uint8_t peer[32];
        FUZZ_ASSERT(mbsc_session_peer_public_key(s, peer) == MBSC_OK &&
                        memcmp(peer, fuzz_keys.master.public_key, 32) == 0,
                    "established with a peer that is not the allowed master");
    }
    if (crafted) {
        if (expect == 0) {
            FUZZ_ASSERT(mbsc_session_error(s) != MBSC_OK && out_len == 0,
                        "slave accepted a message 1 it must refuse (error %d, %zu bytes out)",
                        mbsc_session_error(s), out_len);
        } else {
            uint8_t choice[8];
            size_t clen = 0;
            FUZZ_ASSERT(mbsc_session_error(s) == MBSC_OK && out_len == 51,
                        "slave refused a valid message 1 (error %d)", mbsc_session_error(s));
            rc = mbsc_noise_read_message(&ini, out + 2, out_len - 2, choice, sizeof choice, &clen);
            if (same_psk) {
                FUZZ_ASSERT(rc == MBSC_OK && clen == 1 && choice[0] == expect,
                            "message 2 chose %u, expected %u (rc %d)", clen ? choice[0] : 0, expect,
                            rc);
                confirm(s, &ini, expect);
            } else {
                FUZZ_ASSERT(rc != MBSC_OK, "message 2 opened with a different PSK");
            }
        }
        mbsc_noise_wipe(&ini);
    }
    mbsc_session_free(s);
    mbsc_config_free(cfg);
    return 0;
}
