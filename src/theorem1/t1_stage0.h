/* t1_stage0.h — stage 0 of route DECIDE (not installed; criterion_stage0.c,
 * doc/mathematics.md §3.4, "Stage 0 of the criterion"): the log-domain
 * residual rho and the rank condition certified in double with a-priori
 * rounding-error bounds, so that Arb runs only where stage 0 cannot decide.
 *
 * Dimension letters: d model width, n tokens, dk head size.  Buffers are
 * row-major: X d x n, P n x n.
 */
#ifndef AC_THEOREM1_T1_STAGE0_H
#define AC_THEOREM1_T1_STAGE0_H

#include "attncheck/theorem1.h"

/* Rigorous enclosures lo[i] <= log(p[i]) <= hi[i] for positive finite p[i]:
 * log in double, widened by 2^-43 (1 + |log p|) and verified through the
 * rigorous exp of interval.h (exp(hi) >= p >= exp(lo)).  Returns 0 if some
 * entry is not positive and finite or fails the verification. */
int ac_t1_log_enclose(const double *p, size_t len, double *lo, double *hi);

/* The log-domain residual rho = min_c ||M(c) - Pi M(c) Pi||_F for X of full
 * row rank d < n (certified: sigma_lo > 0 is a certified lower bound on
 * sigma_d(X)), by a dual certificate Y (the residual computed in double):
 *   rho >= (<Y, L> - ||L||_F (||Y'1|| / h + ||X Y X'||_F (1 + sqrt(n)/h)
 *           / sigma_lo^2)) / ||Y||_F,
 * h <= dist(1, row space of X) certified the same way, and rho <= ||R||_F
 * for the exact residual R of an explicit c and A (doc/mathematics.md §3.4).
 * Fills *rho_lo (0 when nothing positive is certified), *rho_hi (+inf when
 * not bounded) and *h_lo (a lower bound on dist(1, row space), 0 if none).
 * Returns AC_OK, or AC_EINTERNAL out of memory. */
int ac_t1_rho_stage0(const ac_mat *X, const ac_mat *P, double sigma_lo, double *rho_lo,
                     double *rho_hi, double *h_lo, ac_err *err);

/* The pieces of ac_t1_rho_stage0, sound for ANY proposed Y and hv (the
 * double computation only makes them tight):
 * a lower bound on dist(1, row space of X) from hv (0 if none), and a lower
 * bound on rho from Y (n x n) for L = log P in [Llo, Lhi], given
 * sigma_d(X) >= sigma_lo > 0 and dist(1, row space) >= h_lo > 0. */
double ac_t1_dist_one_lo(const ac_mat *X, const double *hv, double sigma_lo, ac_err *err);
int ac_t1_rho_dual_lo(const ac_mat *X, const double *Y, const double *Llo, const double *Lhi,
                      double sigma_lo, double h_lo, double *rho_lo, ac_err *err);

/* Certified enclosures slo[i] <= sigma_{i+1}(K log P) <= shi[i] (i < n),
 * K = I - 1 1'/n, from an interval enclosure of K log P formed in double
 * and Weyl's inequality around an SVD (ac_sv_enclose).  Returns 0 if the
 * enclosure could not be formed (then nothing is certified). */
int ac_t1_klogp_sv_stage0(const ac_mat *P, double *slo, double *shi);

/* The same for the submatrix P_IJ (rows I[0..ni), columns J[0..nj); NULL:
 * the first ni rows / nj columns), its columns centred over the rows I:
 * slo[i] <= sigma_{i+1}(K_I log P_IJ) <= shi[i], i < min(ni, nj). */
int ac_t1_centred_log_sv_stage0(const ac_mat *P, const size_t *I, size_t ni, const size_t *J,
                                size_t nj, double *slo, double *shi);

/* Certified enclosures slo[i] <= sigma_{i+1}(K Pi log P Pi) <= shi[i]
 * (i < n) for X (d x n) of full row rank d < n, Pi the projector on its row
 * space, K = I - g g'/(g'g), g = Pi 1 (K = I when one_perp: X 1 = 0):
 * K~ Pi~ L Pi~ enclosed in double with Pi~ = X'SX, S ~ (XX')^{-1}, and
 * widened by a certified bound on its distance to K Pi L Pi
 * (criterion_stage0_pi.c, doc/mathematics.md §3.4).  Returns 0 if nothing is
 * certified. */
int ac_t1_kpilpi_sv_stage0(const ac_mat *X, const ac_mat *P, int one_perp, double *slo,
                           double *shi);
/* The same for a given point S (d x d) in place of (XX')^{-1}: sound for
 * ANY S (theta = ||I - S XX'||_F < 1 is certified, else 0 is returned); the
 * computed S only makes it tight. */
int ac_t1_kpilpi_sv_given(const ac_mat *X, const ac_mat *P, int one_perp, const ac_mat *S,
                          double *slo, double *shi);

#endif /* AC_THEOREM1_T1_STAGE0_H */
