/* linalg.c — approximate and certified dense linear algebra (attncheck/linalg.h). */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <lapacke.h>
#include <flint/nmod_mat.h>
#include <flint/ulong_extras.h>

#include "core/ac_arb.h"
#include "core/dyadic.h"
#include "core/imat_cs.h"
#include "attncheck/linalg.h"

void ac_dgemm(ac_trans ta, ac_trans tb, size_t m, size_t n, size_t k, double alpha,
              const double *A, size_t lda, const double *B, size_t ldb, double beta, double *C,
              size_t ldc)
{
    if (m == 0 || n == 0)
        return;
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

int ac_gemm(ac_mat *C, ac_trans ta, const ac_mat *A, ac_trans tb, const ac_mat *B, ac_err *err)
{
    size_t m = ta ? A->cols : A->rows, k = ta ? A->rows : A->cols;
    size_t kb = tb ? B->cols : B->rows, n = tb ? B->rows : B->cols;
    if (k != kb || C->rows != m || C->cols != n)
        return ac_err_set(err, AC_EUSAGE, "matrix product: shapes do not match");
    if (m == 0 || n == 0)
        return AC_OK;
    if (k == 0) {
        memset(C->data, 0, m * n * sizeof(double));
        return AC_OK;
    }
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, 1.0, A->data, (int)A->cols, B->data, (int)B->cols, 0.0,
                C->data, (int)n);
    return AC_OK;
}

/* Square X: X^+ = X^-1 by LU with partial pivoting (dgetrf + dgetri, 2n^3
 * flops, half of the QR route).  A row-major buffer is the column-major
 * transpose, and inv(X')' = inv(X), so LAPACK runs on the buffer as is. */
static int inverse_lu(ac_mat *Y, const ac_mat *X, ac_err *err)
{
    size_t n = X->rows;
    lapack_int *ipiv = malloc((n ? n : 1) * sizeof(lapack_int));
    int st;
    if (!ipiv)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if ((st = ac_mat_copy(Y, X, err))) {
        free(ipiv);
        return st;
    }
    lapack_int info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, Y->data,
                                     (lapack_int)n, ipiv);
    if (info == 0)
        info = LAPACKE_dgetri(LAPACK_COL_MAJOR, (lapack_int)n, Y->data, (lapack_int)n, ipiv);
    free(ipiv);
    if (info != 0) {
        ac_mat_free(Y);
        return ac_err_set(err, info > 0 ? AC_EDATA : AC_EINTERNAL,
                          info > 0 ? "X is singular (zero pivot %d in LU)"
                                   : "LAPACKE_dgetri: argument %d invalid",
                          (int)(info > 0 ? info : -info));
    }
    return AC_OK;
}

/* Tall or square X (d x n, d >= n): thin Householder QR, X = Q1 R with Q1
 * d x n, and X^+ = R^-1 Q1^T (dgeqrf, dorgqr, dtrsm): O(d n^2) flops and
 * O(d n) memory.  (Least squares against I_d, as dgels would do it, costs
 * O(d^2 n) flops and a d x d right-hand side: 134 MB at d = 4096.) */
static int pinv_thin_qr(ac_mat *Y, const ac_mat *X, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    ac_mat A = {0}, R = {0};
    double *tau = malloc((n ? n : 1) * sizeof(double));
    int st;
    if (!tau)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if ((st = ac_mat_copy(&A, X, err)) || (st = ac_mat_init(&R, n, n, err)))
        goto out;
    lapack_int info = LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)d, (lapack_int)n, A.data,
                                     (lapack_int)n, tau);
    if (info != 0) {
        st = ac_err_set(err, AC_EINTERNAL, "LAPACKE_dgeqrf: argument %d invalid", (int)-info);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (AC_MAT(&A, i, i) == 0.0) {
            st = ac_err_set(err, AC_EDATA, "X is rank deficient (zero pivot %zu in QR)", i + 1);
            goto out;
        }
        for (size_t j = i; j < n; j++)
            AC_MAT(&R, i, j) = AC_MAT(&A, i, j);
    }
    info = LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)d, (lapack_int)n, (lapack_int)n, A.data,
                          (lapack_int)n, tau);
    if (info != 0) {
        st = ac_err_set(err, AC_EINTERNAL, "LAPACKE_dorgqr: argument %d invalid", (int)-info);
        goto out;
    }
    if ((st = ac_mat_init(Y, n, d, err)))
        goto out;
    for (size_t i = 0; i < d; i++) /* Y = Q1^T */
        for (size_t j = 0; j < n; j++)
            AC_MAT(Y, j, i) = AC_MAT(&A, i, j);
    cblas_dtrsm(CblasRowMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, (int)n, (int)d,
                1.0, R.data, (int)n, Y->data, (int)d);
out:
    free(tau);
    ac_mat_free(&A);
    ac_mat_free(&R);
    return st;
}

int ac_approx_pinv_fullcol(ac_mat *Y, const ac_mat *X, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    if (d < n)
        return ac_err_set(err, AC_EDATA, "X (%zu x %zu) cannot have full column rank: d < n", d, n);
    if (d == n && n > 0 && inverse_lu(Y, X, NULL) == AC_OK)
        return AC_OK;
    if (n == 0 || d == 0)
        return ac_mat_init(Y, n, d, err);
    return pinv_thin_qr(Y, X, err);
}

int ac_approx_svd(const ac_mat *A, ac_mat *U, double *s, ac_mat *Vt, ac_err *err)
{
    size_t m = A->rows, n = A->cols, p = m < n ? m : n;
    ac_mat W = {0};
    int st;
    U->data = Vt->data = NULL;
    if ((st = ac_mat_init(U, m, p, err)) || (st = ac_mat_init(Vt, p, n, err)) ||
        (st = ac_mat_copy(&W, A, err)))
        goto fail;
    if (p > 0) {
        lapack_int info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', (lapack_int)m, (lapack_int)n,
                                         W.data, (lapack_int)n, s, U->data, (lapack_int)p,
                                         Vt->data, (lapack_int)n);
        if (info != 0) {
            /* dgesdd's divide and conquer rarely fails to converge; dgesvd is the fallback */
            double *superb = malloc((p ? p : 1) * sizeof(double));
            ac_mat_free(&W);
            if (!superb || (st = ac_mat_copy(&W, A, err))) {
                free(superb);
                st = st ? st : ac_err_set(err, AC_EINTERNAL, "out of memory in the SVD");
                goto fail;
            }
            info = LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'S', 'S', (lapack_int)m, (lapack_int)n,
                                  W.data, (lapack_int)n, s, U->data, (lapack_int)p, Vt->data,
                                  (lapack_int)n, superb);
            free(superb);
            if (info != 0) {
                st = ac_err_set(err, AC_EDATA, "SVD did not converge (LAPACK info %d)", (int)info);
                goto fail;
            }
        }
    }
    ac_mat_free(&W);
    return AC_OK;
fail:
    ac_mat_free(&W);
    ac_mat_free(U);
    ac_mat_free(Vt);
    return st;
}

int ac_approx_svd_values(const ac_mat *A, double *s, ac_err *err)
{
    size_t m = A->rows, n = A->cols, p = m < n ? m : n;
    ac_mat W = {0};
    int st = ac_mat_copy(&W, A, err);
    if (st)
        return st;
    if (p > 0) {
        lapack_int info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'N', (lapack_int)m, (lapack_int)n,
                                         W.data, (lapack_int)n, s, NULL, (lapack_int)m, NULL,
                                         (lapack_int)n);
        if (info != 0) {
            ac_mat_free(&W);
            return ac_err_set(err, AC_EDATA, "SVD did not converge (LAPACK info %d)", (int)info);
        }
    }
    ac_mat_free(&W);
    return AC_OK;
}

int ac_approx_pinv(ac_mat *Y, const ac_mat *X, double rcond, ac_err *err)
{
    size_t d = X->rows, n = X->cols, p = d < n ? d : n;
    ac_mat U = {0}, Vt = {0};
    double *s = malloc((p ? p : 1) * sizeof(double));
    int st;
    if (!s)
        return ac_err_set(err, AC_EINTERNAL, "out of memory in the pseudo-inverse");
    if ((st = ac_approx_svd(X, &U, s, &Vt, err)) || (st = ac_mat_init(Y, n, d, err)))
        goto out;
    /* Y = V diag(1/s) U^T over the singular values above rcond * s_1 */
    for (size_t k = 0; k < p; k++) {
        if (!(s[k] > rcond * s[0]) || s[k] == 0.0)
            break;
        double inv = 1.0 / s[k];
        for (size_t i = 0; i < n; i++) {
            double v = AC_MAT(&Vt, k, i) * inv;
            for (size_t j = 0; j < d; j++)
                AC_MAT(Y, i, j) += v * AC_MAT(&U, j, k);
        }
    }
out:
    free(s);
    ac_mat_free(&U);
    ac_mat_free(&Vt);
    return st;
}

/* Upper bound on ||M - I||_F or ||M||_F for an interval matrix M. */
static double fro_minus_identity_up(const ac_imat *M)
{
    return ac_imat_fro_dev_up(M, NULL, 1);
}

int ac_sv_enclose(const ac_imat *A, double *lo, double *hi, double *eps_out, ac_err *err)
{
    size_t m = A->rows, n = A->cols, p = m < n ? m : n;
    ac_mat Amid = {A->rows, A->cols, A->mid}, U = {0}, Vt = {0};
    ac_imat US = {0}, F = {0}, UtU = {0}, VVt = {0};
    double *s = malloc((p ? p : 1) * sizeof(double));
    int st;
    if (eps_out)
        *eps_out = INFINITY;
    if (!s)
        return ac_err_set(err, AC_EINTERNAL, "out of memory in ac_sv_enclose");
    if (!ac_imat_finite(A)) {
        for (size_t i = 0; i < p; i++) {
            lo[i] = 0;
            hi[i] = INFINITY;
        }
        free(s);
        return AC_OK;
    }
    if ((st = ac_approx_svd(&Amid, &U, s, &Vt, err)))
        goto out;
    /* US = U diag(s): one rounding per entry, so the exact product lies within
     * u|fl(U s)| + eta/2 of the computed one. */
    if ((st = ac_imat_init(&US, m, p, 1, err)) || (st = ac_imat_init(&F, m, n, 1, err)) ||
        (st = ac_imat_init(&UtU, p, p, 1, err)) || (st = ac_imat_init(&VVt, p, p, 1, err)))
        goto out;
    for (size_t i = 0; i < m; i++)
        for (size_t k = 0; k < p; k++) {
            double v = AC_MAT(&U, i, k) * s[k];
            US.mid[i * p + k] = v;
            US.rad[i * p + k] = ac_up(ac_mul_up(fabs(v), AC_U) + AC_ETA);
        }
    {
        ac_imat Vti = ac_imat_view(&Vt), Ui = ac_imat_view(&U);
        if ((st = ac_imat_mul(&F, AC_NOTRANS, &US, AC_NOTRANS, &Vti, err)) ||
            (st = ac_imat_mul(&UtU, AC_TRANS, &Ui, AC_NOTRANS, &Ui, err)) ||
            (st = ac_imat_mul(&VVt, AC_NOTRANS, &Vti, AC_TRANS, &Vti, err)))
            goto out;
    }
    /* eps >= ||F - A'||_F for all A' in A: |F - A'| <= |F.mid - A.mid| + F.rad + A.rad */
    if (A->rad)
        for (size_t i = 0; i < m * n; i++)
            F.rad[i] = ac_add_up(F.rad[i], A->rad[i]);
    double eps = ac_imat_fro_dev_up(&F, A->mid, 0);
    double alpha = fro_minus_identity_up(&UtU), beta = fro_minus_identity_up(&VVt);
    if (eps_out)
        *eps_out = eps;
    if (!(alpha < 1) || !(beta < 1)) {
        for (size_t i = 0; i < p; i++) {
            lo[i] = 0;
            hi[i] = INFINITY;
        }
        goto out;
    }
    double fl = ac_sqrt_dn(ac_mul_dn(ac_sub_dn(1, alpha), ac_sub_dn(1, beta)));
    double fh = ac_sqrt_up(ac_mul_up(ac_add_up(1, alpha), ac_add_up(1, beta)));
    for (size_t i = 0; i < p; i++) {
        double l = ac_sub_dn(ac_mul_dn(s[i], fl), eps);
        lo[i] = l > 0 ? l : 0;
        hi[i] = ac_add_up(ac_mul_up(s[i], fh), eps);
    }
out:
    free(s);
    ac_mat_free(&U);
    ac_mat_free(&Vt);
    ac_imat_free(&US);
    ac_imat_free(&F);
    ac_imat_free(&UtU);
    ac_imat_free(&VVt);
    return st;
}

#define CERTLI_PANEL 128 /* columns of Y X per task of ac_cert_left_inverse */

/* The sums of ac_cert_left_inverse, per column range [j0, j0 + w) of
 * E = [YX] - I: m the largest entry bound up(|mid - I|) + rad, ql the
 * largest max(0, dn(|mid - I|) - rad), and (second pass, sc > 0) s the sum
 * of the squares of the entry bounds scaled by sc, in a fixed order. */
typedef struct {
    double m, ql, s;
} certli_part;

/* One row segment of E (w entries, the diagonal at position dg, or none
 * when dg >= w): the largest entry bound up(|m - delta|) + r (NaN: +inf) and
 * the largest certain part dn(|m - delta|) - r (NaN or negative: 0), as the
 * bits of non-negative doubles (the same order as the values): integer
 * maxima, one per loop, so that the loops vectorise. */
static void certli_row_max(const double *restrict mi, const double *restrict ri, size_t w,
                        size_t dg, uint64_t *mb, uint64_t *qb)
{
    uint64_t m = *mb, q = *qb;
    for (size_t j = 0; j < w; j++) {
        double c = fabs(mi[j] - (j == dg ? 1.0 : 0.0));
        double v = ac_add_up(ac_up(c), ri[j]);
        v = v == v ? v : INFINITY;
        uint64_t b;
        memcpy(&b, &v, sizeof b);
        m = b > m ? b : m;
    }
    for (size_t j = 0; j < w; j++) {
        double c = fabs(mi[j] - (j == dg ? 1.0 : 0.0));
        double dl = ac_sub_dn(ac_dn(c), ri[j]);
        dl = dl == dl ? dl : 0;
        uint64_t b;
        memcpy(&b, &dl, sizeof b);
        b &= ~(uint64_t)((int64_t)b >> 63); /* negative: 0 */
        q = b > q ? b : q;
    }
    *mb = m;
    *qb = q;
}

/* acc[l] += (entry bound * sc)^2 over the entries j = l mod 8 of a row
 * segment: eight fixed partial sums, so that the loop vectorises. */
static void certli_row_sumsq(const double *restrict mi, const double *restrict ri, size_t w,
                          size_t dg, double sc, double *restrict acc)
{
    size_t j = 0;
    for (; j + 8 <= w; j += 8)
        for (size_t l = 0; l < 8; l++) {
            double c = fabs(mi[j + l] - (j + l == dg ? 1.0 : 0.0));
            double t = ac_add_up(ac_up(c), ri[j + l]) * sc;
            acc[l] += t * t;
        }
    for (; j < w; j++) {
        double c = fabs(mi[j] - (j == dg ? 1.0 : 0.0));
        double t = ac_add_up(ac_up(c), ri[j]) * sc;
        acc[j % 8] += t * t;
    }
}

static void certli_scan(certli_part *pt, const ac_imat *YX, size_t j0, size_t w, double sc)
{
    size_t n = YX->cols;
    uint64_t mb = 0, qb = 0;
    double acc[8] = {0};
    for (size_t i = 0; i < YX->rows; i++) {
        const double *mi = YX->mid + i * n + j0, *ri = YX->rad + i * n + j0;
        size_t dg = (i >= j0 && i < j0 + w) ? i - j0 : w;
        if (sc > 0)
            certli_row_sumsq(mi, ri, w, dg, sc, acc);
        else
            certli_row_max(mi, ri, w, dg, &mb, &qb);
    }
    if (sc > 0)
        pt->s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    else {
        memcpy(&pt->m, &mb, sizeof mb);
        memcpy(&pt->ql, &qb, sizeof qb);
    }
}

int ac_cert_left_inverse(const ac_mat *Y, const ac_mat *X, double *q_lo, double *q_hi,
                         double *sigma_lo, ac_imat *yx_out, ac_err *err)
{
    size_t n = X->cols, d = X->rows, np = (n + CERTLI_PANEL - 1) / CERTLI_PANEL;
    ac_imat YX = {0};
    double *an = NULL, *bn = NULL;
    certli_part *pt = NULL;
    int st, bad = 0;
    if (Y->cols != X->rows || Y->rows != n)
        return ac_err_set(err, AC_EUSAGE, "left inverse: Y is %zu x %zu, X is %zu x %zu", Y->rows,
                          Y->cols, X->rows, X->cols);
    if ((st = ac_imat_init(&YX, n, n, 1, err)))
        return st;
    an = malloc((2 * n + 1) * sizeof(double));
    pt = calloc(np ? np : 1, sizeof *pt);
    if (!an || !pt) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    bn = an + n;
    /* Y X by norm-bounded products (doc/mathematics.md §2.3) in fixed ranges
     * of CERTLI_PANEL columns over the OpenMP threads, each scanned for the
     * bounds while it is fresh; per-row and per-column quantities do not
     * depend on the ranges: the same bits for any thread count */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n > CERTLI_PANEL && !omp_in_parallel())
#endif
    for (size_t i = 0; i < n; i++)
        an[i] = ac_norm2_up(Y->data + i * d, d);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) reduction(max : bad) if (np > 1 && !omp_in_parallel())
#endif
    for (size_t p = 0; p < np; p++) {
        size_t j0 = p * CERTLI_PANEL, w = n - j0 < CERTLI_PANEL ? n - j0 : CERTLI_PANEL;
        ac_colnorms_up(bn + j0, X->data + j0, d, w, n, 0);
        int e = ac_mul_cs(YX.mid + j0, YX.rad + j0, n, Y->data, n, d, X->data + j0, d, w, n, an,
                          bn + j0, 0, NULL);
        bad = e > bad ? e : bad;
        if (!e)
            certli_scan(&pt[p], &YX, j0, w, 0);
    }
    if (bad) {
        st = ac_err_set(err, bad, "left inverse: the product Y X failed");
        goto out;
    }
    /* q_hi >= ||E||_F as ac_norm2_up of the entry bounds: largest m = f 2^e,
     * then the scaled squares; the sum of N = n^2 non-negative terms in any
     * order of additions is within gamma_{N-1} (Higham, ASNA §4.2), so the
     * ranges' sums may be added in range order (doc/mathematics.md §2.5) */
    double m = 0, ql = 0, qh;
    for (size_t p = 0; p < np; p++) {
        m = !(pt[p].m <= m) ? pt[p].m : m;
        ql = pt[p].ql > ql ? pt[p].ql : ql;
    }
    if (!(m <= DBL_MAX))
        qh = INFINITY;
    else if (m == 0)
        qh = 0;
    else {
        int e;
        frexp(m, &e);
        /* 2^-e normal: each scaled bound exact unless subnormal (eta/2 lost) */
        double sc = (e >= -1021 && e <= 1021) ? ldexp(1.0, -e) : 0.0, s = 0;
        if (sc == 0) /* entries near the ends of the exponent range */
            qh = ac_imat_fro_dev_up(&YX, NULL, 1);
        else {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) if (np > 1 && !omp_in_parallel())
#endif
            for (size_t p = 0; p < np; p++) {
                size_t j0 = p * CERTLI_PANEL, w = n - j0 < CERTLI_PANEL ? n - j0 : CERTLI_PANEL;
                certli_scan(&pt[p], &YX, j0, w, sc);
            }
            for (size_t p = 0; p < np; p++)
                s += pt[p].s;
            double N = (double)n * (double)n;
            double bound = ac_mul_up(s, ac_div_up(1.0, ac_sub_dn(1.0, ac_gamma_up(N + 1))));
            bound = ac_add_up(bound, ac_mul_up(N, 4 * AC_ETA + 0x1p-1060));
            qh = ldexp(ac_sqrt_up(bound), e) * (1.0 + 2 * AC_U) + AC_ETA;
        }
    }
    if (q_lo)
        *q_lo = ql;
    if (q_hi)
        *q_hi = qh;
    if (sigma_lo) {
        /* YX = I + E, ||E|| <= q < 1  =>  sigma_min(YX) >= 1 - q, and
         * sigma_min(YX) <= ||Y||_2 sigma_min(X)  =>  sigma_min(X) >= (1-q)/||Y||_2,
         * with ||Y||_2 <= ||Y||_F <= sqrt(sum_i an_i^2) (an_i >= ||Y_i,:||) */
        double ny = 0;
        for (size_t i = 0; i < n; i++)
            ny = ac_add_up(ny, ac_mul_up(an[i], an[i]));
        ny = ac_sqrt_up(ny);
        *sigma_lo = (qh < 1 && ny > 0 && ny <= DBL_MAX) ? ac_div_dn(ac_sub_dn(1.0, qh), ny) : 0.0;
        if (n == 0)
            *sigma_lo = INFINITY;
    }
    if (yx_out) {
        *yx_out = YX;
        YX.mid = YX.rad = NULL;
    }
out:
    free(an);
    free(pt);
    ac_imat_free(&YX);
    return st;
}

/* ---- exact rank ------------------------------------------------------------ */

/* Decompose a finite nonzero double as x = m 2^e with m an odd... any int64
 * mantissa |m| < 2^53. */
static void split_double(double x, int64_t *m, int *e)
{
    int ex;
    double f = frexp(x, &ex); /* x = f 2^ex, 0.5 <= |f| < 1 */
    *m = (int64_t)ldexp(f, 53);
    *e = ex - 53;
}

static int min_exponent(const ac_mat *A, int *emin, int *emax)
{
    int have = 0;
    size_t N = A->rows * A->cols;
    for (size_t i = 0; i < N; i++) {
        double x = A->data[i];
        if (x == 0.0)
            continue;
        int64_t m;
        int e;
        split_double(x, &m, &e);
        if (!have || e < *emin)
            *emin = e;
        if (!have || e > *emax)
            *emax = e;
        have = 1;
    }
    return have;
}

/* The exponents of the nonzero entries of A (x = m 2^e, split_double):
 * 1 with *emin, *emax set, 0 for a zero matrix, -1 (AC_EDATA in err) if an
 * entry is not finite. */
static int exponent_range(const ac_mat *A, int *emin, int *emax, ac_err *err)
{
    for (size_t i = 0; i < A->rows * A->cols; i++)
        if (!isfinite(A->data[i])) {
            ac_err_set(err, AC_EDATA, "matrix has a non-finite entry");
            return -1;
        }
    return min_exponent(A, emin, emax);
}

int ac_rank_lower_modp(const ac_mat *A, long *rank, ac_err *err)
{
    size_t r = A->rows, c = A->cols;
    int emin = 0, emax = 0;
    int have = exponent_range(A, &emin, &emax, err);
    if (have < 0)
        return AC_EDATA;
    if (have == 0) {
        *rank = 0;
        return AC_OK;
    }
    mp_limb_t p = n_nextprime(UWORD(1) << 61, 1);
    nmod_mat_t M;
    nmod_mat_init(M, (slong)r, (slong)c, p);
    for (size_t i = 0; i < r; i++)
        for (size_t j = 0; j < c; j++) {
            double x = A->data[i * c + j];
            mp_limb_t v = 0;
            if (x != 0.0) {
                int64_t m;
                int e;
                split_double(x, &m, &e);
                mp_limb_t am = (mp_limb_t)(m < 0 ? -m : m) % p;
                v = n_mulmod2_preinv(am, n_powmod2(2, (mp_limb_signed_t)(e - emin), p), p,
                                     n_preinvert_limb(p));
                if (m < 0)
                    v = v ? p - v : 0;
            }
            nmod_mat_entry(M, i, j) = v;
        }
    *rank = nmod_mat_rank(M);
    nmod_mat_clear(M);
    return AC_OK;
}

int ac_rank_exact(const ac_mat *A, double max_work, long *rank, size_t *pivot_rows, ac_err *err)
{
    size_t r = A->rows, c = A->cols;
    int emin = 0, emax = 0;
    *rank = -1;
    int have = exponent_range(A, &emin, &emax, err);
    if (have < 0)
        return AC_EDATA;
    if (have == 0) {
        *rank = 0;
        return AC_OK;
    }
    double bits = 53.0 + (double)(emax - emin);
    double mn = (double)(r < c ? r : c);
    if (max_work <= 0)
        max_work = 0x1p34;
    if ((double)r * (double)c * mn * bits > max_work)
        return AC_OK; /* too large: unknown */
    /* rows of A = columns of A^T: the pivot columns of rref(A^T), exactly */
    ac_xmat T;
    if (ac_xmat_from_d(&T, A->data, r, c, c, 1, (slong)bits + 64) != AC_XMAT_OK)
        return ac_err_set(err, AC_EINTERNAL, "exact rank: conversion to integers failed");
    *rank = (long)ac_xmat_rank_cols(&T, pivot_rows);
    ac_xmat_clear(&T);
    return AC_OK;
}
