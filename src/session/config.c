/* SPDX-License-Identifier: ISC */
/*
 * config.c - session configuration: keys, peer, PSK, cipher policy.
 */
#include <stdlib.h>
#include <string.h>

#include "session/session_internal.h"

MBSC_API mbsc_config *mbsc_config_new(enum mbsc_role role)
{
    mbsc_config *cfg;
    unsigned id;

    if (mbsc_init() != MBSC_OK)
        return NULL;
    if (role != MBSC_ROLE_MASTER && role != MBSC_ROLE_SLAVE)
        return NULL;
    cfg = calloc(1, sizeof *cfg);
    if (cfg == NULL)
        return NULL;
    cfg->role = role;
    /* Default policy: every cipher, ChaCha20 (id 1) first. */
    for (id = 1; id <= MBSC_CIPHER_COUNT; id++)
        cfg->ciphers[cfg->n_ciphers++] = (uint8_t)id;
    cfg->handshake_timeout_ms = MBSC_DEFAULT_HANDSHAKE_TIMEOUT_MS;
    cfg->max_payload = MBSC_DEFAULT_MAX_PAYLOAD;
    return cfg;
}

MBSC_API void mbsc_config_free(mbsc_config *cfg)
{
    if (cfg == NULL)
        return;
    mbsc_wipe(cfg, sizeof *cfg);
    free(cfg);
}

MBSC_API int mbsc_config_set_keypair(mbsc_config *cfg, const mbsc_keypair *kp)
{
    if (cfg == NULL || kp == NULL)
        return MBSC_ERR_INVALID_ARG;
    cfg->keypair = *kp;
    cfg->has_keypair = 1;
    return MBSC_OK;
}

MBSC_API int mbsc_config_set_peer_public_key(mbsc_config *cfg,
                                             const uint8_t public_key[MBSC_KEY_BYTES])
{
    if (cfg == NULL || public_key == NULL || cfg->role != MBSC_ROLE_MASTER)
        return MBSC_ERR_INVALID_ARG;
    memcpy(cfg->peer_key, public_key, MBSC_KEY_BYTES);
    cfg->has_peer_key = 1;
    return MBSC_OK;
}

MBSC_API int mbsc_config_set_allowlist(mbsc_config *cfg, const mbsc_allowlist *al)
{
    if (cfg == NULL || al == NULL || cfg->role != MBSC_ROLE_SLAVE)
        return MBSC_ERR_INVALID_ARG;
    cfg->allowlist = al;
    return MBSC_OK;
}

MBSC_API int mbsc_config_set_psk(mbsc_config *cfg, const uint8_t psk[MBSC_KEY_BYTES])
{
    if (cfg == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (psk == NULL) {
        mbsc_wipe(cfg->psk, sizeof cfg->psk);
        cfg->has_psk = 0;
    } else {
        memcpy(cfg->psk, psk, MBSC_KEY_BYTES);
        cfg->has_psk = 1;
    }
    return MBSC_OK;
}

MBSC_API int mbsc_config_set_cipher_ids(mbsc_config *cfg, const unsigned *ids, size_t n)
{
    size_t i, j;

    if (cfg == NULL || ids == NULL || n == 0 || n > MBSC_MAX_CIPHER_OFFER)
        return MBSC_ERR_INVALID_ARG;
    for (i = 0; i < n; i++) {
        if (mbsc_cipher_by_id(ids[i]) == NULL)
            return MBSC_ERR_UNKNOWN_CIPHER;
        for (j = 0; j < i; j++)
            if (ids[j] == ids[i])
                return MBSC_ERR_INVALID_ARG;
    }
    for (i = 0; i < n; i++)
        cfg->ciphers[i] = (uint8_t)ids[i];
    cfg->n_ciphers = n;
    return MBSC_OK;
}

MBSC_API int mbsc_config_set_ciphers(mbsc_config *cfg, const char *list)
{
    unsigned ids[MBSC_MAX_CIPHER_OFFER];
    size_t n = 0;
    const char *p = list;

    if (cfg == NULL || list == NULL)
        return MBSC_ERR_INVALID_ARG;
    for (;;) {
        char name[32];
        size_t len;
        const mbsc_cipher *c;

        while (*p == ' ' || *p == '\t')
            p++;
        len = strcspn(p, ", \t");
        if (len == 0 || len >= sizeof name)
            return len == 0 ? MBSC_ERR_INVALID_ARG : MBSC_ERR_UNKNOWN_CIPHER;
        memcpy(name, p, len);
        name[len] = '\0';
        if ((c = mbsc_cipher_by_name(name)) == NULL)
            return MBSC_ERR_UNKNOWN_CIPHER;
        if (n == MBSC_MAX_CIPHER_OFFER)
            return MBSC_ERR_INVALID_ARG;
        ids[n++] = mbsc_cipher_id(c);
        p += len;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return MBSC_ERR_INVALID_ARG;
    }
    return mbsc_config_set_cipher_ids(cfg, ids, n);
}

MBSC_API int mbsc_config_set_handshake_timeout(mbsc_config *cfg, unsigned timeout_ms)
{
    if (cfg == NULL || timeout_ms == 0)
        return MBSC_ERR_INVALID_ARG;
    cfg->handshake_timeout_ms = timeout_ms;
    return MBSC_OK;
}

MBSC_API int mbsc_config_set_max_payload(mbsc_config *cfg, size_t max_payload)
{
    if (cfg == NULL || max_payload > MBSC_MAX_PAYLOAD)
        return MBSC_ERR_INVALID_ARG;
    cfg->max_payload = max_payload;
    return MBSC_OK;
}

MBSC_API size_t mbsc_config_max_payload(const mbsc_config *cfg)
{
    return cfg->max_payload;
}

MBSC_API size_t mbsc_config_session_footprint(const mbsc_config *cfg)
{
    return mbsc_session_footprint_for(cfg != NULL ? cfg->max_payload : MBSC_DEFAULT_MAX_PAYLOAD);
}

MBSC_API unsigned mbsc_config_handshake_timeout(const mbsc_config *cfg)
{
    return cfg->handshake_timeout_ms;
}

MBSC_API enum mbsc_role mbsc_config_role(const mbsc_config *cfg)
{
    return cfg->role;
}
