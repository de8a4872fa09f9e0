/* rank_x.c — the input X of Theorem 1 (paper 1): its scale and its rank
 * (doc/mathematics.md §2.5, §3.4).
 *
 *   - ac_t1_scale_pow2: X scaled by a power of two so that its largest entry
 *     is in [1/2, 1).  Representability is scale invariant (the logits
 *     X'AX absorb 2^{2s} into A), the scaling is exact, and the weights
 *     found for 2^s X become weights for X by the exact factor 2^s.
 *   - ac_t1_certify_rank: full rank by a certified left inverse, else the
 *     exact rank (fraction-free elimination) of X with each column scaled
 *     by a power of two (the rank and the independent rows do not change,
 *     and the integers of the elimination stay short), else full rank
 *     modulo a prime.
 *
 * Dimension letters: d model width, n tokens, r = rank X.  X is d x n,
 * row-major.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/json.h"
#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "core/linalg_lu.h"
#include "theorem1/t1_impl.h"

/* ---- scaling by powers of two ---------------------------------------------- */

/* Is y = 2^s x exact and finite for every entry (so that 2^-s y = x)? */
static int scale_is_exact(const double *x, size_t len, size_t stride, int s)
{
    for (size_t i = 0; i < len; i++) {
        double v = x[i * stride], w = ldexp(v, s);
        if (!isfinite(w) || ldexp(w, -s) != v)
            return 0;
    }
    return 1;
}

/* The exponent s with max|x| 2^s in [1/2, 1) (0 for x = 0). */
static int pow2_normaliser(const double *x, size_t len, size_t stride)
{
    double m = 0;
    for (size_t i = 0; i < len; i++)
        m = fmax(m, fabs(x[i * stride]));
    if (!(m > 0) || !isfinite(m))
        return 0;
    int e;
    frexp(m, &e); /* m = f 2^e, f in [1/2, 1) */
    return -e;
}

int ac_t1_scale_pow2(ac_mat *Xs, int *s_out, const ac_mat *X, ac_err *err)
{
    size_t len = X->rows * X->cols;
    int s = pow2_normaliser(X->data, len, 1), st;
    /* moderate scales are left alone: every step below is accurate there,
     * and the output does not change for ordinary inputs */
    if (s > -AC_T1_SCALE_FREE && s < AC_T1_SCALE_FREE)
        s = 0;
    if (s != 0 && !scale_is_exact(X->data, len, 1, s))
        s = 0; /* entries span more than the exponent range: keep X as it is */
    *s_out = s;
    *Xs = (ac_mat){0};
    if (s == 0)
        return AC_OK; /* X itself: no copy (n^2 doubles fewer at the peak) */
    if ((st = ac_mat_copy(Xs, X, err)))
        return st;
    for (size_t i = 0; i < len; i++)
        Xs->data[i] = ldexp(Xs->data[i], s);
    return AC_OK;
}

/* X with column j scaled by 2^{s_j} (max of the column in [1/2, 1)) where
 * that is exact: same rank and same independent rows as X. */
static int scale_columns(ac_mat *Xc, const ac_mat *X, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    int st;
    if ((st = ac_mat_copy(Xc, X, err)))
        return st;
    for (size_t j = 0; j < n; j++) {
        int s = pow2_normaliser(X->data + j, d, n);
        if (s == 0 || !scale_is_exact(X->data + j, d, n, s))
            continue;
        for (size_t i = 0; i < d; i++)
            AC_MAT(Xc, i, j) = ldexp(AC_MAT(X, i, j), s);
    }
    return AC_OK;
}

/* ---- the rank of X (doc/mathematics.md §2.5) ------------------------------ */

/* 1. Full rank p = min(d, n) by a certified left inverse (stage 0):
 * X^+ X = I (d >= n, Y = X^+ kept) or (X')^+ X' = I (d < n).  Sets
 * res->rank = p when it succeeds. */
static int rank_left_inverse(ac_t1_result *res, ac_mat *Y, ac_imat *YX, const ac_mat *X,
                             ac_err *err)
{
    size_t d = X->rows, n = X->cols, p = d < n ? d : n;
    ac_mat Xt = {0}, Yt = {0};
    const ac_mat *A = X;
    double qlo, qhi, slo;
    int st;
    if (d < n) {
        if ((st = ac_mat_init(&Xt, n, d, err)))
            return st;
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < n; j++)
                AC_MAT(&Xt, j, i) = AC_MAT(X, i, j);
        A = &Xt;
    }
    ac_mat *Yp = (d >= n) ? Y : &Yt;
    /* square X: the LU inverse in fixed panels over the OpenMP threads (the
     * same bits for any thread count); LAPACK's LU and QR if it fails */
    if ((d != n || ac_inverse_lu_panels(Yp, A, 0, NULL) != AC_OK) &&
        ac_approx_pinv_fullcol(Yp, A, NULL) != AC_OK) {
        ac_mat_free(Yp);
        st = AC_OK; /* rank deficient or LAPACK gave up: the exact routes follow */
        goto out;
    }
    if ((st = ac_cert_left_inverse(Yp, A, &qlo, &qhi, &slo, d >= n ? YX : NULL, err)))
        goto out;
    ac_t1_add_step(res, d >= n ? "step 1: X^+ X = I" : "rank: (X')^+ X' = I",
                   d >= n ? "||X^+ X - I||_F" : "||(X')^+ X' - I||_F", qlo, qhi,
                   AC_STAGE_DOUBLE, 53,
                   qhi < 1 ? "< 1, so X has full rank and sigma_min(X) >= (1 - q)/||X^+||_F"
                           : "not < 1: full rank not certified by the left inverse");
    if (qhi < 1) {
        res->rank = (long)p;
        res->rank_stage = AC_STAGE_DOUBLE;
        res->rank_prec = 53;
        res->sigma_lo = slo;
        char fb[AC_FMT_BOUND_BUFSIZE];
        snprintf(res->rank_method, sizeof res->rank_method,
                 "left inverse, ||YX - I||_F <= %s < 1 (stage 0)", ac_str_hi(fb, ".3g", qhi));
    }
out:
    ac_mat_free(&Xt);
    ac_mat_free(&Yt);
    return st;
}

int ac_t1_certify_rank(ac_t1_result *res, ac_mat *Y, ac_imat *YX, size_t **piv_out,
                       const ac_mat *X, const ac_t1_opts *o, ac_err *err)
{
    size_t d = X->rows, n = X->cols, p = d < n ? d : n;
    ac_mat Xc = {0};
    size_t *piv = NULL;
    long rk = -1;
    int st;
    *piv_out = NULL;
    res->rank = -1;
    res->sigma_lo = 0;
    if ((st = rank_left_inverse(res, Y, YX, X, err)) || res->rank >= 0)
        goto out;
    /* 2. exact rank with independent rows, on the column-scaled X */
    if ((st = scale_columns(&Xc, X, err)))
        goto out;
    piv = malloc((d ? d : 1) * sizeof(size_t));
    if (!piv) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if ((st = ac_rank_exact(&Xc, o->max_rank_work, &rk, piv, err)))
        goto out;
    if (rk >= 0) {
        res->rank = rk;
        res->rank_stage = AC_STAGE_EXACT;
        res->rank_prec = 0;
        snprintf(res->rank_method, sizeof res->rank_method,
                 "exact rational elimination (FLINT)");
        ac_t1_add_step(res, "rank X (exact)", "rank X", (double)rk, (double)rk, AC_STAGE_EXACT,
                       0, "fraction-free Gaussian elimination on the exact doubles");
        *piv_out = piv;
        piv = NULL;
        goto out;
    }
    /* 3. rank mod p: a lower bound, enough to prove full rank */
    if ((st = ac_rank_lower_modp(&Xc, &rk, err)))
        goto out;
    if (rk == (long)p) {
        res->rank = rk;
        res->rank_stage = AC_STAGE_EXACT;
        res->rank_prec = 0;
        snprintf(res->rank_method, sizeof res->rank_method, "exact rank modulo a 61-bit prime");
        ac_t1_add_step(res, "rank X (mod p)", "rank X mod p", (double)rk, (double)rk,
                       AC_STAGE_EXACT, 0, "rank over Q >= rank mod p = min(d, n)");
    }
out:
    free(piv);
    ac_mat_free(&Xc);
    if (d >= n && res->rank != (long)n)
        ac_mat_free(Y);
    return st;
}
