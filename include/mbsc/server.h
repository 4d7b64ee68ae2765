/* SPDX-License-Identifier: ISC */
/*
 * mbsc/server.h - a single-threaded, event-driven server of mbsc sessions.
 *
 * Independent of Modbus: it accepts TCP connections, runs handshakes under
 * a deadline and budgets, and hands every opened payload of a confirmed
 * session to a request callback together with the connection's facts (peer
 * name, role, cipher, address).  The application answers each request with
 * mbsc_server_reply(), during the callback or later from the same thread (a
 * gateway answers when its upstream PLC has).  Requests of one connection
 * are handed out one at a time, in order: the next one comes after the
 * answer to the previous one (or mbsc_server_skip()).  The libmodbus slave
 * (mbsc/modbus.h) is built on it.
 *
 * Loop: mbsc_server_run() runs it until mbsc_server_stop().  Applications
 * with their own event loop watch one descriptor, mbsc_server_fd() (an
 * epoll descriptor on Linux: readable when the server has work), and call
 * mbsc_server_step(srv, 0) when it is readable or when
 * mbsc_server_next_timeout() milliseconds have passed.  There is no
 * FD_SETSIZE limit anywhere on this path.
 *
 * Availability (docs/protocol.md, "Slave availability"): a connection is
 * unconfirmed from accept until its session is confirmed by the master's
 * first transport frame.  Budgets, all settable with mbsc_server_set_limit():
 *   - unconfirmed connections at once (default 64): when full, the oldest
 *     unconfirmed connection is closed for the newcomer (the oldest that
 *     has not sent a valid message 1 first, then the oldest waiting for
 *     its confirmation); a confirmed session is never closed for an
 *     unconfirmed one;
 *   - all connections (default 1024, and never more than RLIMIT_NOFILE
 *     minus MBSC_SERVER_FD_RESERVE): when full, the newcomer takes the
 *     oldest unconfirmed connection's place, or is refused;
 *   - unconfirmed connections per source address (default 4; over TCP the
 *     source address cannot be forged without completing TCP's handshake);
 *   - confirmed sessions per master key (default 4): a master whose key
 *     holds that many already is refused when it confirms (one key, stolen
 *     or gone wrong, takes a handful of slots, never all of them);
 *   - handshake deadline (default 2000 ms, or the config's handshake
 *     timeout if that is shorter), optional idle timeout for confirmed
 *     sessions (default 0: none; programs on the server usually want a few
 *     minutes, so that a master that went away without a word, or holds a
 *     session for nothing, gives its slot back);
 *   - dead peers (default 30000 ms): a slave never sends unasked, so a
 *     master whose host has gone (switched off, cut off, or reset by a
 *     middlebox that reached only its side) would keep its session for
 *     ever; every accepted socket is probed (TCP keepalive: the first probe
 *     after half the time, then three a sixth apart), so such a connection
 *     ends within about that much silence.  A master that is alive
 *     answers the probes in its TCP stack, however long it stays idle.
 *     0: no probes;
 *   - out of descriptors (EMFILE/ENFILE): a reserve descriptor is closed to
 *     accept and close the waiting client, then reopened; no pause.
 * Connections refused or dropped before confirmation are not reported one
 * by one (an attacker would flood the log): they are counted by reason and
 * reported in one MBSC_SERVER_EVENT_LOG line per log interval (default
 * 10 s).  A master key that the allow-list does not hold is reported once,
 * in base64, ready to paste into the allow-list.
 *
 * Conventions: as everywhere in mbsc, functions return MBSC_OK or a
 * negative error code (mbsc_strerror()), and NULL servers are refused with
 * MBSC_ERR_INVALID_ARG.  Only mbsc_server_stop() may be called from
 * another thread or from a signal handler.
 */
#ifndef MBSC_SERVER_H
#define MBSC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "mbsc/cipher.h"
#include "mbsc/export.h"
#include "mbsc/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbsc_server mbsc_server;

/* A connection's identity: never 0, never reused while the server lives. */
typedef uint64_t mbsc_server_conn_id;

/* Descriptors kept free below RLIMIT_NOFILE for everything but connections. */
#define MBSC_SERVER_FD_RESERVE 16u

/* What the server knows about a confirmed connection. */
struct mbsc_server_conn_info {
    mbsc_server_conn_id id;
    uint64_t seq;              /* 1, 2, 3... in order of acceptance, for logs (never wraps) */
    const char *peer_address;  /* "HOST:PORT" */
    const char *peer_name;     /* allow-list name of the authenticated master */
    const char *peer_role;     /* its role, NULL if the allow-list gives none */
    const mbsc_cipher *cipher; /* negotiated cipher */
};

enum mbsc_server_event_type {
    MBSC_SERVER_EVENT_CONNECTED = 1, /* a session is confirmed: conn is set */
    MBSC_SERVER_EVENT_CLOSED = 2,    /* a confirmed session ended: error, detail */
    MBSC_SERVER_EVENT_LOG = 3        /* a line for the operator's log: detail */
};

struct mbsc_server_event {
    enum mbsc_server_event_type type;
    const struct mbsc_server_conn_info *conn; /* NULL for LOG */
    int error;                                /* CLOSED: MBSC_OK for a clean close by the peer */
    const char *detail;                       /* CLOSED: why, in words; LOG: the line */
};

typedef void (*mbsc_server_event_fn)(void *user, const struct mbsc_server_event *ev);

/*
 * One opened, non-empty payload of a confirmed session (keep-alives are not
 * passed on).  payload is valid during the call only: copy what a later
 * answer needs.  Answer with mbsc_server_reply() or mbsc_server_skip(), or
 * end the connection with mbsc_server_close(); until then no further
 * request of this connection is handed out.
 */
typedef void (*mbsc_server_request_fn)(void *user, mbsc_server *srv,
                                       const struct mbsc_server_conn_info *conn,
                                       const uint8_t *payload, size_t len);

enum mbsc_server_limit {
    MBSC_SERVER_MAX_UNCONFIRMED = 1,             /* default 64 */
    MBSC_SERVER_MAX_CONNECTIONS = 2,             /* default 1024 */
    MBSC_SERVER_MAX_UNCONFIRMED_PER_ADDRESS = 3, /* default 4 */
    MBSC_SERVER_HANDSHAKE_TIMEOUT_MS = 4,        /* default 2000 */
    MBSC_SERVER_IDLE_TIMEOUT_MS = 5,             /* default 0: none */
    MBSC_SERVER_LOG_INTERVAL_MS = 6,             /* default 10000 */
    MBSC_SERVER_MAX_SESSIONS_PER_KEY = 7,        /* default 4 */
    MBSC_SERVER_DEAD_PEER_MS = 8                 /* default 30000; 0: no probes */
};

/* Counters, for tests, monitoring and benchmarks. */
struct mbsc_server_stats {
    unsigned connections;    /* open now, confirmed or not */
    unsigned unconfirmed;    /* open now, not confirmed yet */
    uint64_t accepted;       /* TCP connections accepted */
    uint64_t confirmed;      /* sessions confirmed */
    uint64_t requests;       /* payloads handed to the request callback */
    uint64_t refused;        /* closed before confirmation, every reason; of which: */
    uint64_t evicted;        /*   pushed out by a newcomer (unconfirmed budget full) */
    uint64_t timed_out;      /*   handshake deadline */
    uint64_t per_address;    /*   too many unconfirmed from its source address */
    uint64_t full;           /*   every slot taken by confirmed sessions */
    uint64_t fd_exhausted;   /*   accepted and closed for lack of descriptors */
    uint64_t unknown_keys;   /*   master key not in the allow-list */
    uint64_t bad_handshakes; /*  malformed handshake or frame, failed decryption */
    uint64_t closed_early;   /*   the client hung up before confirmation */
    uint64_t replays;        /*   message 1 seen before (its ephemeral key) */
    /* Added later: new counters go at the end, so that the layout above stays. */
    uint64_t per_key; /*   at confirmation: its key holds its sessions' worth already */
};

/*
 * A server listening on hostport (port 0 picks a free one) for sessions of
 * cfg (MBSC_ROLE_SLAVE, complete; borrowed, keep it alive and unmodified
 * until mbsc_server_free()).  The total budget is clamped to RLIMIT_NOFILE
 * here.  MBSC_OK, or an error with why.
 */
MBSC_API MBSC_WUR int mbsc_server_new(mbsc_server **out, const char *hostport,
                                      const mbsc_config *cfg, char *why, size_t why_len);

/* Close every connection and the listener, wipe and free; NULL is allowed. */
MBSC_API void mbsc_server_free(mbsc_server *srv);

MBSC_API void mbsc_server_set_request_fn(mbsc_server *srv, mbsc_server_request_fn fn, void *user);
MBSC_API void mbsc_server_set_event_fn(mbsc_server *srv, mbsc_server_event_fn fn, void *user);

/*
 * Set one limit.  MBSC_ERR_INVALID_ARG for an unknown limit or 0 where 0
 * makes no sense (budgets, handshake timeout, log interval).  A total
 * budget above RLIMIT_NOFILE - MBSC_SERVER_FD_RESERVE is clamped to it;
 * the unconfirmed budget is clamped to the total one.  Read back the value
 * in force with mbsc_server_get_limit().
 */
MBSC_API int mbsc_server_set_limit(mbsc_server *srv, enum mbsc_server_limit which, unsigned value);
MBSC_API unsigned mbsc_server_get_limit(const mbsc_server *srv, enum mbsc_server_limit which);

/*
 * Answer the request that conn is waiting on: seal len bytes (1 to the
 * configured maximum, mbsc_config_set_max_payload(): 260 by default) and
 * send them.  MBSC_ERR_STATE if the connection has
 * no request waiting, MBSC_ERR_PEER_CLOSED if it is gone (closed in the
 * meantime), MBSC_ERR_PAYLOAD_TOO_LONG.  Called outside the request
 * callback, the connection's next request is handed out by the next
 * mbsc_server_step() (mbsc_server_next_timeout() is then 0).
 */
MBSC_API MBSC_WUR int mbsc_server_reply(mbsc_server *srv, mbsc_server_conn_id conn,
                                        const uint8_t *payload, size_t len);

/* Done with conn's request without answering it (same errors as reply). */
MBSC_API int mbsc_server_skip(mbsc_server *srv, mbsc_server_conn_id conn);

/*
 * End a connection now (a malformed request, a policy decision): a CLOSED
 * event with err and detail.  MBSC_ERR_PEER_CLOSED if it is already gone.
 */
MBSC_API int mbsc_server_close(mbsc_server *srv, mbsc_server_conn_id conn, int err,
                               const char *detail);

/* The listening address "HOST:PORT", with the real port. */
MBSC_API int mbsc_server_address(const mbsc_server *srv, char *buf, size_t len);

/*
 * The one descriptor to watch for readability in the caller's event loop:
 * the epoll descriptor on Linux.  -1 where the server falls back on poll()
 * (systems without epoll): there, call mbsc_server_step() with a timeout.
 */
MBSC_API int mbsc_server_fd(const mbsc_server *srv);

/* Milliseconds until the server must step even without I/O (-1: no deadline). */
MBSC_API int mbsc_server_next_timeout(const mbsc_server *srv);

/*
 * One turn: wait up to timeout_ms (0: not at all; -1: until something
 * happens) for activity, then accept, advance handshakes, hand out
 * requests, send answers, expire deadlines.  MBSC_OK, or a fatal error of
 * the listener or the poller.
 */
MBSC_API int mbsc_server_step(mbsc_server *srv, int timeout_ms);

/* Step until mbsc_server_stop(); MBSC_OK or the fatal error. */
MBSC_API int mbsc_server_run(mbsc_server *srv);

/* Make run() return soon.  Async-signal-safe. */
MBSC_API void mbsc_server_stop(mbsc_server *srv);

/*
 * Close the listening socket, for a graceful stop: connection attempts are
 * refused from now on (those the kernel had queued but the server had not
 * yet accepted are reset), while the connections already accepted go on
 * being served, so the requests in flight can be answered before
 * mbsc_server_free().  mbsc_server_address() still reports the address.
 * There is no way to listen again on this server.  MBSC_OK (also when
 * already stopped) or MBSC_ERR_INVALID_ARG (srv NULL).  Not
 * async-signal-safe: call it from the loop, after a signal has set a flag.
 */
MBSC_API int mbsc_server_stop_accepting(mbsc_server *srv);

MBSC_API void mbsc_server_get_stats(const mbsc_server *srv, struct mbsc_server_stats *st);

/*
 * Put cfg (MBSC_ROLE_SLAVE, complete; borrowed like the first one) in
 * force, e.g. after the allow-list, the PSK or the key was re-read.  New
 * connections get sessions of cfg.  Its allow-list also judges, from now
 * on, every connection already open that has not confirmed its session:
 * a message 1 still to come is checked against it, and every master is
 * looked up in it again when it confirms (its first transport frame): a
 * key no longer listed is refused then (counted as an unknown key in the
 * refusal log line), and the name and role come from this list.  Sessions
 * keep the key pair and PSK they started their handshake with.  Nothing
 * reads the old config or its allow-list once this returns: they may be
 * freed.  Confirmed sessions are held against the new list by
 * mbsc_server_apply_allowlist().  MBSC_OK, MBSC_ERR_INVALID_ARG, or the
 * error of a config that cannot make sessions (the server then keeps the
 * old one).
 */
MBSC_API MBSC_WUR int mbsc_server_set_config(mbsc_server *srv, const mbsc_config *cfg, char *why,
                                             size_t why_len);

/*
 * The authenticated static public key of confirmed connection conn, so
 * that an application can look it up again in a re-read allow-list.
 * MBSC_OK, MBSC_ERR_PEER_CLOSED if conn is gone, MBSC_ERR_STATE if it is
 * not confirmed yet, MBSC_ERR_INVALID_ARG.
 */
MBSC_API int mbsc_server_conn_public_key(const mbsc_server *srv, mbsc_server_conn_id conn,
                                         uint8_t public_key[MBSC_KEY_BYTES]);

/*
 * After a reload: end every session of a master that al (normally the
 * allow-list of the config just given to mbsc_server_set_config) no
 * longer lists.  A confirmed one is closed with a CLOSED event
 * (MBSC_ERR_UNKNOWN_PEER, "removed from the allow-list"); one whose
 * message 1 was accepted but that has not confirmed yet is closed and
 * counted as an unknown key.  The confirmed masters still listed take the
 * name and role al gives them now, which the request callback sees from
 * their next request on.  So after set_config and apply_allowlist no
 * session of a removed master survives in any state, and no master acts
 * with a role the new list does not give it.  Returns the number of
 * connections closed, or MBSC_ERR_INVALID_ARG.
 */
MBSC_API int mbsc_server_apply_allowlist(mbsc_server *srv, const mbsc_allowlist *al);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_SERVER_H */
