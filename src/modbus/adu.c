/*
 * adu.c - what the client and the server share: Modbus/TCP ADU checks,
 * feeding received bytes to a session, and the socketpair and libmodbus
 * context that both hand to libmodbus.
 *
 * DESIGN.md, "Precise rules": an authenticated payload that is not one
 * well-formed Modbus/TCP ADU ends the session; an empty one is a keep-alive
 * (the callers skip those before they get here).
 */
#include <errno.h>
#include <sys/select.h>
#include <sys/socket.h>

#include "modbus/modbus_internal.h"

/* --- ADUs ---------------------------------------------------------------- */

size_t mb_adu_length(const uint8_t hdr[MB_LENGTH_END])
{
    size_t len = MB_LENGTH_END + (size_t)mbsc_load16_be(hdr + 4);

    if (mbsc_load16_be(hdr + 2) != 0 || len < MB_MIN_ADU || len > MBSC_MODBUS_MAX_ADU)
        return 0;
    return len;
}

MBSC_API int mbsc_modbus_check_adu(const uint8_t *adu, size_t len)
{
    if (adu == NULL || len < MB_MIN_ADU || len > MBSC_MODBUS_MAX_ADU)
        return MBSC_ERR_BAD_ADU;
    return mb_adu_length(adu) == len ? MBSC_OK : MBSC_ERR_BAD_ADU;
}

/* --- Received bytes ------------------------------------------------------ */

int mb_feed_buffered(mbsc_session *s, const uint8_t *in, size_t *pos, size_t *end)
{
    size_t used = 0;
    int r = mbsc_session_feed(s, in + *pos, *end - *pos, &used);

    *pos += used;
    if (*pos == *end)
        *pos = *end = 0;
    return r;
}

/* --- Small system helpers ------------------------------------------------ */

const char *mb_errno_text(int e)
{
    /* modbus_strerror() falls back on strerror(), which is not thread-safe. */
    return e >= MODBUS_ENOBASE ? modbus_strerror(e) : mbsc_os_error(e);
}

/* --- The pair and the context -------------------------------------------- */

int mb_socketpair(int pair[2], char *why, size_t why_len)
{
    pair[0] = pair[1] = -1;
    /*
     * Non-blocking on both ends: ours because one poll() loop serves it,
     * libmodbus's because libmodbus's own TCP sockets are non-blocking too
     * (it select()s before every read).  CLOEXEC: no leak into exec()ed
     * children.
     */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
        int e = errno;

        mbsc_why(why, why_len, "socketpair: %s", mbsc_os_error(e));
        return mbsc_sock_fd_error(e, MBSC_ERR_IO);
    }
    /* An fd_set cannot hold a descriptor >= FD_SETSIZE: select() would overflow it. */
    if (pair[0] >= FD_SETSIZE || pair[1] >= FD_SETSIZE) {
        mbsc_why(why, why_len,
                 "socketpair: descriptor %d is not below FD_SETSIZE (%d), which libmodbus "
                 "needs for select()",
                 pair[0] > pair[1] ? pair[0] : pair[1], FD_SETSIZE);
        mbsc_sock_close(pair[0]);
        mbsc_sock_close(pair[1]);
        pair[0] = pair[1] = -1;
        return MBSC_ERR_FD_LIMIT;
    }
    return MBSC_OK;
}

modbus_t *mb_context_new(int fd)
{
    modbus_t *ctx = modbus_new_tcp(MB_UNREACHABLE_IP, MB_UNREACHABLE_PORT);

    if (ctx == NULL)
        return NULL;
    /* Cannot fail with a valid context and a valid mode. */
    (void)modbus_set_error_recovery(ctx, MODBUS_ERROR_RECOVERY_NONE);
    (void)modbus_set_socket(ctx, fd);
    return ctx;
}
