/* construct.c — route CONSTRUCT of Theorem 1: rank X = n <= dk, the paper's
 * construction (paper 1, proof of Theorem 1, eqs. (4)-(7);
 * doc/mathematics.md §3.2), with each identity of the proof traced by a
 * certified residual.
 *
 *   Wk = [X^+; 0], Wq = [Wkq~ X^+; 0], so (Wk X)^T (Wq X) = Wkq~ (paper 1, eq. (4))
 *   Wkq~ = sqrt(dk) log(P D0)                                   (paper 1, eq. (6))
 *   1^T exp(Wkq~ / sqrt(dk)) = 1^T P D0 = diag(D0)              (paper 1, eq. (7))
 * so the softmax normaliser is D0 and Softmax(Wkq~/sqrt(dk)) = P, the fixed
 * point of paper 1, eq. (5).
 *
 * Dimension letters: d model width, n tokens, dk head size.  Buffers are
 * row-major: X d x n, X^+ n x d, P and Wkq~ n x n, Wk/Wq dk x d.
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/interval.h"
#include "attncheck/json.h"
#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "attention/head_impl.h"
#include "core/imat_cs.h"
#include "core/imat_split.h"
#include "theorem1/t1_impl.h"

#define EQ4_PANEL 128 /* columns of the logits traced at a time */
#define WQ_BLOCK 256  /* rows of Wq formed per BLAS call */
#define EQ4_BOUND_MARGIN 2 /* S without a product when it fits under tol / this */

/* Wt = Wkq~ = sqrt(dk) log(P D0) (paper 1, eq. (6)); Wk = [X^+; 0],
 * Wq = [Wt X^+; 0] (Wk~ = I, Wq~ = Wt in the paper's Wk = Wk~ X^+,
 * Wq = Wq~ X^+).  Y = X^+ (n x d) becomes Wk (its buffer when dk = n, no
 * copy; a zeroed dk x d buffer holding it when dk > n; *Y is empty
 * afterwards).  Row-major, the first n rows of Wq are
 * a prefix: the product is written there directly. */
static int construct_weights(ac_t1_result *res, ac_mat *Wt, ac_mat *Y, const ac_mat *P,
                             const double *d0, size_t dk, ac_err *err)
{
    size_t n = P->rows, d = Y->cols;
    int st;
    double sq = sqrt((double)dk);
    if ((st = ac_mat_init(Wt, n, n, err)))
        return st;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            AC_MAT(Wt, i, j) = sq * (log(AC_MAT(P, i, j)) + (d0 ? log(d0[j]) : 0.0));
    if ((st = ac_mat_init(&res->Wq, dk, d, err)))
        return st;
    /* Wq's first n rows = Wt Y by fixed blocks of rows, shared out over the
     * OpenMP threads (single-threaded BLAS inside: the same bits for any
     * thread count) */
    size_t nb = (n + WQ_BLOCK - 1) / WQ_BLOCK;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (size_t b = 0; b < nb; b++) {
        size_t i0 = b * WQ_BLOCK, m = n - i0 < WQ_BLOCK ? n - i0 : WQ_BLOCK;
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, m, d, n, 1.0, Wt->data + i0 * n, n, Y->data, d, 0.0,
                 res->Wq.data + i0 * d, d);
    }
    if (dk > n) {
        /* a fresh zeroed buffer (dk x d fits: Wq of that size exists), not
         * realloc + memset: the zero rows then stay untouched pages, which
         * matters for tall X (d = 4096, n = 2, dk = d: 134 MB of zeros) */
        double *g = calloc(dk * d, sizeof(double));
        if (!g)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        memcpy(g, Y->data, n * d * sizeof(double));
        free(Y->data);
        Y->data = g;
    }
    res->Wk = (ac_mat){dk, d, Y->data};
    *Y = (ac_mat){0};
    return AC_OK;
}


/* Panel buffers of trace_eq4: w <= EQ4_PANEL columns at a time, and the
 * norms the radii are made of (n, r, 2n doubles). */
typedef struct {
    ac_imat Q, S;                  /* r x w, n x w */
    double *llo, *lhi, *plo, *phi; /* n x w each */
    double *xn, *wn, *kn;          /* ||X_:,j||, ||Wq_i,:||, ac_nearid_norms of K */
    double *own;                   /* the buffer of xn, wn, kn (other threads share panel 0's) */
} eq4_panel;

static void eq4_free(eq4_panel *b)
{
    free(b->llo);
    free(b->own);
    ac_imat_free(&b->Q);
    ac_imat_free(&b->S);
}

static int eq4_alloc(eq4_panel *b, size_t r, size_t n, size_t w, ac_err *err)
{
    int st;
    memset(b, 0, sizeof *b);
    b->llo = malloc((n * w > 0 ? 4 * n * w : 1) * sizeof(double));
    b->xn = b->own = malloc((3 * n + r + 1) * sizeof(double));
    if (!b->llo || !b->xn) {
        eq4_free(b);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    b->lhi = b->llo + n * w;
    b->plo = b->lhi + n * w;
    b->phi = b->plo + n * w;
    b->wn = b->xn + n;
    b->kn = b->wn + r;
    if ((st = ac_imat_init(&b->Q, r, w, 1, err)) || (st = ac_imat_init(&b->S, n, w, 1, err)))
        eq4_free(b);
    return st;
}

/* The running maxima of trace_eq4 over the panels. */
typedef struct {
    double e4, e4lo, plo, phi;
    int ok;
} eq4_acc;

/* How S = K^T Q is enclosed in a panel of trace_eq4. */
enum {
    EQ4_BOUND,  /* S = Q + (K - I)^T Q by norms, no product (r = n only) */
    EQ4_PRODUCT /* one dgemm K^T Q, radius by norms */
};

/* One row of a panel of trace_eq4: the logit bounds ll, lh of S / sqrt(dk)
 * (1/sqrt(dk) in [s_lo, s_hi]) and the running maxima, on the bits of
 * non-negative doubles (the same order as the values), of
 * e4 = up|S - Wt| (NaN: +inf) and e4lo = the certain part of |S - Wt|
 * (NaN ignored, at least 0): integer maxima, so that the loop vectorises. */
static void eq4_row(const double *restrict sm, const double *restrict sr,
                    const double *restrict wt, size_t w, double s_lo, double s_hi,
                    double *restrict ll, double *restrict lh, uint64_t *m4_io,
                    uint64_t *m4lo_io)
{
    uint64_t m4 = *m4_io, m4lo = *m4lo_io;
    /* two passes over the row (in L1), one integer maximum each: gcc 12
     * vectorises one such reduction per loop */
    for (size_t j = 0; j < w; j++) {
        double t = wt[j], a = ac_sub_dn(sm[j], sr[j]), c = ac_add_up(sm[j], sr[j]);
        double dup = ac_add_up(ac_up(fabs(sm[j] - t)), sr[j]);
        dup = dup == dup ? dup : INFINITY;
        uint64_t bd;
        memcpy(&bd, &dup, sizeof bd);
        m4 = bd > m4 ? bd : m4;
        ll[j] = a >= 0 ? ac_mul_dn(a, s_lo) : ac_mul_dn(a, s_hi);
        lh[j] = c >= 0 ? ac_mul_up(c, s_hi) : ac_mul_up(c, s_lo);
    }
    for (size_t j = 0; j < w; j++) {
        double t = wt[j], a = ac_sub_dn(sm[j], sr[j]), c = ac_add_up(sm[j], sr[j]);
        double x = ac_sub_dn(a, t), y = ac_sub_dn(t, c);
        double z = y == y ? y : x; /* fmax(x, y), then at least 0 (NaN: 0) */
        z = x > z ? x : z;
        z = z == z ? z : 0;
        uint64_t bz;
        memcpy(&bz, &z, sizeof bz);
        bz &= ~(uint64_t)((int64_t)bz >> 63); /* a negative z (sign bit set) counts as 0 */
        m4lo = bz > m4lo ? bz : m4lo;
    }
    *m4_io = m4;
    *m4lo_io = m4lo;
}

/* One panel (columns j0..j0+w-1) of trace_eq4: Q = Wq X (skipped when
 * have_q: b->Q already holds it) and S = K^T Q by the norm-bounded products
 * (doc/mathematics.md §2.3), the deviation of S from Wt, the logits
 * S / sqrt(dk), their softmax bounds and the deviation from P. */
static int eq4_panel_run(eq4_panel *b, eq4_acc *acc, const ac_imat *Kp, size_t r,
                         const ac_mat *X, const ac_mat *Wq, const ac_mat *Wt, const ac_mat *P,
                         size_t dk, size_t j0, size_t w, int mode, int have_q, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    double s_lo = ac_div_dn(1.0, ac_sqrt_up((double)dk));
    double s_hi = ac_div_up(1.0, ac_sqrt_dn((double)dk));
    int st;
    b->Q.cols = b->S.cols = w;
    /* without a product, S's midpoint is Q's: shared, not copied */
    ac_imat Sv = {n, w, mode == EQ4_BOUND ? b->Q.mid : b->S.mid, b->S.rad};
    if ((!have_q && (st = ac_mul_cs(b->Q.mid, b->Q.rad, w, Wq->data, r, d, X->data + j0, d, w, n,
                                    b->wn, b->xn + j0, 0, err))) ||
        (st = mode == EQ4_BOUND ? ac_imat_tn_nearid_bound(&Sv, b->kn, &b->Q, err)
              : r == n          ? ac_imat_mul_tn_nearid(&b->S, Kp, b->kn, &b->Q, 0, err)
                                : ac_imat_mul(&b->S, AC_TRANS, Kp, AC_NOTRANS, &b->Q, err)))
        return st;
    uint64_t m4 = 0, m4lo = 0;
    for (size_t i = 0; i < n; i++)
        eq4_row(Sv.mid + i * w, Sv.rad + i * w, Wt->data + i * n + j0, w, s_lo, s_hi,
                b->llo + i * w, b->lhi + i * w, &m4, &m4lo);
    double e4, e4lo;
    memcpy(&e4, &m4, sizeof e4);
    memcpy(&e4lo, &m4lo, sizeof e4lo);
    acc->e4 = !(e4 <= acc->e4) ? e4 : acc->e4;
    acc->e4lo = fmax(acc->e4lo, e4lo);
    acc->ok &= ac_softmax_col_enclose(b->llo, b->lhi, n, w, b->plo, b->phi);
    for (size_t i = 0; i < n; i++) {
        double l, h;
        ac_head_maxdev_from_bounds(b->plo + i * w, b->phi + i * w, P->data + i * n + j0, w, &l, &h);
        acc->plo = fmax(acc->plo, l);
        acc->phi = !(h <= acc->phi) ? (h == h ? h : INFINITY) : acc->phi;
    }
    return AC_OK;
}

/* Panels 1.. of trace_eq4 (panel 0 is done: it chose K), shared out over
 * the OpenMP threads, each with its own buffers and maxima.  The panels are
 * fixed (EQ4_PANEL columns), every BLAS call inside is single-threaded, and
 * maxima combine exactly in any order: the result is the same bits for any
 * thread count. */
static int eq4_rest(eq4_panel *b0, eq4_acc *acc, const ac_imat *Kp, size_t r, const ac_mat *X,
                    const ac_mat *Wq, const ac_mat *Wt, const ac_mat *P, size_t dk, size_t w0,
                    int mode, ac_err *err)
{
    size_t n = X->cols, np = (n + w0 - 1) / w0;
    int nt = 1;
    if (np < 2)
        return AC_OK;
#ifdef _OPENMP
    nt = omp_get_max_threads();
    nt = (size_t)nt > np - 1 ? (int)(np - 1) : (nt < 1 ? 1 : nt);
#endif
    eq4_panel *bs = calloc((size_t)nt, sizeof *bs);
    eq4_acc *as = calloc((size_t)nt, sizeof *as);
    int *sts = calloc((size_t)nt, sizeof *sts), st = AC_OK;
    if (!bs || !as || !sts) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    bs[0] = *b0;
    for (int t = 0; t < nt; t++) {
        as[t] = (eq4_acc){0, 0, 0, 0, 1};
        if (t > 0) {
            if ((st = eq4_alloc(&bs[t], r, n, w0, err))) {
                nt = t; /* free what exists */
                goto out;
            }
            bs[t].xn = b0->xn;
            bs[t].wn = b0->wn;
            bs[t].kn = b0->kn;
        }
    }
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
    for (size_t p = 1; p < np; p++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        size_t j0 = p * w0, w = n - j0 < w0 ? n - j0 : w0;
        if (!sts[t])
            sts[t] = eq4_panel_run(&bs[t], &as[t], Kp, r, X, Wq, Wt, P, dk, j0, w, mode, 0, NULL);
    }
    for (int t = 0; t < nt; t++) {
        if (sts[t] && !st)
            st = ac_err_set(err, sts[t], "the trace of paper 1, eq. (4) failed (out of memory?)");
        acc->e4 = !(as[t].e4 <= acc->e4) ? as[t].e4 : acc->e4;
        acc->e4lo = fmax(acc->e4lo, as[t].e4lo);
        acc->plo = fmax(acc->plo, as[t].plo);
        acc->phi = !(as[t].phi <= acc->phi) ? as[t].phi : acc->phi;
        acc->ok &= as[t].ok;
    }
out:
    if (bs) {
        b0->Q = bs[0].Q; /* panel 0's buffers go back (their cols may have changed) */
        b0->S = bs[0].S;
        for (int t = 1; t < nt; t++)
            eq4_free(&bs[t]);
    }
    free(bs);
    free(as);
    free(sts);
    return st;
}

/* K = Wk X (r x n with a radius, allocated by the caller) by split products, in panels of columns
 * (doc/mathematics.md §2.3, "Split products"), shared out over the OpenMP
 * threads: A1 B1 is exact and the rest of each entry does not depend on the
 * panel's thread, so the bits do not depend on the thread count. */
static int split_k(ac_imat *K, const ac_mat *Wk, size_t r, const ac_mat *X, size_t w0,
                   ac_err *err)
{
    size_t d = X->rows, n = X->cols, np = (n + w0 - 1) / w0;
    int bad = AC_OK;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(max : bad)
#endif
    for (size_t p = 0; p < np; p++) {
        size_t j0 = p * w0, w = n - j0 < w0 ? n - j0 : w0;
        ac_split s = {0};
        int e = ac_split_cols(&s, X->data + j0, d, w, n, NULL);
        if (!e)
            e = ac_mul_split(K->mid + j0, K->rad + j0, n, Wk->data, r, d, &s, NULL);
        ac_split_free(&s);
        bad = e > bad ? e : bad;
    }
    if (bad)
        return ac_err_set(err, bad, "split product of X^+ X failed (out of memory or non-finite)");
    return AC_OK;
}

/* Trace of paper 1, eq. (4) for the written weights: the stage-0 logits of
 * the head against Wt; the same interval products give the stage-0
 * enclosure pre[0..1] of max|Softmax - P| (the final identity).  Computed
 * in panels of EQ4_PANEL columns (the softmax groups are the columns), so
 * its memory is O(n) columns, not 6 n^2.  K = X^+ X is the rank step's
 * enclosure.  The first panel chooses, in this order: S = Q + (K - I)^T Q
 * bounded by norms, no product, if that fits under tol / EQ4_BOUND_MARGIN;
 * else the product K^T Q if that fits under tol; else (its gamma_k radius
 * grows like n^2 u times the weights) K is enclosed again by split
 * products, once, and the trace restarts with the product.  The choice
 * depends on the data only, never on the thread count. */
static int trace_eq4(ac_t1_result *res, double *pre, const ac_mat *X, const ac_mat *Wt,
                     const ac_mat *P, size_t dk, ac_imat *YX, double tol, ac_err *err)
{
    size_t d = X->rows, n = X->cols, w0 = n < EQ4_PANEL ? n : EQ4_PANEL;
    size_t r = ac_head_live_rows(&res->Wk, &res->Wq); /* <= n: Wk = [X^+; 0] */
    ac_imat K = {0};
    const ac_imat *Kp;
    eq4_panel b = {0};
    eq4_acc acc = {0, 0, 0, 0, 1};
    int st, split = 0;
    /* K = Wk X = [X^+ X; 0]: its first r rows, already enclosed by the rank step */
    if (YX && YX->mid && YX->rows == n && YX->cols == n && r <= n) {
        K = (ac_imat){r, n, YX->mid, YX->rad};
        Kp = &K;
    } else {
        ac_mat Wkr = {r, d, res->Wk.data};
        ac_imat Xi = ac_imat_view(X), Wki = ac_imat_view(&Wkr);
        if ((st = ac_imat_init(&K, r, n, 1, err)) ||
            (st = ac_imat_mul(&K, AC_NOTRANS, &Wki, AC_NOTRANS, &Xi, err)))
            goto out;
        Kp = &K;
    }
    if ((st = eq4_alloc(&b, r, n, w0, err)))
        goto out;
    ac_colnorms_up(b.xn, X->data, d, n, n, 0);
    ac_rownorms_up(b.wn, res->Wq.data, r, d, d);
    if (r == n)
        ac_nearid_norms(b.kn, Kp);
    /* panel 0 first: it decides how S = K^T Q is enclosed.  With r = n, by
     * norms without a product when that fits under tol / EQ4_BOUND_MARGIN
     * (K's midpoint is then about as close to I as its radius is wide),
     * else by the product K^T Q */
    int mode = EQ4_PRODUCT, have_q = 0;
    if (r == n && r > 0) {
        if ((st = eq4_panel_run(&b, &acc, Kp, r, X, &res->Wq, Wt, P, dk, 0, w0, EQ4_BOUND, 0,
                                err)))
            goto out;
        if (acc.phi <= tol / EQ4_BOUND_MARGIN)
            mode = EQ4_BOUND; /* panel 0 is done: acc keeps its maxima */
        else
            acc = (eq4_acc){0, 0, 0, 0, 1}; /* panel 0 again, with the product */
        have_q = 1;
    }
    if (mode == EQ4_PRODUCT &&
        (st = eq4_panel_run(&b, &acc, Kp, r, X, &res->Wq, Wt, P, dk, 0, w0, mode, have_q, err)))
        goto out;
    if (mode == EQ4_PRODUCT && r == n && r > 0 && !(acc.phi <= tol)) {
        /* the first panel does not fit: a tighter K, and start again.  The
         * rank step's YX encloses the same product X^+ X (Wk's first n rows
         * are that Y): the tighter enclosure overwrites it in place */
        if (K.mid == (YX ? YX->mid : NULL) && YX->rad) {
            if ((st = split_k(YX, &res->Wk, r, X, w0, err)))
                goto out;
            K = (ac_imat){r, n, YX->mid, YX->rad};
        } else {
            if (K.mid == (YX ? YX->mid : NULL))
                K = (ac_imat){0};
            else
                ac_imat_free(&K);
            if ((st = ac_imat_init(&K, r, n, 1, err)) || (st = split_k(&K, &res->Wk, r, X, w0, err)))
                goto out;
        }
        Kp = &K;
        ac_nearid_norms(b.kn, &K);
        acc = (eq4_acc){0, 0, 0, 0, 1};
        split = 1;
        if ((st = eq4_panel_run(&b, &acc, Kp, r, X, &res->Wq, Wt, P, dk, 0, w0, mode, 1, err)))
            goto out;
    }
    if ((st = eq4_rest(&b, &acc, Kp, r, X, &res->Wq, Wt, P, dk, w0, mode, err)))
        goto out;
    ac_t1_add_step(res, "paper 1, eq. (4): X'Wk'WqX = Wk~'Wq~", "max|(Wk X)'(Wq X) - Wkq~|",
                   acc.e4lo, acc.e4, AC_STAGE_DOUBLE, 53,
                   split ? "X^+ cancels X: the logits are the chosen Wkq~ (paper 1, eq. (4)); "
                           "X^+ X by split products"
                   : mode == EQ4_BOUND
                       ? "X^+ cancels X: the logits are the chosen Wkq~ (paper 1, eq. (4)); "
                         "(X^+ X - I)'(Wq X) bounded by norms"
                       : "X^+ cancels X: the logits are the chosen Wkq~ (paper 1, eq. (4))");
    /* stage 0 of the final identity from the same logits */
    pre[0] = acc.ok ? acc.plo : 0;
    pre[1] = acc.ok ? acc.phi : INFINITY;
out:
    eq4_free(&b);
    if (K.mid != (YX ? YX->mid : NULL))
        ac_imat_free(&K);
    return st;
}

/* Trace of paper 1, eq. (7): the column sums of exp(Wkq~/sqrt(dk)) equal
 * the diagonal of D0, each enclosed with the rigorous exp and 1/sqrt(dk)
 * rounded outward. */
static int trace_eq7(ac_t1_result *res, const ac_mat *Wt, const double *d0, size_t dk,
                     ac_err *err)
{
    size_t n = Wt->rows;
    double s_lo = ac_div_dn(1.0, ac_sqrt_up((double)dk)),
           s_hi = ac_div_up(1.0, ac_sqrt_dn((double)dk));
    double e7 = 0, e7lo = 0;
    int oom = 0;
    /* columns shared out over the OpenMP threads; maxima combine exactly */
#ifdef _OPENMP
#pragma omp parallel reduction(max : e7, e7lo, oom)
#endif
    {
        double *el = malloc((n ? 5 * n : 1) * sizeof(double));
        double *eh = el + n, *xa = eh + n, *xb = xa + n, *tmp = xb + n;
        oom = !el;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (size_t j = 0; j < n; j++) {
            if (!el)
                continue;
            for (size_t i = 0; i < n; i++) {
                double w = Wt->data[i * n + j];
                xa[i] = w >= 0 ? ac_mul_dn(w, s_lo) : ac_mul_dn(w, s_hi);
                xb[i] = w >= 0 ? ac_mul_up(w, s_hi) : ac_mul_up(w, s_lo);
            }
            ac_exp_enclose_shift(xa, xb, n, el, eh, tmp);
            double sl, sh, t;
            ac_sum_enclose(el, n, 1, &sl, &t);
            ac_sum_enclose(eh, n, 1, &t, &sh);
            double dj = d0 ? d0[j] : 1.0;
            double rl = ac_sub_dn(ac_div_dn(sl, dj), 1.0), rh = ac_sub_up(ac_div_up(sh, dj), 1.0);
            double m = fmax(fabs(rl), fabs(rh));
            if (m > e7)
                e7 = m;
            double ml = (rl > 0) ? rl : ((rh < 0) ? -rh : 0);
            if (ml > e7lo)
                e7lo = ml;
        }
        free(el);
    }
    if (oom)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    ac_t1_add_step(res, "paper 1, eq. (7): 1'exp(Wkq~/sqrt(dk)) = 1'D0",
                   "max_j |1'exp(Wkq~/sqrt(dk))_j / D0_jj - 1|", e7lo, e7, AC_STAGE_DOUBLE, 53,
                   "the softmax normaliser D equals D0, so Softmax(Wkq~/sqrt(dk)) = P D0 D0^-1 = P");
    return AC_OK;
}

int ac_t1_route_construct(ac_t1_result *res, ac_t1_basis *basis, const ac_mat *X,
                          const ac_mat *P, ac_mat *Y, ac_imat *YX, const ac_t1_opts *o,
                          ac_err *err)
{
    size_t n = X->cols, dk = res->dk;
    ac_mat Wt = {0};
    double pre[2];
    int st = AC_OK;
    /* paper 1, Theorem 1: exact representation of the column-normalised P */
    res->route = AC_T1_ROUTE_CONSTRUCT;
    res->exact = AC_PROVED;
    snprintf(res->exact_method, sizeof res->exact_method,
             "paper 1, Theorem 1: rank X = n <= dk (rank by %.120s)", res->rank_method);
    res->dist_hi = res->norm_gap;
    snprintf(basis->method, sizeof basis->method, "Theorem 1 (rank X = n <= dk, %s)",
             res->rank_method);
    if (o->want_weights) {
        if ((!Y->data && (st = ac_approx_pinv(Y, X, 0.0, err))) || /* rank exact, QR gave up */
            (st = construct_weights(res, &Wt, Y, P, o->d0, dk, err)) ||
            (st = trace_eq4(res, pre, X, &Wt, P, dk, YX, o->tol, err)) ||
            (st = trace_eq7(res, &Wt, o->d0, dk, err)) ||
            (st = ac_t1_certify_weights(&res->weights_cert, X, &res->Wk, &res->Wq, P, pre, o,
                                        err))) {
            if (st != AC_EDATA)
                goto out;
            /* the weights are optional: exact representability is the
             * theorem's, whatever LAPACK did with them */
            ac_err_clear(err);
            st = AC_OK;
            ac_mat_free(&res->Wk);
            ac_mat_free(&res->Wq);
            ac_cert_set(&res->weights_cert, "max|Softmax - P| (written weights)", AC_LE, o->tol,
                        AC_STAGE_NONE, 0, 0, INFINITY, "no weights: the construction failed");
            res->weights_cert.verdict = AC_UNDECIDED;
            goto out_summary;
        }
        ac_t1_add_step(res, "final identity: Softmax(X'Wk'WqX/sqrt(dk)) = P", "max|Softmax - P|",
                       res->weights_cert.lo, res->weights_cert.hi, res->weights_cert.stage,
                       res->weights_cert.prec, "the written weights represent P to this accuracy");
        if (res->weights_cert.hi < res->dist_hi)
            res->dist_hi = res->weights_cert.hi;
    }
out_summary:
    char fb[AC_FMT_BOUND_BUFSIZE];
    snprintf(res->summary, sizeof res->summary,
             "rank X = n = %zu <= dk = %zu: Theorem 1 applies, P is exactly representable "
             "(up to its column normalisation, %s)",
             n, dk, ac_str_hi(fb, ".2g", res->norm_gap));
out:
    ac_mat_free(&Wt);
    return st;
}

/* ---- weights from the family K Pi log(P) Pi (doc/mathematics.md §3.5) ---- */

/* The SVD of X cut to the certified rank r: the r largest singular triplets,
 * stopping at a zero one and, when rel > 0, at one below rel * sigma_1 (a
 * numerical rank, which keeps the weights of an ill-conditioned X bounded).
 * Returns how many are kept. */
static size_t pinv_keep(const double *sx, size_t r, size_t p, double rel)
{
    size_t k = 0;
    while (k < r && k < p && sx[k] > 0 && !(rel > 0 && sx[k] < rel * sx[0]))
        k++;
    return k;
}

/* X^+ (n x d, allocated here) and, when Pi is not NULL, Pi = X^+ X (n x n)
 * from an SVD of X with the certified rank r (pinv_keep):
 *   X^+ = (S_k^-1 V_k^T)^T U_k^T   (one dgemm),
 *   Pi  = V_k V_k^T                (one dsyrk, mirrored).
 * Approximations only: whatever is built from them is certified afterwards.
 * ref != 0: the same sums in plain loops (the reference twin). */
static int pinv_run(ac_mat *Xp, ac_mat *Pi, const ac_mat *X, size_t r, double rel, int ref,
                    ac_err *err)
{
    size_t d = X->rows, n = X->cols, p = d < n ? d : n;
    ac_mat Ux = {0}, Vx = {0};
    int st;
    double *sx = malloc((p ? p : 1) * sizeof(double));
    if (!sx)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if ((st = ac_approx_svd(X, &Ux, sx, &Vx, err)) || (st = ac_mat_init(Xp, n, d, err)) ||
        (Pi && (st = ac_mat_init(Pi, n, n, err))))
        goto out;
    size_t kk = pinv_keep(sx, r, p, rel);
    if (ref) {
        for (size_t k = 0; k < kk; k++)
            for (size_t i = 0; i < n; i++) {
                double v = AC_MAT(&Vx, k, i);
                for (size_t j = 0; j < d; j++)
                    AC_MAT(Xp, i, j) += v * AC_MAT(&Ux, j, k) / sx[k];
                if (Pi)
                    for (size_t j = 0; j < n; j++)
                        AC_MAT(Pi, i, j) += v * AC_MAT(&Vx, k, j);
            }
        goto out;
    }
    if (kk == 0)
        goto out;
    if (Pi) { /* Pi = V_k V_k^T, before Vx's rows are scaled */
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)n, (int)kk, 1.0, Vx.data, (int)n,
                    0.0, Pi->data, (int)n);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < i; j++)
                AC_MAT(Pi, i, j) = AC_MAT(Pi, j, i);
    }
    for (size_t k = 0; k < kk; k++)
        for (size_t i = 0; i < n; i++)
            AC_MAT(&Vx, k, i) /= sx[k];
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, (int)n, (int)d, (int)kk, 1.0, Vx.data,
                (int)n, Ux.data, (int)p, 0.0, Xp->data, (int)d);
out:
    free(sx);
    ac_mat_free(&Ux);
    ac_mat_free(&Vx);
    return st;
}

int t1_pinv(ac_mat *Xp, ac_mat *Pi, const ac_mat *X, size_t r, double rel, ac_err *err)
{
    return pinv_run(Xp, Pi, X, r, rel, 0, err);
}

int t1_pinv_ref(ac_mat *Xp, ac_mat *Pi, const ac_mat *X, size_t r, double rel, ac_err *err)
{
    return pinv_run(Xp, Pi, X, r, rel, 1, err);
}

/* T = K Pi L Pi, L = log P, K = I - g g'/(g'g), g = Pi 1 (K = I when g = 0);
 * Pi = I when r = n. */
static int family_member(ac_mat *T, const ac_mat *Pi, const ac_mat *P, int pi_identity,
                         ac_err *err)
{
    size_t n = P->rows;
    ac_mat L = {0}, W = {0};
    double *g = calloc(n, sizeof(double)), *gtM = calloc(n, sizeof(double));
    int st;
    if (!g || !gtM) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if ((st = ac_mat_init(T, n, n, err)) || (st = ac_mat_init(&L, n, n, err)))
        goto out;
    for (size_t i = 0; i < n * n; i++)
        L.data[i] = log(P->data[i]);
    if (pi_identity) {
        memcpy(T->data, L.data, n * n * sizeof(double));
        for (size_t i = 0; i < n; i++)
            g[i] = 1.0;
    } else {
        if ((st = ac_mat_init(&W, n, n, err)) ||
            (st = ac_gemm(&W, AC_NOTRANS, Pi, AC_NOTRANS, &L, err)) ||
            (st = ac_gemm(T, AC_NOTRANS, &W, AC_NOTRANS, Pi, err)))
            goto out;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                g[i] += AC_MAT(Pi, i, j);
    }
    double b = 0;
    for (size_t i = 0; i < n; i++)
        b += g[i] * g[i];
    if (b > 0) {
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                gtM[j] += g[i] * AC_MAT(T, i, j);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                AC_MAT(T, i, j) -= g[i] * gtM[j] / b;
    }
out:
    free(g);
    free(gtM);
    ac_mat_free(&L);
    ac_mat_free(&W);
    return st;
}

/* Wk, Wq (dk x d) with (Wk X)'(Wq X)/sqrt(dk) = Pi T_dk Pi, T_dk the rank-dk
 * truncation of T (n x n, an SVD T = U S V'): Wk = S^(1/2) U_dk' X^+,
 * Wq = sqrt(dk) S^(1/2) V_dk' X^+, since X^+ X = Pi (rows past rank T stay
 * zero).  When T = Pi T Pi its singular vectors lie in range(Pi) and the
 * logits are T_dk itself. */
int t1_factor_logits(ac_mat *Wk, ac_mat *Wq, const ac_mat *T, const ac_mat *Xp, size_t dk,
                     ac_err *err)
{
    size_t n = Xp->rows, d = Xp->cols;
    ac_mat U = {0}, Vt = {0}, F = {0}, G = {0};
    double *s = malloc((n ? n : 1) * sizeof(double));
    int st;
    if (!s)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if ((st = ac_approx_svd(T, &U, s, &Vt, err)) || (st = ac_mat_init(&F, dk, n, err)) ||
        (st = ac_mat_init(&G, dk, n, err)) || (st = ac_mat_init(Wk, dk, d, err)) ||
        (st = ac_mat_init(Wq, dk, d, err)))
        goto out;
    double sq = sqrt((double)dk);
    for (size_t k = 0; k < dk && k < n; k++) {
        double rs = sqrt(s[k]);
        for (size_t i = 0; i < n; i++) {
            AC_MAT(&F, k, i) = rs * AC_MAT(&U, i, k);
            AC_MAT(&G, k, i) = sq * rs * AC_MAT(&Vt, k, i);
        }
    }
    if ((st = ac_gemm(Wk, AC_NOTRANS, &F, AC_NOTRANS, Xp, err)) ||
        (st = ac_gemm(Wq, AC_NOTRANS, &G, AC_NOTRANS, Xp, err)))
        goto out;
out:
    free(s);
    ac_mat_free(&U);
    ac_mat_free(&Vt);
    ac_mat_free(&F);
    ac_mat_free(&G);
    return st;
}

int ac_t1_construct_family(ac_t1_result *res, const ac_mat *X, const ac_mat *P, size_t r,
                           const ac_t1_opts *o, ac_err *err)
{
    size_t n = X->cols;
    ac_mat Xp = {0}, Pi = {0}, T = {0};
    int st;
    ac_mat_free(&res->Wk);
    ac_mat_free(&res->Wq);
    if ((st = t1_pinv(&Xp, &Pi, X, r, 0.0, err)) ||
        (st = family_member(&T, &Pi, P, r == n, err)) ||
        (st = t1_factor_logits(&res->Wk, &res->Wq, &T, &Xp, res->dk, err)) ||
        (st = ac_t1_certify_weights(&res->weights_cert, X, &res->Wk, &res->Wq, P, NULL, o,
                                    err)))
        goto out;
    ac_t1_add_step(res, "weights from K Pi log(P) Pi (doc/mathematics.md §3.5)",
                   "max|Softmax - P| (these weights)", res->weights_cert.lo,
                   res->weights_cert.hi, res->weights_cert.stage, res->weights_cert.prec,
                   r == n && res->dk + 1 >= n
                       ? "K log P = log P + 1c' has rank <= n - 1: nothing truncated"
                       : "the family member of least rank, truncated to rank dk");
out:
    ac_mat_free(&Xp);
    ac_mat_free(&Pi);
    ac_mat_free(&T);
    return st;
}
