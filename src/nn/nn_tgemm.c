/* nn_tgemm.c — the register-tiled matrix product of the training stack
 * (nn/nn_tgemm.h): an AVX-512 kernel and its naive reference twin, both
 * summing every entry from its initial value in the order p = 0, 1, ...,
 * k-1 with one AC_MADD per term, so that they agree to the last bit. */
#include <config.h>

#include <stddef.h>

#include "nn/nn_tgemm.h"
#include "core/exp_kernel.h" /* AC_MADD */

#if NN_TGEMM_SIMD
#include <immintrin.h>
#endif

void nn_tgemm_ref(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                  size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
                  int init, const double *bias)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double acc = init == NN_TG_BIAS ? bias[j] : init == NN_TG_ADD ? C[i * ldc + j] : 0.0;
            for (size_t p = 0; p < k; p++) {
                double b = btrans ? B[j * ldb + p] : B[p * ldb + j];
                acc = AC_MADD(A[i * ras + p * cas], b, acc);
            }
            C[i * ldc + j] = alpha * acc;
        }
}

#if NN_TGEMM_SIMD

#define KB 128 /* rows of B per block (a transposed panel: KB x 24 doubles) */
#define NW 24  /* columns per panel: three vectors of 8 */
#define PF_DIST 16 /* steps of k ahead for the prefetch of A's column lines */

/* One tile of C: mr <= 8 rows, nv <= 3 vectors of 8 columns whose lanes are
 * selected by mk[].  acc starts from init (first block of k) or from C
 * (later blocks); the last block multiplies by alpha.  Inlined with constant
 * mr, nv for the full tiles so that the accumulators stay in registers.
 * Masked-off lanes are neither read nor written. */
static inline __attribute__((always_inline)) void
tile(size_t mr, int nv, const __mmask8 *mk, size_t k, const double *A, size_t ras, size_t cas,
     const double *B, size_t ldb, double *C, size_t ldc, int init, const double *bias,
     double alpha, int last, const double *next)
{
    __m512d c[8][3];
    /* the next tile's rows of C, for writing (they are often cold: the
     * products write activations larger than the L2 cache) */
    if (next)
#pragma GCC unroll 8
        for (size_t i = 0; i < 8; i++) {
            __builtin_prefetch(next + i * ldc, 1, 3);
            __builtin_prefetch(next + i * ldc + 8, 1, 3);
            __builtin_prefetch(next + i * ldc + 16, 1, 3);
        }
#pragma GCC unroll 8
    for (size_t i = 0; i < 8; i++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++) {
            /* every accumulator is set; the unused ones are dead code */
            if (i >= mr || v >= nv || init == NN_TG_ZERO)
                c[i][v] = _mm512_setzero_pd();
            else if (init == NN_TG_BIAS)
                c[i][v] = _mm512_maskz_loadu_pd(mk[v], bias + 8 * v);
            else
                c[i][v] = _mm512_maskz_loadu_pd(mk[v], C + i * ldc + 8 * v);
        }
    for (size_t p = 0; p < k; p++) {
        const double *b = B + p * ldb, *a = A + p * cas;
        /* A read down its columns (a weight gradient's dout^T): one cache
         * line per step of k, a large stride apart; fetch it ahead */
        if (ras == 1)
            __builtin_prefetch(a + PF_DIST * cas, 0, 3);
        __m512d b0 = _mm512_maskz_loadu_pd(mk[0], b);
        __m512d b1 = nv > 1 ? _mm512_maskz_loadu_pd(mk[1], b + 8) : _mm512_setzero_pd();
        __m512d b2 = nv > 2 ? _mm512_maskz_loadu_pd(mk[2], b + 16) : _mm512_setzero_pd();
#pragma GCC unroll 8
        for (size_t i = 0; i < 8; i++)
            if (i < mr) {
                __m512d ai = _mm512_set1_pd(a[i * ras]);
                c[i][0] = _mm512_fmadd_pd(ai, b0, c[i][0]);
                if (nv > 1)
                    c[i][1] = _mm512_fmadd_pd(ai, b1, c[i][1]);
                if (nv > 2)
                    c[i][2] = _mm512_fmadd_pd(ai, b2, c[i][2]);
            }
    }
    __m512d al = _mm512_set1_pd(alpha);
#pragma GCC unroll 8
    for (size_t i = 0; i < 8; i++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            if (i < mr && v < nv)
                _mm512_mask_storeu_pd(C + i * ldc + 8 * v, mk[v],
                                      last ? _mm512_mul_pd(al, c[i][v]) : c[i][v]);
}

/* The full-height tiles, one per vector count, and the general edge tile;
 * init is passed as a constant where it is known. */
#define TILE_FN(name, nv_)                                                                      \
    static void name(const __mmask8 *mk, size_t k, const double *A, size_t ras, size_t cas,    \
                     const double *B, size_t ldb, double *C, size_t ldc, int init,             \
                     const double *bias, double alpha, int last, const double *nx)              \
    {                                                                                           \
        if (init == NN_TG_ZERO)                                                                 \
            tile(8, nv_, mk, k, A, ras, cas, B, ldb, C, ldc, NN_TG_ZERO, bias, alpha, last, nx);\
        else if (init == NN_TG_BIAS)                                                            \
            tile(8, nv_, mk, k, A, ras, cas, B, ldb, C, ldc, NN_TG_BIAS, bias, alpha, last, nx);\
        else                                                                                    \
            tile(8, nv_, mk, k, A, ras, cas, B, ldb, C, ldc, NN_TG_ADD, bias, alpha, last, nx); \
    }
TILE_FN(tile8x1, 1)
TILE_FN(tile8x2, 2)
TILE_FN(tile8x3, 3)

static void tile_edge(size_t mr, int nv, const __mmask8 *mk, size_t k, const double *A,
                      size_t ras, size_t cas, const double *B, size_t ldb, double *C, size_t ldc,
                      int init, const double *bias, double alpha, int last)
{
    tile(mr, nv, mk, k, A, ras, cas, B, ldb, C, ldc, init, bias, alpha, last, NULL);
}

/* buf (kb x NW, row stride NW) = rows p0 .. p0+kb-1 of W^T, columns j0 ..
 * j0+nc-1 (W row-major, row stride ldb); lanes past nc are not read. */
static void pack_bt(double *buf, const double *W, size_t ldb, size_t j0, size_t nc, size_t p0,
                    size_t kb)
{
    for (size_t jj = 0; jj < nc; jj++) {
        const double *w = W + (j0 + jj) * ldb + p0;
        for (size_t p = 0; p < kb; p++)
            buf[p * NW + jj] = w[p];
    }
}

void nn_tgemm(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
              size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
              int init, const double *bias)
{
    double buf[KB * NW] __attribute__((aligned(64)));
    size_t p0 = 0;
    do {
        size_t kb = k - p0 < KB ? k - p0 : KB;
        int first = p0 == 0, last = p0 + kb == k, ini = first ? init : NN_TG_ADD;
        const double *Ap = A + p0 * cas;
        for (size_t j0 = 0; j0 < n; j0 += NW) {
            size_t nc = n - j0 < NW ? n - j0 : NW;
            int nv = (int)((nc + 7) / 8);
            __mmask8 mk[3];
            for (int v = 0; v < 3; v++) {
                size_t lo = 8 * (size_t)v, c = nc > lo ? nc - lo : 0;
                mk[v] = c >= 8 ? 0xFF : (__mmask8)((1u << c) - 1);
            }
            const double *bj = bias ? bias + j0 : NULL;
            const double *Bp;
            size_t ldp;
            if (btrans) {
                pack_bt(buf, B, ldb, j0, nc, p0, kb);
                Bp = buf;
                ldp = NW;
            } else {
                Bp = B + p0 * ldb + j0;
                ldp = ldb;
            }
            size_t i0 = 0;
            for (; i0 + 8 <= m; i0 += 8) {
                const double *Ai = Ap + i0 * ras;
                double *Ci = C + i0 * ldc + j0;
                const double *nx = i0 + 16 <= m ? Ci + 8 * ldc : NULL;
                if (nv == 3)
                    tile8x3(mk, kb, Ai, ras, cas, Bp, ldp, Ci, ldc, ini, bj, alpha, last, nx);
                else if (nv == 2)
                    tile8x2(mk, kb, Ai, ras, cas, Bp, ldp, Ci, ldc, ini, bj, alpha, last, nx);
                else
                    tile8x1(mk, kb, Ai, ras, cas, Bp, ldp, Ci, ldc, ini, bj, alpha, last, nx);
            }
            if (i0 < m)
                tile_edge(m - i0, nv, mk, kb, Ap + i0 * ras, ras, cas, Bp, ldp, C + i0 * ldc + j0,
                          ldc, ini, bj, alpha, last);
        }
        p0 += kb;
    } while (p0 < k);
}

#else /* no AVX-512: the reference loops */

void nn_tgemm(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
              size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
              int init, const double *bias)
{
    nn_tgemm_ref(m, n, k, alpha, A, ras, cas, B, ldb, btrans, C, ldc, init, bias);
}

#endif
