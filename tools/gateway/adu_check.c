/* SPDX-License-Identifier: ISC */
/*
 * adu_check.c - the Modbus checks of the gateway (adu_check.h), before a
 * request leaves it and before an answer goes back: the library's function
 * table (mbsc/pdu.h), the same one the secure slave and the policy use, so
 * that the PLC sees nothing the secure slave would refuse and a master
 * gets the same exception from either (docs/policy.md, "The order of
 * checks").
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
#include <mbsc.h>

#include "adu_check.h"

uint8_t gw_check_request(const uint8_t *adu, size_t len)
{
    if (len <= MBSC_MBAP_BYTES)
        return 0;
    return mbsc_pdu_check_request(adu + MBSC_MBAP_BYTES, len - MBSC_MBAP_BYTES);
}

unsigned gw_first_address(const uint8_t *adu, size_t len)
{
    return len >= MBSC_MBAP_BYTES + 3
               ? (unsigned)adu[MBSC_MBAP_BYTES + 1] << 8 | adu[MBSC_MBAP_BYTES + 2]
               : 0;
}

const char *gw_check_answer(const uint8_t *req, size_t req_len, const uint8_t *ans, size_t ans_len)
{
    if (ans_len <= MBSC_MBAP_BYTES || mbsc_adu_length(ans) != ans_len)
        return "malformed MBAP header";
    if (ans[6] != req[6])
        return "unit id differs from the request's";
    return mbsc_pdu_check_answer(req + MBSC_MBAP_BYTES, req_len - MBSC_MBAP_BYTES,
                                 ans + MBSC_MBAP_BYTES, ans_len - MBSC_MBAP_BYTES);
}
