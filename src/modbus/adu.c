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
 * Rules from the Modbus Application Protocol Specification v1.1b3, section
 * 6 (one subsection per function code) and the server state diagrams
 * there: a function the server does not implement gets exception 01; a
 * quantity out of its range, or a byte count that does not match the
 * quantity or the bytes that follow, gets 03; an address range outside the
 * data gets 02.  modbus_reply() trusts its input, because libmodbus's
 * receive path normally checks these lengths first; here that path does
 * not run, so every byte modbus_reply() will read is checked to be there,
 * and every quantity it will use to be in range.
 */

/* Big-endian 16-bit field at offset off of the PDU. */
static unsigned pdu16(const uint8_t *pdu, size_t off)
{
    return mbsc_load16_be(pdu + off);
}

/* start + quantity within [first, first + count) of a table. */
static int range_in_table(unsigned start, unsigned quantity, int first, int count)
{
    long lo = (long)start - (long)first;

    return first >= 0 && count >= 0 && lo >= 0 && lo + (long)quantity <= (long)count;
}

/* Function 0x17: the write range and the read range must both exist. */
static uint8_t check_read_write_registers(const uint8_t *pdu, size_t n, const modbus_mapping_t *map)
{
    unsigned read_qty, write_qty, bytes;

    /* fc, read start, read qty, write start, write qty, byte count, values */
    if (n < 10)
        return MB_EXC_ILLEGAL_DATA_VALUE;
    read_qty = pdu16(pdu, 3);
    write_qty = pdu16(pdu, 7);
    bytes = pdu[9];
    if (read_qty < 1 || read_qty > MODBUS_MAX_WR_READ_REGISTERS || write_qty < 1 ||
        write_qty > MODBUS_MAX_WR_WRITE_REGISTERS || bytes != 2 * write_qty || n != 10 + bytes)
        return MB_EXC_ILLEGAL_DATA_VALUE;
    /*
     * Both ranges, before modbus_reply(): libmodbus 3.1.6 checks the write
     * range's start with the read range's offset (CVE-2022-0367) and would
     * write below its table; with this check that request never reaches it.
     */
    if (!range_in_table(pdu16(pdu, 1), read_qty, map->start_registers, map->nb_registers) ||
        !range_in_table(pdu16(pdu, 5), write_qty, map->start_registers, map->nb_registers))
        return MB_EXC_ILLEGAL_DATA_ADDRESS;
    return 0;
}

uint8_t mb_check_request(const uint8_t *adu, size_t len, const modbus_mapping_t *map)
{
    const uint8_t *pdu = adu + MB_MBAP_BYTES;
    size_t n = len - MB_MBAP_BYTES; /* >= 1: the ADU passed mbsc_modbus_check_adu() */
    unsigned qty;

    switch (pdu[0]) {
    case MODBUS_FC_READ_COILS:
    case MODBUS_FC_READ_DISCRETE_INPUTS:
        /* fc, start, quantity of bits 1..2000 */
        if (n != 5)
            return MB_EXC_ILLEGAL_DATA_VALUE;
        qty = pdu16(pdu, 3);
        return qty >= 1 && qty <= MODBUS_MAX_READ_BITS ? 0 : MB_EXC_ILLEGAL_DATA_VALUE;
    case MODBUS_FC_READ_HOLDING_REGISTERS:
    case MODBUS_FC_READ_INPUT_REGISTERS:
        /* fc, start, quantity of registers 1..125 */
        if (n != 5)
            return MB_EXC_ILLEGAL_DATA_VALUE;
        qty = pdu16(pdu, 3);
        return qty >= 1 && qty <= MODBUS_MAX_READ_REGISTERS ? 0 : MB_EXC_ILLEGAL_DATA_VALUE;
    case MODBUS_FC_WRITE_SINGLE_COIL:
        /* fc, address, 0xFF00 (on) or 0x0000 (off) */
        if (n != 5)
            return MB_EXC_ILLEGAL_DATA_VALUE;
        qty = pdu16(pdu, 3);
        return qty == 0xFF00u || qty == 0 ? 0 : MB_EXC_ILLEGAL_DATA_VALUE;
    case MODBUS_FC_WRITE_SINGLE_REGISTER:
        return n == 5 ? 0 : MB_EXC_ILLEGAL_DATA_VALUE; /* fc, address, value */
    case MODBUS_FC_WRITE_MULTIPLE_COILS:
        /* fc, start, quantity 1..1968, byte count = ceil(quantity / 8), bytes */
        if (n < 6)
            return MB_EXC_ILLEGAL_DATA_VALUE;
        qty = pdu16(pdu, 3);
        if (qty < 1 || qty > MODBUS_MAX_WRITE_BITS || pdu[5] != (qty + 7) / 8 ||
            n != 6 + (size_t)pdu[5])
            return MB_EXC_ILLEGAL_DATA_VALUE;
        return 0;
    case MODBUS_FC_WRITE_MULTIPLE_REGISTERS:
        /* fc, start, quantity 1..123, byte count = 2 * quantity, values */
        if (n < 6)
            return MB_EXC_ILLEGAL_DATA_VALUE;
        qty = pdu16(pdu, 3);
        if (qty < 1 || qty > MODBUS_MAX_WRITE_REGISTERS || pdu[5] != 2 * qty ||
            n != 6 + (size_t)pdu[5])
            return MB_EXC_ILLEGAL_DATA_VALUE;
        return 0;
    case MODBUS_FC_REPORT_SLAVE_ID:
        return n == 1 ? 0 : MB_EXC_ILLEGAL_DATA_VALUE; /* the function code alone */
    case MODBUS_FC_MASK_WRITE_REGISTER:
        return n == 7 ? 0 : MB_EXC_ILLEGAL_DATA_VALUE; /* fc, address, and-mask, or-mask */
    case MODBUS_FC_WRITE_AND_READ_REGISTERS: return check_read_write_registers(pdu, n, map);
    default:
        /* Including 0x07 (read exception status), which modbus_reply() refuses. */
        return MB_EXC_ILLEGAL_FUNCTION;
    }
}

size_t mb_exception_reply(const uint8_t *req, uint8_t code, uint8_t rsp[MB_EXCEPTION_BYTES])
{
    /* Same transaction id, protocol 0, length 3 (unit, fc | 0x80, code). */
    memcpy(rsp, req, 4);
    mbsc_store16_be(rsp + 4, 3);
    rsp[6] = req[6];
    rsp[7] = (uint8_t)(req[7] | 0x80u);
    rsp[8] = code;
    return MB_EXCEPTION_BYTES;
}
