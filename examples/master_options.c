/* SPDX-License-Identifier: ISC */
/*
 * examples/master_options.c - secure_master's command line.
 *
 * Long options take their value as "--name VALUE" or "--name=VALUE".
 * Beside them, mbpoll's short options for a poll: -a unit, -r reference,
 * -c number of values, -t table[:format], -1 once, -l interval, -B word
 * order, -0 zero-based references; a value follows its letter ("-t4:float")
 * or comes as the next argument ("-t 4:float"), and flags may be grouped
 * ("-1B").
 *
 * The poll options (--table, --count, --interval, --once) belong to the
 * --poll just before them.  Given before any action, with -r and -c, they
 * describe one poll in mbpoll's way instead: mbpoll's defaults (holding
 * registers, reference 1, one value, every 1000 ms until Ctrl-C), and
 * nothing else to do.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "master.h"

/* A poll described by mbpoll's options (-r, -c, -t, -1, -l, -0). */
struct mbpoll_style {
    const char *first; /* the first of its options seen, for messages; NULL: none */
    unsigned long reference, number, interval_ms;
    int reference_given, number_given, interval_given, once, zero_based;
    enum mo_table table;
    int table_given;
};

struct parse {
    struct options *o;
    struct mbpoll_style mb;
    const char *shown; /* the short option being applied ("-c"), for messages */
};

/* The option as the user typed it: messages about -c say -c, not --number. */
static const char *as(const struct parse *p, const char *name)
{
    return p->shown != NULL ? p->shown : name;
}

static void usage(FILE *out)
{
    fputs("usage: " PROG " --connect HOST:PORT --key FILE --peer FILE [--psk FILE]\n"
          "                     [--cipher NAME | --ciphers LIST] [-a|--unit ID] [--timeout MS]\n"
          "                     [--json | --csv] [--format FMT] [-B] [-v] ACTION...\n"
          "       " PROG " --connect ... [-a ID] [-t T[:FMT]] [-r REF] [-c N] [-1] [-l MS] [-B]\n"
          "       " PROG " --help | --version\n"
          "\n"
          "  --connect HOST:PORT   the secure slave ([V6ADDR]:PORT for IPv6)\n"
          "  --key FILE            this master's private key (mbsc-keygen; mode 0600)\n"
          "  --peer FILE           the slave's public key (its FILE.pub)\n"
          "  --psk FILE            pre-shared key, if the slave uses one\n"
          "  --cipher NAME         offer only this cipher\n"
          "  --ciphers LIST        offer these, comma-separated, in order of preference\n"
          "                        (default: chacha20,trivium,rabbit,enocoro128v2)\n"
          "  -a, --unit ID         Modbus unit id: 0..247 or 255 (default 255: the\n"
          "                        Modbus/TCP spec's 'no serial device behind', which a\n"
          "                        device addressed by its IP answers to; a gateway to\n"
          "                        serial devices needs the device's own address, 1..247,\n"
          "                        as mbpoll's default 1)\n"
          "  --timeout MS          connect + handshake, and each reply (default 5000)\n"
          "  --json                one JSON object per result line on stdout\n"
          "  --csv                 CSV on stdout: a header, then one row per result\n"
          "  --format FMT          registers read shown as uint16 (default), int16, hex,\n"
          "                        int32 (or int), uint32 or float (32-bit: two registers\n"
          "                        per value, so even counts)\n"
          "  -B, --word-order big  32-bit values with the high word first (default:\n"
          "                        little, the low word first, as mbpoll)\n"
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
          "  --poll ADDR:COUNT --count N | --once [--interval MS] [--table T]\n"
          "                                     read N times (--once: 1), MS apart\n"
          "                                     (default 0), printing the values each\n"
          "                                     time; --count 0: until Ctrl-C/SIGTERM.\n"
          "                                     T: table 0 coils, 1 discrete inputs,\n"
          "                                     3 input registers, 4 holding registers\n"
          "                                     (default), or these names with dashes\n"
          "\n"
          "A poll keeps going through Modbus exceptions, timeouts and lost connections:\n"
          "each failed read is one error line (stderr; with --json or --csv a record\n"
          "with the error, the exception code and a message), the connection is made\n"
          "again (a new handshake; 250 ms, doubling up to 30 s, between attempts), and\n"
          "the summary counts the errors.  Status 1 if a read failed.\n"
          "\n"
          "mbpoll's options, without any action, describe one poll in mbpoll's way:\n"
          "  -t T[:FMT]   table (as above; default 4) and format (as --format)\n"
          "  -r REF       first reference, counted from 1 as mbpoll does (default 1:\n"
          "               address 0); -0 counts from 0\n"
          "  -c N         number of values (default 1; a 32-bit value is two registers)\n"
          "  -1           read once; without it every 1000 ms (-l MS) until Ctrl-C\n"
          "  e.g. " PROG " --connect ... -a 1 -t 3:float -r 1 -c 2 -1\n"
          "\n"
          "Addresses are 0-based, as on the wire (Modbus Application Protocol).\n"
          "Device manuals often number from 1 with the table as the first digit:\n"
          "  coil 0 = 00001, discrete input 0 = 10001, input register 0 = 30001,\n"
          "  holding register 0 = 40001 (so 40108 is --read-registers 107:1, -r 108).\n"
          "\n"
          "Reads, and each read of a poll, print 'ADDR: V1 V2 ...' on stdout; a poll\n"
          "ends with 'reads=.. ok=.. errors=..' and its round-trip times\n"
          "'rtt_us min=.. median=.. p99=.. max=..' (microseconds, monotonic clock;\n"
          "with --count 0 over the last 100000 reads).  --json prints every read and\n"
          "write as one object per line, with time, action, fc, unit, addr, ref\n"
          "(1-based), count, rtt_us, values and, in a poll, seq; the poll's summary is\n"
          "one more object.  --csv prints the same fields as columns v0, v1, ... for\n"
          "the values, then error, exception, message; the poll's summary then goes\n"
          "to stderr.  Manual: man secure_master (with a table for mbpoll users).\n"
          "Exit status: 0 success, 1 failure, 2 bad command line.\n",
          out);
}

/* ---- Values ------------------------------------------------------------------ */

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

static int is_register_table(enum mo_table t)
{
    return t == MO_INPUT_REGISTERS || t == MO_HOLDING_REGISTERS;
}

/* The format after the table of -t ("4:float"), or --format: set once. */
static int take_format(struct options *o, const char *opt, const char *name)
{
    enum mv_format f;

    if (mv_parse_format(name, &f) != 0)
        return ex_usage_error("%s: unknown format '%s' (known: %s)", opt, name, mv_format_list());
    if (o->format_given && f != o->out.values)
        return ex_usage_error("%s '%s': the format is already %s", opt, name,
                              mv_format_name(o->out.values));
    o->out.values = f;
    o->format_given = 1;
    return 0;
}

/* "T[:FORMAT]": T is 0, 1, 3, 4 (mbpoll) or a table's name with dashes. */
static int parse_table(struct options *o, const char *opt, const char *s, enum mo_table *t)
{
    static const struct {
        const char *name;
        enum mo_table table;
    } tables[] = {
        {"0", MO_COILS},
        {"1", MO_DISCRETE_INPUTS},
        {"3", MO_INPUT_REGISTERS},
        {"4", MO_HOLDING_REGISTERS},
        {"coils", MO_COILS},
        {"discrete-inputs", MO_DISCRETE_INPUTS},
        {"input-registers", MO_INPUT_REGISTERS},
        {"holding-registers", MO_HOLDING_REGISTERS},
    };
    size_t n = strcspn(s, ":"), i;

    for (i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        if (strlen(tables[i].name) != n || strncmp(s, tables[i].name, n) != 0)
            continue;
        *t = tables[i].table;
        if (s[n] == '\0')
            return 0;
        if (!is_register_table(*t))
            return ex_usage_error("%s '%s': formats are for registers (tables 3 and 4)", opt, s);
        return take_format(o, opt, s + n + 1);
    }
    return ex_usage_error("%s '%s': expected 0 (coils), 1 (discrete inputs), 3 (input "
                          "registers) or 4 (holding registers), or their names with dashes, "
                          "then :FORMAT for registers",
                          opt, s);
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
    a->interval_ms = ULONG_MAX; /* "not given", see --interval */
    switch (kind) {
    case ACT_WRITE_COILS:
    case ACT_READ_COILS:
    case ACT_WRITE_COIL: a->table = MO_COILS; break;
    case ACT_READ_DISCRETE: a->table = MO_DISCRETE_INPUTS; break;
    case ACT_READ_INPUT: a->table = MO_INPUT_REGISTERS; break;
    case ACT_WRITE_REGISTERS:
    case ACT_READ_REGISTERS:
    case ACT_POLL:
    case ACT_WRITE_REGISTER:
    default: a->table = MO_HOLDING_REGISTERS; break;
    }
    return a;
}

/* ---- Options ------------------------------------------------------------------ */

/* The last action if it is a --poll (the poll options belong to it), else NULL. */
static struct action *current_poll(struct options *o)
{
    struct action *last = o->n_actions > 0 ? &o->actions[o->n_actions - 1] : NULL;

    return last != NULL && last->kind == ACT_POLL ? last : NULL;
}

/*
 * A poll option (--table, --once, --interval) with no --poll before it:
 * part of an mbpoll-style poll, if nothing else is to be done.
 */
static int mbpoll_option(struct parse *p, const char *name)
{
    if (p->o->n_actions > 0)
        return ex_usage_error("%s must follow --poll ADDR:COUNT (or, without any action, "
                              "describe a poll in mbpoll's way)",
                              as(p, name));
    if (p->mb.first == NULL)
        p->mb.first = as(p, name);
    return 0;
}

static int take_poll_option(struct parse *p, const char *name, const char *val)
{
    struct options *o = p->o;
    struct action *poll = current_poll(o);
    unsigned long v;
    enum mo_table t = MO_HOLDING_REGISTERS;
    int rc;

    if (strcmp(name, "--count") == 0) {
        if (poll == NULL)
            return ex_usage_error("--count must follow --poll ADDR:COUNT (in mbpoll's way: "
                                  "-1 for one read, nothing for until Ctrl-C)");
        if (poll->poll_count_given)
            return ex_usage_error("--count or --once given twice for one --poll");
        if (ex_parse_ulong(val, 0, MAX_POLL_COUNT, &poll->poll_count) != 0)
            return ex_usage_error("--count '%s': expected 0..1000000 (0: until interrupted)", val);
        poll->poll_count_given = 1;
        return 0;
    }
    if (strcmp(name, "--once") == 0) {
        if (poll == NULL) {
            if ((rc = mbpoll_option(p, name)) != 0)
                return rc;
            p->mb.once = 1;
            return 0;
        }
        if (poll->poll_count_given)
            return ex_usage_error("--count or --once given twice for one --poll");
        poll->poll_count = 1;
        poll->poll_count_given = 1;
        return 0;
    }
    if (strcmp(name, "--interval") == 0) {
        if (ex_parse_ulong(val, 0, MAX_INTERVAL_MS, &v) != 0)
            return ex_usage_error("%s '%s': expected 0..3600000 (ms)", as(p, name), val);
        if (poll == NULL) {
            if ((rc = mbpoll_option(p, name)) != 0)
                return rc;
            if (p->mb.interval_given)
                return ex_usage_error("%s given twice", as(p, name));
            p->mb.interval_ms = v;
            p->mb.interval_given = 1;
            return 0;
        }
        if (poll->interval_ms != ULONG_MAX)
            return ex_usage_error("%s given twice for one --poll", as(p, name));
        poll->interval_ms = v;
        return 0;
    }
    /* --table */
    if ((rc = parse_table(o, as(p, name), val, &t)) != 0)
        return rc;
    if (poll == NULL) {
        if ((rc = mbpoll_option(p, name)) != 0)
            return rc;
        if (p->mb.table_given)
            return ex_usage_error("%s given twice", as(p, name));
        p->mb.table = t;
        p->mb.table_given = 1;
        return 0;
    }
    if (poll->table_given)
        return ex_usage_error("%s given twice for one --poll", as(p, name));
    poll->table = t;
    poll->table_given = 1;
    return 0;
}

/* -r, -c, -0: only for a poll in mbpoll's way. */
static int take_mbpoll_only(struct parse *p, const char *name, const char *val)
{
    int is_ref = strcmp(name, "--reference") == 0;
    unsigned long *field = is_ref ? &p->mb.reference : &p->mb.number;
    int *given = is_ref ? &p->mb.reference_given : &p->mb.number_given;
    int rc;

    if (p->o->n_actions > 0)
        return ex_usage_error("%s describes a poll in mbpoll's way, without any action; "
                              "--poll takes its range as ADDR:COUNT",
                              as(p, name));
    if ((rc = mbpoll_option(p, name)) != 0)
        return rc;
    if (strcmp(name, "--zero-based") == 0) {
        p->mb.zero_based = 1;
        return 0;
    }
    if (*given)
        return ex_usage_error("%s given twice", as(p, name));
    if (ex_parse_ulong(val, is_ref ? 0 : 1, is_ref ? 65536 : MAX_READ_BITS, field) != 0)
        return ex_usage_error("%s '%s': expected %s", as(p, name), val,
                              is_ref ? "a reference, 1..65536 (0..65535 with -0)"
                                     : "a number of values, 1..2000 (registers: 1..125)");
    *given = 1;
    return 0;
}

/* Apply one option and its value to o: 0, or the exit status of a usage error. */
static int take_option(struct parse *p, const char *name, const char *val)
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
    struct options *o = p->o;
    const char **slot = NULL;
    struct action *poll = current_poll(o);
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
            return ex_usage_error("%s given twice", as(p, name));
        /* libmodbus refuses 248..254 on TCP (modbus_set_slave): say so now. */
        if (ex_parse_ulong(val, 0, 255, &o->unit) != 0 || (o->unit > 247 && o->unit < 255))
            return ex_usage_error("%s '%s': expected 0..247 or 255", as(p, name), val);
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
    if (strcmp(name, "--format") == 0)
        return take_format(o, as(p, name), val);
    if (strcmp(name, "--word-order") == 0) {
        enum mv_word_order w;

        if (strcmp(val, "big") == 0 || strcmp(val, "high-first") == 0)
            w = MV_HIGH_WORD_FIRST;
        else if (strcmp(val, "little") == 0 || strcmp(val, "low-first") == 0)
            w = MV_LOW_WORD_FIRST;
        else
            return ex_usage_error("--word-order '%s': expected big (high word first, -B) or "
                                  "little (low word first, the default)",
                                  val);
        if (o->word_order_given && w != o->out.word_order)
            return ex_usage_error("--word-order and -B disagree");
        o->out.word_order = w;
        o->word_order_given = 1;
        return 0;
    }
    if (strcmp(name, "--count") == 0 || strcmp(name, "--interval") == 0 ||
        strcmp(name, "--once") == 0 || strcmp(name, "--table") == 0)
        return take_poll_option(p, name, val);
    if (strcmp(name, "--reference") == 0 || strcmp(name, "--number") == 0 ||
        strcmp(name, "--zero-based") == 0)
        return take_mbpoll_only(p, name, val);

    for (i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        struct action *a;

        if (strcmp(name, actions[i].name) != 0)
            continue;
        if (poll != NULL && !poll->poll_count_given)
            return ex_usage_error("--poll %s needs --count N or --once", poll->arg);
        if (p->mb.first != NULL)
            return ex_usage_error("%s describes a poll in mbpoll's way, with no other "
                                  "action; to combine, give --poll ADDR:COUNT and the poll "
                                  "options after it",
                                  p->mb.first);
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
        case ACT_READ_DISCRETE:
        case ACT_POLL: /* its table, and so its limit, may still come: checked at the end */
            return parse_range(name, val, MAX_READ_BITS, a);
        case ACT_READ_REGISTERS:
        case ACT_READ_INPUT:
        default: return parse_range(name, val, MAX_READ_REGISTERS, a);
        }
    }
    return ex_usage_error("unknown option '%s' (see --help)", name);
}

/* ---- mbpoll's short options ---------------------------------------------------- */

/* Each letter and what it stands for (NULL value: a flag, with this value). */
static const struct {
    const char *shown; /* "-a": the letter, for messages */
    const char *name;
    const char *flag_value; /* for flags; NULL: the option takes a value */
} shorts[] = {
    {"-a", "--unit", NULL},     {"-r", "--reference", NULL},   {"-c", "--number", NULL},
    {"-t", "--table", NULL},    {"-l", "--interval", NULL},    {"-1", "--once", ""},
    {"-0", "--zero-based", ""}, {"-B", "--word-order", "big"},
};

/* "-1B", "-a 1", "-t4:float": the letters of argv[*i]; 0 or an exit status. */
static int take_short(struct parse *p, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    size_t j, k;
    int rc;

    for (j = 1; a[j] != '\0'; j++) {
        const char *val;

        if (a[j] == 'v') {
            p->o->verbose = 1;
            continue;
        }
        for (k = 0; k < sizeof shorts / sizeof shorts[0] && shorts[k].shown[1] != a[j]; k++)
            ;
        if (k == sizeof shorts / sizeof shorts[0])
            return ex_usage_error("unknown option '-%c' in '%.200s' (see --help)", a[j], a);
        p->shown = shorts[k].shown;
        if (shorts[k].flag_value != NULL) {
            rc = take_option(p, shorts[k].name, shorts[k].flag_value);
            p->shown = NULL;
            if (rc != 0)
                return rc;
            continue;
        }
        /* The rest of the argument is the value, or the next argument is. */
        if (a[j + 1] != '\0') {
            val = a + j + 1;
        } else {
            val = ex_option_value(argc, argv, i, NULL, shorts[k].shown);
            if (val == NULL)
                return EX_USAGE;
        }
        rc = take_option(p, shorts[k].name, val);
        p->shown = NULL;
        return rc;
    }
    return 0;
}

/* ---- The whole command line ----------------------------------------------------- */

/*
 * -r 40001 reads address 40000: right for a device with that many
 * registers, but more often a manual's 4xxxx reference typed as it is.
 */
static void warn_table_digit(const struct mbpoll_style *mb, enum mo_table t)
{
    unsigned long r = mb->reference, base5 = (unsigned long)t * 10000ul,
                  base6 = (unsigned long)t * 100000ul;

    if (t == MO_COILS || mb->zero_based)
        return;
    if ((r > base5 && r <= base5 + 9999ul) || (r > base6 && r <= base6 + 65536ul))
        ex_msg("warning: -r %lu reads %s address %lu; if %lu is a device manual's reference "
               "number, give -r %lu",
               r, mo_table_name(t), r - 1, r, r > base6 ? r - base6 : r - base5);
}

/* The poll that mbpoll's options describe, as the one action. */
static int make_mbpoll_poll(struct parse *p)
{
    struct mbpoll_style *mb = &p->mb;
    struct options *o = p->o;
    enum mo_table t = mb->table_given ? mb->table : MO_HOLDING_REGISTERS;
    unsigned per = is_register_table(t) ? mv_registers_per_value(o->out.values) : 1u;
    unsigned long number = mb->number_given ? mb->number : 1ul;
    unsigned long max = is_register_table(t) ? MAX_READ_REGISTERS / per : MAX_READ_BITS;
    unsigned long ref = mb->reference_given ? mb->reference : mb->zero_based ? 0ul : 1ul;
    unsigned long addr;
    struct action *a;

    if (!mb->zero_based && ref == 0)
        return ex_usage_error("-r 0: references count from 1 as in mbpoll (-r 1 is address "
                              "0); give -0 to count from 0");
    addr = mb->zero_based ? ref : ref - 1;
    if (number > max)
        return ex_usage_error("-c %lu: at most %lu %s%s per read", number, max,
                              is_register_table(t) ? "values of " : "", mo_table_name(t));
    if (addr + number * per > 65536ul)
        return ex_usage_error("-r %lu -c %lu: addresses %lu..%lu go past 65535", ref, number, addr,
                              addr + number * per - 1);
    a = new_action(o, ACT_POLL, "--poll", NULL);
    if (a == NULL) {
        ex_msg("out of memory");
        return EX_FAILURE;
    }
    a->addr = (unsigned)addr;
    a->count = (unsigned)(number * per);
    a->table = t;
    a->table_given = 1;
    a->poll_count = mb->once ? 1 : 0;
    a->poll_count_given = 1;
    a->interval_ms = mb->interval_given ? mb->interval_ms : mb->once ? 0 : MBPOLL_INTERVAL_MS;
    /* The one action: nothing moves it any more. */
    snprintf(a->arg_text, sizeof a->arg_text, "%u:%u", a->addr, a->count);
    a->arg = a->arg_text;
    warn_table_digit(mb, t);
    return 0;
}

/* What every action needs once the whole line is known; 0 or the exit status. */
static int check_actions(struct options *o)
{
    unsigned per = mv_registers_per_value(o->out.values);
    size_t i;

    for (i = 0; i < o->n_actions; i++) {
        struct action *a = &o->actions[i];
        int reads_registers = (a->kind == ACT_READ_REGISTERS || a->kind == ACT_READ_INPUT ||
                               (a->kind == ACT_POLL && is_register_table(a->table)));
        unsigned values;

        if (a->kind == ACT_POLL && a->interval_ms == ULONG_MAX)
            a->interval_ms = 0;
        if (a->kind == ACT_POLL && is_register_table(a->table) && a->count > MAX_READ_REGISTERS)
            return ex_usage_error("%s %s: count must be 1..%u for %s", a->option, a->arg,
                                  MAX_READ_REGISTERS, mo_table_name(a->table));
        if (reads_registers && a->count % per != 0)
            return ex_usage_error("%s %s: %s values take two registers each: give an even "
                                  "count",
                                  a->option, a->arg, mv_format_name(o->out.values));
        values = reads_registers ? a->count / per : a->count;
        /* CSV: as many value columns as the widest result. */
        if (values > o->out.csv_values)
            o->out.csv_values = values;
    }
    return 0;
}

int master_parse_args(int argc, char **argv, struct options *o)
{
    struct parse p;
    int i, rc;

    memset(o, 0, sizeof *o);
    memset(&p, 0, sizeof p);
    p.o = o;
    o->unit = MODBUS_TCP_SLAVE; /* 255: see --unit in usage() */
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
        if (strcmp(a, "--verbose") == 0) {
            o->verbose = 1;
            continue;
        }
        if (strcmp(a, "--json") == 0 || strcmp(a, "--csv") == 0) {
            if (o->out.format != MO_TEXT)
                return ex_usage_error("--json and --csv are exclusive and given once");
            o->out.format = a[2] == 'j' ? MO_JSON : MO_CSV;
            continue;
        }
        if (strcmp(a, "--once") == 0 || strcmp(a, "--zero-based") == 0) {
            if ((rc = take_option(&p, a, "")) != 0)
                return rc;
            continue;
        }
        if (a[0] == '-' && a[1] != '-' && a[1] != '\0') {
            if ((rc = take_short(&p, argc, argv, &i)) != 0)
                return rc;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
            return ex_usage_error("unexpected argument '%.200s'", a);
        /* Every other option takes a value: --name VALUE or --name=VALUE. */
        eq = strchr(a, '=');
        len = eq != NULL ? (size_t)(eq - a) : strlen(a);
        if (len >= sizeof name)
            return ex_usage_error("unknown option '%.200s' (see --help)", a);
        memcpy(name, a, len);
        name[len] = '\0';
        val = ex_option_value(argc, argv, &i, eq, name);
        if (val == NULL)
            return EX_USAGE;
        if ((rc = take_option(&p, name, val)) != 0)
            return rc;
    }
    if (o->n_actions > 0) {
        struct action *last = &o->actions[o->n_actions - 1];

        if (last->kind == ACT_POLL && !last->poll_count_given)
            return ex_usage_error("--poll %s needs --count N or --once", last->arg);
    }
    if (p.mb.first != NULL && (rc = make_mbpoll_poll(&p)) != 0)
        return rc;
    if ((rc = check_actions(o)) != 0)
        return rc;
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
        return ex_usage_error("no action given (--read-registers, --poll, or mbpoll's -r, "
                              "-c, -t; see --help)");
    return -1;
}
