#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# two_hosts.sh - the secure slave and master on two "hosts" (network
# namespaces joined by a veth pair), with the traffic on the wire checked for
# cleartext register values.
#
#   bash tests/two_hosts.sh [BUILDDIR]          ("make two-hosts" runs it)
#
# Needs root, iproute2 (ip netns) and tcpdump.  Exit status: 0 pass, 1 fail,
# 77 skip (no root, no namespaces or no veth here, no tcpdump).  Not part of
# "make check": CI runs it as root.
#
# What it does:
#   1. two namespaces and a veth pair, named after this shell's PID so that
#      parallel runs cannot clash; 10.X.Y.1/24 (slave) and 10.X.Y.2 (master);
#   2. keys, a PSK and the allow-list in a temporary directory;
#   3. secure_slave in one namespace on port 0 (its first output line gives
#      the port); tcpdump on the slave's veth, started and confirmed
#      listening before any traffic;
#   4. secure_master in the other namespace, once per cipher: writes eight
#      registers with distinctive values (0xBEEF, 0xCAFE, ...), reads them
#      back and checks them;
#   5. the capture must not hold any two consecutive register values as
#      their big-endian bytes (a 4-byte window: a chance match in random
#      ciphertext is about 2^-32 per position, so a hit is a real leak);
#   6. control: the same FC16 request sent in clear (bash /dev/tcp) and
#      captured the same way must be detected, proving the search can fail;
#   7. a master aimed at an address nobody answers gives up at --timeout;
#   8. the slave must exit 0 on SIGTERM;
#   9. a third host, a plain Modbus/TCP PLC (tests/plain-plc) behind
#      mbsc-gateway on the slave's host: the master writes and reads the
#      PLC's registers through the gateway, and the capture between master
#      and gateway must not hold them in clear either; the gateway exits 0;
#  10. a serial line: a Modbus RTU device (tests/rtu-slave, libmodbus) on one
#      end of a pty pair made by socat, a server gateway on the slave's host
#      with the other end as its upstream (rtu:...); the master writes and
#      reads the device's registers through it, in clear on the serial line
#      only, and the gateway's status counts the line's requests and answers.
# Namespaces, processes and files are removed on every exit (trap).

set -u

prog=two_hosts
note() { echo "$prog: $*"; }
skip() {
    echo "$prog: SKIP: $*"
    exit 77
}
die() {
    echo "$prog: FAIL: $*" >&2
    exit 1
}

build=${1:-${top_builddir:-.}}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
slave_bin=$build/examples/secure_slave
master_bin=$build/examples/secure_master
keygen_bin=$build/tools/mbsc-keygen
gateway_bin=$build/tools/mbsc-gateway
plc_bin=$build/tests/plain-plc
rtu_bin=$build/tests/rtu-slave
for p in "$slave_bin" "$master_bin" "$keygen_bin" "$gateway_bin" "$plc_bin" "$rtu_bin"; do
    [ -x "$p" ] || die "$p is not built (run make first)"
done
read -r -a runner <<<"${TEST_RUNNER:-}" # a command prefix, e.g. "qemu-aarch64 -L /"

[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (iproute2)"
command -v tcpdump >/dev/null 2>&1 || skip "no tcpdump"
command -v socat >/dev/null 2>&1 || skip "no socat (the serial line's pty pair)"

# --- names: unique per run ----------------------------------------------------
id=$$
ns_s=mbsc-s-$id
ns_m=mbsc-m-$id
ns_p=mbsc-p-$id # the PLC behind the gateway (step 9)
veth_s=mbscs$id # interface names: at most 15 characters
veth_m=mbscm$id
veth_g=mbscg$id # gateway side of the PLC's link
veth_p=mbscp$id
net=10.$(((id >> 8) & 255)).$((id & 255))
ip_s=$net.1
ip_m=$net.2

umask 077
dir=$(mktemp -d "${TMPDIR:-/tmp}/mbsc-two-hosts.XXXXXX") || die "mktemp failed"
made_s=
made_m=
made_veth=
made_p=
made_veth_p=
slave_pid=
tcpdump_pid=
gateway_pid=
plc_pid=
socat_pid=
rtu_pid=

stop_pid() { # stop_pid PID: TERM, then wait (our own child)
    [ -n "$1" ] || return 0
    kill "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}
cleanup() {
    stop_pid "$tcpdump_pid"
    stop_pid "$slave_pid"
    stop_pid "$gateway_pid"
    stop_pid "$plc_pid"
    stop_pid "$rtu_pid"
    stop_pid "$socat_pid"
    local ns pid
    for ns in ${made_s:+"$ns_s"} ${made_m:+"$ns_m"} ${made_p:+"$ns_p"}; do
        # Anything still inside is ours: these namespaces exist only for this run.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill "$pid" 2>/dev/null
        done
        ip netns del "$ns" 2>/dev/null
    done
    # Deleting a namespace deletes the veth end inside it; this catches a pair
    # that was made but not yet moved.
    [ -z "$made_veth" ] || ip link del "$veth_s" 2>/dev/null
    [ -z "$made_veth_p" ] || ip link del "$veth_g" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# --- the two hosts --------------------------------------------------------------
ip netns add "$ns_s" 2>"$dir/ip.err" || skip "cannot create network namespaces: $(cat "$dir/ip.err")"
made_s=1
ip netns add "$ns_m" 2>"$dir/ip.err" || skip "cannot create network namespaces: $(cat "$dir/ip.err")"
made_m=1
ip netns exec "$ns_s" true 2>"$dir/ip.err" || skip "cannot enter a network namespace: $(cat "$dir/ip.err")"
ip link add "$veth_s" type veth peer name "$veth_m" 2>"$dir/ip.err" ||
    skip "cannot create a veth pair: $(cat "$dir/ip.err")"
made_veth=1
ip link set "$veth_s" netns "$ns_s" && ip link set "$veth_m" netns "$ns_m" ||
    die "cannot move the veth ends into the namespaces"
made_veth=
for side in "$ns_s $veth_s $ip_s" "$ns_m $veth_m $ip_m"; do
    read -r ns veth addr <<<"$side"
    ip -n "$ns" addr add "$addr/24" dev "$veth" &&
        ip -n "$ns" link set "$veth" up &&
        ip -n "$ns" link set lo up || die "cannot configure $veth in $ns"
done
note "slave  host: netns $ns_s, $veth_s $ip_s/24"
note "master host: netns $ns_m, $veth_m $ip_m/24"

# --- keys ---------------------------------------------------------------------------
cd "$dir" || die "cannot enter $dir"
"${runner[@]}" "$keygen_bin" master.key >/dev/null &&
    "${runner[@]}" "$keygen_bin" slave.key >/dev/null &&
    "${runner[@]}" "$keygen_bin" --psk site.psk || die "mbsc-keygen failed"
printf '%s plc-master\n' "$(cat master.key.pub)" >authorized

# --- slave --------------------------------------------------------------------------
mkfifo slave.out || die "mkfifo failed"
ip netns exec "$ns_s" "${runner[@]}" "$slave_bin" --listen "$ip_s:0" --key slave.key \
    --authorized authorized --psk site.psk >slave.out 2>slave.log &
slave_pid=$!
exec 3<slave.out
IFS= read -r line <&3 || line=
exec 3<&-
case $line in
"listening on $ip_s:"[1-9]*) port=${line##*:} ;;
*) die "the slave did not start: '$line' $(cat slave.log)" ;;
esac
note "slave listening on $ip_s:$port"

# --- capture ------------------------------------------------------------------------
# start_capture FILE: tcpdump on the slave's veth, returns once it captures.
start_capture() {
    # -U --immediate-mode: every packet is written as it arrives, so the file
    # can be read while tcpdump runs.  -Z root: no privilege drop that could
    # stop it writing in our 0700 directory.  .pcap: the name AppArmor allows.
    ip netns exec "$ns_s" tcpdump -i "$veth_s" -nn -U --immediate-mode -Z root \
        -w "$1" "tcp port $port" 2>"$1.err" &
    tcpdump_pid=$!
    local i
    for ((i = 0; i < 200; i++)); do # 10 s at most
        grep -q 'listening on' "$1.err" 2>/dev/null && return 0
        kill -0 "$tcpdump_pid" 2>/dev/null || die "tcpdump failed: $(cat "$1.err")"
        sleep 0.05
    done
    die "tcpdump did not start within 10 s: $(cat "$1.err")"
}

# stop_capture FILE N: wait until N FINs from the master are in FILE (so every
# packet the master sent before closing is there too), then stop tcpdump and
# check that the kernel dropped nothing.
stop_capture() {
    local i fins=0
    for ((i = 0; i < 200; i++)); do
        fins=$(tcpdump -r "$1" -nn "src host $ip_m and tcp[tcpflags] & tcp-fin != 0" 2>/dev/null |
            wc -l)
        [ "$fins" -ge "$2" ] && break
        sleep 0.05
    done
    kill -INT "$tcpdump_pid"
    wait "$tcpdump_pid"
    tcpdump_pid=
    [ "$fins" -ge "$2" ] || die "$1: only $fins of $2 connection ends captured"
    grep -qx '0 packets dropped by kernel' "$1.err" || die "$1: tcpdump dropped packets: $(cat "$1.err")"
}

# --- what must not appear -------------------------------------------------------
regs=(beef cafe f00d d00d face c0de 0bad 1dea)
csv=
dec=
for r in "${regs[@]}"; do
    csv=${csv:+$csv,}0x$r
    dec="$dec $((16#$r))"
done

# hex_of FILE: the bytes as " xx xx xx ... " (spaces keep byte alignment).
hex_of() { echo " $(od -An -v -tx1 "$1" | tr -s ' \n' '  ') "; }

# leaks FILE: prints every pair of consecutive register values found in clear.
leaks() {
    local hex i w
    hex=$(hex_of "$1")
    for ((i = 0; i + 1 < ${#regs[@]}; i++)); do
        w=" ${regs[i]:0:2} ${regs[i]:2:2} ${regs[i + 1]:0:2} ${regs[i + 1]:2:2} "
        [[ $hex == *"$w"* ]] && echo "0x${regs[i]},0x${regs[i + 1]}"
    done
}

# --- the secure exchange, once per cipher -------------------------------------
ciphers=(chacha20 trivium rabbit enocoro128v2)
start_capture secure.pcap
for c in "${ciphers[@]}"; do
    ip netns exec "$ns_m" "${runner[@]}" "$master_bin" --connect "$ip_s:$port" \
        --key master.key --peer slave.key.pub --psk site.psk --cipher "$c" \
        --write-registers "100=$csv" --read-registers 100:8 >out 2>err ||
        die "$c: secure_master failed: $(cat err)"
    [ "$(cat out)" = "100:$dec" ] || die "$c: read back '$(cat out)', expected '100:$dec'"
    grep -q "cipher $c\$" err || die "$c: negotiated another cipher: $(cat err)"
    note "$(printf '%-13s' "$c") wrote and read back 8 registers across the veth: OK"
done
stop_capture secure.pcap ${#ciphers[@]}

packets=$(tcpdump -r secure.pcap -nn 2>/dev/null | wc -l)
# Each run: TCP handshake, two Noise messages and the master's confirming keep-alive,
# two requests and two replies, close.
[ "$packets" -ge $((${#ciphers[@]} * 8)) ] ||
    die "secure.pcap has only $packets packets: the capture missed the exchange"
found=$(leaks secure.pcap)
[ -z "$found" ] || die "register values in clear on the wire: $found"
note "secure capture: $packets packets, $(wc -c <secure.pcap) bytes: no register value in clear"

# --- control: the same write in clear must be caught -----------------------------
# A Modbus/TCP FC16 request (MBAP: transaction 1, protocol 0, length 23,
# unit 255; PDU: function 0x10, address 100, 8 registers, 16 bytes) with the
# same values, sent straight to the slave's port.  The slave rejects it as a
# handshake; what matters is that its bytes crossed the wire in clear.
adu='\x00\x01\x00\x00\x00\x17\xff\x10\x00\x64\x00\x08\x10'
for r in "${regs[@]}"; do
    adu="$adu\\x${r:0:2}\\x${r:2:2}"
done
start_capture control.pcap
ip netns exec "$ns_m" bash -c 'exec 3<>"/dev/tcp/$1/$2" && printf "$3" >&3' _ \
    "$ip_s" "$port" "$adu" || die "control: cannot send the cleartext request"
stop_capture control.pcap 1
found=$(leaks control.pcap)
[ "$(echo "$found" | grep -c .)" -eq $((${#regs[@]} - 1)) ] ||
    die "control: the cleartext request was not detected in control.pcap (found: '$found')"
note "control capture: the same values sent in clear are detected: the check works"

# --- a master never hangs past --timeout ---------------------------------------------
# Nobody has $net.3: the SYN gets no answer (not even ARP), so only the
# master's own deadline can end the attempt.
t0=$(date +%s%N)
ip netns exec "$ns_m" "${runner[@]}" "$master_bin" --connect "$net.3:$port" --timeout 500 \
    --key master.key --peer slave.key.pub --psk site.psk --read-registers 0:1 >out 2>err
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" -eq 1 ] && grep -q '^secure_master: .*timed out' err ||
    die "unreachable slave: status $rc: $(cat err)"
[ "$ms" -lt 3000 ] || die "unreachable slave: --timeout 500 took $ms ms"
note "unreachable slave, --timeout 500: gave up after $ms ms: $(cat err)"

# --- the slave stops cleanly --------------------------------------------------------
kill -TERM "$slave_pid"
wait "$slave_pid"
st=$?
slave_pid=
[ "$st" -eq 0 ] || die "the slave exited with status $st after SIGTERM: $(cat slave.log)"
n=$(grep -c ' connected as plc-master ' slave.log)
[ "$n" -eq ${#ciphers[@]} ] || die "slave log: $n connections, expected ${#ciphers[@]}: $(cat slave.log)"
note "slave log:"
sed 's/^/    /' slave.log

# --- 9. a plain PLC behind mbsc-gateway on a third host ------------------------
# PLC host 192.168.77.2 <-veth-> 192.168.77.1 on the slave's host, where the
# gateway listens on the master's side ($ip_s) and forwards in plaintext.
# The PLC has 100 registers of each kind: the values go to 10..17.
ip netns add "$ns_p" 2>"$dir/ip.err" || die "cannot create a third namespace: $(cat "$dir/ip.err")"
made_p=1
ip link add "$veth_g" type veth peer name "$veth_p" 2>"$dir/ip.err" ||
    die "cannot create the PLC's veth pair: $(cat "$dir/ip.err")"
made_veth_p=1
ip link set "$veth_g" netns "$ns_s" && ip link set "$veth_p" netns "$ns_p" ||
    die "cannot move the PLC's veth ends into the namespaces"
made_veth_p=
for side in "$ns_s $veth_g 192.168.77.1" "$ns_p $veth_p 192.168.77.2"; do
    read -r ns veth addr <<<"$side"
    ip -n "$ns" addr add "$addr/24" dev "$veth" &&
        ip -n "$ns" link set "$veth" up &&
        ip -n "$ns" link set lo up || die "cannot configure $veth in $ns"
done
note "PLC    host: netns $ns_p, $veth_p 192.168.77.2/24, behind the gateway on $ns_s"

mkfifo plc.out gateway.out || die "mkfifo failed"
ip netns exec "$ns_p" "${runner[@]}" "$plc_bin" --port 0 >plc.out 2>plc.log &
plc_pid=$!
exec 3<plc.out
IFS= read -r line <&3 || line=
exec 3<&-
case $line in
"listening on "[1-9]*) plc_port=${line##* } ;;
*) die "the PLC did not start: '$line' $(cat plc.log)" ;;
esac
printf '%s plc-master operator\n' "$(cat master.key.pub)" >authorized
printf 'operator read-write holding-registers 0-199\n' >roles.policy
ip netns exec "$ns_s" "${runner[@]}" "$gateway_bin" server --listen "$ip_s:0" \
    --upstream "192.168.77.2:$plc_port" --key slave.key --authorized authorized \
    --psk site.psk --policy roles.policy >gateway.out 2>gateway.log &
gateway_pid=$!
exec 3<gateway.out
IFS= read -r line <&3 || line=
exec 3<&-
case $line in
"listening on $ip_s:"[1-9]*) port=${line##*:} ;;
*) die "the gateway did not start: '$line' $(cat gateway.log)" ;;
esac
note "PLC on 192.168.77.2:$plc_port, gateway listening on $ip_s:$port"

start_capture gateway.pcap
ip netns exec "$ns_m" "${runner[@]}" "$master_bin" --connect "$ip_s:$port" \
    --key master.key --peer slave.key.pub --psk site.psk \
    --write-registers "10=$csv" --read-registers 10:8 >out 2>err ||
    die "through the gateway: secure_master failed: $(cat err) $(cat gateway.log)"
[ "$(cat out)" = "10:$dec" ] || die "through the gateway: read back '$(cat out)', expected '10:$dec'"
stop_capture gateway.pcap 1
packets=$(tcpdump -r gateway.pcap -nn 2>/dev/null | wc -l)
[ "$packets" -ge 8 ] || die "gateway.pcap has only $packets packets: the capture missed the exchange"
found=$(leaks gateway.pcap)
[ -z "$found" ] || die "register values in clear between master and gateway: $found"
note "master -> gateway -> PLC: wrote and read back 8 registers; capture master-gateway:" \
    "$packets packets, no register value in clear"
kill -TERM "$gateway_pid"
wait "$gateway_pid"
st=$?
gateway_pid=
[ "$st" -eq 0 ] || die "the gateway exited with status $st after SIGTERM: $(cat gateway.log)"
grep -q 'master plc-master (role operator) connected' gateway.log ||
    die "gateway log: no connection of plc-master: $(cat gateway.log)"
note "gateway log:"
sed 's/^/    /' gateway.log

# --- 10. a serial line behind the gateway ------------------------------------------
# The line: two ptys joined by socat (ptys belong to no network namespace).
# 8N1: a pty takes no parity.
socat pty,raw,echo=0,link="$dir/gw.tty" pty,raw,echo=0,link="$dir/dev.tty" 2>socat.log &
socat_pid=$!
for _ in $(seq 100); do
    [ -e "$dir/gw.tty" ] && [ -e "$dir/dev.tty" ] && break
    sleep 0.05
done
[ -e "$dir/gw.tty" ] || die "socat made no pty pair: $(cat socat.log)"
mkfifo rtu.out || die "mkfifo failed"
"${runner[@]}" "$rtu_bin" "$dir/dev.tty" 19200 8N1 7 >rtu.out 2>rtu.log &
rtu_pid=$!
exec 3<rtu.out
IFS= read -r line <&3 || line=
exec 3<&-
[ "$line" = "serving $dir/dev.tty" ] || die "the RTU device did not start: '$line' $(cat rtu.log)"
ip netns exec "$ns_s" "${runner[@]}" "$gateway_bin" server --listen "$ip_s:0" \
    --route "7=rtu:$dir/gw.tty,19200,8N1,timeout=500" --key slave.key --authorized authorized \
    --psk site.psk --policy roles.policy --control "$dir/ctl" >gateway.out 2>gateway.log &
gateway_pid=$!
exec 3<gateway.out
IFS= read -r line <&3 || line=
exec 3<&-
case $line in
"listening on $ip_s:"[1-9]*) port=${line##*:} ;;
*) die "the serial gateway did not start: '$line' $(cat gateway.log)" ;;
esac
note "RTU device on unit 7 of $dir/dev.tty, gateway listening on $ip_s:$port"
start_capture serial.pcap
ip netns exec "$ns_m" "${runner[@]}" "$master_bin" --connect "$ip_s:$port" --unit 7 \
    --key master.key --peer slave.key.pub --psk site.psk \
    --write-registers "10=$csv" --read-registers 10:8 >out 2>err ||
    die "through the serial gateway: secure_master failed: $(cat err) $(cat gateway.log)"
[ "$(cat out)" = "10:$dec" ] ||
    die "through the serial gateway: read back '$(cat out)', expected '10:$dec'"
stop_capture serial.pcap 1
found=$(leaks serial.pcap)
[ -z "$found" ] || die "register values in clear between master and serial gateway: $found"
status=$("${runner[@]}" "$gateway_bin" status --control "$dir/ctl") ||
    die "mbsc-gateway status failed: $status"
case $status in
*"(Modbus RTU 19200 8N1, answer timeout 500 ms; requests 2, answers 2, timeouts 0, CRC errors 0,"*) ;;
*) die "the serial line's status line is not as expected: $status" ;;
esac
note "master -> gateway -> serial line -> RTU device: wrote and read back 8 registers; status:"
printf '%s\n' "$status" | sed 's/^/    /'
kill -TERM "$gateway_pid"
wait "$gateway_pid"
st=$?
gateway_pid=
[ "$st" -eq 0 ] || die "the serial gateway exited with status $st after SIGTERM: $(cat gateway.log)"
note "PASS"
exit 0
