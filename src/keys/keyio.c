/* SPDX-License-Identifier: ISC */
/*
 * keyio.c - file access for keys and allow-lists (see keyio.h).
 *
 * Reading: the path and its directories are checked first (trust.c), then
 * the resolved path is opened and the descriptor fstat'ed, so the type,
 * owner and mode checked are those of the file read.  O_NONBLOCK
 * keeps a FIFO planted at the path from hanging the caller; it is refused
 * as not a regular file anyway.
 *
 * Writing: the data goes to a temporary file in the same directory,
 * created with O_EXCL and its final mode, then fchmod'ed to that mode (the
 * umask could only have narrowed it) before any byte is written: a secret
 * is never in a file others may read.  The file is synced, then given its
 * name without replacing anything (renameat2 RENAME_NOREPLACE, or link) or,
 * when asked to overwrite, renamed over the old one; then the directory is
 * synced.  So a crash leaves the old state or the new one, never a
 * truncated key (at worst a temporary file NAME.tmp-XXXXXXXXXXXXXXXX).
 */
/* renameat2 and RENAME_NOREPLACE (glibc 2.28, musl 1.2.2), where declared. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys/keyio.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* read() until cap bytes or end of file; -1 on error (errno set). */
static ssize_t read_full(int fd, uint8_t *buf, size_t cap)
{
    size_t got = 0;

    while (got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Read all of fd into buf: 0, -1 on error (errno set), 1 if over cap bytes. */
static int read_bounded(int fd, uint8_t *buf, size_t cap, size_t *len)
{
    uint8_t extra = 0;
    ssize_t n = read_full(fd, buf, cap), more = 0;

    if (n == (ssize_t)cap)
        more = read_full(fd, &extra, 1);
    sodium_memzero(&extra, sizeof extra);
    if (n < 0 || more < 0)
        return -1;
    *len = (size_t)n;
    return more > 0 ? 1 : 0;
}

/*
 * Open path for reading after mbsc_keyio_resolve_trusted, and check on the
 * descriptor what the loaders require.  Returns the descriptor (>= 0) with
 * *st filled, or an error code with why set.
 */
static int open_checked(const char *path, unsigned forbidden, struct stat *st, char *why,
                        size_t why_len)
{
    struct stat checked;
    char *resolved;
    unsigned mode;
    int fd, rc;

    rc = mbsc_keyio_resolve_trusted(path, &resolved, &checked, why, why_len);
    if (rc != MBSC_OK)
        return rc;
    /* O_NOFOLLOW: the resolved path has no link left, so none may appear. */
    fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
    free(resolved);
    if (fd < 0) {
        mbsc_why(why, why_len, "%s: %s", path, mbsc_os_error(errno));
        return MBSC_ERR_KEY_FILE_UNREADABLE;
    }
    if (fstat(fd, st) != 0) {
        mbsc_why(why, why_len, "%s: %s", path, mbsc_os_error(errno));
        rc = MBSC_ERR_KEY_FILE_UNREADABLE;
        goto fail;
    }
    if (S_ISDIR(st->st_mode)) {
        mbsc_why(why, why_len, "%s: is a directory, not a file; give the path of the file itself",
                 path);
        rc = MBSC_ERR_KEY_FILE_UNREADABLE;
        goto fail;
    }
    if (!S_ISREG(st->st_mode)) {
        mbsc_why(why, why_len, "%s: not a regular file", path);
        rc = MBSC_ERR_KEY_FILE_UNREADABLE;
        goto fail;
    }
    if (st->st_dev != checked.st_dev || st->st_ino != checked.st_ino) {
        /* Only we or root could have done it (trust.c); still, say so. */
        mbsc_why(why, why_len, "%s: replaced while its directories were checked; try again", path);
        rc = MBSC_ERR_KEY_FILE_UNREADABLE;
        goto fail;
    }
    if (!mbsc_keyio_owner_ok(st->st_uid)) {
        mbsc_why(why, why_len,
                 "%s: owned by uid %lu, who could change it (it must be owned by uid %lu, "
                 "the user loading it, or root); fix: chown %lu %s",
                 path, (unsigned long)st->st_uid, (unsigned long)geteuid(),
                 (unsigned long)geteuid(), path);
        rc = MBSC_ERR_KEY_FILE_PERMISSIONS;
        goto fail;
    }
    mode = (unsigned)st->st_mode & 07777u;
    if ((mode & forbidden) != 0) {
        if (forbidden == MBSC_KEYIO_SECRET)
            mbsc_why(why, why_len,
                     "%s: permissions %04o are too open (must be 0600 or stricter); fix: "
                     "chmod 600 %s",
                     path, mode, path);
        else
            mbsc_why(why, why_len,
                     "%s: permissions %04o let others change it (must not be group- or "
                     "world-writable); fix: chmod go-w %s",
                     path, mode, path);
        rc = MBSC_ERR_KEY_FILE_PERMISSIONS;
        goto fail;
    }
    return fd;
fail:
    (void)close(fd);
    return rc;
}

/* read_bounded into buf, with the loaders' messages; closes fd. */
static int read_and_close(int fd, const char *path, uint8_t *buf, size_t cap, size_t *len,
                          size_t limit, char *why, size_t why_len)
{
    int rc;

    switch (read_bounded(fd, buf, cap, len)) {
    case 0: rc = MBSC_OK; break;
    case 1:
        mbsc_why(why, why_len, "%s: file too large (over %zu bytes)", path, limit);
        rc = MBSC_ERR_BUFFER_TOO_SMALL;
        break;
    default:
        mbsc_why(why, why_len, "%s: %s", path, mbsc_os_error(errno));
        rc = MBSC_ERR_KEY_FILE_UNREADABLE;
        break;
    }
    (void)close(fd);
    return rc;
}

int mbsc_keyio_read(const char *path, unsigned forbidden, uint8_t *buf, size_t cap, size_t *len,
                    char *why, size_t why_len)
{
    struct stat st;
    int fd;

    *len = 0;
    fd = open_checked(path, forbidden, &st, why, why_len);
    if (fd < 0)
        return fd;
    return read_and_close(fd, path, buf, cap, len, cap, why, why_len);
}

int mbsc_keyio_read_alloc(const char *path, unsigned forbidden, size_t max, uint8_t **out,
                          size_t *len, char *why, size_t why_len)
{
    struct stat st;
    size_t cap;
    uint8_t *buf;
    int fd, rc;

    *out = NULL;
    *len = 0;
    fd = open_checked(path, forbidden, &st, why, why_len);
    if (fd < 0)
        return fd;
    if (st.st_size < 0 || (uintmax_t)st.st_size > max) {
        (void)close(fd);
        mbsc_why(why, why_len, "%s: file too large (over %zu bytes)", path, max);
        return MBSC_ERR_BUFFER_TOO_SMALL;
    }
    /* Exactly the size from fstat (one byte for an empty file); a file
     * that grew since is reported, not cut short. */
    cap = (size_t)st.st_size;
    buf = malloc(cap > 0 ? cap : 1);
    if (buf == NULL) {
        (void)close(fd);
        mbsc_why(why, why_len, "%s: out of memory", path);
        return MBSC_ERR_NOMEM;
    }
    rc = read_and_close(fd, path, buf, cap, len, max, why, why_len);
    if (rc == MBSC_ERR_BUFFER_TOO_SMALL) {
        mbsc_why(why, why_len, "%s: the file grew while it was read; try again", path);
        rc = MBSC_ERR_KEY_FILE_UNREADABLE;
    }
    if (rc != MBSC_OK) {
        free(buf);
        *len = 0;
        return rc;
    }
    *out = buf;
    return MBSC_OK;
}

/* write() all of data; -1 on error (errno set). */
static int write_full(int fd, const uint8_t *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* fsync the directory holding path, so a new name survives a crash. */
static void sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    int fd;

    if (slash == NULL) {
        dir = strdup(".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(n + 1);
        if (dir != NULL) {
            memcpy(dir, path, n);
            dir[n] = '\0';
        }
    }
    if (dir == NULL)
        return; /* best effort */
    fd = open(dir, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0) {
        (void)fsync(fd); /* some file systems refuse; the data is synced */
        (void)close(fd);
    }
    free(dir);
}

/* Create name with O_EXCL and mode, fill it with data and sync it. */
static int create_file(const char *name, const uint8_t *data, size_t len, mode_t mode)
{
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, mode);
    int err;

    if (fd < 0)
        return -1;
    if (fchmod(fd, mode) != 0 || write_full(fd, data, len) != 0 || fsync(fd) != 0) {
        err = errno;
        (void)close(fd);
        (void)unlink(name);
        errno = err;
        return -1;
    }
    if (close(fd) != 0) {
        err = errno;
        (void)unlink(name);
        errno = err;
        return -1;
    }
    return 0;
}

/* Is err how link() or renameat2() says "not on this file system"? */
static int unsupported(int err)
{
    return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP || err == ENOTSUP || err == EPERM;
}

/*
 * Give the complete, synced file tmp the name path without replacing
 * anything: renameat2(RENAME_NOREPLACE) where the kernel and file system
 * have it, else link() and unlink(tmp).  Both are atomic: path appears
 * complete or not at all.  Returns 0, 1 if neither is supported here
 * (tmp untouched), or -1 with errno (EEXIST if path exists).
 */
static int link_into_place(const char *tmp, const char *path)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (!unsupported(errno))
        return -1;
#endif
    if (link(tmp, path) == 0) {
        (void)unlink(tmp); /* path is complete; a leftover tmp is only litter */
        return 0;
    }
    return unsupported(errno) ? 1 : -1;
}

/* path + ".tmp-" + 16 random hex digits: a new file in path's directory. */
static char *create_temp(const char *path, const uint8_t *data, size_t len, mode_t mode, int *err)
{
    static const char hex[] = "0123456789abcdef";
    size_t plen = strlen(path);
    char *tmp;
    int attempt;

    if (plen > SIZE_MAX - 32 || (tmp = malloc(plen + 32)) == NULL) {
        *err = ENOMEM;
        return NULL;
    }
    for (attempt = 0; attempt < 10; attempt++) {
        uint8_t rnd[8];
        size_t i;

        randombytes_buf(rnd, sizeof rnd);
        memcpy(tmp, path, plen);
        memcpy(tmp + plen, ".tmp-", 5);
        for (i = 0; i < sizeof rnd; i++) {
            tmp[plen + 5 + 2 * i] = hex[rnd[i] >> 4];
            tmp[plen + 6 + 2 * i] = hex[rnd[i] & 15u];
        }
        tmp[plen + 5 + 2 * sizeof rnd] = '\0';
        if (create_file(tmp, data, len, mode) == 0)
            return tmp;
        *err = errno;
        if (*err != EEXIST)
            break;
    }
    free(tmp);
    return NULL;
}

int mbsc_keyio_write(const char *path, const uint8_t *data, size_t len, mode_t mode, int overwrite,
                     char *why, size_t why_len)
{
    char *tmp;
    int err = 0, r;

    if (mbsc_init() != MBSC_OK)
        return MBSC_ERR_INIT;
    /* Complete and synced under a temporary name first, so that path never
     * names a partial file, whenever the process or the machine stops. */
    tmp = create_temp(path, data, len, mode, &err);
    if (tmp == NULL) {
        mbsc_why(why, why_len, "%s: %s", path, mbsc_os_error(err));
        return MBSC_ERR_KEY_FILE_WRITE;
    }
    if (overwrite) {
        r = rename(tmp, path) == 0 ? 0 : -1;
    } else {
        r = link_into_place(tmp, path);
        if (r == 1) {
            /* A file system with neither (some FUSE and network ones): the
             * old way, O_EXCL at path itself.  Not crash-safe (a crash
             * mid-write can leave a partial file), but never replaces. */
            (void)unlink(tmp);
            r = create_file(path, data, len, mode) == 0 ? 0 : -1;
        }
    }
    if (r != 0) {
        err = errno;
        (void)unlink(tmp);
        mbsc_why(why, why_len, "%s: %s", path,
                 err == EEXIST ? "file exists (refusing to overwrite it)" : mbsc_os_error(err));
        free(tmp);
        return MBSC_ERR_KEY_FILE_WRITE;
    }
    free(tmp);
    sync_parent(path);
    return MBSC_OK;
}
