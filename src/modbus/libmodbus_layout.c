/* SPDX-License-Identifier: ISC */
/*
 * libmodbus_layout.c - libmodbus's private context layouts, 3.1.6 to 3.1.11,
 * and their verification at run time.
 *
 * What the releases look like (read from libmodbus's src/modbus-private.h,
 * src/modbus-tcp.c and src/modbus.c at the tags v3.1.6 .. v3.1.11; the
 * descriptions and the mirror structs below are ours):
 *
 * The context (struct _modbus), every release: the unit id, then the
 * descriptor, a debug flag and the error recovery mode (four ints), then
 * three `struct timeval`s - the response, byte and indication timeouts -,
 * then a pointer to the backend table and an untyped pointer to the
 * backend's own data (for TCP: the transaction id, port and address).
 * From 3.1.9 on, a fifth int (a "quirks" bit mask) sits between the error
 * recovery mode and the timeouts, which moves every later member (by 8
 * bytes on LP64, where the timevals are 8-aligned; by 4 with 32-bit ints
 * and 4-aligned timevals).  The timevals are whatever the C library of
 * libmodbus's build says: 16 bytes on 64-bit targets, 8 on a 32-bit
 * target with a 32-bit time_t, 16 on a 32-bit target with a 64-bit time_t
 * (Debian 13 armhf).  A mismatch with our own build is caught below.
 *
 * The backend table (modbus_backend_t): four unsigned ints (backend type,
 * header length, checksum length, largest ADU), then function pointers.
 * In 3.1.6 .. 3.1.8: set the unit id, build a request header, build a
 * response header, compute the response transaction id, a hook before
 * sending, send, receive a whole request (servers), read some bytes,
 * check integrity, a check before parsing a confirmation, connect, close,
 * flush, wait for input (select) and free: 15 entries.  3.1.9 adds an
 * "is connected" entry right after connect (16 entries), which
 * _modbus_receive_msg calls before it waits.  3.1.11 keeps that shape but
 * replaces the response-transaction-id entry with one of another
 * signature (it takes the request and returns the id); mbsc copies that
 * entry without calling it, so for mbsc 3.1.11 shares 3.1.9's family.
 * For TCP the constants are type 1 (TCP; RTU is 0), header 7 (the MBAP
 * header), checksum 0 and ADU 260 (MODBUS_TCP_MAX_ADU_LENGTH).
 *
 * How libmodbus uses the entries mbsc replaces, the same in every release:
 * a request is built in the caller's buffer, then `send` is called once
 * with the whole ADU.  A confirmation is read in steps (header and
 * function code, then the byte count or fixed fields, then the data): for
 * each step `select` is called with the response timeout (the byte
 * timeout after the first step, when one is set), then `recv` with the
 * number of bytes wanted; a `recv` of 0 is reported as ECONNRESET.  With
 * MODBUS_ERROR_RECOVERY_LINK, libmodbus answers EBADF, ECONNRESET or EPIPE
 * from `send`, ECONNRESET/ECONNREFUSED/EBADF from `recv` and EBADF from
 * `select` with `close` then `connect`; ETIMEDOUT with a sleep and `flush`.
 * modbus_close() and modbus_free() call `close` and `free` only.
 *
 * The checks, all on the context about to be used and before anything is
 * written through the mirror:
 *  - the descriptor member reads back what modbus_set_socket() stored
 *    (twice, with different values);
 *  - each timeout member reads back what modbus_set_response_timeout(),
 *    modbus_set_byte_timeout() and modbus_set_indication_timeout() stored,
 *    seconds and microseconds: this proves the size of struct timeval (a
 *    32-bit time_t build against a 64-bit time_t libmodbus reads the
 *    microseconds from the high half of the seconds) and the offsets;
 *  - only then the backend pointer is read, and must equal libmodbus's
 *    exported `_modbus_tcp_backend` (referenced weakly: a libmodbus that
 *    does not export it leaves it NULL, and the check fails);
 *  - the table's constants are TCP's, and its header length is what
 *    modbus_get_header_length() returns; the backend data is not NULL.
 * Timeouts and the socket are restored.  A release not in the table,
 * or any failed check, means no layout: the caller uses the pump.
 */
#include <string.h>

#include "modbus/libmodbus_layout.h"
#include "modbus/modbus_internal.h"

/* libmodbus's TCP table; not in its installed headers, but exported. */
struct mb_libmodbus_backend;
extern const struct mb_libmodbus_backend _modbus_tcp_backend __attribute__((weak));

#define TCP_BACKEND_TYPE   1u
#define TCP_HEADER_LENGTH  7u
#define TCP_CHECKSUM_BYTES 0u

/* --- The mirrors ----------------------------------------------------------- */

struct ctx_316 {
    int slave;
    int s;
    int debug;
    int error_recovery;
    struct timeval response_timeout;
    struct timeval byte_timeout;
    struct timeval indication_timeout;
    const void *backend;
    void *backend_data;
};

struct ctx_319 {
    int slave;
    int s;
    int debug;
    int error_recovery;
    int quirks;
    struct timeval response_timeout;
    struct timeval byte_timeout;
    struct timeval indication_timeout;
    const void *backend;
    void *backend_data;
};

/* The family's view of one context: the members the checks read. */
struct ctx_view {
    const int *s;
    const struct timeval *timeouts[3]; /* response, byte, indication */
    const void *const *backend;
    void *const *backend_data;
};

static void ctx_view(const struct mb_layout *lay, modbus_t *ctx, struct ctx_view *v)
{
    if (lay->family == MB_FAMILY_316) {
        const struct ctx_316 *c = (const struct ctx_316 *)(void *)ctx;

        v->s = &c->s;
        v->timeouts[0] = &c->response_timeout;
        v->timeouts[1] = &c->byte_timeout;
        v->timeouts[2] = &c->indication_timeout;
        v->backend = &c->backend;
        v->backend_data = &c->backend_data;
    } else {
        const struct ctx_319 *c = (const struct ctx_319 *)(void *)ctx;

        v->s = &c->s;
        v->timeouts[0] = &c->response_timeout;
        v->timeouts[1] = &c->byte_timeout;
        v->timeouts[2] = &c->indication_timeout;
        v->backend = &c->backend;
        v->backend_data = &c->backend_data;
    }
}

/* The context's backend member, written (only after verification). */
static void ctx_set_backend(const struct mb_layout *lay, modbus_t *ctx, const void *b)
{
    if (lay->family == MB_FAMILY_316)
        ((struct ctx_316 *)(void *)ctx)->backend = b;
    else
        ((struct ctx_319 *)(void *)ctx)->backend = b;
}

/* --- The table of releases -------------------------------------------------- */

static const struct mb_layout layouts[] = {
    {.name = "3.1.6-3.1.8",
     .major = 3,
     .minor = 1,
     .micro_first = 6,
     .micro_last = 8,
     .family = MB_FAMILY_316},
    {.name = "3.1.9-3.1.10",
     .major = 3,
     .minor = 1,
     .micro_first = 9,
     .micro_last = 10,
     .family = MB_FAMILY_319},
    {.name = "3.1.11",
     .major = 3,
     .minor = 1,
     .micro_first = 11,
     .micro_last = 11,
     .family = MB_FAMILY_319},
};

const struct mb_layout *mb_layout_for_version(unsigned major, unsigned minor, unsigned micro)
{
    size_t i;

    for (i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        const struct mb_layout *l = &layouts[i];

        if (l->major == major && l->minor == minor && micro >= l->micro_first &&
            micro <= l->micro_last)
            return l;
    }
    return NULL;
}

const struct mb_layout *mb_layout_current(char *why, size_t why_len)
{
    const struct mb_layout *l = mb_layout_for_version(
        libmodbus_version_major, libmodbus_version_minor, libmodbus_version_micro);

    if (l == NULL)
        mbsc_why(why, why_len,
                 "libmodbus %u.%u.%u: its private layout is not one mbsc knows (3.1.6 to "
                 "3.1.11)",
                 libmodbus_version_major, libmodbus_version_minor, libmodbus_version_micro);
    return l;
}

/* --- Verification --------------------------------------------------------------- */

struct probe {
    uint32_t sec, usec;
};

/* Distinct, valid (usec < 10^6, not 0/0) values, one per timeout. */
static const struct probe probes[3] = {{0x2345u, 74565u}, {0x3456u, 144470u}, {0x4567u, 214375u}};

static int get_timeout(modbus_t *ctx, int which, uint32_t *sec, uint32_t *usec)
{
    if (which == 0)
        return modbus_get_response_timeout(ctx, sec, usec);
    if (which == 1)
        return modbus_get_byte_timeout(ctx, sec, usec);
    return modbus_get_indication_timeout(ctx, sec, usec);
}

static int set_timeout(modbus_t *ctx, int which, uint32_t sec, uint32_t usec)
{
    if (which == 0)
        return modbus_set_response_timeout(ctx, sec, usec);
    if (which == 1)
        return modbus_set_byte_timeout(ctx, sec, usec);
    return modbus_set_indication_timeout(ctx, sec, usec);
}

static const char *const timeout_names[3] = {"response", "byte", "indication"};

static int timeval_is(const struct timeval *tv, const struct probe *p)
{
    return tv->tv_sec == (time_t)p->sec && tv->tv_usec == (suseconds_t)p->usec;
}

/* The socket and timeout members: where the public calls put them. */
static int verify_members(const struct mb_layout *lay, modbus_t *ctx, const struct ctx_view *v,
                          char *why, size_t why_len)
{
    static const int socket_probes[2] = {0x1357, 0x2468};
    uint32_t sec[3], usec[3];
    int s0 = modbus_get_socket(ctx), ok = 1, i;

    for (i = 0; i < 2 && ok; i++) {
        (void)modbus_set_socket(ctx, socket_probes[i]);
        ok = *v->s == socket_probes[i];
    }
    (void)modbus_set_socket(ctx, s0);
    if (!ok) {
        mbsc_why(why, why_len,
                 "libmodbus %s layout: the socket is not where modbus_get_socket() reads it",
                 lay->name);
        return MBSC_ERR_MODBUS;
    }
    for (i = 0; i < 3; i++) {
        if (get_timeout(ctx, i, &sec[i], &usec[i]) != 0) {
            mbsc_why(why, why_len, "libmodbus: cannot read the %s timeout", timeout_names[i]);
            return MBSC_ERR_MODBUS;
        }
    }
    for (i = 0; i < 3 && ok; i++) {
        ok = set_timeout(ctx, i, probes[i].sec, probes[i].usec) == 0 &&
             timeval_is(v->timeouts[i], &probes[i]);
    }
    for (i = 0; i < 3; i++) {
        /* 0/0 is refused by some setters; it only ever means "not set" for indication. */
        if (sec[i] != 0 || usec[i] != 0)
            (void)set_timeout(ctx, i, sec[i], usec[i]);
        else if (i == 2)
            (void)modbus_set_indication_timeout(ctx, 0, 0);
    }
    if (!ok) {
        mbsc_why(why, why_len,
                 "libmodbus %s layout: the timeouts are not where modbus_set_response_timeout() "
                 "puts them (another release's layout, or a libmodbus built with another time_t)",
                 lay->name);
        return MBSC_ERR_MODBUS;
    }
    return MBSC_OK;
}

/* The backend table of a verified context: TCP's constants. */
static int verify_table(const struct mb_layout *lay, modbus_t *ctx, const void *table, char *why,
                        size_t why_len)
{
    const unsigned *k = table; /* the four unsigned ints open both families' tables */
    int header = modbus_get_header_length(ctx);

    if (k[0] != TCP_BACKEND_TYPE || k[1] != TCP_HEADER_LENGTH || k[2] != TCP_CHECKSUM_BYTES ||
        k[3] != MODBUS_TCP_MAX_ADU_LENGTH || header < 0 || (unsigned)header != k[1]) {
        mbsc_why(why, why_len,
                 "libmodbus %s layout: the TCP table says type %u, header %u, checksum %u, ADU "
                 "%u (want 1, 7, 0, %u)",
                 lay->name, k[0], k[1], k[2], k[3], (unsigned)MODBUS_TCP_MAX_ADU_LENGTH);
        return MBSC_ERR_MODBUS;
    }
    return MBSC_OK;
}

int mb_layout_verify(const struct mb_layout *lay, modbus_t *ctx, char *why, size_t why_len)
{
    struct ctx_view v;
    int r;

    if (lay == NULL || ctx == NULL) {
        mbsc_why(why, why_len, "libmodbus: no layout or no context");
        return MBSC_ERR_MODBUS;
    }
    if (&_modbus_tcp_backend == NULL) {
        mbsc_why(why, why_len, "libmodbus does not export _modbus_tcp_backend");
        return MBSC_ERR_MODBUS;
    }
    ctx_view(lay, ctx, &v);
    r = verify_members(lay, ctx, &v, why, why_len);
    if (r != MBSC_OK)
        return r;
    if (*v.backend != (const void *)&_modbus_tcp_backend) {
        mbsc_why(why, why_len,
                 "libmodbus %s layout: the context's backend is not libmodbus's TCP backend",
                 lay->name);
        return MBSC_ERR_MODBUS;
    }
    if (*v.backend_data == NULL) {
        mbsc_why(why, why_len, "libmodbus %s layout: the context has no TCP data", lay->name);
        return MBSC_ERR_MODBUS;
    }
    return verify_table(lay, ctx, *v.backend, why, why_len);
}

/* --- Thunks: libmodbus's signatures, per family, to the transport --------------- */

/*
 * The copy that ctx's backend member points at.  It is ours (installed by
 * mb_layout_install, never const), so casting the const away is sound.
 */
#define MB_COPY_OF(CTX_TYPE, ctx)                                                                  \
    ((struct mb_backend_copy *)(uintptr_t)((const struct CTX_TYPE *)(void *)(ctx))->backend)

#define MB_THUNKS(F, CTX_TYPE)                                                                     \
    static ssize_t F##_send(modbus_t *ctx, const uint8_t *req, int len)                            \
    {                                                                                              \
        struct mb_backend_copy *b = MB_COPY_OF(CTX_TYPE, ctx);                                     \
        return b->ops->send(b->owner, ctx, req, len);                                              \
    }                                                                                              \
    static ssize_t F##_recv(modbus_t *ctx, uint8_t *rsp, int len)                                  \
    {                                                                                              \
        struct mb_backend_copy *b = MB_COPY_OF(CTX_TYPE, ctx);                                     \
        return b->ops->recv(b->owner, ctx, rsp, len);                                              \
    }                                                                                              \
    static int F##_select(modbus_t *ctx, fd_set *rset, struct timeval *tv, int len)                \
    {                                                                                              \
        struct mb_backend_copy *b = MB_COPY_OF(CTX_TYPE, ctx);                                     \
        (void)rset; /* no select(): the transport polls its own socket */                          \
        return b->ops->select(b->owner, ctx, tv, len);                                             \
    }                                                                                              \
    static int F##_connect(modbus_t *ctx)                                                          \
    {                                                                                              \
        struct mb_backend_copy *b = MB_COPY_OF(CTX_TYPE, ctx);                                     \
        return b->ops->connect(b->owner, ctx);                                                     \
    }                                                                                              \
    static void F##_close(modbus_t *ctx)                                                           \
    {                                                                                              \
        struct mb_backend_copy *b = MB_COPY_OF(CTX_TYPE, ctx);                                     \
        b->ops->close(b->owner, ctx);                                                              \
    }                                                                                              \
    static int F##_flush(modbus_t *ctx)                                                            \
    {                                                                                              \
        struct mb_backend_copy *b = MB_COPY_OF(CTX_TYPE, ctx);                                     \
        return b->ops->flush(b->owner, ctx);                                                       \
    }                                                                                              \
    static void F##_free(modbus_t *ctx)                                                            \
    {                                                                                              \
        struct mb_backend_copy *b = MB_COPY_OF(CTX_TYPE, ctx);                                     \
        b->ops->free(b->owner, ctx);                                                               \
    }

MB_THUNKS(f316, ctx_316)
MB_THUNKS(f319, ctx_319)

/* 3.1.9 and later only. */
static unsigned f319_is_connected(modbus_t *ctx)
{
    struct mb_backend_copy *b = MB_COPY_OF(ctx_319, ctx);
    return b->ops->is_connected(b->owner, ctx);
}

/* --- Installing ---------------------------------------------------------------- */

void mb_layout_install(const struct mb_layout *lay, modbus_t *ctx, struct mb_backend_copy *copy,
                       struct mb_sync *t, const struct mb_transport_ops *ops)
{
    copy->owner = t;
    copy->ops = ops;
    if (lay->family == MB_FAMILY_316) {
        struct mb_backend_316 *b = &copy->table.b316;

        memcpy(b, (const void *)&_modbus_tcp_backend, sizeof *b);
        b->send = f316_send;
        b->recv = f316_recv;
        b->select = f316_select;
        b->connect = f316_connect;
        b->close = f316_close;
        b->flush = f316_flush;
        b->free = f316_free;
    } else {
        struct mb_backend_319 *b = &copy->table.b319;

        memcpy(b, (const void *)&_modbus_tcp_backend, sizeof *b);
        b->send = f319_send;
        b->recv = f319_recv;
        b->select = f319_select;
        b->connect = f319_connect;
        b->is_connected = f319_is_connected;
        b->close = f319_close;
        b->flush = f319_flush;
        b->free = f319_free;
    }
    ctx_set_backend(lay, ctx, &copy->table);
}

void mb_layout_uninstall(const struct mb_layout *lay, modbus_t *ctx)
{
    ctx_set_backend(lay, ctx, (const void *)&_modbus_tcp_backend);
}

/*
 * The layout holds for this process (its libmodbus and this build): proven
 * on a scratch context, so that asking about ctx never writes to it.
 */
static int layout_holds(const struct mb_layout *lay)
{
    modbus_t *scratch = mb_context_new(-1);
    int r = scratch != NULL ? mb_layout_verify(lay, scratch, NULL, 0) : MBSC_ERR_NOMEM;

    modbus_free(scratch);
    return r == MBSC_OK;
}

struct mb_sync *mb_layout_transport_of(modbus_t *ctx)
{
    const struct mb_layout *lay = mb_layout_current(NULL, 0);
    const void *table;
    struct ctx_view v;

    if (lay == NULL || ctx == NULL || !layout_holds(lay))
        return NULL;
    ctx_view(lay, ctx, &v);
    table = *v.backend;
    if (table == NULL || table == (const void *)&_modbus_tcp_backend)
        return NULL;
    /* Any libmodbus table has this family's shape; ours has our free(). */
    if (lay->family == MB_FAMILY_316) {
        if (((const struct mb_backend_316 *)table)->free != f316_free)
            return NULL;
    } else if (((const struct mb_backend_319 *)table)->free != f319_free) {
        return NULL;
    }
    return ((const struct mb_backend_copy *)table)->owner;
}
