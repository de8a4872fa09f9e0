/* trace.c — the proof of Theorem 2 of paper 1 replayed on the instance
 * (--trace): each step of the case's argument with the quantity it claims
 * and a certified value (Arb balls at T2_TRACE_PREC bits from the exact
 * doubles, or an exact decision):
 *   trace_case1  S_W != S_V, and f_W(X) = S_W X, g_V(X) = S_V X at X = v 1'
 *                (paper 1, Theorem 2, case 1; doc/mathematics.md §4.4);
 *   trace_case2  M_i not skew, t_i != tau, the independence of {Wo_i Wv_i v},
 *                column 1 of f - g (case 2; doc/mathematics.md §4.5);
 *   trace_case3  M_i v1 != 0, the sign-separating v2, the softmax weights as
 *                alpha grows, head i's part of column 1 (case 3;
 *                doc/mathematics.md §4.6);
 * and last the certificate of the candidate X. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ball.h"
#include "attention/multihead_arb.h"
#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "t2_impl.h"

/* ---- Arb pieces of the layers --------------------------------------------- */

static void add_step(ac_t2_result *res, const char *name, const char *quantity, double lo,
                     double hi, int stage, long prec, const char *note)
{
    ac_step_add(res->steps, &res->nsteps, AC_T2_MAX_STEPS, name, quantity, lo, hi, stage, prec,
                note);
}

static void add_step_arb(ac_t2_result *res, const char *name, const char *quantity, const arb_t x,
                         int nonneg, const char *note)
{
    double lo = ac_arb_lo(x), hi = ac_arb_hi(x);
    if (nonneg && lo < 0)
        lo = 0;
    add_step(res, name, quantity, lo, hi, 1, T2_TRACE_PREC, note);
}

/* A = the rows x cols block of doubles x with row stride ld (exactly) */
static void arb_block(arb_mat_t A, const double *x, size_t rows, size_t cols, size_t ld)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            arb_set_d(arb_mat_entry(A, (slong)i, (slong)j), x[i * ld + j]);
}

/* y = Wo_i Wv_i x (d x 1) */
static void arb_ov_apply(arb_mat_t y, const ac_mh *L, size_t i, const arb_mat_t x, slong prec)
{
    slong d = (slong)L->d, hs = (slong)L->hs;
    arb_mat_t Wv, Wo, t;
    arb_mat_init(Wv, hs, d);
    arb_mat_init(Wo, d, hs);
    arb_mat_init(t, hs, arb_mat_ncols(x));
    arb_block(Wv, L->wv + i * L->hs * L->d, L->hs, L->d, L->d);
    arb_block(Wo, L->wo + i * L->hs, L->d, L->hs, L->h * L->hs);
    arb_mat_mul(t, Wv, x, prec);
    arb_mat_mul(y, Wo, t, prec);
    arb_mat_clear(Wv);
    arb_mat_clear(Wo);
    arb_mat_clear(t);
}

/* A = Wk_i^T Wq_i / sqrt(hs) (d x d) */
static void arb_logit_form(arb_mat_t A, const ac_mh *L, size_t i, slong prec)
{
    slong d = (slong)L->d, hs = (slong)L->hs;
    arb_mat_t K, KT, Q;
    arb_t rs;
    arb_mat_init(K, hs, d);
    arb_mat_init(KT, d, hs);
    arb_mat_init(Q, hs, d);
    arb_init(rs);
    arb_block(K, L->wk + i * L->hs * L->d, L->hs, L->d, L->d);
    arb_block(Q, L->wq + i * L->hs * L->d, L->hs, L->d, L->d);
    arb_mat_transpose(KT, K);
    arb_mat_mul(A, KT, Q, prec);
    arb_rsqrt_ui(rs, (ulong)L->hs, prec);
    arb_mat_scalar_mul_arb(A, A, rs, prec);
    arb_mat_clear(K);
    arb_mat_clear(KT);
    arb_mat_clear(Q);
    arb_clear(rs);
}

/* r = y' A x for column vectors (d x 1) */
static void arb_bilinear(arb_t r, const arb_mat_t y, const arb_mat_t A, const arb_mat_t x, slong prec)
{
    slong d = arb_mat_nrows(A);
    arb_mat_t t;
    arb_mat_init(t, d, 1);
    arb_mat_mul(t, A, x, prec);
    arb_zero(r);
    for (slong k = 0; k < d; k++)
        arb_addmul(r, arb_mat_entry(y, k, 0), arb_mat_entry(t, k, 0), prec);
    arb_mat_clear(t);
}

void t2_arb_col_of(arb_mat_t v, const ac_mat *X, size_t j)
{
    for (size_t i = 0; i < X->rows; i++)
        arb_set_d(arb_mat_entry(v, (slong)i, 0), AC_MAT(X, i, j));
}

/* Certified enclosure of sigma_h of B = [Wo_1 Wv_1 v, ..., Wo_h Wv_h v] (d x h). */
int t2_sigma_ov(double *lo, double *hi, const ac_mh *W, const arb_mat_t v, ac_err *err)
{
    slong d = (slong)W->d, h = (slong)W->h;
    arb_mat_t B, y;
    ac_imat Bi = {0};
    double *sl = NULL, *sh = NULL;
    int st = AC_OK;
    *lo = 0;
    *hi = INFINITY;
    if (h > d)
        return AC_OK;
    arb_mat_init(B, d, h);
    arb_mat_init(y, d, 1);
    for (slong i = 0; i < h; i++) {
        arb_ov_apply(y, W, (size_t)i, v, T2_TRACE_PREC);
        for (slong r = 0; r < d; r++)
            arb_set(arb_mat_entry(B, r, i), arb_mat_entry(y, r, 0));
    }
    sl = malloc((size_t)h * sizeof(double));
    sh = malloc((size_t)h * sizeof(double));
    if (!sl || !sh)
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
    if (!st && !(st = ac_arb_mat_to_imat(&Bi, B, err)) && !(st = ac_sv_enclose(&Bi, sl, sh, NULL, err))) {
        *lo = sl[h - 1];
        *hi = sh[h - 1];
    }
    free(sl);
    free(sh);
    ac_imat_free(&Bi);
    arb_mat_clear(B);
    arb_mat_clear(y);
    return st;
}

/* S X for a layer: Wo_cat (Wv_stack X) */
static void arb_S_apply(arb_mat_t Y, const ac_mh *L, const arb_mat_t X, slong prec)
{
    slong d = (slong)L->d, hh = (slong)(L->h * L->hs), n = arb_mat_ncols(X);
    arb_mat_t Wv, Wo, t;
    arb_mat_init(Wv, hh, d);
    arb_mat_init(Wo, d, hh);
    arb_mat_init(t, hh, n);
    arb_block(Wv, L->wv, (size_t)hh, L->d, L->d);
    arb_block(Wo, L->wo, L->d, (size_t)hh, (size_t)hh);
    arb_mat_mul(t, Wv, X, prec);
    arb_mat_mul(Y, Wo, t, prec);
    arb_mat_clear(Wv);
    arb_mat_clear(Wo);
    arb_mat_clear(t);
}

/* ---- the trace of each case ----------------------------------------------- */

/* What every case's trace uses: X and the two outputs F = f_W(X),
 * G = g_V(X), D = F - G, the columns x1, x2 of X (x2 = 0 when n = 1),
 * U = U/sqrt(dp) and A = A_i/sqrt(d/h) for the head hi the construction
 * uses. */
typedef struct {
    slong d, n, prec;
    size_t hi;
    arb_mat_t X, F, G, D, x1, x2, U, A;
} trace_ctx;

static void trace_ctx_init(trace_ctx *t, const ac_mh *W, const ac_mh *V, const ac_t2_sep *cand)
{
    slong d = (slong)W->d, n = (slong)cand->X.cols, prec = T2_TRACE_PREC;
    t->d = d;
    t->n = n;
    t->prec = prec;
    t->hi = cand->head ? cand->head - 1 : 0;
    arb_mat_init(t->X, d, n);
    arb_mat_init(t->F, d, n);
    arb_mat_init(t->G, d, n);
    arb_mat_init(t->D, d, n);
    arb_mat_init(t->x1, d, 1);
    arb_mat_init(t->x2, d, 1);
    arb_mat_init(t->A, d, d);
    arb_mat_init(t->U, d, d);
    t2_arb_pair(t->X, t->F, t->G, W, V, &cand->X, prec);
    arb_mat_sub(t->D, t->F, t->G, prec);
    t2_arb_col_of(t->x1, &cand->X, 0);
    if (n >= 2)
        t2_arb_col_of(t->x2, &cand->X, 1);
    arb_logit_form(t->U, V, 0, prec);     /* U/sqrt(dp) */
    arb_logit_form(t->A, W, t->hi, prec); /* A_i/sqrt(d/h) */
}

static void trace_ctx_clear(trace_ctx *t)
{
    arb_mat_clear(t->X);
    arb_mat_clear(t->F);
    arb_mat_clear(t->G);
    arb_mat_clear(t->D);
    arb_mat_clear(t->x1);
    arb_mat_clear(t->x2);
    arb_mat_clear(t->A);
    arb_mat_clear(t->U);
}

/* Case 1 (paper 1, Theorem 2): S_W != S_V exactly, and (S_W - S_V) v != 0. */
static void trace_case1_sw_sv(ac_t2_result *res, const ac_mh *W, const ac_mh *V,
                              const trace_ctx *t)
{
    slong d = t->d, prec = t->prec;
    ac_xmat SW, SV, Dx;
    if (t2_x_S(&SW, W) != AC_XMAT_OK || t2_x_S(&SV, V) != AC_XMAT_OK)
        return;
    arb_mat_t Da, t1;
    arb_t r;
    arb_mat_init(Da, d, d);
    arb_mat_init(t1, d, 1);
    arb_init(r);
    ac_xmat_sub(&Dx, &SW, &SV);
    ac_xmat_to_arb(Da, &Dx, prec);
    arb_mat_frobenius_norm(r, Da, prec);
    add_step(res, "case 1: S_W != S_V", "||S_W - S_V||_F", ac_arb_lo(r), ac_arb_hi(r),
             AC_STAGE_EXACT, 0, "decided by exact comparison of the products; the value "
             "is a 128-bit enclosure");
    arb_mat_mul(t1, Da, t->x1, prec);
    arb_mat_frobenius_norm(r, t1, prec);
    add_step_arb(res, "(S_W - S_V) v != 0 for the generic v", "||(S_W - S_V) v||_2", r, 1,
                 "v = X[:, 1]; any v outside the null space of S_W - S_V works");
    arb_mat_clear(Da);
    arb_mat_clear(t1);
    arb_clear(r);
    ac_xmat_clear(&Dx);
    ac_xmat_clear(&SW);
    ac_xmat_clear(&SV);
}

/* Case 1 (paper 1, Theorem 2): X = v 1' is fixed by every column-stochastic
 * P, so f_W(X) = S_W X and g_V(X) = S_V X. */
static void trace_case1(ac_t2_result *res, const ac_mh *W, const ac_mh *V, const trace_ctx *t)
{
    slong prec = t->prec;
    arb_mat_t SX;
    arb_t r;
    int equal = 1; /* X = v 1' exactly (X is exact in t->X) */
    trace_case1_sw_sv(res, W, V, t);
    for (slong i = 0; i < t->d && equal; i++)
        for (slong j = 1; j < t->n && equal; j++)
            equal = arb_equal(arb_mat_entry(t->X, i, j), arb_mat_entry(t->X, i, 0));
    if (equal) {
        /* the identity itself, no enclosure of the layers: every logit column
         * X'A x_j = (v'Av) 1 is constant, so every softmax is exactly uniform
         * (huge logits cost nothing) */
        add_step(res, "X = v 1': every logit column is constant, softmax uniform, f_W(X) = "
                 "S_W X", "||f_W(X) - S_W X||_F", 0, 0, AC_STAGE_EXACT, 0,
                 "an identity for equal columns, whatever the logits (doc/mathematics.md "
                 "§4.4)");
        add_step(res, "likewise g_V(X) = S_V X", "||g_V(X) - S_V X||_F", 0, 0, AC_STAGE_EXACT,
                 0, "so f_W(X) - g_V(X) = (S_W - S_V) v 1' exactly");
        return;
    }
    arb_mat_init(SX, t->d, t->n);
    arb_init(r);
    arb_S_apply(SX, W, t->X, prec);
    arb_mat_sub(SX, t->F, SX, prec);
    arb_mat_frobenius_norm(r, SX, prec);
    add_step_arb(res, "X = v 1': X P = X for column-stochastic P, so f_W(X) = S_W X",
                 "||f_W(X) - S_W X||_F", r, 1, "0 in exact arithmetic; the enclosure "
                 "contains 0");
    arb_S_apply(SX, V, t->X, prec);
    arb_mat_sub(SX, t->G, SX, prec);
    arb_mat_frobenius_norm(r, SX, prec);
    add_step_arb(res, "likewise g_V(X) = S_V X", "||g_V(X) - S_V X||_F", r, 1,
                 "so f_W(X) - g_V(X) = (S_W - S_V) v 1'");
    arb_mat_clear(SX);
    arb_clear(r);
}

/* Case 2 (paper 1, Theorem 2): S_W = S_V, M_i + M_i' != 0 for the head the
 * construction uses, and its self-logit t_i differs from tau. */
static void trace_case2_logits(ac_t2_result *res, const ac_mh *W, const trace_ctx *t)
{
    slong d = t->d, prec = t->prec;
    char name[96], note[200];
    arb_mat_t M, MT;
    arb_t r, s;
    add_step(res, "case 2: S_W = S_V", "||S_W - S_V||_F", 0, 0, AC_STAGE_EXACT, 0,
             "exact comparison of the dyadic products");
    arb_mat_init(M, d, d);
    arb_mat_init(MT, d, d);
    arb_init(r);
    arb_init(s);
    arb_mat_sub(M, t->U, t->A, prec);
    arb_mat_transpose(MT, M);
    arb_mat_add(M, M, MT, prec);
    arb_mat_frobenius_norm(r, M, prec);
    snprintf(name, sizeof name, "M_%zu is not skew-symmetric", t->hi + 1);
    snprintf(note, sizeof note, "M_i = U/sqrt(dp) - Wk_i'Wq_i/sqrt(d/h); non-skew for %zu of "
             "%zu heads (exact)", res->cls.nonskew, W->h);
    add_step_arb(res, name, "||M_i + M_i'||_F", r, 1, note);
    /* t_i - tau = v'M_i v (scaled), v = X[:, 1] */
    arb_bilinear(r, t->x1, t->A, t->x1, prec);
    arb_bilinear(s, t->x1, t->U, t->x1, prec);
    arb_sub(r, r, s, prec);
    arb_abs(r, r);
    snprintf(name, sizeof name, "X = v e_1': t_%zu != tau for the generic v", t->hi + 1);
    add_step_arb(res, name, "|v'A_i v/sqrt(d/h) - v'U v/sqrt(dp)|", r, 1,
                 "so phi(t_i) != phi(tau): the head's weight on v differs");
    arb_mat_clear(M);
    arb_mat_clear(MT);
    arb_clear(r);
    arb_clear(s);
}

/* phi(t) = e^t / (e^t + n - 1) for t = x1' A x1 */
static void trace_phi(arb_t ph, const arb_mat_t x1, const arb_mat_t A, slong n, slong prec)
{
    arb_t s, e;
    arb_init(s);
    arb_init(e);
    arb_bilinear(s, x1, A, x1, prec);
    arb_exp(e, s, prec);
    arb_add_ui(ph, e, (ulong)(n - 1), prec);
    arb_div(ph, e, ph, prec);
    arb_clear(s);
    arb_clear(e);
}

/* Case 2 (paper 1, Theorem 2): column 1 of f_W(X) - g_V(X) is
 * sum_i (phi(t_i) - phi(tau)) Wo_i Wv_i v, nonzero by the independence of
 * the Wo_i Wv_i v. */
static void trace_case2_column1(ac_t2_result *res, const ac_mh *W, const trace_ctx *t)
{
    slong d = t->d, prec = t->prec;
    arb_t ph, pt, r;
    arb_mat_t pred, y, Ai;
    arb_init(ph);
    arb_init(pt);
    arb_init(r);
    arb_mat_init(pred, d, 1);
    arb_mat_init(y, d, 1);
    arb_mat_init(Ai, d, d);
    trace_phi(ph, t->x1, t->U, t->n, prec);
    for (size_t i = 0; i < W->h; i++) {
        arb_logit_form(Ai, W, i, prec);
        trace_phi(pt, t->x1, Ai, t->n, prec);
        arb_sub(pt, pt, ph, prec);
        arb_ov_apply(y, W, i, t->x1, prec);
        for (slong k = 0; k < d; k++)
            arb_addmul(arb_mat_entry(pred, k, 0), pt, arb_mat_entry(y, k, 0), prec);
    }
    arb_mat_frobenius_norm(r, pred, prec);
    add_step_arb(res, "column 1: sum_i (phi(t_i) - phi(tau)) Wo_i Wv_i v != 0",
                 "||sum_i (phi(t_i) - phi(tau)) Wo_i Wv_i v||_2", r, 1,
                 "phi(t) = e^t/(e^t + n - 1); nonzero by the independence above");
    for (slong k = 0; k < d; k++)
        arb_sub(arb_mat_entry(pred, k, 0), arb_mat_entry(t->D, k, 0), arb_mat_entry(pred, k, 0),
                prec);
    arb_mat_frobenius_norm(r, pred, prec);
    add_step_arb(res, "... and it is column 1 of f_W(X) - g_V(X)",
                 "||(f - g)[:, 1] - sum_i (phi(t_i) - phi(tau)) Wo_i Wv_i v||_2", r, 1,
                 "0 in exact arithmetic (uses S_W = S_V)");
    arb_mat_clear(pred);
    arb_mat_clear(y);
    arb_mat_clear(Ai);
    arb_clear(ph);
    arb_clear(pt);
    arb_clear(r);
}

/* Case 2 (paper 1, Theorem 2): X = v e_1'. */
static int trace_case2(ac_t2_result *res, const ac_mh *W, const trace_ctx *t, ac_err *err)
{
    double slo, shi;
    int st;
    trace_case2_logits(res, W, t);
    if ((st = t2_sigma_ov(&slo, &shi, W, t->x1, err)))
        return st;
    add_step(res, "{Wo_i Wv_i v} linearly independent (generic v)",
             "sigma_h([Wo_1 Wv_1 v, ..., Wo_h Wv_h v])", slo, shi, 1, t->prec,
             slo > 0 ? "> 0: independent for this v (not for every v: see audit)"
                     : "not certified positive");
    if (t->n >= 2) {
        arb_mat_t Dr;
        arb_t r;
        arb_init(r);
        arb_mat_window_init(Dr, t->D, 0, 1, t->d, t->n);
        arb_mat_frobenius_norm(r, Dr, t->prec);
        arb_mat_window_clear(Dr);
        add_step_arb(res, "columns 2..n of f_W(X) and g_V(X) agree", "||(f - g)[:, 2:n]||_F",
                     r, 1, "both equal S v / n = S_V v / n; 0 in exact arithmetic");
        arb_clear(r);
    }
    trace_case2_column1(res, W, t);
    return AC_OK;
}

/* Case 3 (paper 1, Theorem 2): S_W = S_V, every M_i skew, M_i v1 != 0, and
 * v2 separates the signs of the logits of token 2 in column 1. */
static void trace_case3_logits(ac_t2_result *res, const trace_ctx *t)
{
    slong d = t->d, prec = t->prec;
    char name[96];
    arb_mat_t M, Mx;
    arb_t r;
    add_step(res, "case 3: S_W = S_V", "||S_W - S_V||_F", 0, 0, AC_STAGE_EXACT, 0,
             "exact comparison of the dyadic products");
    add_step(res, "every M_i is skew-symmetric", "max_i ||M_i + M_i'||_F", 0, 0,
             AC_STAGE_EXACT, 0, "exact: sqrt(d/h)(U + U') = sqrt(dp)(A_i + A_i') entrywise");
    arb_mat_init(M, d, d);
    arb_mat_init(Mx, d, 1);
    arb_init(r);
    arb_mat_sub(M, t->U, t->A, prec);
    arb_mat_mul(Mx, M, t->x1, prec);
    arb_mat_frobenius_norm(r, Mx, prec);
    snprintf(name, sizeof name, "M_%zu v1 != 0 (rank M_i >= dp - d/h >= 1)", t->hi + 1);
    add_step_arb(res, name, "||M_i v1||_2", r, 1, "v1 = X[:, 1], generic");
    arb_bilinear(r, t->x2, t->U, t->x1, prec);
    add_step_arb(res, "v2' U v1 / sqrt(dp) > 0 (v2 = alpha v2~ = X[:, 2])",
                 "v2'U v1/sqrt(dp)", r, 0, "the logit of token 2 in column 1 of g_V: grows "
                 "with alpha");
    arb_bilinear(r, t->x2, t->A, t->x1, prec);
    snprintf(name, sizeof name, "v2' Wk_%zu'Wq_%zu v1 / sqrt(d/h) < 0", t->hi + 1, t->hi + 1);
    add_step_arb(res, name, "v2'A_i v1/sqrt(d/h)", r, 0,
                 "the logit of token 2 in column 1 of head i of f_W: falls with alpha");
    arb_mat_clear(M);
    arb_mat_clear(Mx);
    arb_clear(r);
}

/* Case 3 (paper 1, Theorem 2): as alpha grows, g_V's weight on v2 in column
 * 1 tends to 1 and head i's of f_W to 0, so head i's part of column 1 of
 * f_W(X) - g_V(X) is not 0. */
static void trace_case3_weights(ac_t2_result *res, const ac_mh *W, const ac_mh *V,
                                const trace_ctx *t, double alpha)
{
    slong d = t->d, n = t->n, prec = t->prec;
    size_t hi = t->hi;
    char name[96];
    arb_mat_t Pg, Pf, w, y;
    arb_t r, s;
    arb_mat_init(Pg, n, n);
    arb_mat_init(Pf, n, n);
    arb_mat_init(w, d, 1);
    arb_mat_init(y, d, 1);
    arb_init(r);
    arb_init(s);
    ac_mh_head_softmax_arb(Pg, V, 0, t->X, prec);
    ac_mh_head_softmax_arb(Pf, W, hi, t->X, prec);
    snprintf(name, sizeof name, "alpha = %g: g_V puts weight -> 1 on v2 in column 1", alpha);
    add_step_arb(res, name, "Softmax(X'UX/sqrt(dp))[2, 1]", arb_mat_entry(Pg, 1, 0), 1,
                 "every head of g_V shares U, so this is g_V's weight");
    snprintf(name, sizeof name, "... while head %zu of f_W puts weight -> 0 on it", hi + 1);
    add_step_arb(res, name, "Softmax(X'A_i X/sqrt(d/h))[2, 1]", arb_mat_entry(Pf, 1, 0), 1, "");
    /* head i's part: Wo_i Wv_i ((Pf11 - Pg11) v1 + (Pf21 - Pg21) v2) */
    arb_sub(r, arb_mat_entry(Pf, 0, 0), arb_mat_entry(Pg, 0, 0), prec);
    arb_sub(s, arb_mat_entry(Pf, 1, 0), arb_mat_entry(Pg, 1, 0), prec);
    for (slong k = 0; k < d; k++) {
        arb_mul(arb_mat_entry(w, k, 0), r, arb_mat_entry(t->x1, k, 0), prec);
        arb_addmul(arb_mat_entry(w, k, 0), s, arb_mat_entry(t->x2, k, 0), prec);
    }
    arb_ov_apply(y, W, hi, w, prec);
    arb_mat_frobenius_norm(r, y, prec);
    snprintf(name, sizeof name, "head %zu's part of column 1 of f_W(X) - g_V(X) != 0", hi + 1);
    add_step_arb(res, name, "||Wo_i Wv_i (dphi_1 v1 + dphi_2 v2)||_2", r, 1,
                 "S_W = S_V has full rank, so the ranges of the Wo_i are independent and "
                 "no other head cancels it");
    arb_mat_clear(w);
    arb_mat_clear(y);
    arb_mat_clear(Pg);
    arb_mat_clear(Pf);
    arb_clear(r);
    arb_clear(s);
}

/* Case 3 (paper 1, Theorem 2): X = [v1, alpha v2~, 0, ...]. */
static void trace_case3(ac_t2_result *res, const ac_mh *W, const ac_mh *V, const trace_ctx *t,
                        double alpha)
{
    trace_case3_logits(res, t);
    trace_case3_weights(res, W, V, t, alpha);
}

int t2_trace(ac_t2_result *res, const ac_mh *W, const ac_mh *V, const ac_t2_sep *cand,
             ac_err *err)
{
    trace_ctx t;
    int st = AC_OK;
    trace_ctx_init(&t, W, V, cand);
    switch (res->cls.kase) {
    case AC_T2_CASE_1: trace_case1(res, W, V, &t); break;
    case AC_T2_CASE_2: st = trace_case2(res, W, &t, err); break;
    case AC_T2_CASE_3: trace_case3(res, W, V, &t, cand->alpha); break;
    default: break;
    }
    /* the final inequality: the certificate of this X */
    if (!st)
        add_step(res, "f_W(X) != g_V(X), beyond tol", "||f_W(X) - g_V(X)||_F / ||f_W(X)||_F",
                 cand->cert.lo, cand->cert.hi, cand->cert.stage, cand->cert.prec,
                 cand->cert.verdict == AC_PROVED ? "> tol: separated at this X"
                                                 : "not certified above tol");
    trace_ctx_clear(&t);
    return st;
}
