/* SPDX-License-Identifier: ISC */
/*
 * mux_fake.h - what the gateway's multiplexer (tools/gateway/mux.c) needs
 * around it, faked for its unit tests (check_mux.c) and its fuzz target
 * (fuzz/fuzz_mux.c): an upstream whose state, sends and answers the test
 * decides, and a gw_log that keeps lines instead of printing them.
 *
 * The fake upstream keeps what the multiplexer sent, and counts the
 * transaction ids that go out again on one connection although no answer
 * to them came since they last went out: the multiplexer frees an id only
 * when its answer comes, so such an id belonged to a request that is in
 * flight or timed out, whose answer may still come and would then meet
 * the new request.
 */
#ifndef MBSC_TEST_MUX_FAKE_H
#define MBSC_TEST_MUX_FAKE_H

#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "mux.h"
#include "upstream.h"

/* What went out: the first FAKE_KEPT bytes (the tests send 12-byte reads). */
#define FAKE_KEPT 16u
struct fake_sent {
    uint8_t adu[FAKE_KEPT];
    size_t len; /* the whole ADU's */
    uint64_t connection;
    int answered; /* the test's to set: a device answers a request once */
};

struct gw_upstream {
    struct gw_upstream_hooks h;
    enum gw_up_state state;
    int would_block;               /* gw_upstream_send answers MBSC_ERR_WOULD_BLOCK */
    int break_on_send;             /* the next send breaks the connection (down, was_ready) */
    unsigned corked;               /* gw_upstream_cork depth: 0 between calls into the mux */
    size_t sent_at_cork;           /* n_sent at the outermost cork */
    uint64_t corked_sends;         /* outermost uncorks with sends kept: one segment each */
    uint64_t connection;           /* 1, 2, ...: counts fake_up_ready */
    uint64_t resets;               /* gw_upstream_reset calls that ended a connection */
    uint64_t reused;               /* ids sent again with no answer since (see above) */
    uint8_t unanswered[65536 / 8]; /* ids sent on this connection and not answered since */
    struct fake_sent *sent;        /* everything sent, all connections */
    size_t n_sent, cap_sent;
};

/* A fake upstream with the multiplexer's hooks, not connected (GW_UP_IDLE). */
void fake_up_init(struct gw_upstream *u, const struct gw_upstream_hooks *hooks);
void fake_up_free(struct gw_upstream *u);
/* A new connection is ready: the hook up runs. */
void fake_up_ready(struct gw_upstream *u);
/* The connection ends or cannot be made: the hook down runs. */
void fake_up_down(struct gw_upstream *u, int was_ready);
/*
 * An answer arrives: the hook answer runs.  fits: it answers the request
 * that last went out with its id (the multiplexer may then free the id).
 */
void fake_up_answer(struct gw_upstream *u, const uint8_t *adu, size_t len, int fits);
/*
 * The upstream says request i of those sent (on the connection that is
 * ready, not answered yet) will never be answered: the hook failed runs
 * with 0B, and the request counts as answered (no answer follows, so its
 * id may go out again).  Nothing happens for any other request.
 */
void fake_up_fail(struct gw_upstream *u, size_t i);
/* The last ADU sent, or NULL. */
const struct fake_sent *fake_up_last(const struct gw_upstream *u);

/* gw_log's lines: how many, and the last one. */
extern unsigned fake_log_lines;
extern char fake_log_last[512];

#endif /* MBSC_TEST_MUX_FAKE_H */
