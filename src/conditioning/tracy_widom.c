/* tracy_widom.c — the Tracy–Widom GOE distribution F1 (attncheck/rmt.h,
 * doc/mathematics.md §5.4): the Fredholm determinant det(I - K_s) by
 * Nyström's method, and its table of piecewise Chebyshev series (cdf,
 * density, quantiles, moments).  The finite-size correction of kappa built
 * on it is predict.c.
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
#include "cond_impl.h"

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
static const double tw_edges[TW_PIECES + 1] = {-12.0, -7.0, -4.0, -1.5, 1.0, 4.0, 12.0};
static gsl_cheb_series *tw_cdf_cs[TW_PIECES], *tw_pdf_cs[TW_PIECES];
static int tw_ok;
static pthread_once_t tw_once = PTHREAD_ONCE_INIT;

/* nodes of the table's determinants, computed once: 48 nodes agree with
 * 96 to about 1e-14 on [-12, 12] (checked by test_rmt against 128) */
#define TW_TABLE_NODES 48
static double tw_x01[TW_TABLE_NODES], tw_w01[TW_TABLE_NODES];

/* The values at the Chebyshev nodes, computed in parallel before the
 * series: gsl_cheb_init evaluates f at y_k (b - a)/2 + (b + a)/2, y_k =
 * cos(pi (k + 1/2) / (order + 1)), k = 0..order; tw_memo_fn returns the
 * value computed for that exact argument, or computes it (so the table is
 * the same whatever GSL does). */
static double tw_node_x[TW_PIECES][TW_ORDER + 1], tw_node_f[TW_PIECES][TW_ORDER + 1];

static double tw_memo_fn(double s, void *p)
{
    const int k = *(const int *)p;
    for (int j = 0; j <= TW_ORDER; j++)
        if (tw_node_x[k][j] == s)
            return tw_node_f[k][j];
    return tw_det(s, TW_TABLE_NODES, tw_x01, tw_w01);
}

static void tw_build(void)
{
    tw_ok = gl01(TW_TABLE_NODES, tw_x01, tw_w01);
    if (!tw_ok)
        return;
    const double pi = 3.14159265358979323846264338328; /* GSL's M_PI */
    for (int k = 0; k < TW_PIECES; k++) {
        const double bma = 0.5 * (tw_edges[k + 1] - tw_edges[k]);
        const double bpa = 0.5 * (tw_edges[k + 1] + tw_edges[k]);
        for (int j = 0; j <= TW_ORDER; j++) {
            const double y = cos(pi * (j + 0.5) / (TW_ORDER + 1));
            tw_node_x[k][j] = y * bma + bpa;
        }
    }
    /* 198 determinants of 48 x 48 (~1100 Airy values each): the bulk of
     * the command's start-up, shared between the threads */
#pragma omp parallel for schedule(dynamic)
    for (int t = 0; t < TW_PIECES * (TW_ORDER + 1); t++) {
        const int k = t / (TW_ORDER + 1), j = t % (TW_ORDER + 1);
        tw_node_f[k][j] = tw_det(tw_node_x[k][j], TW_TABLE_NODES, tw_x01, tw_w01);
    }
    for (int k = 0; k < TW_PIECES; k++) {
        gsl_function F = {tw_memo_fn, &k};
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
    if (s <= AC_TW_LO)
        return 0.0;
    if (s >= AC_TW_HI)
        return 1.0;
    double v = gsl_cheb_eval(tw_cdf_cs[tw_piece(s)], s);
    return v < 0 ? 0.0 : (v > 1 ? 1.0 : v);
}

double ac_tw1_pdf(double s)
{
    pthread_once(&tw_once, tw_build);
    if (s != s || !tw_ok)
        return NAN;
    if (s <= AC_TW_LO || s >= AC_TW_HI)
        return 0.0;
    double v = gsl_cheb_eval(tw_pdf_cs[tw_piece(s)], s);
    return v < 0 ? 0.0 : v;
}

double ac_tw1_quantile(double p)
{
    if (!(p > 0 && p < 1))
        return NAN;
    double a = AC_TW_LO, b = AC_TW_HI;
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

