/* SPDX-License-Identifier: ISC */
/*
 * admission.c - who gets a connection slot (mbsc/server.h, "Availability").
 *
 * The budgets keep a confirmed master served whatever unconfirmed clients
 * do: they may take at most max_unconfirmed slots (the oldest goes when a
 * newcomer needs its place, so a flood of connections that never finish
 * the handshake cannot lock out one that does), and at most
 * max_per_address of them from one source address.  Confirmed sessions are
 * never closed to make room.  The total is kept below RLIMIT_NOFILE, and a
 * reserve descriptor lets the server accept and close clients even when
 * something else has used up the descriptors, instead of leaving them in
 * the backlog with the listener forever readable.
 *
 * _GNU_SOURCE: glibc declares accept4() only with it (see sock/sock.c).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/server_internal.h"

/* Connections accepted per step, so that established sessions get served too. */
#define ACCEPT_BATCH 64
/* Accepting pauses only if the reserve descriptor cannot be taken back. */
#define RESERVE_LOST_PAUSE_MS 100

unsigned srv_fd_cap(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur > (rlim_t)1 << 30)
        return 1u << 30;
    if (rl.rlim_cur <= (rlim_t)MBSC_SERVER_FD_RESERVE + 1)
        return 1;
    return (unsigned)(rl.rlim_cur - MBSC_SERVER_FD_RESERVE);
}

int srv_reserve_open(mbsc_server *srv)
{
    if (srv->reserve_fd < 0)
        srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return srv->reserve_fd >= 0 ? MBSC_OK : MBSC_ERR_FD_LIMIT;
}

/* The source address without the port, IPv4-mapped IPv6 as IPv4. */
static void source_key(const struct sockaddr_storage *ss, uint8_t ip[16], uint8_t *len)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    *len = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)ss;

        memcpy(ip, &sin->sin_addr, 4);
        *len = 4;
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)ss;

        if (memcmp(sin6->sin6_addr.s6_addr, mapped, 12) == 0) {
            memcpy(ip, sin6->sin6_addr.s6_addr + 12, 4);
            *len = 4;
        } else {
            memcpy(ip, sin6->sin6_addr.s6_addr, 16);
            *len = 16;
        }
    }
}

static unsigned unconfirmed_from(const mbsc_server *srv, const uint8_t *ip, uint8_t len)
{
    const struct srv_conn *c;
    unsigned n = 0;

    for (c = srv->unconfirmed.head; c != NULL; c = c->next)
        n += c->ip_len == len && memcmp(c->ip, ip, len) == 0;
    return n;
}

static int take_slot(mbsc_server *srv, size_t *slot)
{
    if (srv->n_free > 0) {
        *slot = srv->free_slots[--srv->n_free];
        return MBSC_OK;
    }
    return MBSC_ERR_FD_LIMIT; /* cannot happen: slots are sized for the budget */
}

/*
 * Make room: the oldest unconfirmed connection goes, preferring one that
 * has not even got a valid message 1 through (idle, half a message...)
 * over one that waits for its confirmation: a master whose message 2 is on
 * its way then survives a flood of connections that reconnect at once.
 * 0 if there is none.
 */
static int evict_oldest(mbsc_server *srv)
{
    struct srv_conn *old = srv->unconfirmed.head, *c;

    if (old == NULL)
        return 0;
    for (c = old; c != NULL; c = c->next)
        if (!c->progressed) {
            old = c;
            break;
        }
    srv_conn_end(srv, old, MBSC_ERR_HANDSHAKE_TIMEOUT, "evicted", REFUSED_EVICTED);
    return 1;
}

static void admit(mbsc_server *srv, int fd, const struct sockaddr_storage *ss, socklen_t sl)
{
    struct srv_conn *c;
    uint8_t ip[16];
    uint8_t ip_len;
    size_t slot;
    int one = 1, err = MBSC_OK;

    source_key(ss, ip, &ip_len);
    if (unconfirmed_from(srv, ip, ip_len) >= srv->max_per_address) {
        mbsc_sock_close(fd);
        srv_refuse(srv, REFUSED_PER_ADDRESS);
        return;
    }
    if (srv->stats.connections >= srv->max_connections && !evict_oldest(srv)) {
        mbsc_sock_close(fd);
        srv_refuse(srv, REFUSED_FULL);
        return;
    }
    if (srv->stats.unconfirmed >= srv->max_unconfirmed)
        (void)evict_oldest(srv);
    /* Modbus is request/response: Nagle would delay every answer. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* A slave never sends unasked: only probes find a master whose host has gone. */
    mbsc_sock_probe_peer(fd, srv->dead_peer_ms);
    c = srv_conn_new(srv, fd, &err);
    if (c == NULL || take_slot(srv, &slot) != MBSC_OK) {
        if (c != NULL)
            srv_conn_free(c);
        mbsc_sock_close(fd);
        srv_refuse(srv, REFUSED_OTHER);
        return;
    }
    c->slot = slot;
    c->id = (srv->next_seq << SRV_SLOT_BITS) | slot;
    c->info.id = c->id;
    c->info.seq = srv->next_seq;
    srv->next_seq++;
    c->info.peer_address = c->peer;
    memcpy(c->ip, ip, sizeof ip);
    c->ip_len = ip_len;
    (void)mbsc_addr_format((const struct sockaddr *)(const void *)ss, sl, c->peer, sizeof c->peer);
    c->due_ns = mbsc_monotonic_ns() + (int64_t)srv->handshake_ms * 1000000;
    c->watched = POLLIN;
    if (srv_poller_add(&srv->poller, fd, c->id, c->watched) != MBSC_OK) {
        srv->free_slots[srv->n_free++] = slot;
        srv_conn_free(c);
        mbsc_sock_close(fd);
        srv_refuse(srv, REFUSED_OTHER);
        return;
    }
    srv->slots[slot] = c;
    srv_list_push(&srv->unconfirmed, c);
    srv->stats.unconfirmed++;
    srv->stats.connections++;
    srv->stats.accepted++;
}

/*
 * Out of descriptors: give the reserve back to accept the waiting client
 * and close it at once, then take the reserve again.  Returns 1 if one was
 * shed, 0 if the backlog is empty or the reserve is gone (then accepting
 * pauses briefly: the listener would stay readable and the loop spin).
 */
static int shed_one(mbsc_server *srv)
{
    int fd;

    if (srv->reserve_fd < 0) {
        if (srv_reserve_open(srv) != MBSC_OK) {
            srv->accept_resume_ns = mbsc_monotonic_ns() + (int64_t)RESERVE_LOST_PAUSE_MS * 1000000;
            return 0;
        }
    }
    mbsc_sock_close(srv->reserve_fd);
    srv->reserve_fd = -1;
    fd = accept4(srv->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        mbsc_sock_close(fd);
        srv_refuse(srv, REFUSED_FD);
    }
    if (srv_reserve_open(srv) != MBSC_OK)
        srv->accept_resume_ns = mbsc_monotonic_ns() + (int64_t)RESERVE_LOST_PAUSE_MS * 1000000;
    return fd >= 0;
}

void srv_accept_some(mbsc_server *srv)
{
    /*
     * At most half the unconfirmed budget per step: a newcomer is read (and
     * its message 1 answered) at the next step, before more newcomers can
     * evict it.
     */
    unsigned batch = srv->max_unconfirmed / 2, i;

    if (batch > ACCEPT_BATCH)
        batch = ACCEPT_BATCH;
    if (batch == 0)
        batch = 1;
    for (i = 0; i < batch; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd =
            accept4(srv->lfd, (struct sockaddr *)(void *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            int e = errno;

            if (e == EINTR || e == ECONNABORTED || e == EPROTO)
                continue; /* that client is gone; others may wait */
            if ((e == EMFILE || e == ENFILE) && shed_one(srv))
                continue;
            return; /* EAGAIN: nobody else waits */
        }
        admit(srv, fd, &ss, sl);
    }
}
