/* SPDX-License-Identifier: ISC */
/*
 * examples/master_output.h - how secure_master prints its results: the
 * plain text of the first versions ("ADDR: V1 V2 ..."), one JSON object per
 * line (--json) or CSV rows under one header (--csv), so that a poller's
 * output goes straight into a script, a log shipper or a spreadsheet.
 * Failed requests of a poll, and its reconnections, are records of the same
 * format (text: lines on stderr).
 */
#ifndef MBSC_EXAMPLES_MASTER_OUTPUT_H
#define MBSC_EXAMPLES_MASTER_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "master_values.h"

enum mo_format { MO_TEXT, MO_JSON, MO_CSV };

/* Modbus tables, with the leading digit of their 1-based reference numbers. */
enum mo_table {
    MO_COILS = 0,            /* 0xxxx */
    MO_DISCRETE_INPUTS = 1,  /* 1xxxx */
    MO_INPUT_REGISTERS = 3,  /* 3xxxx */
    MO_HOLDING_REGISTERS = 4 /* 4xxxx */
};

/* "holding registers", "coils", ... */
const char *mo_table_name(enum mo_table t);

struct mo_output {
    enum mo_format format;
    enum mv_format values;         /* how registers read are shown (--format, -t T:FORMAT) */
    enum mv_word_order word_order; /* pairs of registers (-B) */
    unsigned csv_values;           /* CSV: value columns v0..v(N-1), the widest result */
    int header_done;               /* CSV: header printed */
};

/* One result: a read, a write, or one read of a poll. */
struct mo_result {
    const char *action; /* the option without "--": "read-registers" */
    unsigned fc;        /* Modbus function code */
    enum mo_table table;
    unsigned unit;        /* Modbus unit id */
    unsigned addr, count; /* 0-based first address, number of items (registers, bits) */
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

/*
 * How many values a result of count items shows: count for bits, written
 * registers and 16-bit formats, count / 2 for the 32-bit formats.
 */
unsigned mo_value_count(const struct mo_output *out, const struct mo_result *r);

/* Print r on stdout in out's format (text: reads only, as before). */
void mo_print_result(struct mo_output *out, const struct mo_result *r);

/* Why a request failed, in the words of the error records. */
enum mo_error_kind {
    MO_ERR_EXCEPTION,    /* the slave answered with a Modbus exception */
    MO_ERR_TIMEOUT,      /* no answer within --timeout */
    MO_ERR_DISCONNECTED, /* the connection ended (closed, reset, failed authentication) */
    MO_ERR_BAD_ANSWER,   /* an answer libmodbus refused (wrong length, transaction id...) */
    MO_ERR_CONNECT       /* no connection: connect or handshake failed */
};

#define MO_MESSAGE_SIZE 1024u

struct mo_error {
    enum mo_error_kind kind;
    unsigned exception;            /* MO_ERR_EXCEPTION: its code, 1..255 */
    char message[MO_MESSAGE_SIZE]; /* one line: "exception 02, illegal data address" */
};

/* "exception", "timeout", "disconnected", "bad-answer", "connect". */
const char *mo_error_kind_name(enum mo_error_kind kind);

/*
 * A failed read of a poll (r: what was asked, with its seq): text, one line
 * on stderr "read 5 of holding registers 0..1: <message>"; JSON, an object
 * with error (the kind), exception (its code) and message; CSV, a row with
 * the columns error, exception and message filled.
 */
void mo_print_error(struct mo_output *out, const struct mo_result *r, const struct mo_error *e);

/* A poll's connection made again: its address, cipher and the attempts it took. */
void mo_print_reconnected(struct mo_output *out, const char *address, const char *cipher,
                          unsigned long attempts);

/* What a poll did, for its summary. */
struct mo_poll_stats {
    unsigned long reads;            /* reads attempted, each slot of the poll */
    unsigned long ok;               /* of which answered with values */
    unsigned long exceptions;       /* answered with an exception */
    unsigned long timeouts;         /* not answered in time */
    unsigned long disconnects;      /* the connection ended under the read */
    unsigned long bad_answers;      /* answered with something libmodbus refused */
    unsigned long connect_failures; /* no connection could be made for the read */
    unsigned long reconnects;       /* connections made again */
    /* Round trips of the answered reads, in microseconds (when ok > 0). */
    uint32_t rtt_min, rtt_median, rtt_p99, rtt_max;
};

/*
 * A poll's summary: text, "reads=N ok=N errors=N exceptions=N timeouts=N
 * disconnects=N bad_answers=N connect_failures=N reconnects=N" and, when a
 * read was answered, "rtt_us min=.. median=.. p99=.. max=.."; JSON, one
 * object; CSV, one line on stderr, which keeps stdout one table.
 */
void mo_print_poll_summary(struct mo_output *out, const struct mo_result *poll,
                           const struct mo_poll_stats *s);

#endif /* MBSC_EXAMPLES_MASTER_OUTPUT_H */
