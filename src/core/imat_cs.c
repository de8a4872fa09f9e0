/* imat_cs.c — products enclosed with a radius of O(n^2) cost
 * (core/imat_cs.h; doc/mathematics.md §2.3, "Norm-bounded products").
 *
 * |fl(A B) - A B| <= gamma_k |A||B| + realmin entrywise for any order of
 * summation (Higham, ASNA §3.5; underflow as in ac_imat_mul), and
 * (|A||B|)_ij = sum_l |A_il||B_lj| <= ||A_i,:||_2 ||B_:,j||_2 (Cauchy–Schwarz).
 * So one dgemm for the midpoint and two vectors of norms replace the second
 * dgemm of ac_imat_mul.  For Gaussian-like factors the norm bound is about
 * pi/2 times the gamma_k |A||B| one; for a factor K close to the identity the
 * product K^T Q uses |Km| <= I + |Km - I| first, so only the small part
 * |Km - I| goes through Cauchy–Schwarz.
 */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/imat_cs.h"

#define CS_PANEL 256 /* columns of a product per BLAS call */

/* The value whose norm is taken: |A_ij|, or up(|fl(A_ij - 1)|) on the
 * diagonal of A - I (the exact |A_ij - 1| is at most that: the scalar rule). */
static inline double entry(const double *A, size_t ld, size_t i, size_t j, int mi)
{
    double v = A[i * ld + j];
    if (mi && i == j)
        return ac_up(fabs(v - 1.0));
    return fabs(v);
}

/* The bound of ac_norm2_up (interval.c) for one column: s the computed sum
 * of the squares of the entries scaled by 2^-e, cnt entries. */
static double norm_from_sum(double s, size_t cnt, int e)
{
    double g = ac_gamma_up((double)cnt + 1);
    double bound = ac_mul_up(s, ac_div_up(1.0, ac_sub_dn(1.0, g)));
    bound = ac_add_up(bound, ac_mul_up((double)cnt, 4 * AC_ETA + 0x1p-1060));
    return ldexp(ac_sqrt_up(bound), e) * (1.0 + 2 * AC_U) + AC_ETA;
}

void ac_colnorms_up(double *out, const double *A, size_t rows, size_t cols, size_t ld,
                    int minus_identity)
{
    double *mx = calloc(cols ? cols : 1, sizeof(double));
    double *sc = malloc((cols ? cols : 1) * sizeof(double));
    double *s = calloc(cols ? cols : 1, sizeof(double));
    int *ex = malloc((cols ? cols : 1) * sizeof(int));
    if (!mx || !sc || !s || !ex) {
        for (size_t j = 0; j < cols; j++)
            out[j] = INFINITY;
        goto out;
    }
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            double v = entry(A, ld, i, j, minus_identity);
            mx[j] = v > mx[j] ? v : (v == v ? mx[j] : INFINITY);
        }
    int slow = 0;
    for (size_t j = 0; j < cols; j++) {
        ex[j] = 0;
        if (mx[j] > 0 && mx[j] <= DBL_MAX)
            frexp(mx[j], &ex[j]); /* the largest scaled entry in [1/2, 1) */
        /* 2^-e a normal double: x 2^-e is then exact unless subnormal */
        sc[j] = (ex[j] >= -1021 && ex[j] <= 1021) ? ldexp(1.0, -ex[j]) : 0.0;
        slow |= sc[j] == 0.0;
    }
    for (size_t i = 0; i < rows; i++) {
        const double *a = A + i * ld;
        if (!minus_identity && !slow)
            for (size_t j = 0; j < cols; j++) {
                double v = a[j] * sc[j];
                s[j] += v * v;
            }
        else
            for (size_t j = 0; j < cols; j++) {
                double v = entry(A, ld, i, j, minus_identity);
                v = sc[j] != 0.0 ? v * sc[j] : ldexp(v, -ex[j]);
                s[j] += v * v;
            }
    }
    for (size_t j = 0; j < cols; j++) {
        if (!(mx[j] <= DBL_MAX))
            out[j] = INFINITY;
        else if (mx[j] == 0)
            out[j] = 0;
        else
            out[j] = norm_from_sum(s[j], rows, ex[j]);
    }
out:
    free(mx);
    free(sc);
    free(s);
    free(ex);
}

void ac_rownorms_up(double *out, const double *A, size_t rows, size_t cols, size_t ld)
{
    for (size_t i = 0; i < rows; i++)
        out[i] = ac_norm2_up(A + i * ld, cols);
}

/* a NaN radius (0 * inf) is an unknown one */
static inline double rad_ok(double r)
{
    return r == r ? r : INFINITY;
}

int ac_mul_cs(double *Cm, double *Cr, size_t ldc, const double *A, size_t m, size_t lda,
              const double *B, size_t k, size_t n, size_t ldb, const double *an,
              const double *bn, int ref, ac_err *err)
{
    if (m == 0 || n == 0)
        return AC_OK;
    if (k == 0) {
        for (size_t i = 0; i < m; i++) {
            memset(Cm + i * ldc, 0, n * sizeof(double));
            memset(Cr + i * ldc, 0, n * sizeof(double));
        }
        return AC_OK;
    }
    double *a = NULL, *b = NULL;
    if ((!an && !(a = malloc(m * sizeof(double)))) || (!bn && !(b = malloc(n * sizeof(double))))) {
        free(a);
        return ac_err_set(err, AC_EINTERNAL, "out of memory in a product");
    }
    if (!an)
        ac_rownorms_up(a, A, m, k, lda), an = a;
    if (!bn)
        ac_colnorms_up(b, B, k, n, ldb, 0), bn = b;
    if (!ref) {
        /* fixed panels of CS_PANEL columns, shared out over the OpenMP
         * threads when there are several: the decomposition depends on n
         * only, so with single-threaded BLAS the bits do not depend on the
         * thread count */
        size_t np = (n + CS_PANEL - 1) / CS_PANEL;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (np > 1 && !omp_in_parallel())
#endif
        for (size_t p = 0; p < np; p++) {
            size_t j0 = p * CS_PANEL, w = n - j0 < CS_PANEL ? n - j0 : CS_PANEL;
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)w, (int)k, 1.0, A,
                        (int)lda, B + j0, (int)ldb, 0.0, Cm + j0, (int)ldc);
        }
    } else
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double t = 0;
                for (size_t l = 0; l < k; l++)
                    t += A[i * lda + l] * B[l * ldb + j];
                Cm[i * ldc + j] = t;
            }
    double g = ac_gamma_up((double)k);
    for (size_t i = 0; i < m; i++) {
        double ga = ac_mul_up(g, an[i]);
        for (size_t j = 0; j < n; j++) {
            double r = ac_add_up(ac_mul_up(ga, bn[j]), AC_REALMIN);
            Cr[i * ldc + j] = isfinite(Cm[i * ldc + j]) ? rad_ok(r) : INFINITY;
        }
    }
    free(a);
    free(b);
    return AC_OK;
}

void ac_nearid_norms(double *kn, const ac_imat *K)
{
    size_t n = K->rows;
    ac_colnorms_up(kn, K->mid, n, n, K->cols, 1);
    if (K->rad)
        ac_colnorms_up(kn + n, K->rad, n, n, K->cols, 0);
    else
        memset(kn + n, 0, n * sizeof(double));
}

int ac_imat_mul_tn_nearid(ac_imat *C, const ac_imat *K, const double *kn, const ac_imat *Q,
                          int ref, ac_err *err)
{
    size_t n = K->rows, w = Q->cols;
    if (K->cols != n || Q->rows != n || C->rows != n || C->cols != w || !C->rad)
        return ac_err_set(err, AC_EUSAGE,
                          "near-identity product: shapes %zux%zu^T * %zux%zu -> %zux%zu do not match",
                          K->rows, K->cols, Q->rows, Q->cols, C->rows, C->cols);
    if (n == 0 || w == 0)
        return AC_OK;
    size_t nw = n * w;
    double *B1 = malloc(2 * nw * sizeof(double)), *cf = malloc(2 * w * sizeof(double));
    double *own = kn ? NULL : malloc(2 * n * sizeof(double));
    if (!B1 || !cf || (!kn && !own)) {
        free(B1);
        free(cf);
        free(own);
        return ac_err_set(err, AC_EINTERNAL, "out of memory in an interval product");
    }
    if (!kn)
        ac_nearid_norms(own, K), kn = own;
    double *B2 = B1 + nw;
    if (!ref)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)w, (int)n, 1.0, K->mid,
                    (int)n, Q->mid, (int)w, 0.0, C->mid, (int)w);
    else
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < w; j++) {
                double t = 0;
                for (size_t l = 0; l < n; l++)
                    t += K->mid[l * n + i] * Q->mid[l * w + j];
                C->mid[i * w + j] = t;
            }
    /* |K^T Q - Cm| <= |Km|^T (gamma_n |Qm| + Qr) + Kr^T (|Qm| + Qr) + realmin
     *             <= B1 + |Km - I|^T B1 + Kr^T B2 + realmin */
    double g = ac_gamma_up((double)n);
    for (size_t i = 0; i < nw; i++) {
        double q = fabs(Q->mid[i]), r = Q->rad ? Q->rad[i] : 0.0;
        B1[i] = ac_add_up(ac_mul_up(g, q), r);
        B2[i] = Q->rad ? ac_add_up(q, r) : q;
    }
    ac_colnorms_up(cf, B1, n, w, w, 0);
    ac_colnorms_up(cf + w, B2, n, w, w, 0);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < w; j++) {
            double r = ac_add_up(B1[i * w + j], ac_mul_up(kn[i], cf[j]));
            r = ac_add_up(ac_add_up(r, ac_mul_up(kn[n + i], cf[w + j])), AC_REALMIN);
            C->rad[i * w + j] = isfinite(C->mid[i * w + j]) ? rad_ok(r) : INFINITY;
        }
    free(B1);
    free(cf);
    free(own);
    return AC_OK;
}

int ac_imat_tn_nearid_bound(ac_imat *C, const double *kn, const ac_imat *Q, ac_err *err)
{
    size_t n = Q->rows, w = Q->cols;
    if (C->rows != n || C->cols != w || !C->rad || C->rad == Q->rad)
        return ac_err_set(err, AC_EUSAGE, "near-identity bound: %zux%zu -> %zux%zu do not match",
                          Q->rows, Q->cols, C->rows, C->cols);
    if (n == 0 || w == 0)
        return AC_OK;
    double *B = malloc((n * w + w) * sizeof(double));
    if (!B)
        return ac_err_set(err, AC_EINTERNAL, "out of memory in an interval product");
    double *f = B + n * w;
    /* |K'^T Q' - Q'|_ij = |((K' - I)^T Q')_ij| <= sum_l (|Km - I| + Kr)_li (|Qm| + Qr)_lj
     * <= (||(|Km - I|)_:,i|| + ||Kr_:,i||) ||(|Qm| + Qr)_:,j||  (Cauchy–Schwarz),
     * and |Q'_ij - Qm_ij| <= Qr_ij */
    for (size_t i = 0; i < n * w; i++) {
        double q = fabs(Q->mid[i]);
        B[i] = Q->rad ? ac_add_up(q, Q->rad[i]) : q;
    }
    ac_colnorms_up(f, B, n, w, w, 0);
    if (C->mid != Q->mid)
        memcpy(C->mid, Q->mid, n * w * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        double e = ac_add_up(kn[i], kn[n + i]);
        for (size_t j = 0; j < w; j++) {
            size_t k = i * w + j;
            double r = ac_mul_up(e, f[j]);
            r = Q->rad ? ac_add_up(Q->rad[k], r) : r;
            C->rad[k] = isfinite(Q->mid[k]) ? rad_ok(r) : INFINITY;
        }
    }
    free(B);
    return AC_OK;
}
