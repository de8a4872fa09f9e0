/* linalg_lu.h — the inverse of a square matrix by LU with partial pivoting
 * in FIXED panels, shared out over the OpenMP threads (internal; the rank
 * step of Theorem 1 calls it, src/theorem1/rank_x.c).
 *
 * Every BLAS and LAPACK call inside works on a panel whose columns depend on
 * n only (never on the thread count) and runs single-threaded, so the
 * result is the same bits for any number of threads.  The inverse is only
 * an approximation: whatever it is used for is certified afterwards (the
 * rank step certifies ||Y X - I||_F, doc/mathematics.md §2.5). */
#ifndef AC_CORE_LINALG_LU_H
#define AC_CORE_LINALG_LU_H

#include "attncheck/linalg.h"

/* Y (allocated here, n x n) ~ X^-1 for square X (row-major).  ref != 0:
 * the reference twin, textbook Gaussian elimination with partial pivoting
 * and the inverse column by column in plain loops (no BLAS).  AC_EDATA
 * (Y freed) when a pivot is exactly zero or the result is not finite. */
int ac_inverse_lu_panels(ac_mat *Y, const ac_mat *X, int ref, ac_err *err);

#endif
