/* SPDX-License-Identifier: ISC */
/*
 * examples/common.h - what secure_master and secure_slave share: option
 * values, strict number parsing, the cipher list check, a config with our
 * key files loaded, and one-line error messages prefixed with the
 * program's name.
 *
 * Only the public API (<mbsc.h>) is used here, as any application would.
 */
#ifndef MBSC_EXAMPLES_COMMON_H
#define MBSC_EXAMPLES_COMMON_H

#include <stddef.h>

#include <mbsc.h>

/* Exit statuses shared by both programs. */
#define EX_OK      0
#define EX_FAILURE 1 /* runtime failure: keys, network, Modbus */
#define EX_USAGE   2 /* bad command line */

#if defined(__GNUC__)
#define EX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define EX_PRINTF(f, a)
#endif

/* The program name used as the prefix of every message ("secure_master"). */
void ex_set_prog(const char *name);
const char *ex_prog(void);

/* --version: "<prog> (mbsc) X.Y.Z" on stdout; returns the exit status. */
int ex_print_version(void);

/* One line "<prog>: <message>" on stderr. */
void ex_msg(const char *fmt, ...) EX_PRINTF(1, 2);

/* A usage error: one line like ex_msg; returns EX_USAGE. */
int ex_usage_error(const char *fmt, ...) EX_PRINTF(1, 2);

/*
 * The value of the long option argv[*i]: what follows the '=' that eq
 * points at ("--name=VALUE"), or, when eq is NULL, the next argument,
 * which *i then steps over ("--name VALUE").  NULL after a usage error
 * that names the option as shown, if the value is missing or empty.
 */
const char *ex_option_value(int argc, char **argv, int *i, const char *eq, const char *shown);

/*
 * Parse an unsigned number: decimal digits, or "0x"/"0X" and hex digits.
 * No sign, no spaces, no empty string, no octal surprise for "010" (it is
 * ten).  Returns 0 and sets *out if min <= value <= max, else -1.
 */
int ex_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out);

/*
 * Check a comma-separated cipher list the way mbsc_config_set_ciphers
 * reads it, but with a message a user can act on ("unknown cipher 'aes'
 * (known: chacha20, trivium, rabbit, enocoro128v2)").  Returns 0 or -1
 * with why filled.
 */
int ex_check_cipher_list(const char *list, char *why, size_t why_len);

/*
 * Check that text is "HOST:PORT" or "[V6ADDR]:PORT" (port 0..65535) before
 * anything is loaded or resolved, so that a typo is a usage error.  Port
 * 0 ("any free port") only makes sense to listen: allow_port0 says if it
 * is accepted.  Returns 0 or -1.
 */
int ex_check_hostport(const char *text, int allow_port0);

/* "chacha20, trivium, rabbit, enocoro128v2", from the library's table. */
void ex_known_ciphers(char *buf, size_t len);

/*
 * A new config for role with our private key (and the PSK when psk_path
 * is not NULL) loaded; every temporary copy of a secret is wiped.  NULL
 * after a message (the key API's, which names the file).
 */
mbsc_config *ex_config_new(enum mbsc_role role, const char *key_path, const char *psk_path);

/* Size of the why buffers: the key API's messages plus a long path. */
#define EX_WHY_SIZE (MBSC_WHY_SIZE + 4096u)

/* Ignore SIGPIPE: a closed stdout must give an error we report, not a silent death. */
void ex_ignore_sigpipe(void);

/* CLOCK_MONOTONIC in milliseconds (for rate limits and timings). */
long long ex_now_ms(void);

#endif /* MBSC_EXAMPLES_COMMON_H */
