/* SPDX-License-Identifier: ISC */
/*
 * sock.c - TCP sockets: connect with a deadline, listen, accept,
 * non-blocking send and receive, poll with a deadline, close.
 *
 * _GNU_SOURCE: glibc hides accept4() under the build's _POSIX_C_SOURCE.
 * accept4() and socket() with SOCK_NONBLOCK | SOCK_CLOEXEC (Linux and BSD
 * extensions) set both flags atomically at creation, so no descriptor ever
 * exists blocking, or without close-on-exec while another thread fork()s and
 * exec()s.  The define must come before the first system header.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "sock/sock.h"

/* --- Descriptors ---------------------------------------------------------- */

void mbsc_sock_close(int fd)
{
    int saved = errno;

    /*
     * No retry on EINTR: Linux releases the descriptor even then, and a
     * second close() could hit one another thread has just been given.
     */
    if (fd >= 0)
        (void)close(fd);
    errno = saved;
}

void mbsc_sock_probe_peer(int fd, unsigned dead_ms)
{
    int on = 1, count = 3;
    int idle = dead_ms / 2000 > 0 ? (int)(dead_ms / 2000) : 1;
    int interval = dead_ms / 6000 > 0 ? (int)(dead_ms / 6000) : 1;

    if (dead_ms == 0)
        return;
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
#if defined(TCP_KEEPIDLE) && defined(TCP_KEEPINTVL) && defined(TCP_KEEPCNT)
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
#else
    (void)idle;
    (void)interval;
    (void)count;
#endif
}

/* Running out of descriptors is its own error, not a network failure. */
int mbsc_sock_fd_error(int e, int otherwise)
{
    return (e == EMFILE || e == ENFILE) ? MBSC_ERR_FD_LIMIT : otherwise;
}

/*
 * libmodbus 3.1.6 passes descriptors to select(), whose fd_set cannot hold
 * one >= FD_SETSIZE (writing it would overflow the set).  Such a socket is
 * closed at once.
 */
static int guard_fd_setsize(int fd, const char *addr, char *why, size_t why_len)
{
    if (fd < FD_SETSIZE)
        return MBSC_OK;
    mbsc_sock_close(fd);
    mbsc_why(why, why_len, "%s: descriptor %d is not below FD_SETSIZE (%d)", addr, fd, FD_SETSIZE);
    return MBSC_ERR_FD_LIMIT;
}

/* Modbus is request/response: Nagle's algorithm would delay every frame. */
static int set_nodelay(int fd)
{
    int one = 1;

    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* --- Waiting ------------------------------------------------------------- */

int mbsc_sock_wait(int fd, short events, const mbsc_deadline *d, short *revents, int *os_err)
{
    struct pollfd pfd;
    int n;

    *revents = 0;
    *os_err = 0;
    for (;;) {
        pfd.fd = fd;
        pfd.events = events;
        pfd.revents = 0;
        /* The time left is recomputed after every EINTR, so signals cannot stretch it. */
        n = poll(&pfd, 1, mbsc_deadline_poll_ms(d));
        if (n > 0) {
            *revents = pfd.revents;
            return MBSC_OK;
        }
        if (n == 0)
            return MBSC_ERR_TIMEOUT;
        if (errno != EINTR) {
            *os_err = errno;
            return MBSC_ERR_IO;
        }
    }
}

/* --- Connecting ---------------------------------------------------------- */

int mbsc_sock_connect_begin(const struct sockaddr *sa, socklen_t sa_len, const char *addr,
                            int *fd_out, char *why, size_t why_len)
{
    int fd;

    *fd_out = -1;
    fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0) {
        mbsc_why(why, why_len, "connect %s: socket: %s", addr, mbsc_os_error(errno));
        return mbsc_sock_fd_error(errno, MBSC_ERR_CONNECT);
    }
    if (set_nodelay(fd) != 0) {
        mbsc_why(why, why_len, "connect %s: TCP_NODELAY: %s", addr, mbsc_os_error(errno));
        mbsc_sock_close(fd);
        return MBSC_ERR_CONNECT;
    }
    /*
     * On a non-blocking socket EINTR, like EINPROGRESS, means the connection
     * goes on in the background: calling connect() again would give EALREADY.
     */
    if (connect(fd, sa, sa_len) != 0 && errno != EINPROGRESS && errno != EINTR) {
        mbsc_why(why, why_len, "connect %s: %s", addr, mbsc_os_error(errno));
        mbsc_sock_close(fd);
        return MBSC_ERR_CONNECT;
    }
    *fd_out = fd;
    return MBSC_OK;
}

int mbsc_sock_connect_result(int fd, const char *addr, char *why, size_t why_len)
{
    int os_err = 0;
    socklen_t len = sizeof os_err;

    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &os_err, &len) != 0)
        os_err = errno;
    if (os_err != 0) {
        mbsc_why(why, why_len, "connect %s: %s", addr, mbsc_os_error(os_err));
        return MBSC_ERR_CONNECT;
    }
    return MBSC_OK;
}

/* Wait for a connect begun on fd to finish before d expires. */
static int finish_connect(int fd, const char *addr, const mbsc_deadline *d, char *why,
                          size_t why_len)
{
    short revents;
    int os_err = 0, r;

    r = mbsc_sock_wait(fd, POLLOUT, d, &revents, &os_err);
    if (r == MBSC_ERR_TIMEOUT) {
        mbsc_why(why, why_len, "connect %s: timed out", addr);
        return MBSC_ERR_CONNECT;
    }
    if (r != MBSC_OK) {
        mbsc_why(why, why_len, "connect %s: poll: %s", addr, mbsc_os_error(os_err));
        return MBSC_ERR_CONNECT;
    }
    return mbsc_sock_connect_result(fd, addr, why, why_len);
}

static int connect_one(const struct addrinfo *ai, const mbsc_deadline *d, int *fd_out, char *addr,
                       char *why, size_t why_len)
{
    int fd, r;

    (void)mbsc_addr_format(ai->ai_addr, ai->ai_addrlen, addr, MBSC_ADDRSTRLEN);
    r = mbsc_sock_connect_begin(ai->ai_addr, ai->ai_addrlen, addr, &fd, why, why_len);
    if (r != MBSC_OK)
        return r;
    r = guard_fd_setsize(fd, addr, why, why_len);
    if (r != MBSC_OK)
        return r;
    r = finish_connect(fd, addr, d, why, why_len);
    if (r != MBSC_OK) {
        mbsc_sock_close(fd);
        return r;
    }
    *fd_out = fd;
    return MBSC_OK;
}

int mbsc_sock_connect(const struct addrinfo *ai, const mbsc_deadline *d, int *fd_out, char *peer,
                      char *why, size_t why_len)
{
    char addr[MBSC_ADDRSTRLEN];
    int r = MBSC_ERR_CONNECT;

    *fd_out = -1;
    mbsc_why(why, why_len, "connect: no address to try");
    /* A name may resolve to several addresses (::1 and 127.0.0.1): try each. */
    for (; ai != NULL; ai = ai->ai_next) {
        r = connect_one(ai, d, fd_out, addr, why, why_len);
        if (r == MBSC_OK) {
            memcpy(peer, addr, MBSC_ADDRSTRLEN);
            return MBSC_OK;
        }
        if (r == MBSC_ERR_FD_LIMIT || mbsc_deadline_poll_ms(d) == 0)
            break;
    }
    return r;
}

/* --- Listening ----------------------------------------------------------- */

static int listen_one(const struct addrinfo *ai, int *fd_out, char *why, size_t why_len)
{
    char addr[MBSC_ADDRSTRLEN];
    int fd, one = 1;
    const char *step;

    (void)mbsc_addr_format(ai->ai_addr, ai->ai_addrlen, addr, sizeof addr);
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        mbsc_why(why, why_len, "listen %s: socket: %s", addr, mbsc_os_error(errno));
        return mbsc_sock_fd_error(errno, MBSC_ERR_BIND);
    }
    /* A restarted slave must not wait for TIME_WAIT of its last connections. */
    step = "SO_REUSEADDR";
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        goto fail;
    step = "bind";
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
        goto fail;
    step = "listen";
    if (listen(fd, SOMAXCONN) != 0)
        goto fail;
    *fd_out = fd;
    return MBSC_OK;

fail:
    mbsc_why(why, why_len, "%s %s: %s", step, addr, mbsc_os_error(errno));
    mbsc_sock_close(fd);
    return MBSC_ERR_BIND;
}

int mbsc_sock_listen(const struct addrinfo *ai, int *fd_out, char *why, size_t why_len)
{
    int r = MBSC_ERR_BIND;

    *fd_out = -1;
    mbsc_why(why, why_len, "listen: no address to try");
    for (; ai != NULL; ai = ai->ai_next) {
        r = listen_one(ai, fd_out, why, why_len);
        if (r == MBSC_OK || r == MBSC_ERR_FD_LIMIT)
            break;
    }
    return r;
}

/* --- Accepting ----------------------------------------------------------- */

/*
 * accept() errors that concern only the connection being accepted: it was
 * reset before we took it, or (Linux, see accept(2)) a network error of
 * that connection surfaced here.  The listener is fine: try the next one.
 */
static int accept_transient(int e)
{
    return e == EINTR || e == ECONNABORTED || e == EPROTO || e == ENETDOWN || e == ENOPROTOOPT ||
           e == EHOSTDOWN || e == EHOSTUNREACH || e == EOPNOTSUPP || e == ENETUNREACH;
}

/* Take one pending connection, waiting for it until d expires. */
static int accept_wait(int lfd, const char *name, const mbsc_deadline *d, int *fd_out,
                       struct sockaddr_storage *ss, socklen_t *ss_len, char *why, size_t why_len)
{
    socklen_t cap = *ss_len;
    short revents;
    int fd, r, os_err;

    for (;;) {
        *ss_len = cap;
        fd = accept4(lfd, (struct sockaddr *)(void *)ss, ss_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            *fd_out = fd;
            return MBSC_OK;
        }
        if (accept_transient(errno))
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            mbsc_why(why, why_len, "accept on %s: %s", name, mbsc_os_error(errno));
            return mbsc_sock_fd_error(errno, MBSC_ERR_IO);
        }
        r = mbsc_sock_wait(lfd, POLLIN, d, &revents, &os_err);
        if (r == MBSC_ERR_TIMEOUT) {
            mbsc_why(why, why_len, "accept on %s: timed out", name);
            return r;
        }
        if (r != MBSC_OK) {
            mbsc_why(why, why_len, "accept on %s: poll: %s", name, mbsc_os_error(os_err));
            return r;
        }
    }
}

int mbsc_sock_accept(int lfd, const char *name, const mbsc_deadline *d, int *fd_out, char *peer,
                     char *why, size_t why_len)
{
    struct sockaddr_storage ss;
    socklen_t ss_len = sizeof ss;
    int fd = -1, r;

    *fd_out = -1;
    r = accept_wait(lfd, name, d, &fd, &ss, &ss_len, why, why_len);
    if (r != MBSC_OK)
        return r;
    (void)mbsc_addr_format((const struct sockaddr *)(const void *)&ss, ss_len, peer,
                           MBSC_ADDRSTRLEN);
    r = guard_fd_setsize(fd, peer, why, why_len);
    if (r != MBSC_OK)
        return r;
    if (set_nodelay(fd) != 0) {
        mbsc_why(why, why_len, "accept %s: TCP_NODELAY: %s", peer, mbsc_os_error(errno));
        mbsc_sock_close(fd);
        return MBSC_ERR_IO;
    }
    *fd_out = fd;
    return MBSC_OK;
}

/* --- Data ---------------------------------------------------------------- */

/* Errors that mean the peer is gone rather than that our socket is broken. */
static int peer_gone(int e)
{
    return e == EPIPE || e == ECONNRESET;
}

int mbsc_sock_send(int fd, const uint8_t *buf, size_t len, size_t *sent, int *os_err)
{
    ssize_t n;

    *sent = 0;
    *os_err = 0;
    do {
        /* MSG_NOSIGNAL: a closed peer gives EPIPE instead of killing us with SIGPIPE. */
        n = send(fd, buf, len, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n >= 0) {
        *sent = (size_t)n;
        return n > 0 || len == 0 ? MBSC_OK : MBSC_ERR_WOULD_BLOCK;
    }
    *os_err = errno;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        return MBSC_ERR_WOULD_BLOCK;
    return peer_gone(errno) ? MBSC_ERR_PEER_CLOSED : MBSC_ERR_IO;
}

int mbsc_sock_recv(int fd, uint8_t *buf, size_t cap, size_t *got, int *os_err)
{
    ssize_t n;

    *got = 0;
    *os_err = 0;
    do {
        n = recv(fd, buf, cap, 0);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        *got = (size_t)n;
        return MBSC_OK;
    }
    if (n == 0)
        return MBSC_ERR_PEER_CLOSED;
    *os_err = errno;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        return MBSC_ERR_WOULD_BLOCK;
    return peer_gone(errno) ? MBSC_ERR_PEER_CLOSED : MBSC_ERR_IO;
}

int mbsc_sock_failed(int fd, int *os_err)
{
    struct pollfd pfd;
    socklen_t len = sizeof *os_err;

    *os_err = 0;
    pfd.fd = fd;
    pfd.events = 0; /* POLLERR and POLLHUP are reported whatever is asked */
    pfd.revents = 0;
    if (poll(&pfd, 1, 0) <= 0 || (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0)
        return MBSC_OK;
    if (pfd.revents & POLLNVAL) {
        *os_err = EBADF;
        return MBSC_ERR_IO;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, os_err, &len) != 0)
        *os_err = errno;
    if (*os_err == 0)
        return MBSC_ERR_PEER_CLOSED; /* hung up without an error */
    return peer_gone(*os_err) ? MBSC_ERR_PEER_CLOSED : MBSC_ERR_IO;
}
