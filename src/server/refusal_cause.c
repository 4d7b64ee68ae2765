/* SPDX-License-Identifier: ISC */
/*
 * refusal_cause.c - what a connection refused before confirmation most
 * likely means, for the operator who reads the refusals line.
 *
 * The session reports what happened ("message 1 did not decrypt", "the
 * peer closed"); the server knows how far the connection got and what its
 * first bytes were, and that is enough to name the likely cause (see
 * docs/protocol.md, "Message 1" and "Message 2"):
 *   - message 1 that does not decrypt was made for another slave key: the
 *     master's peer key (--peer) is not ours;
 *   - a master that hangs up after our message 2, without the confirming
 *     frame, could not authenticate message 2: its PSK differs from ours
 *     (the slave cannot see a PSK mismatch any other way);
 *   - first bytes that form an MBAP header (protocol id 0, a length of 2 to
 *     254) are a plain Modbus/TCP client; other bytes that are no
 *     handshake are another protocol;
 *   - nothing at all, then the deadline or a close: a port scan or check.
 * The generic reasons of refusals.c stay for everything else.
 */
#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "server/server_internal.h"

void srv_refusal_peek(struct srv_conn *c)
{
    ssize_t n;

    do
        n = recv(c->fd, c->first, sizeof c->first, MSG_PEEK | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return; /* nothing there yet, or an error the read will report: look again */
    c->n_first = (uint8_t)n;
    c->peeked = 1;
}

/* An MBAP header (Modbus Messaging on TCP/IP, 3.1.3): protocol id 0, length 2..254. */
static int looks_like_mbap(const struct srv_conn *c)
{
    unsigned length;

    if (c->n_first < 6 || c->first[2] != 0 || c->first[3] != 0)
        return 0;
    length = (unsigned)c->first[4] << 8 | c->first[5];
    return length >= 2 && length <= 254;
}

enum srv_refusal srv_refusal_cause(const struct srv_conn *c, int err, enum srv_refusal why)
{
    int nothing = !c->peeked || c->n_first == 0;

    if (!c->progressed && looks_like_mbap(c) &&
        (why == REFUSED_HANDSHAKE || why == REFUSED_TIMEOUT || why == REFUSED_CLOSED))
        return REFUSED_PLAIN_MODBUS;
    switch (why) {
    case REFUSED_HANDSHAKE:
        if (err == MBSC_ERR_WRONG_PEER_KEY)
            return REFUSED_WRONG_SLAVE_KEY;
        if (err == MBSC_ERR_NO_COMMON_CIPHER)
            return REFUSED_NO_CIPHER;
        if (!c->progressed && (err == MBSC_ERR_FRAME_LENGTH || err == MBSC_ERR_HANDSHAKE_MESSAGE))
            return REFUSED_NOT_MBSC;
        return why;
    case REFUSED_CLOSED:
        if (c->progressed)
            return REFUSED_PSK;
        return nothing ? REFUSED_PROBE : why;
    case REFUSED_TIMEOUT: return nothing ? REFUSED_SILENT : why;
    default: return why;
    }
}
