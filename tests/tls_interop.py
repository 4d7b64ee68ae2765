#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""tls_interop.py - Modbus/TCP Security peers on Python's ssl module, for
tests/tls.test: an implementation of the TLS side that nobody here wrote,
with the MBAP framing built by hand from the Modbus Messaging on TCP/IP
Implementation Guide (3.1.3), sharing nothing with mbsc.

  tls_interop.py client HOST:PORT CA CERT KEY VERSION UNIT PDUHEX...
      VERSION is 1.2 or 1.3; prints "connected VERSION SUITE", then
      "answer HEX" per request (the answer PDU); "failed: WHY" and exit 1.
      A PDUHEX "wait" holds the connection open until standard input ends,
      then prints "closed" if the gateway had closed it meanwhile.
  tls_interop.py device CA CERT KEY
      a device on 127.0.0.1 (any port): prints "listening on PORT", serves
      one connection after another until SIGTERM, client certificate
      required; holding register N holds 0x7000 + N (function 03), anything
      else gets exception 01.  Logs "device: client CN=..." on stderr.
  tls_interop.py pipeline HOST:PORT CA CERT KEY UNIT N PDUHEX
      N copies of the request in one write (transaction ids 1 to
      N) before reading any answer: prints "answer TID HEX" per answer.
  tls_interop.py plain HOST:PORT UNIT PDUHEX...
      the same requests over plain Modbus/TCP (to a TLS wrapper such as
      stunnel in client mode): "answer HEX" per request.
  tls_interop.py flood HOST:PORT SECONDS N
      a stranger: for SECONDS or until SIGTERM, keeps N connections open to
      HOST:PORT from the loopback addresses 127.0.0.2 to 127.0.0.51,
      sending nothing and opening another whenever one is closed; then
      prints "flood: N opened".
"""
import selectors
import signal
import socket
import ssl
import struct
import sys
import time


def read_full(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("closed by the peer")
        buf += chunk
    return buf


def plain(hostport, unit, pdus):
    host, port = hostport.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=10) as s:
            for tid, pdu in enumerate(pdus, 1):
                body = bytes.fromhex(pdu)
                s.sendall(struct.pack(">HHHB", tid, 0, len(body) + 1, unit) + body)
                head = read_full(s, 7)
                rtid, proto, length, runit = struct.unpack(">HHHB", head)
                if rtid != tid or proto != 0 or runit != unit or length < 2:
                    raise ValueError("bad MBAP header in the answer: " + head.hex())
                print("answer " + read_full(s, length - 1).hex(), flush=True)
    except (OSError, EOFError, ValueError) as e:
        print("failed: %s" % e, flush=True)
        return 1
    return 0


def client(hostport, ca, cert, key, version, unit, pdus):
    host, port = hostport.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.maximum_version = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}[version]
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(cert, key)
    ctx.check_hostname = False  # the test connects to an address; the chain is still verified
    try:
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            with ctx.wrap_socket(raw) as s:
                print("connected %s %s" % (s.version(), s.cipher()[0]), flush=True)
                for tid, pdu in enumerate(pdus, 1):
                    if pdu == "wait":
                        sys.stdin.read()
                        s.settimeout(1)
                        try:
                            if s.recv(1) == b"":
                                print("closed", flush=True)
                        except (OSError, ssl.SSLError) as e:
                            print("closed (%s)" % e, flush=True)
                        continue
                    body = bytes.fromhex(pdu)
                    s.sendall(struct.pack(">HHHB", tid, 0, len(body) + 1, unit) + body)
                    head = read_full(s, 7)
                    rtid, proto, length, runit = struct.unpack(">HHHB", head)
                    if rtid != tid or proto != 0 or runit != unit or length < 2:
                        raise ValueError("bad MBAP header in the answer: " + head.hex())
                    print("answer " + read_full(s, length - 1).hex(), flush=True)
    except (OSError, EOFError, ValueError) as e:
        print("failed: %s" % e, flush=True)
        return 1
    return 0


def pipeline(hostport, ca, cert, key, unit, n, pdu):
    host, port = hostport.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(cert, key)
    ctx.check_hostname = False
    body = bytes.fromhex(pdu)
    try:
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            with ctx.wrap_socket(raw) as s:
                s.sendall(b"".join(struct.pack(">HHHB", tid, 0, len(body) + 1, unit) + body
                                   for tid in range(1, n + 1)))
                for _ in range(n):
                    tid, proto, length, runit = struct.unpack(">HHHB", read_full(s, 7))
                    if proto != 0 or runit != unit or length < 2:
                        raise ValueError("bad MBAP header in an answer")
                    print("answer %d %s" % (tid, read_full(s, length - 1).hex()), flush=True)
    except (OSError, EOFError, ValueError) as e:
        print("failed: %s" % e, flush=True)
        return 1
    return 0


def device(ca, cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(ca)
    ctx.verify_mode = ssl.CERT_REQUIRED
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    print("listening on %d" % ls.getsockname()[1], flush=True)
    while True:
        raw, _ = ls.accept()
        try:
            with ctx.wrap_socket(raw, server_side=True) as s:
                subject = dict(x[0] for x in s.getpeercert()["subject"])
                print("device: client CN=%s %s" % (subject.get("commonName"), s.version()),
                      file=sys.stderr, flush=True)
                while True:
                    tid, proto, length, unit = struct.unpack(">HHHB", read_full(s, 7))
                    pdu = read_full(s, length - 1)
                    if pdu[0] == 3 and len(pdu) == 5:
                        first, count = struct.unpack(">HH", pdu[1:5])
                        regs = b"".join(struct.pack(">H", 0x7000 + first + i) for i in range(count))
                        ans = bytes([3, 2 * count]) + regs
                    else:
                        ans = bytes([pdu[0] | 0x80, 1])
                    s.sendall(struct.pack(">HHHB", tid, 0, len(ans) + 1, unit) + ans)
        except (OSError, EOFError, ssl.SSLError) as e:
            print("device: connection ended: %s" % e, file=sys.stderr, flush=True)
        finally:
            raw.close()


def flood(hostport, seconds, n):
    host, port = hostport.rsplit(":", 1)
    sel = selectors.DefaultSelector()
    opened = 0
    end = time.monotonic() + seconds

    def open_one(i):
        nonlocal opened
        s = socket.socket()
        s.setblocking(False)
        s.bind(("127.0.0.%d" % (2 + i % 50), 0))
        try:
            s.connect((host, int(port)))
        except BlockingIOError:
            pass
        sel.register(s, selectors.EVENT_READ, i)
        opened += 1

    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    for i in range(n):
        open_one(i)
    while time.monotonic() < end and not stop:
        for key, _ in sel.select(timeout=0.1):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if not data:  # closed by the gateway: take the place again
                sel.unregister(key.fileobj)
                key.fileobj.close()
                open_one(key.data)
    print("flood: %d opened" % opened, flush=True)
    return 0


def main(argv):
    if len(argv) >= 8 and argv[1] == "client":
        return client(argv[2], argv[3], argv[4], argv[5], argv[6], int(argv[7]), argv[8:])
    if len(argv) == 9 and argv[1] == "pipeline":
        return pipeline(argv[2], argv[3], argv[4], argv[5], int(argv[6]), int(argv[7]), argv[8])
    if len(argv) >= 5 and argv[1] == "plain":
        return plain(argv[2], int(argv[3]), argv[4:])
    if len(argv) == 5 and argv[1] == "flood":
        return flood(argv[2], float(argv[3]), int(argv[4]))
    if len(argv) == 5 and argv[1] == "device":
        return device(argv[2], argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
