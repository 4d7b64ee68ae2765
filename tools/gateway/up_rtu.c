/* SPDX-License-Identifier: ISC */
/*
 * up_rtu.c - the upstream kind "Modbus RTU serial line": the devices on a
 * serial port behind a server gateway, addressed by unit id.
 *
 * The framing is the gateway's own (rtu_frame.c), not libmodbus's RTU
 * backend: libmodbus reads an answer with blocking waits on the port,
 * which would stop the gateway's one loop for a device's whole answer
 * time, and it cannot tell a late answer from the next request's.  Here
 * the port is one more descriptor of the loop.
 *
 * A line carries one request at a time (MODBUS over Serial Line v1.02,
 * 2.4): send refuses another while one is out, and the multiplexer keeps
 * the rest in its fair queues until the line calls for more.  The phases
 * of a line:
 *
 *   IDLE -> SENDING (the frame is written) -> WAITING (until the answer's
 *   last byte, or the answer timeout) -> REST -> IDLE
 *
 * An answer is taken as soon as its last byte is in, its length told by
 * its first bytes and the request (rtu_frame.c); an answer whose length
 * the frame does not tell ends with a silence of GAP_MIN_NS or t3.5,
 * whichever is longer, since the host sees serial bytes in bursts.  The
 * inter-character limit t1.5 is not checked, for the same reason: the
 * CRC catches a frame that was broken up and mixed.
 *
 * The rest between frames is t3.5 after an answer (2.5.1.1), the
 * turnaround after a broadcast (the devices act on it without answering,
 * 2.4.1), and after a timeout the turnaround too (at least the gap), so
 * that a late answer lands in the rest: bytes that arrive in a rest or
 * while nothing was asked are discarded and counted, never taken for the
 * next request's answer.  The rest lasts until the line has been silent
 * for the gap.  A device later than its timeout plus the rest can still
 * have its answer taken for the next request to it (a serial frame has no
 * transaction id): the answer timeout must cover the devices' answer time.
 *
 * An answer with a bad CRC, from another unit, with another function
 * code, longer than a frame or cut short is never forwarded: the request
 * gets exception 0B and the line counts the error.  A unit that does not
 * answer is logged once, and again only after it has answered.
 *
 * Broadcast (unit 0): a write whose normal answer is an echo (functions
 * 05, 06, 0F, 10, 15, 16) is sent, no answer is waited for, and the
 * master gets the normal answer built from its request once the frame is
 * on the wire: it says the frame went out, not that any device acted.
 * Any other function to unit 0 is not sent and gets exception 01.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <sodium.h>

#include "clock.h"
#include "log.h"
#include "serial_port.h"
#include "up_kinds.h"
#include "upstream_kind.h"

#define MS_NS ((int64_t)1000000)
/* The shortest silence taken as the end of an answer whose length is not told. */
#define GAP_MIN_NS (20 * MS_NS)
/* At most one log line about bad answers on a line per interval; the rest are counted. */
#define WARN_INTERVAL_NS   ((int64_t)10 * 1000000000)
#define DEFAULT_TIMEOUT_MS 1000u

static void on_timer(void *data);
static void line_warn(struct gw_upstream *u, const char *fmt, ...) GW_PRINTF(2, 3);

/* r's settings and times from the target name (its one spelling) and the request timeout. */
static void compute_line(struct gw_up_rtu_state *r, const char *name, unsigned request_timeout_ms)
{
    char why[512];
    unsigned bits;

    /*
     * Checked when the route was read; the parser fills in what it took
     * even if the device has changed since.
     */
    (void)gw_serial_target_parse(name, &r->line, "route", why, sizeof why);
    if (r->line.baud == 0)
        r->line.baud = 19200;
    r->timeout_ms = r->line.timeout_ms != 0   ? r->line.timeout_ms
                    : request_timeout_ms != 0 ? request_timeout_ms
                                              : DEFAULT_TIMEOUT_MS;
    /* A character: start bit, 8 data bits, the parity bit if any, the stop bits (2.5.1). */
    bits = 1u + r->line.data_bits + (r->line.parity != 'N' ? 1u : 0u) + r->line.stop_bits;
    r->char_ns = gw_rtu_char_ns(r->line.baud, bits);
    r->t35_ns = gw_rtu_t35_ns(r->line.baud, bits);
    r->gap_ns = r->t35_ns > GAP_MIN_NS ? r->t35_ns : GAP_MIN_NS;
}

/* The line's state, its settings worked out on first use. */
static struct gw_up_rtu_state *line_of(struct gw_upstream *u)
{
    struct gw_up_rtu_state *r = &u->k.rtu;

    if (!r->parsed) {
        compute_line(r, u->name, u->set.request_timeout_ms);
        r->parsed = 1;
    }
    return r;
}

/* A warning about the line, at most one per WARN_INTERVAL_NS; the others are counted. */
static void line_warn(struct gw_upstream *u, const char *fmt, ...)
{
    struct gw_up_rtu_state *r = &u->k.rtu;
    int64_t now = gw_now_ns();
    char text[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    snprintf(r->last_error, sizeof r->last_error, "%.*s", (int)sizeof r->last_error - 1, text);
    if (now < r->warn_at) {
        r->warn_skipped++;
        return;
    }
    if (r->warn_skipped > 0)
        gw_log(GW_WARN,
               "serial line %s: %s (and %llu more bad answers since the last line; the "
               "status counts them)",
               r->line.device, text, (unsigned long long)r->warn_skipped);
    else
        gw_log(GW_WARN, "serial line %s: %s", r->line.device, text);
    r->warn_skipped = 0;
    r->warn_at = now + WARN_INTERVAL_NS;
}

static void rest(struct gw_upstream *u, int64_t until, int after_timeout)
{
    struct gw_up_rtu_state *r = &u->k.rtu;

    r->phase = GW_RTU_REST;
    r->rest_ns = until;
    r->after_timeout = after_timeout;
    r->late_counted = 0;
    r->in_len = 0;
    gw_timer_at(r->timer, until);
}

/* The ADU of the request on the line, with its transaction id, into adu; its length. */
static size_t request_adu(const struct gw_up_rtu_state *r, uint8_t *adu)
{
    return gw_rtu_to_adu(r->req, r->req_len, r->tid, adu);
}

/* ---- the port ---- */

static int rtu_open(struct gw_upstream *u, int *fd, char *why, size_t why_len)
{
    struct gw_up_rtu_state *r = line_of(u);
    char note[400];

    if (gw_serial_port_open(&r->line, fd, note, sizeof note, why, why_len) != 0) {
        snprintf(r->last_error, sizeof r->last_error, "%.*s", (int)sizeof r->last_error - 1, why);
        return -1;
    }
    if (note[0] != '\0')
        gw_log(GW_WARN, "%s", note);
    return 0;
}

static int rtu_connected(struct gw_upstream *u, char *why, size_t why_len)
{
    struct gw_up_rtu_state *r = line_of(u);

    r->timer = gw_timer_new(u->loop, on_timer, u);
    if (r->timer == NULL) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    r->phase = GW_RTU_IDLE;
    r->in_len = r->req_len = r->req_sent = 0;
    r->room_owed = 0;
    gw_log(GW_INFO, "serial line %s open at %u baud %u%c%u, answer timeout %u ms", r->line.device,
           r->line.baud, r->line.data_bits, r->line.parity, r->line.stop_bits, r->timeout_ms);
    gw_up_ready(u);
    return 0;
}

static unsigned rtu_events(const struct gw_upstream *u)
{
    const struct gw_up_rtu_state *r = &u->k.rtu;

    return GW_IO_IN | (r->phase == GW_RTU_SENDING && r->req_sent < r->req_len ? GW_IO_OUT : 0u);
}

static void rtu_drop(struct gw_upstream *u)
{
    struct gw_up_rtu_state *r = &u->k.rtu;

    gw_serial_port_release(u->fd); /* upstream.c closes it next */
    gw_timer_free(r->timer);
    r->timer = NULL;
    r->phase = GW_RTU_IDLE;
    r->room_owed = 0;
    /* Process data, not kept. */
    sodium_memzero(r->req, sizeof r->req);
    sodium_memzero(r->in, sizeof r->in);
    r->req_len = r->req_sent = r->in_len = 0;
}

/* The port has gone (an adapter unplugged) or failed: the upstream reopens it with backoff. */
static void port_lost(struct gw_upstream *u, const char *what, int err)
{
    struct gw_up_rtu_state *r = &u->k.rtu;
    char why[512];

    snprintf(why, sizeof why, "serial port %s: %s%s%s (adapter unplugged?)", r->line.device, what,
             err != 0 ? ": " : "", err != 0 ? strerror(err) : "");
    snprintf(r->last_error, sizeof r->last_error, "%.*s", (int)sizeof r->last_error - 1, why);
    gw_up_fail(u, why);
}

/* ---- sending ---- */

/* The request's last byte is in the port: wait for its answer, or its broadcast's time. */
static void sent(struct gw_upstream *u)
{
    struct gw_up_rtu_state *r = &u->k.rtu;
    /* The port's buffer holds what write() took: the last byte leaves after all of it. */
    int64_t on_wire = gw_now_ns() + (int64_t)r->req_len * r->char_ns;

    r->in_len = 0;
    if (r->req[0] == 0) {
        r->phase = GW_RTU_BROADCAST;
        r->due_ns = on_wire;
    } else {
        r->phase = GW_RTU_WAITING;
        r->due_ns = on_wire + (int64_t)r->timeout_ms * MS_NS;
    }
    gw_timer_at(r->timer, r->due_ns);
    gw_up_rewatch(u);
}

/* Write what is left of the request; -1 after gw_up_fail. */
static int write_some(struct gw_upstream *u)
{
    struct gw_up_rtu_state *r = &u->k.rtu;

    while (r->req_sent < r->req_len) {
        ssize_t n = write(u->fd, r->req + r->req_sent, r->req_len - r->req_sent);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            gw_up_rewatch(u);
            return 0;
        }
        if (n <= 0) {
            port_lost(u, "write", n < 0 ? errno : 0);
            return -1;
        }
        r->req_sent += (size_t)n;
    }
    sent(u);
    return 0;
}

/* Unit 0: only a write whose answer is an echo goes out (see the top of the file). */
static int broadcast_allowed(const uint8_t *adu, size_t len)
{
    const struct mbsc_pdu_function *f =
        mbsc_pdu_lookup(adu + MBSC_MBAP_BYTES, len - MBSC_MBAP_BYTES);

    return f != NULL && f->access == MBSC_PDU_WRITE &&
           (f->answer_rule == MBSC_PDU_ANS_ECHO || f->answer_rule == MBSC_PDU_ANS_ECHO_RANGE);
}

static int rtu_send(struct gw_upstream *u, const uint8_t *adu, size_t len)
{
    struct gw_up_rtu_state *r = line_of(u);

    if (r->phase != GW_RTU_IDLE) {
        r->room_owed = 1;
        return MBSC_ERR_WOULD_BLOCK;
    }
    r->tid = (uint16_t)(adu[0] << 8 | adu[1]);
    r->req_len = gw_rtu_from_adu(adu, len, r->req);
    r->req_sent = 0;
    r->refuse = 0;
    if (adu[MBSC_MBAP_BYTES - 1] == 0 && !broadcast_allowed(adu, len)) {
        /* Answered from the timer, never from inside send. */
        r->refuse = 1;
        r->phase = GW_RTU_BROADCAST;
        r->due_ns = gw_now_ns();
        gw_timer_at(r->timer, r->due_ns);
        return MBSC_OK;
    }
    if (adu[MBSC_MBAP_BYTES - 1] == 0)
        r->n.broadcasts++;
    else
        r->n.requests++;
    r->phase = GW_RTU_SENDING;
    /* A write that does not finish within the answer timeout means the port is stuck. */
    gw_timer_at(r->timer,
                gw_now_ns() + (int64_t)r->req_len * r->char_ns + (int64_t)r->timeout_ms * MS_NS);
    (void)write_some(u); /* a failure is reported through the down hook */
    return MBSC_OK;
}

/* ---- answers ---- */

/* A bad answer: counted, logged (rate-limited), the request gets 0B, the line rests. */
static void bad_answer(struct gw_upstream *u, uint64_t *counter, const char *what)
{
    struct gw_up_rtu_state *r = &u->k.rtu;
    uint16_t tid = r->tid;

    (*counter)++;
    line_warn(u, "%s from unit %u to function 0x%02x: not forwarded, exception 0B", what, r->req[0],
              r->req[1]);
    rest(u, gw_now_ns() + r->gap_ns, 0);
    gw_up_failed(u, tid, MBSC_EXC_GATEWAY_TARGET_FAILED);
}

/* The answer is in[0..n): check it and hand it on. */
static void take_answer(struct gw_upstream *u, size_t n)
{
    struct gw_up_rtu_state *r = &u->k.rtu;
    uint8_t unit = r->req[0], adu[MBSC_ADU_MAX];
    size_t len;

    if (n < GW_RTU_MIN) {
        bad_answer(u, &r->n.framing_errors, "a frame too short to be an answer");
        return;
    }
    if (!gw_rtu_crc_ok(r->in, n)) {
        bad_answer(u, &r->n.crc_errors, "a CRC error in an answer");
        return;
    }
    if (r->in[0] != unit || (r->in[1] & 0x7Fu) != r->req[1]) {
        bad_answer(u, &r->n.framing_errors, "an answer from another unit or to another function");
        return;
    }
    r->n.answers++;
    if ((unsigned)r->silent[unit / 8] >> (unit % 8) & 1u) {
        r->silent[unit / 8] &= (uint8_t) ~(1u << (unit % 8));
        gw_log(GW_INFO, "serial line %s: unit %u answers again", r->line.device, unit);
    }
    len = gw_rtu_to_adu(r->in, n, r->tid, adu);
    rest(u, gw_now_ns() + r->t35_ns, 0);
    gw_up_deliver(u, adu, len);
}

/* The answer timeout passed: 0B, and a rest that catches a late answer. */
static void timed_out(struct gw_upstream *u)
{
    struct gw_up_rtu_state *r = &u->k.rtu;
    uint8_t unit = r->req[0];
    uint16_t tid = r->tid;
    int64_t guard = (int64_t)r->line.turnaround_ms * MS_NS;

    if (r->in_len > 0) {
        bad_answer(u, &r->n.framing_errors, "an answer cut short");
        return;
    }
    r->n.timeouts++;
    snprintf(r->last_error, sizeof r->last_error, "unit %u did not answer within %u ms", unit,
             r->timeout_ms);
    if (!((unsigned)r->silent[unit / 8] >> (unit % 8) & 1u)) {
        r->silent[unit / 8] |= (uint8_t)(1u << (unit % 8));
        gw_log(GW_WARN,
               "serial line %s: unit %u did not answer within %u ms: exception 0B; until it "
               "answers, its timeouts are counted in the status, not logged",
               r->line.device, unit, r->timeout_ms);
    }
    rest(u, gw_now_ns() + (guard > r->gap_ns ? guard : r->gap_ns), 1);
    gw_up_failed(u, tid, MBSC_EXC_GATEWAY_TARGET_FAILED);
}

/* Bytes of an answer, or bytes nobody asked for. */
static void got_bytes(struct gw_upstream *u, const uint8_t *p, size_t n, int64_t now)
{
    struct gw_up_rtu_state *r = &u->k.rtu;
    long want;

    switch (r->phase) {
    case GW_RTU_WAITING:
        if (n > sizeof r->in - r->in_len) {
            bad_answer(u, &r->n.framing_errors, "more bytes than a frame holds");
            return;
        }
        memcpy(r->in + r->in_len, p, n);
        r->in_len += n;
        want =
            gw_rtu_answer_length(r->req + 1, r->req_len - 1 - GW_RTU_CRC_BYTES, r->in, r->in_len);
        if (want > (long)GW_RTU_MAX) {
            bad_answer(u, &r->n.framing_errors, "a length longer than a frame");
        } else if (want > 0 && r->in_len >= (size_t)want) {
            /* Bytes after the answer's end are noise: the rest discards them. */
            take_answer(u, (size_t)want);
        } else if (want == GW_RTU_ANSWER_UNKNOWN) {
            int64_t end = now + r->gap_ns;

            gw_timer_at(r->timer, end < r->due_ns ? end : r->due_ns);
        }
        return;
    case GW_RTU_REST:
        if (r->after_timeout && !r->late_counted) {
            r->late_counted = 1;
            r->n.late++;
            line_warn(u, "discarded a late answer from unit %u (after its timeout of %u ms)",
                      r->req[0], r->timeout_ms);
        }
        if (now + r->gap_ns > r->rest_ns)
            r->rest_ns = now + r->gap_ns;
        return;
    case GW_RTU_IDLE:
        /* Nothing asked: a late answer after the rest, or noise; wait for silence. */
        r->n.late++;
        line_warn(u, "discarded %zu bytes that came while no request was on the line", n);
        rest(u, now + r->gap_ns, 1);
        r->late_counted = 1;
        return;
    case GW_RTU_SENDING:
    case GW_RTU_BROADCAST:
        /* An adapter's echo of what it sends, or a collision: the CRC judges the answer. */
        return;
    }
}

static void rtu_io(struct gw_upstream *u, unsigned happened)
{
    struct gw_up_rtu_state *r = &u->k.rtu;

    if ((happened & GW_IO_OUT) && r->phase == GW_RTU_SENDING && write_some(u) != 0)
        return;
    if (!(happened & (GW_IO_IN | GW_IO_ERR)))
        return;
    for (;;) {
        uint8_t buf[GW_RTU_MAX];
        ssize_t n = read(u->fd, buf, sizeof buf);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (happened & GW_IO_ERR)
                port_lost(u, "the port reports an error or a hang-up", 0);
            return;
        }
        if (n <= 0) {
            /* A tty that is hung up reads as the end of a file. */
            port_lost(u, n < 0 ? "read" : "hung up", n < 0 ? errno : 0);
            return;
        }
        r->last_rx_ns = gw_now_ns();
        got_bytes(u, buf, (size_t)n, r->last_rx_ns);
        sodium_memzero(buf, sizeof buf);
        if (u->state != GW_UP_READY)
            return;
        happened &= ~GW_IO_ERR; /* data came: the error, if any, shows on the next read */
    }
}

/* ---- time ---- */

/* The broadcast is on the wire: its answer for the master, or exception 01 if refused. */
static void broadcast_done(struct gw_upstream *u)
{
    struct gw_up_rtu_state *r = &u->k.rtu;
    uint8_t adu[MBSC_ADU_MAX], out[MBSC_ADU_MAX];
    size_t len = request_adu(r, adu);
    const struct mbsc_pdu_function *f;

    if (r->refuse) {
        r->phase = GW_RTU_IDLE;
        len = mbsc_adu_exception(adu, MBSC_EXC_ILLEGAL_FUNCTION, out);
        if (r->room_owed) {
            r->room_owed = 0;
            gw_up_room(u);
        }
        if (u->state == GW_UP_READY)
            gw_up_deliver(u, out, len);
        return;
    }
    memcpy(out, adu, len);
    f = mbsc_pdu_lookup(adu + MBSC_MBAP_BYTES, len - MBSC_MBAP_BYTES);
    /* 0F, 10: the answer is the function, address and quantity; the others echo it all. */
    if (f != NULL && f->answer_rule == MBSC_PDU_ANS_ECHO_RANGE) {
        len = MBSC_MBAP_BYTES + 5u;
        out[4] = 0;
        out[5] = 6; /* unit id and those five bytes */
    }
    rest(u, gw_now_ns() + (int64_t)r->line.turnaround_ms * MS_NS, 0);
    gw_up_deliver(u, out, len);
}

static void on_timer(void *data)
{
    struct gw_upstream *u = data;
    struct gw_up_rtu_state *r = &u->k.rtu;
    int64_t now = gw_now_ns();

    switch (r->phase) {
    case GW_RTU_SENDING:
        port_lost(u, "the request could not be written within the answer timeout", 0);
        return;
    case GW_RTU_WAITING: {
        /* An answer whose frame does not tell its length ends with the gap's silence. */
        int by_silence =
            r->in_len > 0 && gw_rtu_answer_length(r->req + 1, r->req_len - 1 - GW_RTU_CRC_BYTES,
                                                  r->in, r->in_len) == GW_RTU_ANSWER_UNKNOWN;
        int64_t end = r->last_rx_ns + r->gap_ns;

        if (by_silence && now >= end)
            take_answer(u, r->in_len);
        else if (now >= r->due_ns)
            timed_out(u);
        else
            gw_timer_at(r->timer, by_silence && end < r->due_ns ? end : r->due_ns);
        return;
    }
    case GW_RTU_BROADCAST: broadcast_done(u); return;
    case GW_RTU_REST:
        if (now < r->rest_ns) {
            gw_timer_at(r->timer, r->rest_ns);
            return;
        }
        r->phase = GW_RTU_IDLE;
        r->after_timeout = 0;
        if (r->room_owed) {
            r->room_owed = 0;
            gw_up_room(u);
        }
        return;
    case GW_RTU_IDLE: return;
    }
}

/* ---- status ---- */

static void rtu_describe(const struct gw_upstream *u, char *buf, size_t len)
{
    struct gw_up_rtu_state copy;
    const struct gw_up_rtu_state *r = &u->k.rtu;
    char settings[64];

    if (!r->parsed) {
        copy = *r;
        compute_line(&copy, u->name, u->set.request_timeout_ms);
        r = &copy;
    }

    gw_serial_target_describe(&r->line, settings, sizeof settings);
    snprintf(buf, len,
             "Modbus RTU %s, answer timeout %u ms; requests %llu, answers %llu, timeouts %llu, "
             "CRC errors %llu, framing errors %llu, late answers %llu, broadcasts %llu; last "
             "error: %s",
             settings, r->timeout_ms, (unsigned long long)r->n.requests,
             (unsigned long long)r->n.answers, (unsigned long long)r->n.timeouts,
             (unsigned long long)r->n.crc_errors, (unsigned long long)r->n.framing_errors,
             (unsigned long long)r->n.late, (unsigned long long)r->n.broadcasts,
             r->last_error[0] != '\0' ? r->last_error : "none");
}

const struct gw_up_kind gw_up_rtu = {
    .name = "rtu",
    .open = rtu_open,
    .connected = rtu_connected,
    .events = rtu_events,
    .io = rtu_io,
    .send = rtu_send,
    .drop = rtu_drop,
    .describe = rtu_describe,
};
