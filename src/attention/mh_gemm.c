/* mh_gemm.c — the small matrix product of the multi-head forward pass
 * (attention/mh_gemm.h): an AVX-512 register-tiled kernel and its naive
 * reference twin, both summing every entry in the order p = 0, 1, ..., k-1
 * with one AC_MADD per term, so that they agree to the last bit. */
#include <config.h>

#include <stddef.h>

#include "attention/mh_gemm.h"
#include "core/exp_kernel.h" /* AC_MADD */

#if AC_MH_GEMM_SIMD
#include <immintrin.h>
#endif

void ac_mh_gemm_ref(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                    size_t cas, const double *B, size_t ldb, double *C, size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (size_t p = 0; p < k; p++)
                acc = AC_MADD(A[i * ras + p * cas], B[p * ldb + j], acc);
            C[i * ldc + j] = alpha * acc;
        }
}

#if AC_MH_GEMM_SIMD

/* One tile of C: mr <= 8 rows, the columns of one (nv = 1) or two (nv = 2)
 * vectors of 8 whose lanes are selected by the masks m0, m1.  Inlined with
 * constant mr, nv for the full tiles, so that the 16 accumulators stay in
 * registers.  Masked-off lanes are neither read nor written. */
static inline __attribute__((always_inline)) void tile(size_t mr, int nv, __mmask8 m0,
                                                       __mmask8 m1, size_t k, double alpha,
                                                       const double *A, size_t ras, size_t cas,
                                                       const double *B, size_t ldb, double *C,
                                                       size_t ldc, const double *pf, size_t pfr)
{
    __m512d c0[8], c1[8];
#pragma GCC unroll 8
    for (size_t i = 0; i < 8; i++) {
        c0[i] = _mm512_setzero_pd();
        c1[i] = _mm512_setzero_pd();
    }
    for (size_t p = 0; p < k; p++) {
        const double *b = B + p * ldb, *a = A + p * cas;
        if (pf) /* one line of the next strip of A: row p mod 8 (< pfr), columns 8 (p / 8) .. */
            _mm_prefetch((const char *)(pf + ((p & 7) < pfr ? (p & 7) : 0) * ras + (p & ~(size_t)7)),
                         _MM_HINT_T1);
        __m512d b0 = _mm512_maskz_loadu_pd(m0, b);
        __m512d b1 = nv > 1 ? _mm512_maskz_loadu_pd(m1, b + 8) : _mm512_setzero_pd();
#pragma GCC unroll 8
        for (size_t i = 0; i < 8; i++)
            if (i < mr) {
                __m512d ai = _mm512_set1_pd(a[i * ras]);
                c0[i] = _mm512_fmadd_pd(ai, b0, c0[i]);
                if (nv > 1)
                    c1[i] = _mm512_fmadd_pd(ai, b1, c1[i]);
            }
    }
    __m512d al = _mm512_set1_pd(alpha);
#pragma GCC unroll 8
    for (size_t i = 0; i < 8; i++)
        if (i < mr) {
            _mm512_mask_storeu_pd(C + i * ldc, m0, _mm512_mul_pd(al, c0[i]));
            if (nv > 1)
                _mm512_mask_storeu_pd(C + i * ldc + 8, m1, _mm512_mul_pd(al, c1[i]));
        }
}

static void tile_full(size_t k, double alpha, const double *A, size_t ras, size_t cas,
                      const double *B, size_t ldb, double *C, size_t ldc)
{
    tile(8, 2, 0xFF, 0xFF, k, alpha, A, ras, cas, B, ldb, C, ldc, NULL, 0);
}

/* the same, fetching the next strip of A (pfr <= 8 rows from pf, row-major
 * A: cas = 1) into the cache while it computes: a software prefetch, which
 * changes no result */
static void tile_full_pf(size_t k, double alpha, const double *A, size_t ras, const double *B,
                         size_t ldb, double *C, size_t ldc, const double *pf, size_t pfr)
{
    tile(8, 2, 0xFF, 0xFF, k, alpha, A, ras, 1, B, ldb, C, ldc, pf, pfr);
}

static void tile_edge(size_t mr, size_t nc, size_t k, double alpha, const double *A, size_t ras,
                      size_t cas, const double *B, size_t ldb, double *C, size_t ldc)
{
    __mmask8 m0 = nc >= 8 ? 0xFF : (__mmask8)((1u << nc) - 1);
    __mmask8 m1 = nc >= 16 ? 0xFF : nc > 8 ? (__mmask8)((1u << (nc - 8)) - 1) : 0;
    if (nc > 8)
        tile(mr, 2, m0, m1, k, alpha, A, ras, cas, B, ldb, C, ldc, NULL, 0);
    else
        tile(mr, 1, m0, 0, k, alpha, A, ras, cas, B, ldb, C, ldc, NULL, 0);
}

void ac_mh_gemm(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                size_t cas, const double *B, size_t ldb, double *C, size_t ldc)
{
    for (size_t i0 = 0; i0 < m; i0 += 8) {
        size_t mr = m - i0 < 8 ? m - i0 : 8;
        const double *Ai = A + i0 * ras;
        double *Ci = C + i0 * ldc;
        size_t j0 = 0;
        /* row-major A of at least 4 strips streams from memory (the weights
         * of a head of 32 or more rows): the last full tile of a strip
         * fetches the next strip into L2 (measured, bench_t2's g_V on one
         * core: projections 1.95 -> 1.85 ms per layer; no gain for f_W's
         * 16-row heads) */
        size_t nmr = m >= 32 && m - i0 > 8 ? (m - i0 - 8 < 8 ? m - i0 - 8 : 8) : 0;
        if (mr == 8)
            for (; j0 + 16 <= n; j0 += 16) {
                if (cas == 1 && nmr && j0 + 32 > n)
                    tile_full_pf(k, alpha, Ai, ras, B + j0, ldb, Ci + j0, ldc, Ai + 8 * ras, nmr);
                else
                    tile_full(k, alpha, Ai, ras, cas, B + j0, ldb, Ci + j0, ldc);
            }
        for (; j0 < n; j0 += 16) {
            size_t nc = n - j0 < 16 ? n - j0 : 16;
            tile_edge(mr, nc, k, alpha, Ai, ras, cas, B + j0, ldb, Ci + j0, ldc);
        }
    }
}

#else /* no AVX-512: the reference loops */

void ac_mh_gemm(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                size_t cas, const double *B, size_t ldb, double *C, size_t ldc)
{
    ac_mh_gemm_ref(m, n, k, alpha, A, ras, cas, B, ldb, C, ldc);
}

#endif
