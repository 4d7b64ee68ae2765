/* SPDX-License-Identifier: ISC */
/*
 * crash_shim.c - an LD_PRELOAD module for tests/keygen.test: kills the
 * process (SIGKILL, as a crash or power cut would stop it) at the Nth call
 * of any of the file system calls that write a key file, so that the test
 * can stop mbsc-keygen at every step and check what it left behind.
 *
 *   MBSC_CRASH_AT=N   kill just before the Nth counted call (1-based);
 *                     unset or 0: count nothing, change nothing.
 *
 * Counted: fchmod, write, fsync, close, link, rename, renameat2, unlink.
 * (open is left out: its variants are redirected differently per C library
 * and file offset size, and a kill before the first fchmod or write after
 * an open is the same state.)  Only built as a shared object, linked into
 * nothing, used by the tests only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static long crash_at = -1; /* -1: not read yet */
static long calls;

static void *next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);

    if (f == NULL)
        abort(); /* the test then reports a crash with the wrong signal */
    return f;
}

/* Count one call; die if it is the chosen one. */
static void step(void)
{
    if (crash_at < 0) {
        const char *v = getenv("MBSC_CRASH_AT");
        crash_at = v != NULL ? strtol(v, NULL, 10) : 0;
    }
    if (crash_at > 0 && ++calls == crash_at)
        (void)kill(getpid(), SIGKILL);
}

int fchmod(int fd, mode_t mode)
{
    int (*f)(int, mode_t) = (int (*)(int, mode_t))next("fchmod");
    step();
    return f(fd, mode);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    ssize_t (*f)(int, const void *, size_t) = (ssize_t(*)(int, const void *, size_t))next("write");
    step();
    return f(fd, buf, n);
}

int fsync(int fd)
{
    int (*f)(int) = (int (*)(int))next("fsync");
    step();
    return f(fd);
}

int close(int fd)
{
    int (*f)(int) = (int (*)(int))next("close");
    step();
    return f(fd);
}

int link(const char *from, const char *to)
{
    int (*f)(const char *, const char *) = (int (*)(const char *, const char *))next("link");
    step();
    return f(from, to);
}

int rename(const char *from, const char *to)
{
    int (*f)(const char *, const char *) = (int (*)(const char *, const char *))next("rename");
    step();
    return f(from, to);
}

#ifdef RENAME_NOREPLACE
int renameat2(int fromdir, const char *from, int todir, const char *to, unsigned flags)
{
    int (*f)(int, const char *, int, const char *, unsigned) =
        (int (*)(int, const char *, int, const char *, unsigned))next("renameat2");
    step();
    return f(fromdir, from, todir, to, flags);
}
#endif

int unlink(const char *path)
{
    int (*f)(const char *) = (int (*)(const char *))next("unlink");
    step();
    return f(path);
}
