/* SPDX-License-Identifier: ISC */
/*
 * adu.c - the Modbus/TCP framing around a PDU (mbsc/pdu.h).
 *
 * Modbus Messaging on TCP/IP Implementation Guide v1.0b, section 3.1.3:
 * the MBAP header is transaction id (2 bytes), protocol id (2, always 0),
 * length (2) and unit id (1); the length field counts the unit id and the
 * PDU, that is every byte after itself.  A PDU is at most 253 bytes (MAP
 * 4.1), so the length field is 2 (unit id and function code) to 254.
 */
#include <string.h>

#include "internal.h"
#include "mbsc/pdu.h"

MBSC_API size_t mbsc_adu_length(const uint8_t header[MBSC_MBAP_LENGTH_END])
{
    unsigned field;

    if (header == NULL || mbsc_load16_be(header + 2) != 0)
        return 0;
    field = mbsc_load16_be(header + 4);
    if (field < 2 || field > 1u + MBSC_PDU_MAX)
        return 0;
    return MBSC_MBAP_LENGTH_END + field;
}

MBSC_API size_t mbsc_adu_exception(const uint8_t *req, uint8_t code,
                                   uint8_t out[MBSC_EXCEPTION_ADU_BYTES])
{
    /* The request's transaction id, protocol 0, length 3: unit, fc | 0x80, code. */
    memcpy(out, req, 2);
    mbsc_store16_be(out + 2, 0);
    mbsc_store16_be(out + 4, 3);
    out[6] = req[6];
    out[7] = (uint8_t)(req[7] | 0x80u);
    out[8] = code;
    return MBSC_EXCEPTION_ADU_BYTES;
}
