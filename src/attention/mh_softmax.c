/* mh_softmax.c — the column softmax of the small-layer forward pass
 * (attention/mh_softmax.h): an AVX-512 kernel with the table exp of
 * core/exp_kernel.h, and the scalar reference twin, which give the same
 * bits.
 *
 * Why: measured on the layers of bench_t2 (16 heads of 64 x 64 logits, 1
 * core of the 2-core AMD EPYC, Zen 4), ac_softmax_cols took 86 us per layer,
 * about a ninth of f_W's forward pass at d = 256 (the rest is products at
 * the FMA peak).  It sweeps the whole matrix three times, and its exp is
 * the library's degree-13 kernel (core/exp_kernel.h) on 4-lane vectors.
 * Here each block of 8 columns is finished (maximum, exp and sum, scaling)
 * while its rows are in the L1 cache, and the exp is the table-driven one
 * (ac_exp_tab16, core/exp_kernel.h, doc/mathematics.md §4.11) with about a
 * quarter fewer vector operations: 57 us per layer (69 us with the
 * degree-13 kernel in the same blocks).  src/attention/test/test_mh_softmax.c
 * checks the kernel against the twin bit for bit. */
#include <config.h>

#include "attention/mh_softmax.h"
#include "core/exp_kernel.h"

void ac_mh_softmax_cols_ref(double *Z, size_t rows, size_t cols)
{
    for (size_t j = 0; j < cols && rows > 0; j++) {
        double m = Z[j], s = 0.0;
        for (size_t a = 1; a < rows; a++)
            m = Z[a * cols + j] > m ? Z[a * cols + j] : m;
        for (size_t a = 0; a < rows; a++) {
            Z[a * cols + j] = ac_exp_tab16(Z[a * cols + j] - m);
            s += Z[a * cols + j];
        }
        double inv = 1.0 / s;
        for (size_t a = 0; a < rows; a++)
            Z[a * cols + j] *= inv;
    }
}

#if AC_MH_SOFTMAX_SIMD
#include <immintrin.h>

static inline __mmask8 lanes(size_t left)
{
    return left >= 8 ? (__mmask8)0xff : (__mmask8)((1u << left) - 1);
}

void ac_mh_softmax_cols(double *Z, size_t rows, size_t cols)
{
    __m512d t0 = _mm512_loadu_pd(ac_exp_tab16_table), t1 = _mm512_loadu_pd(ac_exp_tab16_table + 8);
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
            __m512d e =
                ac_exp_tab16_8(_mm512_sub_pd(_mm512_maskz_loadu_pd(k, z + a * cols), m), t0, t1);
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

void ac_mh_softmax_cols(double *Z, size_t rows, size_t cols)
{
    ac_mh_softmax_cols_ref(Z, rows, cols);
}

#endif
