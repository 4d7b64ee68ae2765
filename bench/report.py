#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""report.py - the tables and the picture of make bench and make bench-gateway.

Reads the long CSV the two bench programs write (bench/common.h), prints the
tables, and with --plot writes a gnuplot script beside the PNG and runs
gnuplot on it when gnuplot is installed.  Python's standard library only:
the measuring stays in C, the typesetting here.

    report.py [--plot FILE.png] [--no-gnuplot] CSV [CSV...]
"""
import csv
import math
import shutil
import subprocess
import sys

# The study's Raspberry Pi 4 throughputs (MiB/s, reference implementations).
PI4 = {"chacha20": 173.0, "trivium": 598.0, "rabbit": 232.0, "enocoro128v2": 57.0}
PI4_MHZ = 1500.0
PI4_BOARD = "Raspberry Pi 4 (Cortex-A72, 1.5 GHz), reference implementations"
CIPHERS = ["chacha20", "trivium", "rabbit", "enocoro128v2"]
SODIUM = ["libsodium-chacha20", "libsodium-chacha20poly1305"]
SIZES = [16, 64, 256, 1024, 8192, 1048576]
FRAMES = [12, 260]
MIB = 1048576


class Figures:
    """Every row of the CSV files, by (subject, metric, size); text rows as str."""

    def __init__(self, paths):
        self.v, self.subjects = {}, []
        for path in paths:
            with open(path, newline="") as f:
                rows = list(csv.reader(f))
            if not rows or rows[0] != ["cipher", "metric", "size_bytes", "value", "unit"]:
                sys.exit("report.py: %s is not a bench CSV (no header line)" % path)
            for n, row in enumerate(rows[1:], 2):
                if len(row) != 5:
                    sys.exit("report.py: %s:%d: not 5 fields" % (path, n))
                subj, metric, size, value, unit = row
                try:
                    self.v[subj, metric, int(size or 0)] = value if unit == "text" else float(value)
                except ValueError:
                    sys.exit("report.py: %s:%d: '%s' is not a number" % (path, n, value))
                if subj not in self.subjects:
                    self.subjects.append(subj)

    def get(self, subj, metric, size=0):
        return self.v.get((subj, metric, size))

    def text(self, subj, metric, default="-"):
        t = self.get(subj, metric)
        return t if isinstance(t, str) else default


def fmt(v):
    """Three significant figures or so, '-' for a missing figure."""
    if v is None or isinstance(v, str):
        return "-" if v is None else v
    if v >= 100 or v == 0 or v == int(v):
        return "%.0f" % v
    return "%.1f" % v if v >= 10 else "%.2f" % v


def ratio(a, b, suffix="x"):
    return "-" if a is None or b is None or b <= 0 else "%.2f%s" % (a / b, suffix)


def size_label(z):
    if z >= MIB:
        return "%d MiB" % (z // MIB)
    return "%d KiB" % (z // 1024) if z >= 1024 else "%d B" % z


def table(title, cols, rows, notes=()):
    """A text table: figures right-aligned, words (the first column, and any
    column with a cell that is no figure) left-aligned."""
    w = [max(len(str(c)) for c in col) for col in zip(cols, *rows)]
    figure = lambda c: str(c)[:1] in "0123456789+-" and " " not in str(c).strip(" /0123456789.")
    left = [i == 0 or any(not figure(r[i]) for r in rows) for i in range(len(cols))]
    line = lambda cells: "  ".join(
        str(c).ljust(w[i]) if left[i] else str(c).rjust(w[i]) for i, c in enumerate(cells))
    print("\n" + title, line(cols), "-" * len(line(cols)), *[line(r) for r in rows],
          *["  " + n for n in notes], sep="\n")


def stream_rows(f):
    return [c for c in CIPHERS + SODIUM if f.get(c, "throughput", MIB) is not None]


def frame_rows(f):
    """The subjects with per-frame latencies: the ciphers, then libsodium's AEAD."""
    return [c for c in CIPHERS + SODIUM[1:] if f.get(c, "seal_ns_p50", 12) is not None]


def transports(f):
    """(subject, group, median, p99, median - plaintext's) of each round-trip row: plaintext
    (group 0), then each cipher on the sync path (1), then on the pump (2)."""
    plain = f.get("plaintext", "rtt_us_p50")
    for s, group in [("plaintext", 0)] + [(c, 1) for c in CIPHERS] + [
            (c + "-pump", 2) for c in CIPHERS]:
        p50 = f.get(s, "rtt_us_p50")
        if p50 is not None or s == "plaintext":
            yield s, group, p50, f.get(s, "rtt_us_p99"), (
                None if group == 0 or plain is None else p50 - plain)


def bench_tables(f):
    cy, m = f.text("machine", "cycles_short", "cycles"), lambda k: f.text("machine", k)
    print("mbsc-bench: %s (%s run)" % (f.text("run", "program"), f.text("run", "plan")))
    for label, line in (
            ("cpu", "%s; %s online cores; %s" % (m("cpu"), fmt(f.get("machine", "cores")),
                                                 m("system"))),
            ("compiler", "%s; CFLAGS: %s; host: %s" % (m("compiler"), m("cflags"), m("host"))),
            ("libraries", "libsodium %s, libmodbus %s" % (m("libsodium"), m("libmodbus"))),
            ("clock", "%s, %s ns per reading" % (m("clock"), fmt(f.get("machine",
                                                                      "clock_read_ns")))),
            ("cycles", m("cycles")), ("pinning", m("pinning")),
            ("rounds", "%s; every group interleaves the ciphers round by round"
             % f.text("run", "rounds"))):
        print("  %-11s%s" % (label + ":", line))
    names = stream_rows(f)
    rows = []
    for c in names:
        mibps, paper = f.get(c, "throughput", MIB), PI4.get(c)
        rows.append([c, f.text(c, "impl"), fmt(1e6 / mibps) if mibps else "-", fmt(mibps),
                     fmt(f.get(c, "cpb", MIB)), fmt(f.get(c, "state_bytes")),
                     fmt(f.get(c, "code_bytes")), fmt(paper),
                     fmt(1e6 / paper) if paper else "-",
                     fmt(PI4_MHZ * 1e6 / (paper * MIB)) if paper else "-",
                     "%.1fx" % (mibps / paper) if paper and mibps else "-"])
    table("The study's table on this machine: encrypting 1 MiB, beside its Raspberry Pi 4 "
          "figures", ["cipher", "impl", "time 1 MiB (us)", "MiB/s", "cycles/B", "state B",
                      "code B", "Pi 4 MiB/s", "Pi 4 time (us)*", "Pi 4 cycles/B*",
                      "here / Pi 4"], rows,
          ["Pi 4: the study, %s." % PI4_BOARD,
           "* derived from the study's throughput: 1 MiB / throughput, and %.0f MHz / "
           "(bytes per second)." % PI4_MHZ,
           "cycles/B: %s.  state B: mbsc_cipher_state_bytes." % cy,
           "code B: %s." % f.text("machine", "code_size_tool")])
    for metric, title in (("throughput", "Keystream throughput in MiB/s by message size "
                           "(mbsc_stream_xor in place, median)"),
                          ("cpb", "Cycles per byte by message size (median)")):
        table(title, ["cipher", "impl"] + [size_label(z) for z in SIZES],
              [[c, f.text(c, "impl")] + [fmt(f.get(c, metric, z)) for z in SIZES] for c in names],
              ["cycles: %s." % cy] if metric == "cpb" else [])
    if f.get("libsodium-chacha20", "throughput", MIB) is not None:
        rows = [[size_label(z), fmt(f.get("chacha20", "throughput", z)),
                 fmt(f.get(SODIUM[0], "throughput", z)),
                 ratio(f.get("chacha20", "throughput", z), f.get(SODIUM[0], "throughput", z), ""),
                 fmt(f.get(SODIUM[1], "throughput", z))] for z in SIZES]
        table("ChaCha20: mbsc (%s) / libsodium (SIMD where the CPU has it)"
              % f.text("chacha20", "impl"),
              ["message", "mbsc MiB/s", "libsodium MiB/s", "mbsc / libsodium",
               "libsodium AEAD MiB/s"], rows,
              ["libsodium's stream restarts at block 0 on every call: a message shorter than 64 "
               "bytes costs it a whole block, while mbsc keeps the rest for the next call."])
    ciphers = [c for c in CIPHERS if f.get(c, "impl") is not None]
    table("Setup and memory footprint", ["cipher", "impl", "setup (ns)", "state B", "session B",
                                          "session B (4080)", "code B"],
          [[c, f.text(c, "impl")] + [fmt(f.get(c, m)) for m in (
              "setup_ns", "state_bytes", "session_bytes", "session_bytes_4080", "code_bytes")]
           for c in ciphers],
          ["setup: one mbsc_stream_init (key + IV), median.  session B: "
           "mbsc_session_footprint(), one connection with its buffers, Modbus configuration "
           "(260-byte payloads; 4080: mbsc_config_set_max_payload(cfg, 4080)).",
           "code B: %s, all implementations of the cipher." % f.text("machine", "code_size_tool")])
    pair = lambda c, op, z: "-" if f.get(c, op + "_ns_p50", z) is None else "%s / %s" % (
        fmt(f.get(c, op + "_ns_p50", z)), fmt(f.get(c, op + "_ns_p99", z)))
    table("Per-frame latency in ns, median / p99 (payload = one Modbus ADU)",
          ["cipher", "impl", "seal 12 B", "open 12 B", "seal 260 B", "open 260 B"],
          [[c, f.text(c, "impl")] + [pair(c, op, z) for z in FRAMES for op in ("seal", "open")]
           for c in ciphers + [s for s in frame_rows(f) if s in SODIUM]],
          ["mbsc_record_seal / mbsc_record_open, one call per sample, clock overhead (%s ns) "
           "subtracted; open verifies a fresh frame each time." % fmt(f.get("machine",
                                                                           "clock_read_ns")),
           "%s: crypto_aead_chacha20poly1305_ietf_encrypt / _decrypt, fresh nonce per message."
           % SODIUM[1]])
    rows = []
    for c, z in [(c, z) for c in ciphers for z in FRAMES]:
        rows.append([c, f.text(c, "impl"), z])
        for m in ("seal", "seal_ahead", "open", "open_ahead"):  # against AEAD's seal or open
            v = f.get(c, m + "_ns_p50", z)
            rows[-1] += [fmt(v), ratio(v, f.get(SODIUM[1], m[:4] + "_ns_p50", z))]
    table("Seal and open against libsodium AEAD, median ns: with the keystream generated in the "
          "call, and the critical path with it refilled ahead",
          ["cipher", "impl", "payload B", "seal", "vs AEAD", "seal ahead", "vs AEAD", "open",
           "vs AEAD", "open ahead", "vs AEAD"], rows,
          ["seal/open: no keystream buffer, the keystream is made in the call (a frame's CPU "
           "cost).  ahead: the session's buffer, refilled between frames outside the timing "
           "(mbsc_session_refill): Poly1305 and an XOR.",
           "vs AEAD: over crypto_aead_chacha20poly1305_ietf_encrypt / _decrypt in the same run "
           "(< 1 is faster)."])
    impls = [s for s in f.subjects if f.get(s, "implementation") is not None]
    rows = []
    for s in impls + [x for x in SODIUM if f.get(x, "impl_mibps", MIB) or f.get(
            x, "impl_seal_ns", 260)]:
        c, _, i = s.partition(":")
        rows.append([s, "yes" if i and f.text(c, "impl") == i else "",
                     fmt(f.get(s, "impl_code_bytes")),
                     fmt(f.get(s, "impl_mibps", MIB)), fmt(f.get(s, "impl_cpb", MIB)),
                     ratio(f.get(s, "impl_mibps", MIB), f.get(SODIUM[0], "impl_mibps", MIB)),
                     fmt(f.get(s, "impl_seal_ns", 260)),
                     ratio(f.get(s, "impl_seal_ns", 260), f.get(SODIUM[1], "impl_seal_ns", 260))])
    table("Every implementation side by side, in the same rounds: 1 MiB keystream, seal of a "
          "260-byte frame", ["implementation", "default", "code B", "MiB/s", "cycles/B",
                             "speed vs libsodium-chacha20", "seal 260 B (ns)",
                             "seal vs libsodium AEAD"], rows,
          ["Only the implementations this CPU supports (MBSC_CIPHER_IMPL or "
           "mbsc_cipher_force_impl pick one).  Speed ratio: MiB/s over libsodium's (> 1 is "
           "faster); seal ratio: ns over libsodium AEAD encrypt (< 1 is faster).",
           "code B: .text of the implementation's own object; vector implementations also use "
           "the portable file's driver or key setup.  cycles/B: %s." % cy])
    rows = [["plaintext libmodbus" if s == "plaintext" else s, fmt(f.get(s, "handshake_us")),
             fmt(p50), fmt(p99), "-" if added is None else "%+.1f" % added,
             fmt(f.get(s, "slave_cpu_us"))] for s, _, p50, p99, added in transports(f)]
    table("Connection: Noise handshake in memory, and Modbus round trip over loopback (read 10 "
          "holding registers)", ["transport", "handshake (us)", "RTT p50 (us)", "RTT p99 (us)",
                                 "p50 - plaintext (us)", "slave CPU/request (us)"], rows,
          ["handshake: two sessions back to back, both sides' CPU time, median.",
           "slave CPU/request: CPU time of the slave's thread (user + system) over all its "
           "requests, divided by their number.", "RTT: %s." % f.text("rtt", "note")])


def gateway_paths(f):
    """(path, median, p99, median added to direct's or None, that over the haproxy pair's)."""
    direct = f.get("direct", "rtt_us_p50")
    paths = [s for s in f.subjects if f.get(s, "path") is not None]
    added = {p: None if direct is None or p == "direct" else f.get(p, "rtt_us_p50") - direct
             for p in paths}
    return [(p, f.get(p, "rtt_us_p50"), f.get(p, "rtt_us_p99"), added[p],
             "-" if added[p] is None else ratio(added[p], added.get("haproxy-pair")))
            for p in paths]


def gateway_tables(f):
    paths = gateway_paths(f)
    rows = [[p, f.text(p, "path"), fmt(p50), fmt(p99), "-" if added is None else "%+.1f" % added,
             hap_ratio] for p, p50, p99, added, hap_ratio in paths]
    compared = f.text("gateway", "compared", "")
    table("mbsc-gateway-bench: round trip of one read of 10 holding registers over loopback, "
          "%s requests per path in %s interleaved rounds%s" % (
              fmt(f.get("gateway", "requests_per_path")), fmt(f.get("gateway", "rounds")),
              "; -compared: " + compared if compared else ""),
          ["path", "what", "median us", "p99 us", "added us (median - direct)",
           "added / haproxy pair's"], rows,
          ["added / haproxy pair's: the path's added median over the haproxy pair's (a relay "
           "pair that does nothing); <= 1 is as cheap as a relay or cheaper."] +
          ["%s: not measured: %s" % (s, f.text(s, "missing")) for s in f.subjects
           if f.get(s, "missing") is not None])
    rows = [[p, s[len(p) + 1:]] + [fmt(f.get(s, m)) for m in (
        "syscalls_strace", "ctxsw_vol_proc_status", "ctxsw_invol_proc_status")]
            for p, *_ in paths for s in f.subjects if s.startswith(p + "/")]  # s: path/process
    if rows:
        table("Per forwarded request, each process between the client and the PLC",
              ["path", "process", "system calls (strace -c -f)",
               "voluntary ctx switches (/proc status)", "involuntary (/proc status)"], rows,
              ["system calls: a separate run of %s requests per path with strace -c -f attached "
               "to the process (strace slows it; the count is what matters).  Context switches: "
               "/proc/PID/task/*/status over the timed rounds, all threads summed.  The client "
               "and the PLC are the same on every path and not counted." % fmt(
                   f.get("gateway", "strace_requests"))])
    rows = []
    for s in ("gw1-load", "gw1-load-compared"):
        for m in ("1", "50", "1000", "50_inflight_8"):
            v = f.get(s, "rps_masters_" + m)
            if v is not None:
                masters, _, fl = m.partition("_inflight_")
                rows.append([s, masters, fl or "1", fmt(v),
                             fmt(f.get(s, "rps_masters_%s_failed" % m))])
    if rows:
        table("Requests per second through one server gateway (mbsc masters, each one request "
              "at a time; median of %s runs of %s s)" % (fmt(f.get("gw1-load", "runs")),
                                                         fmt(f.get("gw1-load",
                                                                   "seconds_per_run"))),
              ["gateway", "masters", "--max-in-flight", "requests/s", "failed"], rows)
    rows = []
    for baud in (19200, 115200):
        wire = f.get("serial-%d-wire" % baud, "wire_us")
        d = f.get("serial-%d-direct" % baud, "rtt_us_p50")
        for kind, what in (("direct", "libmodbus RTU master on a pty"),
                           ("gw1", "mbsc master -> server gw -> pty")):
            s = "serial-%d-%s" % (baud, kind)
            v = f.get(s, "rtt_us_p50")
            if v is not None:
                rows.append([s, what, fmt(v), fmt(f.get(s, "rtt_us_p99")),
                             "-" if kind == "direct" else "%+.1f" % (v - d), fmt(wire)])
    if rows:
        table("Serial line on a pty (socat), libmodbus's RTU server, 8N1",
              ["path", "what", "median us", "p99 us", "added us", "on a real wire us"], rows,
              ["on a real wire: the 33 characters of request and answer at that rate plus t3.5 "
               "after each; a pty moves bytes at once, so the rows show what the gateway adds."])


# ---- the picture -----------------------------------------------------------------------


def log_range(values):
    """A log axis from a round value below the smallest to room above the largest."""
    vals = [v for v in values if v and v > 0]
    if not vals:
        return 1, 10
    return 10 ** math.floor(math.log10(min(vals))), max(vals) * 4


def q(text):
    """text as a gnuplot string in single quotes."""
    return "'" + text.replace("'", "''") + "'"


def block(name, lines):
    return ["$%s << EOD" % name] + lines + ["EOD"]


def bars_panel(name, title, bars, group_keys, ylabel="microseconds per request (lower is better)"):
    """Median bars with a line up to p99 and a label above each: bars are
    (xtic, median, p99, label, group); group k has key group_keys[k] and
    colour COLOURS[k]."""
    lo, hi = log_range([b[1] for b in bars] + [b[2] for b in bars])
    out = block(name, ['%d "%s" %g %g "%s" %d' % (i, b[0], b[1], b[2], b[3], b[4])
                       for i, b in enumerate(bars)])
    out += ["set title " + q(title), "set ylabel " + q(ylabel), "set logscale y",
            "set yrange [%g:%g]" % (lo, hi), "set xrange [-0.7:%g]" % (len(bars) - 0.3),
            "set style fill solid 0.8 border rgb 'black'", "set boxwidth 0.7", "unset logscale x",
            "set xtics rotate by 0 font ',8'", "set key top left horizontal"]
    plots = ["$%s using 1:3:(0):($4-$3):xtic(2) with vectors nohead lc rgb 'black' notitle" % name,
             "$%s using 1:4:5 with labels offset 0,0.7 font ',8' notitle" % name]
    for k, key in enumerate(group_keys):
        plots.insert(k, "$%s using 1:($6==%d?$3:1/0) with boxes lc rgb '%s' title %s"
                     % (name, k, COLOURS[k], q(key)))
    return out + ["plot " + ", \\\n     ".join(plots)]


COLOURS = ["#999999", "#3182bd", "#9ecae1", "#e6550d", "#fdae6b", "#31a354", "#756bb1"]


def rtt_panel(f):
    bars = [("plaintext\\nlibmodbus" if group == 0 else "%s\\n%s\\n%s" % (
        s.replace("-pump", ""), "pump" if group == 2 else "sync",
        f.text(s.replace("-pump", ""), "impl")),
             p50, p99, "baseline" if group == 0 else "%+.1f us" % added, group)
            for s, group, p50, p99, added in transports(f) if p50 is not None]
    return bars_panel("rtt", "Modbus round trip, read 10 registers, loopback (bar: median, "
                      "line: p99; above: added to plaintext)", bars,
                      ["plaintext Modbus/TCP", "mbsc library, synchronous path",
                       "mbsc library, pump thread"])


def gateway_panel(f):
    bars = []
    for p, p50, p99, added, hap_ratio in gateway_paths(f):
        group = (0 if p == "direct" else 1 if p.startswith("gw1") else 2 if p.startswith("gw2")
                 else 3 if p.startswith("haproxy") else 4 if p.startswith("stunnel") else 5)
        label = "direct" if p == "direct" else "%+.0f" % added + (
            "" if hap_ratio == "-" else "\\n" + hap_ratio)
        bars.append((p.replace("-", "\\n"), p50, p99, label, group))
    return bars_panel("gw", "Gateways and relays (bar: median, line: p99; above: us added "
                      "to direct, and x the haproxy pair's)", bars,
                      ["direct", "one mbsc-gateway", "two mbsc-gateways", "haproxy pair",
                       "stunnel pair", "TLS master, one gateway"])


def throughput_panel(f):
    names = stream_rows(f)
    lo, hi = log_range([f.get(c, "throughput", z) for c in names for z in SIZES])
    out = []
    plots = []
    for k, c in enumerate(names):
        out += block("tp%d" % k, ["%d %g" % (z, f.get(c, "throughput", z)) for z in SIZES
                                  if f.get(c, "throughput", z) is not None])
        label = "%s (%s)" % (c, f.text(c, "impl") if c in CIPHERS else
                             "libsodium " + f.text("machine", "libsodium"))
        plots.append("$tp%d using 1:2 with linespoints lw 2 pt %d lc rgb '%s' dt %d title %s"
                     % (k, k + 4, COLOURS[(k + 1) % len(COLOURS)], 2 if c in SODIUM else 1,
                        q(label)))
    return out + ["set title 'Keystream throughput (median)'", "set logscale xy",
                  "set xrange [12:1400000]", "set yrange [%g:%g]" % (lo, hi),
                  "set xlabel 'message size (bytes)'", "set ylabel 'MiB/s (higher is better)'",
                  "set xtics ('16' 16, '64' 64, '256' 256, '1 K' 1024, '8 K' 8192, "
                  "'1 M' 1048576)", "set key top left",
                  "plot " + ", \\\n     ".join(plots), "unset xlabel", "unset logscale x"]


def latency_panel(f):
    rows = frame_rows(f)
    ops = [("seal", 12), ("open", 12), ("seal", 260), ("open", 260)]
    data, vals = [], []
    for i, c in enumerate(rows):
        tic = "libsodium\\nAEAD" if c in SODIUM else "%s\\n%s" % (c, f.text(c, "impl"))
        line = '%d "%s"' % (i, tic)
        for op, z in ops:
            a, b = f.get(c, op + "_ns_p50", z), f.get(c, op + "_ns_p99", z)
            vals += [a, b]
            line += " %g %g" % (a or 0, b or 0)
        data.append(line)
    lo, hi = log_range(vals)
    plots = []
    for k, (op, z) in enumerate(ops):
        x = "($1+%g)" % ((k - 1.5) * 0.2)
        plots.append("$lat using %s:%d:(0.18)%s with boxes lc rgb '%s' title '%s %d B'" % (
            x, 3 + 2 * k, ":xtic(2)" if k == 0 else "", COLOURS[k + 1], op, z))
        plots.append("$lat using %s:%d:(0):($%d-$%d) with vectors nohead lc rgb 'black' notitle"
                     % (x, 3 + 2 * k, 4 + 2 * k, 3 + 2 * k))
    return block("lat", data) + [
        "set title 'Per-frame latency: median, line up to p99'",
        "set ylabel 'ns per frame (lower is better)'", "set logscale y", "unset logscale x",
        "set yrange [%g:%g]" % (lo, hi), "set xrange [-0.6:%g]" % (len(rows) - 0.4),
        "set xtics ()", "set key top left horizontal", "set style fill solid 0.8",
        "plot " + ", \\\n     ".join(plots)]


def gnuplot_script(f, png):
    panels = [draw(f) for there, draw in (
        (f.get("plaintext", "rtt_us_p50") is not None, rtt_panel),
        (f.get("direct", "rtt_us_p50") is not None, gateway_panel),
        (stream_rows(f), throughput_panel),
        (set(CIPHERS) & set(frame_rows(f)), latency_panel)) if there]
    if not panels:
        return None
    rows = (len(panels) + 1) // 2
    title = "mbsc-bench on %s, %s" % (f.text("machine", "cpu", "this machine"),
                                     f.text("machine", "compiler", ""))
    if f.text("run", "plan", "") == "quick":
        title += "\\nQUICK RUN (--quick): few samples, the p99 lines are rough"
    out = ["set terminal pngcairo size 1600,%d font 'DejaVu Sans,10'" % (560 * rows),
           "set output '%s'" % png.replace("'", "''"),
           "set grid ytics mytics lc rgb '#dddddd'", "set bmargin 5",
           'set multiplot layout %d,%d title "%s" font ",12" textcolor rgb "#cc0000"'
           % (rows, 2 if len(panels) > 1 else 1, title)]
    for p in panels:
        out += p + ["unset title", "unset xtics", "set xtics", "unset xlabel"]
    return "\n".join(out + ["unset multiplot", ""])


def main(argv):
    usage = "usage: report.py [--plot FILE.png] [--no-gnuplot] CSV [CSV...]"
    plot = argv[argv.index("--plot") + 1] if "--plot" in argv[:-1] else None
    files = [a for i, a in enumerate(argv) if not a.startswith("-") and argv[i - 1:i] != ["--plot"]]
    run_gnuplot = "--no-gnuplot" not in argv
    if not files or plot == "" or any(a.startswith("-") and a not in ("--plot", "--no-gnuplot")
                                      for a in argv) or argv[-1:] == ["--plot"]:
        sys.exit(usage)
    f = Figures(files)
    if f.get("run", "rounds") is not None:
        bench_tables(f)
    if gateway_paths(f):
        gateway_tables(f)
    if plot is None:
        return 0
    script = gnuplot_script(f, plot)
    if script is None:
        print("report.py: nothing to draw", file=sys.stderr)
        return 0
    gp = plot.rsplit(".", 1)[0] + ".gp"
    with open(gp, "w") as out:
        out.write(script)
    if not run_gnuplot or shutil.which("gnuplot") is None:
        print("report.py: gnuplot script in %s; install gnuplot (apt-get install gnuplot-nox) "
              "and run 'gnuplot %s' for %s" % (gp, gp, plot), file=sys.stderr)
        return 0
    if subprocess.run(["gnuplot", gp]).returncode != 0:
        print("report.py: gnuplot failed on %s" % gp, file=sys.stderr)
        return 1
    print("report.py: plot written to %s" % plot, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
