/* SPDX-License-Identifier: ISC */
/*
 * tls_admission.h - who gets a connection slot on a listener of the
 * gateway's own (tls_admission.c): the TLS listener of Modbus/TCP
 * Security masters (tls_masters.c) today.
 *
 * The same budgets, in the same words, as the library's mbsc_server
 * (mbsc/server.h, "Availability"), so that a stranger flooding the TLS
 * port gets what one flooding the mbsc port gets, and the masters that
 * complete their handshake are served meanwhile:
 *   - at most max_unconfirmed connections whose handshake is not complete;
 *     a newcomer that finds them full takes the place of the oldest (the
 *     oldest that has not got past its first message first), so a flood
 *     of connections that never finish cannot lock out one that does;
 *   - at most max_per_address of those from one source address;
 *   - at most max_connections in all, below RLIMIT_NOFILE minus
 *     MBSC_SERVER_FD_RESERVE; when full, the newcomer takes the oldest
 *     unconfirmed connection's place, or is refused; a confirmed
 *     connection is never closed for an unconfirmed one;
 *   - a handshake deadline;
 *   - out of descriptors (EMFILE, ENFILE): a reserve descriptor is closed
 *     to accept the waiting client and close it at once, then reopened;
 *   - refusals are counted by reason and logged as one line per interval
 *     (the first at once after a quiet interval), with a few detail lines
 *     (a refused certificate's subject) per interval at most.
 *
 * Nothing here knows TLS: a connection is "unconfirmed" until its owner
 * calls gw_adm_confirm().  The layer could serve any protocol the gateway
 * adds; the library has the same rules inside mbsc_server, and a generic
 * form of them would belong in it (noted in docs/tls.md).
 *
 * Ownership: the caller's connection record holds a struct gw_adm_conn.
 * The admission calls the caller back to open a record for an accepted
 * socket and to end one (evicted, timed out); the caller closes and frees
 * its records itself, at the end of the loop's turn (loop.h).
 */
#ifndef MBSC_GATEWAY_TLS_ADMISSION_H
#define MBSC_GATEWAY_TLS_ADMISSION_H

#include <stddef.h>
#include <stdint.h>

#include <mbsc.h>

#include "loop.h"

struct gw_adm_limits {
    unsigned max_connections; /* 0: 1024 */
    unsigned max_unconfirmed; /* 0: 64 (never above max_connections) */
    unsigned max_per_address; /* 0: 4 */
    unsigned handshake_ms;    /* 0: 2000 */
    unsigned log_interval_ms; /* 0: 10000 */
};

/* The admission's part of a connection record (the caller's). */
struct gw_adm_conn {
    struct gw_adm_conn *prev, *next; /* unconfirmed connections, oldest first */
    int64_t due_ns;                  /* its handshake deadline */
    uint8_t ip[16];                  /* the source address, without the port */
    uint8_t ip_len;
    uint8_t progressed; /* got past its first message */
    uint8_t state;      /* private */
    char peer[MBSC_ADDRSTRLEN];
};

struct gw_adm_ops {
    void *user;
    /*
     * A connection was accepted on fd (non-blocking, close-on-exec,
     * TCP_NODELAY) from peer: the caller's record for it, with its
     * struct gw_adm_conn, or NULL if it cannot take it (it closes fd).
     */
    struct gw_adm_conn *(*open)(void *user, int fd, const char *peer);
    /* End c now (evicted for a newcomer, or its handshake deadline): close and free it later. */
    void (*end)(void *user, struct gw_adm_conn *c, const char *why);
    /* One line for the operator's log. */
    void (*log)(void *user, const char *line);
};

struct gw_adm;

/*
 * Accept connections on the listening socket lfd (non-blocking; still
 * the caller's to close) in loop, under limits, for ops; what names the
 * listener in the log ("TLS").  NULL with why.
 */
struct gw_adm *gw_adm_new(struct gw_loop *loop, int lfd, const struct gw_adm_limits *limits,
                          const struct gw_adm_ops *ops, const char *what, char *why,
                          size_t why_len);
void gw_adm_free(struct gw_adm *a);
/* Accept no more (a stop, SIGTERM): the listener is no longer watched. */
void gw_adm_stop(struct gw_adm *a);

/* c got past its first message (prefer others for eviction). */
void gw_adm_progressed(struct gw_adm *a, struct gw_adm_conn *c);
/* c completed its handshake: it is no longer subject to the unconfirmed budgets. */
void gw_adm_confirm(struct gw_adm *a, struct gw_adm_conn *c);
/* c, still unconfirmed, is refused (reason: a static string, counted and logged). */
void gw_adm_refuse(struct gw_adm *a, struct gw_adm_conn *c, const char *reason);
/* c is closed (confirmed, or ended through ops.end): forget it. */
void gw_adm_closed(struct gw_adm *a, struct gw_adm_conn *c);
/* A detail line (a refused certificate's subject), logged only a few per interval. */
void gw_adm_detail(struct gw_adm *a, const char *line);

/* Counters, for the status view. */
struct gw_adm_stats {
    unsigned connections, unconfirmed;
    uint64_t accepted, confirmed, refused;
};
void gw_adm_get_stats(const struct gw_adm *a, struct gw_adm_stats *st);
unsigned gw_adm_max_connections(const struct gw_adm *a);

#endif /* MBSC_GATEWAY_TLS_ADMISSION_H */
