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

/* The sums of row i run over p in [lo, hi), its entries j < ncol are
 * written (nn/nn_tgemm.h): limits of the strip of 8 rows holding i. */
static void tri_limits(int tri, size_t i, size_t n, size_t k, size_t *lo, size_t *hi,
                       size_t *ncol)
{
    size_t e = i - i % NN_TGEMM_MR + NN_TGEMM_MR; /* end of i's strip */
    *lo = tri == NN_TRI_KLO ? (i - i % NN_TGEMM_MR < k ? i - i % NN_TGEMM_MR : k) : 0;
    *hi = tri == NN_TRI_KHI ? (e < k ? e : k) : k;
    *ncol = tri == NN_TRI_COLS ? (e < n ? e : n) : n;
}

static void ref_run(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                    size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
                    int init, const double *bias, int tri)
{
    for (size_t i = 0; i < m; i++) {
        size_t lo, hi, ncol;
        tri_limits(tri, i, n, k, &lo, &hi, &ncol);
        for (size_t j = 0; j < ncol; j++) {
            double acc = init == NN_TG_BIAS ? bias[j] : init == NN_TG_ADD ? C[i * ldc + j] : 0.0;
            for (size_t p = lo; p < hi; p++) {
                double b = btrans ? B[j * ldb + p] : B[p * ldb + j];
                acc = AC_MADD(A[i * ras + p * cas], b, acc);
            }
            C[i * ldc + j] = alpha * acc;
        }
    }
}

void nn_tgemm_ref(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                  size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
                  int init, const double *bias)
{
    ref_run(m, n, k, alpha, A, ras, cas, B, ldb, btrans, C, ldc, init, bias, NN_TRI_NONE);
}

void nn_tgemm_tri_ref(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                      size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
                      int tri)
{
    ref_run(m, n, k, alpha, A, ras, cas, B, ldb, btrans, C, ldc, NN_TG_ZERO, NULL, tri);
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

/* The 8 x 8 block of doubles at x (row stride ldx) transposed into y (row
 * stride ldy): y[q][r] = x[r][q]. */
static inline void transpose8(double *y, size_t ldy, const double *x, size_t ldx)
{
    __m512d r[8], t[8], u[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm512_loadu_pd(x + (size_t)i * ldx);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
    }
    /* u0 = (0 4 | rows 0-3), u1 = (2 6), u2 = (1 5), u3 = (3 7); u4-u7 rows 4-7 */
    for (int h = 0; h < 8; h += 4) {
        u[h] = _mm512_shuffle_f64x2(t[h], t[h + 2], 0x88);
        u[h + 1] = _mm512_shuffle_f64x2(t[h], t[h + 2], 0xDD);
        u[h + 2] = _mm512_shuffle_f64x2(t[h + 1], t[h + 3], 0x88);
        u[h + 3] = _mm512_shuffle_f64x2(t[h + 1], t[h + 3], 0xDD);
    }
    _mm512_storeu_pd(y + 0 * ldy, _mm512_shuffle_f64x2(u[0], u[4], 0x88));
    _mm512_storeu_pd(y + 4 * ldy, _mm512_shuffle_f64x2(u[0], u[4], 0xDD));
    _mm512_storeu_pd(y + 2 * ldy, _mm512_shuffle_f64x2(u[1], u[5], 0x88));
    _mm512_storeu_pd(y + 6 * ldy, _mm512_shuffle_f64x2(u[1], u[5], 0xDD));
    _mm512_storeu_pd(y + 1 * ldy, _mm512_shuffle_f64x2(u[2], u[6], 0x88));
    _mm512_storeu_pd(y + 5 * ldy, _mm512_shuffle_f64x2(u[2], u[6], 0xDD));
    _mm512_storeu_pd(y + 3 * ldy, _mm512_shuffle_f64x2(u[3], u[7], 0x88));
    _mm512_storeu_pd(y + 7 * ldy, _mm512_shuffle_f64x2(u[3], u[7], 0xDD));
}

/* buf (kb x NW, row stride NW) = rows p0 .. p0+kb-1 of W^T, columns j0 ..
 * j0+nc-1 (W row-major, row stride ldb); lanes past nc are not read.  A
 * copy: 8 x 8 blocks by vector transposes, the edges one by one. */
static void pack_bt(double *buf, const double *W, size_t ldb, size_t j0, size_t nc, size_t p0,
                    size_t kb)
{
    size_t jv = nc / 8 * 8, pv = kb / 8 * 8;
    for (size_t jj = 0; jj < jv; jj += 8)
        for (size_t p = 0; p < pv; p += 8)
            transpose8(buf + p * NW + jj, NW, W + (j0 + jj) * ldb + p0 + p, ldb);
    for (size_t jj = 0; jj < nc; jj++) {
        const double *w = W + (j0 + jj) * ldb + p0;
        for (size_t p = jj < jv ? pv : 0; p < kb; p++)
            buf[p * NW + jj] = w[p];
    }
}

/* The product over all of C (tri = NN_TRI_NONE) or over the triangular
 * parts of nn_tgemm_tri, in blocks of KB steps of k, panels of NW columns
 * and strips of 8 rows; strip i0 sums p over [lo, hi) and writes columns
 * below ncol (tri_limits). */
static void tgemm_run(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                      size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
                      int init, const double *bias, int tri)
{
    double buf[KB * NW] __attribute__((aligned(64)));
    size_t p0 = 0;
    do {
        size_t kb = k - p0 < KB ? k - p0 : KB;
        int first = p0 == 0, last = p0 + kb == k, ini = first ? init : NN_TG_ADD;
        for (size_t j0 = 0; j0 < n; j0 += NW) {
            size_t ncp = n - j0 < NW ? n - j0 : NW;
            const double *bj = bias ? bias + j0 : NULL;
            const double *Bp;
            size_t ldp;
            if (btrans) {
                pack_bt(buf, B, ldb, j0, ncp, p0, kb);
                Bp = buf;
                ldp = NW;
            } else {
                Bp = B + p0 * ldb + j0;
                ldp = ldb;
            }
            for (size_t i0 = 0; i0 < m; i0 += 8) {
                size_t lo, hi, ncol;
                tri_limits(tri, i0, n, k, &lo, &hi, &ncol);
                if (ncol <= j0)
                    continue;
                size_t nc = ncol - j0 < ncp ? ncol - j0 : ncp;
                size_t s0 = lo > p0 ? lo : p0, s1 = hi < p0 + kb ? hi : p0 + kb;
                size_t kk = s1 > s0 ? s1 - s0 : 0;
                if (!kk)
                    s0 = p0;
                int nv = (int)((nc + 7) / 8);
                __mmask8 mk[3];
                for (int v = 0; v < 3; v++) {
                    size_t l0 = 8 * (size_t)v, c = nc > l0 ? nc - l0 : 0;
                    mk[v] = c >= 8 ? 0xFF : (__mmask8)((1u << c) - 1);
                }
                const double *Ai = A + i0 * ras + s0 * cas, *Bi = Bp + (s0 - p0) * ldp;
                double *Ci = C + i0 * ldc + j0;
                const double *nx = i0 + 16 <= m && !tri ? Ci + 8 * ldc : NULL;
                if (i0 + 8 > m)
                    tile_edge(m - i0, nv, mk, kk, Ai, ras, cas, Bi, ldp, Ci, ldc, ini, bj, alpha,
                              last);
                else if (nv == 3)
                    tile8x3(mk, kk, Ai, ras, cas, Bi, ldp, Ci, ldc, ini, bj, alpha, last, nx);
                else if (nv == 2)
                    tile8x2(mk, kk, Ai, ras, cas, Bi, ldp, Ci, ldc, ini, bj, alpha, last, nx);
                else
                    tile8x1(mk, kk, Ai, ras, cas, Bi, ldp, Ci, ldc, ini, bj, alpha, last, nx);
            }
        }
        p0 += kb;
    } while (p0 < k);
}

void nn_tgemm(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
              size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
              int init, const double *bias)
{
    tgemm_run(m, n, k, alpha, A, ras, cas, B, ldb, btrans, C, ldc, init, bias, NN_TRI_NONE);
}

void nn_tgemm_tri(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                  size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
                  int tri)
{
    tgemm_run(m, n, k, alpha, A, ras, cas, B, ldb, btrans, C, ldc, NN_TG_ZERO, NULL, tri);
}

#else /* no AVX-512: the reference loops */

void nn_tgemm(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
              size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
              int init, const double *bias)
{
    nn_tgemm_ref(m, n, k, alpha, A, ras, cas, B, ldb, btrans, C, ldc, init, bias);
}

void nn_tgemm_tri(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                  size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
                  int tri)
{
    nn_tgemm_tri_ref(m, n, k, alpha, A, ras, cas, B, ldb, btrans, C, ldc, tri);
}

#endif
