/* certify.c — "separated at X" for Theorem 2 of paper 1
 * (doc/mathematics.md §4.10): double-precision estimates of
 * ||f_W(X) - g_V(X)||_F and of the relative gap, and the certificate of
 * ||f_W(X) - g_V(X)||_F > 0 by the verdict engine (doc/mathematics.md §2.2):
 * stage 0 encloses both layers in interval arithmetic (ac_mh_enclose) and
 * takes directed norms (doc/mathematics.md §2.3); the ball stages evaluate
 * both layers in Arb from the exact doubles. */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ball.h"
#include "attention/multihead_arb.h"
#include "attncheck/interval.h"
#include "t2_impl.h"

/* ---- double-precision gap ------------------------------------------------- */

int t2_gap_ws_init(t2_gap_ws *g, const ac_mh *W, const ac_mh *V, size_t n, int threads,
                   ac_err *err)
{
    int st;
    memset(g, 0, sizeof *g);
    g->W = W;
    g->V = V;
    g->n = n;
    if ((st = ac_mh_work_init(&g->ww, W, n, err)) || (st = ac_mh_work_init(&g->wv, V, n, err)) ||
        (st = ac_mat_init(&g->Yf, W->d, n, err)) || (st = ac_mat_init(&g->Yg, V->d, n, err))) {
        ac_mh_work_free(&g->ww);
        ac_mh_work_free(&g->wv);
        ac_mat_free(&g->Yf);
        ac_mat_free(&g->Yg);
        return st;
    }
    g->ww.threads = g->wv.threads = threads;
    return AC_OK;
}

void t2_gap_ws_free(t2_gap_ws *g)
{
    ac_mh_work_free(&g->ww);
    ac_mh_work_free(&g->wv);
    ac_mat_free(&g->Yf);
    ac_mat_free(&g->Yg);
}

double t2_gap_eval(t2_gap_ws *g, const ac_mat *X, double *gap, double *nf, double *ng)
{
    ac_mh_forward(&g->Yf, g->W, X, &g->ww, NULL);
    ac_mh_forward(&g->Yg, g->V, X, &g->wv, NULL);
    double s = 0, a = 0, b = 0;
    size_t N = g->Yf.rows * g->Yf.cols;
    for (size_t i = 0; i < N; i++) {
        double x = g->Yf.data[i], y = g->Yg.data[i];
        s += (x - y) * (x - y);
        a += x * x;
        b += y * y;
    }
    *gap = sqrt(s);
    if (nf)
        *nf = sqrt(a);
    if (ng)
        *ng = sqrt(b);
    double den = sqrt(a) + sqrt(b);
    return den > 0 ? sqrt(s) / den : 0.0;
}

int ac_t2_gap_approx(double *gap, double *rel, const ac_mh *W, const ac_mh *V, const ac_mat *X,
                     ac_err *err)
{
    t2_gap_ws g;
    int st = t2_gap_ws_init(&g, W, V, X->cols, 0, err);
    if (st)
        return st;
    if (X->rows != W->d) {
        t2_gap_ws_free(&g);
        return ac_err_set(err, AC_EUSAGE, "X has %zu rows, d = %zu", X->rows, W->d);
    }
    double r = t2_gap_eval(&g, X, gap, NULL, NULL);
    if (rel)
        *rel = r;
    t2_gap_ws_free(&g);
    return AC_OK;
}

/* ---- both layers at X, enclosed ------------------------------------------- */

int t2_enclose_pair(ac_imat *F, ac_imat *G, const ac_mh *W, const ac_mh *V, const ac_mat *X,
                    ac_err *err)
{
    int st;
    if ((st = ac_mh_enclose(F, W, X, err)) || (st = ac_mh_enclose(G, V, X, err))) {
        ac_imat_free(F);
        return st;
    }
    return AC_OK;
}

void t2_arb_pair(arb_mat_t Xa, arb_mat_t F, arb_mat_t G, const ac_mh *W, const ac_mh *V,
                 const ac_mat *X, slong prec)
{
    ac_arb_mat_set_d(Xa, X->data, X->rows, X->cols);
    ac_mh_forward_arb(F, W, Xa, prec);
    ac_mh_forward_arb(G, V, Xa, prec);
}

/* ---- the relative deviation r = ||f_W(X) - g_V(X)||_F / ||f_W(X)||_F -------- */

/* Lower bound on sqrt(sum m_i^2) over nonnegative m_i (rounded down; the
 * floating-point sum of nonnegative terms is at most (1 + gamma_{N-1}) times
 * the exact one).  The terms are first scaled by a power of two that brings
 * the largest to [1, 2) (exact, except terms that underflow, which only
 * lowers the bound), so that the squares neither overflow nor underflow
 * wholesale: a near-overflow or subnormal output keeps a bound near the
 * truth. */
double t2_norm2_dn(const double *m, size_t N)
{
    double top = 0;
    for (size_t i = 0; i < N; i++)
        if (m[i] > top)
            top = m[i];
    if (!(top > 0))
        return 0.0;
    if (!isfinite(top))
        top = DBL_MAX;
    int e;
    (void)frexp(top, &e);
    double s = 0;
    for (size_t i = 0; i < N; i++) {
        /* exact unless subnormal; a subnormal x has x^2 rounded down to 0 below */
        double x = ldexp(isfinite(m[i]) ? m[i] : DBL_MAX, 1 - e);
        double t = ac_mul_dn(x, x);
        if (t > 0)
            s += t;
    }
    if (!(s > 0))
        return 0.0;
    double g = ac_gamma_up((double)(N ? N : 1));
    double q = ac_div_dn(s, ac_add_up(1.0, g));
    double r = q > 0 ? ac_sqrt_dn(q) : 0.0;
    /* r 2^(e-1), rounded down (ldexp is exact unless the result is subnormal) */
    r = ldexp(r, e - 1);
    if (r < DBL_MIN) {
        r = ac_dn(r);
        if (r < 0)
            r = 0;
    }
    return isfinite(r) ? r : DBL_MAX;
}

/* [lo, hi] for r from dlo <= ||g - f|| <= dhi, flo <= ||f|| <= fhi (all
 * >= 0), rounded outward: r = 0 when g = f, +inf when f = 0 != g. */
void t2_ratio_bounds(double dlo, double dhi, double flo, double fhi, double *lo, double *hi)
{
    if (dhi == 0)
        *hi = 0; /* g = f at X */
    else if (flo > 0 && isfinite(dhi))
        *hi = ac_div_up(dhi, flo);
    else
        *hi = INFINITY; /* ||f|| not certified positive: no relative bound */
    if (!(dlo > 0))
        *lo = 0;
    else if (fhi > 0)
        *lo = ac_div_dn(dlo, fhi); /* 0 when fhi = inf */
    else
        *lo = INFINITY; /* f = 0 != g */
    if (*lo < 0)
        *lo = 0;
}

/* 1 when every column of X equals the first (exactly) */
static int equal_columns(const ac_mat *X)
{
    for (size_t i = 0; i < X->rows; i++)
        for (size_t j = 1; j < X->cols; j++)
            if (X->data[i * X->cols + j] != X->data[i * X->cols])
                return 0;
    return 1;
}

/* Equal columns X = v 1': every logit column is constant, so every softmax
 * is uniform whatever the logits (doc/mathematics.md §4.4), f_W(X) = S_W v 1'
 * and g_V(X) = S_V v 1' exactly.  The norms come from the exact products
 * (dyadic.h) in balls of T2_TRACE_PREC bits; no logit is ever formed, so
 * huge logits cost nothing. */
static int dev_uniform(t2_dev_ctx *c)
{
    size_t d = c->X->rows;
    ac_xmat SW, SV, v, a, b, t;
    if (ac_xmat_from_d(&v, c->X->data, d, 1, c->X->cols, 0, T2_X_BITS) != AC_XMAT_OK)
        return 0;
    if (t2_x_S(&SW, c->W) != AC_XMAT_OK) {
        ac_xmat_clear(&v);
        return 0;
    }
    if (t2_x_S(&SV, c->V) != AC_XMAT_OK) {
        ac_xmat_clear(&v);
        ac_xmat_clear(&SW);
        return 0;
    }
    ac_xmat_mul(&a, &SW, &v);
    ac_xmat_mul(&b, &SV, &v);
    ac_xmat_sub(&t, &a, &b);
    arb_mat_t A, B, D;
    arb_t nf, ng, nd, sn;
    slong prec = T2_TRACE_PREC;
    arb_mat_init(A, (slong)d, 1);
    arb_mat_init(B, (slong)d, 1);
    arb_mat_init(D, (slong)d, 1);
    arb_init(nf);
    arb_init(ng);
    arb_init(nd);
    arb_init(sn);
    ac_xmat_to_arb(A, &a, prec);
    ac_xmat_to_arb(B, &b, prec);
    ac_xmat_to_arb(D, &t, prec);
    arb_sqrt_ui(sn, (ulong)c->X->cols, prec); /* ||w 1'||_F = sqrt(n) ||w|| */
    arb_mat_frobenius_norm(nf, A, prec);
    arb_mat_frobenius_norm(ng, B, prec);
    arb_mat_frobenius_norm(nd, D, prec);
    arb_mul(nf, nf, sn, prec);
    arb_mul(ng, ng, sn, prec);
    arb_mul(nd, nd, sn, prec);
    int dzero = ac_xmat_is_zero(&t);
    c->diff_lo = dzero ? 0.0 : fmax(ac_arb_lo(nd), 0.0);
    c->diff_hi = dzero ? 0.0 : ac_arb_hi(nd);
    c->f_lo = fmax(ac_arb_lo(nf), 0.0);
    c->f_hi = ac_arb_hi(nf);
    c->g_hi = ac_arb_hi(ng);
    arb_clear(nf);
    arb_clear(ng);
    arb_clear(nd);
    arb_clear(sn);
    arb_mat_clear(A);
    arb_mat_clear(B);
    arb_mat_clear(D);
    ac_xmat_clear(&a);
    ac_xmat_clear(&b);
    ac_xmat_clear(&t);
    ac_xmat_clear(&v);
    ac_xmat_clear(&SW);
    ac_xmat_clear(&SV);
    return 1;
}

int t2_dev_stage0(void *vc, double *lo, double *hi, ac_err *err)
{
    t2_dev_ctx *c = vc;
    ac_imat F = {0}, G = {0};
    int st;
    *lo = 0;
    *hi = INFINITY;
    c->diff_lo = c->f_lo = 0;
    c->diff_hi = c->f_hi = c->g_hi = INFINITY;
    if ((st = t2_enclose_pair(&F, &G, c->W, c->V, c->X, err)))
        return st;
    size_t N = F.rows * F.cols, nn = N ? N : 1;
    double *dm = malloc(nn * sizeof(double)), *du = malloc(nn * sizeof(double));
    double *fm = malloc(nn * sizeof(double)), *fu = malloc(nn * sizeof(double));
    double *gu = malloc(nn * sizeof(double));
    if (!dm || !du || !fm || !fu || !gu) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if (ac_imat_finite(&F) && ac_imat_finite(&G)) {
        for (size_t i = 0; i < N; i++) {
            double gl = ac_imat_lo(&G, i), gh = ac_imat_hi(&G, i);
            double fl = ac_imat_lo(&F, i), fh = ac_imat_hi(&F, i);
            double dl = ac_sub_dn(fl, gh), dh = ac_sub_up(fh, gl); /* f - g in [dl, dh] */
            dm[i] = t2_mig(dl, dh);
            du[i] = t2_mag(dl, dh);
            fm[i] = t2_mig(fl, fh);
            fu[i] = t2_mag(fl, fh);
            gu[i] = t2_mag(gl, gh);
        }
        c->diff_lo = t2_norm2_dn(dm, N);
        c->diff_hi = ac_norm2_up(du, N);
        c->f_lo = t2_norm2_dn(fm, N);
        c->f_hi = ac_norm2_up(fu, N);
        c->g_hi = ac_norm2_up(gu, N);
        t2_ratio_bounds(c->diff_lo, c->diff_hi, c->f_lo, c->f_hi, lo, hi);
    }
out:
    free(dm);
    free(du);
    free(fm);
    free(fu);
    free(gu);
    ac_imat_free(&F);
    ac_imat_free(&G);
    return st;
}

/* Ball stages: F, G in Arb from the exact doubles, then the quotient of the
 * Frobenius norms (only the lower bound when ||F|| is not certified
 * positive). */
int t2_dev_ball(void *vc, long prec, mpfr_t lo, mpfr_t hi, ac_err *err)
{
    t2_dev_ctx *c = vc;
    slong d = (slong)c->X->rows, n = (slong)c->X->cols;
    arb_mat_t X, F, G;
    arb_t nd, nf, ng;
    arb_mat_init(X, d, n);
    arb_mat_init(F, d, n);
    arb_mat_init(G, d, n);
    arb_init(nd);
    arb_init(nf);
    arb_init(ng);
    t2_arb_pair(X, F, G, c->W, c->V, c->X, prec);
    arb_mat_frobenius_norm(nf, F, prec);
    arb_mat_frobenius_norm(ng, G, prec);
    arb_mat_sub(G, F, G, prec);
    arb_mat_frobenius_norm(nd, G, prec);
    c->diff_hi = ac_arb_hi(nd);
    c->diff_lo = fmax(ac_arb_lo(nd), 0.0);
    c->f_lo = fmax(ac_arb_lo(nf), 0.0);
    c->f_hi = ac_arb_hi(nf);
    c->g_hi = ac_arb_hi(ng);
    if (arb_is_zero(nd)) {
        mpfr_set_zero(lo, 1);
        mpfr_set_zero(hi, 1);
    } else if (arb_is_positive(nf)) {
        arb_div(nd, nd, nf, prec);
        ac_arb_get_interval_mpfr(lo, hi, nd);
        if (mpfr_sgn(lo) < 0)
            mpfr_set_zero(lo, 1);
    } else {
        double l, h;
        t2_ratio_bounds(c->diff_lo, c->diff_hi, c->f_lo, c->f_hi, &l, &h);
        mpfr_set_d(lo, l, MPFR_RNDD);
        mpfr_set_inf(hi, 1);
    }
    arb_clear(nd);
    arb_clear(nf);
    arb_clear(ng);
    arb_mat_clear(X);
    arb_mat_clear(F);
    arb_mat_clear(G);
    (void)err;
    return AC_OK;
}

/* ---- precision from the magnitudes ----------------------------------------- */

/* log2 of an upper bound on ||a||_F (rows x cols block, row stride ld),
 * scaled so that nothing overflows; -inf for a zero block */
static double lg_fro(const double *a, size_t rows, size_t cols, size_t ld)
{
    double top = 0, s = 0;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            top = fmax(top, fabs(a[i * ld + j]));
    if (!(top > 0))
        return -INFINITY;
    if (!isfinite(top))
        return INFINITY;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            double x = a[i * ld + j] / top;
            s += x * x;
        }
    return log2(top) + 0.5 * log2(s) + 0x1p-40;
}

/* log2 of a bound on the largest logit |x_k' Wk_i' Wq_i x_j| of a layer at X
 * (Cauchy-Schwarz: ||Wk_i||_F ||Wq_i||_F max_j ||x_j||^2) */
static double lg_logits(const ac_mh *L, const ac_mat *X)
{
    double lx = -INFINITY, best = -INFINITY;
    size_t d = L->d, hs = L->hs;
    for (size_t j = 0; j < X->cols; j++)
        lx = fmax(lx, lg_fro(X->data + j, X->rows, 1, X->cols));
    for (size_t i = 0; i < L->h; i++)
        best = fmax(best, lg_fro(L->wk + i * hs * d, hs, d, d) +
                              lg_fro(L->wq + i * hs * d, hs, d, d) + 2 * lx);
    return best;
}

ac_schedule t2_sched_adapt(const ac_schedule *s, const ac_mh *W, const ac_mh *V,
                           const ac_mat *X)
{
    ac_schedule r = *s;
    if (r.n == 0)
        return r;
    double lg = fmax(lg_logits(W, X), lg_logits(V, X));
    if (!(lg > 0))
        return r;
    double need = ceil((lg + T2_PREC_MARGIN) / 64.0) * 64.0;
    long p = need > T2_PREC_CAP ? T2_PREC_CAP : (long)need;
    if (p <= r.prec[r.n - 1])
        return r;
    if (r.n < AC_MAX_STAGES)
        r.n++;
    r.prec[r.n - 1] = p;
    return r;
}

/* ---- the separation certificate ------------------------------------------- */

#define SEP_QUANTITY "||f_W(X) - g_V(X)||_F / ||f_W(X)||_F"

int ac_t2_certify(ac_t2_sep *s, const ac_mh *W, const ac_mh *V, const ac_schedule *sched,
                  double tol, ac_err *err)
{
    t2_dev_ctx c = {W, V, &s->X, 0, INFINITY, 0, INFINITY, INFINITY};
    ac_quantity q = {SEP_QUANTITY, t2_dev_stage0, t2_dev_ball, NULL, &c,
                     "interval products in double (gamma_k bound) + rigorous softmax, directed "
                     "norms and quotient",
                     "Arb ball arithmetic from the exact doubles", NULL};
    if (s->X.rows != W->d || V->d != W->d)
        return ac_err_set(err, AC_EUSAGE, "X has %zu rows, d = %zu", s->X.rows, W->d);
    if (!(tol >= 0) || !isfinite(tol))
        return ac_err_set(err, AC_EUSAGE, "separation: tolerance %g must be finite and >= 0",
                          tol);
    double t0 = ac_seconds();
    if (s->X.cols >= 1 && equal_columns(&s->X) && dev_uniform(&c)) {
        double lo, hi;
        t2_ratio_bounds(c.diff_lo, c.diff_hi, c.f_lo, c.f_hi, &lo, &hi);
        ac_cert_set(&s->cert, SEP_QUANTITY, AC_GT, tol, 1, T2_TRACE_PREC, lo, hi,
                    "equal columns: uniform softmax, f - g = (S_W - S_V) v 1' from exact "
                    "products, balls");
        s->cert.seconds = ac_seconds() - t0;
    } else {
        ac_schedule sa;
        if (sched)
            sa = t2_sched_adapt(sched, W, V, &s->X);
        int st = ac_decide(&s->cert, &q, AC_GT, tol, sched ? &sa : NULL, err);
        if (st)
            return st;
    }
    s->f_hi = c.f_hi;
    s->g_hi = c.g_hi;
    s->gap_lo = c.diff_lo;
    s->gap_hi = c.diff_hi;
    s->rel_lo = 0;
    if (s->cert.verdict == AC_PROVED && c.diff_lo > 0) {
        double den = ac_add_up(c.f_hi, c.g_hi);
        s->rel_lo = isfinite(den) && den > 0 ? ac_div_dn(c.diff_lo, den) : 0.0;
    }
    return AC_OK;
}

void ac_t2_sep_free(ac_t2_sep *s)
{
    if (s)
        ac_mat_free(&s->X);
}
