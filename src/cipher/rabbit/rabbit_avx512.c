/* SPDX-License-Identifier: ISC */
/*
 * rabbit_avx512.c - Rabbit (RFC 4503) with the next-state function in
 * AVX-512 F + VL, on ymm registers.
 *
 * Built with -mavx512f -mavx512vl for this file only (libmbsc-avx512vl.la),
 * run only when cpuid says AVX-512 F and VL and XGETBV says the OS saves
 * the opmask and zmm state (cpu.c).  Key and IV setup are the portable
 * code's (rabbit_ref.c); this file produces the keystream.  Vectors:
 * tests/kat/rabbit.txt, run through every implementation.
 *
 * Rabbit is one serial system: block n+1 needs the state of block n, so
 * its speed is the latency of one next-state step (RFC 4503 2.5) plus
 * whatever competes with that chain for execution ports.  Against
 * rabbit_avx2.c this file:
 *
 * - rotates g_(j-1) and g_(j-2) with vprolvd (a count per lane) instead of
 *   byte shuffles, and moves the odd lanes down for their squares with
 *   vpshufd, whose result XORed with the square gives g in both halves of
 *   each 64-bit lane (no shift pair);
 * - adds the next block's X + C as (g + C) + (the two rotated terms), a
 *   tree one addition shorter than adding C to the new X;
 * - computes the counters (C + A + b as one 256-bit add/adc chain in
 *   scalar registers, no comparison, no branch) a batch of four blocks
 *   ahead into a local array that vector loads read, so that they never
 *   wait and move to vector registers without taking the shuffle port
 *   from the next-state permutes;
 * - extracts two blocks at a time with three two-source permutes
 *   (vpermt2d), two shifts and one ternary XOR: 32 bytes per store.
 *
 * zmm registers were measured and not kept: X_j one per 64-bit lane
 * (all eight squares in one vpmuludq, the suggestion) has the
 * same step latency here, and every other operation costs as much on
 * zmm as on ymm.  Taking g_(j-1) and g_(j-2) straight from the squares
 * with two-source permutes (four vpermt2d instead of the blend and two
 * vpermd: two operations off the chain on paper) was measured too, and
 * gained nothing (1.14 cycles/byte).  The step is about 17 cycles, the
 * block about 18 (1.13 cycles/byte against 1.29 for rabbit_avx2.c in one
 * mbsc-bench run).
 *
 * The counters computed ahead (ahead[], ctr_p, ...) are stack locals and
 * are zeroed before returning by volatile stores, not by sodium_memzero():
 * passing their address to a function the compiler cannot see makes it
 * assume that every store through out may change them (measured 1.31
 * instead of 1.13 cycles/byte, 285 instead of 235 ns per 260-byte seal).
 * The counters in the state are wiped by the registry with the stream.
 *
 * Constant time by construction: valgrind cannot execute AVX-512, so
 * `make check-ct` cannot check this file; it needs no checking of that
 * kind because every operation on key or state data is an addition, XOR,
 * shift, rotate by constant counts, multiplication (vpmuludq's timing does
 * not depend on its operands) or permute with a constant pattern, and the
 * only branches and memory indices are on lengths and the public buffer
 * position.
 */
#include "rabbit.h"

#include <immintrin.h>
#include <x86intrin.h>

/* A0 | A1 << 32, A2 | A3 << 32, ... (RFC 4503 2.5). */
#define RABBIT_A01 UINT64_C(0xD34D34D34D34D34D)
#define RABBIT_A23 UINT64_C(0x4D34D34D34D34D34)
#define RABBIT_A45 UINT64_C(0x34D34D34D34D34D3)
#define RABBIT_A67 UINT64_C(0xD34D34D34D34D34D)

/* The constant operands of a step, built once per call. */
struct rabbit_avx512_consts {
    __m256i prev1, prev2; /* lane j <- lane j-1, lane j <- lane j-2 */
    __m256i rot1, rot2;   /* rotate counts per lane */
    __m256i sel_e, sel_h, sel_l;
};

static inline struct rabbit_avx512_consts rabbit_consts(void)
{
    struct rabbit_avx512_consts k;

    k.prev1 = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6);
    k.prev2 = _mm256_setr_epi32(6, 7, 0, 1, 2, 3, 4, 5);
    /* Even j: g_(j-1) <<< 16, g_(j-2) <<< 16; odd j: <<< 8 and as is. */
    k.rot1 = _mm256_setr_epi32(16, 8, 16, 8, 16, 8, 16, 8);
    k.rot2 = _mm256_setr_epi32(16, 0, 16, 0, 16, 0, 16, 0);
    /*
     * S = X(2i) ^ (X(2i+5) >> 16) ^ (X(2i+3) << 16), i = 0..3 (RFC 4503
     * 2.6), for two blocks: X_k of the first block is dword k of the pair,
     * of the second 8 + k; dwords 0..3 of the result are the first block's
     * keystream, 4..7 the second's.
     */
    k.sel_e = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    k.sel_h = _mm256_setr_epi32(5, 7, 1, 3, 13, 15, 9, 11);
    k.sel_l = _mm256_setr_epi32(3, 5, 7, 1, 11, 13, 15, 9);
    return k;
}

/* Blocks per iteration of the bulk loop, and of counters computed ahead. */
#define RABBIT_BATCH 4u

/*
 * C = C + A + b as one 256-bit number; b = the carry out.  With
 * _addcarry_u64 (plain adc, no ADX needed) gcc makes a four-instruction
 * add/adc chain of it.
 */
MBSC_ALWAYS_INLINE void rabbit_counters(uint64_t c[4], unsigned char *carry)
{
    unsigned long long t0, t1, t2, t3;
    unsigned char b;

    b = _addcarry_u64(*carry, c[0], RABBIT_A01, &t0);
    b = _addcarry_u64(b, c[1], RABBIT_A23, &t1);
    b = _addcarry_u64(b, c[2], RABBIT_A45, &t2);
    b = _addcarry_u64(b, c[3], RABBIT_A67, &t3);
    c[0] = t0;
    c[1] = t1;
    c[2] = t2;
    c[3] = t3;
    *carry = b;
}

/* The counters of one block: C0 | C1 << 32, ..., and the carry b out. */
struct rabbit_ctr {
    uint64_t c[4];
    uint64_t carry;
};

/*
 * Zero n counter sets on the stack.  Volatile stores rather than
 * sodium_memzero(): handing the locals' address to a function the
 * compiler cannot see would make it assume that every store through out
 * may change them, which cost 15 % in the loop (see the header).
 */
MBSC_ALWAYS_INLINE void rabbit_wipe_ctrs(struct rabbit_ctr *c, size_t n)
{
    volatile struct rabbit_ctr *w = c;

    for (size_t i = 0; i < n; i++) {
        for (unsigned j = 0; j < 4; j++) {
            w[i].c[j] = 0;
        }
        w[i].carry = 0;
    }
}

/*
 * The counters of the n blocks after *last into ahead[0..n) (*last
 * becomes the n-th).  C0..C7 in memory as little-endian 32-bit words are
 * what one vector load reads: going through memory keeps the transfer off
 * the shuffle port that the next-state permutes need (vpinsrq would use
 * it), and computed a batch ahead, the loads never wait for the stores.
 */
MBSC_ALWAYS_INLINE void rabbit_counters_ahead(struct rabbit_ctr *last, struct rabbit_ctr *ahead,
                                              unsigned n)
{
    unsigned char carry = (unsigned char)last->carry;

    for (unsigned b = 0; b < n; b++) {
        rabbit_counters(last->c, &carry);
        ahead[b] = *last;
        ahead[b].carry = carry;
    }
    last->carry = carry;
}

/* C0..C7 of one block, one per 32-bit lane. */
MBSC_ALWAYS_INLINE __m256i rabbit_load_counters(const struct rabbit_ctr *e)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)e->c);
}

/*
 * One iteration of the system (RFC 4503 2.5) from v = X + C of this step;
 * returns the new X and sets *v_next = X + c_next for the next step, added
 * as (g + c_next) + (the rotated terms): a tree, one addition shorter than
 * adding c_next to X.
 */
MBSC_ALWAYS_INLINE __m256i rabbit_step(__m256i v, __m256i c_next, __m256i *v_next,
                                       const struct rabbit_avx512_consts *k)
{
    /* 64-bit squares of the even lanes, and of the odd lanes moved down. */
    const __m256i pe = _mm256_mul_epu32(v, v);
    const __m256i vo = _mm256_shuffle_epi32(v, 0xB1); /* swap the halves of each qword */
    const __m256i po = _mm256_mul_epu32(vo, vo);
    /* g = low ^ high half: both halves of each qword hold it after the
     * XOR with the swapped square; even lanes from pe, odd from po. */
    const __m256i ge = _mm256_xor_si256(pe, _mm256_shuffle_epi32(pe, 0xB1));
    const __m256i go = _mm256_xor_si256(po, _mm256_shuffle_epi32(po, 0xB1));
    const __m256i g = _mm256_blend_epi32(ge, go, 0xAA);
    const __m256i t1 = _mm256_rolv_epi32(_mm256_permutexvar_epi32(k->prev1, g), k->rot1);
    const __m256i t2 = _mm256_rolv_epi32(_mm256_permutexvar_epi32(k->prev2, g), k->rot2);
    const __m256i t12 = _mm256_add_epi32(t1, t2);

    *v_next = _mm256_add_epi32(_mm256_add_epi32(g, c_next), t12);
    return _mm256_add_epi32(g, t12);
}

/* The keystream of two blocks (X of the first in xa, of the second in xb). */
MBSC_ALWAYS_INLINE __m256i rabbit_extract2(__m256i xa, __m256i xb,
                                           const struct rabbit_avx512_consts *k)
{
    const __m256i e = _mm256_permutex2var_epi32(xa, k->sel_e, xb);
    const __m256i h = _mm256_srli_epi32(_mm256_permutex2var_epi32(xa, k->sel_h, xb), 16);
    const __m256i l = _mm256_slli_epi32(_mm256_permutex2var_epi32(xa, k->sel_l, xb), 16);

    return _mm256_ternarylogic_epi32(e, h, l, 0x96); /* e ^ h ^ l */
}

static void rabbit_avx512_xor(void *state, uint8_t *out, const uint8_t *in, size_t len)
{
    struct rabbit_state *st = state;
    const struct rabbit_avx512_consts k = rabbit_consts();
    /*
     * Counters, named by block: blocks 1..p made so far, ctr_p and ctr_p1
     * those of blocks p and p + 1, ahead[b] those of block p + 2 + b, last
     * the newest computed (block p + RABBIT_BATCH + 1).
     */
    struct rabbit_ctr ctr_p, ctr_p1, ahead[RABBIT_BATCH], last;
    __m256i x, v;
    size_t i = 0;
    unsigned tail = 0;

    if (len == 0) {
        return;
    }
    /* 1. Bytes left over from the previous call's last block. */
    while (st->used < sizeof st->ks && i < len) {
        out[i] = (uint8_t)(in[i] ^ st->ks[st->used++]);
        i++;
    }
    if (i == len) {
        return;
    }
    x = _mm256_loadu_si256((const __m256i *)(const void *)st->x);
    for (unsigned j = 0; j < 4; j++) {
        ctr_p.c[j] = (uint64_t)st->c[2 * j] | ((uint64_t)st->c[2 * j + 1] << 32);
    }
    ctr_p.carry = st->carry;
    last = ctr_p;
    rabbit_counters_ahead(&last, &ctr_p1, 1u);
    rabbit_counters_ahead(&last, ahead, RABBIT_BATCH);
    /* v = X + C of the next block (X, C of block 0 are the state's). */
    v = _mm256_add_epi32(x, rabbit_load_counters(&ctr_p1));

    /*
     * 2. Whole blocks, RABBIT_BATCH at a time: each step makes block
     * p + 1 and, for the next, adds the counters of block p + 2.
     */
    for (; len - i >= 16u * RABBIT_BATCH; i += 16u * RABBIT_BATCH) {
        const __m256i c1 = rabbit_load_counters(&ahead[0]);
        const __m256i c2 = rabbit_load_counters(&ahead[1]);
        const __m256i c3 = rabbit_load_counters(&ahead[2]);
        const __m256i c4 = rabbit_load_counters(&ahead[3]);
        __m256i x0, x1, x2, x3, m0, m1;

        ctr_p = ahead[RABBIT_BATCH - 2]; /* p moves on by RABBIT_BATCH */
        ctr_p1 = ahead[RABBIT_BATCH - 1];
        rabbit_counters_ahead(&last, ahead, RABBIT_BATCH);
        x0 = rabbit_step(v, c1, &v, &k);
        x1 = rabbit_step(v, c2, &v, &k);
        x2 = rabbit_step(v, c3, &v, &k);
        x3 = rabbit_step(v, c4, &v, &k);
        m0 = _mm256_loadu_si256((const __m256i *)(const void *)(in + i));
        m1 = _mm256_loadu_si256((const __m256i *)(const void *)(in + i + 32));
        _mm256_storeu_si256((__m256i *)(void *)(out + i),
                            _mm256_xor_si256(m0, rabbit_extract2(x0, x1, &k)));
        _mm256_storeu_si256((__m256i *)(void *)(out + i + 32),
                            _mm256_xor_si256(m1, rabbit_extract2(x2, x3, &k)));
        x = x3;
    }

    /*
     * 3. At most RABBIT_BATCH blocks one at a time, the last partial one
     * kept for the next call: tail block t is block p + 1 + t, and adds
     * the counters of block p + 2 + t = ahead[t] for the next.
     */
    for (; i < len; tail++) {
        __m128i ks;

        x = rabbit_step(v, rabbit_load_counters(&ahead[tail]), &v, &k);
        ks = _mm256_castsi256_si128(rabbit_extract2(x, x, &k));
        if (len - i >= 16) {
            __m128i m = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
            _mm_storeu_si128((__m128i *)(void *)(out + i), _mm_xor_si128(m, ks));
            i += 16;
        } else {
            _mm_storeu_si128((__m128i *)(void *)st->ks, ks);
            st->used = 0;
            while (i < len) {
                out[i] = (uint8_t)(in[i] ^ st->ks[st->used++]);
                i++;
            }
        }
    }

    /* The state: X and the counters of the last block made, p + tail. */
    _mm256_storeu_si256((__m256i *)(void *)st->x, x);
    {
        const struct rabbit_ctr *made = tail == 0 ? &ctr_p : tail == 1 ? &ctr_p1 : &ahead[tail - 2];
        for (unsigned j = 0; j < 4; j++) {
            st->c[2 * j] = (uint32_t)made->c[j];
            st->c[2 * j + 1] = (uint32_t)(made->c[j] >> 32);
        }
        st->carry = (uint32_t)made->carry;
    }
    rabbit_wipe_ctrs(&ctr_p, 1);
    rabbit_wipe_ctrs(&ctr_p1, 1);
    rabbit_wipe_ctrs(ahead, RABBIT_BATCH);
    rabbit_wipe_ctrs(&last, 1);
}

const struct mbsc_cipher_impl mbsc_rabbit_avx512 = {
    .name = "avx512",
    .cpu_needs = MBSC_CPU_AVX512F | MBSC_CPU_AVX512VL,
    .state_bytes = sizeof(struct rabbit_state),
    .init = mbsc_rabbit_init,
    .xor_stream = rabbit_avx512_xor,
};
