/* imat_cs.h — enclosures of matrix products whose radius costs O(n^2), not
 * a second dgemm: the a-priori bound gamma_k |A||B| majorised entrywise by
 * Cauchy–Schwarz, gamma_k ||A_i,:||_2 ||B_:,j||_2 (doc/mathematics.md §2.3,
 * "Norm-bounded products").  Internal: the head's certificate and the trace
 * of paper 1, eq. (4) call them on panels of columns. */
#ifndef AC_CORE_IMAT_CS_H
#define AC_CORE_IMAT_CS_H

#include "attncheck/interval.h"

/* out[j] >= ||column j of A||_2 for A (rows x cols, row-major, leading
 * dimension ld), with the entries replaced by up(|fl(A_ij - 1)|) on the
 * diagonal when minus_identity (then the norms are those of A - I).  +inf
 * for a column with a non-finite entry. */
void ac_colnorms_up(double *out, const double *A, size_t rows, size_t cols, size_t ld,
                    int minus_identity);

/* out[i] >= ||row i of A||_2 (rows x cols, leading dimension ld). */
void ac_rownorms_up(double *out, const double *A, size_t rows, size_t cols, size_t ld);

/* [Cm, Cr] (m x n, leading dimension ldc) encloses A B for point matrices A
 * (m x k, lda) and B (k x n, ldb): Cm = fl(A B) by one dgemm, and
 *   Cr_ij = up(gamma_k an_i bn_j) + realmin
 * with an_i >= ||A_i,:||_2 and bn_j >= ||B_:,j||_2 (an, bn may be NULL:
 * computed).  ref != 0: Cm by plain loops (the reference twin). */
int ac_mul_cs(double *Cm, double *Cr, size_t ldc, const double *A, size_t m, size_t lda,
              const double *B, size_t k, size_t n, size_t ldb, const double *an,
              const double *bn, int ref, ac_err *err);

/* kn (2n doubles) for ac_imat_mul_tn_nearid: kn[i] >= ||(up|Km - I|)_:,i||_2,
 * kn[n + i] >= ||Kr_:,i||_2 (0 when Kr is NULL).  K is n x n. */
void ac_nearid_norms(double *kn, const ac_imat *K);

/* C (n x w, with a radius) encloses K^T Q for every K in the interval
 * matrix K (n x n) and Q in Q (n x w): Cm = fl(Km^T Qm) by one dgemm and
 *   Cr = B1 + e c^T + kr f^T + realmin  (all rounded up),
 *   B1 >= gamma_n |Qm| + Qr,  B2 >= |Qm| + Qr,  c_j >= ||B1_:,j||, f_j >= ||B2_:,j||,
 * e, kr from kn (ac_nearid_norms; NULL: computed).  Sound for every K, tight
 * when K is close to the identity (|Km| <= I + |Km - I|).  ref != 0: Cm by
 * plain loops. */
int ac_imat_mul_tn_nearid(ac_imat *C, const ac_imat *K, const double *kn, const ac_imat *Q,
                          int ref, ac_err *err);

/* C (n x w, with a radius) encloses K^T Q for every K in K and Q in Q
 * without a product: K^T Q = Q + (K - I)^T Q, so
 *   Cm = Qm,  Cr = Qr + (e_i + kr_i) f_j   (rounded up),
 *   e, kr from kn (ac_nearid_norms of K),  f_j >= ||(|Qm| + Qr)_:,j||_2
 * (doc/mathematics.md §2.3, "Near-identity factors without a product").
 * O(n w); as tight as ac_imat_mul_tn_nearid when K's midpoint is no
 * farther from I than its radius is wide.  Cm may be Qm itself (C->mid ==
 * Q->mid: only the radius is written). */
int ac_imat_tn_nearid_bound(ac_imat *C, const double *kn, const ac_imat *Q, ac_err *err);

#endif /* AC_CORE_IMAT_CS_H */
