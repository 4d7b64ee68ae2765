/* SPDX-License-Identifier: ISC */
/*
 * machine.c - identify the machine and the build (see machine.h).
 *
 * x86 names its CPU in /proc/cpuinfo's "model name".  ARM kernels print
 * only numeric ids ("CPU implementer", "CPU part"), a 32-bit kernel a
 * generic "ARMv7 Processor", so known part numbers are named here, and the
 * board comes from the device tree ("Raspberry Pi 4 Model B Rev 1.4").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "build_info.h"
#include "machine.h"

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

    if (f == NULL)
        return 0;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        char *colon = strchr(line, ':'), *v, *end;
        if (colon == NULL || strncmp(line, key, klen) != 0)
            continue;
        /* The key is padded with tabs or spaces up to the colon. */
        if (strspn(line + klen, " \t") != (size_t)(colon - line - (long)klen))
            continue;
        v = colon + 1 + strspn(colon + 1, " \t");
        end = v + strlen(v);
        while (end > v && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        snprintf(out, len, "%s", v);
        found = 1;
    }
    fclose(f);
    return found && out[0] != '\0';
}

/* The device tree's board name, when there is one. */
static int dt_model(char *out, size_t len)
{
    FILE *f = fopen("/proc/device-tree/model", "r");
    size_t n;

    if (f == NULL)
        f = fopen("/sys/firmware/devicetree/base/model", "r");
    if (f == NULL)
        return 0;
    n = fread(out, 1, len - 1, f);
    fclose(f);
    out[n] = '\0'; /* the file ends with its own NUL; this covers a cut one */
    return out[0] != '\0';
}

/* Append text to out (capacity len, NUL-terminated), cutting it if needed. */
static void append(char *out, size_t len, const char *text)
{
    size_t used = strlen(out), n = strlen(text);

    if (used + 1 >= len)
        return;
    if (n > len - 1 - used)
        n = len - 1 - used; /* a label cut short is still a label */
    memcpy(out + used, text, n);
    out[used + n] = '\0';
}

/* out = "CPU (board)", "CPU", "board" or "unknown CPU". */
static void label_with_board(char *out, size_t len, const char *cpu, const char *board)
{
    if (len == 0)
        return;
    out[0] = '\0';
    if (cpu[0] == '\0') {
        append(out, len, board[0] != '\0' ? board : "unknown CPU");
        return;
    }
    append(out, len, cpu);
    if (board[0] != '\0') {
        append(out, len, " (");
        append(out, len, board);
        append(out, len, ")");
    }
}

static void probe_cpu(char *out, size_t len)
{
    char model[192] = "", part[32] = "", impl[32] = "", board[128] = "", hw[96] = "";
    char core[64] = "";

    cpuinfo_field("model name", model, sizeof model);
    if (cpuinfo_field("CPU part", part, sizeof part)) {
        unsigned long p = strtoul(part, NULL, 0), imp = 0;
        if (cpuinfo_field("CPU implementer", impl, sizeof impl))
            imp = strtoul(impl, NULL, 0);
        snprintf(core, sizeof core, "ARM CPU part %s", part);
        for (size_t i = 0; imp == 0x41 && i < sizeof arm_parts / sizeof arm_parts[0]; i++)
            if (arm_parts[i].part == p)
                snprintf(core, sizeof core, "ARM %s", arm_parts[i].name);
    }
    /* Board: the device tree, or the "Model"/"Hardware" lines of cpuinfo. */
    if (!dt_model(board, sizeof board) && !cpuinfo_field("Model", board, sizeof board) &&
        cpuinfo_field("Hardware", hw, sizeof hw))
        snprintf(board, sizeof board, "%s", hw);

    label_with_board(out, len, core[0] != '\0' ? core : model, board);
}

void bench_machine_probe(struct bench_machine *m)
{
    struct utsname u;

    memset(m, 0, sizeof *m);
    probe_cpu(m->cpu, sizeof m->cpu);
    m->cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (uname(&u) == 0)
        snprintf(m->system, sizeof m->system, "%s %s %s", u.sysname, u.release, u.machine);
    m->compiler = BENCH_BUILD_CC;
    m->cflags = BENCH_BUILD_CFLAGS;
    m->host = BENCH_BUILD_HOST;
}
