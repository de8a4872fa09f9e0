/* attention/mh_softmax.h — the column softmax of the small-layer forward
 * pass (internal; mh_softmax.c).
 *
 * ac_mh_softmax_cols(Z, rows, cols) computes exactly what
 * ac_softmax_cols(Z, rows, cols, colmax, colsum) of attention/softmax.h
 * computes, to the last bit: per column j, m_j = max_a Z(a, j) (exact in any
 * order), e = ac_exp_kernel(Z(a, j) - m_j) for a = 0, 1, ..., rows-1 with
 * the sum s_j accumulated in that order, then Z(a, j) = e 1/s_j.  With
 * AVX-512 (AC_MH_SOFTMAX_SIMD = 1) it runs down blocks of 8 columns (a
 * masked block at the end), so that a block's three passes stay in the L1
 * cache and every exp is a vector one; ac_softmax_cols is its reference
 * twin (tests/test_mh_softmax.c checks them bit for bit).  Without AVX-512
 * it is ac_softmax_cols with scratch on the stack or the heap. */
#ifndef AC_ATTENTION_MH_SOFTMAX_H
#define AC_ATTENTION_MH_SOFTMAX_H

#include <stddef.h>

#if defined(__AVX512F__) && defined(__FMA__)
#define AC_MH_SOFTMAX_SIMD 1
#else
#define AC_MH_SOFTMAX_SIMD 0
#endif

/* Column softmax of the rows x cols row-major matrix Z (row stride cols), in
 * place.  scratch: 2 cols doubles, used only without AVX-512. */
void ac_mh_softmax_cols(double *Z, size_t rows, size_t cols, double *scratch);

/* ac_exp_kernel (core/exp_kernel.h) on n doubles, x[i] -> y[i]: the vector
 * exp of ac_mh_softmax_cols, exposed for its test (same bits as the scalar
 * kernel for every double, NaN and infinities included). */
void ac_mh_exp_array(double *y, const double *x, size_t n);

#endif /* AC_ATTENTION_MH_SOFTMAX_H */
