/* SPDX-License-Identifier: ISC */
/*
 * peer.c - one connection of the server: bytes through its link,
 * confirmation, requests handed out one at a time, answers, the end.
 *
 * Back-pressure: a request is handed out only while the session's output
 * is empty and no other request of the connection is with the
 * application, so an answer always fits the output and requests are
 * answered in order.  While a request waits, the link still reads until
 * the session's input is full, then stops: TCP pushes back on a master
 * that floods, and nothing one connection does delays the others.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"

/* ---- lists --------------------------------------------------------------------- */

void srv_list_push(struct srv_list *l, struct srv_conn *c)
{
    c->next = NULL;
    c->prev = l->tail;
    if (l->tail != NULL)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->n++;
}

void srv_list_remove(struct srv_list *l, struct srv_conn *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = NULL;
    l->n--;
}

/* ---- life and death ------------------------------------------------------------- */

struct srv_conn *srv_conn_new(mbsc_server *srv, int fd, int *err)
{
    struct srv_conn *c = calloc(1, sizeof *c);

    if (c == NULL) {
        *err = MBSC_ERR_NOMEM;
        return NULL;
    }
    c->s = mbsc_session_new(srv->cfg, err);
    if (c->s == NULL) {
        free(c);
        return NULL;
    }
    c->fd = fd;
    mbsc_session_set_replay_check(c->s, srv_replay_seen, srv);
    mbsc_link_init(&c->link, fd, c->s);
    return c;
}

void srv_conn_free(struct srv_conn *c)
{
    mbsc_session_free(c->s);
    mbsc_wipe(c, sizeof *c);
    free(c);
}

/* Interest in the poller follows the session's state query. */
static void update_interest(mbsc_server *srv, struct srv_conn *c)
{
    short want = mbsc_link_events(&c->link);

    if (want != c->watched && srv_poller_mod(&srv->poller, c->fd, c->id, want) == MBSC_OK)
        c->watched = want;
}

/*
 * Close now.  A confirmed session gets a CLOSED event; anything before
 * confirmation is only counted (refusals.c).  The memory stays until the
 * end of the step, because a callback up the stack may still hold c.
 */
void srv_conn_end(mbsc_server *srv, struct srv_conn *c, int err, const char *detail,
                  enum srv_refusal why)
{
    if (c->fd < 0)
        return;
    srv_poller_del(&srv->poller, c->fd);
    mbsc_sock_close(c->fd);
    c->fd = -1;
    srv->slots[c->slot] = NULL;
    srv->free_slots[srv->n_free++] = c->slot;
    srv->stats.connections--;
    if (c->confirmed) {
        srv_list_remove(&srv->confirmed, c);
        srv_emit(srv, MBSC_SERVER_EVENT_CLOSED, &c->info, err, detail);
    } else {
        srv_list_remove(&srv->unconfirmed, c);
        srv->stats.unconfirmed--;
        why = srv_refusal_cause(c, err, why);
        if (why == REFUSED_UNKNOWN_KEY) {
            uint8_t key[MBSC_KEY_BYTES];

            if (mbsc_session_refused_key(c->s, key) == MBSC_OK)
                srv_refusals_unknown_key(srv, key, c->peer);
        }
        srv_refuse(srv, why);
    }
    c->next_dead = srv->dead_head;
    srv->dead_head = c;
}

/* A session error: what it means before and after confirmation. */
static void end_for_session_error(mbsc_server *srv, struct srv_conn *c, int err)
{
    const char *detail = mbsc_strerror(err);
    enum srv_refusal why = REFUSED_HANDSHAKE;

    if (err == MBSC_ERR_UNKNOWN_PEER)
        why = REFUSED_UNKNOWN_KEY;
    else if (err == MBSC_ERR_REPLAYED)
        why = REFUSED_REPLAY;
    else if (err == MBSC_ERR_PEER_CLOSED || err == MBSC_ERR_TRUNCATED)
        why = REFUSED_CLOSED;
    if (err == MBSC_ERR_PEER_CLOSED && c->confirmed) {
        srv_conn_end(srv, c, MBSC_OK, "peer closed", why);
        return;
    }
    if (err == MBSC_ERR_TRUNCATED)
        detail = "peer closed in the middle of a frame";
    srv_conn_end(srv, c, err, detail, why);
}

static void end_for_socket_error(mbsc_server *srv, struct srv_conn *c, int err)
{
    char detail[128];

    mbsc_why(detail, sizeof detail, "socket: %s: %s", c->link.op, mbsc_os_error(c->link.os_err));
    srv_conn_end(srv, c, err, detail, err == MBSC_ERR_PEER_CLOSED ? REFUSED_CLOSED : REFUSED_OTHER);
}

/* ---- the session's progress --------------------------------------------------------- */

/*
 * Confirmed sessions of the master key key.  A scan at each confirmation:
 * cheaper than the handshake's Diffie-Hellman operations before it, for
 * any connection budget a process can hold.
 */
static unsigned sessions_of(const mbsc_server *srv, const uint8_t key[MBSC_KEY_BYTES])
{
    const struct srv_conn *c;
    unsigned n = 0;

    for (c = srv->confirmed.head; c != NULL; c = c->next)
        n += memcmp(c->key, key, MBSC_KEY_BYTES) == 0;
    return n;
}

/*
 * The master has proved it holds this handshake's keys.  Its key is
 * judged now, by the allow-list of the config in force (a reload since
 * message 1 may have removed it or changed its role), and against the
 * sessions it holds already; a master refused here never was connected.
 */
static void confirm(mbsc_server *srv, struct srv_conn *c)
{
    uint8_t key[MBSC_KEY_BYTES];
    const char *name = NULL, *role = NULL;

    if (mbsc_session_peer_public_key(c->s, key) != MBSC_OK ||
        mbsc_allowlist_find(srv->cfg->allowlist, key, &name, &role) < 0) {
        srv_conn_end(srv, c, MBSC_ERR_UNKNOWN_PEER, "removed from the allow-list",
                     REFUSED_UNKNOWN_KEY);
        return;
    }
    if (sessions_of(srv, key) >= srv->max_per_key) {
        srv_conn_end(srv, c, MBSC_ERR_STATE, "too many sessions of one master key",
                     REFUSED_PER_KEY);
        return;
    }
    srv_list_remove(&srv->unconfirmed, c);
    srv->stats.unconfirmed--;
    c->confirmed = 1;
    c->due_ns = mbsc_monotonic_ns(); /* now the idle clock */
    srv_list_push(&srv->confirmed, c);
    srv->stats.confirmed++;
    memcpy(c->key, key, sizeof key);
    snprintf(c->name, sizeof c->name, "%s", name != NULL ? name : "");
    snprintf(c->role, sizeof c->role, "%s", role != NULL ? role : "");
    c->info.peer_name = c->name;
    c->info.peer_role = role != NULL ? c->role : NULL;
    c->info.cipher = mbsc_session_cipher(c->s);
    srv_emit(srv, MBSC_SERVER_EVENT_CONNECTED, &c->info, MBSC_OK, NULL);
}

/* Activity keeps a confirmed session off the idle timeout: to the tail. */
static void touch(mbsc_server *srv, struct srv_conn *c)
{
    if (!c->confirmed || srv->idle_ms == 0)
        return;
    c->due_ns = mbsc_monotonic_ns();
    if (srv->confirmed.tail != c) {
        srv_list_remove(&srv->confirmed, c);
        srv_list_push(&srv->confirmed, c);
    }
}

/* Hand out requests while the output is empty; 1 if a payload still waits. */
static int hand_out(mbsc_server *srv, struct srv_conn *c)
{
    int r;

    while (c->fd >= 0) {
        const uint8_t *p;
        size_t len;

        if (!c->confirmed && mbsc_session_established(c->s))
            confirm(srv, c);
        if (c->fd < 0 || c->awaiting)
            return 0;
        if (mbsc_link_output_pending(&c->link))
            return mbsc_session_payload(c->s, &len) != NULL;
        p = mbsc_session_payload(c->s, &len);
        if (p == NULL) {
            r = mbsc_session_error(c->s);
            if (r != MBSC_OK)
                end_for_session_error(srv, c, r);
            return 0;
        }
        if (len > 0) {
            touch(srv, c);
            srv->stats.requests++;
            c->awaiting = srv->request_fn != NULL;
            c->in_callback = 1;
            if (srv->request_fn != NULL)
                srv->request_fn(srv->request_user, srv, &c->info, p, len);
            c->in_callback = 0;
            if (c->fd < 0)
                return 0;
        }
        /* A failure opening what was behind it shows at the top of the loop. */
        (void)mbsc_session_payload_ack(c->s);
    }
    return 0;
}

void srv_conn_process(mbsc_server *srv, struct srv_conn *c)
{
    int more, r;

    do {
        more = hand_out(srv, c);
        if (c->fd < 0)
            return;
        r = mbsc_link_flush(&c->link);
        if (r != MBSC_OK) {
            end_for_socket_error(srv, c, r);
            return;
        }
        /* Pipelined requests go on as long as the socket takes the answers. */
    } while (more && !mbsc_link_output_pending(&c->link));
    update_interest(srv, c);
}

void srv_conn_io(mbsc_server *srv, struct srv_conn *c, short revents)
{
    int r;

    if (revents & POLLNVAL) {
        srv_conn_end(srv, c, MBSC_ERR_IO, "socket: invalid descriptor", REFUSED_OTHER);
        return;
    }
    if ((revents & (POLLOUT | POLLERR | POLLHUP)) && mbsc_link_output_pending(&c->link)) {
        r = mbsc_link_flush(&c->link);
        if (r != MBSC_OK) {
            end_for_socket_error(srv, c, r);
            return;
        }
    }
    if (revents & (POLLIN | POLLERR | POLLHUP)) {
        if (!c->confirmed && !c->peeked)
            srv_refusal_peek(c); /* before the session takes the bytes */
        r = mbsc_link_read(&c->link);
        if (r == MBSC_ERR_WOULD_BLOCK && (revents & (POLLERR | POLLHUP)) &&
            !(mbsc_session_state(c->s) & MBSC_SESSION_RECV)) {
            /* Gone while we were not reading: nobody is left to answer. */
            srv_conn_end(srv, c, MBSC_ERR_PEER_CLOSED, "peer gone", REFUSED_CLOSED);
            return;
        }
        if (r != MBSC_OK && r != MBSC_ERR_WOULD_BLOCK && mbsc_session_error(c->s) == MBSC_OK) {
            end_for_socket_error(srv, c, r); /* the socket failed, not the session */
            return;
        }
        /* Session errors (and the end of the stream) are handled by process. */
        if (!c->confirmed && !c->progressed && mbsc_link_output_pending(&c->link))
            c->progressed = 1; /* message 2 is out: only confirmation is missing */
    }
    srv_conn_process(srv, c);
}
