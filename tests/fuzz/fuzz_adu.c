/* SPDX-License-Identifier: ISC */
/*
 * fuzz_adu.c - mbsc_modbus_check_adu (src/modbus/adu.c) fed arbitrary
 * payloads, checked against the rule as docs/design.md and mbsc/modbus.h state
 * it: 8 to MBSC_MODBUS_MAX_ADU (260) bytes, protocol id (bytes 2-3) zero,
 * and the MBAP length field (bytes 4-5, big-endian) equal to the number of
 * bytes after it.  Anything else is MBSC_ERR_BAD_ADU.
 */
#include "fuzz_common.h"
#include "mbsc/modbus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int ok = size >= 8 && size <= 260 && data[2] == 0 && data[3] == 0 &&
             (size_t)(data[4] << 8 | data[5]) == size - 6;
    int rc = mbsc_modbus_check_adu(data, size);

    FUZZ_ASSERT(rc == (ok ? MBSC_OK : MBSC_ERR_BAD_ADU), "check_adu(%zu bytes) = %d, expected %s",
                size, rc, ok ? "OK" : "BAD_ADU");
    return 0;
}
