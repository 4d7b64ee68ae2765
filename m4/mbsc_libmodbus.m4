dnl SPDX-License-Identifier: ISC
# mbsc_libmodbus.m4 - which libmodbus was found, and does it carry the fix
# for CVE-2022-0367 (heap buffer overflow in modbus_reply(), found by
# fuzzing its function 0x17 handling)?
#
# MBSC_LIBMODBUS_CVE_2022_0367
#   After PKG_CHECK_MODULES([MODBUS], ...) found it.  Sets
#   MBSC_MODBUS_SUMMARY to one line for the configure summary, and warns
#   when the fix cannot be shown to be present.  The fix is present in
#   upstream 3.1.10 and later, and in Debian's packages from 3.1.6-2.1 on
#   (debian/changelog: "CVE-2022-0367: Heap-based buffer overflow in
#   modbus_reply()"), so Debian 12 (3.1.6-2.1+deb12u1) and Debian 13
#   (3.1.11) have it.  The Debian version is that of the package owning the
#   libmodbus.pc that pkg-config used (dpkg -S), or, for a sysroot of
#   unpacked packages that dpkg does not know, the first entry of the
#   changelog.Debian.gz installed beside it.
AC_DEFUN([MBSC_LIBMODBUS_CVE_2022_0367], [
  mbsc_modbus_version=`$PKG_CONFIG --modversion libmodbus 2>/dev/null`
  mbsc_modbus_pcdir=`$PKG_CONFIG --variable=pcfiledir libmodbus 2>/dev/null`
  mbsc_modbus_deb=
  mbsc_modbus_fixed=no
  AC_MSG_CHECKING([whether libmodbus $mbsc_modbus_version has the fix for CVE-2022-0367])
  AS_VERSION_COMPARE([$mbsc_modbus_version], [3.1.10], [],
                     [mbsc_modbus_fixed="yes (3.1.10 or later)"],
                     [mbsc_modbus_fixed="yes (3.1.10 or later)"])
  AS_IF([test "x$mbsc_modbus_fixed" = xno && test -n "$mbsc_modbus_pcdir"], [
    mbsc_modbus_pkg=
    AS_IF([command -v dpkg >/dev/null 2>&1], [
      mbsc_modbus_pkg=`dpkg -S "$mbsc_modbus_pcdir/libmodbus.pc" 2>/dev/null | sed -n '1s/: .*//p'`])
    AS_IF([test -n "$mbsc_modbus_pkg"], [
      mbsc_modbus_deb=`dpkg-query -W -f='${Version}' "$mbsc_modbus_pkg" 2>/dev/null`])
    AS_IF([test -z "$mbsc_modbus_deb"], [
      # .../usr/lib/TRIPLET/pkgconfig -> .../usr/share/doc/libmodbus-dev
      mbsc_modbus_doc=`cd "$mbsc_modbus_pcdir/../../.." 2>/dev/null && pwd`/share/doc
      for mbsc_d in libmodbus-dev libmodbus5; do
        AS_IF([test -z "$mbsc_modbus_deb" && test -f "$mbsc_modbus_doc/$mbsc_d/changelog.Debian.gz"], [
          mbsc_modbus_deb=`gzip -dc "$mbsc_modbus_doc/$mbsc_d/changelog.Debian.gz" 2>/dev/null |
                           sed -n '1s/^libmodbus (\([[^)]]*\)).*/\1/p'`])
      done])
    AS_IF([test -n "$mbsc_modbus_deb" && command -v dpkg >/dev/null 2>&1 &&
           dpkg --compare-versions "$mbsc_modbus_deb" ge 3.1.6-2.1], [
      mbsc_modbus_fixed="yes (Debian package $mbsc_modbus_deb, patched from 3.1.6-2.1 on)"])])
  AS_IF([test "x$mbsc_modbus_fixed" = xno], [
    AC_MSG_RESULT([cannot tell])
    mbsc_modbus_what="libmodbus $mbsc_modbus_version${mbsc_modbus_deb:+ (package $mbsc_modbus_deb)}"
    AC_MSG_WARN([$mbsc_modbus_what: cannot tell whether it has the fix for CVE-2022-0367
    (heap buffer overflow in modbus_reply(); fixed upstream in 3.1.10 and in Debian's
    3.1.6-2.1).  Through mbsc the bug is unreachable: the slave checks every request
    (MBAP header, per-function lengths, both ranges of function 0x17 against the
    mapping) before modbus_reply() sees it.  Other programs using this libmodbus are
    not protected: prefer libmodbus >= 3.1.10 or your distribution's patched package.])
    MBSC_MODBUS_SUMMARY="yes, $mbsc_modbus_version${mbsc_modbus_deb:+ (package $mbsc_modbus_deb)} from $mbsc_modbus_pcdir; fix for CVE-2022-0367 not known to be present (see the warning above)"
  ], [
    AC_MSG_RESULT([$mbsc_modbus_fixed])
    MBSC_MODBUS_SUMMARY="yes, $mbsc_modbus_version from $mbsc_modbus_pcdir; CVE-2022-0367 fixed: $mbsc_modbus_fixed"
  ])
])
