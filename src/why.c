/* SPDX-License-Identifier: ISC */
/*
 * why.c - the one-line explanations ("why" strings) that loading and
 * connecting functions hand back with their error codes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

void mbsc_why(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;

    if (why == NULL || why_len == 0)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
}

/*
 * strerror_r returns int (POSIX) or char * (glibc with _GNU_SOURCE); take
 * whichever this build has.  strerror itself is not thread-safe.
 */
static const char *pick_posix(int rc, const char *buf)
{
    return rc == 0 ? buf : "unknown error";
}

static const char *pick_gnu(const char *msg, const char *buf)
{
    (void)buf;
    return msg;
}

const char *mbsc_os_error(int err)
{
    static _Thread_local char buf[128];

    buf[0] = '\0';
    return _Generic(strerror_r(err, buf, sizeof buf), int: pick_posix, char *: pick_gnu)(
        strerror_r(err, buf, sizeof buf), buf);
}
