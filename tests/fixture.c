/* SPDX-License-Identifier: ISC */
/* fixture.c - see fixture.h. */
#include "fixture.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

void tu_peers_setup(struct tu_peers *p, const char *master_name, const char *master_role,
                    const char *ciphers)
{
    memset(p, 0, sizeof *p);
    ck_assert_int_eq(mbsc_keypair_generate(&p->master_kp), MBSC_OK);
    ck_assert_int_eq(mbsc_keypair_generate(&p->slave_kp), MBSC_OK);
    p->allow = mbsc_allowlist_new();
    ck_assert_ptr_nonnull(p->allow);
    ck_assert_int_eq(
        mbsc_allowlist_add(p->allow, p->master_kp.public_key, master_name, master_role), MBSC_OK);
    p->mcfg = mbsc_config_new(MBSC_ROLE_MASTER);
    p->scfg = mbsc_config_new(MBSC_ROLE_SLAVE);
    ck_assert_ptr_nonnull(p->mcfg);
    ck_assert_ptr_nonnull(p->scfg);
    ck_assert_int_eq(mbsc_config_set_keypair(p->mcfg, &p->master_kp), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(p->mcfg, p->slave_kp.public_key), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_keypair(p->scfg, &p->slave_kp), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_allowlist(p->scfg, p->allow), MBSC_OK);
    if (ciphers != NULL)
        ck_assert_int_eq(mbsc_config_set_ciphers(p->mcfg, ciphers), MBSC_OK);
}

void tu_peers_teardown(struct tu_peers *p)
{
    mbsc_config_free(p->mcfg);
    mbsc_config_free(p->scfg);
    mbsc_allowlist_free(p->allow);
    mbsc_keypair_wipe(&p->master_kp);
    mbsc_keypair_wipe(&p->slave_kp);
}

size_t tu_message1(const mbsc_config *mcfg, uint8_t *buf, size_t cap)
{
    int err = 0;
    mbsc_session *s = mbsc_session_new(mcfg, &err);
    const uint8_t *p;
    size_t n;

    ck_assert_ptr_nonnull(s);
    p = mbsc_session_output(s, &n);
    ck_assert_uint_gt(n, 2);
    ck_assert_uint_le(n, cap);
    memcpy(buf, p, n);
    mbsc_session_free(s);
    return n;
}

int tu_raw_connect(const char *addr)
{
    char host[128], port[8];
    struct addrinfo hints, *ai;
    int fd = -1;

    if (mbsc_parse_hostport(addr, host, sizeof host, port, sizeof port) != MBSC_OK)
        return -1;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return -1;
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

void tu_hand_start(struct tu_hand *h, const mbsc_config *mcfg, int fd)
{
    int err = 0;

    ck_assert_int_ge(fd, 0);
    h->fd = fd;
    h->s = mbsc_session_new(mcfg, &err);
    ck_assert_ptr_nonnull(h->s);
    tu_hand_send(h, NULL, 0);
}

int tu_hand_read(struct tu_hand *h, int timeout_ms)
{
    struct pollfd p = {h->fd, POLLIN, 0};
    size_t room = 0;
    uint8_t *in;
    ssize_t n;

    if (poll(&p, 1, timeout_ms) <= 0)
        return 0;
    /* Straight into the session's input: frames behind a payload wait there. */
    in = mbsc_session_input_buf(h->s, &room);
    if (room == 0)
        return 0;
    n = recv(h->fd, in, room, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno == ECONNRESET))
        return -1;
    if (n < 0)
        return 0;
    ck_assert_int_eq(mbsc_session_input_ack(h->s, (size_t)n), MBSC_OK);
    return 1;
}

void tu_hand_send(struct tu_hand *h, const uint8_t *payload, size_t len)
{
    const uint8_t *out;
    size_t n;

    if (len > 0)
        ck_assert_int_eq(mbsc_session_send(h->s, payload, len), MBSC_OK);
    out = mbsc_session_output(h->s, &n);
    if (n > 0) {
        ck_assert_int_eq(send(h->fd, out, n, MSG_NOSIGNAL), (ssize_t)n);
        mbsc_session_output_consumed(h->s, n);
    }
}

long tu_hand_payload(struct tu_hand *h, uint8_t *buf, size_t cap)
{
    size_t len = 0;
    int r = mbsc_session_recv(h->s, buf, cap, &len);

    ck_assert_int_ge(r, 0);
    return r == 1 ? (long)len : -1;
}

void tu_hand_close(struct tu_hand *h)
{
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
    mbsc_session_free(h->s);
    h->s = NULL;
}

long tu_count_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    long n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.')
            n++;
    }
    closedir(d);
    return n - (strcmp(path, "/proc/self/fd") == 0); /* the DIR's own descriptor */
}

int tu_fds_past_setsize(const char *prog)
{
    struct rlimit rl;

    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)FD_SETSIZE + 64) {
        printf("%s: descriptor limit %lu too low, skipping the FD_SETSIZE test\n", prog,
               (unsigned long)rl.rlim_max);
        return 0;
    }
    rl.rlim_cur = (rlim_t)FD_SETSIZE + 64;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    return 1;
}
