/* SPDX-License-Identifier: ISC */
/*
 * mbsc/error.h - error codes.
 *
 * Every mbsc function that can fail returns an int: 0 (MBSC_OK) or a positive
 * count on success, one of the negative codes below on failure.  mbsc never
 * sets or reads errno for its own errors.  Codes are stable: new ones are
 * only ever added.
 */
#ifndef MBSC_ERROR_H
#define MBSC_ERROR_H

#include "mbsc/export.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mbsc_error {
    MBSC_OK = 0,

    /* Arguments and the cipher layer */
    MBSC_ERR_INVALID_ARG = -1,      /* NULL where a pointer is required, bad flag */
    MBSC_ERR_KEY_LENGTH = -2,       /* key length does not match the cipher */
    MBSC_ERR_IV_LENGTH = -3,        /* IV length does not match the cipher */
    MBSC_ERR_UNKNOWN_CIPHER = -4,   /* cipher name or id not known */
    MBSC_ERR_NOMEM = -5,            /* memory allocation failed */
    MBSC_ERR_STATE = -6,            /* call not valid in the object's current state */
    MBSC_ERR_BUFFER_TOO_SMALL = -7, /* caller's output buffer cannot hold the result */
    MBSC_ERR_WOULD_BLOCK = -8,      /* session output full: send pending bytes first */
    MBSC_ERR_CIPHER_IMPL = -9,      /* cipher implementation unknown or not supported by the CPU */

    /* Record layer */
    MBSC_ERR_BAD_TAG = -10,           /* frame authentication failed */
    MBSC_ERR_FRAME_LENGTH = -11,      /* frame length field out of range */
    MBSC_ERR_TRUNCATED = -12,         /* frame ended before its announced length */
    MBSC_ERR_PAYLOAD_TOO_LONG = -13,  /* payload longer than MBSC_MAX_PAYLOAD */
    MBSC_ERR_COUNTER_EXHAUSTED = -14, /* frame counter would wrap */

    /* Handshake */
    MBSC_ERR_HANDSHAKE_MESSAGE = -20, /* malformed handshake message */
    MBSC_ERR_HANDSHAKE_DECRYPT = -21, /* handshake message failed to decrypt */
    MBSC_ERR_UNKNOWN_PEER = -22,      /* master key not in the slave's allow-list */
    MBSC_ERR_NO_COMMON_CIPHER = -23,  /* offer and policy share no cipher */
    MBSC_ERR_BAD_VERSION = -24,       /* protocol version byte is not 1 */
    MBSC_ERR_BAD_OFFER = -25,         /* malformed cipher offer */
    MBSC_ERR_BAD_CHOICE = -26,        /* slave chose a cipher that was not offered */
    MBSC_ERR_WEAK_KEY = -27,          /* all-zero X25519 result (low-order key) */
    MBSC_ERR_WRONG_PEER_KEY = -28,    /* message 1 not made for this slave's static key */
    MBSC_ERR_PSK_MISMATCH = -29,      /* handshake reply fails to authenticate: PSKs differ */

    /* Connections */
    MBSC_ERR_HANDSHAKE_TIMEOUT = -30, /* handshake did not complete in time */
    MBSC_ERR_TIMEOUT = -31,           /* send or receive timed out */
    MBSC_ERR_PEER_CLOSED = -32,       /* peer closed the connection */
    MBSC_ERR_CONNECT = -33,           /* TCP connect failed (refused, unreachable) */
    MBSC_ERR_ADDRESS = -34,           /* malformed HOST:PORT */
    MBSC_ERR_RESOLVE = -35,           /* host name did not resolve */
    MBSC_ERR_IO = -36,                /* unexpected socket error */
    MBSC_ERR_FD_LIMIT = -37,          /* descriptor >= FD_SETSIZE or too many fds */
    MBSC_ERR_BIND = -38,              /* bind/listen failed */
    MBSC_ERR_REPLAYED = -39,          /* message 1 seen before (a replay) */

    /* Keys on disk */
    MBSC_ERR_KEY_FILE_UNREADABLE = -40,  /* key file missing or unreadable */
    MBSC_ERR_KEY_FILE_PERMISSIONS = -41, /* secret readable, or key list writable, by others */
    MBSC_ERR_KEY_FILE_FORMAT = -42,      /* not one line of canonical base64 of 32 bytes */
    MBSC_ERR_KEY_FILE_WRITE = -43,       /* cannot write the key file */
    MBSC_ERR_ALLOWLIST_SYNTAX = -44,     /* malformed allow-list line */
    MBSC_ERR_ALLOWLIST_DUPLICATE = -45,  /* key listed twice in the allow-list */

    /* Modbus layer */
    MBSC_ERR_BAD_ADU = -50, /* authenticated payload is not a Modbus/TCP ADU */
    MBSC_ERR_MODBUS = -51,  /* libmodbus call failed */

    /* Roles and rights (mbsc/policy.h) */
    MBSC_ERR_POLICY_SYNTAX = -60, /* malformed policy file line */
    MBSC_ERR_POLICY_DENIED = -61, /* the master's role may not make this request */

    /* Library */
    MBSC_ERR_INIT = -70 /* libsodium could not be initialised (mbsc_init) */
};

/*
 * A static, human-readable description of an error code ("bad frame tag").
 * Never NULL; unknown codes give "unknown error".  Thread-safe.
 */
MBSC_API const char *mbsc_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* MBSC_ERROR_H */
