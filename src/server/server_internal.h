/* SPDX-License-Identifier: ISC */
/*
 * server_internal.h - what the files of the server (src/server/) share.
 * Not installed.
 *
 *   poller.c     epoll on Linux, poll() elsewhere, behind one small interface;
 *   admission.c  accept, budgets, eviction, the reserve descriptor;
 *   refusals.c   refusals counted by reason, one log line per interval;
 *   refusal_cause.c  what a refusal most likely means (wrong peer key, PSK,
 *                not an mbsc client...), from how far the connection got;
 *   peer.c       one connection: I/O through its link, confirmation,
 *                requests and answers, closing;
 *   events.c     events to the application;
 *   server.c     the server object, the loop and the public calls.
 */
#ifndef MBSC_SERVER_INTERNAL_H
#define MBSC_SERVER_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sock/sock.h"
#include "internal.h"
#include "mbsc/link.h"
#include "mbsc/conn.h"
#include "mbsc/server.h"
#include "session/session_internal.h"

/* ---- poller.c -------------------------------------------------------------- */

struct srv_ready {
    uint64_t key;
    short revents; /* POLLIN, POLLOUT, POLLERR, POLLHUP */
};

struct srv_poll_entry {
    int fd;
    short events;
    uint64_t key;
};

struct srv_poller {
    int epfd; /* -1 with the poll() fallback */
    /* poll() fallback: the watched descriptors, and where each fd sits. */
    struct srv_poll_entry *entries;
    size_t n_entries, cap_entries;
    size_t *index_of_fd; /* entries index + 1, 0 for none */
    size_t cap_index;
    void *pfds; /* struct pollfd[cap_entries] */
};

int srv_poller_init(struct srv_poller *p, char *why, size_t why_len);
void srv_poller_close(struct srv_poller *p);
int srv_poller_fd(const struct srv_poller *p);
int srv_poller_add(struct srv_poller *p, int fd, uint64_t key, short events);
int srv_poller_mod(struct srv_poller *p, int fd, uint64_t key, short events);
void srv_poller_del(struct srv_poller *p, int fd);
/* Up to cap ready descriptors; 0 on timeout or EINTR, MBSC_ERR_IO otherwise. */
int srv_poller_wait(struct srv_poller *p, struct srv_ready *out, int cap, int timeout_ms);

/* ---- refusals.c ------------------------------------------------------------ */

enum srv_refusal {
    REFUSED_EVICTED,     /* unconfirmed budget full: the oldest made room */
    REFUSED_TIMEOUT,     /* handshake deadline */
    REFUSED_PER_ADDRESS, /* too many unconfirmed from one address */
    REFUSED_FULL,        /* every connection slot taken by confirmed sessions */
    REFUSED_FD,          /* out of descriptors */
    REFUSED_UNKNOWN_KEY, /* master key not in the allow-list */
    REFUSED_PER_KEY,     /* the master key holds its sessions' worth already */
    REFUSED_HANDSHAKE,   /* malformed or undecryptable handshake, bad frame */
    REFUSED_REPLAY,      /* message 1 seen before */
    REFUSED_CLOSED,      /* the client hung up before confirmation */
    REFUSED_OTHER,       /* out of memory, socket errors */

    /* Likely causes, finer than the reasons above (refusal_cause.c). */
    REFUSED_WRONG_SLAVE_KEY, /* message 1 made for another slave public key */
    REFUSED_NO_CIPHER,       /* no cipher of the offer is allowed here */
    REFUSED_PLAIN_MODBUS,    /* the first bytes are a plain Modbus/TCP request */
    REFUSED_NOT_MBSC,        /* the first bytes are no mbsc handshake */
    REFUSED_PSK,             /* the master hung up after message 2: PSKs differ */
    REFUSED_SILENT,          /* nothing received before the handshake deadline */
    REFUSED_PROBE,           /* closed without sending anything */
    REFUSED_COUNT
};

/* Unknown keys remembered so that each is printed once. */
#define SRV_SEEN_KEYS 64u
/* Unknown keys printed per log interval at most (the rest are counted). */
#define SRV_KEY_LINES_PER_INTERVAL 8u

/* Ephemeral keys of recent message 1s (replay check), oldest overwritten. */
#define SRV_RECENT_EPHEMERALS 4096u

struct srv_replays {
    uint64_t tag[SRV_RECENT_EPHEMERALS]; /* first 8 bytes, for a fast scan */
    uint8_t key[SRV_RECENT_EPHEMERALS][MBSC_KEY_BYTES];
    size_t n, next;
};

struct srv_refusals {
    uint64_t counts[REFUSED_COUNT]; /* since the last line */
    uint64_t total;                 /* since the last line */
    int64_t next_line_ns;           /* a line may go out at or after this */
    uint8_t seen[SRV_SEEN_KEYS][MBSC_KEY_BYTES];
    size_t n_seen, next_seen;
    unsigned key_lines; /* printed in this interval */
};

/* ---- connections --------------------------------------------------------------- */

/* Bytes of a connection kept to recognise what spoke (an MBAP header is 7). */
#define SRV_FIRST_BYTES 8u

struct srv_conn {
    mbsc_server_conn_id id;
    int fd; /* -1 once closed (the memory goes at the end of the step) */
    mbsc_session *s;
    struct mbsc_link link;
    struct mbsc_server_conn_info info;
    int confirmed;                /* CONNECTED reported */
    int awaiting;                 /* a request is with the application */
    int in_callback;              /* inside the request callback */
    int ready;                    /* on the ready list: answered later, process next step */
    int progressed;               /* message 1 accepted (message 2 sent), not yet confirmed */
    short watched;                /* events registered with the poller */
    int64_t due_ns;               /* unconfirmed: handshake deadline; confirmed: last activity */
    struct srv_conn *prev, *next; /* in srv->unconfirmed or srv->confirmed */

    /* The client's first bytes, looked at before the session reads them (refusal_cause.c). */
    uint8_t first[SRV_FIRST_BYTES];
    uint8_t n_first, peeked; /* how many; 1 once looked at */
    struct srv_conn *next_ready, *next_dead;
    size_t slot;
    uint8_t ip[16]; /* source address, for the per-address budget */
    uint8_t ip_len;
    char peer[MBSC_ADDRSTRLEN];
    /* Copied at confirmation: a failed session forgets them, the CLOSED event not. */
    uint8_t key[MBSC_KEY_BYTES]; /* the master's static key (public) */
    char name[MBSC_ALLOWLIST_NAME_MAX + 1];
    char role[MBSC_ALLOWLIST_NAME_MAX + 1];
};

struct srv_list {
    struct srv_conn *head, *tail; /* oldest first */
    unsigned n;
};

struct mbsc_server {
    const mbsc_config *cfg;     /* borrowed */
    mbsc_listener *listener;    /* NULL after mbsc_server_stop_accepting() */
    int lfd;                    /* -1 then */
    char addr[MBSC_ADDRSTRLEN]; /* the listener's address, kept past its close */
    struct srv_poller poller;
    int wake[2]; /* self-pipe: stop() writes, the poller wakes */
    atomic_int stop;
    int reserve_fd; /* closed to accept when out of descriptors */

    mbsc_server_request_fn request_fn;
    void *request_user;
    mbsc_server_event_fn event_fn;
    void *event_user;

    /* Limits in force. */
    unsigned max_unconfirmed, max_connections, max_per_address, max_per_key;
    unsigned handshake_ms, idle_ms, log_ms;
    unsigned dead_peer_ms; /* TCP keepalive on accepted sockets (0: none) */
    unsigned fd_cap;       /* RLIMIT_NOFILE - MBSC_SERVER_FD_RESERVE */

    /* Connections by slot (ids carry the slot), and by state. */
    struct srv_conn **slots;
    size_t n_slots;
    size_t *free_slots;
    size_t n_free;
    uint64_t next_seq;
    struct srv_list unconfirmed, confirmed;
    struct srv_conn *ready_head, *dead_head;

    int64_t accept_resume_ns; /* accepting paused until then (reserve lost) */
    struct mbsc_server_stats stats;
    struct srv_refusals refusals;
    struct srv_replays replays;
};

/* Poller keys that are not connections (connection ids are >= 1 << SRV_SLOT_BITS). */
#define SRV_KEY_LISTENER 1u
#define SRV_KEY_WAKE     2u
#define SRV_SLOT_BITS    24u

/* server.c */
struct srv_conn *srv_lookup(const mbsc_server *srv, mbsc_server_conn_id id);

/* events.c */
void srv_emit(mbsc_server *srv, enum mbsc_server_event_type type,
              const struct mbsc_server_conn_info *conn, int error, const char *detail);

/* refusals.c */
void srv_refusals_init(struct srv_refusals *r);
void srv_refuse(mbsc_server *srv, enum srv_refusal why);
void srv_refusals_unknown_key(mbsc_server *srv, const uint8_t key[MBSC_KEY_BYTES],
                              const char *peer);
void srv_refusals_flush(mbsc_server *srv, int64_t now, int force);
int64_t srv_refusals_due(const mbsc_server *srv);

/* refusal_cause.c */
void srv_refusal_peek(struct srv_conn *c);
enum srv_refusal srv_refusal_cause(const struct srv_conn *c, int err, enum srv_refusal why);

/* peer.c */
struct srv_conn *srv_conn_new(mbsc_server *srv, int fd, int *err);
void srv_conn_io(mbsc_server *srv, struct srv_conn *c, short revents);
void srv_conn_process(mbsc_server *srv, struct srv_conn *c);
void srv_conn_end(mbsc_server *srv, struct srv_conn *c, int err, const char *detail,
                  enum srv_refusal why);
void srv_conn_free(struct srv_conn *c);
void srv_list_push(struct srv_list *l, struct srv_conn *c);
void srv_list_remove(struct srv_list *l, struct srv_conn *c);

/* replays.c */
int srv_replay_seen(void *srv, const uint8_t ephemeral[MBSC_KEY_BYTES]);

/* admission.c */
void srv_accept_some(mbsc_server *srv);
int srv_reserve_open(mbsc_server *srv);
unsigned srv_fd_cap(void);

#endif /* MBSC_SERVER_INTERNAL_H */
