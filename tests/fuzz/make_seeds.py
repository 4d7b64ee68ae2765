#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""make_seeds.py - writes the fuzzers' seed corpora (tests/fuzz/corpus/).

Run from the source tree: python3 tests/fuzz/make_seeds.py.  The seeds are
checked in; this script only documents (and reproduces) where each comes
from.  Every byte is from a published or protocol vector:

  - tests/vectors/mbsc1/protocol_vectors.json ("handshakes": frames,
    payloads and ADUs; the fuzzers use the same fixed keys, so these
    handshake frames are accepted as they are);
  - RFC 7748 section 6.1 (X25519 keys, base64 as in tests/check_keys.c);
  - RFC 4648 section 10 is not needed: keys are 32 bytes.
The layout of each seed (mode bytes, then data) is the one documented at
the top of the target's source file.
"""
import json
import os

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(os.path.dirname(here))
vec = json.load(open(os.path.join(top, "tests/vectors/mbsc1/protocol_vectors.json")))
hs = [h for h in vec["handshakes"] if set(h["psk"]) == {"0"}]  # the fuzzers use no PSK


def put(target, name, data):
    d = os.path.join(here, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


h = bytes.fromhex
for i, v in enumerate(hs):
    # responder: raw message 1 (mode 0, cut 0), and the crafted payload (mode 1)
    put("responder", "raw-message1-%d" % i, b"\x00\x00" + h(v["message1_frame"]))
    put("responder", "crafted-offer-%d" % i, b"\x01\x00" + h(v["message1_payload"]))
    put("responder", "crafted-stranger-%d" % i, b"\x01\x01" + h(v["message1_payload"]))
# initiator: raw message 2 for the default offer (which is handshakes[0]'s)
put("initiator", "raw-message2-0", b"\x00" + h(hs[0]["message2_frame"]))
put("initiator", "crafted-choice-1", b"\x01\x00" + h(hs[0]["message2_payload"]))
put("initiator", "crafted-choice-3-offer-1-3", b"\x51\x00" + h(hs[1]["message2_payload"]))

# frames: per cipher and counter position, the first request and response
req, rsp = h(hs[0]["first_request_adu"]), h(hs[0]["first_response_adu"])
for cipher in range(4):
    for where in range(4):
        script = bytes([0x00, len(req)]) + req + b"\x04" + bytes([0x80, len(rsp)]) + rsp + b"\x84"
        put("frames", "c%d-w%d-request-response" % (cipher + 1, where),
            bytes([cipher | where << 2, 0]) + script)
# one with a flipped bit in flight (mode 5: mutate, how 0 = flip bit 0 at offset 3)
put("frames", "c1-w0-bitflip", bytes([0, 0, 0x00, len(req)]) + req + b"\x05\x00\x00\x03\x04")

# key files: RFC 7748 section 6.1 keys in base64 (private, PSK, public)
alice_priv = "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo="
alice_pub = "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="
bob_pub = "3p7bfXt9wbTTW2HC7OQ1Nz+DQ8hbeGdNrfx+FG+IK08="
put("keyfile", "private-lf", b"\x00" + alice_priv.encode() + b"\n")
put("keyfile", "psk-crlf", b"\x01" + alice_priv.encode() + b"\r\n")
put("keyfile", "public-bare", b"\x02" + alice_pub.encode())

# allow-list: the format of docs/keys.md with the RFC 7748 public keys
put("allowlist", "two-masters",
    ("# masters\n%s plc-hall-1 operator\n\t%s\tscada-01   # Bob\r\n" % (alice_pub, bob_pub)).encode())

# ADUs: the protocol vectors' first request and response
put("adu", "request", req)
put("adu", "response", rsp)

# modbus_slave: requests of each function code the slave serves, with the
# PDU layouts of the Modbus Application Protocol Specification v1.1b3
# (section 6; several are its own examples) in the MBAP header of the
# Modbus Messaging on TCP/IP Implementation Guide v1.0b (section 3.1.3).
# The addresses are those of fuzz_modbus_slave.c's mapping: coils 5..17,
# discrete inputs 0..6, holding registers 3..13, input registers 100..108.
def mbap(tid, unit, pdu):
    return bytes([tid >> 8, tid & 0xff, 0, 0, (len(pdu) + 1) >> 8, (len(pdu) + 1) & 0xff,
                  unit]) + pdu


slave_requests = {
    "fc01-read-coils": h("01" "0005" "000d"),
    "fc01-read-coils-out-of-range": h("01" "0011" "0002"),
    "fc02-read-discrete-inputs": h("02" "0000" "0007"),
    "fc03-read-holding-registers": h("03" "0003" "000b"),
    "fc04-read-input-registers": h("04" "0064" "0009"),
    "fc05-write-single-coil": h("05" "0006" "ff00"),
    "fc06-write-single-register": h("06" "0004" "1234"),
    "fc0f-write-multiple-coils": h("0f" "0005" "000a" "02" "cd01"),
    "fc10-write-multiple-registers": h("10" "0003" "0002" "04" "000a0102"),
    "fc16-mask-write-register": h("16" "0004" "00f2" "0025"),
    "fc17-read-write-registers": h("17" "0003" "0006" "0005" "0003" "06" "00ff00ff00ff"),
    # CVE-2022-0367: the write range 12..16 runs past the last register (13)
    "fc17-write-out-of-range": h("17" "0003" "0001" "000c" "0005" "0a" "00010002000300040005"),
    "fc2b-read-device-identification": h("2b" "0e" "01" "00"),
}
for i, (name, pdu) in enumerate(sorted(slave_requests.items())):
    put("modbus_slave", name, mbap(0x0100 + i, 0xff if i % 2 else 1, pdu))

# mux: scripts in fuzz_mux.c's layout (its header comment), no vector data:
# the situations of issue 19.  Operation numbers as in fuzz_mux.c.
SUBMIT, ANSWER, ANSWER_OLD, MALFORMED, TICK, READY, LOST, REFUSED, FORGET, BLOCK, BREAK, BURST, \
    FAILED = range(13)
one_in_flight_8_queued = bytes([0x1C, 99])  # max_in_flight 1, max_queue 8, timeout 100 ms
two_in_flight_8_queued = bytes([0x1D, 99])
# Item 1: masters' requests wait for a connection; their timeouts answer a
# master that is gone, and its reply forgets it (and another origin).
put("mux", "queued-timeout-forget", one_in_flight_8_queued + bytes([
    SUBMIT, 0, SUBMIT, 1, SUBMIT, 1, SUBMIT, 2, TICK, 100, 1, 0x0D, 0, 0]))
# Item 2: one local client pipelines a full queue and is gone at the first answer.
put("mux", "pipeline-then-gone", one_in_flight_8_queued + bytes(
    [SUBMIT, 3] * 8 + [TICK, 100, 1]))
# Answers with re-submissions, one malformed answer, a connection lost in flight.
put("mux", "answers-and-loss", two_in_flight_8_queued + bytes([
    READY, SUBMIT, 0, SUBMIT, 1, SUBMIT, 4, ANSWER, 0, 2, MALFORMED, 0, ANSWER, 1, 0,
    LOST, 1, 0, READY, TICK, 80, 0]))
# A send that breaks the connection, then sends that would block.
put("mux", "break-and-block", one_in_flight_8_queued + bytes([
    READY, BREAK, SUBMIT, 5, 1, READY, BLOCK, SUBMIT, 6, BLOCK, SUBMIT, 6, ANSWER, 0, 0]))
# Item 3: a request times out, another origin moves the ids round (65535
# round trips), asks again, and the device's late answer to the first comes.
put("mux", "late-answer-after-wrap", one_in_flight_8_queued + bytes([
    READY, SUBMIT, 0, TICK, 60, 0, BURST, 0xFF, 0xFE, SUBMIT, 1, ANSWER_OLD, 0, 0]))
# Issue 24: a serial line fails requests itself (a device silent, a bad CRC),
# once for a request the multiplexer had timed out already, and a requester
# asks again from its reply.
put("mux", "serial-line-failures", one_in_flight_8_queued + bytes([
    READY, SUBMIT, 0, SUBMIT, 1, FAILED, 0, 2, TICK, 60, 0, FAILED, 0, ANSWER, 0, 0,
    SUBMIT, 2, FAILED, 0, 1]))
