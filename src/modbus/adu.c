/* SPDX-License-Identifier: ISC */
/*
 * adu.c - what the client and the server share: Modbus/TCP ADU checks,
 * the server's request checks before modbus_reply(), and the socketpair
 * and libmodbus context that both hand to libmodbus.
 *
 * docs/protocol.md, "Modbus on top": an authenticated payload that is not one
 * well-formed Modbus/TCP ADU ends the session; an empty one is a keep-alive
 * (the callers skip those before they get here).
 */
#include <errno.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>

#include "modbus/modbus_internal.h"

/* --- ADUs ---------------------------------------------------------------- */

MBSC_API int mbsc_modbus_check_adu(const uint8_t *adu, size_t len)
{
    if (adu == NULL || len < MBSC_ADU_MIN || len > MBSC_ADU_MAX)
        return MBSC_ERR_BAD_ADU;
    return mbsc_adu_length(adu) == len ? MBSC_OK : MBSC_ERR_BAD_ADU;
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

/* --- Request PDUs (validation before modbus_reply) ------------------------ */

/*
 * The shape of every request is the function table's to judge
 * (mbsc/pdu.h), before the application's hook sees it.  What remains here
 * is libmodbus's own business, after the hook: modbus_reply() trusts its
 * input, because libmodbus's receive path normally checks it first; here
 * that path does not run.  So a function modbus_reply() does not implement
 * gets exception 01 here, and 0x17's two ranges are checked against the
 * mapping (exception 02) before libmodbus sees them.
 */

/* start + quantity within [first, first + count) of a table. */
static int range_in_table(unsigned start, unsigned quantity, int first, int count)
{
    long lo = (long)start - (long)first;

    return first >= 0 && count >= 0 && lo >= 0 && lo + (long)quantity <= (long)count;
}

/* The functions modbus_reply() answers from a mapping (libmodbus 3.1.6 to 3.1.11). */
static int reply_implements(uint8_t fc)
{
    switch (fc) {
    case MODBUS_FC_READ_COILS:
    case MODBUS_FC_READ_DISCRETE_INPUTS:
    case MODBUS_FC_READ_HOLDING_REGISTERS:
    case MODBUS_FC_READ_INPUT_REGISTERS:
    case MODBUS_FC_WRITE_SINGLE_COIL:
    case MODBUS_FC_WRITE_SINGLE_REGISTER:
    case MODBUS_FC_WRITE_MULTIPLE_COILS:
    case MODBUS_FC_WRITE_MULTIPLE_REGISTERS:
    case MODBUS_FC_REPORT_SLAVE_ID:
    case MODBUS_FC_MASK_WRITE_REGISTER:
    case MODBUS_FC_WRITE_AND_READ_REGISTERS: return 1;
    default: return 0; /* including 0x07, which modbus_reply() answers with 01 itself */
    }
}

uint8_t mb_check_reply(const uint8_t *adu, size_t len, const modbus_mapping_t *map)
{
    const uint8_t *pdu = adu + MBSC_MBAP_BYTES;
    struct mbsc_pdu_range r[2];

    if (!reply_implements(pdu[0]))
        return MBSC_EXC_ILLEGAL_FUNCTION;
    if (pdu[0] != MODBUS_FC_WRITE_AND_READ_REGISTERS)
        return 0; /* modbus_reply() checks these ranges itself */
    /*
     * Both ranges, before modbus_reply(): libmodbus 3.1.6 checks the write
     * range's start with the read range's offset (CVE-2022-0367) and would
     * write below its table; with this check that request never reaches it.
     */
    if (mbsc_pdu_ranges(pdu, len - MBSC_MBAP_BYTES, r) != 2 ||
        !range_in_table(r[0].first, r[0].count, map->start_registers, map->nb_registers) ||
        !range_in_table(r[1].first, r[1].count, map->start_registers, map->nb_registers))
        return MBSC_EXC_ILLEGAL_DATA_ADDRESS;
    return 0;
}

uint8_t mb_check_request(const uint8_t *adu, size_t len, const modbus_mapping_t *map)
{
    uint8_t exc = mbsc_pdu_check_request(adu + MBSC_MBAP_BYTES, len - MBSC_MBAP_BYTES);

    return exc != 0 ? exc : mb_check_reply(adu, len, map);
}
