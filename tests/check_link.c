/* SPDX-License-Identifier: ISC */
/*
 * check_link.c - mbsc/link.h: a master and a slave driven only through
 * their links, over non-blocking sockets, in one poll() loop.
 *
 * Both ends live in the test's thread: each turn polls both sockets for
 * what their links ask (mbsc_link_events) and flushes or reads as poll
 * reports, as a program's loop would.  The sockets are a UNIX socketpair,
 * or loopback TCP made with mbsc_tcp_connect_* and
 * mbsc_listener_accept_fd where TCP's behaviour matters (an end of stream
 * that is not a hang-up, a reset).  No test sleeps.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/epoll.h>
#endif

#include "fixture.h"
#include "mbsc.h"
#include "testutil.h"

Suite *link_suite(void);

#define LONG_MS   20000 /* bound for a wait that must end */
#define MAX_TURNS 10000 /* bound for a loop that must end */

static struct tu_peers peers;

static void keys_setup(void)
{
    tu_peers_setup(&peers, "master-1", "operator", NULL);
    /* Payloads of every size up to 4080 bytes, to fill socket buffers fast. */
    ck_assert_int_eq(mbsc_config_set_max_payload(peers.mcfg, MBSC_MAX_PAYLOAD), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_max_payload(peers.scfg, MBSC_MAX_PAYLOAD), MBSC_OK);
}

static void keys_teardown(void)
{
    tu_peers_teardown(&peers);
}

/* --- Ends and pairs -------------------------------------------------------- */

/* One side: its socket, its session and the link over them (all the test's). */
struct end {
    int fd;
    mbsc_session *s;
    mbsc_link l;
};

static void end_open(struct end *e, int fd, const mbsc_config *cfg)
{
    int err = MBSC_OK;

    e->fd = fd;
    e->s = mbsc_session_new(cfg, &err);
    ck_assert_msg(e->s != NULL, "session: %s", mbsc_strerror(err));
    mbsc_link_init(&e->l, fd, e->s);
    ck_assert_int_eq(e->l.fd, fd);
    ck_assert_ptr_eq(e->l.session, e->s);
    ck_assert_int_eq(e->l.os_err, 0);
    ck_assert_str_eq(e->l.op, "");
    ck_assert_int_eq(e->l.eof, 0);
}

static void end_close(struct end *e)
{
    mbsc_session_free(e->s);
    if (e->fd >= 0)
        close(e->fd);
    e->fd = -1;
}

static void pair_socketpair(struct end *m, struct end *s)
{
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    end_open(m, sv[0], peers.mcfg);
    end_open(s, sv[1], peers.scfg);
}

/* Loopback TCP, both sockets from the public calls for a program's own loop. */
static void pair_tcp(struct end *m, struct end *s)
{
    char addr[MBSC_ADDRSTRLEN], why[MBSC_WHY_SIZE];
    mbsc_listener *l = NULL;
    mbsc_tcp_connect tc;
    int cfd = -1, sfd = -1, r;

    ck_assert_int_eq(mbsc_listen("127.0.0.1:0", &l, why, sizeof why), MBSC_OK);
    ck_assert_int_eq(mbsc_listener_address(l, addr, sizeof addr), MBSC_OK);
    ck_assert_int_eq(mbsc_tcp_connect_start(&tc, addr, why, sizeof why), MBSC_OK);
    do {
        struct pollfd pfd = {tc.fd, POLLOUT, 0};

        ck_assert_int_eq(poll(&pfd, 1, LONG_MS), 1);
        r = mbsc_tcp_connect_finish(&tc, &cfd, why, sizeof why);
    } while (r == MBSC_ERR_WOULD_BLOCK);
    ck_assert_msg(r == MBSC_OK, "connect: %s", why);
    ck_assert_int_eq(mbsc_listener_accept_fd(l, LONG_MS, &sfd, NULL, why, sizeof why), MBSC_OK);
    mbsc_listener_close(l);
    end_open(m, cfd, peers.mcfg);
    end_open(s, sfd, peers.scfg);
}

/* --- The loop ---------------------------------------------------------------- */

/*
 * One turn of a program's loop over both ends: wait for what each link
 * asks, then flush for POLLOUT and read for POLLIN (and for POLLERR or
 * POLLHUP, whichever the link needs).  Socket and session errors fail the
 * test; a link with nothing to ask is left out of the poll.
 */
static void turn(struct end *a, struct end *b)
{
    struct end *e[2] = {a, b};
    struct pollfd pfd[2];
    int i, r;

    for (i = 0; i < 2; i++) {
        pfd[i].fd = e[i]->fd;
        pfd[i].events = mbsc_link_events(&e[i]->l);
        pfd[i].revents = 0;
        if (pfd[i].events == 0)
            pfd[i].fd = -1;
    }
    ck_assert_int_gt(poll(pfd, 2, LONG_MS), 0);
    for (i = 0; i < 2; i++) {
        short rev = pfd[i].revents;

        if (rev & (POLLOUT | POLLERR | POLLHUP)) {
            r = mbsc_link_flush(&e[i]->l);
            ck_assert_msg(r == MBSC_OK, "flush: %s (%s: %s)", mbsc_strerror(r), e[i]->l.op,
                          strerror(e[i]->l.os_err));
        }
        if (rev & (POLLIN | POLLERR | POLLHUP)) {
            r = mbsc_link_read(&e[i]->l);
            ck_assert_msg(r == MBSC_OK || r == MBSC_ERR_WOULD_BLOCK, "read: %s (%s: %s)",
                          mbsc_strerror(r), e[i]->l.op, strerror(e[i]->l.os_err));
        }
    }
}

static void handshake(struct end *m, struct end *s)
{
    int i;

    ck_assert_int_eq(mbsc_link_events(&m->l), POLLIN | POLLOUT); /* message 1 is ready at once */
    ck_assert_int_eq(mbsc_link_output_pending(&m->l), 1);
    ck_assert_int_eq(mbsc_link_events(&s->l), POLLIN);
    for (i = 0; !mbsc_session_established(m->s) || !mbsc_session_established(s->s) ||
                mbsc_link_output_pending(&m->l);
         i++) {
        ck_assert_int_lt(i, MAX_TURNS);
        turn(m, s);
    }
    ck_assert_uint_eq(mbsc_link_pending(&s->l), 0); /* the confirming keep-alive is not one */
}

/* from sends len pattern bytes with mbsc_link_send; to takes them with mbsc_link_recv. */
static void deliver(struct end *from, struct end *to, size_t len, uint32_t seed)
{
    static uint8_t out[MBSC_MAX_PAYLOAD], in[MBSC_MAX_PAYLOAD];
    size_t got = 99;
    int i, r;

    tu_fill_pattern(out, len, seed);
    r = mbsc_link_send(&from->l, out, len);
    ck_assert_msg(r == MBSC_OK, "send %zu: %s", len, mbsc_strerror(r));
    for (i = 0; (r = mbsc_link_recv(&to->l, in, sizeof in, &got)) == 0; i++) {
        ck_assert_int_lt(i, MAX_TURNS);
        turn(from, to);
    }
    ck_assert_msg(r == 1, "recv %zu: %s", len, mbsc_strerror(r));
    ck_assert_uint_eq(got, len);
    ck_assert(memcmp(in, out, len) == 0);
}

/* --- Tests ------------------------------------------------------------------- */

static const size_t sizes[] = {0, 1, 12, 253, 260, 1000, MBSC_MAX_PAYLOAD};

static void exchange(struct end *m, struct end *s)
{
    size_t i;

    handshake(m, s);
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        deliver(m, s, sizes[i], (uint32_t)i);
        deliver(s, m, sizes[i], (uint32_t)(100 + i));
    }
    ck_assert_uint_eq(mbsc_link_pending(&m->l), 0);
    ck_assert_uint_eq(mbsc_link_pending(&s->l), 0);
    ck_assert_ptr_nonnull(mbsc_session_cipher(s->s));
    ck_assert_str_eq(mbsc_session_peer_name(s->s), "master-1");
}

START_TEST(test_socketpair)
{
    struct end m, s;

    pair_socketpair(&m, &s);
    exchange(&m, &s);
    end_close(&m);
    end_close(&s);
}
END_TEST

START_TEST(test_loopback_tcp)
{
    struct end m, s;

    pair_tcp(&m, &s);
    exchange(&m, &s);
    end_close(&m);
    end_close(&s);
}
END_TEST

/*
 * Partial writes: socket buffers far smaller than the payloads sent, and a
 * slave that reads nothing at first.  The master's sends fill the socket,
 * then the session's output (mbsc_link_send says MBSC_ERR_WOULD_BLOCK and
 * queues nothing); every payload still arrives once, whole and in order.
 */
START_TEST(test_partial_writes)
{
    enum { N = 40 };
    static uint8_t out[MBSC_MAX_PAYLOAD], in[MBSC_MAX_PAYLOAD];
    struct end m, s;
    int small = 1, sent = 0, taken = 0, would_block = 0, partial = 0, i, r;
    size_t len;

    pair_socketpair(&m, &s);
    handshake(&m, &s);
    ck_assert_int_eq(setsockopt(m.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    ck_assert_int_eq(setsockopt(s.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
    while (sent < N) {
        tu_fill_pattern(out, sizeof out, (uint32_t)sent);
        r = mbsc_link_send(&m.l, out, sizeof out);
        if (r == MBSC_ERR_WOULD_BLOCK)
            break;
        ck_assert_int_eq(r, MBSC_OK);
        partial += mbsc_link_output_pending(&m.l);
        sent++;
    }
    ck_assert_int_lt(sent, N); /* the slave reads nothing: the master had to stop */
    ck_assert_int_gt(partial, 0);
    for (i = 0; taken < N; i++) {
        ck_assert_int_lt(i, 100 * MAX_TURNS);
        if (sent < N) {
            tu_fill_pattern(out, sizeof out, (uint32_t)sent);
            r = mbsc_link_send(&m.l, out, sizeof out);
            if (r == MBSC_ERR_WOULD_BLOCK) {
                would_block++;
            } else {
                ck_assert_int_eq(r, MBSC_OK);
                sent++;
            }
        }
        while ((r = mbsc_link_recv(&s.l, in, sizeof in, &len)) == 1) {
            tu_fill_pattern(out, sizeof out, (uint32_t)taken);
            ck_assert_uint_eq(len, sizeof out);
            ck_assert_msg(memcmp(in, out, len) == 0, "payload %d", taken);
            taken++;
        }
        ck_assert_int_eq(r, 0);
        if (taken < N)
            turn(&m, &s);
    }
    ck_assert_int_gt(would_block, 0);
    ck_assert_int_eq(mbsc_link_output_pending(&m.l), 0);
    end_close(&m);
    end_close(&s);
}
END_TEST

/*
 * Partial reads: a middleman moves the bytes between the two sockets one
 * at a time, so every frame reaches the other link in pieces.
 */
START_TEST(test_one_byte_at_a_time)
{
    static uint8_t out[300], in[300];
    int ma[2], sa[2], i, r, sent = 0, reads = 0;
    struct end m, s;
    size_t len = 0;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, ma), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sa), 0);
    end_open(&m, ma[0], peers.mcfg);
    end_open(&s, sa[0], peers.scfg);
    tu_fill_pattern(out, sizeof out, 7);
    for (i = 0;; i++) {
        uint8_t b;

        ck_assert_int_lt(i, 100 * MAX_TURNS);
        /* The middleman: one byte each way, if there is one. */
        if (recv(ma[1], &b, 1, 0) == 1)
            ck_assert_int_eq(send(sa[1], &b, 1, MSG_NOSIGNAL), 1);
        if (recv(sa[1], &b, 1, 0) == 1)
            ck_assert_int_eq(send(ma[1], &b, 1, MSG_NOSIGNAL), 1);
        ck_assert_int_eq(mbsc_link_flush(&m.l), MBSC_OK);
        ck_assert_int_eq(mbsc_link_flush(&s.l), MBSC_OK);
        ck_assert_int_eq(mbsc_link_recv(&m.l, in, sizeof in, &len), 0);
        if (!sent && mbsc_session_established(m.s)) {
            /* Right behind the confirming keep-alive. */
            ck_assert_int_eq(mbsc_link_send(&m.l, out, sizeof out), MBSC_OK);
            sent = 1;
        }
        r = mbsc_link_recv(&s.l, in, sizeof in, &len);
        if (r == 1)
            break;
        ck_assert_int_eq(r, 0);
        reads += sent;
    }
    ck_assert_uint_eq(len, sizeof out);
    ck_assert(memcmp(in, out, len) == 0);
    ck_assert_int_gt(reads, (int)sizeof out); /* the frame came in more pieces than it has bytes */
    end_close(&m);
    end_close(&s);
    close(ma[1]);
    close(sa[1]);
}
END_TEST

/*
 * Frames that arrived before the end of the stream are all delivered, in
 * order, before it: the link reads nothing while a payload waits, so the
 * end of the stream cannot be read ahead of frames still buffered behind
 * that payload (they would be counted as a frame cut short).  Loopback
 * TCP: a FIN is an end of stream, not a hang-up.
 */
START_TEST(test_end_of_stream_after_frames)
{
    uint8_t a[3] = {1, 2, 3}, b[4] = {4, 5, 6, 7}, buf[16];
    struct pollfd pfd;
    struct end m, s;
    size_t len;
    int r;

    pair_tcp(&m, &s);
    handshake(&m, &s);
    /* Two frames in one segment, then the master's end of stream. */
    ck_assert_int_eq(mbsc_session_send(m.s, a, sizeof a), MBSC_OK);
    ck_assert_int_eq(mbsc_link_send(&m.l, b, sizeof b), MBSC_OK);
    ck_assert_int_eq(mbsc_link_output_pending(&m.l), 0);
    ck_assert_int_eq(shutdown(m.fd, SHUT_WR), 0);
    pfd.fd = s.fd;
    pfd.events = POLLIN;
    ck_assert_int_eq(poll(&pfd, 1, LONG_MS), 1);

    ck_assert_int_eq(mbsc_link_read(&s.l), MBSC_OK);
    ck_assert_uint_eq(mbsc_link_pending(&s.l), 2);
    ck_assert_int_eq(mbsc_link_events(&s.l) & POLLIN, 0); /* take the payload first */
    ck_assert_int_eq(mbsc_link_read(&s.l), MBSC_ERR_WOULD_BLOCK);
    ck_assert_int_eq(s.l.eof, 0);
    ck_assert_int_eq(mbsc_session_recv(s.s, buf, sizeof buf, &len), 1);
    ck_assert_uint_eq(len, sizeof a);
    ck_assert_uint_eq(mbsc_link_pending(&s.l), 1);
    ck_assert_int_eq(mbsc_link_read(&s.l), MBSC_ERR_WOULD_BLOCK);
    ck_assert_int_eq(mbsc_link_recv(&s.l, buf, sizeof buf, &len), 1);
    ck_assert_uint_eq(len, sizeof b);
    ck_assert_int_eq(memcmp(buf, b, sizeof b), 0);
    /* Now the end of the stream, with nothing cut short. */
    r = mbsc_link_recv(&s.l, buf, sizeof buf, &len);
    ck_assert_msg(r == MBSC_ERR_PEER_CLOSED, "recv: %s", mbsc_strerror(r));
    ck_assert_int_eq(s.l.eof, 1);
    ck_assert_int_eq(s.l.os_err, 0);
    ck_assert_int_eq(mbsc_session_error(s.s), MBSC_ERR_PEER_CLOSED);
    ck_assert_int_eq(mbsc_link_events(&s.l), 0);
    ck_assert_int_eq(mbsc_link_recv(&s.l, buf, sizeof buf, &len), MBSC_ERR_PEER_CLOSED);
    ck_assert_int_eq(mbsc_link_read(&s.l), MBSC_ERR_PEER_CLOSED);
    end_close(&m);
    end_close(&s);
}
END_TEST

/* An end of stream inside a frame is MBSC_ERR_TRUNCATED, after the whole frames. */
START_TEST(test_end_of_stream_inside_frame)
{
    uint8_t a[5] = {9, 8, 7, 6, 5}, buf[16];
    const uint8_t *o;
    struct end m, s;
    size_t n, len;
    int i, r;

    pair_socketpair(&m, &s);
    handshake(&m, &s);
    ck_assert_int_eq(mbsc_session_send(m.s, a, sizeof a), MBSC_OK);
    ck_assert_int_eq(mbsc_session_send(m.s, a, sizeof a), MBSC_OK);
    o = mbsc_session_output(m.s, &n);
    ck_assert_int_eq(send(m.fd, o, n - 3, MSG_NOSIGNAL), (ssize_t)(n - 3));
    end_close(&m);
    for (i = 0; (r = mbsc_link_recv(&s.l, buf, sizeof buf, &len)) == 0; i++) {
        struct pollfd pfd = {s.fd, mbsc_link_events(&s.l), 0};

        ck_assert_int_lt(i, MAX_TURNS);
        ck_assert_int_eq(poll(&pfd, 1, LONG_MS), 1);
    }
    ck_assert_int_eq(r, 1);
    ck_assert_uint_eq(len, sizeof a);
    ck_assert_int_eq(mbsc_link_recv(&s.l, buf, sizeof buf, &len), MBSC_ERR_TRUNCATED);
    ck_assert_int_eq(s.l.eof, 1);
    ck_assert_int_eq(mbsc_session_error(s.s), MBSC_ERR_TRUNCATED);
    end_close(&s);
}
END_TEST

/* A forged frame ends the session: the session's error, no socket error. */
START_TEST(test_bad_frame)
{
    uint8_t frame[2 + 4 + 16], buf[16];
    struct end m, s;
    size_t len;
    int i, r;

    pair_socketpair(&m, &s);
    handshake(&m, &s);
    memset(frame, 0x33, sizeof frame);
    frame[0] = 0;
    frame[1] = (uint8_t)(sizeof frame - 2);
    ck_assert_int_eq(send(m.fd, frame, sizeof frame, MSG_NOSIGNAL), (ssize_t)sizeof frame);
    for (i = 0; (r = mbsc_link_recv(&s.l, buf, sizeof buf, &len)) == 0; i++) {
        struct pollfd pfd = {s.fd, POLLIN, 0};

        ck_assert_int_lt(i, MAX_TURNS);
        ck_assert_int_eq(poll(&pfd, 1, LONG_MS), 1);
    }
    ck_assert_int_eq(r, MBSC_ERR_BAD_TAG);
    ck_assert_int_eq(mbsc_session_error(s.s), MBSC_ERR_BAD_TAG);
    ck_assert_int_eq(s.l.os_err, 0);
    ck_assert_int_eq(mbsc_link_events(&s.l), 0);
    ck_assert_int_eq(mbsc_link_read(&s.l), MBSC_ERR_BAD_TAG); /* sticky */
    ck_assert_int_eq(mbsc_link_send(&s.l, buf, 1), MBSC_ERR_BAD_TAG);
    end_close(&m);
    end_close(&s);
}
END_TEST

static void reset(struct end *e)
{
    struct linger lg = {1, 0};

    ck_assert_int_eq(setsockopt(e->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    end_close(e); /* a close with linger 0 sends a reset */
}

/*
 * A reset while a payload waits untaken: the read that a POLLERR wakes
 * must report the socket's failure (or a level-triggered loop would be
 * woken again at once, for ever), and the payload is still there.
 */
START_TEST(test_reset_while_payload_waits)
{
    uint8_t a[2] = {0xAA, 0xBB}, buf[8];
    struct pollfd pfd;
    struct end m, s;
    size_t len;
    int r;

    pair_tcp(&m, &s);
    handshake(&m, &s);
    ck_assert_int_eq(mbsc_link_send(&m.l, a, sizeof a), MBSC_OK);
    pfd.fd = s.fd;
    pfd.events = POLLIN;
    ck_assert_int_eq(poll(&pfd, 1, LONG_MS), 1);
    ck_assert_int_eq(mbsc_link_read(&s.l), MBSC_OK);
    ck_assert_uint_eq(mbsc_link_pending(&s.l), 1);
    reset(&m);
    pfd.events = mbsc_link_events(&s.l);
    ck_assert_int_eq(pfd.events, 0);
    ck_assert_int_eq(poll(&pfd, 1, LONG_MS), 1);
    ck_assert(pfd.revents & (POLLERR | POLLHUP));
    r = mbsc_link_read(&s.l);
    ck_assert_msg(r == MBSC_ERR_PEER_CLOSED, "read: %s", mbsc_strerror(r));
    ck_assert_int_eq(s.l.os_err, ECONNRESET);
    ck_assert_str_eq(s.l.op, "recv");
    ck_assert_int_eq(s.l.eof, 0);
    ck_assert_int_eq(mbsc_session_error(s.s), MBSC_OK); /* a socket failure: the caller closes */
    ck_assert_int_eq(mbsc_link_recv(&s.l, buf, sizeof buf, &len), 1);
    ck_assert_uint_eq(len, sizeof a);
    end_close(&s);
}
END_TEST

/* Sending to a peer that is gone: MBSC_ERR_PEER_CLOSED, "send", and no SIGPIPE. */
START_TEST(test_send_to_closed_peer)
{
    static uint8_t big[MBSC_MAX_PAYLOAD];
    struct end m, s;
    int i, r = MBSC_OK;

    pair_tcp(&m, &s);
    handshake(&m, &s);
    reset(&s);
    /* The first sends may still be taken by the kernel; the reset surfaces soon. */
    for (i = 0; i < 1000 && r == MBSC_OK; i++) {
        struct pollfd pfd = {m.fd, POLLOUT, 0};

        r = mbsc_link_send(&m.l, big, sizeof big);
        if (r == MBSC_ERR_WOULD_BLOCK) {
            ck_assert_int_eq(poll(&pfd, 1, LONG_MS), 1);
            r = mbsc_link_flush(&m.l);
        }
    }
    ck_assert_msg(r == MBSC_ERR_PEER_CLOSED, "send: %s", mbsc_strerror(r));
    ck_assert_str_eq(m.l.op, "send");
    ck_assert(m.l.os_err == ECONNRESET || m.l.os_err == EPIPE);
    ck_assert_int_eq(mbsc_session_error(m.s), MBSC_OK);
    end_close(&m);
}
END_TEST

/* Several frames read at once: counted, and never a wait while they are there. */
START_TEST(test_pending_and_events)
{
    uint8_t a[3] = {1, 2, 3}, buf[8];
    struct end m, s;
    struct pollfd pfd;
    size_t len, k;

    pair_socketpair(&m, &s);
    handshake(&m, &s);
    ck_assert_int_eq(mbsc_link_events(&s.l), POLLIN);
    for (k = 0; k < 3; k++)
        ck_assert_int_eq(mbsc_session_send(m.s, a, k), MBSC_OK);
    ck_assert_int_eq(mbsc_link_flush(&m.l), MBSC_OK);
    ck_assert_int_eq(mbsc_link_output_pending(&m.l), 0);
    pfd.fd = s.fd;
    pfd.events = POLLIN;
    ck_assert_int_eq(poll(&pfd, 1, LONG_MS), 1);
    ck_assert_int_eq(mbsc_link_read(&s.l), MBSC_OK);
    for (k = 0; k < 3; k++) {
        ck_assert_uint_eq(mbsc_link_pending(&s.l), 3 - k);
        ck_assert_int_eq(mbsc_link_events(&s.l), 0); /* nothing to wait for: take it */
        ck_assert_int_eq(poll(&pfd, 1, 0), 0);       /* and a poll would not say so */
        ck_assert_int_eq(mbsc_link_recv(&s.l, buf, sizeof buf, &len), 1);
        ck_assert_uint_eq(len, k);
    }
    ck_assert_uint_eq(mbsc_link_pending(&s.l), 0);
    ck_assert_int_eq(mbsc_link_events(&s.l), POLLIN);
    ck_assert_int_eq(mbsc_link_recv(&s.l, buf, sizeof buf, &len), 0);
    end_close(&m);
    end_close(&s);
}
END_TEST

#ifdef __linux__
/*
 * Edge-triggered epoll: one edge for three frames.  mbsc_link_recv() until
 * it returns 0 takes them all; no further edge comes, and none is needed.
 */
START_TEST(test_edge_triggered_epoll)
{
    uint8_t a[4] = {1, 2, 3, 4}, buf[8];
    struct epoll_event ev = {0}, got[2];
    struct end m, s;
    int ep, r, n = 0;
    size_t len, k;

    pair_tcp(&m, &s);
    handshake(&m, &s);
    ep = epoll_create1(EPOLL_CLOEXEC);
    ck_assert_int_ge(ep, 0);
    ev.events = EPOLLIN | EPOLLET;
    ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev), 0);
    for (k = 0; k < 3; k++)
        ck_assert_int_eq(mbsc_session_send(m.s, a, sizeof a), MBSC_OK);
    ck_assert_int_eq(mbsc_link_flush(&m.l), MBSC_OK);
    ck_assert_int_eq(epoll_wait(ep, got, 2, LONG_MS), 1);
    while ((r = mbsc_link_recv(&s.l, buf, sizeof buf, &len)) == 1) {
        ck_assert_uint_eq(len, sizeof a);
        n++;
    }
    ck_assert_int_eq(r, 0);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(epoll_wait(ep, got, 2, 0), 0);
    close(ep);
    end_close(&m);
    end_close(&s);
}
END_TEST
#endif

/* Calls that change nothing: before the handshake, a short buffer, NULL. */
START_TEST(test_caller_mistakes)
{
    uint8_t a[10] = {0}, buf[16];
    struct end m, s;
    size_t len = 99;
    int i, r;

    pair_socketpair(&m, &s);
    ck_assert_int_eq(mbsc_link_send(&m.l, a, sizeof a), MBSC_ERR_STATE);
    ck_assert_int_eq(mbsc_link_send(NULL, a, sizeof a), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_link_recv(NULL, buf, sizeof buf, &len), MBSC_ERR_INVALID_ARG);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(mbsc_link_recv(&s.l, buf, sizeof buf, NULL), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_link_recv(&s.l, NULL, 4, &len), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_link_recv(&s.l, buf, sizeof buf, &len), 0); /* nothing yet */
    handshake(&m, &s);
    ck_assert_int_eq(mbsc_link_send(&m.l, a, MBSC_MAX_PAYLOAD + 1), MBSC_ERR_PAYLOAD_TOO_LONG);
    ck_assert_int_eq(mbsc_link_send(&m.l, a, sizeof a), MBSC_OK);
    for (i = 0; (r = mbsc_link_recv(&s.l, buf, 9, &len)) == 0; i++) {
        ck_assert_int_lt(i, MAX_TURNS);
        turn(&m, &s);
    }
    ck_assert_int_eq(r, MBSC_ERR_BUFFER_TOO_SMALL);
    ck_assert_uint_eq(mbsc_link_pending(&s.l), 1); /* the payload stays */
    ck_assert_int_eq(mbsc_link_recv(&s.l, buf, sizeof buf, &len), 1);
    ck_assert_uint_eq(len, sizeof a);
    deliver(&s, &m, 5, 1); /* none of it ended anything */
    end_close(&m);
    end_close(&s);
}
END_TEST

/* --- Suite ------------------------------------------------------------------- */

Suite *link_suite(void)
{
    Suite *s = suite_create("link");
    TCase *tc = tcase_create("link");

    tcase_add_checked_fixture(tc, keys_setup, keys_teardown);
    tcase_add_test(tc, test_socketpair);
    tcase_add_test(tc, test_loopback_tcp);
    tcase_add_test(tc, test_partial_writes);
    tcase_add_test(tc, test_one_byte_at_a_time);
    tcase_add_test(tc, test_end_of_stream_after_frames);
    tcase_add_test(tc, test_end_of_stream_inside_frame);
    tcase_add_test(tc, test_bad_frame);
    tcase_add_test(tc, test_reset_while_payload_waits);
    tcase_add_test(tc, test_send_to_closed_peer);
    tcase_add_test(tc, test_pending_and_events);
#ifdef __linux__
    tcase_add_test(tc, test_edge_triggered_epoll);
#endif
    tcase_add_test(tc, test_caller_mistakes);
    suite_add_tcase(s, tc);
    return s;
}
