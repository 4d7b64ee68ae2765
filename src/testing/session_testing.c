/* SPDX-License-Identifier: ISC */
/*
 * testing/session_testing.c - sessions with a fixed ephemeral key, for the
 * tests that compare handshake bytes with the mbsc/1 protocol vectors.
 *
 * Part of libmbsc-testing.la, which only the test programs and fuzzers
 * link: libmbsc itself has no such entry point.
 */
#include "noise/noise.h"
#include "record/record.h"
#include "session/session_internal.h"

static int fix_ephemeral(struct mbsc_noise *hs, const void *e_priv)
{
    return mbsc_noise_set_ephemeral_for_testing(hs, e_priv);
}

mbsc_session *mbsc_session_new_for_testing(const mbsc_config *cfg,
                                           const uint8_t e_priv[MBSC_KEY_BYTES], int *err)
{
    if (e_priv == NULL) {
        if (err != NULL)
            *err = MBSC_ERR_INVALID_ARG;
        return NULL;
    }
    return mbsc_session_create(cfg, fix_ephemeral, e_priv, err);
}

/*
 * The counter, and the key epoch that goes with it under "no rekey is
 * done": the key in use is the one of the frames that passed, so a counter
 * at a multiple of MBSC_REKEY_AFTER_FRAMES still has its rekey ahead.
 */
static void set_counter(struct mbsc_record_dir *d, uint64_t counter)
{
    d->counter = counter;
    d->epoch = counter == 0 ? 0 : (counter - 1) / MBSC_REKEY_AFTER_FRAMES;
}

int mbsc_session_set_counters_for_testing(mbsc_session *s, uint64_t send, uint64_t recv)
{
    if (!mbsc_session_established(s))
        return MBSC_ERR_STATE;
    set_counter(mbsc_session_record_dir(s, 1), send);
    set_counter(mbsc_session_record_dir(s, 0), recv);
    return MBSC_OK;
}
