/* SPDX-License-Identifier: ISC */
/*
 * modbus_internal.h - helpers shared by the libmodbus adapter (src/modbus/).
 *
 * The adapter is the only code in mbsc that includes <modbus.h>.  Both
 * sides hand libmodbus one end of an AF_UNIX socketpair; these helpers
 * make that pair and the libmodbus context around it, and frame the ADUs
 * that travel through it.  Bytes move on the pair and on the TCP sockets
 * with the socket layer's helpers (sock/sock.h), whose MSG_NOSIGNAL
 * matters on the pair too: libmodbus may close its end at any time.
 */
#ifndef MBSC_MODBUS_INTERNAL_H
#define MBSC_MODBUS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "sock/sock.h"
#include "internal.h"
#include "mbsc/modbus.h"

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

/*
 * A request whose shape has passed the function table (mbsc/pdu.h), as
 * modbus_reply() will see it: 0 if modbus_reply() may have it, 01 for a
 * function it does not implement, 02 for a 0x17 range outside map.
 */
uint8_t mb_check_reply(const uint8_t *adu, size_t len, const modbus_mapping_t *map);

/*
 * Both checks in the order a request meets them without a hook in
 * between: mbsc_pdu_check_request() on its PDU, then mb_check_reply().
 * The ADU's MBAP header must already be known good (mbsc_modbus_check_adu).
 */
uint8_t mb_check_request(const uint8_t *adu, size_t len, const modbus_mapping_t *map);

/* Text for an errno value set by libmodbus (its own codes) or the system. */
const char *mb_errno_text(int e);

/*
 * The synchronous client (client_sync.c).  mb_sync_connect() returns a
 * context on mbsc's own transport; NULL with *err MBSC_OK when this
 * libmodbus's layout is not verified (why says why: use the pump), NULL
 * with an error otherwise.  mb_sync_available() says whether a new
 * context would be verified.  mb_sync_error(), mb_sync_cipher(),
 * mb_sync_dropped_answers() and mb_sync_set_reconnect() return 1 (and the
 * answer) if ctx is a synchronous context, else 0.
 */
modbus_t *mb_sync_connect(const char *hostport, const mbsc_config *cfg, int timeout_ms, int *err,
                          char *why, size_t why_len);
int mb_sync_available(char *why, size_t why_len);
int mb_sync_error(modbus_t *ctx, int *error);
int mb_sync_cipher(modbus_t *ctx, const mbsc_cipher **cipher);
int mb_sync_dropped_answers(modbus_t *ctx, uint64_t *dropped);
int mb_sync_set_reconnect(modbus_t *ctx, const mbsc_config *cfg);

#endif /* MBSC_MODBUS_INTERNAL_H */
