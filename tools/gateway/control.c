/* SPDX-License-Identifier: ISC */
/*
 * control.c - the status view: a UNIX control socket (--control PATH) and
 * the "mbsc-gateway status --control PATH" command that reads it, and the
 * same text in the log on SIGUSR1.
 *
 * The protocol is one line each way and then the close: the command sends
 * "status\n" (or "status json\n", "status prometheus\n"), the gateway
 * answers with the status in that form and closes; a request it does not
 * know is answered with one line starting "error: ".  The socket is mode
 * 0600, so only the service's user (and root) may ask.
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
#include <sys/file.h>
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
    ino_t ino;              /* the socket's, so that only ours is removed at the end */
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

int gw_control_path_check(const char *path, char *why, size_t why_len)
{
    struct sockaddr_un sa;
    char dir[sizeof sa.sun_path];
    const char *slash = strrchr(path, '/');
    struct stat st;

    if (unix_address(&sa, path, why, why_len) != 0)
        return -1;
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT) {
            snprintf(why, why_len, "control socket %s: directory %s: %s", path, dir,
                     strerror(errno));
            return -1;
        }
        snprintf(why, why_len,
                 "control socket %s: directory %s does not exist (yet): create it, or let "
                 "systemd's RuntimeDirectory= create it when the service starts",
                 path, dir);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, why_len, "control socket %s: %s is not a directory", path, dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, why_len,
                 "control socket %s: directory %s is not writable by this user (the socket is "
                 "created there): %s",
                 path, dir, strerror(errno));
        return -1;
    }
    /* Whatever is there but a socket is refused at start; a socket is ours to replace or not. */
    if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        snprintf(why, why_len,
                 "control socket %s: exists and is not a socket; remove it or name another path",
                 path);
        return -1;
    }
    return 0;
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

/*
 * Is somebody listening on the socket at sa?  1 yes (it accepted, or its
 * backlog is full), 0 no (a socket left by a process that died), -1 when
 * it cannot be told (why says why).
 */
static int socket_answers(const struct sockaddr_un *sa, char *why, size_t why_len)
{
    /* Non-blocking: a gateway that is stopped with its backlog full must not hang this one. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), r, err;

    if (fd < 0) {
        snprintf(why, why_len, "control socket %s: %s", sa->sun_path, strerror(errno));
        return -1;
    }
    r = connect(fd, (const struct sockaddr *)(const void *)sa, sizeof *sa);
    err = errno;
    close(fd); /* the gateway there closes a client that says nothing, without a word */
    if (r == 0 || err == EAGAIN)
        return 1;
    if (err == ECONNREFUSED || err == ENOENT)
        return 0;
    snprintf(why, why_len, "control socket %s: cannot tell whether a gateway uses it: %s",
             sa->sun_path, strerror(err));
    return -1;
}

/*
 * Take path for our socket: a socket a gateway listens on is left alone
 * (an error), one nobody listens on is replaced, anything else is an
 * error.  Gateways do this holding a lock on the directory, so that none
 * of them probes a socket another has bound but not yet listens on, and
 * takes it for a dead one.  The socket is bound and listening on return.
 */
static int take_path(struct gw_control *c, const struct sockaddr_un *sa, char *why, size_t why_len)
{
    char dir[sizeof sa->sun_path];
    const char *slash = strrchr(sa->sun_path, '/');
    struct stat st;
    mode_t old_mask;
    int dfd, r, live;

    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == sa->sun_path ? 1 : (int)(slash - sa->sun_path),
                 sa->sun_path);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0)
        while (flock(dfd, LOCK_EX) != 0 && errno == EINTR) {
        }
    r = -1;
    if (lstat(sa->sun_path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(why, why_len,
                     "control socket %s: exists and is not a socket; remove it "
                     "or name another path",
                     sa->sun_path);
            goto out;
        }
        live = socket_answers(sa, why, why_len);
        if (live != 0) {
            if (live > 0)
                snprintf(why, why_len,
                         "control socket %s: another gateway is running with it (it answers "
                         "there); give this one another --control path, or stop that one first",
                         sa->sun_path);
            goto out;
        }
        (void)unlink(sa->sun_path); /* left by a gateway that was killed */
    }
    /* Created 0600 (no window with wider rights), and chmod-ed in case of ACL defaults. */
    old_mask = umask(0177);
    r = bind(c->fd, (const struct sockaddr *)(const void *)sa, sizeof *sa);
    umask(old_mask);
    if (r != 0 || chmod(sa->sun_path, 0600) != 0 || listen(c->fd, 4) != 0 ||
        lstat(sa->sun_path, &st) != 0) {
        snprintf(why, why_len, "control socket %s: %s (is its directory writable?)", sa->sun_path,
                 strerror(errno));
        if (r == 0)
            (void)unlink(sa->sun_path);
        r = -1;
        goto out;
    }
    c->ino = st.st_ino;
out:
    if (dfd >= 0)
        close(dfd); /* and the lock with it */
    return r;
}

struct gw_control *gw_control_open(struct gw_loop *loop, const char *path, gw_status_fn fn,
                                   void *user, char *why, size_t why_len)
{
    struct gw_control *c;
    struct sockaddr_un sa;
    size_t i;

    if (unix_address(&sa, path, why, why_len) != 0)
        return NULL;
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
    if (take_path(c, &sa, why, why_len) != 0) {
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
    struct stat st;
    size_t i;

    if (c == NULL)
        return;
    for (i = 0; i < GW_CONTROL_MAX_CLIENTS; i++)
        if (c->clients[i].fd >= 0)
            client_end(c, &c->clients[i]);
    gw_watch_remove(c->watch);
    close(c->fd);
    /* Ours, unless somebody removed it and put another there meanwhile. */
    if (lstat(c->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == c->ino)
        (void)unlink(c->path);
    free(c);
}

/* The status in form fmt as one string (malloc'ed), or NULL. */
static char *status_text(gw_status_fn fn, void *user, enum gw_status_format fmt, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);

    if (f == NULL)
        return NULL;
    fn(user, fmt, f);
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
    static const char unknown[] =
        "error: unknown request; the gateway knows 'status', 'status json' and "
        "'status prometheus'\n";
    static const char nomem[] = "error: out of memory\n";
    enum gw_status_format fmt = GW_STATUS_TEXT;
    char *nl;

    k->in[k->in_len] = '\0';
    nl = memchr(k->in, '\n', k->in_len);
    if (nl != NULL)
        *nl = '\0';
    if (nl != NULL &&
        (strcmp(k->in, "status") == 0 ||
         (strncmp(k->in, "status ", 7) == 0 && gw_status_format_parse(k->in + 7, &fmt) == 0))) {
        k->out = status_text(fn, user, fmt, &k->out_len);
        if (k->out == NULL) {
            k->out = strdup(nomem);
            k->out_len = sizeof nomem - 1;
        }
    } else {
        gw_log(GW_WARN, "control socket: an unknown request was refused");
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
        if (n == 0 && k->in_len == 0)
            return -1; /* a gateway that looked whether this one lives: nothing to answer */
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
    char *text = status_text(fn, user, GW_STATUS_TEXT, &len), *line, *save = NULL;

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
    enum gw_status_format fmt = GW_STATUS_TEXT;
    const char *path = NULL;
    char why[256], buf[4096], request[32];
    struct sockaddr_un sa;
    size_t got = 0;
    int i, fd, refused = 0;

    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--control") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else if (strncmp(argv[i], "--control=", 10) == 0) {
            path = argv[i] + 10;
        } else if (strcmp(argv[i], "--json") == 0) {
            fmt = GW_STATUS_JSON;
        } else if (strcmp(argv[i], "--prometheus") == 0) {
            fmt = GW_STATUS_PROMETHEUS;
        } else {
            gw_log(GW_ERR,
                   "status: unknown argument '%s'; usage: mbsc-gateway status "
                   "--control PATH [--json | --prometheus]",
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
    snprintf(request, sizeof request, "status%s%s\n", fmt != GW_STATUS_TEXT ? " " : "",
             fmt != GW_STATUS_TEXT ? gw_status_format_word(fmt) : "");
    send_all(fd, request, strlen(request));
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
        /* A gateway that does not know the request says so in its first line. */
        if (got == 0 && (size_t)n >= 7 && memcmp(buf, "error: ", 7) == 0)
            refused = 1;
        got += (size_t)n;
        if (fwrite(buf, 1, (size_t)n, refused ? stderr : stdout) != (size_t)n) {
            close(fd);
            return GW_EX_FAILURE;
        }
    }
    close(fd);
    if (refused)
        return GW_EX_FAILURE;
    return fflush(stdout) == 0 ? GW_EX_OK : GW_EX_FAILURE;
}
