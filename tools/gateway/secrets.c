/* SPDX-License-Identifier: ISC */
/*
 * secrets.c - the key, the PSK, the allow-list (or the peer's key) and the
 * policy, loaded together.
 *
 * A reload (SIGHUP) loads a complete new bundle beside the one in use and
 * switches only if every file loaded: a bad line anywhere keeps the old
 * configuration whole.  Every temporary copy of a secret is wiped here;
 * the config keeps its own copies (mbsc/session.h) and wipes them when
 * freed.
 */
#include <string.h>

#include <sodium.h>

#include "log.h"
#include "secrets.h"
#include "tls_conf.h"

void gw_secrets_free(struct gw_secrets *s)
{
    mbsc_config_free(s->cfg);
    mbsc_allowlist_free(s->allow);
    mbsc_policy_free(s->policy);
    gw_tls_free(s->tls);
    memset(s, 0, sizeof *s);
}

static int fail(struct gw_secrets *s, int r, const char *what, char *why, size_t why_len)
{
    if (why[0] == '\0')
        snprintf(why, why_len, "%s: %s", what, mbsc_strerror(r));
    gw_secrets_free(s);
    return -1;
}

/* The policy, for mbsc and TLS masters alike; 0, or -1 with why (s freed). */
static int load_policy(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len)
{
    const char *w;
    size_t i;
    int r = mbsc_policy_load(&s->policy, o->policy, why, why_len);

    if (r != MBSC_OK)
        return fail(s, r, o->policy, why, why_len);
    /* Rules that grant more than they seem, at start and at every reload. */
    for (i = 0; (w = mbsc_policy_warning(s->policy, i)) != NULL; i++)
        gw_log(GW_WARN, "%s", w);
    return 0;
}

int gw_secrets_load(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len)
{
    int server = o->mode == GW_MODE_SERVER;
    mbsc_keypair kp;
    uint8_t key[MBSC_KEY_BYTES];
    int r;

    memset(s, 0, sizeof *s);
    why[0] = '\0';
    if (server && gw_tls_load(&s->tls, o, why, why_len) != 0)
        return fail(s, MBSC_ERR_INVALID_ARG, "TLS", why, why_len);
    if (server && o->policy != NULL && load_policy(s, o, why, why_len) != 0)
        return -1;
    if (server && o->listen == NULL)
        return 0; /* TLS masters only: no mbsc key, allow-list or session config */
    s->cfg = mbsc_config_new(server ? MBSC_ROLE_SLAVE : MBSC_ROLE_MASTER);
    if (s->cfg == NULL)
        return fail(s, MBSC_ERR_NOMEM, "config", why, why_len);
    r = mbsc_keypair_load(&kp, o->key, why, why_len);
    if (r == MBSC_OK)
        r = mbsc_config_set_keypair(s->cfg, &kp);
    mbsc_keypair_wipe(&kp);
    if (r != MBSC_OK)
        return fail(s, r, o->key, why, why_len);
    if (o->psk != NULL) {
        r = mbsc_psk_load(key, o->psk, why, why_len);
        if (r == MBSC_OK)
            r = mbsc_config_set_psk(s->cfg, key);
        sodium_memzero(key, sizeof key);
        if (r != MBSC_OK)
            return fail(s, r, o->psk, why, why_len);
    }
    if (o->ciphers != NULL && (r = mbsc_config_set_ciphers(s->cfg, o->ciphers)) != MBSC_OK) {
        snprintf(why, why_len, "cipher list '%s': %s", o->ciphers, mbsc_strerror(r));
        return fail(s, r, "ciphers", why, why_len);
    }
    if (o->handshake_timeout_ms != 0)
        (void)mbsc_config_set_handshake_timeout(s->cfg, (unsigned)o->handshake_timeout_ms);
    if (server) {
        r = mbsc_allowlist_load(&s->allow, o->authorized, why, why_len);
        if (r != MBSC_OK)
            return fail(s, r, o->authorized, why, why_len);
        if (mbsc_allowlist_count(s->allow) == 0)
            gw_log(GW_WARN, "%s lists no master: nobody can connect", o->authorized);
        (void)mbsc_config_set_allowlist(s->cfg, s->allow);
    } else {
        r = mbsc_public_key_load(key, o->peer, why, why_len);
        if (r == MBSC_OK)
            r = mbsc_config_set_peer_public_key(s->cfg, key);
        if (r != MBSC_OK)
            return fail(s, r, o->peer, why, why_len);
    }
    return 0;
}
