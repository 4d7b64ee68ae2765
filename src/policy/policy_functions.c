/* SPDX-License-Identifier: ISC */
/*
 * policy_functions.c - what the policy adds to the library's function
 * table (mbsc/pdu.h, which says which table a request touches and where
 * its address and quantity are): which codes carry a sub-function that a
 * rule may name, and which codes grant more than their name suggests when
 * a rule names them whole (Modbus Application Protocol v1.1b3, sections
 * 5.1 and 6).  The parser and the request check both read it; no other
 * file of the policy knows a function code.
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
 *  - 0x18 read FIFO queue (section 6.18) reads the count register at its
 *    FIFO pointer address and up to 31 queued registers after it, without
 *    clearing them: it is a table function, allowed by read access to the
 *    pointer address and the 31 after it (mbsc_pdu_ranges).
 *  - 0x14 read file record and 0x15 write file record (sections 6.14,
 *    6.15) address records of files, not the tables (on many devices the
 *    files overlay the registers): only a "function" rule allows them,
 *    whole, and such a rule is warned.
 */
#include <stddef.h>

#include "mbsc/pdu.h"
#include "policy/policy_internal.h"

static const struct policy_function functions[POLICY_FUNCTION_CODES] = {
    [0x08] = {.name = "diagnostics",
              .sub_bytes = 2,
              .sub_slot = POLICY_SUB_DIAGNOSTICS,
              .sub_word = "sub-function",
              .whole_risk = "grants every diagnostics sub-function, among them 0x0001 restart "
                            "communications option and 0x0004 force listen only mode, which "
                            "take the device off the bus; name the sub-functions the role "
                            "needs, e.g. 'function 0x08:0x00' (return query data)"},
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
    static const struct policy_function nothing = {.name = NULL};

    return code < POLICY_FUNCTION_CODES ? &functions[code] : &nothing;
}

int mbsc_policy_table_code(unsigned code, enum policy_table *table, enum policy_access *access,
                           int *both)
{
    const struct mbsc_pdu_function *f;
    size_t i;

    for (i = 0; (f = mbsc_pdu_function_at(i)) != NULL; i++) {
        if (f->code != code || f->table == MBSC_PDU_NO_TABLE)
            continue;
        /* The policy's tables are the four of mbsc/pdu.h, in the same order. */
        *table = (enum policy_table)(f->table - MBSC_PDU_COILS);
        *access = f->access == MBSC_PDU_WRITE ? POLICY_WRITE : POLICY_READ;
        *both = f->access == MBSC_PDU_READ_WRITE;
        return 1;
    }
    return 0;
}
