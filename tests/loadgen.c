/* SPDX-License-Identifier: ISC */
/*
 * loadgen.c - attacks and load against a running secure_slave, for
 * tests/attacks.test and tests/scale.test (and make stress).
 *
 *   loadgen attack MODE SLAVE SLAVE_PUB MASTER_KEY SECONDS COUNT SOURCES
 *   loadgen scale SLAVE SLAVE_PUB MASTER_KEY MASTERS REQUESTS [SLAVE_PID]
 *   loadgen hold SLAVE SLAVE_PUB MASTER_KEY ATTEMPTS PACE_MS SOURCES
 *   loadgen reads SLAVE SLAVE_PUB MASTER_KEY COUNT
 *   loadgen idle SLAVE SLAVE_PUB MASTER_KEY LIMIT_MS
 *
 * attack: COUNT attacking connections from SOURCES loopback addresses
 * (127.0.0.2, 127.0.0.3, ...), each reconnecting as soon as the slave
 * closes it, for SECONDS, while a legitimate master (MASTER_KEY, which the
 * slave's allow-list holds) connects and reads one register once per
 * second.  MODE:
 *   replay    one captured message 1 of the legitimate master, replayed
 *   idle      connect and say nothing
 *   half      the first half of that message 1, then silence
 *   oversize  a frame length of 65535, then a few bytes
 *   none      no attack (the baseline)
 * Prints "served S/T worst W ms median M ms attacks A" and exits 0 when
 * the legitimate master was served at least 95 % of the time within 1 s
 * each, 1 otherwise.
 *
 * scale: MASTERS masters connect at once (one event loop drives all their
 * sessions), wait until all are confirmed, then each does REQUESTS
 * requests (write one register, read it back, in turn) and checks every
 * answer.  Prints the time, requests per second and, given SLAVE_PID, the
 * slave's resident memory with everyone connected; exits 1 on any error.
 *
 * hold: one master key holding as many sessions as it can get, as a
 * master gone wrong (or a thief of its key) would: ATTEMPTS sessions in
 * all, at most HOLD_CONCURRENT handshakes at a time, from SOURCES
 * loopback addresses.  Each session that gets through sends a read of
 * holding register 0 at once and then one every PACE_MS (0: the next as
 * soon as the answer came), so that it is never idle; any answer, an
 * exception included, shows that the slave confirmed it.  A session
 * closed before its first answer counts as refused.  Prints "ready held H
 * refused R" once every attempt has its outcome, then holds until
 * SIGTERM (or HOLD_MAX_MS) and prints "hold: attempts A held H (at most M
 * at once) refused R answers N closed later C"; exits 0.
 *
 * reads: one session, COUNT reads of holding register 0 in turn, each
 * waited for up to READ_BUDGET_MS (a failed read reconnects for the
 * next).  Prints "reads: answered A/COUNT"; exits 0 when all were
 * answered with the registers (not an exception), 1 otherwise.
 *
 * idle: one session, one read, then silence until the slave closes it
 * (its idle timeout).  Prints "idle: closed after T ms" and exits 0, or
 * "idle: still open after LIMIT_MS ms" and exits 1.
 *
 * Everything is bounded in count and time and stops by itself.
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "mbsc.h"

#define MAX_ATTACKERS   4096
#define LEGIT_BUDGET_MS 1000

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
    fprintf(stderr, "loadgen: %s\n", what);
    exit(2);
}

/* "127.0.0.1:PORT" into a sockaddr_in. */
static void parse_addr(const char *hostport, struct sockaddr_in *sin)
{
    char host[64], port[16];

    if (mbsc_parse_hostport(hostport, host, sizeof host, port, sizeof port) != MBSC_OK)
        die("bad slave address");
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)atoi(port));
    if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
        die("the slave address must be an IPv4 literal");
}

static mbsc_config *master_config(const char *slave_pub, const char *master_key)
{
    uint8_t pub[MBSC_KEY_BYTES];
    mbsc_keypair kp;
    char why[256];
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);

    if (cfg == NULL)
        die("out of memory");
    if (mbsc_public_key_load(pub, slave_pub, why, sizeof why) != MBSC_OK ||
        mbsc_keypair_load(&kp, master_key, why, sizeof why) != MBSC_OK) {
        fprintf(stderr, "loadgen: %s\n", why);
        exit(2);
    }
    if (mbsc_config_set_keypair(cfg, &kp) != MBSC_OK ||
        mbsc_config_set_peer_public_key(cfg, pub) != MBSC_OK)
        die("bad config");
    mbsc_keypair_wipe(&kp);
    return cfg;
}

/* ---- the legitimate master: one read per second ------------------------------- */

struct legit {
    const char *addr;
    const mbsc_config *cfg;
    int seconds;
    int tries, served;
    long long worst_ms;
    long long took[4096];
};

static int read_once(const char *addr, const mbsc_config *cfg)
{
    static const uint8_t req[] = {0, 1, 0, 0, 0, 6, 1, 0x03, 0, 0, 0, 1};
    uint8_t rsp[300];
    size_t len = 0;
    mbsc_conn *c = NULL;
    long long t0 = now_ms();
    int r = mbsc_connect(addr, cfg, LEGIT_BUDGET_MS, &c, NULL, 0);
    int left;

    if (r == MBSC_OK) {
        left = (int)(LEGIT_BUDGET_MS - (now_ms() - t0));
        r = mbsc_conn_send(c, req, sizeof req, left > 0 ? left : 0);
    }
    if (r == MBSC_OK) {
        left = (int)(LEGIT_BUDGET_MS - (now_ms() - t0));
        r = mbsc_conn_recv(c, rsp, sizeof rsp, &len, left > 0 ? left : 0);
    }
    mbsc_conn_close(c);
    return r == MBSC_OK && len == 11 && rsp[7] == 0x03 ? MBSC_OK : (r != MBSC_OK ? r : -1000);
}

static void *legit_main(void *arg)
{
    struct legit *lg = arg;
    long long start = now_ms();
    int k;

    for (k = 0; k < lg->seconds && k < 4096; k++) {
        long long at = start + 1000LL * k, t0, took;
        int r;

        while (now_ms() < at)
            usleep(2000);
        t0 = now_ms();
        r = read_once(lg->addr, lg->cfg);
        took = now_ms() - t0;
        lg->tries++;
        lg->took[k] = took;
        if (r == MBSC_OK && took <= LEGIT_BUDGET_MS)
            lg->served++;
        else
            fprintf(stderr, "loadgen: legitimate read %d: %s after %lld ms\n", k,
                    r == MBSC_OK ? "too slow" : mbsc_strerror(r), took);
        if (took > lg->worst_ms)
            lg->worst_ms = took;
    }
    return NULL;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return x < y ? -1 : x > y;
}

/* ---- attackers ---------------------------------------------------------------- */

struct attacker {
    int fd;
    int connected;
    int sent;
    unsigned source;
};

struct attack {
    struct sockaddr_in slave;
    const uint8_t *bytes; /* what each attacker sends once connected */
    size_t n_bytes;
    int ep;
    unsigned sources;
    unsigned long long connects;
    struct attacker a[MAX_ATTACKERS];
};

static void attacker_connect(struct attack *at, struct attacker *x)
{
    struct sockaddr_in src;
    struct epoll_event ev;
    int one = 1;

    x->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    x->connected = x->sent = 0;
    if (x->fd < 0)
        return;
    (void)setsockopt(x->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&src, 0, sizeof src);
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(0x7f000002u + x->source); /* 127.0.0.2 + k */
    (void)bind(x->fd, (struct sockaddr *)&src, sizeof src);
    if (connect(x->fd, (struct sockaddr *)&at->slave, sizeof at->slave) != 0 &&
        errno != EINPROGRESS) {
        close(x->fd);
        x->fd = -1;
        return;
    }
    at->connects++;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
    ev.data.ptr = x;
    (void)epoll_ctl(at->ep, EPOLL_CTL_ADD, x->fd, &ev);
}

static void attacker_event(struct attack *at, struct attacker *x, uint32_t events)
{
    uint8_t sink[4096];

    if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
        close(x->fd); /* the slave closed it: come back at once */
        x->fd = -1;
        attacker_connect(at, x);
        return;
    }
    if ((events & EPOLLOUT) && !x->sent) {
        struct epoll_event ev;

        x->sent = 1;
        if (at->n_bytes > 0)
            (void)send(x->fd, at->bytes, at->n_bytes, MSG_NOSIGNAL);
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.ptr = x;
        (void)epoll_ctl(at->ep, EPOLL_CTL_MOD, x->fd, &ev);
    }
    if (events & EPOLLIN) {
        ssize_t n = recv(x->fd, sink, sizeof sink, 0);

        if (n == 0 || (n < 0 && errno != EAGAIN)) {
            close(x->fd);
            x->fd = -1;
            attacker_connect(at, x);
        }
    }
}

static int run_attack(int argc, char **argv)
{
    static struct attack at;
    static struct legit lg;
    static uint8_t msg1[MBSC_MAX_FRAME_BODY + 2], oversize[64];
    const char *mode;
    mbsc_config *cfg;
    pthread_t th;
    long long end, med = 0;
    int seconds, count, k;

    if (argc != 9)
        die("usage: loadgen attack MODE SLAVE SLAVE_PUB MASTER_KEY SECONDS COUNT SOURCES");
    mode = argv[2];
    parse_addr(argv[3], &at.slave);
    cfg = master_config(argv[4], argv[5]);
    seconds = atoi(argv[6]);
    count = atoi(argv[7]);
    at.sources = (unsigned)atoi(argv[8]);
    if (seconds < 1 || seconds > 600 || count < 0 || count > MAX_ATTACKERS || at.sources < 1 ||
        at.sources > 250)
        die("SECONDS 1..600, COUNT 0..4096, SOURCES 1..250");
    if (strcmp(mode, "replay") == 0 || strcmp(mode, "half") == 0) {
        /* A message 1 of the real master, as captured on the wire. */
        int err;
        mbsc_session *s = mbsc_session_new(cfg, &err);
        size_t n;
        const uint8_t *out = mbsc_session_output(s, &n);

        if (s == NULL || n > sizeof msg1)
            die("cannot make message 1");
        memcpy(msg1, out, n);
        mbsc_session_free(s);
        at.bytes = msg1;
        at.n_bytes = strcmp(mode, "half") == 0 ? n / 2 : n;
    } else if (strcmp(mode, "oversize") == 0) {
        memset(oversize, 0xA5, sizeof oversize);
        oversize[0] = oversize[1] = 0xFF;
        at.bytes = oversize;
        at.n_bytes = sizeof oversize;
    } else if (strcmp(mode, "idle") == 0 || strcmp(mode, "none") == 0) {
        at.n_bytes = 0;
        if (strcmp(mode, "none") == 0)
            count = 0;
    } else {
        die("MODE: replay, idle, half, oversize or none");
    }
    at.ep = epoll_create1(EPOLL_CLOEXEC);
    if (at.ep < 0)
        die("epoll_create1");
    for (k = 0; k < count; k++) {
        at.a[k].source = (unsigned)k % at.sources;
        attacker_connect(&at, &at.a[k]);
    }
    lg.addr = argv[3];
    lg.cfg = cfg;
    lg.seconds = seconds;
    if (pthread_create(&th, NULL, legit_main, &lg) != 0)
        die("pthread_create");
    end = now_ms() + 1000LL * seconds + LEGIT_BUDGET_MS;
    while (now_ms() < end) {
        struct epoll_event evs[256];
        int n = epoll_wait(at.ep, evs, 256, 50), i;

        for (i = 0; i < n; i++)
            attacker_event(&at, evs[i].data.ptr, evs[i].events);
        /* Attackers whose socket could not be made try again. */
        for (k = 0; k < count; k++)
            if (at.a[k].fd < 0)
                attacker_connect(&at, &at.a[k]);
    }
    pthread_join(th, NULL);
    for (k = 0; k < count; k++)
        if (at.a[k].fd >= 0)
            close(at.a[k].fd);
    close(at.ep);
    if (lg.tries > 0) {
        qsort(lg.took, (size_t)lg.tries, sizeof lg.took[0], cmp_ll);
        med = lg.took[lg.tries / 2];
    }
    printf("attack %s: served %d/%d worst %lld ms median %lld ms attack connections %llu\n", mode,
           lg.served, lg.tries, lg.worst_ms, med, at.connects);
    mbsc_config_free(cfg);
    return lg.tries > 0 && lg.served * 100 >= lg.tries * 95 ? 0 : 1;
}

/* ---- scale: many masters on one event loop ----------------------------------- */

struct master {
    int fd;
    mbsc_session *s;
    unsigned index;
    unsigned done; /* requests answered */
    int waiting;   /* a request is out */
    int finished;
    int counted;         /* counted as established */
    uint16_t last_value; /* written to our register */
    uint8_t req[12];
};

static void master_request(struct master *m, int requests)
{
    unsigned j = m->done, reg = m->index % 1000u;
    uint8_t *q = m->req;

    (void)requests;
    q[0] = (uint8_t)(j >> 8);
    q[1] = (uint8_t)j;
    q[2] = q[3] = 0;
    q[4] = 0;
    q[5] = 6;
    q[6] = 1;
    q[8] = (uint8_t)(reg >> 8);
    q[9] = (uint8_t)reg;
    if (j % 2 == 0) {
        m->last_value = (uint16_t)(m->index * 131u + j);
        q[7] = 0x06; /* write single register */
        q[10] = (uint8_t)(m->last_value >> 8);
        q[11] = (uint8_t)m->last_value;
    } else {
        q[7] = 0x03; /* read it back */
        q[10] = 0;
        q[11] = 1;
    }
    if (mbsc_session_send(m->s, q, sizeof m->req) == MBSC_OK)
        m->waiting = 1;
}

/* 1 if the answer is the right one for the request out. */
static int master_check(const struct master *m, const uint8_t *p, size_t len)
{
    if (m->req[7] == 0x06)
        return len == 12 && memcmp(p, m->req, 12) == 0; /* an echo */
    return len == 11 && memcmp(p, m->req, 4) == 0 && p[7] == 0x03 && p[8] == 2 &&
           p[9] == (uint8_t)(m->last_value >> 8) && p[10] == (uint8_t)m->last_value;
}

static long rss_kb(long pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

static int flush_out(struct master *m)
{
    for (;;) {
        size_t n;
        const uint8_t *p = mbsc_session_output(m->s, &n);
        ssize_t k;

        if (n == 0)
            return 0;
        k = send(m->fd, p, n, MSG_NOSIGNAL);
        if (k < 0)
            return errno == EAGAIN ? 0 : -1;
        mbsc_session_output_consumed(m->s, (size_t)k);
    }
}

static int run_scale(int argc, char **argv)
{
    struct sockaddr_in slave;
    struct master *ms;
    mbsc_config *cfg;
    int n, requests, ep, k, errors = 0, established = 0, finished = 0, started = 0;
    long slave_pid = 0, rss_before = -1, rss_all = -1;
    long long t0, t_all = 0, t_end;

    if (argc != 7 && argc != 8)
        die("usage: loadgen scale SLAVE SLAVE_PUB MASTER_KEY MASTERS REQUESTS [SLAVE_PID]");
    parse_addr(argv[2], &slave);
    cfg = master_config(argv[3], argv[4]);
    n = atoi(argv[5]);
    requests = atoi(argv[6]);
    if (argc == 8)
        slave_pid = atol(argv[7]);
    if (n < 1 || n > 5000 || requests < 1 || requests > 100000)
        die("MASTERS 1..5000, REQUESTS 1..100000");
    ms = calloc((size_t)n, sizeof *ms);
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ms == NULL || ep < 0)
        die("out of memory");
    if (slave_pid > 0)
        rss_before = rss_kb(slave_pid);
    t0 = now_ms();
    for (k = 0; k < n; k++) {
        struct master *m = &ms[k];
        struct epoll_event ev;
        int err, one = 1;

        m->index = (unsigned)k;
        m->s = mbsc_session_new(cfg, &err);
        m->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (m->s == NULL || m->fd < 0)
            die("cannot make a master (descriptors? ulimit -n)");
        (void)setsockopt(m->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(m->fd, (struct sockaddr *)&slave, sizeof slave) != 0 && errno != EINPROGRESS)
            die("connect");
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.ptr = m;
        (void)epoll_ctl(ep, EPOLL_CTL_ADD, m->fd, &ev);
    }
    t_end = t0 + 300000; /* bounded: five minutes at most */
    while (finished < n && now_ms() < t_end) {
        struct epoll_event evs[256];
        int got = epoll_wait(ep, evs, 256, 100), i;

        for (i = 0; i < got; i++) {
            struct master *m = evs[i].data.ptr;
            size_t room, len;
            uint8_t *dst;
            const uint8_t *p;
            ssize_t r;

            if (m->finished)
                continue;
            if (flush_out(m) != 0)
                goto failed;
            if (!(evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
                continue;
            dst = mbsc_session_input_buf(m->s, &room);
            r = recv(m->fd, dst, room, 0);
            if (r == 0 || (r < 0 && errno != EAGAIN))
                goto failed;
            if (r > 0 && mbsc_session_input_ack(m->s, (size_t)r) != MBSC_OK)
                goto failed;
            if (!mbsc_session_established(m->s))
                continue;
            if (!m->counted) {
                m->counted = 1;
                established++;
                if (established == n) {
                    t_all = now_ms();
                    if (slave_pid > 0)
                        rss_all = rss_kb(slave_pid);
                }
            }
            while ((p = mbsc_session_payload(m->s, &len)) != NULL) {
                if (!m->waiting || !master_check(m, p, len))
                    goto failed;
                m->waiting = 0;
                m->done++;
                (void)mbsc_session_payload_ack(m->s);
            }
            if (m->done == (unsigned)requests) {
                m->finished = 1;
                finished++;
                close(m->fd);
                m->fd = -1;
                continue;
            }
            if (started && !m->waiting)
                master_request(m, requests);
            if (flush_out(m) != 0)
                goto failed;
            continue;
        failed:
            errors++;
            m->finished = 1;
            finished++;
            if (m->fd >= 0)
                close(m->fd);
            m->fd = -1;
        }
        if (!started && established == n - errors) {
            /* Everyone is connected and confirmed: now the requests. */
            started = 1;
            for (k = 0; k < n; k++)
                if (!ms[k].finished) {
                    master_request(&ms[k], requests);
                    if (flush_out(&ms[k]) != 0) {
                        errors++;
                        ms[k].finished = 1;
                        finished++;
                    }
                }
        }
    }
    t_end = now_ms();
    {
        long long ms_req = t_end - (t_all != 0 ? t_all : t0);
        double rps = ms_req > 0 ? (double)n * requests * 1000.0 / (double)ms_req : 0;

        printf("scale: %d masters x %d requests: connect %lld ms, requests %lld ms, %.0f "
               "requests/s, errors %d",
               n, requests, (t_all != 0 ? t_all : t_end) - t0, ms_req, rps, errors);
        if (rss_all > 0 && rss_before > 0)
            printf(", slave RSS %ld kB idle, %ld kB with all connected (%.1f kB each)", rss_before,
                   rss_all, (double)(rss_all - rss_before) / n);
        printf("\n");
    }
    for (k = 0; k < n; k++) {
        if (ms[k].fd >= 0)
            close(ms[k].fd);
        mbsc_session_free(ms[k].s);
    }
    free(ms);
    close(ep);
    mbsc_config_free(cfg);
    return errors == 0 && finished == n ? 0 : 1;
}

/* ---- hold: one key, as many sessions as it can get ----------------------------- */

#define HOLD_CONCURRENT 32     /* handshakes under way at once */
#define HOLD_MAX_MS     600000 /* bounded, should nobody send SIGTERM */
#define READ_BUDGET_MS  5000

static volatile sig_atomic_t hold_stop;

static void on_term(int sig)
{
    (void)sig;
    hold_stop = 1;
}

struct held {
    int fd;
    mbsc_session *s;
    int answered; /* an answer came: the slave confirmed this session */
    int waiting;  /* a read is out */
    long long next_ms;
    uint16_t tid;
};

struct hold {
    struct sockaddr_in slave;
    const mbsc_config *cfg;
    int ep;
    unsigned sources;
    int pace_ms;
    int attempts, launched, pending; /* pending: launched, no outcome yet */
    int held_now, held_max;
    unsigned long long refused, answers, closed_later;
    struct held *h;
};

static int held_flush(struct held *x)
{
    for (;;) {
        size_t n;
        const uint8_t *p = mbsc_session_output(x->s, &n);
        ssize_t k;

        if (n == 0)
            return 0;
        k = send(x->fd, p, n, MSG_NOSIGNAL);
        if (k < 0)
            return errno == EAGAIN ? 0 : -1;
        mbsc_session_output_consumed(x->s, (size_t)k);
    }
}

/* Watch for writability only while output waits: loopback sockets always have room. */
static void held_interest(struct hold *hd, struct held *x)
{
    struct epoll_event ev;
    size_t n;

    (void)mbsc_session_output(x->s, &n);
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLRDHUP | (n > 0 ? EPOLLOUT : 0u);
    ev.data.ptr = x;
    (void)epoll_ctl(hd->ep, EPOLL_CTL_MOD, x->fd, &ev);
}

/* A read of holding register 0; -1 if the session cannot take it. */
static int held_read(struct held *x)
{
    uint8_t q[12] = {0, 0, 0, 0, 0, 6, 1, 0x03, 0, 0, 0, 1};

    x->tid++;
    q[0] = (uint8_t)(x->tid >> 8);
    q[1] = (uint8_t)x->tid;
    if (mbsc_session_send(x->s, q, sizeof q) != MBSC_OK)
        return -1;
    x->waiting = 1;
    return held_flush(x);
}

static void held_close(struct hold *hd, struct held *x)
{
    if (x->fd < 0)
        return;
    close(x->fd);
    x->fd = -1;
    mbsc_session_free(x->s);
    x->s = NULL;
    if (x->answered) {
        hd->held_now--;
        hd->closed_later++;
    } else {
        hd->pending--;
        hd->refused++;
    }
}

static void held_open(struct hold *hd, struct held *x)
{
    struct sockaddr_in src;
    struct epoll_event ev;
    int one = 1, err;

    memset(x, 0, sizeof *x);
    x->fd = -1;
    hd->launched++;
    hd->pending++;
    x->s = mbsc_session_new(hd->cfg, &err);
    x->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (x->s == NULL || x->fd < 0)
        die("cannot make a session (descriptors? ulimit -n)");
    (void)setsockopt(x->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    memset(&src, 0, sizeof src);
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(0x7f000002u + (unsigned)hd->launched % hd->sources);
    (void)bind(x->fd, (struct sockaddr *)&src, sizeof src);
    if (connect(x->fd, (struct sockaddr *)&hd->slave, sizeof hd->slave) != 0 &&
        errno != EINPROGRESS) {
        held_close(hd, x);
        return;
    }
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
    ev.data.ptr = x;
    (void)epoll_ctl(hd->ep, EPOLL_CTL_ADD, x->fd, &ev);
}

static void held_event(struct hold *hd, struct held *x, uint32_t events)
{
    size_t room, len;
    uint8_t *dst;
    ssize_t r;

    if (x->fd < 0)
        return;
    if (held_flush(x) != 0) {
        held_close(hd, x);
        return;
    }
    if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))) {
        held_interest(hd, x);
        return;
    }
    dst = mbsc_session_input_buf(x->s, &room);
    r = recv(x->fd, dst, room, 0);
    if (r == 0 || (r < 0 && errno != EAGAIN) ||
        (r > 0 && mbsc_session_input_ack(x->s, (size_t)r) != MBSC_OK)) {
        held_close(hd, x);
        return;
    }
    if (!mbsc_session_established(x->s)) {
        held_interest(hd, x);
        return;
    }
    while (mbsc_session_payload(x->s, &len) != NULL) {
        (void)mbsc_session_payload_ack(x->s);
        if (len == 0)
            continue;
        hd->answers++;
        x->waiting = 0;
        x->next_ms = now_ms() + hd->pace_ms;
        if (!x->answered) {
            x->answered = 1;
            hd->pending--;
            if (++hd->held_now > hd->held_max)
                hd->held_max = hd->held_now;
        }
    }
    /* Established: the first read goes with the confirming keep-alive. */
    if (!x->answered && !x->waiting && held_read(x) != 0)
        held_close(hd, x);
    else
        held_interest(hd, x);
}

static int run_hold(int argc, char **argv)
{
    static struct hold hd;
    struct sigaction sa;
    mbsc_config *cfg;
    long long end;
    int k, ready = 0;

    if (argc != 8)
        die("usage: loadgen hold SLAVE SLAVE_PUB MASTER_KEY ATTEMPTS PACE_MS SOURCES");
    parse_addr(argv[2], &hd.slave);
    cfg = master_config(argv[3], argv[4]);
    hd.cfg = cfg;
    hd.attempts = atoi(argv[5]);
    hd.pace_ms = atoi(argv[6]);
    hd.sources = (unsigned)atoi(argv[7]);
    if (hd.attempts < 1 || hd.attempts > 100000 || hd.pace_ms < 0 || hd.pace_ms > 600000 ||
        hd.sources < 1 || hd.sources > 250)
        die("ATTEMPTS 1..100000, PACE_MS 0..600000, SOURCES 1..250");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0)
        die("sigaction");
    hd.h = calloc((size_t)hd.attempts, sizeof *hd.h);
    hd.ep = epoll_create1(EPOLL_CLOEXEC);
    if (hd.h == NULL || hd.ep < 0)
        die("out of memory");
    end = now_ms() + HOLD_MAX_MS;
    while (!hold_stop && now_ms() < end) {
        struct epoll_event evs[256];
        long long now;
        int n, i;

        while (hd.launched < hd.attempts && hd.pending < HOLD_CONCURRENT)
            held_open(&hd, &hd.h[hd.launched]);
        if (!ready && hd.launched == hd.attempts && hd.pending == 0) {
            ready = 1;
            printf("ready held %d refused %llu\n", hd.held_now, hd.refused);
            fflush(stdout);
        }
        n = epoll_wait(hd.ep, evs, 256, 10);
        for (i = 0; i < n; i++)
            held_event(&hd, evs[i].data.ptr, evs[i].events);
        /* Held sessions read again at their pace: never idle. */
        now = now_ms();
        for (k = 0; k < hd.launched; k++) {
            struct held *x = &hd.h[k];

            if (x->fd < 0 || !x->answered || x->waiting || now < x->next_ms)
                continue;
            if (held_read(x) != 0)
                held_close(&hd, x);
            else
                held_interest(&hd, x);
        }
    }
    printf("hold: attempts %d held %d (at most %d at once) refused %llu answers %llu closed later "
           "%llu\n",
           hd.launched, hd.held_now, hd.held_max, hd.refused, hd.answers, hd.closed_later);
    for (k = 0; k < hd.launched; k++)
        if (hd.h[k].fd >= 0) {
            close(hd.h[k].fd);
            mbsc_session_free(hd.h[k].s);
        }
    free(hd.h);
    close(hd.ep);
    mbsc_config_free(cfg);
    return 0;
}

/* ---- reads: another master's turn; idle: a master that says nothing ------------- */

/* One read of holding register 0 on c: MBSC_OK with the registers, else why not. */
static int read_register(mbsc_conn *c, uint16_t tid)
{
    uint8_t req[12] = {0, 0, 0, 0, 0, 6, 1, 0x03, 0, 0, 0, 1}, rsp[300];
    size_t len = 0;
    int r;

    req[0] = (uint8_t)(tid >> 8);
    req[1] = (uint8_t)tid;
    r = mbsc_conn_send(c, req, sizeof req, READ_BUDGET_MS);
    if (r == MBSC_OK)
        r = mbsc_conn_recv(c, rsp, sizeof rsp, &len, READ_BUDGET_MS);
    if (r != MBSC_OK)
        return r;
    if (len == 11 && memcmp(rsp, req, 2) == 0 && rsp[7] == 0x03)
        return MBSC_OK;
    return len >= 9 && (rsp[7] & 0x80) ? -1000 - rsp[8] : -999; /* an exception; or garbage */
}

static int run_reads(int argc, char **argv)
{
    mbsc_config *cfg;
    mbsc_conn *c = NULL;
    int count, k, answered = 0;

    if (argc != 6)
        die("usage: loadgen reads SLAVE SLAVE_PUB MASTER_KEY COUNT");
    cfg = master_config(argv[3], argv[4]);
    count = atoi(argv[5]);
    if (count < 1 || count > 100000)
        die("COUNT 1..100000");
    for (k = 0; k < count; k++) {
        int r = c == NULL ? mbsc_connect(argv[2], cfg, READ_BUDGET_MS, &c, NULL, 0) : MBSC_OK;

        if (r == MBSC_OK)
            r = read_register(c, (uint16_t)k);
        if (r == MBSC_OK) {
            answered++;
            continue;
        }
        if (r <= -1000)
            fprintf(stderr, "loadgen: read %d: exception %d\n", k, -1000 - r);
        else if (r == -999)
            fprintf(stderr, "loadgen: read %d: not the answer to this read\n", k);
        else
            fprintf(stderr, "loadgen: read %d: %s\n", k, mbsc_strerror(r));
        mbsc_conn_close(c); /* whatever went wrong, the next read starts afresh */
        c = NULL;
    }
    mbsc_conn_close(c);
    mbsc_config_free(cfg);
    printf("reads: answered %d/%d\n", answered, count);
    return answered == count ? 0 : 1;
}

static int run_idle(int argc, char **argv)
{
    mbsc_config *cfg;
    mbsc_conn *c = NULL;
    uint8_t buf[300];
    size_t len;
    long long t0, limit;
    int r;

    if (argc != 6)
        die("usage: loadgen idle SLAVE SLAVE_PUB MASTER_KEY LIMIT_MS");
    cfg = master_config(argv[3], argv[4]);
    limit = atoll(argv[5]);
    if (limit < 1 || limit > 3600000)
        die("LIMIT_MS 1..3600000");
    r = mbsc_connect(argv[2], cfg, READ_BUDGET_MS, &c, NULL, 0);
    if (r == MBSC_OK)
        r = read_register(c, 1);
    if (r != MBSC_OK) {
        fprintf(stderr, "loadgen: idle: the first read failed: %s\n",
                r <= -999 ? "an exception or a wrong answer" : mbsc_strerror(r));
        mbsc_conn_close(c);
        mbsc_config_free(cfg);
        return 2;
    }
    /* Silence from here on: only the slave may end this. */
    t0 = now_ms();
    r = mbsc_conn_recv(c, buf, sizeof buf, &len, (int)limit);
    mbsc_conn_close(c);
    mbsc_config_free(cfg);
    if (r == MBSC_ERR_PEER_CLOSED) {
        printf("idle: closed after %lld ms\n", now_ms() - t0);
        return 0;
    }
    printf("idle: still open after %lld ms (%s)\n", now_ms() - t0, mbsc_strerror(r));
    return 1;
}

int main(int argc, char **argv)
{
    if (sodium_init() < 0)
        die("sodium_init");
    if (argc >= 2 && strcmp(argv[1], "attack") == 0)
        return run_attack(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "scale") == 0)
        return run_scale(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "hold") == 0)
        return run_hold(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "reads") == 0)
        return run_reads(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "idle") == 0)
        return run_idle(argc, argv);
    die("usage: loadgen attack|scale|hold|reads|idle ... (see tests/loadgen.c)");
    return 2;
}
