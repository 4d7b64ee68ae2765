/* SPDX-License-Identifier: ISC */
/*
 * tls_masters.c - Modbus/TCP Security masters (tls_masters.h).
 *
 * A connection goes through three states: admitted (its handshake under
 * the budgets and deadline of tls_admission.c), open (a master: requests
 * in, answers out) and closing (marked: its watch removed, its socket
 * closed and its slot given back at once, so that a newcomer of the same
 * turn can have both; the struct itself is freed by the task at the end of
 * the loop's turn, when nothing walks the masters or holds it).
 *
 * Every refusal happens inside the handshake, so that the client gets a
 * fatal alert and knows why: OpenSSL sends handshake_failure (no
 * certificate), unknown_ca, certificate_expired, bad_certificate...; the
 * role is checked in the verify callback, where a refusal is a verify
 * error like the others.  A refused handshake is counted by reason
 * (tls_admission.c sums them up in one line per interval) and, a few per
 * interval, described on a line of its own with the certificate's
 * subject.
 *
 * Requests are cut out of the TLS byte stream by the MBAP length field
 * (Modbus Messaging on TCP/IP Implementation Guide v1.0b, 3.1.3); a
 * header that cannot start an ADU ends the connection, as for a plain
 * client in client mode.  Answers may come back from inside the request
 * hook, or from the multiplexer's delivery: they are only appended and
 * flushed, and what that frees up (room for the next requests) is picked
 * up by the same end-of-turn task, never from inside the reply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#include <mbsc.h>

#include "clock.h"
#include "log.h"
#include "tls_admission.h"
#include "tls_ctx.h"
#include "tls_io.h"
#include "tls_masters.h"
#include "tls_role.h"

#define SLOT_BITS            20u
#define MAX_SLOTS            (1u << SLOT_BITS)
#define MASTER_OUT           (32u * MBSC_ADU_MAX) /* answers waiting for the master to read */
#define SUBJECT_MAX          256u
#define DEFAULT_MAX_PER_CERT 4u

/* Reasons a handshake is refused, counted by tls_admission.c (compared by address). */
static const char R_NO_CERT[] = "no client certificate";
static const char R_UNTRUSTED[] = "client certificate not signed by the tls-ca";
static const char R_EXPIRED[] = "client certificate expired or not yet valid";
static const char R_BAD_CERT[] = "client certificate refused by the chain check";
static const char R_ROLE[] = "role extension malformed, repeated or over 64 bytes";
static const char R_VERSION[] = "TLS version below 1.2";
static const char R_NO_SHARED[] = "no cipher suite in common";
static const char R_NOT_TLS[] = "not TLS (a plain Modbus/TCP client on the TLS port?)";
static const char R_ALERT[] = "alert from the client (does it trust this gateway's certificate?)";
static const char R_CLOSED[] = "closed by the client before the handshake completed";
static const char R_PER_CERT[] = "over the connections allowed per certificate";
static const char R_TLS_OTHER[] = "other TLS errors";

struct conn {
    struct gw_adm_conn adm; /* the admission's part */
    struct gw_tls_masters *t;
    uint32_t slot;
    uint64_t origin, group;
    int fd;
    SSL *ssl;
    struct gw_tls_io io;
    struct gw_watch *watch;
    int open;    /* the handshake completed: a master */
    int closing; /* marked: out of the slots, freed at the end of the turn */
    struct conn *next_closing;
    int pump; /* its buffered requests wait for room */
    /* What the verify callback saw. */
    int verify_error, verify_depth;
    enum gw_tls_role_status role_status;
    char subject[SUBJECT_MAX];
    char role[GW_TLS_ROLE_MAX + 1];
    time_t since;
    int64_t last_ns; /* the last request, for the idle timeout */
    uint64_t requests, refusals;
    unsigned unanswered;
    uint8_t in[2 * MBSC_ADU_MAX];
    size_t in_len;
    uint8_t out[MASTER_OUT];
    size_t out_len;
    char why[192]; /* why it closed (the first reason) */
};

struct gw_tls_masters {
    struct gw_loop *loop;
    mbsc_listener *listener;
    struct gw_adm *adm;
    const struct gw_tls *tls;
    struct gw_tls_master_limits lim;
    struct gw_tls_master_hooks hooks;
    struct conn **slots;
    struct conn *closing; /* marked this turn, to free at its end */
    uint32_t *free_slots;
    size_t n_slots, n_free, n_open;
    uint64_t next_seq;
    int task_planned;
    struct gw_timer *idle_timer;
    uint8_t group_key[crypto_shorthash_KEYBYTES];
    char addr[MBSC_ADDRSTRLEN];
};

static void on_io(void *data, unsigned happened);

/* ---- closing, at the end of the turn ---- */

static void after_turn(void *data);

static void plan_task(struct gw_tls_masters *t)
{
    if (!t->task_planned && gw_loop_defer(t->loop, after_turn, t) == 0)
        t->task_planned = 1;
    /* Out of memory for the task: the next plan (or the free) does it. */
}

/* Give back c's slot and descriptor (the struct stays until free_conn). */
static void release(struct gw_tls_masters *t, struct conn *c)
{
    if (c->fd < 0)
        return;
    t->slots[c->slot] = NULL;
    t->free_slots[t->n_free++] = c->slot;
    gw_watch_remove(c->watch);
    c->watch = NULL;
    close(c->fd);
    c->fd = -1;
}

static void free_conn(struct gw_tls_masters *t, struct conn *c)
{
    release(t, c);
    SSL_free(c->ssl);
    sodium_memzero(c, sizeof *c); /* process data, not kept */
    free(c);
}

/* c is done for: nothing more is read or written; freed at the end of the turn. */
static void mark_closed(struct conn *c, const char *why, int gracefully)
{
    struct gw_tls_masters *t = c->t;

    if (c->closing)
        return;
    c->closing = 1;
    snprintf(c->why, sizeof c->why, "%s", why);
    gw_watch_remove(c->watch);
    c->watch = NULL;
    /*
     * A close_notify if the connection is still sound (best effort, never
     * waited for): also for a handshake that completed but was refused
     * after (per certificate), so that the client reads a close.
     */
    if (gracefully && SSL_is_init_finished(c->ssl))
        (void)SSL_shutdown(c->ssl);
    ERR_clear_error();
    if (c->open) {
        t->n_open--;
        gw_adm_closed(t->adm, &c->adm);
        gw_log(GW_INFO, "TLS master \"%s\" from %s disconnected: %s", c->subject, c->adm.peer,
               c->why);
        t->hooks.closed(t->hooks.user, c->origin);
    }
    release(t, c);
    c->next_closing = t->closing;
    t->closing = c;
    plan_task(t);
}

/* ---- the handshake ---- */

static void subject_of(const X509 *x, char *out, size_t len)
{
    BIO *b = BIO_new(BIO_s_mem());
    long n = 0;
    char *p = NULL;

    snprintf(out, len, "?");
    if (b == NULL)
        return;
    /* RFC 2253 form, control and non-ASCII bytes escaped: safe in a log line. */
    if (X509_NAME_print_ex(b, X509_get_subject_name(x), 0,
                           XN_FLAG_RFC2253 & ~(unsigned long)ASN1_STRFLGS_ESC_MSB) >= 0)
        n = BIO_get_mem_data(b, &p);
    if (n > 0 && p != NULL)
        snprintf(out, len, "%.*s", (int)(n < (long)len ? n : (long)len - 1), p);
    BIO_free(b);
}

/*
 * OpenSSL's chain check, once per certificate, the leaf (depth 0) last:
 * the first error is kept for the log, and at the leaf the role extension
 * is read; a bad one fails the check like a bad signature would.
 */
static int verify_cb(int ok, X509_STORE_CTX *x)
{
    SSL *ssl = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct conn *c = ssl != NULL ? SSL_get_app_data(ssl) : NULL;
    X509 *leaf = X509_STORE_CTX_get0_cert(x);

    if (c == NULL)
        return 0;
    if (c->subject[0] == '\0' && leaf != NULL)
        subject_of(leaf, c->subject, sizeof c->subject);
    if (!ok) {
        if (c->verify_error == 0) {
            c->verify_error = X509_STORE_CTX_get_error(x);
            c->verify_depth = X509_STORE_CTX_get_error_depth(x);
        }
        return 0;
    }
    if (X509_STORE_CTX_get_error_depth(x) == 0) {
        c->role_status = gw_tls_cert_role(X509_STORE_CTX_get_current_cert(x), c->role);
        if (c->role_status != GW_TLS_ROLE_OK && c->role_status != GW_TLS_ROLE_ABSENT) {
            X509_STORE_CTX_set_error(x, X509_V_ERR_APPLICATION_VERIFICATION);
            return 0;
        }
    }
    return 1;
}

/* Why the handshake of c failed: a reason for the count, and a line for the log (or ""). */
static const char *refusal(struct conn *c, char *line, size_t len)
{
    const char *peer = c->adm.peer;

    line[0] = '\0';
    if (c->role_status != GW_TLS_ROLE_OK && c->role_status != GW_TLS_ROLE_ABSENT) {
        snprintf(line, len, "TLS: certificate \"%s\" from %s refused: %s", c->subject, peer,
                 gw_tls_role_status_text(c->role_status));
        return R_ROLE;
    }
    if (c->verify_error != 0) {
        int e = c->verify_error;

        snprintf(line, len, "TLS: certificate \"%s\" from %s refused: %s (depth %d)", c->subject,
                 peer, X509_verify_cert_error_string(e), c->verify_depth);
        if (e == X509_V_ERR_CERT_HAS_EXPIRED || e == X509_V_ERR_CERT_NOT_YET_VALID)
            return R_EXPIRED;
        if (e == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
            e == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT ||
            e == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
            e == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT ||
            e == X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE ||
            e == X509_V_ERR_CERT_SIGNATURE_FAILURE)
            return R_UNTRUSTED;
        return R_BAD_CERT;
    }
    switch (c->io.reason) {
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
        snprintf(line, len,
                 "TLS: %s sent no client certificate: handshake refused with a fatal "
                 "alert",
                 peer);
        return R_NO_CERT;
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_WRONG_SSL_VERSION:
        snprintf(line, len,
                 "TLS: %s offered a TLS version below 1.2: refused (protocol_version "
                 "alert)",
                 peer);
        return R_VERSION;
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_NO_CIPHERS_AVAILABLE:
    case SSL_R_NO_SHARED_GROUPS: return R_NO_SHARED;
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
    case SSL_R_PACKET_LENGTH_TOO_LONG: return R_NOT_TLS;
    default: break;
    }
    /* Alerts received: OpenSSL's reasons for them start at SSL_AD_REASON_OFFSET. */
    if (c->io.reason >= SSL_AD_REASON_OFFSET) {
        snprintf(line, len, "TLS: %s ended the handshake: %s", peer, c->io.error);
        return R_ALERT;
    }
    return R_TLS_OTHER;
}

/* The keyed hash of the certificate's public key: one group per master key, as for mbsc. */
static uint64_t group_of(const struct gw_tls_masters *t, X509 *x)
{
    uint8_t h[crypto_shorthash_BYTES], *der = NULL;
    int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
    uint64_t g = 0;
    size_t i;

    if (n <= 0)
        return 0;
    crypto_shorthash(h, der, (unsigned long long)n, t->group_key);
    OPENSSL_free(der);
    for (i = 0; i < sizeof h; i++)
        g = g << 8 | h[i];
    return g;
}

static size_t open_with_group(const struct gw_tls_masters *t, uint64_t group)
{
    size_t i, n = 0;

    for (i = 0; i < t->n_slots; i++)
        n += t->slots[i] != NULL && t->slots[i]->open && !t->slots[i]->closing &&
             t->slots[i]->group == group;
    return n;
}

static void arm_idle(struct gw_tls_masters *t, int64_t due_ns)
{
    if (t->lim.idle_ms != 0 && (!gw_timer_armed(t->idle_timer) || due_ns < 0))
        gw_timer_at(t->idle_timer, due_ns < 0 ? gw_now_ns() : due_ns);
}

/* The handshake completed: c becomes a master, or is refused (per certificate). */
static void opened(struct conn *c)
{
    struct gw_tls_masters *t = c->t;
    X509 *x = SSL_get0_peer_certificate(c->ssl);

    if (x == NULL || SSL_get_verify_result(c->ssl) != X509_V_OK) {
        /* Cannot happen with SSL_VERIFY_FAIL_IF_NO_PEER_CERT: refuse rather than trust. */
        gw_adm_refuse(t->adm, &c->adm, R_BAD_CERT);
        mark_closed(c, "no verified certificate", 0);
        return;
    }
    c->group = group_of(t, x);
    if (open_with_group(t, c->group) >= t->lim.max_per_cert) {
        char line[SUBJECT_MAX + 160];

        snprintf(line, sizeof line,
                 "TLS: certificate \"%s\" from %s refused: it holds %u connections already",
                 c->subject, c->adm.peer, t->lim.max_per_cert);
        gw_adm_detail(t->adm, line);
        gw_adm_refuse(t->adm, &c->adm, R_PER_CERT);
        mark_closed(c, "over the connections allowed per certificate", 1);
        return;
    }
    gw_adm_confirm(t->adm, &c->adm);
    c->open = 1;
    c->since = time(NULL);
    c->last_ns = gw_now_ns();
    t->n_open++;
    arm_idle(t, c->last_ns + (int64_t)t->lim.idle_ms * 1000000);
    gw_log(GW_INFO, "TLS master \"%s\" (role %s) connected from %s with %s %s", c->subject,
           c->role[0] != '\0' ? c->role : "none", c->adm.peer, gw_tls_io_version(&c->io),
           gw_tls_io_suite(&c->io));
}

static void handshake(struct conn *c)
{
    struct gw_tls_masters *t = c->t;
    int r = gw_tls_io_handshake(&c->io);
    char line[SUBJECT_MAX + 256];
    const char *why;

    if (!c->adm.progressed && !SSL_in_before(c->ssl))
        gw_adm_progressed(t->adm, &c->adm);
    if (r == GW_TLS_IO_AGAIN)
        return;
    if (r == GW_TLS_IO_DONE) {
        opened(c);
        return;
    }
    why = r == GW_TLS_IO_CLOSED ? R_CLOSED : refusal(c, line, sizeof line);
    if (r != GW_TLS_IO_CLOSED && line[0] != '\0')
        gw_adm_detail(t->adm, line);
    gw_adm_refuse(t->adm, &c->adm, why);
    mark_closed(c, why, 0);
}

/* ---- requests and answers ---- */

/* Send what waits; 0, or -1 once c is closed. */
static int flush(struct conn *c)
{
    while (c->out_len > 0) {
        long n = gw_tls_io_write(&c->io, c->out, c->out_len);

        if (n == 0)
            return 0; /* the socket is full: wait for it */
        if (n < 0) {
            mark_closed(c, c->io.error, 0);
            return -1;
        }
        memmove(c->out, c->out + n, c->out_len - (size_t)n);
        c->out_len -= (size_t)n;
    }
    return 0;
}

static int may_read(const struct conn *c)
{
    return c->open && !c->closing && c->unanswered < c->t->lim.max_queue &&
           c->in_len < sizeof c->in;
}

static void rewatch(struct conn *c)
{
    if (!c->closing)
        (void)gw_watch_set(
            c->watch, gw_tls_io_events(&c->io, c->open ? may_read(c) : 0) |
                          (c->open && c->io.retry_len == 0 && c->out_len > 0 ? GW_IO_OUT : 0u));
}

/* Hand on the whole requests in c->in while c may have more unanswered; -1 once c is closed. */
static int take_requests(struct conn *c)
{
    struct gw_tls_masters *t = c->t;
    size_t at = 0;

    while (!c->closing && c->unanswered < t->lim.max_queue &&
           c->in_len - at >= MBSC_MBAP_LENGTH_END) {
        uint8_t adu[MBSC_ADU_MAX];
        size_t n = mbsc_adu_length(c->in + at);
        struct gw_tls_master_info mi;

        if (n == 0) {
            mark_closed(c, "not Modbus/TCP (bad MBAP header)", 1);
            return -1;
        }
        if (c->in_len - at < n)
            break;
        /* A copy: the hook may answer at once, and the answer may close c. */
        memcpy(adu, c->in + at, n);
        at += n;
        c->requests++;
        c->unanswered++;
        c->last_ns = gw_now_ns();
        mi.origin = c->origin;
        mi.group = c->group;
        mi.subject = c->subject;
        mi.role = c->role[0] != '\0' ? c->role : NULL;
        mi.peer = c->adm.peer;
        if (t->hooks.request(t->hooks.user, &mi, adu, n))
            c->refusals++;
        sodium_memzero(adu, n); /* plaintext of the session */
    }
    if (c->closing)
        return -1;
    memmove(c->in, c->in + at, c->in_len - at);
    c->in_len -= at;
    return 0;
}

/* Read and hand on requests while c may take more; what TLS has buffered included. */
static void pump(struct conn *c)
{
    for (;;) {
        long n;

        if (take_requests(c) != 0 || !may_read(c))
            break;
        n = gw_tls_io_read(&c->io, c->in + c->in_len, sizeof c->in - c->in_len);
        if (n == GW_TLS_IO_AGAIN)
            break;
        if (n < 0) {
            mark_closed(c, c->io.error, 0);
            return;
        }
        c->in_len += (size_t)n;
    }
    if (!c->closing && c->out_len > 0 && c->io.retry_len == 0)
        (void)flush(c);
    rewatch(c);
}

static void on_io(void *data, unsigned happened)
{
    struct conn *c = data;

    (void)happened;
    if (c->closing)
        return;
    if (!c->open) {
        handshake(c);
        if (c->closing)
            return;
        if (!c->open) {
            rewatch(c); /* what the handshake waits for */
            return;
        }
        /* The master's first request may have come with its Finished. */
    }
    if (c->out_len > 0 && flush(c) != 0)
        return;
    pump(c);
}

void gw_tls_masters_reply(struct gw_tls_masters *t, uint64_t origin, const uint8_t *adu, size_t len)
{
    uint32_t slot = (uint32_t)(origin & (MAX_SLOTS - 1u));
    struct conn *c = slot < t->n_slots ? t->slots[slot] : NULL;

    if (c == NULL || c->origin != origin || c->closing)
        return; /* the master has gone */
    if (c->unanswered > 0)
        c->unanswered--;
    if (len > sizeof c->out - c->out_len) {
        mark_closed(c, "it does not read its answers", 0);
        return;
    }
    memcpy(c->out + c->out_len, adu, len);
    c->out_len += len;
    if (c->io.retry_len == 0 && flush(c) != 0)
        return;
    /* Room for the next requests: read them at the end of the turn, outside any walk. */
    c->pump = 1;
    plan_task(t);
}

/* The end of the turn: requests that were waiting for room, then the masters that closed. */
static void after_turn(void *data)
{
    struct gw_tls_masters *t = data;
    size_t i;

    t->task_planned = 0;
    for (i = 0; i < t->n_slots; i++) {
        struct conn *c = t->slots[i];

        if (c != NULL && c->pump && !c->closing) {
            c->pump = 0;
            pump(c);
        }
    }
    while (t->closing != NULL) {
        struct conn *c = t->closing;

        t->closing = c->next_closing;
        free_conn(t, c);
    }
}

/* ---- admission ---- */

static struct gw_adm_conn *adm_open(void *user, int fd, const char *peer)
{
    struct gw_tls_masters *t = user;
    SSL_CTX *ctx = gw_tls_server_ctx(t->tls);
    struct conn *c;

    (void)peer;
    if (t->n_free == 0 || ctx == NULL || (c = calloc(1, sizeof *c)) == NULL) {
        close(fd);
        return NULL;
    }
    c->t = t;
    c->fd = fd;
    c->ssl = SSL_new(ctx);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, fd) != 1 ||
        (c->watch = gw_watch_add(t->loop, fd, GW_IO_IN, on_io, c)) == NULL) {
        ERR_clear_error();
        SSL_free(c->ssl);
        free(c);
        close(fd);
        return NULL;
    }
    SSL_set_accept_state(c->ssl);
    SSL_set_app_data(c->ssl, c);
    SSL_set_verify(c->ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_cb);
    gw_tls_io_init(&c->io, c->ssl);
    c->role_status = GW_TLS_ROLE_ABSENT;
    c->slot = t->free_slots[--t->n_free];
    c->origin = GW_TLS_ORIGIN_BIT | (++t->next_seq << SLOT_BITS) | c->slot;
    t->slots[c->slot] = c;
    return &c->adm;
}

static void adm_end(void *user, struct gw_adm_conn *a, const char *why)
{
    (void)user;
    mark_closed((struct conn *)(void *)a, why, 0);
}

static void adm_log(void *user, const char *line)
{
    (void)user;
    gw_log(GW_INFO, "%s", line);
}

/* ---- the idle timeout ---- */

static void on_idle_timer(void *data)
{
    struct gw_tls_masters *t = data;
    int64_t now = gw_now_ns(), limit = (int64_t)t->lim.idle_ms * 1000000, next = 0;
    size_t i;

    for (i = 0; i < t->n_slots; i++) {
        struct conn *c = t->slots[i];

        if (c == NULL || !c->open || c->closing)
            continue;
        if (c->last_ns + limit <= now) {
            char why[64];

            snprintf(why, sizeof why, "idle for %u ms", t->lim.idle_ms);
            mark_closed(c, why, 1);
        } else if (next == 0 || c->last_ns + limit < next) {
            next = c->last_ns + limit;
        }
    }
    if (next != 0)
        gw_timer_at(t->idle_timer, next);
}

/* ---- the listener ---- */

struct gw_tls_masters *gw_tls_masters_new(struct gw_loop *loop, const char *hostport,
                                          const struct gw_tls *tls,
                                          const struct gw_tls_master_limits *lim,
                                          const struct gw_tls_master_hooks *hooks, char *why,
                                          size_t why_len)
{
    struct gw_tls_masters *t = calloc(1, sizeof *t);
    struct gw_adm_limits al;
    struct gw_adm_ops ops;
    size_t i;

    if (t == NULL) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    t->loop = loop;
    t->tls = tls;
    t->lim = *lim;
    if (t->lim.max_queue == 0)
        t->lim.max_queue = 1;
    if (t->lim.max_per_cert == 0)
        t->lim.max_per_cert = DEFAULT_MAX_PER_CERT;
    t->hooks = *hooks;
    crypto_shorthash_keygen(t->group_key);
    if (mbsc_listen(hostport, &t->listener, why, why_len) != MBSC_OK) {
        char copy[GW_WHY_SIZE];

        snprintf(copy, sizeof copy, "%s", why);
        snprintf(why, why_len, "listen-tls %s: %s", hostport, copy);
        free(t);
        return NULL;
    }
    (void)mbsc_listener_address(t->listener, t->addr, sizeof t->addr);
    memset(&al, 0, sizeof al);
    al.max_connections = lim->max_connections > MAX_SLOTS ? MAX_SLOTS : lim->max_connections;
    al.handshake_ms = lim->handshake_ms;
    ops.user = t;
    ops.open = adm_open;
    ops.end = adm_end;
    ops.log = adm_log;
    t->adm = gw_adm_new(loop, mbsc_listener_fd(t->listener), &al, &ops, "TLS", why, why_len);
    if (t->adm == NULL) {
        gw_tls_masters_free(t);
        return NULL;
    }
    t->n_slots = gw_adm_max_connections(t->adm);
    t->slots = calloc(t->n_slots, sizeof *t->slots);
    t->free_slots = calloc(t->n_slots, sizeof *t->free_slots);
    t->idle_timer = gw_timer_new(loop, on_idle_timer, t);
    if (t->slots == NULL || t->free_slots == NULL || t->idle_timer == NULL) {
        snprintf(why, why_len, "out of memory");
        gw_tls_masters_free(t);
        return NULL;
    }
    for (i = 0; i < t->n_slots; i++)
        t->free_slots[t->n_free++] = (uint32_t)(t->n_slots - 1 - i);
    return t;
}

void gw_tls_masters_free(struct gw_tls_masters *t)
{
    size_t i;

    if (t == NULL)
        return;
    for (i = 0; i < t->n_slots; i++)
        if (t->slots[i] != NULL)
            free_conn(t, t->slots[i]);
    while (t->closing != NULL) {
        struct conn *c = t->closing;

        t->closing = c->next_closing;
        free_conn(t, c);
    }
    gw_adm_free(t->adm);
    mbsc_listener_close(t->listener);
    gw_timer_free(t->idle_timer);
    free(t->slots);
    free(t->free_slots);
    sodium_memzero(t->group_key, sizeof t->group_key);
    free(t);
}

const char *gw_tls_masters_address(const struct gw_tls_masters *t)
{
    return t->addr;
}

int gw_tls_masters_set_tls(struct gw_tls_masters *t, const struct gw_tls *tls)
{
    X509_STORE *store = gw_tls_server_store(tls);
    int closed = 0;
    size_t i;

    t->tls = tls;
    for (i = 0; i < t->n_slots; i++) {
        struct conn *c = t->slots[i];
        X509_STORE_CTX *vx;
        int ok;

        if (c == NULL || !c->open || c->closing)
            continue;
        vx = X509_STORE_CTX_new();
        ok = store != NULL && vx != NULL &&
             X509_STORE_CTX_init(vx, store, SSL_get0_peer_certificate(c->ssl),
                                 SSL_get_peer_cert_chain(c->ssl)) == 1 &&
             X509_STORE_CTX_set_default(vx, "ssl_client") == 1 && X509_verify_cert(vx) == 1;
        if (!ok) {
            char why[160];

            snprintf(why, sizeof why, "its certificate fails the new tls-ca: %s",
                     vx != NULL ? X509_verify_cert_error_string(X509_STORE_CTX_get_error(vx))
                                : "out of memory");
            mark_closed(c, why, 1);
            closed++;
        }
        X509_STORE_CTX_free(vx);
        ERR_clear_error();
    }
    return closed;
}

void gw_tls_masters_stop_accepting(struct gw_tls_masters *t)
{
    gw_adm_stop(t->adm);
    /* Closed, so that a new connection is refused at once rather than left in the backlog. */
    mbsc_listener_close(t->listener);
    t->listener = NULL;
}

size_t gw_tls_masters_count(const struct gw_tls_masters *t)
{
    return t->n_open;
}

void gw_tls_masters_status(const struct gw_tls_masters *t, FILE *out)
{
    struct gw_adm_stats st;
    size_t i;

    gw_adm_get_stats(t->adm, &st);
    fprintf(out,
            "tls listener on %s, %zu master%s, %u handshake%s under way; accepted %llu, "
            "refused %llu\n",
            t->addr, t->n_open, t->n_open == 1 ? "" : "s", st.unconfirmed,
            st.unconfirmed == 1 ? "" : "s", (unsigned long long)st.accepted,
            (unsigned long long)st.refused);
    for (i = 0; i < t->n_slots; i++) {
        const struct conn *c = t->slots[i];
        char since[32];
        struct tm tm;

        if (c == NULL || !c->open || c->closing)
            continue;
        gmtime_r(&c->since, &tm);
        strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(out,
                "tls-master \"%s\" role %s version %s suite %s from %s connected-since %s "
                "requests %llu refusals %llu\n",
                c->subject, c->role[0] != '\0' ? c->role : "none", gw_tls_io_version(&c->io),
                gw_tls_io_suite(&c->io), c->adm.peer, since, (unsigned long long)c->requests,
                (unsigned long long)c->refusals);
    }
}
