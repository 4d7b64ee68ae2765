/* SPDX-License-Identifier: ISC */
/*
 * check_server.c - mbsc_server (mbsc/server.h) on 127.0.0.1:0, driven by
 * the test's own thread: answers later and in order, skip and close, the
 * limits and their defaults, the unconfirmed budgets (per address,
 * eviction that spares progress and confirmed sessions), the idle timeout,
 * the dead-peer probes (TCP keepalive) on accepted sockets, descriptors
 * running out (the reserve), the one descriptor for an external loop, the
 * events, and reloads that meet masters in their handshake.  Masters run
 * in threads on the blocking connection API, or are driven by hand
 * (tu_hand_*) where a test must hold one between message 2 and its
 * confirming frame; nothing sleeps to synchronise.
 */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"
#include "mbsc.h"
#include "testutil.h"

Suite *server_suite(void);

#define LONG_MS 20000

static struct tu_peers peers;

static void setup(void)
{
    tu_peers_setup(&peers, "plc-9", "operator", NULL);
}

static void teardown(void)
{
    tu_peers_teardown(&peers);
}

/* --- The server under test, and what it reports ------------------------------ */

struct fixture {
    mbsc_server *srv;
    char addr[MBSC_ADDRSTRLEN];
    unsigned connected, closed, logs, requests;
    int last_close_error;
    char last_close_detail[128];
    char logs_text[2048];
    char last_role[64], last_name[64];
    /* Requests kept for a later answer. */
    mbsc_server_conn_id waiting;
    uint8_t payload[64];
    size_t payload_len;
    int answer_now; /* 1: reply from the callback; 0: keep for later */
    /* Who the request callback must see (the allow-list's name, NULL: any; and role). */
    const char *expect_name, *expect_role;
};

static void on_event(void *user, const struct mbsc_server_event *ev)
{
    struct fixture *f = user;

    switch (ev->type) {
    case MBSC_SERVER_EVENT_CONNECTED:
        f->connected++;
        ck_assert_ptr_nonnull(ev->conn);
        snprintf(f->last_name, sizeof f->last_name, "%s", ev->conn->peer_name);
        snprintf(f->last_role, sizeof f->last_role, "%s",
                 ev->conn->peer_role != NULL ? ev->conn->peer_role : "(none)");
        ck_assert_ptr_nonnull(ev->conn->cipher);
        break;
    case MBSC_SERVER_EVENT_CLOSED:
        f->closed++;
        ck_assert_ptr_nonnull(ev->conn);
        ck_assert_ptr_nonnull(ev->conn->peer_name); /* kept after the session failed */
        f->last_close_error = ev->error;
        snprintf(f->last_close_detail, sizeof f->last_close_detail, "%s",
                 ev->detail != NULL ? ev->detail : "");
        break;
    case MBSC_SERVER_EVENT_LOG: {
        size_t at = strlen(f->logs_text);

        f->logs++;
        ck_assert_ptr_null(ev->conn);
        snprintf(f->logs_text + at, sizeof f->logs_text - at, "%s\n", ev->detail);
        break;
    }
    default: ck_abort_msg("unknown event %d", (int)ev->type);
    }
}

static void on_request(void *user, mbsc_server *srv, const struct mbsc_server_conn_info *conn,
                       const uint8_t *payload, size_t len)
{
    struct fixture *f = user;

    f->requests++;
    ck_assert_uint_eq(f->waiting, 0); /* one request at a time per connection */
    if (f->expect_name != NULL)
        ck_assert_str_eq(conn->peer_name, f->expect_name);
    ck_assert_str_eq(conn->peer_role, f->expect_role);
    ck_assert_uint_le(len, sizeof f->payload);
    if (f->answer_now) {
        uint8_t echo[64];

        memcpy(echo, payload, len);
        echo[0] ^= 0x80;
        ck_assert_int_eq(mbsc_server_reply(srv, conn->id, echo, len), MBSC_OK);
        /* Answered: a second answer is refused. */
        ck_assert_int_eq(mbsc_server_reply(srv, conn->id, echo, len), MBSC_ERR_STATE);
        return;
    }
    f->waiting = conn->id;
    memcpy(f->payload, payload, len);
    f->payload_len = len;
}

static void fixture_start(struct fixture *f, const mbsc_config *cfg)
{
    char why[MBSC_WHY_SIZE];

    memset(f, 0, sizeof *f);
    f->answer_now = 1;
    f->expect_name = "plc-9";
    f->expect_role = "operator";
    ck_assert_msg(mbsc_server_new(&f->srv, "127.0.0.1:0", cfg, why, sizeof why) == MBSC_OK, "%s",
                  why);
    mbsc_server_set_event_fn(f->srv, on_event, f);
    mbsc_server_set_request_fn(f->srv, on_request, f);
    ck_assert_int_eq(mbsc_server_set_limit(f->srv, MBSC_SERVER_LOG_INTERVAL_MS, 1), MBSC_OK);
    ck_assert_int_eq(mbsc_server_address(f->srv, f->addr, sizeof f->addr), MBSC_OK);
}

/* Step until cond holds (or 20 s pass: then fail). */
#define STEP_UNTIL(f, cond)                                                                        \
    do {                                                                                           \
        long long until_ = tu_now_ms() + LONG_MS;                                                  \
        while (!(cond) && tu_now_ms() < until_)                                                    \
            ck_assert_int_eq(mbsc_server_step((f)->srv, 20), MBSC_OK);                             \
        ck_assert_msg(cond, "timed out waiting for %s", #cond);                                    \
    } while (0)

/* --- A master in a thread ---------------------------------------------------------- */

struct master {
    pthread_t thread;
    const char *addr;
    const mbsc_config *cfg;
    int n;       /* requests, pipelined */
    int rc;      /* of the last call */
    int answers; /* answers received, each checked */
    int done;
    int hold_open; /* after the answers, wait for the slave to close */
};

static void *master_main(void *arg)
{
    struct master *m = arg;
    mbsc_conn *c = NULL;
    uint8_t buf[128];
    size_t len;
    int i;

    m->rc = mbsc_connect(m->addr, m->cfg, LONG_MS, &c, NULL, 0);
    for (i = 0; m->rc == MBSC_OK && i < m->n; i++) {
        uint8_t req[8] = {(uint8_t)i, 'r', 'e', 'q', 0, 0, 0, 0};
        m->rc = mbsc_conn_send(c, req, sizeof req, LONG_MS);
    }
    for (i = 0; m->rc == MBSC_OK && i < m->n; i++) {
        m->rc = mbsc_conn_recv(c, buf, sizeof buf, &len, LONG_MS);
        /* In order: answer i carries request i. */
        if (m->rc == MBSC_OK && len == 8 && buf[0] == ((uint8_t)i ^ 0x80) && buf[1] == 'r')
            m->answers++;
    }
    if (m->rc == MBSC_OK && m->hold_open)
        m->rc = mbsc_conn_recv(c, buf, sizeof buf, &len, LONG_MS);
    mbsc_conn_close(c);
    __atomic_store_n(&m->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void master_start(struct master *m, const char *addr, const mbsc_config *cfg, int n)
{
    memset(m, 0, sizeof *m);
    m->addr = addr;
    m->cfg = cfg;
    m->n = n;
    ck_assert_int_eq(pthread_create(&m->thread, NULL, master_main, m), 0);
}

static int master_done(struct master *m)
{
    return __atomic_load_n(&m->done, __ATOMIC_SEQ_CST);
}

/* A silent TCP client from a chosen loopback source address. */
static int raw_from(const char *src, const char *addr)
{
    char host[64], port[16];
    struct sockaddr_in sin, from;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(mbsc_parse_hostport(addr, host, sizeof host, port, sizeof port), MBSC_OK);
    memset(&from, 0, sizeof from);
    from.sin_family = AF_INET;
    ck_assert_int_eq(inet_pton(AF_INET, src, &from.sin_addr), 1);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&from, sizeof from), 0);
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)atoi(port));
    ck_assert_int_eq(inet_pton(AF_INET, host, &sin.sin_addr), 1);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0);
    return fd;
}

static struct mbsc_server_stats stats(const struct fixture *f)
{
    struct mbsc_server_stats st;

    mbsc_server_get_stats(f->srv, &st);
    return st;
}

/* --- Tests -------------------------------------------------------------------------- */

START_TEST(test_answers_now_in_order)
{
    struct fixture f;
    struct master m;

    fixture_start(&f, peers.scfg);
    master_start(&m, f.addr, peers.mcfg, 5); /* pipelined */
    STEP_UNTIL(&f, master_done(&m));
    pthread_join(m.thread, NULL);
    ck_assert_int_eq(m.rc, MBSC_OK);
    ck_assert_int_eq(m.answers, 5);
    STEP_UNTIL(&f, f.closed == 1);
    ck_assert_uint_eq(f.connected, 1);
    ck_assert_uint_eq(f.requests, 5);
    ck_assert_str_eq(f.last_name, "plc-9");
    ck_assert_str_eq(f.last_role, "operator");
    ck_assert_int_eq(f.last_close_error, MBSC_OK);
    ck_assert_uint_eq(stats(&f).confirmed, 1);
    ck_assert_uint_eq(stats(&f).requests, 5);
    mbsc_server_free(f.srv);
}
END_TEST

/* Answers given later, outside the callback: one request at a time, in order. */
START_TEST(test_answers_later_in_order)
{
    struct fixture f;
    struct master m;
    int k;

    fixture_start(&f, peers.scfg);
    f.answer_now = 0;
    master_start(&m, f.addr, peers.mcfg, 3);
    for (k = 0; k < 3; k++) {
        uint8_t echo[64];
        unsigned before = f.requests;
        mbsc_server_conn_id id;

        STEP_UNTIL(&f, f.waiting != 0);
        ck_assert_uint_eq(f.requests, before + 1);
        /* Whatever arrives meanwhile waits for this answer. */
        ck_assert_int_eq(mbsc_server_step(f.srv, 10), MBSC_OK);
        ck_assert_uint_eq(f.requests, before + 1);
        id = f.waiting;
        f.waiting = 0;
        memcpy(echo, f.payload, f.payload_len);
        echo[0] ^= 0x80;
        ck_assert_int_eq(mbsc_server_reply(f.srv, id, NULL, 0), MBSC_ERR_INVALID_ARG);
        ck_assert_int_eq(mbsc_server_reply(f.srv, id, echo, MBSC_MAX_PAYLOAD + 1),
                         MBSC_ERR_PAYLOAD_TOO_LONG);
        {
            /* Above the session's configured maximum (260 by default): refused, harmless. */
            static uint8_t longer[MBSC_DEFAULT_MAX_PAYLOAD + 1];
            ck_assert_int_eq(mbsc_server_reply(f.srv, id, longer, sizeof longer),
                             MBSC_ERR_PAYLOAD_TOO_LONG);
        }
        ck_assert_int_eq(mbsc_server_reply(f.srv, id ^ 1u, echo, f.payload_len),
                         MBSC_ERR_PEER_CLOSED); /* nobody has that id */
        ck_assert_int_eq(mbsc_server_reply(f.srv, id, echo, f.payload_len), MBSC_OK);
        /*
         * The next request comes at a next step.  After the last one nothing
         * waits, so no step is due at once: a loop driving the server would
         * otherwise wake up and poll for nothing after every answer.
         */
        if (k == 2)
            ck_assert_int_ne(mbsc_server_next_timeout(f.srv), 0);
    }
    STEP_UNTIL(&f, master_done(&m));
    pthread_join(m.thread, NULL);
    ck_assert_int_eq(m.rc, MBSC_OK);
    ck_assert_int_eq(m.answers, 3);
    STEP_UNTIL(&f, f.closed == 1);
    mbsc_server_free(f.srv);
}
END_TEST

/* skip: no answer, the next request comes; close: the master sees the end. */
START_TEST(test_skip_and_close)
{
    struct fixture f;
    struct master m;
    mbsc_server_conn_id id;

    fixture_start(&f, peers.scfg);
    f.answer_now = 0;
    master_start(&m, f.addr, peers.mcfg, 2);
    STEP_UNTIL(&f, f.waiting != 0);
    id = f.waiting;
    f.waiting = 0;
    ck_assert_int_eq(mbsc_server_skip(f.srv, id), MBSC_OK);
    ck_assert_int_eq(mbsc_server_skip(f.srv, id), MBSC_ERR_STATE);
    STEP_UNTIL(&f, f.waiting != 0);
    ck_assert_uint_eq(f.requests, 2);
    id = f.waiting;
    ck_assert_int_eq(mbsc_server_close(f.srv, id, MBSC_ERR_BAD_ADU, "test says no"), MBSC_OK);
    ck_assert_uint_eq(f.closed, 1);
    ck_assert_int_eq(f.last_close_error, MBSC_ERR_BAD_ADU);
    ck_assert_str_eq(f.last_close_detail, "test says no");
    ck_assert_int_eq(mbsc_server_close(f.srv, id, MBSC_OK, NULL), MBSC_ERR_PEER_CLOSED);
    ck_assert_int_eq(mbsc_server_reply(f.srv, id, f.payload, 1), MBSC_ERR_PEER_CLOSED);
    STEP_UNTIL(&f, master_done(&m));
    pthread_join(m.thread, NULL);
    ck_assert_int_eq(m.rc, MBSC_ERR_PEER_CLOSED);
    ck_assert_int_eq(m.answers, 0);
    mbsc_server_free(f.srv);
}
END_TEST

START_TEST(test_limits)
{
    struct fixture f;
    struct rlimit rl;

    fixture_start(&f, peers.scfg);
    ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_MAX_UNCONFIRMED), 64);
    ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_MAX_UNCONFIRMED_PER_ADDRESS), 4);
    ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_HANDSHAKE_TIMEOUT_MS), 2000);
    ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_IDLE_TIMEOUT_MS), 0);
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur >= 1024 + MBSC_SERVER_FD_RESERVE)
        ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_MAX_CONNECTIONS), 1024);
    else
        ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_MAX_CONNECTIONS),
                          rl.rlim_cur - MBSC_SERVER_FD_RESERVE);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_MAX_UNCONFIRMED, 0),
                     MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_MAX_CONNECTIONS, 0),
                     MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_HANDSHAKE_TIMEOUT_MS, 0),
                     MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, (enum mbsc_server_limit)99, 1),
                     MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_server_set_limit(NULL, MBSC_SERVER_MAX_CONNECTIONS, 1),
                     MBSC_ERR_INVALID_ARG);
    /* The unconfirmed budget follows the total down, never above it. */
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_MAX_CONNECTIONS, 10), MBSC_OK);
    ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_MAX_UNCONFIRMED), 10);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_MAX_UNCONFIRMED, 50), MBSC_OK);
    ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_MAX_UNCONFIRMED), 10);
    /* Clamped below the descriptor limit. */
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_MAX_CONNECTIONS, 1u << 23), MBSC_OK);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (1u << 23))
        ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_MAX_CONNECTIONS),
                          rl.rlim_cur - MBSC_SERVER_FD_RESERVE);
    mbsc_server_free(f.srv);
}
END_TEST

/* Four unconfirmed per source address; another address still gets in. */
START_TEST(test_per_address_budget)
{
    struct fixture f;
    int fds[6], i;

    fixture_start(&f, peers.scfg);
    for (i = 0; i < 5; i++)
        fds[i] = raw_from("127.0.0.1", f.addr);
    STEP_UNTIL(&f, stats(&f).accepted + stats(&f).per_address == 5);
    ck_assert_uint_eq(stats(&f).unconfirmed, 4);
    ck_assert_uint_eq(stats(&f).per_address, 1);
    fds[5] = raw_from("127.0.0.2", f.addr);
    STEP_UNTIL(&f, stats(&f).accepted == 5);
    ck_assert_uint_eq(stats(&f).unconfirmed, 5);
    STEP_UNTIL(&f, strstr(f.logs_text, "one address") != NULL);
    for (i = 0; i < 6; i++)
        close(fds[i]);
    mbsc_server_free(f.srv);
}
END_TEST

/*
 * Unconfirmed budget full: the oldest silent connection makes room, a
 * connection that got its message 1 through is spared, and a confirmed
 * session is never touched.
 */
START_TEST(test_eviction_order)
{
    uint8_t msg1[512];
    struct fixture f;
    struct master m;
    size_t n1 = tu_message1(peers.mcfg, msg1, sizeof msg1);
    int progressed, silent[3], i;

    fixture_start(&f, peers.scfg);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_MAX_UNCONFIRMED, 2), MBSC_OK);
    /* A confirmed session first (the master holds it open). */
    master_start(&m, f.addr, peers.mcfg, 1);
    m.hold_open = 1;
    STEP_UNTIL(&f, f.requests == 1);
    /* Then one that sends a valid message 1 and waits, and one silent one. */
    progressed = raw_from("127.0.0.3", f.addr);
    ck_assert_int_eq(send(progressed, msg1, n1, MSG_NOSIGNAL), (ssize_t)n1);
    STEP_UNTIL(&f, stats(&f).unconfirmed == 1);
    {
        struct pollfd p = {progressed, POLLIN, 0};
        uint8_t msg2[128];

        /* Message 2 has come back: the slave took message 1. */
        while (poll(&p, 1, 0) == 0)
            ck_assert_int_eq(mbsc_server_step(f.srv, 10), MBSC_OK);
        ck_assert_int_eq(recv(progressed, msg2, sizeof msg2, 0), 2 + 49);
    }
    silent[0] = raw_from("127.0.0.4", f.addr);
    STEP_UNTIL(&f, stats(&f).unconfirmed == 2);
    /* Two more silent ones: each evicts the oldest silent, never the progressed. */
    silent[1] = raw_from("127.0.0.5", f.addr);
    STEP_UNTIL(&f, stats(&f).evicted == 1);
    silent[2] = raw_from("127.0.0.6", f.addr);
    STEP_UNTIL(&f, stats(&f).evicted == 2);
    ck_assert_uint_eq(stats(&f).unconfirmed, 2);
    {
        char b;
        /* silent[0] and [1] are gone, progressed is still open. */
        ck_assert_int_eq(recv(silent[0], &b, 1, 0), 0);
        ck_assert_int_eq(recv(silent[1], &b, 1, 0), 0);
        ck_assert_int_eq(recv(progressed, &b, 1, MSG_DONTWAIT), -1);
        ck_assert_int_eq(errno, EAGAIN);
    }
    ck_assert_uint_eq(stats(&f).connections, 3); /* the confirmed one stays */
    ck_assert_uint_eq(f.closed, 0);
    for (i = 0; i < 3; i++)
        close(silent[i]);
    close(progressed);
    mbsc_server_free(f.srv); /* closes the confirmed session: the master's read ends */
    pthread_join(m.thread, NULL);
    ck_assert_int_eq(m.answers, 1);
}
END_TEST

/* The total budget full of confirmed sessions: newcomers are refused. */
START_TEST(test_confirmed_never_evicted)
{
    struct fixture f;
    struct master a, b;
    int fd;
    char c;

    fixture_start(&f, peers.scfg);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_MAX_CONNECTIONS, 2), MBSC_OK);
    master_start(&a, f.addr, peers.mcfg, 1);
    a.hold_open = 1;
    master_start(&b, f.addr, peers.mcfg, 1);
    b.hold_open = 1;
    STEP_UNTIL(&f, f.requests == 2);
    fd = raw_from("127.0.0.7", f.addr);
    STEP_UNTIL(&f, stats(&f).full == 1);
    ck_assert_int_eq(recv(fd, &c, 1, 0), 0);
    ck_assert_uint_eq(stats(&f).connections, 2);
    ck_assert_uint_eq(f.closed, 0);
    close(fd);
    mbsc_server_free(f.srv);
    pthread_join(a.thread, NULL);
    pthread_join(b.thread, NULL);
    ck_assert_int_eq(a.answers + b.answers, 2);
}
END_TEST

START_TEST(test_deadlines)
{
    struct fixture f;
    struct master m;
    int fd;

    fixture_start(&f, peers.scfg);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_HANDSHAKE_TIMEOUT_MS, 100), MBSC_OK);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_IDLE_TIMEOUT_MS, 150), MBSC_OK);
    fd = raw_from("127.0.0.1", f.addr);
    master_start(&m, f.addr, peers.mcfg, 1);
    m.hold_open = 1;
    STEP_UNTIL(&f, stats(&f).timed_out == 1 && f.closed == 1);
    ck_assert_int_eq(f.last_close_error, MBSC_ERR_TIMEOUT);
    ck_assert_str_eq(f.last_close_detail, "idle timeout");
    ck_assert_ptr_nonnull(strstr(f.logs_text, "handshake timeout"));
    STEP_UNTIL(&f, master_done(&m));
    pthread_join(m.thread, NULL);
    ck_assert_int_eq(m.answers, 1);
    ck_assert_int_eq(m.rc, MBSC_ERR_PEER_CLOSED);
    close(fd);
    mbsc_server_free(f.srv);
}
END_TEST

/*
 * The server's end of the one connection from client_fd: the descriptor in
 * this process whose local address is client_fd's peer address (the test
 * runs both ends).
 */
static int server_end_of(int client_fd)
{
    struct sockaddr_in want, got;
    socklen_t len = sizeof want;
    struct dirent *e;
    DIR *d = opendir("/proc/self/fd");
    int found = -1;

    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(getpeername(client_fd, (struct sockaddr *)&want, &len), 0);
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer, gl = sizeof got;

        if (e->d_name[0] == '.' || fd == client_fd || fd == dirfd(d) ||
            getsockname(fd, (struct sockaddr *)&got, &gl) != 0 || got.sin_family != AF_INET ||
            got.sin_port != want.sin_port || getpeername(fd, (struct sockaddr *)&peer, &pl) != 0)
            continue; /* not a socket, another socket, or the listener */
        found = fd;
    }
    closedir(d);
    ck_assert_int_ge(found, 0);
    return found;
}

/* SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL and TCP_KEEPCNT of fd, as "on/idle/intvl/cnt". */
static void keepalive_of(int fd, char *out, size_t len)
{
    int on = 0, idle = 0, intvl = 0, cnt = 0;
    socklen_t l = sizeof on;

    ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, &l), 0);
    ck_assert_int_eq(getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, &l), 0);
    ck_assert_int_eq(getsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, &l), 0);
    ck_assert_int_eq(getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, &l), 0);
    snprintf(out, len, "%s/%d/%d/%d", on ? "on" : "off", idle, intvl, cnt);
}

/*
 * A peer whose host has gone (switched off, or a reset that reached only
 * it) sends nothing, and a slave never sends unasked: without probes its
 * session would stay for ever.  Accepted sockets are probed (TCP
 * keepalive) so that such a connection ends within MBSC_SERVER_DEAD_PEER_MS
 * of silence: half of it before the first probe, then three probes a sixth
 * apart.  0 turns the probes off.
 */
START_TEST(test_dead_peer_probes)
{
    static const struct {
        unsigned ms;
        const char *expect;
    } cases[] = {{30000, "on/15/5/3"}, {7000, "on/3/1/3"}, {1000, "on/1/1/3"}};
    struct fixture f;
    char got[64];
    size_t i;
    int fd;

    fixture_start(&f, peers.scfg);
    ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_DEAD_PEER_MS), 30000);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned accepted = (unsigned)stats(&f).accepted;

        ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_DEAD_PEER_MS, cases[i].ms),
                         MBSC_OK);
        fd = raw_from("127.0.0.1", f.addr);
        STEP_UNTIL(&f, stats(&f).accepted == accepted + 1);
        keepalive_of(server_end_of(fd), got, sizeof got);
        ck_assert_str_eq(got, cases[i].expect);
        close(fd);
    }
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_DEAD_PEER_MS, 0), MBSC_OK);
    fd = raw_from("127.0.0.1", f.addr);
    STEP_UNTIL(&f, stats(&f).accepted == 4);
    keepalive_of(server_end_of(fd), got, sizeof got);
    ck_assert_ptr_nonnull(strstr(got, "off/"));
    close(fd);
    mbsc_server_free(f.srv);
}
END_TEST

/* Out of descriptors: waiting clients are accepted and closed, no spinning. */
START_TEST(test_out_of_descriptors)
{
    struct fixture f;
    struct rlimit rl, low;
    int fds[3], hogs[64], n_hogs = 0, i;
    long long t0;
    char c;

    fixture_start(&f, peers.scfg);
    for (i = 0; i < 3; i++)
        fds[i] = raw_from("127.0.0.1", f.addr); /* queued in the backlog */
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    low = rl;
    low.rlim_cur = (rlim_t)fds[2] + 8;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    while (n_hogs < 64 && (hogs[n_hogs] = dup(0)) >= 0)
        n_hogs++;
    ck_assert_int_eq(errno, EMFILE);
    t0 = tu_now_ms();
    STEP_UNTIL(&f, stats(&f).fd_exhausted == 3);
    ck_assert_int_lt(tu_now_ms() - t0, 1000); /* no pause per failed accept */
    ck_assert_uint_eq(stats(&f).accepted, 0);
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(recv(fds[i], &c, 1, 0), 0);
    /* The reserve is back: with descriptors again, clients are served. */
    for (i = 0; i < n_hogs; i++)
        close(hogs[i]);
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    {
        struct master m;

        master_start(&m, f.addr, peers.mcfg, 1);
        STEP_UNTIL(&f, master_done(&m));
        pthread_join(m.thread, NULL);
        ck_assert_int_eq(m.answers, 1);
    }
    ck_assert_ptr_nonnull(strstr(f.logs_text, "out of descriptors"));
    for (i = 0; i < 3; i++)
        close(fds[i]);
    mbsc_server_free(f.srv);
}
END_TEST

/* An external loop watches one descriptor, whatever the number of connections. */
START_TEST(test_external_loop_one_fd)
{
    struct fixture f;
    struct master m[3];
    int i, fd;

    fixture_start(&f, peers.scfg);
    fd = mbsc_server_fd(f.srv);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(mbsc_server_next_timeout(f.srv), -1);
    for (i = 0; i < 3; i++)
        master_start(&m[i], f.addr, peers.mcfg, 4);
    while (!(master_done(&m[0]) && master_done(&m[1]) && master_done(&m[2]))) {
        struct pollfd p = {fd, POLLIN, 0};
        int t = mbsc_server_next_timeout(f.srv);

        ck_assert_int_ge(poll(&p, 1, t < 0 || t > 50 ? 50 : t), 0);
        ck_assert_int_eq(mbsc_server_step(f.srv, 0), MBSC_OK);
    }
    for (i = 0; i < 3; i++) {
        pthread_join(m[i].thread, NULL);
        ck_assert_int_eq(m[i].answers, 4);
    }
    STEP_UNTIL(&f, f.closed == 3);
    mbsc_server_free(f.srv);
}
END_TEST

/* A replayed message 1 is refused before any DH, and never confirms. */
START_TEST(test_replayed_message1)
{
    uint8_t msg1[512];
    struct fixture f;
    size_t n1 = tu_message1(peers.mcfg, msg1, sizeof msg1);
    int a, b;
    char c;

    fixture_start(&f, peers.scfg);
    a = raw_from("127.0.0.1", f.addr);
    ck_assert_int_eq(send(a, msg1, n1, MSG_NOSIGNAL), (ssize_t)n1);
    {
        struct pollfd p = {a, POLLIN, 0};
        while (poll(&p, 1, 0) == 0) /* the first copy is answered */
            ck_assert_int_eq(mbsc_server_step(f.srv, 10), MBSC_OK);
    }
    b = raw_from("127.0.0.2", f.addr);
    ck_assert_int_eq(send(b, msg1, n1, MSG_NOSIGNAL), (ssize_t)n1);
    STEP_UNTIL(&f, stats(&f).replays == 1);
    ck_assert_int_eq(recv(b, &c, 1, 0), 0); /* closed without an answer */
    ck_assert_uint_eq(f.connected, 0);
    ck_assert_ptr_nonnull(strstr(f.logs_text, "replayed"));
    close(a);
    close(b);
    mbsc_server_free(f.srv);
}
END_TEST

/* --- Reloads: masters held between message 2 and their confirming frame ----------- */

static const uint8_t hand_request[8] = {7, 'r', 'e', 'q', 0, 0, 0, 0};

/* A slave's config on the fixture's key pair with the allow-list al. */
static mbsc_config *slave_config(const mbsc_allowlist *al)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_SLAVE);

    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(mbsc_config_set_keypair(cfg, &peers.slave_kp), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_allowlist(cfg, al), MBSC_OK);
    return cfg;
}

/* A master's config for a new key pair kp, to the fixture's slave. */
static mbsc_config *master_config(mbsc_keypair *kp)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);

    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(mbsc_keypair_generate(kp), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_keypair(cfg, kp), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(cfg, peers.slave_kp.public_key), MBSC_OK);
    return cfg;
}

/* Step the server until the hand-driven master h is established (message 2 opened). */
static void hand_until_message2(struct fixture *f, struct tu_hand *h)
{
    long long until = tu_now_ms() + LONG_MS;

    while (!mbsc_session_established(h->s) && tu_now_ms() < until) {
        ck_assert_int_eq(mbsc_server_step(f->srv, 10), MBSC_OK);
        ck_assert_int_ge(tu_hand_read(h, 0), 0);
    }
    ck_assert(mbsc_session_established(h->s));
}

/* A master from src, held just before its confirming frame. */
static void hand_held(struct fixture *f, struct tu_hand *h, const mbsc_config *mcfg,
                      const char *src)
{
    tu_hand_start(h, mcfg, raw_from(src, f->addr));
    hand_until_message2(f, h);
}

/* After h's confirming frame and request: 1 if it is answered, 0 if the server closes. */
static int hand_outcome(struct fixture *f, struct tu_hand *h)
{
    long long until = tu_now_ms() + LONG_MS;
    uint8_t answer[64];

    for (;;) {
        int r;

        ck_assert_msg(tu_now_ms() < until, "neither an answer nor a close");
        ck_assert_int_eq(mbsc_server_step(f->srv, 10), MBSC_OK);
        r = tu_hand_read(h, 0);
        if (r < 0)
            return 0;
        if (r > 0 && tu_hand_payload(h, answer, sizeof answer) > 0)
            return 1;
    }
}

/* The confirming frame and one request; 1 if answered, 0 if closed. */
static int hand_confirm(struct fixture *f, struct tu_hand *h)
{
    tu_hand_send(h, hand_request, sizeof hand_request);
    return hand_outcome(f, h);
}

/*
 * A master whose message 1 was accepted, removed by a reload before it
 * confirms: refused at confirmation by the allow-list in force then, and
 * counted as an unknown key (without the line that offers to add it back).
 */
START_TEST(test_reload_removes_master_before_confirmation)
{
    struct fixture f;
    struct tu_hand h;
    mbsc_keypair other;
    mbsc_allowlist *al = mbsc_allowlist_new();
    mbsc_config *cfg;
    char why[MBSC_WHY_SIZE];

    fixture_start(&f, peers.scfg);
    hand_held(&f, &h, peers.mcfg, "127.0.0.1");
    ck_assert_uint_eq(stats(&f).unconfirmed, 1);
    ck_assert_ptr_nonnull(al);
    ck_assert_int_eq(mbsc_keypair_generate(&other), MBSC_OK);
    ck_assert_int_eq(mbsc_allowlist_add(al, other.public_key, "other", "operator"), MBSC_OK);
    cfg = slave_config(al);
    ck_assert_msg(mbsc_server_set_config(f.srv, cfg, why, sizeof why) == MBSC_OK, "%s", why);
    ck_assert_int_eq(hand_confirm(&f, &h), 0);
    ck_assert_uint_eq(f.connected, 0);
    ck_assert_uint_eq(f.requests, 0);
    ck_assert_uint_eq(stats(&f).unknown_keys, 1);
    ck_assert_uint_eq(stats(&f).confirmed, 0);
    STEP_UNTIL(&f, strstr(f.logs_text, "1 unknown master key") != NULL);
    ck_assert_ptr_null(strstr(f.logs_text, "add this line"));
    tu_hand_close(&h);
    mbsc_server_free(f.srv);
    mbsc_config_free(cfg);
    mbsc_allowlist_free(al);
}
END_TEST

/* The reload itself ends the handshake of a removed master: nothing survives it. */
START_TEST(test_reload_closes_removed_master_in_handshake)
{
    struct fixture f;
    struct tu_hand h;
    mbsc_allowlist *al = mbsc_allowlist_new();
    mbsc_config *cfg;
    char why[MBSC_WHY_SIZE];
    long long until = tu_now_ms() + LONG_MS;
    int r;

    fixture_start(&f, peers.scfg);
    hand_held(&f, &h, peers.mcfg, "127.0.0.1");
    ck_assert_ptr_nonnull(al);
    cfg = slave_config(al); /* nobody is allowed any more */
    ck_assert_msg(mbsc_server_set_config(f.srv, cfg, why, sizeof why) == MBSC_OK, "%s", why);
    ck_assert_int_eq(mbsc_server_apply_allowlist(f.srv, al), 1);
    ck_assert_uint_eq(stats(&f).unconfirmed, 0);
    ck_assert_uint_eq(stats(&f).connections, 0);
    ck_assert_uint_eq(stats(&f).unknown_keys, 1);
    while ((r = tu_hand_read(&h, 10)) == 0 && tu_now_ms() < until)
        ck_assert_int_eq(mbsc_server_step(f.srv, 0), MBSC_OK);
    ck_assert_int_eq(r, -1);
    ck_assert_uint_eq(f.connected, 0);
    tu_hand_close(&h);
    mbsc_server_free(f.srv);
    mbsc_config_free(cfg);
    mbsc_allowlist_free(al);
}
END_TEST

/* A master demoted by a reload before it confirms: it starts with the new role. */
START_TEST(test_reload_role_taken_at_confirmation)
{
    struct fixture f;
    struct tu_hand h;
    mbsc_allowlist *al = mbsc_allowlist_new();
    mbsc_config *cfg;
    char why[MBSC_WHY_SIZE];

    fixture_start(&f, peers.scfg);
    hand_held(&f, &h, peers.mcfg, "127.0.0.1");
    ck_assert_ptr_nonnull(al);
    ck_assert_int_eq(mbsc_allowlist_add(al, peers.master_kp.public_key, "plc-9", "viewer"),
                     MBSC_OK);
    cfg = slave_config(al);
    ck_assert_msg(mbsc_server_set_config(f.srv, cfg, why, sizeof why) == MBSC_OK, "%s", why);
    ck_assert_int_eq(mbsc_server_apply_allowlist(f.srv, al), 0);
    f.expect_role = "viewer";
    ck_assert_int_eq(hand_confirm(&f, &h), 1);
    ck_assert_uint_eq(f.connected, 1);
    ck_assert_str_eq(f.last_role, "viewer");
    ck_assert_uint_eq(f.requests, 1);
    tu_hand_close(&h);
    mbsc_server_free(f.srv);
    mbsc_config_free(cfg);
    mbsc_allowlist_free(al);
}
END_TEST

/*
 * Connections accepted before a reload, message 1 after it: judged by the
 * new allow-list (a removed master gets no message 2, an added one gets
 * in), and the old config and allow-list can go as soon as the new config
 * is in force.
 */
START_TEST(test_reload_judges_message1_by_new_list)
{
    struct fixture f;
    struct tu_hand removed, added;
    mbsc_keypair kp;
    mbsc_config *mcfg = master_config(&kp), *cfg;
    mbsc_allowlist *al = mbsc_allowlist_new();
    char why[MBSC_WHY_SIZE];
    long long until = tu_now_ms() + LONG_MS;
    int fd_removed, fd_added, r;

    fixture_start(&f, peers.scfg);
    fd_removed = raw_from("127.0.0.1", f.addr);
    fd_added = raw_from("127.0.0.2", f.addr);
    STEP_UNTIL(&f, stats(&f).accepted == 2);
    ck_assert_ptr_nonnull(al);
    ck_assert_int_eq(mbsc_allowlist_add(al, kp.public_key, "newcomer", "viewer"), MBSC_OK);
    cfg = slave_config(al);
    ck_assert_msg(mbsc_server_set_config(f.srv, cfg, why, sizeof why) == MBSC_OK, "%s", why);
    ck_assert_int_eq(mbsc_server_apply_allowlist(f.srv, al), 0);
    mbsc_config_free(peers.scfg);
    mbsc_allowlist_free(peers.allow);
    peers.scfg = NULL;
    peers.allow = NULL;

    tu_hand_start(&removed, peers.mcfg, fd_removed);
    while ((r = tu_hand_read(&removed, 0)) == 0 && tu_now_ms() < until)
        ck_assert_int_eq(mbsc_server_step(f.srv, 10), MBSC_OK);
    ck_assert_msg(r == -1, "the removed master's message 1 was answered");
    ck_assert_uint_eq(stats(&f).unknown_keys, 1);

    tu_hand_start(&added, mcfg, fd_added);
    hand_until_message2(&f, &added);
    f.expect_name = "newcomer";
    f.expect_role = "viewer";
    ck_assert_int_eq(hand_confirm(&f, &added), 1);
    ck_assert_str_eq(f.last_name, "newcomer");
    ck_assert_uint_eq(f.connected, 1);
    tu_hand_close(&removed);
    tu_hand_close(&added);
    mbsc_server_free(f.srv);
    mbsc_config_free(cfg);
    mbsc_config_free(mcfg);
    mbsc_allowlist_free(al);
    mbsc_keypair_wipe(&kp);
}
END_TEST

/*
 * At most MBSC_SERVER_MAX_SESSIONS_PER_KEY confirmed sessions per master
 * key: the next one is refused at confirmation (counted and logged with
 * its reason), a session that ends makes room, and other keys are not
 * affected.
 */
START_TEST(test_sessions_per_key)
{
    struct fixture f;
    struct tu_hand h[4], other;
    mbsc_keypair kp;
    mbsc_config *mcfg = master_config(&kp);
    int i;

    fixture_start(&f, peers.scfg);
    f.expect_name = NULL; /* two masters */
    ck_assert_int_eq(mbsc_allowlist_add(peers.allow, kp.public_key, "plc-10", "operator"), MBSC_OK);
    ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_MAX_SESSIONS_PER_KEY), 4);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_MAX_SESSIONS_PER_KEY, 0),
                     MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_MAX_SESSIONS_PER_KEY, 2), MBSC_OK);
    ck_assert_uint_eq(mbsc_server_get_limit(f.srv, MBSC_SERVER_MAX_SESSIONS_PER_KEY), 2);
    for (i = 0; i < 3; i++)
        hand_held(&f, &h[i], peers.mcfg, "127.0.0.1");
    ck_assert_int_eq(hand_confirm(&f, &h[0]), 1);
    ck_assert_int_eq(hand_confirm(&f, &h[1]), 1);
    ck_assert_int_eq(hand_confirm(&f, &h[2]), 0);
    ck_assert_uint_eq(f.connected, 2);
    ck_assert_uint_eq(stats(&f).per_key, 1);
    ck_assert_uint_eq(stats(&f).refused, 1);
    STEP_UNTIL(&f, strstr(f.logs_text, "1 over the sessions allowed per master key") != NULL);
    /* Another key is not concerned. */
    hand_held(&f, &other, mcfg, "127.0.0.2");
    ck_assert_int_eq(hand_confirm(&f, &other), 1);
    ck_assert_uint_eq(f.connected, 3);
    /* A session that ends leaves room for the next. */
    tu_hand_close(&h[0]);
    STEP_UNTIL(&f, f.closed == 1);
    hand_held(&f, &h[3], peers.mcfg, "127.0.0.1");
    ck_assert_int_eq(hand_confirm(&f, &h[3]), 1);
    ck_assert_uint_eq(f.connected, 4);
    ck_assert_uint_eq(stats(&f).per_key, 1);
    for (i = 1; i < 4; i++)
        tu_hand_close(&h[i]);
    tu_hand_close(&other);
    mbsc_server_free(f.srv);
    mbsc_config_free(mcfg);
    mbsc_keypair_wipe(&kp);
}
END_TEST

/*
 * A master whose request is still with the application is not idle: the
 * idle timeout neither closes it nor holds up the others behind it, and
 * the server does not spin while it waits (next_timeout is not 0).
 */
START_TEST(test_idle_timeout_while_a_request_waits)
{
    struct fixture f;
    struct master busy;
    struct tu_hand silent;
    uint8_t echo[64];
    long long t0;

    fixture_start(&f, peers.scfg);
    ck_assert_int_eq(mbsc_server_set_limit(f.srv, MBSC_SERVER_IDLE_TIMEOUT_MS, 200), MBSC_OK);
    f.answer_now = 0;
    master_start(&busy, f.addr, peers.mcfg, 1);
    busy.hold_open = 1;
    STEP_UNTIL(&f, f.waiting != 0);
    /* Confirmed after it, and silent from then on. */
    hand_held(&f, &silent, peers.mcfg, "127.0.0.2");
    tu_hand_send(&silent, NULL, 0);
    STEP_UNTIL(&f, f.connected == 2);
    STEP_UNTIL(&f, f.closed == 1);
    ck_assert_str_eq(f.last_close_detail, "idle timeout");
    /* Well past the busy master's idle time: it waits for its answer, the loop sleeps. */
    t0 = tu_now_ms();
    while (tu_now_ms() - t0 < 400)
        ck_assert_int_eq(mbsc_server_step(f.srv, 20), MBSC_OK);
    ck_assert_uint_eq(f.closed, 1);
    ck_assert_int_ne(mbsc_server_next_timeout(f.srv), 0);
    memcpy(echo, f.payload, f.payload_len);
    echo[0] ^= 0x80;
    ck_assert_int_eq(mbsc_server_reply(f.srv, f.waiting, echo, f.payload_len), MBSC_OK);
    f.waiting = 0;
    /* Answered, and silent: now it is idle. */
    STEP_UNTIL(&f, f.closed == 2);
    pthread_join(busy.thread, NULL);
    ck_assert_int_eq(busy.answers, 1);
    tu_hand_close(&silent);
    mbsc_server_free(f.srv);
}
END_TEST

START_TEST(test_bad_config)
{
    mbsc_config *incomplete = mbsc_config_new(MBSC_ROLE_SLAVE);
    char why[MBSC_WHY_SIZE];
    mbsc_server *srv = NULL;

    ck_assert_int_eq(mbsc_server_new(&srv, "127.0.0.1:0", peers.mcfg, why, sizeof why),
                     MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_server_new(&srv, "127.0.0.1:0", incomplete, why, sizeof why),
                     MBSC_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(why, "session"));
    ck_assert_int_eq(mbsc_server_new(&srv, "nohost", peers.scfg, why, sizeof why),
                     MBSC_ERR_ADDRESS);
    ck_assert_ptr_null(srv);
    mbsc_server_free(NULL);
    mbsc_config_free(incomplete);
}
END_TEST

Suite *server_suite(void)
{
    Suite *s = suite_create("server");
    TCase *tc = tcase_create("server");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_answers_now_in_order);
    tcase_add_test(tc, test_answers_later_in_order);
    tcase_add_test(tc, test_skip_and_close);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_per_address_budget);
    tcase_add_test(tc, test_eviction_order);
    tcase_add_test(tc, test_confirmed_never_evicted);
    tcase_add_test(tc, test_deadlines);
    tcase_add_test(tc, test_dead_peer_probes);
    tcase_add_test(tc, test_out_of_descriptors);
    tcase_add_test(tc, test_external_loop_one_fd);
    tcase_add_test(tc, test_replayed_message1);
    tcase_add_test(tc, test_bad_config);
    tcase_add_test(tc, test_reload_removes_master_before_confirmation);
    tcase_add_test(tc, test_reload_closes_removed_master_in_handshake);
    tcase_add_test(tc, test_reload_role_taken_at_confirmation);
    tcase_add_test(tc, test_reload_judges_message1_by_new_list);
    tcase_add_test(tc, test_sessions_per_key);
    tcase_add_test(tc, test_idle_timeout_while_a_request_waits);
    suite_add_tcase(s, tc);
    return s;
}
