#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# faults.sh - the gateway chain under the faults of real networks and
# plants (make faults), and a soak under mixed load (make soak).
#
#   bash tests/faults.sh [BUILDDIR]                 every fault, the table
#   bash tests/faults.sh --soak MINUTES [BUILDDIR]  the soak
#
# The chain, on two "hosts" (network namespaces) joined by one link:
#
#   SCADA host                                     PLC host
#   fault-scada -> mbsc-gateway client ==link==> mbsc-gateway server -> fault-plc
#   (plain libmodbus)   (127.0.0.1)                 (policy, roles)     (127.0.0.1)
#
# The link is a veth pair with the netem qdisc ("tc qdisc ... netem") on
# both ends where the kernel has it, else tests/fault-link (TUN devices and
# a program that does the same to every packet); MBSC_FAULTS_LINK=netem or
# tun chooses.  TCP resets come from nftables rules ("reject with tcp
# reset") in both namespaces.  docs/faults.md explains every fault and
# every check; the summary:
#
#   for each fault: every write the SCADA saw acknowledged is in the PLC's
#   record; no value is recorded twice; every answer belongs to its request
#   (fault-scada's checks, and every later value a read returned is on
#   record); the SCADA's writes are acknowledged again within the gateways'
#   reconnect backoff ceiling plus one second after the fault ends;
#   then 100 short fault cycles (the PLC killed and restarted), and the
#   gateways' descriptors, memory and sessions must not grow.
#
# MBSC_FAULTS_ONLY="partition cycles" runs only the faults named (the keys
# of the table); MBSC_FAULTS_CYCLES=N changes the number of short cycles;
# MBSC_FAULTS_KEEP=1 keeps the logs and records.
#
# Needs root, iproute2 and nftables; exit 0 pass, 1 fail, 77 skip (no root,
# no namespaces, no nft).  Not part of make check.

set -u

prog=faults
note() { echo "$prog: $*"; }
skip() {
    echo "$prog: SKIP: $*"
    exit 77
}
die() {
    echo "$prog: FAIL: $*" >&2
    exit 1
}

soak_minutes=
if [ "${1:-}" = --soak ]; then
    soak_minutes=${2:-}
    shift 2 || die "usage: faults.sh --soak MINUTES [BUILDDIR]"
    case $soak_minutes in '' | *[!0-9]*) die "--soak needs a whole number of minutes, not '$soak_minutes'" ;; esac
    [ "$soak_minutes" -ge 1 ] || die "--soak needs at least 1 minute"
fi
build=${1:-${top_builddir:-.}}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
srcdir=$(cd "${srcdir:-$(dirname "$0")/..}" && pwd) || die "no source directory"
gateway_bin=$build/tools/mbsc-gateway
keygen_bin=$build/tools/mbsc-keygen
plc_bin=$build/tests/fault-plc
scada_bin=$build/tests/fault-scada
link_bin=$build/tests/fault-link
for p in "$gateway_bin" "$keygen_bin" "$plc_bin" "$scada_bin" "$link_bin"; do
    [ -x "$p" ] || die "$p is not built (run make first)"
done
read -r -a runner <<<"${TEST_RUNNER:-}"

[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (iproute2)"
command -v nft >/dev/null 2>&1 || skip "no 'nft' command (nftables: the TCP reset fault)"

# --- settings ----------------------------------------------------------------------
# The gateways' timeouts: the server gateway answers 0B first, the client
# gateway's timeout covers it plus the link's delay, the SCADA's covers both.
REQ_TIMEOUT_SERVER=1000
REQ_TIMEOUT_CLIENT=2500
SCADA_TIMEOUT=6000
RECONNECT_MAX=2000 # both gateways' --reconnect-max: the backoff ceiling
CONNECT_TIMEOUT=1000
PLC_LATE_MS=1300 # the late PLC answers after the server gateway's timeout
BOUND_MS=$((RECONNECT_MAX + 1000))
CYCLES=${MBSC_FAULTS_CYCLES:-100}
RSS_SLACK_KB=64 # heap pages a steady process may still touch after its warm-up
DEAD_PEER_MS=30000 # mbsc_server's default: a session whose master's host has gone ends

# --- names: unique per run ---------------------------------------------------------
id=$$
ns_c=mbsc-fc-$id # the SCADA host
ns_s=mbsc-fs-$id # the PLC host
dev_c=mbfc$id
dev_s=mbfs$id
net=10.$(((id >> 8) & 255)).$((id & 255))
ip_c=$net.1
ip_s=$net.2
port_plc=5020
port_server=8502
port_client=1502

umask 077
dir=$(mktemp -d "${TMPDIR:-/tmp}/mbsc-faults.XXXXXX") || die "mktemp failed"
declare -A pid=()
made_c=
made_s=
made_veth=
link_mode=
link_pid=

stop_pid() { # stop_pid PID [SIGNAL]: our own child
    [ -n "$1" ] || return 0
    kill -"${2:-TERM}" "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}
cleanup() {
    local k ns p
    for k in "${!pid[@]}"; do stop_pid "${pid[$k]}"; done
    [ -z "$link_pid" ] || stop_pid "$link_pid"
    for ns in ${made_c:+"$ns_c"} ${made_s:+"$ns_s"}; do
        # Anything still inside is ours: these namespaces exist only for this run.
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    [ -z "$made_veth" ] || ip link del "$dev_c" 2>/dev/null
    if [ -n "${MBSC_FAULTS_KEEP:-}" ]; then
        echo "$prog: files kept in $dir"
    else
        rm -rf "$dir"
    fi
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

now_ms() { date +%s%3N; }
in_c() { ip netns exec "$ns_c" "$@"; }
in_s() { ip netns exec "$ns_s" "$@"; }

# --- the two hosts and the link ----------------------------------------------------
ip netns add "$ns_c" 2>"$dir/ip.err" || skip "cannot create network namespaces: $(cat "$dir/ip.err")"
made_c=1
ip netns add "$ns_s" 2>"$dir/ip.err" || skip "cannot create network namespaces: $(cat "$dir/ip.err")"
made_s=1
in_c true 2>"$dir/ip.err" || skip "cannot enter a network namespace: $(cat "$dir/ip.err")"
ip -n "$ns_c" link set lo up && ip -n "$ns_s" link set lo up || die "cannot bring up loopback"

netem_link() { # a veth pair; 0 if netem works on it
    ip link add "$dev_c" type veth peer name "$dev_s" 2>"$dir/ip.err" ||
        skip "cannot create a veth pair: $(cat "$dir/ip.err")"
    made_veth=1
    ip link set "$dev_c" netns "$ns_c" && ip link set "$dev_s" netns "$ns_s" ||
        die "cannot move the veth ends into the namespaces"
    made_veth=
    ip -n "$ns_c" addr add "$ip_c/24" dev "$dev_c" && ip -n "$ns_s" addr add "$ip_s/24" dev "$dev_s" &&
        ip -n "$ns_c" link set "$dev_c" up && ip -n "$ns_s" link set "$dev_s" up ||
        die "cannot configure the veth pair"
    in_c tc qdisc add dev "$dev_c" root netem delay 0ms 2>"$dir/tc.err" || return 1
    in_c tc qdisc del dev "$dev_c" root
}

tun_link() { # tests/fault-link between two TUN devices
    local line
    coproc LINK { exec "$link_bin" --a "$ns_c:$dev_c" --b "$ns_s:$dev_s" --seed "$id" 2>"$dir/link.err"; }
    link_pid=$LINK_PID
    read -r -t 10 -u "${LINK[0]}" line || line=
    [ "$line" = ready ] || die "fault-link did not start: $(cat "$dir/link.err")"
    ip -n "$ns_c" addr add "$ip_c" peer "$ip_s" dev "$dev_c" &&
        ip -n "$ns_s" addr add "$ip_s" peer "$ip_c" dev "$dev_s" &&
        ip -n "$ns_c" link set "$dev_c" up && ip -n "$ns_s" link set "$dev_s" up ||
        die "cannot configure the TUN devices"
}

case ${MBSC_FAULTS_LINK:-} in
netem) netem_link || skip "MBSC_FAULTS_LINK=netem, but netem does not work here: $(cat "$dir/tc.err")"
    link_mode=netem ;;
tun) tun_link
    link_mode=tun ;;
'') if netem_link; then
        link_mode=netem
    else
        note "no netem qdisc here ($(head -n 1 "$dir/tc.err")): the link is tests/fault-link"
        ip -n "$ns_c" link del "$dev_c" 2>/dev/null
        tun_link
        link_mode=tun
    fi ;;
*) die "MBSC_FAULTS_LINK is netem or tun, not '$MBSC_FAULTS_LINK'" ;;
esac
note "SCADA host: netns $ns_c, $ip_c; PLC host: netns $ns_s, $ip_s; link: $link_mode"

# link_fault WHAT: loss P | delay MS JIT | duplicate P | partition | clear, both directions.
link_fault() {
    local reply d ns dev
    if [ "$link_mode" = tun ]; then
        echo "$*" >&"${LINK[1]}"
        read -r -t 10 -u "${LINK[0]}" reply || reply=
        [ "$reply" = ok ] || die "fault-link did not take '$*': '$reply'"
        return 0
    fi
    for d in "$ns_c $dev_c" "$ns_s $dev_s"; do
        read -r ns dev <<<"$d"
        case $1 in
        clear) ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true ;;
        loss) ip netns exec "$ns" tc qdisc replace dev "$dev" root netem loss "$2%" ;;
        duplicate) ip netns exec "$ns" tc qdisc replace dev "$dev" root netem duplicate "$2%" ;;
        # Jitter makes packets overtake each other (netem's default queue sorts by time to send).
        delay) ip netns exec "$ns" tc qdisc replace dev "$dev" root netem delay "$2ms" "$3ms" ;;
        partition) ip netns exec "$ns" tc qdisc replace dev "$dev" root netem loss 100% ;;
        *) die "unknown link fault '$*'" ;;
        esac || die "tc netem '$*' failed in $ns"
    done
}

# TCP resets on the gateway link.  both: every segment to the server
# gateway's port (on the PLC host) and from it (on the SCADA host) is
# answered with a reset; client: only the client gateway's segments are,
# as a firewall beside the server does after losing its state table.
resets() { # resets on both|client, resets off
    local ns match
    for ns in "$ns_s" "$ns_c"; do
        match="tcp dport $port_server"
        [ "$ns" = "$ns_c" ] && match="tcp sport $port_server"
        if [ "$1" = on ]; then
            [ "$ns" = "$ns_c" ] && [ "$2" = client ] && continue
            ip netns exec "$ns" nft -f - <<EOF || die "nft failed in $ns"
table inet mbsc_faults {
    chain input {
        type filter hook input priority 0; policy accept;
        $match reject with tcp reset
    }
}
EOF
        else
            ip netns exec "$ns" nft delete table inet mbsc_faults 2>/dev/null
        fi
    done
    return 0
}

# --- keys and configuration --------------------------------------------------------
cd "$dir" || die "cannot enter $dir"
"${runner[@]}" "$keygen_bin" server.key >/dev/null &&
    "${runner[@]}" "$keygen_bin" client.key >/dev/null &&
    "${runner[@]}" "$keygen_bin" --psk site.psk >/dev/null || die "mbsc-keygen failed"
printf '%s scada-host operator\n' "$(cat client.key.pub)" >authorized
printf '%s\n' 'operator read-write holding-registers 0-199' \
    'operator read input-registers 0-199' >roles.policy
: >plc.record

# --- processes -----------------------------------------------------------------------
# spawn NAME NETNS CMD...: start CMD there, stderr to NAME.log, wait for its
# "listening on" line (every program here prints one, flushed).
spawn() {
    local name=$1 ns=$2 line
    shift 2
    rm -f "$name.out"
    mkfifo "$name.out" || die "mkfifo failed"
    ip netns exec "$ns" "${runner[@]}" "$@" >"$name.out" 2>>"$name.log" &
    pid[$name]=$!
    exec 7<"$name.out"
    read -r -t 10 line <&7 || line=
    exec 7<&-
    case $line in
    "listening on "*) ;;
    *) die "$name did not start: '$line' $(tail -n 5 "$name.log")" ;;
    esac
}
start_plc() {
    spawn plc "$ns_s" "$plc_bin" --port "$port_plc" --record plc.record --late-ms "$PLC_LATE_MS"
}
start_server() {
    spawn server "$ns_s" "$gateway_bin" server --listen "$ip_s:$port_server" \
        --upstream "127.0.0.1:$port_plc" --key server.key --authorized authorized \
        --psk site.psk --policy roles.policy --request-timeout "$REQ_TIMEOUT_SERVER" \
        --reconnect-max "$RECONNECT_MAX" --connect-timeout "$CONNECT_TIMEOUT" \
        --control server.ctl
}
start_client() {
    spawn client "$ns_c" "$gateway_bin" client --listen "127.0.0.1:$port_client" \
        --upstream "$ip_s:$port_server" --key client.key --peer server.key.pub \
        --psk site.psk --request-timeout "$REQ_TIMEOUT_CLIENT" \
        --reconnect-max "$RECONNECT_MAX" --connect-timeout "$CONNECT_TIMEOUT" \
        --control client.ctl
}
start_scada() { # start_scada NAME ROLE
    # ip netns exec itself, not a shell function: $! must be the program (signals).
    ip netns exec "$ns_c" "${runner[@]}" "$scada_bin" --connect "127.0.0.1:$port_client" \
        --log "$1.log" --role "$2" --timeout-ms "$SCADA_TIMEOUT" --interval-ms 10 \
        >"$1.summary" 2>>"$1.err" &
    pid[$1]=$!
}
kill_and_wait() { # kill_and_wait NAME SIGNAL
    stop_pid "${pid[$1]}" "$2"
    unset "pid[$1]"
}

# acked_since MS: 0 once the writer has had a write acknowledged at or after MS.
acked_since() { awk -v t="$1" '$2 == "A" && $1 >= t { found = 1; exit } END { exit !found }' scada.log; }
# wait_acked MS LIMIT_MS: wait until acked_since MS, at most LIMIT_MS; 0 if it came.
wait_acked() {
    local end=$(($(now_ms) + $2))
    until acked_since "$1"; do
        [ "$(now_ms)" -lt "$end" ] || return 1
        sleep 0.02
    done
}

# status_line NAME: the first line of the gateway's status (upstream, counters).
status_line() { "${runner[@]}" "$gateway_bin" status --control "$1.ctl" 2>&1 | head -n 1; }
# measure NAME: "fds RSS_KB SESSIONS" of a running gateway; SESSIONS: its
# status lines of connected masters (server) or local clients (client).
measure() {
    local p=${pid[$1]} fds rss sessions
    fds=$(find "/proc/$p/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status")
    sessions=$("${runner[@]}" "$gateway_bin" status --control "$1.ctl" 2>/dev/null |
        grep -c '^\(master\|client\) ')
    echo "$fds $rss $sessions"
}

start_plc
start_server
start_client
start_scada scada writer
if [ -n "$soak_minutes" ]; then
    start_scada reader1 reader
    start_scada reader2 reader
fi
t_start=$(now_ms)
wait_acked "$t_start" 20000 || die "no write acknowledged through the chain: $(tail -n 5 client.log server.log)"
note "chain up: $(status_line client)"

# --- phases ---------------------------------------------------------------------------
# phases.txt: KEY T_ON T_OFF T_END SESSIONS per window (KEY repeats for
# cycles); SESSIONS: the server gateway's masters at the end.
: >phases.txt
phase_key= t_on= t_off=
begin() { phase_key=$1 t_on=$(now_ms); }
fault_over() { t_off=$(now_ms); }
finish() { # finish [SETTLE_MS]: wait for recovery, settle, close the window
    wait_acked "$t_off" $((BOUND_MS + 10000)) || note "$phase_key: no acknowledged write within $((BOUND_MS + 10000)) ms"
    sleep "$(awk -v ms="${1:-1000}" 'BEGIN { printf "%.3f", ms / 1000 }')"
    echo "$phase_key $t_on $t_off $(now_ms) $(measure server | cut -d' ' -f3)" >>phases.txt
}
hold() { sleep "$1"; }
# wanted KEY: 0 if MBSC_FAULTS_ONLY is unset or names KEY.
wanted() { [ -z "${MBSC_FAULTS_ONLY:-}" ] || [[ " $MBSC_FAULTS_ONLY " == *" $1 "* ]]; }

run_faults() {
    echo "baseline $t_start $t_start $(now_ms) $(measure server | cut -d' ' -f3)" >>phases.txt

    if wanted loss; then
        note "5 % loss for 10 s"
        begin loss; link_fault loss 5; hold 10; link_fault clear; fault_over; finish
    fi
    if wanted delay; then
        note "50 ms +/- 20 ms delay (packets reordered) for 10 s"
        begin delay; link_fault delay 50 20; hold 10; link_fault clear; fault_over; finish
    fi
    if wanted duplicate; then
        note "10 % of the packets duplicated for 10 s"
        begin duplicate; link_fault duplicate 10; hold 10; link_fault clear; fault_over; finish
    fi
    if wanted partition; then
        note "a 10-s partition"
        begin partition; link_fault partition; hold 10; link_fault clear; fault_over; finish
    fi
    if wanted resets; then
        note "TCP resets on the gateway link for 3 s"
        begin resets; resets on both; hold 3; resets off; fault_over; finish
    fi
    if wanted reset_idle; then
        # Nothing unacknowledged on the server gateway's side when the client
        # gateway's next segment meets the reset: that side learns nothing.
        note "the link idle, then resets for the client gateway's segments only, 2 s"
        kill -STOP "${pid[scada]}"
        sleep 1
        begin reset_idle; resets on client; kill -CONT "${pid[scada]}"; hold 2; resets off
        fault_over; finish
    fi
    if wanted partition || wanted resets || wanted reset_idle; then
        # The client gateway gave up the connection it had (the partition:
        # its requests stayed unacknowledged; the resets reached its side);
        # the server gateway's end of it, with nothing left to send, must be
        # found dead by its probes (mbsc_server's dead-peer probes).
        note "the server gateway's sessions of the connections given up must end within $DEAD_PEER_MS ms"
        sessions_back_to 1 "after the last fault ended"
    fi
    if wanted plc_killed; then
        note "the PLC killed (SIGKILL), restarted 2 s later"
        begin plc_killed; kill_and_wait plc KILL; hold 2; start_plc; fault_over; finish
    fi
    if wanted server_killed; then
        note "the server gateway killed (SIGKILL), restarted 2 s later"
        begin server_killed; kill_and_wait server KILL; hold 2; start_server; fault_over; finish
    fi
    if wanted client_restarted; then
        note "the client gateway restarted (SIGTERM, started again)"
        begin client_restarted; kill_and_wait client TERM; start_client; fault_over; finish
    fi
    if wanted plc_late; then
        note "the PLC answering after the request timeout for 5 s"
        begin plc_late; kill -USR1 "${pid[plc]}"; hold 5; kill -USR2 "${pid[plc]}"; fault_over; finish
    fi

    wanted cycles || return 0
    note "$CYCLES short cycles: the PLC killed and restarted at once"
    local i before_c before_s
    for ((i = 1; i <= CYCLES; i++)); do
        begin cycles; kill_and_wait plc KILL; start_plc; fault_over; finish 100
        # The baseline after a few cycles: the processes have met every path once.
        if [ "$i" -eq 5 ]; then
            before_c=$(measure client)
            before_s=$(measure server)
        fi
        [ $((i % 10)) -ne 0 ] ||
            note "cycle $i: client $(measure client), server $(measure server) (descriptors, RSS KiB, sessions)"
    done
    sleep 1
    growth "$before_c" "$(measure client)" client
    growth "$before_s" "$(measure server)" server
}

growth_failed=
# sessions_back_to N WHEN: wait until the server gateway holds N sessions, at
# most DEAD_PEER_MS + 10 s (connections given up by the client gateway that
# the server gateway can only find dead by probing).
sessions_back_to() {
    local t0 n end
    t0=$(now_ms)
    end=$((t0 + DEAD_PEER_MS + 10000))
    while n=$(measure server | cut -d' ' -f3) && [ "$n" != "$1" ] && [ "$(now_ms)" -lt "$end" ]; do
        sleep 0.2
    done
    if [ "$n" = "$1" ]; then
        note "server gateway back to $1 session(s) $(($(now_ms) - t0)) ms $2"
    else
        echo "$prog: FAIL: the server gateway still holds $n sessions $DEAD_PEER_MS ms $2" >&2
        growth_failed=1
    fi
}

growth() { # growth "BEFORE" "AFTER" NAME: descriptors, RSS, sessions must not grow
    local f0 r0 s0 f1 r1 s1
    read -r f0 r0 s0 <<<"$1"
    read -r f1 r1 s1 <<<"$2"
    printf '%s: %-6s descriptors %s -> %s, RSS %s -> %s KiB, sessions %s -> %s\n' \
        "$prog" "$3" "$f0" "$f1" "$r0" "$r1" "$s0" "$s1"
    if [ "$f1" -gt "$f0" ] || [ "$s1" != "$s0" ] || [ "$r1" -gt $((r0 + RSS_SLACK_KB)) ]; then
        echo "$prog: FAIL: the $3 gateway grew across the cycles" >&2
        growth_failed=1
    fi
}

run_soak() {
    local begin_ms end n=0 kind start_c start_s base_c= base_s=
    begin_ms=$(now_ms)
    end=$((begin_ms + soak_minutes * 60000))
    sleep 2
    start_c=$(measure client)
    start_s=$(measure server)
    note "soak start: client $start_c; server $start_s (descriptors, RSS KiB, sessions)"
    note "soak start counters: client: $(status_line client)"
    note "soak start counters: server: $(status_line server)"
    echo "baseline $t_start $t_start $(now_ms) $(measure server | cut -d' ' -f3)" >>phases.txt
    while [ "$(now_ms)" -lt "$end" ]; do
        sleep $((5 + RANDOM % 10)) # load without faults
        kind=$((RANDOM % 7))
        n=$((n + 1))
        case $kind in
        0) begin loss; link_fault loss 5; hold 5; link_fault clear ;;
        1) begin delay; link_fault delay 50 20; hold 5; link_fault clear ;;
        2) begin duplicate; link_fault duplicate 10; hold 5; link_fault clear ;;
        3) begin resets; resets on both; hold 1; resets off ;;
        4) begin plc_killed; kill_and_wait plc KILL; start_plc ;;
        5) begin plc_late; kill -USR1 "${pid[plc]}"; hold 3; kill -USR2 "${pid[plc]}" ;;
        6) begin partition; link_fault partition; hold 3; link_fault clear ;;
        esac
        fault_over
        finish
        [ $((n % 10)) -ne 0 ] ||
            note "after $n faults: client $(measure client), server $(measure server) (descriptors, RSS KiB, sessions)"
        # What the end is compared with: a third of the way in, once the
        # gateways have met most faults and their heaps their working size.
        if [ -z "$base_c" ] && [ "$(now_ms)" -ge $((begin_ms + soak_minutes * 20000)) ]; then
            sessions_back_to "$(echo "$start_s" | cut -d' ' -f3)" "a third of the way in"
            base_c=$(measure client)
            base_s=$(measure server)
            note "soak baseline, a third of the way in ($n faults): client $base_c; server $base_s"
        fi
    done
    sleep 2
    note "soak: $soak_minutes min, $n faults"
    sessions_back_to "$(echo "$start_s" | cut -d' ' -f3)" "after the soak"
    note "soak end counters: client: $(status_line client)"
    note "soak end counters: server: $(status_line server)"
    note "soak end: client $(measure client); server $(measure server) (descriptors, RSS KiB, sessions)"
    growth "${base_c:-$start_c}" "$(measure client)" client
    growth "${base_s:-$start_s}" "$(measure server)" server
}

if [ -n "$soak_minutes" ]; then run_soak; else run_faults; fi

# --- the end: stop the SCADA clients first, then look at the records --------------------
for k in scada reader1 reader2; do
    [ -n "${pid[$k]:-}" ] && kill_and_wait "$k" TERM
done
for k in client server plc; do
    kill_and_wait "$k" TERM
done
cat scada.summary
[ -z "$soak_minutes" ] || cat reader1.summary reader2.summary
reader_x=$(cat reader*.log 2>/dev/null | awk '$2 == "X"' | wc -l)
[ "$reader_x" -eq 0 ] || { echo "$prog: FAIL: readers saw $reader_x misdelivered answers:" >&2; grep -h ' X ' reader*.log | head >&2; }

table_rc=0
awk -v bound="$BOUND_MS" -f "$srcdir/tests/faults_table.awk" phases.txt plc.record scada.log || table_rc=$?
if [ "$table_rc" -ne 0 ] || [ -n "$growth_failed" ] || [ "$reader_x" -ne 0 ]; then
    echo "$prog: FAIL (logs: MBSC_FAULTS_KEEP=1 keeps $dir)" >&2
    for k in client server plc; do echo "--- $k.log (last lines)"; tail -n 15 "$k.log"; done
    exit 1
fi
note "PASS"
exit 0
