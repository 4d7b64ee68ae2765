/* SPDX-License-Identifier: ISC */
/*
 * upstream.h - one connection behind the gateway, whatever its kind.
 *
 * The multiplexer (mux.h) sees only this interface: a state, a send, and
 * three hooks (an answer came, the connection is ready, it ended).  What
 * moves the bytes is the upstream's kind (upstream_kind.h): plain
 * Modbus/TCP to a PLC (up_plain.c), an mbsc session to a server gateway
 * or a secure slave (up_mbsc.c), Modbus/TCP Security to a device that
 * speaks TLS (up_tls.c), or a Modbus RTU serial line (up_rtu.c); another
 * kind plugs in here without touching the loop or the multiplexer.
 *
 * Every upstream connects without blocking, under a deadline, and is made
 * again after it ends: at once if it had carried answers (a PLC closed an
 * idle connection), otherwise after a backoff that doubles from 100 ms up
 * to the configured ceiling, counted from the start of the failed attempt.
 * It registers its own descriptor and timers with the loop, and logs its
 * life: a connection made, lost, or not made (outage.h says how often).
 */
#ifndef MBSC_GATEWAY_UPSTREAM_H
#define MBSC_GATEWAY_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include <mbsc.h>

struct gw_loop;

enum gw_up_state {
    GW_UP_IDLE = 0,   /* not connected, may connect now */
    GW_UP_CONNECTING, /* connect (and handshake) under way */
    GW_UP_READY,      /* requests may go */
    GW_UP_BACKOFF     /* a connection failed: wait, then try again */
};

struct gw_upstream;

struct gw_upstream_hooks {
    void *user;
    /* One whole ADU from upstream (framing checked, not its meaning). */
    void (*answer)(void *user, const uint8_t *adu, size_t len);
    /* The connection is ready. */
    void (*up)(void *user);
    /* The connection ended (was_ready: it had been ready) or could not be made. */
    void (*down)(void *user, int was_ready, const char *why);
    /* There is room to send again after gw_upstream_send said MBSC_ERR_WOULD_BLOCK. */
    void (*room)(void *user);
    /*
     * The request sent with transaction id tid will not be answered and no
     * answer to it will come (a serial line's device did not answer in
     * time, or answered with a bad CRC): answer its requester with
     * exception code.  NULL: the kinds that never say so.
     */
    void (*failed)(void *user, uint16_t tid, uint8_t code);
    /*
     * Around the hooks one event of the connection calls (a read may bring
     * several answers): begin before the first, end after the last, once
     * what the hooks sent meanwhile has left (gw_upstream_cork).  The
     * multiplexer answers its requesters at end, so that the next requests
     * are on their way to the PLC first.  NULL: nothing to do.
     */
    void (*begin)(void *user);
    void (*end)(void *user);
};

struct gw_tls;

struct gw_upstream_settings {
    unsigned connect_timeout_ms; /* TCP connect and handshake; also TCP_USER_TIMEOUT */
    unsigned backoff_max_ms;     /* ceiling of the wait between attempts */
    unsigned request_timeout_ms; /* a serial line's answer timeout unless its target sets one */
    const struct gw_tls *tls;    /* mbaps:// targets: the upstream-tls files (tls_conf.h) */
};

/* What moves the bytes (upstream_kind.h); up_kinds.h says which kind a target takes. */
struct gw_up_kind;

/*
 * An upstream of kind to target ("HOST:PORT", "rtu:..."); cfg is the mbsc kind's
 * config (borrowed until gw_upstream_set_config replaces it for the next
 * connection), NULL for the others.  It starts connecting in the loop's
 * next turn.  NULL with why when out of memory.
 */
struct gw_upstream *gw_upstream_new(struct gw_loop *loop, const struct gw_up_kind *kind,
                                    const char *target, const mbsc_config *cfg,
                                    const struct gw_upstream_settings *s,
                                    const struct gw_upstream_hooks *hooks, char *why,
                                    size_t why_len);
/* Close and free, without calling the hooks; NULL is allowed. */
void gw_upstream_free(struct gw_upstream *u);
void gw_upstream_set_config(struct gw_upstream *u, const mbsc_config *cfg);
/* The TLS files of the next connection (a reload); borrowed like cfg. */
void gw_upstream_set_tls(struct gw_upstream *u, const struct gw_tls *tls);
enum gw_up_state gw_upstream_state(const struct gw_upstream *u);
/* The target as configured. */
const char *gw_upstream_name(const struct gw_upstream *u);
/* "plain Modbus/TCP", "mbsc with chacha20", "mbsc": for the status view. */
void gw_upstream_describe(const struct gw_upstream *u, char *buf, size_t len);
/* Connections that became ready so far. */
uint64_t gw_upstream_connects(const struct gw_upstream *u);
/* Attempts that failed so far, and since the last connection (0 while it is up). */
uint64_t gw_upstream_failures(const struct gw_upstream *u);
uint64_t gw_upstream_failures_in_a_row(const struct gw_upstream *u);
/* How long the attempts have been failing (0 when they are not), in nanoseconds. */
int64_t gw_upstream_outage_ns(const struct gw_upstream *u, int64_t now_ns);

/*
 * Queue one ADU (state READY).  MBSC_OK (taken; a failure of the
 * connection that follows is reported through the down hook),
 * MBSC_ERR_WOULD_BLOCK when there is no room now (the upstream calls the
 * room hook once there is), MBSC_ERR_STATE when not ready.
 */
int gw_upstream_send(struct gw_upstream *u, const uint8_t *adu, size_t len);
/*
 * Between cork and the matching uncork (they nest), what gw_upstream_send
 * takes waits in the connection's buffer, and the outermost uncork sends
 * it with one system call: requests the multiplexer pumps in one go, e.g.
 * after one read brought several answers, leave in one segment.  Kinds
 * without a buffer of their own (serial lines, TLS) send at once anyway.
 */
void gw_upstream_cork(struct gw_upstream *u);
void gw_upstream_uncork(struct gw_upstream *u);
/* Drop the connection now (why for the log); the down hook runs. */
void gw_upstream_reset(struct gw_upstream *u, const char *why);

#endif /* MBSC_GATEWAY_UPSTREAM_H */
