#!/bin/sh
# SPDX-License-Identifier: ISC
# run.sh BUILDDIR SRCDIR run SECONDS TARGET...   (make fuzz, make fuzz-long)
# run.sh BUILDDIR SRCDIR mutant SECONDS frames   (make fuzz-mutant)
#
# run: each target for SECONDS, FUZZ_JOBS of them at a time (default 1;
# each libFuzzer process uses one core), from its checked-in seeds
# (SRCDIR/tests/fuzz/corpus/TARGET, read only) and the inputs earlier runs
# found (BUILDDIR/fuzz-corpus/TARGET, where new ones are written).  Fails
# if any target reports a crash, leak, sanitizer report or property
# violation (libFuzzer exits non-zero and leaves the input in
# BUILDDIR/fuzz-artifacts/).  Prints one summary line per target: runs,
# executions per second, coverage (cov, ft) and corpus size.
#
# mutant: runs fuzz_frames_mutant (the tag comparison disabled) for at most
# SECONDS and succeeds only if it finds a forgery: a run that finds nothing
# means the frames target cannot see what it is there to see.
set -u

build=$1 src=$2 mode=$3 seconds=$4
shift 4
fuzzdir=$build/tests/fuzz
mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts" "$build/fuzz-logs" || exit 1
# Leaks are reported at exit by LeakSanitizer; UBSan reports abort.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS

summary() { # summary LOG: the last status line and the final stats
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$1" | tail -n 1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$1" | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$1" | tail -n 1)
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p')
    echo "runs ${runs:-?}, ${eps:-?} exec/s, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}"
}

case $mode in
run)
    jobs=${FUZZ_JOBS:-1}
    case $jobs in '' | *[!0-9]* | 0) echo "run.sh: FUZZ_JOBS must be a number of processes, 1 or more" >&2; exit 2 ;; esac
    # one TARGET: libFuzzer on TARGET; its exit status goes to TARGET.rc so
    # that a batch run in the background can be judged after wait.
    one() {
        mkdir -p "$build/fuzz-corpus/$1"
        "$fuzzdir/fuzz_$1" -max_total_time="$seconds" -print_final_stats=1 -timeout=20 -rss_limit_mb=2048 \
            -artifact_prefix="$build/fuzz-artifacts/$1-" \
            "$build/fuzz-corpus/$1" "$src/tests/fuzz/corpus/$1" >"$build/fuzz-logs/$1.log" 2>&1
        echo $? >"$build/fuzz-logs/$1.rc"
    }
    failed=
    while [ $# -gt 0 ]; do
        batch=
        while [ $# -gt 0 ] && [ "$(echo $batch | wc -w)" -lt "$jobs" ]; do
            batch="$batch $1"
            shift
        done
        for t in $batch; do
            echo "fuzz: $t for ${seconds}s"
            rm -f "$build/fuzz-logs/$t.rc"
            one "$t" &
        done
        wait
        for t in $batch; do
            log=$build/fuzz-logs/$t.log
            rc=$(cat "$build/fuzz-logs/$t.rc" 2>/dev/null || echo "unknown")
            if [ "$rc" != 0 ]; then
                echo "fuzz: $t FAILED (exit $rc); the end of $log:"
                tail -n 40 "$log"
                failed="$failed $t"
            else
                echo "fuzz: $t: $(summary "$log")"
            fi
        done
    done
    [ -z "$failed" ] || { echo "fuzz: failed:$failed"; exit 1; }
    ;;
mutant)
    bin=$fuzzdir/fuzz_frames_mutant
    log=$build/fuzz-logs/frames_mutant.log
    rm -rf "$build/fuzz-corpus/frames_mutant"
    mkdir -p "$build/fuzz-corpus/frames_mutant"
    start=$(date +%s)
    "$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=20 \
        -artifact_prefix="$build/fuzz-artifacts/frames_mutant-" \
        "$build/fuzz-corpus/frames_mutant" "$src/tests/fuzz/corpus/frames" >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    if [ "$rc" -ne 0 ] && grep -q 'property violated.*forgery, replay or reordering passed' "$log"; then
        echo "fuzz: mutant check passed: with the tag check disabled, the frames target found a forgery in ${took}s:"
        grep 'property violated' "$log" | head -n 1
    elif [ "$rc" -ne 0 ]; then
        echo "fuzz: mutant check FAILED: the mutant failed, but not with a forgery (exit $rc):"
        tail -n 30 "$log"
        exit 1
    else
        echo "fuzz: mutant check FAILED: no forgery found in ${seconds}s with the tag check disabled"
        exit 1
    fi
    ;;
*)
    echo "run.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
