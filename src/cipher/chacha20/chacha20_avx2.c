/* SPDX-License-Identifier: ISC */
/*
 * chacha20_avx2.c - ChaCha20 (RFC 8439) in AVX2: eight blocks at once in
 * vectors and a ninth in scalar registers, short inputs two blocks per
 * register.
 *
 * Built with -mavx2 for this file only and run only when cpuid/xgetbv say
 * the CPU and OS support AVX2 (cpu.c), so the library still runs on older
 * x86-64 processors.
 *
 * Layout ("vertical"): vector register x[i] holds word i of eight
 * consecutive blocks, lane j being block counter + j, so the quarter
 * rounds of RFC 8439 section 2.1 run unchanged on whole registers, eight
 * blocks per instruction.  Rotations by 16 and 8 are byte shuffles
 * (vpshufb), by 12 and 7 two shifts and an OR.  At the end the 16 x 8
 * words are transposed into eight 64-byte blocks (unpack 32/64, then
 * 128-bit lane swaps) and XORed into the output with unaligned loads and
 * stores, which x86's little-endian byte order makes the RFC's
 * serialisation.
 *
 * Registers: sixteen state rows and the two shuffle masks do not fit in
 * x86-64's sixteen ymm registers.  As OpenSSL's ChaCha20_8x does, the four
 * rows c (words 8-11) live in memory and two at a time in registers: a
 * column pair of quarter rounds uses c0, c1, the next pair and the first
 * diagonal pair use c2, c3, the last diagonal pair c0, c1 again, which
 * the next double round's first columns use in turn, so each double round
 * moves four rows to and from memory, far from their use.  The masks are
 * memory operands of vpshufb.
 *
 * A ninth block in scalar registers: the vector units are the limit (each
 * quarter round is 16 vector instructions on three ports), while two
 * integer ports sit idle, so a full batch is nine blocks, the ninth
 * computed with general-purpose registers in the same loop (the trick of
 * OpenSSL's NEON code).  Its words 8-11 move to and from memory with the
 * vector rows c.
 *
 * Why assembly: written in C with intrinsics, the same plan left gcc 12
 * eight more ymm spills and the loop counter in memory, and clang 14 a
 * schedule slower than eight lanes alone.  The double rounds of a full
 * batch are therefore one inline-assembly loop with every register
 * assigned by hand (double_rounds_asm below); the rest stays in C.  On
 * this project's development machine (docs/bench.md) the loop took the
 * forced AVX2 path from 1.07x to 1.12x libsodium's AVX2 ChaCha20 at 1 MiB.
 * Its stack frame holds state and must be wiped (the C version left its
 * spills): once per batch that cost 2%, so one call runs up to eight
 * batches in one frame and wipes it once, 1.14x, with gcc and clang alike.

 * Short inputs: the driver (chacha20.h) asks for exactly the blocks a call
 * needs, and only those are stored.  Up to six blocks (a Modbus frame's
 * one-time key and payload are one to five) use the "horizontal" layout
 * of chacha20_avx512.c instead, one ymm register per state row holding
 * two blocks, one to three such quads interleaved: a sixth of the work of
 * the eight-lane batch per block for one or two blocks, and still less
 * for five or six.  Single blocks come here too (one quad beats the
 * scalar block).  Seven or eight blocks take the full batch, whose scalar
 * block is then computed and dropped.
 *
 * Constant time: additions, XORs, shifts and shuffles with constant
 * operands; branches only on the public block counts.  No table lookups.
 *
 * Vectors: every published ChaCha20 vector and the libsodium cross-check
 * run through this implementation (tests/check_cipher.c forces each).
 */
#include "chacha20.h"

#include <immintrin.h>

#define ROT16(x)   _mm256_shuffle_epi8((x), rot16)
#define ROT8(x)    _mm256_shuffle_epi8((x), rot8)
#define ROTS(x, n) _mm256_or_si256(_mm256_slli_epi32((x), (n)), _mm256_srli_epi32((x), 32 - (n)))

#define QR(a, b, c, d)                                                                             \
    do {                                                                                           \
        a = _mm256_add_epi32(a, b);                                                                \
        d = ROT16(_mm256_xor_si256(d, a));                                                         \
        c = _mm256_add_epi32(c, d);                                                                \
        b = ROTS(_mm256_xor_si256(b, c), 12);                                                      \
        a = _mm256_add_epi32(a, b);                                                                \
        d = ROT8(_mm256_xor_si256(d, a));                                                          \
        c = _mm256_add_epi32(c, d);                                                                \
        b = ROTS(_mm256_xor_si256(b, c), 7);                                                       \
    } while (0)

/* Store block pair (lo half = block k, hi half = block k + 4) of a 4-word
 * group transposed below: see mbsc_chacha20_kernel_avx2. */
static inline void put_block(uint8_t *out, const uint8_t *in, size_t b, size_t nxor, uint8_t *tail,
                             __m256i first, __m256i second)
{
    if (b < nxor) {
        uint8_t *o = out + 64u * b;
        const uint8_t *i = in + 64u * b;
        __m256i m0 = _mm256_loadu_si256((const __m256i *)(const void *)i);
        __m256i m1 = _mm256_loadu_si256((const __m256i *)(const void *)(i + 32));
        _mm256_storeu_si256((__m256i *)(void *)o, _mm256_xor_si256(m0, first));
        _mm256_storeu_si256((__m256i *)(void *)(o + 32), _mm256_xor_si256(m1, second));
    } else if (b == nxor && tail != NULL) {
        _mm256_storeu_si256((__m256i *)(void *)tail, first);
        _mm256_storeu_si256((__m256i *)(void *)(tail + 32), second);
    }
}

/* Transpose words w0..w3 (lane j = block j) into 4 vectors: result k holds
 * the four words of block k in its low 128 bits and of block k+4 in its
 * high 128 bits. */
#define TRANSPOSE4(w0, w1, w2, w3)                                                                 \
    do {                                                                                           \
        __m256i t0_ = _mm256_unpacklo_epi32(w0, w1);                                               \
        __m256i t1_ = _mm256_unpackhi_epi32(w0, w1);                                               \
        __m256i t2_ = _mm256_unpacklo_epi32(w2, w3);                                               \
        __m256i t3_ = _mm256_unpackhi_epi32(w2, w3);                                               \
        w0 = _mm256_unpacklo_epi64(t0_, t2_);                                                      \
        w1 = _mm256_unpackhi_epi64(t0_, t2_);                                                      \
        w2 = _mm256_unpacklo_epi64(t1_, t3_);                                                      \
        w3 = _mm256_unpackhi_epi64(t1_, t3_);                                                      \
    } while (0)

/* --- Short inputs: up to six blocks, rows in registers ---------------- */

/* The quarter round on the columns of a register quad: rows a, b, c, d,
 * two blocks per register (one per 128-bit lane). */
#define ROWS_QR(a, b, c, d)                                                                        \
    do {                                                                                           \
        a = _mm256_add_epi32(a, b);                                                                \
        d = ROT16(_mm256_xor_si256(d, a));                                                         \
        c = _mm256_add_epi32(c, d);                                                                \
        b = ROTS(_mm256_xor_si256(b, c), 12);                                                      \
        a = _mm256_add_epi32(a, b);                                                                \
        d = ROT8(_mm256_xor_si256(d, a));                                                          \
        c = _mm256_add_epi32(c, d);                                                                \
        b = ROTS(_mm256_xor_si256(b, c), 7);                                                       \
    } while (0)

/* Diagonals into columns and back, rows a, c, d moved (not b, whose
 * update ends one quarter round and starts the next; chacha20_avx512.c
 * explains the word orders). */
#define DIAG(a, c, d)                                                                              \
    do {                                                                                           \
        a = _mm256_shuffle_epi32(a, 0x93);                                                         \
        c = _mm256_shuffle_epi32(c, 0x39);                                                         \
        d = _mm256_shuffle_epi32(d, 0x4e);                                                         \
    } while (0)
#define DIAG_UNDO(a, c, d)                                                                         \
    do {                                                                                           \
        a = _mm256_shuffle_epi32(a, 0x39);                                                         \
        c = _mm256_shuffle_epi32(c, 0x93);                                                         \
        d = _mm256_shuffle_epi32(d, 0x4e);                                                         \
    } while (0)

/* Blocks first and first + 1: the low and high 128-bit lanes of the rows. */
static inline void put_pair(uint8_t *out, const uint8_t *in, size_t first, size_t nxor,
                            uint8_t *tail, __m256i a, __m256i b, __m256i c, __m256i d)
{
    put_block(out, in, first, nxor, tail, _mm256_permute2x128_si256(a, b, 0x20),
              _mm256_permute2x128_si256(c, d, 0x20));
    put_block(out, in, first + 1u, nxor, tail, _mm256_permute2x128_si256(a, b, 0x31),
              _mm256_permute2x128_si256(c, d, 0x31));
}

/*
 * One, two or three quads (nq, a constant at each call site) of two
 * blocks each, interleaved so that their dependency chains share the
 * ports.  Lanes past the blocks asked for are computed and dropped.
 */
MBSC_ALWAYS_INLINE void short_kernel(const uint32_t input[16], uint32_t counter, uint8_t *out,
                                     const uint8_t *in, size_t nxor, uint8_t *tail, int nq)
{
    const __m256i rot16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2,
                                           3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    const __m256i rot8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3,
                                          0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
    const __m256i a0 =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)input));
    const __m256i b0 =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(input + 4)));
    const __m256i c0 =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(input + 8)));
    /* Row d of block m: counter + m, words 13-15. */
    const __m256i d0 =
        _mm256_setr_epi32((int)counter, (int)input[13], (int)input[14], (int)input[15],
                          (int)(counter + 1u), (int)input[13], (int)input[14], (int)input[15]);
    const __m256i two = _mm256_setr_epi32(2, 0, 0, 0, 2, 0, 0, 0);
    const __m256i d1 = _mm256_add_epi32(d0, two), d2 = _mm256_add_epi32(d1, two);
    __m256i a = a0, b = b0, c = c0, d = d0;
    __m256i e = a0, f = b0, g = c0, h = d1;
    __m256i i = a0, j = b0, k = c0, l = d2;

    for (int r = 0; r < 10; r++) {
        ROWS_QR(a, b, c, d);
        if (nq > 1)
            ROWS_QR(e, f, g, h);
        if (nq > 2)
            ROWS_QR(i, j, k, l);
        DIAG(a, c, d);
        if (nq > 1)
            DIAG(e, g, h);
        if (nq > 2)
            DIAG(i, k, l);
        ROWS_QR(a, b, c, d);
        if (nq > 1)
            ROWS_QR(e, f, g, h);
        if (nq > 2)
            ROWS_QR(i, j, k, l);
        DIAG_UNDO(a, c, d);
        if (nq > 1)
            DIAG_UNDO(e, g, h);
        if (nq > 2)
            DIAG_UNDO(i, k, l);
    }
    put_pair(out, in, 0, nxor, tail, _mm256_add_epi32(a, a0), _mm256_add_epi32(b, b0),
             _mm256_add_epi32(c, c0), _mm256_add_epi32(d, d0));
    if (nq > 1)
        put_pair(out, in, 2, nxor, tail, _mm256_add_epi32(e, a0), _mm256_add_epi32(f, b0),
                 _mm256_add_epi32(g, c0), _mm256_add_epi32(h, d1));
    if (nq > 2)
        put_pair(out, in, 4, nxor, tail, _mm256_add_epi32(i, a0), _mm256_add_epi32(j, b0),
                 _mm256_add_epi32(k, c0), _mm256_add_epi32(l, d2));
}

/* --- Full batches: eight lanes and a scalar block, in assembly --------- */

/*
 * The double rounds of a full batch are one inline-assembly loop with
 * every register assigned by hand (see the top of this file for why):
 *
 *   ymm0-3   rows a (words 0-3) of the eight vector blocks
 *   ymm4-7   rows b (words 4-7)
 *   ymm8-11  rows d (words 12-15)
 *   ymm12-13 two of the rows c (words 8-11); the other two in the frame
 *   ymm14-15 the shifted halves of the rotations by 12 and 7
 *   eax ebx ecx edx, esi ebp r8d r9d, r10d-r13d: words 0-7 and 12-15 of
 *            the scalar ninth block; r14d r15d two of its words 8-11
 *   rdi      the frame below, which holds everything else
 *
 * That is every general-purpose register but rsp: rbp is saved in the
 * frame and restored before the asm ends, so this also builds with
 * -fno-omit-frame-pointer (a profiler that walks frame pointers sees a
 * wrong caller for the ~0.15 us the loop runs; nothing else can look).
 * Each pair of vector quarter rounds carries the same pair of scalar
 * quarter rounds, spread between its instructions.
 */
struct avx2_frame {
    __m256i x[16];        /* offset 0: the vector state; rows c at 256..383 */
    __m256i rot16, rot8;  /* 512, 544: vpshufb masks for rotations by 16, 8 */
    uint32_t s[16];       /* 576: the scalar block; words 8-11 at 608..623 */
    uint64_t saved_rbp;   /* 640 */
    uint64_t rounds_left; /* 648: double rounds still to do */
};
MBSC_STATIC_ASSERT(offsetof(struct avx2_frame, rot16) == 512 &&
                       offsetof(struct avx2_frame, s) == 576 &&
                       offsetof(struct avx2_frame, saved_rbp) == 640 &&
                       offsetof(struct avx2_frame, rounds_left) == 648,
                   "the assembly below addresses struct avx2_frame by these offsets");

/* The assembly text is laid out by hand, a line per instruction or pair
 * of instructions, so clang-format leaves it alone. */
/* clang-format off */
#define Y(n) "%%ymm" #n
#define VOP(op, src, dst) op " " src "," dst "," dst "\n\t"
#define SOP(op, src, dst) op " " src "," dst "\n\t"
/*
 * Half of two vector quarter rounds (a, b, c, d) and (e, f, g, h) with
 * half of two scalar ones (sa..sd) and (se..sh): rotation of d by rd
 * (vpshufb with the mask at offset mask), of b by rb (two shifts, an OR).
 */
#define HALF_QR2(a, b, c, d, e, f, g, h, sa, sb, sc, sd, se, sf, sg, sh, mask, rd, rb, rbr)        \
    VOP("vpaddd", Y(b), Y(a)) VOP("vpaddd", Y(f), Y(e))                                            \
    SOP("add", sb, sa) SOP("add", sf, se)                                                          \
    VOP("vpxor", Y(a), Y(d)) VOP("vpxor", Y(e), Y(h))                                              \
    SOP("xor", sa, sd) SOP("xor", se, sh)                                                          \
    VOP("vpshufb", mask "(%%rdi)", Y(d)) VOP("vpshufb", mask "(%%rdi)", Y(h))                      \
    SOP("rol", "$" #rd, sd) SOP("rol", "$" #rd, sh)                                                \
    VOP("vpaddd", Y(d), Y(c)) VOP("vpaddd", Y(h), Y(g))                                            \
    SOP("add", sd, sc) SOP("add", sh, sg)                                                          \
    VOP("vpxor", Y(c), Y(b)) VOP("vpxor", Y(g), Y(f))                                              \
    SOP("xor", sc, sb) SOP("xor", sg, sf)                                                          \
    "vpsrld $" #rbr "," Y(b) ",%%ymm14\n\t"                                                        \
    "vpsrld $" #rbr "," Y(f) ",%%ymm15\n\t"                                                        \
    SOP("rol", "$" #rb, sb) SOP("rol", "$" #rb, sf)                                                \
    "vpslld $" #rb "," Y(b) "," Y(b) "\n\t"                                                        \
    "vpslld $" #rb "," Y(f) "," Y(f) "\n\t"                                                        \
    VOP("vpor", "%%ymm14", Y(b)) VOP("vpor", "%%ymm15", Y(f))
#define QR2(a, b, c, d, e, f, g, h, sa, sb, sc, sd, se, sf, sg, sh)                                \
    HALF_QR2(a, b, c, d, e, f, g, h, sa, sb, sc, sd, se, sf, sg, sh, "512", 16, 12, 20)            \
    HALF_QR2(a, b, c, d, e, f, g, h, sa, sb, sc, sd, se, sf, sg, sh, "544", 8, 7, 25)
/* Scalar words in registers; SC0, SC1 hold two of words 8-11 at a time. */
#define S0 "%%eax"
#define S1 "%%ebx"
#define S2 "%%ecx"
#define S3 "%%edx"
#define S4 "%%esi"
#define S5 "%%ebp"
#define S6 "%%r8d"
#define S7 "%%r9d"
#define S12 "%%r10d"
#define S13 "%%r11d"
#define S14 "%%r12d"
#define S15 "%%r13d"
#define SC0 "%%r14d"
#define SC1 "%%r15d"
/* Rows c: vector rows at 256 + 32 i, scalar words at 608 + 4 i. */
#define SAVE_C(i, j)                                                                               \
    "vmovdqa %%ymm12, " #i "(%%rdi)\n\t"                                                           \
    "vmovdqa %%ymm13, " #j "(%%rdi)\n\t"
#define LOAD_C(i, j)                                                                               \
    "vmovdqa " #i "(%%rdi), %%ymm12\n\t"                                                           \
    "vmovdqa " #j "(%%rdi), %%ymm13\n\t"
#define SAVE_SC(i, j) "mov %%r14d, " #i "(%%rdi)\n\tmov %%r15d, " #j "(%%rdi)\n\t"
#define LOAD_SC(i, j) "mov " #i "(%%rdi), %%r14d\n\tmov " #j "(%%rdi), %%r15d\n\t"
/* Every register of the table above but rdi, to or from the frame. */
#define MOVE_ALL(v, s)                                                                             \
    v("0", "0") v("32", "1") v("64", "2") v("96", "3") v("128", "4") v("160", "5") v("192", "6")   \
    v("224", "7") v("256", "12") v("288", "13") v("384", "8") v("416", "9") v("448", "10")         \
    v("480", "11") s("576", "eax") s("580", "ebx") s("584", "ecx") s("588", "edx")                 \
    s("592", "esi") s("596", "ebp") s("600", "r8d") s("604", "r9d") s("608", "r14d")               \
    s("612", "r15d") s("624", "r10d") s("628", "r11d") s("632", "r12d") s("636", "r13d")
#define VLOAD(off, r) "vmovdqa " off "(%%rdi), %%ymm" r "\n\t"
#define VSTORE(off, r) "vmovdqa %%ymm" r ", " off "(%%rdi)\n\t"
#define SLOAD(off, r) "mov " off "(%%rdi), %%" r "\n\t"
#define SSTORE(off, r) "mov %%" r ", " off "(%%rdi)\n\t"

/* clang-format on */

/* The ten double rounds on fr->x (eight blocks) and fr->s (the ninth). */
static inline void double_rounds_asm(struct avx2_frame *fr)
{
    /* A 64-bit register even on x32, where pointers are 32 bits wide. */
    register unsigned long long frame __asm__("rdi") = (unsigned long long)(uintptr_t)fr;

    fr->rounds_left = 10;
    /* clang-format off */
    __asm__ volatile(
        "mov %%rbp, 640(%%rdi)\n\t" MOVE_ALL(VLOAD, SLOAD) ".p2align 4\n"
        "1:\n\t"
        /* Columns 0, 1 with rows c 0, 1. */
        QR2(0, 4, 12, 8, 1, 5, 13, 9, S0, S4, SC0, S12, S1, S5, SC1, S13)
        SAVE_C(256, 288) SAVE_SC(608, 612) LOAD_C(320, 352) LOAD_SC(616, 620)
        /* Columns 2, 3, diagonals (0, 5, 10, 15), (1, 6, 11, 12): c 2, 3. */
        QR2(2, 6, 12, 10, 3, 7, 13, 11, S2, S6, SC0, S14, S3, S7, SC1, S15)
        QR2(0, 5, 12, 11, 1, 6, 13, 8, S0, S5, SC0, S15, S1, S6, SC1, S12)
        SAVE_C(320, 352) SAVE_SC(616, 620) LOAD_C(256, 288) LOAD_SC(608, 612)
        /* Diagonals (2, 7, 8, 13), (3, 4, 9, 14): c 0, 1, kept for the
         * next double round's first columns. */
        QR2(2, 7, 12, 9, 3, 4, 13, 10, S2, S7, SC0, S13, S3, S4, SC1, S14)
        "subq $1, 648(%%rdi)\n\t"
        "jnz 1b\n\t" MOVE_ALL(VSTORE, SSTORE) "mov 640(%%rdi), %%rbp\n\t"
        :
        : "r"(frame)
        : "memory", "cc", "rax", "rbx", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "r12",
          "r13", "r14", "r15", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    /* clang-format on */
}

/* Block 8 (the scalar one): w[0..15] its keystream words. */
static inline void put_scalar_block(uint8_t *out, const uint8_t *in, size_t nxor, uint8_t *tail,
                                    const uint32_t w[16])
{
    if (nxor > 8u) {
        for (unsigned i = 0; i < 16u; i++)
            mbsc_store32_le(out + 512u + 4u * i, mbsc_load32_le(in + 512u + 4u * i) ^ w[i]);
    } else {
        for (unsigned i = 0; i < 16u; i++)
            mbsc_store32_le(tail + 4u * i, w[i]);
    }
}

/* Blocks per batch, and per kernel call (eight batches, 4.5 KiB). */
#define BATCH_BLOCKS 9u
#define AVX2_LANES   (8u * BATCH_BLOCKS)

/*
 * Eight vector blocks and the ninth in scalar registers (stored only when
 * asked for: for seven or eight blocks it is computed on ports that would
 * idle anyway, which costs less than a second copy of the loop).
 */
static void kernel_avx2(struct avx2_frame *frame, const uint32_t input[16], uint32_t counter,
                        uint8_t *out, const uint8_t *in, size_t nxor, uint8_t *tail)
{
    const __m256i ctr = _mm256_add_epi32(_mm256_set1_epi32((int)counter),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));

    for (unsigned i = 0; i < 16u; i++) {
        frame->x[i] = _mm256_set1_epi32((int)input[i]);
        frame->s[i] = input[i];
    }
    frame->x[12] = ctr;
    /* The ninth block, counter + 8: the driver asks for nine blocks only
     * when that counter does not wrap, and a wrapped one of a shorter
     * batch is never stored. */
    frame->s[12] = counter + 8u;
    frame->rot16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0,
                                    1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    frame->rot8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3, 0, 1, 2,
                                   7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
    double_rounds_asm(frame);

#define WORD(i) _mm256_add_epi32(frame->x[i], _mm256_set1_epi32((int)input[i]))
    __m256i x0 = WORD(0), x1 = WORD(1), x2 = WORD(2), x3 = WORD(3);
    __m256i x4 = WORD(4), x5 = WORD(5), x6 = WORD(6), x7 = WORD(7);
    __m256i x8 = WORD(8), x9 = WORD(9), x10 = WORD(10), x11 = WORD(11);
    __m256i x12 = _mm256_add_epi32(frame->x[12], ctr), x13 = WORD(13), x14 = WORD(14),
            x15 = WORD(15);
#undef WORD

    TRANSPOSE4(x0, x1, x2, x3);
    TRANSPOSE4(x4, x5, x6, x7);
    TRANSPOSE4(x8, x9, x10, x11);
    TRANSPOSE4(x12, x13, x14, x15);

    /* Block k: words 0-3 from group 0, 4-7 from group 1, ...; 0x20 takes
     * the low 128-bit halves (block k), 0x31 the high ones (block k + 4). */
#define BLOCK(k, a, b, c, d)                                                                       \
    put_block(out, in, k, nxor, tail, _mm256_permute2x128_si256(a, b, 0x20),                       \
              _mm256_permute2x128_si256(c, d, 0x20));                                              \
    put_block(out, in, k + 4, nxor, tail, _mm256_permute2x128_si256(a, b, 0x31),                   \
              _mm256_permute2x128_si256(c, d, 0x31))
    BLOCK(0, x0, x4, x8, x12);
    BLOCK(1, x1, x5, x9, x13);
    BLOCK(2, x2, x6, x10, x14);
    BLOCK(3, x3, x7, x11, x15);
#undef BLOCK
    if (nxor + (tail != NULL) == 9u) {
        for (unsigned i = 0; i < 16u; i++)
            frame->s[i] += i == 12u ? counter + 8u : input[i];
        put_scalar_block(out, in, nxor, tail, frame->s);
    }
}

/* Blocks first, first + 1, ...: counter input[12] + first (out, in
 * already advanced to them); tail as in chacha20.h, n of them in all. */
MBSC_ALWAYS_INLINE void short_blocks(const uint32_t input[16], uint32_t first, uint8_t *out,
                                     const uint8_t *in, size_t nxor, uint8_t *tail, size_t n)
{
    uint32_t counter = input[12] + first;

    if (n <= 2u)
        short_kernel(input, counter, out, in, nxor, tail, 1);
    else if (n <= 4u)
        short_kernel(input, counter, out, in, nxor, tail, 2);
    else
        short_kernel(input, counter, out, in, nxor, tail, 3);
}

/*
 * The kernel of chacha20.h, up to AVX2_LANES blocks: batches of nine
 * (seven or eight at the end, the scalar block then dropped), the last one
 * to six blocks (or a short call's only ones) in quads.  Several batches
 * per call share one frame, so that it is wiped once per call (a wipe per
 * batch cost 2% here).
 */
void mbsc_chacha20_kernel_avx2(const uint32_t input[16], uint8_t *out, const uint8_t *in,
                               size_t nxor, uint8_t *tail)
{
    size_t n = nxor + (tail != NULL);
    size_t done = 0;
    struct avx2_frame fr;

    while (n - done > 6u) {
        size_t batch = n - done < BATCH_BLOCKS ? n - done : BATCH_BLOCKS;
        /* Blocks of this batch XORed from in; the rest (at most one) is the tail. */
        size_t bx = nxor - done < batch ? nxor - done : batch;

        kernel_avx2(&fr, input, input[12] + (uint32_t)done, out + 64u * done, in + 64u * done, bx,
                    bx < batch ? tail : NULL);
        done += batch;
    }
    if (done < n)
        short_blocks(input, (uint32_t)done, out + 64u * done, in + 64u * done, nxor - done, tail,
                     n - done);
    /* The frame holds the final states (keystream minus the input words). */
    if (done > 0u)
        mbsc_wipe(&fr, sizeof fr);
}

static void chacha20_avx2_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    mbsc_chacha20_xor_kernels(state, out, in, len, mbsc_chacha20_kernel_avx2, AVX2_LANES,
                              mbsc_chacha20_kernel_avx2);
}

const struct mbsc_cipher_impl mbsc_chacha20_avx2 = {
    .name = "avx2",
    .cpu_needs = MBSC_CPU_AVX2,
    .state_bytes = sizeof(struct chacha20_state),
    .init = mbsc_chacha20_init,
    .xor_stream = chacha20_avx2_xor,
};
