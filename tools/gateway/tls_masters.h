/* SPDX-License-Identifier: ISC */
/*
 * tls_masters.h - Modbus/TCP Security masters (tls_masters.c): the TLS
 * listener of server mode, beside the mbsc one (--listen-tls).
 *
 * MB-TCP-Security v36: the unchanged MBAP ADU inside TLS 1.2 or 1.3 (R-01,
 * R-34), mutual authentication mandatory: a client without a
 * certificate gets a fatal alert and its connection is
 * closed and counted; the chain is verified against --tls-ca; the role is
 * the certificate's extension (tls_role.h, R-21 to R-23).  A master whose
 * handshake completed is "a TLS master": its requests go to the request
 * hook, which decides (shape, policy, route: server_mode.c, the same order
 * as for mbsc masters) and answers through gw_tls_masters_reply().
 *
 * Connections are admitted under the budgets of tls_admission.h.  Each
 * master may have up to max_queue requests unanswered (Modbus/TCP clients
 * may send the next request before the answer); beyond that it is not
 * read until answers have gone.  Everything runs in the gateway's loop;
 * no call blocks.
 */
#ifndef MBSC_GATEWAY_TLS_MASTERS_H
#define MBSC_GATEWAY_TLS_MASTERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "loop.h"
#include "tls_conf.h"

/* Origins of TLS masters (mux.h) have this bit; the gateway gives mbsc masters origins without. */
#define GW_TLS_ORIGIN_BIT ((uint64_t)1 << 63)

struct gw_tls_master_info {
    uint64_t origin;     /* for the routes (mux.h) */
    uint64_t group;      /* the multiplexer's share: one per certificate key */
    const char *subject; /* the certificate's subject, RFC 2253 form */
    const char *role;    /* NULL: the certificate has no role */
    const char *peer;    /* "HOST:PORT" */
};

struct gw_tls_master_hooks {
    void *user;
    /*
     * One request (a whole ADU with a good MBAP header) of master m: answer
     * it, now or later, with gw_tls_masters_reply(m->origin, ...).
     * Returns 1 if the policy refused it (counted for the status view).
     */
    int (*request)(void *user, const struct gw_tls_master_info *m, const uint8_t *adu, size_t len);
    /* A master whose handshake had completed is gone: forget its requests (not from a reply). */
    void (*closed)(void *user, uint64_t origin);
};

struct gw_tls_master_limits {
    unsigned max_connections; /* 0: 1024 */
    unsigned handshake_ms;    /* 0: 2000 */
    unsigned idle_ms;         /* 0: never */
    unsigned max_queue;       /* requests unanswered per master, >= 1 */
    unsigned max_per_cert;    /* connections per certificate key (0: 4) */
};

struct gw_tls_masters;

/* Listen on hostport with the listener context of tls; NULL with why. */
struct gw_tls_masters *gw_tls_masters_new(struct gw_loop *loop, const char *hostport,
                                          const struct gw_tls *tls,
                                          const struct gw_tls_master_limits *lim,
                                          const struct gw_tls_master_hooks *hooks, char *why,
                                          size_t why_len);
/* Close every connection and the listener (no hook runs); NULL is allowed. */
void gw_tls_masters_free(struct gw_tls_masters *t);
/* "HOST:PORT" with the real port. */
const char *gw_tls_masters_address(const struct gw_tls_masters *t);

/*
 * The answer to a request of origin; nothing if the master has gone.
 * Safe from within the request hook and from the multiplexer's delivery
 * (a master that must close is closed at the end of the loop's turn).
 */
void gw_tls_masters_reply(struct gw_tls_masters *t, uint64_t origin, const uint8_t *adu,
                          size_t len);

/*
 * A reload: new handshakes use tls (borrowed until the next call or the
 * free); every master already connected has its certificate chain
 * verified again against the new CA, and is closed if it fails.  Returns
 * how many were closed.
 */
int gw_tls_masters_set_tls(struct gw_tls_masters *t, const struct gw_tls *tls);

/* A stop: accept nothing more; masters connected are served until the end. */
void gw_tls_masters_stop_accepting(struct gw_tls_masters *t);

/* Masters whose handshake completed, connected now. */
size_t gw_tls_masters_count(const struct gw_tls_masters *t);
/*
 * The status: one line for the listener, then one per master ("tls-master
 * SUBJECT role R version V suite S from PEER connected-since T requests N
 * refusals N").
 */
void gw_tls_masters_status(const struct gw_tls_masters *t, FILE *out);

#endif /* MBSC_GATEWAY_TLS_MASTERS_H */
