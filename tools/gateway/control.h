/* SPDX-License-Identifier: ISC */
/*
 * control.h - the status view (control.c): a UNIX control socket
 * (--control PATH) served by the event loop, the "mbsc-gateway status
 * --control PATH [--json | --prometheus]" command that reads it, and the
 * same text in the log on SIGUSR1.
 */
#ifndef MBSC_GATEWAY_CONTROL_H
#define MBSC_GATEWAY_CONTROL_H

#include <stddef.h>
#include <stdio.h>

#include "loop.h"
#include "status_fmt.h"

/*
 * Writes the status to out in form fmt: text lines ('\n'-terminated),
 * one JSON object, or Prometheus families (status_fmt.h).
 */
typedef void (*gw_status_fn)(void *user, enum gw_status_format fmt, FILE *out);

struct gw_control;

/*
 * Control clients are served from the loop without blocking it: at most
 * GW_CONTROL_MAX_CLIENTS at once (the socket is not read while they are
 * there), each closed GW_CONTROL_DEADLINE_MS after it was accepted,
 * answered or not.
 */
#define GW_CONTROL_MAX_CLIENTS 4u
#define GW_CONTROL_DEADLINE_MS 1000

/*
 * Listen on path (mode 0600) and serve the status from fn(user) in loop;
 * NULL and why on failure.  A socket another gateway listens on is an
 * error (that gateway keeps it); only a socket nobody listens on, left by
 * a gateway that was killed, is replaced.
 */
struct gw_control *gw_control_open(struct gw_loop *loop, const char *path, gw_status_fn fn,
                                   void *user, char *why, size_t why_len);
/*
 * --check: could a gateway take path for its socket?  0 yes; 1 its
 * directory does not exist yet (why: a warning, since systemd creates the
 * unit's runtime directory only at start); -1 no (why: its length, a
 * directory this user cannot write, a file that is not a socket).
 */
int gw_control_path_check(const char *path, char *why, size_t why_len);
/* Close the clients and the socket, and remove it; NULL is allowed. */
void gw_control_close(struct gw_control *c);
/* SIGUSR1: the same lines in the log, each after "status: ". */
void gw_status_log(gw_status_fn fn, void *user);
/* "mbsc-gateway status --control PATH [--json|--prometheus]": print it; an exit status. */
int gw_status_command(int argc, char **argv);

#endif /* MBSC_GATEWAY_CONTROL_H */
