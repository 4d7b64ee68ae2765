/* SPDX-License-Identifier: ISC */
/*
 * trust.c - who can change a key file: the rule of OpenSSH's StrictModes
 * (sshd(8) "StrictModes", auth.c safe_path), applied to every file mbsc
 * loads keys from.  docs/keys.md "Who may change a key file".
 *
 * A key, PSK or allow-list is only as trustworthy as the least trusted user
 * who can replace it.  Replacing a file takes write access to the file or
 * to any directory on the way to it, or ownership of one of them (an owner
 * can chmod).  So:
 *
 *  - the file, every directory from "/" down to it, and every symbolic link
 *    met on the way must be owned by the effective user or by root;
 *  - no such directory may be writable by group or others, with one
 *    exception: a directory owned by root with the sticky bit (/tmp,
 *    /dev/shm).  There others may add entries but not rename or remove
 *    ours (the sticky bit), and an entry someone else created is refused
 *    by the owner rule; so a file we own in /tmp cannot be swapped.
 *    OpenSSH refuses such directories outright; mbsc accepts them because
 *    tests and one-off setups keep keys under /tmp, and the owner rule
 *    closes the gap that the sticky bit leaves open.
 *
 * Symbolic links are resolved here, one component at a time, so that the
 * directories of a link's target are checked like any other; the caller
 * then opens the resolved path with O_NOFOLLOW and checks, on the opened
 * descriptor, that it is the file that was checked.  Everything on the
 * resolved path can only be changed by us or root, so nothing can swap it
 * in between.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys/keyio.h"

/* As Linux's MAXSYMLINKS: more links in one lookup is a loop. */
#define MAX_SYMLINKS 40

/* A growable string (paths have no fixed limit here). */
struct str {
    char *s;
    size_t len, cap;
};

static int str_reserve(struct str *b, size_t extra)
{
    size_t want;
    char *grown;

    if (extra > SIZE_MAX - b->len - 1)
        return -1;
    want = b->len + extra + 1;
    if (want <= b->cap)
        return 0;
    if (want < 64)
        want = 64;
    if (want < b->cap * 2)
        want = b->cap * 2;
    grown = realloc(b->s, want);
    if (grown == NULL)
        return -1;
    b->s = grown;
    b->cap = want;
    return 0;
}

static int str_set(struct str *b, const char *s, size_t n)
{
    b->len = 0;
    if (str_reserve(b, n) != 0)
        return -1;
    memcpy(b->s, s, n);
    b->len = n;
    b->s[n] = '\0';
    return 0;
}

/* Append "/" (unless b ends with one) and the n bytes at s. */
static int str_push(struct str *b, const char *s, size_t n)
{
    int slash = b->len == 0 || b->s[b->len - 1] != '/';

    if (str_reserve(b, n + 1) != 0)
        return -1;
    if (slash)
        b->s[b->len++] = '/';
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
    return 0;
}

/* Drop the last component ("/a/b" -> "/a", "/a" -> "/"). */
static void str_pop(struct str *b)
{
    while (b->len > 1 && b->s[b->len - 1] != '/')
        b->len--;
    if (b->len > 1)
        b->len--;
    b->s[b->len] = '\0';
}

int mbsc_keyio_owner_ok(uid_t owner)
{
    return owner == geteuid() || owner == 0;
}

/* The directory rule above; sets why and returns nonzero if dir fails it. */
static int dir_refused(const char *path, const char *dir, const struct stat *st, char *why,
                       size_t why_len)
{
    unsigned mode = (unsigned)st->st_mode & 07777u;

    if (!mbsc_keyio_owner_ok(st->st_uid)) {
        mbsc_why(why, why_len,
                 "%s: directory %s is owned by uid %lu, who could replace the file (it must "
                 "be owned by uid %lu or root); fix: chown %lu %s, or move the file",
                 path, dir, (unsigned long)st->st_uid, (unsigned long)geteuid(),
                 (unsigned long)geteuid(), dir);
        return 1;
    }
    if ((mode & 022u) != 0 && !((mode & 01000u) != 0 && st->st_uid == 0)) {
        mbsc_why(why, why_len,
                 "%s: directory %s is writable by group or others (mode %04o), who could "
                 "replace the file; fix: chmod go-w %s, or move the file",
                 path, dir, mode, dir);
        return 1;
    }
    return 0;
}

/* 1 if s[0..n) is empty or all "/": nothing is left to look up. */
static int only_slashes(const char *s, size_t n)
{
    while (n > 0 && *s == '/')
        s++, n--;
    return n == 0;
}

/* errno of a failed lookup as the loaders report it. */
static int lookup_failed(const char *path, int err, char *why, size_t why_len)
{
    mbsc_why(why, why_len, "%s: %s", path, mbsc_os_error(err));
    return MBSC_ERR_KEY_FILE_UNREADABLE;
}

int mbsc_keyio_resolve_trusted(const char *path, char **resolved, struct stat *final, char *why,
                               size_t why_len)
{
    struct str done = {0}, todo = {0}, link = {0};
    struct stat st;
    int links = 0, rc = MBSC_OK;
    size_t pos = 0;

    *resolved = NULL;
    /* todo: what is left to look up; done: the resolved prefix, no links. */
    if (path[0] != '/') {
        char *cwd = getcwd(NULL, 0);
        if (cwd == NULL) {
            rc = lookup_failed(path, errno, why, why_len);
            goto out;
        }
        if (str_set(&todo, cwd, strlen(cwd)) != 0 || str_push(&todo, path, strlen(path)) != 0) {
            free(cwd);
            goto nomem;
        }
        free(cwd);
    } else if (str_set(&todo, path, strlen(path)) != 0) {
        goto nomem;
    }
    if (str_set(&done, "/", 1) != 0)
        goto nomem;
    if (lstat("/", &st) != 0) {
        rc = lookup_failed(path, errno, why, why_len);
        goto out;
    }
    if (dir_refused(path, "/", &st, why, why_len)) {
        rc = MBSC_ERR_KEY_FILE_PERMISSIONS;
        goto out;
    }
    *final = st;

    while (pos < todo.len) {
        const char *comp;
        size_t n, mark;

        while (pos < todo.len && todo.s[pos] == '/')
            pos++;
        comp = todo.s + pos;
        for (n = 0; pos + n < todo.len && todo.s[pos + n] != '/'; n++)
            ;
        pos += n;
        if (n == 0 || (n == 1 && comp[0] == '.'))
            continue;
        if (n == 2 && comp[0] == '.' && comp[1] == '.') {
            str_pop(&done); /* done has no links, so ".." is its parent */
            continue;
        }
        if (!S_ISDIR(final->st_mode)) {
            rc = lookup_failed(path, ENOTDIR, why, why_len);
            goto out;
        }
        mark = done.len;
        if (str_push(&done, comp, n) != 0)
            goto nomem;
        if (lstat(done.s, &st) != 0) {
            rc = lookup_failed(path, errno, why, why_len);
            goto out;
        }
        if (S_ISLNK(st.st_mode)) {
            ssize_t got;

            /* The link is an entry of a checked directory, but in a sticky
             * one anybody may have made it: its owner must pass too. */
            if (!mbsc_keyio_owner_ok(st.st_uid)) {
                mbsc_why(why, why_len,
                         "%s: symbolic link %s is owned by uid %lu (it must be owned by uid "
                         "%lu or root); fix: remove it, or chown -h %lu %s",
                         path, done.s, (unsigned long)st.st_uid, (unsigned long)geteuid(),
                         (unsigned long)geteuid(), done.s);
                rc = MBSC_ERR_KEY_FILE_PERMISSIONS;
                goto out;
            }
            if (++links > MAX_SYMLINKS) {
                rc = lookup_failed(path, ELOOP, why, why_len);
                goto out;
            }
            if (str_set(&link, "", 0) != 0 || str_reserve(&link, (size_t)st.st_size + 1) != 0)
                goto nomem;
            got = readlink(done.s, link.s, link.cap);
            if (got < 0) {
                rc = lookup_failed(path, errno, why, why_len);
                goto out;
            }
            if (got == 0) { /* Linux refuses empty targets; treat one as missing */
                rc = lookup_failed(path, ENOENT, why, why_len);
                goto out;
            }
            if ((size_t)got >= link.cap) { /* changed since lstat: only us or root */
                rc = lookup_failed(path, EAGAIN, why, why_len);
                goto out;
            }
            link.len = (size_t)got;
            link.s[link.len] = '\0';
            /* The rest of the lookup is: the target, then what followed. */
            if (str_push(&link, todo.s + pos, todo.len - pos) != 0 ||
                str_set(&todo, link.s, link.len) != 0)
                goto nomem;
            pos = 0;
            done.len = mark;
            done.s[mark] = '\0';
            if (done.len == 0 || link.s[0] == '/')
                (void)str_set(&done, "/", 1); /* room is there */
            if (link.s[0] == '/' && lstat("/", final) != 0) {
                rc = lookup_failed(path, errno, why, why_len);
                goto out;
            }
            continue;
        }
        /* A directory named as the file itself is judged by the caller,
         * which wants a regular file: "is a directory" says more than a
         * mode the user has no reason to change. */
        if (S_ISDIR(st.st_mode) && !only_slashes(todo.s + pos, todo.len - pos) &&
            dir_refused(path, done.s, &st, why, why_len)) {
            rc = MBSC_ERR_KEY_FILE_PERMISSIONS;
            goto out;
        }
        *final = st;
    }
    *resolved = done.s;
    done.s = NULL;
    goto out;
nomem:
    mbsc_why(why, why_len, "%s: out of memory", path);
    rc = MBSC_ERR_NOMEM;
out:
    free(done.s);
    free(todo.s);
    free(link.s);
    return rc;
}
