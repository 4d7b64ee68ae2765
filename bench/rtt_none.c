/* SPDX-License-Identifier: ISC */
/*
 * rtt_none.c - the round-trip group when mbsc is built without libmodbus
 * (./configure --without-libmodbus): there is nothing to talk Modbus with,
 * so the RTT rows are left out and the report says why.
 */
#include <stdio.h>

#include "bench.h"

const char *bench_rtt_libmodbus_version(void)
{
    return "not used (built without libmodbus)";
}

void bench_rtt(struct bench_ctx *ctx)
{
    snprintf(ctx->rtt_note, sizeof ctx->rtt_note,
             "round trips skipped: mbsc was built without libmodbus");
}
