/* SPDX-License-Identifier: ISC */
/* examples/common.c - helpers shared by the example programs (see common.h). */
#include "common.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

/* Set once at the start of main(), before any other thread exists. */
static const char *prog_name = "mbsc";

void ex_set_prog(const char *name)
{
    prog_name = name;
}

const char *ex_prog(void)
{
    return prog_name;
}

int ex_print_version(void)
{
    printf("%s (mbsc) %s\n", prog_name, mbsc_version());
    return fflush(stdout) == EOF ? EX_FAILURE : EX_OK;
}

void ex_msg(const char *fmt, ...)
{
    char line[EX_WHY_SIZE + 256];
    va_list ap;

    /* Format first and write once, so that messages of concurrent programs
     * sharing a terminal or a log file do not interleave inside a line. */
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", prog_name, line);
}

int ex_usage_error(const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One line, like every other error: scripts read the first line. */
    fprintf(stderr, "%s: %s\n", prog_name, line);
    return EX_USAGE;
}

const char *ex_option_value(int argc, char **argv, int *i, const char *eq, const char *shown)
{
    const char *val;

    if (eq != NULL) {
        val = eq + 1;
    } else {
        if (*i + 1 >= argc) {
            (void)ex_usage_error("option '%.200s' needs a value", shown);
            return NULL;
        }
        val = argv[++*i];
    }
    if (*val == '\0') {
        (void)ex_usage_error("option '%.200s' needs a non-empty value", shown);
        return NULL;
    }
    return val;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int ex_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
    unsigned long v = 0, base = 10;
    const char *p = s;

    if (s == NULL || *s == '\0')
        return -1;
    /* strtoul would accept leading spaces, a sign and octal: all surprising
     * on a command line that addresses registers, so parse by hand. */
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
        if (*p == '\0')
            return -1;
    }
    for (; *p != '\0'; p++) {
        int d = hex_digit(*p);

        if (d < 0 || (unsigned long)d >= base)
            return -1;
        /* v * base + d <= max, written so that it never wraps around. */
        if ((unsigned long)d > max || v > (max - (unsigned long)d) / base)
            return -1;
        v = v * base + (unsigned long)d;
    }
    if (v < min)
        return -1;
    *out = v;
    return 0;
}

int ex_check_hostport(const char *text, int allow_port0)
{
    char host[256], port[8];
    unsigned long n;

    if (mbsc_parse_hostport(text, host, sizeof host, port, sizeof port) != MBSC_OK)
        return -1;
    return ex_parse_ulong(port, allow_port0 ? 0 : 1, 65535, &n);
}

void ex_known_ciphers(char *buf, size_t len)
{
    unsigned id;
    size_t used = 0;

    if (len == 0)
        return;
    buf[0] = '\0';
    for (id = 1; id <= MBSC_CIPHER_COUNT; id++) {
        const mbsc_cipher *c = mbsc_cipher_by_id(id);
        int n;

        if (c == NULL || used >= len)
            continue;
        n = snprintf(buf + used, len - used, "%s%s", used > 0 ? ", " : "", mbsc_cipher_name(c));
        if (n > 0)
            used += (size_t)n;
    }
}

int ex_check_cipher_list(const char *list, char *why, size_t why_len)
{
    const char *seen[MBSC_MAX_CIPHER_OFFER];
    size_t n = 0;
    const char *p = list;
    char known[128];

    ex_known_ciphers(known, sizeof known);
    for (;;) {
        size_t len = strcspn(p, ",");
        char name[32];
        const mbsc_cipher *c;
        size_t i;

        if (len == 0) {
            snprintf(why, why_len, "empty name in cipher list '%s' (known: %s)", list, known);
            return -1;
        }
        if (len >= sizeof name) {
            snprintf(why, why_len, "unknown cipher '%.*s' (known: %s)", (int)len, p, known);
            return -1;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        c = mbsc_cipher_by_name(name);
        if (c == NULL) {
            snprintf(why, why_len, "unknown cipher '%s' (known: %s)", name, known);
            return -1;
        }
        for (i = 0; i < n; i++) {
            if (strcmp(seen[i], mbsc_cipher_name(c)) == 0) {
                snprintf(why, why_len, "cipher '%s' listed twice", name);
                return -1;
            }
        }
        if (n == MBSC_MAX_CIPHER_OFFER) {
            snprintf(why, why_len, "more than %u ciphers listed", MBSC_MAX_CIPHER_OFFER);
            return -1;
        }
        seen[n++] = mbsc_cipher_name(c);
        p += len;
        if (*p == '\0')
            return 0;
        p++; /* the comma */
    }
}

/* Load our private key (and the PSK) into cfg: 0, or -1 with why set. */
static int load_secrets(mbsc_config *cfg, const char *key_path, const char *psk_path, char *why,
                        size_t why_len)
{
    mbsc_keypair kp;
    uint8_t psk[MBSC_KEY_BYTES];
    int rc = -1;

    if (mbsc_keypair_load(&kp, key_path, why, why_len) != MBSC_OK)
        return -1; /* kp is zeroed by the loader */
    if (mbsc_config_set_keypair(cfg, &kp) != MBSC_OK) {
        snprintf(why, why_len, "%s: cannot use this key pair", key_path);
        goto out;
    }
    if (psk_path != NULL) {
        if (mbsc_psk_load(psk, psk_path, why, why_len) != MBSC_OK)
            goto out;
        if (mbsc_config_set_psk(cfg, psk) != MBSC_OK) {
            snprintf(why, why_len, "%s: cannot use this pre-shared key", psk_path);
            goto out;
        }
    }
    rc = 0;
out:
    /* The config holds its own copies: ours go at once. */
    mbsc_keypair_wipe(&kp);
    sodium_memzero(psk, sizeof psk);
    return rc;
}

mbsc_config *ex_config_new(enum mbsc_role role, const char *key_path, const char *psk_path)
{
    char why[EX_WHY_SIZE];
    mbsc_config *cfg = mbsc_config_new(role);

    if (cfg == NULL) {
        ex_msg("out of memory");
        return NULL;
    }
    if (load_secrets(cfg, key_path, psk_path, why, sizeof why) != 0) {
        ex_msg("%s", why);
        mbsc_config_free(cfg);
        return NULL;
    }
    return cfg;
}

void ex_ignore_sigpipe(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGPIPE, &sa, NULL);
}

long long ex_now_ms(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
