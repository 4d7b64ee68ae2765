/* SPDX-License-Identifier: ISC */
/*
 * check_keys.c - keys on disk: the base64 codec, key pairs, key files and
 * their permission rule, the allow-list.
 *
 * Expected values come from RFC 4648 section 10 (base64), RFC 7748
 * section 6.1 (X25519 key pairs; their base64 forms were computed with
 * Python's base64 module) and libsodium's independent base64 encoder.
 *
 * Files live in a fresh mkdtemp directory under $TMPDIR (or /tmp) that the
 * fixture removes.  Tests run as root in CI, so nothing here relies on
 * EACCES; the ownership rules (trust.c) are tested as root and, from a
 * forked child that drops to uid 65534, as an unprivileged user.
 */
/* setresuid, setresgid, setgroups (to drop to an unprivileged user). */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keys/keyio.h"
#include "mbsc.h"
#include "mbsc/keys.h"
#include "testutil.h"

Suite *keys_suite(void);

/* --- Helpers -------------------------------------------------------------- */

static char tmpdir[4096];
static mode_t saved_umask;

static void setup_tmpdir(void)
{
    const char *base = getenv("TMPDIR");

    if (base == NULL || *base == '\0')
        base = "/tmp";
    ck_assert_int_lt(snprintf(tmpdir, sizeof tmpdir, "%s/mbsc-keys-XXXXXX", base),
                     (int)sizeof tmpdir);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    saved_umask = umask(022);
}

static void teardown_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *de;
    char path[8192];

    umask(saved_umask);
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", tmpdir, de->d_name);
        (void)unlink(path);
    }
    closedir(d);
    (void)rmdir(tmpdir);
}

/* tmpdir/name in a static buffer (one at a time per slot). */
static const char *tpath_slot(int slot, const char *name)
{
    static char buf[4][8192];
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", tmpdir, name);
    return buf[slot];
}
#define tpath(name) tpath_slot(0, name)

static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd;

    (void)unlink(path); /* a fresh file, whatever the old one's mode */
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    ck_assert_int_eq(close(fd), 0);
}

static void write_str(const char *path, const char *s, mode_t mode)
{
    write_file(path, s, strlen(s), mode);
}

/* Whole contents of path, NUL-terminated, in a static buffer. */
static const char *read_back(const char *path, size_t *len)
{
    static char buf[256];
    int fd = open(path, O_RDONLY);
    ssize_t n;

    ck_assert_int_ge(fd, 0);
    n = read(fd, buf, sizeof buf - 1);
    ck_assert_int_ge(n, 0);
    close(fd);
    buf[n] = '\0';
    if (len != NULL)
        *len = (size_t)n;
    return buf;
}

static unsigned file_mode(const char *path)
{
    struct stat st;

    ck_assert_int_eq(stat(path, &st), 0);
    return (unsigned)st.st_mode & 07777u;
}

static int dir_entries(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *de;
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void hex32(uint8_t out[32], const char *hex)
{
    ck_assert_int_eq(tu_hex_decode(out, 32, hex, strlen(hex)), 32);
}

static int is_zero32(const uint8_t *p)
{
    return sodium_is_zero(p, 32);
}

/* RFC 7748 section 6.1; base64 computed with Python's base64 module. */
static const struct {
    const char *priv_hex, *pub_hex, *priv_b64, *pub_b64;
} rfc7748[] = {
    {"77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
     "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
     "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=",
     "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="},
    {"5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
     "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
     "XasIfmJKikt54X+Lg4AO5m87sSkmGLb9HC+LJ/+I4Os=",
     "3p7bfXt9wbTTW2HC7OQ1Nz+DQ8hbeGdNrfx+FG+IK08="},
};

#define ALICE_PUB_B64 "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="
#define BOB_PUB_B64   "3p7bfXt9wbTTW2HC7OQ1Nz+DQ8hbeGdNrfx+FG+IK08="
#define ZERO_B64      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
#define FF_B64        "//////////////////////////////////////////8="

/* --- Base64 codec --------------------------------------------------------- */

/* RFC 4648 section 10. */
static const struct {
    const char *plain, *b64;
} rfc4648[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

START_TEST(test_rfc4648_encode)
{
    const char *p = rfc4648[_i].plain, *b = rfc4648[_i].b64;
    char out[16];

    memset(out, 'x', sizeof out);
    ck_assert_int_eq(mbsc_base64_encode(out, sizeof out, (const uint8_t *)p, strlen(p)), MBSC_OK);
    ck_assert_str_eq(out, b);
    /* exactly enough room, then one byte short */
    ck_assert_int_eq(mbsc_base64_encode(out, strlen(b) + 1, (const uint8_t *)p, strlen(p)),
                     MBSC_OK);
    ck_assert_int_eq(mbsc_base64_encode(out, strlen(b), (const uint8_t *)p, strlen(p)),
                     MBSC_ERR_BUFFER_TOO_SMALL);
}
END_TEST

START_TEST(test_rfc4648_decode)
{
    const char *p = rfc4648[_i].plain, *b = rfc4648[_i].b64;
    uint8_t out[8];

    ck_assert_int_eq(mbsc_base64_decode(out, strlen(p), b, strlen(b)), MBSC_OK);
    ck_assert_mem_eq(out, p, strlen(p));
    /* the same text never decodes to another length */
    ck_assert_int_eq(mbsc_base64_decode(out, strlen(p) + 1, b, strlen(b)),
                     MBSC_ERR_KEY_FILE_FORMAT);
    if (strlen(p) > 0)
        ck_assert_int_eq(mbsc_base64_decode(out, strlen(p) - 1, b, strlen(b)),
                         MBSC_ERR_KEY_FILE_FORMAT);
}
END_TEST

/* Non-canonical or malformed spellings of the RFC 4648 strings. */
static const struct {
    size_t out_len;
    const char *b64;
} rfc4648_bad[] = {
    {1, "Zh=="}, /* "f" with nonzero unused bits */
    {1, "Zg="},  {1, "Zg"},    {1, "Zg=A"},  {1, "Z==="}, {2, "Zm9="}, /* "fo" with nonzero unused
                                                                          bits */
    {2, "Zm8"},  {2, "Zm8=="}, {3, "Zm9v="}, {3, "Zm9"},  {3, "Zm v"}, {3, "Zm9\n"},
    {3, "Zm-v"}, {3, "Zm_v"},
};

START_TEST(test_rfc4648_reject)
{
    uint8_t out[8];

    memset(out, 0xaa, sizeof out);
    ck_assert_int_eq(mbsc_base64_decode(out, rfc4648_bad[_i].out_len, rfc4648_bad[_i].b64,
                                        strlen(rfc4648_bad[_i].b64)),
                     MBSC_ERR_KEY_FILE_FORMAT);
    ck_assert(sodium_is_zero(out, rfc4648_bad[_i].out_len));
}
END_TEST

START_TEST(test_key_base64_vectors)
{
    uint8_t key[32], back[32];
    char b64[MBSC_KEY_BASE64_SIZE];
    size_t i;

    for (i = 0; i < sizeof rfc7748 / sizeof rfc7748[0]; i++) {
        hex32(key, rfc7748[i].priv_hex);
        ck_assert_int_eq(mbsc_key_to_base64(b64, key), MBSC_OK);
        ck_assert_str_eq(b64, rfc7748[i].priv_b64);
        ck_assert_int_eq(mbsc_key_from_base64(back, rfc7748[i].priv_b64, 44), MBSC_OK);
        ck_assert_mem_eq(back, key, 32);
    }
    memset(key, 0, 32);
    ck_assert_int_eq(mbsc_key_to_base64(b64, key), MBSC_OK);
    ck_assert_str_eq(b64, ZERO_B64);
    memset(key, 0xff, 32);
    ck_assert_int_eq(mbsc_key_to_base64(b64, key), MBSC_OK);
    ck_assert_str_eq(b64, FF_B64);
    ck_assert_int_eq(mbsc_key_from_base64(back, FF_B64, 44), MBSC_OK);
    ck_assert_mem_eq(back, key, 32);
    /* "foobar" x 5 then "fo": the RFC 4648 vectors, composed */
    memcpy(key, "foobarfoobarfoobarfoobarfoobarfo", 32);
    ck_assert_int_eq(mbsc_key_to_base64(b64, key), MBSC_OK);
    ck_assert_str_eq(b64, "Zm9vYmFyZm9vYmFyZm9vYmFyZm9vYmFyZm9vYmFyZm8=");
}
END_TEST

/* Round trip of many keys, against libsodium's encoder. */
START_TEST(test_key_base64_vs_libsodium)
{
    uint8_t key[32], back[32];
    char mine[MBSC_KEY_BASE64_SIZE], theirs[MBSC_KEY_BASE64_SIZE];
    uint32_t seed;

    for (seed = 1; seed <= 2000; seed++) {
        tu_fill_pattern(key, sizeof key, seed);
        if (seed <= 256)
            memset(key, (int)(seed - 1), seed % 32 + 1); /* every byte value */
        ck_assert_int_eq(mbsc_key_to_base64(mine, key), MBSC_OK);
        sodium_bin2base64(theirs, sizeof theirs, key, sizeof key, sodium_base64_VARIANT_ORIGINAL);
        ck_assert_str_eq(mine, theirs);
        ck_assert_int_eq(mbsc_key_from_base64(back, mine, strlen(mine)), MBSC_OK);
        ck_assert_mem_eq(back, key, 32);
    }
}
END_TEST

/* Position 42 carries 4 bits of data and 2 unused bits, which must be zero. */
START_TEST(test_key_base64_last_char)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char text[45];
    uint8_t key[32];
    int v;

    for (v = 0; v < 64; v++) {
        memcpy(text, ALICE_PUB_B64, 45);
        text[42] = alphabet[v];
        ck_assert_int_eq(mbsc_key_from_base64(key, text, 44),
                         v % 4 == 0 ? MBSC_OK : MBSC_ERR_KEY_FILE_FORMAT);
    }
}
END_TEST

/* Every byte value at a data position: only the 64 alphabet characters pass. */
START_TEST(test_key_base64_every_byte)
{
    char text[45];
    uint8_t key[32];
    int c;

    for (c = 0; c < 256; c++) {
        int in_alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                          (c >= '0' && c <= '9') || c == '+' || c == '/';
        int pos;
        for (pos = 0; pos < 42; pos += 41) {
            memcpy(text, ZERO_B64, 45);
            text[pos] = (char)c;
            ck_assert_int_eq(mbsc_key_from_base64(key, text, 44),
                             in_alphabet ? MBSC_OK : MBSC_ERR_KEY_FILE_FORMAT);
        }
        memcpy(text, ZERO_B64, 45);
        text[43] = (char)c; /* the padding position */
        ck_assert_int_eq(mbsc_key_from_base64(key, text, 44),
                         c == '=' ? MBSC_OK : MBSC_ERR_KEY_FILE_FORMAT);
    }
}
END_TEST

static const struct {
    const char *what, *text;
} bad_keys[] = {
    {"43 characters", "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo"},
    {"45 characters", "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=A"},
    {"missing padding", "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmoA"},
    {"31 bytes", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="},
    {"33 bytes", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
    {"embedded space", "hSDwCYkwp1R0i33ctD73 g2/Og0mOBr066SpjqqbTmo="},
    {"leading space", " SDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="},
    {"trailing newline", ALICE_PUB_B64 "\n"},
    {"url-safe alphabet", "hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo="},
    {"bad character", "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066Spjqq!Tmo="},
    {"padding inside", "hSDwCYkwp1R0i33ctD73=g2/Og0mOBr066SpjqqbTmo="},
    {"empty", ""},
};

START_TEST(test_key_base64_reject)
{
    uint8_t key[32];

    memset(key, 0xaa, sizeof key);
    ck_assert_msg(mbsc_key_from_base64(key, bad_keys[_i].text, strlen(bad_keys[_i].text)) ==
                      MBSC_ERR_KEY_FILE_FORMAT,
                  "accepted: %s", bad_keys[_i].what);
    ck_assert(is_zero32(key));
}
END_TEST

START_TEST(test_key_base64_args)
{
    uint8_t key[32];
    char b64[MBSC_KEY_BASE64_SIZE];

    memset(key, 0, sizeof key);
    ck_assert_int_eq(mbsc_key_to_base64(NULL, key), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_key_to_base64(b64, NULL), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_key_from_base64(NULL, ZERO_B64, 44), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_key_from_base64(key, NULL, 44), MBSC_ERR_INVALID_ARG);
    /* len counts: a NUL terminator is not needed, the 44 chars are used */
    ck_assert_int_eq(mbsc_key_from_base64(key, ALICE_PUB_B64 "trailing junk", 44), MBSC_OK);
}
END_TEST

/* --- Key pairs ------------------------------------------------------------ */

START_TEST(test_keypair_rfc7748)
{
    uint8_t priv[32], pub[32];
    mbsc_keypair kp;
    size_t i;

    for (i = 0; i < sizeof rfc7748 / sizeof rfc7748[0]; i++) {
        hex32(priv, rfc7748[i].priv_hex);
        hex32(pub, rfc7748[i].pub_hex);
        ck_assert_int_eq(mbsc_keypair_from_private(&kp, priv), MBSC_OK);
        ck_assert_mem_eq(kp.private_key, priv, 32);
        ck_assert_mem_eq(kp.public_key, pub, 32);
        /* the input may alias the key pair */
        memset(kp.public_key, 0, 32);
        ck_assert_int_eq(mbsc_keypair_from_private(&kp, kp.private_key), MBSC_OK);
        ck_assert_mem_eq(kp.public_key, pub, 32);
    }
    ck_assert_int_eq(mbsc_keypair_from_private(&kp, NULL), MBSC_ERR_INVALID_ARG);
    ck_assert(sodium_is_zero((const unsigned char *)&kp, sizeof kp));
    ck_assert_int_eq(mbsc_keypair_from_private(NULL, priv), MBSC_ERR_INVALID_ARG);
}
END_TEST

START_TEST(test_keypair_generate)
{
    mbsc_keypair a, b;
    uint8_t pub[32];

    ck_assert_int_eq(mbsc_keypair_generate(&a), MBSC_OK);
    ck_assert_int_eq(mbsc_keypair_generate(&b), MBSC_OK);
    ck_assert_int_eq(crypto_scalarmult_base(pub, a.private_key), 0);
    ck_assert_mem_eq(pub, a.public_key, 32);
    ck_assert(memcmp(a.private_key, b.private_key, 32) != 0);
    ck_assert(!is_zero32(a.private_key));
    mbsc_keypair_wipe(&a);
    ck_assert(sodium_is_zero((const unsigned char *)&a, sizeof a));
    mbsc_keypair_wipe(NULL);
    ck_assert_int_eq(mbsc_keypair_generate(NULL), MBSC_ERR_INVALID_ARG);
}
END_TEST

/* --- Key files ------------------------------------------------------------ */

START_TEST(test_private_save_load)
{
    const char *path = tpath("master.key");
    char why[MBSC_WHY_SIZE];
    mbsc_keypair kp, back;
    size_t len;

    hex32(kp.private_key, rfc7748[0].priv_hex);
    ck_assert_int_eq(mbsc_keypair_from_private(&kp, kp.private_key), MBSC_OK);
    strcpy(why, "stale");
    ck_assert_int_eq(mbsc_private_key_save(path, kp.private_key, 0, why, sizeof why), MBSC_OK);
    ck_assert_str_eq(why, "");
    ck_assert_uint_eq(file_mode(path), 0600);
    ck_assert_str_eq(read_back(path, &len), "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=\n");
    ck_assert_uint_eq(len, 45);
    strcpy(why, "stale");
    ck_assert_int_eq(mbsc_keypair_load(&back, path, why, sizeof why), MBSC_OK);
    ck_assert_str_eq(why, "");
    ck_assert_mem_eq(back.private_key, kp.private_key, 32);
    ck_assert_mem_eq(back.public_key, kp.public_key, 32);
    ck_assert_int_eq(dir_entries(), 1);
}
END_TEST

/* The mode is exact whatever the umask (it could only narrow it). */
START_TEST(test_save_mode_ignores_umask)
{
    static const mode_t masks[] = {0, 077, 0277, 022};
    uint8_t key[32];
    char name[32];
    size_t i;

    memset(key, 7, sizeof key);
    for (i = 0; i < sizeof masks / sizeof masks[0]; i++) {
        umask(masks[i]);
        snprintf(name, sizeof name, "priv%zu", i);
        ck_assert_int_eq(mbsc_private_key_save(tpath_slot(0, name), key, 0, NULL, 0), MBSC_OK);
        ck_assert_uint_eq(file_mode(tpath_slot(0, name)), 0600);
        snprintf(name, sizeof name, "psk%zu", i);
        ck_assert_int_eq(mbsc_psk_save(tpath_slot(0, name), key, 0, NULL, 0), MBSC_OK);
        ck_assert_uint_eq(file_mode(tpath_slot(0, name)), 0600);
        snprintf(name, sizeof name, "pub%zu", i);
        ck_assert_int_eq(mbsc_public_key_save(tpath_slot(0, name), key, 0, NULL, 0), MBSC_OK);
        ck_assert_uint_eq(file_mode(tpath_slot(0, name)), 0644);
    }
}
END_TEST

START_TEST(test_public_and_psk_round_trip)
{
    uint8_t pub[32], psk[32], back[32];
    char why[MBSC_WHY_SIZE];

    hex32(pub, rfc7748[1].pub_hex);
    ck_assert_int_eq(mbsc_public_key_save(tpath("slave.pub"), pub, 0, why, sizeof why), MBSC_OK);
    ck_assert_str_eq(read_back(tpath("slave.pub"), NULL), BOB_PUB_B64 "\n");
    ck_assert_int_eq(mbsc_public_key_load(back, tpath("slave.pub"), why, sizeof why), MBSC_OK);
    ck_assert_mem_eq(back, pub, 32);

    randombytes_buf(psk, sizeof psk);
    ck_assert_int_eq(mbsc_psk_save(tpath("link.psk"), psk, 0, why, sizeof why), MBSC_OK);
    ck_assert_uint_eq(file_mode(tpath("link.psk")), 0600);
    ck_assert_int_eq(mbsc_psk_load(back, tpath("link.psk"), why, sizeof why), MBSC_OK);
    ck_assert_mem_eq(back, psk, 32);
}
END_TEST

START_TEST(test_save_refuses_overwrite)
{
    const char *path = tpath("k");
    char why[MBSC_WHY_SIZE];
    uint8_t key[32];

    memset(key, 1, sizeof key);
    write_str(path, "old contents\n", 0600);
    ck_assert_int_eq(mbsc_private_key_save(path, key, 0, why, sizeof why), MBSC_ERR_KEY_FILE_WRITE);
    ck_assert_ptr_nonnull(strstr(why, path));
    ck_assert_ptr_nonnull(strstr(why, "exists"));
    ck_assert_str_eq(read_back(path, NULL), "old contents\n");
    /* a dangling symlink is not followed */
    ck_assert_int_eq(symlink(tpath_slot(1, "nowhere"), tpath_slot(2, "link")), 0);
    ck_assert_int_eq(mbsc_private_key_save(tpath_slot(2, "link"), key, 0, NULL, 0),
                     MBSC_ERR_KEY_FILE_WRITE);
    ck_assert_int_eq(access(tpath_slot(1, "nowhere"), F_OK), -1);
    ck_assert_int_eq(dir_entries(), 2);
}
END_TEST

START_TEST(test_save_overwrite)
{
    const char *path = tpath("k");
    uint8_t key[32];

    memset(key, 0, sizeof key);
    write_str(path, "old contents\n", 0644);
    ck_assert_int_eq(mbsc_private_key_save(path, key, MBSC_KEY_SAVE_OVERWRITE, NULL, 0), MBSC_OK);
    ck_assert_uint_eq(file_mode(path), 0600);
    ck_assert_str_eq(read_back(path, NULL), ZERO_B64 "\n");
    ck_assert_int_eq(dir_entries(), 1); /* no temporary file left */
    /* unknown flags, NULL arguments */
    ck_assert_int_eq(mbsc_private_key_save(path, key, 2, NULL, 0), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_private_key_save(NULL, key, 0, NULL, 0), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_public_key_save(path, NULL, 0, NULL, 0), MBSC_ERR_INVALID_ARG);
}
END_TEST

START_TEST(test_save_unwritable_dir)
{
    char why[MBSC_WHY_SIZE];
    uint8_t key[32];

    memset(key, 0, sizeof key);
    ck_assert_int_eq(mbsc_private_key_save(tpath("no/such/dir.key"), key, 0, why, sizeof why),
                     MBSC_ERR_KEY_FILE_WRITE);
    ck_assert_ptr_nonnull(strstr(why, "no/such/dir.key: "));
    ck_assert_int_eq(mbsc_private_key_save(tpath("no/such/dir.key"), key, MBSC_KEY_SAVE_OVERWRITE,
                                           why, sizeof why),
                     MBSC_ERR_KEY_FILE_WRITE);
    ck_assert_int_eq(dir_entries(), 0);
}
END_TEST

/* Modes a private key or PSK file must not have (any group/other bit). */
static const mode_t open_modes[] = {0640, 0604, 0644, 0620, 0602, 0610, 0601, 0666, 0700 | 0040};

START_TEST(test_private_permissions)
{
    const char *path = tpath("x.key");
    char why[MBSC_WHY_SIZE], mode_text[16];
    mbsc_keypair kp;
    uint8_t psk[32];

    write_str(path, ZERO_B64 "\n", open_modes[_i]);
    memset(&kp, 0xaa, sizeof kp);
    ck_assert_int_eq(mbsc_keypair_load(&kp, path, why, sizeof why), MBSC_ERR_KEY_FILE_PERMISSIONS);
    snprintf(mode_text, sizeof mode_text, "%04o", (unsigned)open_modes[_i]);
    ck_assert_msg(strstr(why, mode_text) != NULL, "why '%s' lacks %s", why, mode_text);
    ck_assert_ptr_nonnull(strstr(why, path));
    ck_assert_ptr_nonnull(strstr(why, "too open"));
    ck_assert(sodium_is_zero((const unsigned char *)&kp, sizeof kp));
    ck_assert_int_eq(mbsc_psk_load(psk, path, why, sizeof why), MBSC_ERR_KEY_FILE_PERMISSIONS);
    ck_assert(is_zero32(psk));
}
END_TEST

START_TEST(test_private_permissions_ok)
{
    static const mode_t ok_modes[] = {0600, 0400, 0700, 0200};
    mbsc_keypair kp;
    size_t i;

    for (i = 0; i < sizeof ok_modes / sizeof ok_modes[0]; i++) {
        write_str(tpath("x.key"), rfc7748[0].priv_b64, ok_modes[i]);
        /* mode 0200 is readable here only because tests may run as root */
        if (ok_modes[i] == 0200 && geteuid() != 0)
            continue;
        ck_assert_int_eq(mbsc_keypair_load(&kp, tpath("x.key"), NULL, 0), MBSC_OK);
        chmod(tpath("x.key"), 0600);
    }
}
END_TEST

/* Public keys and allow-lists may be read by all but changed by none. */
START_TEST(test_public_permissions)
{
    static const mode_t bad[] = {0664, 0646, 0666, 0620, 0602};
    static const mode_t good[] = {0644, 0600, 0640, 0444};
    char why[MBSC_WHY_SIZE];
    uint8_t pub[32];
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_str(tpath("p.pub"), ALICE_PUB_B64 "\n", bad[i]);
        ck_assert_int_eq(mbsc_public_key_load(pub, tpath("p.pub"), why, sizeof why),
                         MBSC_ERR_KEY_FILE_PERMISSIONS);
        ck_assert_ptr_nonnull(strstr(why, "world-writable"));
    }
    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        write_str(tpath("p.pub"), ALICE_PUB_B64 "\n", good[i]);
        ck_assert_int_eq(mbsc_public_key_load(pub, tpath("p.pub"), why, sizeof why), MBSC_OK);
    }
}
END_TEST

START_TEST(test_load_unreadable)
{
    char why[MBSC_WHY_SIZE];
    mbsc_keypair kp;
    uint8_t pub[32];

    ck_assert_int_eq(mbsc_keypair_load(&kp, tpath("missing.key"), why, sizeof why),
                     MBSC_ERR_KEY_FILE_UNREADABLE);
    ck_assert_ptr_nonnull(strstr(why, "missing.key: "));
    ck_assert_int_eq(mkdir(tpath("dir"), 0700), 0);
    ck_assert_int_eq(mbsc_public_key_load(pub, tpath("dir"), why, sizeof why),
                     MBSC_ERR_KEY_FILE_UNREADABLE);
    ck_assert_ptr_nonnull(strstr(why, "is a directory"));
    rmdir(tpath("dir"));
    /* a FIFO is refused without blocking on it */
    ck_assert_int_eq(mkfifo(tpath("fifo"), 0600), 0);
    ck_assert_int_eq(mbsc_keypair_load(&kp, tpath("fifo"), why, sizeof why),
                     MBSC_ERR_KEY_FILE_UNREADABLE);
    ck_assert_ptr_nonnull(strstr(why, "not a regular file"));
    ck_assert_int_eq(mbsc_keypair_load(NULL, tpath("fifo"), why, sizeof why), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_keypair_load(&kp, NULL, why, sizeof why), MBSC_ERR_INVALID_ARG);
}
END_TEST

/*
 * A .pub file where a private key is wanted: refused by its name, even when
 * its mode and contents would pass (a public key made 0600 after advice to
 * "chmod 600" must not become a private key), naming the private file.
 */
START_TEST(test_keypair_load_refuses_pub)
{
    char why[MBSC_WHY_SIZE], expected[MBSC_WHY_SIZE];
    mbsc_keypair kp;

    write_str(tpath("gateway.key.pub"), ALICE_PUB_B64 "\n", 0600);
    memset(&kp, 0xA5, sizeof kp);
    ck_assert_int_eq(mbsc_keypair_load(&kp, tpath("gateway.key.pub"), why, sizeof why),
                     MBSC_ERR_KEY_FILE_FORMAT);
    ck_assert_int_lt(snprintf(expected, sizeof expected,
                              "%s: this is a public key (the name ends in .pub); give the private "
                              "key file instead, e.g. %s",
                              tpath_slot(0, "gateway.key.pub"), tpath_slot(1, "gateway.key")),
                     (int)sizeof expected);
    ck_assert_str_eq(why, expected);
    ck_assert_int_eq(mbsc_keypair_load(&kp, tpath("gateway.key.pub"), NULL, 0),
                     MBSC_ERR_KEY_FILE_FORMAT);
    ck_assert(sodium_is_zero((const unsigned char *)&kp, sizeof kp));
    /* By name: a missing one is refused the same way, and a bare ".pub" too. */
    ck_assert_int_eq(mbsc_keypair_load(&kp, "missing.pub", why, sizeof why),
                     MBSC_ERR_KEY_FILE_FORMAT);
    ck_assert_str_eq(why, "missing.pub: this is a public key (the name ends in .pub); give the "
                          "private key file instead, e.g. missing");
    ck_assert_int_eq(mbsc_keypair_load(&kp, "keys/.pub", why, sizeof why),
                     MBSC_ERR_KEY_FILE_FORMAT);
    ck_assert_str_eq(why, "keys/.pub: this is a public key (the name ends in .pub); give the "
                          "private key file instead");
    /* Only the end of the name counts; a public key loads as before. */
    write_str(tpath("x.pubkey"), ALICE_PUB_B64 "\n", 0600);
    ck_assert_int_eq(mbsc_keypair_load(&kp, tpath("x.pubkey"), why, sizeof why), MBSC_OK);
    ck_assert_int_eq(mbsc_public_key_load(kp.public_key, tpath("gateway.key.pub"), why, sizeof why),
                     MBSC_OK);
}
END_TEST

/*
 * A private key given where a public key is wanted (--peer gateway.key):
 * refused when the NAME.pub beside it is its public key (RFC 7748 6.1's
 * pairs), and only then.
 */
START_TEST(test_public_load_refuses_private)
{
    uint8_t pub[MBSC_KEY_BYTES], zero[MBSC_KEY_BYTES] = {0};
    char why[2048];

    write_str(tpath("alice.key"), "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=\n", 0600);
    write_str(tpath("alice.key.pub"), ALICE_PUB_B64 "\n", 0644);
    memset(pub, 0xAA, sizeof pub);
    ck_assert_int_eq(mbsc_public_key_load(pub, tpath("alice.key"), why, sizeof why),
                     MBSC_ERR_KEY_FILE_FORMAT);
    ck_assert_msg(strncmp(why, tpath("alice.key"), strlen(tpath("alice.key"))) == 0 &&
                      strstr(why, ": this is a private key (") != NULL &&
                      strstr(why, ".pub beside it is its public key); a peer's public key") != NULL,
                  "%s", why);
    ck_assert_mem_eq(pub, zero, sizeof pub);
    ck_assert_int_eq(mbsc_public_key_load(pub, tpath("alice.key.pub"), why, sizeof why), MBSC_OK);
    /* A public key beside an unrelated NAME.pub, and a private key without one, load. */
    write_str(tpath("bob"), BOB_PUB_B64 "\n", 0644);
    write_str(tpath("bob.pub"), ALICE_PUB_B64 "\n", 0644);
    ck_assert_int_eq(mbsc_public_key_load(pub, tpath("bob"), why, sizeof why), MBSC_OK);
    write_str(tpath("lone.key"), "XasIfmJKikt54X+Lg4AO5m87sSkmGLb9HC+LJ/+I4Os=\n", 0600);
    ck_assert_int_eq(mbsc_public_key_load(pub, tpath("lone.key"), why, sizeof why), MBSC_OK);
}
END_TEST

/* A program's own file, read under a public key's rules (mbsc_trusted_file_read). */
START_TEST(test_trusted_file_read)
{
    static const char text[] = "mode = server\nkey = gw.key\n";
    static const mode_t bad[] = {0664, 0646, 0666, 0622};
    char why[MBSC_WHY_SIZE], buf[64];
    size_t len = 99, i;

    write_str(tpath("gw.conf"), text, 0644);
    ck_assert_int_eq(
        mbsc_trusted_file_read(tpath("gw.conf"), buf, sizeof buf, &len, why, sizeof why), MBSC_OK);
    ck_assert_uint_eq(len, sizeof text - 1);
    ck_assert_mem_eq(buf, text, len);
    ck_assert_str_eq(why, "");
    /* exactly cap bytes fit; one more is refused, and nothing is left behind */
    ck_assert_int_eq(
        mbsc_trusted_file_read(tpath("gw.conf"), buf, sizeof text - 1, &len, why, sizeof why),
        MBSC_OK);
    memset(buf, 'x', sizeof buf);
    ck_assert_int_eq(
        mbsc_trusted_file_read(tpath("gw.conf"), buf, sizeof text - 2, &len, why, sizeof why),
        MBSC_ERR_BUFFER_TOO_SMALL);
    ck_assert_uint_eq(len, 0);
    ck_assert(sodium_is_zero((const unsigned char *)buf, sizeof text - 2));
    ck_assert_msg(strstr(why, "too large") != NULL && strstr(why, tpath("gw.conf")) == why, "%s",
                  why);
    /* an empty file, checked without a buffer */
    write_str(tpath("empty"), "", 0600);
    ck_assert_int_eq(mbsc_trusted_file_read(tpath("empty"), NULL, 0, &len, why, sizeof why),
                     MBSC_OK);
    ck_assert_uint_eq(len, 0);

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_str(tpath("gw.conf"), text, bad[i]);
        ck_assert_int_eq(
            mbsc_trusted_file_read(tpath("gw.conf"), buf, sizeof buf, &len, why, sizeof why),
            MBSC_ERR_KEY_FILE_PERMISSIONS);
        ck_assert_msg(strstr(why, "fix: chmod go-w ") != NULL &&
                          strstr(why, tpath("gw.conf")) == why,
                      "mode %04o: %s", (unsigned)bad[i], why);
    }

    ck_assert_int_eq(
        mbsc_trusted_file_read(tpath("missing"), buf, sizeof buf, &len, why, sizeof why),
        MBSC_ERR_KEY_FILE_UNREADABLE);
    ck_assert_ptr_nonnull(strstr(why, "missing: "));
    /* a directory is named as one, even a writable one: no chmod advice */
    ck_assert_int_eq(mkdir(tpath("conf.d"), 0700), 0);
    ck_assert_int_eq(chmod(tpath("conf.d"), 0777), 0);
    ck_assert_int_eq(
        mbsc_trusted_file_read(tpath("conf.d"), buf, sizeof buf, &len, why, sizeof why),
        MBSC_ERR_KEY_FILE_UNREADABLE);
    ck_assert_msg(strstr(why, "is a directory") != NULL && strstr(why, "chmod") == NULL, "%s", why);
    ck_assert_int_eq(
        mbsc_trusted_file_read(tpath("conf.d/"), buf, sizeof buf, &len, why, sizeof why),
        MBSC_ERR_KEY_FILE_UNREADABLE);
    ck_assert_msg(strstr(why, "is a directory") != NULL, "%s", why);
    /* ... but it is still a directory on the way to a file inside it */
    write_str(tpath("conf.d/gw.conf"), text, 0644);
    ck_assert_int_eq(
        mbsc_trusted_file_read(tpath("conf.d/gw.conf"), buf, sizeof buf, &len, why, sizeof why),
        MBSC_ERR_KEY_FILE_PERMISSIONS);
    ck_assert_msg(strstr(why, "(mode 0777)") != NULL && strstr(why, "fix: chmod go-w ") != NULL,
                  "%s", why);
    ck_assert_int_eq(unlink(tpath("conf.d/gw.conf")), 0);
    ck_assert_int_eq(rmdir(tpath("conf.d")), 0);

    ck_assert_int_eq(mbsc_trusted_file_read(NULL, buf, sizeof buf, &len, why, sizeof why),
                     MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(
        mbsc_trusted_file_read(tpath("gw.conf"), buf, sizeof buf, NULL, why, sizeof why),
        MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_trusted_file_read(tpath("gw.conf"), NULL, 1, &len, why, sizeof why),
                     MBSC_ERR_INVALID_ARG);
}
END_TEST

static const struct {
    const char *what, *text, *why;
} bad_files[] = {
    {"empty", "", "empty file"},
    {"newline only", "\n", "found 0"},
    {"31 bytes", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\n", "bad base64"},
    {"33 bytes", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", "bad base64"},
    {"43 characters", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", "found 43"},
    {"two lines", ZERO_B64 "\n" ZERO_B64 "\n", "more than one line"},
    {"blank line after", ZERO_B64 "\n\n", "more than one line"},
    {"blank line before", "\n" ZERO_B64 "\n", "more than one line"},
    {"bad character", "AAAAAAAAAAAAAAAAAAAA*AAAAAAAAAAAAAAAAAAAAAA=\n", "bad base64"},
    {"non-canonical", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=\n", "bad base64"},
    {"leading space", " " ZERO_B64 "\n", "found 45"},
    {"trailing space", ZERO_B64 " \n", "found 45"},
    {"CR only", ZERO_B64 "\r", "found 45"},
    {"LF CR", ZERO_B64 "\n\r", "more than one line"},
    {"trailing NUL", ZERO_B64, "found 45"}, /* written with its NUL */
};

START_TEST(test_load_format)
{
    const char *path = tpath("bad.key");
    char why[MBSC_WHY_SIZE];
    size_t len = strlen(bad_files[_i].text);
    mbsc_keypair kp;
    uint8_t pub[32];

    if (strcmp(bad_files[_i].what, "trailing NUL") == 0)
        len++;
    write_file(path, bad_files[_i].text, len, 0600);
    memset(&kp, 0xaa, sizeof kp);
    ck_assert_int_eq(mbsc_keypair_load(&kp, path, why, sizeof why), MBSC_ERR_KEY_FILE_FORMAT);
    ck_assert_msg(strstr(why, bad_files[_i].why) != NULL, "%s: why '%s'", bad_files[_i].what, why);
    ck_assert_ptr_nonnull(strstr(why, path));
    ck_assert(sodium_is_zero((const unsigned char *)&kp, sizeof kp));
    ck_assert_int_eq(mbsc_public_key_load(pub, path, NULL, 0), MBSC_ERR_KEY_FILE_FORMAT);
}
END_TEST

START_TEST(test_load_line_ends)
{
    static const char *const texts[] = {ALICE_PUB_B64, ALICE_PUB_B64 "\n", ALICE_PUB_B64 "\r\n"};
    uint8_t pub[32], expect[32];
    size_t i;

    hex32(expect, rfc7748[0].pub_hex);
    for (i = 0; i < 3; i++) {
        write_str(tpath("a.pub"), texts[i], 0644);
        ck_assert_int_eq(mbsc_public_key_load(pub, tpath("a.pub"), NULL, 0), MBSC_OK);
        ck_assert_mem_eq(pub, expect, 32);
    }
}
END_TEST

START_TEST(test_load_too_large)
{
    static char big[MBSC_KEYFILE_MAX_BYTES + 1];
    char why[MBSC_WHY_SIZE];
    uint8_t psk[32];

    memset(big, 'A', sizeof big);
    write_file(tpath("big.psk"), big, sizeof big, 0600);
    ck_assert_int_eq(mbsc_psk_load(psk, tpath("big.psk"), why, sizeof why),
                     MBSC_ERR_KEY_FILE_FORMAT);
    ck_assert_ptr_nonnull(strstr(why, "too large"));
    /* exactly the limit is read, and rejected for its contents */
    write_file(tpath("big.psk"), big, sizeof big - 1, 0600);
    ck_assert_int_eq(mbsc_psk_load(psk, tpath("big.psk"), why, sizeof why),
                     MBSC_ERR_KEY_FILE_FORMAT);
    ck_assert_ptr_nonnull(strstr(why, "found 4096"));
}
END_TEST

/* why is truncated, NUL-terminated, never overrun; NULL is fine. */
START_TEST(test_why_bounds)
{
    char why[16];
    mbsc_keypair kp;
    size_t n;

    write_str(tpath("w.key"), ZERO_B64, 0644);
    for (n = 1; n <= 9; n++) {
        memset(why, '#', sizeof why);
        ck_assert_int_eq(mbsc_keypair_load(&kp, tpath("w.key"), why, n),
                         MBSC_ERR_KEY_FILE_PERMISSIONS);
        ck_assert_uint_eq(strlen(why), n - 1);
        ck_assert_int_eq(why[n], '#');
    }
    memset(why, '#', sizeof why);
    ck_assert_int_eq(mbsc_keypair_load(&kp, tpath("w.key"), why, 0), MBSC_ERR_KEY_FILE_PERMISSIONS);
    ck_assert_int_eq(why[0], '#');
    ck_assert_int_eq(mbsc_keypair_load(&kp, tpath("w.key"), NULL, 0),
                     MBSC_ERR_KEY_FILE_PERMISSIONS);
    ck_assert_int_eq(mbsc_keypair_load(&kp, tpath("w.key"), NULL, 100),
                     MBSC_ERR_KEY_FILE_PERMISSIONS);
}
END_TEST

START_TEST(test_load_through_symlink)
{
    uint8_t pub[32];

    write_str(tpath("real.pub"), ALICE_PUB_B64 "\n", 0644);
    ck_assert_int_eq(symlink("real.pub", tpath("link.pub")), 0);
    ck_assert_int_eq(mbsc_public_key_load(pub, tpath("link.pub"), NULL, 0), MBSC_OK);
    /* the mode checked is the target's, not the link's */
    write_str(tpath("real.key"), ZERO_B64 "\n", 0644);
    ck_assert_int_eq(symlink("real.key", tpath("link.key")), 0);
    ck_assert_int_eq(mbsc_psk_load(pub, tpath("link.key"), NULL, 0), MBSC_ERR_KEY_FILE_PERMISSIONS);
}
END_TEST

/* --- Who may change a key file (trust.c, docs/keys.md) -------------------- */

/*
 * Each case builds a small tree under a fresh directory in /tmp (root-owned
 * and sticky, which the rule accepts), then loads one file from it in a
 * child process, as the test's own user and, when the test runs as root,
 * also as an unprivileged one (uid/gid 65534, "nobody", set with
 * setresuid in the child).  "ours" is the loading user, "other" a third
 * uid; cases that need a file owned by someone else are skipped with a
 * message when the test cannot chown.
 */
#define TRUST_NOBODY ((uid_t)65534)
#define TRUST_OTHER  ((uid_t)65533)

struct trust_ids {
    uid_t ours, other;
    int can_chown; /* running as root: every owner can be set up */
};

static char trust_base[64];

enum trust_kind { T_SECRET, T_PUBLIC, T_LIST, T_FILE /* mbsc_trusted_file_read */ };

struct trust_case {
    const char *name;
    int needs_chown;
    void (*setup)(const struct trust_ids *id);
    const char *load; /* path under trust_base ("" = relative, see cwd) */
    const char *cwd;  /* if set: chdir here (under trust_base) and load `load` relatively */
    enum trust_kind kind;
    int expect;              /* MBSC_OK or the error */
    const char *why1, *why2; /* substrings of the message (NULL: none) */
};

static const char *tb(const char *rel)
{
    static char buf[4][512];
    static int slot;
    char *p = buf[slot++ & 3];
    snprintf(p, sizeof buf[0], "%s/%s", trust_base, rel);
    return p;
}

static void mk_dir(const char *rel, mode_t mode, uid_t owner)
{
    ck_assert_int_eq(mkdir(tb(rel), 0700), 0);
    if (geteuid() == 0)
        ck_assert_int_eq(chown(tb(rel), owner, (gid_t)owner), 0);
    ck_assert_int_eq(chmod(tb(rel), mode), 0);
}

static void mk_file(const char *rel, const char *text, mode_t mode, uid_t owner)
{
    write_str(tb(rel), text, mode);
    if (geteuid() == 0)
        ck_assert_int_eq(chown(tb(rel), owner, (gid_t)owner), 0);
    ck_assert_int_eq(chmod(tb(rel), mode), 0);
}

static void mk_link(const char *rel, const char *target, uid_t owner)
{
    ck_assert_int_eq(symlink(target, tb(rel)), 0);
    if (geteuid() == 0)
        ck_assert_int_eq(lchown(tb(rel), owner, (gid_t)owner), 0);
}

#define KEY_LINE  ZERO_B64 "\n"
#define LIST_LINE ALICE_PUB_B64 " alice\n"

static void su_ok(const struct trust_ids *id)
{
    mk_dir("d", 0700, id->ours);
    mk_file("d/k", KEY_LINE, 0600, id->ours);
}
static void su_root_file(const struct trust_ids *id)
{
    mk_dir("d", 0755, id->ours);
    mk_file("d/k", KEY_LINE, 0600, 0); /* root's: trusted (readable only if we are root) */
    (void)id;
}
static void su_other_file(const struct trust_ids *id)
{
    mk_dir("d", 0755, id->ours);
    mk_file("d/k", LIST_LINE, 0644, id->other);
}
static void su_other_dir(const struct trust_ids *id)
{
    mk_dir("d", 0755, id->other);
    mk_file("d/k", KEY_LINE, 0600, id->ours);
}
static void su_group_dir(const struct trust_ids *id)
{
    mk_dir("d", 0770, id->ours);
    mk_file("d/k", KEY_LINE, 0600, id->ours);
}
static void su_world_dir(const struct trust_ids *id)
{
    mk_dir("d", 0757, id->ours);
    mk_file("d/k", LIST_LINE, 0644, id->ours);
}
static void su_grandparent(const struct trust_ids *id)
{
    mk_dir("a", 0777, id->ours);
    mk_dir("a/b", 0700, id->ours);
    mk_file("a/b/k", KEY_LINE, 0600, id->ours);
}
static void su_sticky_root(const struct trust_ids *id)
{
    mk_dir("d", 01777, 0);
    mk_file("d/k", KEY_LINE, 0600, id->ours);
}
static void su_sticky_user(const struct trust_ids *id)
{
    /* sticky but not root's: its owner could still swap our file */
    mk_dir("d", 01777, id->ours == 0 ? id->other : id->ours);
    mk_file("d/k", KEY_LINE, 0600, id->ours);
}
static void su_sticky_theirs(const struct trust_ids *id)
{
    /* in a root-owned sticky dir, but the entry is someone else's */
    mk_dir("d", 01777, 0);
    mk_file("d/k", LIST_LINE, 0644, id->other);
}
static void su_link_good(const struct trust_ids *id)
{
    mk_dir("real", 0700, id->ours);
    mk_file("real/k", KEY_LINE, 0600, id->ours);
    mk_dir("d", 0700, id->ours);
    mk_link("d/k", "../real/k", id->ours);
}
static void su_link_bad_target_dir(const struct trust_ids *id)
{
    mk_dir("open", 0777, id->ours);
    mk_file("open/k", KEY_LINE, 0600, id->ours);
    mk_dir("d", 0700, id->ours);
    mk_link("d/k", "../open/k", id->ours);
}
static void su_link_abs_bad_target(const struct trust_ids *id)
{
    mk_dir("open", 0777, id->ours);
    mk_file("open/k", LIST_LINE, 0644, id->ours);
    mk_dir("d", 0700, id->ours);
    mk_link("d/k", tb("open/k"), id->ours);
}
static void su_link_dir_bad(const struct trust_ids *id)
{
    /* a link to a directory: the target's own dirs are checked too */
    mk_dir("open", 0777, id->ours);
    mk_dir("open/keys", 0700, id->ours);
    mk_file("open/keys/k", KEY_LINE, 0600, id->ours);
    mk_dir("d", 0700, id->ours);
    mk_link("d/keys", "../open/keys", id->ours);
}
static void su_link_other_owner(const struct trust_ids *id)
{
    mk_dir("d", 01777, 0);
    mk_dir("real", 0700, id->ours);
    mk_file("real/k", KEY_LINE, 0600, id->ours);
    mk_link("d/k", "../real/k", id->other);
}
static void su_link_loop(const struct trust_ids *id)
{
    mk_dir("d", 0700, id->ours);
    mk_link("d/k", "k2", id->ours);
    mk_link("d/k2", "k", id->ours);
}
static void su_dotdot(const struct trust_ids *id)
{
    mk_dir("open", 0777, id->ours);
    mk_dir("d", 0700, id->ours);
    mk_file("d/k", KEY_LINE, 0600, id->ours);
}

static const struct trust_case trust_cases[] = {
    {"owned by us, private dir", 0, su_ok, "d/k", NULL, T_SECRET, MBSC_OK, NULL, NULL},
    {"public key, private dir", 0, su_ok, "d/k", NULL, T_PUBLIC, MBSC_OK, NULL, NULL},
    {"root's file", 1, su_root_file, "d/k", NULL, T_SECRET, -1, NULL, NULL},
    {"another user's allow-list", 1, su_other_file, "d/k", NULL, T_LIST,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "owned by uid", "fix: chown"},
    {"another user's public key", 1, su_other_file, "d/k", NULL, T_PUBLIC,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "owned by uid", "fix: chown"},
    {"dir owned by another user", 1, su_other_dir, "d/k", NULL, T_SECRET,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "directory", "fix: chown"},
    {"group-writable dir", 0, su_group_dir, "d/k", NULL, T_SECRET, MBSC_ERR_KEY_FILE_PERMISSIONS,
     "writable by group or others (mode 0770)", "chmod go-w"},
    {"world-writable dir, allow-list", 0, su_world_dir, "d/k", NULL, T_LIST,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "mode 0757", "chmod go-w"},
    {"world-writable grandparent", 0, su_grandparent, "a/b/k", NULL, T_SECRET,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "/a is writable", "chmod go-w"},
    {"sticky dir owned by root", 1, su_sticky_root, "d/k", NULL, T_SECRET, MBSC_OK, NULL, NULL},
    {"sticky dir not owned by root", 0, su_sticky_user, "d/k", NULL, T_SECRET,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "directory", "/d"},
    {"someone else's file in a sticky dir", 1, su_sticky_theirs, "d/k", NULL, T_LIST,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "owned by uid", "fix: chown"},
    {"symlink, trusted target", 0, su_link_good, "d/k", NULL, T_SECRET, MBSC_OK, NULL, NULL},
    {"symlink into a writable dir", 0, su_link_bad_target_dir, "d/k", NULL, T_SECRET,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "/open is writable", "chmod go-w"},
    {"absolute symlink into a writable dir", 0, su_link_abs_bad_target, "d/k", NULL, T_PUBLIC,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "/open is writable", "chmod go-w"},
    {"symlinked dir inside a writable dir", 0, su_link_dir_bad, "d/keys/k", NULL, T_SECRET,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "/open is writable", NULL},
    {"symlink owned by another user", 1, su_link_other_owner, "d/k", NULL, T_SECRET,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "symbolic link", "owned by uid"},
    {"symlink loop", 0, su_link_loop, "d/k", NULL, T_SECRET, MBSC_ERR_KEY_FILE_UNREADABLE,
     "d/k: ", NULL},
    {"relative path, trusted cwd", 0, su_ok, "k", "d", T_SECRET, MBSC_OK, NULL, NULL},
    {"relative path, cwd below a writable dir", 0, su_grandparent, "k", "a/b", T_SECRET,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "/a is writable", NULL},
    {"dot-dot through a writable dir", 0, su_dotdot, "open/../d/k", NULL, T_SECRET,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "/open is writable", NULL},
    {"dot-dot, trusted dirs", 0, su_dotdot, "d/../d/./k", NULL, T_SECRET, MBSC_OK, NULL, NULL},
    {"trusted file, private dir", 0, su_ok, "d/k", NULL, T_FILE, MBSC_OK, NULL, NULL},
    {"another user's trusted file", 1, su_other_file, "d/k", NULL, T_FILE,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "owned by uid", "fix: chown"},
    {"trusted file, dir owned by another user", 1, su_other_dir, "d/k", NULL, T_FILE,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "directory", "fix: chown"},
    {"trusted file, world-writable dir", 0, su_world_dir, "d/k", NULL, T_FILE,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "mode 0757", "chmod go-w"},
    {"trusted file, symlink into a writable dir", 0, su_link_bad_target_dir, "d/k", NULL, T_FILE,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "/open is writable", "chmod go-w"},
    {"trusted file, sticky dir not owned by root", 0, su_sticky_user, "d/k", NULL, T_FILE,
     MBSC_ERR_KEY_FILE_PERMISSIONS, "directory", "/d"},
};

/* In the child: load as id, compare; exit status 0 = as expected. */
static int trust_child(const struct trust_case *c, const struct trust_ids *id, int drop)
{
    char why[MBSC_WHY_SIZE + 512];
    const char *path = tb(c->load);
    int rc, expect = c->expect;

    if (drop) {
        if (setgroups(0, NULL) != 0 ||
            setresgid((gid_t)id->ours, (gid_t)id->ours, (gid_t)id->ours) != 0 ||
            setresuid(id->ours, id->ours, id->ours) != 0) {
            fprintf(stderr, "cannot become uid %lu: %s\n", (unsigned long)id->ours,
                    strerror(errno));
            return 2;
        }
    }
    if (c->cwd != NULL) {
        if (chdir(tb(c->cwd)) != 0)
            return 2;
        path = c->load;
    }
    /* root's file: trusted, but unprivileged users cannot read a 0600 file */
    if (expect == -1)
        expect = geteuid() == 0 ? MBSC_OK : MBSC_ERR_KEY_FILE_UNREADABLE;
    why[0] = 'x';
    if (c->kind == T_SECRET) {
        mbsc_keypair kp;
        rc = mbsc_keypair_load(&kp, path, why, sizeof why);
        mbsc_keypair_wipe(&kp);
    } else if (c->kind == T_PUBLIC) {
        uint8_t pub[32];
        rc = mbsc_public_key_load(pub, path, why, sizeof why);
    } else if (c->kind == T_LIST) {
        mbsc_allowlist *al = NULL;
        rc = mbsc_allowlist_load(&al, path, why, sizeof why);
        mbsc_allowlist_free(al);
    } else {
        char buf[128];
        size_t len;
        rc = mbsc_trusted_file_read(path, buf, sizeof buf, &len, why, sizeof why);
    }
    if (rc != expect || (c->why1 != NULL && strstr(why, c->why1) == NULL) ||
        (c->why2 != NULL && strstr(why, c->why2) == NULL) ||
        (rc != MBSC_OK && strstr(why, path) != why)) {
        fprintf(stderr, "trust case '%s' as uid %lu: got %d (%s), expected %d with '%s' '%s'\n",
                c->name, (unsigned long)geteuid(), rc, why, expect, c->why1 ? c->why1 : "",
                c->why2 ? c->why2 : "");
        return 1;
    }
    return 0;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static void trust_run(const struct trust_case *c, const struct trust_ids *id, int drop)
{
    struct stat st;
    pid_t pid;
    int status;

    ck_assert_int_eq(lstat("/tmp", &st), 0);
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 01000) == 0) {
        fprintf(stderr,
                "check_keys: SKIP trust case '%s': /tmp is not a root-owned sticky "
                "directory\n",
                c->name);
        return;
    }
    ck_assert_int_lt(snprintf(trust_base, sizeof trust_base, "/tmp/mbsc-trust-XXXXXX"),
                     (int)sizeof trust_base);
    ck_assert_ptr_nonnull(mkdtemp(trust_base));
    ck_assert_int_eq(chmod(trust_base, 0755), 0); /* reachable by the dropped user */
    if (geteuid() == 0)
        ck_assert_int_eq(chown(trust_base, 0, 0), 0);
    c->setup(id);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(trust_child(c, id, drop));
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    (void)nftw(trust_base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "trust case '%s' as uid %lu failed", c->name, (unsigned long)id->ours);
}

START_TEST(test_trust_as_self)
{
    const struct trust_case *c = &trust_cases[_i];
    struct trust_ids id = {geteuid(), geteuid() == 0 ? TRUST_NOBODY : TRUST_OTHER, geteuid() == 0};

    if (c->needs_chown && !id.can_chown) {
        fprintf(stderr, "check_keys: SKIP trust case '%s' as uid %lu: needs root to set up\n",
                c->name, (unsigned long)id.ours);
        return;
    }
    trust_run(c, &id, 0);
}
END_TEST

START_TEST(test_trust_as_unprivileged)
{
    const struct trust_case *c = &trust_cases[_i];
    struct trust_ids id = {TRUST_NOBODY, TRUST_OTHER, 1};

    if (geteuid() != 0) {
        if (_i == 0)
            fprintf(stderr, "check_keys: SKIP trust cases as uid %lu: the test is not root\n",
                    (unsigned long)TRUST_NOBODY);
        return;
    }
    trust_run(c, &id, 1);
}
END_TEST

/* --- Allow-list ----------------------------------------------------------- */

static const char good_list[] =
    "# masters allowed on this slave\n"
    "\n" ZERO_B64 " scada-1 operator\n"
    "   \t\n"
    "\t" ALICE_PUB_B64 "\tengineering.ws_2 \t admin   # Alice\r\n"
    "# " FF_B64 " commented-out\n" BOB_PUB_B64 " historian"; /* no final newline */

START_TEST(test_allowlist_good)
{
    mbsc_allowlist *al = NULL;
    char why[MBSC_WHY_SIZE];
    const char *name, *role;
    uint8_t key[32], alice[32], bob[32];

    hex32(alice, rfc7748[0].pub_hex);
    hex32(bob, rfc7748[1].pub_hex);
    ck_assert_int_eq(mbsc_allowlist_parse(&al, good_list, strlen(good_list), "t", why, sizeof why),
                     MBSC_OK);
    ck_assert_str_eq(why, "");
    ck_assert_uint_eq(mbsc_allowlist_count(al), 3);

    ck_assert_int_eq(mbsc_allowlist_find(al, alice, &name, &role), 1);
    ck_assert_str_eq(name, "engineering.ws_2");
    ck_assert_str_eq(role, "admin");
    ck_assert_int_eq(mbsc_allowlist_find(al, bob, &name, &role), 2);
    ck_assert_str_eq(name, "historian");
    ck_assert_ptr_null(role);
    memset(key, 0, sizeof key);
    ck_assert_int_eq(mbsc_allowlist_find(al, key, NULL, &role), 0);
    ck_assert_str_eq(role, "operator");
    memset(key, 0xff, sizeof key); /* commented out */
    ck_assert_int_eq(mbsc_allowlist_find(al, key, &name, &role), MBSC_ERR_UNKNOWN_PEER);
    ck_assert_ptr_null(name);
    ck_assert_ptr_null(role);

    ck_assert_int_eq(mbsc_allowlist_get(al, 1, key, &name, &role), MBSC_OK);
    ck_assert_mem_eq(key, alice, 32);
    ck_assert_str_eq(name, "engineering.ws_2");
    ck_assert_int_eq(mbsc_allowlist_get(al, 3, key, &name, &role), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_allowlist_find(NULL, key, NULL, NULL), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_allowlist_find(al, NULL, NULL, NULL), MBSC_ERR_INVALID_ARG);
    mbsc_allowlist_free(al);
}
END_TEST

START_TEST(test_allowlist_empty)
{
    static const char *const texts[] = {"", "\n\n", "# nobody yet\n", "  \t \r\n# x\r\n"};
    mbsc_allowlist *al;
    size_t i;

    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        al = NULL;
        ck_assert_int_eq(mbsc_allowlist_parse(&al, texts[i], strlen(texts[i]), "t", NULL, 0),
                         MBSC_OK);
        ck_assert_ptr_nonnull(al);
        ck_assert_uint_eq(mbsc_allowlist_count(al), 0);
        mbsc_allowlist_free(al);
    }
    ck_assert_int_eq(mbsc_allowlist_parse(&al, NULL, 0, "t", NULL, 0), MBSC_OK);
    mbsc_allowlist_free(al);
    ck_assert_int_eq(mbsc_allowlist_parse(&al, NULL, 1, "t", NULL, 0), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_allowlist_parse(NULL, "", 0, "t", NULL, 0), MBSC_ERR_INVALID_ARG);
    ck_assert_uint_eq(mbsc_allowlist_count(NULL), 0);
    mbsc_allowlist_free(NULL);
}
END_TEST

#define N63 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789."

static const struct {
    const char *what, *text;
    int code;
    const char *why;
} bad_lists[] = {
    {"bad key", "# c\n\nAAAA name\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:3: bad base64 key"},
    {"non-canonical key",
     ZERO_B64 " a\n"
              "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB= b\n",
     MBSC_ERR_ALLOWLIST_SYNTAX, "t:2: bad base64 key"},
    {"missing name", ZERO_B64 "\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: missing name"},
    {"missing name, comment", ZERO_B64 " #name\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: missing name"},
    {"too many fields", "\n" ZERO_B64 " a b c\n", MBSC_ERR_ALLOWLIST_SYNTAX,
     "t:2: too many fields"},
    {"bad name", ZERO_B64 " bob!\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: bad name"},
    {"non-ASCII name", ZERO_B64 " j\xc3\xb6rg\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: bad name"},
    {"name with comma", ZERO_B64 " a,b role\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: bad name"},
    {"bad role", ZERO_B64 " bob ro/le\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: bad role"},
    {"long name", ZERO_B64 " x" N63 "\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: bad name"},
    {"long role", ZERO_B64 " x " N63 "x\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: bad role"},
    {"vertical tab separator", ZERO_B64 "\va\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: bad base64"},
    {"stray CR", ZERO_B64 " a\rb\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: bad name"},
    {"CR CR LF", ZERO_B64 " a\r\r\n", MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: bad name"},
    {"key without padding", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA x\n",
     MBSC_ERR_ALLOWLIST_SYNTAX, "t:1: bad base64 key"},
    {"duplicate", "# c\n" ZERO_B64 " a\n" ALICE_PUB_B64 " b\n\n" ZERO_B64 " c\n",
     MBSC_ERR_ALLOWLIST_DUPLICATE, "t:5: key already listed on line 2"},
    {"three times",
     ALICE_PUB_B64 " a\n" ZERO_B64 " b\n" ZERO_B64 " c\n" ALICE_PUB_B64 " d\n" ZERO_B64 " e\n",
     MBSC_ERR_ALLOWLIST_DUPLICATE, "t:3: key already listed on line 2"},
    {"duplicate before syntax error", ZERO_B64 " a\n" ZERO_B64 " a\nbad line\n",
     MBSC_ERR_ALLOWLIST_DUPLICATE, "t:2: key already listed on line 1"},
    {"syntax error before duplicate", ZERO_B64 " a\nbad line\n" ZERO_B64 " a\n",
     MBSC_ERR_ALLOWLIST_SYNTAX, "t:2: bad base64 key"},
};

START_TEST(test_allowlist_bad)
{
    static int not_a_list;
    mbsc_allowlist *al = (mbsc_allowlist *)(void *)&not_a_list; /* must be reset to NULL */
    char why[MBSC_WHY_SIZE];

    ck_assert_int_eq(mbsc_allowlist_parse(&al, bad_lists[_i].text, strlen(bad_lists[_i].text), "t",
                                          why, sizeof why),
                     bad_lists[_i].code);
    ck_assert_ptr_null(al);
    ck_assert_msg(strncmp(why, bad_lists[_i].why, strlen(bad_lists[_i].why)) == 0,
                  "%s: why '%s', expected '%s...'", bad_lists[_i].what, why, bad_lists[_i].why);
}
END_TEST

START_TEST(test_allowlist_limits)
{
    static const uint8_t zero[32];
    static char text[3000];
    mbsc_allowlist *al = NULL;
    char why[MBSC_WHY_SIZE];
    const char *name;
    size_t n;

    /* a name of exactly 63 characters */
    n = (size_t)snprintf(text, sizeof text, "%s %s %s\n", ZERO_B64, N63, N63);
    ck_assert_int_eq(mbsc_allowlist_parse(&al, text, n, "t", why, sizeof why), MBSC_OK);
    ck_assert_int_eq(mbsc_allowlist_find(al, zero, &name, NULL), 0);
    ck_assert_str_eq(name, N63);
    mbsc_allowlist_free(al);

    /* a line of exactly MBSC_ALLOWLIST_LINE_MAX bytes (plus CRLF) passes */
    n = 0;
    text[n++] = '\n';
    text[n++] = '#';
    memset(text + n, '-', MBSC_ALLOWLIST_LINE_MAX - 1);
    n += MBSC_ALLOWLIST_LINE_MAX - 1;
    text[n++] = '\r';
    text[n++] = '\n';
    ck_assert_int_eq(mbsc_allowlist_parse(&al, text, n, "t", why, sizeof why), MBSC_OK);
    mbsc_allowlist_free(al);
    /* one byte more fails on its line, with or without a final newline */
    text[n - 2] = '-';
    ck_assert_int_eq(mbsc_allowlist_parse(&al, text, n, "t", why, sizeof why),
                     MBSC_ERR_ALLOWLIST_SYNTAX);
    ck_assert_str_eq(why, "t:2: line too long (over 1024 bytes)");
    ck_assert_int_eq(mbsc_allowlist_parse(&al, text, n - 1, "t", why, sizeof why),
                     MBSC_ERR_ALLOWLIST_SYNTAX);
    ck_assert_str_eq(why, "t:2: line too long (over 1024 bytes)");
    /* NUL outside a comment */
    ck_assert_int_eq(mbsc_allowlist_parse(&al, ZERO_B64 " a\0b\n", 49, "t", why, sizeof why),
                     MBSC_ERR_ALLOWLIST_SYNTAX);
    ck_assert_str_eq(why, "t:1: bad name (use 1 to 63 letters, digits, '-', '_' or '.')");
    /* default name in messages */
    ck_assert_int_eq(mbsc_allowlist_parse(&al, "x", 1, NULL, why, sizeof why),
                     MBSC_ERR_ALLOWLIST_SYNTAX);
    ck_assert_ptr_nonnull(strstr(why, "allow-list:1: "));
}
END_TEST

/* Thousands of entries: every key found at its index, duplicates caught. */
START_TEST(test_allowlist_many)
{
    enum { N = 5000 };
    size_t cap = (size_t)N * 64 + 64, n = 0;
    char *text = malloc(cap);
    char b64[MBSC_KEY_BASE64_SIZE];
    mbsc_allowlist *al = NULL;
    char why[MBSC_WHY_SIZE];
    uint8_t key[32];
    const char *name;
    char expect[16];
    int i;

    ck_assert_ptr_nonnull(text);
    for (i = 0; i < N; i++) {
        tu_fill_pattern(key, sizeof key, (uint32_t)i + 1);
        ck_assert_int_eq(mbsc_key_to_base64(b64, key), MBSC_OK);
        n += (size_t)snprintf(text + n, cap - n, "%s m%d\n", b64, i);
    }
    ck_assert_int_eq(mbsc_allowlist_parse(&al, text, n, "t", why, sizeof why), MBSC_OK);
    ck_assert_uint_eq(mbsc_allowlist_count(al), N);
    for (i = 0; i < N; i += 7) {
        tu_fill_pattern(key, sizeof key, (uint32_t)i + 1);
        snprintf(expect, sizeof expect, "m%d", i);
        ck_assert_int_eq(mbsc_allowlist_find(al, key, &name, NULL), i);
        ck_assert_str_eq(name, expect);
    }
    mbsc_allowlist_free(al);
    /* repeat entry 1234 at the end */
    tu_fill_pattern(key, sizeof key, 1235);
    ck_assert_int_eq(mbsc_key_to_base64(b64, key), MBSC_OK);
    n += (size_t)snprintf(text + n, cap - n, "%s again\n", b64);
    ck_assert_int_eq(mbsc_allowlist_parse(&al, text, n, "t", why, sizeof why),
                     MBSC_ERR_ALLOWLIST_DUPLICATE);
    ck_assert_str_eq(why, "t:5001: key already listed on line 1235");
    free(text);
}
END_TEST

START_TEST(test_allowlist_api)
{
    mbsc_allowlist *al = mbsc_allowlist_new();
    uint8_t a[32], b[32];
    const char *name, *role;

    ck_assert_ptr_nonnull(al);
    memset(a, 1, sizeof a);
    memset(b, 2, sizeof b);
    ck_assert_int_eq(mbsc_allowlist_find(al, a, &name, &role), MBSC_ERR_UNKNOWN_PEER);
    ck_assert_int_eq(mbsc_allowlist_add(al, a, "alpha", NULL), MBSC_OK);
    ck_assert_int_eq(mbsc_allowlist_add(al, a, "again", NULL), MBSC_ERR_ALLOWLIST_DUPLICATE);
    ck_assert_int_eq(mbsc_allowlist_add(al, b, "bad name", NULL), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_allowlist_add(al, b, "", NULL), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_allowlist_add(al, b, "x" N63, NULL), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_allowlist_add(al, b, "beta", "r#1"), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_allowlist_add(al, b, NULL, NULL), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_allowlist_add(NULL, b, "beta", NULL), MBSC_ERR_INVALID_ARG);
    ck_assert_uint_eq(mbsc_allowlist_count(al), 1);
    ck_assert_int_eq(mbsc_allowlist_add(al, b, "beta", "reader"), MBSC_OK);
    ck_assert_int_eq(mbsc_allowlist_find(al, b, &name, &role), 1);
    ck_assert_str_eq(name, "beta");
    ck_assert_str_eq(role, "reader");
    ck_assert_int_eq(mbsc_allowlist_find(al, a, &name, &role), 0);
    ck_assert_str_eq(name, "alpha");
    ck_assert_ptr_null(role);
    mbsc_allowlist_free(al);
}
END_TEST

START_TEST(test_allowlist_file)
{
    const char *path = tpath("allow.txt");
    mbsc_allowlist *al = NULL;
    char why[MBSC_WHY_SIZE], expect[9000];
    char *big;

    write_str(path, good_list, 0644);
    ck_assert_int_eq(mbsc_allowlist_load(&al, path, why, sizeof why), MBSC_OK);
    ck_assert_uint_eq(mbsc_allowlist_count(al), 3);
    mbsc_allowlist_free(al);

    write_str(path, "# ok\n" ZERO_B64 " a\n" ZERO_B64 " b\n", 0644);
    ck_assert_int_eq(mbsc_allowlist_load(&al, path, why, sizeof why), MBSC_ERR_ALLOWLIST_DUPLICATE);
    snprintf(expect, sizeof expect, "%s:3: key already listed on line 2", path);
    ck_assert_str_eq(why, expect);

    chmod(path, 0664);
    ck_assert_int_eq(mbsc_allowlist_load(&al, path, why, sizeof why),
                     MBSC_ERR_KEY_FILE_PERMISSIONS);
    ck_assert_ptr_nonnull(strstr(why, "0664"));
    ck_assert_int_eq(mbsc_allowlist_load(&al, tpath("missing"), why, sizeof why),
                     MBSC_ERR_KEY_FILE_UNREADABLE);

    big = malloc(MBSC_ALLOWLIST_MAX_BYTES + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, '\n', MBSC_ALLOWLIST_MAX_BYTES + 1);
    write_file(path, big, MBSC_ALLOWLIST_MAX_BYTES + 1, 0644);
    ck_assert_int_eq(mbsc_allowlist_load(&al, path, why, sizeof why), MBSC_ERR_ALLOWLIST_SYNTAX);
    ck_assert_ptr_nonnull(strstr(why, "too large"));
    write_file(path, big, MBSC_ALLOWLIST_MAX_BYTES, 0644);
    ck_assert_int_eq(mbsc_allowlist_load(&al, path, why, sizeof why), MBSC_OK);
    ck_assert_uint_eq(mbsc_allowlist_count(al), 0);
    mbsc_allowlist_free(al);
    free(big);
    ck_assert_int_eq(mbsc_allowlist_load(NULL, path, why, sizeof why), MBSC_ERR_INVALID_ARG);
}
END_TEST

Suite *keys_suite(void)
{
    Suite *s = suite_create("keys");
    TCase *tc;

    tc = tcase_create("base64");
    tcase_add_loop_test(tc, test_rfc4648_encode, 0, (int)(sizeof rfc4648 / sizeof rfc4648[0]));
    tcase_add_loop_test(tc, test_rfc4648_decode, 0, (int)(sizeof rfc4648 / sizeof rfc4648[0]));
    tcase_add_loop_test(tc, test_rfc4648_reject, 0,
                        (int)(sizeof rfc4648_bad / sizeof rfc4648_bad[0]));
    tcase_add_test(tc, test_key_base64_vectors);
    tcase_add_test(tc, test_key_base64_vs_libsodium);
    tcase_add_test(tc, test_key_base64_last_char);
    tcase_add_test(tc, test_key_base64_every_byte);
    tcase_add_loop_test(tc, test_key_base64_reject, 0, (int)(sizeof bad_keys / sizeof bad_keys[0]));
    tcase_add_test(tc, test_key_base64_args);
    suite_add_tcase(s, tc);

    tc = tcase_create("keypair");
    tcase_add_test(tc, test_keypair_rfc7748);
    tcase_add_test(tc, test_keypair_generate);
    suite_add_tcase(s, tc);

    tc = tcase_create("keyfile");
    tcase_add_checked_fixture(tc, setup_tmpdir, teardown_tmpdir);
    tcase_add_test(tc, test_private_save_load);
    tcase_add_test(tc, test_save_mode_ignores_umask);
    tcase_add_test(tc, test_public_and_psk_round_trip);
    tcase_add_test(tc, test_save_refuses_overwrite);
    tcase_add_test(tc, test_save_overwrite);
    tcase_add_test(tc, test_save_unwritable_dir);
    tcase_add_loop_test(tc, test_private_permissions, 0,
                        (int)(sizeof open_modes / sizeof open_modes[0]));
    tcase_add_test(tc, test_private_permissions_ok);
    tcase_add_test(tc, test_public_permissions);
    tcase_add_test(tc, test_load_unreadable);
    tcase_add_test(tc, test_keypair_load_refuses_pub);
    tcase_add_test(tc, test_public_load_refuses_private);
    tcase_add_test(tc, test_trusted_file_read);
    tcase_add_loop_test(tc, test_load_format, 0, (int)(sizeof bad_files / sizeof bad_files[0]));
    tcase_add_test(tc, test_load_line_ends);
    tcase_add_test(tc, test_load_too_large);
    tcase_add_test(tc, test_why_bounds);
    tcase_add_test(tc, test_load_through_symlink);
    suite_add_tcase(s, tc);

    tc = tcase_create("trust");
    tcase_add_loop_test(tc, test_trust_as_self, 0,
                        (int)(sizeof trust_cases / sizeof trust_cases[0]));
    tcase_add_loop_test(tc, test_trust_as_unprivileged, 0,
                        (int)(sizeof trust_cases / sizeof trust_cases[0]));
    suite_add_tcase(s, tc);

    tc = tcase_create("allowlist");
    tcase_add_checked_fixture(tc, setup_tmpdir, teardown_tmpdir);
    tcase_add_test(tc, test_allowlist_good);
    tcase_add_test(tc, test_allowlist_empty);
    tcase_add_loop_test(tc, test_allowlist_bad, 0, (int)(sizeof bad_lists / sizeof bad_lists[0]));
    tcase_add_test(tc, test_allowlist_limits);
    tcase_add_test(tc, test_allowlist_many);
    tcase_add_test(tc, test_allowlist_api);
    tcase_add_test(tc, test_allowlist_file);
    suite_add_tcase(s, tc);

    return s;
}
