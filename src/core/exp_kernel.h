/* core/exp_kernel.h — the exponentials of the library, and which is which
 * (internal).  All three live in src/core:
 *
 *   the rigorous enclosure  ac_exp_enclose, _array, _shift (interval.c,
 *                           declared in attncheck/interval.h):
 *                           lo <= e^x <= hi, proved (doc/mathematics.md
 *                           §2.4): the only double exp a certificate rests
 *                           on (its ball stages use Arb's).
 *   the fast kernel         ac_exp_kernel below, and ac_exp_kernel8, its 8
 *                           AVX-512 lanes (the same bits): relative error
 *                           below 2u.  The double softmax
 *                           (attention/softmax.c) and the training layers
 *                           (ac_nn_exp, softmax rows and GELU of src/nn).
 *   the table kernel        ac_exp_tab16 below, ac_exp_tab16_array
 *                           (exp_kernel.c) and ac_exp_tab16_8 (8 AVX-512
 *                           lanes; all the same bits): relative error below
 *                           3u (doc/mathematics.md §4.11), about a quarter
 *                           fewer vector operations than ac_exp_kernel.  The
 *                           softmax of the multi-head forward pass
 *                           (attention/mh_softmax.c).
 *
 * The two kernels are fast, not rigorous: their error bounds are derived in
 * the comments (and §4.11) and tested against MPFR's correctly rounded exp
 * (src/core/test/test_exp.c, which also checks every vector form against
 * its scalar twin bit for bit); nothing is proved with them
 * (doc/mathematics.md §1.3).  The C library's exp stays where an
 * independent one is the point or no kernel is needed: the naive reference
 * twins the kernels are tested against (ac_nn_attention_forward_ref,
 * mh_forward.c's reference pass), the scores model's log-sum-exp loss and
 * fit-p's KL (src/nn), the estimate f_approx of theorem1/dist_d1.c, and
 * the laws of src/conditioning (edelman.c, predict.c).
 *
 * ac_exp_kernel: exp(x) = 2^k e^r, k = nearest integer to x/ln2,
 * r = x - k ln2 (Cody and Waite: ln2 = LN2_HI + LN2_LO with 32 significant
 * bits in LN2_HI, so k LN2_HI is exact for |k| < 2^21 and the first
 * subtraction is exact by Sterbenz), e^r by Horner on the Taylor polynomial
 * of degree 13 (|r| <= ln2/2 + tiny: remainder |r|^14/14! < 5e-18
 * relative), fused multiply-adds where the target has them.  Relative error
 * below 2u (u = 2^-53) for -708.39 <= x <= 709.78; below, gradual underflow
 * (within one subnormal step plus 2u), 0 under -745.14; above, +Inf; NaN
 * gives NaN.  2^k is applied as 2^floor(k/2) 2^(k - floor(k/2)), two exact
 * scalings whose second alone can round (subnormal results) or overflow.
 * Branch-free, so that loops over it vectorise.
 */
#ifndef ATTNCHECK_CORE_EXP_KERNEL_H
#define ATTNCHECK_CORE_EXP_KERNEL_H

#include <math.h>
#include <stddef.h>
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

/* y 2^k for the two kernels below (y in [0.69, 2.05], -1078 <= k <= 1025
 * after their clamped reductions), as 2^floor(k/2) 2^(k - floor(k/2)): two
 * scalings by normal powers of two whose first is exact and whose second
 * alone can round (a subnormal result) or overflow */
static inline __attribute__((always_inline)) double ac_exp_scale2(double y, int64_t k)
{
    int64_t k1 = k >> 1, k2 = k - k1;
    uint64_t b1 = (uint64_t)(k1 + 1023) << 52, b2 = (uint64_t)(k2 + 1023) << 52;
    double s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return (y * s1) * s2;
}

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
    return ac_exp_scale2(p, (int64_t)(kb - 0x4338000000000000ull));
}

/* ---- the table kernel (doc/mathematics.md §4.11) -------------------------
 *
 * ac_exp_tab16: clamp x to [-746, 710] (as ac_exp_kernel: NaN passes
 * through, -Inf gives 0, +Inf gives +Inf), k = x 16/ln2 rounded to the
 * nearest integer (ties to even; one fused multiply-add with 1.5 2^52, whose
 * low mantissa bits then hold k mod 16), r = x - k ln2/16 in two fused steps
 * (ln2/16 = L_HI + L_LO, L_HI with 38 significant bits), |r| <= ln2/32 +
 * tiny, e^r by Horner with fused multiply-adds on the Taylor polynomial of
 * degree 7 (remainder below 1.2e-18 relative), times T_j = 2^(j/16) rounded
 * (j = k mod 16, a 16-entry table), times 2^m, m = floor(k/16), with one
 * rounding (the scalar form multiplies by 2^floor(m/2) exactly, then by the
 * rest; the 8 lanes use one vscalefpd).  Relative error below 3u when e^x
 * is a normal double; gradual underflow below (one more rounding to the
 * subnormal grid), 0 under about -745.13, +Inf above about 709.78, NaN for
 * NaN.  Measured (bench_t2's layers, one Zen 4 core): the multi-head
 * softmax with it takes 57 us per layer, 69 us with ac_exp_kernel. */
#define AC_EXP16_INV 0x1.71547652b82fep+4   /* 16/ln2 */
#define AC_EXP16_SHIFT 0x1.8p52             /* 1.5 2^52 */
#define AC_EXP16_L_HI 0x1.62e42fefa0000p-5  /* ln2/16, 38 significant bits */
#define AC_EXP16_L_LO 0x1.cf79abc9e3b3ap-44 /* ln2/16 - AC_EXP16_L_HI, rounded */

/* 1/k!, k = 7 .. 3 (the Horner coefficients above 1/2, 1 + r) */
#define AC_EXP16_C7 0x1.a01a01a01a01ap-13
#define AC_EXP16_C6 0x1.6c16c16c16c17p-10
#define AC_EXP16_C5 0x1.1111111111111p-7
#define AC_EXP16_C4 0x1.5555555555555p-5
#define AC_EXP16_C3 0x1.5555555555555p-3

/* 2^(j/16), j = 0..15, rounded to nearest (relative error at most 0.74 u;
 * exp_kernel.c) */
extern const double ac_exp_tab16_table[16];

static inline __attribute__((always_inline)) double ac_exp_tab16(double x)
{
    double xc = x < -746.0 ? -746.0 : (x > 710.0 ? 710.0 : x);
    double t = AC_MADD(xc, AC_EXP16_INV, AC_EXP16_SHIFT);
    uint64_t tb;
    memcpy(&tb, &t, sizeof tb);
    double kd = t - AC_EXP16_SHIFT;
    double r = AC_MADD(-kd, AC_EXP16_L_HI, xc);
    r = AC_MADD(-kd, AC_EXP16_L_LO, r);
    double p = AC_EXP16_C7;
    p = AC_MADD(p, r, AC_EXP16_C6);
    p = AC_MADD(p, r, AC_EXP16_C5);
    p = AC_MADD(p, r, AC_EXP16_C4);
    p = AC_MADD(p, r, AC_EXP16_C3);
    p = AC_MADD(p, r, 0.5);
    p = AC_MADD(p, r, 1.0);
    p = AC_MADD(p, r, 1.0);
    double y = p * ac_exp_tab16_table[tb & 15];
    /* k from the bits of t (no conversion of a NaN), m = floor(k/16) */
    int64_t k = (int64_t)(tb - 0x4338000000000000ull);
    return ac_exp_scale2(y, k >> 4);
}

/* ac_exp_tab16 on n doubles, x[i] -> y[i] (8 lanes at a time with AVX-512;
 * the same bits as the scalar function) (exp_kernel.c). */
void ac_exp_tab16_array(double *y, const double *x, size_t n);

/* ---- 8 lanes (AVX-512) ----------------------------------------------------- */

#if defined(__AVX512F__) && defined(__FMA__)
#define AC_EXP_SIMD 1
#include <immintrin.h>

/* ac_exp_kernel on 8 lanes: the same steps, in the same order, so every
 * lane has the bits of the scalar kernel */
static inline __attribute__((always_inline)) __m512d ac_exp_kernel8(__m512d x)
{
    /* max(c, x) = c > x ? c : x and min(c, x) = c < x ? c : x (x86): NaN
     * passes through as in the scalar clamp */
    __m512d xc = _mm512_min_pd(_mm512_set1_pd(710.0), _mm512_max_pd(_mm512_set1_pd(-746.0), x));
    __m512d kd = _mm512_add_pd(_mm512_mul_pd(xc, _mm512_set1_pd(AC_EXP_LOG2E)),
                               _mm512_set1_pd(AC_EXP_SHIFT));
    __m512i kb = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, _mm512_set1_pd(AC_EXP_SHIFT));
    __m512d r = _mm512_sub_pd(xc, _mm512_mul_pd(kd, _mm512_set1_pd(AC_EXP_LN2_HI)));
    r = _mm512_sub_pd(r, _mm512_mul_pd(kd, _mm512_set1_pd(AC_EXP_LN2_LO)));
    __m512d p = _mm512_set1_pd(0x1.6124613a86d09p-33);
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.1eed8eff8d898p-29));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.ae64567f544e4p-26));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.27e4fb7789f5cp-22));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.71de3a556c734p-19));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.a01a01a01a01ap-16));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.a01a01a01a01ap-13));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.6c16c16c16c17p-10));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.1111111111111p-7));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.5555555555555p-5));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.5555555555555p-3));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0.5));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    __m512i k = _mm512_sub_epi64(kb, _mm512_set1_epi64((long long)0x4338000000000000ull));
    __m512i k1 = _mm512_srai_epi64(k, 1), k2 = _mm512_sub_epi64(k, k1);
    __m512i bias = _mm512_set1_epi64(1023);
    __m512d s1 = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(k1, bias), 52));
    __m512d s2 = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(k2, bias), 52));
    return _mm512_mul_pd(_mm512_mul_pd(p, s1), s2);
}

/* ac_exp_tab16 on 8 lanes: the same operations in the same order; the last
 * scaling by one vscalefpd (y 2^floor(kd/16) rounded once, which is the
 * scalar result: y 2^m1 is exact, y in [0.97, 2.05] and |m1| <= 539).  t0,
 * t1: the table, _mm512_loadu_pd(ac_exp_tab16_table) and (.. + 8), loaded
 * once by the caller's loop. */
static inline __attribute__((always_inline)) __m512d ac_exp_tab16_8(__m512d x, __m512d t0,
                                                                    __m512d t1)
{
    /* max(c, x) = c > x ? c : x and min(c, x) = c < x ? c : x on x86, so
     * NaN passes through as in the scalar clamp */
    __m512d xc = _mm512_min_pd(_mm512_set1_pd(710.0), _mm512_max_pd(_mm512_set1_pd(-746.0), x));
    __m512d t =
        _mm512_fmadd_pd(xc, _mm512_set1_pd(AC_EXP16_INV), _mm512_set1_pd(AC_EXP16_SHIFT));
    __m512d kd = _mm512_sub_pd(t, _mm512_set1_pd(AC_EXP16_SHIFT));
    __m512d r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(AC_EXP16_L_HI), xc);
    r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(AC_EXP16_L_LO), r);
    __m512d p = _mm512_set1_pd(AC_EXP16_C7);
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AC_EXP16_C6));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AC_EXP16_C5));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AC_EXP16_C4));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(AC_EXP16_C3));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0.5));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    /* T_j: bits 0..3 of each lane of t index the 16 entries in t0, t1 */
    __m512d y = _mm512_mul_pd(p, _mm512_permutex2var_pd(t0, _mm512_castpd_si512(t), t1));
    return _mm512_scalef_pd(y, _mm512_mul_pd(kd, _mm512_set1_pd(0.0625)));
}
#else
#define AC_EXP_SIMD 0
#endif

#endif /* ATTNCHECK_CORE_EXP_KERNEL_H */
