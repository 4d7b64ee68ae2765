/* SPDX-License-Identifier: ISC */
/*
 * main.c - mbsc-bench: read the command line, run the measurement groups in
 * order and write the results as one CSV (csv.h; bench/report.py makes the
 * tables).  docs/bench.md says what each figure means.
 *
 * The command line is parsed by hand rather than with getopt_long: every
 * mistake must come out as exactly one line "mbsc-bench: <reason>" with
 * exit status 2, which getopt's own messages do not give.
 */
#include <errno.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mbsc/version.h"

#include "bench.h"
#include "csv.h"

/*
 * Default: about 2 minutes on a 2-core x86 server, a bit more on a
 * Raspberry Pi 4 (slower ciphers make the fixed-duration samples no longer,
 * but handshakes and round trips take longer).  Quick: the same rows in a
 * few seconds, for CI and for trying the options; its p99 rests on few
 * samples.
 */
static const struct bench_plan default_plan = {"default", 500000000, 301, 2000000, 301, 1000000,
                                               200,       250,       500, 100,     100};
static const struct bench_plan quick_plan = {"quick", 200000000, 31, 500000, 51, 200000,
                                             20,      100,       50, 20,     50};

static const char usage[] =
    "Usage: mbsc-bench [--quick] [--csv FILE] [--cpu-mhz N] [--only CIPHER,...]\n"
    "                  [--help] [--version]\n"
    "\n"
    "Measure mbsc's ciphers and secure channel on this machine (docs/bench.md says\n"
    "what and how) into one long CSV (cipher,metric,size_bytes,value,unit), from\n"
    "which bench/report.py makes the tables and the picture.  Progress goes to\n"
    "stderr.  A default run takes about 2 minutes.\n"
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
    "  --version          print mbsc-bench's version and exit\n";

struct options {
    int quick;
    const char *csv;                 /* NULL: stdout */
    double cpu_mhz;                  /* 0: not given */
    int only[MBSC_CIPHER_COUNT + 1]; /* by wire id; [0] 0: every cipher (no --only) */
};

/* Print "mbsc-bench: <reason>" and return the exit status for it. */
static __attribute__((format(printf, 1, 2))) int bad(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", BENCH_PROG);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

static int parse_only(const char *list, int only[MBSC_CIPHER_COUNT + 1])
{
    char buf[256], *save = NULL;

    if (strlen(list) >= sizeof buf)
        return bad("--only: list too long: '%s'", list);
    if (list[0] == ',' || list[strlen(list) - 1] == ',' || strstr(list, ",,") != NULL)
        return bad("--only needs a comma-separated list of ciphers, not '%s'", list);
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        const mbsc_cipher *c = mbsc_cipher_by_name(tok);
        if (c == NULL)
            return bad("--only: unknown cipher '%s' (chacha20, trivium, rabbit, enocoro128v2)",
                       tok);
        if (only[mbsc_cipher_id(c)]++)
            return bad("--only: cipher '%s' given twice", tok);
    }
    only[0] = 1;
    return 0;
}

/* 0 to run, 1 after --help or --version (exit 0), 2 after a one-line reason. */
static int parse_options(int argc, char **argv, struct options *o)
{
    static const char *const with_value[] = {"--csv", "--cpu-mhz", "--only"};

    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL, *opt = NULL;
        char *end;
        size_t k, len = 0;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return fputs(usage, stdout), 1;
        if (strcmp(arg, "--version") == 0)
            return printf("mbsc-bench (mbsc) %s\n", mbsc_version()), 1;
        if (strcmp(arg, "--quick") == 0) {
            o->quick = 1;
            continue;
        }
        for (k = 0; k < 3 && opt == NULL; k++) {
            len = strlen(with_value[k]);
            if (strncmp(arg, with_value[k], len) == 0 && (arg[len] == '\0' || arg[len] == '='))
                opt = with_value[k];
        }
        if (opt == NULL)
            return bad(arg[0] == '-' ? "unknown option '%s' (see --help)"
                                     : "unexpected argument '%s' (see --help)",
                       arg);
        if (arg[len] == '=')
            val = arg + len + 1;
        else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
            val = argv[++i]; /* "--csv --quick" is a forgotten value, not a file */
        if (val == NULL)
            return bad("%s needs a value (see --help)", opt);
        if (val[0] == '\0')
            return bad("%s needs a non-empty value", opt);
        if (k == 1)
            o->csv = val;
        else if (k == 3 && parse_only(val, o->only) != 0)
            return 2;
        else if (k == 2 &&
                 ((o->cpu_mhz = strtod(val, &end)),
                  end == val || *end != '\0' || !(o->cpu_mhz >= 1.0 && o->cpu_mhz <= 100000.0)))
            return bad("--cpu-mhz needs a frequency in MHz between 1 and 100000, not '%s'", val);
    }
    return 0;
}

/* Run one group, telling the user what is going on and how long it took. */
static void run_group(struct bench_ctx *ctx, const char *what, void (*group)(struct bench_ctx *))
{
    uint64_t t0 = bench_now_ns();

    fprintf(stderr, "%s: %s ...", BENCH_PROG, what);
    group(ctx);
    fprintf(stderr, " %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
}

int main(int argc, char **argv)
{
    static struct bench_ctx ctx;
    struct options opt;
    FILE *csv = stdout;
    uint64_t start;
    int rc = parse_options(argc, argv, &opt);

    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (sodium_init() < 0)
        bench_fail("sodium_init failed");
    /* A peer closing a socket must not kill the run (the adapter already
     * avoids SIGPIPE; libmodbus's plain server path is ours to protect). */
    signal(SIGPIPE, SIG_IGN);
    /* Opened before measuring: a mistyped path fails at once, not after two minutes. */
    if (opt.csv != NULL && (csv = fopen(opt.csv, "w")) == NULL) {
        fprintf(stderr, "%s: cannot write CSV file %s: %s\n", BENCH_PROG, opt.csv, strerror(errno));
        return 2;
    }
    ctx.plan = opt.quick ? quick_plan : default_plan;
    for (unsigned id = 1; id <= MBSC_CIPHER_COUNT; id++)
        if (!opt.only[0] || opt.only[id])
            ctx.ciphers[ctx.n_ciphers++] = mbsc_cipher_by_id(id);
    ctx.baselines = !opt.only[0] || opt.only[MBSC_CIPHER_CHACHA20];

    bench_clock_init();
    start = bench_now_ns();
    bench_pin(ctx.pin_desc, sizeof ctx.pin_desc);
    bench_spin_ns(ctx.plan.warmup_ns);
    bench_cycles_init(&ctx.cycles, opt.cpu_mhz);
    ctx.timer_overhead_ns = bench_clock_overhead_ns();

    fprintf(stderr, "%s: %s run; cycles: %s\n", BENCH_PROG, ctx.plan.name,
            bench_cycles_short(&ctx.cycles));
    bench_footprint(&ctx);
    run_group(&ctx, "key and IV setup", bench_setup);
    run_group(&ctx, "keystream throughput, 16 B to 1 MiB", bench_stream);
    run_group(&ctx, "per-frame seal and open", bench_frame);
    run_group(&ctx, "every cipher implementation side by side", bench_impls);
    run_group(&ctx, "Noise handshakes", bench_handshake);
    run_group(&ctx, "Modbus round trips over loopback", bench_rtt);

    fputs(BENCH_CSV_HEADER "\n", csv);
    bench_describe(&ctx, csv);
    for (size_t i = 0; i < ctx.n_rows; i++) {
        const struct bench_row *row = &ctx.rows[i];

        bench_csv_num(csv, row->cipher, row->metric, row->size_bytes, row->value, row->unit);
    }
    if (csv == stdout ? fflush(csv) != 0 || ferror(csv) : (ferror(csv) || fclose(csv) != 0))
        bench_fail("error writing %s", opt.csv != NULL ? opt.csv : "the CSV");
    fprintf(stderr, "%s: done in %.1f s\n", BENCH_PROG, (double)(bench_now_ns() - start) / 1e9);
    free(ctx.rows);
    return 0;
}
