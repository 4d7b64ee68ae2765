/* SPDX-License-Identifier: ISC */
/*
 * refusals.c - connections closed before confirmation, for the operator.
 *
 * Anyone can open connections, replay a message 1 or send garbage; a line
 * per such connection let an attacker write tens of megabytes of log in
 * seconds.  So they are counted by reason and reported as one line per log
 * interval: the first refusal after a quiet interval at once, the rest
 * summed up when the interval is over.  A master key that the allow-list
 * does not hold is printed once (it may be a new master that the operator
 * wants to add, as ssh shows an unknown host's fingerprint), a few per
 * interval at most.
 */
#include <stdio.h>
#include <string.h>

#include "server/server_internal.h"

static const char *const reason_text[REFUSED_COUNT] = {
    [REFUSED_EVICTED] = "evicted for a newer connection (unconfirmed budget full)",
    [REFUSED_TIMEOUT] = "handshake timeout",
    [REFUSED_PER_ADDRESS] = "too many unconfirmed connections from one address",
    [REFUSED_FULL] = "connection budget full",
    [REFUSED_FD] = "out of descriptors",
    [REFUSED_UNKNOWN_KEY] = "unknown master key",
    [REFUSED_PER_KEY] = "over the sessions allowed per master key",
    [REFUSED_HANDSHAKE] = "bad handshake or frame",
    [REFUSED_REPLAY] = "replayed message 1",
    [REFUSED_CLOSED] = "closed by the client before confirmation",
    [REFUSED_WRONG_SLAVE_KEY] = "handshake made for another slave key (the master's peer key is "
                                "not this slave's public key)",
    [REFUSED_NO_CIPHER] = "no cipher in common (this side allows none the master offers)",
    [REFUSED_PLAIN_MODBUS] = "plain Modbus/TCP request (a Modbus client without mbsc on this "
                             "port)",
    [REFUSED_NOT_MBSC] = "not an mbsc handshake (another protocol on this port?)",
    [REFUSED_PSK] = "master hung up after our reply (its pre-shared key most likely differs)",
    [REFUSED_SILENT] = "handshake timeout, nothing received (not an mbsc master?)",
    [REFUSED_PROBE] = "closed without sending anything (a port check?)",
    [REFUSED_OTHER] = "other errors",
};

void srv_refusals_init(struct srv_refusals *r)
{
    memset(r, 0, sizeof *r);
}

int64_t srv_refusals_due(const mbsc_server *srv)
{
    return srv->refusals.total > 0 ? srv->refusals.next_line_ns : 0;
}

void srv_refusals_flush(mbsc_server *srv, int64_t now, int force)
{
    struct srv_refusals *r = &srv->refusals;
    char line[768];
    size_t at;
    int i;

    if (r->total == 0 || (!force && now < r->next_line_ns))
        return;
    at = (size_t)snprintf(line, sizeof line, "refused %llu connection%s before confirmation:",
                          (unsigned long long)r->total, r->total == 1 ? "" : "s");
    for (i = 0; i < REFUSED_COUNT && at < sizeof line; i++) {
        if (r->counts[i] == 0)
            continue;
        at += (size_t)snprintf(line + at, sizeof line - at, " %llu %s;",
                               (unsigned long long)r->counts[i], reason_text[i]);
    }
    if (at < sizeof line && at > 0 && line[at - 1] == ';')
        line[at - 1] = '\0';
    memset(r->counts, 0, sizeof r->counts);
    r->total = 0;
    r->key_lines = 0;
    r->next_line_ns = now + (int64_t)srv->log_ms * 1000000;
    srv_emit(srv, MBSC_SERVER_EVENT_LOG, NULL, MBSC_OK, line);
}

void srv_refuse(mbsc_server *srv, enum srv_refusal why)
{
    int64_t now = mbsc_monotonic_ns();

    srv->stats.refused++;
    switch (why) {
    case REFUSED_EVICTED: srv->stats.evicted++; break;
    case REFUSED_TIMEOUT: srv->stats.timed_out++; break;
    case REFUSED_PER_ADDRESS: srv->stats.per_address++; break;
    case REFUSED_FULL: srv->stats.full++; break;
    case REFUSED_FD: srv->stats.fd_exhausted++; break;
    case REFUSED_UNKNOWN_KEY: srv->stats.unknown_keys++; break;
    case REFUSED_PER_KEY: srv->stats.per_key++; break;
    case REFUSED_HANDSHAKE: srv->stats.bad_handshakes++; break;
    case REFUSED_CLOSED: srv->stats.closed_early++; break;
    case REFUSED_REPLAY: srv->stats.replays++; break;
    case REFUSED_WRONG_SLAVE_KEY:
    case REFUSED_NO_CIPHER:
    case REFUSED_PLAIN_MODBUS:
    case REFUSED_NOT_MBSC: srv->stats.bad_handshakes++; break;
    case REFUSED_PSK:
    case REFUSED_PROBE: srv->stats.closed_early++; break;
    case REFUSED_SILENT: srv->stats.timed_out++; break;
    case REFUSED_OTHER:
    case REFUSED_COUNT: break;
    }
    srv->refusals.counts[why]++;
    srv->refusals.total++;
    /* After a quiet interval the first refusal is reported at once. */
    srv_refusals_flush(srv, now, 0);
}

static int seen_before(struct srv_refusals *r, const uint8_t key[MBSC_KEY_BYTES])
{
    size_t i;

    for (i = 0; i < r->n_seen; i++)
        if (memcmp(r->seen[i], key, MBSC_KEY_BYTES) == 0)
            return 1;
    memcpy(r->seen[r->next_seen], key, MBSC_KEY_BYTES);
    r->next_seen = (r->next_seen + 1) % SRV_SEEN_KEYS;
    if (r->n_seen < SRV_SEEN_KEYS)
        r->n_seen++;
    return 0;
}

void srv_refusals_unknown_key(mbsc_server *srv, const uint8_t key[MBSC_KEY_BYTES], const char *peer)
{
    struct srv_refusals *r = &srv->refusals;
    char b64[MBSC_KEY_BASE64_SIZE], line[256];

    if (r->key_lines >= SRV_KEY_LINES_PER_INTERVAL || seen_before(r, key))
        return;
    r->key_lines++;
    (void)mbsc_key_to_base64(b64, key);
    snprintf(line, sizeof line,
             "unknown master key from %s; if it is yours, add this line to the allow-list: "
             "%s <name> [role]",
             peer, b64);
    srv_emit(srv, MBSC_SERVER_EVENT_LOG, NULL, MBSC_ERR_UNKNOWN_PEER, line);
}
