#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""tls_pymodbus.py - pymodbus's Modbus/TCP Security client and server
(Debian's python3-pymodbus) against mbsc-gateway, for tests/tls.test: a
Modbus implementation nobody here wrote, on both sides of the gateway.

pymodbus 3.0 (Debian 12) frames TLS without the MBAP header unless told to
use the socket framer (its documentation's advice), which MB-TCP-Security
requires, so both sides use ModbusSocketFramer.

  tls_pymodbus.py client HOST:PORT CA CERT KEY UNIT ADDR
      reads holding register ADDR of UNIT: prints "read VALUE" or
      "exception CODE" (hex), "failed: WHY" and exit 1.
  tls_pymodbus.py device HOST:PORT CA CERT KEY
      serves every unit on HOST:PORT, client certificate required; holding
      register N holds 0x6000 + N.  Prints "serving" when started.
"""
import logging
import ssl
import sys


def client_ctx(ca, cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(cert, key)
    ctx.check_hostname = False  # an address; the chain is still verified
    return ctx


def client(hostport, ca, cert, key, unit, addr):
    # The asyncio client: the blocking one of pymodbus 3.0 waits with
    # select() on the socket for the rest of an answer that OpenSSL has
    # already read into its buffer, and gives up after the first 8 bytes.
    import asyncio

    from pymodbus.client import AsyncModbusTlsClient
    from pymodbus.framer.socket_framer import ModbusSocketFramer

    host, port = hostport.rsplit(":", 1)

    async def run():
        c = AsyncModbusTlsClient(host, int(port), framer=ModbusSocketFramer,
                                 sslctx=client_ctx(ca, cert, key), timeout=5, retries=0)
        await c.connect()
        if not c.connected:
            return "failed: no connection"
        try:
            r = await c.read_holding_registers(addr, 1, slave=unit)
        except Exception as e:  # pymodbus raises its own ModbusException subclasses
            return "failed: %s" % e
        finally:
            await c.close()
        if r.isError():
            code = getattr(r, "exception_code", None)
            return "failed: %s" % r if code is None else "exception %02x" % code
        return "read %04x" % r.registers[0]

    out = asyncio.run(run())
    print(out, flush=True)
    return 1 if out.startswith("failed") else 0


def device(hostport, ca, cert, key):
    from pymodbus.datastore import (ModbusSequentialDataBlock, ModbusServerContext,
                                    ModbusSlaveContext)
    from pymodbus.framer.socket_framer import ModbusSocketFramer
    from pymodbus.server import StartTlsServer

    host, port = hostport.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(ca)
    ctx.verify_mode = ssl.CERT_REQUIRED
    # pymodbus's block starting at 0 is read at address + 1 (its "zero_mode" off).
    block = ModbusSequentialDataBlock(0, [0x6000 + i - 1 for i in range(101)])
    store = ModbusSlaveContext(hr=block)
    print("serving", flush=True)
    StartTlsServer(context=ModbusServerContext(slaves=store, single=True),
                   framer=ModbusSocketFramer, address=(host, int(port)), sslctx=ctx,
                   allow_reuse_address=True)
    return 0


def main(argv):
    logging.basicConfig(level=logging.CRITICAL)
    if len(argv) == 8 and argv[1] == "client":
        return client(argv[2], argv[3], argv[4], argv[5], int(argv[6]), int(argv[7]))
    if len(argv) == 6 and argv[1] == "device":
        return device(argv[2], argv[3], argv[4], argv[5])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
