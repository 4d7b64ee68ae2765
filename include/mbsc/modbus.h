/* SPDX-License-Identifier: ISC */
/*
 * mbsc/modbus.h - unchanged libmodbus applications over the secure channel.
 *
 * Include it after <modbus.h> or on its own (it includes <modbus.h>); it is
 * not part of <mbsc.h> because libmodbus is optional.  Built when configure
 * finds libmodbus >= 3.1.6.
 *
 * libmodbus has no public transport interface.  The adapter works as follows:
 *
 *  - client (master), synchronous path (the normal one):
 *    mbsc_modbus_connect() returns a connected modbus_t under which mbsc
 *    puts its own transport.  libmodbus's send seals the ADU and writes
 *    the frame to the TCP socket, its wait and receive read and open
 *    frames, all in the caller's thread; modbus_close()/modbus_free()
 *    close the connection and wipe the session.  No thread, no extra
 *    descriptor.  libmodbus's response and byte timeouts keep their
 *    meaning.  This needs libmodbus's private context layout, which
 *    changes between releases with the same SONAME: mbsc knows the
 *    layouts of 3.1.6-3.1.8, 3.1.9-3.1.10 and 3.1.11, picks one from
 *    libmodbus's exported version variables and verifies it on every new
 *    context before touching it (the backend is libmodbus's exported TCP
 *    backend, with TCP's header and ADU sizes; the socket and the three
 *    timeouts are where modbus_get_socket() and the timeout setters put
 *    them, which also catches a libmodbus built with another time_t).
 *  - client, pump path (the fallback): for any libmodbus release or build
 *    that is not verified, or when the environment variable
 *    MBSC_MODBUS_PUMP is set to 1, libmodbus gets one end of an AF_UNIX
 *    socketpair (modbus_set_socket) and a pump thread per connection
 *    seals what libmodbus writes and opens what the slave sends.
 *    mbsc_modbus_path() tells which path a context uses.  Every libmodbus
 *    client call works the same on both.
 *  - server (slave): built on mbsc_server (mbsc/server.h): one event loop
 *    (epoll on Linux), no threads, no select(), no FD_SETSIZE limit.  Each
 *    opened request of a confirmed session is checked (MBAP header; the
 *    lengths, byte counts and quantities of its function code, by the
 *    table of mbsc/pdu.h; then the request hook; then both address ranges
 *    of a 0x17 request against the mapping) and handed to modbus_reply()
 *    directly; the reply is captured and sealed.  Only authenticated,
 *    well-formed ADUs ever reach libmodbus's parser.
 *
 * Never plaintext: the adapter's contexts are created with a target
 * address that libmodbus cannot parse (inet_addr() gives 255.255.255.255,
 * port 0), and on the synchronous path libmodbus's connect entry is
 * mbsc's, so neither modbus_connect() nor MODBUS_ERROR_RECOVERY_LINK can
 * ever open a plaintext connection.  Error recovery is set to
 * MODBUS_ERROR_RECOVERY_NONE on creation.  On the synchronous path,
 * mbsc_modbus_set_reconnect() makes libmodbus's reconnects (and LINK
 * recovery) secure ones.  Otherwise leave recovery at NONE: with LINK, the
 * call that meets the failure fails, but libmodbus then retries every
 * later send forever (close, sleep, reconnect), as it does for any dead
 * link.  Reconnect with mbsc_modbus_connect() instead.
 *
 * Threads: the client functions may be called from any threads (each
 * modbus_t used by one thread at a time, as libmodbus requires).  A server
 * belongs to the thread that drives it; only mbsc_modbus_server_stop() may
 * be called from another thread or a signal handler.
 */
#ifndef MBSC_MODBUS_H
#define MBSC_MODBUS_H

#include <modbus.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "mbsc/conn.h"
#include "mbsc/export.h"
#include "mbsc/pdu.h"
#include "mbsc/server.h"
#include "mbsc/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest Modbus/TCP ADU (MBAP header + PDU): MBSC_ADU_MAX, by its older name. */
#define MBSC_MODBUS_MAX_ADU MBSC_ADU_MAX

/* ---- client (master) ------------------------------------------------------ */

/*
 * Connect to a secure slave at hostport ("HOST:PORT", "[V6]:PORT"), run the
 * handshake (cfg: MBSC_ROLE_MASTER) within timeout_ms, and return a
 * modbus_t that talks through it.  Use any libmodbus client function on it;
 * set the unit id with modbus_set_slave() as usual.
 *
 * Release it with mbsc_modbus_close() (which, on the pump path, also
 * waits for the pump thread to finish) or with modbus_close() +
 * modbus_free(): either way the session is wiped, every descriptor is
 * closed and a pump thread exits.  The path (synchronous or pump) is
 * chosen here; see the top of this file.
 *
 * On failure returns NULL, *err (if not NULL) gets the mbsc error and why
 * (if not NULL) a line naming the cause.
 */
MBSC_API modbus_t *mbsc_modbus_connect(const char *hostport, const mbsc_config *cfg, int timeout_ms,
                                       int *err, char *why, size_t why_len);

/*
 * Why a client context stopped working: MBSC_OK while the secure
 * connection is up, else the error that ended it (MBSC_ERR_BAD_TAG,
 * MBSC_ERR_PEER_CLOSED, MBSC_ERR_BAD_ADU...).  libmodbus itself only
 * sees its link close (its call fails at once with ECONNRESET); call this after a
 * libmodbus call fails to name the real cause.  ctx must come from
 * mbsc_modbus_connect() and not be freed yet; MBSC_ERR_INVALID_ARG if it
 * is not one of ours.
 */
MBSC_API int mbsc_modbus_error(modbus_t *ctx);

/* The cipher negotiated for ctx, or NULL if ctx is not one of ours. */
MBSC_API const mbsc_cipher *mbsc_modbus_cipher(modbus_t *ctx);

/*
 * Answers ctx's transport dropped because they were not for the request
 * libmodbus was waiting for, counted since mbsc_modbus_connect(): late
 * answers (a slave that answers after libmodbus's response timeout: their
 * transaction id is not that of the request outstanding), second answers
 * to one request, and on the pump path the answer to a call that libmodbus
 * failed because the late answer had already reached it (see "Late
 * answers" at the top of this file).  The transport keeps waiting for the
 * right answer within the response timeout, so one slow answer does not
 * shift every later one.  A count >= 0, or MBSC_ERR_INVALID_ARG if ctx is
 * not one of ours; ctx must not be freed yet.
 */
MBSC_API int64_t mbsc_modbus_dropped_answers(modbus_t *ctx);

/*
 * Let ctx reconnect securely.  Afterwards modbus_connect(ctx), and
 * libmodbus's MODBUS_ERROR_RECOVERY_LINK after a link error (set with
 * modbus_set_error_recovery), make a new TCP connection and a new
 * handshake to the same slave with cfg, within the timeout given to
 * mbsc_modbus_connect(); mbsc_modbus_error() is MBSC_OK again once that
 * succeeds and names the failure when it does not.  cfg (a master's) is
 * borrowed: keep it alive and unchanged until ctx is freed, or call again
 * with NULL to stop reconnecting (the default: every reconnect fails, with
 * no network activity).  Nothing ever reconnects in plaintext.
 * Synchronous path only: MBSC_ERR_STATE on a pump context,
 * MBSC_ERR_INVALID_ARG if ctx is not ours or cfg not a master's.
 *
 * With MODBUS_ERROR_RECOVERY_LINK, libmodbus itself decides when: the
 * call that meets the failure still fails (after a reconnect attempt when
 * a read failed; a failed send is retried, with a sleep of the response
 * timeout, until a reconnect succeeds - for ever if the slave stays away).
 */
MBSC_API int mbsc_modbus_set_reconnect(modbus_t *ctx, const mbsc_config *cfg);

/* modbus_close + modbus_free, and (pump path) wait until the pump thread has exited. */
MBSC_API void mbsc_modbus_close(modbus_t *ctx);

/* Which transport a client context uses (see the top of this file). */
enum mbsc_modbus_path {
    MBSC_MODBUS_PATH_SYNC = 1, /* mbsc's transport under libmodbus, caller's thread */
    MBSC_MODBUS_PATH_PUMP = 2  /* socketpair and pump thread (fallback) */
};

/* Setting this environment variable to 1 makes mbsc_modbus_connect() use the pump. */
#define MBSC_MODBUS_PUMP_ENV "MBSC_MODBUS_PUMP"

/*
 * The path ctx uses (MBSC_MODBUS_PATH_SYNC or _PUMP), or
 * MBSC_ERR_INVALID_ARG if ctx is not one of ours.  ctx must not be freed
 * yet (a closed one still answers).
 */
MBSC_API int mbsc_modbus_path(modbus_t *ctx);

/* "sync", "pump", or "none" for anything else. */
MBSC_API const char *mbsc_modbus_path_name(int path);

/*
 * The path the next mbsc_modbus_connect() would take, checked now on a
 * scratch context (no network activity): MBSC_MODBUS_PATH_SYNC with why
 * naming the libmodbus release and the layout verified, or
 * MBSC_MODBUS_PATH_PUMP with why saying why not (unknown release, a check
 * that failed, MBSC_MODBUS_PUMP set).  why may be NULL.
 */
MBSC_API int mbsc_modbus_probe_path(char *why, size_t why_len);

/* ---- server (slave) ------------------------------------------------------- */

typedef struct mbsc_modbus_server mbsc_modbus_server;

enum mbsc_modbus_event_type {
    MBSC_MODBUS_EVENT_CONNECTED = 1, /* session confirmed: peer_name, cipher set */
    MBSC_MODBUS_EVENT_REQUEST = 2,   /* an authenticated request, before the reply */
    MBSC_MODBUS_EVENT_CLOSED = 3,    /* a confirmed session ended: error says why */
    MBSC_MODBUS_EVENT_LOG = 4        /* a line for the log (refusals, unknown keys): detail */
};

/*
 * Connections that end before their session is confirmed (failed or
 * replayed handshakes, timeouts, budgets) get no event of their own: they
 * are counted and summed up in one LOG event per interval (mbsc/server.h).
 */
struct mbsc_modbus_event {
    enum mbsc_modbus_event_type type;
    uint64_t connection_id;    /* unique per connection, from 1 (0 for LOG); never wraps */
    const char *peer_address;  /* "HOST:PORT" (NULL for LOG) */
    const char *peer_name;     /* allow-list name (NULL for LOG) */
    const mbsc_cipher *cipher; /* NULL for LOG */
    int error;                 /* CLOSED: MBSC_OK for a clean close by the peer */
    const char *detail;        /* CLOSED: one line of detail, or NULL; LOG: the line */
    const uint8_t *adu;        /* REQUEST: the request ADU */
    size_t adu_len;
    const char *peer_role; /* allow-list role, NULL if none */
};

typedef void (*mbsc_modbus_event_fn)(void *user, const struct mbsc_modbus_event *ev);

/*
 * A server listening on hostport (port 0 picks a free one) that answers
 * every authenticated request from map with modbus_reply().  cfg
 * (MBSC_ROLE_SLAVE, complete) and map are borrowed: keep them alive, cfg
 * unmodified, until mbsc_modbus_server_free(); the REQUEST event and the
 * hook may change map before each reply.  Returns MBSC_OK or an error with
 * why.  Limits (budgets, deadlines) are the server's: set them on
 * mbsc_modbus_server_core().
 */
MBSC_API MBSC_WUR int mbsc_modbus_server_new(mbsc_modbus_server **out, const char *hostport,
                                             const mbsc_config *cfg, modbus_mapping_t *map,
                                             char *why, size_t why_len);

/* Connection events (for logs and for the application); fn may be NULL. */
MBSC_API void mbsc_modbus_server_set_event_fn(mbsc_modbus_server *srv, mbsc_modbus_event_fn fn,
                                              void *user);

/* ---- request hook ---- */

enum mbsc_modbus_verdict {
    MBSC_MODBUS_ALLOW = 0,  /* go on: PDU checks, then modbus_reply() from the mapping */
    MBSC_MODBUS_REFUSE = 1, /* answer with the exception *exception_code (1..127) */
    MBSC_MODBUS_ANSWER = 2  /* answer with the ADU the hook wrote to answer[] */
};

/* A request as the hook sees it: MBAP header and PDU shape (mbsc/pdu.h) checked. */
struct mbsc_modbus_request {
    uint64_t connection_id;
    const char *peer_address;
    const char *peer_name; /* the authenticated master's allow-list name */
    const char *peer_role; /* its role, NULL if the allow-list gives none */
    const mbsc_cipher *cipher;
    const uint8_t *adu; /* MBAP header + PDU */
    size_t adu_len;     /* 8..MBSC_MODBUS_MAX_ADU */
    uint8_t unit_id;
    uint8_t function;
};

/*
 * Called for each request whose PDU is well formed for its function
 * (mbsc_pdu_check_request: a malformed one has already been answered with
 * 03 or 02, so that the hook - a role policy - judges only requests that
 * mean something; docs/policy.md, "The order of checks").  REFUSE:
 * set *exception_code (it comes in as 01, Illegal Function, which is what
 * Modbus/TCP Security prescribes for a function the role may not use).
 * ANSWER: write a whole ADU (MBAP header with the request's transaction
 * id, then the PDU) of *answer_len bytes to answer; one that is not such
 * an ADU ends the connection with MBSC_ERR_MODBUS.  The hook must not
 * keep req or its pointers.
 */
typedef enum mbsc_modbus_verdict (*mbsc_modbus_hook_fn)(void *user,
                                                        const struct mbsc_modbus_request *req,
                                                        uint8_t *exception_code,
                                                        uint8_t answer[MBSC_MODBUS_MAX_ADU],
                                                        size_t *answer_len);

/* Install (or with NULL remove) the request hook. */
MBSC_API void mbsc_modbus_server_set_request_hook(mbsc_modbus_server *srv, mbsc_modbus_hook_fn fn,
                                                  void *user);

/* The generic server underneath: limits, statistics, its descriptor. */
MBSC_API mbsc_server *mbsc_modbus_server_core(mbsc_modbus_server *srv);

/* The listening address "HOST:PORT", with the real port. */
MBSC_API int mbsc_modbus_server_address(const mbsc_modbus_server *srv, char *buf, size_t len);

/*
 * Most connections served at once: the server's MBSC_SERVER_MAX_CONNECTIONS
 * (default 1024, clamped to RLIMIT_NOFILE).  A newcomer beyond it takes the
 * place of the oldest unconfirmed connection, or is refused (counted in
 * the LOG summary).
 */
MBSC_API int mbsc_modbus_server_set_max_connections(mbsc_modbus_server *srv, unsigned n);

/*
 * One turn of the loop (mbsc_server_step): wait up to timeout_ms for
 * activity, accept, advance handshakes, answer requests, expire deadlines.
 * Returns MBSC_OK (also on a timeout with nothing to do) or a fatal error.
 * For applications with their own loop: call it with timeout_ms 0 when the
 * descriptor of mbsc_modbus_server_fds() is readable or
 * mbsc_modbus_server_next_timeout() has passed.
 */
MBSC_API int mbsc_modbus_server_step(mbsc_modbus_server *srv, int timeout_ms);

/*
 * The descriptor to wait on for an external poll() loop: one entry (the
 * server's epoll descriptor, POLLIN) whatever the number of connections.
 * Returns how many it needs (1; 0 where the server has no such descriptor,
 * see mbsc_server_fd()).
 */
MBSC_API size_t mbsc_modbus_server_fds(const mbsc_modbus_server *srv, struct pollfd *fds,
                                       size_t cap);

/* Milliseconds until the next deadline (-1: none), for poll(). */
MBSC_API int mbsc_modbus_server_next_timeout(const mbsc_modbus_server *srv);

/* Run steps until mbsc_modbus_server_stop(); returns MBSC_OK or the fatal error. */
MBSC_API int mbsc_modbus_server_run(mbsc_modbus_server *srv);

/* Make run() return soon.  Async-signal-safe: call it from a signal handler. */
MBSC_API void mbsc_modbus_server_stop(mbsc_modbus_server *srv);

/* Connections currently open (handshaking or established). */
MBSC_API unsigned mbsc_modbus_server_connections(const mbsc_modbus_server *srv);

/* Close every connection and the listener, wipe and free; NULL is allowed. */
MBSC_API void mbsc_modbus_server_free(mbsc_modbus_server *srv);

/*
 * Check that an authenticated payload is one well-formed Modbus/TCP ADU:
 * 8..MBSC_MODBUS_MAX_ADU bytes, protocol id 0, MBAP length field equal to
 * the bytes after it.  MBSC_OK or MBSC_ERR_BAD_ADU.
 */
MBSC_API int mbsc_modbus_check_adu(const uint8_t *adu, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_MODBUS_H */
