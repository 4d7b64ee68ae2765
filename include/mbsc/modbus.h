/*
 * mbsc/modbus.h - unchanged libmodbus applications over the secure channel.
 *
 * Include it after <modbus.h> or on its own (it includes <modbus.h>); it is
 * not part of <mbsc.h> because libmodbus is optional.  Built when configure
 * finds libmodbus >= 3.1.6.
 *
 * libmodbus has no pluggable transport, so the adapter hands libmodbus one
 * end of an AF_UNIX socketpair (modbus_set_socket) and moves whole ADUs
 * between the other end and an mbsc session:
 *
 *  - client (master): mbsc_modbus_connect() returns a connected modbus_t;
 *    a pump thread per connection seals what libmodbus writes and opens
 *    what the slave sends.  Every libmodbus client call then works as is.
 *  - server (slave): one poll() loop, no threads.  Each authenticated,
 *    decrypted request goes through modbus_receive() + modbus_reply() on
 *    the server's libmodbus context; the reply is sealed and sent.  Only
 *    authenticated, well-formed ADUs ever reach libmodbus's parser.
 *
 * MODBUS_ERROR_RECOVERY_LINK would make libmodbus reconnect by itself, in
 * plaintext, after a link error.  The adapter's contexts are created with a
 * target address that libmodbus cannot parse (inet_addr() gives
 * 255.255.255.255, port 0), so such a reconnect always fails and no
 * plaintext connection is ever made; error recovery is set to
 * MODBUS_ERROR_RECOVERY_NONE on creation.  Leave it there: with LINK, the
 * call that meets the failure fails, but libmodbus then retries every later
 * send forever (close, sleep, reconnect), as it does for any dead link.
 * Reconnect with mbsc_modbus_connect() instead.
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
#include "mbsc/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest Modbus/TCP ADU (MBAP header + PDU), per the Modbus spec. */
#define MBSC_MODBUS_MAX_ADU 260u

/* ---- client (master) ------------------------------------------------------ */

/*
 * Connect to a secure slave at hostport ("HOST:PORT", "[V6]:PORT"), run the
 * handshake (cfg: MBSC_ROLE_MASTER) within timeout_ms, and return a
 * modbus_t that talks through it.  Use any libmodbus client function on it;
 * set the unit id with modbus_set_slave() as usual.
 *
 * Release it with mbsc_modbus_close() (which also waits for the pump
 * thread to finish) or with modbus_close() + modbus_free(): either way the
 * thread exits and every descriptor is closed.
 *
 * On failure returns NULL, *err (if not NULL) gets the mbsc error and why
 * (if not NULL) a line naming the cause.
 */
MBSC_API modbus_t *mbsc_modbus_connect(const char *hostport, const mbsc_config *cfg,
                                       int timeout_ms, int *err, char *why, size_t why_len);

/*
 * Why a client context stopped working: MBSC_OK while the secure
 * connection is up, else the error that ended it (MBSC_ERR_BAD_TAG,
 * MBSC_ERR_PEER_CLOSED, ...).  libmodbus itself only sees its socket
 * close (its call fails at once with ECONNRESET); call this after a
 * libmodbus call fails to name the real cause.  ctx must come from
 * mbsc_modbus_connect() and not be freed yet; MBSC_ERR_INVALID_ARG if it
 * is not one of ours.
 */
MBSC_API int mbsc_modbus_error(modbus_t *ctx);

/* The cipher negotiated for ctx, or NULL if ctx is not one of ours. */
MBSC_API const mbsc_cipher *mbsc_modbus_cipher(modbus_t *ctx);

/* modbus_close + modbus_free, and wait until the pump thread has exited. */
MBSC_API void mbsc_modbus_close(modbus_t *ctx);

/* ---- server (slave) ------------------------------------------------------- */

typedef struct mbsc_modbus_server mbsc_modbus_server;

enum mbsc_modbus_event_type {
    MBSC_MODBUS_EVENT_CONNECTED = 1, /* handshake done: peer_name, cipher set */
    MBSC_MODBUS_EVENT_REQUEST = 2,   /* an authenticated request, before the reply */
    MBSC_MODBUS_EVENT_CLOSED = 3     /* connection ended: error says why */
};

struct mbsc_modbus_event {
    enum mbsc_modbus_event_type type;
    unsigned connection_id;       /* unique per connection, from 1 */
    const char *peer_address;     /* "HOST:PORT" */
    const char *peer_name;        /* allow-list name; NULL before the handshake */
    const mbsc_cipher *cipher;    /* NULL before the handshake */
    int error;                    /* CLOSED: MBSC_OK for a clean close by the peer */
    const char *detail;           /* CLOSED: one line of detail, or NULL */
    const uint8_t *adu;           /* REQUEST: the request ADU */
    size_t adu_len;
};

typedef void (*mbsc_modbus_event_fn)(void *user, const struct mbsc_modbus_event *ev);

/*
 * A server listening on hostport (port 0 picks a free one) that answers
 * every authenticated request from map with modbus_reply().  cfg
 * (MBSC_ROLE_SLAVE, complete) and map are borrowed: keep them alive, cfg
 * unmodified, until mbsc_modbus_server_free(); the REQUEST event may
 * change map before each reply.  Returns MBSC_OK or an error with why.
 */
MBSC_API MBSC_WUR int mbsc_modbus_server_new(mbsc_modbus_server **out, const char *hostport,
                                             const mbsc_config *cfg, modbus_mapping_t *map,
                                             char *why, size_t why_len);

/* Connection events (for logs and for the application); fn may be NULL. */
MBSC_API void mbsc_modbus_server_set_event_fn(mbsc_modbus_server *srv,
                                              mbsc_modbus_event_fn fn, void *user);

/* The listening address "HOST:PORT", with the real port. */
MBSC_API int mbsc_modbus_server_address(const mbsc_modbus_server *srv, char *buf, size_t len);

/*
 * Most connections served at once (default 256).  Extra ones are closed at
 * once, with a CLOSED event (MBSC_ERR_FD_LIMIT, "too many connections").
 */
MBSC_API int mbsc_modbus_server_set_max_connections(mbsc_modbus_server *srv, unsigned n);

/*
 * One turn of the loop: wait up to timeout_ms for activity, accept,
 * advance handshakes, answer requests, expire handshakes that take longer
 * than the config's timeout.  Returns MBSC_OK (also on a timeout with
 * nothing to do) or a fatal error of the listening socket.  For
 * applications with their own loop: call it when mbsc_modbus_server_fds()
 * report activity, with timeout_ms 0.
 */
MBSC_API int mbsc_modbus_server_step(mbsc_modbus_server *srv, int timeout_ms);

/*
 * The descriptors the server waits on, for an external poll() loop: fills
 * up to cap entries (fd and events) and returns how many it needs.
 */
MBSC_API size_t mbsc_modbus_server_fds(const mbsc_modbus_server *srv, struct pollfd *fds,
                                       size_t cap);

/* Milliseconds until the next handshake deadline (-1: none), for poll(). */
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
