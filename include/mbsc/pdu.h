/* SPDX-License-Identifier: ISC */
/*
 * mbsc/pdu.h - what mbsc knows about Modbus requests and answers, in one
 * table.
 *
 * Every part of mbsc that reads a Modbus PDU - the libmodbus slave, the
 * role policy, mbsc-gateway - asks this table, so that they agree on
 * which data table a function touches, where its address and quantity
 * are, which lengths and quantities are well formed, and what its answer
 * must look like.  Sources: Modbus Application Protocol Specification
 * v1.1b3 (MAP), section 5 (function codes), section 6 (one subsection per
 * function), section 7 (exception codes); Modbus Messaging on TCP/IP
 * Implementation Guide v1.0b, section 3.1.3 (the MBAP header).
 *
 * A PDU here is the function code and its data (a Modbus/TCP ADU without
 * its 7-byte MBAP header); an ADU is the MBAP header and the PDU.  Nothing
 * here allocates, nothing depends on libmodbus, every function may be
 * called from any thread.
 *
 * The order of checks mbsc applies to a request (docs/policy.md) is:
 * framing (mbsc_adu_length), then shape (mbsc_pdu_check_request, exception
 * 03 or 02), then the role policy (exception 01), then the device (or the
 * gateway's route).
 */
#ifndef MBSC_PDU_H
#define MBSC_PDU_H

#include <stddef.h>
#include <stdint.h>

#include "mbsc/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Sizes (Implementation Guide 3.1.3, MAP 4.1) ---------------------------------- */

#define MBSC_MBAP_BYTES          7u   /* transaction id, protocol id, length, unit id */
#define MBSC_MBAP_LENGTH_END     6u   /* bytes up to and including the length field */
#define MBSC_PDU_MAX             253u /* function code and data (MAP 4.1) */
#define MBSC_ADU_MIN             (MBSC_MBAP_BYTES + 1u)           /* 8: a function code alone */
#define MBSC_ADU_MAX             (MBSC_MBAP_BYTES + MBSC_PDU_MAX) /* 260 */
#define MBSC_EXCEPTION_ADU_BYTES (MBSC_MBAP_BYTES + 2u)           /* function | 0x80, code */

/* ---- Exception codes (MAP 7) ---------------------------------------------------- */

#define MBSC_EXC_ILLEGAL_FUNCTION         0x01u
#define MBSC_EXC_ILLEGAL_DATA_ADDRESS     0x02u
#define MBSC_EXC_ILLEGAL_DATA_VALUE       0x03u
#define MBSC_EXC_SERVER_DEVICE_FAILURE    0x04u
#define MBSC_EXC_ACKNOWLEDGE              0x05u
#define MBSC_EXC_SERVER_DEVICE_BUSY       0x06u
#define MBSC_EXC_MEMORY_PARITY_ERROR      0x08u
#define MBSC_EXC_GATEWAY_PATH_UNAVAILABLE 0x0Au
#define MBSC_EXC_GATEWAY_TARGET_FAILED    0x0Bu

/* ---- The table ------------------------------------------------------------------ */

/* The four data tables of the Modbus data model (MAP 4.3). */
enum mbsc_pdu_table {
    MBSC_PDU_NO_TABLE = 0, /* diagnostics, identification, file records, FIFO... */
    MBSC_PDU_COILS = 1,
    MBSC_PDU_DISCRETE_INPUTS = 2,
    MBSC_PDU_HOLDING_REGISTERS = 3,
    MBSC_PDU_INPUT_REGISTERS = 4
};

enum mbsc_pdu_access {
    MBSC_PDU_READ = 1,
    MBSC_PDU_WRITE = 2,
    MBSC_PDU_READ_WRITE = 3, /* 0x17: reads one range and writes another */
    MBSC_PDU_OTHER = 4       /* neither: diagnostics, counters, identification */
};

/* How the request's length follows from its fields. */
enum mbsc_pdu_request_rule {
    MBSC_PDU_REQ_FIXED = 1,  /* exactly request_bytes */
    MBSC_PDU_REQ_COUNTED,    /* byte count at 5 = the quantity's bytes; data follows */
    MBSC_PDU_REQ_READ_WRITE, /* 0x17: byte count at 9 = 2 x write quantity */
    MBSC_PDU_REQ_FILE_READ,  /* 0x14: byte count, then 7-byte sub-requests */
    MBSC_PDU_REQ_FILE_WRITE, /* 0x15: byte count, then sub-requests with their data */
    MBSC_PDU_REQ_DIAGNOSTIC, /* 0x08: sub-function, then 16-bit data words */
    MBSC_PDU_REQ_MEI_OPEN    /* 0x2B/0x0D: MEI type, then data the MEI defines */
};

/* How the answer's length follows from the request and its own fields. */
enum mbsc_pdu_answer_rule {
    MBSC_PDU_ANS_BITS = 1,   /* byte count = ceil(quantity / 8), then the bytes */
    MBSC_PDU_ANS_REGISTERS,  /* byte count = 2 x quantity, then the registers */
    MBSC_PDU_ANS_ECHO,       /* the request, byte for byte */
    MBSC_PDU_ANS_ECHO_RANGE, /* the request's first 5 bytes: function, address, quantity */
    MBSC_PDU_ANS_FIXED,      /* exactly answer_bytes */
    MBSC_PDU_ANS_COUNTED,    /* byte count at 1 (>= answer_bytes), then that many bytes */
    MBSC_PDU_ANS_FIFO,       /* 16-bit byte count, FIFO count <= 31, the registers */
    MBSC_PDU_ANS_FILE_READ,  /* 0x14: byte count, then (length, type 6, words) records */
    MBSC_PDU_ANS_DIAGNOSTIC, /* the request's sub-function, then 16-bit data words */
    MBSC_PDU_ANS_DEVICE_ID,  /* 0x2B/0x0E: header, then (id, length, value) objects */
    MBSC_PDU_ANS_MEI_OPEN    /* 0x2B/0x0D: the request's MEI type, then any data */
};

/*
 * One public function code (MAP 5.1), or for 0x2B one MEI type.  Fields
 * that do not apply are 0.
 */
struct mbsc_pdu_function {
    uint8_t code;                /* function code */
    int16_t mei;                 /* 0x2B: the MEI type of this entry; -1 otherwise */
    const char *name;            /* "read holding registers", as in MAP 6 */
    enum mbsc_pdu_table table;   /* the data table its address and quantity name */
    enum mbsc_pdu_access access; /* what it does to that table */
    uint8_t serial_only;         /* 1: MAP marks it "serial line only" */
    /* Where the PDU holds the address and quantity (offsets from the function code). */
    uint8_t address_at, quantity_at;
    uint16_t quantity_min, quantity_max;
    /* 0x17 only: the written range. */
    uint8_t write_address_at, write_quantity_at;
    uint16_t write_quantity_max;
    enum mbsc_pdu_request_rule request_rule;
    uint8_t request_bytes; /* MBSC_PDU_REQ_FIXED */
    enum mbsc_pdu_answer_rule answer_rule;
    uint8_t answer_bytes; /* MBSC_PDU_ANS_FIXED: the length; _COUNTED: least byte count */
};

/*
 * The table entry for the request pdu[0..len), or NULL if its function
 * code is not one of the public ones this table describes (1-8, 11, 12,
 * 15-17, 20-24, 43 with MEI types 13 and 14; MAP 5.1), or len is 0.  For
 * 0x2B the MEI type byte decides, so a 0x2B request without one is NULL.
 */
MBSC_API const struct mbsc_pdu_function *mbsc_pdu_lookup(const uint8_t *pdu, size_t len);

/* Entry i of the table, in function-code order; NULL past the last. */
MBSC_API const struct mbsc_pdu_function *mbsc_pdu_function_at(size_t i);

/*
 * Whether the request pdu[0..len) is well formed for its function: 0 if it
 * is, or if the table does not know its function code (nobody but the
 * device can judge those: see mbsc_pdu_lookup); otherwise the exception
 * code to answer with (MAP 6 and the state diagrams there):
 *   03 a length, byte count or quantity out of the function's rules, a
 *      coil value other than 0x0000/0xFF00, an unknown device-id code;
 *   02 an address range that runs past 0xFFFF.
 * An empty PDU (len 0) is 01.  Addresses inside the range are the
 * device's (or the policy's) to judge.
 */
MBSC_API uint8_t mbsc_pdu_check_request(const uint8_t *pdu, size_t len);

/* One range of a data table that a request reads or writes. */
struct mbsc_pdu_range {
    enum mbsc_pdu_table table;
    enum mbsc_pdu_access access; /* MBSC_PDU_READ or MBSC_PDU_WRITE */
    uint32_t first, count;       /* count >= 1 in a well-formed request */
};

/*
 * The ranges of the four data tables that the request pdu[0..len) touches:
 * the number written to out (0: none, its function names no table range,
 * or the table does not know it; 2 for 0x17, read then write), or -1 if the
 * PDU is too short for its function's address fields.  0x18 (read FIFO
 * queue) reads the pointer register and the up to 31 registers after it.
 */
MBSC_API int mbsc_pdu_ranges(const uint8_t *pdu, size_t len, struct mbsc_pdu_range out[2]);

/*
 * The sub-function of a request: the 16-bit sub-function code of 0x08
 * (MAP 6.8), the MEI type of 0x2B (MAP 6.19-6.21), or -1 for other
 * functions and PDUs too short to hold one.
 */
MBSC_API int mbsc_pdu_subfunction(const uint8_t *pdu, size_t len);

/*
 * Whether ans[0..ans_len) is a well-formed answer to the well-formed
 * request req[0..req_len) (both PDUs): NULL if it is, otherwise what is
 * wrong, in words.  An exception answer is the request's function code
 * with bit 7 set and one exception code.  For a function the table does
 * not know, only the function code (or its exception) is checked.
 */
MBSC_API const char *mbsc_pdu_check_answer(const uint8_t *req, size_t req_len, const uint8_t *ans,
                                           size_t ans_len);

/* "illegal data address" for 0x02 and so on (MAP 7); "unknown exception" otherwise. */
MBSC_API const char *mbsc_pdu_exception_text(uint8_t code);

/* ---- Modbus/TCP ADUs -------------------------------------------------------------- */

/*
 * Length of the ADU whose first MBSC_MBAP_LENGTH_END bytes are header,
 * from its length field: MBSC_ADU_MIN to MBSC_ADU_MAX, or 0 if the header
 * cannot start a Modbus/TCP ADU (protocol id not 0, length field below 2
 * or above 254).
 */
MBSC_API size_t mbsc_adu_length(const uint8_t header[MBSC_MBAP_LENGTH_END]);

/*
 * The exception answer to the request ADU req (its transaction id, unit id
 * and function code) with code, into out; returns MBSC_EXCEPTION_ADU_BYTES.
 */
MBSC_API size_t mbsc_adu_exception(const uint8_t *req, uint8_t code,
                                   uint8_t out[MBSC_EXCEPTION_ADU_BYTES]);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_PDU_H */
