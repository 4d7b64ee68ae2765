/* SPDX-License-Identifier: ISC */
/*
 * loadgen.c - attacks and load against a running secure_slave, for
 * tests/attacks.test and tests/scale.test (and make stress).
 *
 *   loadgen attack MODE SLAVE SLAVE_PUB MASTER_KEY SECONDS COUNT SOURCES
 *   loadgen scale SLAVE SLAVE_PUB MASTER_KEY MASTERS REQUESTS [SLAVE_PID]
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
 * Everything is bounded in count and time and stops by itself.
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
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

int main(int argc, char **argv)
{
    if (sodium_init() < 0)
        die("sodium_init");
    if (argc >= 2 && strcmp(argv[1], "attack") == 0)
        return run_attack(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "scale") == 0)
        return run_scale(argc, argv);
    die("usage: loadgen attack ... | loadgen scale ... (see tests/loadgen.c)");
    return 2;
}
