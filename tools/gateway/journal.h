/* SPDX-License-Identifier: ISC */
/*
 * journal.h - log entries in systemd's native journal protocol
 * (journal.c), without libsystemd.
 *
 * The protocol (systemd.io/JOURNAL_NATIVE_PROTOCOL, systemd-journald(8)):
 * one datagram per entry, sent to the AF_UNIX socket
 * /run/systemd/journal/socket, made of fields.  A field whose value has no
 * newline is "NAME=value\n"; any other is "NAME\n", the value's length as
 * a 64-bit little-endian number, the value, and "\n".  Names are upper-case
 * letters, digits and '_', not starting with '_' (those are journald's
 * own), at most 64 characters.
 */
#ifndef MBSC_GATEWAY_JOURNAL_H
#define MBSC_GATEWAY_JOURNAL_H

#include <stddef.h>

#define GW_JOURNAL_SOCKET "/run/systemd/journal/socket"

/* One field of an entry: NAME and its value (any bytes but NUL). */
struct gw_field {
    const char *name;
    const char *value;
};

/*
 * Append one field to buf (cap bytes, *len used so far).  0, or -1 when
 * the name is not a valid field name or the field does not fit (buf is
 * then unchanged).
 */
int gw_journal_field(char *buf, size_t cap, size_t *len, const char *name, const char *value);

/* Whether name may be the name of a field (the rule above). */
int gw_journal_name_ok(const char *name);

#endif /* MBSC_GATEWAY_JOURNAL_H */
