#!/bin/sh
# SPDX-License-Identifier: ISC
# demo.sh - the secure slave and master on one machine, once per cipher.
#
#   sh examples/demo.sh [BUILDDIR]      ("make demo" runs it)
#
# Generates throw-away keys with mbsc-keygen in a temporary directory,
# writes the slave's allow-list, starts secure_slave on 127.0.0.1 with a free
# port (read from its first line of output: no sleeps), then runs
# secure_master once per cipher: write 8 holding registers, read them back,
# poll 200 times.  Prints a table, stops the slave with SIGTERM and checks
# that it exited 0.  Exit status 0 only if everything passed.
#
# $TEST_RUNNER (e.g. "qemu-aarch64 -L /") prefixes the programs if set.

set -u

build=${1:-.}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
slave=$build/examples/secure_slave
master=$build/examples/secure_master
keygen=$build/tools/mbsc-keygen
ciphers="chacha20 trivium rabbit enocoro128v2"
polls=200

for prog in "$slave" "$master" "$keygen"; do
    if [ ! -x "$prog" ]; then
        echo "demo: $prog is not built (run make first)" >&2
        exit 1
    fi
done

# Key files must not be group/world accessible, and the allow-list must not be
# group/world writable, whatever the caller's umask.
umask 077
dir=$(mktemp -d "${TMPDIR:-/tmp}/mbsc-demo.XXXXXX") || exit 1
slave_pid=
cleanup() {
    if [ -n "$slave_pid" ]; then
        kill "$slave_pid" 2>/dev/null
        wait "$slave_pid" 2>/dev/null
    fi
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

die() {
    echo "demo: $*" >&2
    exit 1
}

# --- keys and allow-list --------------------------------------------------
# shellcheck disable=SC2086 # TEST_RUNNER is a command prefix, split on purpose
${TEST_RUNNER:-} "$keygen" "$dir/master.key" >/dev/null || die "mbsc-keygen failed"
# shellcheck disable=SC2086
${TEST_RUNNER:-} "$keygen" "$dir/slave.key" >/dev/null || die "mbsc-keygen failed"
printf '# masters allowed to talk to the demo slave\n%s demo-master\n' \
    "$(cat "$dir/master.key.pub")" >"$dir/authorized" || die "cannot write the allow-list"

# --- slave ----------------------------------------------------------------
# Its first stdout line ("listening on HOST:PORT") comes through a fifo: the
# read returns as soon as the slave listens, or at EOF if it failed to start.
mkfifo "$dir/slave.out" || die "mkfifo failed"
# shellcheck disable=SC2086
${TEST_RUNNER:-} "$slave" --listen 127.0.0.1:0 --key "$dir/slave.key" \
    --authorized "$dir/authorized" >"$dir/slave.out" 2>"$dir/slave.log" &
slave_pid=$!
exec 3<"$dir/slave.out"
IFS= read -r line <&3 || line=
exec 3<&-
case $line in
"listening on "*) addr=${line#listening on } ;;
*) die "the slave did not start: $(cat "$dir/slave.log")" ;;
esac

echo "mbsc demo: secure_slave listening on $addr; one secure_master run per cipher"
echo "(each run: write 8 registers, read them back, $polls timed reads)"
echo
printf '%-14s %-6s %10s %8s\n' cipher result median_us p99_us
printf '%-14s %-6s %10s %8s\n' ------ ------ --------- ------

passed=0
failed=0
errors=
base=0
for cipher in $ciphers; do
    # Eight values per cipher, different for each run, so that a read-back of
    # stale values from an earlier run cannot pass.
    base=$((base + 4096))
    values=
    expect=
    i=0
    while [ $i -lt 8 ]; do
        v=$((base + i * 257))
        values=${values:+$values,}$v
        expect="$expect $v"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    ${TEST_RUNNER:-} "$master" --connect "$addr" --key "$dir/master.key" \
        --peer "$dir/slave.key.pub" --cipher "$cipher" \
        --write-registers "100=$values" --read-registers 100:8 \
        --poll 0:8 --count "$polls" >"$dir/out" 2>"$dir/err"
    rc=$?
    result=FAIL
    median=-
    p99=-
    stats=$(grep '^rtt_us ' "$dir/out")
    if [ $rc -ne 0 ]; then
        errors="$errors
  $cipher: $(tail -n 1 "$dir/err")"
    elif [ "$(sed -n 1p "$dir/out")" != "100:$expect" ]; then
        errors="$errors
  $cipher: read back '$(sed -n 1p "$dir/out")', expected '100:$expect'"
    elif ! grep -q "cipher $cipher\$" "$dir/err"; then
        errors="$errors
  $cipher: negotiated another cipher: $(cat "$dir/err")"
    elif [ -z "$stats" ]; then
        errors="$errors
  $cipher: no round-trip statistics"
    else
        result=OK
        median=$(echo "$stats" | sed -n 's/.* median=\([0-9]*\).*/\1/p')
        p99=$(echo "$stats" | sed -n 's/.* p99=\([0-9]*\).*/\1/p')
    fi
    if [ $result = OK ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
    printf '%-14s %-6s %10s %8s\n' "$cipher" "$result" "$median" "$p99"
done

# The slave counts every request it answered in input register 0: the write,
# the read-back and the polls of each run, plus this read itself.
if [ $failed -eq 0 ]; then
    expected=$((passed * (2 + polls) + 1))
    # shellcheck disable=SC2086
    ${TEST_RUNNER:-} "$master" --connect "$addr" --key "$dir/master.key" \
        --peer "$dir/slave.key.pub" --read-input-registers 0:1 >"$dir/out" 2>"$dir/err"
    served=$(sed -n 's/^0: //p' "$dir/out")
    echo
    if [ "$served" = "$expected" ]; then
        echo "slave's request counter (input register 0): $served, as expected"
    else
        echo "slave's request counter (input register 0): '$served', expected $expected"
        errors="$errors
  request counter: $(tail -n 1 "$dir/err")"
        failed=$((failed + 1))
    fi
fi

# --- stop the slave: SIGTERM must give a clean exit 0 ---------------------
kill -TERM "$slave_pid"
wait "$slave_pid"
slave_rc=$?
slave_pid=
echo
echo "slave log:"
sed 's/^/  /' "$dir/slave.log"
if [ $slave_rc -ne 0 ]; then
    errors="$errors
  the slave exited with status $slave_rc after SIGTERM"
    failed=$((failed + 1))
fi

echo
if [ $failed -ne 0 ]; then
    echo "demo: FAILED:$errors"
    exit 1
fi
echo "demo: all $passed ciphers passed; the slave stopped cleanly"
exit 0
