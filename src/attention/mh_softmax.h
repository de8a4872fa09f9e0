/* attention/mh_softmax.h — the column softmax of the small-layer forward
 * pass (internal; mh_softmax.c, doc/mathematics.md §4.11).
 *
 * Per column j of Z: m_j = max_a Z(a, j) (exact in any order),
 * e = ac_exp_tab16(Z(a, j) - m_j) for a = 0, 1, ..., rows-1 with the sum s_j
 * accumulated in that order, then Z(a, j) = e (1/s_j): ac_softmax_cols of
 * attention/softmax.h with the faster table exp of core/exp_kernel.h
 * (relative error below 3u instead of 2u).  With AVX-512
 * (AC_MH_SOFTMAX_SIMD = 1) ac_mh_softmax_cols runs down blocks of 8 columns
 * (a masked block at the end) with the 8-lane exp; ac_mh_softmax_cols_ref is
 * its scalar reference twin, and the two give the same bits
 * (src/attention/test/test_mh_softmax.c).  Without AVX-512 the first is the
 * second. */
#ifndef AC_ATTENTION_MH_SOFTMAX_H
#define AC_ATTENTION_MH_SOFTMAX_H

#include <stddef.h>

#if defined(__AVX512F__) && defined(__FMA__)
#define AC_MH_SOFTMAX_SIMD 1
#else
#define AC_MH_SOFTMAX_SIMD 0
#endif

/* Column softmax of the rows x cols row-major matrix Z (row stride cols), in
 * place, and its scalar twin. */
void ac_mh_softmax_cols(double *Z, size_t rows, size_t cols);
void ac_mh_softmax_cols_ref(double *Z, size_t rows, size_t cols);

#endif /* AC_ATTENTION_MH_SOFTMAX_H */
