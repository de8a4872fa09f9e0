/* imat_split.c — tight enclosures of products of point matrices by one
 * error-free split (core/imat_split.h; doc/mathematics.md §2.3, "Split
 * products", after Ozaki, Ogita, Oishi & Rump, Numer. Algorithms 59 (2012)).
 *
 * A = A1 + A2 by rows, B = B1 + B2 by columns, each exactly, with A1 and B1
 * on grids so coarse that every partial sum of A1 B1 is an integer multiple
 * of one power of two below 2^53 of it: dgemm computes A1 B1 exactly in any
 * order, blocking or thread count.  The rest, A1 B2 + A2 B, is 2^-beta times
 * smaller and gets the a-priori gamma bound.  Cost: three dgemm (one of
 * inner dimension k for A1 B1, two accumulating ones) against two for the
 * plain interval product, and a radius about 2^-beta times smaller.
 */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "core/imat_split.h"

#define PANEL 128 /* rows of A split at a time */

int ac_split_beta(size_t k)
{
    int lk = 0;
    while (lk < 63 && ((size_t)1 << lk) < k)
        lk++; /* 2^lk >= k */
    return (53 - lk) / 2;
}

/* Exponent p with max|x| <= 2^p, or AC_SPLIT_ZERO; -1 if an entry is not finite. */
static int scale_exp(double mu, int *p)
{
    if (!(mu <= DBL_MAX))
        return -1;
    if (mu == 0) {
        *p = AC_SPLIT_ZERO;
        return 0;
    }
    frexp(mu, p); /* mu = f 2^p, 1/2 <= f < 1 */
    return 0;
}

/* The grid 2^(p - beta) must be a double >= 2^-1074 and the scale
 * 2^(beta - p) a normal double: then x 2^(beta-p) rounds only below 1/2,
 * nearbyint of it is exact and so are r 2^(p-beta) and x - r 2^(p-beta). */
static int exp_in_range(int p, int beta)
{
    return p == AC_SPLIT_ZERO || (p - beta - 1 >= -1074 && beta - p <= 1023);
}

/* x = hi + lo exactly, hi = nearbyint(x 2^(beta-p)) 2^(p-beta) (see exp_in_range). */
static inline void split1(double x, double sc, double inv, double *hi, double *lo)
{
    double h = nearbyint(x * sc) * inv;
    *hi = h;
    *lo = x - h;
}

void ac_split_free(ac_split *s)
{
    if (!s)
        return;
    free(s->hi);
    free(s->lo);
    free(s->e);
    free(s->l1);
    memset(s, 0, sizeof *s);
}

int ac_split_cols(ac_split *s, const double *B, size_t k, size_t n, size_t ldb, ac_err *err)
{
    memset(s, 0, sizeof *s);
    s->k = k;
    s->n = n;
    s->b = B;
    s->ldb = ldb;
    s->beta = ac_split_beta(k ? k : 1);
    size_t kn = k * n;
    s->hi = malloc((kn ? kn : 1) * sizeof(double));
    s->lo = malloc((kn ? kn : 1) * sizeof(double));
    s->e = malloc((n ? n : 1) * sizeof(int));
    s->l1 = calloc(n ? n : 1, sizeof(double));
    double *mu = calloc(n ? n : 1, sizeof(double));
    if (!s->hi || !s->lo || !s->e || !s->l1 || !mu) {
        free(mu);
        ac_split_free(s);
        return ac_err_set(err, AC_EINTERNAL, "out of memory in a split product");
    }
    for (size_t l = 0; l < k; l++)
        for (size_t j = 0; j < n; j++) {
            double a = fabs(B[l * ldb + j]);
            mu[j] = a > mu[j] ? a : (a == a ? mu[j] : a);
            s->l1[j] += a;
        }
    double c1 = ac_div_up(1.0, ac_sub_dn(1.0, ac_gamma_up((double)(k ? k : 1))));
    double *sc = malloc((n ? n : 1) * sizeof(double)), *inv = malloc((n ? n : 1) * sizeof(double));
    if (!sc || !inv) {
        free(mu);
        free(sc);
        free(inv);
        ac_split_free(s);
        return ac_err_set(err, AC_EINTERNAL, "out of memory in a split product");
    }
    for (size_t j = 0; j < n; j++) {
        if (scale_exp(mu[j], &s->e[j]) < 0 || !(s->l1[j] <= DBL_MAX)) {
            free(mu);
            free(sc);
            free(inv);
            ac_split_free(s);
            return ac_err_set(err, AC_EDATA, "split product: a factor has a non-finite entry");
        }
        s->l1[j] = ac_mul_up(s->l1[j], c1);
        int ok = s->e[j] != AC_SPLIT_ZERO && exp_in_range(s->e[j], s->beta);
        sc[j] = ok ? ldexp(1.0, s->beta - s->e[j]) : 0.0;
        inv[j] = ok ? ldexp(1.0, s->e[j] - s->beta) : 0.0;
    }
    for (size_t l = 0; l < k; l++)
        for (size_t j = 0; j < n; j++)
            split1(B[l * ldb + j], sc[j], inv[j], &s->hi[l * n + j], &s->lo[l * n + j]);
    free(mu);
    free(sc);
    free(inv);
    return AC_OK;
}

/* Split the rows r0..r0+m-1 of A into A1, A2 (m x k contiguous); p[i] the
 * row exponent, ra1[i] >= sum_l |A1_il|. */
static int split_rows(double *A1, double *A2, int *p, double *ra1, const double *A, size_t m,
                      size_t k, size_t lda, int beta)
{
    double c1 = ac_div_up(1.0, ac_sub_dn(1.0, ac_gamma_up((double)(k ? k : 1))));
    for (size_t i = 0; i < m; i++) {
        const double *a = A + i * lda;
        double mu = 0;
        for (size_t l = 0; l < k; l++) {
            double v = fabs(a[l]);
            mu = v > mu ? v : (v == v ? mu : v);
        }
        if (scale_exp(mu, &p[i]) < 0)
            return -1;
        int ok = p[i] != AC_SPLIT_ZERO && exp_in_range(p[i], beta);
        double sc = ok ? ldexp(1.0, beta - p[i]) : 0.0, inv = ok ? ldexp(1.0, p[i] - beta) : 0.0;
        double s = 0;
        for (size_t l = 0; l < k; l++) {
            split1(a[l], sc, inv, &A1[i * k + l], &A2[i * k + l]);
            s += fabs(A1[i * k + l]);
        }
        ra1[i] = ac_mul_up(s, c1);
    }
    return 0;
}

/* Cm <- fl(Cm + T) and the radius of doc/mathematics.md §2.3 (split products):
 *   |AB - Cm| <= u|Cm| + gamma_{2k+1}(ra1_i 2^(q_j-beta-1) + 2^(p_i-beta-1) l1_j) + realmin. */
static void finish_rows(double *Cm, double *Cr, size_t ldc, const double *T, const int *p,
                        const double *ra1, size_t m, const ac_split *B)
{
    size_t n = B->n;
    int beta = B->beta, lk = 0;
    while (lk < 63 && ((size_t)1 << lk) < B->k)
        lk++;
    double g = ac_gamma_up(2.0 * (double)B->k + 1.0);
    for (size_t i = 0; i < m; i++) {
        int pz = p[i] == AC_SPLIT_ZERO, pin = exp_in_range(p[i], beta);
        double ha = (pz || !pin) ? 0.0 : ldexp(1.0, p[i] - beta - 1);
        for (size_t j = 0; j < n; j++) {
            double c = Cm[i * ldc + j] + T[i * n + j];
            Cm[i * ldc + j] = c;
            int q = B->e[j], qz = q == AC_SPLIT_ZERO;
            double r;
            if (pz || qz)
                r = 0.0; /* a zero row or column: every product is an exact 0 */
            else if (!pin || !exp_in_range(q, beta) || p[i] + q - 2 * beta < -1074 ||
                     p[i] + q + lk + 2 > 1023 || !isfinite(c))
                r = INFINITY;
            else {
                double hb = ldexp(1.0, q - beta - 1);
                double e = ac_add_up(ac_mul_up(ra1[i], hb), ac_mul_up(ha, B->l1[j]));
                r = ac_add_up(ac_add_up(ac_mul_up(AC_U, fabs(c)), ac_mul_up(g, e)), AC_REALMIN);
            }
            Cr[i * ldc + j] = r;
        }
    }
}

static int mul_split(double *Cm, double *Cr, size_t ldc, const double *A, size_t m, size_t lda,
                     const ac_split *B, int ref, ac_err *err)
{
    size_t k = B->k, n = B->n;
    if (m == 0 || n == 0)
        return AC_OK;
    if (k == 0) {
        for (size_t i = 0; i < m; i++) {
            memset(Cm + i * ldc, 0, n * sizeof(double));
            memset(Cr + i * ldc, 0, n * sizeof(double));
        }
        return AC_OK;
    }
    size_t pm = m < PANEL ? m : PANEL;
    double *A1 = malloc(pm * k * sizeof(double)), *A2 = malloc(pm * k * sizeof(double));
    double *T = malloc(pm * n * sizeof(double)), *ra1 = malloc(pm * sizeof(double));
    int *p = malloc(pm * sizeof(int));
    int st = AC_OK;
    if (!A1 || !A2 || !T || !ra1 || !p) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory in a split product");
        goto out;
    }
    for (size_t r0 = 0; r0 < m; r0 += pm) {
        size_t mm = m - r0 < pm ? m - r0 : pm;
        double *C = Cm + r0 * ldc;
        if (split_rows(A1, A2, p, ra1, A + r0 * lda, mm, k, lda, B->beta) < 0) {
            st = ac_err_set(err, AC_EDATA, "split product: a factor has a non-finite entry");
            goto out;
        }
        if (!ref) {
            /* A1 B1: exact (every partial sum on one grid below 2^53 units) */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mm, (int)n, (int)k, 1.0, A1,
                        (int)k, B->hi, (int)n, 0.0, C, (int)ldc);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mm, (int)n, (int)k, 1.0, A1,
                        (int)k, B->lo, (int)n, 0.0, T, (int)n);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mm, (int)n, (int)k, 1.0, A2,
                        (int)k, B->b, (int)B->ldb, 1.0, T, (int)n);
        } else {
            for (size_t i = 0; i < mm; i++)
                for (size_t j = 0; j < n; j++) {
                    double c1 = 0, t = 0;
                    for (size_t l = 0; l < k; l++) {
                        c1 += A1[i * k + l] * B->hi[l * n + j];
                        t += A1[i * k + l] * B->lo[l * n + j];
                    }
                    for (size_t l = 0; l < k; l++)
                        t += A2[i * k + l] * B->b[l * B->ldb + j];
                    C[i * ldc + j] = c1;
                    T[i * n + j] = t;
                }
        }
        finish_rows(C, Cr + r0 * ldc, ldc, T, p, ra1, mm, B);
    }
out:
    free(A1);
    free(A2);
    free(T);
    free(ra1);
    free(p);
    return st;
}

int ac_mul_split(double *Cm, double *Cr, size_t ldc, const double *A, size_t m, size_t lda,
                 const ac_split *B, ac_err *err)
{
    return mul_split(Cm, Cr, ldc, A, m, lda, B, 0, err);
}

int ac_mul_split_ref(double *Cm, double *Cr, size_t ldc, const double *A, size_t m, size_t lda,
                     const ac_split *B, ac_err *err)
{
    return mul_split(Cm, Cr, ldc, A, m, lda, B, 1, err);
}

int ac_imat_mul_split(ac_imat *C, const ac_mat *A, const ac_mat *B, ac_err *err)
{
    if (A->cols != B->rows || C->rows != A->rows || C->cols != B->cols || !C->rad)
        return ac_err_set(err, AC_EUSAGE,
                          "split product: shapes %zux%zu * %zux%zu -> %zux%zu do not match",
                          A->rows, A->cols, B->rows, B->cols, C->rows, C->cols);
    ac_split s;
    int st = ac_split_cols(&s, B->data, B->rows, B->cols, B->cols, err);
    if (st)
        return st;
    st = ac_mul_split(C->mid, C->rad, C->cols, A->data, A->rows, A->cols, &s, err);
    ac_split_free(&s);
    return st;
}
