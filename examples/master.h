/* SPDX-License-Identifier: ISC */
/*
 * examples/master.h - what the parts of secure_master share:
 *   secure_master.c   usage, main, and the one-shot reads and writes;
 *   master_options.c  the command line (long options, mbpoll's short ones);
 *   master_link.c     the connection: made, lost, and what a failed
 *                     request means;
 *   master_poll.c     --poll, which survives exceptions, timeouts and lost
 *                     connections;
 *   master_output.c   results and errors as text, JSON or CSV;
 *   master_values.c   register values as mbpoll shows them;
 *   master_time.c     the monotonic clock, and SIGINT/SIGTERM.
 */
#ifndef MBSC_EXAMPLES_MASTER_H
#define MBSC_EXAMPLES_MASTER_H

#include <signal.h>
#include <stdint.h>

#include <mbsc.h>
#include <mbsc/modbus.h>

#include "master_output.h"

#define PROG "secure_master"

#define DEFAULT_TIMEOUT_MS 5000ul
#define MAX_TIMEOUT_MS     3600000ul /* one hour */
#define MAX_POLL_COUNT     1000000ul /* keeps the RTT array at 4 MB */
#define MAX_INTERVAL_MS    3600000ul
/* A poll described with mbpoll's options reads every second, as mbpoll does. */
#define MBPOLL_INTERVAL_MS 1000ul

/* Modbus limits per request (Modbus Application Protocol v1.1b3, 6.1-6.12). */
#define MAX_READ_REGISTERS  MODBUS_MAX_READ_REGISTERS  /* 125 */
#define MAX_WRITE_REGISTERS MODBUS_MAX_WRITE_REGISTERS /* 123 */
#define MAX_READ_BITS       MODBUS_MAX_READ_BITS       /* 2000 */
#define MAX_WRITE_BITS      MODBUS_MAX_WRITE_BITS      /* 1968 */

enum action_kind {
    ACT_WRITE_REGISTERS, /* FC16 */
    ACT_READ_REGISTERS,  /* FC3 */
    ACT_READ_INPUT,      /* FC4 */
    ACT_WRITE_COILS,     /* FC15 */
    ACT_READ_COILS,      /* FC1 */
    ACT_POLL,            /* FC1, 2, 3 or 4 (its table), repeated and timed */
    ACT_READ_DISCRETE,   /* FC2 */
    ACT_WRITE_COIL,      /* FC5 */
    ACT_WRITE_REGISTER   /* FC6 */
};

struct action {
    enum action_kind kind;
    const char *option; /* as typed, for messages: "--read-registers" */
    const char *arg;    /* its argument: "0:10" */
    char arg_text[32];  /* a poll of mbpoll's options: its range as "ADDR:COUNT", for arg */
    unsigned addr;
    unsigned count;            /* items read, or values written */
    enum mo_table table;       /* what a poll reads (default: holding registers) */
    int table_given;           /* ACT_POLL: --table seen */
    unsigned long poll_count;  /* ACT_POLL: number of reads (0: until interrupted) */
    unsigned long interval_ms; /* ACT_POLL: pause between reads */
    int poll_count_given;      /* ACT_POLL: --count or --once seen (0 is a valid count) */
    union {
        uint16_t regs[MAX_WRITE_REGISTERS];
        uint8_t bits[MAX_WRITE_BITS];
    } values;
};

struct options {
    const char *connect;
    const char *key;
    const char *peer;
    const char *psk;
    const char *ciphers; /* from --cipher or --ciphers */
    int cipher_given;    /* which one, for the exclusivity message */
    unsigned long unit;
    int unit_given;
    unsigned long timeout_ms;
    int timeout_given;
    struct action *actions;
    size_t n_actions;
    struct mo_output out; /* text, --json or --csv (master_output.h) */
    int format_given;     /* --format or -t T:FORMAT seen */
    int word_order_given; /* -B or --word-order seen */
    int verbose;          /* -v */
};

/* Parse argv into o: -1 to go on, or the exit status (usage, --help, --version). */
int master_parse_args(int argc, char **argv, struct options *o);

/* Set by SIGINT/SIGTERM while the actions run: polling stops cleanly. */
extern volatile sig_atomic_t master_interrupted;

/* Sleep ms milliseconds, or until SIGINT/SIGTERM. */
void master_sleep_ms(unsigned long ms);

/* CLOCK_MONOTONIC in nanoseconds (wall-clock steps must not show up as RTTs). */
uint64_t master_now_ns(void);

/* Microseconds since t0 (from master_now_ns), at most UINT32_MAX. */
uint32_t master_elapsed_us(uint64_t t0);

/* SIGINT and SIGTERM set master_interrupted (no SA_RESTART: sleeps end early). */
void master_catch_interrupts(void);

/* ---- master_link.c --------------------------------------------------------- */

/* The connection the actions use; ctx is NULL while there is none. */
struct master_link {
    const struct options *o;
    const mbsc_config *cfg;
    modbus_t *ctx;
    unsigned long answered; /* requests answered on this connection */
};

/*
 * Connect, run the handshake and set the unit and the reply timeout.  0, or
 * -1 with the cause in e (kind MO_ERR_CONNECT; a refused handshake names
 * its possible causes).
 */
int master_link_open(struct master_link *l, struct mo_error *e);

/* Close the connection, if there is one (the session is wiped). */
void master_link_close(struct master_link *l);

/*
 * What a failed libmodbus call on l means (saved_errno: its errno, or
 * EMBBADDATA for a short answer): an exception with its code, a timeout, a
 * lost connection with the library's reason, or an answer libmodbus
 * refused.
 */
void master_link_failure(struct master_link *l, int saved_errno, struct mo_error *e);

/* ---- master_poll.c --------------------------------------------------------- */

/* The Modbus terms of a, for the result lines and -v. */
void master_describe(const struct options *o, const struct action *a, struct mo_result *r);

/* -v: "FC3 read holding registers 10..13 (40011..40014): 312 us". */
void master_say_request(const struct options *o, const struct mo_result *r);

/*
 * Run the poll a on l: read, print, pause, as many times as it says (0:
 * until SIGINT/SIGTERM), through exceptions, timeouts and lost
 * connections, then print its summary.  EX_OK if every read was answered
 * and the poll ran to its end (or, open-ended, to a signal), else
 * EX_FAILURE.
 */
int master_run_poll(struct options *o, struct master_link *l, const struct action *a);

#endif /* MBSC_EXAMPLES_MASTER_H */
