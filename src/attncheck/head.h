/* attncheck/head.h — one attention head of Bhojanapalli et al. (2020),
 * paper 1, eq. (1) and the layout of eq. (3): X is d x n, one column per
 * token; Wk, Wq are dk x d; the head's context matrix is
 *
 *     Softmax((Wk X)^T (Wq X) / sqrt(dk)),    n x n,
 *
 * the softmax taken over each column (doc/mathematics.md §1.2, §1.3).
 *
 * One home for the head in the three arithmetics of the library: in double
 * (ac_head_softmax), at stage 0 (interval products with the gamma_k bound, an
 * enclosure of 1/sqrt(dk) and the rigorous exp of the column softmax,
 * doc/mathematics.md §2.3, §2.4) and in Arb ball arithmetic.  Theorem 1
 * (attncheck/theorem1.h), the multi-head layers (attncheck/multihead.h, and
 * through them Theorem 2) and the trainer's certification of learned weights
 * all evaluate a head here.
 */
#ifndef ATTNCHECK_HEAD_H
#define ATTNCHECK_HEAD_H

#include "attncheck/common.h"
#include "attncheck/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* S = column-wise Softmax((Wk X)^T (Wq X) / sqrt(dk)) in double (n x n).
 * S must be zeroed; allocated here.  AC_EDATA if Wk, Wq are not both dk x d. */
int ac_head_softmax(ac_mat *S, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq, ac_err *err);

/* Certified enclosure [lo, hi] of max_ij |Softmax((Wk X)^T (Wq X)/sqrt(dk)) - P|_ij
 * for the given doubles: prec = 0 is stage 0 (interval products in double),
 * prec < 0 the split stage (Wk X and Wq X by ac_imat_mul_split, whose radius
 * does not grow with the weights; doc/mathematics.md §2.3), prec >= 2 ball
 * arithmetic at prec bits.  AC_EUSAGE if the shapes do not
 * match (P must be n x n). */
int ac_head_maxdev_enclose(double *lo, double *hi, const ac_mat *X, const ac_mat *Wk,
                           const ac_mat *Wq, const ac_mat *P, long prec, ac_err *err);

/* Decide "max_ij |Softmax((Wk X)^T (Wq X)/sqrt(dk)) - P|_ij <= tol" for the
 * given doubles with the verdict engine: stage 0 as ac_head_maxdev_enclose
 * with prec = 0 and, if that cannot decide, with prec < 0 (per column), then
 * Arb balls at the precisions of sched (NULL: stage 0 only) on the columns
 * whose split bound still exceeds tol.  Fills cert (quantity "max|Softmax((Wk X)'(Wq X)/sqrt(dk)) - P|").
 * This is how rep-theorem certifies the weights it writes and how
 * `attncheck train --task fit-p` certifies learned ones. */
int ac_head_certify(ac_cert *cert, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                    const ac_mat *P, double tol, const ac_schedule *sched, ac_err *err);

/* ---- the masked head (doc/mathematics.md §3.8) ----------------------------
 *
 * mask is n x n, row-major, row = key, column = query: mask[i * n + j] != 0
 * iff key i is visible to query j (causal: i <= j).  The masked softmax of
 * column j runs over the visible keys only,
 *
 *     Softmax_Omega(Z)_ij = exp(Z_ij) / sum_{k visible to j} exp(Z_kj)
 *
 * for visible (i, j) and 0 elsewhere; every query must see a key (AC_EUSAGE
 * otherwise: its softmax is undefined).  A row-stochastic PyTorch pattern
 * and its boolean mask are the transposes of these. */

/* S = Softmax_Omega((Wk X)^T (Wq X) / sqrt(dk)) in double (n x n; S zeroed,
 * allocated here). */
int ac_head_softmax_masked(ac_mat *S, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                           const unsigned char *mask, ac_err *err);

/* Certified enclosure [lo, hi] of max_ij |Softmax_Omega(...) - P|_ij over
 * every entry (off the mask the softmax is 0, so an entry of P there counts
 * as |P_ij|); prec as ac_head_maxdev_enclose. */
int ac_head_maxdev_enclose_masked(double *lo, double *hi, const ac_mat *X, const ac_mat *Wk,
                                  const ac_mat *Wq, const ac_mat *P, const unsigned char *mask,
                                  long prec, ac_err *err);

/* Decide "max_ij |Softmax_Omega((Wk X)^T (Wq X)/sqrt(dk)) - P|_ij <= tol" as
 * ac_head_certify does for the unmasked head (stage 0, split products,
 * Arb balls column by column).  Fills cert (quantity
 * "max|Softmax_Omega((Wk X)'(Wq X)/sqrt(dk)) - P|"; UNDECIDED on bad
 * input). */
int ac_head_certify_masked(ac_cert *cert, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                           const ac_mat *P, const unsigned char *mask, double tol,
                           const ac_schedule *sched, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_HEAD_H */
