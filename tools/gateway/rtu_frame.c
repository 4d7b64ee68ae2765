/* SPDX-License-Identifier: ISC */
/*
 * rtu_frame.c - Modbus RTU frames (rtu_frame.h).
 *
 * An answer's length is worked out from the request and the answer's
 * first bytes with the library's function table (mbsc/pdu.h), so that the
 * gateway can take an answer as soon as its last byte is in, instead of
 * waiting for the silence that ends it on the wire: the host sees serial
 * bytes in bursts (a USB adapter hands them over every few milliseconds),
 * so a silence it observes says little about the line.
 */
#include <string.h>

#include <mbsc.h>

#include "rtu_frame.h"

uint16_t gw_rtu_crc16(const uint8_t *p, size_t len)
{
    /* Serial Line 6.2.2: shift right, XOR with 0xA001 when a 1 falls out. */
    uint16_t crc = 0xFFFFu;
    size_t i;
    unsigned b;

    for (i = 0; i < len; i++) {
        crc ^= p[i];
        for (b = 0; b < 8; b++)
            crc = (crc & 1u) ? (uint16_t)((crc >> 1) ^ 0xA001u) : (uint16_t)(crc >> 1);
    }
    return crc;
}

int gw_rtu_crc_ok(const uint8_t *frame, size_t len)
{
    uint16_t crc;

    if (len < GW_RTU_MIN)
        return 0;
    crc = gw_rtu_crc16(frame, len - GW_RTU_CRC_BYTES);
    return frame[len - 2] == (uint8_t)(crc & 0xFFu) && frame[len - 1] == (uint8_t)(crc >> 8);
}

size_t gw_rtu_from_adu(const uint8_t *adu, size_t len, uint8_t *out)
{
    /* Unit id and PDU: the ADU from its seventh byte on. */
    size_t n = len - (MBSC_MBAP_BYTES - 1u);
    uint16_t crc;

    memcpy(out, adu + MBSC_MBAP_BYTES - 1u, n);
    crc = gw_rtu_crc16(out, n);
    out[n] = (uint8_t)(crc & 0xFFu);
    out[n + 1] = (uint8_t)(crc >> 8);
    return n + GW_RTU_CRC_BYTES;
}

size_t gw_rtu_to_adu(const uint8_t *frame, size_t len, uint16_t tid, uint8_t *out)
{
    size_t n = len - GW_RTU_CRC_BYTES; /* unit id and PDU */

    out[0] = (uint8_t)(tid >> 8);
    out[1] = (uint8_t)tid;
    out[2] = 0;
    out[3] = 0;
    out[4] = (uint8_t)(n >> 8);
    out[5] = (uint8_t)n;
    memcpy(out + MBSC_MBAP_BYTES - 1u, frame, n);
    return n + MBSC_MBAP_BYTES - 1u;
}

/* 6.21: the header, then (id, length, value) objects; 0 until the last object's length is in. */
static long device_id_length(const uint8_t *a, size_t have)
{
    /* a: unit id, then the PDU: fc, MEI, code, conformity, more, next id, count. */
    size_t off = 8, i;

    if (have < off)
        return 0;
    for (i = 0; i < a[7]; i++) {
        if (have < off + 2)
            return 0;
        off += 2u + a[off + 1];
        if (off > GW_RTU_MAX - GW_RTU_CRC_BYTES)
            return GW_RTU_ANSWER_UNKNOWN; /* cannot be; let the silence end it */
    }
    return (long)(off + GW_RTU_CRC_BYTES);
}

long gw_rtu_answer_length(const uint8_t *req, size_t req_len, const uint8_t *ans, size_t have)
{
    const struct mbsc_pdu_function *f;
    /* Unit id and the counted bytes' header: fc, byte count. */
    const size_t head = 3;

    if (have < 2 || req_len == 0)
        return 0;
    if (ans[1] == (uint8_t)(req[0] | 0x80u))
        return 5; /* unit id, fc | 0x80, exception code, CRC */
    if (ans[1] != req[0])
        return GW_RTU_ANSWER_UNKNOWN;
    f = mbsc_pdu_lookup(req, req_len);
    if (f == NULL)
        return GW_RTU_ANSWER_UNKNOWN;
    switch (f->answer_rule) {
    case MBSC_PDU_ANS_BITS:
    case MBSC_PDU_ANS_REGISTERS:
    case MBSC_PDU_ANS_COUNTED:
    case MBSC_PDU_ANS_FILE_READ: return have < head ? 0 : (long)(head + ans[2] + GW_RTU_CRC_BYTES);
    case MBSC_PDU_ANS_ECHO: return (long)(1u + req_len + GW_RTU_CRC_BYTES);
    case MBSC_PDU_ANS_ECHO_RANGE: return (long)(1u + 5u + GW_RTU_CRC_BYTES);
    case MBSC_PDU_ANS_FIXED: return (long)(1u + f->answer_bytes + GW_RTU_CRC_BYTES);
    case MBSC_PDU_ANS_FIFO:
        /* fc, then a 16-bit byte count of what follows it. */
        return have < 4 ? 0 : (long)(4u + ((unsigned)ans[2] << 8 | ans[3]) + GW_RTU_CRC_BYTES);
    case MBSC_PDU_ANS_DEVICE_ID: return device_id_length(ans, have);
    case MBSC_PDU_ANS_DIAGNOSTIC:
    case MBSC_PDU_ANS_MEI_OPEN: break;
    }
    return GW_RTU_ANSWER_UNKNOWN;
}

int64_t gw_rtu_char_ns(unsigned baud, unsigned bits)
{
    return baud == 0 ? 0 : (int64_t)bits * 1000000000 / (int64_t)baud;
}

int64_t gw_rtu_t35_ns(unsigned baud, unsigned bits)
{
    /* Above 19200 baud the timers would be too short for a host to keep (2.5.1.1). */
    if (baud > 19200)
        return 1750000;
    return baud == 0 ? 0 : (int64_t)bits * 7 * 1000000000 / (2 * (int64_t)baud);
}
