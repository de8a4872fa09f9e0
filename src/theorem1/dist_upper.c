/* dist_upper.c — candidate heads for the upper end of dist = inf over heads of
 * max|Softmax - P| (doc/mathematics.md §3.6).  Any head is an upper bound,
 * because dist is an infimum; each candidate is certified (attention/head.c)
 * and the best certified one becomes the written weights:
 *   - the zero head Wk = Wq = 0 (uniform softmax columns; a head of every dk);
 *   - the user's head (rep-theorem --wk, --wq), validated and certified;
 *   - for d = 1, the logit weight a found by the branch and bound of
 *     dist_d1.c, written as Wk = e_1, Wq = a sqrt(dk) e_1.
 * ac_t1_tighten runs them and then the lower bounds of dist_lower.c.
 *
 * Dimension letters: d model width, n tokens, dk head size.
 * Buffers are row-major: X d x n, P n x n, Wk/Wq dk x d.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attncheck/theorem1.h"
#include "theorem1/t1_dist.h"
#include "theorem1/t1_impl.h"

/* Work budget of the d = 1 branch and bound, in entry evaluations. */
#define D1_WORK 1e8

void t1_offer_weights(ac_t1_result *res, ac_mat *Wk, ac_mat *Wq, const ac_cert *c,
                      const char *name, const char *head)
{
    if (c->stage == AC_STAGE_NONE || !(c->hi < res->weights_cert.hi))
        return;
    ac_mat_free(&res->Wk);
    ac_mat_free(&res->Wq);
    res->Wk = *Wk;
    res->Wq = *Wq;
    Wk->data = Wq->data = NULL;
    Wk->rows = Wk->cols = Wq->rows = Wq->cols = 0;
    res->weights_cert = *c;
    snprintf(res->upper_method, sizeof res->upper_method, "%s", name);
    snprintf(res->weights_head, sizeof res->weights_head, "%s", head);
    ac_t1_name_weights(res);
}

void ac_t1_name_weights(ac_t1_result *res)
{
    if (res->weights_head[0] == '\0')
        snprintf(res->weights_head, sizeof res->weights_head, "the constructed head");
    if (res->weights_cert.stage != AC_STAGE_NONE)
        snprintf(res->weights_cert.quantity, sizeof res->weights_cert.quantity,
                 "max|Softmax - P| of %s (the written weights)", res->weights_head);
}

/* The user's head: both dk x d, finite. */
static int check_user(const ac_mat *W, const char *name, size_t dk, size_t d, ac_err *err)
{
    if (W->rows != dk || W->cols != d)
        return ac_err_set(err, AC_EDATA,
                                "%s: the head's weights must be dk x d = %zu x %zu, not %zu x %zu",
                                name, dk, d, W->rows, W->cols);
    for (size_t i = 0; i < W->rows * W->cols; i++)
        if (!isfinite(W->data[i]))
            return ac_err_set(err, AC_EDATA, "%s: entry %zu is not finite", name, i);
    return AC_OK;
}

static int candidate_user(ac_t1_result *res, const ac_mat *X, const ac_mat *P,
                          const ac_t1_opts *o, ac_err *err)
{
    const char *nk = o->wkname ? o->wkname : "Wk", *nq = o->wqname ? o->wqname : "Wq";
    ac_mat Wk = {0}, Wq = {0};
    int st;
    if (!o->user_wk || !o->user_wq)
        return AC_OK;
    if ((st = check_user(o->user_wk, nk, res->dk, res->d, err)) ||
        (st = check_user(o->user_wq, nq, res->dk, res->d, err)))
        return st;
    if ((st = ac_mat_copy(&Wk, o->user_wk, err)) || (st = ac_mat_copy(&Wq, o->user_wq, err)) ||
        (st = ac_t1_certify_weights(&res->user_cert, X, &Wk, &Wq, P, NULL, o, err)))
        goto out;
    snprintf(res->user_cert.quantity, sizeof res->user_cert.quantity,
             "max|Softmax - P| of the given head (%.24s, %.24s)", nk, nq);
    ac_t1_add_step(res, "the given head (Wk, Wq)", "max|Softmax - P|", res->user_cert.lo,
                   res->user_cert.hi, res->user_cert.stage, res->user_cert.prec,
                   "dist is at most this");
    char name[160];
    snprintf(name, sizeof name, "the given head (%s, %s)", nk, nq);
    t1_offer_weights(res, &Wk, &Wq, &res->user_cert, name, "the given head");
out:
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    return st;
}

/* Wk = Wq = 0 (dk x d): Softmax(0) has uniform columns. */
static int candidate_zero(ac_t1_result *res, const ac_mat *X, const ac_mat *P,
                          const ac_t1_opts *o, ac_err *err)
{
    ac_mat Wk = {0}, Wq = {0};
    ac_cert c;
    int st;
    if ((st = ac_mat_init(&Wk, res->dk, res->d, err)) ||
        (st = ac_mat_init(&Wq, res->dk, res->d, err)) ||
        (st = ac_t1_certify_weights(&c, X, &Wk, &Wq, P, NULL, o, err)))
        goto out;
    t1_offer_weights(res, &Wk, &Wq, &c, "the zero head (uniform softmax columns)",
                     "the zero head");
out:
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    return st;
}

/* d = 1: Wk = e_1, Wq = a sqrt(dk) e_1 gives the logits a x_i x_j. */
static int candidate_d1(ac_t1_result *res, const ac_mat *X, const ac_mat *P, double a,
                        const ac_t1_opts *o, ac_err *err)
{
    ac_mat Wk = {0}, Wq = {0};
    ac_cert c;
    int st;
    double w = a * sqrt((double)res->dk);
    if (!isfinite(w))
        return AC_OK;
    if ((st = ac_mat_init(&Wk, res->dk, 1, err)) || (st = ac_mat_init(&Wq, res->dk, 1, err)))
        goto out;
    Wk.data[0] = 1;
    Wq.data[0] = w;
    if ((st = ac_t1_certify_weights(&c, X, &Wk, &Wq, P, NULL, o, err)))
        goto out;
    char name[160];
    snprintf(name, sizeof name, "d = 1: logit weight a = %.17g from the branch and bound", a);
    t1_offer_weights(res, &Wk, &Wq, &c, name, "the d = 1 head");
out:
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    return st;
}

int ac_t1_upper_candidates(ac_t1_result *res, const ac_mat *X, const ac_mat *P, int have_a,
                           double a_best, const ac_t1_opts *o, ac_err *err)
{
    int st;
    double before = res->weights_cert.hi;
    res->user_cert.stage = AC_STAGE_NONE;
    if ((st = candidate_user(res, X, P, o, err)))
        return st;
    if (!o->want_weights)
        return AC_OK;
    if ((st = candidate_zero(res, X, P, o, err)))
        return st;
    if (have_a && (st = candidate_d1(res, X, P, a_best, o, err)))
        return st;
    if (res->weights_cert.hi < before)
        ac_t1_add_step(res, "best candidate head", "max|Softmax - P| (written weights)",
                       res->weights_cert.lo, res->weights_cert.hi, res->weights_cert.stage,
                       res->weights_cert.prec, res->upper_method);
    return AC_OK;
}

int ac_t1_tighten(ac_t1_result *res, const ac_mat *X, const ac_mat *P, const ac_t1_opts *o,
                  ac_err *err)
{
    double d1_lo = 0, a = 0, fa = INFINITY;
    int st;
    if (res->upper_method[0] == '\0' && res->weights_cert.stage != AC_STAGE_NONE)
        snprintf(res->upper_method, sizeof res->upper_method, "%s",
                 res->route == AC_T1_ROUTE_CONSTRUCT
                     ? "the construction of paper 1, eqs. (4)-(7)"
                     : "K Pi log(P) Pi, the family member of least rank, truncated to rank "
                       "dk (doc/mathematics.md §3.5)");
    if (X->rows == 1 && res->route == AC_T1_ROUTE_DECIDE)
        ac_t1_d1_search(X, P, D1_WORK, &d1_lo, &a, &fa);
    if ((st = ac_t1_upper_candidates(res, X, P, isfinite(fa), a, o, err)))
        return st;
    if (res->weights_cert.stage != AC_STAGE_NONE && res->weights_cert.hi < res->dist_hi)
        res->dist_hi = res->weights_cert.hi;
    return ac_t1_lower_bounds(res, X, P, d1_lo, o, err);
}
