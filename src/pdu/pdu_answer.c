/* SPDX-License-Identifier: ISC */
/*
 * pdu_answer.c - is this a well-formed answer to that request
 * (mbsc/pdu.h)?
 *
 * A gateway must never pass on an answer that does not belong to its
 * request: a device that answers late, or a broken one, would otherwise
 * hand a master data it did not ask for.  The response layouts are those
 * of the Modbus Application Protocol Specification v1.1b3, section 6; an
 * exception response is the function code with bit 7 set and one
 * exception code (section 7).
 */
#include <stddef.h>
#include <string.h>

#include "internal.h"
#include "mbsc/pdu.h"

#define FIFO_MAX_COUNT      31u
#define FILE_REFERENCE_TYPE 6u

static const char *exact(size_t got, size_t want)
{
    return got == want ? NULL : "answer length does not match the request";
}

/* fc, byte count, then exactly that many bytes, which must be want (0: any). */
static const char *counted(const uint8_t *a, size_t an, unsigned want)
{
    if (an < 2)
        return "answer too short for its byte count";
    if (want != 0 && a[1] != want)
        return "byte count does not match the quantity asked for";
    return exact(an, 2u + a[1]);
}

/* 6.14: records of (length, reference type 6, length - 1 bytes of words). */
static const char *file_records(const uint8_t *a, size_t an)
{
    size_t off;
    const char *bad = counted(a, an, 0);

    if (bad != NULL)
        return bad;
    for (off = 2; off < an; off += 1u + a[off]) {
        if (a[off] < 1 || (a[off] - 1u) % 2 != 0 || an - off - 1 < a[off])
            return "malformed file record in the answer";
        if (a[off + 1] != FILE_REFERENCE_TYPE)
            return "file record of another reference type than 6";
    }
    return NULL;
}

/* 6.18: fc, byte count (16 bits), FIFO count (16 bits, <= 31), the registers. */
static const char *fifo(const uint8_t *a, size_t an)
{
    unsigned count;

    if (an < 5)
        return "answer too short for a FIFO queue";
    count = mbsc_load16_be(a + 3);
    if (count > FIFO_MAX_COUNT || mbsc_load16_be(a + 1) != 2u + 2u * count)
        return "FIFO byte count and count do not agree";
    return exact(an, 3u + mbsc_load16_be(a + 1));
}

/* 6.8: the request's sub-function, then data words; sub-function 0 echoes. */
static const char *diagnostic(const uint8_t *q, size_t qn, const uint8_t *a, size_t an)
{
    if (an < 3 || (an - 3) % 2 != 0)
        return "malformed diagnostics answer";
    if (a[1] != q[1] || a[2] != q[2])
        return "sub-function differs from the request's";
    if (mbsc_load16_be(q + 1) == 0 && (an != qn || memcmp(a, q, qn) != 0))
        return "return query data is not the echo of the request";
    return NULL;
}

/*
 * 6.21: fc, MEI 0x0E, read device id code, conformity level, more follows
 * (0x00 or 0xFF), next object id, number of objects, then each object as
 * id, length, value.
 */
static const char *device_id(const uint8_t *q, const uint8_t *a, size_t an)
{
    size_t off = 7, i;

    if (an < 7 || a[1] != q[1] || a[2] != q[2])
        return "malformed device identification answer";
    if (a[4] != 0x00 && a[4] != 0xFF)
        return "device identification 'more follows' is neither 00 nor FF";
    for (i = 0; i < a[6]; i++) {
        if (an - off < 2 || an - off - 2 < a[off + 1])
            return "device identification objects overrun the answer";
        off += 2u + a[off + 1];
    }
    return exact(an, off);
}

MBSC_API const char *mbsc_pdu_check_answer(const uint8_t *q, size_t qn, const uint8_t *a, size_t an)
{
    const struct mbsc_pdu_function *f;

    if (q == NULL || a == NULL || qn == 0 || an == 0)
        return "empty request or answer";
    if (a[0] == (uint8_t)(q[0] | 0x80u))
        return an == 2 && a[1] != 0 ? NULL : "malformed exception answer";
    if (a[0] != q[0])
        return "function code differs from the request's";
    f = mbsc_pdu_lookup(q, qn);
    if (f == NULL)
        return NULL; /* nothing more is known about it */
    if (mbsc_pdu_check_request(q, qn) != 0)
        return "the request itself is malformed";
    switch (f->answer_rule) {
    case MBSC_PDU_ANS_BITS: return counted(a, an, (mbsc_load16_be(q + f->quantity_at) + 7u) / 8u);
    case MBSC_PDU_ANS_REGISTERS: return counted(a, an, 2u * mbsc_load16_be(q + f->quantity_at));
    case MBSC_PDU_ANS_ECHO:
        return an == qn && memcmp(a, q, qn) == 0 ? NULL : "answer is not the echo of the request";
    case MBSC_PDU_ANS_ECHO_RANGE:
        return an == 5 && memcmp(a, q, 5) == 0 ? NULL
                                               : "answer does not repeat the start and quantity";
    case MBSC_PDU_ANS_FIXED: return exact(an, f->answer_bytes);
    case MBSC_PDU_ANS_COUNTED:
        if (an >= 2 && a[1] < f->answer_bytes)
            return "byte count below the function's minimum";
        return counted(a, an, 0);
    case MBSC_PDU_ANS_FIFO: return fifo(a, an);
    case MBSC_PDU_ANS_FILE_READ: return file_records(a, an);
    case MBSC_PDU_ANS_DIAGNOSTIC: return diagnostic(q, qn, a, an);
    case MBSC_PDU_ANS_DEVICE_ID: return device_id(q, a, an);
    case MBSC_PDU_ANS_MEI_OPEN: return an >= 2 && a[1] == q[1] ? NULL : "MEI type differs";
    }
    return "unknown answer rule";
}
