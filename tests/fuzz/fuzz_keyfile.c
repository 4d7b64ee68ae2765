/* SPDX-License-Identifier: ISC */
/*
 * fuzz_keyfile.c - key and PSK files: the loaders and the base64 decoder
 * fed arbitrary bytes, checked against libsodium's own base64 decoder.
 *
 * Input byte 0 picks the loader (private key, PSK, public key); the rest is
 * the file's content, written to a 0600 file in a private directory
 * (trusted by the key-file rules).  The same bytes also go to
 * mbsc_key_from_base64 directly.
 *
 * Properties (mbsc/keys.h "File formats"):
 *   - a file loads iff it is 44 characters that libsodium decodes as
 *     standard padded base64 (sodium_base64_VARIANT_ORIGINAL) to exactly 32
 *     bytes and that are canonical (libsodium re-encodes those 32 bytes to
 *     the same 44 characters), followed by nothing, LF or CRLF;
 *   - then the key is libsodium's decoding (and for a private key, the
 *     public half is crypto_scalarmult_base of it);
 *   - otherwise the error is MBSC_ERR_KEY_FILE_FORMAT and the output key
 *     is all zeros.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], file[96];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    snprintf(dir, sizeof dir, "/tmp/mbsc-fuzz-keyfile-XXXXXX");
    FUZZ_CHECK(mkdtemp(dir) != NULL);
    snprintf(file, sizeof file, "%s/key", dir);
    return 0;
}

/* The oracle: libsodium decodes b64[0..n) canonically to 32 bytes. */
static int sodium_key(uint8_t key[32], const uint8_t *b64, size_t n)
{
    char again[45];
    size_t got = 0;
    const char *end = NULL;

    if (n != 44 || memchr(b64, '\0', n) != NULL)
        return 0;
    if (sodium_base642bin(key, 32, (const char *)b64, n, NULL, &got, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        got != 32 || end != (const char *)b64 + n)
        return 0;
    sodium_bin2base64(again, sizeof again, key, 32, sodium_base64_VARIANT_ORIGINAL);
    return memcmp(again, b64, 44) == 0;
}

static void write_file(const uint8_t *p, size_t n)
{
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(write(fd, p, n) == (ssize_t)n);
    FUZZ_CHECK(close(fd) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = {data, size};
    unsigned which = fuzz_byte(&in) % 3;
    const uint8_t *text = in.p;
    size_t n = in.n, body = n;
    uint8_t want[32], key[32];
    char why[MBSC_WHY_SIZE + 128];
    int ok, rc;

    if (body > 0 && text[body - 1] == '\n') {
        body--;
        if (body > 0 && text[body - 1] == '\r')
            body--;
    }
    ok = sodium_key(want, text, body);

    /* The decoder alone, on the bytes as they are (no line end allowed). */
    memset(key, 0xee, sizeof key);
    rc = mbsc_key_from_base64(key, (const char *)text, n);
    if (sodium_key(want, text, n)) {
        FUZZ_ASSERT(rc == MBSC_OK && memcmp(key, want, 32) == 0, "decoder disagrees (rc %d)", rc);
    } else {
        FUZZ_ASSERT(rc == MBSC_ERR_KEY_FILE_FORMAT && sodium_is_zero(key, 32),
                    "decoder accepted what libsodium does not (rc %d)", rc);
    }
    ok = sodium_key(want, text, body);

    write_file(text, n);
    memset(key, 0xee, sizeof key);
    if (which == 0) {
        mbsc_keypair kp;
        uint8_t pub[32];
        memset(&kp, 0xee, sizeof kp);
        rc = mbsc_keypair_load(&kp, file, why, sizeof why);
        if (ok) {
            FUZZ_CHECK(crypto_scalarmult_base(pub, want) == 0);
            FUZZ_ASSERT(rc == MBSC_OK && memcmp(kp.private_key, want, 32) == 0 &&
                            memcmp(kp.public_key, pub, 32) == 0,
                        "private key file rejected or misread: %d %s", rc, why);
        } else {
            FUZZ_ASSERT(rc == MBSC_ERR_KEY_FILE_FORMAT && sodium_is_zero((uint8_t *)&kp, sizeof kp),
                        "bad private key file: rc %d, key not wiped (%s)", rc, why);
            FUZZ_ASSERT(strncmp(why, file, strlen(file)) == 0, "message does not name the file");
        }
        mbsc_keypair_wipe(&kp);
    } else {
        rc = which == 1 ? mbsc_psk_load(key, file, why, sizeof why)
                        : mbsc_public_key_load(key, file, why, sizeof why);
        if (ok)
            FUZZ_ASSERT(rc == MBSC_OK && memcmp(key, want, 32) == 0,
                        "key file rejected or misread: %d %s", rc, why);
        else
            FUZZ_ASSERT(rc == MBSC_ERR_KEY_FILE_FORMAT && sodium_is_zero(key, 32),
                        "bad key file: rc %d, key not zeroed (%s)", rc, why);
    }
    return 0;
}
