/* SPDX-License-Identifier: ISC */
/*
 * log.h - the gateway's log lines, and its word to systemd.
 */
#ifndef MBSC_GATEWAY_LOG_H
#define MBSC_GATEWAY_LOG_H

#include <stddef.h>

#include "gw.h"
#include "journal.h"

enum gw_level { GW_ERR = 3, GW_WARN = 4, GW_INFO = 6, GW_DEBUG = 7 };

/*
 * One log entry.  Where it goes is decided once, at the first entry:
 *
 *  - under systemd, when $JOURNAL_STREAM names the device and inode of our
 *    stderr (systemd.exec(5): so a program knows its stderr is the
 *    journal's), to journald in its native protocol (journal.h), with the
 *    priority, "mbsc-gateway" as SYSLOG_IDENTIFIER and the entry's fields
 *    (MBSC_MASTER=, MBSC_REASON=, ...), which journalctl can filter on;
 *    if the journal's socket cannot be reached, on stderr starting with
 *    the priority as "<N>" (sd-daemon(3)), which journald keeps as the
 *    line's priority;
 *  - anywhere else, on stderr as "mbsc-gateway: " and, for errors and
 *    warnings, "error: " / "warning: "; a running gateway
 *    (gw_log_set_timestamps) puts the local time before each line.
 *
 * Entries above the level set by gw_log_set_level() are dropped.
 */
void gw_log(enum gw_level level, const char *fmt, ...) GW_PRINTF(2, 3);
/* The same with journal fields (n of them); off the journal they are not written. */
void gw_logf(enum gw_level level, const struct gw_field *fields, size_t n, const char *fmt, ...)
    GW_PRINTF(4, 5);

/* The most detailed level logged (default GW_INFO; --verbose and log-level = debug: GW_DEBUG). */
void gw_log_set_level(enum gw_level level);
/* "debug", "info", "warning" (also "warn"), "error"; 0, or -1 for another word. */
int gw_log_level_parse(const char *word, enum gw_level *level);
const char *gw_log_level_name(enum gw_level level);

/* Warnings logged so far (--check counts them in its verdict). */
unsigned gw_log_warnings(void);

/* A running gateway: time stamps on lines that do not go to the journal. */
void gw_log_set_timestamps(int on);

/*
 * Tell systemd (sd_notify protocol, sd_notify(3)): one datagram with text
 * to the AF_UNIX socket named by $NOTIFY_SOCKET ("@..." is an abstract
 * socket).  Nothing happens when the variable is not set.
 */
void gw_notify(const char *text);

#endif /* MBSC_GATEWAY_LOG_H */
