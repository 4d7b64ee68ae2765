/* SPDX-License-Identifier: ISC */
/*
 * tls_admission.c - who gets a connection slot (tls_admission.h).
 *
 * The rules are those of the library's mbsc_server (src/server/admission.c
 * there; the gateway may only use the public API, so they are written
 * again here, for a listener of the gateway's own).  Unconfirmed
 * connections are kept oldest first, all with the same handshake time, so
 * the first one is always the next to expire and the only deadline the
 * timer needs.
 *
 * _GNU_SOURCE: glibc declares accept4() only with it.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "tls_admission.h"

#define DEFAULT_MAX_CONNECTIONS 1024u
#define DEFAULT_MAX_UNCONFIRMED 64u
#define DEFAULT_MAX_PER_ADDRESS 4u
#define DEFAULT_HANDSHAKE_MS    2000u
#define DEFAULT_LOG_INTERVAL_MS 10000u
#define ACCEPT_BATCH            64u /* accepted per turn, so that the others are served too */
#define RESERVE_LOST_PAUSE_MS   100 /* accepting pauses only if the reserve cannot be taken back */
#define MAX_REASONS             24u
#define DETAILS_PER_INTERVAL    4u

enum { ST_NONE = 0, ST_UNCONFIRMED, ST_CONFIRMED };

static const char R_EVICTED[] = "evicted for a newer connection (unconfirmed budget full)";
static const char R_TIMEOUT[] = "handshake timeout";
static const char R_PER_ADDRESS[] = "too many unconfirmed connections from one address";
static const char R_FULL[] = "connection budget full";
static const char R_FD[] = "out of descriptors";
static const char R_OTHER[] = "other errors";

struct gw_adm {
    struct gw_loop *loop;
    int lfd, reserve_fd;
    struct gw_watch *watch;
    struct gw_timer *timer;
    struct gw_adm_limits lim;
    struct gw_adm_ops ops;
    char what[32];
    struct gw_adm_conn *head, *tail; /* unconfirmed, oldest first */
    struct gw_adm_stats st;
    int64_t accept_resume_ns; /* accepting paused until then (0: not paused) */
    /* Refusals since the last line, by reason (static strings, compared by address). */
    struct {
        const char *text;
        uint64_t n;
    } reasons[MAX_REASONS];
    size_t n_reasons;
    uint64_t pending;     /* refusals not logged yet */
    int64_t next_line_ns; /* the next summary may come then */
    unsigned details;     /* detail lines this interval */
    uint64_t details_dropped;
};

static void on_listen(void *data, unsigned happened);
static void on_timer(void *data);

/* ---- the log ---- */

static void flush_log(struct gw_adm *a, int64_t now, int force)
{
    char line[1024];
    size_t at, i;

    if (a->pending == 0 || (!force && now < a->next_line_ns))
        return;
    at = (size_t)snprintf(line, sizeof line,
                          "%s: refused %llu connection%s before the handshake "
                          "completed:",
                          a->what, (unsigned long long)a->pending, a->pending == 1 ? "" : "s");
    for (i = 0; i < a->n_reasons && at < sizeof line; i++)
        at += (size_t)snprintf(line + at, sizeof line - at, " %llu %s;",
                               (unsigned long long)a->reasons[i].n, a->reasons[i].text);
    if (at < sizeof line && line[at - 1] == ';')
        line[at - 1] = '\0';
    if (a->details_dropped > 0 && at < sizeof line)
        snprintf(line + strlen(line), sizeof line - strlen(line),
                 " (%llu more detail line%s not "
                 "shown)",
                 (unsigned long long)a->details_dropped, a->details_dropped == 1 ? "" : "s");
    a->n_reasons = 0;
    a->pending = 0;
    a->details = 0;
    a->details_dropped = 0;
    a->next_line_ns = now + (int64_t)a->lim.log_interval_ms * 1000000;
    a->ops.log(a->ops.user, line);
}

static void count_refusal(struct gw_adm *a, const char *reason)
{
    size_t i;

    a->st.refused++;
    for (i = 0; i < a->n_reasons; i++)
        if (a->reasons[i].text == reason)
            break;
    if (i == a->n_reasons) {
        if (a->n_reasons == MAX_REASONS) {
            i = a->n_reasons - 1; /* cannot happen with the reasons there are: sum up in the last */
        } else {
            /* The slot may still hold a count of an interval already logged. */
            a->reasons[i].text = reason;
            a->reasons[i].n = 0;
            a->n_reasons++;
        }
    }
    a->reasons[i].n++;
    a->pending++;
    /* After a quiet interval the first refusal is reported at once. */
    flush_log(a, gw_now_ns(), 0);
}

void gw_adm_detail(struct gw_adm *a, const char *line)
{
    int64_t now = gw_now_ns();

    if (now >= a->next_line_ns && a->pending == 0) {
        a->details = 0; /* a new interval */
        a->details_dropped = 0;
    }
    if (a->details >= DETAILS_PER_INTERVAL) {
        a->details_dropped++;
        return;
    }
    a->details++;
    a->ops.log(a->ops.user, line);
}

/* ---- the list of unconfirmed connections ---- */

static void unlink_conn(struct gw_adm *a, struct gw_adm_conn *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        a->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    else
        a->tail = c->prev;
    c->prev = c->next = NULL;
}

/* The timer at the next deadline: a handshake, a summary line, the end of a pause. */
static void rearm(struct gw_adm *a)
{
    int64_t due = 0;

    if (a->head != NULL)
        due = a->head->due_ns;
    if (a->pending > 0 && (due == 0 || a->next_line_ns < due))
        due = a->next_line_ns;
    if (a->accept_resume_ns != 0 && (due == 0 || a->accept_resume_ns < due))
        due = a->accept_resume_ns;
    if (due != 0)
        gw_timer_at(a->timer, due);
    else
        gw_timer_disarm(a->timer);
}

/* Take c off the books (it is the caller's to close). */
static void forget(struct gw_adm *a, struct gw_adm_conn *c)
{
    if (c->state == ST_NONE)
        return;
    if (c->state == ST_UNCONFIRMED) {
        unlink_conn(a, c);
        a->st.unconfirmed--;
    }
    a->st.connections--;
    c->state = ST_NONE;
}

/* End c for reason: counted, forgotten, and the owner told. */
static void end_conn(struct gw_adm *a, struct gw_adm_conn *c, const char *reason)
{
    forget(a, c);
    count_refusal(a, reason);
    a->ops.end(a->ops.user, c, reason);
}

/*
 * Make room: the oldest unconfirmed connection goes, preferring one that
 * has not got past its first message over one whose handshake is under
 * way.  0 if there is none.
 */
static int evict_oldest(struct gw_adm *a)
{
    struct gw_adm_conn *old = a->head, *c;

    if (old == NULL)
        return 0;
    for (c = old; c != NULL; c = c->next)
        if (!c->progressed) {
            old = c;
            break;
        }
    end_conn(a, old, R_EVICTED);
    return 1;
}

/* ---- accepting ---- */

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

static void format_peer(const struct sockaddr_storage *ss, socklen_t sl, char *out, size_t len)
{
    char host[60], port[8]; /* numeric: an IPv6 address with a scope fits */

    if (getnameinfo((const struct sockaddr *)(const void *)ss, sl, host, sizeof host, port,
                    sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        snprintf(out, len, "?");
    else if (ss->ss_family == AF_INET6)
        snprintf(out, len, "[%s]:%s", host, port);
    else
        snprintf(out, len, "%s:%s", host, port);
}

static unsigned unconfirmed_from(const struct gw_adm *a, const uint8_t *ip, uint8_t len)
{
    const struct gw_adm_conn *c;
    unsigned n = 0;

    for (c = a->head; c != NULL; c = c->next)
        n += c->ip_len == len && memcmp(c->ip, ip, len) == 0;
    return n;
}

static void admit(struct gw_adm *a, int fd, const struct sockaddr_storage *ss, socklen_t sl)
{
    struct gw_adm_conn *c;
    char peer[MBSC_ADDRSTRLEN];
    uint8_t ip[16];
    uint8_t ip_len;
    int one = 1;

    source_key(ss, ip, &ip_len);
    if (unconfirmed_from(a, ip, ip_len) >= a->lim.max_per_address) {
        close(fd);
        count_refusal(a, R_PER_ADDRESS);
        return;
    }
    if (a->st.connections >= a->lim.max_connections && !evict_oldest(a)) {
        close(fd);
        count_refusal(a, R_FULL);
        return;
    }
    if (a->st.unconfirmed >= a->lim.max_unconfirmed)
        (void)evict_oldest(a);
    /* Modbus is request/response: Nagle would delay every answer. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    format_peer(ss, sl, peer, sizeof peer);
    c = a->ops.open(a->ops.user, fd, peer);
    if (c == NULL) {
        count_refusal(a, R_OTHER);
        return;
    }
    memcpy(c->ip, ip, sizeof ip);
    c->ip_len = ip_len;
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    c->progressed = 0;
    c->due_ns = gw_now_ns() + (int64_t)a->lim.handshake_ms * 1000000;
    c->state = ST_UNCONFIRMED;
    c->next = NULL;
    c->prev = a->tail;
    if (a->tail != NULL)
        a->tail->next = c;
    else
        a->head = c;
    a->tail = c;
    a->st.unconfirmed++;
    a->st.connections++;
    a->st.accepted++;
}

static int reserve_open(struct gw_adm *a)
{
    if (a->reserve_fd < 0)
        a->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return a->reserve_fd >= 0 ? 0 : -1;
}

/*
 * Out of descriptors: give the reserve back to accept the waiting client
 * and close it at once, then take the reserve again.  1 if one was shed;
 * 0 if the backlog is empty or the reserve is gone (accepting then pauses
 * briefly, or the listener would stay readable and the loop spin).
 */
static int shed_one(struct gw_adm *a)
{
    int fd;

    if (a->reserve_fd < 0 && reserve_open(a) != 0) {
        a->accept_resume_ns = gw_now_ns() + (int64_t)RESERVE_LOST_PAUSE_MS * 1000000;
        return 0;
    }
    close(a->reserve_fd);
    a->reserve_fd = -1;
    fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        count_refusal(a, R_FD);
    }
    if (reserve_open(a) != 0)
        a->accept_resume_ns = gw_now_ns() + (int64_t)RESERVE_LOST_PAUSE_MS * 1000000;
    return fd >= 0;
}

static void on_listen(void *data, unsigned happened)
{
    struct gw_adm *a = data;
    /*
     * At most half the unconfirmed budget per turn: a newcomer's first
     * message is read (and answered) in the next turn, before more
     * newcomers can evict it.
     */
    unsigned batch = a->lim.max_unconfirmed / 2, i;

    (void)happened;
    if (batch > ACCEPT_BATCH)
        batch = ACCEPT_BATCH;
    if (batch == 0)
        batch = 1;
    for (i = 0; i < batch && a->accept_resume_ns == 0; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(a->lfd, (struct sockaddr *)(void *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            int e = errno;

            if (e == EINTR || e == ECONNABORTED || e == EPROTO)
                continue; /* that client is gone; others may wait */
            if ((e == EMFILE || e == ENFILE) && shed_one(a))
                continue;
            break; /* EAGAIN: nobody else waits */
        }
        admit(a, fd, &ss, sl);
    }
    if (a->accept_resume_ns != 0)
        (void)gw_watch_set(a->watch, 0);
    rearm(a);
}

static void on_timer(void *data)
{
    struct gw_adm *a = data;
    int64_t now = gw_now_ns();

    while (a->head != NULL && a->head->due_ns <= now)
        end_conn(a, a->head, R_TIMEOUT);
    if (a->accept_resume_ns != 0 && a->accept_resume_ns <= now) {
        a->accept_resume_ns = 0;
        if (a->watch != NULL)
            (void)gw_watch_set(a->watch, GW_IO_IN);
    }
    flush_log(a, now, 0);
    rearm(a);
}

/* ---- the owner's calls ---- */

static unsigned fd_cap(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur > (rlim_t)1 << 30)
        return 1u << 30;
    if (rl.rlim_cur <= (rlim_t)MBSC_SERVER_FD_RESERVE + 1)
        return 1;
    return (unsigned)(rl.rlim_cur - MBSC_SERVER_FD_RESERVE);
}

struct gw_adm *gw_adm_new(struct gw_loop *loop, int lfd, const struct gw_adm_limits *limits,
                          const struct gw_adm_ops *ops, const char *what, char *why, size_t why_len)
{
    struct gw_adm *a = calloc(1, sizeof *a);
    unsigned cap = fd_cap();
    int fl = fcntl(lfd, F_GETFL);

    if (a == NULL) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    a->loop = loop;
    a->lfd = lfd;
    a->reserve_fd = -1;
    a->ops = *ops;
    snprintf(a->what, sizeof a->what, "%s", what);
    a->lim = *limits;
    if (a->lim.max_connections == 0)
        a->lim.max_connections = DEFAULT_MAX_CONNECTIONS;
    if (a->lim.max_connections > cap)
        a->lim.max_connections = cap;
    if (a->lim.max_unconfirmed == 0)
        a->lim.max_unconfirmed = DEFAULT_MAX_UNCONFIRMED;
    if (a->lim.max_unconfirmed > a->lim.max_connections)
        a->lim.max_unconfirmed = a->lim.max_connections;
    if (a->lim.max_per_address == 0)
        a->lim.max_per_address = DEFAULT_MAX_PER_ADDRESS;
    if (a->lim.handshake_ms == 0)
        a->lim.handshake_ms = DEFAULT_HANDSHAKE_MS;
    if (a->lim.log_interval_ms == 0)
        a->lim.log_interval_ms = DEFAULT_LOG_INTERVAL_MS;
    if (fl < 0 || fcntl(lfd, F_SETFL, fl | O_NONBLOCK) != 0 || reserve_open(a) != 0 ||
        (a->timer = gw_timer_new(loop, on_timer, a)) == NULL ||
        (a->watch = gw_watch_add(loop, lfd, GW_IO_IN, on_listen, a)) == NULL) {
        snprintf(why, why_len, "%s listener: %s", what, strerror(errno));
        gw_adm_free(a);
        return NULL;
    }
    return a;
}

void gw_adm_free(struct gw_adm *a)
{
    if (a == NULL)
        return;
    flush_log(a, gw_now_ns(), 1);
    gw_watch_remove(a->watch);
    gw_timer_free(a->timer);
    if (a->reserve_fd >= 0)
        close(a->reserve_fd);
    free(a);
}

void gw_adm_stop(struct gw_adm *a)
{
    gw_watch_remove(a->watch);
    a->watch = NULL;
    a->accept_resume_ns = 0;
}

void gw_adm_progressed(struct gw_adm *a, struct gw_adm_conn *c)
{
    (void)a;
    c->progressed = 1;
}

void gw_adm_confirm(struct gw_adm *a, struct gw_adm_conn *c)
{
    if (c->state != ST_UNCONFIRMED)
        return;
    unlink_conn(a, c);
    a->st.unconfirmed--;
    a->st.confirmed++;
    c->state = ST_CONFIRMED;
    rearm(a);
}

void gw_adm_refuse(struct gw_adm *a, struct gw_adm_conn *c, const char *reason)
{
    forget(a, c);
    count_refusal(a, reason);
    rearm(a);
}

void gw_adm_closed(struct gw_adm *a, struct gw_adm_conn *c)
{
    forget(a, c);
    rearm(a);
}

void gw_adm_get_stats(const struct gw_adm *a, struct gw_adm_stats *st)
{
    *st = a->st;
}

unsigned gw_adm_max_connections(const struct gw_adm *a)
{
    return a->lim.max_connections;
}
