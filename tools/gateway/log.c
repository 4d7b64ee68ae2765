/* SPDX-License-Identifier: ISC */
/*
 * log.c - log lines and the systemd readiness notification.
 *
 * Under systemd, stderr goes to the journal and $JOURNAL_STREAM is set; a
 * line that starts with "<N>" then gets syslog priority N (sd-daemon(3)),
 * so errors, warnings and information are told apart without syslog() or
 * libsystemd.  Elsewhere lines carry the program's name, as other tools'.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

static int verbose;

void gw_log_set_verbose(int on)
{
    verbose = on;
}

void gw_log(enum gw_level level, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    const char *journal = getenv("JOURNAL_STREAM");

    if (level == GW_DEBUG && !verbose)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (journal != NULL && journal[0] != '\0')
        fprintf(stderr, "<%d>%s\n", (int)level, line);
    else
        fprintf(stderr, GW_PROG ": %s%s\n",
                level == GW_ERR    ? "error: "
                : level == GW_WARN ? "warning: "
                                   : "",
                line);
    fflush(stderr);
}

void gw_notify(const char *text)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    size_t n;
    socklen_t sa_len;
    int fd;

    if (path == NULL || path[0] == '\0')
        return;
    n = strlen(path);
    /* An absolute path, or "@name" for a socket in the abstract namespace. */
    if ((path[0] != '/' && path[0] != '@') || n >= sizeof sa.sun_path) {
        gw_log(GW_WARN, "NOTIFY_SOCKET '%s' is not a socket path: systemd is not told", path);
        return;
    }
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, n);
    if (path[0] == '@')
        sa.sun_path[0] = '\0';
    sa_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || sendto(fd, text, strlen(text), MSG_NOSIGNAL, (struct sockaddr *)&sa, sa_len) < 0)
        gw_log(GW_WARN, "cannot notify systemd at %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
}
