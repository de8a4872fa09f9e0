/* predict.c — the predictions for kappa of an N x D Gaussian block
 * (attncheck/rmt.h), each a named step of ac_rmt_predict:
 *   first order (Bai–Yin; paper 2, eqs. (5)-(6); doc/mathematics.md §5.2);
 *   the Tracy–Widom finite-size correction: the soft edges of lambda_max
 *     and lambda_min, the point estimate and the law of kappa under
 *     independent edges (§5.4);
 *   the Gordon / Davidson–Szarek bounds (rigorous, non-asymptotic; §5.3);
 *   Edelman's law at D = N (§5.5).
 * The regimes (D<N, D~N, D>N, D>>N) are named here too.
 */
#include <config.h>

#include <math.h>

#include <gsl/gsl_integration.h>

#include "attncheck/rmt.h"
#include "cond_impl.h"

ac_rmt_regime ac_rmt_regime_of(size_t N, size_t D)
{
    if (D + AC_RMT_SQUARE_BAND <= N)
        return AC_REGIME_TALL;
    if (D < N + AC_RMT_SQUARE_BAND)
        return AC_REGIME_SQUARE;
    if ((double)D >= (double)AC_RMT_VERY_WIDE * (double)N)
        return AC_REGIME_VERY_WIDE;
    return AC_REGIME_WIDE;
}

const char *ac_rmt_regime_name(ac_rmt_regime r)
{
    switch (r) {
    case AC_REGIME_TALL: return "D<N";
    case AC_REGIME_SQUARE: return "D~N";
    case AC_REGIME_WIDE: return "D>N";
    default: return "D>>N";
    }
}

/* ---- the law of kappa under the Tracy–Widom correction ----------------------------- */

/* The T2 quadrature of the kappa model: nodes t_i and weights w_i f1(t_i)
 * on [-12, min(12, mu-/sigma-)] (composite Gauss-Legendre, 16 nodes per
 * panel of width <= 1). */
#define KQ_MAX (24 * 16)
typedef struct {
    int n;
    double t[KQ_MAX], wf[KQ_MAX];
} kappa_quad;

static int kappa_quad_init(kappa_quad *q, const ac_rmt_pred *p)
{
    const size_t nodes = 16;
    gsl_integration_glfixed_table *t = gsl_integration_glfixed_table_alloc(nodes);
    if (!t)
        return 0;
    double tmax = fmin(AC_TW_HI, p->mu_minus / p->sigma_minus);
    int panels = (int)ceil(tmax - AC_TW_LO);
    if (panels < 1)
        panels = 1;
    if (panels > KQ_MAX / 16)
        panels = KQ_MAX / 16;
    double hw = (tmax - AC_TW_LO) / panels;
    q->n = 0;
    for (int j = 0; j < panels; j++) {
        double a = AC_TW_LO + j * hw, b = a + hw;
        for (size_t i = 0; i < nodes; i++) {
            double x, w;
            gsl_integration_glfixed_point(a, b, i, &x, &w, t);
            q->t[q->n] = x;
            q->wf[q->n] = w * ac_tw1_pdf(x);
            q->n++;
        }
    }
    gsl_integration_glfixed_table_free(t);
    return 1;
}

/* P(kappa <= k) = P(mu+ + s+ T1 <= k^2 (mu- - s- T2))
 *               = int f(t) F1((k^2 (mu- - s- t) - mu+)/s+) dt over
 *                 t < mu-/s- (else lambda_min <= 0: kappa = inf). */
static double kappa_cdf_q(const ac_rmt_pred *p, const kappa_quad *q, double k)
{
    if (k <= 1)
        return 0.0;
    double k2 = k * k, sum = 0.0;
    for (int i = 0; i < q->n; i++)
        sum += q->wf[i] *
               ac_tw1_cdf((k2 * (p->mu_minus - p->sigma_minus * q->t[i]) - p->mu_plus) /
                          p->sigma_plus);
    return sum < 0 ? 0.0 : (sum > 1 ? 1.0 : sum);
}

double ac_rmt_tw_kappa_cdf(const ac_rmt_pred *p, double k)
{
    kappa_quad q;
    if (isnan(p->tw_point) || k != k || !kappa_quad_init(&q, p))
        return NAN;
    return kappa_cdf_q(p, &q, k);
}

/* kappa quantile by bisection in log kappa (to 1e-12 relative) */
static double tw_kappa_quantile(const ac_rmt_pred *p, const kappa_quad *q, double prob)
{
    double lo = 0.0, hi = 1.0;
    int guard = 0;
    while (kappa_cdf_q(p, q, exp(hi)) < prob && guard++ < 60)
        hi *= 2;
    if (guard >= 60)
        return INFINITY;
    for (int it = 0; it < 100 && hi - lo > 1e-12; it++) {
        double c = 0.5 * (lo + hi);
        if (kappa_cdf_q(p, q, exp(c)) < prob)
            lo = c;
        else
            hi = c;
    }
    return exp(0.5 * (lo + hi));
}


/* ---- ac_rmt_predict ------------------------------------------------------------------ */

/* First order (Bai–Yin; paper 2, eq. (6), roles swapped when D < N):
 * (sqrt M + sqrt m)/(sqrt M - sqrt m), +inf at D = N. */
static void predict_first_order(ac_rmt_pred *p)
{
    double sM = sqrt((double)p->M), sm = sqrt((double)p->m);
    p->first_order = (p->D == p->N) ? INFINITY : (sM + sm) / (sM - sm);
}

/* The Tracy–Widom finite-size correction: the edges mu±, sigma± of
 * lambda = sigma^2, the point estimate sqrt((mu+ + sigma+ m1)/(mu- -
 * sigma- m1)) with m1 the TW1 mean, and the median and 5-95% band of kappa
 * under independent edges (NaN at D = N or a non-positive denominator). */
static void predict_tw_correction(ac_rmt_pred *p)
{
    double M = (double)p->M, m = (double)p->m;
    int square = (p->D == p->N);
    double a = sqrt(M - 0.5), b = sqrt(m - 0.5);
    p->mu_plus = (a + b) * (a + b);
    p->mu_minus = (a - b) * (a - b);
    p->sigma_plus = (a + b) * cbrt(1.0 / a + 1.0 / b);
    p->sigma_minus = square ? 0.0 : (a - b) * cbrt(1.0 / b - 1.0 / a);
    double m1, sd1;
    ac_tw1_moments(&m1, &sd1);
    double num = p->mu_plus + p->sigma_plus * m1, den = p->mu_minus - p->sigma_minus * m1;
    p->tw_point = (!square && den > 0 && num > 0) ? sqrt(num / den) : NAN;
    p->tw_median = p->tw_q05 = p->tw_q95 = NAN;
    kappa_quad q;
    if (!isnan(p->tw_point) && kappa_quad_init(&q, p)) {
        p->tw_median = tw_kappa_quantile(p, &q, 0.5);
        p->tw_q05 = tw_kappa_quantile(p, &q, 0.05);
        p->tw_q95 = tw_kappa_quantile(p, &q, 0.95);
    }
}

/* The Gordon / Davidson–Szarek bounds: E sigma_1 <= sqrt M + sqrt m,
 * E sigma_m >= sqrt M - sqrt m, and the kappa exceeded with probability
 * <= AC_RMT_GORDON_P. */
static void predict_gordon(ac_rmt_pred *p)
{
    double sM = sqrt((double)p->M), sm = sqrt((double)p->m);
    p->gordon_smax_hi = sM + sm;
    p->gordon_smin_lo = sM - sm;
    p->gordon_t = sqrt(2.0 * log(2.0 / AC_RMT_GORDON_P));
    p->gordon_kappa95 = (sM - sm > p->gordon_t)
                            ? (sM + sm + p->gordon_t) / (sM - sm - p->gordon_t)
                            : INFINITY;
}

/* Edelman's law at D = N >= 2: median, 5% and 95% quantiles of kappa = N x
 * and E log kappa = log N + E log x (NaN when D != N, and at N = D = 1,
 * where kappa = 1 exactly). */
static void predict_edelman(ac_rmt_pred *p)
{
    double M = (double)p->M;
    if (p->D == p->N && p->N >= 2) {
        p->edelman_median = M * ac_edelman_quantile(0.5);
        p->edelman_q05 = M * ac_edelman_quantile(0.05);
        p->edelman_q95 = M * ac_edelman_quantile(0.95);
        p->edelman_elog = log(M) + ac_edelman_elog();
    } else {
        p->edelman_median = p->edelman_q05 = p->edelman_q95 = p->edelman_elog = NAN;
    }
}

int ac_rmt_predict(ac_rmt_pred *p, size_t N, size_t D, ac_err *err)
{
    if (N == 0 || D == 0)
        return ac_err_set(err, AC_EUSAGE, "predictions need N >= 1 and D >= 1 (N = %zu, D = %zu)",
                          N, D);
    p->N = N;
    p->D = D;
    p->M = N > D ? N : D;
    p->m = N > D ? D : N;
    p->regime = ac_rmt_regime_of(N, D);
    predict_first_order(p);
    predict_tw_correction(p);
    predict_gordon(p);
    predict_edelman(p);
    return AC_OK;
}
