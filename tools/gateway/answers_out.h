/* SPDX-License-Identifier: ISC */
/*
 * answers_out.h - answers kept until the loop is about to sleep.
 *
 * The process an answer wakes (a master, another gateway) is often woken
 * on this process's CPU, and then waits there until this one gives it up.
 * So answers are not sent the moment they are known but as the last thing
 * the loop does before it sleeps (gw_loop_before_sleep), or before it
 * takes the next event of a busy turn: the woken process runs at once.
 */
#ifndef MBSC_GATEWAY_ANSWERS_OUT_H
#define MBSC_GATEWAY_ANSWERS_OUT_H

#include <stddef.h>
#include <stdint.h>

#include <mbsc.h>

#include "loop.h"

/* Send one kept answer to its receiver (an id of the owner's); what fails is the owner's. */
typedef void (*gw_answer_send_fn)(void *user, uint64_t to, const uint8_t *adu, size_t len);

struct gw_kept_answer {
    uint64_t to;
    size_t len;
    uint8_t adu[MBSC_ADU_MAX];
};

struct gw_answers_out {
    struct gw_loop *loop;
    gw_answer_send_fn send;
    void *user;
    struct gw_kept_answer *kept;
    size_t n, cap;
    int planned; /* a before-sleep call is planned */
};

void gw_answers_out_init(struct gw_answers_out *a, struct gw_loop *loop, gw_answer_send_fn send,
                         void *user);
/* Keep a copy of adu for to; sent at once instead when out of memory. */
void gw_answers_out_put(struct gw_answers_out *a, uint64_t to, const uint8_t *adu, size_t len);
/* Send what is kept now (the owner is going away, or must not wait). */
void gw_answers_out_flush(struct gw_answers_out *a);
/* Wipe and free what is kept, unsent, and cancel the planned call. */
void gw_answers_out_free(struct gw_answers_out *a);

#endif /* MBSC_GATEWAY_ANSWERS_OUT_H */
