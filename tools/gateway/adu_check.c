/* SPDX-License-Identifier: ISC */
/*
 * adu_check.c - the Modbus checks of the gateway, before a request leaves
 * it and before an answer goes back.
 *
 * Requests: the byte counts and quantities of the functions libmodbus
 * implements are checked by the adapter's own rules (src/modbus/adu.c,
 * mb_check_request), so that the PLC sees nothing the secure slave would
 * refuse.  The gateway has no mapping: address ranges are the PLC's to
 * check (it answers 02), and the policy's.  Other function codes (0x07,
 * 0x08, 0x2B...) pass as they are, if the policy allows them.
 *
 * Answers (Modbus Application Protocol v1.1b3, section 6): the same unit
 * id as the request; the request's function code, or it with bit 7 set
 * and one exception code; for the functions whose answer size follows
 * from the request, that size.  Anything else is dropped, never forwarded.
 */
#include <string.h>

#include "gw.h"
#include "modbus/modbus_internal.h"

size_t gw_adu_length(const uint8_t *hdr)
{
    unsigned field = mbsc_load16_be(hdr + 4);

    /* The length field counts the unit id and the PDU: 2..254. */
    if (mbsc_load16_be(hdr + 2) != 0 || field < 2 || field > GW_MAX_ADU - 6)
        return 0;
    return 6u + field;
}

static int adapter_knows(uint8_t fc)
{
    switch (fc) {
    case 0x01:
    case 0x02:
    case 0x03:
    case 0x04:
    case 0x05:
    case 0x06:
    case 0x0F:
    case 0x10:
    case 0x11:
    case 0x16:
    case 0x17: return 1;
    default: return 0;
    }
}

uint8_t gw_check_request(const uint8_t *adu, size_t len)
{
    modbus_mapping_t whole;

    if (len <= GW_MBAP || !adapter_knows(adu[GW_MBAP]))
        return 0;
    /* Every address exists as far as the gateway knows: the PLC decides. */
    memset(&whole, 0, sizeof whole);
    whole.nb_registers = 0x10000;
    return mb_check_request(adu, len, &whole);
}

size_t gw_exception(const uint8_t *req, uint8_t code, uint8_t out[9])
{
    return mb_exception_reply(req, code, out);
}

unsigned gw_first_address(const uint8_t *adu, size_t len)
{
    return len >= GW_MBAP + 3 ? mbsc_load16_be(adu + GW_MBAP + 1) : 0;
}

/* The answer's PDU must be exactly want bytes. */
static const char *want_size(size_t got, size_t want)
{
    return got == want ? NULL : "answer length does not match the request";
}

const char *gw_check_answer(const uint8_t *req, size_t req_len, const uint8_t *ans, size_t ans_len)
{
    const uint8_t *q = req + GW_MBAP, *a = ans + GW_MBAP;
    size_t qn = req_len - GW_MBAP, an;
    unsigned qty;

    if (ans_len <= GW_MBAP || gw_adu_length(ans) != ans_len)
        return "malformed MBAP header";
    an = ans_len - GW_MBAP;
    if (ans[6] != req[6])
        return "unit id differs from the request's";
    if (a[0] == (q[0] | 0x80u))
        return an == 2 ? NULL : "malformed exception answer";
    if (a[0] != q[0])
        return "function code differs from the request's";
    switch (q[0]) {
    case 0x01:
    case 0x02: /* fc, byte count, ceil(quantity / 8) bytes */
        qty = mbsc_load16_be(q + 3);
        if (an < 2 || a[1] != (qty + 7) / 8)
            return "byte count does not match the quantity asked for";
        return want_size(an, 2u + a[1]);
    case 0x03:
    case 0x04: /* fc, byte count, 2 * quantity bytes */
    case 0x17: /* the same, for the read range */
        qty = mbsc_load16_be(q + 3);
        if (an < 2 || a[1] != 2 * qty)
            return "byte count does not match the quantity asked for";
        return want_size(an, 2u + a[1]);
    case 0x05:
    case 0x06: /* an echo of the request */
    case 0x16:
        if (an != qn || memcmp(a, q, qn) != 0)
            return "answer is not the echo of the request";
        return NULL;
    case 0x0F:
    case 0x10: /* fc, start, quantity, as asked */
        if (an != 5 || memcmp(a, q, 5) != 0)
            return "answer does not repeat the start and quantity";
        return NULL;
    default: return NULL;
    }
}
