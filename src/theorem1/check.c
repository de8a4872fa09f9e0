/* check.c — Theorem 1 of paper 1 on one instance (attncheck/theorem1.h):
 * ac_t1_check runs the proof steps by name and decides C(tol) on the
 * enclosure [dist_lo, dist_hi] of dist = inf over heads of max|Softmax - P|
 * (doc/mathematics.md §3.6):
 *   1. validate the instance                             (instance.c)
 *   2. certify the rank of X                             (decide.c)
 *   3. rank X = n <= dk: the paper's construction,
 *      paper 1, eqs. (4)-(7)                             (construct.c)
 *      otherwise: the exact criterion (§3.4) and the
 *      best weights found                                (decide.c, refine.c)
 *   4. the verdict: PROVED iff dist_hi <= tol, REFUTED iff dist_lo > tol,
 *      and at tol = 0 also when P itself is not exactly representable
 *      (doc/mathematics.md §3.4, "tol = 0").
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/blas.h"
#include "attncheck/interval.h"
#include "attncheck/json.h"
#include "attncheck/theorem1.h"
#include "attention/head_impl.h"
#include "core/sum_exact.h"
#include "theorem1/t1_dist.h"
#include "theorem1/t1_impl.h"
#include "theorem1/t1_mask.h"

void ac_t1_opts_default(ac_t1_opts *o)
{
    memset(o, 0, sizeof *o);
    o->tol = AC_T1_TOL_DEFAULT;
    o->sched = ac_schedule_default();
    o->optimize = 200;
    o->want_weights = 1;
}

/* An empty result: nothing decided, dist in [0, +inf], no weights. */
static void result_start(ac_t1_result *res, size_t d, size_t n, size_t dk)
{
    memset(res, 0, sizeof *res);
    res->d = d;
    res->n = n;
    res->dk = dk;
    res->rho_lo = res->rho_hi = NAN;
    res->lowrank_lo = res->lowrank_hi = NAN;
    res->exact = AC_UNDECIDED;
    res->verdict = AC_UNDECIDED;
    res->threshold.lo = res->threshold.hi = -1;
    res->rank_stage = res->rho_stage = res->lowrank_stage = AC_STAGE_NONE;
    res->exact_stage = res->lower_stage = res->refute_stage = AC_STAGE_NONE;
}

/* tol = 0: dist = 0 iff P itself is exactly representable, because the
 * representable P are closed (doc/mathematics.md §3.4, "tol = 0").  So C(0)
 * is refuted by a column of P that does not sum to exactly 1 (no softmax
 * column equals it; §3.6, column sums) or by a refutation of exact
 * representability (P is its own normalisation then), even when no
 * positive lower bound on dist is certified (dist_lo stays what it is). */
static void refute_exact_zero(ac_t1_result *res, const ac_mat *P)
{
    size_t n = P->rows, j = 0;
    while (j < n && ac_sum_is_exactly(P->data + j, n, n, 1.0))
        j++;
    if (j < n) {
        res->cert.stage = AC_STAGE_EXACT;
        res->cert.prec = 0;
        snprintf(res->cert.method, sizeof res->cert.method,
                 "column %zu of P does not sum to exactly 1 (exact sum): dist > 0 "
                 "(doc/mathematics.md §3.6)", j + 1);
    } else if (res->exact == AC_REFUTED) {
        res->cert.stage = res->exact_stage;
        res->cert.prec = res->exact_prec;
        snprintf(res->cert.method, sizeof res->cert.method,
                 "P is not exactly representable, and at tol = 0 the representable P are "
                 "closed: dist > 0 (doc/mathematics.md §3.4)");
    } else {
        return;
    }
    res->cert.verdict = AC_REFUTED;
}

/* The verdict: dist <= tol with dist in [dist_lo, dist_hi]; with P (not
 * NULL) at tol = 0 also refute_exact_zero. */
static void decide_verdict(ac_t1_result *res, const ac_t1_basis *b, const ac_mat *P, double tol,
                           double t_start)
{
    double lo = res->dist_lo, hi = res->dist_hi;
    int by_weights = res->weights_cert.hi <= hi && res->weights_cert.stage != AC_STAGE_NONE;
    ac_cert_set(&res->cert, "dist = inf over heads of max|Softmax - P|", AC_LE, tol, b->stage,
                b->prec, lo, hi,
                b->method[0] ? b->method
                             : "no obstruction certified; upper bound from the written weights");
    if (res->cert.verdict == AC_PROVED && by_weights && res->route != AC_T1_ROUTE_CONSTRUCT) {
        res->cert.stage = res->weights_cert.stage;
        res->cert.prec = res->weights_cert.prec;
        char fb[AC_FMT_BOUND_BUFSIZE];
        snprintf(res->cert.method, sizeof res->cert.method,
                 "%s (the written weights), certified max|Softmax - P| <= %s",
                 res->weights_head, ac_str_hi(fb, ".3g", hi));
    }
    if (res->cert.verdict == AC_REFUTED && res->refute_stage != AC_STAGE_NONE) {
        /* refuted by a lower bound > tol: the certificate names the one of
         * the lowest stage (dist_lo may come from a sharper one) */
        res->cert.stage = res->refute_stage;
        res->cert.prec = res->refute_prec;
        snprintf(res->cert.method, sizeof res->cert.method, "%s", res->refute_method);
    }
    if (res->cert.verdict == AC_UNDECIDED && tol == 0 && P)
        refute_exact_zero(res, P);
    res->verdict = res->cert.verdict;
    res->cert.seconds = ac_seconds() - t_start;
}

/* The computation ran on Xs = 2^s X: weights for X are 2^s times those for
 * Xs (W X = W' Xs).  They are certified again against X itself; if they do
 * not fit in double they are dropped and the verdict rests on the criterion
 * alone. */
static int unscale_weights(ac_t1_result *res, const ac_mat *X, const ac_mat *P, int s,
                           const ac_t1_opts *o, ac_err *err)
{
    if (s == 0 || !res->Wk.data)
        return AC_OK;
    size_t len = res->Wk.rows * res->Wk.cols;
    int ok = 1;
    for (size_t i = 0; i < len && ok; i++) {
        double a = ldexp(res->Wk.data[i], s), b = ldexp(res->Wq.data[i], s);
        ok = isfinite(a) && isfinite(b) && ldexp(a, -s) == res->Wk.data[i] &&
             ldexp(b, -s) == res->Wq.data[i];
        res->Wk.data[i] = a;
        res->Wq.data[i] = b;
    }
    if (!ok) {
        ac_mat_free(&res->Wk);
        ac_mat_free(&res->Wq);
        res->weights_unusable = 1;
        ac_cert_set(&res->weights_cert, "max|Softmax - P| (written weights)", AC_LE, o->tol,
                    AC_STAGE_NONE, 0, 0, INFINITY,
                    "weights exist, but not in double at this scale of X: none written");
        res->weights_cert.verdict = AC_UNDECIDED;
        return AC_OK;
    }
    ac_cert c;
    int st = ac_t1_certify_weights(&c, X, &res->Wk, &res->Wq, P, NULL, o, err);
    if (st) {
        ac_err_clear(err);
        c = res->weights_cert;
        c.lo = 0;
        c.hi = INFINITY;
        c.verdict = AC_UNDECIDED;
    }
    res->weights_cert = c;
    return AC_OK;
}

/* dist_hi from what is certified: the written weights, and exact
 * representability (dist <= the normalisation gap of P). */
static void final_upper_bound(ac_t1_result *res)
{
    double h = INFINITY;
    ac_t1_name_weights(res);
    if (res->weights_cert.stage != AC_STAGE_NONE)
        h = res->weights_cert.hi;
    if (res->exact == AC_PROVED && res->norm_gap < h)
        h = res->norm_gap;
    res->dist_hi = h;
    if (res->rank == 0 && res->weights_cert.stage != AC_STAGE_NONE)
        res->dist_lo = res->weights_cert.lo; /* every head is the zero head */
}

/* Everything after validation, on Xs = 2^s X. */
static int check_scaled(ac_t1_result *res, ac_t1_basis *basis, const ac_mat *X,
                        const ac_mat *Xs, const ac_mat *P, const ac_t1_opts *o, ac_err *err)
{
    size_t n = X->cols, dk = res->dk, *piv = NULL;
    ac_mat Y = {0};
    ac_imat YX = {0};
    int st;
    if ((st = ac_t1_certify_rank(res, &Y, &YX, &piv, Xs, o, err)))
        goto out;
    if (res->rank == (long)n && dk >= n) {
        st = ac_t1_route_construct(res, basis, Xs, P, &Y, &YX, o, err);
        if (!st)
            ac_t1_threshold_full_rank(res, P, o);
    } else if (res->rank >= 0)
        st = ac_t1_route_decide(res, basis, Xs, P, piv, o, err);
    else {
        res->route = AC_T1_ROUTE_DECIDE;
        snprintf(res->exact_method, sizeof res->exact_method,
                 "the rank of X is not certified");
        snprintf(res->summary, sizeof res->summary,
                 "the rank of X could not be certified (too large for exact elimination and not "
                 "full)");
    }
    if (!st && res->exact != AC_UNDECIDED && res->exact_stage == AC_STAGE_NONE) {
        /* decided by a theorem on the certified rank (or by exact facts) */
        res->exact_stage = res->rank_stage != AC_STAGE_NONE ? res->rank_stage : AC_STAGE_EXACT;
        res->exact_prec = res->rank_stage != AC_STAGE_NONE ? res->rank_prec : 0;
    }
    if (!st && res->sigma_lo > 0 && res->x_scale != 0)
        res->sigma_lo = fmax(0.0, ac_dn(ldexp(res->sigma_lo, -res->x_scale)));
    if (!st)
        st = unscale_weights(res, X, P, res->x_scale, o, err);
    if (!st && res->rank >= 0) /* candidate heads and lower bounds (dist_upper.c, dist_lower.c) */
        st = ac_t1_tighten(res, X, P, o, err);
    if (!st) {
        final_upper_bound(res);
        if (res->route == AC_T1_ROUTE_DECIDE && res->rank >= 0)
            ac_t1_decide_summary(res, o);
    }
out:
    free(piv);
    ac_imat_free(&YX);
    ac_mat_free(&Y);
    return st;
}

/* A masked head (doc/mathematics.md §3.8, mask_check.c), single-threaded
 * BLAS as below. */
static int check_masked(ac_t1_result *res, const ac_mat *X, const ac_mat *P, const ac_t1_opts *o,
                        ac_t1_instance *in, double t_start, ac_err *err)
{
    ac_t1_basis basis = {AC_STAGE_NONE, 0, ""};
    int threads = ac_blas_get_threads();
    ac_blas_set_threads(1);
    int st = in ? ac_t1_route_masked_instance(res, &basis, in, o, err)
                : ac_t1_route_masked(res, &basis, X, P, o, err);
    ac_blas_set_threads(threads);
    if (!st)
        decide_verdict(res, &basis, NULL, o->tol, t_start); /* no tol = 0 rule (§3.4 is unmasked) */
    return st;
}

/* Heads with biases and no mask: unbiased heads on [X; 1'] (doc/mathematics.md
 * §3.8, Lemma B), by the unmasked routes; the weights are dk x (d + 1). */
static int check_biased(ac_t1_result *res, const ac_mat *X, const ac_mat *P, const ac_t1_opts *o,
                        ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    ac_mat Xb = {0};
    ac_t1_opts ob = *o;
    int st;
    if (n == 0 || d == 0) /* the message of ac_t1_validate */
        return ac_t1_validate(X, o->xname ? o->xname : "X", P, o->pname ? o->pname : "P", NULL,
                              0, NULL, o->dk ? o->dk : d, err);
    if ((st = ac_mat_init(&Xb, d + 1, n, err)))
        return st;
    memcpy(Xb.data, X->data, d * n * sizeof(double));
    for (size_t j = 0; j < n; j++)
        AC_MAT(&Xb, d, j) = 1.0;
    ob.bias = 0;
    ob.dk = o->dk ? o->dk : d;
    st = ac_t1_check(res, &Xb, P, &ob, err);
    res->bias = 1;
    res->d = d;
    ac_mat_free(&Xb);
    return st;
}

int ac_t1_check(ac_t1_result *res, const ac_mat *X, const ac_mat *P, const ac_t1_opts *opts,
                ac_err *err)
{
    return t1_check_instance(res, X, P, opts, NULL, err);
}

int t1_check_instance(ac_t1_result *res, const ac_mat *X, const ac_mat *P, const ac_t1_opts *opts,
                      ac_t1_instance *in, ac_err *err)
{
    ac_t1_opts defaults;
    const ac_t1_opts *o = opts ? opts : (ac_t1_opts_default(&defaults), &defaults);
    size_t d = X->rows, n = X->cols, dk = o->dk ? o->dk : d;
    ac_mat Xs = {0};
    ac_t1_basis basis = {AC_STAGE_DOUBLE, 53, ""};
    double t_start = ac_seconds();
    int st;
    result_start(res, d, n, dk);
    if (o->mask)
        return check_masked(res, X, P, o, in, t_start, err);
    if (o->bias)
        return check_biased(res, X, P, o, err);
    if ((st = ac_t1_validate(X, o->xname ? o->xname : "X", P, o->pname ? o->pname : "P", o->d0,
                             o->d0 ? o->nd0 : 0, o->d0name ? o->d0name : "D0", dk, err)))
        return st;
    res->norm_gap = t1_normalisation_gap_rows(P); /* = ac_t1_normalisation_gap(P) */
    res->dist_lo = 0;
    res->dist_hi = INFINITY;
    ac_cert_set(&res->weights_cert, "max|Softmax - P| (written weights)", AC_LE, o->tol,
                AC_STAGE_NONE, 0, 0, INFINITY, "no weights constructed");
    res->weights_cert.verdict = AC_UNDECIDED;
    if ((st = ac_t1_scale_pow2(&Xs, &res->x_scale, X, err)))
        return st;
    /* every BLAS and LAPACK call single-threaded: a threaded BLAS sums in an
     * order that depends on the thread count, and these results feed the
     * verdict and the written weights (doc/mathematics.md §7) */
    int threads = ac_blas_get_threads();
    ac_blas_set_threads(1);
    st = check_scaled(res, &basis, X, Xs.data ? &Xs : X, P, o, err);
    ac_blas_set_threads(threads);
    if (!st)
        decide_verdict(res, &basis, P, o->tol, t_start);
    ac_mat_free(&Xs);
    return st;
}
