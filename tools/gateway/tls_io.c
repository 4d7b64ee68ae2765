/* SPDX-License-Identifier: ISC */
/*
 * tls_io.c - one OpenSSL connection driven by the event loop (tls_io.h).
 *
 * Every call empties OpenSSL's error queue first, so that SSL_get_error()
 * speaks of this call only (SSL_get_error(3)).  A peer that closes without
 * close_notify is a close, not a failure: Modbus/TCP clients commonly do,
 * and a Modbus request is never half-taken (the MBAP length frames it).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>

#include "loop.h"
#include "tls_io.h"

void gw_tls_io_init(struct gw_tls_io *io, SSL *ssl)
{
    memset(io, 0, sizeof *io);
    io->ssl = ssl;
}

/* What the failed call ret of io wants, or why it failed. */
static int classify(struct gw_tls_io *io, int ret, unsigned *wants)
{
    int e = SSL_get_error(io->ssl, ret);
    unsigned long err = ERR_peek_error();

    io->reason = err != 0 ? ERR_GET_REASON(err) : 0;
    switch (e) {
    case SSL_ERROR_WANT_READ: *wants = GW_IO_IN; return GW_TLS_IO_AGAIN;
    case SSL_ERROR_WANT_WRITE: *wants = GW_IO_OUT; return GW_TLS_IO_AGAIN;
    case SSL_ERROR_ZERO_RETURN:
        snprintf(io->error, sizeof io->error, "closed by the peer");
        return GW_TLS_IO_CLOSED;
    case SSL_ERROR_SYSCALL:
        if (err == 0) {
            if (errno == 0 || errno == EPIPE) {
                snprintf(io->error, sizeof io->error, "closed by the peer");
                return GW_TLS_IO_CLOSED;
            }
            snprintf(io->error, sizeof io->error, "%s", strerror(errno));
            return GW_TLS_IO_FAILED;
        }
        break;
    case SSL_ERROR_SSL:
        if (io->reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
            ERR_clear_error();
            snprintf(io->error, sizeof io->error, "closed by the peer (without close_notify)");
            return GW_TLS_IO_CLOSED;
        }
        break;
    default: break;
    }
    {
        const char *r = err != 0 ? ERR_reason_error_string(err) : NULL;

        snprintf(io->error, sizeof io->error, "TLS: %s", r != NULL ? r : "error");
    }
    ERR_clear_error();
    return GW_TLS_IO_FAILED;
}

int gw_tls_io_handshake(struct gw_tls_io *io)
{
    int r;

    ERR_clear_error();
    errno = 0;
    r = SSL_do_handshake(io->ssl);
    if (r == 1) {
        io->write_wants = 0;
        return GW_TLS_IO_DONE;
    }
    return classify(io, r, &io->write_wants);
}

long gw_tls_io_read(struct gw_tls_io *io, uint8_t *buf, size_t len)
{
    size_t got = 0;
    int r;

    if (len == 0)
        return GW_TLS_IO_AGAIN;
    ERR_clear_error();
    errno = 0;
    r = SSL_read_ex(io->ssl, buf, len, &got);
    if (r == 1) {
        io->read_wants = 0;
        return (long)got;
    }
    return classify(io, r, &io->read_wants);
}

long gw_tls_io_write(struct gw_tls_io *io, const uint8_t *buf, size_t len)
{
    size_t n = io->retry_len != 0 ? io->retry_len : len, written = 0;
    int r;

    if (n == 0)
        return 0;
    ERR_clear_error();
    errno = 0;
    r = SSL_write_ex(io->ssl, buf, n, &written);
    if (r == 1) {
        io->retry_len = 0;
        io->write_wants = 0;
        return (long)written;
    }
    r = classify(io, r, &io->write_wants);
    if (r == GW_TLS_IO_AGAIN) {
        io->retry_len = n; /* OpenSSL's rule: the same bytes again */
        return 0;
    }
    return r;
}

int gw_tls_io_buffered(const struct gw_tls_io *io)
{
    return SSL_has_pending(io->ssl);
}

unsigned gw_tls_io_events(const struct gw_tls_io *io, int reading)
{
    unsigned ev = io->write_wants;

    if (reading)
        ev |= io->read_wants != 0 ? io->read_wants : GW_IO_IN;
    return ev;
}

const char *gw_tls_io_version(const struct gw_tls_io *io)
{
    return SSL_get_version(io->ssl);
}

const char *gw_tls_io_suite(const struct gw_tls_io *io)
{
    const SSL_CIPHER *c = SSL_get_current_cipher(io->ssl);

    return c != NULL ? SSL_CIPHER_get_name(c) : "?";
}
