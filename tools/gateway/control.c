/* SPDX-License-Identifier: ISC */
/*
 * control.c - the status view: a UNIX control socket (--control PATH) and
 * the "mbsc-gateway status --control PATH" command that reads it, and the
 * same text in the log on SIGUSR1.
 *
 * The protocol is one line each way and then the close: the command sends
 * "status\n", the gateway answers with the status lines and closes.  The
 * socket is mode 0600, so only the service's user (and root) may ask.  A
 * client gets at most CONTROL_IO_MS for each direction, so that a stuck
 * one holds the gateway's loop up for a bounded time only.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "gw.h"

#define CONTROL_IO_MS 1000
#define VERB_MAX      64u

struct gw_control {
    int fd;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
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

static void set_io_timeout(int fd)
{
    struct timeval tv = {CONTROL_IO_MS / 1000, (CONTROL_IO_MS % 1000) * 1000};

    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

struct gw_control *gw_control_open(const char *path, char *why, size_t why_len)
{
    struct gw_control *c;
    struct sockaddr_un sa;
    struct stat st;
    mode_t old_mask;
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
    memcpy(c->path, sa.sun_path, sizeof c->path);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
    return c;
}

int gw_control_fd(const struct gw_control *c)
{
    return c != NULL ? c->fd : -1;
}

void gw_control_close(struct gw_control *c)
{
    if (c == NULL)
        return;
    close(c->fd);
    (void)unlink(c->path);
    free(c);
}

/* Write all of buf, or give up after the send timeout. */
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

void gw_control_serve(struct gw_control *c, gw_status_fn fn, void *user)
{
    char verb[VERB_MAX + 1], *nl;
    size_t got = 0;
    int fd;

    if (c == NULL)
        return;
    fd = accept(c->fd, NULL, NULL);
    if (fd < 0)
        return;
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    set_io_timeout(fd);
    /* One line: the verb. */
    while (got < VERB_MAX && memchr(verb, '\n', got) == NULL) {
        ssize_t n = recv(fd, verb + got, VERB_MAX - got, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    verb[got] = '\0';
    nl = strchr(verb, '\n');
    if (nl != NULL)
        *nl = '\0';
    if (nl != NULL && strcmp(verb, "status") == 0) {
        size_t len = 0;
        char *text = status_text(fn, user, &len);

        if (text != NULL)
            send_all(fd, text, len);
        else
            send_all(fd, "error: out of memory\n", 21);
        free(text);
    } else {
        static const char msg[] = "error: unknown request; the only one is 'status'\n";

        send_all(fd, msg, sizeof msg - 1);
        gw_log(GW_WARN, "control socket: a request other than 'status' was refused");
    }
    close(fd);
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
