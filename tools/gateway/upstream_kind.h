/* SPDX-License-Identifier: ISC */
/*
 * upstream_kind.h - what upstream.c shares with the kinds of upstream
 * (up_plain.c, up_mbsc.c, up_tls.c, up_rtu.c), and nobody else.
 *
 * upstream.c owns the life of a connection: the state, the connect
 * deadline, the backoff, the counters, the TCP connect itself (or the
 * kind's own open, for a serial port) and the descriptor's watch in the
 * loop.  A kind owns what travels on the connected
 * socket: how requests are framed and answers cut out, a handshake if
 * there is one.  It reports back with gw_up_ready(), gw_up_deliver() and
 * gw_up_fail(), and must return at once after gw_up_fail() (the upstream
 * has closed the connection and forgotten the kind's state).
 */
#ifndef MBSC_GATEWAY_UPSTREAM_KIND_H
#define MBSC_GATEWAY_UPSTREAM_KIND_H

#include "loop.h"
#include "outage.h"
#include "rtu_frame.h"
#include "serial_target.h"
#include "upstream.h"

struct gw_up_kind {
    const char *name;
    /* A prefix of targets of this kind that is not part of HOST:PORT ("mbaps://"), or NULL. */
    const char *scheme;
    /*
     * NULL for the kinds that connect over TCP to the target.  Otherwise
     * the kind opens its descriptor itself, without blocking (a serial
     * port): *fd (non-blocking), 0; or -1 with why (the attempt failed and
     * is retried after the backoff).
     */
    int (*open)(struct gw_upstream *u, int *fd, char *why, size_t why_len);
    /*
     * The TCP connection is up on fd (non-blocking, TCP_NODELAY): set up
     * (the mbsc kind starts its handshake; the plain kind is ready at
     * once).  0, or -1 with why.
     */
    int (*connected)(struct gw_upstream *u, char *why, size_t why_len);
    /* What the socket should be watched for now (GW_IO_IN, GW_IO_OUT). */
    unsigned (*events)(const struct gw_upstream *u);
    /* The socket is ready (GW_IO_IN, GW_IO_OUT, GW_IO_ERR). */
    void (*io)(struct gw_upstream *u, unsigned happened);
    /* One ADU to send: MBSC_OK, MBSC_ERR_WOULD_BLOCK.  While u->corked, kept for flush. */
    int (*send)(struct gw_upstream *u, const uint8_t *adu, size_t len);
    /* Optional: send what send kept while corked (the last uncork). */
    void (*flush)(struct gw_upstream *u);
    /* Forget the connection's state (the socket is closed by upstream.c). */
    void (*drop)(struct gw_upstream *u);
    /* What the status view says after the target. */
    void (*describe)(const struct gw_upstream *u, char *buf, size_t len);
    /*
     * Optional: the connect timeout struck after the TCP connection was
     * made (a handshake that never finished): what it most likely means,
     * into buf.  Without it, the log says only that it timed out.
     */
    void (*stalled)(const struct gw_upstream *u, char *buf, size_t len);
};

/* Room for each kind's state, kept inside the upstream (no allocation per connection). */
struct gw_up_plain_state {
    uint8_t in[2 * MBSC_ADU_MAX];
    size_t in_len;
    uint8_t out[64u * MBSC_ADU_MAX]; /* a few answers' worth: in flight is at most 64 */
    size_t out_len;
};

struct gw_up_mbsc_state {
    mbsc_session *s;
    mbsc_link link;
    uint8_t first[8]; /* the first bytes the peer sent, peeked before the session reads them */
    size_t n_first;
};

/* What a serial line has counted, over all the times its port was open. */
struct gw_up_rtu_counts {
    uint64_t requests, answers, timeouts, crc_errors, framing_errors, late, broadcasts;
};

enum gw_up_rtu_phase {
    GW_RTU_IDLE = 0,  /* a request may go */
    GW_RTU_SENDING,   /* the request is being written */
    GW_RTU_WAITING,   /* for the answer, until due_ns */
    GW_RTU_BROADCAST, /* a broadcast is on its way out: its echo goes back at due_ns */
    GW_RTU_REST       /* the line rests until rest_ns (bytes meanwhile are late or noise) */
};

struct gw_up_rtu_state {
    struct gw_serial_target line; /* parsed from the target (its one spelling) */
    int parsed;
    unsigned timeout_ms;             /* the devices' answer time */
    int64_t char_ns, t35_ns, gap_ns; /* a character, t3.5, the silence that ends a frame */
    struct gw_timer *timer;          /* while open: the phase's deadline */
    enum gw_up_rtu_phase phase;
    int after_timeout;       /* the rest follows a timeout: bytes in it are a late answer */
    int late_counted;        /* ... and one has been counted in this rest */
    int room_owed;           /* a send was refused: call gw_up_room when idle */
    uint16_t tid;            /* the request on the line */
    uint8_t req[GW_RTU_MAX]; /* its frame */
    size_t req_len, req_sent;
    uint8_t in[GW_RTU_MAX + 8]; /* the answer so far */
    size_t in_len;
    int64_t due_ns, rest_ns, last_rx_ns;
    uint8_t silent[32]; /* units reported as not answering, until they do */
    int refuse;         /* the broadcast is not a write: exception 01, not sent */
    struct gw_up_rtu_counts n;
    int64_t warn_at;       /* no line about a bad answer before this */
    uint64_t warn_skipped; /* bad answers not logged one by one since the last line */
    char last_error[400];
};

/* The TLS kind's state is allocated per connection (up_tls.c): OpenSSL allocates anyway. */
struct gw_up_tls_state;

struct gw_upstream {
    const struct gw_up_kind *kind;
    struct gw_loop *loop;
    char name[MBSC_ADDRSTRLEN + 256];
    const mbsc_config *cfg; /* the mbsc kind's; NULL for plain */
    struct gw_upstream_settings set;
    struct gw_upstream_hooks h;
    enum gw_up_state state;
    unsigned backoff_ms;
    int64_t attempt_ns; /* when the current or last attempt started */
    int answered;       /* the connection in force has delivered an answer */
    uint64_t connects;
    struct gw_outage outage; /* failed attempts since the last connection, and when to say so */
    char outage_why[256];    /* the cause last logged, to tell a new one */
    int outage_unanswered;   /* the last failure: a connection that ended before its answer */
    mbsc_tcp_connect tc;     /* while the TCP connect is under way */
    int connecting_tcp;
    int fd;          /* the connected socket, or -1 */
    unsigned corked; /* gw_upstream_cork() depth */
    struct gw_watch *watch;
    int watch_fd;           /* the descriptor watch watches */
    struct gw_timer *timer; /* connect deadline, or the end of the backoff */
    union {
        struct gw_up_plain_state plain;
        struct gw_up_mbsc_state mbsc;
        struct gw_up_rtu_state rtu;
        struct gw_up_tls_state *tls;
    } k;
};

/* Kinds report: the connection is ready for requests. */
void gw_up_ready(struct gw_upstream *u);
/* Kinds report: one whole ADU arrived. */
void gw_up_deliver(struct gw_upstream *u, const uint8_t *adu, size_t len);
/* Kinds report: the connection failed (closes it, calls the down hook, plans the next try). */
void gw_up_fail(struct gw_upstream *u, const char *why);
/* Kinds report: a send was refused with MBSC_ERR_WOULD_BLOCK, and now there is room. */
void gw_up_room(struct gw_upstream *u);
/* Kinds report: the request sent with tid gets exception code, and no answer (upstream.h). */
void gw_up_failed(struct gw_upstream *u, uint16_t tid, uint8_t code);
/* Kinds ask: the socket's events may have changed. */
void gw_up_rewatch(struct gw_upstream *u);

#endif /* MBSC_GATEWAY_UPSTREAM_KIND_H */
