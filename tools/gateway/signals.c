/* SPDX-License-Identifier: ISC */
/*
 * signals.c - signals into the poll() loop through a self-pipe.
 *
 * A handler may only do async-signal-safe things: it sets a bit and writes
 * one byte to a non-blocking pipe, whose read end the loop polls.  A full
 * pipe already wakes the loop, so a lost byte loses nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "signals.h"

static int pipe_fds[2] = {-1, -1};
static volatile sig_atomic_t pending_reload, pending_stop, pending_status;

static void on_signal(int sig)
{
    int saved = errno;
    char b = 0;

    if (sig == SIGHUP)
        pending_reload = 1;
    else if (sig == SIGUSR1)
        pending_status = 1;
    else
        pending_stop = 1;
    if (write(pipe_fds[1], &b, 1) < 0) {
        /* Full: the loop is woken already. */
    }
    errno = saved;
}

int gw_signals_init(void)
{
    static const int sigs[] = {SIGHUP, SIGTERM, SIGINT, SIGUSR1};
    struct sigaction sa;
    size_t i;

    if (pipe(pipe_fds) != 0) {
        gw_log(GW_ERR, "pipe: %s", strerror(errno));
        return -1;
    }
    for (i = 0; i < 2; i++) {
        int fl = fcntl(pipe_fds[i], F_GETFL);

        if (fl < 0 || fcntl(pipe_fds[i], F_SETFL, fl | O_NONBLOCK) != 0 ||
            fcntl(pipe_fds[i], F_SETFD, FD_CLOEXEC) != 0) {
            gw_log(GW_ERR, "fcntl: %s", strerror(errno));
            return -1;
        }
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        if (sigaction(sigs[i], &sa, NULL) != 0) {
            gw_log(GW_ERR, "sigaction: %s", strerror(errno));
            return -1;
        }
    }
    /* A peer that hangs up must give an error we handle, not kill us. */
    sa.sa_handler = SIG_IGN;
    (void)sigaction(SIGPIPE, &sa, NULL);
    return 0;
}

int gw_signals_fd(void)
{
    return pipe_fds[0];
}

unsigned gw_signals_take(void)
{
    char buf[64];
    unsigned got = 0;

    while (read(pipe_fds[0], buf, sizeof buf) > 0) {
    }
    if (pending_reload) {
        pending_reload = 0;
        got |= GW_SIG_RELOAD;
    }
    if (pending_stop) {
        pending_stop = 0;
        got |= GW_SIG_STOP;
    }
    if (pending_status) {
        pending_status = 0;
        got |= GW_SIG_STATUS;
    }
    return got;
}
