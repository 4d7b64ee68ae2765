/* SPDX-License-Identifier: ISC */
/*
 * mbsc-keygen - create the key files of mbsc (docs: docs/keys.md, mbsc-keygen(1)).
 *
 *   mbsc-keygen [--force] PATH     new key pair: PATH (private, mode 0600) and
 *                                  PATH.pub (public, 0644); prints the public key
 *   mbsc-keygen --pub PATH         (re)writes PATH.pub from the private key PATH
 *                                  and prints it
 *   mbsc-keygen --psk [--force] PATH
 *                                  new pre-shared key in PATH (0600); prints nothing
 *
 * Exit status 0 on success, 1 on failure, 2 on bad usage.  Every error is one
 * line "mbsc-keygen: <reason>" on stderr.
 *
 * Crash safety: whenever the program stops (killed, power cut), each file is
 * absent or complete (the library writes a synced temporary file and links
 * it into place), and PATH.pub is missing or matches PATH: the .pub is
 * written last, and "--pub PATH" repairs a missing one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "mbsc/error.h"
#include "mbsc/init.h"
#include "mbsc/keys.h"
#include "mbsc/version.h"

#define PROG "mbsc-keygen"

enum mode { MODE_PAIR, MODE_PUB, MODE_PSK };

static void usage(FILE *out)
{
    fputs("usage: " PROG " [--force] PATH       write a new private key to PATH (mode 0600)\n"
          "                                        and its public key to PATH.pub; print the\n"
          "                                        public key\n"
          "       " PROG " --pub PATH           rewrite PATH.pub from the private key PATH\n"
          "                                        and print the public key\n"
          "       " PROG " --psk [--force] PATH write a new pre-shared key to PATH (0600)\n"
          "       " PROG " --help | --version\n"
          "\n"
          "Keys are one line of base64 (32 bytes), as WireGuard's.  Existing files are\n"
          "not replaced unless --force is given (--pub always replaces PATH.pub).\n"
          "Manuals: man mbsc-keygen, mbsc-keys(5) (the files and their modes).\n",
          out);
}

static int fail(const char *why)
{
    fprintf(stderr, PROG ": %s\n", why);
    return EXIT_FAILURE;
}

static int bad_usage(const char *why)
{
    (void)fail(why);
    usage(stderr);
    return 2;
}

/* The public key on stdout; a write error (full disk, closed pipe) fails. */
static int print_key(const uint8_t key[MBSC_KEY_BYTES])
{
    char b64[MBSC_KEY_BASE64_SIZE];

    if (mbsc_key_to_base64(b64, key) != MBSC_OK)
        return fail("cannot encode the public key");
    if (puts(b64) == EOF || fflush(stdout) == EOF)
        return fail("cannot write to standard output");
    return EXIT_SUCCESS;
}

/* path + ".pub" in a new string, or NULL. */
static char *pub_path(const char *path)
{
    size_t n = strlen(path);
    char *p = malloc(n + sizeof ".pub");

    if (p != NULL) {
        memcpy(p, path, n);
        memcpy(p + n, ".pub", sizeof ".pub");
    }
    return p;
}

/* 1 if path's name ends in ".pub", the name of public keys. */
static int ends_with_pub(const char *path)
{
    size_t n = strlen(path);

    return n >= 4 && strcmp(path + n - 4, ".pub") == 0;
}

/* 1 if something (a file, a dangling symlink) has the name path. */
static int exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

/* fsync the directory that holds path, so that a removal there is durable. */
static void sync_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir =
        slash == NULL ? strdup(".") : strndup(path, slash == path ? 1 : (size_t)(slash - path));
    int fd;

    if (dir == NULL)
        return; /* best effort, as the library's own directory sync */
    fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        (void)close(fd);
    }
    free(dir);
}

/*
 * A new key pair: the private key at path, then the public key at pub.
 * The two appear as a pair or the .pub is missing, never a .pub of another
 * key, whenever the program stops: the .pub is written last (each file is
 * itself written crash-safely by the library), and with --force the old
 * .pub is removed before the old private key is replaced.  A missing .pub
 * is what '--pub PATH' repairs, and a rerun says so.
 */
static int make_pair(const char *path, const char *pub, unsigned flags)
{
    char why[MBSC_WHY_SIZE + 4096];
    mbsc_keypair kp;
    int rc;

    if (!(flags & MBSC_KEY_SAVE_OVERWRITE)) {
        if (exists(path) && !exists(pub)) {
            fprintf(stderr,
                    PROG ": %s: file exists without %s (an interrupted run?); run '" PROG
                         " --pub %s' to write the public key, or give --force for a new pair\n",
                    path, pub, path);
            return EXIT_FAILURE;
        }
        if (exists(path)) {
            fprintf(stderr, PROG ": %s: file exists (refusing to overwrite it)\n", path);
            return EXIT_FAILURE;
        }
        if (exists(pub)) {
            fprintf(stderr,
                    PROG ": %s: file exists without its private key %s (refusing to overwrite "
                         "it); remove it or give --force\n",
                    pub, path);
            return EXIT_FAILURE;
        }
    } else {
        if (unlink(pub) != 0 && errno != ENOENT) {
            fprintf(stderr, PROG ": %s: cannot remove the old public key: %s\n", pub,
                    strerror(errno));
            return EXIT_FAILURE;
        }
        sync_dir_of(pub);
    }
    if (mbsc_keypair_generate(&kp) != MBSC_OK)
        return fail("cannot generate a key pair");
    if (mbsc_private_key_save(path, kp.private_key, flags, why, sizeof why) != MBSC_OK) {
        rc = fail(why);
    } else if (mbsc_public_key_save(pub, kp.public_key, flags, why, sizeof why) != MBSC_OK) {
        /* Without --force the private key is ours alone: take it back rather
         * than leave a key without its .pub.  With --force it has already
         * replaced the old one, so keep it and say how to finish. */
        if (!(flags & MBSC_KEY_SAVE_OVERWRITE)) {
            (void)remove(path);
            sync_dir_of(path);
            rc = fail(why);
        } else {
            fprintf(stderr, PROG ": %s (%s was written: run '" PROG " --pub %s')\n", why, path,
                    path);
            rc = EXIT_FAILURE;
        }
    } else {
        rc = print_key(kp.public_key);
    }
    mbsc_keypair_wipe(&kp);
    return rc;
}

/* The public key at pub again, from the private key at path. */
static int make_pub(const char *path, const char *pub)
{
    char why[MBSC_WHY_SIZE + 4096];
    mbsc_keypair kp;
    int rc;

    if (mbsc_keypair_load(&kp, path, why, sizeof why) != MBSC_OK ||
        mbsc_public_key_save(pub, kp.public_key, MBSC_KEY_SAVE_OVERWRITE, why, sizeof why) !=
            MBSC_OK)
        rc = fail(why);
    else
        rc = print_key(kp.public_key);
    mbsc_keypair_wipe(&kp);
    return rc;
}

static int make_psk(const char *path, unsigned flags)
{
    char why[MBSC_WHY_SIZE + 4096];
    uint8_t psk[MBSC_KEY_BYTES];
    int rc;

    randombytes_buf(psk, sizeof psk);
    rc = mbsc_psk_save(path, psk, flags, why, sizeof why);
    sodium_memzero(psk, sizeof psk);
    return rc == MBSC_OK ? EXIT_SUCCESS : fail(why);
}

int main(int argc, char **argv)
{
    enum mode mode = MODE_PAIR;
    unsigned flags = 0;
    const char *path = NULL;
    char *pub;
    int i, options = 1, seen_mode = 0, rc;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options && strcmp(a, "--") == 0) {
            options = 0;
        } else if (options && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            usage(stdout);
            return fflush(stdout) == EOF ? EXIT_FAILURE : EXIT_SUCCESS;
        } else if (options && strcmp(a, "--version") == 0) {
            printf(PROG " (mbsc) %s\n", mbsc_version());
            return fflush(stdout) == EOF ? EXIT_FAILURE : EXIT_SUCCESS;
        } else if (options && strcmp(a, "--force") == 0) {
            flags |= MBSC_KEY_SAVE_OVERWRITE;
        } else if (options && (strcmp(a, "--pub") == 0 || strcmp(a, "--psk") == 0)) {
            if (seen_mode)
                return bad_usage("--pub and --psk are exclusive and given once");
            mode = strcmp(a, "--pub") == 0 ? MODE_PUB : MODE_PSK;
            seen_mode = 1;
        } else if (options && a[0] == '-' && a[1] != '\0') {
            char msg[128];
            snprintf(msg, sizeof msg, "unknown option '%.80s'", a);
            return bad_usage(msg);
        } else if (path != NULL) {
            return bad_usage("exactly one PATH is needed");
        } else if (a[0] == '\0') {
            return bad_usage("PATH is empty");
        } else {
            path = a;
        }
    }
    if (path == NULL)
        return bad_usage("missing PATH");
    if (mode == MODE_PUB && flags != 0)
        return bad_usage("--force has no meaning with --pub (PATH.pub is always rewritten)");
    /* Every program refuses a private key named *.pub (mbsc_keypair_load):
     * do not make one.  (--pub PATH.pub gets the library's message.) */
    if (mode == MODE_PAIR && ends_with_pub(path)) {
        char msg[512];

        snprintf(msg, sizeof msg,
                 "%.100s: a private key named .pub would be taken for a public key; give the "
                 "name without .pub (%.100s.pub is made beside it)",
                 path, path);
        return bad_usage(msg);
    }
    if (mbsc_init() != MBSC_OK)
        return fail("mbsc_init failed: libsodium cannot be initialised (is /dev/urandom or "
                    "getrandom() available?)");

    if (mode == MODE_PSK)
        return make_psk(path, flags);
    /* Both key pair modes write PATH.pub. */
    pub = pub_path(path);
    if (pub == NULL)
        return fail("out of memory");
    rc = mode == MODE_PUB ? make_pub(path, pub) : make_pair(path, pub, flags);
    free(pub);
    return rc;
}
