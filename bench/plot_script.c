/* SPDX-License-Identifier: ISC */
/*
 * plot_script.c - the plot's data tables and gnuplot script (see
 * plot_script.h).  Only writes files: running gnuplot is plot.c's job.
 */
#include <stdio.h>
#include <string.h>

#include "plot_script.h"

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

static void put_value(FILE *f, const struct bench_ctx *ctx, const char *name, const char *metric,
                      size_t size)
{
    double v;

    if (bench_results_get(&ctx->results, name, metric, size, &v))
        fprintf(f, " %.6g", v);
    else
        fputs(" ?", f); /* gnuplot: missing */
}

static int write_data(const struct bench_ctx *ctx, const char *dir)
{
    const char *names[BENCH_MAX_STREAM_ROWS];
    size_t n = bench_stream_rows(ctx, names), n_lat = ctx->n_ciphers + (ctx->baselines ? 1 : 0);
    static const char *const ops[] = {"seal_ns_p50", "seal_ns_p99", "open_ns_p50", "open_ns_p99"};
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/throughput.dat", dir);
    if ((f = fopen(path, "w")) == NULL)
        return -1;
    for (size_t z = 0; z < BENCH_N_STREAM_SIZES; z++) {
        fprintf(f, "%zu", bench_stream_sizes[z]);
        for (size_t i = 0; i < n; i++)
            put_value(f, ctx, names[i], "throughput", bench_stream_sizes[z]);
        fputc('\n', f);
    }
    if (fclose(f) != 0)
        return -1;

    /* One line per cipher: name, then (p50, p99) for seal 12, open 12,
     * seal 260, open 260. */
    snprintf(path, sizeof path, "%s/latency.dat", dir);
    if ((f = fopen(path, "w")) == NULL)
        return -1;
    for (size_t i = 0; i < n_lat; i++) {
        const char *name =
            i < ctx->n_ciphers ? mbsc_cipher_name(ctx->ciphers[i]) : "libsodium-AEAD";
        const char *key = i < ctx->n_ciphers ? name : BENCH_SODIUM_AEAD;
        fprintf(f, "%s", name);
        for (size_t z = 0; z < BENCH_N_FRAME_SIZES; z++)
            for (size_t o = 0; o < 4; o++)
                put_value(f, ctx, key, ops[o], bench_frame_sizes[z]);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

static int write_script(const struct bench_ctx *ctx, const struct bench_machine *m, const char *dir,
                        const char *png)
{
    const char *names[BENCH_MAX_STREAM_ROWS];
    size_t n = bench_stream_rows(ctx, names);
    char path[512], title[320];
    FILE *f;

    snprintf(path, sizeof path, "%s/plot.gp", dir);
    if ((f = fopen(path, "w")) == NULL)
        return -1;
    fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
          "    set terminal pngcairo size 1600,750 font 'sans,12' noenhanced\n"
          "} else {\n"
          "    set terminal png size 1600,750 noenhanced\n"
          "}\n",
          f);
    fputs("set output ", f);
    gp_string(f, png);
    fprintf(f, "\nset datafile missing '?'\ncd ");
    gp_string(f, dir);
    snprintf(title, sizeof title, "mbsc-bench on %s, %s", m->cpu, m->compiler);
    fputs("\nset multiplot layout 1,2 title ", f);
    gp_string(f, title);
    fputs("\n"
          /* Left: throughput against message size.  Both axes are log: the
           * sizes span 16 B to 1 MiB and the ciphers an order of magnitude. */
          "set title 'Keystream throughput (median)'\n"
          "set logscale xy\n"
          "set xlabel 'message size (bytes)'\n"
          "set ylabel 'MiB/s'\n"
          "set xtics ('16' 16, '64' 64, '256' 256, '1 K' 1024, '8 K' 8192, '1 M' 1048576)\n"
          "set xrange [11:1500000]\n"
          "set grid xtics ytics mytics\n"
          /* Headroom above the data for the key, inside the frame. */
          "set yrange [10:40000]\n"
          "set key inside top left horizontal Left reverse maxrows 2 samplen 2 box opaque\n"
          "plot ",
          f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s'throughput.dat' using 1:%zu with linespoints %s title ",
                i ? ", \\\n     " : "", i + 2, line_style(names[i]));
        gp_string(f, names[i]);
    }
    /* Right: median bars, with a line up to p99, per cipher and operation. */
    fputs("\n"
          "unset logscale\n"
          "set title 'Per-frame latency: median, line up to p99'\n"
          "set xlabel ''\n"
          "set ylabel 'ns per frame'\n"
          "set xtics auto\n"
          "set xrange [*:*]\n"

          "set style data histograms\n"
          "set style histogram errorbars gap 1.5 lw 1.5\n"
          "set style fill solid 0.85 border -1\n"
          "set boxwidth 0.9\n"
          /* Log scale: Enocoro's 260-byte frames take ten times the others'. */
          "set logscale y\n"
          "set yrange [50:30000]\n"
          "set bmargin 4\n"
          "set grid noxtics ytics mytics\n"
          "set key inside top left horizontal Left reverse maxrows 2 samplen 2 box opaque\n"
          "lab(s) = (s eq 'libsodium-AEAD') ? \"libsodium\\nAEAD\" : s\n"
          "plot 'latency.dat' using 2:2:3:xtic(lab(strcol(1))) lc rgb '#9ecae1' title 'seal 12 B', "
          "\\\n"
          "     '' using 4:4:5 lc rgb '#3182bd' title 'open 12 B', \\\n"
          "     '' using 6:6:7 lc rgb '#fdae6b' title 'seal 260 B', \\\n"
          "     '' using 8:8:9 lc rgb '#e6550d' title 'open 260 B'\n"
          "unset multiplot\n",
          f);
    return fclose(f) == 0 ? 0 : -1;
}

int bench_plot_write(const struct bench_ctx *ctx, const struct bench_machine *m, const char *dir,
                     const char *png)
{
    return write_data(ctx, dir) == 0 && write_script(ctx, m, dir, png) == 0 ? 0 : -1;
}
