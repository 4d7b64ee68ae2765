/* SPDX-License-Identifier: ISC */
/*
 * policy_functions.c - what the policy knows about each Modbus function
 * code, in one table (Modbus Application Protocol v1.1b3, sections 5.1
 * and 6): which table a request touches and where its address and
 * quantity fields are, which codes carry a sub-function that a rule may
 * name, and which codes grant more than their name suggests when a rule
 * names them whole.  The parser and the request check both read it; no
 * other file of the policy knows a function code.
 *
 * How the policy treats the codes that reach data outside the four tables'
 * address rules:
 *
 *  - 0x08 diagnostics: the 16-bit sub-function after the code (section
 *    6.8.1) decides; 0x0001 restarts the device's communications and
 *    0x0004 takes it off the bus until then, so a whole grant is warned.
 *  - 0x2B encapsulated interface transport: the MEI type byte after the
 *    code (sections 6.19 to 6.21) decides; 0x0D carries CANopen requests,
 *    which read and write objects no table rule covers, 0x0E is read
 *    device identification.  A whole grant is warned.
 *  - 0x18 read FIFO queue (section 6.18) reads the queue of holding
 *    registers named by its FIFO pointer address, without clearing it: it
 *    is a table function, allowed by read access to that address.
 *  - 0x14 read file record and 0x15 write file record (sections 6.14,
 *    6.15) address records of files, not the tables (on many devices the
 *    files overlay the registers): only a "function" rule allows them,
 *    whole, and such a rule is warned.
 */
#include <stddef.h>

#include "policy/policy_internal.h"

#define HR POLICY_HOLDING_REGISTERS
#define R  POLICY_READ
#define W  POLICY_WRITE

/* A request with an address at byte 1 and a quantity at byte 3. */
#define RANGE(table, access)                                                                       \
    {                                                                                              \
        (table), (access), 1, 3                                                                    \
    }
/* A request that touches the one address at byte 1. */
#define ONE(table, access)                                                                         \
    {                                                                                              \
        (table), (access), 1, 0                                                                    \
    }

static const struct policy_function functions[POLICY_FUNCTION_CODES] = {
    [0x01] = {.name = "read coils", .touches = 1, .touch = {RANGE(POLICY_COILS, R)}},
    [0x02] = {.name = "read discrete inputs",
              .touches = 1,
              .touch = {RANGE(POLICY_DISCRETE_INPUTS, R)}},
    [0x03] = {.name = "read holding registers", .touches = 1, .touch = {RANGE(HR, R)}},
    [0x04] = {.name = "read input registers",
              .touches = 1,
              .touch = {RANGE(POLICY_INPUT_REGISTERS, R)}},
    [0x05] = {.name = "write single coil", .touches = 1, .touch = {ONE(POLICY_COILS, W)}},
    [0x06] = {.name = "write single register", .touches = 1, .touch = {ONE(HR, W)}},
    [0x07] = {.name = "read exception status"},
    [0x08] = {.name = "diagnostics",
              .sub_bytes = 2,
              .sub_slot = POLICY_SUB_DIAGNOSTICS,
              .sub_word = "sub-function",
              .whole_risk = "grants every diagnostics sub-function, among them 0x0001 restart "
                            "communications option and 0x0004 force listen only mode, which "
                            "take the device off the bus; name the sub-functions the role "
                            "needs, e.g. 'function 0x08:0x00' (return query data)"},
    [0x0B] = {.name = "get comm event counter"},
    [0x0C] = {.name = "get comm event log"},
    [0x0F] = {.name = "write multiple coils", .touches = 1, .touch = {RANGE(POLICY_COILS, W)}},
    [0x10] = {.name = "write multiple registers", .touches = 1, .touch = {RANGE(HR, W)}},
    [0x11] = {.name = "report server id"},
    [0x14] = {.name = "read file record",
              .whole_risk = "lets the role read every record of every file: file records are "
                            "not the register tables that read rules limit (on many devices "
                            "they overlay the registers), and no rule can narrow them; grant it "
                            "only to a role that may read all of the device's memory"},
    [0x15] = {.name = "write file record",
              .whole_risk = "lets the role write every record of every file: file records are "
                            "not the register tables that write rules limit (on many devices "
                            "they overlay the registers), and no rule can narrow them; grant it "
                            "only to a role that may write all of the device's memory"},
    /* Changes one register; its answer echoes the request and reveals nothing. */
    [0x16] = {.name = "mask write register", .touches = 1, .touch = {ONE(HR, W)}},
    /* Its read range, then its write range: both rights. */
    [0x17] = {.name = "read/write multiple registers",
              .touches = 2,
              .touch = {RANGE(HR, R), {HR, W, 5, 7}}},
    /* The queue named by its FIFO pointer address, read and not cleared. */
    [0x18] = {.name = "read FIFO queue", .touches = 1, .touch = {ONE(HR, R)}},
    [0x2B] = {.name = "encapsulated interface transport",
              .sub_bytes = 1,
              .sub_slot = POLICY_SUB_MEI,
              .sub_word = "MEI type",
              .whole_risk = "grants every MEI type, among them 0x0d CANopen general reference, "
                            "which reads and writes CANopen objects that no table rule limits; "
                            "name the MEI types the role needs, e.g. 'function 0x2b:0x0e' "
                            "(read device identification)"},
};

const struct policy_function *mbsc_policy_function(unsigned code)
{
    static const struct policy_function unknown = {.name = NULL};

    return code < POLICY_FUNCTION_CODES ? &functions[code] : &unknown;
}

size_t mbsc_policy_min_length(const struct policy_function *f)
{
    size_t need = 1 + (size_t)f->sub_bytes;
    unsigned i;

    for (i = 0; i < f->touches; i++) {
        size_t end =
            (size_t)(f->touch[i].count_at > f->touch[i].address_at ? f->touch[i].count_at
                                                                   : f->touch[i].address_at) +
            2;
        if (end > need)
            need = end;
    }
    return need;
}
