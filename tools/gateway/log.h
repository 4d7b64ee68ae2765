/* SPDX-License-Identifier: ISC */
/*
 * log.h - the gateway's log lines, and its word to systemd.
 */
#ifndef MBSC_GATEWAY_LOG_H
#define MBSC_GATEWAY_LOG_H

#include "gw.h"

enum gw_level { GW_ERR = 3, GW_WARN = 4, GW_INFO = 6, GW_DEBUG = 7 };

/*
 * One line on stderr.  Under systemd (JOURNAL_STREAM set) it starts with
 * the syslog level as "<N>" (sd-daemon(3)), which journald strips and
 * keeps as the priority; otherwise with "mbsc-gateway: " and, for errors
 * and warnings, "error: " / "warning: ".
 */
void gw_log(enum gw_level level, const char *fmt, ...) GW_PRINTF(2, 3);

/* Debug lines are dropped unless this is set (--verbose). */
void gw_log_set_verbose(int on);

/*
 * Tell systemd (sd_notify protocol, sd_notify(3)): one datagram with text
 * to the AF_UNIX socket named by $NOTIFY_SOCKET ("@..." is an abstract
 * socket).  Nothing happens when the variable is not set.
 */
void gw_notify(const char *text);

#endif /* MBSC_GATEWAY_LOG_H */
