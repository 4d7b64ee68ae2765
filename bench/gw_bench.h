/* SPDX-License-Identifier: ISC */
/*
 * gw_bench.h - what the parts of mbsc-gateway-bench (make bench-gateway)
 * share: the paths a request can take to the PLC, the processes on each
 * path and their counters, and the CSV rows they all write.
 *
 * gw_main.c opens the paths and times them in interleaved rounds;
 * gw_relays.c starts the haproxy and stunnel pairs; gw_counters.c reads
 * what each process did per request; gw_load.c drives many masters;
 * gw_serial.c times a serial line.  Everything goes to one CSV (csv.h).
 */
#ifndef MBSC_BENCH_GW_BENCH_H
#define MBSC_BENCH_GW_BENCH_H

#include <stdio.h>
#include <sys/types.h>

#include "gw_harness.h"
#include "mbsc.h"

#define GW_PROG        "mbsc-gateway-bench"
#define GW_MAX_MASTERS 1000
#define GW_MAX_PROCS   2 /* processes between the client and the PLC on one path */

/* One process of a path and what it did per request. */
struct gw_proc {
    char name[24]; /* "server-gw", "haproxy-client", ... */
    pid_t pid;
    double vol, invol; /* counters when the timed rounds began */
    double syscalls;   /* strace's count over the counted run, -1 if none */
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
    int n_gw;
    pid_t relay[2];
    int n_relay;
    struct gw_proc proc[GW_MAX_PROCS];
    int n_proc;
    double *t; /* round trips in us */
    int n;
};

/* Shared state: the key files' directory and the keys every path uses. */
extern char gw_dir[64];
extern mbsc_keypair gw_server_kp, gw_client_kp, gw_masters_kp[GW_MAX_MASTERS];

const char *gw_file(const char *name); /* gw_dir/name, in one of a few static buffers */
void gw_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
double gw_now_us(void);
void gw_sort(double *v, size_t n);
/* The nearest-rank quantile q (0.5, 0.99) of n sorted values. */
double gw_quantile(const double *sorted, size_t n, double q);

/* gw_main.c: one read of 10 holding registers on the path, or the end of the bench. */
void gw_read10(struct gw_path *p);
modbus_t *gw_plain(const char *hostport);
modbus_t *gw_secure(const char *hostport, const mbsc_keypair *kp, const char *cipher);
/* A server gateway in front of plc_port; extra args (NULL-terminated) after the usual ones. */
void gw_start_server(struct gwp *g, const char *program, int plc_port, const char *const *extra);

/* gw_relays.c: a pair of relays in front of plc_port; 0 with the client-side address, or -1 and
 * why. */
int gw_haproxy_pair(struct gw_path *p, int plc_port, char *addr, size_t len, char *why,
                    size_t why_len);
int gw_stunnel_pair(struct gw_path *p, const char *certs, const char *suite, int plc_port,
                    char *addr, size_t len, char *why, size_t why_len);
void gw_relays_stop(struct gw_path *p);

/* gw_counters.c */
void gw_counters_start(struct gw_path *p);
void gw_counters_csv(const struct gw_path *p, FILE *csv);
/* strace -c -f on each process of p over n more requests; 0, or -1 if strace cannot run. */
int gw_strace_run(struct gw_path *p, int n);

/* gw_load.c: requests/s through one server gateway with 1, 50 and 1000 masters. */
void gw_load_rows(const char *const *programs, int n_prog, int seconds, FILE *csv);

/* gw_serial.c: the serial line rows (socat's pty pair). */
void gw_serial_rows(int count, FILE *csv);

#endif /* MBSC_BENCH_GW_BENCH_H */
