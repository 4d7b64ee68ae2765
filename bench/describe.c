/* SPDX-License-Identifier: ISC */
/*
 * describe.c - what a run's figures need beside them to mean anything
 * (bench.h): which machine, compiler and libraries, how time and cycles
 * were measured, how many rounds, and which implementation of each cipher
 * the library picked.  Figures from different boards are only comparable
 * with these beside them.
 *
 * x86 names its CPU in /proc/cpuinfo's "model name".  ARM kernels print
 * only numeric ids ("CPU implementer", "CPU part"), a 32-bit kernel a
 * generic "ARMv7 Processor", so known part numbers are named here, and the
 * board comes from the device tree ("Raspberry Pi 4 Model B Rev 1.4").
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "config.h"
#include "bench.h"
#include "build_info.h"
#include "code_sizes.h"

#ifdef MBSC_HAVE_LIBMODBUS
#include <modbus.h>
#else
#define LIBMODBUS_VERSION_STRING "not used (built without libmodbus)"
#endif

/* ARM Ltd (implementer 0x41) cores found on single-board computers. */
static const struct {
    unsigned part;
    const char *name;
} arm_parts[] = {
    {0xc07, "Cortex-A7"},   {0xc08, "Cortex-A8"},   {0xc09, "Cortex-A9"},   {0xc0f, "Cortex-A15"},
    {0xd03, "Cortex-A53"},  {0xd04, "Cortex-A35"},  {0xd05, "Cortex-A55"},  {0xd07, "Cortex-A57"},
    {0xd08, "Cortex-A72"},  {0xd09, "Cortex-A73"},  {0xd0a, "Cortex-A75"},  {0xd0b, "Cortex-A76"},
    {0xd0c, "Neoverse-N1"}, {0xd0d, "Cortex-A77"},  {0xd40, "Neoverse-V1"}, {0xd41, "Cortex-A78"},
    {0xd46, "Cortex-A510"}, {0xd47, "Cortex-A710"}, {0xd49, "Neoverse-N2"}, {0xd4b, "Cortex-A78C"},
};

/* Copy the value of the first "key : value" line of cpuinfo into out. */
static int cpuinfo_field(const char *key, char *out, size_t len)
{
    char line[512];
    size_t klen = strlen(key);
    FILE *f = fopen("/proc/cpuinfo", "r");
    int found = 0;

    while (f != NULL && !found && fgets(line, sizeof line, f) != NULL) {
        char *colon = strchr(line, ':'), *v;
        /* The key is padded with tabs or spaces up to the colon. */
        if (colon == NULL || strncmp(line, key, klen) != 0 ||
            strspn(line + klen, " \t") != (size_t)(colon - line - (long)klen))
            continue;
        v = colon + 1 + strspn(colon + 1, " \t");
        v[strcspn(v, "\n")] = '\0';
        for (char *end = v + strlen(v); end > v && (end[-1] == ' ' || end[-1] == '\t');)
            *--end = '\0';
        snprintf(out, len, "%s", v);
        found = out[0] != '\0';
    }
    if (f != NULL)
        fclose(f);
    return found;
}

/* The device tree's board name, when there is one. */
static int dt_model(char *out, size_t len)
{
    FILE *f = fopen("/proc/device-tree/model", "r");
    size_t n;

    if (f == NULL && (f = fopen("/sys/firmware/devicetree/base/model", "r")) == NULL)
        return 0;
    n = fread(out, 1, len - 1, f);
    fclose(f);
    out[n] = '\0'; /* the file ends with its own NUL; this covers a cut one */
    return out[0] != '\0';
}

/* "CPU (board)", "CPU", "board" or "unknown CPU". */
static void probe_cpu(char *out, size_t len)
{
    char model[192] = "", part[32] = "", impl[32] = "", board[128] = "", core[64] = "";
    const char *cpu = model;

    cpuinfo_field("model name", model, sizeof model);
    if (cpuinfo_field("CPU part", part, sizeof part)) {
        unsigned long p = strtoul(part, NULL, 0), imp = 0;
        if (cpuinfo_field("CPU implementer", impl, sizeof impl))
            imp = strtoul(impl, NULL, 0);
        snprintf(core, sizeof core, "ARM CPU part %s", part);
        for (size_t i = 0; imp == 0x41 && i < sizeof arm_parts / sizeof arm_parts[0]; i++)
            if (arm_parts[i].part == p)
                snprintf(core, sizeof core, "ARM %s", arm_parts[i].name);
        cpu = core;
    }
    /* Board: the device tree, or the "Model"/"Hardware" lines of cpuinfo. */
    if (!dt_model(board, sizeof board) && !cpuinfo_field("Model", board, sizeof board))
        cpuinfo_field("Hardware", board, sizeof board);
    if (cpu[0] == '\0')
        snprintf(out, len, "%s", board[0] != '\0' ? board : "unknown CPU");
    else
        snprintf(out, len, board[0] != '\0' ? "%s (%s)" : "%s", cpu, board);
}

void bench_describe(const struct bench_ctx *ctx, FILE *f)
{
    const struct bench_plan *p = &ctx->plan;
    char line[256];
    struct utsname u;

    bench_csv_text(f, "run", "program", "mbsc-bench " PACKAGE_VERSION);
    bench_csv_text(f, "run", "plan", p->name);
    snprintf(line, sizeof line,
             "throughput %u, setup %u, frames %u x %u, handshakes %u, round trips %u x %u",
             p->stream_rounds, p->setup_rounds, p->frame_rounds, p->frame_per_round,
             p->handshake_rounds, p->rtt_rounds, p->rtt_per_round);
    bench_csv_text(f, "run", "rounds", line);
    probe_cpu(line, sizeof line);
    bench_csv_text(f, "machine", "cpu", line);
    bench_csv_num(f, "machine", "cores", 0, (double)sysconf(_SC_NPROCESSORS_ONLN), "cores");
    line[0] = '\0';
    if (uname(&u) == 0)
        snprintf(line, sizeof line, "%s %s %s", u.sysname, u.release, u.machine);
    bench_csv_text(f, "machine", "system", line);
    bench_csv_text(f, "machine", "compiler", BENCH_BUILD_CC);
    bench_csv_text(f, "machine", "cflags", BENCH_BUILD_CFLAGS[0] ? BENCH_BUILD_CFLAGS : "(none)");
    bench_csv_text(f, "machine", "host", BENCH_BUILD_HOST);
    bench_csv_text(f, "machine", "libsodium", sodium_version_string());
    bench_csv_text(f, "machine", "libmodbus", LIBMODBUS_VERSION_STRING);
    bench_csv_text(f, "machine", "clock", bench_clock_name);
    bench_csv_num(f, "machine", "clock_read_ns", 0, ctx->timer_overhead_ns, "ns");
    bench_csv_text(f, "machine", "cycles", ctx->cycles.desc);
    bench_csv_text(f, "machine", "cycles_short", bench_cycles_short(&ctx->cycles));
    bench_csv_text(f, "machine", "pinning", ctx->pin_desc);
    bench_csv_text(f, "machine", "code_size_tool", BENCH_CODE_SIZE_WHAT);
    bench_csv_text(f, "rtt", "note", ctx->rtt_note);
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        const char *impl = mbsc_cipher_impl_selected(ctx->ciphers[i]);

        bench_csv_text(f, mbsc_cipher_name(ctx->ciphers[i]), "impl", impl != NULL ? impl : "?");
    }
    /* Every implementation the side-by-side table measured, in its order. */
    for (size_t i = 0; i < ctx->n_ciphers; i++) {
        const mbsc_cipher *c = ctx->ciphers[i];
        for (size_t m = 0; m < mbsc_cipher_impl_count(c); m++) {
            snprintf(line, sizeof line, "%s:%s", mbsc_cipher_name(c), mbsc_cipher_impl_name(c, m));
            if (mbsc_cipher_impl_supported(c, m))
                bench_csv_text(f, line, "implementation", "measured");
        }
    }
}
