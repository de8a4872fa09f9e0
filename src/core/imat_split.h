/* imat_split.h — enclosures of products of point matrices by one error-free
 * split (doc/mathematics.md §2.3, "Split products"): the pieces that the
 * head's panel-wise certificate (attention/head.c) calls directly.  The
 * public entry point is ac_imat_mul_split (attncheck/interval.h). */
#ifndef AC_CORE_IMAT_SPLIT_H
#define AC_CORE_IMAT_SPLIT_H

#include "attncheck/interval.h"

/* B (k x n, row-major, leading dimension ldb) = hi + lo exactly, split per
 * column: column j of hi holds integer multiples of 2^(e_j - beta) with
 * |hi_lj| <= 2^e_j, |B_lj| <= 2^e_j, |lo_lj| <= 2^(e_j - beta - 1);
 * beta = floor((53 - ceil(log2 k)) / 2).  hi, lo are k x n contiguous. */
typedef struct {
    size_t k, n;
    int beta;
    const double *b; /* the matrix itself (not owned) */
    size_t ldb;
    double *hi, *lo;
    int *e;          /* column exponent; AC_SPLIT_ZERO for a zero column */
    double *l1;      /* upper bound on sum_l |B_lj| */
} ac_split;

#define AC_SPLIT_ZERO (-100000)

/* beta for inner dimension k (k >= 1). */
int ac_split_beta(size_t k);

/* Split B (k x n) by columns.  AC_EINTERNAL out of memory; a non-finite
 * entry gives AC_EDATA. */
int ac_split_cols(ac_split *s, const double *B, size_t k, size_t n, size_t ldb, ac_err *err);
void ac_split_free(ac_split *s);

/* [Cm, Cr] (m x n, leading dimension ldc) encloses A B for the point matrix
 * A (m x k row-major, lda) and the split B: Cm = fl(A1 B1 + fl(A1 B2 + A2 B)),
 * A = A1 + A2 split by rows, A1 B1 exact, the rest bounded a priori.  An
 * entry whose scales leave the range where A1 B1 is exact (underflow of the
 * grid, or |A||B| near overflow) gets radius +inf. */
int ac_mul_split(double *Cm, double *Cr, size_t ldc, const double *A, size_t m, size_t lda,
                 const ac_split *B, ac_err *err);

/* Reference twin of ac_mul_split: the same split, the products by plain
 * loops (for the tests; O(mnk)). */
int ac_mul_split_ref(double *Cm, double *Cr, size_t ldc, const double *A, size_t m, size_t lda,
                     const ac_split *B, ac_err *err);

#endif /* AC_CORE_IMAT_SPLIT_H */
