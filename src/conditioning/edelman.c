/* edelman.c — Edelman's law for square Gaussian blocks (attncheck/rmt.h,
 * doc/mathematics.md §5.5): P(kappa/N <= x) -> exp(-2/x - 2/x^2), its
 * quantiles in closed form and E log(kappa/N) by quadrature (GSL QAGS). */
#include <config.h>

#include <math.h>
#include <pthread.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>

#include "attncheck/rmt.h"

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
