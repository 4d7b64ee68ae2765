/* SPDX-License-Identifier: ISC */
/*
 * examples/master_values.h - how secure_master shows register values: as
 * mbpoll shows them (unsigned or signed 16-bit, hex, 32-bit integers and
 * IEEE 754 floats from two registers in either word order), and what a
 * Modbus exception code is called.
 *
 * Pure functions: no I/O, no libmodbus.
 */
#ifndef MBSC_EXAMPLES_MASTER_VALUES_H
#define MBSC_EXAMPLES_MASTER_VALUES_H

#include <stddef.h>
#include <stdint.h>

enum mv_format {
    MV_UINT16, /* 0..65535, the default */
    MV_INT16,  /* two's complement, -32768..32767 (mbpoll "int16") */
    MV_HEX,    /* 0x0000..0xFFFF (mbpoll "hex") */
    MV_INT32,  /* two registers, signed (mbpoll "int") */
    MV_UINT32, /* two registers, unsigned: counters of energy meters */
    MV_FLOAT   /* two registers, IEEE 754 binary32 (mbpoll "float") */
};

/*
 * Which register of a pair holds the high 16 bits.  mbpoll's default is
 * the low word first; -B (big endian) puts the high word first, as the
 * Modbus Application Protocol orders the bytes inside a register.
 */
enum mv_word_order { MV_LOW_WORD_FIRST, MV_HIGH_WORD_FIRST };

/* "uint16", "int16", "hex", "int32" (or "int"), "uint32", "float": 0, or -1. */
int mv_parse_format(const char *name, enum mv_format *out);

/* The canonical name of f ("int32" for both spellings). */
const char *mv_format_name(enum mv_format f);

/* The names mv_parse_format() takes, for messages: "uint16, int16, ...". */
const char *mv_format_list(void);

/* Registers per value: 1, or 2 for the 32-bit formats. */
unsigned mv_registers_per_value(enum mv_format f);

/* Where a value is written to: text and CSV, or JSON (numbers, or strings for hex). */
enum mv_syntax { MV_TEXT, MV_JSON };

/*
 * Value number i of regs (registers i*k .. i*k+k-1, k from
 * mv_registers_per_value) as text into buf.  Floats: "%g" in text as mbpoll
 * prints them, nine significant digits in JSON (enough to give back the
 * same binary32); a NaN or an infinity is "nan", "inf", "-inf" in text and
 * null in JSON.  Hex is "0x002A", quoted in JSON.
 */
void mv_format_value(char *buf, size_t len, enum mv_format f, enum mv_word_order order,
                     enum mv_syntax syntax, const uint16_t *regs, unsigned i);

#endif /* MBSC_EXAMPLES_MASTER_VALUES_H */
