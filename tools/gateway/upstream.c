/* SPDX-License-Identifier: ISC */
/*
 * upstream.c - the one connection behind the gateway.
 *
 * Server mode: plain Modbus/TCP to the PLC; the byte stream is cut into
 * ADUs by the MBAP length field.  Client mode: an mbsc session as master
 * to a server gateway (or any mbsc slave), driven through the library's
 * link (src/link/) so that nothing here blocks: the TCP connect is
 * non-blocking and the handshake advances with the poll() loop.
 *
 * A connection that fails is tried again: at once if it had carried an
 * answer (the PLC closed an idle connection, say), then after a backoff that
 * doubles from GW_BACKOFF_MIN_MS up to the configured ceiling, so that a
 * PLC that is down is not hammered.  A new mbsc connection always runs a
 * new handshake.
 *
 * A connection whose peer has gone silent (a partition, a host switched
 * off) is given up once what was sent on it has stayed unacknowledged for
 * the connect timeout (TCP_USER_TIMEOUT), and is then made again like any
 * other.  Without that, TCP keeps retransmitting with a doubling timer, and
 * after a ten-second partition the first retransmission that gets through
 * may come seconds after the link is back.  A slow PLC does not trip it:
 * its TCP acknowledges the request at once, whenever it answers.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "conn/sock.h"
#include "gw.h"
#include "link/link.h"

#define GW_BACKOFF_MIN_MS 100u
/* Plain output: a few answers' worth; the multiplexer keeps N <= this / 260 in flight. */
#define GW_PLAIN_OUT (64u * GW_MAX_ADU)

struct gw_upstream {
    char name[MBSC_ADDRSTRLEN + 256];
    const mbsc_config *cfg; /* NULL: plain Modbus/TCP */
    unsigned connect_ms, backoff_max_ms, backoff_ms;
    struct gw_upstream_hooks h;
    enum gw_up_state state;
    int fd;
    int tcp_up;         /* the TCP connect has completed */
    int answered;       /* this connection has delivered an answer */
    int64_t due_ns;     /* CONNECTING: give up then; BACKOFF: try again then */
    int64_t attempt_ns; /* when the last connection attempt started */
    uint64_t connects;  /* connections that became ready */
    /* plain */
    uint8_t in[2 * GW_MAX_ADU];
    size_t in_len;
    uint8_t out[GW_PLAIN_OUT];
    size_t out_len;
    /* mbsc */
    mbsc_session *s;
    struct mbsc_link link;
};

struct gw_upstream *gw_upstream_new(const char *hostport, const mbsc_config *cfg,
                                    unsigned connect_timeout_ms, unsigned backoff_max_ms,
                                    const struct gw_upstream_hooks *hooks)
{
    struct gw_upstream *u = calloc(1, sizeof *u);

    if (u == NULL)
        return NULL;
    snprintf(u->name, sizeof u->name, "%s", hostport);
    u->cfg = cfg;
    u->connect_ms = connect_timeout_ms;
    u->backoff_max_ms = backoff_max_ms < GW_BACKOFF_MIN_MS ? GW_BACKOFF_MIN_MS : backoff_max_ms;
    u->backoff_ms = GW_BACKOFF_MIN_MS;
    u->h = *hooks;
    u->fd = -1;
    u->state = GW_UP_IDLE;
    return u;
}

static void drop_connection(struct gw_upstream *u)
{
    mbsc_session_free(u->s); /* wipes the session's keys */
    u->s = NULL;
    mbsc_sock_close(u->fd);
    u->fd = -1;
    u->tcp_up = 0;
    u->answered = 0;
    u->in_len = u->out_len = 0;
}

void gw_upstream_free(struct gw_upstream *u)
{
    if (u == NULL)
        return;
    drop_connection(u);
    free(u);
}

void gw_upstream_set_config(struct gw_upstream *u, const mbsc_config *cfg)
{
    u->cfg = cfg;
}

enum gw_up_state gw_upstream_state(const struct gw_upstream *u)
{
    return u->state;
}

const char *gw_upstream_name(const struct gw_upstream *u)
{
    return u->name;
}

const mbsc_cipher *gw_upstream_cipher(const struct gw_upstream *u)
{
    return u->state == GW_UP_READY && u->s != NULL ? mbsc_session_cipher(u->s) : NULL;
}

uint64_t gw_upstream_connects(const struct gw_upstream *u)
{
    return u->connects;
}

/*
 * The connection ended or could not be made: tell, then plan the next try.
 * Only a connection that carried an answer is made again at once: one that
 * is closed as soon as it is up (a PLC whose connections are all taken
 * accepts and closes; a server gateway refuses a session when it confirms)
 * would otherwise be retried in a tight loop, hundreds of times a second.
 */
static void fail(struct gw_upstream *u, const char *why)
{
    int was_ready = u->state == GW_UP_READY, proven = was_ready && u->answered;

    drop_connection(u);
    if (proven) {
        u->state = GW_UP_IDLE; /* try again at once */
    } else {
        /*
         * The backoff counts from the start of the attempt that failed: an
         * attempt that waited for its connect timeout (its SYN lost in a
         * partition) does not add that timeout to the wait, so that a link
         * that comes back is tried again within the backoff.
         */
        int64_t now = gw_now_ns(), next = u->attempt_ns + (int64_t)u->backoff_ms * 1000000;

        u->state = GW_UP_BACKOFF;
        u->due_ns = next > now ? next : now;
        u->backoff_ms =
            u->backoff_ms * 2 > u->backoff_max_ms ? u->backoff_max_ms : u->backoff_ms * 2;
    }
    u->h.down(u->h.user, was_ready, why);
}

/* An answer came: the connection works, and the next failure may retry at once. */
static void deliver(struct gw_upstream *u, const uint8_t *adu, size_t n)
{
    if (!u->answered) {
        u->answered = 1;
        u->backoff_ms = GW_BACKOFF_MIN_MS;
    }
    u->h.answer(u->h.user, adu, n);
}

void gw_upstream_reset(struct gw_upstream *u, const char *why)
{
    if (u->state == GW_UP_READY || u->state == GW_UP_CONNECTING)
        fail(u, why);
}

static void become_ready(struct gw_upstream *u)
{
    u->state = GW_UP_READY;
    u->connects++;
    u->h.up(u->h.user);
}

/* Start a non-blocking connect to the first address that takes one. */
static void start_connect(struct gw_upstream *u, int64_t now_ns)
{
    struct addrinfo *res = NULL, *ai;
    char why[GW_WHY_SIZE];
    int e = 0;

    u->state = GW_UP_CONNECTING;
    u->attempt_ns = now_ns;
    u->due_ns = now_ns + (int64_t)u->connect_ms * 1000000;
    if (mbsc_addr_resolve(u->name, 0, &res, why, sizeof why) != MBSC_OK) {
        fail(u, why);
        return;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        int one = 1;
        int fd =
            socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);

        if (fd < 0) {
            e = errno;
            continue;
        }
        /* Modbus is request/answer: Nagle would delay every exchange. */
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
#ifdef TCP_USER_TIMEOUT
        (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &u->connect_ms, sizeof u->connect_ms);
#endif
        /* Non-blocking: EINTR, like EINPROGRESS, leaves the connect going on. */
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS ||
            errno == EINTR) {
            u->fd = fd;
            break;
        }
        e = errno;
        mbsc_sock_close(fd);
    }
    freeaddrinfo(res);
    if (u->fd < 0) {
        snprintf(why, sizeof why, "connect %s: %s", u->name, strerror(e));
        fail(u, why);
    }
}

/* The TCP connect has finished one way or the other. */
static void connect_done(struct gw_upstream *u)
{
    char why[GW_WHY_SIZE];
    int err = 0, r = MBSC_ERR_INVALID_ARG;
    socklen_t len = sizeof err;

    if (getsockopt(u->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        snprintf(why, sizeof why, "connect %s: %s", u->name, strerror(err));
        fail(u, why);
        return;
    }
    u->tcp_up = 1;
    if (u->cfg == NULL) {
        become_ready(u);
        return;
    }
    /* A master's session has message 1 in its output at once. */
    u->s = mbsc_session_new(u->cfg, &r);
    if (u->s == NULL) {
        snprintf(why, sizeof why, "cannot start a session: %s", mbsc_strerror(r));
        fail(u, why);
        return;
    }
    mbsc_link_init(&u->link, u->fd, u->s);
}

int gw_upstream_fd(const struct gw_upstream *u)
{
    return u->fd;
}

short gw_upstream_events(const struct gw_upstream *u)
{
    if (u->fd < 0)
        return 0;
    if (!u->tcp_up)
        return POLLOUT;
    if (u->s != NULL)
        return mbsc_link_events(&u->link);
    return (short)(POLLIN | (u->out_len > 0 ? POLLOUT : 0));
}

/* ---- plain Modbus/TCP ---- */

static int plain_flush(struct gw_upstream *u)
{
    while (u->out_len > 0) {
        size_t sent = 0;
        int os_err = 0, r = mbsc_sock_send(u->fd, u->out, u->out_len, &sent, &os_err);

        if (r == MBSC_ERR_WOULD_BLOCK)
            return 0;
        if (r != MBSC_OK) {
            char why[1024];

            snprintf(why, sizeof why, "send to %s: %s", u->name, strerror(os_err));
            fail(u, why);
            return -1;
        }
        memmove(u->out, u->out + sent, u->out_len - sent);
        u->out_len -= sent;
    }
    return 0;
}

/* Cut whole ADUs off the input; a header that cannot be one ends the connection. */
static void plain_deliver(struct gw_upstream *u)
{
    while (u->state == GW_UP_READY && u->in_len >= 6) {
        uint8_t adu[GW_MAX_ADU];
        size_t n = gw_adu_length(u->in);

        if (n == 0) {
            gw_upstream_reset(u, "malformed MBAP header from the PLC: the stream cannot be "
                                 "followed any more");
            return;
        }
        if (u->in_len < n)
            return;
        memcpy(adu, u->in, n);
        memmove(u->in, u->in + n, u->in_len - n);
        u->in_len -= n;
        deliver(u, adu, n);
    }
}

static void plain_io(struct gw_upstream *u, short revents)
{
    if ((revents & POLLOUT) && plain_flush(u) != 0)
        return;
    if (revents & (POLLIN | POLLERR | POLLHUP)) {
        for (;;) {
            size_t got = 0;
            int os_err = 0;
            int r =
                mbsc_sock_recv(u->fd, u->in + u->in_len, sizeof u->in - u->in_len, &got, &os_err);

            if (r == MBSC_ERR_WOULD_BLOCK)
                break;
            if (r != MBSC_OK) {
                char why[1024];

                snprintf(why, sizeof why, "%s closed the connection%s%s", u->name,
                         os_err != 0 ? ": " : "", os_err != 0 ? strerror(os_err) : "");
                fail(u, why);
                return;
            }
            u->in_len += got;
            plain_deliver(u);
            if (u->state != GW_UP_READY)
                return;
        }
    }
}

/* ---- mbsc session ---- */

static void session_failed(struct gw_upstream *u, int r)
{
    char why[1024];

    snprintf(why, sizeof why, "mbsc session with %s ended: %s%s%s", u->name, mbsc_strerror(r),
             u->link.os_err != 0 ? ": " : "", u->link.os_err != 0 ? strerror(u->link.os_err) : "");
    fail(u, why);
}

/* Hand out every opened payload; keep-alives are skipped. */
static void session_deliver(struct gw_upstream *u)
{
    for (;;) {
        uint8_t adu[GW_MAX_ADU];
        size_t n = 0;
        const uint8_t *p = mbsc_session_payload(u->s, &n);
        int r;

        if (p == NULL)
            return;
        if (n > 0 && (n < GW_MBAP + 1 || n > GW_MAX_ADU || gw_adu_length(p) != n)) {
            /* docs/protocol.md: an authenticated payload that is not an ADU ends the session. */
            gw_upstream_reset(u, "the mbsc peer sent a payload that is not a Modbus/TCP ADU");
            return;
        }
        memcpy(adu, p, n);
        r = mbsc_session_payload_ack(u->s); /* wipes the session's copy */
        if (r != MBSC_OK) {
            session_failed(u, r);
            return;
        }
        if (n > 0)
            deliver(u, adu, n);
        sodium_memzero(adu, sizeof adu);
        if (u->state != GW_UP_READY)
            return;
    }
}

static void session_io(struct gw_upstream *u, short revents)
{
    int r;

    if (revents & POLLOUT) {
        r = mbsc_link_flush(&u->link);
        if (r != MBSC_OK) {
            session_failed(u, r);
            return;
        }
    }
    if (revents & (POLLIN | POLLERR | POLLHUP)) {
        for (;;) {
            r = mbsc_link_read(&u->link);
            if (r == MBSC_ERR_WOULD_BLOCK && !(mbsc_session_state(u->s) & MBSC_SESSION_PAYLOAD))
                break;
            if (r != MBSC_OK && r != MBSC_ERR_WOULD_BLOCK) {
                session_failed(u, r);
                return;
            }
            if (u->state == GW_UP_CONNECTING && mbsc_session_established(u->s))
                become_ready(u);
            if (u->state == GW_UP_READY)
                session_deliver(u);
            if (u->state != GW_UP_READY && u->state != GW_UP_CONNECTING)
                return;
        }
    }
    /* The handshake reply and the keep-alive that follows go out now. */
    r = mbsc_link_flush(&u->link);
    if (r != MBSC_OK)
        session_failed(u, r);
    else if (u->state == GW_UP_CONNECTING && mbsc_session_established(u->s))
        become_ready(u);
}

void gw_upstream_io(struct gw_upstream *u, short revents)
{
    if (u->fd < 0 || revents == 0)
        return;
    if (!u->tcp_up) {
        connect_done(u);
        if (u->s != NULL)
            session_io(u, POLLOUT);
        return;
    }
    if (u->s != NULL)
        session_io(u, revents);
    else
        plain_io(u, revents);
}

int gw_upstream_send(struct gw_upstream *u, const uint8_t *adu, size_t len)
{
    int r;

    if (u->state != GW_UP_READY)
        return MBSC_ERR_STATE;
    if (u->s == NULL) {
        if (len > sizeof u->out - u->out_len)
            return MBSC_ERR_WOULD_BLOCK;
        memcpy(u->out + u->out_len, adu, len);
        u->out_len += len;
        (void)plain_flush(u);
        return MBSC_OK;
    }
    r = mbsc_session_send(u->s, adu, len);
    if (r == MBSC_ERR_WOULD_BLOCK)
        return r;
    if (r != MBSC_OK) {
        session_failed(u, r);
        return MBSC_OK; /* taken; its requester hears from the multiplexer */
    }
    r = mbsc_link_flush(&u->link);
    if (r != MBSC_OK)
        session_failed(u, r);
    return MBSC_OK;
}

void gw_upstream_tick(struct gw_upstream *u, int64_t now_ns)
{
    if (u->state == GW_UP_IDLE || (u->state == GW_UP_BACKOFF && now_ns >= u->due_ns)) {
        start_connect(u, now_ns);
    } else if (u->state == GW_UP_CONNECTING && now_ns >= u->due_ns) {
        char why[1024];

        snprintf(why, sizeof why, "%s %s: timed out after %u ms",
                 u->tcp_up ? "handshake with" : "connect", u->name, u->connect_ms);
        fail(u, why);
    }
}

int gw_upstream_timeout(const struct gw_upstream *u, int64_t now_ns)
{
    if (u->state == GW_UP_IDLE)
        return 0;
    if (u->state == GW_UP_CONNECTING || u->state == GW_UP_BACKOFF)
        return gw_ms_until(u->due_ns, now_ns);
    return -1;
}
