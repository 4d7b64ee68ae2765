/* SPDX-License-Identifier: ISC */
/*
 * paper.c - the study's Raspberry Pi 4 throughputs (see paper.h).
 */
#include <string.h>

#include "paper.h"

static const struct {
    const char *cipher;
    double mibps;
} pi4[] = {
    {"chacha20", 173.0},
    {"trivium", 598.0},
    {"rabbit", 232.0},
    {"enocoro128v2", 57.0},
};

int bench_paper_mibps(const char *cipher, double *mibps)
{
    for (size_t i = 0; i < sizeof pi4 / sizeof pi4[0]; i++)
        if (strcmp(pi4[i].cipher, cipher) == 0) {
            *mibps = pi4[i].mibps;
            return 1;
        }
    return 0;
}
