/* SPDX-License-Identifier: ISC */
/*
 * libmodbus_layout.h - what mbsc knows about libmodbus's private context
 * layout, release by release, and the checks that prove it at run time.
 *
 * libmodbus has no public transport interface: a modbus_t is a private
 * struct _modbus whose `backend` member points at a table of functions
 * (modbus_backend_t) that libmodbus calls to send, wait, receive, connect,
 * close, flush and free.  The synchronous client (client_sync.c) gives a
 * context a private copy of libmodbus's own TCP table with those entries
 * replaced, so that libmodbus's calls land in mbsc in the caller's thread.
 * That is only sound if mbsc knows exactly where the members are, so:
 *
 *  1. the layout is looked up from libmodbus's exported version variables
 *     (libmodbus_version_major/minor/micro); a release not in the table
 *     has no layout;
 *  2. before anything is written, mb_layout_verify() checks the layout on
 *     the context itself (see libmodbus_layout.c for the checks);
 *  3. any failure leaves the context untouched and the caller uses the
 *     pump (client.c), which only needs public libmodbus calls.
 *
 * Nothing here is global or mutable: the table is constant and every
 * verification works on the context it is given.
 */
#ifndef MBSC_MODBUS_LIBMODBUS_LAYOUT_H
#define MBSC_MODBUS_LIBMODBUS_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/types.h>

#include "mbsc/modbus.h"

/* The two shapes of the private structs over 3.1.6 .. 3.1.11 (see the .c). */
enum mb_layout_family {
    MB_FAMILY_316 = 1, /* 3.1.6 .. 3.1.8 */
    MB_FAMILY_319 = 2  /* 3.1.9 .. 3.1.11 */
};

struct mb_layout {
    const char *name; /* "3.1.6-3.1.8", for messages */
    unsigned major, minor, micro_first, micro_last;
    enum mb_layout_family family;
};

/*
 * The entries of libmodbus's backend table that the synchronous client
 * replaces.  Each receives the transport that the context's table copy
 * belongs to (never NULL) and the context.
 */
struct mb_sync;
struct mb_transport_ops {
    ssize_t (*send)(struct mb_sync *t, modbus_t *ctx, const uint8_t *req, int len);
    ssize_t (*recv)(struct mb_sync *t, modbus_t *ctx, uint8_t *rsp, int len);
    int (*select)(struct mb_sync *t, modbus_t *ctx, struct timeval *tv, int len);
    int (*connect)(struct mb_sync *t, modbus_t *ctx);
    unsigned (*is_connected)(struct mb_sync *t, modbus_t *ctx);
    void (*close)(struct mb_sync *t, modbus_t *ctx);
    int (*flush)(struct mb_sync *t, modbus_t *ctx);
    void (*free)(struct mb_sync *t, modbus_t *ctx);
};

/*
 * Mirrors of libmodbus's backend table, one per family (described in
 * libmodbus_layout.c).  Entries mbsc never calls are opaque function
 * pointers, which have the size of any other function pointer on every
 * POSIX target; the entries mbsc replaces have libmodbus's signatures.
 */
typedef void (*mb_opaque_fn)(void);

struct mb_backend_316 {
    unsigned backend_type, header_length, checksum_length, max_adu_length;
    mb_opaque_fn set_slave, build_request_basis, build_response_basis, response_tid, send_msg_pre;
    ssize_t (*send)(modbus_t *ctx, const uint8_t *req, int len);
    mb_opaque_fn receive;
    ssize_t (*recv)(modbus_t *ctx, uint8_t *rsp, int len);
    mb_opaque_fn check_integrity, pre_check_confirmation;
    int (*connect)(modbus_t *ctx);
    void (*close)(modbus_t *ctx);
    int (*flush)(modbus_t *ctx);
    int (*select)(modbus_t *ctx, fd_set *rset, struct timeval *tv, int len);
    void (*free)(modbus_t *ctx);
};

struct mb_backend_319 {
    unsigned backend_type, header_length, checksum_length, max_adu_length;
    mb_opaque_fn set_slave, build_request_basis, build_response_basis, response_tid, send_msg_pre;
    ssize_t (*send)(modbus_t *ctx, const uint8_t *req, int len);
    mb_opaque_fn receive;
    ssize_t (*recv)(modbus_t *ctx, uint8_t *rsp, int len);
    mb_opaque_fn check_integrity, pre_check_confirmation;
    int (*connect)(modbus_t *ctx);
    unsigned (*is_connected)(modbus_t *ctx);
    void (*close)(modbus_t *ctx);
    int (*flush)(modbus_t *ctx);
    int (*select)(modbus_t *ctx, fd_set *rset, struct timeval *tv, int len);
    void (*free)(modbus_t *ctx);
};

/*
 * A context's private copy of libmodbus's TCP table, and the way back
 * from it to its transport.  Lives inside the transport; the context's
 * backend member points at `table`, the first member.
 */
struct mb_backend_copy {
    union {
        struct mb_backend_316 b316;
        struct mb_backend_319 b319;
    } table;
    struct mb_sync *owner;
    const struct mb_transport_ops *ops;
};

/*
 * The layout of the libmodbus this process runs with (from its exported
 * version), or NULL with why naming the version when none is known.
 */
const struct mb_layout *mb_layout_current(char *why, size_t why_len);

/* The layout for a given version, or NULL (for tests: a fake version). */
const struct mb_layout *mb_layout_for_version(unsigned major, unsigned minor, unsigned micro);

/*
 * Check, on ctx itself, that it is a plain libmodbus TCP context laid out
 * as lay says: MBSC_OK, or MBSC_ERR_MODBUS with why naming the first
 * check that failed.  ctx's socket and timeouts are probed through the
 * public calls and restored; nothing else is written.
 */
int mb_layout_verify(const struct mb_layout *lay, modbus_t *ctx, char *why, size_t why_len);

/*
 * Point ctx (verified with lay) at copy: libmodbus's TCP table with the
 * entries of ops replaced.  copy->owner is set to t.
 */
void mb_layout_install(const struct mb_layout *lay, modbus_t *ctx, struct mb_backend_copy *copy,
                       struct mb_sync *t, const struct mb_transport_ops *ops);

/*
 * Give ctx back libmodbus's own TCP table (before libmodbus frees it).
 */
void mb_layout_uninstall(const struct mb_layout *lay, modbus_t *ctx);

/*
 * The transport whose table ctx uses, or NULL if ctx (any context of this
 * libmodbus, ours or not) does not use one.  Verifies the layout on a
 * scratch context first, so that ctx is never misread nor written to.
 */
struct mb_sync *mb_layout_transport_of(modbus_t *ctx);

#endif /* MBSC_MODBUS_LIBMODBUS_LAYOUT_H */
