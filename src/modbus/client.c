/* SPDX-License-Identifier: ISC */
/*
 * client.c - unchanged libmodbus masters over the secure channel: the
 * choice of path, and the pump.
 *
 * mbsc_modbus_connect() takes the synchronous path (client_sync.c) when
 * libmodbus's layout is verified and MBSC_MODBUS_PUMP is not set to 1.
 * Otherwise (this file) it runs the handshake (mbsc_connect), then hands
 * libmodbus one end of an AF_UNIX socketpair.  A pump thread owns the other
 * end and the TCP connection, and moves whole ADUs in one poll() loop:
 *
 *   libmodbus -> pair -> cut into ADUs by the MBAP length -> one sealed
 *   frame each -> TCP;   TCP -> authenticated, opened -> empty payload
 *   (keep-alive) dropped, malformed one fatal -> pair -> libmodbus.
 *
 * A pump lives in three states:
 *
 *  - live: both sides up.
 *  - dead: the secure side failed (slave gone, bad tag, malformed ADU...).
 *    The error is recorded for mbsc_modbus_error(), the TCP connection is
 *    closed (the session wiped) and our write side of the pair is shut
 *    down, so that libmodbus's next read sees the end of the stream at once
 *    and its call fails with ECONNRESET instead of waiting for the response
 *    timeout.  What libmodbus still writes is read and dropped.  The pair
 *    is deliberately not closed: on a send() error with
 *    MODBUS_ERROR_RECOVERY_LINK, libmodbus 3.1.6 (send_msg) loops over
 *    close/reconnect until a send succeeds, forever since its reconnect
 *    cannot succeed (MB_UNREACHABLE_IP), while a read error is reported
 *    after a single reconnect attempt.
 *  - exit: libmodbus closed its end (modbus_close): the pump closes and
 *    wipes everything and its thread ends.
 *
 * Late answers.  libmodbus sends one request, waits for its answer and,
 * once its response timeout has passed, gives up and goes on; a slave
 * that answers later must not have that answer taken for the next one
 * (libmodbus would reject it for its transaction id, and every later call
 * would meet the answer of the call before).  The pump notes the
 * transaction id of every request libmodbus writes and hands over only
 * the first answer that carries the id of the last one; any other is
 * dropped and counted (mbsc_modbus_dropped_answers).  What the pump cannot
 * know is when libmodbus gives up: an answer that arrives after the
 * timeout but before the next request is still the awaited one, and goes
 * into the pair, where libmodbus's next call reads it and fails.  That
 * must cost that one call only, so the pump (on Linux) watches which came
 * first: libmodbus writing its next request, or libmodbus reading the
 * last of the answer it was given.  Both are events on the pump's end of
 * the pair, made in that order by libmodbus's one thread, and an epoll
 * set reports them in the order they happened when each has its own
 * edge-triggered entry: input on the pair, and space freed on a second
 * descriptor of it (the kernel signals freed space when the reader has
 * consumed a buffer the pump wrote).  A request that comes while an
 * answer is still unread in the pair will read that answer instead of its
 * own: its own answer is dropped when it comes, and the call after it
 * starts clean.  Elsewhere (no epoll) only the first rule applies.
 *
 * The pump never dereferences the modbus_t: the application may free it at
 * any time.  mbsc_modbus_error() and mbsc_modbus_cipher() find a pump
 * context's record by its address in a registry (the adapter's only global
 * state; synchronous contexts carry their own and are asked first).
 * Addresses are reused by malloc, so registering a context hides older
 * records with the same address.  Pump threads are joinable: by
 * mbsc_modbus_close(), which therefore returns only once the thread is
 * gone, or, after a plain modbus_close() + modbus_free(), by the next
 * mbsc_modbus_connect() or mbsc_modbus_close().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#ifdef __linux__
#include <linux/sockios.h> /* SIOCOUTQ */
#include <sys/epoll.h>
#include <sys/ioctl.h>
#define PUMP_WATCHES_READS 1
#else
#define PUMP_WATCHES_READS 0
#endif

#include "mbsc/link.h"
#include "modbus/modbus_internal.h"

/* Records of pumps that ended by themselves, kept for mbsc_modbus_error(). */
#define KEEP_EXITED 16u

/* A pump needs little stack; 8 MiB each would crowd 32-bit address spaces. */
#define PUMP_STACK_BYTES (256u * 1024u)

/* --- Registry ------------------------------------------------------------- */

struct mb_client {
    struct mb_client *next;
    modbus_t *ctx; /* key; NULL once another context got the address */
    pthread_t thread;
    const mbsc_cipher *cipher; /* static descriptor, set before the pump starts */
    int error;                 /* first failure of the secure side; under the lock */
    uint64_t dropped;          /* answers not for the request outstanding; under the lock */
    int exited;                /* the pump is done with this record; under the lock */
    int joined;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mb_client *registry; /* newest first */

/*
 * Join pumps that have ended (they no longer need the lock: pthread_join
 * only waits for their last instructions), free records nobody can ask
 * about any more, and keep at most KEEP_EXITED of the others.
 */
static void registry_reap_locked(void)
{
    struct mb_client **pp = &registry, *c;
    unsigned kept = 0;

    while ((c = *pp) != NULL) {
        if (c->exited && !c->joined) {
            (void)pthread_join(c->thread, NULL);
            c->joined = 1;
        }
        if (c->joined && (c->ctx == NULL || ++kept > KEEP_EXITED)) {
            *pp = c->next;
            free(c);
            continue;
        }
        pp = &c->next;
    }
}

static struct mb_client *registry_find_locked(const modbus_t *ctx)
{
    struct mb_client *c;

    for (c = registry; c != NULL; c = c->next) {
        if (c->ctx == ctx)
            return c;
    }
    return NULL;
}

static void registry_add(struct mb_client *rec, modbus_t *ctx)
{
    struct mb_client *c;

    (void)pthread_mutex_lock(&registry_lock);
    /* A context at this address was freed: its records describe nothing now. */
    for (c = registry; c != NULL; c = c->next) {
        if (c->ctx == ctx)
            c->ctx = NULL;
    }
    rec->ctx = ctx;
    rec->next = registry;
    registry = rec;
    registry_reap_locked();
    (void)pthread_mutex_unlock(&registry_lock);
}

/* Take ctx's record out of the registry (NULL if it has none). */
static struct mb_client *registry_take(const modbus_t *ctx)
{
    struct mb_client **pp, *c = NULL;

    (void)pthread_mutex_lock(&registry_lock);
    for (pp = &registry; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->ctx == ctx) {
            c = *pp;
            *pp = c->next;
            break;
        }
    }
    registry_reap_locked();
    (void)pthread_mutex_unlock(&registry_lock);
    return c;
}

/* --- The pump -------------------------------------------------------------- */

struct pump {
    struct mb_client *rec;
    mbsc_conn *conn; /* NULL once the secure side has failed */
    mbsc_session *s; /* conn's session */
    int tcp;         /* conn's socket (non-blocking) */
    int app;         /* our end of the pair (non-blocking) */
    int tcp_eof;     /* the slave closed: what it sent before still counts */
    int app_eof;     /* libmodbus closed its end: time to exit */
    int app_shut;    /* our write side of the pair is shut down */
    size_t req_len;  /* req[0, req_len): from libmodbus, not sealed yet */
    size_t noted;    /* req[0, noted): whole requests whose id is noted */
    size_t rsp_pos;  /* rsp[rsp_pos, rsp_len): opened ADU not yet written */
    size_t rsp_len;  /*   to libmodbus */
    /* Late answers (see the top): the request libmodbus waits for. */
    uint16_t want_tid;
    int waiting;           /* a request went out, its answer not handed over yet */
    int doomed;            /* libmodbus reads an older answer as that request's */
    int in_pair;           /* an answer is in the pair, not all read by libmodbus yet */
    int ep;                /* epoll: app's input, and app_watch's freed space (-1 if none) */
    int app_watch;         /* a second descriptor of app (-1 if none) */
    int app_more;          /* app may hold input not read yet (edge-triggered) */
    struct mbsc_link link; /* tcp and s: reads go into the session's own input */
    uint8_t req[2 * MBSC_MODBUS_MAX_ADU];
    uint8_t rsp[MBSC_MODBUS_MAX_ADU];
};

/* The secure side failed: record why, close it, go dead (see the top). */
static void pump_fail(struct pump *p, int err)
{
    if (p->conn == NULL)
        return;
    (void)pthread_mutex_lock(&registry_lock);
    if (p->rec->error == MBSC_OK)
        p->rec->error = err;
    (void)pthread_mutex_unlock(&registry_lock);
    mbsc_conn_close(p->conn); /* closes the socket, wipes the session */
    p->conn = NULL;
    p->s = NULL;
    p->tcp = -1;
    p->req_len = p->noted = 0;
    mbsc_wipe(p->req, sizeof p->req);
}

static int output_pending(struct pump *p)
{
    size_t n = 0;

    if (p->conn != NULL)
        (void)mbsc_session_output(p->s, &n);
    return n != 0;
}

/* Send what the session has sealed, as far as the socket takes it now. */
static void pump_flush(struct pump *p)
{
    int r;

    if (p->conn == NULL)
        return;
    r = mbsc_link_flush(&p->link);
    if (r != MBSC_OK)
        pump_fail(p, r);
}

/* 1 if req starts with a whole ADU (or a malformed header, which seal reports). */
static int request_ready(const struct pump *p)
{
    size_t n;

    if (p->req_len < MBSC_MBAP_LENGTH_END)
        return 0;
    n = mbsc_adu_length(p->req);
    return n == 0 || n <= p->req_len;
}

/* Seal every whole ADU libmodbus has written, while the session has room. */
static void pump_seal(struct pump *p)
{
    while (p->conn != NULL && request_ready(p)) {
        size_t n = mbsc_adu_length(p->req);
        int r;

        if (n == 0) {
            /* libmodbus writes MBAP headers itself; this is a raw request gone wrong. */
            pump_fail(p, MBSC_ERR_BAD_ADU);
            return;
        }
        r = mbsc_session_send(p->s, p->req, n);
        if (r == MBSC_ERR_WOULD_BLOCK)
            return; /* flushed, then sealed on a later round */
        if (r != MBSC_OK) {
            pump_fail(p, r);
            return;
        }
        memmove(p->req, p->req + n, p->req_len - n);
        p->req_len -= n;
        p->noted = p->noted > n ? p->noted - n : 0;
    }
}

/* Write the pending opened ADU to libmodbus; 1 once nothing is pending. */
static int pump_write_app(struct pump *p)
{
    while (p->rsp_pos < p->rsp_len) {
        size_t sent;
        int os_err, r;

        r = mbsc_sock_send(p->app, p->rsp + p->rsp_pos, p->rsp_len - p->rsp_pos, &sent, &os_err);

        if (r == MBSC_ERR_WOULD_BLOCK)
            return 0;
        if (r != MBSC_OK) {
            p->app_eof = 1; /* libmodbus closed its end: nobody wants it */
            break;
        }
        p->rsp_pos += sent;
        p->in_pair = PUMP_WATCHES_READS;
    }
    p->rsp_pos = p->rsp_len = 0;
    return 1;
}

/* 1 if the answer in rsp is the one libmodbus waits for and will read as such. */
static int answer_awaited(const struct pump *p)
{
    return p->waiting && !p->doomed && mbsc_load16_be(p->rsp) == p->want_tid;
}

static void drop_answer(struct pump *p)
{
    mbsc_wipe(p->rsp, sizeof p->rsp);
    (void)pthread_mutex_lock(&registry_lock);
    p->rec->dropped++;
    (void)pthread_mutex_unlock(&registry_lock);
}

/* Move opened payloads to libmodbus, one at a time, in order. */
static void pump_deliver(struct pump *p)
{
    size_t len;
    int r;

    while (pump_write_app(p) && p->conn != NULL) {
        r = mbsc_session_recv(p->s, p->rsp, sizeof p->rsp, &len);
        if (r == 1) {
            if (len == 0)
                continue; /* a keep-alive */
            if (mbsc_modbus_check_adu(p->rsp, len) != MBSC_OK) {
                pump_fail(p, MBSC_ERR_BAD_ADU);
                return;
            }
            if (!answer_awaited(p)) {
                drop_answer(p);
                continue;
            }
            p->waiting = 0;
            p->rsp_len = len;
            continue;
        }
        if (r < 0) {
            /* BUFFER_TOO_SMALL: longer than any ADU. */
            pump_fail(p, r == MBSC_ERR_BUFFER_TOO_SMALL ? MBSC_ERR_BAD_ADU : r);
            return;
        }
        if (p->tcp_eof)
            pump_fail(p, mbsc_session_feed_eof(p->s)); /* PEER_CLOSED or TRUNCATED */
        return;
    }
}

/* Everything that can move without waiting. */
static void pump_work(struct pump *p)
{
    /* A flush that empties the output makes room for the next requests. */
    do {
        pump_seal(p);
        pump_flush(p);
    } while (p->conn != NULL && !output_pending(p) && request_ready(p));
    pump_deliver(p);
    if (p->conn == NULL && p->rsp_pos == p->rsp_len && !p->app_shut) {
        (void)shutdown(p->app, SHUT_WR); /* libmodbus reads the end of the stream */
        p->app_shut = 1;
    }
}

static void pump_app_read_some(struct pump *p);

/*
 * A new request from libmodbus: from now on only its answer is handed
 * over, and none at all if an answer is still unread in the pair: this
 * request's call reads that one (and fails on its transaction id), so
 * the pair is as good as empty for the request after it, which may
 * arrive in the same read.
 */
static void note_requests(struct pump *p)
{
    while (p->req_len - p->noted >= MBSC_MBAP_LENGTH_END) {
        size_t n = mbsc_adu_length(p->req + p->noted);

        if (n == 0 || p->req_len - p->noted < n)
            return; /* malformed (pump_seal fails it) or not whole yet */
        p->want_tid = mbsc_load16_be(p->req + p->noted);
        p->waiting = 1;
        /*
         * Ask the pair itself: the freed-space event that says libmodbus read
         * the last answer may come after this request's in the epoll set (about
         * one request in 7000 here), and the request would be taken for one
         * that reads an old answer: its own answer dropped, the call failed.
         */
        if (p->in_pair)
            pump_app_read_some(p);
        p->doomed = p->in_pair;
        p->in_pair = 0;
        p->noted += n;
    }
}

/*
 * Bytes from libmodbus: requests while live, dropped once dead.  Read
 * until nothing is left or there is no room (app_more: read again later),
 * as an edge-triggered descriptor needs.
 */
static void pump_read_app(struct pump *p, short revents)
{
    uint8_t sink[MBSC_MODBUS_MAX_ADU];

    if ((revents & (POLLIN | POLLHUP | POLLERR)) == 0)
        return;
    for (;;) {
        uint8_t *dst = p->conn != NULL ? p->req + p->req_len : sink;
        size_t cap = p->conn != NULL ? sizeof p->req - p->req_len : sizeof sink;
        size_t got;
        int os_err, r;

        if (cap == 0) {
            /* Not reading now (the slave is slow); a hang-up still ends it all. */
            if (revents & (POLLHUP | POLLERR))
                p->app_eof = 1;
            p->app_more = 1;
            return;
        }
        r = mbsc_sock_recv(p->app, dst, cap, &got, &os_err);
        if (r == MBSC_ERR_WOULD_BLOCK) {
            p->app_more = 0;
            return;
        }
        if (r != MBSC_OK) {
            p->app_eof = 1;
            return;
        }
        if (p->conn != NULL) {
            p->req_len += got;
            note_requests(p);
        }
    }
}

/*
 * libmodbus read some of what the pump wrote to the pair: once nothing
 * written is left unread (and nothing is left to write), no answer is in
 * the pair any more.
 */
static void pump_app_read_some(struct pump *p)
{
#if PUMP_WATCHES_READS
    int unread = 1;

    if (p->rsp_pos == p->rsp_len && ioctl(p->app, SIOCOUTQ, &unread) == 0 && unread == 0)
        p->in_pair = 0;
#else
    (void)p;
#endif
}

/*
 * One read into the session's input (the link).  A session error, or the
 * end of the stream, is met by pump_deliver after the payloads that were
 * opened before it; a socket error ends the secure side now.
 */
static void pump_read_tcp(struct pump *p)
{
    int r = mbsc_link_read(&p->link);

    if (p->link.eof)
        p->tcp_eof = 1; /* the end of the stream, not a reset */
    else if (r != MBSC_OK && r != MBSC_ERR_WOULD_BLOCK && mbsc_session_error(p->s) == MBSC_OK)
        pump_fail(p, r);
}

#if PUMP_WATCHES_READS
#define WATCH_INPUT 0u /* epoll data: app's input */
#define WATCH_SPACE 1u /* epoll data: app_watch's freed space */

/*
 * The pair's two entries in the epoll set, edge-triggered: each new
 * request and each buffer libmodbus finishes reading is one event, in the
 * order they happened.  -1 with errno if the set cannot be made.
 */
static int pump_watch_init(struct pump *p)
{
    struct epoll_event ev;

    p->ep = epoll_create1(EPOLL_CLOEXEC);
    if (p->ep < 0)
        return -1;
    p->app_watch = fcntl(p->app, F_DUPFD_CLOEXEC, 0);
    if (p->app_watch < 0)
        return -1;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLET;
    ev.data.u32 = WATCH_INPUT;
    if (epoll_ctl(p->ep, EPOLL_CTL_ADD, p->app, &ev) != 0)
        return -1;
    ev.events = EPOLLOUT | EPOLLET;
    ev.data.u32 = WATCH_SPACE;
    return epoll_ctl(p->ep, EPOLL_CTL_ADD, p->app_watch, &ev);
}

/* What happened on the pair, in the order it happened. */
static void pump_app_events(struct pump *p)
{
    struct epoll_event ev[2];
    int i, n = epoll_wait(p->ep, ev, 2, 0);

    for (i = 0; i < n; i++) {
        short revents = (short)((ev[i].events & EPOLLIN ? POLLIN : 0) |
                                (ev[i].events & EPOLLHUP ? POLLHUP : 0) |
                                (ev[i].events & EPOLLERR ? POLLERR : 0));

        if (ev[i].data.u32 == WATCH_INPUT)
            pump_read_app(p, revents);
        else
            pump_app_read_some(p);
    }
}
#else
static int pump_watch_init(struct pump *p)
{
    (void)p;
    return 0;
}
#endif

/* Wait for either side and read what arrived.  -1 if poll() itself fails. */
static int pump_wait(struct pump *p)
{
    struct pollfd pf[2];
    int want_tcp_input;

#if PUMP_WATCHES_READS
    /* The pair's events come through the epoll set; space to write is one of them. */
    pf[0].fd = p->ep;
    pf[0].events = POLLIN;
    if (p->app_more && (p->conn == NULL || p->req_len < sizeof p->req))
        pump_read_app(p, POLLIN); /* input left behind when there was no room */
#else
    pf[0].fd = p->app;
    pf[0].events = 0;
    if (p->conn == NULL || p->req_len < sizeof p->req)
        pf[0].events |= POLLIN;
    if (p->rsp_pos < p->rsp_len)
        pf[0].events |= POLLOUT;
#endif
    pf[1].fd = -1; /* ignored: a hang-up we are not ready to read would spin */
    pf[1].events = 0;
    /* Read only with no opened payload waiting: that is the back-pressure. */
    want_tcp_input = p->conn != NULL && p->rsp_len == 0 && !p->tcp_eof &&
                     !(mbsc_session_state(p->s) & MBSC_SESSION_PAYLOAD) &&
                     (mbsc_link_events(&p->link) & POLLIN);
    if (want_tcp_input)
        pf[1].events |= POLLIN;
    if (output_pending(p))
        pf[1].events |= POLLOUT;
    if (pf[1].events != 0)
        pf[1].fd = p->tcp;
    pf[0].revents = pf[1].revents = 0;
    if (p->app_eof)
        return 0;
    if (poll(pf, 2, -1) < 0)
        return errno == EINTR ? 0 : -1;
#if PUMP_WATCHES_READS
    if (pf[0].revents & POLLIN)
        pump_app_events(p);
#else
    pump_read_app(p, pf[0].revents);
#endif
    if (want_tcp_input && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)))
        pump_read_tcp(p);
    return 0;
}

static void pump_free(struct pump *p)
{
    mbsc_sock_close(p->app_watch);
    mbsc_sock_close(p->ep);
    mbsc_wipe(p, sizeof *p); /* Modbus plaintext */
    free(p);
}

static void pump_exit(struct pump *p)
{
    mbsc_conn *conn;

    pump_flush(p); /* requests libmodbus wrote just before closing: best effort */
    conn = p->conn;
    /* Both descriptors of our end: libmodbus sees the end of the stream once both are closed. */
    mbsc_sock_close(p->app_watch);
    mbsc_sock_close(p->ep);
    p->app_watch = p->ep = -1;
    mbsc_sock_close(p->app);
    /*
     * From here on the record belongs to the registry (which may join us
     * and free it).  It is marked before the TCP connection is closed, so
     * that once the slave sees the close, the next reap is sure to find
     * this thread finished or finishing.
     */
    (void)pthread_mutex_lock(&registry_lock);
    p->rec->exited = 1;
    (void)pthread_mutex_unlock(&registry_lock);
    mbsc_conn_close(conn);
    pump_free(p);
}

static void *pump_main(void *arg)
{
    struct pump *p = arg;

    for (;;) {
        pump_work(p);
        if (p->app_eof)
            break;
        if (pump_wait(p) != 0) {
            pump_fail(p, MBSC_ERR_IO); /* poll() failing (ENOMEM) would only spin */
            break;
        }
    }
    pump_exit(p);
    return NULL;
}

/*
 * Start the pump with every signal blocked, so that process signals go to
 * the application's threads, as they would without the adapter.
 */
static int pump_start(struct mb_client *rec, struct pump *p)
{
    pthread_attr_t attr;
    sigset_t all, old;
    size_t stack = PUMP_STACK_BYTES;
    int e;

    if (pthread_attr_init(&attr) != 0)
        return ENOMEM;
#ifdef PTHREAD_STACK_MIN
    if (stack < (size_t)PTHREAD_STACK_MIN)
        stack = (size_t)PTHREAD_STACK_MIN;
#endif
    (void)pthread_attr_setstacksize(&attr, stack); /* the default stack is fine too */
    (void)sigfillset(&all);
    (void)pthread_sigmask(SIG_SETMASK, &all, &old);
    e = pthread_create(&rec->thread, &attr, pump_main, p);
    (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    (void)pthread_attr_destroy(&attr);
    return e;
}

/* --- Connecting ------------------------------------------------------------ */

/*
 * mbsc_connect() may have read past the handshake (a slave that spoke
 * first): hand what the connection layer holds to libmodbus, so that the
 * pump starts on a clean raw socket.  The pair is empty here: it has room.
 */
static int adopt_early_payloads(mbsc_conn *conn, int app, char *why, size_t why_len)
{
    uint8_t adu[MBSC_MODBUS_MAX_ADU];
    size_t len, sent;
    int r, os_err;

    while ((r = mbsc_conn_recv(conn, adu, sizeof adu, &len, 0)) == MBSC_OK) {
        if (len == 0)
            continue; /* keep-alive */
        if (mbsc_modbus_check_adu(adu, len) != MBSC_OK) {
            r = MBSC_ERR_BAD_ADU;
            break;
        }
        if (mbsc_sock_send(app, adu, len, &sent, &os_err) != MBSC_OK || sent != len) {
            r = MBSC_ERR_IO;
            break;
        }
    }
    mbsc_wipe(adu, sizeof adu);
    if (r == MBSC_ERR_TIMEOUT)
        return MBSC_OK; /* nothing more is waiting */
    if (r == MBSC_ERR_BUFFER_TOO_SMALL)
        r = MBSC_ERR_BAD_ADU;
    mbsc_why(why, why_len, "%s: right after the handshake: %s", mbsc_conn_peer_address(conn),
             mbsc_strerror(r));
    return r;
}

static struct pump *pump_new(mbsc_conn *conn, int app, struct mb_client *rec)
{
    struct pump *p = calloc(1, sizeof *p);

    if (p == NULL)
        return NULL;
    p->rec = rec;
    p->conn = conn;
    p->s = mbsc_conn_session(conn);
    p->tcp = mbsc_conn_fd(conn);
    mbsc_link_init(&p->link, p->tcp, p->s);
    p->app = app;
    p->ep = p->app_watch = -1;
    return p;
}

static modbus_t *connect_fail(int r, int *err, int pair[2], mbsc_conn *conn, modbus_t *ctx,
                              struct pump *p, struct mb_client *rec)
{
    if (err != NULL)
        *err = r;
    if (ctx != NULL)
        modbus_free(ctx); /* does not close the socket */
    mbsc_sock_close(pair[0]);
    mbsc_sock_close(pair[1]);
    mbsc_conn_close(conn);
    if (p != NULL)
        pump_free(p);
    free(rec);
    return NULL;
}

/* MBSC_MODBUS_PUMP=1 forces the pump (to test it, or to rule out the synchronous path). */
static int pump_forced(void)
{
    const char *v = getenv(MBSC_MODBUS_PUMP_ENV);

    return v != NULL && strcmp(v, "1") == 0;
}

static modbus_t *pump_connect(const char *hostport, const mbsc_config *cfg, int timeout_ms,
                              int *err, char *why, size_t why_len)
{
    int pair[2] = {-1, -1}, r;
    mbsc_conn *conn = NULL;
    struct mb_client *rec;
    struct pump *p;
    modbus_t *ctx;

    mbsc_why(why, why_len, "%s", "");
    /* The pair first: a process out of descriptors costs the slave nothing. */
    r = mb_socketpair(pair, why, why_len);
    if (r == MBSC_OK)
        r = mbsc_connect(hostport, cfg, timeout_ms, &conn, why, why_len);
    if (r == MBSC_OK)
        r = adopt_early_payloads(conn, pair[0], why, why_len);
    if (r != MBSC_OK)
        return connect_fail(r, err, pair, conn, NULL, NULL, NULL);

    rec = calloc(1, sizeof *rec);
    p = rec != NULL ? pump_new(conn, pair[0], rec) : NULL;
    if (p != NULL && pump_watch_init(p) != 0) {
        int e = errno;

        mbsc_why(why, why_len, "mbsc_modbus_connect: cannot watch the pump's socket: %s",
                 mbsc_os_error(e));
        return connect_fail(mbsc_sock_fd_error(e, MBSC_ERR_IO), err, pair, conn, NULL, p, rec);
    }
    ctx = p != NULL ? mb_context_new(pair[1]) : NULL;
    if (ctx == NULL) {
        mbsc_why(why, why_len, "mbsc_modbus_connect: out of memory");
        return connect_fail(MBSC_ERR_NOMEM, err, pair, conn, NULL, p, rec);
    }
    rec->cipher = mbsc_session_cipher(mbsc_conn_session(conn));
    r = pump_start(rec, p);
    if (r != 0) {
        mbsc_why(why, why_len, "mbsc_modbus_connect: cannot start the pump thread: %s",
                 mbsc_os_error(r));
        return connect_fail(MBSC_ERR_NOMEM, err, pair, conn, ctx, p, rec);
    }
    /* The pump owns pair[0] and conn now; libmodbus owns pair[1]. */
    registry_add(rec, ctx);
    return ctx;
}

MBSC_API modbus_t *mbsc_modbus_connect(const char *hostport, const mbsc_config *cfg, int timeout_ms,
                                       int *err, char *why, size_t why_len)
{
    modbus_t *ctx;
    int r = MBSC_OK;

    mbsc_why(why, why_len, "%s", "");
    if (err != NULL)
        *err = MBSC_OK;
    if (hostport == NULL || cfg == NULL || mbsc_config_role(cfg) != MBSC_ROLE_MASTER) {
        mbsc_why(why, why_len, "mbsc_modbus_connect: needs an address and a master's config");
        if (err != NULL)
            *err = MBSC_ERR_INVALID_ARG;
        return NULL;
    }
    if (!pump_forced()) {
        ctx = mb_sync_connect(hostport, cfg, timeout_ms, &r, why, why_len);
        if (ctx != NULL || r != MBSC_OK) {
            if (err != NULL)
                *err = r;
            return ctx;
        }
        /* Not verified: the pump needs nothing but libmodbus's public calls. */
    }
    return pump_connect(hostport, cfg, timeout_ms, err, why, why_len);
}

/* --- Queries and closing ---------------------------------------------------- */

MBSC_API int mbsc_modbus_probe_path(char *why, size_t why_len)
{
    if (pump_forced()) {
        mbsc_why(why, why_len, "%s=1 forces the pump", MBSC_MODBUS_PUMP_ENV);
        return MBSC_MODBUS_PATH_PUMP;
    }
    return mb_sync_available(why, why_len) ? MBSC_MODBUS_PATH_SYNC : MBSC_MODBUS_PATH_PUMP;
}

MBSC_API const char *mbsc_modbus_path_name(int path)
{
    if (path == MBSC_MODBUS_PATH_SYNC)
        return "sync";
    if (path == MBSC_MODBUS_PATH_PUMP)
        return "pump";
    return "none";
}

MBSC_API int mbsc_modbus_path(modbus_t *ctx)
{
    int found, unused;

    if (ctx == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (mb_sync_error(ctx, &unused))
        return MBSC_MODBUS_PATH_SYNC;
    (void)pthread_mutex_lock(&registry_lock);
    found = registry_find_locked(ctx) != NULL;
    (void)pthread_mutex_unlock(&registry_lock);
    return found ? MBSC_MODBUS_PATH_PUMP : MBSC_ERR_INVALID_ARG;
}

MBSC_API int mbsc_modbus_error(modbus_t *ctx)
{
    struct mb_client *c;
    int r;

    if (ctx == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (mb_sync_error(ctx, &r))
        return r;
    (void)pthread_mutex_lock(&registry_lock);
    c = registry_find_locked(ctx);
    r = c != NULL ? c->error : MBSC_ERR_INVALID_ARG;
    (void)pthread_mutex_unlock(&registry_lock);
    return r;
}

MBSC_API const mbsc_cipher *mbsc_modbus_cipher(modbus_t *ctx)
{
    struct mb_client *c;
    const mbsc_cipher *cipher;

    if (ctx == NULL)
        return NULL;
    if (mb_sync_cipher(ctx, &cipher))
        return cipher;
    (void)pthread_mutex_lock(&registry_lock);
    c = registry_find_locked(ctx);
    cipher = c != NULL ? c->cipher : NULL;
    (void)pthread_mutex_unlock(&registry_lock);
    return cipher;
}

MBSC_API int64_t mbsc_modbus_dropped_answers(modbus_t *ctx)
{
    struct mb_client *c;
    uint64_t n = 0;
    int found;

    if (ctx == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (mb_sync_dropped_answers(ctx, &n))
        return (int64_t)n;
    (void)pthread_mutex_lock(&registry_lock);
    c = registry_find_locked(ctx);
    found = c != NULL;
    if (found)
        n = c->dropped;
    (void)pthread_mutex_unlock(&registry_lock);
    return found ? (int64_t)n : MBSC_ERR_INVALID_ARG;
}

MBSC_API int mbsc_modbus_set_reconnect(modbus_t *ctx, const mbsc_config *cfg)
{
    if (ctx == NULL || (cfg != NULL && mbsc_config_role(cfg) != MBSC_ROLE_MASTER))
        return MBSC_ERR_INVALID_ARG;
    if (mb_sync_set_reconnect(ctx, cfg))
        return MBSC_OK;
    return mbsc_modbus_path(ctx) == MBSC_MODBUS_PATH_PUMP ? MBSC_ERR_STATE : MBSC_ERR_INVALID_ARG;
}

MBSC_API void mbsc_modbus_close(modbus_t *ctx)
{
    struct mb_client *rec;

    if (ctx == NULL)
        return;
    rec = registry_take(ctx);
    /* Closing libmodbus's end is what tells the pump to finish. */
    modbus_close(ctx);
    modbus_free(ctx);
    if (rec == NULL)
        return;
    if (!rec->joined)
        (void)pthread_join(rec->thread, NULL);
    free(rec);
}
