/* SPDX-License-Identifier: ISC */
/*
 * keyio.h - private helpers shared by the key-file and allow-list code:
 * the `why` message buffer, bounded reads with a permission rule checked on
 * the opened descriptor, and key-file writes that never expose a secret.
 */
#ifndef MBSC_KEYS_KEYIO_H
#define MBSC_KEYS_KEYIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "internal.h"

/*
 * Base64 of exactly out_len bytes (internal: the key API uses 32).  Both run
 * in constant time in the data; lengths are public.
 *
 * mbsc_base64_encode writes the 4 * ceil(in_len / 3) characters and a NUL
 * to out (out_size must exceed that length) and returns MBSC_OK, or
 * MBSC_ERR_BUFFER_TOO_SMALL without writing.
 *
 * mbsc_base64_decode accepts only the canonical padded encoding of exactly
 * out_len bytes (in_len == 4 * ceil(out_len / 3), unused bits zero) and
 * returns MBSC_OK, or MBSC_ERR_KEY_FILE_FORMAT with out zeroed.
 */
int mbsc_base64_encode(char *out, size_t out_size, const uint8_t *in, size_t in_len);
int mbsc_base64_decode(uint8_t *out, size_t out_len, const char *in, size_t in_len);

/* Which mode bits a file being read must not have. */
#define MBSC_KEYIO_SECRET 077u /* private key, PSK: nothing for group/others */
#define MBSC_KEYIO_PUBLIC 022u /* public key, allow-list: not writable by them */

/* 1 if a file or directory owned by owner is trusted: the effective user's or root's. */
int mbsc_keyio_owner_ok(uid_t owner);

/*
 * Resolve path (relative to the working directory if not absolute) one
 * component at a time, following symbolic links, and check the rule of
 * trust.c on every directory from "/" down and on every link met: owned by
 * the effective user or root, directories not writable by group or others
 * unless sticky and owned by root.  On success *resolved is a new string
 * (free it) naming the same file without any symbolic link, and *final the
 * lstat of it.  Returns MBSC_OK, MBSC_ERR_KEY_FILE_UNREADABLE (lookup
 * failed), MBSC_ERR_KEY_FILE_PERMISSIONS or MBSC_ERR_NOMEM, with why set.
 */
int mbsc_keyio_resolve_trusted(const char *path, char **resolved, struct stat *final, char *why,
                               size_t why_len);

/*
 * Resolve path as above, open it, check that it is a regular file owned by
 * the effective user or root, without any of the mode bits in forbidden
 * (fstat on the descriptor), and read it into buf, which has room for cap
 * bytes.  *len gets the number of bytes read.
 * Returns MBSC_OK; MBSC_ERR_KEY_FILE_UNREADABLE, MBSC_ERR_KEY_FILE_PERMISSIONS,
 * MBSC_ERR_NOMEM, or MBSC_ERR_BUFFER_TOO_SMALL if the file holds more than
 * cap bytes (the caller picks the code to report).  Sets why on every failure.  buf may
 * hold part of the file on failure: the caller wipes it.
 */
int mbsc_keyio_read(const char *path, unsigned forbidden, uint8_t *buf, size_t cap, size_t *len,
                    char *why, size_t why_len);

/*
 * As mbsc_keyio_read, into a new buffer sized from the file (free it),
 * for files of at most max bytes: a larger file is MBSC_ERR_BUFFER_TOO_SMALL.
 * *out is NULL and *len 0 on failure.
 */
int mbsc_keyio_read_alloc(const char *path, unsigned forbidden, size_t max, uint8_t **out,
                          size_t *len, char *why, size_t why_len);

/*
 * Write len bytes to path with exactly the given mode; overwrite nonzero
 * replaces an existing file atomically (temporary file and rename),
 * otherwise an existing path is an error.  Returns MBSC_OK or
 * MBSC_ERR_KEY_FILE_WRITE (why set, nothing left behind).
 */
int mbsc_keyio_write(const char *path, const uint8_t *data, size_t len, mode_t mode, int overwrite,
                     char *why, size_t why_len);

#endif /* MBSC_KEYS_KEYIO_H */
