/* SPDX-License-Identifier: ISC */
/*
 * examples/master_output.h - how secure_master prints its results: the
 * plain text of the first versions ("ADDR: V1 V2 ..."), one JSON object per
 * line (--json) or CSV rows under one header (--csv), so that a poller's
 * output goes straight into a script, a log shipper or a spreadsheet.
 */
#ifndef MBSC_EXAMPLES_MASTER_OUTPUT_H
#define MBSC_EXAMPLES_MASTER_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

enum mo_format { MO_TEXT, MO_JSON, MO_CSV };

/* Modbus tables, with the leading digit of their 1-based reference numbers. */
enum mo_table {
    MO_COILS = 0,            /* 0xxxx */
    MO_DISCRETE_INPUTS = 1,  /* 1xxxx */
    MO_INPUT_REGISTERS = 3,  /* 3xxxx */
    MO_HOLDING_REGISTERS = 4 /* 4xxxx */
};

struct mo_output {
    enum mo_format format;
    unsigned csv_values; /* CSV: value columns v0..v(N-1), the widest result */
    int header_done;     /* CSV: header printed */
};

/* One result: a read, a write, or one read of a poll. */
struct mo_result {
    const char *action; /* the option without "--": "read-registers" */
    unsigned fc;        /* Modbus function code */
    enum mo_table table;
    unsigned unit;        /* Modbus unit id */
    unsigned addr, count; /* 0-based first address, number of items */
    const uint16_t *regs; /* the values: registers, or */
    const uint8_t *bits;  /* bits (0/1); exactly one is not NULL */
    int written;          /* 1: values written, 0: values read */
    long seq;             /* poll: read number from 0; -1 otherwise */
    uint32_t rtt_us;      /* request to reply, monotonic clock */
};

/*
 * The 1-based reference number of addr in table as device manuals write
 * it, into buf: 5 digits ("00001", "40001") when the range addr..addr+count-1
 * ends by reference 9999, else 6 ("400001"), so that both ends of a range
 * have the same width.  A leading 0 (coils) matters: it is text, not a number.
 */
void mo_reference(char *buf, size_t len, enum mo_table table, unsigned addr, unsigned count,
                  unsigned offset);

/* Print r on stdout in out's format (text: reads only, as before). */
void mo_print_result(struct mo_output *out, const struct mo_result *r);

/*
 * A poll's round-trip statistics (microseconds) over its last n reads:
 * text "rtt_us min=.. median=.. p99=.. max=.." and a JSON object on stdout;
 * in CSV mode one line on stderr, which keeps stdout one table.
 */
void mo_print_poll_summary(struct mo_output *out, const struct mo_result *poll, unsigned long reads,
                           uint32_t min, uint32_t median, uint32_t p99, uint32_t max);

#endif /* MBSC_EXAMPLES_MASTER_OUTPUT_H */
