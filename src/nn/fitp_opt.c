/* fitp_opt.c — fit-p's optimisation (attncheck/train.h, "fit-p"): the
 * reported loss KL(P || S), the best iterate kept across evaluations, and
 * the second-order optimiser (BFGS, doc/mathematics.md §6.5).
 *
 * Why the best iterate: AdamW with a fixed step size does not settle at a
 * minimum of a nonconvex loss; on fit-p its max|S - P| oscillates over
 * orders of magnitude between evaluations, so the last iterate can be far
 * worse than an earlier one.  The certified check runs on the best
 * evaluated iterate instead.
 *
 * Why BFGS: the fit-p loss is one deterministic batch (the instance), a
 * smooth function of 2 dk d parameters; a quasi-Newton method with a line
 * search (GSL's vector_bfgs2, the minimiser route DECIDE of theorem1 uses
 * to refine its weights, src/theorem1/refine.c) converges superlinearly near
 * a nondegenerate minimum, where AdamW stalls at its step-size noise floor.
 * Here the objective and its gradient are the model's own forward and
 * backward passes (the mean cross-entropy over columns), so BFGS and AdamW
 * optimise the same function of the same parameters.
 *
 * Preconditioning: the logits X^T Wk^T Wq X see the weights through X, so
 * the loss is as ill-conditioned in the weights as X^T X is (Gaussian
 * square X: condition numbers in the hundreds squared).  BFGS therefore
 * works in whitened coordinates: every row w of Wq and Wk is phi M with
 * M = U diag(1/sigma) U^T + (I - U U^T), X = U diag(sigma) V^T the thin SVD
 * (singular values above d n u sigma_1), so that the logits are
 * V U^T Phi_k^T Phi_q U V^T / sqrt(dk), as well conditioned as if X had
 * orthonormal rows.  This is a fixed linear change of variables: the
 * iterates are still weights Wq, Wk (the model's parameters are phi M), and
 * the run starts from the same initial weights (phi_0 = w_0 M^-1).
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>

#include "nn/nn_impl.h"

struct train_fitp_state {
    /* the best iterate: its weights and AdamW moments (the trainer's state
     * at best_step, which ac_trainer_fitp_restore_best brings back) */
    double *best, *best_m, *best_v;
    int have_best;
    int best_current; /* the trainer's state is the best iterate's */
    size_t best_step;
    double best_maxdev, best_kl;
    /* BFGS */
    gsl_multimin_fdfminimizer *mz;
    gsl_vector *x;
    double *M, *Minv; /* d x d: the preconditioner and its inverse */
    size_t rows, d;   /* params = Phi M, Phi rows x d */
    gsl_multimin_function_fdf fn;
    ac_trainer *tr;
    ac_nn_batch batch;
    int restarted, done;
    int cb_status; /* an error inside a callback (AC_* code) */
    ac_err cb_err;
};

int train_fitp_setup(ac_trainer *tr, ac_err *err)
{
    struct train_fitp_state *s = calloc(1, sizeof *s);
    if (!s)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    tr->data->fitp = s;
    s->best = malloc(tr->model.nparams * sizeof(double));
    s->best_m = malloc(tr->model.nparams * sizeof(double));
    s->best_v = malloc(tr->model.nparams * sizeof(double));
    if (!s->best || !s->best_m || !s->best_v)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    return AC_OK;
}

void train_fitp_free(ac_train_data *d)
{
    struct train_fitp_state *s = d ? d->fitp : NULL;
    if (!s)
        return;
    if (s->mz)
        gsl_multimin_fdfminimizer_free(s->mz);
    if (s->x)
        gsl_vector_free(s->x);
    free(s->M);
    free(s->Minv);
    free(s->best);
    free(s->best_m);
    free(s->best_v);
    free(s);
    d->fitp = NULL;
}

/* Forget the BFGS minimiser: the next step starts one at the trainer's
 * weights. */
static void bfgs_forget(struct train_fitp_state *s)
{
    if (s->mz)
        gsl_multimin_fdfminimizer_free(s->mz);
    if (s->x)
        gsl_vector_free(s->x);
    free(s->M);
    free(s->Minv);
    s->mz = NULL;
    s->x = NULL;
    s->M = s->Minv = NULL;
    s->restarted = s->done = 0;
}

void train_fitp_reset(ac_trainer *tr)
{
    struct train_fitp_state *s = tr->data ? tr->data->fitp : NULL;
    if (!s)
        return;
    s->have_best = s->best_current = 0;
    bfgs_forget(s);
}

void train_fitp_moved(ac_trainer *tr)
{
    struct train_fitp_state *s = tr->data ? tr->data->fitp : NULL;
    if (s)
        s->best_current = 0;
}

int train_fitp_best_current(const ac_trainer *tr)
{
    const struct train_fitp_state *s = tr->data ? tr->data->fitp : NULL;
    return s && s->have_best && s->best_current;
}

int ac_trainer_fitp_restore_best(ac_trainer *tr)
{
    struct train_fitp_state *s = tr->data ? tr->data->fitp : NULL;
    ac_nn_model *m = &tr->model;
    if (tr->cfg.task != AC_TASK_FIT_P || !s || !s->have_best)
        return 0;
    if (s->best_current)
        return 1;
    memcpy(m->params, s->best, m->nparams * sizeof(double));
    memcpy(m->m, s->best_m, m->nparams * sizeof(double));
    memcpy(m->v, s->best_v, m->nparams * sizeof(double));
    memset(m->grads, 0, m->nparams * sizeof(double));
    tr->step = s->best_step;
    s->best_current = 1;
    bfgs_forget(s); /* a later step starts BFGS afresh from these weights */
    return 1;
}

/* KL(P || S) summed over the columns, from the logits z of the last
 * forward pass (row t = column t of the logits) and the target rows y
 * (column t of P), in a form accurate near S = P.  With s = sum_j y_j,
 * r_j = z_j - log y_j, rbar = sum_j y_j r_j / s and delta_j = r_j - rbar
 * (so that sum_j y_j delta_j = 0):
 *     sum_j y_j log(y_j / S_j) = s lse(z) - sum_j y_j z_j + sum_j y_j log y_j
 *                              = s log s + s log1p(sum_j y_j (expm1(delta_j) - delta_j) / s),
 * a sum of nonnegative terms ~ y delta^2/2, instead of the difference of
 * the cross-entropy and the entropy of P, which loses every digit of KL
 * below u times the entropy.  (For s = 1 this is KL exactly; the model's
 * gradient, d/dz_j = s S_j - y_j per column, is its gradient.)  For a
 * masked head (d->keep) every sum runs over the visible keys of the column
 * and S is the softmax over them (doc/mathematics.md §3.8). */
double train_fitp_kl(const ac_trainer *tr)
{
    const ac_nn_model *m = &tr->model;
    size_t T = m->w->T;
    const double *z = m->w->pre, *y = tr->data->y;
    const unsigned char *keep = tr->data->keep; /* a masked head: the sums run over
                                                   the visible keys only (§3.8) */
    double kl = 0;
    for (size_t t = 0; t < T; t++) {
        const double *zt = z + t * T, *yt = y + t * T;
        const unsigned char *kt = keep ? keep + t * T : NULL;
        double sy = 0, sr = 0;
        for (size_t j = 0; j < T; j++) {
            if (kt && !kt[j])
                continue;
            sy += yt[j];
            sr += yt[j] * (zt[j] - log(yt[j]));
        }
        double rbar = sr / sy, q = 0;
        for (size_t j = 0; j < T; j++) {
            if (kt && !kt[j])
                continue;
            double dl = zt[j] - log(yt[j]) - rbar;
            q += yt[j] * (expm1(dl) - dl);
        }
        kl += sy * log(sy) + sy * log1p(q / sy);
    }
    return kl;
}

void train_fitp_note(ac_trainer *tr, double maxdev, double kl)
{
    struct train_fitp_state *s = tr->data->fitp;
    if (!s || (s->have_best && !(maxdev < s->best_maxdev)))
        return;
    memcpy(s->best, tr->model.params, tr->model.nparams * sizeof(double));
    memcpy(s->best_m, tr->model.m, tr->model.nparams * sizeof(double));
    memcpy(s->best_v, tr->model.v, tr->model.nparams * sizeof(double));
    s->have_best = 1;
    s->best_current = 1;
    s->best_step = tr->step;
    s->best_maxdev = maxdev;
    s->best_kl = kl;
}

const double *train_fitp_weights(const ac_trainer *tr)
{
    const struct train_fitp_state *s = tr->data ? tr->data->fitp : NULL;
    return s && s->have_best ? s->best : tr->model.params;
}

int ac_trainer_fitp_best(const ac_trainer *tr, size_t *step, double *maxdev, double *kl)
{
    const struct train_fitp_state *s = tr->data ? tr->data->fitp : NULL;
    if (tr->cfg.task != AC_TASK_FIT_P || !s || !s->have_best)
        return 0;
    if (step)
        *step = s->best_step;
    if (maxdev)
        *maxdev = s->best_maxdev;
    if (kl)
        *kl = s->best_kl;
    return 1;
}

/* ---- BFGS ------------------------------------------------------------------ */

/* The model's parameters Phi M (M symmetric) from the coordinates phi. */
static void set_params(struct train_fitp_state *s, const double *phi)
{
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, s->rows, s->d, s->d, 1.0, phi, s->d, s->M, s->d, 0.0,
             s->tr->model.params, s->d);
}

/* The objective at phi: KL(P || S) summed over the columns (train_fitp_kl,
 * accurate near the minimum, where the cross-entropy's rounding would stop
 * the line search), and its gradient when g != NULL: the model's backward
 * pass (of the mean cross-entropy over the n columns: the same gradient
 * divided by n), mapped back by the chain rule (dPhi = n dW M). */
static double bfgs_eval(const gsl_vector *th, void *p, gsl_vector *g)
{
    struct train_fitp_state *s = p;
    ac_nn_model *m = &s->tr->model;
    ac_nn_stats st;
    set_params(s, th->data);
    int rc = ac_nn_forward(m, &s->batch, &st, &s->cb_err);
    if (rc) {
        s->cb_status = rc;
        return NAN;
    }
    double f = train_fitp_kl(s->tr); /* before the backward pass reuses the logits */
    if (g) {
        ac_nn_zero_grad(m);
        ac_nn_backward(m);
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, s->rows, s->d, s->d, (double)s->batch.T, m->grads, s->d,
                 s->M, s->d, 0.0, g->data, s->d);
    }
    return f;
}

/* M and M^-1 (see the top of the file) from the SVD of X. */
static int preconditioner(struct train_fitp_state *s, const ac_mat *X, ac_err *err)
{
    size_t d = X->rows, n = X->cols, p = d < n ? d : n;
    ac_mat U = {0}, Vt = {0};
    double *sv = malloc(p * sizeof(double));
    int st;
    s->M = calloc(d * d, sizeof(double));
    s->Minv = calloc(d * d, sizeof(double));
    if (!sv || !s->M || !s->Minv) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if ((st = ac_approx_svd(X, &U, sv, &Vt, err)))
        goto out;
    for (size_t i = 0; i < d; i++)
        s->M[i * d + i] = s->Minv[i * d + i] = 1.0;
    double floor = sv[0] * (double)d * (double)n * 0x1p-53;
    for (size_t k = 0; k < p; k++) {
        if (!(sv[k] > floor))
            break;
        double a = 1.0 / sv[k] - 1.0, b = sv[k] - 1.0;
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < d; j++) {
                double uu = AC_MAT(&U, i, k) * AC_MAT(&U, j, k);
                s->M[i * d + j] += a * uu;
                s->Minv[i * d + j] += b * uu;
            }
    }
out:
    free(sv);
    ac_mat_free(&U);
    ac_mat_free(&Vt);
    return st;
}

static double bfgs_f(const gsl_vector *th, void *p)
{
    return bfgs_eval(th, p, NULL);
}

static void bfgs_df(const gsl_vector *th, void *p, gsl_vector *g)
{
    bfgs_eval(th, p, g);
}

static void bfgs_fdf(const gsl_vector *th, void *p, double *f, gsl_vector *g)
{
    *f = bfgs_eval(th, p, g);
}

/* The minimiser at the current weights.  Initial trial step 0.01 and line
 * search tolerance 0.1 (GSL's recommendation for vector_bfgs2). */
static int bfgs_start(ac_trainer *tr, struct train_fitp_state *s, ac_err *err)
{
    size_t np = tr->model.nparams;
    int rc;
    s->tr = tr;
    if ((rc = train_fill_batch(tr, 0, 1, &s->batch, err)))
        return rc;
    s->mz = gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, np);
    s->x = gsl_vector_alloc(np);
    if (!s->mz || !s->x)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    s->d = tr->model.cfg.width;
    s->rows = np / s->d;
    if ((rc = preconditioner(s, &tr->data->X, err)))
        return rc;
    /* phi_0 = w_0 M^-1 */
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, s->rows, s->d, s->d, 1.0, tr->model.params, s->d, s->Minv,
             s->d, 0.0, s->x->data, s->d);
    s->fn = (gsl_multimin_function_fdf){bfgs_f, bfgs_df, bfgs_fdf, np, s};
    if (gsl_multimin_fdfminimizer_set(s->mz, &s->fn, s->x, 0.01, 0.1) != GSL_SUCCESS &&
        !s->cb_status)
        return ac_err_set_field(err, AC_EDATA, "init_std", "BFGS could not start: the loss or "
                                "its gradient is not finite at the initial weights");
    return AC_OK;
}

/* One iteration; on no progress, one restart (the curvature estimate
 * reset to the identity) and a second try; then done. */
static void bfgs_iterate(struct train_fitp_state *s)
{
    if (s->done)
        return;
    int status = gsl_multimin_fdfminimizer_iterate(s->mz);
    if (status && !s->cb_status && !s->restarted) {
        s->restarted = 1;
        gsl_multimin_fdfminimizer_restart(s->mz);
        status = gsl_multimin_fdfminimizer_iterate(s->mz);
    }
    if (status)
        s->done = 1;
    else
        s->restarted = 0;
    if (gsl_blas_dnrm2(gsl_multimin_fdfminimizer_gradient(s->mz)) == 0)
        s->done = 1;
}

int train_fitp_bfgs_step(ac_trainer *tr, ac_step_info *info, ac_err *err)
{
    struct train_fitp_state *s = tr->data->fitp;
    ac_nn_model *m = &tr->model;
    ac_nn_stats st;
    int rc = AC_OK;
    /* GSL's default handler aborts on errors: the library returns instead.
     * BLAS (GSL's vector operations, the preconditioner's dgemm) on one
     * thread, so that no reduction order depends on the thread count. */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int bt = blas_single();
    if (!s->mz && (rc = bfgs_start(tr, s, err)))
        goto out;
    if (!s->cb_status)
        bfgs_iterate(s);
    if (s->cb_status) {
        *err = s->cb_err;
        rc = s->cb_status;
        goto out;
    }
    /* the model at the accepted point (the callbacks leave the last trial) */
    set_params(s, gsl_multimin_fdfminimizer_x(s->mz)->data);
    if ((rc = ac_nn_forward(m, &s->batch, &st, err)))
        goto out;
    tr->step++;
    if (info) {
        info->step = tr->step;
        info->lr = NAN;
        info->loss = train_fitp_kl(tr);
        info->grad_norm = gsl_blas_dnrm2(gsl_multimin_fdfminimizer_gradient(s->mz));
        info->tokens = s->batch.B * s->batch.T;
        info->accuracy = NAN;
        info->maxdev = st.maxdev;
        info->done = s->done;
    }
out:
    blas_restore(bt);
    gsl_set_error_handler(old);
    return rc;
}
