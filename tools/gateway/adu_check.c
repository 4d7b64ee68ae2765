/* SPDX-License-Identifier: ISC */
/*
 * adu_check.c - the Modbus checks of the gateway, before a request leaves
 * it and before an answer goes back: the library's function table
 * (mbsc/pdu.h), the same one the secure slave and the policy use, so that
 * the PLC sees nothing the secure slave would refuse and a master gets
 * the same exception from either.
 *
 * Requests: lengths, byte counts and quantities of every function the
 * table knows (exception 03, or 02 for a range past 0xFFFF); codes it does
 * not know pass as they are, if the policy allows them.  Addresses are the
 * PLC's to check (it answers 02), and the policy's.
 *
 * Answers: the same unit id as the request, then the table's rule for the
 * request's function (mbsc_pdu_check_answer).  Anything else is dropped,
 * never forwarded.
 */
#include <string.h>

#include "gw.h"

size_t gw_adu_length(const uint8_t *hdr)
{
    return mbsc_adu_length(hdr);
}

uint8_t gw_check_request(const uint8_t *adu, size_t len)
{
    if (len <= GW_MBAP)
        return 0;
    return mbsc_pdu_check_request(adu + GW_MBAP, len - GW_MBAP);
}

size_t gw_exception(const uint8_t *req, uint8_t code, uint8_t out[9])
{
    return mbsc_adu_exception(req, code, out);
}

unsigned gw_first_address(const uint8_t *adu, size_t len)
{
    return len >= GW_MBAP + 3 ? (unsigned)adu[GW_MBAP + 1] << 8 | adu[GW_MBAP + 2] : 0;
}

const char *gw_check_answer(const uint8_t *req, size_t req_len, const uint8_t *ans, size_t ans_len)
{
    if (ans_len <= GW_MBAP || gw_adu_length(ans) != ans_len)
        return "malformed MBAP header";
    if (ans[6] != req[6])
        return "unit id differs from the request's";
    return mbsc_pdu_check_answer(req + GW_MBAP, req_len - GW_MBAP, ans + GW_MBAP,
                                 ans_len - GW_MBAP);
}
