/* SPDX-License-Identifier: ISC */
/*
 * fuzz_initiator.c - a master session fed arbitrary message-2 bytes.
 *
 * Input byte 0: bit 0 picks the mode, the high nibble the master's offer
 * (ids whose bit is set, in order 1..4; none = the default offer, which
 * with the vectors' keys makes message 1 the vectors' message1_frame).
 *   even: the rest is fed to the master after its message 1, as is;
 *   odd:  "crafted": byte 1 picks the responder's static key (the slave's,
 *         or another) and PSK; the rest is the message-2 payload, which this
 *         harness's responder puts into a genuine message 2 answering the
 *         master's actual message 1.
 *
 * Properties, for every input:
 *   - the master is established only if the bytes contain a message 2
 *     that its peer could have made: for raw input, the vectors'
 *     message2_frame (when the offer is the default) is the only one the
 *     harness knows, so any other raw input must not establish it;
 *   - a failed master has no output left (message 1 was taken before);
 *   - once established, the cipher is one the master offered;
 * and for crafted inputs, from docs/design.md: the master is established iff
 * the responder was the real slave with the same PSK and the payload is
 * exactly one byte naming an offered id, and then uses that cipher.
 */
#include <string.h>

#include "fuzz_common.h"
#include "noise/noise.h"
#include "session/session_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* tests/vectors/mbsc1/protocol_vectors.json handshakes[0].message2_frame */
static const char vector_message2[] = "0031450caf709db21d5eed06864e4ad5c2656fcc2e48ea2115b3e57d7b7f"
                                      "765b1e7b9529f800bd56ddeb5b65b51f5fbdd486c7";
static uint8_t message2[51];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    fuzz_hex(message2, sizeof message2, vector_message2);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = {data, size};
    uint8_t mode = fuzz_byte(&in);
    unsigned offer[4], n_offer = 0, id, offered_mask = 0;
    uint8_t msg1[256], frame[2 + 4096];
    const uint8_t *out, *wire;
    size_t out_len, wire_len, n = 0;
    int crafted = mode & 1, expect_ok = 0, rc, ever_established, replayed_vector = 0;
    unsigned want = 0;
    mbsc_config *cfg;
    mbsc_session *m;

    for (id = 1; id <= 4; id++)
        if ((mode >> (3 + id)) & 1u) {
            offer[n_offer++] = id;
            offered_mask |= 1u << id;
        }
    if (n_offer == 0)
        offered_mask = 0x1e;
    cfg = fuzz_master_config(n_offer ? offer : NULL, n_offer);
    m = fuzz_session(cfg);
    out = mbsc_session_output(m, &out_len);
    FUZZ_CHECK(out_len > 2 && out_len <= sizeof msg1);
    memcpy(msg1, out, out_len);
    mbsc_session_output_consumed(m, out_len);

    if (crafted) {
        uint8_t opt = fuzz_byte(&in), psk[32], offer_seen[32];
        const uint8_t *payload;
        size_t plen, olen = 0, mlen = 0;
        int real_slave = (opt & 1) == 0, same_psk = (opt & 2) == 0;
        mbsc_noise resp;

        memset(psk, same_psk ? 0 : 0xa5, sizeof psk);
        payload = fuzz_take(&in, in.n, &plen);
        if (plen > 64)
            plen = 64;
        FUZZ_CHECK(mbsc_noise_init(&resp, MBSC_NOISE_IKPSK2, 0, (const uint8_t *)MBSC_PROLOGUE,
                                   strlen(MBSC_PROLOGUE),
                                   real_slave ? fuzz_keys.slave.private_key
                                              : fuzz_keys.stranger.private_key,
                                   NULL, psk) == MBSC_OK);
        FUZZ_CHECK(mbsc_noise_set_ephemeral_for_testing(&resp, fuzz_keys.slave_e) == MBSC_OK);
        rc = mbsc_noise_read_message(&resp, msg1 + 2, out_len - 2, offer_seen, sizeof offer_seen,
                                     &olen);
        /* Only the real slave can read message 1 (it is sealed to its key). */
        FUZZ_CHECK(real_slave ? rc == MBSC_OK : rc != MBSC_OK);
        if (rc == MBSC_OK) {
            FUZZ_CHECK(mbsc_noise_write_message(&resp, payload, plen, frame + 2, sizeof frame - 2,
                                                &mlen) == MBSC_OK);
        } else {
            /* A stranger cannot answer; send the payload as a raw frame. */
            mlen = plen;
            memcpy(frame + 2, payload, plen);
        }
        frame[0] = (uint8_t)(mlen >> 8);
        frame[1] = (uint8_t)mlen;
        wire = frame;
        wire_len = mlen + 2;
        /* The one raw frame a stranger can send that the master must take:
         * the vectors' own message 2, which the real slave made for this
         * very message 1 (the harness fixes the ephemeral keys, so message 1
         * never changes).  It is a replay only a fixed ephemeral allows. */
        replayed_vector = !real_slave && (n_offer == 0 || n_offer == 4) &&
                          wire_len == sizeof message2 &&
                          memcmp(wire, message2, sizeof message2) == 0;
        expect_ok = real_slave && same_psk && plen == 1 && payload[0] <= 4 &&
                    (offered_mask & (1u << payload[0])) != 0;
        want = plen == 1 ? payload[0] : 0;
        mbsc_noise_wipe(&resp);
    } else {
        wire = in.p;
        wire_len = in.n;
    }

    /* In two steps, to see the state right after a whole first frame. */
    {
        size_t first = wire_len < 51 ? wire_len : 51;
        rc = fuzz_feed(m, wire, first, NULL, 0, &n);
        ever_established = mbsc_session_established(m);
        if (rc == MBSC_OK)
            rc = fuzz_feed(m, wire + first, wire_len - first, NULL, 0, &n);
        ever_established |= mbsc_session_established(m);
    }
    out = mbsc_session_output(m, &out_len);
    if (mbsc_session_error(m) != MBSC_OK)
        FUZZ_ASSERT(out_len == 0, "failed master has %zu bytes of output", out_len);
    if (mbsc_session_established(m)) {
        unsigned got = mbsc_cipher_id(mbsc_session_cipher(m));
        FUZZ_ASSERT(got <= 4 && (offered_mask & (1u << got)) != 0,
                    "master uses cipher %u, which it did not offer", got);
    }
    if (crafted && !replayed_vector) {
        if (expect_ok) {
            FUZZ_ASSERT(rc == MBSC_OK && mbsc_session_established(m) &&
                            mbsc_cipher_id(mbsc_session_cipher(m)) == want,
                        "master refused a valid message 2 (rc %d)", rc);
        } else {
            FUZZ_ASSERT(!mbsc_session_established(m) && mbsc_session_error(m) != MBSC_OK,
                        "master accepted a message 2 it must refuse");
        }
    } else if (mbsc_session_established(m) || ever_established) {
        /* The only message 2 the harness can know of: the vectors'. */
        /* all four ids in order is the default offer, with the same message 1 */
        FUZZ_ASSERT((n_offer == 0 || n_offer == 4) && wire_len >= 51 &&
                        memcmp(wire, message2, sizeof message2) == 0,
                    "master established by raw bytes that are not the vectors' message 2");
    }
    mbsc_session_free(m);
    mbsc_config_free(cfg);
    return 0;
}
