/* SPDX-License-Identifier: ISC */
/* examples/master_values.c - register values as text (see master_values.h). */
#include "master_values.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The float format reads the 32 bits of two registers as a binary32. */
typedef char mv_float_is_binary32[sizeof(float) == sizeof(uint32_t) ? 1 : -1];

static const struct {
    const char *name;
    enum mv_format format;
} formats[] = {
    {"uint16", MV_UINT16}, {"int16", MV_INT16},   {"hex", MV_HEX},     {"int32", MV_INT32},
    {"int", MV_INT32},     {"uint32", MV_UINT32}, {"float", MV_FLOAT},
};

int mv_parse_format(const char *name, enum mv_format *out)
{
    size_t i;

    for (i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (strcmp(name, formats[i].name) == 0) {
            *out = formats[i].format;
            return 0;
        }
    }
    return -1;
}

const char *mv_format_name(enum mv_format f)
{
    switch (f) {
    case MV_INT16: return "int16";
    case MV_HEX: return "hex";
    case MV_INT32: return "int32";
    case MV_UINT32: return "uint32";
    case MV_FLOAT: return "float";
    case MV_UINT16:
    default: return "uint16";
    }
}

const char *mv_format_list(void)
{
    return "uint16, int16, hex, int32 (or int), uint32, float";
}

unsigned mv_registers_per_value(enum mv_format f)
{
    return f == MV_INT32 || f == MV_UINT32 || f == MV_FLOAT ? 2u : 1u;
}

/* The 32 bits of the pair at regs, high word where order says. */
static uint32_t pair(enum mv_word_order order, const uint16_t *regs)
{
    uint16_t hi = order == MV_HIGH_WORD_FIRST ? regs[0] : regs[1];
    uint16_t lo = order == MV_HIGH_WORD_FIRST ? regs[1] : regs[0];

    return (uint32_t)hi << 16 | lo;
}

static void format_float(char *buf, size_t len, enum mv_syntax syntax, uint32_t bits)
{
    float f;
    double d;

    memcpy(&f, &bits, sizeof f);
    d = (double)f;
    if (isnan(d) || isinf(d)) {
        /* JSON has no NaN or infinity. */
        if (syntax == MV_JSON)
            snprintf(buf, len, "null");
        else
            snprintf(buf, len, "%s", isnan(d) ? "nan" : d > 0 ? "inf" : "-inf");
        return;
    }
    snprintf(buf, len, syntax == MV_JSON ? "%.9g" : "%g", d);
}

void mv_format_value(char *buf, size_t len, enum mv_format f, enum mv_word_order order,
                     enum mv_syntax syntax, const uint16_t *regs, unsigned i)
{
    const uint16_t *r = regs + (size_t)i * mv_registers_per_value(f);
    uint32_t v32;

    switch (f) {
    case MV_INT16:
        /* Two's complement by arithmetic, not by a cast of an out-of-range value. */
        snprintf(buf, len, "%ld", r[0] >= 0x8000u ? (long)r[0] - 65536L : (long)r[0]);
        break;
    case MV_HEX:
        snprintf(buf, len, syntax == MV_JSON ? "\"0x%04X\"" : "0x%04X", (unsigned)r[0]);
        break;
    case MV_INT32:
        v32 = pair(order, r);
        snprintf(buf, len, "%lld",
                 v32 >= 0x80000000u ? (long long)v32 - 4294967296LL : (long long)v32);
        break;
    case MV_UINT32: snprintf(buf, len, "%lu", (unsigned long)pair(order, r)); break;
    case MV_FLOAT: format_float(buf, len, syntax, pair(order, r)); break;
    case MV_UINT16:
    default: snprintf(buf, len, "%u", (unsigned)r[0]); break;
    }
}
