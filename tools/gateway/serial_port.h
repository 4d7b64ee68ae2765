/* SPDX-License-Identifier: ISC */
/*
 * serial_port.h - opening a serial port for a line (serial_port.c):
 * exclusively, raw, at the line's rate and format, in RS-485 mode when
 * asked, with an error that names the device and the fix when it cannot
 * be done.
 */
#ifndef MBSC_GATEWAY_SERIAL_PORT_H
#define MBSC_GATEWAY_SERIAL_PORT_H

#include <stddef.h>

#include "serial_target.h"

/*
 * Open t's device, non-blocking and close-on-exec, and set it up: a lock
 * (flock) and TIOCEXCL, so that no other program writes on the line; raw
 * 8-bit characters at t's rate, parity and stop bits, no flow control;
 * RS-485 mode (TIOCSRS485, RTS high while sending) when t asks for it.
 * Input and output waiting in the port are discarded.  *fd and 0; or -1
 * with why naming the device, what failed and the fix (the adapter is not
 * plugged in; the user is not in the port's group, usually dialout;
 * another program, named, holds the port; not a serial port; a rate the
 * port does not take).  note gets what the caller should log once ("" if
 * nothing): RS-485 mode asked with rs485=yes that the port does not have.
 */
int gw_serial_port_open(const struct gw_serial_target *t, int *fd, char *note, size_t note_len,
                        char *why, size_t why_len);

/*
 * Before the port's descriptor is closed: its exclusive mode off.
 * TIOCEXCL belongs to the tty, not to the descriptor, and outlives the
 * close while the tty stays (a built-in port, a pty whose other end is
 * open): a gateway that is not root could not open the port again after
 * a reload or a lost line, and nor could any other program.
 */
void gw_serial_port_release(int fd);

#endif /* MBSC_GATEWAY_SERIAL_PORT_H */
