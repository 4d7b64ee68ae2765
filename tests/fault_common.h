/* SPDX-License-Identifier: ISC */
/*
 * fault_common.h - what the fault suite's PLC (fault_plc.c) and SCADA
 * client (fault_scada.c) agree on (tests/faults.sh, docs/faults.md).
 *
 * Holding registers 0-1 hold the SCADA's sequence counter, a 32-bit value
 * with the high word first; only function 16 writes it, each write with a
 * new value.  Holding and input registers FAULT_TAG_FIRST onwards hold
 * constant data that depends on the address, so that a read's answer
 * shows which read it was made for.
 */
#ifndef MBSC_TEST_FAULT_COMMON_H
#define MBSC_TEST_FAULT_COMMON_H

#include <stdint.h>
#include <time.h>

#define FAULT_COUNTER_ADDR 0
#define FAULT_TAG_FIRST    100
#define FAULT_TAG_COUNT    100
#define FAULT_REGISTERS    (FAULT_TAG_FIRST + FAULT_TAG_COUNT)

/* The constant in register a of the tag area (holding and input registers differ). */
static inline uint16_t fault_tag(unsigned a, int input)
{
    uint32_t x = (uint32_t)a * 2654435761u ^ (input ? 0x5A5A5A5Au : 0xC3C3C3C3u);

    return (uint16_t)(x >> 16);
}

/* CLOCK_REALTIME in milliseconds: the time base every log of the suite shares. */
static inline long long fault_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif /* MBSC_TEST_FAULT_COMMON_H */
