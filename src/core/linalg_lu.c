/* linalg_lu.c — X^-1 by LU with partial pivoting in fixed panels over the
 * OpenMP threads (core/linalg_lu.h).
 *
 * A row-major buffer of X is the column-major buffer of X^T, and
 * inv(X^T)^T = inv(X): everything below runs column-major on the buffer as
 * it is, and its column-major inverse is X^-1 row-major.
 *
 *   1. Right-looking blocked LU, Pi A = L U: for each block of LU_NB columns,
 *      the panel is factored by LAPACK (dgetrf, single-threaded), then every
 *      other column range of LU_W columns gets the panel's row interchanges
 *      and, right of the panel, U12 = L11^-1 A12 and A22 -= L21 U12; the
 *      range holding the next panel factors it as soon as it is updated.
 *   2. M = U^-1 L^-1 by ranges of LU_W columns: column j of L^-1 is zero
 *      above row j, so the range starting at c0 solves with L only on rows
 *      c0.., then with U on all rows.
 *   3. A^-1 = M Pi: M's columns interchanged in reverse order (as dgetri).
 *
 * The ranges are fixed by n, each task is single-threaded BLAS on its own
 * columns, and no sum spans two tasks: the bits do not depend on the number
 * of threads or on which thread ran which task.  Flops as dgetrf + dgetri
 * (2 n^3), but all except the panels' n LU_NB^2 are shared out. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "core/linalg_lu.h"

#ifndef LU_NB
#define LU_NB 128 /* columns per panel factorisation */
#endif
#define LU_W LU_NB /* columns per task of the updates and of the inverse (the
                    * look-ahead needs the first task to be the next panel) */

/* ---- reference twin: textbook elimination, plain loops ------------------- */

static int inverse_ref(double *Y, const double *X, size_t n)
{
    double *A = malloc(n * n * sizeof(double));
    size_t *p = malloc(n * sizeof(size_t));
    int st = AC_OK;
    if (!A || !p) {
        st = AC_EINTERNAL;
        goto out;
    }
    memcpy(A, X, n * n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        p[i] = i;
    /* row-major A = L U with rows interchanged (p: row i of LU is row p[i] of X) */
    for (size_t k = 0; k < n; k++) {
        size_t r = k;
        for (size_t i = k + 1; i < n; i++)
            if (fabs(A[i * n + k]) > fabs(A[r * n + k]))
                r = i;
        if (A[r * n + k] == 0.0) {
            st = AC_EDATA;
            goto out;
        }
        if (r != k) {
            for (size_t j = 0; j < n; j++) {
                double t = A[k * n + j];
                A[k * n + j] = A[r * n + j];
                A[r * n + j] = t;
            }
            size_t t = p[k];
            p[k] = p[r];
            p[r] = t;
        }
        for (size_t i = k + 1; i < n; i++) {
            double l = A[i * n + k] / A[k * n + k];
            A[i * n + k] = l;
            for (size_t j = k + 1; j < n; j++)
                A[i * n + j] -= l * A[k * n + j];
        }
    }
    /* column j of X^-1 solves X y = e_j, i.e. L U y = (e_j permuted by p) */
    for (size_t j = 0; j < n; j++) {
        for (size_t i = 0; i < n; i++) {
            double s = p[i] == j ? 1.0 : 0.0;
            for (size_t l = 0; l < i; l++)
                s -= A[i * n + l] * Y[l * n + j];
            Y[i * n + j] = s;
        }
        for (size_t i = n; i-- > 0;) {
            double s = Y[i * n + j];
            for (size_t l = i + 1; l < n; l++)
                s -= A[i * n + l] * Y[l * n + j];
            Y[i * n + j] = s / A[i * n + i];
        }
    }
out:
    free(A);
    free(p);
    return st;
}

/* ---- the panel route ------------------------------------------------------ */

/* Factor the panel of columns k0.. (LU_NB of them or what is left) of the
 * column-major n x n A, rows k0..n: LAPACK's dgetrf, pivots made global.
 * Returns LAPACK's info, shifted to a global column when > 0. */
static lapack_int panel_factor(double *A, size_t n, size_t k0, lapack_int *ipiv)
{
    size_t kb = n - k0 < LU_NB ? n - k0 : LU_NB;
    lapack_int info = LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, (lapack_int)(n - k0), (lapack_int)kb,
                                          A + k0 + k0 * n, (lapack_int)n, ipiv + k0);
    for (size_t i = k0; i < k0 + kb; i++)
        ipiv[i] += (lapack_int)k0;
    return info > 0 ? info + (lapack_int)k0 : info;
}

/* Step 1 on the column-major n x n A (lda n): Pi A = L U in place, ipiv
 * 1-based as LAPACK's.  Returns the LAPACK info of the first singular
 * panel (> 0), else 0.  Look-ahead: the task that updates the columns of
 * the next panel (the first task, LU_W = LU_NB) factors that panel right
 * away, while the other tasks update the rest. */
static lapack_int lu_blocked(double *A, size_t n, lapack_int *ipiv)
{
    lapack_int info = n ? panel_factor(A, n, 0, ipiv) : 0;
    for (size_t k0 = 0; k0 < n && info == 0; k0 += LU_NB) {
        size_t kb = n - k0 < LU_NB ? n - k0 : LU_NB, r0 = k0 + kb;
        size_t nr = (n - r0 + LU_W - 1) / LU_W, nl = (k0 + LU_W - 1) / LU_W;
        lapack_int next = 0;
        /* tasks: the column ranges right of the panel (interchanges, U12,
         * the trailing update; the first one then factors the next panel),
         * then those left of it (interchanges only) */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) if (nl + nr > 1 && !omp_in_parallel())
#endif
        for (size_t t = 0; t < nr + nl; t++) {
            int right = t < nr;
            size_t c0 = right ? r0 + t * LU_W : (t - nr) * LU_W;
            size_t end = right ? n : k0, w = end - c0 < LU_W ? end - c0 : LU_W;
            LAPACKE_dlaswp_work(LAPACK_COL_MAJOR, (lapack_int)w, A + c0 * n, (lapack_int)n,
                                (lapack_int)(k0 + 1), (lapack_int)(k0 + kb), ipiv, 1);
            if (!right)
                continue;
            cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, (int)kb,
                        (int)w, 1.0, A + k0 + k0 * n, (int)n, A + k0 + c0 * n, (int)n);
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)(n - r0), (int)w, (int)kb,
                        -1.0, A + r0 + k0 * n, (int)n, A + k0 + c0 * n, (int)n, 1.0,
                        A + r0 + c0 * n, (int)n);
            if (t == 0)
                next = panel_factor(A, n, r0, ipiv);
        }
        info = next;
    }
    return info;
}

/* Steps 2 and 3: Y (column-major n x n) = A^-1 from the factors in A. */
static void inverse_from_lu(double *Y, const double *A, size_t n, const lapack_int *ipiv)
{
    size_t nt = (n + LU_W - 1) / LU_W;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) if (nt > 1 && !omp_in_parallel())
#endif
    for (size_t t = 0; t < nt; t++) {
        size_t c0 = t * LU_W, w = n - c0 < LU_W ? n - c0 : LU_W;
        double *Z = Y + c0 * n;
        memset(Z, 0, w * n * sizeof(double));
        for (size_t j = 0; j < w; j++)
            Z[j * n + c0 + j] = 1.0;
        /* rows c0.. of L^-1 e_j (rows above c0 are zero), then U^-1 */
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, (int)(n - c0),
                    (int)w, 1.0, A + c0 + c0 * n, (int)n, Z + c0, (int)n);
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, (int)n,
                    (int)w, 1.0, A, (int)n, Z, (int)n);
    }
    /* A^-1 = U^-1 L^-1 Pi, Pi = P_n ... P_1: column swaps, the last first */
    for (size_t i = n; i-- > 0;) {
        size_t r = (size_t)ipiv[i] - 1;
        if (r != i)
            cblas_dswap((int)n, Y + i * n, 1, Y + r * n, 1);
    }
}

int ac_inverse_lu_panels(ac_mat *Y, const ac_mat *X, int ref, ac_err *err)
{
    size_t n = X->rows;
    int st;
    if (X->cols != n)
        return ac_err_set(err, AC_EUSAGE, "inverse: X is %zu x %zu, not square", n, X->cols);
    if ((st = ac_mat_init(Y, n, n, err)))
        return st;
    if (n == 0)
        return AC_OK;
    if (ref)
        st = inverse_ref(Y->data, X->data, n);
    else {
        double *A = malloc(n * n * sizeof(double));
        lapack_int *ipiv = malloc(n * sizeof(lapack_int));
        if (!A || !ipiv)
            st = AC_EINTERNAL;
        else {
            memcpy(A, X->data, n * n * sizeof(double));
            /* single-threaded BLAS inside every task (a threaded BLAS would
             * split sums by its own thread count) */
            int bt = ac_blas_get_threads();
            ac_blas_set_threads(1);
            lapack_int info = lu_blocked(A, n, ipiv);
            if (info == 0)
                inverse_from_lu(Y->data, A, n, ipiv);
            ac_blas_set_threads(bt);
            st = info > 0 ? AC_EDATA : info < 0 ? AC_EINTERNAL : AC_OK;
        }
        free(A);
        free(ipiv);
    }
    if (!st)
        for (size_t i = 0; i < n * n; i++)
            if (!isfinite(Y->data[i])) {
                st = AC_EDATA;
                break;
            }
    if (st) {
        ac_mat_free(Y);
        return ac_err_set(err, st, st == AC_EDATA ? "X is singular or too ill-conditioned for LU"
                                                  : "LU inverse: out of memory or invalid argument");
    }
    return AC_OK;
}
