/* exp_kernel.c — the out-of-line parts of the table kernel of
 * core/exp_kernel.h (doc/mathematics.md §4.11): its table of 2^(j/16) and
 * ac_exp_tab16 on arrays, 8 lanes at a time with AVX-512 (the same bits as
 * the scalar function), else the scalar loop. */
#include <config.h>

#include <stddef.h>

#include "core/exp_kernel.h"

/* 2^(j/16), j = 0..15, rounded to nearest (relative error at most 0.74 u) */
const double ac_exp_tab16_table[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};

#if AC_EXP_SIMD

void ac_exp_tab16_array(double *y, const double *x, size_t n)
{
    __m512d t0 = _mm512_loadu_pd(ac_exp_tab16_table), t1 = _mm512_loadu_pd(ac_exp_tab16_table + 8);
    for (size_t i = 0; i < n; i += 8) {
        __mmask8 k = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1);
        _mm512_mask_storeu_pd(y + i, k, ac_exp_tab16_8(_mm512_maskz_loadu_pd(k, x + i), t0, t1));
    }
}

#else /* no AVX-512: the scalar loop */

void ac_exp_tab16_array(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = ac_exp_tab16(x[i]);
}

#endif
