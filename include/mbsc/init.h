/* SPDX-License-Identifier: ISC */
/*
 * mbsc/init.h - library initialisation.
 *
 * mbsc uses libsodium for randomness, X25519, BLAKE2b, Poly1305 and wiping,
 * and libsodium must be initialised before use.  Every mbsc function that
 * needs it calls mbsc_init() itself (key generation and loading, configs,
 * allow-lists, sessions, connections, the libmodbus adapter), so a program
 * never has to call libsodium, nor mbsc_init(): call it first only to learn
 * early, with a clear error, that the system cannot provide randomness.
 */
#ifndef MBSC_INIT_H
#define MBSC_INIT_H

#include "mbsc/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Initialise the library (libsodium's sodium_init(): CPU feature detection
 * and the random generator).  Idempotent and thread-safe: any number of
 * calls, from any threads, at once or not; after the first success every
 * call returns MBSC_OK at once.  Returns MBSC_OK or MBSC_ERR_INIT (libsodium
 * could not be initialised, e.g. no random source in a minimal chroot:
 * mount /dev or provide getrandom()).  No matching cleanup is needed.
 */
MBSC_API MBSC_WUR int mbsc_init(void);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_INIT_H */
