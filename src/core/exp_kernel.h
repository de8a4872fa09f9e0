/* core/exp_kernel.h — the one double-precision exp kernel of the library
 * (internal).  Used by the training layers (ac_nn_exp, softmax, GELU) and
 * by the double forward pass of the attention layers; the certified
 * enclosure ac_exp_enclose (interval.c) shares its reduction constants and
 * adds its own error analysis on a non-fused Horner scheme.
 *
 * exp(x) = 2^k e^r, k = nearest integer to x/ln2, r = x - k ln2 (Cody and
 * Waite: ln2 = LN2_HI + LN2_LO with 32 significant bits in LN2_HI, so k
 * LN2_HI is exact for |k| < 2^21 and the first subtraction is exact by
 * Sterbenz), e^r by Horner on the Taylor polynomial of degree 13
 * (|r| <= ln2/2 + tiny: remainder |r|^14/14! < 5e-18 relative), fused
 * multiply-adds where the target has them.  Relative error below 2u
 * (u = 2^-53) for -708.39 <= x <= 709.78 (tested against MPFR's correctly
 * rounded exp in tests/test_nn.c); below, gradual underflow (within one
 * subnormal step plus 2u), 0 under -745.14; above, +Inf; NaN gives NaN.
 * 2^k is applied as 2^floor(k/2) 2^(k - floor(k/2)), two exact scalings
 * whose second alone can round (subnormal results) or overflow.
 * Branch-free, so that loops over it vectorise.
 */
#ifndef ATTNCHECK_CORE_EXP_KERNEL_H
#define ATTNCHECK_CORE_EXP_KERNEL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define AC_EXP_LOG2E 0x1.71547652b82fep0      /* 1/ln 2 */
#define AC_EXP_LN2_HI 0x1.62e42feep-1         /* ln 2, 32 significant bits (fdlibm) */
#define AC_EXP_LN2_LO 0x1.a39ef35793c76p-33   /* ln 2 - AC_EXP_LN2_HI, rounded */
#define AC_EXP_SHIFT 0x1.8p52                 /* x + SHIFT - SHIFT rounds x to an integer */

/* a*b + c, fused where the hardware has it (the compiler never contracts:
 * -ffp-contract=off; this is an explicit, exactly rounded fma). */
#ifdef __FMA__
#define AC_MADD(a, b, c) fma((a), (b), (c))
#else
#define AC_MADD(a, b, c) ((a) * (b) + (c))
#endif

static inline __attribute__((always_inline)) double ac_exp_kernel(double x)
{
    /* clamp so that k stays within [-1077, 1025]; +-Inf and out-of-range
     * values still over/underflow in the final scaling, NaN propagates */
    double xc = x < -746.0 ? -746.0 : (x > 710.0 ? 710.0 : x);
    /* k = nearest integer to x / ln 2 (in the low bits of kd) */
    double kd = xc * AC_EXP_LOG2E + AC_EXP_SHIFT;
    uint64_t kb;
    memcpy(&kb, &kd, sizeof kb);
    kd -= AC_EXP_SHIFT;
    double r = xc - kd * AC_EXP_LN2_HI;
    r = r - kd * AC_EXP_LN2_LO;
    double p = 0x1.6124613a86d09p-33;         /* 1/13! */
    p = AC_MADD(p, r, 0x1.1eed8eff8d898p-29); /* 1/12! */
    p = AC_MADD(p, r, 0x1.ae64567f544e4p-26); /* 1/11! */
    p = AC_MADD(p, r, 0x1.27e4fb7789f5cp-22); /* 1/10! */
    p = AC_MADD(p, r, 0x1.71de3a556c734p-19); /* 1/9! */
    p = AC_MADD(p, r, 0x1.a01a01a01a01ap-16); /* 1/8! */
    p = AC_MADD(p, r, 0x1.a01a01a01a01ap-13); /* 1/7! */
    p = AC_MADD(p, r, 0x1.6c16c16c16c17p-10); /* 1/6! */
    p = AC_MADD(p, r, 0x1.1111111111111p-7);  /* 1/5! */
    p = AC_MADD(p, r, 0x1.5555555555555p-5);  /* 1/4! */
    p = AC_MADD(p, r, 0x1.5555555555555p-3);  /* 1/3! */
    p = AC_MADD(p, r, 0.5);
    p = AC_MADD(p, r, 1.0);
    p = AC_MADD(p, r, 1.0);
    int64_t k = (int64_t)(kb - 0x4338000000000000ull);
    int64_t k1 = k >> 1, k2 = k - k1;
    uint64_t b1 = (uint64_t)(k1 + 1023) << 52, b2 = (uint64_t)(k2 + 1023) << 52;
    double s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return (p * s1) * s2;
}

#endif /* ATTNCHECK_CORE_EXP_KERNEL_H */
