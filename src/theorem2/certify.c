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

/* ---- the separation certificate ------------------------------------------- */

/* Lower bound on sqrt(sum m_i^2) over nonnegative m_i (rounded down; the
 * floating-point sum of nonnegative terms is at most (1 + gamma_{N-1}) times
 * the exact one). */
double t2_norm2_dn(const double *m, size_t N)
{
    double s = 0;
    for (size_t i = 0; i < N; i++) {
        double t = ac_mul_dn(m[i], m[i]);
        if (t > 0)
            s += t;
    }
    if (!isfinite(s))
        s = DBL_MAX;
    if (!(s > 0))
        return 0.0;
    double g = ac_gamma_up((double)(N ? N : 1));
    double q = ac_div_dn(s, ac_add_up(1.0, g));
    return q > 0 ? ac_sqrt_dn(q) : 0.0;
}

typedef struct {
    const ac_mh *W, *V;
    const ac_mat *X;
    double f_hi, g_hi;
} sep_ctx;

static int sep_stage0(void *vc, double *lo, double *hi, ac_err *err)
{
    sep_ctx *c = vc;
    ac_imat F = {0}, G = {0};
    int st;
    *lo = 0;
    *hi = INFINITY;
    c->f_hi = c->g_hi = INFINITY;
    if ((st = t2_enclose_pair(&F, &G, c->W, c->V, c->X, err)))
        return st;
    size_t N = F.rows * F.cols;
    double *m = calloc(N ? N : 1, sizeof(double)), *u = calloc(N ? N : 1, sizeof(double));
    if (!m || !u) {
        free(m);
        free(u);
        ac_imat_free(&F);
        ac_imat_free(&G);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    if (ac_imat_finite(&F) && ac_imat_finite(&G)) {
        for (size_t i = 0; i < N; i++) {
            /* f - g in [fl - gh, fh - gl] */
            double dl = ac_sub_dn(ac_imat_lo(&F, i), ac_imat_hi(&G, i));
            double dh = ac_sub_up(ac_imat_hi(&F, i), ac_imat_lo(&G, i));
            m[i] = t2_mig(dl, dh);
            u[i] = t2_mag(dl, dh);
        }
        *lo = t2_norm2_dn(m, N);
        *hi = ac_norm2_up(u, N);
        for (size_t i = 0; i < N; i++)
            u[i] = t2_mag(ac_imat_lo(&F, i), ac_imat_hi(&F, i));
        c->f_hi = ac_norm2_up(u, N);
        for (size_t i = 0; i < N; i++)
            u[i] = t2_mag(ac_imat_lo(&G, i), ac_imat_hi(&G, i));
        c->g_hi = ac_norm2_up(u, N);
    }
    free(m);
    free(u);
    ac_imat_free(&F);
    ac_imat_free(&G);
    return AC_OK;
}

static int sep_ball(void *vc, long prec, mpfr_t lo, mpfr_t hi, ac_err *err)
{
    sep_ctx *c = vc;
    slong d = (slong)c->X->rows, n = (slong)c->X->cols;
    arb_mat_t X, F, G;
    arb_t t;
    arb_mat_init(X, d, n);
    arb_mat_init(F, d, n);
    arb_mat_init(G, d, n);
    arb_init(t);
    t2_arb_pair(X, F, G, c->W, c->V, c->X, prec);
    arb_mat_frobenius_norm(t, F, prec);
    c->f_hi = ac_arb_hi(t);
    arb_mat_frobenius_norm(t, G, prec);
    c->g_hi = ac_arb_hi(t);
    arb_mat_sub(F, F, G, prec);
    arb_mat_frobenius_norm(t, F, prec);
    ac_arb_get_interval_mpfr(lo, hi, t);
    if (mpfr_sgn(lo) < 0)
        mpfr_set_zero(lo, 1);
    arb_clear(t);
    arb_mat_clear(X);
    arb_mat_clear(F);
    arb_mat_clear(G);
    (void)err;
    return AC_OK;
}

int ac_t2_certify(ac_t2_sep *s, const ac_mh *W, const ac_mh *V, const ac_schedule *sched,
                  ac_err *err)
{
    sep_ctx c = {W, V, &s->X, INFINITY, INFINITY};
    ac_quantity q = {"||f_W(X) - g_V(X)||_F", sep_stage0, sep_ball, NULL, &c,
                     "interval products in double (gamma_k bound) + rigorous softmax",
                     "Arb ball arithmetic from the exact doubles", NULL};
    if (s->X.rows != W->d || V->d != W->d)
        return ac_err_set(err, AC_EUSAGE, "X has %zu rows, d = %zu", s->X.rows, W->d);
    int st = ac_decide(&s->cert, &q, AC_GT, 0.0, sched, err);
    if (st)
        return st;
    s->f_hi = c.f_hi;
    s->g_hi = c.g_hi;
    s->rel_lo = 0;
    if (s->cert.verdict == AC_PROVED && s->cert.lo > 0) {
        double den = ac_add_up(c.f_hi, c.g_hi);
        s->rel_lo = isfinite(den) && den > 0 ? ac_div_dn(s->cert.lo, den) : 0.0;
    }
    return AC_OK;
}

void ac_t2_sep_free(ac_t2_sep *s)
{
    if (s)
        ac_mat_free(&s->X);
}
