/* SPDX-License-Identifier: ISC */
/*
 * machine.h - the lines that open every report: which machine, which
 * compiler and flags, which libraries.  Figures from different boards are
 * only comparable with these beside them.
 */
#ifndef MBSC_BENCH_MACHINE_H
#define MBSC_BENCH_MACHINE_H

struct bench_machine {
    char cpu[192];    /* model, e.g. "AMD EPYC" or "ARM Cortex-A72 (Raspberry Pi 4 ...)" */
    long cores;       /* online CPUs */
    char system[256]; /* "Linux 6.1.0-18-amd64 x86_64": three utsname fields */
    /* From the build (bench/build_info.h), kept as pointers to the string
     * literals: any length of CFLAGS fits. */
    const char *compiler; /* first line of $(CC) --version */
    const char *cflags;   /* CFLAGS the bench and the library were built with */
    const char *host;     /* configure's host triplet */
};

void bench_machine_probe(struct bench_machine *m);

#endif /* MBSC_BENCH_MACHINE_H */
