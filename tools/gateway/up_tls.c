/* SPDX-License-Identifier: ISC */
/*
 * up_tls.c - the upstream kind "Modbus/TCP Security": a device that
 * speaks TLS (MB-TCP-Security v36), reached as mbaps://HOST:PORT.
 *
 * The gateway is the TLS client: it shows --upstream-tls-cert (whose role
 * extension, if any, is the role the device gives the gateway), verifies
 * the device's chain against --upstream-tls-ca, and checks that the
 * device's certificate names HOST (as a DNS name, or an IP address for an
 * address), or --upstream-tls-name when the devices' certificates name
 * something else.  HOST also goes out as SNI when it is a name.  The
 * handshake runs in the loop under the connect timeout (upstream.c); then
 * requests go out as they are, and the plaintext that comes back is cut
 * into ADUs by the MBAP length field, as for a plain PLC (up_plain.c).
 * No session is resumed: every connection verifies the device again.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#include "gw.h"
#include "route.h"
#include "tls_ctx.h"
#include "tls_io.h"
#include "up_kinds.h"
#include "upstream_kind.h"

struct gw_up_tls_state {
    SSL *ssl;
    struct gw_tls_io io;
    int done;    /* the handshake completed */
    int refused; /* a send was refused for lack of room: call the room hook once there is */
    uint8_t in[2 * MBSC_ADU_MAX];
    size_t in_len;
    uint8_t out[64u * MBSC_ADU_MAX]; /* a few requests' worth: in flight is at most 64 */
    size_t out_len;
};

/* The name the device's certificate must carry: --upstream-tls-name, or the target's HOST. */
static int expected_name(const struct gw_upstream *u, char *name, size_t len)
{
    const char *forced = gw_tls_upstream_name(u->set.tls);
    char port[8];

    if (forced != NULL) {
        snprintf(name, len, "%s", forced);
        return 0;
    }
    if (mbsc_parse_hostport(gw_route_hostport(u->name), name, len, port, sizeof port) != MBSC_OK)
        return -1;
    if (name[0] == '[') { /* [V6ADDR] */
        size_t n = strlen(name);

        memmove(name, name + 1, n - 1);
        name[n - 2] = '\0';
    }
    return 0;
}

static int is_address(const char *name)
{
    uint8_t buf[16];

    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

static int tls_connected(struct gw_upstream *u, char *why, size_t why_len)
{
    SSL_CTX *ctx = gw_tls_client_ctx(u->set.tls);
    struct gw_up_tls_state *s;
    char name[GW_TARGET_MAX], err[256];
    int ok;

    if (ctx == NULL) {
        snprintf(why, why_len, "%s: no upstream-tls-ca, upstream-tls-cert and -key to reach it",
                 u->name);
        return -1;
    }
    if (expected_name(u, name, sizeof name) != 0) {
        snprintf(why, why_len, "%s: no host name to check its certificate against", u->name);
        return -1;
    }
    s = calloc(1, sizeof *s);
    u->k.tls = s;
    if (s == NULL || (s->ssl = SSL_new(ctx)) == NULL || SSL_set_fd(s->ssl, u->fd) != 1) {
        snprintf(why, why_len, "TLS with %s: %s", u->name,
                 gw_tls_error(err, sizeof err, "out of memory"));
        return -1;
    }
    SSL_set_connect_state(s->ssl);
    if (is_address(name))
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s->ssl), name) == 1;
    else
        ok = SSL_set1_host(s->ssl, name) == 1 && SSL_set_tlsext_host_name(s->ssl, name) == 1;
    if (!ok) {
        snprintf(why, why_len, "TLS with %s: cannot check the name '%s': %s", u->name, name,
                 gw_tls_error(err, sizeof err, "refused"));
        return -1;
    }
    gw_tls_io_init(&s->io, s->ssl);
    /*
     * The handshake starts from the loop, at the socket's first writable
     * event (tls_events), never from here: a device on a fast link may
     * answer the ClientHello so soon that the handshake completes within
     * the call, and only tls_io() can make the upstream ready.
     */
    s->io.write_wants = GW_IO_OUT;
    return 0;
}

static unsigned tls_events(const struct gw_upstream *u)
{
    const struct gw_up_tls_state *s = u->k.tls;

    if (s == NULL)
        return GW_IO_IN;
    if (!s->done)
        return gw_tls_io_events(&s->io, 0);
    return gw_tls_io_events(&s->io, 1) | (s->out_len > 0 && s->io.retry_len == 0 ? GW_IO_OUT : 0u);
}

/* Why the handshake failed, the chain check's verdict first. */
static void handshake_failed(struct gw_upstream *u)
{
    struct gw_up_tls_state *s = u->k.tls;
    long v = SSL_get_verify_result(s->ssl);
    char why[GW_WHY_SIZE];

    if (v != X509_V_OK)
        snprintf(why, sizeof why, "TLS handshake with %s: its certificate is refused: %s", u->name,
                 X509_verify_cert_error_string(v));
    else
        snprintf(why, sizeof why, "TLS handshake with %s: %s", u->name, s->io.error);
    gw_up_fail(u, why);
}

/* Send what waits; -1 after gw_up_fail. */
static int tls_flush(struct gw_upstream *u)
{
    struct gw_up_tls_state *s = u->k.tls;

    while (s->out_len > 0) {
        long n = gw_tls_io_write(&s->io, s->out, s->out_len);
        char why[GW_WHY_SIZE];

        if (n == 0)
            break;
        if (n < 0) {
            snprintf(why, sizeof why, "send to %s: %s", u->name, s->io.error);
            gw_up_fail(u, why);
            return -1;
        }
        memmove(s->out, s->out + n, s->out_len - (size_t)n);
        s->out_len -= (size_t)n;
    }
    if (s->refused && s->out_len < sizeof s->out / 2) {
        s->refused = 0;
        gw_up_room(u);
    }
    return 0;
}

/* Cut whole ADUs off the input; -1 after gw_up_fail. */
static int tls_deliver(struct gw_upstream *u)
{
    struct gw_up_tls_state *s = u->k.tls;
    size_t at = 0;

    while (s->in_len - at >= MBSC_MBAP_LENGTH_END) {
        uint8_t adu[MBSC_ADU_MAX];
        size_t n = mbsc_adu_length(s->in + at);

        if (n == 0) {
            gw_up_fail(u, "malformed MBAP header from the device: the stream cannot be followed "
                          "any more");
            return -1;
        }
        if (s->in_len - at < n)
            break;
        /* A copy: the answer hook may send, and a failure frees the state. */
        memcpy(adu, s->in + at, n);
        at += n;
        gw_up_deliver(u, adu, n);
        sodium_memzero(adu, n);
        if (u->state != GW_UP_READY)
            return -1;
    }
    memmove(s->in, s->in + at, s->in_len - at);
    s->in_len -= at;
    return 0;
}

static void tls_io(struct gw_upstream *u, unsigned happened)
{
    struct gw_up_tls_state *s = u->k.tls;
    char why[GW_WHY_SIZE];

    (void)happened;
    if (!s->done) {
        int r = gw_tls_io_handshake(&s->io);

        if (r == GW_TLS_IO_AGAIN) {
            gw_up_rewatch(u);
            return;
        }
        if (r != GW_TLS_IO_DONE) {
            handshake_failed(u);
            return;
        }
        s->done = 1;
        gw_up_ready(u); /* requests may go out from here */
        if (u->state != GW_UP_READY)
            return;
    }
    if (s->out_len > 0 && tls_flush(u) != 0)
        return;
    for (;;) {
        long n = gw_tls_io_read(&s->io, s->in + s->in_len, sizeof s->in - s->in_len);

        if (n == GW_TLS_IO_AGAIN)
            break;
        if (n < 0) {
            snprintf(why, sizeof why, "%s closed the connection: %s", u->name, s->io.error);
            gw_up_fail(u, why);
            return;
        }
        s->in_len += (size_t)n;
        if (tls_deliver(u) != 0)
            return;
    }
    gw_up_rewatch(u);
}

static int tls_send(struct gw_upstream *u, const uint8_t *adu, size_t len)
{
    struct gw_up_tls_state *s = u->k.tls;

    if (len > sizeof s->out - s->out_len) {
        s->refused = 1;
        return MBSC_ERR_WOULD_BLOCK;
    }
    memcpy(s->out + s->out_len, adu, len);
    s->out_len += len;
    if (s->io.retry_len == 0 && tls_flush(u) != 0)
        return MBSC_OK; /* taken; the failure was reported through the down hook */
    gw_up_rewatch(u);
    return MBSC_OK;
}

static void tls_drop(struct gw_upstream *u)
{
    struct gw_up_tls_state *s = u->k.tls;

    if (s == NULL)
        return;
    if (s->done)
        (void)SSL_shutdown(s->ssl); /* a close_notify, best effort */
    ERR_clear_error();
    SSL_free(s->ssl);
    sodium_memzero(s, sizeof *s); /* process data, not kept */
    free(s);
    u->k.tls = NULL;
}

static void tls_describe(const struct gw_upstream *u, char *buf, size_t len)
{
    const struct gw_up_tls_state *s = u->k.tls;

    if (u->state == GW_UP_READY && s != NULL && s->done)
        snprintf(buf, len, "Modbus/TCP Security, %s %s", gw_tls_io_version(&s->io),
                 gw_tls_io_suite(&s->io));
    else
        snprintf(buf, len, "Modbus/TCP Security");
}

const struct gw_up_kind gw_up_tls = {
    .name = "mbaps",
    .scheme = GW_TLS_SCHEME,
    .connected = tls_connected,
    .events = tls_events,
    .io = tls_io,
    .send = tls_send,
    .drop = tls_drop,
    .describe = tls_describe,
};
