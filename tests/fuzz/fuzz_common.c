/* SPDX-License-Identifier: ISC */
/*
 * fuzz_common.c - see fuzz_common.h.
 */
#include <string.h>

#include <sodium.h>

#include "fuzz_common.h"
#include "session/session_internal.h"

struct fuzz_keys fuzz_keys;

/* tests/vectors/mbsc1/protocol_vectors.json, handshakes[0]. */
#define MASTER_STATIC    "1a6176fad50ff192394a3a814e25ddde2e7661c45d6c4852d06e00c4e7b9e724"
#define MASTER_EPHEMERAL "c0e84fada39967eefd3bb891e5eb7b3a42f4998b32a9cec83dab3be3a596c32b"
#define SLAVE_STATIC     "2873291a8ce7526fc3c2a0f49746d3485487d8a45c7e0ef8efd802548e64a1c3"
#define SLAVE_EPHEMERAL  "e0ae9c7d324cee18363385a5326334f30149f7e08a380dd062a8794284fe1644"
/* Any other key: RFC 7748 section 6.1, Alice's private key. */
#define STRANGER_STATIC "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"

uint8_t fuzz_byte(struct fuzz_in *in)
{
    uint8_t b;

    if (in->n == 0)
        return 0;
    b = in->p[0];
    in->p++;
    in->n--;
    return b;
}

uint16_t fuzz_u16(struct fuzz_in *in)
{
    uint16_t hi = fuzz_byte(in);
    return (uint16_t)(hi << 8 | fuzz_byte(in));
}

const uint8_t *fuzz_take(struct fuzz_in *in, size_t want, size_t *len)
{
    const uint8_t *p = in->p;

    *len = want < in->n ? want : in->n;
    in->p += *len;
    in->n -= *len;
    return p;
}

void fuzz_hex(uint8_t *out, size_t cap, const char *hex)
{
    size_t got = 0;

    FUZZ_CHECK(sodium_hex2bin(out, cap, hex, strlen(hex), NULL, &got, NULL) == 0 && got == cap);
}

void fuzz_init(void)
{
    uint8_t sk[32];

    FUZZ_CHECK(sodium_init() >= 0);
    fuzz_hex(sk, sizeof sk, MASTER_STATIC);
    FUZZ_CHECK(mbsc_keypair_from_private(&fuzz_keys.master, sk) == MBSC_OK);
    fuzz_hex(sk, sizeof sk, SLAVE_STATIC);
    FUZZ_CHECK(mbsc_keypair_from_private(&fuzz_keys.slave, sk) == MBSC_OK);
    fuzz_hex(sk, sizeof sk, STRANGER_STATIC);
    FUZZ_CHECK(mbsc_keypair_from_private(&fuzz_keys.stranger, sk) == MBSC_OK);
    fuzz_hex(fuzz_keys.master_e, 32, MASTER_EPHEMERAL);
    fuzz_hex(fuzz_keys.slave_e, 32, SLAVE_EPHEMERAL);
    fuzz_keys.allow = mbsc_allowlist_new();
    FUZZ_CHECK(fuzz_keys.allow != NULL);
    FUZZ_CHECK(mbsc_allowlist_add(fuzz_keys.allow, fuzz_keys.master.public_key, "master",
                                  "operator") == MBSC_OK);
}

static mbsc_config *config(enum mbsc_role role, const unsigned *ciphers, size_t n)
{
    mbsc_config *cfg = mbsc_config_new(role);

    FUZZ_CHECK(cfg != NULL);
    if (role == MBSC_ROLE_MASTER) {
        FUZZ_CHECK(mbsc_config_set_keypair(cfg, &fuzz_keys.master) == MBSC_OK);
        FUZZ_CHECK(mbsc_config_set_peer_public_key(cfg, fuzz_keys.slave.public_key) == MBSC_OK);
    } else {
        FUZZ_CHECK(mbsc_config_set_keypair(cfg, &fuzz_keys.slave) == MBSC_OK);
        FUZZ_CHECK(mbsc_config_set_allowlist(cfg, fuzz_keys.allow) == MBSC_OK);
    }
    if (ciphers != NULL)
        FUZZ_CHECK(mbsc_config_set_cipher_ids(cfg, ciphers, n) == MBSC_OK);
    return cfg;
}

mbsc_config *fuzz_master_config(const unsigned *ciphers, size_t n)
{
    return config(MBSC_ROLE_MASTER, ciphers, n);
}

mbsc_config *fuzz_slave_config(const unsigned *ciphers, size_t n)
{
    return config(MBSC_ROLE_SLAVE, ciphers, n);
}

mbsc_session *fuzz_session(const mbsc_config *cfg)
{
    int err = MBSC_OK;
    const uint8_t *e =
        mbsc_config_role(cfg) == MBSC_ROLE_MASTER ? fuzz_keys.master_e : fuzz_keys.slave_e;
    mbsc_session *s = mbsc_session_new_for_testing(cfg, e, &err);

    FUZZ_CHECK(s != NULL && err == MBSC_OK);
    return s;
}

int fuzz_feed(mbsc_session *s, const uint8_t *in, size_t len, struct fuzz_payload *got, size_t cap,
              size_t *ngot)
{
    static struct fuzz_payload scratch;
    size_t pos = 0;

    for (;;) {
        size_t used = 0, plen = 0;
        int rc = MBSC_OK, r;

        if (pos < len)
            rc = mbsc_session_feed(s, in + pos, len - pos, &used);
        pos += used;
        /* take whatever was opened, even when the feed then failed */
        while ((r = mbsc_session_recv(s, scratch.data, sizeof scratch.data, &plen)) == 1) {
            if (got != NULL && *ngot < cap) {
                memcpy(got[*ngot].data, scratch.data, plen);
                got[*ngot].len = plen;
            }
            if (ngot != NULL)
                (*ngot)++;
        }
        if (rc != MBSC_OK)
            return rc;
        if (r < 0)
            return r;
        if (pos >= len)
            return MBSC_OK;
        if (used == 0 && r == 0)
            return mbsc_session_error(s) != MBSC_OK ? mbsc_session_error(s) : MBSC_ERR_STATE;
    }
}

const uint8_t *fuzz_output(mbsc_session *s, size_t *len)
{
    return mbsc_session_output(s, len);
}

int fuzz_pump(mbsc_session *a, mbsc_session *b)
{
    size_t len = 0;
    const uint8_t *out = mbsc_session_output(a, &len);
    uint8_t copy[2 * (MBSC_FRAME_HEADER_BYTES + MBSC_MAX_FRAME_BODY)];
    size_t n = 0;
    int rc;

    if (len == 0)
        return MBSC_OK;
    FUZZ_CHECK(len <= sizeof copy);
    memcpy(copy, out, len);
    mbsc_session_output_consumed(a, len);
    rc = fuzz_feed(b, copy, len, NULL, 0, &n);
    return rc;
}

void fuzz_handshake(mbsc_session *m, mbsc_session *s)
{
    int round;

    /* Message 1, message 2, and whatever confirmation follows. */
    for (round = 0; round < 4; round++) {
        FUZZ_CHECK(fuzz_pump(m, s) == MBSC_OK);
        FUZZ_CHECK(fuzz_pump(s, m) == MBSC_OK);
    }
    FUZZ_CHECK(mbsc_session_established(m) && mbsc_session_established(s));
}

long fuzz_count_frames(const uint8_t *buf, size_t len)
{
    size_t pos = 0;
    long n = 0;

    while (pos < len) {
        size_t body;
        if (len - pos < MBSC_FRAME_HEADER_BYTES)
            return -1;
        body = (size_t)buf[pos] << 8 | buf[pos + 1];
        if (len - pos - MBSC_FRAME_HEADER_BYTES < body)
            return -1;
        pos += MBSC_FRAME_HEADER_BYTES + body;
        n++;
    }
    return n;
}
