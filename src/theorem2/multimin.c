/* multimin.c — the numerical part of the search for a separating X
 * (doc/mathematics.md §4.10): GSL's BFGS maximises the relative gap
 * ||f_W(X) - g_V(X)||_F / (||f_W(X)||_F + ||g_V(X)||_F) in double precision,
 * through the layers' backward passes.  Nothing here is certified: the X it
 * finds is certified afterwards (certify.c). */
#include <config.h>

#include <math.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>

#include "t2_impl.h"

/* r(X) = N / D, N = ||f - g||_F, D = ||f||_F + ||g||_F.  Gradient through
 * the upstream gradients
 *   dr/df = (f - g)/(N D) - N f/(||f|| D^2),  dr/dg = -(f - g)/(N D) - N g/(||g|| D^2)
 * and the layers' backward passes.  The minimiser works on -r.
 *
 * The work is bounded by design, not by convergence: BFGS iterations are
 * capped by `iters`, and so are the evaluations -- GSL's line search may
 * evaluate up to ~100 times per iteration when it cannot satisfy its
 * conditions (a flat or noisy r, e.g. f = g up to rounding), so at most
 * MULTIMIN_EVALS(iters) evaluations are computed; past that, opt_eval
 * returns +inf without computing, which ends the line search at once.  The
 * result is the best point evaluated (not GSL's last iterate), so it does
 * not depend on how the minimiser stopped. */
#define MULTIMIN_EVALS(iters) (5L * (long)(iters) + 10)

typedef struct {
    t2_gap_ws g;
    ac_mat X, Gf, Gg, dXf, dXg;
    long evals, max_evals;
    double best_r;      /* largest r evaluated, at best_X */
    ac_mat best_X;
} opt_ctx;

static double opt_eval(const gsl_vector *th, void *p, gsl_vector *grad)
{
    opt_ctx *c = p;
    size_t N = c->X.rows * c->X.cols;
    if (c->evals >= c->max_evals) {
        if (grad)
            gsl_vector_set_zero(grad);
        return INFINITY; /* budget spent: no more layer evaluations */
    }
    c->evals++;
    memcpy(c->X.data, th->data, N * sizeof(double));
    double gap, nf, ng;
    double r = t2_gap_eval(&c->g, &c->X, &gap, &nf, &ng);
    if (!isfinite(r)) {
        if (grad)
            gsl_vector_set_zero(grad);
        return INFINITY;
    }
    if (r > c->best_r) {
        c->best_r = r;
        memcpy(c->best_X.data, c->X.data, N * sizeof(double));
    }
    if (!grad)
        return -r;
    double D = nf + ng;
    if (!(gap > 0) || !(nf > 0) || !(ng > 0) || !(D > 0)) {
        gsl_vector_set_zero(grad);
        return -r;
    }
    for (size_t i = 0; i < N; i++) {
        double f = c->g.Yf.data[i], g = c->g.Yg.data[i];
        c->Gf.data[i] = (f - g) / (gap * D) - gap * f / (nf * D * D);
        c->Gg.data[i] = -(f - g) / (gap * D) - gap * g / (ng * D * D);
    }
    ac_mh_backward(&c->dXf, c->g.W, &c->X, &c->Gf, &c->g.ww, NULL);
    ac_mh_backward(&c->dXg, c->g.V, &c->X, &c->Gg, &c->g.wv, NULL);
    for (size_t i = 0; i < N; i++)
        grad->data[i] = -(c->dXf.data[i] + c->dXg.data[i]);
    return -r;
}

static double opt_f(const gsl_vector *th, void *p) { return opt_eval(th, p, NULL); }
static void opt_df(const gsl_vector *th, void *p, gsl_vector *g) { opt_eval(th, p, g); }
static void opt_fdf(const gsl_vector *th, void *p, double *f, gsl_vector *g)
{
    *f = opt_eval(th, p, g);
}

/* BFGS (GSL vector_bfgs2) from X0; the best point evaluated goes to Xout
 * (allocated here).  Returns its relative gap estimate (or -1 if nothing was
 * done); *evals receives the number of evaluations. */
double t2_maximise_gap(ac_mat *Xout, const ac_mh *W, const ac_mh *V, const ac_mat *X0,
                       int iters, int threads, long *evals, ac_err *err)
{
    size_t d = X0->rows, n = X0->cols, N = d * n;
    opt_ctx c;
    double res = -1;
    memset(&c, 0, sizeof c);
    if (evals)
        *evals = 0;
    if (iters <= 0 || N == 0)
        return -1;
    c.max_evals = MULTIMIN_EVALS(iters);
    c.best_r = -1;
    if (t2_gap_ws_init(&c.g, W, V, n, threads, err) || ac_mat_init(&c.X, d, n, err) ||
        ac_mat_init(&c.Gf, d, n, err) || ac_mat_init(&c.Gg, d, n, err) ||
        ac_mat_init(&c.dXf, d, n, err) || ac_mat_init(&c.dXg, d, n, err) ||
        ac_mat_init(&c.best_X, d, n, err))
        goto out;
    gsl_vector *th = gsl_vector_alloc(N);
    gsl_multimin_fdfminimizer *m =
        gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, N);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    if (th && m) {
        memcpy(th->data, X0->data, N * sizeof(double));
        double nx = 0;
        for (size_t i = 0; i < N; i++)
            nx += X0->data[i] * X0->data[i];
        gsl_multimin_function_fdf fn = {opt_f, opt_df, opt_fdf, N, &c};
        if (gsl_multimin_fdfminimizer_set(m, &fn, th, 0.05 * (sqrt(nx) + 1e-3), 0.1) ==
            GSL_SUCCESS) {
            for (int it = 0; it < iters && c.evals < c.max_evals; it++) {
                if (gsl_multimin_fdfminimizer_iterate(m))
                    break;
                if (gsl_multimin_test_gradient(m->gradient, 1e-10) == GSL_SUCCESS)
                    break;
            }
        }
        if (c.best_r >= 0 && ac_mat_copy(Xout, &c.best_X, err) == AC_OK)
            res = c.best_r;
    }
    gsl_set_error_handler(old);
    if (m)
        gsl_multimin_fdfminimizer_free(m);
    if (th)
        gsl_vector_free(th);
out:
    if (evals)
        *evals = c.evals;
    t2_gap_ws_free(&c.g);
    ac_mat_free(&c.X);
    ac_mat_free(&c.Gf);
    ac_mat_free(&c.Gg);
    ac_mat_free(&c.dXf);
    ac_mat_free(&c.dXg);
    ac_mat_free(&c.best_X);
    return res;
}
