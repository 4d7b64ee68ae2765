/* SPDX-License-Identifier: ISC */
/*
 * mbsc/keys.h - X25519 key pairs, key files and the slave's allow-list.
 *
 * File formats (docs/keys.md, mbsc-keys(5); the same as WireGuard's):
 *
 *  - A key file (private, public or pre-shared) holds one 32-byte key as
 *    exactly 44 characters of canonical standard base64 (RFC 4648 section 4,
 *    with "=" padding, unused bits zero), then optionally LF or CRLF, and
 *    nothing else.  Anything else, including an empty file, is
 *    MBSC_ERR_KEY_FILE_FORMAT.
 *
 *  - A private key or PSK file must grant no permission to group or others
 *    (mode & 077 == 0), as ssh requires: otherwise loading it fails with
 *    MBSC_ERR_KEY_FILE_PERMISSIONS before the key is read.  A public key
 *    file or an allow-list is not secret, but whoever can change it can
 *    impersonate a peer, so it must not be writable by group or others
 *    (mode & 022 == 0), as ssh requires of authorized_keys; otherwise the
 *    same error.
 *
 *  - Who may change it (all four kinds of file, and any file read with
 *    mbsc_trusted_file_read, as OpenSSH's StrictModes):
 *    the file must be owned by the effective user or root, and so must
 *    every directory from "/" down to it and every symbolic link on the
 *    way (links are followed, and their targets' directories checked the
 *    same way; a relative path is checked from the working directory up).
 *    No such directory may be writable by group or others, unless it has
 *    the sticky bit and is owned by root (/tmp): there nobody else can
 *    rename or remove our file, and a file someone else put there fails
 *    the owner rule.  A refusal is MBSC_ERR_KEY_FILE_PERMISSIONS, and its
 *    message names the file, what is wrong and the fix, e.g.
 *        "k: directory /srv/keys is writable by group or others (mode
 *         0775), who could replace the file; fix: chmod go-w /srv/keys, ..."
 *    The rules apply to root as well (root's files must be root's).
 *
 *  - An allow-list has one master per line: "<base64 key> <name> [role]",
 *    fields separated by spaces or tabs.  "#" starts a comment that runs to
 *    the end of the line, blank lines are ignored, CRLF line ends and a
 *    missing final newline are accepted.  Names and roles are 1 to
 *    MBSC_ALLOWLIST_NAME_MAX letters, digits, '-', '_' and '.'.  A line
 *    longer than MBSC_ALLOWLIST_LINE_MAX bytes, a malformed line or a key
 *    listed twice is an error naming the file and the line.  An empty
 *    allow-list (no entries) is valid; callers may want to warn about it.
 *
 * Error details: error codes cannot say which file or line is wrong, so
 * every function that reads or writes a file also takes `why, why_len`.
 * When why is not NULL and why_len > 0, a failing call stores one line of
 * text there without a trailing newline, such as
 *     "keys/allow.txt:7: bad base64 key"
 *     "master.key: permissions 0644 are too open (must be 0600 or stricter);
 *      fix: chmod 600 master.key"
 * truncated to why_len - 1 bytes and always NUL-terminated; nothing is
 * written beyond why_len bytes.  On success why is set to "".  The text
 * never contains key material.  MBSC_WHY_SIZE bytes are always enough for
 * the message itself (plus the path as given).
 *
 * Secrets: the functions here wipe (sodium_memzero) every temporary copy of
 * a private key or PSK they make, and clear their output key on failure.
 * The caller owns the buffers it passes and wipes them when done
 * (mbsc_keypair_wipe, sodium_memzero).
 *
 * Threads: every function is reentrant and keeps no global state.  A loaded
 * or built allow-list is read-only for the find/get/count functions, so it
 * may be shared by any number of threads once nobody calls
 * mbsc_allowlist_add on it any more.
 *
 * libsodium: the functions that need its random generator or X25519
 * initialise it (mbsc_init); a failure there is MBSC_ERR_INIT.
 */
#ifndef MBSC_KEYS_H
#define MBSC_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "mbsc/error.h"
#include "mbsc/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Size of an X25519 private key, public key or PSK. */
#define MBSC_KEY_BYTES 32u
/* Length of its base64 form, without a terminating NUL. */
#define MBSC_KEY_BASE64_LEN 44u
/* Buffer size for the base64 form with its terminating NUL. */
#define MBSC_KEY_BASE64_SIZE 45u

/* Larger key files are refused without being read further. */
#define MBSC_KEYFILE_MAX_BYTES 4096u
/* Larger allow-list files are refused (the loader allocates the file's
 * size, not this limit). */
#define MBSC_ALLOWLIST_MAX_BYTES (1024u * 1024u)
/* Longest allow-list line in bytes, without its LF or CRLF. */
#define MBSC_ALLOWLIST_LINE_MAX 1024u
/* Longest name or role in bytes (without the NUL). */
#define MBSC_ALLOWLIST_NAME_MAX 63u

/* A `why` buffer of this size holds any message with a path of up to 256 bytes. */
#define MBSC_WHY_SIZE 512u

/* Flag for the _save functions: replace an existing file (atomically). */
#define MBSC_KEY_SAVE_OVERWRITE 1u

/* A static X25519 key pair.  Wipe with mbsc_keypair_wipe when done. */
typedef struct mbsc_keypair {
    uint8_t public_key[MBSC_KEY_BYTES];
    uint8_t private_key[MBSC_KEY_BYTES];
} mbsc_keypair;

/* --- Key pairs ------------------------------------------------------------ */

/*
 * Fill kp with a fresh key pair: 32 bytes from libsodium's random generator
 * (randombytes_buf) and their X25519 public key.
 * Returns MBSC_OK, MBSC_ERR_INVALID_ARG if kp is NULL, or (never with
 * libsodium's X25519, which clamps) MBSC_ERR_WEAK_KEY with kp wiped.
 */
MBSC_API MBSC_WUR int mbsc_keypair_generate(mbsc_keypair *kp);

/*
 * Set kp->private_key to private_key and derive kp->public_key from it
 * (X25519 with the base point; the key is stored as given, unclamped).
 * private_key may point into kp.  Returns MBSC_OK, MBSC_ERR_INVALID_ARG
 * (NULL pointer; kp is then wiped if not NULL) or MBSC_ERR_WEAK_KEY as above.
 */
MBSC_API MBSC_WUR int mbsc_keypair_from_private(mbsc_keypair *kp,
                                                const uint8_t private_key[MBSC_KEY_BYTES]);

/* Zero both halves of kp in a way the compiler keeps.  kp may be NULL. */
MBSC_API void mbsc_keypair_wipe(mbsc_keypair *kp);

/* --- Base64 --------------------------------------------------------------- */

/*
 * Write the 44-character base64 form of key to out, NUL-terminated.
 * Runs in constant time.  Returns MBSC_OK or MBSC_ERR_INVALID_ARG.
 */
MBSC_API int mbsc_key_to_base64(char out[MBSC_KEY_BASE64_SIZE], const uint8_t key[MBSC_KEY_BYTES]);

/*
 * Decode exactly len characters at b64 (no NUL needed) into key.  They must
 * be the canonical base64 of 32 bytes: len == 44, alphabet A-Z a-z 0-9 + /,
 * one "=" at the end, and the two unused bits of the last character zero.
 * No whitespace or newline is accepted.  Constant time in the characters
 * (the length is not secret).
 * Returns MBSC_OK; MBSC_ERR_KEY_FILE_FORMAT if the text is not such a key
 * (key is then zeroed); MBSC_ERR_INVALID_ARG if key or b64 is NULL.
 */
MBSC_API MBSC_WUR int mbsc_key_from_base64(uint8_t key[MBSC_KEY_BYTES], const char *b64,
                                           size_t len);

/* --- Key files ------------------------------------------------------------ */

/*
 * Write private_key to path as one base64 line, mode 0600 whatever the
 * umask.  The file never exists with a wider mode, not even briefly, and
 * path never names a partial file, even if the process or the machine
 * stops at any point: the key is written to a temporary file in the same
 * directory (path + ".tmp-" + 16 hex digits), synced, then given its name,
 * then the directory is synced (best effort).
 * Without MBSC_KEY_SAVE_OVERWRITE in flags an existing path (even a
 * dangling symlink) is an error and is left alone: the name is given with
 * renameat2(RENAME_NOREPLACE), or link() where that is missing, neither of
 * which replaces anything.  On a file system that has neither, the file is
 * created at path with O_EXCL instead (never replaces, but a crash there
 * can leave a partial file).  With MBSC_KEY_SAVE_OVERWRITE the temporary
 * file is renamed over path, so readers see the old file or the new one (a
 * symlink at path is replaced, not followed).  A crash can leave the
 * temporary file behind; nothing reads it, and it may be removed.
 * Returns MBSC_OK, MBSC_ERR_KEY_FILE_WRITE (details in why; nothing is left
 * behind), or MBSC_ERR_INVALID_ARG (NULL path or key, unknown flag).
 */
MBSC_API MBSC_WUR int mbsc_private_key_save(const char *path,
                                            const uint8_t private_key[MBSC_KEY_BYTES],
                                            unsigned flags, char *why, size_t why_len);

/* As mbsc_private_key_save, for a pre-shared key (same format and mode). */
MBSC_API MBSC_WUR int mbsc_psk_save(const char *path, const uint8_t psk[MBSC_KEY_BYTES],
                                    unsigned flags, char *why, size_t why_len);

/* As mbsc_private_key_save, for a public key, with mode 0644. */
MBSC_API MBSC_WUR int mbsc_public_key_save(const char *path,
                                           const uint8_t public_key[MBSC_KEY_BYTES], unsigned flags,
                                           char *why, size_t why_len);

/*
 * Read the private key file at path (symlinks followed, under the rules
 * above) and fill kp with it and its public key.  The owner and mode
 * checks use fstat on the opened descriptor, so they apply to the file
 * actually read.
 * Returns MBSC_OK, or on failure (kp zeroed):
 *   MBSC_ERR_KEY_FILE_UNREADABLE   missing, not a regular file, read error,
 *                                  symbolic link loop
 *   MBSC_ERR_KEY_FILE_PERMISSIONS  mode & 077 != 0, or the file, a directory
 *                                  on its path or a link on the way fails
 *                                  the "who may change it" rule
 *   MBSC_ERR_NOMEM                 out of memory (long paths)
 *   MBSC_ERR_KEY_FILE_FORMAT       not one canonical base64 key line, or
 *                                  larger than MBSC_KEYFILE_MAX_BYTES
 *   MBSC_ERR_INVALID_ARG           kp or path NULL
 */
MBSC_API MBSC_WUR int mbsc_keypair_load(mbsc_keypair *kp, const char *private_path, char *why,
                                        size_t why_len);

/*
 * Read a pre-shared key file; same format, rule (mode & 077 == 0) and
 * errors as mbsc_keypair_load.  psk is zeroed on failure.
 */
MBSC_API MBSC_WUR int mbsc_psk_load(uint8_t psk[MBSC_KEY_BYTES], const char *path, char *why,
                                    size_t why_len);

/*
 * Read a public key file; same format and errors as mbsc_keypair_load, but
 * the permission rule is mode & 022 == 0 (not group- or world-writable).
 * public_key is zeroed on failure.
 */
MBSC_API MBSC_WUR int mbsc_public_key_load(uint8_t public_key[MBSC_KEY_BYTES], const char *path,
                                           char *why, size_t why_len);

/* --- Other files that decide what is trusted ------------------------------ */

/*
 * Read the file at path into buf (cap bytes) under the rules of a public
 * key or allow-list above: a regular file not writable by group or others
 * (mode & 022 == 0), which only the effective user or root can change, in
 * directories that only they can change.  For a program's own files that
 * decide what it trusts, such as a configuration naming key files and a
 * policy: whoever could rewrite it could point the program at their own.
 * *len gets the number of bytes read; nothing is added (no NUL).  cap may
 * be 0 (buf NULL) to check a file that must be empty.
 * Returns MBSC_OK, or on failure (*len 0, buf zeroed) with why naming the
 * file, what is wrong and the fix (e.g. "gw.conf: directory /etc/mbsc is
 * writable by group or others (mode 0777), ...; fix: chmod go-w /etc/mbsc,
 * or move the file"):
 *   MBSC_ERR_KEY_FILE_UNREADABLE   missing, a directory, not a regular
 *                                  file, read error, symbolic link loop
 *   MBSC_ERR_KEY_FILE_PERMISSIONS  writable by group or others, or the
 *                                  "who may change it" rule above
 *   MBSC_ERR_BUFFER_TOO_SMALL      the file holds more than cap bytes
 *   MBSC_ERR_NOMEM                 out of memory (long paths)
 *   MBSC_ERR_INVALID_ARG           path or len NULL, buf NULL with cap > 0
 */
MBSC_API MBSC_WUR int mbsc_trusted_file_read(const char *path, void *buf, size_t cap, size_t *len,
                                             char *why, size_t why_len);

/* --- Allow-list ----------------------------------------------------------- */

/* The slave's list of accepted master public keys; opaque. */
typedef struct mbsc_allowlist mbsc_allowlist;

/*
 * Read and parse the allow-list file at path into a new list stored in
 * *out (release it with mbsc_allowlist_free).  Error locations in why use
 * path as given: "path:LINE: message".
 * Returns MBSC_OK, or on failure (*out set to NULL):
 *   MBSC_ERR_KEY_FILE_UNREADABLE   missing, not a regular file, read error
 *   MBSC_ERR_KEY_FILE_PERMISSIONS  group- or world-writable (mode & 022), or
 *                                  the "who may change it" rule above
 *   MBSC_ERR_ALLOWLIST_SYNTAX      a bad line, or a file larger than
 *                                  MBSC_ALLOWLIST_MAX_BYTES
 *   MBSC_ERR_ALLOWLIST_DUPLICATE   a key listed twice
 *   MBSC_ERR_NOMEM, MBSC_ERR_INVALID_ARG (out or path NULL)
 */
MBSC_API MBSC_WUR int mbsc_allowlist_load(mbsc_allowlist **out, const char *path, char *why,
                                          size_t why_len);

/*
 * Parse len bytes of allow-list text (no NUL needed; comments may hold any
 * byte, other NUL bytes are syntax errors) into a new list stored in *out.  name_for_errors
 * prefixes the messages in why (NULL gives "allow-list").  Syntax errors
 * are reported for the first bad line; a duplicate key is reported at its
 * second listing, when that line comes before any syntax error.  text may
 * be NULL when len is 0.
 * Returns as mbsc_allowlist_load, without the file errors.
 */
MBSC_API MBSC_WUR int mbsc_allowlist_parse(mbsc_allowlist **out, const char *text, size_t len,
                                           const char *name_for_errors, char *why, size_t why_len);

/* A new, empty allow-list, or NULL if out of memory. */
MBSC_API mbsc_allowlist *mbsc_allowlist_new(void);

/*
 * Append an entry.  name is required, role may be NULL; both are copied and
 * must follow the name rule above.  Not safe while other threads read al.
 * Returns MBSC_OK, MBSC_ERR_ALLOWLIST_DUPLICATE if public_key is already
 * listed, MBSC_ERR_INVALID_ARG (NULL pointer, bad name or role) or
 * MBSC_ERR_NOMEM.  On failure al is unchanged.
 */
MBSC_API MBSC_WUR int mbsc_allowlist_add(mbsc_allowlist *al,
                                         const uint8_t public_key[MBSC_KEY_BYTES], const char *name,
                                         const char *role);

/* Number of entries (0 if al is NULL). */
MBSC_API size_t mbsc_allowlist_count(const mbsc_allowlist *al);

/*
 * Look up public_key.  Compares it with every entry in constant time, so
 * the time taken depends only on the number of entries, not on whether or
 * where the key is found.  On a hit, *name and *role (each optional) point
 * to strings owned by al, valid until it is freed; *role is NULL if the
 * entry has none.  On a miss both are set to NULL.
 * Returns the entry's index (>= 0), MBSC_ERR_UNKNOWN_PEER if the key is not
 * listed, or MBSC_ERR_INVALID_ARG (al or public_key NULL).
 */
MBSC_API MBSC_WUR int mbsc_allowlist_find(const mbsc_allowlist *al,
                                          const uint8_t public_key[MBSC_KEY_BYTES],
                                          const char **name, const char **role);

/*
 * Entry number index (0 <= index < count, in file order): copies its key to
 * public_key and points *name and *role into al (all three optional; *role
 * NULL if the entry has none), valid until al is freed.
 * Returns MBSC_OK or MBSC_ERR_INVALID_ARG (NULL al, index out of range).
 */
MBSC_API int mbsc_allowlist_get(const mbsc_allowlist *al, size_t index,
                                uint8_t public_key[MBSC_KEY_BYTES], const char **name,
                                const char **role);

/* Wipe and release al and its strings.  al may be NULL. */
MBSC_API void mbsc_allowlist_free(mbsc_allowlist *al);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_KEYS_H */
