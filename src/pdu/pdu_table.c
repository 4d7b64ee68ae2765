/* SPDX-License-Identifier: ISC */
/*
 * pdu_table.c - the public Modbus function codes, one entry each
 * (mbsc/pdu.h).
 *
 * Every number below is from the Modbus Application Protocol
 * Specification v1.1b3 (MAP): the function codes of section 5.1, and for
 * each function the request and response layouts and the quantity limits
 * of its subsection of section 6 (noted beside each entry).  Offsets count
 * from the function code, which is byte 0 of the PDU.
 */
#include <stddef.h>

#include "mbsc/pdu.h"

#define NO_MEI (-1)

static const struct mbsc_pdu_function table[] = {
    /* 6.1: fc, start, quantity 1..2000 -> fc, byte count, coil bytes */
    {.code = 0x01,
     .mei = NO_MEI,
     .name = "read coils",
     .table = MBSC_PDU_COILS,
     .access = MBSC_PDU_READ,
     .address_at = 1,
     .quantity_at = 3,
     .quantity_min = 1,
     .quantity_max = 2000,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 5,
     .answer_rule = MBSC_PDU_ANS_BITS},
    /* 6.2: as 6.1, for discrete inputs */
    {.code = 0x02,
     .mei = NO_MEI,
     .name = "read discrete inputs",
     .table = MBSC_PDU_DISCRETE_INPUTS,
     .access = MBSC_PDU_READ,
     .address_at = 1,
     .quantity_at = 3,
     .quantity_min = 1,
     .quantity_max = 2000,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 5,
     .answer_rule = MBSC_PDU_ANS_BITS},
    /* 6.3: fc, start, quantity 1..125 -> fc, byte count, registers */
    {.code = 0x03,
     .mei = NO_MEI,
     .name = "read holding registers",
     .table = MBSC_PDU_HOLDING_REGISTERS,
     .access = MBSC_PDU_READ,
     .address_at = 1,
     .quantity_at = 3,
     .quantity_min = 1,
     .quantity_max = 125,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 5,
     .answer_rule = MBSC_PDU_ANS_REGISTERS},
    /* 6.4: as 6.3, for input registers */
    {.code = 0x04,
     .mei = NO_MEI,
     .name = "read input registers",
     .table = MBSC_PDU_INPUT_REGISTERS,
     .access = MBSC_PDU_READ,
     .address_at = 1,
     .quantity_at = 3,
     .quantity_min = 1,
     .quantity_max = 125,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 5,
     .answer_rule = MBSC_PDU_ANS_REGISTERS},
    /* 6.5: fc, address, 0xFF00 or 0x0000 -> the echo */
    {.code = 0x05,
     .mei = NO_MEI,
     .name = "write single coil",
     .table = MBSC_PDU_COILS,
     .access = MBSC_PDU_WRITE,
     .address_at = 1,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 5,
     .answer_rule = MBSC_PDU_ANS_ECHO},
    /* 6.6: fc, address, value -> the echo */
    {.code = 0x06,
     .mei = NO_MEI,
     .name = "write single register",
     .table = MBSC_PDU_HOLDING_REGISTERS,
     .access = MBSC_PDU_WRITE,
     .address_at = 1,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 5,
     .answer_rule = MBSC_PDU_ANS_ECHO},
    /* 6.7: fc -> fc, output data (serial line only) */
    {.code = 0x07,
     .mei = NO_MEI,
     .name = "read exception status",
     .access = MBSC_PDU_OTHER,
     .serial_only = 1,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 1,
     .answer_rule = MBSC_PDU_ANS_FIXED,
     .answer_bytes = 2},
    /* 6.8: fc, sub-function, data words -> the same sub-function, data words */
    {.code = 0x08,
     .mei = NO_MEI,
     .name = "diagnostics",
     .access = MBSC_PDU_OTHER,
     .serial_only = 1,
     .request_rule = MBSC_PDU_REQ_DIAGNOSTIC,
     .answer_rule = MBSC_PDU_ANS_DIAGNOSTIC},
    /* 6.9: fc -> fc, status, event count (serial line only) */
    {.code = 0x0B,
     .mei = NO_MEI,
     .name = "get comm event counter",
     .access = MBSC_PDU_OTHER,
     .serial_only = 1,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 1,
     .answer_rule = MBSC_PDU_ANS_FIXED,
     .answer_bytes = 5},
    /* 6.10: fc -> fc, byte count >= 6, status, event count, message count, events */
    {.code = 0x0C,
     .mei = NO_MEI,
     .name = "get comm event log",
     .access = MBSC_PDU_OTHER,
     .serial_only = 1,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 1,
     .answer_rule = MBSC_PDU_ANS_COUNTED,
     .answer_bytes = 6},
    /* 6.11: fc, start, quantity 1..1968, byte count, coil bytes -> fc, start, quantity */
    {.code = 0x0F,
     .mei = NO_MEI,
     .name = "write multiple coils",
     .table = MBSC_PDU_COILS,
     .access = MBSC_PDU_WRITE,
     .address_at = 1,
     .quantity_at = 3,
     .quantity_min = 1,
     .quantity_max = 1968,
     .request_rule = MBSC_PDU_REQ_COUNTED,
     .answer_rule = MBSC_PDU_ANS_ECHO_RANGE},
    /* 6.12: fc, start, quantity 1..123, byte count, registers -> fc, start, quantity */
    {.code = 0x10,
     .mei = NO_MEI,
     .name = "write multiple registers",
     .table = MBSC_PDU_HOLDING_REGISTERS,
     .access = MBSC_PDU_WRITE,
     .address_at = 1,
     .quantity_at = 3,
     .quantity_min = 1,
     .quantity_max = 123,
     .request_rule = MBSC_PDU_REQ_COUNTED,
     .answer_rule = MBSC_PDU_ANS_ECHO_RANGE},
    /* 6.13: fc -> fc, byte count, device-specific data (serial line only) */
    {.code = 0x11,
     .mei = NO_MEI,
     .name = "report server id",
     .access = MBSC_PDU_OTHER,
     .serial_only = 1,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 1,
     .answer_rule = MBSC_PDU_ANS_COUNTED,
     .answer_bytes = 1},
    /* 6.14: fc, byte count 7..245, 7-byte sub-requests -> records */
    {.code = 0x14,
     .mei = NO_MEI,
     .name = "read file record",
     .access = MBSC_PDU_READ,
     .request_rule = MBSC_PDU_REQ_FILE_READ,
     .answer_rule = MBSC_PDU_ANS_FILE_READ},
    /* 6.15: fc, byte count 9..251, sub-requests with data -> the echo */
    {.code = 0x15,
     .mei = NO_MEI,
     .name = "write file record",
     .access = MBSC_PDU_WRITE,
     .request_rule = MBSC_PDU_REQ_FILE_WRITE,
     .answer_rule = MBSC_PDU_ANS_ECHO},
    /* 6.16: fc, address, and-mask, or-mask -> the echo */
    {.code = 0x16,
     .mei = NO_MEI,
     .name = "mask write register",
     .table = MBSC_PDU_HOLDING_REGISTERS,
     .access = MBSC_PDU_WRITE,
     .address_at = 1,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 7,
     .answer_rule = MBSC_PDU_ANS_ECHO},
    /*
     * 6.17: fc, read start, read quantity 1..125, write start, write
     * quantity 1..121, byte count, registers -> fc, byte count, registers
     */
    {.code = 0x17,
     .mei = NO_MEI,
     .name = "read/write multiple registers",
     .table = MBSC_PDU_HOLDING_REGISTERS,
     .access = MBSC_PDU_READ_WRITE,
     .address_at = 1,
     .quantity_at = 3,
     .quantity_min = 1,
     .quantity_max = 125,
     .write_address_at = 5,
     .write_quantity_at = 7,
     .write_quantity_max = 121,
     .request_rule = MBSC_PDU_REQ_READ_WRITE,
     .answer_rule = MBSC_PDU_ANS_REGISTERS},
    /* 6.18: fc, FIFO pointer address -> fc, byte count, FIFO count <= 31, registers */
    {.code = 0x18,
     .mei = NO_MEI,
     .name = "read FIFO queue",
     .table = MBSC_PDU_HOLDING_REGISTERS,
     .access = MBSC_PDU_READ,
     .address_at = 1,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 3,
     .answer_rule = MBSC_PDU_ANS_FIFO},
    /* 6.19: fc, MEI type 0x0D, data the CANopen profile defines */
    {.code = 0x2B,
     .mei = 0x0D,
     .name = "canopen general reference",
     .access = MBSC_PDU_OTHER,
     .request_rule = MBSC_PDU_REQ_MEI_OPEN,
     .answer_rule = MBSC_PDU_ANS_MEI_OPEN},
    /* 6.21: fc, MEI type 0x0E, read device id code 1..4, object id -> objects */
    {.code = 0x2B,
     .mei = 0x0E,
     .name = "read device identification",
     .access = MBSC_PDU_OTHER,
     .request_rule = MBSC_PDU_REQ_FIXED,
     .request_bytes = 4,
     .answer_rule = MBSC_PDU_ANS_DEVICE_ID},
};

#define TABLE_LEN (sizeof table / sizeof table[0])

MBSC_API const struct mbsc_pdu_function *mbsc_pdu_function_at(size_t i)
{
    return i < TABLE_LEN ? &table[i] : NULL;
}

MBSC_API const struct mbsc_pdu_function *mbsc_pdu_lookup(const uint8_t *pdu, size_t len)
{
    size_t i;

    if (pdu == NULL || len == 0)
        return NULL;
    for (i = 0; i < TABLE_LEN; i++) {
        if (table[i].code != pdu[0])
            continue;
        if (table[i].mei == NO_MEI)
            return &table[i];
        if (len >= 2 && table[i].mei == pdu[1])
            return &table[i];
    }
    return NULL;
}

MBSC_API const char *mbsc_pdu_exception_text(uint8_t code)
{
    switch (code) {
    case MBSC_EXC_ILLEGAL_FUNCTION: return "illegal function";
    case MBSC_EXC_ILLEGAL_DATA_ADDRESS: return "illegal data address";
    case MBSC_EXC_ILLEGAL_DATA_VALUE: return "illegal data value";
    case MBSC_EXC_SERVER_DEVICE_FAILURE: return "server device failure";
    case MBSC_EXC_ACKNOWLEDGE: return "acknowledge";
    case MBSC_EXC_SERVER_DEVICE_BUSY: return "server device busy";
    case MBSC_EXC_MEMORY_PARITY_ERROR: return "memory parity error";
    case MBSC_EXC_GATEWAY_PATH_UNAVAILABLE: return "gateway path unavailable";
    case MBSC_EXC_GATEWAY_TARGET_FAILED: return "gateway target device failed to respond";
    default: return "unknown exception";
    }
}
