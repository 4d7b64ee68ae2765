/* SPDX-License-Identifier: ISC */
/*
 * signals.h - SIGHUP, SIGTERM, SIGINT and SIGUSR1 into the event loop,
 * through a self-pipe (the handler only sets a bit and writes a byte).
 */
#ifndef MBSC_GATEWAY_SIGNALS_H
#define MBSC_GATEWAY_SIGNALS_H

#define GW_SIG_RELOAD 0x1u /* SIGHUP */
#define GW_SIG_STOP   0x2u /* SIGTERM, SIGINT */
#define GW_SIG_STATUS 0x4u /* SIGUSR1 */

/* Install the handlers (and ignore SIGPIPE); -1 on failure with a log line. */
int gw_signals_init(void);
/* The read end of the self-pipe: readable when a signal came. */
int gw_signals_fd(void);
/* The signals that came since the last call (GW_SIG_* bits); empties the pipe. */
unsigned gw_signals_take(void);

#endif /* MBSC_GATEWAY_SIGNALS_H */
