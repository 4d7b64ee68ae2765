/* SPDX-License-Identifier: ISC */
/*
 * journal.c - fields of systemd's native journal protocol (journal.h).
 *
 * Only the encoding lives here; log.c decides when to use it and sends the
 * datagram.  A value is written in the binary form whenever it holds a
 * newline, so that no text taken from a file or a peer can start a field
 * of its own.
 */
#include <stdint.h>
#include <string.h>

#include "journal.h"

#define NAME_MAX_CHARS 64u

int gw_journal_name_ok(const char *name)
{
    size_t i, n = strlen(name);

    if (n == 0 || n > NAME_MAX_CHARS || name[0] == '_')
        return 0;
    for (i = 0; i < n; i++)
        if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '_'))
            return 0;
    return !(name[0] >= '0' && name[0] <= '9');
}

int gw_journal_field(char *buf, size_t cap, size_t *len, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value), need;
    char *p;

    if (!gw_journal_name_ok(name))
        return -1;
    if (memchr(value, '\n', vl) == NULL) {
        need = nl + 1 + vl + 1;
        if (need > cap - *len)
            return -1;
        p = buf + *len;
        memcpy(p, name, nl);
        p[nl] = '=';
        memcpy(p + nl + 1, value, vl);
        p[nl + 1 + vl] = '\n';
    } else {
        uint64_t n = vl;
        unsigned i;

        need = nl + 1 + 8 + vl + 1;
        if (need > cap - *len)
            return -1;
        p = buf + *len;
        memcpy(p, name, nl);
        p[nl] = '\n';
        for (i = 0; i < 8; i++)
            p[nl + 1 + i] = (char)(uint8_t)(n >> (8 * i));
        memcpy(p + nl + 9, value, vl);
        p[nl + 9 + vl] = '\n';
    }
    *len += need;
    return 0;
}
