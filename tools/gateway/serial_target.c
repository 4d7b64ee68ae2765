/* SPDX-License-Identifier: ISC */
/*
 * serial_target.c - "rtu:DEVICE[,BAUD[,FORMAT]][,NAME=VALUE...]" (serial_target.h).
 *
 * Every error names the place, the target, the setting that is wrong and
 * the fix: a line set to the wrong rate or format does not fail loudly, its
 * devices just never answer, so the gateway refuses what cannot be right
 * before it opens anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "serial_target.h"

#define DEFAULT_BAUD 19200u
#define TIMEOUT_MAX  3600000u
#define TURN_MAX     60000u

/* The rates of <termios.h> a Modbus device may use. */
static const struct {
    unsigned baud;
    speed_t code;
} rates[] = {
    {300, B300},       {600, B600},       {1200, B1200},     {2400, B2400},   {4800, B4800},
    {9600, B9600},     {19200, B19200},   {38400, B38400},   {57600, B57600}, {115200, B115200},
    {230400, B230400}, {460800, B460800}, {921600, B921600},
};

int gw_serial_target_is(const char *target)
{
    return strncmp(target, GW_SERIAL_PREFIX, strlen(GW_SERIAL_PREFIX)) == 0;
}

const char *gw_serial_rates_text(void)
{
    static char text[160];
    size_t i, n = 0;

    if (text[0] == '\0')
        for (i = 0; i < sizeof rates / sizeof rates[0]; i++)
            n += (size_t)snprintf(text + n, sizeof text - n, "%s%u", i > 0 ? ", " : "",
                                  rates[i].baud);
    return text;
}

int gw_serial_rate_code(unsigned baud, unsigned long *code)
{
    size_t i;

    for (i = 0; i < sizeof rates / sizeof rates[0]; i++)
        if (rates[i].baud == baud) {
            *code = (unsigned long)rates[i].code;
            return 0;
        }
    return -1;
}

/* Strict decimal in [min, max]: no sign, no spaces; 0 or -1. */
static int decimal(const char *s, size_t len, unsigned min, unsigned max, unsigned *out)
{
    unsigned long v = 0;
    size_t i;

    if (len == 0 || len > 9)
        return -1;
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    if (v < min || v > max)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int bad_baud(const char *item, size_t len, const char *where, const char *target, char *why,
                    size_t why_len)
{
    snprintf(why, why_len,
             "%s: %s: baud rate '%.*s' is not one a serial port is set to; fix: give the "
             "devices' rate, one of %s (the Modbus default is 19200)",
             where, target, (int)len, item, gw_serial_rates_text());
    return -1;
}

/* FORMAT: data bits, parity letter, stop bits ("8E1"). */
static int parse_format(struct gw_serial_target *t, const char *s, size_t len, const char *where,
                        const char *target, char *why, size_t why_len)
{
    char p;

    if (len != 3 || s[0] < '5' || s[0] > '9' || s[2] < '0' || s[2] > '9') {
        snprintf(why, why_len,
                 "%s: %s: format '%.*s' is not data bits, parity and stop bits; fix: write "
                 "e.g. 8E1 (the Modbus default), 8N2 or 8O1",
                 where, target, (int)len, s);
        return -1;
    }
    p = s[1] >= 'a' && s[1] <= 'z' ? (char)(s[1] - 'a' + 'A') : s[1];
    if (p != 'N' && p != 'E' && p != 'O') {
        snprintf(why, why_len,
                 "%s: %s: parity '%c' in format %.3s is not N, E or O (none, even, odd); fix: "
                 "write the devices' parity, e.g. 8E1 (the Modbus default) or 8N2",
                 where, target, s[1], s);
        return -1;
    }
    if (s[0] != '8') {
        snprintf(why, why_len,
                 "%s: %s: %c data bits in format %.3s: Modbus RTU frames have 8 (7 is Modbus "
                 "ASCII, which the gateway does not speak); fix: 8%c%c",
                 where, target, s[0], s, p, s[2]);
        return -1;
    }
    if (s[2] != '1' && s[2] != '2') {
        snprintf(why, why_len, "%s: %s: %c stop bits in format %.3s; fix: 1 or 2 (e.g. 8E1)", where,
                 target, s[2], s);
        return -1;
    }
    t->data_bits = 8;
    t->parity = p;
    t->stop_bits = (unsigned)(s[2] - '0');
    return 0;
}

/* NAME=VALUE after the format. */
static int parse_setting(struct gw_serial_target *t, const char *s, size_t len, const char *where,
                         const char *target, char *why, size_t why_len)
{
    const char *eq = memchr(s, '=', len);
    size_t nlen = (size_t)(eq - s), vlen = len - nlen - 1;
    const char *v = eq + 1;

    if (nlen == 5 && memcmp(s, "rs485", 5) == 0) {
        if (vlen == 3 && memcmp(v, "yes", 3) == 0)
            t->rs485 = GW_RS485_TRY;
        else if (vlen == 2 && memcmp(v, "no", 2) == 0)
            t->rs485 = GW_RS485_OFF;
        else if (vlen == 8 && memcmp(v, "required", 8) == 0)
            t->rs485 = GW_RS485_REQUIRED;
        else {
            snprintf(why, why_len,
                     "%s: %s: rs485 is yes (RS-485 mode if the port has it), required (refuse a "
                     "port without it) or no, not '%.*s'",
                     where, target, (int)vlen, v);
            return -1;
        }
        return 0;
    }
    if (nlen == 7 && memcmp(s, "timeout", 7) == 0) {
        if (decimal(v, vlen, 1, TIMEOUT_MAX, &t->timeout_ms) != 0) {
            snprintf(why, why_len,
                     "%s: %s: timeout is the milliseconds a device may take to answer, 1 to %u, "
                     "not '%.*s'",
                     where, target, TIMEOUT_MAX, (int)vlen, v);
            return -1;
        }
        return 0;
    }
    if (nlen == 10 && memcmp(s, "turnaround", 10) == 0) {
        if (decimal(v, vlen, 0, TURN_MAX, &t->turnaround_ms) != 0) {
            snprintf(why, why_len,
                     "%s: %s: turnaround is the milliseconds the devices get after a broadcast, "
                     "0 to %u, not '%.*s'",
                     where, target, TURN_MAX, (int)vlen, v);
            return -1;
        }
        return 0;
    }
    snprintf(why, why_len,
             "%s: %s: unknown setting '%.*s'; a serial line takes rs485=yes|required|no, "
             "timeout=MS and turnaround=MS after its baud rate and format",
             where, target, (int)nlen, s);
    return -1;
}

/*
 * Whether the character device st is of a class other than tty, by its
 * sysfs entry (its class name into class): /dev/null is "mem".  Without an
 * entry (a pseudo-terminal, a system without sysfs) it is taken as a tty:
 * opening the device to ask would toggle its modem lines, which resets
 * some devices.
 */
static int tty_class_other_than(const struct stat *st, char *class, size_t len)
{
    char path[96], link[256];
    const char *base;
    ssize_t n;

    if (!S_ISCHR(st->st_mode))
        return 0;
    snprintf(path, sizeof path, "/sys/dev/char/%u:%u/subsystem", (unsigned)major(st->st_rdev),
             (unsigned)minor(st->st_rdev));
    n = readlink(path, link, sizeof link - 1);
    if (n <= 0)
        return 0;
    link[n] = '\0';
    base = strrchr(link, '/');
    base = base != NULL ? base + 1 : link;
    snprintf(class, len, "%.*s", (int)len - 1, base);
    return strcmp(base, "tty") != 0;
}

static int check_device(const struct gw_serial_target *t, const char *where, const char *target,
                        char *why, size_t why_len)
{
    struct stat st;
    char class[64];

    if (t->device[0] != '/') {
        snprintf(why, why_len,
                 "%s: %s: the device must be an absolute path; fix: e.g. rtu:/dev/ttyUSB0 or "
                 "rtu:/dev/serial/by-id/... (ls /dev/serial/by-id/ lists the adapters)",
                 where, target);
        return -1;
    }
    /* Not there yet is fine: an adapter may be plugged in after the start. */
    if (stat(t->device, &st) == 0 && !S_ISCHR(st.st_mode)) {
        snprintf(why, why_len,
                 "%s: %s: %s is %s, not a serial port; fix: name the serial device, e.g. "
                 "/dev/ttyUSB0, /dev/ttyAMA0 or /dev/serial/by-id/... (ls /dev/serial/by-id/ "
                 "lists the adapters)",
                 where, target, t->device,
                 S_ISDIR(st.st_mode)   ? "a directory"
                 : S_ISREG(st.st_mode) ? "a regular file"
                 : S_ISBLK(st.st_mode) ? "a block device"
                                       : "not a character device");
        return -1;
    }
    if (stat(t->device, &st) == 0 && tty_class_other_than(&st, class, sizeof class)) {
        snprintf(why, why_len,
                 "%s: %s: %s is not a serial port (a character device of class %s); fix: name "
                 "the serial device, e.g. /dev/ttyUSB0, /dev/ttyAMA0 or /dev/serial/by-id/... "
                 "(ls /dev/serial/by-id/ lists the adapters)",
                 where, target, t->device, class);
        return -1;
    }
    return 0;
}

int gw_serial_target_parse(const char *target, struct gw_serial_target *t, const char *where,
                           char *why, size_t why_len)
{
    const char *p = target + strlen(GW_SERIAL_PREFIX);
    const char *comma = strchr(p, ',');
    size_t dlen = comma != NULL ? (size_t)(comma - p) : strlen(p);
    int positional = 0; /* BAUD, then FORMAT */

    memset(t, 0, sizeof *t);
    t->baud = DEFAULT_BAUD;
    t->data_bits = 8;
    t->parity = 'E';
    t->stop_bits = 1;
    t->turnaround_ms = GW_SERIAL_TURNAROUND_MS;
    if (!gw_serial_target_is(target) || dlen == 0) {
        snprintf(why, why_len,
                 "%s: '%s' names no serial device; fix: rtu:DEVICE[,BAUD[,FORMAT]], e.g. "
                 "rtu:/dev/ttyUSB0,19200,8E1",
                 where, target);
        return -1;
    }
    if (dlen >= sizeof t->device) {
        snprintf(why, why_len, "%s: %s: the device's path is longer than %zu characters", where,
                 target, sizeof t->device - 1);
        return -1;
    }
    memcpy(t->device, p, dlen);
    p = comma;
    while (p != NULL) {
        const char *item = p + 1, *next = strchr(item, ',');
        size_t len = next != NULL ? (size_t)(next - item) : strlen(item);
        unsigned long code;
        int rc;

        if (memchr(item, '=', len) != NULL) {
            rc = parse_setting(t, item, len, where, target, why, why_len);
            positional = 2;
        } else if (positional == 0) {
            rc = decimal(item, len, 1, 4000000, &t->baud) != 0 ||
                         gw_serial_rate_code(t->baud, &code) != 0
                     ? bad_baud(item, len, where, target, why, why_len)
                     : 0;
            positional = 1;
        } else if (positional == 1) {
            rc = parse_format(t, item, len, where, target, why, why_len);
            positional = 2;
        } else {
            snprintf(why, why_len,
                     "%s: %s: '%.*s' after the format: the settings there are NAME=VALUE "
                     "(rs485=yes, timeout=MS, turnaround=MS)",
                     where, target, (int)len, item);
            rc = -1;
        }
        if (rc != 0)
            return -1;
        p = next;
    }
    return check_device(t, where, target, why, why_len);
}

void gw_serial_target_format(const struct gw_serial_target *t, char *out, size_t len)
{
    int n = snprintf(out, len, "%s%s,%u,%u%c%u", GW_SERIAL_PREFIX, t->device, t->baud, t->data_bits,
                     t->parity, t->stop_bits);

    if (n >= 0 && (size_t)n < len && t->rs485 != GW_RS485_OFF)
        n += snprintf(out + n, len - (size_t)n, ",rs485=%s",
                      t->rs485 == GW_RS485_REQUIRED ? "required" : "yes");
    if (n >= 0 && (size_t)n < len && t->timeout_ms != 0)
        n += snprintf(out + n, len - (size_t)n, ",timeout=%u", t->timeout_ms);
    if (n >= 0 && (size_t)n < len && t->turnaround_ms != GW_SERIAL_TURNAROUND_MS)
        (void)snprintf(out + n, len - (size_t)n, ",turnaround=%u", t->turnaround_ms);
}

void gw_serial_target_describe(const struct gw_serial_target *t, char *out, size_t len)
{
    snprintf(out, len, "%u %u%c%u%s", t->baud, t->data_bits, t->parity, t->stop_bits,
             t->rs485 == GW_RS485_OFF ? "" : ", RS-485");
}
