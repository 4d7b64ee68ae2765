/* SPDX-License-Identifier: ISC */
/*
 * plot_script.c - the plot's data tables and gnuplot script (see
 * plot_script.h).  Only writes files: running gnuplot is plot.c's job.
 *
 * Three panels: the Modbus round trip on top, across the page, because it
 * is what a Modbus user asks first ("what does mbsc cost my requests?");
 * below it keystream throughput and per-frame latency.  Every axis range
 * is computed from the figures being drawn, every y axis says which way is
 * better, every line or bar names the implementation that produced it,
 * and a --quick run says so in the title.
 */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "gateway_csv.h"
#include "plot_script.h"

const char *const bench_plot_files[BENCH_N_PLOT_FILES] = {"throughput.dat", "latency.dat",
                                                          "rtt.dat", "plot.gp"};

/* Write s as a gnuplot single-quoted string: only ' needs escaping ('') */
static void gp_string(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* Write s as a gnuplot double-quoted string, where a newline can be said
 * (\n) but \ and " need escaping. */
static void gp_dstring(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '\n') {
            fputs("\\n", f);
            continue;
        }
        if (*s == '\\' || *s == '"')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Write s as a double-quoted field of a data table: no quote, no blank
 * that gnuplot would split on is ever in our names, but be safe. */
static void dat_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        fputc(*s == '"' || *s == '\n' ? '\'' : *s, f);
    fputc('"', f);
}

/* A fixed colour per cipher, so that runs on different boards compare at a
 * glance; libsodium's ChaCha20 is dashed in ChaCha20's colour, its AEAD
 * dashed in black. */
static const char *line_style(const char *name)
{
    static const struct {
        const char *name, *style;
    } styles[] = {
        {"chacha20", "lw 2 pt 5 lc rgb '#7b3294'"},
        {"trivium", "lw 2 pt 7 lc rgb '#1a9641'"},
        {"rabbit", "lw 2 pt 9 lc rgb '#2c7bb6'"},
        {"enocoro128v2", "lw 2 pt 11 lc rgb '#d7191c'"},
        {BENCH_SODIUM_STREAM, "lw 2 pt 4 dt 2 lc rgb '#7b3294'"},
        {BENCH_SODIUM_AEAD, "lw 2 pt 6 dt 2 lc rgb '#222222'"},
    };

    for (size_t i = 0; i < sizeof styles / sizeof styles[0]; i++)
        if (strcmp(styles[i].name, name) == 0)
            return styles[i].style;
    return "lw 2";
}

/* The implementation behind a row, for its title: the library's choice for
 * mbsc's ciphers, "libsodium <version>" for the baselines. */
static void impl_name(const char *name, char *out, size_t len)
{
    const mbsc_cipher *c = mbsc_cipher_by_name(name);
    const char *impl = c != NULL ? mbsc_cipher_impl_selected(c) : NULL;

    if (c != NULL)
        snprintf(out, len, "%s", impl != NULL ? impl : "?");
    else
        snprintf(out, len, "libsodium-%s", sodium_version_string());
}

/* The smallest and largest value drawn on one axis. */
struct span {
    double lo, hi;
};

static void span_add(struct span *s, double v)
{
    if (!(v > 0))
        return; /* a log axis shows no zero; a missing figure is no figure */
    if (s->lo == 0 || v < s->lo)
        s->lo = v;
    if (v > s->hi)
        s->hi = v;
}

/*
 * A log axis that holds the span: from a round value (1, 2 or 5 times a
 * power of ten) at least a third below its smallest value, so that the
 * shortest bar still shows, to its largest value times headroom, the room
 * a key inside the frame needs above the data.  An axis with no data gets
 * one decade, so that the script stays valid.
 */
static void put_log_yrange(FILE *f, const struct span *s, double headroom)
{
    double target = s->lo / 1.5, lo = 1;

    if (s->hi <= 0) {
        fputs("set yrange [1:10]\n", f);
        return;
    }
    while (lo > target)
        lo /= 10;
    while (lo * 10 <= target)
        lo *= 10;
    lo *= 5 * lo <= target ? 5 : 2 * lo <= target ? 2 : 1;
    fprintf(f, "set yrange [%.6g:%.6g]\n", lo, s->hi * headroom);
}

static void put_value(FILE *f, const struct bench_results *r, const char *name, const char *metric,
                      size_t size, struct span *s)
{
    double v;

    if (bench_results_get(r, name, metric, size, &v)) {
        fprintf(f, " %.6g", v);
        span_add(s, v);
    } else {
        fputs(" ?", f); /* gnuplot: missing */
    }
}

static FILE *open_in(const char *dir, const char *name)
{
    char path[512];

    snprintf(path, sizeof path, "%s/%s", dir, name);
    return fopen(path, "w");
}

static int write_throughput(const struct bench_ctx *ctx, const char *dir, struct span *s)
{
    const char *names[BENCH_MAX_STREAM_ROWS];
    size_t n = bench_stream_rows(ctx, names);
    FILE *f = open_in(dir, "throughput.dat");

    if (f == NULL)
        return -1;
    for (size_t z = 0; z < BENCH_N_STREAM_SIZES; z++) {
        fprintf(f, "%zu", bench_stream_sizes[z]);
        for (size_t i = 0; i < n; i++)
            put_value(f, &ctx->results, names[i], "throughput", bench_stream_sizes[z], s);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* One line per cipher: name, implementation, then (p50, p99) for seal 12,
 * open 12, seal 260, open 260. */
static int write_latency(const struct bench_ctx *ctx, const char *dir, struct span *s)
{
    static const char *const ops[] = {"seal_ns_p50", "seal_ns_p99", "open_ns_p50", "open_ns_p99"};
    size_t n = ctx->n_ciphers + (ctx->baselines ? 1 : 0);
    FILE *f = open_in(dir, "latency.dat");

    if (f == NULL)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *name =
            i < ctx->n_ciphers ? mbsc_cipher_name(ctx->ciphers[i]) : "libsodium-AEAD";
        const char *key = i < ctx->n_ciphers ? name : BENCH_SODIUM_AEAD;
        char impl[64];

        impl_name(key, impl, sizeof impl);
        /* The baseline's label says libsodium already: its version will do. */
        fprintf(f, "%s %s", name, strncmp(impl, "libsodium-", 10) == 0 ? impl + 10 : impl);
        for (size_t z = 0; z < BENCH_N_FRAME_SIZES; z++)
            for (size_t o = 0; o < 4; o++)
                put_value(f, &ctx->results, key, ops[o], bench_frame_sizes[z], s);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* The bars' colours: what carries the request. */
#define RGB_PLAIN   0x969696u /* plaintext Modbus/TCP, no protection */
#define RGB_SYNC    0x3182bdu /* the library, on the path it picks (synchronous) */
#define RGB_PUMP    0x9ecae1u /* the library, pump thread */
#define RGB_GATEWAY 0xe6550du /* through mbsc-gateway */

/*
 * One bar of the round-trip panel, if the figures are there:
 *     x "name" "detail" p50 p99 rgb "note"
 * the note being what the bar adds to base's median ("baseline" when base
 * is NULL).  Returns 1 if a bar was written.
 */
static int put_bar(FILE *f, const struct bench_results *r, const char *key, int x, const char *name,
                   const char *detail, unsigned rgb, const double *base, struct span *s)
{
    double p50, p99;
    char note[32];

    if (!bench_results_get(r, key, "rtt_us_p50", BENCH_NO_SIZE, &p50))
        return 0;
    if (!bench_results_get(r, key, "rtt_us_p99", BENCH_NO_SIZE, &p99))
        p99 = p50;
    if (base != NULL)
        snprintf(note, sizeof note, "%+.1f us", p50 - *base);
    else
        snprintf(note, sizeof note, "baseline");
    fprintf(f, "%d ", x);
    dat_string(f, name);
    fputc(' ', f);
    dat_string(f, detail);
    fprintf(f, " %.6g %.6g %u ", p50, p99, rgb);
    dat_string(f, note);
    fputc('\n', f);
    span_add(s, p50);
    span_add(s, p99);
    return 1;
}

/* What the round-trip panel has to draw. */
struct rtt_bars {
    int x;        /* one past the last bar's position */
    int mbsc;     /* bars of the library's transports */
    int gateways; /* whether the gateway bench's bars are there */
};

static int write_rtt(const struct bench_ctx *ctx, const char *dir, struct span *s,
                     struct rtt_bars *b)
{
    const struct bench_results *r = &ctx->results, *g = &ctx->gateway;
    double plain, direct;
    int x = 0;
    FILE *f = open_in(dir, "rtt.dat");

    if (f == NULL)
        return -1;
    memset(b, 0, sizeof *b);
    if (bench_results_get(r, BENCH_PLAINTEXT, "rtt_us_p50", BENCH_NO_SIZE, &plain)) {
        x += put_bar(f, r, BENCH_PLAINTEXT, x, "plaintext", "libmodbus", RGB_PLAIN, NULL, s);
        /* Each cipher on the path the library picked, then on the pump. */
        for (int pump = 0; pump < 2; pump++)
            for (size_t i = 0; i < ctx->n_ciphers; i++) {
                const char *name = mbsc_cipher_name(ctx->ciphers[i]);
                char key[48], detail[64], impl[32];

                impl_name(name, impl, sizeof impl);
                snprintf(key, sizeof key, "%s%s", name, pump ? "-pump" : "");
                snprintf(detail, sizeof detail, "%s, %s",
                         pump               ? "pump"
                         : ctx->rtt_path[0] ? ctx->rtt_path
                                            : "default path",
                         impl);
                if (put_bar(f, r, key, x, name, detail, pump ? RGB_PUMP : RGB_SYNC, &plain, s)) {
                    x++;
                    b->mbsc++;
                }
            }
    }
    /* The gateway bench's own baseline beside its paths: they were measured
     * against it, in another run. */
    if (bench_results_get(g, BENCH_GW_DIRECT, "rtt_us_p50", BENCH_NO_SIZE, &direct)) {
        x += x > 0; /* a gap between the two runs */
        x += put_bar(f, g, BENCH_GW_DIRECT, x, "direct", "gateway bench", RGB_PLAIN, NULL, s);
        x += put_bar(f, g, BENCH_GW_ONE, x, "1 gateway", "mbsc master", RGB_GATEWAY, &direct, s);
        x += put_bar(f, g, BENCH_GW_TWO, x, "2 gateways", "plain master", RGB_GATEWAY, &direct, s);
        b->gateways = 1;
    }
    b->x = x;
    return fclose(f) == 0 ? 0 : -1;
}

static void put_rtt_panel(FILE *f, const struct bench_ctx *ctx, const struct span *s,
                          const struct rtt_bars *b)
{
    fputs("set title 'Modbus request round trip: read 10 holding registers over loopback "
          "(median bar, line up to p99; above: added to the baseline)'\n"
          "set xlabel ''\n"
          "set ylabel 'microseconds per request (lower is better)'\n"
          "set logscale y\n"
          "set grid noxtics ytics mytics\n"
          "set style fill solid 0.85 border -1\n"
          "set boxwidth 0.7\n"
          "set xtics scale 0 font ',11'\n"
          "set bmargin 5\n"
          /* "pump, avx512" as two lines under the bar */
          "two(s) = strstrt(s, ', ') > 0 ? s[1:strstrt(s, ', ') - 1].\"\\n\".s[strstrt(s, ', ') + "
          "2:] "
          ": s\n",
          f);
    put_log_yrange(f, s, 4);
    fprintf(f, "set xrange [-0.7:%g]\n", b->x > 0 ? b->x - 0.3 : 1.0);
    if (b->gateways) {
        fputs("set label 10 ", f);
        gp_string(f, ctx->gateway_note);
    } else {
        fputs("set label 10 'one and two gateways: run make bench-gateway, then make bench'", f);
    }
    fputs(" at graph 0.99, graph 0.84 right front\n", f);
    /* Why the library's bars are missing (mbsc-bench without libmodbus,
     * or the adapter could not run), where they would be. */
    if (b->mbsc == 0) {
        fputs("set label 11 ", f);
        gp_string(f, ctx->rtt_note[0] ? ctx->rtt_note : "round trips not measured");
        fputs(" at graph 0.5, graph 0.5 center front\n", f);
    }
    if (b->x == 0) {
        fputs("plot NaN notitle\n", f);
    } else {
        fputs("set key inside top left horizontal Left reverse maxrows 2 samplen 2 box opaque\n"
              "plot 'rtt.dat' using 1:4:(0.7):6:xtic(strcol(2).\"\\n\".two(strcol(3))) with boxes "
              "lc rgb variable notitle, \\\n"
              "     '' using 1:4:4:5 with yerrorbars lc rgb '#222222' pt 0 lw 1.5 notitle, \\\n"
              "     '' using 1:5:7 with labels offset 0,0.8 notitle, \\\n",
              f);
        fprintf(f,
                "     keyentry with boxes lc rgb '#%06x' title 'plaintext Modbus/TCP', \\\n"
                "     keyentry with boxes lc rgb '#%06x' title 'mbsc library, %s', \\\n"
                "     keyentry with boxes lc rgb '#%06x' title 'mbsc library, pump thread'",
                RGB_PLAIN, RGB_SYNC,
                strcmp(ctx->rtt_path, "sync") == 0 ? "synchronous path"
                : ctx->rtt_path[0]                 ? "the path it picked"
                                                   : "default path",
                RGB_PUMP);
        if (b->gateways)
            fprintf(f, ", \\\n     keyentry with boxes lc rgb '#%06x' title 'through mbsc-gateway'",
                    RGB_GATEWAY);
        fputc('\n', f);
    }
    fputs("unset label 10\nunset label 11\nunset key\nset bmargin\nset xtics font ''\n", f);
}

static void put_throughput_panel(FILE *f, const struct bench_ctx *ctx, const struct span *s)
{
    const char *names[BENCH_MAX_STREAM_ROWS];
    size_t n = bench_stream_rows(ctx, names);

    fputs(/* Both axes are log: the sizes span 16 B to 1 MiB and the
           * ciphers an order of magnitude. */
          "set title 'Keystream throughput (median)'\n"
          "set logscale xy\n"
          "set xlabel 'message size (bytes)'\n"
          "set ylabel 'MiB/s (higher is better)'\n"
          "set xtics ('16' 16, '64' 64, '256' 256, '1 K' 1024, '8 K' 8192, '1 M' 1048576)\n",
          f);
    fprintf(f, "set xrange [%g:%g]\n", (double)bench_stream_sizes[0] / 1.4,
            (double)bench_stream_sizes[BENCH_N_STREAM_SIZES - 1] * 1.4);
    fputs("set grid xtics ytics mytics\n", f);
    /* Headroom above the data for the key, inside the frame. */
    put_log_yrange(f, s, 12);
    fputs("set key inside top left horizontal Left reverse maxrows 2 samplen 2 box opaque\n"
          "plot ",
          f);
    for (size_t i = 0; i < n; i++) {
        char title[96], impl[64];

        impl_name(names[i], impl, sizeof impl);
        if (strncmp(impl, "libsodium-", 10) == 0)
            snprintf(title, sizeof title, "%s (libsodium %s)", names[i], impl + 10);
        else
            snprintf(title, sizeof title, "%s (%s)", names[i], impl);
        fprintf(f, "%s'throughput.dat' using 1:%zu with linespoints %s title ",
                i ? ", \\\n     " : "", i + 2, line_style(names[i]));
        gp_string(f, title);
    }
    if (n == 0)
        fputs("NaN notitle", f);
    fputc('\n', f);
}

static void put_latency_panel(FILE *f, int rows, const struct span *s)
{
    /* Median bars, with a line up to p99, per cipher and operation. */
    fputs("unset logscale\n"
          "set title 'Per-frame latency: median, line up to p99'\n"
          "set xlabel ''\n"
          "set ylabel 'ns per frame (lower is better)'\n"
          "set xtics auto\n"
          "set xrange [*:*]\n"
          "set style data histograms\n"
          "set style histogram errorbars gap 1.5 lw 1.5\n"
          "set style fill solid 0.85 border -1\n"
          "set boxwidth 0.9\n"
          /* Log scale: Enocoro's 260-byte frames take ten times the others'. */
          "set logscale y\n",
          f);
    put_log_yrange(f, s, 6);
    fputs("set bmargin 5\n"
          "set grid noxtics ytics mytics\n"
          "set key inside top left horizontal Left reverse maxrows 2 samplen 2 box opaque\n"
          "lab(s) = (s eq 'libsodium-AEAD') ? \"libsodium\\nAEAD\" : s\n",
          f);
    if (rows == 0) {
        fputs("plot NaN notitle\n", f);
        return;
    }
    fputs("plot 'latency.dat' using 3:3:4:xtic(lab(strcol(1)).\"\\n\".strcol(2)) "
          "lc rgb '#9ecae1' title 'seal 12 B', \\\n"
          "     '' using 5:5:6 lc rgb '#3182bd' title 'open 12 B', \\\n"
          "     '' using 7:7:8 lc rgb '#fdae6b' title 'seal 260 B', \\\n"
          "     '' using 9:9:10 lc rgb '#e6550d' title 'open 260 B'\n",
          f);
}

int bench_plot_write(const struct bench_ctx *ctx, const struct bench_machine *m, const char *dir,
                     const char *png)
{
    struct span tp = {0, 0}, lat = {0, 0}, rtt = {0, 0};
    struct rtt_bars bars;
    int quick = strcmp(ctx->plan.name, "quick") == 0;
    char title[400];
    FILE *f;

    if (write_throughput(ctx, dir, &tp) != 0 || write_latency(ctx, dir, &lat) != 0 ||
        write_rtt(ctx, dir, &rtt, &bars) != 0)
        return -1;
    if ((f = open_in(dir, "plot.gp")) == NULL)
        return -1;
    fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
          "    set terminal pngcairo size 1600,1250 font 'sans,12' noenhanced\n"
          "} else {\n"
          "    set terminal png size 1600,1250 noenhanced\n"
          "}\n"
          "set output ",
          f);
    gp_string(f, png);
    fputs("\nset datafile missing '?'\ncd ", f);
    gp_string(f, dir);
    snprintf(title, sizeof title, "mbsc-bench on %s, %s%s", m->cpu, m->compiler,
             quick ? "\nQUICK RUN (--quick): few samples, the p99 lines are rough" : "");
    fputs("\nset multiplot title ", f);
    gp_dstring(f, title);
    fputs(quick ? " textcolor rgb '#cc0000'\n" : "\n", f);
    /* The round trips across the top, the cipher panels side by side below. */
    fputs("set origin 0,0.47\nset size 1,0.47\n", f);
    put_rtt_panel(f, ctx, &rtt, &bars);
    fputs("set origin 0,0\nset size 0.5,0.47\n", f);
    put_throughput_panel(f, ctx, &tp);
    fputs("set origin 0.5,0\nset size 0.5,0.47\n", f);
    put_latency_panel(f, (int)(ctx->n_ciphers + (ctx->baselines ? 1 : 0)), &lat);
    fputs("unset multiplot\n", f);
    return fclose(f) == 0 ? 0 : -1;
}
