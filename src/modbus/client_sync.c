/* SPDX-License-Identifier: ISC */
/*
 * client_sync.c - the synchronous master: mbsc's transport under libmodbus.
 *
 * The modbus_t that mbsc_modbus_connect() returns gets a private copy of
 * libmodbus's TCP backend table (libmodbus_layout.c) whose I/O entries
 * land here, in the caller's thread, on the context's own mbsc_conn:
 *
 *   send    one whole ADU from libmodbus -> sealed into one frame, written
 *           with whatever the session had queued before it (a keep-alive,
 *           a rekey...), all by mbsc_conn_send;
 *   select  an opened ADU is waiting -> ready at once; otherwise
 *           mbsc_conn_recv for up to the time libmodbus gives (its response
 *           or byte timeout), which reads and opens frames; keep-alives are
 *           dropped, a malformed ADU ends the session, and an answer that
 *           is not for the request outstanding is dropped and counted
 *           while the wait goes on (late answers, below);
 *   recv    copies the bytes libmodbus asks for out of that ADU;
 *   close   closes the connection (the session is wiped);
 *   free    closes, wipes and frees this transport, then lets libmodbus
 *           free the context with its own TCP entry;
 *   connect a new secure connection and handshake (reconnect; never a
 *           plaintext connection);
 *   flush   drops what was received and not read.
 *
 * No thread, no socketpair, no global state: everything lives in the
 * struct mb_sync that the context's table copy points back to.
 *
 * Late answers.  libmodbus sends one request and waits for its answer;
 * when its response timeout passes it gives up and goes on, and a slave
 * that answers later puts that answer in front of the next one.  libmodbus
 * then rejects it (wrong transaction id), and every later call would meet
 * the answer of the call before.  libmodbus writes a new transaction id
 * into every request, and every ADU passes through send here: so only an
 * answer carrying the id of the last request sent, and only the first
 * such answer, is handed over; any other is dropped and counted
 * (mbsc_modbus_dropped_answers), and the wait goes on within the same
 * timeout.
 *
 * Failures of the secure side (slave gone, bad tag, malformed ADU) are
 * recorded for mbsc_modbus_error(), and turned into what libmodbus knows
 * of a dead TCP link: select reports "ready" and recv the end of the
 * stream, so the call fails at once with ECONNRESET, and later sends fail
 * with ECONNRESET.  The session has wiped its keys by then; the socket,
 * shut down, stays open (so modbus_get_socket() stays valid) until
 * modbus_close().
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "modbus/libmodbus_layout.h"
#include "modbus/modbus_internal.h"

#define HOSTPORT_MAX 300 /* longer than any "[V6]:PORT" or DNS name and port */

struct mb_sync {
    struct mb_backend_copy backend; /* first: the context's backend points here */
    const struct mb_layout *layout;
    mbsc_conn *conn;           /* NULL once closed */
    const mbsc_cipher *cipher; /* of the last handshake */
    int error;                 /* first failure of the secure side, MBSC_OK if none */
    /* Reconnecting: the same slave with the same config (borrowed). */
    const mbsc_config *cfg;
    int connect_timeout_ms;
    char hostport[HOSTPORT_MAX];
    /* The request libmodbus waits for: its transaction id, until answered. */
    uint16_t want_tid;
    int waiting;
    uint64_t dropped; /* answers not for the request outstanding */
    /* rsp[rsp_pos, rsp_len): the opened ADU libmodbus is reading. */
    size_t rsp_pos, rsp_len;
    uint8_t rsp[MBSC_MODBUS_MAX_ADU];
};

/* --- Helpers ---------------------------------------------------------------- */

static void drop_response(struct mb_sync *t)
{
    mbsc_wipe(t->rsp, sizeof t->rsp); /* Modbus plaintext */
    t->rsp_pos = t->rsp_len = 0;
}

/* The secure side failed: remember why and end the session (it wipes its keys). */
static void sync_fail(struct mb_sync *t, int err)
{
    if (t->error == MBSC_OK)
        t->error = err;
    drop_response(t);
    if (t->conn != NULL) {
        /* The session may still be fine (a malformed ADU): end it, which wipes it. */
        (void)mbsc_session_feed_eof(mbsc_conn_session(t->conn));
        (void)shutdown(mbsc_conn_fd(t->conn), SHUT_RDWR);
    }
}

static int live(const struct mb_sync *t)
{
    return t->conn != NULL && t->error == MBSC_OK;
}

/* A timeval as poll() milliseconds, rounded up; NULL waits forever. */
static int timeval_ms(const struct timeval *tv)
{
    long long ms;

    if (tv == NULL)
        return -1;
    if (tv->tv_sec < 0 || tv->tv_usec < 0)
        return 0;
    ms = (long long)tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* What is left of tv after elapsed_ns, as select() on Linux leaves it. */
static void timeval_consume(struct timeval *tv, int64_t elapsed_ns)
{
    int64_t left;

    if (tv == NULL)
        return;
    left = (int64_t)tv->tv_sec * 1000000 + (int64_t)tv->tv_usec - elapsed_ns / 1000;
    if (left < 0)
        left = 0;
    tv->tv_sec = (time_t)(left / 1000000);
    tv->tv_usec = (suseconds_t)(left % 1000000);
}

/* libmodbus's response timeout, as milliseconds for a send. */
static int response_timeout_ms(modbus_t *ctx)
{
    uint32_t sec = 0, usec = 0;
    struct timeval tv;

    if (modbus_get_response_timeout(ctx, &sec, &usec) != 0)
        return 500;
    tv.tv_sec = (time_t)sec;
    tv.tv_usec = (suseconds_t)usec;
    return timeval_ms(&tv);
}

/* 1 if the ADU in rsp is the answer libmodbus waits for (see the top). */
static int is_awaited(const struct mb_sync *t)
{
    return t->waiting && mbsc_load16_be(t->rsp) == t->want_tid;
}

/*
 * Wait up to *tv for the next opened ADU: 1 when one is in rsp, 0 on a
 * timeout, -1 once the secure side has failed (recorded).  With
 * only_awaited, answers to other requests are dropped and counted, and
 * the wait goes on for the rest of *tv.
 */
static int fetch_response(struct mb_sync *t, struct timeval *tv, int only_awaited)
{
    for (;;) {
        int64_t t0 = mbsc_monotonic_ns();
        size_t len = 0;
        int r = mbsc_conn_recv(t->conn, t->rsp, sizeof t->rsp, &len, timeval_ms(tv));

        timeval_consume(tv, mbsc_monotonic_ns() - t0);
        if (r == MBSC_ERR_TIMEOUT)
            return 0;
        if (r == MBSC_ERR_BUFFER_TOO_SMALL)
            r = MBSC_ERR_BAD_ADU; /* longer than any ADU */
        if (r == MBSC_OK && len == 0)
            continue; /* keep-alive */
        if (r == MBSC_OK && mbsc_modbus_check_adu(t->rsp, len) != MBSC_OK)
            r = MBSC_ERR_BAD_ADU;
        if (r != MBSC_OK) {
            sync_fail(t, r);
            return -1;
        }
        t->rsp_pos = 0;
        t->rsp_len = len;
        if (only_awaited && !is_awaited(t)) {
            t->dropped++;
            drop_response(t);
            continue;
        }
        t->waiting = 0;
        return 1;
    }
}

/* --- What libmodbus calls ------------------------------------------------------ */

static ssize_t sync_send(struct mb_sync *t, modbus_t *ctx, const uint8_t *req, int len)
{
    int r;

    if (t->conn == NULL) {
        errno = EBADF; /* closed: as libmodbus's own TCP send after modbus_close() */
        return -1;
    }
    if (t->error != MBSC_OK) {
        errno = ECONNRESET;
        return -1;
    }
    /* libmodbus writes the MBAP header itself: only a raw request can be malformed. */
    if (len < (int)MBSC_ADU_MIN || (size_t)len > MBSC_MODBUS_MAX_ADU ||
        mbsc_modbus_check_adu(req, (size_t)len) != MBSC_OK) {
        errno = EMBBADDATA;
        return -1;
    }
    /* The rest of a response libmodbus stopped reading belongs to no request. */
    if (t->rsp_pos != 0)
        drop_response(t);
    /* From now on only this request's answer is handed over. */
    t->want_tid = mbsc_load16_be(req);
    t->waiting = 1;
    r = mbsc_conn_send(t->conn, req, (size_t)len, response_timeout_ms(ctx));
    if (r == MBSC_ERR_TIMEOUT)
        return len; /* sealed and queued: the rest goes out before the next read */
    if (r == MBSC_ERR_WOULD_BLOCK) {
        /* Earlier frames still not taken by the slave: this one was not sealed. */
        errno = ETIMEDOUT;
        return -1;
    }
    if (r != MBSC_OK) {
        sync_fail(t, r);
        errno = ECONNRESET;
        return -1;
    }
    return len;
}

static int sync_select(struct mb_sync *t, modbus_t *ctx, struct timeval *tv, int len)
{
    int r;

    (void)ctx;
    (void)len;
    if (t->rsp_pos < t->rsp_len || (t->conn != NULL && t->error != MBSC_OK))
        return 1; /* an ADU to read, or the end of the stream to report */
    if (t->conn == NULL) {
        errno = EBADF;
        return -1;
    }
    r = fetch_response(t, tv, 1);
    if (r == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return 1;
}

static ssize_t sync_recv(struct mb_sync *t, modbus_t *ctx, uint8_t *rsp, int len)
{
    size_t n;

    (void)ctx;
    if (len <= 0)
        return 0;
    if (t->rsp_pos == t->rsp_len) {
        if (!live(t))
            return 0;   /* the end of the stream: libmodbus reports ECONNRESET */
        errno = EAGAIN; /* recv without a select saying "ready" */
        return -1;
    }
    n = t->rsp_len - t->rsp_pos;
    if (n > (size_t)len)
        n = (size_t)len;
    memcpy(rsp, t->rsp + t->rsp_pos, n);
    t->rsp_pos += n;
    if (t->rsp_pos == t->rsp_len)
        drop_response(t);
    return (ssize_t)n;
}

static int sync_flush(struct mb_sync *t, modbus_t *ctx)
{
    struct timeval now = {0, 0};
    size_t dropped = t->rsp_len - t->rsp_pos;

    (void)ctx;
    drop_response(t);
    if (!live(t)) {
        errno = t->conn == NULL ? EBADF : ECONNRESET;
        return -1;
    }
    while (fetch_response(t, &now, 0) == 1) {
        dropped += t->rsp_len;
        drop_response(t);
        now.tv_sec = now.tv_usec = 0;
    }
    return dropped > INT_MAX ? INT_MAX : (int)dropped;
}

static unsigned sync_is_connected(struct mb_sync *t, modbus_t *ctx)
{
    (void)ctx;
    return t->conn != NULL;
}

static void sync_close(struct mb_sync *t, modbus_t *ctx)
{
    drop_response(t);
    mbsc_conn_close(t->conn); /* closes the socket, wipes the session */
    t->conn = NULL;
    (void)modbus_set_socket(ctx, -1);
}

static int fd_fits(int fd, char *why, size_t why_len);

/*
 * modbus_connect(), and libmodbus's MODBUS_ERROR_RECOVERY_LINK: a new TCP
 * connection and handshake to the same slave with the config the
 * application lent (mbsc_modbus_set_reconnect), never a plaintext one.
 */
static int sync_connect(struct mb_sync *t, modbus_t *ctx)
{
    mbsc_conn *conn = NULL;
    int r;

    if (t->cfg == NULL) {
        errno = ECONNREFUSED; /* no config to reconnect securely with */
        return -1;
    }
    if (t->conn != NULL)
        sync_close(t, ctx);
    r = mbsc_connect(t->hostport, t->cfg, t->connect_timeout_ms, &conn, NULL, 0);
    if (r == MBSC_OK && !fd_fits(mbsc_conn_fd(conn), NULL, 0)) {
        mbsc_conn_close(conn);
        r = MBSC_ERR_FD_LIMIT;
    }
    if (r != MBSC_OK) {
        t->error = r; /* for mbsc_modbus_error(): why the link is still down */
        errno = ECONNREFUSED;
        return -1;
    }
    t->conn = conn;
    t->error = MBSC_OK;
    t->cipher = mbsc_session_cipher(mbsc_conn_session(conn));
    (void)modbus_set_socket(ctx, mbsc_conn_fd(conn));
    return 0;
}

static void sync_free(struct mb_sync *t, modbus_t *ctx)
{
    const struct mb_layout *lay = t->layout;

    sync_close(t, ctx);
    mbsc_wipe(t, sizeof *t);
    free(t);
    /* libmodbus's own entry frees its TCP data and the context. */
    mb_layout_uninstall(lay, ctx);
    modbus_free(ctx);
}

static const struct mb_transport_ops sync_ops = {
    .send = sync_send,
    .recv = sync_recv,
    .select = sync_select,
    .connect = sync_connect,
    .is_connected = sync_is_connected,
    .close = sync_close,
    .flush = sync_flush,
    .free = sync_free,
};

/* --- Connecting ----------------------------------------------------------------- */

/*
 * libmodbus FD_SET()s the context's descriptor: a socket >= FD_SETSIZE
 * would overflow its fd_set.  Probed before connecting (the next
 * descriptor is the lowest free one), so that no slave is bothered in
 * vain, and checked again on the real socket.
 */
static int fd_fits(int fd, char *why, size_t why_len)
{
    if (fd >= 0 && fd < FD_SETSIZE)
        return 1;
    mbsc_why(why, why_len,
             "mbsc_modbus_connect: descriptor %d is not below FD_SETSIZE (%d), which libmodbus "
             "needs for select()",
             fd, FD_SETSIZE);
    return 0;
}

static int probe_fd(char *why, size_t why_len)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int ok;

    if (fd < 0) {
        int e = errno;

        mbsc_why(why, why_len, "mbsc_modbus_connect: socket: %s", mbsc_os_error(e));
        return mbsc_sock_fd_error(e, MBSC_ERR_IO);
    }
    ok = fd_fits(fd, why, why_len);
    mbsc_sock_close(fd);
    return ok ? MBSC_OK : MBSC_ERR_FD_LIMIT;
}

/* A fresh context verified for the synchronous path, or NULL with why. */
static modbus_t *verified_context(const struct mb_layout **lay, char *why, size_t why_len)
{
    modbus_t *ctx;

    *lay = mb_layout_current(why, why_len);
    if (*lay == NULL)
        return NULL;
    ctx = mb_context_new(-1);
    if (ctx == NULL) {
        mbsc_why(why, why_len, "out of memory");
        return NULL;
    }
    if (mb_layout_verify(*lay, ctx, why, why_len) != MBSC_OK) {
        modbus_free(ctx);
        return NULL;
    }
    return ctx;
}

int mb_sync_available(char *why, size_t why_len)
{
    const struct mb_layout *lay;
    modbus_t *ctx = verified_context(&lay, why, why_len);

    if (ctx == NULL)
        return 0;
    modbus_free(ctx);
    mbsc_why(why, why_len, "libmodbus %u.%u.%u: layout %s verified", libmodbus_version_major,
             libmodbus_version_minor, libmodbus_version_micro, lay->name);
    return 1;
}

modbus_t *mb_sync_connect(const char *hostport, const mbsc_config *cfg, int timeout_ms, int *err,
                          char *why, size_t why_len)
{
    const struct mb_layout *lay;
    mbsc_conn *conn = NULL;
    struct mb_sync *t;
    modbus_t *ctx;
    int r;

    *err = MBSC_OK;
    ctx = verified_context(&lay, why, why_len);
    if (ctx == NULL)
        return NULL; /* *err MBSC_OK: use the pump */
    t = calloc(1, sizeof *t);
    if (t == NULL || strlen(hostport) >= sizeof t->hostport) {
        r = t == NULL ? MBSC_ERR_NOMEM : MBSC_ERR_ADDRESS;
        mbsc_why(why, why_len, "mbsc_modbus_connect: %s",
                 t == NULL ? "out of memory" : "address too long");
        goto fail;
    }
    r = probe_fd(why, why_len);
    if (r == MBSC_OK)
        r = mbsc_connect(hostport, cfg, timeout_ms, &conn, why, why_len);
    if (r == MBSC_OK && !fd_fits(mbsc_conn_fd(conn), why, why_len))
        r = MBSC_ERR_FD_LIMIT;
    if (r != MBSC_OK)
        goto fail;
    t->layout = lay;
    t->conn = conn;
    t->cipher = mbsc_session_cipher(mbsc_conn_session(conn));
    t->connect_timeout_ms = timeout_ms;
    memcpy(t->hostport, hostport, strlen(hostport) + 1);
    (void)modbus_set_socket(ctx, mbsc_conn_fd(conn));
    mb_layout_install(lay, ctx, &t->backend, t, &sync_ops);
    return ctx;

fail:
    mbsc_conn_close(conn);
    free(t);
    modbus_free(ctx);
    *err = r;
    return NULL;
}

/* --- Queries ----------------------------------------------------------------------- */

int mb_sync_error(modbus_t *ctx, int *error)
{
    struct mb_sync *t = mb_layout_transport_of(ctx);

    if (t == NULL)
        return 0;
    *error = t->error;
    return 1;
}

int mb_sync_dropped_answers(modbus_t *ctx, uint64_t *dropped)
{
    struct mb_sync *t = mb_layout_transport_of(ctx);

    if (t == NULL)
        return 0;
    *dropped = t->dropped;
    return 1;
}

int mb_sync_set_reconnect(modbus_t *ctx, const mbsc_config *cfg)
{
    struct mb_sync *t = mb_layout_transport_of(ctx);

    if (t == NULL)
        return 0;
    t->cfg = cfg;
    return 1;
}

int mb_sync_cipher(modbus_t *ctx, const mbsc_cipher **cipher)
{
    struct mb_sync *t = mb_layout_transport_of(ctx);

    if (t == NULL)
        return 0;
    *cipher = t->cipher;
    return 1;
}
