/* SPDX-License-Identifier: ISC */
/*
 * adu_check.h - the Modbus checks of the gateway: requests before they
 * leave it, answers before they go back (the library's function table,
 * mbsc/pdu.h, the same one secure_slave and the policy use).
 */
#ifndef MBSC_GATEWAY_ADU_CHECK_H
#define MBSC_GATEWAY_ADU_CHECK_H

#include <stddef.h>
#include <stdint.h>

/*
 * A request whose MBAP header is good (mbsc_adu_length): 0 if its PDU is
 * well formed for its function (or the table does not know the function),
 * otherwise the exception code to answer with (03, or 02).
 */
uint8_t gw_check_request(const uint8_t *adu, size_t len);

/*
 * An answer from upstream to the request req: NULL if it is a well-formed
 * answer to that request (same unit id, the function code or its
 * exception, the size that follows from the request), else what is wrong.
 */
const char *gw_check_answer(const uint8_t *req, size_t req_len, const uint8_t *ans, size_t ans_len);

/* First address the PDU of adu names (0 when it names none), for logs. */
unsigned gw_first_address(const uint8_t *adu, size_t len);

#endif /* MBSC_GATEWAY_ADU_CHECK_H */
