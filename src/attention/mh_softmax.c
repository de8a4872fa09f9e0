/* mh_softmax.c — the column softmax of the small-layer forward pass
 * (attention/mh_softmax.h): an AVX-512 kernel with its own exp, and the
 * scalar reference twin of both, which give the same bits.
 *
 * Why: measured on the layers of bench_t2 (16 heads of 64 x 64 logits, 1
 * core of the 2-core AMD EPYC, Zen 4), ac_softmax_cols took 86 us per layer,
 * about a ninth of f_W's forward pass at d = 256 (the rest is products at
 * the FMA peak).  It sweeps the whole matrix three times, and its exp is
 * the library's degree-13 kernel (core/exp_kernel.h) on 4-lane vectors.
 * Here each block of 8 columns is finished (maximum, exp and sum, scaling)
 * while its rows are in the L1 cache, and the exp is a table-driven one with
 * about a quarter fewer vector operations: 57 us per layer (69 us with the
 * degree-13 kernel in the same blocks).
 *
 * The exp, ac_mh_exp (doc/mathematics.md §4.11): clamp x to [-746, 710]
 * (as ac_exp_kernel: NaN passes through, -Inf gives 0, +Inf gives +Inf),
 * k = x 16/ln2 rounded to the nearest integer (ties to even; one fused
 * multiply-add with 1.5 2^52, whose low mantissa bits then hold k mod 16),
 * r = x - k ln2/16 in two fused steps (ln2/16 = L_HI + L_LO, L_HI with 38
 * significant bits), |r| <= ln2/32 + tiny, e^r by Horner with fused
 * multiply-adds on the Taylor polynomial of degree 7 (remainder below
 * 1.2e-18 relative), times T_j = 2^(j/16) rounded (j = k mod 16, a 16-entry
 * table: one vpermt2pd), times 2^m, m = floor(k/16), with one rounding
 * (vscalefpd; the twin multiplies by 2^floor(m/2) exactly, then by the
 * rest).  Relative error below 3u (u = 2^-53) for results in the normal
 * range; tests/test_mh_softmax.c checks it against MPFR, and the kernel
 * against the twin bit for bit over the whole double range. */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention/mh_softmax.h"
#include "core/exp_kernel.h" /* AC_MADD */

#define MH_EXP_INV 0x1.71547652b82fep+4   /* 16/ln2 */
#define MH_EXP_SHIFT 0x1.8p52             /* 1.5 2^52 */
#define MH_EXP_L_HI 0x1.62e42fefa0000p-5  /* ln2/16, 38 significant bits */
#define MH_EXP_L_LO 0x1.cf79abc9e3b3ap-44 /* ln2/16 - MH_EXP_L_HI, rounded */

/* 2^(j/16), j = 0..15, rounded to nearest (relative error at most 0.74 u) */
static const double mh_exp_tab[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};

/* 1/k!, k = 7 .. 2 (the Horner coefficients above 1 + r) */
#define MH_C7 0x1.a01a01a01a01ap-13
#define MH_C6 0x1.6c16c16c16c17p-10
#define MH_C5 0x1.1111111111111p-7
#define MH_C4 0x1.5555555555555p-5
#define MH_C3 0x1.5555555555555p-3

double ac_mh_exp(double x)
{
    double xc = x < -746.0 ? -746.0 : (x > 710.0 ? 710.0 : x);
    double t = AC_MADD(xc, MH_EXP_INV, MH_EXP_SHIFT);
    uint64_t tb;
    memcpy(&tb, &t, sizeof tb);
    double kd = t - MH_EXP_SHIFT;
    double r = AC_MADD(-kd, MH_EXP_L_HI, xc);
    r = AC_MADD(-kd, MH_EXP_L_LO, r);
    double p = MH_C7;
    p = AC_MADD(p, r, MH_C6);
    p = AC_MADD(p, r, MH_C5);
    p = AC_MADD(p, r, MH_C4);
    p = AC_MADD(p, r, MH_C3);
    p = AC_MADD(p, r, 0.5);
    p = AC_MADD(p, r, 1.0);
    p = AC_MADD(p, r, 1.0);
    double y = p * mh_exp_tab[tb & 15];
    /* k from the bits of t (no conversion of a NaN), m = floor(k/16) */
    int64_t k = (int64_t)(tb - 0x4338000000000000ull), m = k >> 4;
    int64_t m1 = m >> 1, m2 = m - m1;
    uint64_t b1 = (uint64_t)(m1 + 1023) << 52, b2 = (uint64_t)(m2 + 1023) << 52;
    double s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return (y * s1) * s2;
}

void ac_mh_softmax_cols_ref(double *Z, size_t rows, size_t cols)
{
    for (size_t j = 0; j < cols && rows > 0; j++) {
        double m = Z[j], s = 0.0;
        for (size_t a = 1; a < rows; a++)
            m = Z[a * cols + j] > m ? Z[a * cols + j] : m;
        for (size_t a = 0; a < rows; a++) {
            Z[a * cols + j] = ac_mh_exp(Z[a * cols + j] - m);
            s += Z[a * cols + j];
        }
        double inv = 1.0 / s;
        for (size_t a = 0; a < rows; a++)
            Z[a * cols + j] *= inv;
    }
}

#if AC_MH_SOFTMAX_SIMD
#include <immintrin.h>

/* ac_mh_exp on 8 lanes: the same operations in the same order; the last
 * scaling by one vscalefpd (y 2^floor(kd/16) rounded once, which is the
 * twin's result: y 2^m1 is exact, y in [0.97, 2.05] and |m1| <= 539) */
static inline __attribute__((always_inline)) __m512d exp8(__m512d x, __m512d t0, __m512d t1)
{
    /* max(c, x) = c > x ? c : x and min(c, x) = c < x ? c : x on x86, so
     * NaN passes through as in the scalar clamp */
    __m512d xc = _mm512_min_pd(_mm512_set1_pd(710.0), _mm512_max_pd(_mm512_set1_pd(-746.0), x));
    __m512d t = _mm512_fmadd_pd(xc, _mm512_set1_pd(MH_EXP_INV), _mm512_set1_pd(MH_EXP_SHIFT));
    __m512d kd = _mm512_sub_pd(t, _mm512_set1_pd(MH_EXP_SHIFT));
    __m512d r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(MH_EXP_L_HI), xc);
    r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(MH_EXP_L_LO), r);
    __m512d p = _mm512_set1_pd(MH_C7);
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(MH_C6));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(MH_C5));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(MH_C4));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(MH_C3));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0.5));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    /* T_j: bits 0..3 of each lane of t index the 16 entries in t0, t1 */
    __m512d y = _mm512_mul_pd(p, _mm512_permutex2var_pd(t0, _mm512_castpd_si512(t), t1));
    return _mm512_scalef_pd(y, _mm512_mul_pd(kd, _mm512_set1_pd(0.0625)));
}

static inline __mmask8 lanes(size_t left)
{
    return left >= 8 ? (__mmask8)0xff : (__mmask8)((1u << left) - 1);
}

void ac_mh_exp_array(double *y, const double *x, size_t n)
{
    __m512d t0 = _mm512_loadu_pd(mh_exp_tab), t1 = _mm512_loadu_pd(mh_exp_tab + 8);
    for (size_t i = 0; i < n; i += 8) {
        __mmask8 k = lanes(n - i);
        _mm512_mask_storeu_pd(y + i, k, exp8(_mm512_maskz_loadu_pd(k, x + i), t0, t1));
    }
}

void ac_mh_softmax_cols(double *Z, size_t rows, size_t cols)
{
    __m512d t0 = _mm512_loadu_pd(mh_exp_tab), t1 = _mm512_loadu_pd(mh_exp_tab + 8);
    if (rows == 0)
        return;
    for (size_t j = 0; j < cols; j += 8) {
        __mmask8 k = lanes(cols - j);
        double *z = Z + j;
        __m512d m = _mm512_maskz_loadu_pd(k, z);
        for (size_t a = 1; a < rows; a++) {
            /* z > m ? z : m, as in the twin */
            __m512d v = _mm512_maskz_loadu_pd(k, z + a * cols);
            m = _mm512_mask_mov_pd(m, _mm512_cmp_pd_mask(v, m, _CMP_GT_OQ), v);
        }
        __m512d s = _mm512_setzero_pd();
        for (size_t a = 0; a < rows; a++) {
            __m512d e = exp8(_mm512_sub_pd(_mm512_maskz_loadu_pd(k, z + a * cols), m), t0, t1);
            _mm512_mask_storeu_pd(z + a * cols, k, e);
            s = _mm512_add_pd(s, e);
        }
        __m512d inv = _mm512_div_pd(_mm512_set1_pd(1.0), s);
        for (size_t a = 0; a < rows; a++)
            _mm512_mask_storeu_pd(z + a * cols, k,
                                  _mm512_mul_pd(_mm512_maskz_loadu_pd(k, z + a * cols), inv));
    }
}

#else /* no AVX-512: the reference loops */

void ac_mh_exp_array(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = ac_mh_exp(x[i]);
}

void ac_mh_softmax_cols(double *Z, size_t rows, size_t cols)
{
    ac_mh_softmax_cols_ref(Z, rows, cols);
}

#endif
