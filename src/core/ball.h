/* ball.h — helpers between attncheck's double matrices and Arb balls
 * (internal: Arb types do not appear in the installed headers).
 *
 * All conversions from double are exact (a double is a ball of radius 0);
 * conversions back round outward.
 */
#ifndef AC_BALL_H
#define AC_BALL_H

#include <mpfr.h>

#include "core/ac_arb.h"
#include "attncheck/common.h"
#include "attncheck/interval.h"

/* A (rows x cols) = the doubles x (row-major), exactly.  A must be initialised
 * with the right shape. */
void ac_arb_mat_set_d(arb_mat_t A, const double *x, size_t rows, size_t cols);

/* Rigorous outward bounds of a ball as doubles / as MPFR numbers. */
double ac_arb_lo(const arb_t x);
double ac_arb_hi(const arb_t x);
void ac_arb_get_interval_mpfr(mpfr_t lo, mpfr_t hi, const arb_t x);

/* P = column-wise Softmax(L) in ball arithmetic (columns are the softmax
 * groups, as in paper 1): P_ij = exp(L_ij) / sum_k exp(L_kj). */
void ac_arb_softmax_cols(arb_mat_t P, const arb_mat_t L, slong prec);

/* res = max_ij |A_ij - B_ij| (B row-major doubles, same shape; B == NULL: 0).
 * The result is a ball containing the exact maximum. */
void ac_arb_max_abs_dev(arb_t res, const arb_mat_t A, const double *B, slong prec);

/* A midpoint-radius interval matrix containing the ball matrix M: mid is
 * the ball midpoint rounded to double, rad an upper bound on the distance of
 * every point of the ball to it.  A is allocated here (zeroed on entry). */
int ac_arb_mat_to_imat(ac_imat *A, const arb_mat_t M, ac_err *err);

/* res = Frobenius norm of A as a ball. */
void ac_arb_fro(arb_t res, const arb_mat_t A, slong prec);

#endif
