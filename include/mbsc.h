/* SPDX-License-Identifier: ISC */
/*
 * mbsc.h - Modbus/TCP secure channel.  Include this one header.
 *
 * Conventions for the whole API:
 *
 *  - Names start with mbsc_ (functions, types) or MBSC_ (macros, constants).
 *  - Lengths are size_t.  Keys and other fixed-size inputs are arrays whose
 *    size appears in the prototype.
 *  - Functions that can fail return int: MBSC_OK (0) or a non-negative count
 *    on success, a negative enum mbsc_error on failure (mbsc_strerror gives
 *    the text).  errno is not used to report mbsc errors.
 *  - Pointers are owned by the caller unless a function says otherwise;
 *    NULL is accepted only where the documentation says so.
 *  - The cipher layer never allocates.  Objects created with _new are
 *    released with _free, which wipes every secret they hold.
 *  - No initialisation call is needed: every function that needs libsodium
 *    initialises it through mbsc_init() (mbsc/init.h), so a program never
 *    has to call libsodium itself.
 *  - No global mutable state (one exception: the libmodbus client adapter
 *    keeps a mutex-protected registry of its pump contexts, the fallback
 *    path; see mbsc/modbus.h):
 *    distinct objects may be used from distinct threads; one object must
 *    not be used by two threads at once unless its header says so.
 */
#ifndef MBSC_H
#define MBSC_H

#include "mbsc/export.h"
#include "mbsc/version.h"
#include "mbsc/init.h"
#include "mbsc/error.h"
#include "mbsc/cipher.h"
#include "mbsc/keys.h"
#include "mbsc/session.h"
#include "mbsc/conn.h"
#include "mbsc/link.h"
#include "mbsc/pdu.h"
#include "mbsc/policy.h"
#include "mbsc/server.h"
/* @umbrella: further headers above this line */

#endif /* MBSC_H */
