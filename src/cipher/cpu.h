/* SPDX-License-Identifier: ISC */
/*
 * cpu.h - which vector extensions this CPU and its operating system offer.
 *
 * Asked once per process (cpuid and xgetbv on x86-64, getauxval(AT_HWCAP)
 * on ARM) and cached; the cipher registry uses the answer to pick each
 * cipher's implementation when a stream is initialised, never per call.
 */
#ifndef MBSC_CIPHER_CPU_H
#define MBSC_CIPHER_CPU_H

/* Feature bits; an implementation lists the ones it needs. */
enum mbsc_cpu_feature {
    MBSC_CPU_SSSE3 = 1u << 0,      /* x86: pshufb */
    MBSC_CPU_AVX2 = 1u << 1,       /* x86: AVX2, with the OS saving ymm state */
    MBSC_CPU_AVX512F = 1u << 2,    /* x86: AVX-512 F, OS saves zmm/opmask state */
    MBSC_CPU_AVX512VL = 1u << 3,   /* x86: AVX-512 on ymm/xmm registers */
    MBSC_CPU_AVX512BW = 1u << 4,   /* x86: AVX-512 byte/word instructions */
    MBSC_CPU_AVX512VBMI = 1u << 5, /* x86: vpermb */
    MBSC_CPU_NEON = 1u << 6,       /* ARM: Advanced SIMD (always on AArch64) */
    /* x86: AVX-512 VBMI2 (vpshrdvq, concatenated shifts) */
    MBSC_CPU_AVX512VBMI2 = 1u << 7
};

/*
 * The MBSC_CPU_* bits of this machine.  Thread-safe: the first callers may
 * race to compute it, and they all store the same value.
 */
unsigned mbsc_cpu_features(void);

#endif /* MBSC_CIPHER_CPU_H */
