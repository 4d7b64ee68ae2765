/* SPDX-License-Identifier: ISC */
/*
 * poller.c - readiness of many descriptors: epoll on Linux, poll() elsewhere.
 *
 * epoll keeps the interest set in the kernel, so a step costs one system
 * call however many connections are open, and the caller's event loop
 * watches one descriptor.  The poll() fallback rebuilds its array from a
 * table kept in step with add/mod/del; both have no FD_SETSIZE limit.
 * Level-triggered either way: a descriptor stays ready until served.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __linux__
#include <sys/epoll.h>
#define SRV_HAVE_EPOLL 1
#else
#define SRV_HAVE_EPOLL 0
#endif

#include "server/server_internal.h"

#if SRV_HAVE_EPOLL
static uint32_t to_epoll(short events)
{
    return ((events & POLLIN) ? (uint32_t)EPOLLIN : 0u) |
           ((events & POLLOUT) ? (uint32_t)EPOLLOUT : 0u);
}

static short from_epoll(uint32_t ev)
{
    return (short)(((ev & EPOLLIN) ? POLLIN : 0) | ((ev & EPOLLOUT) ? POLLOUT : 0) |
                   ((ev & EPOLLERR) ? POLLERR : 0) | ((ev & EPOLLHUP) ? POLLHUP : 0));
}
#endif

int srv_poller_init(struct srv_poller *p, char *why, size_t why_len)
{
    memset(p, 0, sizeof *p);
    p->epfd = -1;
#if SRV_HAVE_EPOLL
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (p->epfd < 0) {
        int e = errno;

        mbsc_why(why, why_len, "epoll_create1: %s", mbsc_os_error(e));
        return mbsc_sock_fd_error(e, MBSC_ERR_IO);
    }
#else
    (void)why;
    (void)why_len;
#endif
    return MBSC_OK;
}

void srv_poller_close(struct srv_poller *p)
{
    mbsc_sock_close(p->epfd);
    free(p->entries);
    free(p->index_of_fd);
    free(p->pfds);
    memset(p, 0, sizeof *p);
    p->epfd = -1;
}

int srv_poller_fd(const struct srv_poller *p)
{
    return p->epfd;
}

/* --- poll() fallback table ------------------------------------------------ */

static int table_reserve(struct srv_poller *p, int fd)
{
    size_t need = (size_t)fd + 1;

    if (need > p->cap_index) {
        size_t cap = p->cap_index == 0 ? 64 : p->cap_index;
        size_t *grown;

        while (cap < need)
            cap *= 2;
        grown = realloc(p->index_of_fd, cap * sizeof *grown);
        if (grown == NULL)
            return MBSC_ERR_NOMEM;
        memset(grown + p->cap_index, 0, (cap - p->cap_index) * sizeof *grown);
        p->index_of_fd = grown;
        p->cap_index = cap;
    }
    if (p->n_entries == p->cap_entries) {
        size_t cap = p->cap_entries == 0 ? 64 : 2 * p->cap_entries;
        struct srv_poll_entry *e = realloc(p->entries, cap * sizeof *e);
        struct pollfd *f;

        if (e == NULL)
            return MBSC_ERR_NOMEM;
        p->entries = e;
        f = realloc(p->pfds, cap * sizeof *f);
        if (f == NULL)
            return MBSC_ERR_NOMEM;
        p->pfds = f;
        p->cap_entries = cap;
    }
    return MBSC_OK;
}

int srv_poller_add(struct srv_poller *p, int fd, uint64_t key, short events)
{
    int r;

#if SRV_HAVE_EPOLL
    if (p->epfd >= 0) {
        struct epoll_event ev;

        memset(&ev, 0, sizeof ev);
        ev.events = to_epoll(events);
        ev.data.u64 = key;
        return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) == 0
                   ? MBSC_OK
                   : mbsc_sock_fd_error(errno, MBSC_ERR_IO);
    }
#endif
    r = table_reserve(p, fd);
    if (r != MBSC_OK)
        return r;
    p->entries[p->n_entries].fd = fd;
    p->entries[p->n_entries].events = events;
    p->entries[p->n_entries].key = key;
    p->index_of_fd[fd] = ++p->n_entries;
    return MBSC_OK;
}

int srv_poller_mod(struct srv_poller *p, int fd, uint64_t key, short events)
{
#if SRV_HAVE_EPOLL
    if (p->epfd >= 0) {
        struct epoll_event ev;

        memset(&ev, 0, sizeof ev);
        ev.events = to_epoll(events);
        ev.data.u64 = key;
        return epoll_ctl(p->epfd, EPOLL_CTL_MOD, fd, &ev) == 0 ? MBSC_OK : MBSC_ERR_IO;
    }
#endif
    (void)key;
    if (fd < 0 || (size_t)fd >= p->cap_index || p->index_of_fd[fd] == 0)
        return MBSC_ERR_INVALID_ARG;
    p->entries[p->index_of_fd[fd] - 1].events = events;
    return MBSC_OK;
}

void srv_poller_del(struct srv_poller *p, int fd)
{
    size_t i;

#if SRV_HAVE_EPOLL
    if (p->epfd >= 0) {
        /* close() would drop it too; explicit, because a dup() would keep it. */
        (void)epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, NULL);
        return;
    }
#endif
    if (fd < 0 || (size_t)fd >= p->cap_index || p->index_of_fd[fd] == 0)
        return;
    i = p->index_of_fd[fd] - 1;
    p->index_of_fd[fd] = 0;
    /* The last entry fills the hole. */
    if (i != p->n_entries - 1) {
        p->entries[i] = p->entries[p->n_entries - 1];
        p->index_of_fd[p->entries[i].fd] = i + 1;
    }
    p->n_entries--;
}

int srv_poller_wait(struct srv_poller *p, struct srv_ready *out, int cap, int timeout_ms)
{
    struct pollfd *f = p->pfds;
    size_t i;
    int n, k = 0;

#if SRV_HAVE_EPOLL
    if (p->epfd >= 0) {
        struct epoll_event evs[256];

        if (cap > 256)
            cap = 256;
        n = epoll_wait(p->epfd, evs, cap, timeout_ms);
        if (n < 0)
            return errno == EINTR ? 0 : MBSC_ERR_IO;
        for (k = 0; k < n; k++) {
            out[k].key = evs[k].data.u64;
            out[k].revents = from_epoll(evs[k].events);
        }
        return n;
    }
#endif
    for (i = 0; i < p->n_entries; i++) {
        f[i].fd = p->entries[i].fd;
        f[i].events = p->entries[i].events;
        f[i].revents = 0;
    }
    n = poll(f, (nfds_t)p->n_entries, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : MBSC_ERR_IO;
    for (i = 0; i < p->n_entries && k < cap; i++) {
        if (f[i].revents == 0)
            continue;
        out[k].key = p->entries[i].key;
        out[k].revents = (short)(f[i].revents & (POLLIN | POLLOUT | POLLERR | POLLHUP | POLLNVAL));
        k++;
    }
    return k;
}
