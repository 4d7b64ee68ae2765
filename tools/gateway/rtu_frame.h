/* SPDX-License-Identifier: ISC */
/*
 * rtu_frame.h - Modbus RTU frames (rtu_frame.c): the CRC, a Modbus/TCP
 * request turned into the frame a serial line carries and an answer
 * turned back, and how long an answer will be.
 *
 * Source: MODBUS over Serial Line Specification and Implementation Guide
 * v1.02 (Modbus Organization, 2006), 2.5.1 (the RTU frame: address,
 * function code and data, then the CRC low byte first) and 6.2.2 (the
 * CRC-16 with polynomial 0xA001 and initial value 0xFFFF).  An RTU frame
 * is the unit id and the PDU of a Modbus/TCP ADU, without the MBAP
 * header's first six bytes, with two CRC bytes after it.
 *
 * Nothing here allocates or keeps state.
 */
#ifndef MBSC_GATEWAY_RTU_FRAME_H
#define MBSC_GATEWAY_RTU_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define GW_RTU_CRC_BYTES 2u
#define GW_RTU_MIN       4u   /* unit id, function code, CRC: the shortest frame */
#define GW_RTU_MAX       256u /* unit id, a PDU of at most 253 bytes, CRC */

/* GW_RTU_ANSWER_UNKNOWN: nothing in the frame says where it ends (its end is silence). */
#define GW_RTU_ANSWER_UNKNOWN (-1)

/* The CRC-16 of Modbus over p[0..len), as the number (sent low byte first). */
uint16_t gw_rtu_crc16(const uint8_t *p, size_t len);

/* Whether frame[0..len) ends with the right CRC (len >= GW_RTU_MIN). */
int gw_rtu_crc_ok(const uint8_t *frame, size_t len);

/*
 * The RTU frame of the Modbus/TCP ADU adu[0..len) (its MBAP header
 * checked) into out, which has room for GW_RTU_MAX bytes; returns its
 * length.
 */
size_t gw_rtu_from_adu(const uint8_t *adu, size_t len, uint8_t *out);

/*
 * The Modbus/TCP ADU of the RTU frame[0..len) (its CRC checked by the
 * caller) with transaction id tid, into out (MBSC_ADU_MAX bytes); returns
 * its length.
 */
size_t gw_rtu_to_adu(const uint8_t *frame, size_t len, uint16_t tid, uint8_t *out);

/*
 * How long, CRC included, the RTU answer to the request PDU req[0..req_len)
 * is, judging by the first have bytes of it, ans (unit id first): its
 * length; 0 when more bytes are needed to tell; GW_RTU_ANSWER_UNKNOWN when
 * the frame does not say (a function the library's table does not know, a
 * function code that is not the request's, diagnostics).  An exception
 * answer is five bytes.
 */
long gw_rtu_answer_length(const uint8_t *req, size_t req_len, const uint8_t *ans, size_t have);

/*
 * The time one character takes on the wire, in nanoseconds, at baud with
 * bits bits per character (start bit, 8 data bits, parity bit if any, stop
 * bits: 11 with 8E1, 10 with 8N1).
 */
int64_t gw_rtu_char_ns(unsigned baud, unsigned bits);

/*
 * t3.5, the silence between two frames (2.5.1.1): 3.5 characters, and a
 * fixed 1.75 ms above 19200 baud.
 */
int64_t gw_rtu_t35_ns(unsigned baud, unsigned bits);

#endif /* MBSC_GATEWAY_RTU_FRAME_H */
