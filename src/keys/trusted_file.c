/* SPDX-License-Identifier: ISC */
/*
 * trusted_file.c - any small file that decides what a program trusts (a
 * configuration that names key files and the policy, for one), read under
 * the rules of an allow-list: only the effective user or root can change
 * it or any directory on its path (trust.c), and it is not writable by
 * group or others.  Programs get the same checks, and the same messages,
 * for their own files as for keys.
 */
#include <string.h>

#include "internal.h"
#include "keys/keyio.h"
#include "mbsc/keys.h"

MBSC_API int mbsc_trusted_file_read(const char *path, void *buf, size_t cap, size_t *len, char *why,
                                    size_t why_len)
{
    int rc;

    mbsc_why(why, why_len, "%s", "");
    if (len != NULL)
        *len = 0;
    if (path == NULL || len == NULL || (buf == NULL && cap > 0)) {
        mbsc_why(why, why_len, "invalid argument");
        return MBSC_ERR_INVALID_ARG;
    }
    rc = mbsc_keyio_read(path, MBSC_KEYIO_PUBLIC, buf, cap, len, why, why_len);
    if (rc != MBSC_OK) {
        /* Part of the file may be there: leave nothing half-read behind. */
        if (cap > 0)
            memset(buf, 0, cap);
        *len = 0;
    }
    return rc;
}
