/* SPDX-License-Identifier: ISC */
/*
 * fault_scada.c - the SCADA client of the fault suite (tests/faults.sh): a
 * plain libmodbus master that knows nothing of mbsc, in front of a client
 * gateway, checking every answer it gets.
 *
 *   tests/fault-scada --connect HOST:PORT --log FILE [--role writer|reader]
 *                     [--timeout-ms MS] [--interval-ms MS] [--start N]
 *
 * writer (the default), in a loop: writes the sequence counter with
 * function 16, every write a new value (start, start + 1, ...), failed or
 * not; reads the counter back; reads a few registers of the tag area
 * (fault_common.h), holding and input registers in turn.  reader: the
 * counter and the tag area only (mixed load for the soak).
 *
 * Every answer must belong to its request:
 *  - a counter read returns the value last acknowledged when the read was
 *    sent, or a later one, never an older one nor one not yet sent (a
 *    reader: never less than the value it read before);
 *  - a tag read returns the constants of the addresses it asked for;
 *  - libmodbus's own checks of an answer (transaction id, function,
 *    quantities, unit id) never fail.
 * Anything else is a misdelivered answer.
 *
 * FILE gets one line per event, "TIME_MS KIND ARGS" (CLOCK_REALTIME):
 *   A V         the write of V was acknowledged
 *   F V ERR     the write of V failed (ERR: errno name; the PLC may or may
 *               not have executed it)
 *   R V         a read returned V, a written value later than the last one
 *               acknowledged (tests/faults.sh checks that it is on record)
 *   X WHAT      a misdelivered answer
 *   U ERR       a gateway exception (0A, 0B, 06) or another failed read
 *   T           libmodbus's own response timeout: reconnected, so that a
 *               late answer cannot meet the next request
 *   D ERR       the connection failed; C once connected again
 * SIGTERM or SIGINT ends it: a summary line on stdout, exit 0.
 *
 * The response timeout (--timeout-ms, 6000) must be longer than the client
 * gateway's request timeout: the gateway always answers first.
 */
#include <errno.h>
#include <modbus.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault_common.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

struct scada {
    modbus_t *ctx;
    FILE *log;
    int writer;
    unsigned interval_ms;
    uint32_t next;       /* writer: the next value to write */
    uint32_t last_acked; /* writer: the last value acknowledged */
    int acked_any;
    uint32_t last_read; /* reader: the last counter value read */
    unsigned long cycles, acked, failed, misdelivered, unavailable, own_timeouts, reconnects;
};

static void event(struct scada *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void event(struct scada *s, const char *fmt, ...)
{
    va_list ap;

    fprintf(s->log, "%lld ", fault_now_ms());
    va_start(ap, fmt);
    vfprintf(s->log, fmt, ap);
    va_end(ap);
    fputc('\n', s->log);
}

static const char *err_name(int e)
{
    switch (e) {
    case EMBXGTAR: return "0B";
    case EMBXGPATH: return "0A";
    case EMBXSBUSY: return "06";
    case EMBBADDATA: return "EMBBADDATA";
    case EMBBADEXC: return "EMBBADEXC";
    case EMBMDATA: return "EMBMDATA";
    case EMBBADSLAVE: return "EMBBADSLAVE";
    case EMBBADCRC: return "EMBBADCRC";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNRESET: return "ECONNRESET";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EPIPE: return "EPIPE";
    case EBADF: return "EBADF";
    default: return e >= MODBUS_ENOBASE ? "EMBOTHER" : "EOTHER";
    }
}

/* libmodbus rejected the answer itself: it was not this request's. */
static int is_misdelivery(int e)
{
    return e == EMBBADDATA || e == EMBBADEXC || e == EMBMDATA || e == EMBBADSLAVE || e == EMBBADCRC;
}

/* An exception from the gateway or the PLC: an answer that says "not now". */
static int is_exception(int e)
{
    return e > MODBUS_ENOBASE && e < MODBUS_ENOBASE + 16;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop) {
    }
}

/* (Re)connect, every 50 ms until it works, as a SCADA package retries. */
static void reconnect(struct scada *s)
{
    modbus_close(s->ctx);
    while (!stop && modbus_connect(s->ctx) != 0)
        sleep_ms(50);
    if (!stop) {
        s->reconnects++;
        event(s, "C");
    }
}

/*
 * A failed call: misdelivered, an exception, libmodbus's own timeout or a
 * broken connection.  Returns 1 if the connection was made again.
 */
static int failed(struct scada *s, int e, const char *what)
{
    if (is_misdelivery(e)) {
        s->misdelivered++;
        event(s, "X %s %s", what, err_name(e));
        return 0;
    }
    if (is_exception(e)) {
        s->unavailable++;
        event(s, "U %s", err_name(e));
        return 0;
    }
    if (e == ETIMEDOUT) {
        s->own_timeouts++;
        event(s, "T");
    } else {
        event(s, "D %s", err_name(e));
    }
    reconnect(s);
    return 1;
}

static int write_counter(struct scada *s)
{
    uint32_t v = s->next++;
    uint16_t regs[2] = {(uint16_t)(v >> 16), (uint16_t)v};

    if (modbus_write_registers(s->ctx, FAULT_COUNTER_ADDR, 2, regs) == 2) {
        s->acked++;
        s->last_acked = v;
        s->acked_any = 1;
        event(s, "A %lu", (unsigned long)v);
        return 0;
    }
    s->failed++;
    event(s, "F %lu %s", (unsigned long)v, err_name(errno));
    return failed(s, errno, "write");
}

static int read_counter(struct scada *s)
{
    uint32_t floor = s->writer ? s->last_acked : s->last_read, sent_max = s->next - 1, v;
    uint16_t regs[2];

    if (modbus_read_registers(s->ctx, FAULT_COUNTER_ADDR, 2, regs) != 2)
        return failed(s, errno, "counter");
    v = (uint32_t)regs[0] << 16 | regs[1];
    if ((s->writer && s->acked_any && (v < floor || v > sent_max)) || (!s->writer && v < floor)) {
        s->misdelivered++;
        event(s, "X counter %lu floor %lu", (unsigned long)v, (unsigned long)floor);
    } else if (s->writer && v != floor) {
        event(s, "R %lu", (unsigned long)v);
    }
    if (!s->writer)
        s->last_read = v;
    return 0;
}

static int read_tags(struct scada *s)
{
    unsigned first = FAULT_TAG_FIRST + (unsigned)(s->cycles * 7 % (FAULT_TAG_COUNT - 10));
    int n = 1 + (int)(s->cycles % 10), input = (int)(s->cycles & 1), i, rc;
    uint16_t regs[10];

    rc = input ? modbus_read_input_registers(s->ctx, (int)first, n, regs)
               : modbus_read_registers(s->ctx, (int)first, n, regs);
    if (rc != n)
        return failed(s, errno, "tags");
    for (i = 0; i < n; i++) {
        if (regs[i] != fault_tag(first + (unsigned)i, input)) {
            s->misdelivered++;
            event(s, "X tags %s %u+%d", input ? "input" : "holding", first, i);
            break;
        }
    }
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: fault-scada --connect HOST:PORT --log FILE [--role writer|reader]\n"
                    "                   [--timeout-ms MS] [--interval-ms MS] [--start N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *connect = NULL, *path = NULL;
    struct scada s;
    unsigned timeout_ms = 6000;
    char host[256];
    const char *colon;
    struct sigaction sa;
    int i;

    memset(&s, 0, sizeof s);
    s.writer = 1;
    s.interval_ms = 10;
    s.next = 1;
    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--connect") == 0)
            connect = argv[i + 1];
        else if (strcmp(argv[i], "--log") == 0)
            path = argv[i + 1];
        else if (strcmp(argv[i], "--role") == 0 && strcmp(argv[i + 1], "writer") == 0)
            s.writer = 1;
        else if (strcmp(argv[i], "--role") == 0 && strcmp(argv[i + 1], "reader") == 0)
            s.writer = 0;
        else if (strcmp(argv[i], "--timeout-ms") == 0)
            timeout_ms = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--interval-ms") == 0)
            s.interval_ms = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--start") == 0)
            s.next = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        else
            return usage();
    }
    colon = connect != NULL ? strrchr(connect, ':') : NULL;
    if (i != argc || path == NULL || colon == NULL || (size_t)(colon - connect) >= sizeof host ||
        timeout_ms == 0)
        return usage();
    snprintf(host, sizeof host, "%.*s", (int)(colon - connect), connect);
    s.log = fopen(path, "a");
    s.ctx = modbus_new_tcp(host, atoi(colon + 1));
    if (s.log == NULL || s.ctx == NULL) {
        fprintf(stderr, "fault-scada: cannot start: %s\n", strerror(errno));
        return 1;
    }
    setvbuf(s.log, NULL, _IOLBF, 0); /* the suite reads the log while it runs */
    modbus_set_slave(s.ctx, 1);
    modbus_set_response_timeout(s.ctx, timeout_ms / 1000, (timeout_ms % 1000) * 1000);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    reconnect(&s);
    s.reconnects = 0; /* the first connection is not a reconnection */
    while (!stop) {
        if ((s.writer && write_counter(&s)) || read_counter(&s) || read_tags(&s))
            continue; /* reconnected: start the cycle again */
        s.cycles++;
        sleep_ms(s.interval_ms);
    }
    printf("fault-scada %s: cycles %lu acknowledged %lu failed-writes %lu misdelivered %lu "
           "unavailable %lu own-timeouts %lu reconnects %lu\n",
           s.writer ? "writer" : "reader", s.cycles, s.acked, s.failed, s.misdelivered,
           s.unavailable, s.own_timeouts, s.reconnects);
    modbus_close(s.ctx);
    modbus_free(s.ctx);
    fclose(s.log);
    return 0;
}
