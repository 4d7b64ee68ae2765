/* SPDX-License-Identifier: ISC */
/*
 * examples/master_link.c - secure_master's connection: made (the
 * handshake, the unit, the reply timeout), closed, and what a failed
 * request or connection attempt means, in one line a user can act on.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "master.h"

/* The cause of a failed mbsc_modbus_connect(), into e->message. */
static void connect_failure(const struct options *o, int err, const char *why, struct mo_error *e)
{
    const char *to = o->connect;
    char *m = e->message;
    size_t n = sizeof e->message;

    e->kind = MO_ERR_CONNECT;
    e->exception = 0;
    switch (err) {
    case MBSC_ERR_PEER_CLOSED:
        /* The slave says nothing on purpose (docs/protocol.md: it closes without an
         * answer), so list what makes it close; its own log names which. */
        snprintf(m, n,
                 "handshake with %s failed: slave refused the handshake (our key is not "
                 "authorised, or no common cipher, or --peer is not the slave's key; the "
                 "slave's log says which)",
                 to);
        break;
    case MBSC_ERR_PSK_MISMATCH:
        snprintf(m, n,
                 "handshake with %s failed: wrong pre-shared key (the slave's reply does not "
                 "authenticate with our PSK%s)",
                 to, o->psk == NULL ? ": we have none, the slave has one" : "");
        break;
    case MBSC_ERR_HANDSHAKE_TIMEOUT:
        /* An mbsc slave answers or closes at once; a plain Modbus/TCP server
         * waits for the rest of what it takes for a request. */
        snprintf(m, n,
                 "handshake with %s timed out after %lu ms: the port accepted the connection "
                 "but never answered like an mbsc slave (a plain Modbus/TCP port, or a slave "
                 "too busy?)",
                 to, o->timeout_ms);
        break;
    case MBSC_ERR_FRAME_LENGTH:
    case MBSC_ERR_HANDSHAKE_MESSAGE:
    case MBSC_ERR_TRUNCATED:
    case MBSC_ERR_BAD_VERSION:
        /* What a plain Modbus/TCP server, a web server or a proxy answers. */
        snprintf(m, n,
                 "handshake with %s failed: %s: the peer does not answer like an mbsc slave "
                 "(wrong port, or a plain Modbus/TCP server?)",
                 to, mbsc_strerror(err));
        break;
    case MBSC_ERR_HANDSHAKE_DECRYPT:
    case MBSC_ERR_UNKNOWN_PEER:
    case MBSC_ERR_NO_COMMON_CIPHER:
    case MBSC_ERR_BAD_OFFER:
    case MBSC_ERR_BAD_CHOICE:
    case MBSC_ERR_WEAK_KEY:
    case MBSC_ERR_WRONG_PEER_KEY:
    case MBSC_ERR_BAD_TAG:
        snprintf(m, n, "handshake with %s failed: %s", to, mbsc_strerror(err));
        break;
    default:
        /* Connect, resolve, address errors: the library's line names the
         * address and the system's reason ("connect ...: Connection refused"). */
        if (why[0] != '\0') {
            size_t k = strnlen(why, n - 1); /* the line may be cut to fit */

            memcpy(m, why, k);
            m[k] = '\0';
        } else
            snprintf(m, n, "cannot connect to %s: %s", to, mbsc_strerror(err));
        break;
    }
}

int master_link_open(struct master_link *l, struct mo_error *e)
{
    const struct options *o = l->o;
    char why[EX_WHY_SIZE];
    int err = MBSC_OK;
    modbus_t *ctx;

    why[0] = '\0';
    master_link_close(l);
    ctx = mbsc_modbus_connect(o->connect, l->cfg, (int)o->timeout_ms, &err, why, sizeof why);
    if (ctx == NULL) {
        connect_failure(o, err, why, e);
        return -1;
    }
    e->kind = MO_ERR_CONNECT;
    e->exception = 0;
    if (modbus_set_slave(ctx, (int)o->unit) != 0) {
        snprintf(e->message, sizeof e->message, "--unit %lu: %s", o->unit, modbus_strerror(errno));
        mbsc_modbus_close(ctx);
        return -1;
    }
    /* The same bound for every reply as for the handshake. */
    if (modbus_set_response_timeout(ctx, (uint32_t)(o->timeout_ms / 1000),
                                    (uint32_t)(o->timeout_ms % 1000) * 1000u) != 0) {
        snprintf(e->message, sizeof e->message, "--timeout %lu: %s", o->timeout_ms,
                 modbus_strerror(errno));
        mbsc_modbus_close(ctx);
        return -1;
    }
    l->ctx = ctx;
    l->answered = 0;
    return 0;
}

void master_link_close(struct master_link *l)
{
    if (l->ctx != NULL)
        mbsc_modbus_close(l->ctx);
    l->ctx = NULL;
}

void master_link_failure(struct master_link *l, int saved_errno, struct mo_error *e)
{
    int err = l->ctx != NULL ? mbsc_modbus_error(l->ctx) : MBSC_ERR_PEER_CLOSED;

    e->exception = 0;
    /* libmodbus reports exception code c as errno MODBUS_ENOBASE + c, for the
     * codes it knows (EMBBADEXC for the others). */
    if (saved_errno > MODBUS_ENOBASE && saved_errno < MODBUS_ENOBASE + MODBUS_EXCEPTION_MAX) {
        e->kind = MO_ERR_EXCEPTION;
        e->exception = (unsigned)(saved_errno - MODBUS_ENOBASE);
        snprintf(e->message, sizeof e->message, "exception %02X, %s", e->exception,
                 mbsc_pdu_exception_text((uint8_t)e->exception));
    } else if (err == MBSC_ERR_PEER_CLOSED) {
        e->kind = MO_ERR_DISCONNECTED;
        snprintf(e->message, sizeof e->message, "the slave at %s closed the connection",
                 l->o->connect);
    } else if (err != MBSC_OK) {
        e->kind = MO_ERR_DISCONNECTED;
        snprintf(e->message, sizeof e->message, "connection to %s lost: %s", l->o->connect,
                 mbsc_strerror(err));
    } else if (saved_errno == ETIMEDOUT) {
        e->kind = MO_ERR_TIMEOUT;
        snprintf(e->message, sizeof e->message, "no reply from %s within %lu ms", l->o->connect,
                 l->o->timeout_ms);
    } else if (saved_errno == ECONNRESET || saved_errno == EPIPE || saved_errno == ENOTCONN ||
               saved_errno == EBADF) {
        e->kind = MO_ERR_DISCONNECTED;
        snprintf(e->message, sizeof e->message, "connection to %s lost: %s", l->o->connect,
                 modbus_strerror(saved_errno));
    } else {
        e->kind = MO_ERR_BAD_ANSWER;
        snprintf(e->message, sizeof e->message, "bad answer from %s: %s", l->o->connect,
                 modbus_strerror(saved_errno));
    }
}
