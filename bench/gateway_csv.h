/* SPDX-License-Identifier: ISC */
/*
 * gateway_csv.h - the figures of make bench-gateway, read back for the
 * plot's round-trip panel.  mbsc-gateway-bench --csv writes them in the
 * same long format as mbsc-bench --csv (csv.h), one path per "cipher":
 *     gateway-direct   a plain libmodbus client straight to the PLC
 *     gateway-one      an mbsc master through one server gateway
 *     gateway-two      plain client -> client gateway -> server gateway
 * with rtt_us_p50 and rtt_us_p99 each (and requests/s rows, rps_inflight_N,
 * not plotted).
 */
#ifndef MBSC_BENCH_GATEWAY_CSV_H
#define MBSC_BENCH_GATEWAY_CSV_H

#include <stddef.h>

#include "results.h"

#define BENCH_GW_DIRECT "gateway-direct"
#define BENCH_GW_ONE    "gateway-one"
#define BENCH_GW_TWO    "gateway-two"

/* Add the rows of the file at path to r.  0, or -1 with why (naming the
 * file, the line and the fix) when it cannot be read, is not such a file,
 * or lacks the median round trip of one of the three paths. */
int bench_gateway_csv_read(const char *path, struct bench_results *r, char *why, size_t why_len);

#endif /* MBSC_BENCH_GATEWAY_CSV_H */
