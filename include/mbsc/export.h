/* SPDX-License-Identifier: ISC */
/*
 * mbsc/export.h - symbol visibility and attribute macros.
 *
 * The library is built with -fvisibility=hidden; only declarations marked
 * MBSC_API are exported from the shared object.
 */
#ifndef MBSC_EXPORT_H
#define MBSC_EXPORT_H

#if defined(MBSC_BUILDING_LIBRARY) && defined(__GNUC__)
#define MBSC_API __attribute__((visibility("default")))
#else
#define MBSC_API
#endif

/* Functions whose failure must not be ignored (tag checks, handshakes). */
#if defined(__GNUC__)
#define MBSC_WUR __attribute__((warn_unused_result))
#else
#define MBSC_WUR
#endif

#endif /* MBSC_EXPORT_H */
