# SPDX-License-Identifier: ISC
# faults_table.awk - the table of tests/faults.sh, and its verdict.
#
#   awk -v bound=MS -f faults_table.awk phases.txt plc.record scada.log
#
# phases.txt: "KEY T_ON T_OFF T_END SESSIONS" per window (a KEY may
# repeat: the rows add them up, recovery is the longest; SESSIONS, the
# server gateway's masters at the end of the window, is shown, the most of
# the repeats); plc.record: "VALUE TIME_MS"
# per write the PLC executed; scada.log: fault-scada's events (A, F, R, X,
# U, T, D, C; see tests/fault_scada.c).  All times are CLOCK_REALTIME ms.
#
# Per KEY: writes acknowledged, writes recorded, values recorded twice,
# acknowledged writes missing from the record (lost), misdelivered answers
# (fault-scada's X events, and reads of a value never recorded), and the
# recovery time: from the end of the fault to the first acknowledgement
# after it.  Exit 1 on any loss, duplicate or misdelivery, or a recovery
# longer than bound (or none).

function phase_of(t,    i) {
    for (i = n_win; i >= 1; i--)
        if (t >= win_on[i])
            return win_key[i]
    return "before"
}

FILENAME == ARGV[1] {
    n_win++
    win_key[n_win] = $1; win_on[n_win] = $2; win_off[n_win] = $3; win_end[n_win] = $4
    if (!($1 in sessions) || $5 > sessions[$1]) sessions[$1] = $5
    if (!($1 in seen_key)) { seen_key[$1] = 1; order[++n_keys] = $1 }
    windows[$1]++
    next
}

FILENAME == ARGV[2] {
    p = phase_of($2)
    recorded[p]++
    if ($1 in on_record)
        dups[p]++
    on_record[$1] = 1
    next
}

{
    p = phase_of($1)
    if ($2 == "A") { acked[p]++; acked_at[$3] = $1 }
    else if ($2 == "X") mis[p]++
    else if ($2 == "R") later[$3] = $1
    else if ($2 == "U" || $2 == "F") failed[p]++
    # The first acknowledgement at or after each window's fault end.
    if ($2 == "A")
        for (i = 1; i <= n_win; i++)
            if (!(i in rec_ms) && $1 >= win_off[i] && $1 < win_end[i] + 60000)
                rec_ms[i] = $1 - win_off[i]
}

END {
    for (v in acked_at)
        if (!(v in on_record)) lost[phase_of(acked_at[v])]++
    for (v in later)
        if (!(v in on_record)) mis[phase_of(later[v])]++
    for (i = 1; i <= n_win; i++) {
        k = win_key[i]
        if (!(i in rec_ms)) { norec[k]++; continue }
        if (!(k in worst) || rec_ms[i] > worst[k]) worst[k] = rec_ms[i]
    }
    printf "\n%-18s %7s %8s %8s %5s %5s %12s %9s %8s  %s\n", "fault", "windows", "acked", "recorded",
        "lost", "dups", "misdelivered", "recovery", "sessions", "verdict"
    bad = 0
    for (j = 1; j <= n_keys; j++) {
        k = order[j]
        why = ""
        if (lost[k] + 0 > 0) why = why " lost"
        if (dups[k] + 0 > 0) why = why " duplicates"
        if (mis[k] + 0 > 0) why = why " misdelivered"
        if (norec[k] + 0 > 0) why = why " no-recovery"
        else if (k != "baseline" && worst[k] > bound) why = why " slow-recovery"
        if (why != "") bad = 1
        rec = k == "baseline" ? "-" : (norec[k] + 0 > 0 ? "none" : worst[k] " ms")
        printf "%-18s %7d %8d %8d %5d %5d %12d %9s %8s  %s\n", k, windows[k], acked[k], recorded[k],
            lost[k], dups[k], mis[k], rec, sessions[k], why == "" ? "ok" : "FAIL:" why
    }
    if ("before" in acked || "before" in recorded)
        printf "(before the first window: %d acknowledged, %d recorded)\n", acked["before"], recorded["before"]
    printf "recovery bound: the reconnect backoff ceiling + 1 s = %d ms; sessions: the server\n", bound
    printf "gateway's masters at the end of the window (one SCADA host: 1)\n"
    exit bad
}
