/* kappa.c — kappa of one block (doc/mathematics.md §5.8): the GRAM route
 * (extreme eigenvalues of the Gram matrix of the short side) and the SVD
 * route, each with its a-priori error bound, and the choice of route per
 * sample (the MPFR fallback is sigma_min_mpfr.c).  The bounds are stated in
 * attncheck/condition.h. */
#include <config.h>

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "attncheck/blas.h"
#include "attncheck/interval.h"
#include "cond_impl.h"

const char *ac_cond_route_name(ac_cond_route r)
{
    switch (r) {
    case AC_COND_GRAM: return "gram";
    case AC_COND_SVD: return "svd";
    default: return "mpfr";
    }
}

/* ---- kappa of one block ---------------------------------------------------------------- */

/* Relative error bound of kappa from relative bounds on sigma_1, sigma_min. */
static double kappa_relerr(double d1, double dm)
{
    if (!(dm < 1))
        return INFINITY;
    return (d1 + dm) / (1 - dm) + 4 * U53;
}

/* Bound on |sqrt(l~) - sqrt(l)| / sqrt(l~) given |l~ - l| <= eta. */
static double sqrt_relerr(double l, double eta)
{
    if (!(l > eta))
        return INFINITY;
    return 1 - sqrt(1 - eta / l) + 2 * U53;
}

void cond_gram_panel(cond_ws *w, const double *P, size_t k, size_t ld, int accumulate)
{
    size_t N = w->N, D = w->D, m = w->m;
    double beta = accumulate ? 1.0 : 0.0;
    if (D >= N)
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)N, (int)k, 1.0, P, (int)ld,
                    beta, w->G, (int)m);
    else
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, (int)D, (int)k, 1.0, P, (int)ld, beta,
                    w->G, (int)m);
}

/* GRAM route on w->A (or on w->G when cond_gram_iid computed it).  Returns 1 if accepted (s filled), 0 if the bound
 * fails.  With eig != NULL all eigenvalues are computed (dsterf) and stored
 * ascending in eig[0..m-1] (of G, unscaled). */
static int route_gram(cond_ws *w, double rtol, ac_cond_sample *s, double *eig)
{
    size_t N = w->N, D = w->D, m = w->m, M = w->M;
    double t0 = ac_seconds();
    if (!w->g_ready) {
        size_t K = D >= N ? D : N;
        for (size_t c = 0; c < K; c += COND_PANEL) {
            size_t k = K - c < COND_PANEL ? K - c : COND_PANEL;
            cond_gram_panel(w, D >= N ? w->A + c : w->A + c * D, k, D, c > 0);
        }
    }
    w->g_ready = 0; /* dsytrd below overwrites G */
    w->flops += (double)m * (double)(m + 1) * (double)M;
    double t1 = ac_seconds();
    w->t_reduce += t1 - t0;
    double tr = 0;
    for (size_t i = 0; i < m; i++)
        tr += w->G[i * m + i];
    /* row-major lower = column-major upper */
    lapack_int info = LAPACKE_dsytrd_work(LAPACK_COL_MAJOR, 'U', (lapack_int)m, w->G,
                                          (lapack_int)m, w->td, w->te, w->tau, w->work, w->lwork);
    w->flops += 4.0 / 3.0 * (double)m * m * m;
    double lmin, lmax;
    if (info != 0) {
        w->t_solve += ac_seconds() - t1;
        return 0;
    }
    if (eig) {
        memcpy(eig, w->td, m * sizeof(double));
        info = LAPACKE_dsterf(m, eig, w->te);
        lmin = eig[0];
        lmax = eig[m - 1];
    } else {
        /* bisection for the two extreme eigenvalues only; iwork holds
         * dstebz's 3m workspace, then IBLOCK (m) and ISPLIT (m).  dstebz's
         * W must have room for m values even when one is asked for: it
         * stores every eigenvalue of the intervals it refines there (with
         * clustered eigenvalues, e.g. a nearly rank-deficient trained
         * block, more than one) before discarding the extra ones; w->sv
         * (m entries, not used until the SVD route) serves. */
        lapack_int nf, nsplit;
        lapack_int *iblock = w->iwork + 3 * m, *isplit = w->iwork + 4 * m;
        info = LAPACKE_dstebz_work('I', 'E', (lapack_int)m, 0, 0, 1, 1, 0.0, w->td, w->te, &nf,
                                   &nsplit, w->sv, iblock, isplit, w->work, w->iwork);
        lmin = w->sv[0];
        if (info == 0)
            info = LAPACKE_dstebz_work('I', 'E', (lapack_int)m, 0, 0, (lapack_int)m,
                                       (lapack_int)m, 0.0, w->td, w->te, &nf, &nsplit, w->sv,
                                       iblock, isplit, w->work, w->iwork);
        lmax = nf >= 1 ? w->sv[nf - 1] : NAN;
    }
    w->t_solve += ac_seconds() - t1;
    if (info != 0)
        return 0;
    /* eta >= |lambda~ - lambda|: product error + eigensolver error */
    double eta = ac_gamma_up((double)M) * tr * (1 + 2 * (double)(m + 1) * U53) +
                 (double)m * U53 * lmax;
    double dm = sqrt_relerr(lmin, eta), d1 = sqrt_relerr(lmax, eta);
    double re = kappa_relerr(d1, dm);
    if (!(re <= rtol))
        return 0;
    s->sigma1 = sqrt(lmax);
    s->sigmin = sqrt(lmin);
    s->kappa = s->sigma1 / s->sigmin;
    s->relerr = re;
    s->route = AC_COND_GRAM;
    s->resolved = 1;
    s->prec = 53;
    return 1;
}

/* SVD route: singular values of w->A by dgesdd (values only) into w->sv.
 * Returns 1 if the bound meets rtol, 0 if not, -1 if LAPACK failed. */
static int route_svd(cond_ws *w, double rtol, ac_cond_sample *s)
{
    size_t N = w->N, D = w->D, m = w->m, M = w->M;
    double t0 = ac_seconds();
    memcpy(w->C, w->A, N * D * sizeof(double));
    lapack_int info = LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'N', (lapack_int)D, (lapack_int)N,
                                          w->C, (lapack_int)D, w->sv, NULL, 1, NULL, 1, w->work,
                                          w->lwork, w->iwork);
    w->flops += 4.0 * (double)m * m * (double)M - 4.0 / 3.0 * (double)m * m * m;
    w->t_solve += ac_seconds() - t0;
    if (info != 0)
        return -1;
    double s1 = w->sv[0], sm = w->sv[m - 1];
    double d1 = (double)M * U53;
    double dm = sm > 0 ? (double)M * U53 * s1 / sm : INFINITY;
    double re = kappa_relerr(d1, dm);
    s->sigma1 = s1;
    s->sigmin = sm;
    s->kappa = sm > 0 ? s1 / sm : INFINITY;
    s->relerr = re;
    s->route = AC_COND_SVD;
    s->resolved = 1;
    s->prec = 53;
    return re <= rtol ? 1 : 0;
}


/* --------------------------------------------------------------------------------------------- */

/* kappa of w->A, starting with route `start`; eig (spectrum) receives the m
 * eigenvalues of G ascending, or NULL. */
int cond_kappa_ws(cond_ws *w, double rtol, int start, long max_prec, ac_cond_sample *s,
                  double *eig, ac_err *err)
{
    /* every route must meet rtol/2: the other half is the room the
     * certification needs to prove "within rtol" */
    rtol *= 0.5;
    memset(s, 0, sizeof *s);
    s->cert = AC_UNDECIDED;
    s->cert_stage = AC_STAGE_NONE;
    if (start <= AC_COND_GRAM && route_gram(w, rtol, s, eig))
        return AC_OK;
    w->g_ready = 0;
    cond_ws_need_a(w);
    int r = route_svd(w, rtol, s);
    if (r < 0)
        return ac_err_set(err, AC_EDATA, "SVD did not converge (sample of %zu x %zu)", w->N, w->D);
    if (eig) {
        size_t m = w->m;
        for (size_t i = 0; i < m; i++)
            eig[i] = w->sv[m - 1 - i] * w->sv[m - 1 - i];
    }
    if (r == 1)
        return AC_OK;
    /* MPFR fallback for sigma_min; sigma_1 stays from the SVD */
    double t0 = ac_seconds();
    ac_mat Am = {w->N, w->D, w->A};
    double sm, rel;
    long prec;
    int resolved;
    int st = ac_cond_sigma_min_mpfr(&Am, rtol, s->kappa, max_prec, &sm, &rel, &prec, &resolved,
                                    err);
    w->t_mpfr += ac_seconds() - t0;
    if (st)
        return st;
    s->route = AC_COND_MPFR;
    s->prec = prec;
    s->resolved = resolved;
    s->sigmin = sm;
    if (resolved) {
        s->kappa = s->sigma1 / sm;
        s->relerr = kappa_relerr((double)w->M * U53, rel);
    } else {
        s->kappa = INFINITY;
        s->relerr = INFINITY;
    }
    return AC_OK;
}

int ac_cond_kappa(const ac_mat *A, double rtol, int start_route, long max_prec,
                  ac_cond_sample *s, ac_err *err)
{
    cond_ws w;
    if (A->rows == 0 || A->cols == 0)
        return ac_err_set(err, AC_EUSAGE, "kappa of an empty matrix (%zu x %zu)", A->rows,
                          A->cols);
    if ((double)A->rows * (double)A->cols > (double)INT_MAX)
        return ac_err_set(err, AC_EUSAGE, "matrix %zu x %zu too large for LAPACK", A->rows,
                          A->cols);
    if (!(rtol > 0 && rtol < 1))
        return ac_err_set_field(err, AC_EUSAGE, "rtol", "rtol must be in (0, 1), not %g", rtol);
    for (size_t i = 0; i < A->rows * A->cols; i++)
        if (!isfinite(A->data[i]))
            return ac_err_set(err, AC_EDATA, "matrix has a non-finite entry");
    if (cond_ws_init(&w, A->rows, 1, A->cols, 0, AC_COND_IID))
        return ac_err_set(err, AC_EINTERNAL, "out of memory for a %zu x %zu matrix", A->rows,
                          A->cols);
    memcpy(w.A, A->data, A->rows * A->cols * sizeof(double));
    int old = ac_blas_get_threads();
    ac_blas_set_threads(1); /* as in ac_cond_run: the same kernels, the same bits */
    int st = cond_kappa_ws(&w, rtol, start_route < 0 ? AC_COND_GRAM : start_route, max_prec, s,
                           NULL, err);
    ac_blas_set_threads(old);
    cond_ws_free(&w);
    return st;
}

