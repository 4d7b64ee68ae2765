/* SPDX-License-Identifier: ISC */
/*
 * init.c - mbsc_init(): libsodium's initialisation, for every entry point
 * that needs it.
 *
 * sodium_init() is itself idempotent and thread-safe (libsodium 1.0.11 and
 * later; configure requires 1.0.18), but it takes a global lock on every
 * call.  The flag below only skips that lock once initialisation has
 * succeeded; a failure is never cached, so a later call tries again.
 */
#include <stdatomic.h>

#include <sodium.h>

#include "mbsc/error.h"
#include "mbsc/init.h"

static atomic_int initialised;

int mbsc_init(void)
{
    /* Acquire pairs with the release below: whoever sees the flag also sees
     * everything sodium_init() set up (implementation pointers). */
    if (atomic_load_explicit(&initialised, memory_order_acquire))
        return MBSC_OK;
    if (sodium_init() < 0)
        return MBSC_ERR_INIT;
    atomic_store_explicit(&initialised, 1, memory_order_release);
    return MBSC_OK;
}
