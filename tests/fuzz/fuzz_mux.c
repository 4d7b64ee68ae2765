/* SPDX-License-Identifier: ISC */
/*
 * fuzz_mux.c - the gateway's multiplexer (tools/gateway/mux.c) driven by a
 * script, over a fake upstream (tests/mux_fake.c), with a reply callback
 * that forgets its requester and submits again as both gateway modes'
 * callbacks can (issue 19): a server-mode answer to a master whose socket
 * has closed ends its session and forgets it; a client-mode answer that
 * cannot be sent closes the local client; a requester asks again.
 *
 * Input: byte 0 sets max_in_flight (1 + bits 0-1) and max_queue (1 + bits
 * 2-4), byte 1 the request timeout (1 + byte, in ms); then operations, one
 * byte each (its value modulo OP_COUNT) and their arguments:
 *   SUBMIT o        origin o % 8 reads one register (origins in 3 groups)
 *   ANSWER k        the fake answers the k-th newest request sent
 *   ANSWER_OLD kk   the fake answers request kk (u16) % sent, oldest first
 *                   (late answers)
 *   MALFORMED k     a wrong-sized answer to the k-th newest request sent
 *   TICK t          the clock moves 2 t ms, then gw_mux_tick
 *   READY           a new connection is ready
 *   LOST            the connection ends (in-flight requests get 0B)
 *   REFUSED         a connection attempt fails (queued requests get 0A)
 *   FORGET o        origin o % 8 is gone
 *   BLOCK           the fake's sends would block, or no longer
 *   BREAK           the next send breaks the connection, reported at once
 *   BURST nn        nn (u16) + 1 round trips of origin 8 when nothing else
 *                   is pending (to move the transaction ids round)
 *   FAILED k        the upstream says the k-th newest request sent will
 *                   never be answered (a serial line's timeout or bad CRC):
 *                   the failed hook, with 0B
 * The fake's device answers only requests sent on the connection that is
 * ready, each at most once (a malformed answer aside), since that is all a
 * device can do: nothing crosses from one TCP connection to the next.
 * Each reply (outside bursts) takes one more byte: bit 0, forget the
 * origin answered; bit 1, that origin submits again; bit 2, forget origin
 * bits 3-5.  Bytes run out as zeros.
 *
 * Properties: a reply goes only to an origin that has a request
 * outstanding and answers one of them (its own transaction id; for an
 * answer from upstream, the register that request read, so an answer can
 * never reach another requester); a forgotten origin gets nothing more;
 * exceptions are 06, 0A or 0B only; between operations gw_mux_pending of
 * each origin equals its outstanding requests (nothing is left in an
 * outbox); no transaction id goes out again on one connection before an
 * answer to it came (mux_fake.h); at the end, with the connection
 * gone and the clock far ahead, every outstanding request has had exactly
 * one reply and nothing is left (LeakSanitizer checks the frees).
 */
#include <string.h>

#include "fuzz_common.h"
#include "mux_fake.h"

#define N_ORIGINS 9 /* 8 scripted, and the burst's */
#define BURST     8
#define MS        ((int64_t)1000000)

enum {
    OP_SUBMIT,
    OP_ANSWER,
    OP_ANSWER_OLD,
    OP_MALFORMED,
    OP_TICK,
    OP_READY,
    OP_LOST,
    OP_REFUSED,
    OP_FORGET,
    OP_BLOCK,
    OP_BREAK,
    OP_BURST,
    OP_FAILED,
    OP_COUNT
};

struct outstanding {
    uint16_t tid, addr;
};

static struct {
    struct fuzz_in in;
    struct gw_mux *mux;
    struct gw_upstream up;
    int64_t now;
    int in_burst;
    uint16_t seq[N_ORIGINS];
    struct outstanding *out[N_ORIGINS];
    size_t n_out[N_ORIGINS], cap_out[N_ORIGINS];
} h;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t origin_id(unsigned o)
{
    return (uint64_t)o + 1; /* 0 is nobody's */
}

/* Three groups, as masters with several sessions each. */
static uint64_t group_of(unsigned o)
{
    return o == BURST ? 99 : o % 3;
}

static void forget(unsigned o)
{
    gw_mux_forget(h.mux, origin_id(o));
    h.n_out[o] = 0;
}

static void submit(unsigned o)
{
    uint16_t tid = ++h.seq[o];
    /* The register names the request: an answer carries it back. */
    uint16_t addr = (uint16_t)(o << 12 | (tid & 0x0FFFu));
    const uint8_t adu[12] = {(uint8_t)(tid >> 8),  (uint8_t)tid,  0, 0, 0, 6, 1, 0x03,
                             (uint8_t)(addr >> 8), (uint8_t)addr, 0, 1};

    if (h.n_out[o] == h.cap_out[o]) {
        size_t cap = h.cap_out[o] ? 2 * h.cap_out[o] : 16;
        struct outstanding *n = realloc(h.out[o], cap * sizeof *n);

        FUZZ_CHECK(n != NULL);
        h.out[o] = n;
        h.cap_out[o] = cap;
    }
    /* Counted before the call: the answer may come during it. */
    h.out[o][h.n_out[o]].tid = tid;
    h.out[o][h.n_out[o]].addr = addr;
    h.n_out[o]++;
    FUZZ_ASSERT(gw_mux_submit(h.mux, origin_id(o), group_of(o), adu, sizeof adu, h.now) == MBSC_OK,
                "submit failed");
}

static void on_reply(void *user, uint64_t origin, const uint8_t *adu, size_t len)
{
    unsigned o = (unsigned)(origin - 1), i;
    uint16_t tid;
    uint8_t what;

    (void)user;
    FUZZ_ASSERT(origin >= 1 && origin <= N_ORIGINS, "a reply to origin %llu, never used",
                (unsigned long long)origin);
    FUZZ_ASSERT(len >= 9 && len <= MBSC_ADU_MAX, "a reply of %zu bytes", len);
    tid = (uint16_t)(adu[0] << 8 | adu[1]);
    for (i = 0; i < h.n_out[o]; i++)
        if (h.out[o][i].tid == tid)
            break;
    FUZZ_ASSERT(i < h.n_out[o], "origin %u got a reply with id %u, which it is not waiting for", o,
                tid);
    if (adu[7] & 0x80) {
        FUZZ_ASSERT(len == 9 && (adu[8] == 0x06 || adu[8] == 0x0A || adu[8] == 0x0B),
                    "origin %u got exception %02x", o, adu[8]);
    } else {
        uint16_t v = (uint16_t)(adu[9] << 8 | adu[10]);

        FUZZ_ASSERT(len == 11 && adu[7] == 0x03 && adu[8] == 2, "origin %u got a malformed answer",
                    o);
        FUZZ_ASSERT(v == h.out[o][i].addr,
                    "origin %u got the answer to a request for register %u, not to its own "
                    "for register %u",
                    o, v, h.out[o][i].addr);
    }
    h.out[o][i] = h.out[o][--h.n_out[o]];
    if (h.in_burst)
        return;
    what = fuzz_byte(&h.in);
    if (what & 1)
        forget(o);
    if (what & 2)
        submit(o);
    if (what & 4)
        forget((what >> 3) % 8);
}

/*
 * The fake's device answers request sent[i] with the register's number,
 * if it can: on the connection the request went out on, once.
 */
static void answer(size_t i, int malformed)
{
    struct fake_sent *s = &h.up.sent[i];
    const uint8_t *req = s->adu;
    uint8_t ans[13] = {req[0], req[1], 0, 0, 0, 5, req[6], 0x03, 2, req[8], req[9], 0, 0};

    if (h.up.state != GW_UP_READY || s->connection != h.up.connection || s->answered)
        return;
    if (!malformed)
        s->answered = 1;
    if (malformed) {
        ans[5] = 7; /* a byte count of 4 for a read of one register */
        ans[8] = 4;
    }
    fake_up_answer(&h.up, ans, malformed ? 13 : 11, !malformed);
}

static void burst(unsigned n)
{
    unsigned i;

    if (h.up.state != GW_UP_READY || h.up.would_block || h.up.break_on_send ||
        gw_mux_total(h.mux) != 0)
        return;
    h.in_burst = 1;
    for (i = 0; i < n; i++) {
        size_t before = h.up.n_sent;

        submit(BURST);
        FUZZ_ASSERT(h.up.n_sent == before + 1 || h.up.state != GW_UP_READY,
                    "a request with nothing ahead of it did not go out");
        if (h.up.state != GW_UP_READY)
            break; /* every id was used up: the connection is made again */
        answer(h.up.n_sent - 1, 0);
    }
    h.in_burst = 0;
}

/* Between operations: nothing waits in an outbox or a corked upstream, nothing is sent twice. */
static void check_between(void)
{
    unsigned o;

    for (o = 0; o < N_ORIGINS; o++)
        FUZZ_ASSERT(gw_mux_pending(h.mux, origin_id(o)) == h.n_out[o],
                    "origin %u: the multiplexer has %u requests, %zu are outstanding", o,
                    gw_mux_pending(h.mux, origin_id(o)), h.n_out[o]);
    FUZZ_ASSERT(h.up.reused == 0,
                "a transaction id went out again on one connection with no answer to it");
    FUZZ_ASSERT(h.up.corked == 0,
                "the upstream is still corked after a call: what it kept would never leave");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_mux_config cfg;
    struct gw_upstream_hooks hooks;
    unsigned o;
    uint8_t b;

    memset(&h, 0, sizeof h);
    h.in.p = data;
    h.in.n = size;
    b = fuzz_byte(&h.in);
    cfg.max_in_flight = 1u + (b & 3u);
    cfg.max_queue = 1u + ((b >> 2) & 7u);
    cfg.timeout_ms = 1u + fuzz_byte(&h.in);
    cfg.unreachable_code = MBSC_EXC_GATEWAY_PATH_UNAVAILABLE;
    h.mux = gw_mux_new(&cfg, on_reply, NULL);
    FUZZ_CHECK(h.mux != NULL);
    hooks = gw_mux_hooks(h.mux);
    fake_up_init(&h.up, &hooks);
    gw_mux_attach(h.mux, &h.up);

    while (h.in.n > 0) {
        uint8_t op = fuzz_byte(&h.in) % OP_COUNT;

        switch (op) {
        case OP_SUBMIT: submit(fuzz_byte(&h.in) % 8u); break;
        case OP_ANSWER:
        case OP_MALFORMED: {
            size_t k = fuzz_byte(&h.in);

            if (h.up.n_sent > 0)
                answer(h.up.n_sent - 1 - k % h.up.n_sent, op == OP_MALFORMED);
            break;
        }
        case OP_ANSWER_OLD: {
            size_t k = fuzz_u16(&h.in);

            if (h.up.n_sent > 0)
                answer(k % h.up.n_sent, 0);
            break;
        }
        case OP_TICK:
            h.now += 2 * (int64_t)fuzz_byte(&h.in) * MS;
            gw_mux_tick(h.mux, h.now);
            break;
        case OP_READY:
            if (h.up.state != GW_UP_READY)
                fake_up_ready(&h.up);
            break;
        case OP_LOST:
            if (h.up.state == GW_UP_READY)
                fake_up_down(&h.up, 1);
            break;
        case OP_REFUSED:
            if (h.up.state != GW_UP_READY)
                fake_up_down(&h.up, 0);
            break;
        case OP_FORGET: forget(fuzz_byte(&h.in) % 8u); break;
        case OP_BLOCK: h.up.would_block = !h.up.would_block; break;
        case OP_BREAK: h.up.break_on_send = 1; break;
        case OP_BURST: burst(1u + fuzz_u16(&h.in)); break;
        case OP_FAILED: {
            size_t k = fuzz_byte(&h.in);

            if (h.up.n_sent > 0)
                fake_up_fail(&h.up, h.up.n_sent - 1 - k % h.up.n_sent);
            break;
        }
        default: break;
        }
        check_between();
    }

    /* The end: the connection goes, attempts fail, every request is answered. */
    if (h.up.state == GW_UP_READY)
        fake_up_down(&h.up, 1);
    fake_up_down(&h.up, 0);
    h.now += 3600000 * MS;
    gw_mux_tick(h.mux, h.now);
    check_between();
    for (o = 0; o < N_ORIGINS; o++)
        FUZZ_ASSERT(h.n_out[o] == 0, "origin %u: %zu requests never answered", o, h.n_out[o]);
    FUZZ_ASSERT(gw_mux_total(h.mux) == 0, "%u requests left", gw_mux_total(h.mux));
    gw_mux_free(h.mux);
    fake_up_free(&h.up);
    for (o = 0; o < N_ORIGINS; o++)
        free(h.out[o]);
    return 0;
}
