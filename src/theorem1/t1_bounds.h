/* t1_bounds.h — internals of the distance bounds of Theorem 1 (not
 * installed; doc/mathematics.md §3.6):
 *   bounds.c     lower bounds on dist = inf over heads of max|Softmax - P|:
 *                column sums, zero and equal columns of X, the log-domain
 *                obstructions entry by entry and on submatrices of P;
 *   bounds_d1.c  d = 1: dist as a one-parameter problem, enclosed by branch
 *                and bound over the scalar logit weight a;
 *   upper.c      candidate heads for dist_hi: the zero head, the user's head,
 *                the d = 1 optimum; the best certified one is written.
 */
#ifndef AC_THEOREM1_T1_BOUNDS_H
#define AC_THEOREM1_T1_BOUNDS_H

#include "attncheck/theorem1.h"

/* Tighten [res->dist_lo, res->dist_hi] after a route has run: the candidate
 * heads of upper.c (replacing res->Wk, res->Wq, res->weights_cert when one
 * is certified better), then the lower bounds of bounds.c.  Sets
 * res->lower_method and res->upper_method.  AC_EDATA for a user head of the
 * wrong shape. */
int ac_t1_tighten(ac_t1_result *res, const ac_mat *X, const ac_mat *P, const ac_t1_opts *o,
                  ac_err *err);

/* Lower bounds (bounds.c): raise res->dist_lo to the best certified one and
 * name it in res->lower_method.  a_lo: a d = 1 enclosure's lower end (or 0). */
int ac_t1_lower_bounds(ac_t1_result *res, const ac_mat *X, const ac_mat *P, double a_lo,
                       const ac_t1_opts *o, ac_err *err);

/* An upper bound on sqrt(sum_e phi(t/p_e)^2), phi(s) = -log(1 - s) (+inf if
 * some t/p_e >= 1): in MPFR (in_double = 0, the reference) or with the
 * verified double logarithm (1; used above 256^2 entries) (bounds.c). */
double ac_t1_phi_fro_up(const double *p, size_t cnt, double t, int in_double);

/* d = 1 (bounds_d1.c): every head's logits are a x_i x_j for a scalar a, so
 * dist = inf over a of f(a), f(a) = max_ij |softmax_col(a x x_j)_i - P_ij|.
 * *lo is a certified lower bound on dist (branch and bound over a in R with
 * outward-rounded enclosures), *a_best the best a seen and *f_best its f in
 * double (not certified).  work: budget in entry evaluations. */
void ac_t1_d1_search(const ac_mat *X, const ac_mat *P, double work, double *lo, double *a_best,
                     double *f_best);

/* Candidate heads (upper.c): certify the zero head, the user's head and, for
 * d = 1, the head with logit weight a_best; keep the best.  */
int ac_t1_upper_candidates(ac_t1_result *res, const ac_mat *X, const ac_mat *P, int have_a,
                           double a_best, const ac_t1_opts *o, ac_err *err);

#endif /* AC_THEOREM1_T1_BOUNDS_H */
