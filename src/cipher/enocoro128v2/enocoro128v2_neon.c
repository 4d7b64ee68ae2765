/*
 * enocoro128v2_neon.c - Enocoro-128v2 with its S-box evaluated sixteen at
 * a time by in-register nibble shuffles (NEON tbl on AArch64, vtbl on
 * 32-bit ARM), constant time.
 *
 * The same method as enocoro128v2_ssse3.c (the tables and why they give
 * s8 are explained there) and the same 4-round lookahead loop
 * (enocoro128v2_lookahead.h); only the shuffle instruction differs.  tbl
 * picks a byte of a register by index (out-of-range indices give 0, and
 * ours are all below 16): no memory address depends on a secret.
 *
 * On 32-bit ARM this file alone is built with -mfpu=neon and the registry
 * runs it only when the kernel reports HWCAP_NEON (cpu.c).
 */
#include "enocoro128v2.h"

#include <arm_neon.h>

#if defined(__aarch64__)
typedef uint8x16_t enocoro_tab;
#define TAB_LOAD(p) vld1q_u8(p)
#define TBL(t, i)   vqtbl1q_u8((t), (i))
#define TAB_OF(v)   (v)
#else
typedef uint8x8x2_t enocoro_tab;
MBSC_ALWAYS_INLINE enocoro_tab tab_load(const uint8_t *p)
{
    enocoro_tab t;
    t.val[0] = vld1_u8(p);
    t.val[1] = vld1_u8(p + 8);
    return t;
}
MBSC_ALWAYS_INLINE uint8x16_t tbl16(enocoro_tab t, uint8x16_t i)
{
    return vcombine_u8(vtbl2_u8(t, vget_low_u8(i)), vtbl2_u8(t, vget_high_u8(i)));
}
MBSC_ALWAYS_INLINE enocoro_tab tab_of(uint8x16_t v)
{
    enocoro_tab t;
    t.val[0] = vget_low_u8(v);
    t.val[1] = vget_high_u8(v);
    return t;
}
#define TAB_LOAD(p) tab_load(p)
#define TBL(t, i)   tbl16((t), (i))
#define TAB_OF(v)   tab_of(v)
#endif

static const uint8_t tab_s4[16] = {0x01, 0x03, 0x09, 0x0a, 0x05, 0x0e, 0x07, 0x02,
                                   0x0d, 0x00, 0x0c, 0x0f, 0x04, 0x08, 0x06, 0x0b};
static const uint8_t tab_a[16] = {0x0b, 0x09, 0x03, 0x00, 0x0f, 0x04, 0x0d, 0x08,
                                  0x07, 0x0a, 0x06, 0x05, 0x0e, 0x02, 0x0c, 0x01};
static const uint8_t tab_b[16] = {0x04, 0x0c, 0x02, 0x0e, 0x07, 0x0d, 0x0f, 0x08,
                                  0x01, 0x00, 0x05, 0x09, 0x03, 0x06, 0x0b, 0x0a};
static const uint8_t tab_bp[16] = {0x01, 0x09, 0x07, 0x0b, 0x02, 0x08, 0x0a, 0x0d,
                                   0x04, 0x05, 0x00, 0x0c, 0x06, 0x03, 0x0e, 0x0f};
static const uint8_t tab_h[16] = {0x20, 0x60, 0x21, 0x41, 0xa0, 0xc1, 0xe0, 0x40,
                                  0xa1, 0x00, 0x81, 0xe1, 0x80, 0x01, 0xc0, 0x61};
static const uint8_t tab_l[16] = {0x02, 0x06, 0x12, 0x14, 0x0a, 0x1c, 0x0e, 0x04,
                                  0x1a, 0x00, 0x18, 0x1e, 0x08, 0x10, 0x0c, 0x16};
/* Output word k = round k (enocoro128v2_lookahead.h). */
static const uint8_t tab_order[16] = {3, 7, 11, 15, 2, 6, 10, 14, 1, 5, 9, 13, 0, 4, 8, 12};

MBSC_ALWAYS_INLINE void enocoro_sbox16(uint64_t *lo, uint64_t *hi)
{
    uint8x16_t x = vcombine_u8(vcreate_u8(*lo), vcreate_u8(*hi));
    uint8x16_t xl = vandq_u8(x, vdupq_n_u8(0x0f));
    uint8x16_t xh = vshrq_n_u8(x, 4);
    uint8x16_t zh = veorq_u8(TBL(TAB_LOAD(tab_a), xh), TBL(TAB_LOAD(tab_b), xl));
    uint8x16_t zl = veorq_u8(TBL(TAB_LOAD(tab_bp), xh), TBL(TAB_LOAD(tab_s4), xl));
    uint8x16_t s = vorrq_u8(TBL(TAB_LOAD(tab_h), zh), TBL(TAB_LOAD(tab_l), zl));
    uint64x2_t r = vreinterpretq_u64_u8(TBL(TAB_OF(s), vld1q_u8(tab_order)));

    *lo = vgetq_lane_u64(r, 0);
    *hi = vgetq_lane_u64(r, 1);
}

#include "enocoro128v2_lookahead.h"

const struct mbsc_cipher_impl mbsc_enocoro128v2_neon = {
    .name = "neon",
    .cpu_needs = MBSC_CPU_NEON,
    .state_bytes = sizeof(struct enocoro_state),
    .init = mbsc_enocoro_init,
    .xor_stream = enocoro_lookahead_xor,
};
