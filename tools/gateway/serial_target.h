/* SPDX-License-Identifier: ISC */
/*
 * serial_target.h - a serial line as a route's target (serial_target.c):
 *
 *   rtu:DEVICE[,BAUD[,FORMAT]][,NAME=VALUE...]
 *
 * DEVICE is the serial port's absolute path (/dev/ttyUSB0, or better a
 * name that survives replugging, /dev/serial/by-id/...); BAUD the line's
 * rate (19200 by default); FORMAT data bits, parity (N, E, O) and stop
 * bits (8E1 by default: the Modbus serial line default, Serial Line
 * specification 2.5.1).  After them, settings of the line: rs485=yes (ask
 * the port for RS-485 mode, go on without it if it has none),
 * rs485=required (refuse a port without it), rs485=no (the default);
 * timeout=MS (how long a device may take to answer, from the end of the
 * request on the wire; the default is --request-timeout); turnaround=MS
 * (the devices' time to act on a broadcast before the next request, 100
 * by default).
 *
 * Every target has one canonical spelling (the defaults written out,
 * settings in a fixed order), so that routes that name one line alike
 * share it whatever their spelling; routes that give one device different
 * settings are refused where they are written (route.c).
 */
#ifndef MBSC_GATEWAY_SERIAL_TARGET_H
#define MBSC_GATEWAY_SERIAL_TARGET_H

#include <stddef.h>

#define GW_SERIAL_PREFIX        "rtu:"
#define GW_SERIAL_DEVICE_MAX    256u
#define GW_SERIAL_TURNAROUND_MS 100u

enum gw_rs485 { GW_RS485_OFF = 0, GW_RS485_TRY, GW_RS485_REQUIRED };

struct gw_serial_target {
    char device[GW_SERIAL_DEVICE_MAX];
    unsigned baud;
    unsigned data_bits, stop_bits;
    char parity; /* 'N', 'E' or 'O' */
    enum gw_rs485 rs485;
    unsigned timeout_ms; /* 0: --request-timeout */
    unsigned turnaround_ms;
};

/* Whether target names a serial line (starts with "rtu:"). */
int gw_serial_target_is(const char *target);

/*
 * Parse target ("rtu:..."); where names the place for messages ("--route",
 * "gw.conf:5").  0, or -1 with why naming the place, the setting that is
 * wrong and the fix.  A DEVICE that exists must be a character device;
 * one that does not exist yet is accepted (an adapter plugged in later).
 */
int gw_serial_target_parse(const char *target, struct gw_serial_target *t, const char *where,
                           char *why, size_t why_len);

/* The canonical spelling of t: "rtu:DEVICE,BAUD,FORMAT" and the settings that differ from the
 * defaults. */
void gw_serial_target_format(const struct gw_serial_target *t, char *out, size_t len);

/* The line's settings in words for the status view: "19200 8E1, RS-485". */
void gw_serial_target_describe(const struct gw_serial_target *t, char *out, size_t len);

/* The rates a serial port is set to, for messages: "1200, 2400, ...". */
const char *gw_serial_rates_text(void);

/* The termios speed (B19200...) of a rate the parser took, in *code; 0, or -1 for another. */
int gw_serial_rate_code(unsigned baud, unsigned long *code);

#endif /* MBSC_GATEWAY_SERIAL_TARGET_H */
