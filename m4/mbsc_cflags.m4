dnl SPDX-License-Identifier: ISC
# mbsc_cflags.m4 - probe compiler flags one at a time.
#
# MBSC_PROBE_CFLAGS(VARIABLE, FLAG...)
#   For each FLAG, try to compile an empty program with -Werror FLAG; append
#   the flag to VARIABLE when the compiler accepts it.  -Werror makes
#   compilers that merely warn about an unknown option (clang) reject it.
AC_DEFUN([MBSC_PROBE_CFLAGS], [
  for mbsc_flag in $2; do
    AS_VAR_PUSHDEF([mbsc_cache], [mbsc_cv_cflag_$mbsc_flag])
    AC_CACHE_CHECK([whether $CC accepts $mbsc_flag], [mbsc_cache], [
      mbsc_save_CFLAGS=$CFLAGS
      CFLAGS="$CFLAGS -Werror $mbsc_flag"
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
                        [AS_VAR_SET([mbsc_cache], [yes])],
                        [AS_VAR_SET([mbsc_cache], [no])])
      CFLAGS=$mbsc_save_CFLAGS])
    AS_VAR_IF([mbsc_cache], [yes], [$1="$$1 $mbsc_flag"])
    AS_VAR_POPDEF([mbsc_cache])
  done
])
