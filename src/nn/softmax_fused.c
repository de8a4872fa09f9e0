/* softmax_fused.c — the softmax of one attention row in AVX-512 vectors
 * with masked tails (nn_softmax_row, attn_fused.h).
 *
 * The rows of causal attention are short and of every length 1..T, so a
 * loop vectorised by the compiler (ac_softmax_row, src/attention/softmax.c)
 * spends much of its time in scalar remainders of up to 7 elements, each a
 * full exp kernel.  Here every element goes through the vector loop; lanes
 * past the end are masked (never read, never written).  Each exp is
 * ac_exp_kernel8 of core/exp_kernel.h, ac_exp_kernel lane by lane: the same
 * operations in the same order (Cody-Waite reduction, Horner with fused
 * multiply-adds, two exact power-of-two scalings), so every e_j has the same
 * bits as the scalar kernel; the maximum is exact in any order; only the sum
 * of the e_j is associated differently (8 lane sums, then the lanes in a
 * fixed order), which moves the result by at most (len + 8) u relative per
 * entry.  The order depends only on len, never on threads.  The reference
 * twin is nn_softmax_row_ref (the scalar kernel in index order);
 * src/nn/test/test_nn_attn.c checks one against the other on every length
 * 1..130 and on rows with -inf-like and huge spreads.
 *
 * nn_softmax_backward_row: d = scale a (d - a . d) on the first len
 * entries, 0 up to n; the dot product in 8 lane sums (a loop whose sum
 * runs in index order cannot use the vector adds: it was a chain of
 * dependent scalar additions, the largest single cost of the fused
 * backward); per entry the same operations as the twin. */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nn/attn_fused.h"
#include "core/exp_kernel.h"

void nn_softmax_row_ref(double *a, size_t len)
{
    double m = a[0];
    for (size_t j = 1; j < len; j++)
        m = a[j] > m ? a[j] : m;
    double s = 0;
    for (size_t j = 0; j < len; j++) {
        a[j] = ac_exp_kernel(a[j] - m);
        s += a[j];
    }
    double inv = 1.0 / s;
    for (size_t j = 0; j < len; j++)
        a[j] *= inv;
}

void nn_softmax_backward_row_ref(double *d, const double *a, size_t len, size_t n, double scale)
{
    double s = 0;
    for (size_t j = 0; j < len; j++)
        s += a[j] * d[j];
    for (size_t j = 0; j < len; j++)
        d[j] = a[j] * (d[j] - s) * scale;
    for (size_t j = len; j < n; j++)
        d[j] = 0;
}

#if AC_EXP_SIMD
#include <immintrin.h>

static inline __mmask8 tail_mask(size_t j, size_t len)
{
    size_t n = len - j;
    return n >= 8 ? (__mmask8)0xff : (__mmask8)((1u << n) - 1);
}

void nn_softmax_row(double *a, size_t len)
{
    if (len == 0)
        return;
    __m512d vm = _mm512_set1_pd(a[0]);
    for (size_t j = 0; j < len; j += 8)
        vm = _mm512_mask_max_pd(vm, tail_mask(j, len), vm,
                                _mm512_maskz_loadu_pd(tail_mask(j, len), a + j));
    double m = _mm512_reduce_max_pd(vm); /* exact in any order */
    __m512d mv = _mm512_set1_pd(m), vs = _mm512_setzero_pd();
    for (size_t j = 0; j < len; j += 8) {
        __mmask8 k = tail_mask(j, len);
        __m512d e = ac_exp_kernel8(_mm512_sub_pd(_mm512_maskz_loadu_pd(k, a + j), mv));
        e = _mm512_maskz_mov_pd(k, e);
        _mm512_mask_storeu_pd(a + j, k, e);
        vs = _mm512_add_pd(vs, e);
    }
    /* the 8 lane sums in a fixed order */
    double l[8];
    _mm512_storeu_pd(l, vs);
    double s = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    __m512d inv = _mm512_set1_pd(1.0 / s);
    for (size_t j = 0; j < len; j += 8) {
        __mmask8 k = tail_mask(j, len);
        _mm512_mask_storeu_pd(a + j, k, _mm512_mul_pd(_mm512_maskz_loadu_pd(k, a + j), inv));
    }
}

void nn_softmax_backward_row(double *d, const double *a, size_t len, size_t n, double scale)
{
    __m512d vs = _mm512_setzero_pd();
    for (size_t j = 0; j < len; j += 8) {
        __mmask8 k = tail_mask(j, len);
        vs = _mm512_add_pd(vs, _mm512_mul_pd(_mm512_maskz_loadu_pd(k, a + j),
                                             _mm512_maskz_loadu_pd(k, d + j)));
    }
    double l[8];
    _mm512_storeu_pd(l, vs);
    double s = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    __m512d sv = _mm512_set1_pd(s), sc = _mm512_set1_pd(scale);
    for (size_t j = 0; j < len; j += 8) {
        __mmask8 k = tail_mask(j, len);
        __m512d x = _mm512_sub_pd(_mm512_maskz_loadu_pd(k, d + j), sv);
        x = _mm512_mul_pd(_mm512_mul_pd(_mm512_maskz_loadu_pd(k, a + j), x), sc);
        _mm512_mask_storeu_pd(d + j, k, x);
    }
    if (n > len)
        memset(d + len, 0, (n - len) * sizeof *d);
}

#else

void nn_softmax_row(double *a, size_t len)
{
    nn_softmax_row_ref(a, len);
}

void nn_softmax_backward_row(double *d, const double *a, size_t len, size_t n, double scale)
{
    nn_softmax_backward_row_ref(d, a, len, n, scale);
}

#endif
