/*
 * modbus_internal.h - helpers shared by the libmodbus adapter (src/modbus/).
 *
 * The adapter is the only code in mbsc that includes <modbus.h>.  Both
 * sides hand libmodbus one end of an AF_UNIX socketpair; these helpers
 * make that pair and the libmodbus context around it, and frame the ADUs
 * that travel through it.
 */
#ifndef MBSC_MODBUS_INTERNAL_H
#define MBSC_MODBUS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"
#include "mbsc/modbus.h"

/*
 * Modbus/TCP framing (Modbus Messaging on TCP/IP Implementation Guide
 * v1.0b, section 3.1.3): the MBAP header is transaction id (2), protocol
 * id (2, always 0), length (2), unit id (1); the length field counts the
 * unit id and the PDU, that is every byte after itself.
 */
#define MB_LENGTH_END 6u /* bytes up to and including the MBAP length field */
#define MB_MIN_ADU    8u /* MBAP header (7) + function code (1) */

/*
 * Target address given to libmodbus for every adapter context.  inet_addr()
 * cannot parse it and returns INADDR_NONE (255.255.255.255), to which a TCP
 * connect() fails at once (ENETUNREACH on Linux); port 0 is refused too.  So
 * if anything makes libmodbus (re)connect by itself - modbus_connect(),
 * MODBUS_ERROR_RECOVERY_LINK - no plaintext connection can ever be made.
 * ".invalid" is reserved (RFC 2606) and says what it is in debug output.
 */
#define MB_UNREACHABLE_IP   "mbsc.invalid"
#define MB_UNREACHABLE_PORT 0

/*
 * Length of the ADU whose first MB_LENGTH_END bytes are hdr, from its MBAP
 * length field; 0 if the header is malformed (protocol id not 0, ADU
 * shorter than MB_MIN_ADU or longer than MBSC_MODBUS_MAX_ADU).
 */
size_t mb_adu_length(const uint8_t hdr[MB_LENGTH_END]);

/*
 * A non-blocking, close-on-exec AF_UNIX stream pair whose descriptors are
 * both below FD_SETSIZE (libmodbus select()s on its end).  MBSC_OK,
 * MBSC_ERR_FD_LIMIT or MBSC_ERR_IO, with why.
 */
int mb_socketpair(int pair[2], char *why, size_t why_len);

/*
 * A libmodbus TCP context that talks through fd (owned by the caller until
 * modbus_close()), aimed at MB_UNREACHABLE_IP, error recovery NONE.
 * NULL if out of memory.
 */
modbus_t *mb_context_new(int fd);

/* send() that never raises SIGPIPE and retries on EINTR. */
ssize_t mb_send(int fd, const void *buf, size_t len);

/* recv() that retries on EINTR. */
ssize_t mb_recv(int fd, void *buf, size_t cap);

/* close() that keeps errno (no retry on EINTR: the fd is gone on Linux). */
void mb_close(int fd);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t mb_now_ns(void);

/* Text for an errno value set by libmodbus (its own codes) or the system. */
const char *mb_errno_text(int e);

#endif /* MBSC_MODBUS_INTERNAL_H */
