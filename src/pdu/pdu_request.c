/* SPDX-License-Identifier: ISC */
/*
 * pdu_request.c - is a request well formed, and which addresses does it
 * touch (mbsc/pdu.h)?
 *
 * The checks follow the state diagrams of the Modbus Application Protocol
 * Specification v1.1b3, section 6: lengths, byte counts and quantities
 * are exception 03 (illegal data value); a range of addresses that runs
 * past the last one, 0xFFFF, is exception 02 (illegal data address), as
 * is a file record number above 0x270F (6.14, 6.15).  Which addresses
 * exist is the device's to say, and who may touch them the policy's.
 * Every field is read only after the length has been checked to hold it.
 */
#include <stddef.h>

#include "internal.h"
#include "mbsc/pdu.h"

#define EXC_VALUE   MBSC_EXC_ILLEGAL_DATA_VALUE
#define EXC_ADDRESS MBSC_EXC_ILLEGAL_DATA_ADDRESS

/* The file record limits of 6.14 and 6.15. */
#define FILE_REFERENCE_TYPE 6u
#define FILE_LAST_RECORD    0x270Fu
#define FILE_SUBREQ_BYTES   7u /* type, file number, record number, record length */

/* 0x18 reads its pointer register and at most 31 queued registers after it (6.18). */
#define FIFO_MAX_COUNT 31u

static unsigned field16(const uint8_t *pdu, size_t off)
{
    return mbsc_load16_be(pdu + off);
}

/* Bytes that quantity items take in the request's data (0x0F: bits, 0x10: registers). */
static unsigned data_bytes(const struct mbsc_pdu_function *f, unsigned quantity)
{
    return f->table == MBSC_PDU_COILS ? (quantity + 7u) / 8u : 2u * quantity;
}

/* 6.14: a byte count, then sub-requests of 7 bytes. */
static uint8_t check_file_read(const uint8_t *pdu, size_t len)
{
    size_t off;

    if (len < 2 || pdu[1] < FILE_SUBREQ_BYTES || pdu[1] > 0xF5u || len != 2u + pdu[1] ||
        pdu[1] % FILE_SUBREQ_BYTES != 0)
        return EXC_VALUE;
    for (off = 2; off < len; off += FILE_SUBREQ_BYTES)
        if (pdu[off] != FILE_REFERENCE_TYPE)
            return EXC_ADDRESS;
    for (off = 2; off < len; off += FILE_SUBREQ_BYTES)
        if (field16(pdu, off + 3) > FILE_LAST_RECORD)
            return EXC_ADDRESS;
    return 0;
}

/* 6.15: a byte count, then sub-requests of 7 bytes each followed by their words. */
static uint8_t check_file_write(const uint8_t *pdu, size_t len)
{
    size_t off;

    if (len < 2 || pdu[1] < 9u || pdu[1] > 0xFBu || len != 2u + pdu[1])
        return EXC_VALUE;
    for (off = 2; off < len;) {
        size_t words;

        if (len - off < FILE_SUBREQ_BYTES)
            return EXC_VALUE;
        words = field16(pdu, off + 5);
        if (words == 0 || len - off - FILE_SUBREQ_BYTES < 2 * words)
            return EXC_VALUE;
        if (pdu[off] != FILE_REFERENCE_TYPE || field16(pdu, off + 3) > FILE_LAST_RECORD)
            return EXC_ADDRESS;
        off += FILE_SUBREQ_BYTES + 2 * words;
    }
    return 0;
}

/* The length rule of f; 0 or exception 03 (02 for file records). */
static uint8_t check_length(const struct mbsc_pdu_function *f, const uint8_t *pdu, size_t len)
{
    switch (f->request_rule) {
    case MBSC_PDU_REQ_FIXED: return len == f->request_bytes ? 0 : EXC_VALUE;
    case MBSC_PDU_REQ_COUNTED:
        /* fc, start, quantity, byte count, data */
        if (len < 6 || pdu[5] != data_bytes(f, field16(pdu, 3)) || len != 6u + pdu[5])
            return EXC_VALUE;
        return 0;
    case MBSC_PDU_REQ_READ_WRITE:
        /* fc, read start, read quantity, write start, write quantity, byte count, data */
        if (len < 10 || pdu[9] != 2u * field16(pdu, 7) || len != 10u + pdu[9])
            return EXC_VALUE;
        return 0;
    case MBSC_PDU_REQ_FILE_READ: return check_file_read(pdu, len);
    case MBSC_PDU_REQ_FILE_WRITE: return check_file_write(pdu, len);
    case MBSC_PDU_REQ_DIAGNOSTIC:
        /* fc, sub-function, one or more data words */
        return len >= 5 && (len - 3) % 2 == 0 ? 0 : EXC_VALUE;
    case MBSC_PDU_REQ_MEI_OPEN: return len >= 2 ? 0 : EXC_VALUE;
    }
    return EXC_VALUE;
}

/* A quantity within [min, max]. */
static int quantity_ok(unsigned q, unsigned min, unsigned max)
{
    return q >= min && q <= max;
}

MBSC_API uint8_t mbsc_pdu_check_request(const uint8_t *pdu, size_t len)
{
    const struct mbsc_pdu_function *f;
    struct mbsc_pdu_range r[2];
    uint8_t exc;
    int n, i;

    if (pdu == NULL || len == 0)
        return MBSC_EXC_ILLEGAL_FUNCTION;
    f = mbsc_pdu_lookup(pdu, len);
    if (f == NULL)
        return 0; /* not ours to judge: the policy or the device decides */
    exc = check_length(f, pdu, len);
    if (exc != 0)
        return exc;
    if (f->quantity_at != 0 &&
        !quantity_ok(field16(pdu, f->quantity_at), f->quantity_min, f->quantity_max))
        return EXC_VALUE;
    if (f->write_quantity_at != 0 &&
        !quantity_ok(field16(pdu, f->write_quantity_at), 1, f->write_quantity_max))
        return EXC_VALUE;
    /* 6.5: the only two values of a coil. */
    if (f->code == 0x05 && field16(pdu, 3) != 0xFF00u && field16(pdu, 3) != 0)
        return EXC_VALUE;
    /* 6.21: read device id codes 01 (basic) to 04 (one object). */
    if (f->answer_rule == MBSC_PDU_ANS_DEVICE_ID && (pdu[2] < 1 || pdu[2] > 4))
        return EXC_VALUE;
    if (f->answer_rule == MBSC_PDU_ANS_FIFO)
        return 0; /* its range is clamped to the table, never "past the end" */
    n = mbsc_pdu_ranges(pdu, len, r);
    for (i = 0; i < n; i++)
        if ((uint32_t)r[i].first + r[i].count > 0x10000u)
            return EXC_ADDRESS;
    return 0;
}

MBSC_API int mbsc_pdu_ranges(const uint8_t *pdu, size_t len, struct mbsc_pdu_range out[2])
{
    const struct mbsc_pdu_function *f = mbsc_pdu_lookup(pdu, len);
    size_t need;

    if (f == NULL || f->table == MBSC_PDU_NO_TABLE || out == NULL)
        return 0;
    need = (size_t)(f->quantity_at > f->address_at ? f->quantity_at : f->address_at) + 2;
    if (f->write_quantity_at != 0)
        need = (size_t)f->write_quantity_at + 2;
    if (len < need)
        return -1;
    out[0].table = f->table;
    out[0].access = f->access == MBSC_PDU_WRITE ? MBSC_PDU_WRITE : MBSC_PDU_READ;
    out[0].first = field16(pdu, f->address_at);
    if (f->quantity_at != 0)
        out[0].count = field16(pdu, f->quantity_at);
    else if (f->answer_rule == MBSC_PDU_ANS_FIFO)
        out[0].count = 0x10000u - out[0].first < 1u + FIFO_MAX_COUNT ? 0x10000u - out[0].first
                                                                     : 1u + FIFO_MAX_COUNT;
    else
        out[0].count = 1;
    if (f->access != MBSC_PDU_READ_WRITE)
        return 1;
    out[1].table = f->table;
    out[1].access = MBSC_PDU_WRITE;
    out[1].first = field16(pdu, f->write_address_at);
    out[1].count = field16(pdu, f->write_quantity_at);
    return 2;
}

MBSC_API int mbsc_pdu_subfunction(const uint8_t *pdu, size_t len)
{
    if (pdu == NULL || len < 2)
        return -1;
    if (pdu[0] == 0x08)
        return len >= 3 ? (int)field16(pdu, 1) : -1;
    if (pdu[0] == 0x2B)
        return pdu[1];
    return -1;
}
