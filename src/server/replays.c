/* SPDX-License-Identifier: ISC */
/*
 * replays.c - the server's memory of recent message 1s.
 *
 * Key confirmation makes a replayed message 1 harmless (it never becomes a
 * session), but each replay would still cost the slave two X25519
 * operations and hold an unconfirmed slot until it is evicted or times
 * out; an attacker who captured one message 1 could replay it as fast as
 * the slave can accept.  A master draws a fresh ephemeral key for every
 * handshake, so a message 1 whose ephemeral key (its first 32 bytes, sent
 * in the clear) was seen recently is a replay and is refused before any
 * DH.  The memory holds the last SRV_RECENT_EPHEMERALS keys; an attacker
 * that pushes one out needs that many fresh message 1s, each of which costs
 * the slave a full handshake attempt, as any unknown client does.  The keys
 * are public values: no wiping needed, but they are compared in full.
 */
#include <string.h>

#include "server/server_internal.h"

int srv_replay_seen(void *arg, const uint8_t ephemeral[MBSC_KEY_BYTES])
{
    mbsc_server *srv = arg;
    struct srv_replays *r = &srv->replays;
    uint64_t tag;
    size_t i;

    memcpy(&tag, ephemeral, sizeof tag); /* any 8 bytes: only equality matters */
    for (i = 0; i < r->n; i++)
        if (r->tag[i] == tag && memcmp(r->key[i], ephemeral, MBSC_KEY_BYTES) == 0)
            return 1;
    r->tag[r->next] = tag;
    memcpy(r->key[r->next], ephemeral, MBSC_KEY_BYTES);
    r->next = (r->next + 1) % SRV_RECENT_EPHEMERALS;
    if (r->n < SRV_RECENT_EPHEMERALS)
        r->n++;
    return 0;
}
