/* SPDX-License-Identifier: ISC */
/*
 * secrets.c - the key, the PSK, the allow-list (or the peer's key), the
 * policy and the TLS files, loaded together.
 *
 * A reload (SIGHUP) loads a complete new bundle beside the one in use and
 * switches only if every file loaded: a bad line anywhere keeps the old
 * configuration whole.  Every temporary copy of a secret is wiped here;
 * the config keeps its own copies (mbsc/session.h) and wipes them when
 * freed.
 */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "log.h"
#include "roles.h"
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

/* Each part of the bundle: 0, or -1 with why naming the file (and line). */

static int load_key(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len)
{
    mbsc_keypair kp;
    int r = mbsc_keypair_load(&kp, o->key, why, why_len);

    if (r == MBSC_OK)
        r = mbsc_config_set_keypair(s->cfg, &kp);
    mbsc_keypair_wipe(&kp);
    if (r != MBSC_OK && why[0] == '\0')
        snprintf(why, why_len, "%s: %s", o->key, mbsc_strerror(r));
    return r == MBSC_OK ? 0 : -1;
}

static int load_psk(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len)
{
    uint8_t key[MBSC_KEY_BYTES];
    int r;

    if (o->psk == NULL)
        return 0;
    r = mbsc_psk_load(key, o->psk, why, why_len);
    if (r == MBSC_OK)
        r = mbsc_config_set_psk(s->cfg, key);
    sodium_memzero(key, sizeof key);
    if (r != MBSC_OK && why[0] == '\0')
        snprintf(why, why_len, "%s: %s", o->psk, mbsc_strerror(r));
    return r == MBSC_OK ? 0 : -1;
}

static int load_ciphers(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len)
{
    int r;

    if (o->ciphers == NULL || (r = mbsc_config_set_ciphers(s->cfg, o->ciphers)) == MBSC_OK)
        return 0;
    snprintf(why, why_len, "cipher list '%s': %s", o->ciphers, mbsc_strerror(r));
    return -1;
}

static int load_allowlist(struct gw_secrets *s, const struct gw_options *o, char *why,
                          size_t why_len)
{
    int r = mbsc_allowlist_load(&s->allow, o->authorized, why, why_len);

    if (r != MBSC_OK) {
        if (why[0] == '\0')
            snprintf(why, why_len, "%s: %s", o->authorized, mbsc_strerror(r));
        return -1;
    }
    if (mbsc_allowlist_count(s->allow) == 0)
        gw_log(GW_WARN, "%s lists no master: nobody can connect", o->authorized);
    (void)mbsc_config_set_allowlist(s->cfg, s->allow);
    return 0;
}

static int load_policy(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len)
{
    const char *w;
    size_t i;
    int r;

    if (o->policy == NULL)
        return 0;
    r = mbsc_policy_load(&s->policy, o->policy, why, why_len);
    if (r != MBSC_OK) {
        if (why[0] == '\0')
            snprintf(why, why_len, "%s: %s", o->policy, mbsc_strerror(r));
        return -1;
    }
    /* Rules that grant more than they seem, at start and at every reload. */
    for (i = 0; (w = mbsc_policy_warning(s->policy, i)) != NULL; i++)
        gw_log(GW_WARN, "%s", w);
    return 0;
}

/* The TLS listener's and the mbaps:// upstreams' files (tls_conf.h), server mode. */
static int load_tls(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len)
{
    if (gw_tls_load(&s->tls, o, why, why_len) == 0)
        return 0;
    if (why[0] == '\0')
        snprintf(why, why_len, "TLS: %s", mbsc_strerror(MBSC_ERR_INVALID_ARG));
    return -1;
}

/* A server gateway for TLS masters only (no --listen) has no mbsc side. */
static int has_mbsc_side(const struct gw_options *o)
{
    return o->mode != GW_MODE_SERVER || o->listen != NULL;
}

static int load_peer(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len)
{
    uint8_t key[MBSC_KEY_BYTES];
    int r = mbsc_public_key_load(key, o->peer, why, why_len);

    if (r == MBSC_OK)
        r = mbsc_config_set_peer_public_key(s->cfg, key);
    if (r != MBSC_OK && why[0] == '\0')
        snprintf(why, why_len, "%s: %s", o->peer, mbsc_strerror(r));
    return r == MBSC_OK ? 0 : -1;
}

typedef int (*load_step)(struct gw_secrets *, const struct gw_options *, char *, size_t);

#define MAX_STEPS 7

/*
 * The parts in the order they load: the TLS files, the allow-list and the
 * policy in server mode only; the key, PSK and ciphers where there is an
 * mbsc side.
 */
static size_t steps_of(const struct gw_options *o, load_step steps[MAX_STEPS])
{
    size_t n = 0;

    if (o->mode == GW_MODE_SERVER)
        steps[n++] = load_tls;
    if (has_mbsc_side(o)) {
        steps[n++] = load_key;
        steps[n++] = load_psk;
        steps[n++] = load_ciphers;
        steps[n++] = o->mode == GW_MODE_SERVER ? load_allowlist : load_peer;
    }
    if (o->mode == GW_MODE_SERVER)
        steps[n++] = load_policy;
    return n;
}

/* A bundle with its config (where there is an mbsc side), before any file; 0 or -1 with why. */
static int begin(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len)
{
    memset(s, 0, sizeof *s);
    why[0] = '\0';
    if (!has_mbsc_side(o))
        return 0;
    s->cfg = mbsc_config_new(o->mode == GW_MODE_SERVER ? MBSC_ROLE_SLAVE : MBSC_ROLE_MASTER);
    if (s->cfg == NULL) {
        snprintf(why, why_len, "config: %s", mbsc_strerror(MBSC_ERR_NOMEM));
        return -1;
    }
    if (o->handshake_timeout_ms != 0)
        (void)mbsc_config_set_handshake_timeout(s->cfg, (unsigned)o->handshake_timeout_ms);
    return 0;
}

int gw_secrets_load(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len)
{
    load_step steps[MAX_STEPS];
    size_t i, n = steps_of(o, steps);

    if (begin(s, o, why, why_len) != 0) {
        gw_secrets_free(s);
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (steps[i](s, o, why, why_len) != 0) {
            gw_secrets_free(s);
            return -1;
        }
    }
    if (o->mode == GW_MODE_SERVER && s->allow != NULL)
        gw_roles_warn(s->allow, o->authorized, s->policy, o->policy);
    return 0;
}

unsigned gw_secrets_check(const struct gw_options *o, size_t *masters)
{
    struct gw_secrets s;
    char why[GW_WHY_SIZE];
    load_step steps[MAX_STEPS];
    size_t i, n = steps_of(o, steps);
    unsigned bad = 0;

    if (begin(&s, o, why, sizeof why) != 0) {
        gw_log(GW_ERR, "%s", why);
        gw_secrets_free(&s);
        return 1;
    }
    for (i = 0; i < n; i++) {
        why[0] = '\0';
        if (steps[i](&s, o, why, sizeof why) != 0) {
            gw_log(GW_ERR, "%s", why);
            bad++;
        }
    }
    *masters = mbsc_allowlist_count(s.allow);
    if (o->mode == GW_MODE_SERVER && s.allow != NULL)
        gw_roles_warn(s.allow, o->authorized, s.policy, o->policy);
    gw_secrets_free(&s);
    return bad;
}
