/* SPDX-License-Identifier: ISC */
/*
 * cpu.c - run-time detection of vector extensions (see cpu.h).
 *
 * x86-64: cpuid says what the processor implements, but AVX and AVX-512
 * instructions also need the operating system to save the wider registers
 * on a context switch.  That is what XGETBV(0) reports (XCR0): bits 1-2
 * (xmm, ymm) for AVX2, and bits 5-7 (opmask, upper zmm0-15, zmm16-31) for
 * AVX-512 (Intel SDM vol. 1, 13.3 "Enabling the XSAVE feature set").  A
 * kernel that does not enable them would make our first vector instruction
 * fault, so a CPU flag without the XCR0 bits counts as absent.
 *
 * ARM: the kernel publishes NEON in the auxiliary vector (HWCAP_NEON on
 * 32-bit ARM).  On AArch64, Advanced SIMD is part of the base architecture.
 */
#include "cipher/cpu.h"

#include <stdatomic.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#elif defined(__arm__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_NEON
#define HWCAP_NEON (1u << 12) /* Linux arch/arm/include/uapi/asm/hwcap.h */
#endif
#endif

#if defined(__x86_64__) && defined(__GNUC__)
static unsigned long long read_xcr0(void)
{
    unsigned eax, edx;

    /* xgetbv with ecx = 0, as bytes: assemblers without XSAVE support and
     * files built without -mxsave accept it. */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

static unsigned detect(void)
{
    unsigned a, b, c, d, max, f = 0;
    unsigned long long xcr0 = 0;

    if (!__get_cpuid(0, &max, &b, &c, &d) || max < 1)
        return 0;
    __cpuid(1, a, b, c, d);
    if (c & bit_SSSE3)
        f |= MBSC_CPU_SSSE3;
    /* OSXSAVE (ecx bit 27): XGETBV is usable. */
    if (c & (1u << 27))
        xcr0 = read_xcr0();
    if (max < 7)
        return f;
    __cpuid_count(7, 0, a, b, c, d);
    if ((xcr0 & 0x6u) == 0x6u && (b & bit_AVX2))
        f |= MBSC_CPU_AVX2;
    if ((xcr0 & 0xE6u) == 0xE6u && (b & bit_AVX512F)) {
        f |= MBSC_CPU_AVX512F;
        if (b & bit_AVX512VL)
            f |= MBSC_CPU_AVX512VL;
        if (b & bit_AVX512BW)
            f |= MBSC_CPU_AVX512BW;
        if (c & bit_AVX512VBMI)
            f |= MBSC_CPU_AVX512VBMI;
        if (c & (1u << 6)) /* AVX512_VBMI2 (SDM vol. 2, cpuid leaf 7: ecx bit 6) */
            f |= MBSC_CPU_AVX512VBMI2;
    }
    return f;
}
#elif defined(__aarch64__)
static unsigned detect(void)
{
    return MBSC_CPU_NEON;
}
#elif defined(__arm__) && defined(__linux__)
static unsigned detect(void)
{
    return (getauxval(AT_HWCAP) & HWCAP_NEON) ? MBSC_CPU_NEON : 0u;
}
#else
static unsigned detect(void)
{
    return 0;
}
#endif

/* 0 = not asked yet; otherwise the features with bit 31 set. */
static atomic_uint cached_features;

unsigned mbsc_cpu_features(void)
{
    unsigned f = atomic_load_explicit(&cached_features, memory_order_relaxed);

    if (f == 0) {
        f = detect() | 0x80000000u;
        atomic_store_explicit(&cached_features, f, memory_order_relaxed);
    }
    return f & 0x7FFFFFFFu;
}
