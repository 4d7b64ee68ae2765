/* SPDX-License-Identifier: ISC */
/* error.c - messages for the codes in mbsc/error.h. */
#include "internal.h"

MBSC_API const char *mbsc_strerror(int code)
{
    switch ((enum mbsc_error)code) {
    case MBSC_OK: return "success";
    case MBSC_ERR_INVALID_ARG: return "invalid argument";
    case MBSC_ERR_KEY_LENGTH: return "wrong key length for this cipher";
    case MBSC_ERR_IV_LENGTH: return "wrong IV length for this cipher";
    case MBSC_ERR_UNKNOWN_CIPHER: return "unknown cipher";
    case MBSC_ERR_NOMEM: return "out of memory";
    case MBSC_ERR_STATE: return "call not valid in the current state";
    case MBSC_ERR_BUFFER_TOO_SMALL: return "output buffer too small";
    case MBSC_ERR_WOULD_BLOCK: return "session output buffer full (send pending bytes first)";
    case MBSC_ERR_CIPHER_IMPL:
        return "cipher implementation unknown or not supported by this CPU (check "
               "MBSC_CIPHER_IMPL and mbsc_cipher_impl_name())";
    case MBSC_ERR_BAD_TAG: return "frame authentication failed (bad tag)";
    case MBSC_ERR_FRAME_LENGTH: return "bad frame length";
    case MBSC_ERR_TRUNCATED: return "truncated frame";
    case MBSC_ERR_PAYLOAD_TOO_LONG: return "payload too long for one frame";
    case MBSC_ERR_COUNTER_EXHAUSTED: return "frame counter exhausted";
    case MBSC_ERR_HANDSHAKE_MESSAGE: return "malformed handshake message";
    case MBSC_ERR_HANDSHAKE_DECRYPT:
        return "handshake message failed to authenticate (altered in transit)";
    case MBSC_ERR_UNKNOWN_PEER: return "peer public key is not in the allow-list";
    case MBSC_ERR_NO_COMMON_CIPHER: return "no common cipher";
    case MBSC_ERR_BAD_VERSION: return "unsupported protocol version";
    case MBSC_ERR_BAD_OFFER: return "malformed cipher offer";
    case MBSC_ERR_BAD_CHOICE: return "peer chose a cipher that was not offered";
    case MBSC_ERR_WEAK_KEY: return "low-order X25519 key (all-zero shared secret)";
    case MBSC_ERR_WRONG_PEER_KEY:
        return "handshake not made for this slave's key (the master has a wrong slave "
               "public key, or the message was altered)";
    case MBSC_ERR_PSK_MISMATCH:
        return "handshake reply failed to authenticate (pre-shared keys differ)";
    case MBSC_ERR_HANDSHAKE_TIMEOUT: return "handshake timed out";
    case MBSC_ERR_TIMEOUT: return "timed out";
    case MBSC_ERR_PEER_CLOSED: return "peer closed the connection";
    case MBSC_ERR_CONNECT: return "connection failed";
    case MBSC_ERR_ADDRESS: return "malformed address (expected HOST:PORT or [V6ADDR]:PORT)";
    case MBSC_ERR_RESOLVE: return "host name did not resolve";
    case MBSC_ERR_IO: return "socket error";
    case MBSC_ERR_FD_LIMIT: return "file descriptor limit reached (FD_SETSIZE)";
    case MBSC_ERR_BIND: return "cannot listen on the address";
    case MBSC_ERR_REPLAYED: return "handshake message replayed (seen before)";
    case MBSC_ERR_KEY_FILE_UNREADABLE: return "key file unreadable";
    case MBSC_ERR_KEY_FILE_PERMISSIONS: return "key file permissions too open";
    case MBSC_ERR_KEY_FILE_FORMAT: return "key file is not one line of base64 of 32 bytes";
    case MBSC_ERR_KEY_FILE_WRITE: return "cannot write key file";
    case MBSC_ERR_ALLOWLIST_SYNTAX: return "malformed allow-list line";
    case MBSC_ERR_ALLOWLIST_DUPLICATE: return "key listed twice in the allow-list";
    case MBSC_ERR_BAD_ADU: return "payload is not a Modbus/TCP ADU";
    case MBSC_ERR_MODBUS: return "libmodbus call failed";
    case MBSC_ERR_POLICY_SYNTAX: return "malformed policy line";
    case MBSC_ERR_POLICY_DENIED: return "request not allowed for the master's role";
    case MBSC_ERR_INIT:
        return "cannot initialise libsodium (no random source? in a chroot, mount /dev)";
    }
    return "unknown error";
}
