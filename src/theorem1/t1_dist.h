/* t1_dist.h — internals of the distance bounds of Theorem 1 (not
 * installed; doc/mathematics.md §3.6):
 *   dist_lower.c  lower bounds on dist = inf over heads of max|Softmax - P|:
 *                 column sums, zero and equal columns of X, the log-domain
 *                 obstructions entry by entry and on submatrices of P;
 *   dist_resid.c  the residual obstruction on a submatrix (one column):
 *                 dist(log P_IJ, {1c' + X_I'AX_J}) certified by a dual
 *                 certificate, for every head of every size;
 *   dist_d1.c     d = 1: dist as a one-parameter problem, enclosed by branch
 *                 and bound over the scalar logit weight a;
 *   dist_upper.c  candidate heads for dist_hi: the zero head, the user's head,
 *                 the d = 1 optimum; the best certified one is written.
 */
#ifndef AC_THEOREM1_T1_DIST_H
#define AC_THEOREM1_T1_DIST_H

#include "attncheck/theorem1.h"

/* Tighten [res->dist_lo, res->dist_hi] after a route has run: the candidate
 * heads of dist_upper.c (replacing res->Wk, res->Wq, res->weights_cert when one
 * is certified better), then the lower bounds of dist_lower.c.  Sets
 * res->lower_method and res->upper_method.  AC_EDATA for a user head of the
 * wrong shape. */
int ac_t1_tighten(ac_t1_result *res, const ac_mat *X, const ac_mat *P, const ac_t1_opts *o,
                  ac_err *err);

/* Lower bounds (dist_lower.c): raise res->dist_lo to the best certified one and
 * name it in res->lower_method.  a_lo: a d = 1 enclosure's lower end (or 0). */
int ac_t1_lower_bounds(ac_t1_result *res, const ac_mat *X, const ac_mat *P, double a_lo,
                       const ac_t1_opts *o, ac_err *err);

/* An upper bound on sqrt(sum_e phi(t/p_e)^2), phi(s) = -log(1 - s) (+inf if
 * some t/p_e >= 1): in MPFR (in_double = 0, the reference) or with the
 * verified double logarithm (1; used above 256^2 entries) (dist_lower.c). */
double ac_t1_phi_fro_up(const double *p, size_t cnt, double t, int in_double);

/* The largest t (by bisection in double, not certified) with
 * sqrt(sum_e phi(t/p_e)^2) < m, t < min p (dist_lower.c). */
double ac_t1_t_estimate(const double *p, size_t cnt, double m);
/* The same t, shrunk until the sum is certified < m (MPFR up to 256^2
 * entries, the verified double logarithm above); 0 if none (dist_lower.c).
 * If m <= ||E_e||_F for every head (E = log S - log P on these entries),
 * no head has max|S - P| <= t: dist >= t (doc/mathematics.md §3.6). */
double ac_t1_t_certified(const double *p, size_t cnt, double m);
/* Their reference twins (src/theorem1/test/test_dist.c): ac_t1_t_estimate
 * runs the bisection's 64 steps in full and ac_t1_t_certified asks MPFR
 * whenever the double logarithm does not certify; the fast ones stop the
 * bisection at its fixed point, each sum once it passes m, and settle
 * MPFR's answer in double when a series enclosure of phi does -- the same
 * t, bit for bit. */
double ac_t1_t_estimate_ref(const double *p, size_t cnt, double m);
/* The answer of ac_t1_phi_fro_up(p, cnt, t, 0) < m (MPFR) settled in
 * double by a series enclosure of phi when every t/p_e <= 1/4 and it
 * decides: 1 yes, 0 no, -1 not settled (dist_lower.c, with its proof). */
int ac_t1_phi_fro_up_settle(const double *p, size_t cnt, double t, double m);
double ac_t1_t_certified_ref(const double *p, size_t cnt, double m);

/* ---- pieces shared with the masked bounds (dist_lower.c; mask_bounds.c) ----
 * om: the support of a masked head (n x n, row = key), NULL: none. */

/* Column sums: max_j |1 - s_j| / m_j (m_j the keys query j sees), rounded
 * down; *col the column. */
double ac_t1_lb_colsum(const ac_mat *P, const unsigned char *om, size_t *col);
/* A zero column x_j: softmax column j is uniform on its visible keys. */
double ac_t1_lb_zero_cols(const ac_mat *X, const ac_mat *P, const unsigned char *om, size_t *col);
/* Equal columns x_j = x_k: equal logit rows (compared on the queries that see
 * both keys) and equal logit columns (compared when both queries see the
 * same keys): half the largest gap of P there. */
double ac_t1_lb_equal_cols(const ac_mat *X, const ac_mat *P, const unsigned char *om, size_t *cj,
                           size_t *ck);

/* Rows I[0 .. *ni) and columns J[0 .. *nj) (in, out) of P with every entry
 * of P_IJ >= tau: drop the row or column with the largest share of entries
 * below tau until none is left or fewer than k + 2 rows / k + 1 columns
 * remain.  cr, cc: scratch of *ni and *nj counts. */
void ac_t1_greedy_submatrix(const ac_mat *P, double tau, size_t k, size_t *I, size_t *ni,
                            size_t *J, size_t *nj, size_t *cr, size_t *cc);
/* sigma_{k+1}(K_I log P_IJ) in double (an estimate that picks a submatrix). */
double ac_t1_sub_sigma_approx(const ac_mat *P, const size_t *I, size_t ni, const size_t *J,
                              size_t nj, size_t k);
/* Certified slo[i] <= sigma_{i+1}(K_I log P_IJ) <= shi[i], i < min(ni, nj):
 * the centred logarithms in Arb at prec bits, then the Weyl enclosure of
 * doc/mathematics.md §2.5.  Returns 0 if nothing is certified. */
int ac_t1_centred_log_sv_arb(const ac_mat *P, const size_t *I, size_t ni, const size_t *J,
                             size_t nj, long prec, double *slo, double *shi);
/* slo[k] of the above at prec bits, or of ac_t1_centred_log_sv_stage0
 * (stage 0) when prec = 0; 0 if not certified. */
double ac_t1_sub_sigma_lo(const ac_mat *P, const size_t *I, size_t ni, const size_t *J,
                          size_t nj, size_t k, long prec);
/* The rank obstruction on submatrices (Lemma C, doc/mathematics.md §3.6):
 * for each threshold taus[q] (q < nt), the rows I0 and columns J0 (a0 x b0)
 * without the lines holding entries below it (ac_t1_greedy_submatrix), t
 * estimated with sigma_{k+1}(K_I log P_IJ) in double (the choice only); the
 * best certified (stage 0 when prec = 0, else Arb at prec bits) if its
 * estimate exceeds skip_below by 0.1%.  Returns the certified t (0: none),
 * its sizes in *sz_i, *sz_j. */
double ac_t1_lb_greedy(const ac_mat *P, size_t k, const size_t *I0, size_t a0, const size_t *J0,
                       size_t b0, const double *taus, int nt, double skip_below, long prec,
                       size_t *sz_i, size_t *sz_j);

/* buf = the entries of P_IJ, row by row. */
void ac_t1_gather(double *buf, const ac_mat *P, const size_t *I, size_t ni, const size_t *J,
                  size_t nj);

/* ---- the residual obstruction on a submatrix (dist_resid.c) ---- */

/* A certified lower bound on sigma_min(M) for M (m x p, m >= p) of full
 * column rank, (1 - q)/||G||_F with q >= ||G M - I||_F < 1 certified by an
 * interval product; G (p x m) an approximate left inverse, or NULL (then
 * M^+ is computed).  0 if not certified. */
double ac_t1_sigma_min_lo(const ac_mat *M, const ac_mat *G);

/* A lower bound on rho_IJ = dist_F(L_IJ, {1_a c' + X_I' A X_J}) from ANY
 * certificate Y (a x b), L_IJ in [Llo, Lhi] (a x b), XI d x a, XJ d x b:
 *   rho_IJ >= (<Y, L> - ||L||_F (||Y'1_a||/h
 *              + ||X_I Y X_J'||_F (1 + sqrt(a)/h)/(sI sJ))) / ||Y||_F
 * for certified 0 < sI <= sigma_d(X_I), 0 < sJ <= sigma_min(X_J) (rank
 * min(d, b)), 0 < h <= dist(1_a, range X_I').  0 if nothing positive is
 * certified (doc/mathematics.md §3.6). */
double ac_t1_resid_dual_lo(const ac_mat *XI, const ac_mat *XJ, const double *Y, const double *Llo,
                           const double *Lhi, double sI, double sJ, double h);

/* rho_IJ for the rows I[0..a) and columns J[0..b) of P (X d x n, a >= d + 2):
 * *rho_est the residual of L_IJ off S_IJ in double (not certified); if
 * certify, *rho_lo a certified lower bound (sigma_d(X_I), sigma_min(X_J)
 * and h certified at stage 0, then ac_t1_resid_dual_lo).  Returns 0 if the
 * residual could not be formed (then both are 0). */
int ac_t1_resid_rho(const ac_mat *X, const ac_mat *P, const size_t *I, size_t a, const size_t *J,
                    size_t b, int certify, double *rho_lo, double *rho_est);

/* The residual obstruction on one column: the column j and its a largest
 * entries (a > d + 1) chosen by an estimate, rho certified, and the largest
 * t with sqrt(sum_i phi(t/P_ij)^2) < rho certified: dist >= t for every
 * head of every size.  *col, *rows, *rho_out describe the choice (0 when
 * nothing is certified).  Returns t (0 if none). */
double ac_t1_lb_resid(const ac_mat *X, const ac_mat *P, size_t *col, size_t *rows,
                      double *rho_out);

/* d = 1 (dist_d1.c): every head's logits are a x_i x_j for a scalar a, so
 * dist = inf over a of f(a), f(a) = max_ij |softmax_col(a x x_j)_i - P_ij|.
 * *lo is a certified lower bound on dist (branch and bound over a in R with
 * outward-rounded enclosures), *a_best the best a seen and *f_best its f in
 * double (not certified).  work: budget in entry evaluations. */
void ac_t1_d1_search(const ac_mat *X, const ac_mat *P, double work, double *lo, double *a_best,
                     double *f_best);

/* Candidate heads (dist_upper.c): certify the zero head, the user's head and, for
 * d = 1, the head with logit weight a_best; keep the best.  */
int ac_t1_upper_candidates(ac_t1_result *res, const ac_mat *X, const ac_mat *P, int have_a,
                           double a_best, const ac_t1_opts *o, ac_err *err);

#endif /* AC_THEOREM1_T1_DIST_H */
