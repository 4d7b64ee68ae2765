/* SPDX-License-Identifier: ISC */
/*
 * upstream.c - the life of one connection behind the gateway (upstream.h):
 * connect without blocking under a deadline, hand the connected socket to
 * the kind (upstream_kind.h), make it again when it ends.
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
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "upstream_kind.h"

#define BACKOFF_MIN_MS 100u

static void on_io(void *data, unsigned happened);
static void on_timer(void *data);

struct gw_upstream *gw_upstream_new(struct gw_loop *loop, const struct gw_up_kind *kind,
                                    const char *target, const mbsc_config *cfg,
                                    const struct gw_upstream_settings *s,
                                    const struct gw_upstream_hooks *hooks, char *why,
                                    size_t why_len)
{
    struct gw_upstream *u = calloc(1, sizeof *u);

    if (u == NULL || (u->timer = gw_timer_new(loop, on_timer, u)) == NULL) {
        free(u);
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    u->kind = kind;
    u->loop = loop;
    snprintf(u->name, sizeof u->name, "%s", target);
    u->cfg = cfg;
    u->set = *s;
    if (u->set.backoff_max_ms < BACKOFF_MIN_MS)
        u->set.backoff_max_ms = BACKOFF_MIN_MS;
    u->backoff_ms = BACKOFF_MIN_MS;
    u->h = *hooks;
    u->fd = -1;
    u->tc.fd = -1;
    u->state = GW_UP_IDLE;
    gw_timer_in(u->timer, 0); /* the first attempt, in the loop's next turn */
    return u;
}

/* Close whatever is open; no hook runs. */
static void drop_connection(struct gw_upstream *u)
{
    gw_watch_remove(u->watch);
    u->watch = NULL;
    if (u->connecting_tcp)
        mbsc_tcp_connect_cancel(&u->tc);
    u->connecting_tcp = 0;
    if (u->fd >= 0) {
        u->kind->drop(u);
        close(u->fd);
    }
    u->fd = -1;
}

void gw_upstream_free(struct gw_upstream *u)
{
    if (u == NULL)
        return;
    drop_connection(u);
    gw_timer_free(u->timer);
    free(u);
}

void gw_upstream_set_config(struct gw_upstream *u, const mbsc_config *cfg)
{
    if (u->cfg != NULL && cfg != NULL)
        u->cfg = cfg;
}

void gw_upstream_set_tls(struct gw_upstream *u, const struct gw_tls *tls)
{
    u->set.tls = tls;
}

enum gw_up_state gw_upstream_state(const struct gw_upstream *u)
{
    return u->state;
}

const char *gw_upstream_name(const struct gw_upstream *u)
{
    return u->name;
}

void gw_upstream_describe(const struct gw_upstream *u, char *buf, size_t len)
{
    u->kind->describe(u, buf, len);
}

uint64_t gw_upstream_connects(const struct gw_upstream *u)
{
    return u->connects;
}

uint64_t gw_upstream_failures(const struct gw_upstream *u)
{
    return u->outage.total;
}

uint64_t gw_upstream_failures_in_a_row(const struct gw_upstream *u)
{
    return u->outage.active ? u->outage.attempts : 0;
}

int64_t gw_upstream_outage_ns(const struct gw_upstream *u, int64_t now_ns)
{
    return u->outage.active ? now_ns - u->outage.since_ns : 0;
}

/* ---- what the log says ---- */

/* A failed attempt (not a connection that ended): the first, then at growing intervals. */
static void log_failure(struct gw_upstream *u, const char *why)
{
    int64_t now = gw_now_ns();
    struct gw_field f[] = {{"MBSC_UPSTREAM", u->name}, {"MBSC_REASON", why}};
    char lasted[32];
    int changed = strncmp(why, u->outage_why, sizeof u->outage_why - 1) != 0;

    switch (gw_outage_failed(&u->outage, now, changed)) {
    case GW_OUTAGE_FIRST:
        gw_logf(GW_WARN, f, 2,
                "upstream %s unreachable: %s (retrying; logged again at growing intervals "
                "while it lasts)",
                u->name, why);
        break;
    case GW_OUTAGE_STILL:
        gw_duration_text(now - u->outage.since_ns, lasted, sizeof lasted);
        gw_logf(GW_WARN, f, 2, "upstream %s still unreachable after %llu attempts, %s: %s", u->name,
                (unsigned long long)u->outage.attempts, lasted, why);
        break;
    case GW_OUTAGE_QUIET: return;
    }
    snprintf(u->outage_why, sizeof u->outage_why, "%.*s", (int)sizeof u->outage_why - 1, why);
}

static void log_connected(struct gw_upstream *u)
{
    struct gw_field f[] = {{"MBSC_UPSTREAM", u->name}};
    uint64_t attempts;
    int64_t lasted_ns;
    char lasted[32];

    if (gw_outage_ended(&u->outage, gw_now_ns(), &attempts, &lasted_ns)) {
        gw_duration_text(lasted_ns, lasted, sizeof lasted);
        gw_logf(GW_INFO, f, 1, "upstream %s connected again after %llu failed attempt%s over %s",
                u->name, (unsigned long long)attempts, attempts == 1 ? "" : "s", lasted);
    } else {
        gw_logf(GW_INFO, f, 1, "upstream %s connected", u->name);
    }
}

/* ---- what the kinds report ---- */

void gw_up_rewatch(struct gw_upstream *u)
{
    if (u->watch != NULL && u->fd >= 0)
        (void)gw_watch_set(u->watch, u->kind->events(u));
}

void gw_up_ready(struct gw_upstream *u)
{
    if (u->state != GW_UP_CONNECTING)
        return;
    u->state = GW_UP_READY;
    u->answered = 0;
    u->connects++;
    gw_timer_disarm(u->timer);
    /*
     * After attempts that failed to connect, a connection ends the outage.
     * After connections that ended before their first answer (a PLC whose
     * connections are all taken accepts and closes), only an answer does.
     */
    if (!u->outage_unanswered)
        log_connected(u);
    u->h.up(u->h.user);
}

void gw_up_deliver(struct gw_upstream *u, const uint8_t *adu, size_t len)
{
    if (u->state != GW_UP_READY)
        return;
    /* The connection works: after it, the next attempt goes at once. */
    if (!u->answered) {
        u->answered = 1;
        u->backoff_ms = BACKOFF_MIN_MS;
        if (u->outage_unanswered) {
            u->outage_unanswered = 0;
            log_connected(u);
        }
    }
    u->h.answer(u->h.user, adu, len);
}

void gw_up_room(struct gw_upstream *u)
{
    if (u->state == GW_UP_READY && u->h.room != NULL)
        u->h.room(u->h.user);
}

void gw_up_fail(struct gw_upstream *u, const char *why)
{
    int was_ready = u->state == GW_UP_READY;
    char copy[1024];

    if (u->state != GW_UP_READY && u->state != GW_UP_CONNECTING)
        return;
    snprintf(copy, sizeof copy, "%s", why); /* why may live in what is dropped */
    drop_connection(u);
    /*
     * Only a connection that carried an answer is made again at once.  One
     * that ends before its first answer counts as a failed attempt: a PLC
     * whose connections are all taken accepts and closes at once, a server
     * gateway refuses a session over its per-key limit when it confirms,
     * and neither may be retried in a tight loop.
     */
    if (was_ready && u->answered) {
        u->state = GW_UP_IDLE;
        gw_timer_in(u->timer, 0);
    } else {
        /*
         * The backoff counts from the start of the attempt that failed: an
         * attempt that waited for its connect timeout (its SYN lost in a
         * partition) does not add that timeout to the wait, so that a link
         * that comes back is tried again within the backoff.
         */
        int64_t now = gw_now_ns(), next = u->attempt_ns + (int64_t)u->backoff_ms * 1000000;

        u->state = GW_UP_BACKOFF;
        gw_timer_at(u->timer, next > now ? next : now);
        u->backoff_ms =
            u->backoff_ms * 2 > u->set.backoff_max_ms ? u->set.backoff_max_ms : u->backoff_ms * 2;
    }
    if (was_ready && u->answered) {
        struct gw_field f[] = {{"MBSC_UPSTREAM", u->name}, {"MBSC_REASON", copy}};

        gw_logf(GW_WARN, f, 2, "upstream %s lost: %s; reconnecting", u->name, copy);
    } else {
        /* A connection that ends before its first answer is a failed attempt, logged as one. */
        u->outage_unanswered = was_ready;
        if (was_ready)
            snprintf(copy + strlen(copy), sizeof copy - strlen(copy),
                     " (the connection ended before its first answer)");
        log_failure(u, copy);
    }
    u->h.down(u->h.user, was_ready, copy);
}

void gw_up_failed(struct gw_upstream *u, uint16_t tid, uint8_t code)
{
    if (u->state == GW_UP_READY && u->h.failed != NULL)
        u->h.failed(u->h.user, tid, code);
}

void gw_upstream_reset(struct gw_upstream *u, const char *why)
{
    gw_up_fail(u, why);
}

/* ---- connecting ---- */

/* The connection is up on fd: watch it and hand it to the kind. */
static void take_fd(struct gw_upstream *u, int fd)
{
    char why[GW_WHY_SIZE];

    u->fd = fd;
    u->watch = gw_watch_add(u->loop, fd, GW_IO_IN, on_io, u);
    if (u->watch == NULL) {
        gw_up_fail(u, "cannot watch the connection (out of memory?)");
        return;
    }
    if (u->kind->connected(u, why, sizeof why) != 0) {
        gw_up_fail(u, why);
        return;
    }
    gw_up_rewatch(u);
}

static void start_connect(struct gw_upstream *u)
{
    const char *scheme = u->kind->scheme, *hostport = u->name;
    char why[GW_WHY_SIZE];
    int r, fd = -1;

    /* "mbaps://HOST:PORT" connects to HOST:PORT like any other. */
    if (scheme != NULL && strncmp(hostport, scheme, strlen(scheme)) == 0)
        hostport += strlen(scheme);
    u->state = GW_UP_CONNECTING;
    u->attempt_ns = gw_now_ns();
    gw_timer_at(u->timer, u->attempt_ns + (int64_t)u->set.connect_timeout_ms * 1000000);
    if (u->kind->open != NULL) {
        if (u->kind->open(u, &fd, why, sizeof why) != 0)
            gw_up_fail(u, why);
        else
            take_fd(u, fd);
        return;
    }
    r = mbsc_tcp_connect_start(&u->tc, hostport, why, sizeof why);
    if (r != MBSC_OK) {
        gw_up_fail(u, why);
        return;
    }
    u->connecting_tcp = 1;
    u->watch = gw_watch_add(u->loop, u->tc.fd, GW_IO_OUT, on_io, u);
    u->watch_fd = u->tc.fd;
    if (u->watch == NULL)
        gw_up_fail(u, "cannot watch the connecting socket (out of memory?)");
}

/* The TCP connect has moved on: connected, failed, or on to the next address. */
static void connect_progress(struct gw_upstream *u)
{
    char why[GW_WHY_SIZE];
    int fd = -1, r = mbsc_tcp_connect_finish(&u->tc, &fd, why, sizeof why);

    if (r == MBSC_ERR_WOULD_BLOCK) {
        /*
         * Still going, perhaps on another descriptor (the next address:
         * localhost is ::1, refused, then 127.0.0.1).  The new socket
         * usually gets the number of the one just closed, which the kernel
         * took out of the loop's epoll set: so the watch is made again
         * whatever the number.
         */
        gw_watch_remove(u->watch);
        u->watch = gw_watch_add(u->loop, u->tc.fd, GW_IO_OUT, on_io, u);
        u->watch_fd = u->tc.fd;
        if (u->watch == NULL)
            gw_up_fail(u, "cannot watch the connecting socket (out of memory?)");
        return;
    }
    u->connecting_tcp = 0;
    gw_watch_remove(u->watch);
    u->watch = NULL;
    if (r != MBSC_OK) {
        gw_up_fail(u, why);
        return;
    }
#ifdef TCP_USER_TIMEOUT
    {
        unsigned ms = u->set.connect_timeout_ms;

        (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
    }
#endif
    take_fd(u, fd);
}

static void on_io(void *data, unsigned happened)
{
    struct gw_upstream *u = data;

    if (u->connecting_tcp) {
        connect_progress(u);
    } else if (u->fd >= 0) {
        /* The requests that the answers read now let go leave together, first. */
        if (u->h.begin != NULL)
            u->h.begin(u->h.user);
        gw_upstream_cork(u);
        u->kind->io(u, happened);
        gw_upstream_uncork(u);
        if (u->h.end != NULL)
            u->h.end(u->h.user);
    }
}

static void on_timer(void *data)
{
    struct gw_upstream *u = data;
    char why[sizeof u->name + 512];
    int n;

    switch (u->state) {
    case GW_UP_IDLE:
    case GW_UP_BACKOFF: start_connect(u); break;
    case GW_UP_CONNECTING:
        n = snprintf(why, sizeof why, "%s %s: timed out after %u ms",
                     u->connecting_tcp ? "connect" : "handshake with", u->name,
                     u->set.connect_timeout_ms);
        if (!u->connecting_tcp && u->kind->stalled != NULL && n > 0 && (size_t)n < sizeof why - 2) {
            memcpy(why + n, ": ", 3);
            u->kind->stalled(u, why + n + 2, sizeof why - (size_t)n - 2);
        }
        gw_up_fail(u, why);
        break;
    case GW_UP_READY: break;
    }
}

int gw_upstream_send(struct gw_upstream *u, const uint8_t *adu, size_t len)
{
    if (u->state != GW_UP_READY)
        return MBSC_ERR_STATE;
    return u->kind->send(u, adu, len);
}

void gw_upstream_cork(struct gw_upstream *u)
{
    u->corked++;
}

void gw_upstream_uncork(struct gw_upstream *u)
{
    if (u->corked == 0 || --u->corked > 0)
        return;
    if (u->state == GW_UP_READY && u->kind->flush != NULL)
        u->kind->flush(u);
}
