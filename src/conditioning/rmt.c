/* rmt.c — random-matrix predictions for kappa of a Gaussian block
 * (attncheck/rmt.h, MATH.md §3.1).
 *
 * Special functions: the Airy function and Gauss–Legendre nodes come from
 * GSL (gsl_sf_airy_Ai, gsl_integration_glfixed), the determinant from GSL's
 * LU decomposition, the tables are GSL Chebyshev series.
 */
#include <config.h>

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include <gsl/gsl_chebyshev.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_sf_airy.h>

#include "attncheck/rmt.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- TW1 by Nyström's method --------------------------------------------- */

#define TW_NODES_DEFAULT 64
#define TW_NODES_MAX 256

/* Gauss-Legendre nodes and weights on [0, 1] for m nodes. */
static int gl01(int m, double *x, double *w)
{
    gsl_integration_glfixed_table *t = gsl_integration_glfixed_table_alloc((size_t)m);
    if (!t)
        return 0;
    for (int i = 0; i < m; i++)
        gsl_integration_glfixed_point(0.0, 1.0, (size_t)i, &x[i], &w[i], t);
    gsl_integration_glfixed_table_free(t);
    return 1;
}

/* det(I - K_s) with the m nodes x01, weights w01 on [0, 1] scaled to [0, L]. */
static double tw_det(double s, int m, const double *x01, const double *w01)
{
    /* K_s(x, y) = Ai((x+y)/2 + s)/2 on [0, L]: Ai(z) < 1e-20 for z > 12, so
     * the kernel is negligible once (x + y)/2 > 12 - s, i.e. beyond
     * L = 2 max(0, -s) + 24. */
    double L = 2.0 * fmax(0.0, -s) + 24.0;
    gsl_matrix *K = gsl_matrix_alloc((size_t)m, (size_t)m);
    gsl_permutation *perm = gsl_permutation_alloc((size_t)m);
    double *x = malloc((size_t)m * sizeof *x), *w = malloc((size_t)m * sizeof *w);
    double det = NAN;
    if (K && perm && x && w) {
        gsl_error_handler_t *old = gsl_set_error_handler_off();
        for (int i = 0; i < m; i++) {
            x[i] = L * x01[i];
            w[i] = sqrt(L * w01[i]);
        }
        for (int i = 0; i < m; i++)
            for (int j = 0; j <= i; j++) {
                double z = 0.5 * (x[i] + x[j]) + s;
                double v = z > 40 ? 0.0 : 0.5 * gsl_sf_airy_Ai(z, GSL_PREC_DOUBLE) * w[i] * w[j];
                gsl_matrix_set(K, (size_t)i, (size_t)j, (i == j) - v);
                gsl_matrix_set(K, (size_t)j, (size_t)i, (i == j) - v);
            }
        int sign;
        if (gsl_linalg_LU_decomp(K, perm, &sign) == GSL_SUCCESS)
            det = gsl_linalg_LU_det(K, sign);
        gsl_set_error_handler(old);
    }
    free(x);
    free(w);
    gsl_permutation_free(perm);
    gsl_matrix_free(K);
    return det;
}

double ac_tw1_cdf_direct(double s, int nodes)
{
    int m = nodes > 0 ? nodes : TW_NODES_DEFAULT;
    if (m > TW_NODES_MAX)
        m = TW_NODES_MAX;
    if (!isfinite(s))
        return s > 0 ? 1.0 : (s < 0 ? 0.0 : NAN);
    double x[TW_NODES_MAX], w[TW_NODES_MAX];
    if (!gl01(m, x, w))
        return NAN;
    return tw_det(s, m, x, w);
}

/* ---- the table --------------------------------------------------------------- */

#define TW_PIECES 6
#define TW_ORDER 32
#define TW_LO (-12.0)
#define TW_HI 12.0
static const double tw_edges[TW_PIECES + 1] = {-12.0, -7.0, -4.0, -1.5, 1.0, 4.0, 12.0};
static gsl_cheb_series *tw_cdf_cs[TW_PIECES], *tw_pdf_cs[TW_PIECES];
static int tw_ok;
static pthread_once_t tw_once = PTHREAD_ONCE_INIT;

/* nodes of the table's determinants, computed once: 48 nodes agree with
 * 96 to about 1e-14 on [-12, 12] (checked by test_rmt against 128) */
#define TW_TABLE_NODES 48
static double tw_x01[TW_TABLE_NODES], tw_w01[TW_TABLE_NODES];

static double tw_direct_fn(double s, void *p)
{
    (void)p;
    return tw_det(s, TW_TABLE_NODES, tw_x01, tw_w01);
}

static void tw_build(void)
{
    gsl_function F = {tw_direct_fn, NULL};
    tw_ok = gl01(TW_TABLE_NODES, tw_x01, tw_w01);
    if (!tw_ok)
        return;
    for (int k = 0; k < TW_PIECES; k++) {
        tw_cdf_cs[k] = gsl_cheb_alloc(TW_ORDER);
        tw_pdf_cs[k] = gsl_cheb_alloc(TW_ORDER);
        if (!tw_cdf_cs[k] || !tw_pdf_cs[k]) {
            tw_ok = 0;
            return;
        }
        gsl_cheb_init(tw_cdf_cs[k], &F, tw_edges[k], tw_edges[k + 1]);
        gsl_cheb_calc_deriv(tw_pdf_cs[k], tw_cdf_cs[k]);
    }
}

static int tw_piece(double s)
{
    int k = 0;
    while (k < TW_PIECES - 1 && s > tw_edges[k + 1])
        k++;
    return k;
}

double ac_tw1_cdf(double s)
{
    pthread_once(&tw_once, tw_build);
    if (s != s || !tw_ok)
        return NAN;
    if (s <= TW_LO)
        return 0.0;
    if (s >= TW_HI)
        return 1.0;
    double v = gsl_cheb_eval(tw_cdf_cs[tw_piece(s)], s);
    return v < 0 ? 0.0 : (v > 1 ? 1.0 : v);
}

double ac_tw1_pdf(double s)
{
    pthread_once(&tw_once, tw_build);
    if (s != s || !tw_ok)
        return NAN;
    if (s <= TW_LO || s >= TW_HI)
        return 0.0;
    double v = gsl_cheb_eval(tw_pdf_cs[tw_piece(s)], s);
    return v < 0 ? 0.0 : v;
}

double ac_tw1_quantile(double p)
{
    if (!(p > 0 && p < 1))
        return NAN;
    double a = TW_LO, b = TW_HI;
    while (b - a > 1e-13) {
        double c = 0.5 * (a + b);
        if (ac_tw1_cdf(c) < p)
            a = c;
        else
            b = c;
    }
    return 0.5 * (a + b);
}

void ac_tw1_moments(double *mean, double *sd)
{
    const size_t n = 64;
    gsl_integration_glfixed_table *t = gsl_integration_glfixed_table_alloc(n);
    double m1 = 0, m2 = 0;
    if (!t) {
        *mean = *sd = NAN;
        return;
    }
    for (int k = 0; k < TW_PIECES; k++)
        for (size_t i = 0; i < n; i++) {
            double x, w;
            gsl_integration_glfixed_point(tw_edges[k], tw_edges[k + 1], i, &x, &w, t);
            double f = w * ac_tw1_pdf(x);
            m1 += x * f;
            m2 += x * x * f;
        }
    gsl_integration_glfixed_table_free(t);
    *mean = m1;
    *sd = sqrt(m2 - m1 * m1);
}

/* ---- Edelman ------------------------------------------------------------------ */

double ac_edelman_cdf(double x)
{
    if (x != x)
        return NAN;
    if (x <= 0)
        return 0.0;
    double y = 1.0 / x;
    return exp(-2.0 * y - 2.0 * y * y);
}

double ac_edelman_quantile(double p)
{
    if (!(p > 0 && p < 1))
        return NAN;
    /* exp(-2y - 2y^2) = p, y = 1/x:  2y^2 + 2y + log p = 0 */
    double y = (-2.0 + sqrt(4.0 - 8.0 * log(p))) / 4.0;
    return 1.0 / y;
}

/* E log X = -E log Y with Y = 1/X, P(Y > y) = exp(-2y - 2y^2), density
 * (2 + 4y) exp(-2y - 2y^2). */
static double edelman_integrand(double y, void *p)
{
    (void)p;
    return -log(y) * (2.0 + 4.0 * y) * exp(-2.0 * y - 2.0 * y * y);
}

static double edelman_elog_value = NAN;
static pthread_once_t edelman_once = PTHREAD_ONCE_INIT;

static void edelman_build(void)
{
    gsl_integration_workspace *ws = gsl_integration_workspace_alloc(200);
    gsl_function F = {edelman_integrand, NULL};
    double r, e;
    if (!ws)
        return;
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    /* the integrand is below 1e-300 beyond y = 20 */
    if (gsl_integration_qags(&F, 0.0, 20.0, 0.0, 1e-13, 200, ws, &r, &e) == GSL_SUCCESS ||
        e < 1e-11)
        edelman_elog_value = r;
    gsl_set_error_handler(old);
    gsl_integration_workspace_free(ws);
}

double ac_edelman_elog(void)
{
    pthread_once(&edelman_once, edelman_build);
    return edelman_elog_value;
}

/* ---- Marchenko–Pastur ---------------------------------------------------------- */

void ac_mp_edges(double y, double *lo, double *hi)
{
    double r = sqrt(y);
    *lo = (1 - r) * (1 - r);
    *hi = (1 + r) * (1 + r);
}

double ac_mp_pdf(double x, double y)
{
    double lo, hi;
    if (!(y > 0) || x != x)
        return NAN;
    ac_mp_edges(y, &lo, &hi);
    if (x <= lo || x >= hi || x <= 0)
        return 0.0;
    return sqrt((hi - x) * (x - lo)) / (2 * M_PI * y * x);
}

/* With x = c - r cos(theta), c = 1 + y, r = 2 sqrt(y), the continuous part
 * integrates in closed form:
 *   F(theta) = (r sin theta + c theta) / (2 pi y)
 *              - |1 - y| / (pi y) atan((1 + sqrt y)/|1 - sqrt y| tan(theta/2)),
 * which is 1 (y <= 1) or 1/y (y > 1) at theta = pi. */
double ac_mp_cdf(double x, double y)
{
    double lo, hi;
    if (!(y > 0) || x != x)
        return NAN;
    if (x < 0)
        return 0.0;
    double atom = y > 1 ? 1.0 - 1.0 / y : 0.0;
    ac_mp_edges(y, &lo, &hi);
    if (x <= lo)
        return atom;
    if (x >= hi)
        return 1.0;
    double c = 1 + y, r = 2 * sqrt(y), sy = sqrt(y);
    double ct = (c - x) / r;
    ct = ct > 1 ? 1 : (ct < -1 ? -1 : ct);
    double th = acos(ct);
    double F = (r * sin(th) + c * th) / (2 * M_PI * y);
    if (y != 1.0)
        F -= fabs(1 - y) / (M_PI * y) * atan((1 + sy) / fabs(1 - sy) * tan(0.5 * th));
    F += atom;
    return F < 0 ? 0.0 : (F > 1 ? 1.0 : F);
}

/* ---- predictions ------------------------------------------------------------------ */

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
    double tmax = fmin(TW_HI, p->mu_minus / p->sigma_minus);
    int panels = (int)ceil(tmax - TW_LO);
    if (panels < 1)
        panels = 1;
    if (panels > KQ_MAX / 16)
        panels = KQ_MAX / 16;
    double hw = (tmax - TW_LO) / panels;
    q->n = 0;
    for (int j = 0; j < panels; j++) {
        double a = TW_LO + j * hw, b = a + hw;
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
    double M = (double)p->M, m = (double)p->m, sM = sqrt(M), sm = sqrt(m);

    /* first order (paper eq. (6)) */
    p->first_order = (D == N) ? INFINITY : (sM + sm) / (sM - sm);

    /* Tracy–Widom edges */
    double a = sqrt(M - 0.5), b = sqrt(m - 0.5);
    p->mu_plus = (a + b) * (a + b);
    p->mu_minus = (a - b) * (a - b);
    p->sigma_plus = (a + b) * cbrt(1.0 / a + 1.0 / b);
    p->sigma_minus = (D == N) ? 0.0 : (a - b) * cbrt(1.0 / b - 1.0 / a);
    double m1, sd1;
    ac_tw1_moments(&m1, &sd1);
    double num = p->mu_plus + p->sigma_plus * m1, den = p->mu_minus - p->sigma_minus * m1;
    p->tw_point = (D != N && den > 0 && num > 0) ? sqrt(num / den) : NAN;
    p->tw_median = p->tw_q05 = p->tw_q95 = NAN;
    kappa_quad q;
    if (!isnan(p->tw_point) && kappa_quad_init(&q, p)) {
        p->tw_median = tw_kappa_quantile(p, &q, 0.5);
        p->tw_q05 = tw_kappa_quantile(p, &q, 0.05);
        p->tw_q95 = tw_kappa_quantile(p, &q, 0.95);
    }

    /* Gordon / Davidson–Szarek */
    p->gordon_smax_hi = sM + sm;
    p->gordon_smin_lo = sM - sm;
    p->gordon_t = sqrt(2.0 * log(2.0 / AC_RMT_GORDON_P));
    p->gordon_kappa95 = (sM - sm > p->gordon_t)
                            ? (sM + sm + p->gordon_t) / (sM - sm - p->gordon_t)
                            : INFINITY;

    /* Edelman at D = N */
    if (D == N) {
        p->edelman_median = M * ac_edelman_quantile(0.5);
        p->edelman_q05 = M * ac_edelman_quantile(0.05);
        p->edelman_q95 = M * ac_edelman_quantile(0.95);
        p->edelman_elog = log(M) + ac_edelman_elog();
    } else {
        p->edelman_median = p->edelman_q05 = p->edelman_q95 = p->edelman_elog = NAN;
    }
    return AC_OK;
}
