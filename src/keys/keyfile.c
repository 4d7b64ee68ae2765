/* SPDX-License-Identifier: ISC */
/*
 * keyfile.c - X25519 key pairs and the one-line key file format
 * (docs/keys.md "Keys on disk"): 44 characters of canonical base64, then an
 * optional LF or CRLF, nothing else.
 */
#include <string.h>

#include "internal.h"
#include "keys/keyio.h"
#include "mbsc/keys.h"

/* File modes: the loaders enforce MBSC_KEYIO_SECRET / _PUBLIC (keyio.h). */
#define SECRET_FILE_MODE 0600
#define PUBLIC_FILE_MODE 0644

MBSC_API int mbsc_keypair_from_private(mbsc_keypair *kp, const uint8_t private_key[MBSC_KEY_BYTES])
{
    uint8_t sk[MBSC_KEY_BYTES];
    int rc = MBSC_OK;

    if (mbsc_init() != MBSC_OK)
        return MBSC_ERR_INIT;
    if (kp == NULL)
        return MBSC_ERR_INVALID_ARG;
    if (private_key == NULL) {
        mbsc_keypair_wipe(kp);
        return MBSC_ERR_INVALID_ARG;
    }
    memcpy(sk, private_key, sizeof sk); /* private_key may alias kp */
    if (crypto_scalarmult_base(kp->public_key, sk) != 0) {
        mbsc_keypair_wipe(kp);
        rc = MBSC_ERR_WEAK_KEY;
    } else {
        memcpy(kp->private_key, sk, sizeof sk);
    }
    mbsc_wipe(sk, sizeof sk);
    return rc;
}

MBSC_API int mbsc_keypair_generate(mbsc_keypair *kp)
{
    uint8_t sk[MBSC_KEY_BYTES];
    int rc;

    if (mbsc_init() != MBSC_OK)
        return MBSC_ERR_INIT;
    if (kp == NULL)
        return MBSC_ERR_INVALID_ARG;
    randombytes_buf(sk, sizeof sk);
    rc = mbsc_keypair_from_private(kp, sk);
    mbsc_wipe(sk, sizeof sk);
    return rc;
}

MBSC_API void mbsc_keypair_wipe(mbsc_keypair *kp)
{
    if (kp != NULL)
        mbsc_wipe(kp, sizeof *kp);
}

/* --- Saving --------------------------------------------------------------- */

static int save_key(const char *path, const uint8_t key[MBSC_KEY_BYTES], unsigned flags,
                    unsigned mode, char *why, size_t why_len)
{
    char line[MBSC_KEY_BASE64_SIZE];
    int rc;

    mbsc_why(why, why_len, "%s", "");
    if (path == NULL || key == NULL || (flags & ~MBSC_KEY_SAVE_OVERWRITE) != 0) {
        mbsc_why(why, why_len, "invalid argument");
        return MBSC_ERR_INVALID_ARG;
    }
    rc = mbsc_key_to_base64(line, key);
    if (rc == MBSC_OK) {
        line[MBSC_KEY_BASE64_LEN] = '\n'; /* replaces the NUL */
        rc = mbsc_keyio_write(path, (const uint8_t *)line, sizeof line, (mode_t)mode,
                              (flags & MBSC_KEY_SAVE_OVERWRITE) != 0, why, why_len);
    }
    mbsc_wipe(line, sizeof line);
    return rc;
}

MBSC_API int mbsc_private_key_save(const char *path, const uint8_t private_key[MBSC_KEY_BYTES],
                                   unsigned flags, char *why, size_t why_len)
{
    return save_key(path, private_key, flags, SECRET_FILE_MODE, why, why_len);
}

MBSC_API int mbsc_psk_save(const char *path, const uint8_t psk[MBSC_KEY_BYTES], unsigned flags,
                           char *why, size_t why_len)
{
    return save_key(path, psk, flags, SECRET_FILE_MODE, why, why_len);
}

MBSC_API int mbsc_public_key_save(const char *path, const uint8_t public_key[MBSC_KEY_BYTES],
                                  unsigned flags, char *why, size_t why_len)
{
    return save_key(path, public_key, flags, PUBLIC_FILE_MODE, why, why_len);
}

/* --- Loading -------------------------------------------------------------- */

/*
 * Decode the contents of a key file.  Only the length and the last two
 * bytes steer the parse; the characters go to the constant-time decoder.
 * The error path may look further: the key is rejected by then.
 */
static int parse_key_file(uint8_t key[MBSC_KEY_BYTES], const uint8_t *buf, size_t len,
                          const char *path, char *why, size_t why_len)
{
    size_t n = len;

    if (len == 0) {
        mbsc_why(why, why_len, "%s: empty file (expected a base64 key)", path);
        return MBSC_ERR_KEY_FILE_FORMAT;
    }
    if (buf[n - 1] == '\n') {
        n--;
        if (n > 0 && buf[n - 1] == '\r')
            n--;
    }
    if (n == MBSC_KEY_BASE64_LEN &&
        mbsc_base64_decode(key, MBSC_KEY_BYTES, (const char *)buf, n) == MBSC_OK)
        return MBSC_OK;
    if (memchr(buf, '\n', n) != NULL)
        mbsc_why(why, why_len, "%s: more than one line (expected one base64 key)", path);
    else if (n != MBSC_KEY_BASE64_LEN)
        mbsc_why(why, why_len, "%s: expected 44 base64 characters, found %zu", path, n);
    else
        mbsc_why(why, why_len, "%s: bad base64 key (not the canonical base64 of 32 bytes)", path);
    return MBSC_ERR_KEY_FILE_FORMAT;
}

static int load_key(uint8_t key[MBSC_KEY_BYTES], const char *path, unsigned forbidden, char *why,
                    size_t why_len)
{
    uint8_t buf[MBSC_KEYFILE_MAX_BYTES];
    size_t len = 0;
    int rc;

    mbsc_why(why, why_len, "%s", "");
    if (path == NULL) {
        mbsc_why(why, why_len, "invalid argument");
        rc = MBSC_ERR_INVALID_ARG;
    } else {
        rc = mbsc_keyio_read(path, forbidden, buf, sizeof buf, &len, why, why_len);
        if (rc == MBSC_ERR_BUFFER_TOO_SMALL)
            rc = MBSC_ERR_KEY_FILE_FORMAT;
        else if (rc == MBSC_OK)
            rc = parse_key_file(key, buf, len, path, why, why_len);
    }
    mbsc_wipe(buf, sizeof buf);
    if (rc != MBSC_OK)
        mbsc_wipe(key, MBSC_KEY_BYTES);
    return rc;
}

/*
 * mbsc-keygen writes a pair as NAME and NAME.pub, and the .pub is the file
 * people copy around: given where a private key is wanted, it is refused by
 * its name, before the file is opened.  Read, it would fail the mode check
 * with "chmod 600", and followed, that advice would make a public key pass
 * for a private one.
 */
static int refuse_public_name(const char *path, char *why, size_t why_len)
{
    size_t n = path != NULL ? strlen(path) : 0;

    if (n < 4 || strcmp(path + n - 4, ".pub") != 0)
        return MBSC_OK;
    if (n > 4 && path[n - 5] != '/')
        mbsc_why(why, why_len,
                 "%s: this is a public key (the name ends in .pub); give the private key file "
                 "instead, e.g. %.*s",
                 path, (int)(n - 4), path);
    else
        mbsc_why(why, why_len,
                 "%s: this is a public key (the name ends in .pub); give the private key file "
                 "instead",
                 path);
    return MBSC_ERR_KEY_FILE_FORMAT;
}

MBSC_API int mbsc_keypair_load(mbsc_keypair *kp, const char *private_path, char *why,
                               size_t why_len)
{
    int rc;

    if (kp == NULL) {
        mbsc_why(why, why_len, "invalid argument");
        return MBSC_ERR_INVALID_ARG;
    }
    rc = refuse_public_name(private_path, why, why_len);
    if (rc == MBSC_OK)
        rc = load_key(kp->private_key, private_path, MBSC_KEYIO_SECRET, why, why_len);
    if (rc == MBSC_OK)
        rc = mbsc_keypair_from_private(kp, kp->private_key);
    if (rc != MBSC_OK)
        mbsc_keypair_wipe(kp);
    return rc;
}

MBSC_API int mbsc_psk_load(uint8_t psk[MBSC_KEY_BYTES], const char *path, char *why, size_t why_len)
{
    if (psk == NULL) {
        mbsc_why(why, why_len, "invalid argument");
        return MBSC_ERR_INVALID_ARG;
    }
    return load_key(psk, path, MBSC_KEYIO_SECRET, why, why_len);
}

/*
 * A private key and a public key look alike on disk, so a private key
 * given where a peer's public key belongs (--peer gateway.key) would load,
 * fail every handshake as "wrong --peer", and sit in memory, and perhaps in
 * a log line, as if it could be shown.  mbsc-keygen writes the public key
 * beside it as NAME.pub: when that file holds the public key of what was
 * loaded, what was loaded is a private key.  Exact, so never a false alarm.
 */
static int is_private_beside_its_pub(const uint8_t key[MBSC_KEY_BYTES], const char *path)
{
    char pub_path[4096], quiet[8];
    uint8_t pub[MBSC_KEY_BYTES], derived[MBSC_KEY_BYTES];
    int found = 0;

    if (strlen(path) + sizeof ".pub" > sizeof pub_path)
        return 0;
    memcpy(pub_path, path, strlen(path));
    memcpy(pub_path + strlen(path), ".pub", sizeof ".pub");
    if (load_key(pub, pub_path, MBSC_KEYIO_PUBLIC, quiet, sizeof quiet) == MBSC_OK &&
        crypto_scalarmult_base(derived, key) == 0)
        found = sodium_memcmp(derived, pub, sizeof pub) == 0;
    mbsc_wipe(derived, sizeof derived);
    mbsc_wipe(pub, sizeof pub);
    return found;
}

MBSC_API int mbsc_public_key_load(uint8_t public_key[MBSC_KEY_BYTES], const char *path, char *why,
                                  size_t why_len)
{
    int rc;

    if (public_key == NULL) {
        mbsc_why(why, why_len, "invalid argument");
        return MBSC_ERR_INVALID_ARG;
    }
    rc = load_key(public_key, path, MBSC_KEYIO_PUBLIC, why, why_len);
    if (rc == MBSC_OK && mbsc_init() == MBSC_OK && is_private_beside_its_pub(public_key, path)) {
        mbsc_wipe(public_key, MBSC_KEY_BYTES);
        mbsc_why(why, why_len,
                 "%s: this is a private key (%s.pub beside it is its public key); a peer's "
                 "public key is wanted here: give %s.pub, the file that can be copied around",
                 path, path, path);
        rc = MBSC_ERR_KEY_FILE_FORMAT;
    }
    return rc;
}
