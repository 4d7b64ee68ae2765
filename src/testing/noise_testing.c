/* SPDX-License-Identifier: ISC */
/*
 * testing/noise_testing.c - the tests' fixed ephemeral key for the Noise
 * handshake (noise.h), so that they can reproduce the published vectors.
 *
 * Part of libmbsc-testing.la, which only the test programs and fuzzers
 * link: libmbsc itself has no way to fix an ephemeral key.
 */
#include <string.h>

#include "internal.h"
#include "noise/noise.h"

int mbsc_noise_set_ephemeral_for_testing(mbsc_noise *hs, const uint8_t e_priv[MBSC_NOISE_DHLEN])
{
    int ret = MBSC_OK;

    if (hs == NULL)
        return MBSC_ERR_INVALID_ARG;
    /* A failed state keeps its first error (mbsc_noise_abort returns it).
     * next_overhead fails once the handshake is complete or not initialized. */
    if (e_priv == NULL)
        ret = MBSC_ERR_INVALID_ARG;
    else if (mbsc_noise_next_overhead(hs) < 0 || hs->has_e_)
        ret = MBSC_ERR_STATE;
    if (ret != MBSC_OK)
        return mbsc_noise_abort(hs, ret);
    memcpy(hs->e_priv_, e_priv, MBSC_NOISE_DHLEN);
    hs->e_fixed_ = 1;
    return MBSC_OK;
}
