/* SPDX-License-Identifier: ISC */
/*
 * answers_out.c - answers kept until the loop is about to sleep
 * (answers_out.h).
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "answers_out.h"

void gw_answers_out_init(struct gw_answers_out *a, struct gw_loop *loop, gw_answer_send_fn send,
                         void *user)
{
    memset(a, 0, sizeof *a);
    a->loop = loop;
    a->send = send;
    a->user = user;
}

static void flush_planned(void *data)
{
    struct gw_answers_out *a = data;

    a->planned = 0;
    gw_answers_out_flush(a);
}

static int make_room(struct gw_answers_out *a)
{
    size_t cap;
    struct gw_kept_answer *n;

    if (a->n < a->cap)
        return 0;
    cap = a->cap != 0 ? 2 * a->cap : 16;
    n = realloc(a->kept, cap * sizeof *n);
    if (n == NULL)
        return -1;
    a->kept = n;
    a->cap = cap;
    return 0;
}

void gw_answers_out_put(struct gw_answers_out *a, uint64_t to, const uint8_t *adu, size_t len)
{
    struct gw_kept_answer *k;

    if (len > MBSC_ADU_MAX || make_room(a) != 0 ||
        (!a->planned && gw_loop_before_sleep(a->loop, flush_planned, a) != 0)) {
        a->send(a->user, to, adu, len); /* no room to keep it: at once */
        return;
    }
    a->planned = 1;
    k = &a->kept[a->n++];
    k->to = to;
    k->len = len;
    memcpy(k->adu, adu, len);
}

/*
 * A send may end a session, whose owner then forgets it; it may also keep
 * another answer (appended, and sent by this same walk).
 */
void gw_answers_out_flush(struct gw_answers_out *a)
{
    size_t i;

    for (i = 0; i < a->n; i++) {
        struct gw_kept_answer k = a->kept[i]; /* the array may move under the call */

        a->send(a->user, k.to, k.adu, k.len);
        sodium_memzero(&k, sizeof k); /* process data, not kept */
        sodium_memzero(&a->kept[i], sizeof a->kept[i]);
    }
    a->n = 0;
}

void gw_answers_out_free(struct gw_answers_out *a)
{
    if (a->planned)
        gw_loop_forget_before_sleep(a->loop, a);
    if (a->kept != NULL)
        sodium_memzero(a->kept, a->cap * sizeof *a->kept);
    free(a->kept);
    memset(a, 0, sizeof *a);
}
