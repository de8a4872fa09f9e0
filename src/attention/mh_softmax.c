/* mh_softmax.c — the column softmax of the small-layer forward pass in
 * AVX-512 vectors (attention/mh_softmax.h), with the same bits as its
 * reference twin ac_softmax_cols (attention/softmax.c).
 *
 * Measured on the layers of bench_t2 (16 heads of 64 x 64 logits, 1 core of
 * the 2-core AMD EPYC, Zen 4): ac_softmax_cols took 86 us per layer, about
 * a ninth of the whole forward pass of f_W; it sweeps the whole matrix three
 * times and GCC vectorises its exp loop with 4-lane vectors.  Here each
 * block of 8 columns is finished (maximum, exp and sum, scaling) while its
 * rows are in the L1 cache, and each exp is one 8-lane kernel in which two
 * AVX-512 instructions replace the scalar kernel's rounding and scaling
 * sequences by the same operations:
 *   - kd = roundscale(xc log2e): the scalar kernel adds and subtracts
 *     1.5 2^52 to the rounded product, which rounds it to the nearest
 *     integer, ties to even, for |xc log2e| < 2^51; roundscale with
 *     _MM_FROUND_TO_NEAREST_INT is that rounding;
 *   - scalef(p, kd) = p 2^kd rounded once: the scalar kernel computes
 *     (p 2^k1) 2^k2 with k1 = floor(k/2), k2 = k - k1; for the clamped
 *     arguments |k| <= 1077 and p in [0.7, 1.5], p 2^k1 is a normal number
 *     and exact, so the only rounding is the last product's, the correctly
 *     rounded p 2^k (subnormal, or an overflow to +Inf), which is also
 *     scalef's result.
 * The other steps are the scalar kernel's, in its order (product and sum
 * not fused where it does not fuse them).  tests/test_mh_softmax.c checks
 * the exp against ac_exp_kernel bit for bit over the whole double range
 * (subnormal results, overflow, infinities, NaN) and the softmax against
 * ac_softmax_cols on many shapes. */
#include <config.h>

#include <stdlib.h>

#include "attention/mh_softmax.h"
#include "attention/softmax.h"
#include "core/exp_kernel.h"

#if AC_MH_SOFTMAX_SIMD
#include <immintrin.h>

static inline __attribute__((always_inline)) __m512d exp8(__m512d x)
{
    /* the clamp: max(c, x) = c > x ? c : x and min(c, x) = c < x ? c : x
     * on x86, so NaN passes through as in the scalar kernel */
    __m512d xc = _mm512_min_pd(_mm512_set1_pd(710.0), _mm512_max_pd(_mm512_set1_pd(-746.0), x));
    __m512d kd = _mm512_roundscale_pd(_mm512_mul_pd(xc, _mm512_set1_pd(AC_EXP_LOG2E)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
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
    return _mm512_scalef_pd(p, kd);
}

static inline __mmask8 lanes(size_t left)
{
    return left >= 8 ? (__mmask8)0xff : (__mmask8)((1u << left) - 1);
}

void ac_mh_exp_array(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __mmask8 k = lanes(n - i);
        _mm512_mask_storeu_pd(y + i, k, exp8(_mm512_maskz_loadu_pd(k, x + i)));
    }
}

void ac_mh_softmax_cols(double *Z, size_t rows, size_t cols, double *scratch)
{
    (void)scratch;
    if (rows == 0)
        return;
    for (size_t j = 0; j < cols; j += 8) {
        __mmask8 k = lanes(cols - j);
        double *z = Z + j;
        __m512d m = _mm512_maskz_loadu_pd(k, z);
        for (size_t a = 1; a < rows; a++) {
            /* z > m ? z : m, as in the twin (NaN in z is skipped there too) */
            __m512d v = _mm512_maskz_loadu_pd(k, z + a * cols);
            m = _mm512_mask_mov_pd(m, _mm512_cmp_pd_mask(v, m, _CMP_GT_OQ), v);
        }
        __m512d s = _mm512_setzero_pd();
        for (size_t a = 0; a < rows; a++) {
            __m512d e = exp8(_mm512_sub_pd(_mm512_maskz_loadu_pd(k, z + a * cols), m));
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
        y[i] = ac_exp_kernel(x[i]);
}

void ac_mh_softmax_cols(double *Z, size_t rows, size_t cols, double *scratch)
{
    ac_softmax_cols(Z, rows, cols, scratch, scratch + cols);
}

#endif
