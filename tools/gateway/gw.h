/* SPDX-License-Identifier: ISC */
/*
 * gw.h - the few names every file of mbsc-gateway shares (tools/gateway/,
 * docs/gateway.md).  Each file has its own header for the rest; they go
 * from the bottom up, and nothing below calls anything above it:
 *
 *   gw.h          exit statuses, the why-buffer size, printf checking;
 *   clock.c       the monotonic clock;
 *   log.c         log lines on stderr (journald levels under systemd), and
 *                 the systemd readiness notification;
 *   loop.c        the one event loop: descriptors, timers, deferred work;
 *   signals.c     SIGHUP, SIGTERM, SIGINT, SIGUSR1 into the loop;
 *   adu_check.c   Modbus checks of requests and of upstream answers
 *                 (the library's function table, mbsc/pdu.h);
 *   rtu_frame.c   Modbus RTU frames: CRC-16, ADU to RTU and back, answer
 *                 lengths, a character's time and t3.5;
 *   serial_target.c  "rtu:DEVICE[,BAUD[,FORMAT]]..." as a route's target;
 *   route.c       routes by unit id: parsing and lookup;
 *   options.c     settings from the command line and from --config FILE;
 *   secrets.c     key, PSK, allow-list and policy loaded as one bundle, so
 *                 that a reload replaces all of them or none;
 *   upstream.c    one connection behind the gateway, whatever its kind:
 *                 connected without blocking, made again with backoff;
 *   up_plain.c    the kind "plain Modbus/TCP" (a PLC);
 *   up_mbsc.c     the kind "mbsc session" (a server gateway, a secure slave);
 *   serial_port.c a serial port opened exclusively, raw, at a line's settings;
 *   up_rtu.c      the kind "Modbus RTU serial line" (the devices on a port);
 *   up_kinds.c    which kind a target takes (where new kinds are added);
 *   mux.c         many requesters over one upstream: rewritten transaction
 *                 ids, N in flight, fair queues, timeouts;
 *   routing.c     the live routes: an upstream and a multiplexer per route;
 *   control.c     the status view: --control socket, "status" command, SIGUSR1;
 *   server_mode.c mbsc masters in, plain Modbus/TCP (or RTU) to the PLCs out;
 *   client_mode.c plain Modbus/TCP clients in, one mbsc session out;
 *   main.c        command line, --help, --version, mode dispatch.
 *
 * One thread, one event loop; nothing blocks except name resolution
 * (getaddrinfo) when a connection is made.  The program uses the library's
 * public API only (<mbsc.h>), like any other program built on it.
 */
#ifndef MBSC_GATEWAY_H
#define MBSC_GATEWAY_H

#include <mbsc.h>

#define GW_PROG "mbsc-gateway"

/* Exit statuses. */
#define GW_EX_OK      0
#define GW_EX_FAILURE 1 /* runtime failure: keys, files, network */
#define GW_EX_USAGE   2 /* bad command line or configuration */

/* A message naming a file, a line and the fix, with room for a path. */
#define GW_WHY_SIZE (MBSC_WHY_SIZE + 4096u)

#if defined(__GNUC__)
#define GW_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GW_PRINTF(f, a)
#endif

#endif /* MBSC_GATEWAY_H */
