/* SPDX-License-Identifier: ISC */
/*
 * version.c - mbsc_version(): the version this library was built as, so
 * that a program linked against a shared libmbsc can tell which one it got
 * (the MBSC_VERSION_* macros only tell which headers it was compiled with).
 */
#include "mbsc/version.h"

const char *mbsc_version(void)
{
    return MBSC_VERSION_STRING;
}
