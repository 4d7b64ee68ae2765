/* SPDX-License-Identifier: ISC */
/*
 * mux_fake.c - the multiplexer's surroundings, faked (see mux_fake.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mux_fake.h"

unsigned fake_log_lines;
char fake_log_last[512];

void gw_log(enum gw_level level, const char *fmt, ...)
{
    va_list ap;

    (void)level;
    va_start(ap, fmt);
    (void)vsnprintf(fake_log_last, sizeof fake_log_last, fmt, ap);
    va_end(ap);
    fake_log_lines++;
}

void fake_up_init(struct gw_upstream *u, const struct gw_upstream_hooks *hooks)
{
    memset(u, 0, sizeof *u);
    u->h = *hooks;
    u->state = GW_UP_IDLE;
}

void fake_up_free(struct gw_upstream *u)
{
    free(u->sent);
    memset(u, 0, sizeof *u);
}

void fake_up_ready(struct gw_upstream *u)
{
    u->state = GW_UP_READY;
    u->connection++;
    memset(u->unanswered, 0, sizeof u->unanswered);
    u->h.up(u->h.user);
}

void fake_up_down(struct gw_upstream *u, int was_ready)
{
    u->state = was_ready ? GW_UP_IDLE : GW_UP_BACKOFF;
    u->h.down(u->h.user, was_ready, was_ready ? "the test ended it" : "the test refused it");
}

void fake_up_answer(struct gw_upstream *u, const uint8_t *adu, size_t len, int fits)
{
    unsigned tid = (unsigned)adu[0] << 8 | adu[1];

    if (fits)
        u->unanswered[tid / 8] &= (uint8_t) ~(1u << (tid % 8));
    u->h.answer(u->h.user, adu, len);
}

void fake_up_fail(struct gw_upstream *u, size_t i)
{
    struct fake_sent *s = &u->sent[i];
    unsigned tid = (unsigned)s->adu[0] << 8 | s->adu[1];

    if (u->state != GW_UP_READY || s->connection != u->connection || s->answered)
        return;
    s->answered = 1;
    u->unanswered[tid / 8] &= (uint8_t) ~(1u << (tid % 8));
    u->h.failed(u->h.user, (uint16_t)tid, MBSC_EXC_GATEWAY_TARGET_FAILED);
}

const struct fake_sent *fake_up_last(const struct gw_upstream *u)
{
    return u->n_sent > 0 ? &u->sent[u->n_sent - 1] : NULL;
}

/* ---- what mux.c calls ---- */

enum gw_up_state gw_upstream_state(const struct gw_upstream *u)
{
    return u->state;
}

const char *gw_upstream_name(const struct gw_upstream *u)
{
    (void)u;
    return "fake:502";
}

void gw_upstream_cork(struct gw_upstream *u)
{
    if (u->corked++ == 0)
        u->sent_at_cork = u->n_sent;
}

void gw_upstream_uncork(struct gw_upstream *u)
{
    if (u->corked == 0)
        abort(); /* an uncork without its cork: the multiplexer lost count */
    if (--u->corked == 0 && u->n_sent > u->sent_at_cork)
        u->corked_sends++;
}

int gw_upstream_send(struct gw_upstream *u, const uint8_t *adu, size_t len)
{
    unsigned tid;

    if (u->state != GW_UP_READY)
        return MBSC_ERR_STATE;
    if (u->would_block)
        return MBSC_ERR_WOULD_BLOCK;
    if (u->n_sent == u->cap_sent) {
        size_t cap = u->cap_sent ? 2 * u->cap_sent : 64;
        struct fake_sent *n = realloc(u->sent, cap * sizeof *n);

        if (n == NULL)
            abort(); /* a test harness out of memory: nothing to test any more */
        u->sent = n;
        u->cap_sent = cap;
    }
    memcpy(u->sent[u->n_sent].adu, adu, len < FAKE_KEPT ? len : FAKE_KEPT);
    u->sent[u->n_sent].len = len;
    u->sent[u->n_sent].connection = u->connection;
    u->sent[u->n_sent].answered = 0;
    u->n_sent++;
    tid = (unsigned)adu[0] << 8 | adu[1];
    if (u->unanswered[tid / 8] & (1u << (tid % 8)))
        u->reused++;
    u->unanswered[tid / 8] |= (uint8_t)(1u << (tid % 8));
    if (u->break_on_send) {
        /* As upstream.c: a send that fails ends the connection, reported at once. */
        u->break_on_send = 0;
        fake_up_down(u, 1);
    }
    return MBSC_OK;
}

void gw_upstream_reset(struct gw_upstream *u, const char *why)
{
    int was_ready = u->state == GW_UP_READY;

    if (u->state != GW_UP_READY && u->state != GW_UP_CONNECTING)
        return;
    u->resets++;
    u->state = was_ready ? GW_UP_IDLE : GW_UP_BACKOFF;
    u->h.down(u->h.user, was_ready, why);
}
