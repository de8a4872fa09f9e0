/* reach.c — separating inputs that the double estimates cannot see
 * (doc/mathematics.md §4.10, "Within reach").
 *
 * The search of search.c ranks its candidates by double estimates, which
 * are blind in two places:
 *   - a head whose logits or value path lie far from those of the others or
 *     outside the double range (weights of 1e-200: logits of 1e-400, read
 *     as 0), which matters only at an X of its own scale;
 *   - layers that differ by roundings which only a saturated softmax
 *     resolves: a near-tie of the two largest logits of a column, broken
 *     differently by the two layers, splits the column differently once X
 *     is scaled so that the tie is broken at order one.
 * This step builds candidates for both and certifies each through the ball
 * stages (which have no exponent range), in a fixed order:
 *   ties    for head i of f_W and of g_V (logit matrix L): query token x_0
 *           Gaussian, y = L x_0; key x_1 = c y (the largest logit of column
 *           0; for n = 2 the key is x_0 itself), x_2 = x_1 + w with w a
 *           Gaussian made orthogonal to y in double, so that the two logits
 *           of column 0 tie up to rounding; the other tokens Gaussian.  The
 *           gaps delta = (x_2 - x_1)' L x_0 of head i of both layers are
 *           computed exactly (Arb, from the doubles of X), and X is scaled by
 *           the power of two 2^k that maximises |s(4^k delta_f) -
 *           s(4^k delta_g)|, s the logistic function: the share of key 2 in
 *           column 0 once the softmax saturates; two more per head with w
 *           along D x_0, D the difference of the two logit matrices (x_0
 *           Gaussian, and x_0 the top right singular vector of D), which
 *           moves g_V's logit most against f_W's tie;
 *   cancel  for f_W and for g_V: every token equal to x, the right singular
 *           vector of the least singular value of M = sum_h Wo_h Wv_h (in
 *           double).  Equal tokens make every logit of a column equal, so
 *           every head attends uniformly in both layers and the outputs are
 *           M_f x and M_g x exactly; where M_f is singular (h hs < d, or
 *           heads whose value-output maps cancel) M_f x is of the order of
 *           the rounding of x while (M_g - M_f) x need not be, and the
 *           relative gap is of order one although the layers differ only by
 *           a rounding of Wv (doc/mathematics.md §4.10);
 *   basis   the basis vector e_k (k = 1 .. min(d, T2_REACH_BASIS)) as the
 *           first token, the others 0: the value paths read column by column
 *           (a difference that larger paths of other heads hide in a generic
 *           X shows where those paths vanish);
 *   scales  for every head of either layer whose logit scale 2^b (b =
 *           log2(max|Wk_i| max|Wq_i| d), quantised to T2_REACH_QUANT bits)
 *           is beyond |b| > T2_REACH_QUANT: a Gaussian X times 2^(-b/2),
 *           which brings that head's logits to order one, and the basis
 *           vectors at that scale.
 * The count is fixed by the sizes (at most 4h + 2 + (1 + T2_REACH_SCALES)
 * (1 + T2_REACH_BASIS) candidates), never by timing. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/linalg.h"
#include "t2_impl.h"

/* Exact bits for the dot products of the tie gaps: any product of two
 * doubles and any sum of d < 2^32 of them is exact at T2_X_BITS + 64. */
#define REACH_PREC (T2_X_BITS + 64)

/* Add one candidate X (taken over) to the list. */
static int push(t2_reach_list *l, ac_mat *X, int kind, size_t head, ac_err *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        t2_reach_cand *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) {
            ac_mat_free(X);
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        }
        l->v = nv;
        l->cap = cap;
    }
    t2_reach_cand *c = &l->v[l->n++];
    c->X = *X;
    c->kind = kind;
    c->head = head;
    c->which = 0;
    X->data = NULL;
    return AC_OK;
}

void t2_reach_free(t2_reach_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ac_mat_free(&l->v[i].X);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* y = L_i x in double (L_i = Wk_i' Wq_i / sqrt(hs), d x d), x of length d. */
static void logit_dir(double *y, const ac_mh *L, size_t i, const double *x, double *q)
{
    size_t d = L->d, hs = L->hs;
    const double *wq = L->wq + i * hs * d, *wk = L->wk + i * hs * d;
    for (size_t r = 0; r < hs; r++) {
        double s = 0;
        for (size_t c = 0; c < d; c++)
            s += wq[r * d + c] * x[c];
        q[r] = s;
    }
    for (size_t c = 0; c < d; c++) {
        double s = 0;
        for (size_t r = 0; r < hs; r++)
            s += wk[r * d + c] * q[r];
        y[c] = s / sqrt((double)hs);
    }
}

/* delta = (x_b - x_a)' L_i x_q exactly for head i of L (L_i = Wk_i' Wq_i
 * / sqrt(hs)), columns a, b, q of X: the products and sums are exact at
 * REACH_PREC; only the division by sqrt(hs) rounds (relatively 2^-REACH_PREC). */
static void tie_gap(arb_t delta, const ac_mh *L, size_t i, const ac_mat *X, size_t a, size_t b,
                    size_t q)
{
    size_t d = L->d, hs = L->hs, n = X->cols;
    const double *wq = L->wq + i * hs * d, *wk = L->wk + i * hs * d;
    arb_t s, t, u, xv;
    arb_init(s);
    arb_init(t);
    arb_init(u);
    arb_init(xv);
    arb_zero(delta);
    for (size_t r = 0; r < hs; r++) {
        arb_zero(s); /* (Wq x_q)_r */
        arb_zero(t); /* (Wk (x_b - x_a))_r */
        for (size_t c = 0; c < d; c++) {
            arb_set_d(u, wq[r * d + c]);
            arb_set_d(xv, X->data[c * n + q]);
            arb_addmul(s, u, xv, REACH_PREC);
            arb_set_d(u, wk[r * d + c]);
            arb_set_d(xv, X->data[c * n + b]);
            arb_addmul(t, u, xv, REACH_PREC);
            arb_set_d(xv, X->data[c * n + a]);
            arb_submul(t, u, xv, REACH_PREC);
        }
        arb_addmul(delta, s, t, REACH_PREC);
    }
    arb_set_ui(u, (ulong)hs);
    arb_rsqrt(u, u, 128);
    arb_mul(delta, delta, u, 128);
    arb_clear(s);
    arb_clear(t);
    arb_clear(u);
    arb_clear(xv);
}

/* Bits of the products of diff_apply: the difference of the two logit
 * matrices is of the size of a rounding (2^-53 relative) and must be known
 * to many bits beyond it. */
#define DIFF_PREC 320

/* out = D x or D' x in double (rounded), D = L_i^f - L_i^g the difference of
 * head i's logit matrices (L = Wk_i' Wq_i / sqrt(hs)), computed in Arb at
 * DIFF_PREC from the doubles: a direction, not a certified value. */
static void diff_apply(double *out, const ac_mh *W, const ac_mh *V, size_t i, const double *x,
                       int transpose)
{
    size_t d = W->d;
    arb_ptr acc = _arb_vec_init((slong)d), q = _arb_vec_init((slong)(W->hs > V->hs ? W->hs : V->hs));
    arb_t u, xv, rs;
    arb_init(u);
    arb_init(xv);
    arb_init(rs);
    for (int which = 0; which < 2; which++) {
        const ac_mh *L = which ? V : W;
        size_t hs = L->hs;
        /* L x = Wk' (Wq x) / sqrt(hs); L' x = Wq' (Wk x) / sqrt(hs) */
        const double *a = L->wq + i * hs * d, *b = L->wk + i * hs * d;
        if (transpose) {
            const double *t = a;
            a = b;
            b = t;
        }
        arb_set_ui(rs, (ulong)hs);
        arb_rsqrt(rs, rs, DIFF_PREC);
        if (which)
            arb_neg(rs, rs);
        for (size_t r = 0; r < hs; r++) {
            arb_zero(q + r);
            for (size_t c = 0; c < d; c++) {
                arb_set_d(u, a[r * d + c]);
                arb_set_d(xv, x[c]);
                arb_addmul(q + r, u, xv, DIFF_PREC);
            }
            arb_mul(q + r, q + r, rs, DIFF_PREC);
        }
        for (size_t c = 0; c < d; c++)
            for (size_t r = 0; r < hs; r++) {
                arb_set_d(u, b[r * d + c]);
                arb_addmul(acc + c, u, q + r, DIFF_PREC);
            }
    }
    for (size_t c = 0; c < d; c++)
        out[c] = arf_get_d(arb_midref(acc + c), ARF_RND_NEAR);
    _arb_vec_clear(acc, (slong)d);
    _arb_vec_clear(q, (slong)(W->hs > V->hs ? W->hs : V->hs));
    arb_clear(u);
    arb_clear(xv);
    arb_clear(rs);
}

/* v / max|v| in place; 0 when v is 0 or not finite */
static int normalise(double *v, size_t d)
{
    double m = 0;
    for (size_t c = 0; c < d; c++)
        m = fmax(m, fabs(v[c]));
    if (!(m > 0) || !isfinite(m))
        return 0;
    for (size_t c = 0; c < d; c++)
        v[c] /= m;
    return 1;
}

/* x <- the top right singular vector of D (head i), by DIFF_POWER steps of
 * the power iteration x <- D'D x from x; 0 when D x vanishes (the heads'
 * logit matrices are equal). */
#define DIFF_POWER 8
static int diff_top(double *x, double *t, const ac_mh *W, const ac_mh *V, size_t i)
{
    for (int k = 0; k < DIFF_POWER; k++) {
        diff_apply(t, W, V, i, x, 0);
        if (!normalise(t, W->d))
            return 0;
        diff_apply(x, W, V, i, t, 1);
        if (!normalise(x, W->d))
            return 0;
    }
    return 1;
}

/* 1/(1 + e^-z), z possibly infinite */
static double logistic(double z)
{
    return z >= 0 ? 1 / (1 + exp(-z)) : exp(z) / (1 + exp(z));
}

/* z 4^k for the midpoint of delta, in double without overflow to NaN */
static double scaled(const arb_t delta, long k)
{
    arf_t m;
    arf_init(m);
    arf_mul_2exp_si(m, arb_midref(delta), 2 * k);
    double z = arf_get_d(m, ARF_RND_NEAR);
    arf_clear(m);
    return z;
}

/* The power of two 2^k maximising |s(4^k df) - s(4^k dg)| over the k that
 * bring the larger of |df|, |dg| and |df - dg| to [2^-8, 2^8]; 0 if the
 * two gaps are equal (nothing to resolve). */
static int best_scale(long *kbest, const arb_t df, const arb_t dg)
{
    arb_t diff;
    arb_init(diff);
    arb_sub(diff, df, dg, 128);
    int found = 0;
    double best = 0;
    if (!arb_is_zero(diff) && arb_is_finite(diff)) {
        const arb_srcptr cand[3] = {df, dg, diff};
        for (int c = 0; c < 3; c++) {
            if (arf_is_zero(arb_midref(cand[c])))
                continue;
            long e = arf_abs_bound_lt_2exp_si(arb_midref(cand[c]));
            for (long k = (-e - 8) / 2 - 1; k <= (-e + 8) / 2 + 1; k++) {
                double v = fabs(logistic(scaled(df, k)) - logistic(scaled(dg, k)));
                if (v > best) {
                    best = v;
                    *kbest = k;
                    found = 1;
                }
            }
        }
    }
    arb_clear(diff);
    return found && best > 0;
}

/* X scaled by 2^k in place; 0 when an entry would leave the doubles or lose
 * bits (the tie lives in the low bits of X). */
static int scale_exact(ac_mat *X, long k)
{
    size_t N = X->rows * X->cols;
    if (k > 4000 || k < -4000)
        return 0;
    for (size_t t = 0; t < N; t++) {
        double v = ldexp(X->data[t], (int)k);
        if (!isfinite(v) || ldexp(v, (int)-k) != X->data[t])
            return 0;
        X->data[t] = v;
    }
    return 1;
}

/* The near-tie for head i: which = 0 (of f_W) and 1 (of g_V) with a
 * Gaussian query x_0 and a Gaussian w; which = 2 with the query x_0 of
 * which = 0 and which = 3 with x_0 the top right singular vector of the
 * difference D of the two logit matrices, both with w = D x_0 (the key
 * offset that moves the logit of g_V most against f_W's), made orthogonal to
 * f_W's y = L x_0 (doc/mathematics.md §4.10, "Within reach"). */
static int tie_candidate(t2_reach_list *l, const ac_mh *W, const ac_mh *V, int which, size_t i,
                         size_t n, uint64_t seed, ac_err *err)
{
    const ac_mh *L = which == 1 ? V : W;
    size_t d = L->d, hs = L->hs > W->hs ? L->hs : W->hs;
    hs = hs > V->hs ? hs : V->hs;
    ac_mat X = {0};
    int st = ac_mat_init(&X, d, n, err);
    if (st)
        return st;
    double *x = malloc(3 * d * sizeof(double)), *q = malloc(hs * sizeof(double));
    if (!x || !q) {
        free(x);
        free(q);
        ac_mat_free(&X);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    double *y = x + d, *w = x + 2 * d;
    uint64_t stream = T2_STREAM_REACH, idx = 2 * (uint64_t)i + (uint64_t)(which == 1);
    t2_rng_vec(x, d, seed, stream, 4 * idx);
    t2_rng_vec(w, d, seed, stream, 4 * idx + 1);
    int ok = 1;
    if (which >= 2) { /* along the difference of the logit matrices */
        if (which == 3)
            ok = diff_top(x, y, W, V, i);
        if (ok) {
            diff_apply(w, W, V, i, x, 0);
            ok = normalise(w, d);
        }
    }
    logit_dir(y, L, i, x, q);
    double yy = 0, wy = 0, xx = 0;
    for (size_t c = 0; c < d; c++) {
        yy += y[c] * y[c];
        xx += x[c] * x[c];
    }
    ok = ok && yy > 0 && isfinite(yy);
    size_t a = n == 2 ? 0 : 1, b = n == 2 ? 1 : 2;
    if (ok) {
        double cy = 3 * sqrt(xx / yy); /* |x_a| = 3 |x_0| along y */
        for (size_t c = 0; c < d; c++)
            wy += w[c] * y[c];
        for (size_t c = 0; c < d; c++) {
            double xa = n == 2 ? x[c] : cy * y[c];
            X.data[c * n + 0] = x[c];
            X.data[c * n + a] = xa;
            X.data[c * n + b] = xa + (w[c] - wy / yy * y[c]);
        }
        for (size_t j = 3; j < n; j++) { /* the other tokens: Gaussian, |x_j| ~ |x_0| */
            t2_rng_vec(w, d, seed, stream, 4 * idx + 2 + 2 * (uint64_t)j);
            for (size_t c = 0; c < d; c++)
                X.data[c * n + j] = w[c];
        }
        arb_t df, dg;
        arb_init(df);
        arb_init(dg);
        tie_gap(df, W, i, &X, a, b, 0);
        tie_gap(dg, V, i, &X, a, b, 0);
        long k = 0;
        ok = best_scale(&k, df, dg) && scale_exact(&X, k);
        arb_clear(df);
        arb_clear(dg);
    }
    free(x);
    free(q);
    if (!ok) {
        ac_mat_free(&X);
        return AC_OK;
    }
    if ((st = push(l, &X, AC_T2_CON_TIE, i + 1, err)))
        return st;
    l->v[l->n - 1].which = which;
    return AC_OK;
}

/* log2 of the logit scale of head i: max|Wk_i| max|Wq_i| d; NaN for a zero head */
static double head_scale(const ac_mh *L, size_t i)
{
    size_t d = L->d, hs = L->hs;
    double mq = 0, mk = 0;
    for (size_t t = 0; t < hs * d; t++) {
        mq = fmax(mq, fabs(L->wq[i * hs * d + t]));
        mk = fmax(mk, fabs(L->wk[i * hs * d + t]));
    }
    if (!(mq > 0 && mk > 0) || !isfinite(mq) || !isfinite(mk))
        return NAN;
    return log2(mq) + log2(mk) + log2((double)d);
}

/* Every token x, the least right singular vector of M = Wo_cat Wv_cat of L
 * (d x d, in double), scaled to max|x| = 1; nothing when M is 0 or not
 * finite. */
static int cancel_candidate(t2_reach_list *l, const ac_mh *L, size_t n, ac_err *err)
{
    size_t d = L->d, k = L->h * L->hs;
    ac_mat M = {0}, U = {0}, Vt = {0}, X = {0};
    double *s = malloc((d ? d : 1) * sizeof *s);
    int st = AC_OK;
    if (!s) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if ((st = ac_mat_init(&M, d, d, err)))
        goto out;
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, d, d, k, 1.0, L->wo, k, L->wv, d, 0.0, M.data, d);
    double mmax = 0;
    for (size_t t = 0; t < d * d; t++)
        mmax = fmax(mmax, fabs(M.data[t]));
    if (!(mmax > 0) || !isfinite(mmax) || d == 0)
        goto out;
    if (ac_approx_svd(&M, &U, s, &Vt, err) != AC_OK) {
        ac_err_clear(err); /* optional: no candidate */
        goto out;
    }
    double *x = Vt.data + (d - 1) * d;
    if (!normalise(x, d))
        goto out;
    if ((st = ac_mat_init(&X, d, n, err)))
        goto out;
    for (size_t r = 0; r < d; r++)
        for (size_t c = 0; c < n; c++)
            AC_MAT(&X, r, c) = x[r];
    st = push(l, &X, AC_T2_CON_CANCEL, 0, err);
out:
    free(s);
    ac_mat_free(&M);
    ac_mat_free(&U);
    ac_mat_free(&Vt);
    ac_mat_free(&X);
    return st;
}

/* e_k as the first token, scaled by 2^e, the others 0 */
static int basis_candidates(t2_reach_list *l, size_t d, size_t n, long e, ac_err *err)
{
    size_t nb = d < T2_REACH_BASIS ? d : T2_REACH_BASIS;
    for (size_t k = 0; k < nb; k++) {
        ac_mat X = {0};
        int st = ac_mat_init(&X, d, n, err);
        if (st)
            return st;
        X.data[k * n] = ldexp(1.0, (int)e);
        if ((st = push(l, &X, AC_T2_CON_BASIS, k + 1, err)))
            return st;
    }
    return AC_OK;
}

int t2_reach_build(t2_reach_list *l, const ac_mh *W, const ac_mh *V, size_t n, uint64_t seed,
                   ac_err *err)
{
    size_t d = W->d;
    int st;
    memset(l, 0, sizeof *l);
    /* ties: head i of f_W, then of g_V */
    for (size_t i = 0; n >= 2 && i < W->h; i++)
        for (int which = 0; which < 4; which++)
            if ((st = tie_candidate(l, W, V, which, i, n, seed, err)))
                return st;
    /* equal tokens where the head outputs of f_W, then of g_V, cancel */
    if ((st = cancel_candidate(l, W, n, err)) || (st = cancel_candidate(l, V, n, err)))
        return st;
    if ((st = basis_candidates(l, d, n, 0, err)))
        return st;
    /* the scales of heads beyond the reach of a generic X of order one */
    long sc[T2_REACH_SCALES];
    size_t ns = 0;
    for (int which = 0; which < 2; which++) {
        const ac_mh *L = which ? V : W;
        for (size_t i = 0; i < L->h && ns < T2_REACH_SCALES; i++) {
            double b = head_scale(L, i);
            if (isnan(b) || fabs(b) <= T2_REACH_QUANT)
                continue;
            long e = -T2_REACH_QUANT * lround(b / (2 * T2_REACH_QUANT)); /* 2^e ~ 2^(-b/2) */
            int seen = 0;
            for (size_t k = 0; k < ns; k++)
                seen |= sc[k] == e;
            if (!seen)
                sc[ns++] = e;
        }
    }
    for (size_t k = 0; k < ns; k++) {
        ac_mat X = {0};
        if ((st = ac_mat_init(&X, d, n, err)))
            return st;
        t2_rng_vec(X.data, d * n, seed, T2_STREAM_REACH, 1000 + k);
        int ok = 1;
        for (size_t t = 0; t < d * n; t++)
            ok &= isfinite(X.data[t] = ldexp(X.data[t], (int)sc[k]));
        if (!ok)
            ac_mat_free(&X);
        else if ((st = push(l, &X, AC_T2_CON_SCALE, 0, err)))
            return st;
        if ((st = basis_candidates(l, d, n, sc[k], err)))
            return st;
    }
    return AC_OK;
}
