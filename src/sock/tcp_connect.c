/* SPDX-License-Identifier: ISC */
/*
 * tcp_connect.c - the non-blocking TCP connect of mbsc/conn.h, for
 * programs with their own event loop.
 *
 * The addresses are copied out of getaddrinfo()'s list into the caller's
 * struct, so that nothing is allocated between the calls and a caller that
 * forgets the struct leaks at most the socket it was told about.  Each
 * address is tried when the one before has failed: a name such as
 * "localhost" gives ::1 first, and a slave listening on 127.0.0.1 only
 * refuses that one; on a non-blocking socket the refusal comes later,
 * through SO_ERROR, not from connect().
 */
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "internal.h"
#include "sock/sock.h"

/* Start on the next address that takes a connect; tc->fd is then connecting. */
static int start_next(mbsc_tcp_connect *tc, char *why, size_t why_len)
{
    int r = MBSC_ERR_CONNECT;

    while (tc->at_ < tc->n_next_) {
        const struct sockaddr *sa = (const struct sockaddr *)(const void *)&tc->next_[tc->at_];
        socklen_t sa_len = tc->next_len_[tc->at_];

        tc->at_++;
        (void)mbsc_addr_format(sa, sa_len, tc->addr, sizeof tc->addr);
        r = mbsc_sock_connect_begin(sa, sa_len, tc->addr, &tc->fd, why, why_len);
        if (r == MBSC_OK || r == MBSC_ERR_FD_LIMIT)
            break;
    }
    return r;
}

MBSC_API int mbsc_tcp_connect_start(mbsc_tcp_connect *tc, const char *hostport, char *why,
                                    size_t why_len)
{
    struct addrinfo *res, *ai;
    int r;

    mbsc_why(why, why_len, "%s", "");
    if (tc == NULL) {
        mbsc_why(why, why_len, "mbsc_tcp_connect_start: NULL connect state");
        return MBSC_ERR_INVALID_ARG;
    }
    memset(tc, 0, sizeof *tc);
    tc->fd = -1;
    r = mbsc_addr_resolve(hostport, 0, &res, why, why_len);
    if (r != MBSC_OK)
        return r;
    for (ai = res; ai != NULL && tc->n_next_ < MBSC_TCP_CONNECT_ADDRS; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof tc->next_[0])
            continue; /* cannot happen for TCP over IPv4 or IPv6 */
        memcpy(&tc->next_[tc->n_next_], ai->ai_addr, ai->ai_addrlen);
        tc->next_len_[tc->n_next_] = ai->ai_addrlen;
        tc->n_next_++;
    }
    freeaddrinfo(res);
    if (tc->n_next_ == 0) {
        mbsc_why(why, why_len, "connect %s: no address to try", hostport);
        return MBSC_ERR_CONNECT;
    }
    r = start_next(tc, why, why_len);
    if (r == MBSC_OK)
        mbsc_why(why, why_len, "%s", ""); /* an address that failed at once before one worked */
    return r;
}

/* 1 once the connect on fd is over (connected or failed), 0 while it goes on. */
static int connect_over(int fd)
{
    struct pollfd pfd;

    pfd.fd = fd;
    pfd.events = POLLOUT;
    pfd.revents = 0;
    /* EINTR with a zero timeout: nothing is lost by looking again next time. */
    return poll(&pfd, 1, 0) > 0;
}

MBSC_API int mbsc_tcp_connect_finish(mbsc_tcp_connect *tc, int *fd_out, char *why, size_t why_len)
{
    char failed[MBSC_WHY_SIZE];
    int r;

    mbsc_why(why, why_len, "%s", "");
    if (fd_out != NULL)
        *fd_out = -1;
    if (tc == NULL || fd_out == NULL || tc->fd < 0) {
        mbsc_why(why, why_len, "mbsc_tcp_connect_finish: no connect under way");
        return MBSC_ERR_INVALID_ARG;
    }
    if (!connect_over(tc->fd))
        return MBSC_ERR_WOULD_BLOCK;
    r = mbsc_sock_connect_result(tc->fd, tc->addr, failed, sizeof failed);
    if (r == MBSC_OK) {
        *fd_out = tc->fd;
        tc->fd = -1;
        return MBSC_OK;
    }
    mbsc_sock_close(tc->fd);
    tc->fd = -1;
    if (tc->at_ >= tc->n_next_) {
        mbsc_why(why, why_len, "%s", failed);
        return r;
    }
    r = start_next(tc, why, why_len);
    if (r != MBSC_OK)
        return r; /* why names the last address tried */
    mbsc_why(why, why_len, "%s", failed);
    return MBSC_ERR_WOULD_BLOCK;
}

MBSC_API void mbsc_tcp_connect_cancel(mbsc_tcp_connect *tc)
{
    if (tc == NULL)
        return;
    mbsc_sock_close(tc->fd);
    tc->fd = -1;
}
