/* SPDX-License-Identifier: ISC */
/*
 * gw_harness.h - a PLC and gateway processes for the gateway's tests
 * (check_gateway.c) and its benchmark (bench/gateway_bench.c).
 *
 *  - struct plc: a plain libmodbus Modbus/TCP server in a thread on
 *    127.0.0.1 (port 0 picks one), one connection at a time, 100 items of
 *    each table, with faults on demand (silent, malformed answers);
 *  - struct gwp: a program (mbsc-gateway, or gw_program) run as a child
 *    process, under $TEST_RUNNER in cross builds, with its "listening on"
 *    line read and its log (stderr) searchable, so that callers wait for
 *    events instead of sleeping.
 */
#ifndef MBSC_TEST_GW_HARNESS_H
#define MBSC_TEST_GW_HARNESS_H

#include <modbus.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mbsc.h"

#define WAIT_MS 10000 /* longest wait for anything that should happen at once */

/* PLC_HOLD: keep the next request unanswered until plc_release(). */
enum plc_fault { PLC_OK = 0, PLC_SILENT, PLC_MANGLE, PLC_HOLD };

struct plc {
    modbus_t *ctx;
    modbus_mapping_t *map;
    int lfd, port;
    int stop[2];
    int wake[2];            /* plc_release() wakes the thread */
    pthread_cond_t held_cv; /* signalled when a request is held */
    int held;               /* requests held so far (under mu) */
    pthread_t th;
    pthread_mutex_t mu;
    int accepts;          /* TCP connections accepted (under mu) */
    enum plc_fault fault; /* under mu */
    unsigned served;      /* requests answered (under mu) */
    int any_address;      /* listen on 0.0.0.0 instead of 127.0.0.1 */
    int conn_fd;          /* the connection, -1 if none (under mu) */
};

/* Start on 127.0.0.1:port (0: any; 0.0.0.0 with any_address), keeping p->map if set; 0 or -1. */
int plc_start(struct plc *p, int port);
/* Stop: listener and connection closed, as a PLC that is switched off. */
void plc_stop(struct plc *p);
void plc_free(struct plc *p);
uint16_t plc_register(struct plc *p, int addr);
void plc_set_register(struct plc *p, int addr, uint16_t v);
int plc_accepts(struct plc *p);
void plc_set_fault(struct plc *p, enum plc_fault f);
/* Wait up to timeout_ms until a request is held (PLC_HOLD): 1, else 0. */
int plc_wait_held(struct plc *p, int timeout_ms);
/* Answer the held request and go back to PLC_OK. */
void plc_release(struct plc *p);
/* Wait up to timeout_ms until bytes of a further request wait on the connection: 1, else 0. */
int plc_wait_queued(struct plc *p, int timeout_ms);

struct gwp {
    pid_t pid;
    int out_fd, err_fd;
    char addr[MBSC_ADDRSTRLEN];
    char log[1 << 16];
    size_t log_len, mark;
};

/* The program gw_spawn runs, relative to $top_builddir (or an absolute path). */
extern const char *gw_program;
/* Set: the child's $JOURNAL_STREAM names its stderr, as under systemd with the journal. */
extern int gw_journal_stream;
const char *gateway_path(void);

/*
 * Run "mbsc-gateway status ARGS" (under $TEST_RUNNER); its output, stderr
 * included, in out; its exit status, or -1 if it could not run or did not
 * exit.
 */
int gw_run_status(const char *args, char *out, size_t len);

/* Start the program with args (NULL-terminated); 1 once it listens, else 0. */
int gw_spawn(struct gwp *g, const char *const *args);
/* Read its log for up to timeout_ms: 1 got some, 0 nothing, -1 closed. */
int read_log(struct gwp *g, int timeout_ms);
/* Wait (WAIT_MS at most) until the log after the mark holds needle; the mark moves past it. */
int wait_log(struct gwp *g, const char *needle);
/* Send sig (0: none), wait for the exit: its status, or 128 + signal. */
int gw_finish(struct gwp *g, int sig);

#endif /* MBSC_TEST_GW_HARNESS_H */
