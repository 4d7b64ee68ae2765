/* SPDX-License-Identifier: ISC */
/*
 * gw.h - what the files of mbsc-gateway share (tools/gateway/, docs/gateway.md).
 *
 *   main.c        command line, --help, --version, mode dispatch;
 *   clock.c       the monotonic clock and poll() timeouts;
 *   options.c     settings from the command line and from --config FILE;
 *   log.c         log lines on stderr (journald levels under systemd), and
 *                 the systemd readiness notification;
 *   clock.c       the monotonic clock and poll() timeout arithmetic;
 *   signals.c     SIGHUP, SIGTERM, SIGINT, SIGUSR1 through a self-pipe;
 *   adu_check.c   Modbus checks of requests and of upstream answers;
 *   upstream.c    the one connection to what is behind the gateway: plain
 *                 Modbus/TCP (server mode) or an mbsc session (client mode),
 *                 connected without blocking, re-established with backoff;
 *   mux.c         many requesters over that one connection: rewritten
 *                 transaction ids, N in flight, fair queues, timeouts;
 *   secrets.c     key, PSK, allow-list and policy loaded as one bundle, so
 *                 that a reload replaces all of them or none;
 *   server_mode.c mbsc masters in, plain Modbus/TCP to the PLC out;
 *   client_mode.c plain Modbus/TCP clients in, one mbsc session out;
 *   control.c     the status view: --control socket, "status" command, SIGUSR1.
 *
 * One thread, one poll() loop per mode; nothing here blocks except name
 * resolution (getaddrinfo) when a connection is made.
 */
#ifndef MBSC_GATEWAY_H
#define MBSC_GATEWAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mbsc.h>

#define GW_PROG "mbsc-gateway"

/* Exit statuses. */
#define GW_EX_OK      0
#define GW_EX_FAILURE 1 /* runtime failure: keys, files, network */
#define GW_EX_USAGE   2 /* bad command line or configuration */

/* A Modbus/TCP ADU: 7-byte MBAP header, then at most 253 bytes of PDU. */
#define GW_MAX_ADU  260u
#define GW_MBAP     7u
#define GW_WHY_SIZE (MBSC_WHY_SIZE + 4096u)

/* Modbus exception codes (Modbus Application Protocol v1.1b3, section 7). */
#define GW_EXC_ILLEGAL_FUNCTION 0x01u
#define GW_EXC_BUSY             0x06u /* server device busy: a master's queue is full */
#define GW_EXC_PATH_UNAVAILABLE 0x0Au /* gateway path unavailable */
#define GW_EXC_TARGET_FAILED    0x0Bu /* gateway target device failed to respond */

#if defined(__GNUC__)
#define GW_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GW_PRINTF(f, a)
#endif

/* ---- options.c ------------------------------------------------------------ */

enum gw_mode { GW_MODE_NONE = 0, GW_MODE_SERVER, GW_MODE_CLIENT };

struct gw_options {
    enum gw_mode mode;
    char *config;                /* --config FILE, or NULL */
    char *listen;                /* HOST:PORT */
    char *upstream;              /* HOST:PORT */
    char *key;                   /* our private key */
    char *authorized;            /* server: the allow-list */
    char *peer;                  /* client: the server gateway's public key */
    char *psk;                   /* optional */
    char *ciphers;               /* optional cipher list (client: --cipher NAME is a list of one) */
    char *policy;                /* server: optional roles policy */
    int allow_remote_plaintext;  /* client: listen on a non-loopback address */
    unsigned long max_in_flight; /* requests upstream at once (default 1) */
    unsigned long max_queue;     /* queued requests per master (default 16) */
    unsigned long request_timeout_ms;   /* answer 0x0B after this (default 1000) */
    unsigned long connect_timeout_ms;   /* TCP connect + handshake upstream (default 3000) */
    unsigned long reconnect_max_ms;     /* backoff ceiling (default 5000) */
    unsigned long handshake_timeout_ms; /* server: masters' handshake (0: default) */
    unsigned long max_connections;      /* masters / local clients at once (0: default) */
    unsigned long drain_ms;             /* SIGTERM: longest wait for requests in flight */
    char *control;                      /* optional UNIX socket for "mbsc-gateway status" */

    /* Server: how much one master may hold. */
    unsigned long max_sessions_per_master; /* sessions per master key (0: the library's, 4) */
    unsigned long idle_timeout_ms;         /* close a master idle that long (0: never) */
};

/* Defaults, as documented in --help and docs/gateway.md. */
void gw_options_init(struct gw_options *o);
void gw_options_free(struct gw_options *o);

/*
 * Fill o from argv (argv[1] is the mode, or --help/--version were handled
 * by the caller): a --config file first, then the other options, which
 * override it.  Returns -1 to go on, or an exit status after a message.
 */
int gw_options_parse(struct gw_options *o, int argc, char **argv);

/* The whole --help text. */
void gw_usage(FILE *out);

/* ---- log.c ---------------------------------------------------------------- */

enum gw_level { GW_ERR = 3, GW_WARN = 4, GW_INFO = 6, GW_DEBUG = 7 };

/*
 * One line on stderr.  Under systemd (JOURNAL_STREAM set) it starts with
 * the syslog level as "<N>" (sd-daemon(3)), which journald strips and
 * keeps as the priority; otherwise with "mbsc-gateway: " and, for errors
 * and warnings, "error: " / "warning: ".
 */
void gw_log(enum gw_level level, const char *fmt, ...) GW_PRINTF(2, 3);

/* Debug lines are dropped unless this is set (--verbose). */
void gw_log_set_verbose(int on);

/*
 * Tell systemd (sd_notify protocol, sd_notify(3)): one datagram with text
 * to the AF_UNIX socket named by $NOTIFY_SOCKET ("@..." is an abstract
 * socket).  Nothing happens when the variable is not set.
 */
void gw_notify(const char *text);

/* ---- control.c ------------------------------------------------------------ */

/* Writes the status lines (one per line, '\n'-terminated) to out. */
typedef void (*gw_status_fn)(void *user, FILE *out);

struct gw_control;
struct pollfd;

/*
 * Control clients are served from the mode's poll() loop without blocking
 * it: at most GW_CONTROL_MAX_CLIENTS at once (the socket is not polled
 * while they are there), each closed GW_CONTROL_DEADLINE_MS after it was
 * accepted, answered or not.
 */
#define GW_CONTROL_MAX_CLIENTS 4u
#define GW_CONTROL_DEADLINE_MS 1000
/* The most pollfd entries gw_control_pollfds fills: the socket and each client. */
#define GW_CONTROL_FDS (1u + GW_CONTROL_MAX_CLIENTS)

/* Listen on path (mode 0600; a stale socket there is replaced); NULL and why on failure. */
struct gw_control *gw_control_open(const char *path, char *why, size_t why_len);
/* What to poll: fills up to GW_CONTROL_FDS entries of pfd, returns how many (0 for NULL). */
size_t gw_control_pollfds(const struct gw_control *c, struct pollfd *pfd);
/*
 * After poll(): the n entries gw_control_pollfds filled, with their
 * revents.  Accepts, reads the request, answers with the status from fn,
 * and closes the clients that are done or past their deadline.
 */
void gw_control_io(struct gw_control *c, const struct pollfd *pfd, size_t n, gw_status_fn fn,
                   void *user, int64_t now_ns);
/* Milliseconds until a client's deadline (-1: no client). */
int gw_control_timeout(const struct gw_control *c, int64_t now_ns);
/* Close the clients and the socket, and remove it. */
void gw_control_close(struct gw_control *c);
/* SIGUSR1: the same lines in the log, each after "status: ". */
void gw_status_log(gw_status_fn fn, void *user);
/* "mbsc-gateway status --control PATH": print the gateway's status; an exit status. */
int gw_status_command(int argc, char **argv);

/* ---- signals.c ------------------------------------------------------------ */

#define GW_SIG_RELOAD 0x1u /* SIGHUP */
#define GW_SIG_STOP   0x2u /* SIGTERM, SIGINT */
#define GW_SIG_STATUS 0x4u /* SIGUSR1 */

/* Install the handlers (and ignore SIGPIPE); -1 on failure with a log line. */
int gw_signals_init(void);
/* The read end of the self-pipe, for poll(). */
int gw_signals_fd(void);
/* The signals that came since the last call (GW_SIG_* bits). */
unsigned gw_signals_take(void);

/* ---- adu_check.c ---------------------------------------------------------- */

/*
 * Length of the ADU whose first 6 bytes are hdr, from its MBAP length
 * field; 0 if the header cannot start a Modbus/TCP ADU (protocol id not 0,
 * length field below 2 or above 254).
 */
size_t gw_adu_length(const uint8_t *hdr);

/*
 * A request that passed the MBAP check: 0 if it may be forwarded, or the
 * exception code to answer with (byte counts and quantities of the
 * functions the adapter knows, src/modbus/adu.c; others pass unchecked,
 * the policy decides whether they may be used at all).
 */
uint8_t gw_check_request(const uint8_t *adu, size_t len);

/*
 * An answer from upstream to the request req: NULL if it is a well-formed
 * answer to that request (same unit id, the function code or its exception,
 * byte counts that match the request), else what is wrong with it.
 */
const char *gw_check_answer(const uint8_t *req, size_t req_len, const uint8_t *ans, size_t ans_len);

/* The 9-byte exception answer to req with code. */
size_t gw_exception(const uint8_t *req, uint8_t code, uint8_t out[9]);

/* First address the PDU of adu names (0 when it names none), for logs. */
unsigned gw_first_address(const uint8_t *adu, size_t len);

/* ---- upstream.c ----------------------------------------------------------- */

enum gw_up_state {
    GW_UP_IDLE = 0,   /* not connected, may connect now */
    GW_UP_CONNECTING, /* TCP connect (and handshake) under way */
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
};

/*
 * An upstream to hostport: plain Modbus/TCP when cfg is NULL, otherwise an
 * mbsc session as master on cfg (borrowed; gw_upstream_set_config replaces
 * it for the next connection).  Nothing connects until gw_upstream_tick().
 */
struct gw_upstream *gw_upstream_new(const char *hostport, const mbsc_config *cfg,
                                    unsigned connect_timeout_ms, unsigned backoff_max_ms,
                                    const struct gw_upstream_hooks *hooks);
void gw_upstream_free(struct gw_upstream *u);
void gw_upstream_set_config(struct gw_upstream *u, const mbsc_config *cfg);
enum gw_up_state gw_upstream_state(const struct gw_upstream *u);
/* "HOST:PORT" of the upstream as configured. */
const char *gw_upstream_name(const struct gw_upstream *u);
/* The cipher of the mbsc session, NULL for plain or when not ready. */
const mbsc_cipher *gw_upstream_cipher(const struct gw_upstream *u);
/* Connections made so far (for tests and the status view). */
uint64_t gw_upstream_connects(const struct gw_upstream *u);

/* Queue one ADU (state READY); MBSC_ERR_WOULD_BLOCK when there is no room now. */
int gw_upstream_send(struct gw_upstream *u, const uint8_t *adu, size_t len);

/* Descriptor and events for poll() (-1 and 0 when there is none). */
int gw_upstream_fd(const struct gw_upstream *u);
short gw_upstream_events(const struct gw_upstream *u);
/* After poll(): move bytes, deliver answers, detect the end. */
void gw_upstream_io(struct gw_upstream *u, short revents);
/* Time-driven work: start a connection, expire a connect or handshake. */
void gw_upstream_tick(struct gw_upstream *u, int64_t now_ns);
/* Milliseconds until gw_upstream_tick() has work (-1: none). */
int gw_upstream_timeout(const struct gw_upstream *u, int64_t now_ns);
/* Drop the connection now (a malformed answer broke the framing). */
void gw_upstream_reset(struct gw_upstream *u, const char *why);

/* ---- mux.c ---------------------------------------------------------------- */

/*
 * Re-entrancy (the rule both modes rely on): the multiplexer never calls
 * reply while it walks its own queues, flight slots or groups.  Answers,
 * its own and upstream's, go to an outbox first; the outermost call into
 * the multiplexer (gw_mux_submit, gw_mux_forget, gw_mux_tick, and the
 * upstream hooks) delivers them one by one just before it returns, when
 * nothing of the multiplexer is being walked.  So reply may call
 * gw_mux_forget (its requester is gone) and gw_mux_submit (the next
 * request) on the same multiplexer: those calls only change queues and
 * the outbox, and what they answer is delivered by the same outermost
 * call.  reply must not call gw_mux_free.  The caller's own lists are the
 * caller's to protect: a reply that finds its requester gone marks it and
 * frees it at the end of the loop turn (client_mode.c), or the library
 * does (mbsc_server defers the free of a closed connection).
 */

struct gw_mux;

/* An answer (or an exception made by the gateway) for requester origin. */
typedef void (*gw_reply_fn)(void *user, uint64_t origin, const uint8_t *adu, size_t len);

struct gw_mux_config {
    unsigned max_in_flight;   /* >= 1 */
    unsigned max_queue;       /* requests queued per group, >= 1 */
    unsigned timeout_ms;      /* from submission to answer */
    uint8_t unreachable_code; /* exception when the upstream cannot be reached */
};

/*
 * dropped counts every answer from upstream that went to nobody: late
 * (its request had timed out), malformed, or for no request sent; late
 * counts the first kind alone.
 */
struct gw_mux_stats {
    uint64_t forwarded, answered, timed_out, unreachable, busy, dropped, late;
};

/* A multiplexer over u (borrowed); it sets u's hooks to itself. */
struct gw_mux *gw_mux_new(const struct gw_mux_config *cfg, gw_reply_fn reply, void *user);
/* The hooks to give gw_upstream_new (they point to mux). */
struct gw_upstream_hooks gw_mux_hooks(struct gw_mux *mux);
void gw_mux_attach(struct gw_mux *mux, struct gw_upstream *u);
void gw_mux_free(struct gw_mux *mux);

/*
 * One request (a checked ADU) from origin, which belongs to group (the
 * requester's identity: server mode, the master's key; client mode, the
 * local client itself).  Groups take turns upstream, and so do the
 * origins of one group; max_queue counts a group's queued requests.
 * Answered through reply, at once (upstream unreachable, queue full) or
 * later.  MBSC_OK or MBSC_ERR_NOMEM.
 */
int gw_mux_submit(struct gw_mux *mux, uint64_t origin, uint64_t group, const uint8_t *adu,
                  size_t len, int64_t now_ns);
/* The origin is gone: forget its queued requests, drop its answers. */
void gw_mux_forget(struct gw_mux *mux, uint64_t origin);
/* Requests of origin queued or in flight. */
unsigned gw_mux_pending(const struct gw_mux *mux, uint64_t origin);
/* Requests queued or in flight, all origins. */
unsigned gw_mux_total(const struct gw_mux *mux);
/* Expire requests, send what may go. */
void gw_mux_tick(struct gw_mux *mux, int64_t now_ns);
int gw_mux_timeout(const struct gw_mux *mux, int64_t now_ns);
void gw_mux_get_stats(const struct gw_mux *mux, struct gw_mux_stats *st);

/* ---- secrets.c ------------------------------------------------------------ */

/* Everything a reload replaces at once. */
struct gw_secrets {
    mbsc_config *cfg;
    mbsc_allowlist *allow; /* server mode */
    mbsc_policy *policy;   /* server mode, NULL without --policy */
};

/*
 * Load the key, PSK, allow-list (server) or peer key (client) and policy
 * named by o into s.  0, or -1 with why naming the file (and line).
 */
int gw_secrets_load(struct gw_secrets *s, const struct gw_options *o, char *why, size_t why_len);
void gw_secrets_free(struct gw_secrets *s);

/* ---- clock.c -------------------------------------------------------------- */

int64_t gw_now_ns(void);
/* Milliseconds from now until at (rounded up, >= 0). */
int gw_ms_until(int64_t at_ns, int64_t now_ns);
/* Keep the smaller poll() timeout (-1 is infinite). */
int gw_min_timeout(int a, int b);

/* ---- modes --------------------------------------------------------------- */

int gw_server_mode(const struct gw_options *o);
int gw_client_mode(const struct gw_options *o);

#endif /* MBSC_GATEWAY_H */
