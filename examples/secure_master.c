/* SPDX-License-Identifier: ISC */
/*
 * secure_master - a Modbus/TCP master (client) that talks to a slave
 * through the mbsc secure channel, with plain libmodbus calls.
 *
 *   secure_master --connect HOST:PORT --key FILE --peer FILE [--psk FILE]
 *                 [--cipher NAME | --ciphers LIST] [--unit ID] [--timeout MS]
 *                 [--json | --csv] [-v] ACTION...
 *
 * mbsc_modbus_connect() runs the handshake and returns an ordinary
 * modbus_t; every action below is then a normal libmodbus call on it.  The
 * actions run in the order given, on one connection.
 *
 * Output: reads (and each read of --poll) print "ADDR: V1 V2 ..." on
 * stdout; --poll then prints "rtt_us min=.. median=.. p99=.. max=..";
 * --json prints one JSON object per result line instead, --csv one CSV row
 * (master_output.c).  stderr gets the negotiated cipher, with -v the
 * transport the libmodbus context uses and why (the synchronous one, or the
 * pump: see <mbsc/modbus.h>) and what each request does, and on failure
 * exactly one line "secure_master: <reason>".
 *
 * Addresses are the 0-based protocol addresses of the Modbus Application
 * Protocol, as on the wire; the 1-based reference numbers of device manuals
 * (holding register 0 = 40001) are only shown, in --help and with -v.
 *
 * Exit status: 0 success, 1 failure (keys, network, handshake, Modbus
 * exception, timeout), 2 bad command line.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbsc.h>
#include <mbsc/modbus.h>

#include "common.h"
#include "master_output.h"

#define PROG "secure_master"

#define DEFAULT_TIMEOUT_MS 5000ul
#define MAX_TIMEOUT_MS     3600000ul /* one hour */
#define MAX_POLL_COUNT     1000000ul /* keeps the RTT array at 4 MB */
#define MAX_INTERVAL_MS    3600000ul
/* --poll --count 0 (until interrupted): RTT statistics over the last reads. */
#define RTT_WINDOW 100000ul

/* Modbus limits per request (Modbus Application Protocol v1.1b3, 6.1-6.12). */
#define MAX_READ_REGISTERS  MODBUS_MAX_READ_REGISTERS  /* 125 */
#define MAX_WRITE_REGISTERS MODBUS_MAX_WRITE_REGISTERS /* 123 */
#define MAX_READ_BITS       MODBUS_MAX_READ_BITS       /* 2000 */
#define MAX_WRITE_BITS      MODBUS_MAX_WRITE_BITS      /* 1968 */

enum action_kind {
    ACT_WRITE_REGISTERS, /* FC16 */
    ACT_READ_REGISTERS,  /* FC3 */
    ACT_READ_INPUT,      /* FC4 */
    ACT_WRITE_COILS,     /* FC15 */
    ACT_READ_COILS,      /* FC1 */
    ACT_POLL,            /* FC3, repeated and timed */
    ACT_READ_DISCRETE,   /* FC2 */
    ACT_WRITE_COIL,      /* FC5 */
    ACT_WRITE_REGISTER   /* FC6 */
};

struct action {
    enum action_kind kind;
    const char *option; /* as typed, for messages: "--read-registers" */
    const char *arg;    /* its argument: "0:10" */
    unsigned addr;
    unsigned count;            /* items read, or values written */
    unsigned long poll_count;  /* ACT_POLL: number of reads (0: until interrupted) */
    unsigned long interval_ms; /* ACT_POLL: pause between reads */
    int poll_count_given;      /* ACT_POLL: --count seen (0 is a valid count) */
    union {
        uint16_t regs[MAX_WRITE_REGISTERS];
        uint8_t bits[MAX_WRITE_BITS];
    } values;
};

struct options {
    const char *connect;
    const char *key;
    const char *peer;
    const char *psk;
    const char *ciphers; /* from --cipher or --ciphers */
    int cipher_given;    /* which one, for the exclusivity message */
    unsigned long unit;
    int unit_given;
    unsigned long timeout_ms;
    int timeout_given;
    struct action *actions;
    size_t n_actions;
    struct mo_output out; /* text, --json or --csv (master_output.h) */
    int verbose;          /* -v */
};

static void usage(FILE *out)
{
    fputs("usage: " PROG " --connect HOST:PORT --key FILE --peer FILE [--psk FILE]\n"
          "                     [--cipher NAME | --ciphers LIST] [--unit ID] [--timeout MS]\n"
          "                     [--json | --csv] [-v] ACTION...\n"
          "       " PROG " --help | --version\n"
          "\n"
          "  --connect HOST:PORT   the secure slave ([V6ADDR]:PORT for IPv6)\n"
          "  --key FILE            this master's private key (mbsc-keygen; mode 0600)\n"
          "  --peer FILE           the slave's public key\n"
          "  --psk FILE            pre-shared key, if the slave uses one\n"
          "  --cipher NAME         offer only this cipher\n"
          "  --ciphers LIST        offer these, comma-separated, in order of preference\n"
          "                        (default: chacha20,trivium,rabbit,enocoro128v2)\n"
          "  --unit ID             Modbus unit id: 0..247 or 255 (default 255)\n"
          "  --timeout MS          connect + handshake, and each reply (default 5000)\n"
          "  --json                one JSON object per result line on stdout\n"
          "  --csv                 CSV on stdout: a header, then one row per result\n"
          "  -v, --verbose         say on stderr which transport the connection uses\n"
          "                        (sync or pump), what each request does and how\n"
          "                        long it took, with the 1-based reference numbers\n"
          "\n"
          "Actions, run in the order given on one connection (numbers are decimal\n"
          "or 0x-prefixed hex):\n"
          "  --read-coils ADDR:COUNT            read coils (FC1, max 2000)\n"
          "  --read-discrete-inputs ADDR:COUNT  read discrete inputs (FC2, max 2000)\n"
          "  --read-registers ADDR:COUNT        read holding registers (FC3, max 125)\n"
          "  --read-input-registers ADDR:COUNT  read input registers (FC4, max 125)\n"
          "  --write-coil ADDR=B                write one coil, 0 or 1 (FC5)\n"
          "  --write-register ADDR=V            write one holding register (FC6)\n"
          "  --write-coils ADDR=B1[,B2...]      write coils, bits 0/1 (FC15, max 1968)\n"
          "  --write-registers ADDR=V1[,V2...]  write holding registers (FC16, max 123)\n"
          "  --poll ADDR:COUNT --count N [--interval MS]\n"
          "                                     read holding registers N times, MS apart\n"
          "                                     (default 0), printing the values each\n"
          "                                     time; --count 0: until Ctrl-C/SIGTERM\n"
          "\n"
          "Addresses are 0-based, as on the wire (Modbus Application Protocol).\n"
          "Device manuals often number from 1 with the table as the first digit:\n"
          "  coil 0 = 00001, discrete input 0 = 10001, input register 0 = 30001,\n"
          "  holding register 0 = 40001 (so 40108 is --read-registers 107:1).\n"
          "\n"
          "Reads, and each read of a poll, print 'ADDR: V1 V2 ...' on stdout; a poll\n"
          "ends with its round-trip times 'rtt_us min=.. median=.. p99=.. max=..'\n"
          "(microseconds, monotonic clock; with --count 0 over the last 100000\n"
          "reads).  --json prints every read and write as one object per line, with\n"
          "time, action, fc, unit, addr, ref (1-based), count, rtt_us, values and,\n"
          "in a poll, seq; the poll's summary is one more object.  --csv prints the\n"
          "same fields as columns v0, v1, ... for the values; the poll's summary\n"
          "then goes to stderr.\n"
          "Exit status: 0 success, 1 failure, 2 bad command line.\n",
          out);
}

/* ---- Argument parsing ----------------------------------------------------- */

/* "ADDR:COUNT" with 1 <= COUNT <= max_count and the last address <= 65535. */
static int parse_range(const char *opt, const char *s, unsigned max_count, struct action *a)
{
    const char *colon = strchr(s, ':');
    char addr_text[16];
    unsigned long addr, count;
    size_t n;

    if (colon == NULL || (n = (size_t)(colon - s)) == 0 || n >= sizeof addr_text)
        return ex_usage_error("%s '%s': expected ADDR:COUNT", opt, s);
    memcpy(addr_text, s, n);
    addr_text[n] = '\0';
    if (ex_parse_ulong(addr_text, 0, 65535, &addr) != 0)
        return ex_usage_error("%s '%s': address must be 0..65535", opt, s);
    if (ex_parse_ulong(colon + 1, 1, max_count, &count) != 0)
        return ex_usage_error("%s '%s': count must be 1..%u", opt, s, max_count);
    if (addr + count > 65536ul)
        return ex_usage_error("%s '%s': addresses %lu..%lu go past 65535", opt, s, addr,
                              addr + count - 1);
    a->addr = (unsigned)addr;
    a->count = (unsigned)count;
    return 0;
}

/* "ADDR=V1,V2,..." with values 0..65535 (bits: 0..1), at most max_count of them. */
static int parse_values(const char *opt, const char *s, unsigned max_count, int bits,
                        struct action *a)
{
    const char *eq = strchr(s, '='), *p;
    char text[16];
    unsigned long addr, v;
    unsigned count = 0;
    size_t n;

    if (eq == NULL || (n = (size_t)(eq - s)) == 0 || n >= sizeof text)
        return ex_usage_error("%s '%s': expected ADDR=V1[,V2...]", opt, s);
    memcpy(text, s, n);
    text[n] = '\0';
    if (ex_parse_ulong(text, 0, 65535, &addr) != 0)
        return ex_usage_error("%s '%s': address must be 0..65535", opt, s);
    for (p = eq + 1;; p++) {
        n = strcspn(p, ",");
        if (n == 0 || n >= sizeof text)
            return ex_usage_error("%s '%s': bad or empty value '%.*s'", opt, s, (int)n, p);
        memcpy(text, p, n);
        text[n] = '\0';
        if (ex_parse_ulong(text, 0, bits ? 1 : 65535, &v) != 0)
            return ex_usage_error("%s '%s': value '%s' is not %s", opt, s, text,
                                  bits ? "0 or 1" : "0..65535");
        if (count == max_count)
            return ex_usage_error("%s '%s': more than %u values", opt, s, max_count);
        if (bits)
            a->values.bits[count] = (uint8_t)v;
        else
            a->values.regs[count] = (uint16_t)v;
        count++;
        p += n;
        if (*p == '\0')
            break;
    }
    if (addr + count > 65536ul)
        return ex_usage_error("%s '%s': addresses %lu..%lu go past 65535", opt, s, addr,
                              addr + count - 1);
    a->addr = (unsigned)addr;
    a->count = count;
    return 0;
}

static struct action *new_action(struct options *o, enum action_kind kind, const char *opt,
                                 const char *arg)
{
    struct action *grown = realloc(o->actions, (o->n_actions + 1) * sizeof *grown);
    struct action *a;

    if (grown == NULL)
        return NULL;
    o->actions = grown;
    a = &grown[o->n_actions++];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    a->option = opt;
    a->arg = arg;
    return a;
}

/* Apply one option and its value to o: 0, or the exit status of a usage error. */
static int take_option(struct options *o, const char *name, const char *val)
{
    static const struct {
        const char *name;
        enum action_kind kind;
    } actions[] = {
        {"--write-registers", ACT_WRITE_REGISTERS},
        {"--read-registers", ACT_READ_REGISTERS},
        {"--read-input-registers", ACT_READ_INPUT},
        {"--write-coils", ACT_WRITE_COILS},
        {"--read-coils", ACT_READ_COILS},
        {"--poll", ACT_POLL},
        {"--read-discrete-inputs", ACT_READ_DISCRETE},
        {"--write-coil", ACT_WRITE_COIL},
        {"--write-register", ACT_WRITE_REGISTER},
    };
    const char **slot = NULL;
    struct action *last = o->n_actions > 0 ? &o->actions[o->n_actions - 1] : NULL;
    size_t i;

    if (strcmp(name, "--connect") == 0)
        slot = &o->connect;
    else if (strcmp(name, "--key") == 0)
        slot = &o->key;
    else if (strcmp(name, "--peer") == 0)
        slot = &o->peer;
    else if (strcmp(name, "--psk") == 0)
        slot = &o->psk;
    if (slot != NULL) {
        if (*slot != NULL)
            return ex_usage_error("%s given twice", name);
        *slot = val;
        return 0;
    }

    if (strcmp(name, "--cipher") == 0 || strcmp(name, "--ciphers") == 0) {
        char why[256];

        if (o->cipher_given)
            return ex_usage_error("--cipher and --ciphers are exclusive and given once");
        if (strcmp(name, "--cipher") == 0 && strchr(val, ',') != NULL)
            return ex_usage_error("--cipher takes one name; use --ciphers for a list");
        if (ex_check_cipher_list(val, why, sizeof why) != 0)
            return ex_usage_error("%s: %s", name, why);
        o->ciphers = val;
        o->cipher_given = 1;
        return 0;
    }
    if (strcmp(name, "--unit") == 0) {
        if (o->unit_given)
            return ex_usage_error("--unit given twice");
        /* libmodbus refuses 248..254 on TCP (modbus_set_slave): say so now. */
        if (ex_parse_ulong(val, 0, 255, &o->unit) != 0 || (o->unit > 247 && o->unit < 255))
            return ex_usage_error("--unit '%s': expected 0..247 or 255", val);
        o->unit_given = 1;
        return 0;
    }
    if (strcmp(name, "--timeout") == 0) {
        if (o->timeout_given)
            return ex_usage_error("--timeout given twice");
        if (ex_parse_ulong(val, 1, MAX_TIMEOUT_MS, &o->timeout_ms) != 0)
            return ex_usage_error("--timeout '%s': expected 1..%lu (ms)", val, MAX_TIMEOUT_MS);
        o->timeout_given = 1;
        return 0;
    }
    /* --count and --interval belong to the --poll just before them. */
    if (strcmp(name, "--count") == 0 || strcmp(name, "--interval") == 0) {
        int is_count = strcmp(name, "--count") == 0;
        unsigned long *field;

        if (last == NULL || last->kind != ACT_POLL)
            return ex_usage_error("%s must follow --poll ADDR:COUNT", name);
        field = is_count ? &last->poll_count : &last->interval_ms;
        if (is_count ? last->poll_count_given : last->interval_ms != ULONG_MAX)
            return ex_usage_error("%s given twice for one --poll", name);
        if (ex_parse_ulong(val, 0, is_count ? MAX_POLL_COUNT : MAX_INTERVAL_MS, field) != 0)
            return ex_usage_error("%s '%s': expected %s", name, val,
                                  is_count ? "0..1000000 (0: until interrupted)"
                                           : "0..3600000 (ms)");
        if (is_count)
            last->poll_count_given = 1;
        return 0;
    }

    for (i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        struct action *a;

        if (strcmp(name, actions[i].name) != 0)
            continue;
        if (last != NULL && last->kind == ACT_POLL && !last->poll_count_given)
            return ex_usage_error("--poll %s needs --count N", last->arg);
        a = new_action(o, actions[i].kind, actions[i].name, val);
        if (a == NULL) {
            ex_msg("out of memory");
            return EX_FAILURE;
        }
        switch (a->kind) {
        case ACT_WRITE_REGISTERS: return parse_values(name, val, MAX_WRITE_REGISTERS, 0, a);
        case ACT_WRITE_COILS: return parse_values(name, val, MAX_WRITE_BITS, 1, a);
        case ACT_WRITE_REGISTER: return parse_values(name, val, 1, 0, a);
        case ACT_WRITE_COIL: return parse_values(name, val, 1, 1, a);
        case ACT_READ_COILS:
        case ACT_READ_DISCRETE: return parse_range(name, val, MAX_READ_BITS, a);
        case ACT_POLL:
            a->interval_ms = ULONG_MAX; /* "not given", see --interval */
            return parse_range(name, val, MAX_READ_REGISTERS, a);
        case ACT_READ_REGISTERS:
        case ACT_READ_INPUT:
        default: return parse_range(name, val, MAX_READ_REGISTERS, a);
        }
    }
    return ex_usage_error("unknown option '%s' (see --help)", name);
}

/* Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct options *o)
{
    int i, rc;

    memset(o, 0, sizeof *o);
    o->unit = MODBUS_TCP_SLAVE; /* 255: "this device", the Modbus/TCP default */
    o->timeout_ms = DEFAULT_TIMEOUT_MS;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *val, *eq;
        char name[32];
        size_t len;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return fflush(stdout) == EOF ? EX_FAILURE : EX_OK;
        }
        if (strcmp(a, "--version") == 0)
            return ex_print_version();
        /* The options without a value. */
        if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            o->verbose = 1;
            continue;
        }
        if (strcmp(a, "--json") == 0 || strcmp(a, "--csv") == 0) {
            if (o->out.format != MO_TEXT)
                return ex_usage_error("--json and --csv are exclusive and given once");
            o->out.format = a[2] == 'j' ? MO_JSON : MO_CSV;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
            return ex_usage_error("unexpected argument '%.200s'", a);
        /* Every option takes a value: --name VALUE or --name=VALUE. */
        eq = strchr(a, '=');
        len = eq != NULL ? (size_t)(eq - a) : strlen(a);
        if (len >= sizeof name)
            return ex_usage_error("unknown option '%.200s' (see --help)", a);
        memcpy(name, a, len);
        name[len] = '\0';
        val = ex_option_value(argc, argv, &i, eq, name);
        if (val == NULL)
            return EX_USAGE;
        rc = take_option(o, name, val);
        if (rc != 0)
            return rc;
    }
    if (o->n_actions > 0) {
        struct action *last = &o->actions[o->n_actions - 1];

        if (last->kind == ACT_POLL && !last->poll_count_given)
            return ex_usage_error("--poll %s needs --count N", last->arg);
    }
    for (i = 0; (size_t)i < o->n_actions; i++) {
        if (o->actions[i].kind == ACT_POLL && o->actions[i].interval_ms == ULONG_MAX)
            o->actions[i].interval_ms = 0;
        /* CSV: as many value columns as the widest result. */
        if (o->actions[i].count > o->out.csv_values)
            o->out.csv_values = o->actions[i].count;
    }
    if (o->connect == NULL)
        return ex_usage_error("missing --connect HOST:PORT");
    if (ex_check_hostport(o->connect, 0) != 0)
        return ex_usage_error("--connect '%s': expected HOST:PORT or [V6ADDR]:PORT, port "
                              "1..65535",
                              o->connect);
    if (o->key == NULL)
        return ex_usage_error("missing --key FILE");
    if (o->peer == NULL)
        return ex_usage_error("missing --peer FILE (the slave's public key)");
    if (o->n_actions == 0)
        return ex_usage_error("no action given (--read-registers, --write-registers, ...)");
    return -1;
}

/* ---- Connecting ----------------------------------------------------------- */

static mbsc_config *make_config(const struct options *o)
{
    char why[EX_WHY_SIZE];
    uint8_t peer[MBSC_KEY_BYTES];
    mbsc_config *cfg = ex_config_new(MBSC_ROLE_MASTER, o->key, o->psk);

    if (cfg == NULL)
        return NULL;
    if (mbsc_public_key_load(peer, o->peer, why, sizeof why) != MBSC_OK) {
        ex_msg("%s", why);
        goto fail;
    }
    if (mbsc_config_set_peer_public_key(cfg, peer) != MBSC_OK) {
        ex_msg("%s: cannot use this public key", o->peer);
        goto fail;
    }
    if (o->ciphers != NULL && mbsc_config_set_ciphers(cfg, o->ciphers) != MBSC_OK) {
        ex_msg("cipher list '%s' rejected by the library", o->ciphers);
        goto fail;
    }
    return cfg;
fail:
    mbsc_config_free(cfg);
    return NULL;
}

/* One line that names the cause of a failed mbsc_modbus_connect(). */
static void report_connect_failure(const struct options *o, int err, const char *why)
{
    const char *to = o->connect;

    switch (err) {
    case MBSC_ERR_PEER_CLOSED:
        /* The slave says nothing on purpose (docs/protocol.md: it closes without an
         * answer), so list what makes it close. */
        ex_msg("handshake with %s failed: slave refused the handshake (our key is not "
               "authorised, or no common cipher, or --peer is not the slave's key)",
               to);
        break;
    case MBSC_ERR_PSK_MISMATCH:
        ex_msg("handshake with %s failed: wrong pre-shared key (the slave's reply does not "
               "authenticate with our PSK%s)",
               to, o->psk == NULL ? ": we have none, the slave has one" : "");
        break;
    case MBSC_ERR_HANDSHAKE_TIMEOUT:
        ex_msg("handshake with %s timed out after %lu ms", to, o->timeout_ms);
        break;
    case MBSC_ERR_FRAME_LENGTH:
    case MBSC_ERR_HANDSHAKE_MESSAGE:
    case MBSC_ERR_TRUNCATED:
    case MBSC_ERR_BAD_VERSION:
        /* What a plain Modbus/TCP server, a web server or a proxy answers. */
        ex_msg("handshake with %s failed: %s: the peer does not answer like an mbsc slave "
               "(wrong port, or a plain Modbus/TCP server?)",
               to, mbsc_strerror(err));
        break;
    case MBSC_ERR_HANDSHAKE_DECRYPT:
    case MBSC_ERR_UNKNOWN_PEER:
    case MBSC_ERR_NO_COMMON_CIPHER:
    case MBSC_ERR_BAD_OFFER:
    case MBSC_ERR_BAD_CHOICE:
    case MBSC_ERR_WEAK_KEY:
    case MBSC_ERR_WRONG_PEER_KEY:
    case MBSC_ERR_BAD_TAG: ex_msg("handshake with %s failed: %s", to, mbsc_strerror(err)); break;
    default:
        /* Connect, resolve, address errors: the library's line names the
         * address and the system's reason ("connect ...: Connection refused"). */
        if (why[0] != '\0')
            ex_msg("%s", why);
        else
            ex_msg("cannot connect to %s: %s", to, mbsc_strerror(err));
        break;
    }
}

/* ---- Actions -------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;

    /* CLOCK_MONOTONIC: wall-clock steps (NTP) must not show up as RTTs. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Set by SIGINT/SIGTERM while the actions run: polling stops cleanly. */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/*
 * SIGINT and SIGTERM end a poll with its summary instead of killing the
 * program mid-line.  No SA_RESTART: the sleep between reads is cut short.
 */
static void catch_interrupts(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGINT, &sa, NULL);
    (void)sigaction(SIGTERM, &sa, NULL);
}

static void sleep_ms(unsigned long ms)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !interrupted)
        ;
}

static int action_failed(const struct options *o, modbus_t *ctx, const struct action *a,
                         int saved_errno)
{
    int err = mbsc_modbus_error(ctx);

    if (err == MBSC_ERR_PEER_CLOSED)
        ex_msg("%s %s: the slave at %s closed the connection", a->option, a->arg, o->connect);
    else if (err != MBSC_OK)
        ex_msg("%s %s: connection to %s lost: %s", a->option, a->arg, o->connect,
               mbsc_strerror(err));
    else if (saved_errno == ETIMEDOUT)
        ex_msg("%s %s: no reply from %s within %lu ms", a->option, a->arg, o->connect,
               o->timeout_ms);
    else
        ex_msg("%s %s: %s", a->option, a->arg, modbus_strerror(saved_errno));
    return EX_FAILURE;
}

/* What an action is in Modbus terms, for the result lines and -v. */
static void describe(const struct options *o, const struct action *a, struct mo_result *r)
{
    static const struct {
        unsigned fc;
        enum mo_table table;
    } kinds[] = {
        [ACT_WRITE_REGISTERS] = {16, MO_HOLDING_REGISTERS},
        [ACT_READ_REGISTERS] = {3, MO_HOLDING_REGISTERS},
        [ACT_READ_INPUT] = {4, MO_INPUT_REGISTERS},
        [ACT_WRITE_COILS] = {15, MO_COILS},
        [ACT_READ_COILS] = {1, MO_COILS},
        [ACT_POLL] = {3, MO_HOLDING_REGISTERS},
        [ACT_READ_DISCRETE] = {2, MO_DISCRETE_INPUTS},
        [ACT_WRITE_COIL] = {5, MO_COILS},
        [ACT_WRITE_REGISTER] = {6, MO_HOLDING_REGISTERS},
    };

    memset(r, 0, sizeof *r);
    r->action = a->option + 2; /* without "--" */
    r->fc = kinds[a->kind].fc;
    r->table = kinds[a->kind].table;
    r->unit = (unsigned)o->unit;
    r->addr = a->addr;
    r->count = a->count;
    r->seq = -1;
}

static const char *table_name(enum mo_table t)
{
    switch (t) {
    case MO_COILS: return "coils";
    case MO_DISCRETE_INPUTS: return "discrete inputs";
    case MO_INPUT_REGISTERS: return "input registers";
    case MO_HOLDING_REGISTERS:
    default: return "holding registers";
    }
}

/* -v: "FC3 read holding registers 10..13 (40011..40014): 312 us". */
static void say_request(const struct options *o, const struct mo_result *r)
{
    char first[16], last[16], seq[32] = "";

    if (!o->verbose)
        return;
    mo_reference(first, sizeof first, r->table, r->addr, r->count, 0);
    mo_reference(last, sizeof last, r->table, r->addr, r->count, r->count - 1);
    if (r->seq >= 0)
        snprintf(seq, sizeof seq, " #%ld", r->seq);
    ex_msg("FC%u %s %s %u..%u (%s..%s)%s: %lu us", r->fc, r->written ? "write" : "read",
           table_name(r->table), r->addr, r->addr + r->count - 1, first, last, seq,
           (unsigned long)r->rtt_us);
}

static uint32_t elapsed_us(uint64_t t0)
{
    uint64_t dt = (now_ns() - t0) / 1000u;

    return dt > UINT32_MAX ? UINT32_MAX : (uint32_t)dt;
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile of n sorted samples (p in 1..100). */
static uint32_t percentile(const uint32_t *sorted, size_t n, unsigned p)
{
    size_t rank = (n * p + 99) / 100; /* ceil(n * p / 100), >= 1 for n >= 1 */

    return sorted[rank - 1];
}

/*
 * --poll: read, print, pause, count times (0: until SIGINT/SIGTERM), then
 * the round-trip statistics.  The RTTs go into a ring of at most
 * RTT_WINDOW samples when the count is open-ended.
 */
static int run_poll(struct options *o, modbus_t *ctx, const struct action *a)
{
    uint16_t regs[MAX_READ_REGISTERS];
    size_t cap = a->poll_count != 0 ? a->poll_count : RTT_WINDOW, kept;
    uint32_t *rtt = malloc(cap * sizeof *rtt);
    unsigned long reads = 0;
    struct mo_result r;

    if (rtt == NULL) {
        ex_msg("out of memory");
        return EX_FAILURE;
    }
    describe(o, a, &r);
    r.regs = regs;
    while ((a->poll_count == 0 || reads < a->poll_count) && !interrupted) {
        uint64_t t0;
        int rc;

        if (reads > 0 && a->interval_ms > 0) {
            sleep_ms(a->interval_ms);
            if (interrupted)
                break;
        }
        t0 = now_ns();
        rc = modbus_read_registers(ctx, (int)a->addr, (int)a->count, regs);
        r.rtt_us = elapsed_us(t0);
        if (rc != (int)a->count) {
            int saved = rc < 0 ? errno : EMBBADDATA;

            free(rtt);
            return action_failed(o, ctx, a, saved);
        }
        rtt[reads % cap] = r.rtt_us;
        r.seq = (long)reads;
        say_request(o, &r);
        mo_print_result(&o->out, &r);
        /* A poller's reader wants each line as it comes, even into a pipe. */
        fflush(stdout);
        reads++;
    }
    kept = reads < cap ? (size_t)reads : cap;
    if (kept > 0) {
        qsort(rtt, kept, sizeof *rtt, compare_u32);
        mo_print_poll_summary(&o->out, &r, reads, rtt[0], percentile(rtt, kept, 50),
                              percentile(rtt, kept, 99), rtt[kept - 1]);
    }
    free(rtt);
    if (interrupted && a->poll_count != 0) {
        ex_msg("%s %s: interrupted after %lu of %lu reads", a->option, a->arg, reads,
               a->poll_count);
        return EX_FAILURE;
    }
    return EX_OK;
}

static int run_action(struct options *o, modbus_t *ctx, const struct action *a)
{
    uint16_t regs[MAX_READ_REGISTERS];
    uint8_t bits[MAX_READ_BITS];
    int addr = (int)a->addr, count = (int)a->count, rc;
    struct mo_result r;
    uint64_t t0;

    describe(o, a, &r);
    t0 = now_ns();
    switch (a->kind) {
    case ACT_WRITE_REGISTERS:
        rc = modbus_write_registers(ctx, addr, count, a->values.regs);
        r.regs = a->values.regs;
        break;
    case ACT_WRITE_REGISTER:
        rc = modbus_write_register(ctx, addr, a->values.regs[0]);
        r.regs = a->values.regs;
        break;
    case ACT_WRITE_COILS:
        rc = modbus_write_bits(ctx, addr, count, a->values.bits);
        r.bits = a->values.bits;
        break;
    case ACT_WRITE_COIL:
        rc = modbus_write_bit(ctx, addr, a->values.bits[0]);
        r.bits = a->values.bits;
        break;
    case ACT_READ_REGISTERS:
        rc = modbus_read_registers(ctx, addr, count, regs);
        r.regs = regs;
        break;
    case ACT_READ_INPUT:
        rc = modbus_read_input_registers(ctx, addr, count, regs);
        r.regs = regs;
        break;
    case ACT_READ_COILS:
        rc = modbus_read_bits(ctx, addr, count, bits);
        r.bits = bits;
        break;
    case ACT_READ_DISCRETE:
        rc = modbus_read_input_bits(ctx, addr, count, bits);
        r.bits = bits;
        break;
    case ACT_POLL:
    default: return run_poll(o, ctx, a);
    }
    r.rtt_us = elapsed_us(t0);
    /* libmodbus returns the number of items (1 for FC5/FC6), or -1 with errno set. */
    if (rc != count)
        return action_failed(o, ctx, a, rc < 0 ? errno : EMBBADDATA);
    r.written = a->kind == ACT_WRITE_REGISTERS || a->kind == ACT_WRITE_REGISTER ||
                a->kind == ACT_WRITE_COILS || a->kind == ACT_WRITE_COIL;
    say_request(o, &r);
    mo_print_result(&o->out, &r);
    return EX_OK;
}

static int run(struct options *o, const mbsc_config *cfg)
{
    char why[EX_WHY_SIZE];
    const mbsc_cipher *cipher;
    modbus_t *ctx;
    size_t i;
    int err = MBSC_OK, rc = EX_OK;
    uint64_t t0 = now_ns();

    why[0] = '\0';
    ctx = mbsc_modbus_connect(o->connect, cfg, (int)o->timeout_ms, &err, why, sizeof why);
    if (ctx == NULL) {
        report_connect_failure(o, err, why);
        return EX_FAILURE;
    }
    cipher = mbsc_modbus_cipher(ctx);
    ex_msg("connected to %s, cipher %s", o->connect,
           cipher != NULL ? mbsc_cipher_name(cipher) : "?");
    if (o->verbose) {
        ex_msg("connect and handshake took %lu us; unit %lu, reply timeout %lu ms",
               (unsigned long)elapsed_us(t0), o->unit, o->timeout_ms);
        /* Why this path: the probe repeats the checks the connect just made. */
        (void)mbsc_modbus_probe_path(why, sizeof why);
        ex_msg("transport %s (%s)", mbsc_modbus_path_name(mbsc_modbus_path(ctx)), why);
    }

    if (modbus_set_slave(ctx, (int)o->unit) != 0) {
        ex_msg("--unit %lu: %s", o->unit, modbus_strerror(errno));
        rc = EX_FAILURE;
        goto out;
    }
    /* The same bound for every reply as for the handshake. */
    if (modbus_set_response_timeout(ctx, (uint32_t)(o->timeout_ms / 1000),
                                    (uint32_t)(o->timeout_ms % 1000) * 1000u) != 0) {
        ex_msg("--timeout %lu: %s", o->timeout_ms, modbus_strerror(errno));
        rc = EX_FAILURE;
        goto out;
    }
    catch_interrupts();
    for (i = 0; i < o->n_actions && rc == EX_OK; i++) {
        /* After an interrupt nothing more is sent; ending an open-ended
         * poll that way is its normal end (status 0). */
        if (interrupted) {
            if (i == 0 || o->actions[i - 1].kind != ACT_POLL || o->actions[i - 1].poll_count != 0) {
                ex_msg("interrupted before %s %s", o->actions[i].option, o->actions[i].arg);
                rc = EX_FAILURE;
            }
            break;
        }
        rc = run_action(o, ctx, &o->actions[i]);
    }
out:
    mbsc_modbus_close(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    struct options o;
    mbsc_config *cfg;
    int rc;

    ex_set_prog(PROG);
    rc = parse_args(argc, argv, &o);
    if (rc >= 0) {
        free(o.actions);
        return rc;
    }
    ex_ignore_sigpipe();
    if (mbsc_init() != MBSC_OK) {
        ex_msg("%s", mbsc_strerror(MBSC_ERR_INIT));
        free(o.actions);
        return EX_FAILURE;
    }
    cfg = make_config(&o);
    rc = cfg != NULL ? run(&o, cfg) : EX_FAILURE;
    mbsc_config_free(cfg);
    free(o.actions);
    /* Results are only results if they reached their reader. */
    if (fflush(stdout) == EOF || ferror(stdout)) {
        if (rc == EX_OK)
            ex_msg("cannot write to standard output: %s", strerror(errno));
        rc = EX_FAILURE;
    }
    return rc;
}
