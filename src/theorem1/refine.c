/* refine.c — weights for route DECIDE of Theorem 1 (doc/mathematics.md
 * §3.4, §3.6): the projected constructions (the logits Pi M(c*) Pi of the
 * exact criterion, or K Pi log(P) Pi of the rank condition, truncated to
 * rank dk, through X^+ of the certified or of numerical rank), the best in
 * double certified; then, if they do not prove C(tol), a best approximation
 * by BFGS (GSL multimin) on the squared error and then on p-norm surrogates
 * of the max-abs error, kept only if its certified error is smaller (for a
 * masked head too, ac_t1_refine_masked, doc/mathematics.md §3.8).  Approximate
 * steps only propose weights: every weight written is certified
 * (attention/head.c).
 *
 * Dimension letters: d model width, n tokens, dk head size, r = rank X.
 * Buffers are row-major: X d x n, X^+ n x d, P, Pi, T n x n,
 * Wk/Wq dk x d.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_multimin.h>

#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "attention/head_impl.h"
#include "theorem1/t1_impl.h"

/* ---- the projected construction ----------------------------------------- */

/* T (n x n, initialised) = Pi M(c*) Pi = Pi L Pi + g (Pi c*)', L = log P,
 * g = Pi 1, with the minimiser c* of the log-domain residual in double (the
 * derivation and its twins: t1_decide.h): c* = -((I - Pi) v / n + Pi v /
 * (n - b)), v = (L - Pi L Pi)' 1, b = 1'Pi 1 (the Pi v term dropped when
 * n - b is within rounding of 0).
 * kform: T = K Pi L Pi instead, K = I - g g'/b, the matrix whose rank-dk
 * truncation the rank condition of doc/mathematics.md §3.4 measures (its
 * softmax is that of Pi L Pi up to column shifts when g = 1). */
static int projected_logits(ac_mat *T, const ac_mat *Pi, const ac_mat *P, int kform,
                            ac_err *err)
{
    size_t n = P->rows;
    ac_mat W1 = {0}, tmp = {0};
    double *g = calloc(n, sizeof(double)), *v = calloc(n, sizeof(double));
    double *pv = calloc(n, sizeof(double)), *c = calloc(n, sizeof(double));
    double *pc = calloc(n + 1, sizeof(double));
    int st;
    if ((st = ac_mat_init(&W1, n, n, err)))
        goto out;
    if (!g || !v || !pv || !c || !pc) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    /* L in T; W1 = Pi L Pi; T <- L - Pi L Pi */
    for (size_t i = 0; i < n * n; i++)
        T->data[i] = log(P->data[i]);
    if ((st = ac_mat_init(&tmp, n, n, err)))
        goto out;
    ac_gemm(&tmp, AC_NOTRANS, Pi, AC_NOTRANS, T, err);
    ac_gemm(&W1, AC_NOTRANS, &tmp, AC_NOTRANS, Pi, err);
    double b = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            g[i] += AC_MAT(Pi, i, j);
            v[j] += AC_MAT(T, i, j) - AC_MAT(&W1, i, j);
        }
        b += g[i];
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            pv[i] += AC_MAT(Pi, i, j) * v[j];
    int pi_term = (double)n - b > 1e3 * (double)n * AC_U * (double)n;
    for (size_t i = 0; i < n; i++)
        c[i] = -((v[i] - pv[i]) / (double)n + (pi_term ? pv[i] / ((double)n - b) : 0.0));
    if (kform) {
        /* T <- W1 - g (g' W1) / b */
        double gg = 0;
        for (size_t i = 0; i < n; i++)
            gg += g[i] * g[i];
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t i = 0; i < n; i++)
                s += g[i] * AC_MAT(&W1, i, j);
            pc[j] = gg > 0 ? s / gg : 0;
        }
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                AC_MAT(T, i, j) = AC_MAT(&W1, i, j) - g[i] * pc[j];
        goto out;
    }
    /* T <- Pi (L + 1 c') Pi  =  Pi L Pi + g (Pi c)' */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            pc[i] += AC_MAT(Pi, i, j) * c[j];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            AC_MAT(T, i, j) = AC_MAT(&W1, i, j) + g[i] * pc[j];
out:
    free(g);
    free(v);
    free(pv);
    free(c);
    free(pc);
    ac_mat_free(&W1);
    ac_mat_free(&tmp);
    return st;
}

/* Weights whose logits are T = Pi M(c*) Pi (kform: K Pi L Pi), truncated
 * to rank dk: A = (X^+)' T X^+ (so X' A X = T), sqrt(dk) A = Wk' Wq by the
 * SVD of A, for X^+ = Xp and Pi = Xp X given. */
static int construct_projected(ac_mat *Wk, ac_mat *Wq, const ac_mat *Xp, const ac_mat *Pi,
                               const ac_mat *P, size_t dk, int kform, ac_err *err)
{
    size_t n = P->rows;
    ac_mat T = {0};
    int st;
    if (!(st = ac_mat_init(&T, n, n, err)) && !(st = projected_logits(&T, Pi, P, kform, err)))
        st = t1_factor_logits(Wk, Wq, &T, Xp, dk, err);
    ac_mat_free(&T);
    return st;
}

/* ---- the best approximation (BFGS) ---------------------------------------- */

/* f(Wk, Wq) = sum_ij ((Softmax(Z) - P)_ij / s)^(2p), Z = (Wk X)'(Wq X)/sqrt(dk):
 * p = 1, s = 1 is the squared error; growing p approaches the max-abs error
 * (the p-norm surrogate), s is the current max error so that the powers stay
 * in range.  The gradient is the column softmax backward:
 * dZ = S o (G - 1 (1'(S o G))). */
typedef struct {
    const ac_mat *X, *P;
    size_t d, n, dk;
    int pw;       /* the power p */
    double scale; /* s */
    double *K, *Q, *Z, *G, *dK, *dQ;
    double *scratch; /* 2n: the softmax's column maxima and sums */
    const unsigned char *mask; /* a masked head (doc/mathematics.md §3.8), or NULL */
} fit_ctx;

static void fit_softmax(fit_ctx *c, const double *th)
{
    size_t d = c->d, n = c->n, dk = c->dk;
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, dk, n, d, 1.0, th, d, c->X->data, n, 0.0, c->K, n);
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, dk, n, d, 1.0, th + dk * d, d, c->X->data, n, 0.0, c->Q, n);
    if (c->mask) { /* the gradient below is then 0 off the mask, where S = 0 */
        ac_head_logits(c->Z, c->K, c->Q, n, dk);
        ac_head_softmax_cols_masked(c->Z, n, c->mask);
    } else
        ac_head_softmax_kq(c->Z, c->K, c->Q, n, dk, c->scratch);
}

/* max |Softmax - P| of the parameters th, in double (NaN counts as +inf). */
static double fit_maxerr(fit_ctx *c, const double *th)
{
    fit_softmax(c, th);
    double m = 0;
    for (size_t i = 0; i < c->n * c->n; i++) {
        double e = fabs(c->Z[i] - c->P->data[i]);
        if (!(e <= m))
            m = isnan(e) ? INFINITY : e;
    }
    return m;
}

static double fit_eval(const gsl_vector *th, void *params, gsl_vector *grad)
{
    fit_ctx *c = params;
    size_t d = c->d, n = c->n, dk = c->dk;
    double s = 1.0 / sqrt((double)dk), f = 0;
    fit_softmax(c, th->data);
    for (size_t i = 0; i < n * n; i++) {
        double e = (c->Z[i] - c->P->data[i]) / c->scale, e2 = e * e, pwr = 1;
        for (int k = 1; k < c->pw; k++)
            pwr *= e2; /* e^(2p-2) */
        f += pwr * e2;
        c->G[i] = 2 * c->pw * pwr * e / c->scale;
    }
    if (!grad)
        return f;
    for (size_t j = 0; j < n; j++) {
        double dot = 0;
        for (size_t i = 0; i < n; i++)
            dot += c->Z[i * n + j] * c->G[i * n + j];
        for (size_t i = 0; i < n; i++)
            c->G[i * n + j] = c->Z[i * n + j] * (c->G[i * n + j] - dot);
    }
    /* dK = Q dZ' s, dQ = K dZ s; dWk = dK X', dWq = dQ X' */
    ac_dgemm(AC_NOTRANS, AC_TRANS, dk, n, n, s, c->Q, n, c->G, n, 0.0, c->dK, n);
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, dk, n, n, s, c->K, n, c->G, n, 0.0, c->dQ, n);
    ac_dgemm(AC_NOTRANS, AC_TRANS, dk, d, n, 1.0, c->dK, n, c->X->data, n, 0.0, grad->data, d);
    ac_dgemm(AC_NOTRANS, AC_TRANS, dk, d, n, 1.0, c->dQ, n, c->X->data, n, 0.0, grad->data + dk * d,
             d);
    return f;
}

static double fit_f(const gsl_vector *th, void *p)
{
    return fit_eval(th, p, NULL);
}
static void fit_df(const gsl_vector *th, void *p, gsl_vector *g)
{
    fit_eval(th, p, g);
}
static void fit_fdf(const gsl_vector *th, void *p, double *f, gsl_vector *g)
{
    *f = fit_eval(th, p, g);
}

static int fit_alloc(fit_ctx *c, const ac_mat *X, const ac_mat *P, size_t dk)
{
    size_t n = X->cols;
    fit_ctx c0 = {X, P, X->rows, n, dk, 1, 1.0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    *c = c0;
    c->K = malloc(dk * n * sizeof(double));
    c->Q = malloc(dk * n * sizeof(double));
    c->Z = malloc(n * n * sizeof(double));
    c->G = malloc(n * n * sizeof(double));
    c->dK = malloc(dk * n * sizeof(double));
    c->dQ = malloc(dk * n * sizeof(double));
    c->scratch = malloc(2 * n * sizeof(double));
    return c->K && c->Q && c->Z && c->G && c->dK && c->dQ && c->scratch;
}

static void fit_free(fit_ctx *c)
{
    free(c->K);
    free(c->Q);
    free(c->Z);
    free(c->G);
    free(c->dK);
    free(c->dQ);
    free(c->scratch);
}

/* One BFGS run on the surrogate of power pw from best (2 dk d parameters);
 * every iterate with a lower max error (in double) replaces best. */
static int bfgs_stage(fit_ctx *c, gsl_multimin_fdfminimizer *m, gsl_vector *th, double *best,
                      double *best_err, int pw, int iters)
{
    size_t np = th->size;
    int it;
    c->pw = pw;
    c->scale = pw == 1 ? 1.0 : fmax(*best_err, 1e-300);
    memcpy(th->data, best, np * sizeof(double));
    gsl_multimin_function_fdf fn = {fit_f, fit_df, fit_fdf, np, c};
    if (gsl_multimin_fdfminimizer_set(m, &fn, th, 0.01, 0.1) != GSL_SUCCESS)
        return 0;
    for (it = 0; it < iters; it++) {
        if (gsl_multimin_fdfminimizer_iterate(m))
            break;
        double e = fit_maxerr(c, m->x->data);
        if (e < *best_err) {
            *best_err = e;
            memcpy(best, m->x->data, np * sizeof(double));
        }
        if (gsl_multimin_test_gradient(m->gradient, 1e-14) == GSL_SUCCESS) {
            it++;
            break;
        }
    }
    return it;
}

/* The refinement's budget (doc/mathematics.md §3.6, "The refinement's
 * budget"): with --optimize ITERS the schedule is ITERS iterations on the
 * squared error and ITERS/4 + 1 on each of the four p-norm surrogates; an
 * iteration costs about w = n^2 dk + 2 n d dk multiply-adds (forward and
 * backward products), and the whole schedule is scaled down so that the
 * iterations times w stay within AC_T1_REFINE_WORK.  The budget counts work,
 * not seconds, so the result does not depend on the machine or its load. */
#define AC_T1_REFINE_WORK 0x1p33
#define AC_T1_REFINE_MAX_PARAMS 200000
#define AC_T1_REFINE_MAX_N 512

typedef struct {
    int it1, itp;  /* iterations for p = 1 and for each p = 2, 4, 8, 16 */
    int planned;   /* it1 + 4 itp */
    int requested; /* ITERS + 4 (ITERS/4 + 1) */
    int capped;    /* the work budget cut the schedule */
} refine_plan;

static void plan_refinement(refine_plan *pl, size_t d, size_t n, size_t dk, int iters)
{
    double w = (double)n * (double)n * (double)dk + 2.0 * (double)n * (double)d * (double)dk;
    int itp = iters / 4 + 1;
    pl->requested = iters + 4 * itp;
    double f = fmin(1.0, AC_T1_REFINE_WORK / (w * (double)pl->requested));
    pl->capped = f < 1.0;
    pl->it1 = pl->capped ? (int)fmax(1.0, floor(iters * f)) : iters;
    pl->itp = pl->capped ? (int)fmax(1.0, floor(itp * f)) : itp;
    pl->planned = pl->it1 + 4 * pl->itp;
}

/* Refine (Wk, Wq) towards the least max-abs error: BFGS on the squared
 * error, then on the p-norm surrogate with p = 2, 4, 8, 16 (GSL multimin),
 * keeping the iterate with the lowest max error in double.  The result
 * replaces the old weights only if its certified error is lower (decided by
 * the caller).  Returns 1 if a refinement was produced into Wk2, Wq2. */
static int refine_weights(ac_mat *Wk2, ac_mat *Wq2, int *ran, const ac_mat *X, const ac_mat *P,
                          const unsigned char *mask, const ac_mat *Wk, const ac_mat *Wq,
                          const refine_plan *pl)
{
    size_t d = X->rows, dk = Wk->rows, np = 2 * dk * d;
    *ran = 0;
    /* GSL's default handler aborts on errors (allocation failures included):
     * the library must return instead, so it is off for the whole call. */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    fit_ctx c;
    int ok = fit_alloc(&c, X, P, dk);
    c.mask = mask;
    gsl_vector *th = gsl_vector_alloc(np);
    double *best = malloc(np * sizeof(double));
    gsl_multimin_fdfminimizer *m =
        gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, np);
    if (!ok || !th || !m || !best) {
        ok = 0;
        goto out;
    }
    memcpy(best, Wk->data, dk * d * sizeof(double));
    memcpy(best + dk * d, Wq->data, dk * d * sizeof(double));
    /* a small deterministic nudge off the symmetric saddle of zero weights */
    for (size_t i = 0; i < np; i++)
        if (best[i] == 0.0)
            best[i] = 1e-3 * sin((double)(i + 1));
    double best_err = fit_maxerr(&c, best);
    *ran = bfgs_stage(&c, m, th, best, &best_err, 1, pl->it1);
    for (int pw = 2; pw <= 16; pw *= 2)
        *ran += bfgs_stage(&c, m, th, best, &best_err, pw, pl->itp);
    ok = 0;
    if (ac_mat_init(Wk2, dk, d, NULL) == AC_OK && ac_mat_init(Wq2, dk, d, NULL) == AC_OK) {
        memcpy(Wk2->data, best, dk * d * sizeof(double));
        memcpy(Wq2->data, best + dk * d, dk * d * sizeof(double));
        ok = 1;
    } else {
        ac_mat_free(Wk2);
    }
out:
    if (m)
        gsl_multimin_fdfminimizer_free(m);
    if (th)
        gsl_vector_free(th);
    free(best);
    gsl_set_error_handler(old);
    fit_free(&c);
    return ok;
}

/* ---- the P-weighted truncation ------------------------------------------- */

/* The truncation of a start is nearest to log P in the plain Frobenius norm
 * of the logits, but an error t on the logit of entry (i, j) moves the
 * softmax by about P_ij t (the column softmax's derivative, relative to the
 * column's mean): small entries tolerate large logit errors, large ones
 * none.  The P-weighted problem, min over logits Z in {X'AX} of rank <= dk
 * and column shifts c of sum_ij w_ij (Z_ij - log P_ij - c_j)^2 with
 * w = P / max P, is solved approximately by the EM iteration of weighted
 * low-rank approximation (Srebro and Jaakkola 2003; the weights of the
 * first-order change P_ij t: their squares, the weights of the squared
 * error, leave the mid-size entries to converge too slowly, measured):
 * T = Z + Pi (w o (log P + 1c' - Z)) Pi with c_j the P-weighted mean of
 * column j's residual, then Z = the rank-dk truncation of T.  Each iterate
 * is a head; the one with the lowest max error in double is returned.  The
 * iterations are capped by a work budget (multiply-adds, not seconds). */
#define AC_T1_EM_WORK 0x1p31
#define AC_T1_EM_ITERS 100

static int weighted_truncation(ac_mat *Wk, ac_mat *Wq, double *best_err, fit_ctx *c,
                               const ac_mat *Xp, const ac_mat *Pi, const ac_mat *P, size_t dk,
                               ac_err *err)
{
    size_t n = P->rows, d = Xp->cols, kd = dk * d;
    double w_it = 24.0 * (double)n * (double)n * (double)n + 4.0 * (double)n * (double)d * (double)dk;
    int iters = (int)fmin(AC_T1_EM_ITERS, floor(AC_T1_EM_WORK / w_it));
    ac_mat T = {0}, E = {0}, tmp = {0}, K1 = {0}, Q1 = {0};
    double *th = malloc(2 * kd * sizeof(double)), pmax = 0;
    int st = AC_OK;
    if (iters < 1 || n < 2)
        goto out;
    if (!th) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if ((st = ac_mat_init(&T, n, n, err)) || (st = ac_mat_init(&E, n, n, err)) ||
        (st = ac_mat_init(&tmp, n, n, err)))
        goto out;
    for (size_t i = 0; i < n * n; i++)
        pmax = fmax(pmax, P->data[i]);
    memcpy(th, Wk->data, kd * sizeof(double));
    memcpy(th + kd, Wq->data, kd * sizeof(double));
    double sq = 1.0 / sqrt((double)dk);
    for (int it = 0; it < iters; it++) {
        /* Z = (Wk X)'(Wq X)/sqrt(dk) of the current head, in T */
        fit_softmax(c, th);
        ac_dgemm(AC_TRANS, AC_NOTRANS, n, n, dk, sq, c->K, n, c->Q, n, 0.0, T.data, n);
        for (size_t j = 0; j < n; j++) {
            double cj = 0; /* sum_i P_ij (log P_ij - Z_ij) / sum_i P_ij */
            double sp = 0;
            for (size_t i = 0; i < n; i++) {
                cj += AC_MAT(P, i, j) * (log(AC_MAT(P, i, j)) - AC_MAT(&T, i, j));
                sp += AC_MAT(P, i, j);
            }
            cj /= sp;
            for (size_t i = 0; i < n; i++) {
                double w = AC_MAT(P, i, j) / pmax;
                AC_MAT(&E, i, j) = w * (log(AC_MAT(P, i, j)) - AC_MAT(&T, i, j) - cj);
            }
        }
        /* T += Pi E Pi */
        if ((st = ac_gemm(&tmp, AC_NOTRANS, Pi, AC_NOTRANS, &E, err)))
            goto out;
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, n, n, n, 1.0, tmp.data, n, Pi->data, n, 1.0, T.data, n);
        ac_mat_free(&K1);
        ac_mat_free(&Q1);
        if ((st = t1_factor_logits(&K1, &Q1, &T, Xp, dk, err)))
            goto out;
        memcpy(th, K1.data, kd * sizeof(double));
        memcpy(th + kd, Q1.data, kd * sizeof(double));
        double e = fit_maxerr(c, th);
        if (e < *best_err) {
            *best_err = e;
            memcpy(Wk->data, K1.data, kd * sizeof(double));
            memcpy(Wq->data, Q1.data, kd * sizeof(double));
        }
    }
out:
    free(th);
    ac_mat_free(&T);
    ac_mat_free(&E);
    ac_mat_free(&tmp);
    ac_mat_free(&K1);
    ac_mat_free(&Q1);
    return st;
}

/* ---- the weights of route DECIDE ------------------------------------------ */

/* The starts: the logits Pi M(c*) Pi and K Pi L Pi, each through X^+ of the
 * certified rank and of numerical rank (singular values above 1e-8 sigma_1,
 * for an ill-conditioned X); the one with the lowest max error in double. */
#define NSTARTS 4
static const struct {
    int kform;
    double rel;
    const char *name;
} starts[NSTARTS] = {
    {0, 0, "Pi M(c*) Pi truncated to rank dk"},
    {1, 0, "K Pi log(P) Pi truncated to rank dk"},
    {0, 1e-8, "Pi M(c*) Pi through X^+ of numerical rank, truncated to rank dk"},
    {1, 1e-8, "K Pi log(P) Pi through X^+ of numerical rank, truncated to rank dk"},
};

/* Every singular value of X among the first min(r, d, n) is at least
 * 2e-8 sigma_1 (a margin over the 1e-8 of the starts): then X^+ of numerical
 * rank equals X^+ of rank r, computed identically, and starts 2, 3 would
 * repeat starts 0, 1. */
static int numerical_rank_is_r(const ac_mat *X, size_t r)
{
    size_t p = X->rows < X->cols ? X->rows : X->cols, k = r < p ? r : p;
    double *s = malloc((p ? p : 1) * sizeof(double));
    int same = s && ac_approx_svd_values(X, s, NULL) == AC_OK;
    for (size_t i = 0; i < k && same; i++)
        same = s[i] > 0 && s[i] >= 2e-8 * s[0];
    free(s);
    return same;
}

static int best_start(ac_mat *Wk, ac_mat *Wq, const char **name, const ac_mat *X,
                      const ac_mat *P, size_t r, size_t dk, ac_err *err)
{
    fit_ctx c;
    double best = INFINITY;
    size_t n = X->cols;
    int st = AC_OK, nstarts = numerical_rank_is_r(X, r) ? 2 : NSTARTS;
    ac_mat Xp = {0}, Pi = {0};
    if (!fit_alloc(&c, X, P, dk)) {
        fit_free(&c);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    size_t kd = dk * X->rows;
    double *th = malloc(2 * kd * sizeof(double));
    for (int s = 0; s < nstarts && th; s++) {
        ac_mat K1 = {0}, Q1 = {0};
        if (s == 0 || starts[s].rel != starts[s - 1].rel) { /* X^+ and Pi once per rel */
            ac_mat_free(&Xp);
            ac_mat_free(&Pi);
            if ((st = t1_pinv(&Xp, NULL, X, r, starts[s].rel, err)) ||
                (st = ac_mat_init(&Pi, n, n, err)) ||
                (st = ac_gemm(&Pi, AC_NOTRANS, &Xp, AC_NOTRANS, X, err)))
                break;
        }
        if ((st = construct_projected(&K1, &Q1, &Xp, &Pi, P, dk, starts[s].kform, err)))
            break;
        memcpy(th, K1.data, kd * sizeof(double));
        memcpy(th + kd, Q1.data, kd * sizeof(double));
        double e = fit_maxerr(&c, th);
        if (e < best || s == 0) {
            best = e;
            ac_mat_free(Wk);
            ac_mat_free(Wq);
            *Wk = K1;
            *Wq = Q1;
            *name = starts[s].name;
        } else {
            ac_mat_free(&K1);
            ac_mat_free(&Q1);
        }
    }
    if (!th && !st)
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
    free(th);
    ac_mat_free(&Xp);
    ac_mat_free(&Pi);
    fit_free(&c);
    return st;
}

/* Whether to refine, with res->refine_stop saying why not; the plan in
 * *pl. */
static int refine_decision(ac_t1_result *res, refine_plan *pl, const ac_mat *X,
                           const ac_t1_opts *o)
{
    size_t d = X->rows, n = X->cols, dk = res->dk;
    memset(pl, 0, sizeof *pl);
    res->refine_iters = 0;
    if (res->weights_cert.verdict == AC_PROVED)
        snprintf(res->refine_stop, sizeof res->refine_stop,
                 "not needed: the projected construction proves C(tol)");
    else if (o->optimize <= 0)
        snprintf(res->refine_stop, sizeof res->refine_stop, "off (--optimize 0)");
    else if (2 * dk * d == 0 || 2 * dk * d > AC_T1_REFINE_MAX_PARAMS)
        snprintf(res->refine_stop, sizeof res->refine_stop,
                 "skipped: 2 dk d = %zu parameters > %d", 2 * dk * d, AC_T1_REFINE_MAX_PARAMS);
    else if (n > AC_T1_REFINE_MAX_N)
        snprintf(res->refine_stop, sizeof res->refine_stop, "skipped: n = %zu > %d", n,
                 AC_T1_REFINE_MAX_N);
    else {
        plan_refinement(pl, d, n, dk, o->optimize);
        return 1;
    }
    return 0;
}

static void refine_report(ac_t1_result *res, const refine_plan *pl, int ran, int iters)
{
    res->refine_iters = ran;
    if (pl->capped)
        snprintf(res->refine_stop, sizeof res->refine_stop,
                 "work budget: %d of the %d iterations of --optimize %d planned, %d run", pl->planned,
                 pl->requested, iters, ran);
    else if (ran < pl->planned)
        snprintf(res->refine_stop, sizeof res->refine_stop,
                 "converged: %d of %d iterations run (no further progress)", ran, pl->planned);
    else
        snprintf(res->refine_stop, sizeof res->refine_stop, "completed: %d iterations", ran);
}

int ac_t1_best_weights(ac_t1_result *res, const ac_mat *X, const ac_mat *P, size_t r,
                       const ac_t1_opts *o, ac_err *err)
{
    ac_mat Wk2 = {0}, Wq2 = {0};
    const char *name = starts[0].name;
    int st;
    if ((st = best_start(&res->Wk, &res->Wq, &name, X, P, r, res->dk, err)) ||
        (st = ac_t1_certify_weights(&res->weights_cert, X, &res->Wk, &res->Wq, P, NULL, o, err)))
        goto out;
    snprintf(res->upper_method, sizeof res->upper_method, "the projected construction, %s",
             name);
    /* a start that proves C(tol) is not refined by BFGS; its upper end is
     * tightened by the P-weighted truncation (optional: a failure keeps it) */
    if (res->weights_cert.verdict == AC_PROVED &&
        ac_t1_weighted_upper(res, X, P, r, o, err) != AC_OK)
        ac_err_clear(err);
    refine_plan pl;
    int ran = 0, tried = refine_decision(res, &pl, X, o);
    if (tried && refine_weights(&Wk2, &Wq2, &ran, X, P, NULL, &res->Wk, &res->Wq, &pl)) {
        ac_cert c2;
        if ((st = ac_t1_certify_weights(&c2, X, &Wk2, &Wq2, P, NULL, o, err)))
            goto out;
        if (c2.hi < res->weights_cert.hi) {
            ac_mat_free(&res->Wk);
            ac_mat_free(&res->Wq);
            res->Wk = Wk2;
            res->Wq = Wq2;
            Wk2.data = Wq2.data = NULL;
            res->weights_cert = c2;
            snprintf(res->upper_method, sizeof res->upper_method,
                     "BFGS from %s, squared error then p-norms up to p = 16 (best max error)",
                     name);
        }
    }
    if (tried)
        refine_report(res, &pl, ran, o->optimize);
    ac_t1_add_step(res, "best approximation found", "max|Softmax - P| (written weights)",
                   res->weights_cert.lo, res->weights_cert.hi, res->weights_cert.stage,
                   res->weights_cert.prec, "an upper bound on the achievable error");
out:
    ac_mat_free(&Wk2);
    ac_mat_free(&Wq2);
    return st;
}

int ac_t1_weighted_upper(ac_t1_result *res, const ac_mat *X, const ac_mat *P, size_t r,
                         const ac_t1_opts *o, ac_err *err)
{
    size_t n = X->cols, dk = res->dk, kd = dk * X->rows;
    ac_mat Xp = {0}, Pi = {0}, Wk = {0}, Wq = {0};
    fit_ctx c;
    int st = AC_OK;
    if (!res->Wk.data || r == 0 || res->Wk.rows != dk)
        return AC_OK;
    if (!fit_alloc(&c, X, P, dk)) {
        fit_free(&c);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    double *th = malloc(2 * kd * sizeof(double));
    if (!th) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    memcpy(th, res->Wk.data, kd * sizeof(double));
    memcpy(th + kd, res->Wq.data, kd * sizeof(double));
    double e0 = fit_maxerr(&c, th), e = e0;
    if ((st = ac_mat_copy(&Wk, &res->Wk, err)) || (st = ac_mat_copy(&Wq, &res->Wq, err)) ||
        (st = t1_pinv(&Xp, NULL, X, r, 0.0, err)) || (st = ac_mat_init(&Pi, n, n, err)) ||
        (st = ac_gemm(&Pi, AC_NOTRANS, &Xp, AC_NOTRANS, X, err)) ||
        (st = weighted_truncation(&Wk, &Wq, &e, &c, &Xp, &Pi, P, dk, err)))
        goto out;
    if (e < e0) {
        ac_cert c2;
        if ((st = ac_t1_certify_weights(&c2, X, &Wk, &Wq, P, NULL, o, err)))
            goto out;
        double before = res->weights_cert.hi;
        t1_offer_weights(res, &Wk, &Wq, &c2,
                         "P-weighted truncation (EM) from K Pi log(P) Pi "
                         "(doc/mathematics.md §3.6)",
                         "the constructed head");
        if (res->weights_cert.hi < before)
            ac_t1_add_step(res, "P-weighted truncation", "max|Softmax - P| (written weights)",
                           c2.lo, c2.hi, c2.stage, c2.prec, "a tighter upper end of dist");
    }
out:
    free(th);
    fit_free(&c);
    ac_mat_free(&Xp);
    ac_mat_free(&Pi);
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    return st;
}

int ac_t1_refine_masked(ac_mat *Wk2, ac_mat *Wq2, int *ran, char *why, size_t wlen,
                        const ac_mat *X, const ac_mat *P, const unsigned char *mask,
                        const ac_mat *Wk, const ac_mat *Wq, int iters)
{
    size_t d = X->rows, n = X->cols, dk = Wk->rows;
    refine_plan pl;
    *ran = 0;
    if (iters <= 0) {
        snprintf(why, wlen, "off (optimize = 0)");
        return 0;
    }
    if (2 * dk * d > AC_T1_REFINE_MAX_PARAMS || n > AC_T1_REFINE_MAX_N) {
        snprintf(why, wlen, "skipped: %zu parameters, n = %zu (limits %d, %d)", 2 * dk * d, n,
                 AC_T1_REFINE_MAX_PARAMS, AC_T1_REFINE_MAX_N);
        return 0;
    }
    plan_refinement(&pl, d, n, dk, iters);
    int ok = refine_weights(Wk2, Wq2, ran, X, P, mask, Wk, Wq, &pl);
    if (pl.capped)
        snprintf(why, wlen, "work budget: %d of %d planned iterations run", *ran, pl.planned);
    else
        snprintf(why, wlen, "%d of %d iterations run", *ran, pl.planned);
    return ok;
}
