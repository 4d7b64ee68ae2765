/* SPDX-License-Identifier: ISC */
/*
 * paper.h - the figures mbsc started from: the study that measured the
 * reference implementations of the four ciphers on a Raspberry Pi 4
 * (Cortex-A72, 1.5 GHz).  Only its throughputs are recorded here; the
 * report derives the time for 1 MiB and cycles per byte from them, and
 * says so.
 */
#ifndef MBSC_BENCH_PAPER_H
#define MBSC_BENCH_PAPER_H

#define BENCH_PAPER_BOARD "Raspberry Pi 4 (Cortex-A72, 1.5 GHz), reference implementations"
#define BENCH_PAPER_MHZ   1500.0

/* 1 and the study's throughput in MiB/s for an mbsc cipher name, else 0. */
int bench_paper_mibps(const char *cipher, double *mibps);

#endif /* MBSC_BENCH_PAPER_H */
