/* SPDX-License-Identifier: ISC */
/*
 * examples/master_poll.c - secure_master --poll as a monitor.
 *
 * A poll is a series of read slots, --interval apart.  In each slot the
 * read either gets its values or fails, and a failure is one record in
 * the chosen format and one count in the summary; the poll goes on:
 *   - an exception (the slave answered): the connection stays;
 *   - a timeout or an answer libmodbus refused: the connection is closed
 *     and made again for the next slot, so that a late answer can never be
 *     taken for the answer to a later request;
 *   - a lost connection: if it had answered before (a slave that closed an
 *     idle connection, or restarted), a new connection is made at once and
 *     the read is repeated on it, once: reads change nothing on the slave.
 *     Otherwise, and when that fails, the next slots connect again with a
 *     backoff of RECONNECT_FIRST_MS doubling up to RECONNECT_MAX_MS (the
 *     interval when that is longer); every connection is a new TCP
 *     connection and a new handshake.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "master.h"

/* --poll --count 0 (until interrupted): RTT statistics over the last reads. */
#define RTT_WINDOW 100000ul

/* Reconnection backoff: a restarting PLC is back within seconds, a dead
 * one is not hammered (and its error lines come at most twice a minute). */
#define RECONNECT_FIRST_MS 250ul
#define RECONNECT_MAX_MS   30000ul

void master_describe(const struct options *o, const struct action *a, struct mo_result *r)
{
    static const unsigned fc_of_kind[] = {
        [ACT_WRITE_REGISTERS] = 16, [ACT_READ_REGISTERS] = 3, [ACT_READ_INPUT] = 4,
        [ACT_WRITE_COILS] = 15,     [ACT_READ_COILS] = 1,     [ACT_POLL] = 0,
        [ACT_READ_DISCRETE] = 2,    [ACT_WRITE_COIL] = 5,     [ACT_WRITE_REGISTER] = 6,
    };

    memset(r, 0, sizeof *r);
    r->action = a->option + 2; /* without "--" */
    r->table = a->table;
    r->fc = fc_of_kind[a->kind];
    if (a->kind == ACT_POLL) {
        switch (a->table) {
        case MO_COILS: r->fc = 1; break;
        case MO_DISCRETE_INPUTS: r->fc = 2; break;
        case MO_INPUT_REGISTERS: r->fc = 4; break;
        case MO_HOLDING_REGISTERS:
        default: r->fc = 3; break;
        }
    }
    r->unit = (unsigned)o->unit;
    r->addr = a->addr;
    r->count = a->count;
    r->seq = -1;
    r->written = a->kind == ACT_WRITE_REGISTERS || a->kind == ACT_WRITE_REGISTER ||
                 a->kind == ACT_WRITE_COILS || a->kind == ACT_WRITE_COIL;
}

void master_say_request(const struct options *o, const struct mo_result *r)
{
    char first[16], last[16], seq[32] = "";

    if (!o->verbose)
        return;
    mo_reference(first, sizeof first, r->table, r->addr, r->count, 0);
    mo_reference(last, sizeof last, r->table, r->addr, r->count, r->count - 1);
    if (r->seq >= 0)
        snprintf(seq, sizeof seq, " #%ld", r->seq);
    ex_msg("FC%u %s %s %u..%u (%s..%s)%s: %lu us", r->fc, r->written ? "write" : "read",
           mo_table_name(r->table), r->addr, r->addr + r->count - 1, first, last, seq,
           (unsigned long)r->rtt_us);
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile of n sorted samples (p in 1..100). */
static uint32_t percentile(const uint32_t *sorted, size_t n, unsigned p)
{
    size_t rank = (n * p + 99) / 100; /* ceil(n * p / 100), >= 1 for n >= 1 */

    return sorted[rank - 1];
}

/* Everything one poll keeps between its slots. */
struct poll_run {
    struct options *o;
    struct master_link *l;
    const struct action *a;
    struct mo_result r; /* the current slot; r.regs or r.bits point into the buffers */
    uint16_t regs[MAX_READ_REGISTERS];
    uint8_t bits[MAX_READ_BITS];
    struct mo_poll_stats st;
    uint32_t *rtt; /* the last cap answered reads' round trips, a ring */
    size_t cap;
    unsigned long attempts;   /* connection attempts since the last connection */
    unsigned long backoff_ms; /* before the next attempt; 0 while connected */
};

/* One read of the poll's range: 0, or -1 with the failure in e. */
static int read_once(struct poll_run *p, struct mo_error *e)
{
    const struct action *a = p->a;
    modbus_t *ctx = p->l->ctx;
    int addr = (int)a->addr, count = (int)a->count, rc;
    uint64_t t0 = master_now_ns();

    switch (a->table) {
    case MO_COILS: rc = modbus_read_bits(ctx, addr, count, p->bits); break;
    case MO_DISCRETE_INPUTS: rc = modbus_read_input_bits(ctx, addr, count, p->bits); break;
    case MO_INPUT_REGISTERS: rc = modbus_read_input_registers(ctx, addr, count, p->regs); break;
    case MO_HOLDING_REGISTERS:
    default: rc = modbus_read_registers(ctx, addr, count, p->regs); break;
    }
    p->r.rtt_us = master_elapsed_us(t0);
    if (rc == count) {
        p->l->answered++;
        return 0;
    }
    master_link_failure(p->l, rc < 0 ? errno : EMBBADDATA, e);
    return -1;
}

static void reconnected(struct poll_run *p)
{
    const mbsc_cipher *cipher = mbsc_modbus_cipher(p->l->ctx);

    p->st.reconnects++;
    mo_print_reconnected(&p->o->out, p->o->connect, cipher != NULL ? mbsc_cipher_name(cipher) : "?",
                         p->attempts);
    p->attempts = 0;
    p->backoff_ms = 0;
}

static void next_backoff(struct poll_run *p)
{
    p->backoff_ms = p->backoff_ms == 0 ? RECONNECT_FIRST_MS : p->backoff_ms * 2;
    if (p->backoff_ms > RECONNECT_MAX_MS)
        p->backoff_ms = RECONNECT_MAX_MS;
}

/* A slot without a connection: one attempt.  0 connected, -1 (counted and printed) not. */
static int connect_for_slot(struct poll_run *p)
{
    struct mo_error e;

    p->attempts++;
    if (master_link_open(p->l, &e) == 0) {
        reconnected(p);
        return 0;
    }
    p->st.connect_failures++;
    mo_print_error(&p->o->out, &p->r, &e);
    next_backoff(p);
    return -1;
}

/*
 * The read of one slot, with the one repetition a lost connection that had
 * worked is given: 0 with values, or -1 with the failure in e.
 */
static int read_slot(struct poll_run *p, struct mo_error *e)
{
    struct mo_error again;
    size_t used;

    if (read_once(p, e) == 0)
        return 0;
    if (e->kind != MO_ERR_DISCONNECTED || p->l->answered == 0)
        return -1;
    master_link_close(p->l);
    p->attempts = 1;
    if (master_link_open(p->l, &again) != 0) {
        /* Both halves: what ended the connection, and why there is no new one. */
        used = strlen(e->message);
        snprintf(e->message + used, sizeof e->message - used, "; reconnecting: %.600s",
                 again.message);
        next_backoff(p);
        return -1;
    }
    reconnected(p);
    return read_once(p, e);
}

static void count_failure(struct mo_poll_stats *st, enum mo_error_kind kind)
{
    switch (kind) {
    case MO_ERR_EXCEPTION: st->exceptions++; break;
    case MO_ERR_TIMEOUT: st->timeouts++; break;
    case MO_ERR_DISCONNECTED: st->disconnects++; break;
    case MO_ERR_BAD_ANSWER: st->bad_answers++; break;
    case MO_ERR_CONNECT:
    default: st->connect_failures++; break;
    }
}

/* One slot: connect if needed, read, print; counted in p->st. */
static void slot(struct poll_run *p)
{
    struct mo_error e;

    p->r.seq = (long)p->st.reads;
    p->st.reads++;
    if (p->l->ctx == NULL && connect_for_slot(p) != 0)
        return;
    if (read_slot(p, &e) == 0) {
        p->rtt[p->st.ok % p->cap] = p->r.rtt_us;
        p->st.ok++;
        master_say_request(p->o, &p->r);
        mo_print_result(&p->o->out, &p->r);
        return;
    }
    count_failure(&p->st, e.kind);
    mo_print_error(&p->o->out, &p->r, &e);
    /* Anything but an exception leaves the connection in doubt: a new one next time. */
    if (e.kind != MO_ERR_EXCEPTION)
        master_link_close(p->l);
}

static void summary(struct poll_run *p)
{
    size_t kept = p->st.ok < p->cap ? (size_t)p->st.ok : p->cap;

    if (kept > 0) {
        qsort(p->rtt, kept, sizeof *p->rtt, compare_u32);
        p->st.rtt_min = p->rtt[0];
        p->st.rtt_median = percentile(p->rtt, kept, 50);
        p->st.rtt_p99 = percentile(p->rtt, kept, 99);
        p->st.rtt_max = p->rtt[kept - 1];
    }
    mo_print_poll_summary(&p->o->out, &p->r, &p->st);
}

int master_run_poll(struct options *o, struct master_link *l, const struct action *a)
{
    struct poll_run *p = calloc(1, sizeof *p);
    int rc = EX_OK;

    if (p != NULL) {
        p->cap = a->poll_count != 0 ? a->poll_count : RTT_WINDOW;
        p->rtt = malloc(p->cap * sizeof *p->rtt);
    }
    if (p == NULL || p->rtt == NULL) {
        free(p);
        ex_msg("out of memory");
        return EX_FAILURE;
    }
    p->o = o;
    p->l = l;
    p->a = a;
    master_describe(o, a, &p->r);
    if (a->table == MO_COILS || a->table == MO_DISCRETE_INPUTS)
        p->r.bits = p->bits;
    else
        p->r.regs = p->regs;
    while ((a->poll_count == 0 || p->st.reads < a->poll_count) && !master_interrupted) {
        if (p->st.reads > 0) {
            unsigned long wait = a->interval_ms;

            if (l->ctx == NULL && p->backoff_ms > wait)
                wait = p->backoff_ms;
            if (wait > 0)
                master_sleep_ms(wait);
            if (master_interrupted)
                break;
        }
        slot(p);
        /* A poller's reader wants each line as it comes, even into a pipe. */
        fflush(stdout);
    }
    summary(p);
    if (p->st.ok != p->st.reads)
        rc = EX_FAILURE; /* each failure is in the output already */
    if (master_interrupted && a->poll_count != 0) {
        ex_msg("%s %s: interrupted after %lu of %lu reads", a->option, a->arg, p->st.reads,
               a->poll_count);
        rc = EX_FAILURE;
    }
    free(p->rtt);
    free(p);
    return rc;
}
