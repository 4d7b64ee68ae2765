#!/bin/sh
# SPDX-License-Identifier: ISC
# localize-static.sh LD OBJCOPY AR RANLIB LIBRARY.la -- LINK-COMMAND...
#
# Runs LINK-COMMAND (libtool linking LIBRARY.la), then rewrites the static
# archive libtool made (.libs/LIBRARY.a beside LIBRARY.la, if static
# libraries are enabled) so that only default-visibility symbols stay
# global:
#   1. LD -r links all members into one relocatable object, which resolves
#      the references between them;
#   2. OBJCOPY --localize-hidden turns every hidden symbol (what
#      -fvisibility=hidden keeps out of the shared library) into a local one;
#   3. the archive is rebuilt from that one object.
# The result defines the same global symbols as the shared library.  LD may
# hold options (libtool's LD is e.g. "/usr/bin/ld -m elf_x86_64"), hence the
# unquoted expansion.  Without OBJCOPY the archive is left as it is, with a
# warning: it still works, it just exports the internals.
set -eu

ld=$1 objcopy=$2 ar=$3 ranlib=$4 la=$5
shift 5
[ "$1" = "--" ] || { echo "localize-static.sh: usage: LD OBJCOPY AR RANLIB LIB.la -- CMD..." >&2; exit 2; }
shift
"$@"

dir=$(dirname "$la")/.libs
archive=$dir/$(basename "$la" .la).a
[ -f "$archive" ] || exit 0 # --disable-static
if [ -z "$objcopy" ]; then
    echo "localize-static.sh: warning: no objcopy; $archive keeps its internal symbols global" >&2
    exit 0
fi
tmp=$archive.localize
rm -rf "$tmp"
mkdir "$tmp"
obj=$tmp/$(basename "$la" .la).o
# shellcheck disable=SC2086 # LD is a command with options
$ld -r -o "$obj" --whole-archive "$archive" --no-whole-archive
$objcopy --localize-hidden "$obj"
rm -f "$archive"
$ar cr "$archive" "$obj"
$ranlib "$archive"
rm -rf "$tmp"
