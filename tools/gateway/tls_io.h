/* SPDX-License-Identifier: ISC */
/*
 * tls_io.h - one OpenSSL connection over a non-blocking socket, driven by
 * the event loop (tls_io.c): the TLS listener's masters (tls_masters.c)
 * and the mbaps:// upstreams (up_tls.c) share it.
 *
 * Nothing here waits.  Each call does what the socket allows now and says
 * what the connection waits for (gw_tls_io_events); the owner watches its
 * descriptor for that and calls again when it is ready.  Plaintext to send
 * waits in the owner's buffer until OpenSSL has taken it: a write that
 * would block is repeated later with the same bytes, as OpenSSL requires.
 *
 * OpenSSL reads whole records from the socket, so a record may have been
 * read (and decrypted) while the owner had no room for it: the socket is
 * then no longer readable, though data waits.  gw_tls_io_buffered() says
 * so; the owner must read again without waiting for the socket once it
 * has room (the same trap as mbsc_conn_pending(), mbsc/conn.h).
 */
#ifndef MBSC_GATEWAY_TLS_IO_H
#define MBSC_GATEWAY_TLS_IO_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

struct gw_tls_io {
    SSL *ssl;
    unsigned read_wants;  /* GW_IO_* the last read waits for (0: it did not block) */
    unsigned write_wants; /* GW_IO_* the last write or handshake waits for */
    size_t retry_len;     /* a blocked write to repeat with this many bytes (0: none) */
    int reason;           /* OpenSSL's reason code of the failure (ERR_GET_REASON), or 0 */
    char error[256];      /* what failed, for the log */
};

/* Results of the calls below. */
#define GW_TLS_IO_AGAIN  0  /* would block: wait for gw_tls_io_events() */
#define GW_TLS_IO_DONE   1  /* handshake complete */
#define GW_TLS_IO_CLOSED -1 /* the peer closed (close_notify or end of file) */
#define GW_TLS_IO_FAILED -2 /* a TLS or socket error: io->error says which */

/* Set up io for ssl (owned by the caller, whose socket it reads and writes). */
void gw_tls_io_init(struct gw_tls_io *io, SSL *ssl);

/* Advance the handshake: DONE, AGAIN, CLOSED or FAILED (io->error). */
int gw_tls_io_handshake(struct gw_tls_io *io);

/*
 * Read plaintext into buf: the number of bytes (> 0), AGAIN, CLOSED or
 * FAILED.
 */
long gw_tls_io_read(struct gw_tls_io *io, uint8_t *buf, size_t len);

/*
 * Write from buf[0..len) (a blocked write is repeated from the same
 * bytes: the owner keeps them at the start of its buffer and only
 * appends): the number of bytes taken (>= 0; 0 means it would block), or
 * CLOSED or FAILED.
 */
long gw_tls_io_write(struct gw_tls_io *io, const uint8_t *buf, size_t len);

/* Decrypted or raw bytes wait inside OpenSSL: read without waiting for the socket. */
int gw_tls_io_buffered(const struct gw_tls_io *io);

/*
 * The socket events to wait for: what a blocked read (when reading is
 * wanted) or a blocked write waits for, else GW_IO_IN while reading.
 */
unsigned gw_tls_io_events(const struct gw_tls_io *io, int reading);

/* "TLSv1.3", "TLS_AES_128_GCM_SHA256" of a connection whose handshake is done. */
const char *gw_tls_io_version(const struct gw_tls_io *io);
const char *gw_tls_io_suite(const struct gw_tls_io *io);

#endif /* MBSC_GATEWAY_TLS_IO_H */
