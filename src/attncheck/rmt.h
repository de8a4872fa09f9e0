/* attncheck/rmt.h — random-matrix predictions for the condition number of a
 * Gaussian block (doc/mathematics.md §5.2-§5.6): the first-order (Bai–Yin)
 * formula of paper 2 (eq. (6)), its Tracy–Widom finite-size correction, the
 * rigorous Gordon / Davidson–Szarek bounds, Edelman's law for square blocks
 * and the Marchenko–Pastur law of the spectrum.
 *
 * Setting.  A is N x D with i.i.d. N(0,1) entries, M = max(N, D),
 * m = min(N, D), kappa = sigma_1 / sigma_m.  Every formula below is
 * symmetric in (N, D) through (M, m).  These are predictions (asymptotic
 * laws evaluated at finite size, or bounds on expectations and tail
 * probabilities); nothing here is a statement about a particular sample.
 *
 * Tracy–Widom (GOE, beta = 1).  F1(s) is evaluated as the Fredholm
 * determinant
 *
 *     F1(s) = det(I - K_s) on L^2(0, inf),  K_s(x, y) = Ai((x + y)/2 + s) / 2
 *
 * (Ferrari–Spohn 2005; F. Bornemann, "On the numerical evaluation of
 * distributions in random matrix theory", Markov Process. Related Fields 16
 * (2010) 803-866), discretised by Gauss–Legendre quadrature on
 * [0, L] (Nyström's method, exponentially convergent).  The first call of
 * any ac_tw1_* function tabulates F1 once per process as piecewise
 * Chebyshev series on [-12, 12] of 48-node determinants (about 30 ms;
 * thread safe); the tabulated F1 agrees
 * with the direct determinant to ~1e-14 and its moments with Bornemann's
 * values (mean -1.2065335745820, variance 1.6077810345810) to ~1e-11.
 * Outside [-12, 12] F1 is 0 resp. 1 (the tails there are below 1e-15).
 */
#ifndef ATTNCHECK_RMT_H
#define ATTNCHECK_RMT_H

#include <stddef.h>

#include "attncheck/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Tracy–Widom GOE distribution ------------------------------------------ */

/* F1(s) = P(T <= s), T ~ TW1 (tabulated). */
double ac_tw1_cdf(double s);
/* Density F1'(s) (derivative of the tabulated series). */
double ac_tw1_pdf(double s);
/* The p-quantile, 0 < p < 1 (bisection on the tabulated F1, to 1e-13);
 * NaN outside (0, 1). */
double ac_tw1_quantile(double p);
/* Mean and standard deviation of TW1 (Gauss–Legendre quadrature of the
 * tabulated density). */
void ac_tw1_moments(double *mean, double *sd);
/* F1(s) by the Nyström discretisation with `nodes` Gauss–Legendre nodes
 * (the reference the table is built from; nodes <= 256, default 64 when
 * nodes == 0).  About 0.2 ms for 64 nodes. */
double ac_tw1_cdf_direct(double s, int nodes);

/* ---- Edelman's law for square blocks ---------------------------------------- */

/* Limit law of kappa/N for a real N x N Gaussian matrix (A. Edelman,
 * "Eigenvalues and condition numbers of random matrices", SIAM J. Matrix
 * Anal. Appl. 9 (1988) 543-560):
 *     P(kappa/N <= x) -> exp(-2/x - 2/x^2),  x > 0.
 * E[kappa] is infinite (P(kappa/N > x) ~ 2/x): only the median, quantiles
 * and E log kappa are meaningful. */
double ac_edelman_cdf(double x);
double ac_edelman_quantile(double p);  /* closed form; NaN outside (0, 1) */
/* E log(kappa/N) under the limit law: 1.53712866... (adaptive quadrature,
 * GSL QAGS, to 1e-12). */
double ac_edelman_elog(void);

/* ---- Marchenko–Pastur law --------------------------------------------------- */

/* Spectrum of W = (1/D) A A^T (N x N), y = N/D: on [l-, l+], l± = (1 ± sqrt y)^2,
 * density sqrt((l+ - x)(x - l-)) / (2 pi y x), plus an atom of mass 1 - 1/y
 * at 0 when y > 1.  ac_mp_pdf is the density of the continuous part (which
 * has mass min(1, 1/y)); ac_mp_cdf includes the atom. */
void ac_mp_edges(double y, double *lo, double *hi);
double ac_mp_pdf(double x, double y);
double ac_mp_cdf(double x, double y);

/* ---- predictions for kappa ---------------------------------------------------- */

/* Regimes, by the measurements of doc/mathematics.md §5.4 (Tracy–Widom
 * within 1% of the sample mean whenever |D - N| >= 32):
 *   AC_REGIME_TALL       D <= N - 32          "D<N"
 *   AC_REGIME_SQUARE     |D - N| < 32         "D~N"  (D = N: Edelman's law;
 *                        otherwise no closed form is reliable)
 *   AC_REGIME_WIDE       N + 32 <= D < 16 N   "D>N"
 *   AC_REGIME_VERY_WIDE  D >= 16 N            "D>>N" (the paper's regime:
 *                        kappa - 1 ~ 2 sqrt(N/D) <= 0.5) */
typedef enum {
    AC_REGIME_TALL = 0,
    AC_REGIME_SQUARE = 1,
    AC_REGIME_WIDE = 2,
    AC_REGIME_VERY_WIDE = 3
} ac_rmt_regime;

#define AC_RMT_SQUARE_BAND 32  /* |D - N| below this is "D~N" */
#define AC_RMT_VERY_WIDE 16    /* D >= 16 N is "D>>N" */

ac_rmt_regime ac_rmt_regime_of(size_t N, size_t D);
/* "D<N", "D~N", "D>N", "D>>N" */
const char *ac_rmt_regime_name(ac_rmt_regime r);

/* Probability that the Gordon bound on kappa fails (see gordon_kappa95). */
#define AC_RMT_GORDON_P 0.05

typedef struct {
    size_t N, D, M, m;
    ac_rmt_regime regime;
    /* First order (Bai–Yin; paper 2, eq. (6), roles swapped when D < N):
     * (sqrt M + sqrt m)/(sqrt M - sqrt m); +inf at D = N. */
    double first_order;
    /* Tracy–Widom edges of lambda = sigma^2 (Johnstone 2001; Ma 2012;
     * Feldheim–Sodin 2010): a = sqrt(M - 1/2), b = sqrt(m - 1/2),
     * mu± = (a ± b)^2, sigma+ = (a + b)(1/a + 1/b)^(1/3),
     * sigma- = (a - b)(1/b - 1/a)^(1/3); lambda_max ~ mu+ + sigma+ T1,
     * lambda_min ~ mu- - sigma- T2, T1, T2 ~ TW1. */
    double mu_plus, sigma_plus, mu_minus, sigma_minus;
    /* Point estimate: sqrt((mu+ + sigma+ m1)/(mu- - sigma- m1)), m1 the TW1
     * mean (doc/mathematics.md §5.4); NaN at D = N or when the denominator is <= 0. */
    double tw_point;
    /* Median and 5%/95% quantiles of kappa when T1, T2 are independent TW1
     * (the two edges are asymptotically independent); NaN where tw_point is. */
    double tw_median, tw_q05, tw_q95;
    /* Gordon / Davidson–Szarek (rigorous, non-asymptotic):
     *   E sigma_1 <= sqrt M + sqrt m,  E sigma_m >= sqrt M - sqrt m,
     *   P(sigma_1 >= sqrt M + sqrt m + t) <= exp(-t^2/2),
     *   P(sigma_m <= sqrt M - sqrt m - t) <= exp(-t^2/2).
     * gordon_kappa95 = (sqrt M + sqrt m + t)/(sqrt M - sqrt m - t) with
     * 2 exp(-t^2/2) = AC_RMT_GORDON_P: P(kappa > gordon_kappa95) <= 5%.
     * +inf when sqrt M - sqrt m <= t. */
    double gordon_smax_hi, gordon_smin_lo, gordon_t, gordon_kappa95;
    /* Edelman's law at D = N >= 2 (NaN otherwise; N = D = 1 has kappa = 1): median, 5%, 95% quantiles of
     * kappa and E log kappa = log N + ac_edelman_elog(). */
    double edelman_median, edelman_q05, edelman_q95, edelman_elog;
} ac_rmt_pred;

/* Fill p for an N x D Gaussian block.  AC_EUSAGE if N or D is 0. */
int ac_rmt_predict(ac_rmt_pred *p, size_t N, size_t D, ac_err *err);

/* P(kappa <= k) under the independent-edges Tracy–Widom model of p
 * (quadrature over T2 of the conditional F1).  NaN where tw_point is NaN. */
double ac_rmt_tw_kappa_cdf(const ac_rmt_pred *p, double k);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_RMT_H */
