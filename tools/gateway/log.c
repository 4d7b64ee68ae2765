/* SPDX-License-Identifier: ISC */
/*
 * log.c - log entries and the systemd readiness notification.
 *
 * Three ways out, chosen once (log.h says when): journald's native
 * protocol, with structured fields and no libsystemd; stderr lines that
 * start with "<N>", which journald turns into the priority; plain stderr
 * lines with the program's name and, in a running gateway, the time.  A
 * datagram the journal does not take (journald restarting, its socket
 * full) goes to stderr with its priority instead, so no entry is lost and
 * the loop never waits for the journal.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define LINE_BYTES  2048u
#define ENTRY_BYTES 8192u /* a datagram: the line, the priority and a few fields */

enum sink { SINK_UNSET = 0, SINK_PLAIN, SINK_PREFIX, SINK_NATIVE };

static enum gw_level max_level = GW_INFO;
static int timestamps;
static enum sink sink;
static int journal_fd = -1;
static unsigned warnings;

void gw_log_set_level(enum gw_level level)
{
    max_level = level;
}

int gw_log_level_parse(const char *word, enum gw_level *level)
{
    if (strcmp(word, "debug") == 0)
        *level = GW_DEBUG;
    else if (strcmp(word, "info") == 0)
        *level = GW_INFO;
    else if (strcmp(word, "warning") == 0 || strcmp(word, "warn") == 0)
        *level = GW_WARN;
    else if (strcmp(word, "error") == 0)
        *level = GW_ERR;
    else
        return -1;
    return 0;
}

const char *gw_log_level_name(enum gw_level level)
{
    switch (level) {
    case GW_DEBUG: return "debug";
    case GW_INFO: return "info";
    case GW_WARN: return "warning";
    case GW_ERR: break;
    }
    return "error";
}

unsigned gw_log_warnings(void)
{
    return warnings;
}

void gw_log_set_timestamps(int on)
{
    if (on)
        tzset(); /* localtime_r need not read TZ itself */
    timestamps = on;
}

/* Is stderr the stream systemd connected to the journal ($JOURNAL_STREAM is "DEV:INODE")? */
static int stderr_is_journal(const char *stream)
{
    unsigned long long dev, ino;
    struct stat st;
    char tail;

    if (sscanf(stream, "%llu:%llu%c", &dev, &ino, &tail) != 2 || fstat(2, &st) != 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* A datagram socket connected to the journal, or -1. */
static int journal_connect(void)
{
    struct sockaddr_un sa;
    const char *path = getenv("MBSC_GATEWAY_JOURNAL_SOCKET");
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    /* $MBSC_GATEWAY_JOURNAL_SOCKET: another journal's socket (the tests use one of their own). */
    if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof sa.sun_path)
        path = GW_JOURNAL_SOCKET;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    if (connect(fd, (struct sockaddr *)(void *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void choose_sink(void)
{
    const char *stream = getenv("JOURNAL_STREAM");

    if (stream == NULL || stream[0] == '\0' || !stderr_is_journal(stream)) {
        sink = SINK_PLAIN;
        return;
    }
    journal_fd = journal_connect();
    sink = journal_fd >= 0 ? SINK_NATIVE : SINK_PREFIX;
}

/* Send one entry to the journal; 0, or -1 if it did not take it (the caller writes it out). */
static int journal_send(enum gw_level level, const char *line, const struct gw_field *fields,
                        size_t n)
{
    static char entry[ENTRY_BYTES];
    char priority[2] = {(char)('0' + (int)level), '\0'};
    size_t len = 0, i;
    int attempt;

    if (gw_journal_field(entry, sizeof entry, &len, "PRIORITY", priority) != 0 ||
        gw_journal_field(entry, sizeof entry, &len, "SYSLOG_IDENTIFIER", GW_PROG) != 0 ||
        gw_journal_field(entry, sizeof entry, &len, "MESSAGE", line) != 0)
        return -1;
    /* A field that does not fit is left out: the message says it in words already. */
    for (i = 0; i < n; i++)
        if (fields[i].value != NULL)
            (void)gw_journal_field(entry, sizeof entry, &len, fields[i].name, fields[i].value);
    /* A journald that restarted has a new socket: connect once more, then give up. */
    for (attempt = 0; attempt < 2; attempt++) {
        if (journal_fd >= 0 && send(journal_fd, entry, len, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
            return 0;
        if (attempt == 0 && (journal_fd < 0 || errno == ECONNREFUSED || errno == ENOTCONN)) {
            if (journal_fd >= 0)
                close(journal_fd);
            journal_fd = journal_connect();
            continue;
        }
        break;
    }
    return -1;
}

/* "2026-12-01T23:51:36.123+01:00": local time, with its offset. */
static void stamp(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    char zone[8];
    size_t n;

    buf[0] = '\0';
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || localtime_r(&ts.tv_sec, &tm) == NULL)
        return;
    n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    if (n == 0 || strftime(zone, sizeof zone, "%z", &tm) != 5)
        return;
    snprintf(buf + n, len - n, ".%03ld%.3s:%s ", (long)(ts.tv_nsec / 1000000), zone, zone + 3);
}

/* fmt is a printf format for ap: so compilers check the callers' formats, not this one. */
static void vlog(enum gw_level level, const struct gw_field *fields, size_t n, const char *fmt,
                 va_list ap) GW_PRINTF(4, 0);

static void vlog(enum gw_level level, const struct gw_field *fields, size_t n, const char *fmt,
                 va_list ap)
{
    char line[LINE_BYTES], when[48];

    if (level > max_level)
        return;
    if (level == GW_WARN)
        warnings++;
    if (sink == SINK_UNSET)
        choose_sink();
    (void)vsnprintf(line, sizeof line, fmt, ap);
    if (sink == SINK_NATIVE && journal_send(level, line, fields, n) == 0)
        return;
    if (sink != SINK_PLAIN) {
        fprintf(stderr, "<%d>%s\n", (int)level, line);
    } else {
        if (timestamps)
            stamp(when, sizeof when);
        fprintf(stderr, "%s" GW_PROG ": %s%s\n", timestamps ? when : "",
                level == GW_ERR    ? "error: "
                : level == GW_WARN ? "warning: "
                                   : "",
                line);
    }
    fflush(stderr);
}

void gw_log(enum gw_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(level, NULL, 0, fmt, ap);
    va_end(ap);
}

void gw_logf(enum gw_level level, const struct gw_field *fields, size_t n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(level, fields, n, fmt, ap);
    va_end(ap);
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
