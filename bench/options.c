/* SPDX-License-Identifier: ISC */
/*
 * options.c - parse the command line (see options.h).
 *
 * Written by hand rather than with getopt_long: every mistake must come out
 * as exactly one line "mbsc-bench: <reason>" with exit status 2, which
 * getopt's own messages do not give.  "--opt VALUE" and "--opt=VALUE" are
 * both accepted.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbsc/version.h"

#include "bench.h"
#include "options.h"

void bench_usage(FILE *f)
{
    fputs("Usage: mbsc-bench [--quick] [--csv FILE] [--cpu-mhz N] [--only CIPHER,...]\n"
          "                  [--help] [--version]\n"
          "\n"
          "Measure mbsc's four stream ciphers and its secure channel on this machine:\n"
          "key setup, keystream throughput and cycles per byte (16 B to 1 MiB), per-frame\n"
          "seal/open latency (12 and 260-byte Modbus ADUs), memory footprint, the Noise\n"
          "handshake, and Modbus/TCP round trips over loopback (plain and through mbsc),\n"
          "with libsodium's ChaCha20 and ChaCha20-Poly1305 as baselines.  Every figure\n"
          "and the description of the machine go out as one long CSV\n"
          "(cipher,metric,size_bytes,value,unit); bench/report.py makes the tables and\n"
          "the picture from it.  Progress goes to stderr.  A default run takes about\n"
          "2 minutes.\n"
          "\n"
          "  --quick            fewer repetitions, same rows (under 15 s)\n"
          "  --csv FILE         the CSV to FILE instead of stdout\n"
          "  --cpu-mhz N        core clock for cycles per byte when the perf cycle\n"
          "                     counter is unavailable (default: estimated)\n"
          "  --only LIST        measure only these ciphers (comma-separated: chacha20,\n"
          "                     trivium, rabbit, enocoro128v2); the libsodium baselines\n"
          "                     are measured when chacha20 is in the list, the plaintext\n"
          "                     libmodbus round trip always\n"
          "  --help             this text\n"
          "  --version          print mbsc-bench's version and exit\n",
          f);
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "mbsc-bench: <reason>" and return the exit status for it. */
static int bad(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", BENCH_PROG);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

static int parse_mhz(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || *end != '\0' || !(v >= 1.0 && v <= 100000.0))
        return bad("--cpu-mhz needs a frequency in MHz between 1 and 100000, not '%s'", s);
    *out = v;
    return 0;
}

static int parse_only(const char *list, int only[MBSC_CIPHER_COUNT + 1])
{
    char buf[256], *save = NULL, *tok;

    if (strlen(list) >= sizeof buf)
        return bad("--only: list too long: '%s'", list);
    if (list[0] == '\0' || list[strlen(list) - 1] == ',' || list[0] == ',' ||
        strstr(list, ",,") != NULL)
        return bad("--only needs a comma-separated list of ciphers, not '%s'", list);
    snprintf(buf, sizeof buf, "%s", list);
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        const mbsc_cipher *c = mbsc_cipher_by_name(tok);
        if (c == NULL)
            return bad("--only: unknown cipher '%s' (chacha20, trivium, rabbit, enocoro128v2)",
                       tok);
        if (only[mbsc_cipher_id(c)])
            return bad("--only: cipher '%s' given twice", tok);
        only[mbsc_cipher_id(c)] = 1;
    }
    return 0;
}

/* The value of an option that takes one: "--opt=V" or the next argument. */
static const char *value_of(int argc, char **argv, int *i, size_t name_len)
{
    const char *arg = argv[*i];

    if (arg[name_len] == '=')
        return arg + name_len + 1;
    /* "--csv --quick" is a forgotten value, not a file named "--quick". */
    if (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0)
        return NULL;
    return argv[++*i];
}

int bench_parse_options(int argc, char **argv, struct bench_options *o)
{
    static const char *const with_value[] = {"--csv", "--cpu-mhz", "--only"};

    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL, *opt = NULL;
        size_t len = 0;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            bench_usage(stdout);
            return 1;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("mbsc-bench (mbsc) %s\n", mbsc_version());
            return 1;
        }
        if (strcmp(arg, "--quick") == 0) {
            o->quick = 1;
            continue;
        }
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) {
            len = strlen(with_value[k]);
            if (strncmp(arg, with_value[k], len) == 0 && (arg[len] == '\0' || arg[len] == '=')) {
                opt = with_value[k];
                break;
            }
        }
        if (opt == NULL) {
            if (arg[0] == '-')
                return bad("unknown option '%s' (see --help)", arg);
            return bad("unexpected argument '%s' (see --help)", arg);
        }
        val = value_of(argc, argv, &i, len);
        if (val == NULL)
            return bad("%s needs a value (see --help)", opt);
        if (val[0] == '\0')
            return bad("%s needs a non-empty value", opt);
        if (strcmp(opt, "--csv") == 0)
            o->csv = val;
        else if (strcmp(opt, "--cpu-mhz") == 0) {
            if (parse_mhz(val, &o->cpu_mhz) != 0)
                return 2;
        } else if (parse_only(val, o->only) != 0)
            return 2;
    }
    return 0;
}
