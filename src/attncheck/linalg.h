/* attncheck/linalg.h — dense linear algebra with and without certificates.
 *
 * Double-precision kernels (LAPACKE/CBLAS) carry the prefix ac_ and the word
 * "approx" where their result has no bound; certified routines return
 * rigorous enclosures (interval.h conventions) and say so.
 */
#ifndef ATTNCHECK_LINALG_H
#define ATTNCHECK_LINALG_H

#include "attncheck/common.h"
#include "attncheck/interval.h"

#ifdef __cplusplus
extern "C" {
#endif

/* C = op(A) op(B) in double (cblas_dgemm); C allocated by the caller. */
int ac_gemm(ac_mat *C, ac_trans ta, const ac_mat *A, ac_trans tb, const ac_mat *B, ac_err *err);

/* Raw row-major dgemm: C = alpha op(A) op(B) + beta C, op(A) m x k,
 * op(B) k x n (a thin wrapper over cblas_dgemm, so that callers need not
 * include cblas.h, which clashes with GSL's gsl_cblas.h). */
void ac_dgemm(ac_trans ta, ac_trans tb, size_t m, size_t n, size_t k, double alpha,
              const double *A, size_t lda, const double *B, size_t ldb, double beta, double *C,
              size_t ldc);

/* Y = X^+ = (X^T X)^{-1} X^T (n x d) for X (d x n) of full column rank,
 * computed by LU with partial pivoting when X is square (dgetrf/dgetri) and
 * otherwise by the thin Householder QR X = Q1 R, Y = R^-1 Q1^T (dgeqrf,
 * dorgqr, dtrsm; O(d n^2) flops, O(d n) memory), so that Y X ~ I_n.  Approximate: certify Y X = I separately (ac_cert_left_inverse).
 * Y must be zeroed; it is allocated here.  AC_EDATA if d < n or if LAPACK
 * finds X rank deficient (an exactly zero pivot). */
int ac_approx_pinv_fullcol(ac_mat *Y, const ac_mat *X, ac_err *err);

/* Y = X^+ (n x d) for any X (d x n) by the SVD, treating singular values
 * below rcond * sigma_1 as zero.  Approximate.  Y must be zeroed. */
int ac_approx_pinv(ac_mat *Y, const ac_mat *X, double rcond, ac_err *err);

/* Singular values of A (min(m,n) of them, descending) in double (dgesdd).
 * s has room for min(m,n).  Approximate. */
int ac_approx_svd_values(const ac_mat *A, double *s, ac_err *err);

/* Thin SVD A = U diag(s) Vt, U m x p, Vt p x n, p = min(m, n).  U, Vt zeroed;
 * allocated here.  Approximate. */
int ac_approx_svd(const ac_mat *A, ac_mat *U, double *s, ac_mat *Vt, ac_err *err);

/* Certified enclosures lo[i] <= sigma_i(A') <= hi[i], i < min(m,n), for every
 * A' in the interval matrix A (Weyl's inequality around an approximate SVD,
 * doc/mathematics.md §2.5): with eps >= ||U S V^T - A'||_2, alpha >= ||U^T U - I||_2,
 * beta >= ||V^T V - I||_2 (all bounded by Frobenius norms in interval
 * arithmetic), sigma_i in [s_i sqrt((1-alpha)(1-beta)) - eps,
 * s_i sqrt((1+alpha)(1+beta)) + eps].  lo[i] is clamped at 0.  If alpha or
 * beta >= 1 all bounds are [0, inf].  *eps_out (may be NULL) receives eps.
 * Cost: one SVD and seven dgemm. */
int ac_sv_enclose(const ac_imat *A, double *lo, double *hi, double *eps_out, ac_err *err);

/* Certify that Y is a left inverse of X up to q: upper bound q >= ||Y X - I||_F
 * (Y n x d, X d x n).  If q < 1 then X has full column rank n and
 * sigma_min(X) >= (1 - q) / ||Y||_F; *sigma_lo (may be NULL) receives that
 * lower bound (0 if q >= 1).  *q_lo receives a lower bound on ||YX - I||_F.
 * yx_out (may be NULL; zeroed on entry) receives the interval enclosure of
 * Y X itself, for callers that need the product again. */
int ac_cert_left_inverse(const ac_mat *Y, const ac_mat *X, double *q_lo, double *q_hi,
                         double *sigma_lo, ac_imat *yx_out, ac_err *err);

/* Exact rank of a double matrix over the rationals (FLINT, fraction-free
 * elimination on the integer matrix 2^-e A).  *rank = -1 if the matrix is
 * beyond max_work (an estimate of rows*cols*min(rows,cols)*bits; 0 = default
 * 2^34).  If pivot_rows != NULL (room for rows), it receives the indices of
 * *rank linearly independent rows of A, ascending. */
int ac_rank_exact(const ac_mat *A, double max_work, long *rank, size_t *pivot_rows, ac_err *err);

/* A lower bound on the rank, exactly: the rank of A (scaled to integers)
 * modulo a 62-bit prime; rank over Q >= rank mod p.  Cheap (O(mn min(m,n))
 * word operations); powers of two are reduced modulo p, so any finite
 * entries work.  AC_EDATA if an entry is not finite. */
int ac_rank_lower_modp(const ac_mat *A, long *rank, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_LINALG_H */
