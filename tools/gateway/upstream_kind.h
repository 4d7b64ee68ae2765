/* SPDX-License-Identifier: ISC */
/*
 * upstream_kind.h - what upstream.c shares with the kinds of upstream
 * (up_plain.c, up_mbsc.c, up_tls.c), and nobody else.
 *
 * upstream.c owns the life of a connection: the state, the connect
 * deadline, the backoff, the counters, the TCP connect itself and the
 * socket's watch in the loop.  A kind owns what travels on the connected
 * socket: how requests are framed and answers cut out, a handshake if
 * there is one.  It reports back with gw_up_ready(), gw_up_deliver() and
 * gw_up_fail(), and must return at once after gw_up_fail() (the upstream
 * has closed the connection and forgotten the kind's state).
 */
#ifndef MBSC_GATEWAY_UPSTREAM_KIND_H
#define MBSC_GATEWAY_UPSTREAM_KIND_H

#include "loop.h"
#include "upstream.h"

struct gw_up_kind {
    const char *name;
    /* A prefix of targets of this kind that is not part of HOST:PORT ("mbaps://"), or NULL. */
    const char *scheme;
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
    /* One ADU to send: MBSC_OK, MBSC_ERR_WOULD_BLOCK. */
    int (*send)(struct gw_upstream *u, const uint8_t *adu, size_t len);
    /* Forget the connection's state (the socket is closed by upstream.c). */
    void (*drop)(struct gw_upstream *u);
    /* What the status view says after the target. */
    void (*describe)(const struct gw_upstream *u, char *buf, size_t len);
};

/* Room for either kind's state, kept inside the upstream (no allocation per connection). */
struct gw_up_plain_state {
    uint8_t in[2 * MBSC_ADU_MAX];
    size_t in_len;
    uint8_t out[64u * MBSC_ADU_MAX]; /* a few answers' worth: in flight is at most 64 */
    size_t out_len;
};

struct gw_up_mbsc_state {
    mbsc_session *s;
    mbsc_link link;
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
    mbsc_tcp_connect tc; /* while the TCP connect is under way */
    int connecting_tcp;
    int fd; /* the connected socket, or -1 */
    struct gw_watch *watch;
    int watch_fd;           /* the descriptor watch watches */
    struct gw_timer *timer; /* connect deadline, or the end of the backoff */
    union {
        struct gw_up_plain_state plain;
        struct gw_up_mbsc_state mbsc;
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
/* Kinds ask: the socket's events may have changed. */
void gw_up_rewatch(struct gw_upstream *u);

#endif /* MBSC_GATEWAY_UPSTREAM_KIND_H */
