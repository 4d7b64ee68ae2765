/* SPDX-License-Identifier: ISC */
/*
 * gw_bench.h - what the parts of mbsc-gateway-bench (make bench-gateway)
 * share: the paths a request can take to the PLC, the processes on each
 * path and their counters, and the helpers every part uses.
 *
 * gw_main.c opens the paths and times them; gw_relays.c starts the haproxy
 * and stunnel pairs; gw_counters.c reads what each process did per
 * request; gw_load.c drives many masters; gw_serial.c times a serial line;
 * gw_tls.c is the Modbus/TCP Security master (with OpenSSL only);
 * gw_common.c and common.c are below them all.
 */
#ifndef MBSC_BENCH_GW_BENCH_H
#define MBSC_BENCH_GW_BENCH_H

#include <stdio.h>
#include <sys/types.h>

#include "common.h"
#include "gw_harness.h"
#include "mbsc.h"

#define GW_MAX_MASTERS 1000
#define GW_ROUNDS      10 /* round trips are timed in this many interleaved rounds */

/* One process between the client and the PLC, and what it did per request. */
struct gw_proc {
    char name[24]; /* "server-gw", "haproxy-client", ... */
    pid_t pid;
    double ctxsw[2]; /* voluntary and involuntary context switches when the timed rounds began */
};

struct tls_client;

struct gw_path {
    char name[40]; /* the CSV subject: direct, gw1-chacha20, haproxy-pair, ... */
    char desc[96]; /* what the path is, for the tables */
    modbus_t *ctx; /* plain libmodbus or mbsc_modbus_connect (is_mbsc) */
    int is_mbsc;
    struct tls_client *tls; /* instead of ctx: a Modbus/TCP Security master */
    struct plc plc;         /* every path has its own PLC and processes */
    struct gwp gw[2];
    int n_gw, n_relay; /* the last n_relay processes are relays, not gateways */
    struct gw_proc proc[2];
    int n_proc;
    struct bench_samples t; /* round trips in us (gw_rtt_csv frees them) */
    int n;                  /* round trips timed */
};

/* gw_common.c: the key files' directory and the keys every path uses. */
extern char gw_dir[64];
extern mbsc_keypair gw_server_kp, gw_masters_kp[GW_MAX_MASTERS];

const char *gw_file(const char *name); /* gw_dir/name, in one of a few static buffers */
/* A process of p, named for the tables by name up to its first '.' (a relay's
 * configuration file carries the suite, as two stunnel pairs run at once). */
void gw_add_proc(struct gw_path *p, const char *name, pid_t pid);
double gw_now_us(void);
/* Run argv, gone with the bench, its output to log (NULL: inherited); its pid or -1. */
pid_t gw_exec(const char *const *argv, const char *log);
/* Poll ready(arg) for up to 10 s while pid (if > 0) runs: 1 once it holds, else 0. */
int gw_wait_for(int (*ready)(const void *), const void *arg, pid_t pid);
/* One read of 10 holding registers on the path, or the end of the bench. */
void gw_read10(struct gw_path *p);
void gw_rtt_csv(struct gw_path *p, FILE *csv); /* rtt_us_p50 and rtt_us_p99 rows */
modbus_t *gw_plain(const char *hostport);
modbus_t *gw_secure(const char *hostport, const mbsc_keypair *kp, const char *cipher);
/* A server gateway in front of plc_port; extra args (NULL-terminated) after the usual ones. */
void gw_start_server(struct gwp *g, const char *program, int plc_port, const char *const *extra);

/* gw_relays.c: a pair of relays in front of the path's PLC; 0 with the client-side
 * address in addr, or -1 and why.  suite NULL: haproxy, else stunnel with that suite. */
int gw_relay_pair(struct gw_path *p, const char *certs, const char *suite, char *addr, size_t len,
                  char *why, size_t why_len);

/* gw_counters.c: the counters of p's processes when the timed rounds begin,
 * and their rows per request at the end; the system calls rows of strace -c
 * -f on each process of p over n more requests (0, or -1 if strace cannot run). */
void gw_counters_start(struct gw_path *p);
void gw_counters_csv(const struct gw_path *p, FILE *csv);
/* 100 untimed requests on each path, its counters started, then
 * count/GW_ROUNDS on each in every round. */
void gw_time(struct gw_path *p, int n, int count);
int gw_strace_csv(struct gw_path *p, int n, FILE *csv);

/* gw_load.c: requests/s through one server gateway with 1, 50 and 1000 masters. */
void gw_load_rows(const char *const *programs, int n_prog, int seconds, FILE *csv);

/* gw_serial.c: the serial line rows (socat's pty pair). */
void gw_serial_rows(int count, FILE *csv);

/* gw_tls.c (with OpenSSL): tests/tls_certs.sh's certificates into dir (a CA,
 * "gateway" for 127.0.0.1, "operator" with the role operator), a TLS 1.3
 * master as "operator", one read of 10 registers, and the address a gateway
 * prints with --listen-tls; each 0, or -1 with why. */
int gw_tls_certs(const char *srcdir, const char *dir, char *why, size_t why_len);
int gw_tls_master(struct tls_client *c, const char *dir, const char *hostport, char *why,
                  size_t why_len);
int gw_tls_read10(struct tls_client *c, char *why, size_t why_len);
int gw_tls_address(struct gwp *g, char *addr, size_t len);

#endif /* MBSC_BENCH_GW_BENCH_H */
