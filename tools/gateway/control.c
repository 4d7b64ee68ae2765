/* SPDX-License-Identifier: ISC */
/*
 * control.c - the status view: a UNIX control socket (--control PATH) and
 * the "mbsc-gateway status --control PATH" command that reads it, and the
 * same text in the log on SIGUSR1.
 *
 * The protocol is one line each way and then the close: the command sends
 * "status\n", the gateway answers with the status lines and closes.  The
 * socket is mode 0600, so only the service's user (and root) may ask.
 *
 * The gateway serves its clients from its event loop and never waits for
 * one: the socket and every client are non-blocking, each client's
 * descriptor is watched with the gateway's others, and a client has
 * GW_CONTROL_DEADLINE_MS from its accept for the whole exchange, so that
 * one that trickles its request a byte at a time, or never reads the
 * answer, costs a slot for a second and nothing else.  At most
 * GW_CONTROL_MAX_CLIENTS are served at once; more wait in the socket's
 * backlog.  The command side (gw_status_command) may block: it is a
 * program of its own, with CONTROL_IO_MS per read or write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "control.h"
#include "log.h"

#define CONTROL_IO_MS 1000 /* the status command's wait per read or write */
#define VERB_MAX      64u

/* A client being served; fd -1 for a free slot. */
struct control_client {
    struct gw_control *c;
    int fd;
    struct gw_watch *watch;
    struct gw_timer *deadline;
    char in[VERB_MAX + 1]; /* the request so far */
    size_t in_len;
    char *out; /* the answer (malloc'ed), NULL while the request is being read */
    size_t out_len, out_sent;
};

struct gw_control {
    struct gw_loop *loop;
    int fd;
    struct gw_watch *watch; /* the socket's: GW_IO_IN while a slot is free */
    gw_status_fn fn;
    void *user;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct control_client clients[GW_CONTROL_MAX_CLIENTS];
    size_t n_clients;
};

static int unix_address(struct sockaddr_un *sa, const char *path, char *why, size_t why_len)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (path[0] == '\0' || strlen(path) >= sizeof sa->sun_path) {
        snprintf(why, why_len, "control socket '%s': the path must have 1 to %zu characters", path,
                 sizeof sa->sun_path - 1);
        return -1;
    }
    memcpy(sa->sun_path, path, strlen(path) + 1);
    return 0;
}

int gw_control_path_ok(const char *path, char *why, size_t why_len)
{
    struct sockaddr_un sa;

    return unix_address(&sa, path, why, why_len);
}

/* The command's side: at most CONTROL_IO_MS for each read or write. */
static void set_io_timeout(int fd)
{
    struct timeval tv = {CONTROL_IO_MS / 1000, (CONTROL_IO_MS % 1000) * 1000};

    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static void on_socket(void *data, unsigned happened);
static void on_client(void *data, unsigned happened);
static void on_deadline(void *data);

struct gw_control *gw_control_open(struct gw_loop *loop, const char *path, gw_status_fn fn,
                                   void *user, char *why, size_t why_len)
{
    struct gw_control *c;
    struct sockaddr_un sa;
    struct stat st;
    mode_t old_mask;
    size_t i;
    int r;

    if (unix_address(&sa, path, why, why_len) != 0)
        return NULL;
    /* A socket left by a gateway that was killed is replaced; anything else is not ours. */
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(why, why_len,
                     "control socket %s: exists and is not a socket; remove it "
                     "or name another path",
                     path);
            return NULL;
        }
        (void)unlink(path);
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    for (i = 0; i < GW_CONTROL_MAX_CLIENTS; i++) {
        c->clients[i].fd = -1;
        c->clients[i].c = c;
    }
    c->loop = loop;
    c->fn = fn;
    c->user = user;
    memcpy(c->path, sa.sun_path, sizeof c->path);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        snprintf(why, why_len, "control socket %s: %s", path, strerror(errno));
        free(c);
        return NULL;
    }
    /* Created 0600 (no window with wider rights), and chmod-ed in case of ACL defaults. */
    old_mask = umask(0177);
    r = bind(c->fd, (struct sockaddr *)(void *)&sa, sizeof sa);
    umask(old_mask);
    if (r != 0 || chmod(path, 0600) != 0 || listen(c->fd, 4) != 0) {
        snprintf(why, why_len, "control socket %s: %s (is its directory writable?)", path,
                 strerror(errno));
        if (r == 0)
            (void)unlink(path);
        close(c->fd);
        free(c);
        return NULL;
    }
    c->watch = gw_watch_add(loop, c->fd, GW_IO_IN, on_socket, c);
    if (c->watch == NULL) {
        snprintf(why, why_len, "control socket %s: cannot watch it: %s", path, strerror(errno));
        (void)unlink(path);
        close(c->fd);
        free(c);
        return NULL;
    }
    return c;
}

static void client_end(struct gw_control *c, struct control_client *k)
{
    gw_watch_remove(k->watch);
    gw_timer_free(k->deadline);
    close(k->fd);
    free(k->out);
    memset(k, 0, sizeof *k);
    k->fd = -1;
    k->c = c;
    /* A slot is free: the socket is read again. */
    if (c->n_clients-- == GW_CONTROL_MAX_CLIENTS)
        (void)gw_watch_set(c->watch, GW_IO_IN);
}

void gw_control_close(struct gw_control *c)
{
    size_t i;

    if (c == NULL)
        return;
    for (i = 0; i < GW_CONTROL_MAX_CLIENTS; i++)
        if (c->clients[i].fd >= 0)
            client_end(c, &c->clients[i]);
    gw_watch_remove(c->watch);
    close(c->fd);
    (void)unlink(c->path);
    free(c);
}

/* The status text as one string (malloc'ed), or NULL. */
static char *status_text(gw_status_fn fn, void *user, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);

    if (f == NULL)
        return NULL;
    fn(user, f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static void accept_clients(struct gw_control *c)
{
    size_t i;

    for (i = 0; i < GW_CONTROL_MAX_CLIENTS && c->n_clients < GW_CONTROL_MAX_CLIENTS; i++) {
        struct control_client *k = &c->clients[i];
        int fd, fl;

        if (k->fd >= 0)
            continue;
        fd = accept(c->fd, NULL, NULL);
        if (fd < 0)
            return; /* EAGAIN: nobody else waits; anything else: the next turn tries again */
        fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0 ||
            fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
            close(fd);
            continue;
        }
        k->fd = fd;
        k->watch = gw_watch_add(c->loop, fd, GW_IO_IN, on_client, k);
        k->deadline = gw_timer_new(c->loop, on_deadline, k);
        c->n_clients++;
        if (k->watch == NULL || k->deadline == NULL) {
            client_end(c, k);
            continue;
        }
        gw_timer_in(k->deadline, GW_CONTROL_DEADLINE_MS);
    }
    /* Full: newcomers wait in the backlog until a slot is free. */
    if (c->n_clients == GW_CONTROL_MAX_CLIENTS)
        (void)gw_watch_set(c->watch, 0);
}

static void on_socket(void *data, unsigned happened)
{
    (void)happened;
    accept_clients(data);
}

/* The answer to the request in k->in (a whole line, or all the client sent). */
static void client_answer(struct control_client *k, gw_status_fn fn, void *user)
{
    static const char unknown[] = "error: unknown request; the only one is 'status'\n";
    static const char nomem[] = "error: out of memory\n";
    char *nl;

    k->in[k->in_len] = '\0';
    nl = memchr(k->in, '\n', k->in_len);
    if (nl != NULL)
        *nl = '\0';
    if (nl != NULL && strcmp(k->in, "status") == 0) {
        k->out = status_text(fn, user, &k->out_len);
        if (k->out == NULL) {
            k->out = strdup(nomem);
            k->out_len = sizeof nomem - 1;
        }
    } else {
        gw_log(GW_WARN, "control socket: a request other than 'status' was refused");
        k->out = strdup(unknown);
        k->out_len = sizeof unknown - 1;
    }
    k->out_sent = 0;
}

/* Read what the client sent; 0 to go on, -1 when it is done for. */
static int client_read(struct control_client *k, gw_status_fn fn, void *user)
{
    for (;;) {
        ssize_t n = recv(k->fd, k->in + k->in_len, VERB_MAX - k->in_len, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0)
            return -1;
        k->in_len += (size_t)n;
        /* A whole line, a full buffer, or the end of what will come. */
        if (n == 0 || k->in_len == VERB_MAX || memchr(k->in, '\n', k->in_len) != NULL) {
            client_answer(k, fn, user);
            return k->out != NULL ? 0 : -1;
        }
    }
}

/* Send what the socket takes; 0 to go on, -1 when done (all sent, or the client is gone). */
static int client_write(struct control_client *k)
{
    while (k->out_sent < k->out_len) {
        ssize_t n = send(k->fd, k->out + k->out_sent, k->out_len - k->out_sent, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0)
            return -1;
        k->out_sent += (size_t)n;
    }
    return -1;
}

static void on_client(void *data, unsigned happened)
{
    struct control_client *k = data;
    int done = 0;

    (void)happened;
    if (k->out == NULL)
        done = client_read(k, k->c->fn, k->c->user) != 0;
    /* The answer goes out at once: the socket has room for a short one. */
    if (!done && k->out != NULL) {
        done = client_write(k) != 0;
        if (!done)
            (void)gw_watch_set(k->watch, GW_IO_OUT);
    }
    if (done)
        client_end(k->c, k);
}

static void on_deadline(void *data)
{
    struct control_client *k = data;

    gw_log(GW_WARN, "control socket: a client took more than %d ms: closed",
           GW_CONTROL_DEADLINE_MS);
    client_end(k->c, k);
}

void gw_status_log(gw_status_fn fn, void *user)
{
    size_t len = 0;
    char *text = status_text(fn, user, &len), *line, *save = NULL;

    if (text == NULL) {
        gw_log(GW_ERR, "status: out of memory");
        return;
    }
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
        gw_log(GW_INFO, "status: %s", line);
    free(text);
}

/* The command's side: write all of buf, or give up after the send timeout. */
static void send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

int gw_status_command(int argc, char **argv)
{
    const char *path = NULL;
    char why[256], buf[4096];
    struct sockaddr_un sa;
    int i, fd;

    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--control") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else {
            gw_log(GW_ERR,
                   "status: unknown argument '%s'; usage: mbsc-gateway status "
                   "--control PATH",
                   argv[i]);
            return GW_EX_USAGE;
        }
    }
    if (path == NULL) {
        gw_log(GW_ERR, "status needs --control PATH, the gateway's 'control' setting");
        return GW_EX_USAGE;
    }
    if (unix_address(&sa, path, why, sizeof why) != 0) {
        gw_log(GW_ERR, "%s", why);
        return GW_EX_USAGE;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)(void *)&sa, sizeof sa) != 0) {
        gw_log(GW_ERR,
               "cannot reach the gateway at %s: %s (is it running with "
               "'control = %s', and are you its user or root?)",
               path, strerror(errno), path);
        if (fd >= 0)
            close(fd);
        return GW_EX_FAILURE;
    }
    set_io_timeout(fd);
    send_all(fd, "status\n", 7);
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            gw_log(GW_ERR, "reading the status from %s: %s", path, strerror(errno));
            close(fd);
            return GW_EX_FAILURE;
        }
        if (n == 0)
            break;
        if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) {
            close(fd);
            return GW_EX_FAILURE;
        }
    }
    close(fd);
    return fflush(stdout) == 0 ? GW_EX_OK : GW_EX_FAILURE;
}
