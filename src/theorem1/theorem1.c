/* theorem1.c — Theorem 1 (representation by one head) on concrete instances
 * (attncheck/theorem1.h, MATH.md §1).
 *
 * Dimension letters: d model width, n tokens, dk head size, r = rank X.
 * Buffers are row-major: X d x n, P n x n, Wk/Wq dk x d, logits n x n with the
 * softmax over each column.
 */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_multimin.h>
#include <mpfr.h>

#include "attention/head_impl.h"
#include "core/ac_arb.h"
#include "core/ball.h"
#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "attncheck/rng.h"
#include "attncheck/theorem1.h"

void ac_t1_opts_default(ac_t1_opts *o)
{
    memset(o, 0, sizeof *o);
    o->tol = AC_T1_TOL_DEFAULT;
    o->sched = ac_schedule_default();
    o->optimize = 200;
    o->want_weights = 1;
}

double ac_t1_colsum_tol(size_t n)
{
    return AC_T1_COLSUM_FACTOR * (double)(n ? n : 1) * AC_U;
}

/* ---- validation ----------------------------------------------------------- */

static int check_finite(const ac_mat *A, const char *name, ac_err *err)
{
    for (size_t i = 0; i < A->rows; i++)
        for (size_t j = 0; j < A->cols; j++) {
            double v = AC_MAT(A, i, j);
            if (!isfinite(v))
                return ac_err_set(err, AC_EDATA, "%s: entry (%zu, %zu) is %s", name, i, j,
                                  v != v ? "NaN" : (v > 0 ? "+Inf" : "-Inf"));
        }
    return AC_OK;
}

int ac_t1_validate(const ac_mat *X, const char *xname, const ac_mat *P, const char *pname,
                   const double *d0, size_t nd0, const char *d0name, size_t dk, ac_err *err)
{
    int st;
    size_t d = X->rows, n = X->cols;
    if (n == 0 || d == 0)
        return ac_err_set(err, AC_EDATA,
                          "%s: X is %zu x %zu; it needs d >= 1 rows and n >= 1 "
                          "columns (one per token)",
                          xname, d, n);
    if (dk == 0)
        return ac_err_set(err, AC_EUSAGE, "head size dk must be at least 1");
    if (P->rows != n || P->cols != n)
        return ac_err_set(err, AC_EDATA,
                          "%s: P is %zu x %zu but X (%s) has n = %zu columns, so "
                          "P must be %zu x %zu",
                          pname, P->rows, P->cols, xname, n, n, n);
    if ((st = check_finite(X, xname, err)) || (st = check_finite(P, pname, err)))
        return st;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (!(AC_MAT(P, i, j) > 0))
                return ac_err_set(err, AC_EDATA,
                                  "%s: entry (%zu, %zu) = %g is not positive "
                                  "(a softmax output is always > 0)",
                                  pname, i, j, AC_MAT(P, i, j));
    double tol = ac_t1_colsum_tol(n);
    for (size_t j = 0; j < n; j++) {
        double lo, hi;
        ac_sum_enclose(P->data + j, n, n, &lo, &hi);
        if (lo > 1 + tol || hi < 1 - tol) {
            double s = 0.5 * (lo + hi);
            return ac_err_set(err, AC_EDATA,
                              "%s: column %zu sums to 1%+.3g, not 1 (tolerance "
                              "%.0f*n*u = %.3g; P must be column-stochastic: renormalise with "
                              "P /= P.sum(axis=0) or pass --normalize)",
                              pname, j, s - 1, AC_T1_COLSUM_FACTOR, tol);
        }
    }
    if (d0) {
        if (nd0 != n)
            return ac_err_set(err, AC_EDATA, "%s: D0 has %zu entries, expected n = %zu", d0name,
                              nd0, n);
        for (size_t j = 0; j < n; j++)
            if (!isfinite(d0[j]) || !(d0[j] > 0))
                return ac_err_set(err, AC_EDATA,
                                  "%s: entry %zu = %g is not a positive finite "
                                  "number (D0 is a positive diagonal)",
                                  d0name, j, d0[j]);
    }
    return AC_OK;
}

/* ---- generators ----------------------------------------------------------- */

int ac_t1_generate(ac_mat *X, ac_mat *P, size_t d, size_t n, uint64_t seed, ac_err *err)
{
    int st;
    X->data = P->data = NULL;
    if (d == 0 || n == 0)
        return ac_err_set(err, AC_EUSAGE, "generated instance needs d >= 1 and n >= 1");
    if ((st = ac_mat_init(X, d, n, err)) || (st = ac_mat_init(P, n, n, err))) {
        ac_mat_free(X);
        return st;
    }
    ac_rng r;
    ac_rng_init(&r, seed, 1, 0);
    ac_rng_normal_fill(&r, X->data, d * n);
    double *col = malloc(n * sizeof(double));
    if (!col) {
        ac_mat_free(X);
        ac_mat_free(P);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    for (size_t j = 0; j < n; j++) {
        ac_rng_init(&r, seed, 2, j);
        ac_rng_dirichlet(&r, n, NULL, col);
        for (size_t i = 0; i < n; i++)
            AC_MAT(P, i, j) = col[i];
    }
    free(col);
    return AC_OK;
}

int ac_t1_generate_representable(ac_mat *P, const ac_mat *X, size_t dk, uint64_t seed, ac_err *err)
{
    size_t d = X->rows;
    ac_mat Wk = {0}, Wq = {0};
    int st;
    P->data = NULL;
    if (dk == 0)
        return ac_err_set(err, AC_EUSAGE, "head size dk must be at least 1");
    if ((st = ac_mat_init(&Wk, dk, d, err)) || (st = ac_mat_init(&Wq, dk, d, err)))
        goto out;
    ac_rng r;
    ac_rng_init(&r, seed, 3, 0);
    ac_rng_normal_fill(&r, Wk.data, dk * d);
    ac_rng_normal_fill(&r, Wq.data, dk * d);
    double s = 1.0 / sqrt((double)d);
    for (size_t i = 0; i < dk * d; i++) {
        Wk.data[i] *= s;
        Wq.data[i] *= s;
    }
    st = ac_head_softmax(P, X, &Wk, &Wq, err);
out:
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    return st;
}

int ac_t1_example_paper(ac_mat *X, ac_mat *P, ac_err *err)
{
    int st;
    X->data = P->data = NULL;
    if ((st = ac_mat_init(X, 1, 2, err)) || (st = ac_mat_init(P, 2, 2, err))) {
        ac_mat_free(X);
        return st;
    }
    X->data[0] = 1.0;
    X->data[1] = 0.0;
    P->data[0] = 0.5;
    P->data[1] = 0.75;
    P->data[2] = 0.5;
    P->data[3] = 0.25;
    return AC_OK;
}

static int certify_weights(ac_cert *cert, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                           const ac_mat *P, const double *pre, const ac_t1_opts *o, ac_err *err)
{
    return ac_head_certify_pre(cert, X, Wk, Wq, P, pre, o->tol, &o->sched, err);
}

/* ---- the construction of §1.1 (route CONSTRUCT) --------------------------- */

static void add_step(ac_t1_result *res, const char *name, const char *quantity, double lo,
                     double hi, int stage, long prec, const char *note)
{
    ac_step_add(res->steps, &res->nsteps, AC_T1_MAX_STEPS, name, quantity, lo, hi, stage, prec,
                note);
}

/* Certified max_ij |P_ij - P_ij / s_j|, s_j the column sums. */
static double normalisation_gap(const ac_mat *P)
{
    size_t n = P->rows;
    double gap = 0;
    for (size_t j = 0; j < n; j++) {
        double lo, hi;
        ac_sum_enclose(P->data + j, n, n, &lo, &hi);
        /* |1 - 1/s| over s in [lo, hi] */
        double f = fmax(fabs(ac_sub_up(1.0, ac_div_dn(1.0, hi))),
                        fabs(ac_sub_dn(1.0, ac_div_up(1.0, lo))));
        f = ac_up(f);
        for (size_t i = 0; i < n; i++) {
            double g = ac_mul_up(AC_MAT(P, i, j), f);
            if (g > gap)
                gap = g;
        }
    }
    return gap;
}

/* Wt = sqrt(dk) log(P D0) (eq. 6); Wk = [X^+; 0], Wq = [Wt X^+; 0] (step 5). */
static int construct_theorem1(ac_t1_result *res, ac_mat *Wt, const ac_mat *Y, const ac_mat *P,
                              const double *d0, size_t dk, ac_err *err)
{
    size_t n = P->rows, d = Y->cols;
    ac_mat WtY = {0};
    int st;
    double sq = sqrt((double)dk);
    if ((st = ac_mat_init(Wt, n, n, err)))
        return st;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            AC_MAT(Wt, i, j) = sq * (log(AC_MAT(P, i, j)) + (d0 ? log(d0[j]) : 0.0));
    if ((st = ac_mat_init(&WtY, n, d, err)) ||
        (st = ac_gemm(&WtY, AC_NOTRANS, Wt, AC_NOTRANS, Y, err)) ||
        (st = ac_mat_init(&res->Wk, dk, d, err)) || (st = ac_mat_init(&res->Wq, dk, d, err))) {
        ac_mat_free(&WtY);
        return st;
    }
    memcpy(res->Wk.data, Y->data, n * d * sizeof(double));
    memcpy(res->Wq.data, WtY.data, n * d * sizeof(double));
    ac_mat_free(&WtY);
    return AC_OK;
}

/* Trace of eqs. (4) and (7) for the written weights; the same interval
 * products give the stage-0 enclosure pre[0..1] of max|Softmax - P|. */
static int trace_theorem1(ac_t1_result *res, double *pre, const ac_mat *X, const ac_mat *Wt,
                          const ac_mat *P, const double *d0, size_t dk, const ac_imat *YX,
                          ac_err *err)
{
    size_t n = X->cols, N = n * n;
    double *llo = malloc(N * sizeof(double)), *lhi = malloc(N * sizeof(double));
    ac_imat S = {0};
    int st = AC_OK;
    if (!llo || !lhi) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    /* Wk = [X^+; 0]: Wk X = [X^+ X; 0], already enclosed by the rank step */
    ac_imat K = {0};
    const ac_imat *Kp = NULL;
    if (YX && YX->mid && YX->rows == n && YX->cols == n) {
        if (dk == n)
            Kp = YX;
        else if ((st = ac_imat_init(&K, dk, n, 1, err)) == AC_OK) {
            memcpy(K.mid, YX->mid, n * n * sizeof(double));
            memcpy(K.rad, YX->rad, n * n * sizeof(double));
            Kp = &K;
        } else
            goto out;
    }
    st = ac_head_logits_stage0(llo, lhi, &S, X, &res->Wk, &res->Wq, Kp, err);
    ac_imat_free(&K);
    if (st)
        goto out;
    double e4 = ac_imat_maxdev_up(&S, Wt->data, 0);
    double e4lo = 0;
    for (size_t i = 0; i < N; i++) {
        double dlo = fmax(ac_sub_dn(ac_imat_lo(&S, i), Wt->data[i]),
                          ac_sub_dn(Wt->data[i], ac_imat_hi(&S, i)));
        if (dlo > e4lo)
            e4lo = dlo;
    }
    add_step(res, "eq. (4): X'Wk'WqX = Wk~'Wq~", "max|(Wk X)'(Wq X) - Wkq~|", e4lo, e4,
             AC_STAGE_DOUBLE, 53, "X^+ cancels X: the logits are the chosen Wkq~ (eq. 4)");
    ac_imat_free(&S);
    /* stage 0 of the final identity from the same logits (the softmax bounds
     * overwrite nothing: separate buffers) */
    {
        double *plo = malloc(N * sizeof(double)), *phi = malloc(N * sizeof(double));
        if (!plo || !phi) {
            free(plo);
            free(phi);
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            goto out;
        }
        if (ac_head_softmax_enclose(plo, phi, llo, lhi, n))
            ac_head_maxdev_from_bounds(plo, phi, P->data, N, &pre[0], &pre[1]);
        else {
            pre[0] = 0;
            pre[1] = INFINITY;
        }
        free(plo);
        free(phi);
    }
    /* eq. (7): column sums of exp(Wkq~/sqrt(dk)) equal the diagonal of D0 */
    double s_lo = ac_div_dn(1.0, ac_sqrt_up((double)dk)),
           s_hi = ac_div_up(1.0, ac_sqrt_dn((double)dk));
    double e7 = 0, e7lo = 0;
    double *el = malloc(n * sizeof(double)), *eh = malloc(n * sizeof(double));
    double *xa = malloc(n * sizeof(double)), *xb = malloc(n * sizeof(double));
    double *tmp = malloc(n * sizeof(double));
    if (!el || !eh || !xa || !xb || !tmp) {
        free(el);
        free(eh);
        free(xa);
        free(xb);
        free(tmp);
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (size_t j = 0; j < n; j++) {
        for (size_t i = 0; i < n; i++) {
            double w = Wt->data[i * n + j];
            xa[i] = w >= 0 ? ac_mul_dn(w, s_lo) : ac_mul_dn(w, s_hi);
            xb[i] = w >= 0 ? ac_mul_up(w, s_hi) : ac_mul_up(w, s_lo);
        }
        ac_exp_enclose_array(xa, n, el, tmp);
        ac_exp_enclose_array(xb, n, tmp, eh);
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
    free(eh);
    free(xa);
    free(xb);
    free(tmp);
    add_step(res, "eq. (7): 1'exp(Wkq~/sqrt(dk)) = 1'D0",
             "max_j |1'exp(Wkq~/sqrt(dk))_j / D0_jj - 1|", e7lo, e7, AC_STAGE_DOUBLE, 53,
             "the softmax normaliser D equals D0, so Softmax(Wkq~/sqrt(dk)) = P D0 D0^-1 = P");
out:
    free(llo);
    free(lhi);
    ac_imat_free(&S);
    return st;
}

/* ---- the decision procedure of MATH.md §1.3 (route DECIDE) ---------------- */

typedef struct {
    const ac_mat *X, *P;
    size_t n, r, dk;
    const size_t *piv; /* r independent rows of X (NULL: rows 0..r-1 are) */
    int pi_identity;   /* r == n: Pi = I */
    int one_in_row;    /* 1 in the row space of X: 1 yes, 0 no, -1 unknown */
    int one_perp;      /* X 1 = 0 exactly (Pi 1 = 0) */
} decide_ctx;

/* Pi (projector on the row space of X) and L = log P in balls. Returns 0 if
 * the Gram matrix of the basis rows could not be proved positive definite at
 * this precision. */
static int ball_pi_L(arb_mat_t Pi, arb_mat_t L, const decide_ctx *c, slong prec)
{
    slong n = (slong)c->n, r = (slong)c->r;
    for (slong i = 0; i < n; i++)
        for (slong j = 0; j < n; j++) {
            arb_set_d(arb_mat_entry(L, i, j), AC_MAT(c->P, i, j));
            arb_log(arb_mat_entry(L, i, j), arb_mat_entry(L, i, j), prec);
        }
    if (c->pi_identity) {
        arb_mat_one(Pi);
        return 1;
    }
    arb_mat_t B, Bt, G, Z;
    arb_mat_init(B, r, n);
    arb_mat_init(Bt, n, r);
    arb_mat_init(G, r, r);
    arb_mat_init(Z, r, n);
    for (slong i = 0; i < r; i++) {
        size_t row = c->piv ? c->piv[i] : (size_t)i;
        for (slong j = 0; j < n; j++)
            arb_set_d(arb_mat_entry(B, i, j), AC_MAT(c->X, row, j));
    }
    arb_mat_transpose(Bt, B);
    arb_mat_mul(G, B, Bt, prec);
    int ok = arb_mat_spd_solve(Z, G, B, prec); /* Z = (B B')^-1 B */
    if (ok)
        arb_mat_mul(Pi, Bt, Z, prec); /* Pi = B' (B B')^-1 B */
    arb_mat_clear(B);
    arb_mat_clear(Bt);
    arb_mat_clear(G);
    arb_mat_clear(Z);
    return ok;
}

/* rho = min_c ||M(c) - Pi M(c) Pi||_F, M(c) = L + 1 c'.  With
 * T(M) = M - Pi M Pi (an orthogonal projector on matrices), g = Pi 1,
 * b = 1'Pi 1 and v = T(L)' 1, the objective is
 *   ||T L||^2 + 2 v'c + n ||c||^2 - b ||Pi c||^2,
 * minimised by c* = -((I - Pi) v / n + Pi v / (n - b)) (b < n), or
 * c* = -(I - Pi) v / n when 1 is in the row space (then Pi v = 0).  The
 * residual is evaluated at the enclosed exact minimiser:
 *   R = T(L) + 1 c*' - g (Pi c*)',  rho = ||R||_F. */
static int rho_ball(void *v, long prec, mpfr_t lo, mpfr_t hi, ac_err *err)
{
    const decide_ctx *c = v;
    slong n = (slong)c->n;
    arb_mat_t Pi, L, T, W, vv, g, pv, cc, pc;
    arb_t b, nb, t;
    arb_mat_init(Pi, n, n);
    arb_mat_init(L, n, n);
    arb_mat_init(T, n, n);
    arb_mat_init(W, n, n);
    arb_mat_init(vv, n, 1);
    arb_mat_init(g, n, 1);
    arb_mat_init(pv, n, 1);
    arb_mat_init(cc, n, 1);
    arb_mat_init(pc, n, 1);
    arb_init(b);
    arb_init(nb);
    arb_init(t);
    if (!ball_pi_L(Pi, L, c, prec))
        goto undecided;
    /* T = L - Pi L Pi */
    arb_mat_mul(W, Pi, L, prec);
    arb_mat_mul(T, W, Pi, prec);
    arb_mat_sub(T, L, T, prec);
    /* g = Pi 1, b = sum g, v = T' 1 */
    arb_zero(b);
    for (slong i = 0; i < n; i++) {
        arb_zero(arb_mat_entry(g, i, 0));
        arb_zero(arb_mat_entry(vv, i, 0));
        for (slong j = 0; j < n; j++) {
            arb_add(arb_mat_entry(g, i, 0), arb_mat_entry(g, i, 0), arb_mat_entry(Pi, i, j), prec);
            arb_add(arb_mat_entry(vv, i, 0), arb_mat_entry(vv, i, 0), arb_mat_entry(T, j, i), prec);
        }
        arb_add(b, b, arb_mat_entry(g, i, 0), prec);
    }
    arb_mat_mul(pv, Pi, vv, prec);
    /* c* */
    int use_pi_term;
    if (c->one_in_row == 1)
        use_pi_term = 0;
    else {
        arb_sub_ui(nb, b, (ulong)n, prec);
        arb_neg(nb, nb);
        if (!arb_is_positive(nb))
            goto undecided; /* cannot separate b from n at this precision */
        use_pi_term = 1;
    }
    for (slong i = 0; i < n; i++) {
        arb_ptr ci = arb_mat_entry(cc, i, 0);
        arb_sub(ci, arb_mat_entry(vv, i, 0), arb_mat_entry(pv, i, 0), prec);
        arb_div_ui(ci, ci, (ulong)n, prec);
        if (use_pi_term) {
            arb_div(t, arb_mat_entry(pv, i, 0), nb, prec);
            arb_add(ci, ci, t, prec);
        }
        arb_neg(ci, ci);
    }
    arb_mat_mul(pc, Pi, cc, prec);
    /* R = T + 1 c' - g (Pi c)' */
    for (slong i = 0; i < n; i++)
        for (slong j = 0; j < n; j++) {
            arb_ptr e = arb_mat_entry(T, i, j);
            arb_add(e, e, arb_mat_entry(cc, j, 0), prec);
            arb_mul(t, arb_mat_entry(g, i, 0), arb_mat_entry(pc, j, 0), prec);
            arb_sub(e, e, t, prec);
        }
    arb_mat_frobenius_norm(t, T, prec);
    ac_arb_get_interval_mpfr(lo, hi, t);
    if (mpfr_sgn(lo) < 0)
        mpfr_set_zero(lo, 1);
    goto done;
undecided:
    mpfr_set_zero(lo, 1);
    mpfr_set_inf(hi, 1);
done:
    arb_mat_clear(Pi);
    arb_mat_clear(L);
    arb_mat_clear(T);
    arb_mat_clear(W);
    arb_mat_clear(vv);
    arb_mat_clear(g);
    arb_mat_clear(pv);
    arb_mat_clear(cc);
    arb_mat_clear(pc);
    arb_clear(b);
    arb_clear(nb);
    arb_clear(t);
    return AC_OK;
}

/* sigma_{dk+1}(K Pi L Pi), K = I - g g'/(g'g), g = Pi 1 (K = I if Pi 1 = 0):
 * K kills every term g (Pi c)', so the bound holds for all c at once
 * (MATH.md §1.3, dk < r): if it is positive, no rank-dk B fits. */
static int lowrank_ball(void *v, long prec, mpfr_t lo, mpfr_t hi, ac_err *err)
{
    const decide_ctx *c = v;
    slong n = (slong)c->n;
    arb_mat_t Pi, L, W, M, g, gtM;
    arb_t b, t;
    ac_imat A = {0};
    double *slo = NULL, *shi = NULL;
    int st = AC_OK;
    arb_mat_init(Pi, n, n);
    arb_mat_init(L, n, n);
    arb_mat_init(W, n, n);
    arb_mat_init(M, n, n);
    arb_mat_init(g, n, 1);
    arb_mat_init(gtM, 1, n);
    arb_init(b);
    arb_init(t);
    mpfr_set_zero(lo, 1);
    mpfr_set_inf(hi, 1);
    if (!ball_pi_L(Pi, L, c, prec))
        goto done;
    arb_mat_mul(W, Pi, L, prec);
    arb_mat_mul(M, W, Pi, prec); /* M = Pi L Pi */
    if (!c->one_perp) {
        arb_zero(b);
        for (slong i = 0; i < n; i++) {
            arb_zero(arb_mat_entry(g, i, 0));
            for (slong j = 0; j < n; j++)
                arb_add(arb_mat_entry(g, i, 0), arb_mat_entry(g, i, 0), arb_mat_entry(Pi, i, j),
                        prec);
            arb_addmul(b, arb_mat_entry(g, i, 0), arb_mat_entry(g, i, 0), prec);
        }
        if (!arb_is_positive(b))
            goto done;
        /* M <- M - g (g' M) / b */
        for (slong j = 0; j < n; j++) {
            arb_zero(arb_mat_entry(gtM, 0, j));
            for (slong i = 0; i < n; i++)
                arb_addmul(arb_mat_entry(gtM, 0, j), arb_mat_entry(g, i, 0), arb_mat_entry(M, i, j),
                           prec);
            arb_div(arb_mat_entry(gtM, 0, j), arb_mat_entry(gtM, 0, j), b, prec);
        }
        for (slong i = 0; i < n; i++)
            for (slong j = 0; j < n; j++) {
                arb_mul(t, arb_mat_entry(g, i, 0), arb_mat_entry(gtM, 0, j), prec);
                arb_sub(arb_mat_entry(M, i, j), arb_mat_entry(M, i, j), t, prec);
            }
    }
    if ((st = ac_arb_mat_to_imat(&A, M, err)))
        goto done;
    slo = malloc((size_t)n * sizeof(double));
    shi = malloc((size_t)n * sizeof(double));
    if (!slo || !shi) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto done;
    }
    if ((st = ac_sv_enclose(&A, slo, shi, NULL, err)))
        goto done;
    mpfr_set_d(lo, slo[c->dk], MPFR_RNDD);
    mpfr_set_d(hi, shi[c->dk], MPFR_RNDU);
done:
    free(slo);
    free(shi);
    ac_imat_free(&A);
    arb_mat_clear(Pi);
    arb_mat_clear(L);
    arb_mat_clear(W);
    arb_mat_clear(M);
    arb_mat_clear(g);
    arb_mat_clear(gtM);
    arb_clear(b);
    arb_clear(t);
    return st;
}

/* Exactly: is X 1 = 0 (each row sums to 0)?  MPFR's sum is correctly rounded,
 * so it is zero iff the exact sum is. */
static int rows_sum_to_zero(const ac_mat *X)
{
    size_t d = X->rows, n = X->cols;
    mpfr_t s;
    mpfr_ptr *tab = malloc(n * sizeof(mpfr_ptr));
    mpfr_t *vals = malloc(n * sizeof(mpfr_t));
    int zero = 1;
    mpfr_init2(s, 64);
    for (size_t j = 0; j < n; j++) {
        mpfr_init2(vals[j], 53);
        tab[j] = vals[j];
    }
    for (size_t i = 0; i < d && zero; i++) {
        for (size_t j = 0; j < n; j++)
            mpfr_set_d(vals[j], AC_MAT(X, i, j), MPFR_RNDN);
        mpfr_sum(s, tab, n, MPFR_RNDN);
        if (!mpfr_zero_p(s))
            zero = 0;
    }
    for (size_t j = 0; j < n; j++)
        mpfr_clear(vals[j]);
    mpfr_clear(s);
    free(tab);
    free(vals);
    return zero;
}

/* Is 1 in the row space of X?  1 if proved yes (exact rank), 0 if proved no
 * (rank mod p of [B; 1'] is r + 1), -1 unknown. */
static int one_in_row_space(const ac_mat *X, const size_t *piv, size_t r, double budget)
{
    size_t n = X->cols;
    ac_mat B = {0};
    int ans = -1;
    if (ac_mat_init(&B, r + 1, n, NULL))
        return -1;
    for (size_t i = 0; i < r; i++)
        memcpy(B.data + i * n, X->data + (piv ? piv[i] : i) * n, n * sizeof(double));
    for (size_t j = 0; j < n; j++)
        AC_MAT(&B, r, j) = 1.0;
    long rk;
    if (ac_rank_lower_modp(&B, &rk, NULL) == AC_OK && rk == (long)r + 1)
        ans = 0;
    else if (ac_rank_exact(&B, budget, &rk, NULL, NULL) == AC_OK && rk >= 0)
        ans = (rk == (long)r) ? 1 : 0;
    ac_mat_free(&B);
    return ans;
}

/* ---- best approximation (decide route) ------------------------------------ */

/* Weights whose logits are T = Pi M(c*) Pi, truncated to rank dk:
 * A = (X^+)' T X^+ (so X' A X = T), sqrt(dk) A = Wk' Wq by the SVD of A. */
static int construct_projected(ac_t1_result *res, const ac_mat *X, const ac_mat *P, size_t r,
                               size_t dk, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    ac_mat Xp = {0}, Pi = {0}, T = {0}, W1 = {0}, A = {0}, U = {0}, Vt = {0};
    double *s = NULL, *g = NULL, *v = NULL, *pv = NULL, *c = NULL;
    int st;
    /* pseudo-inverse with the certified rank r */
    {
        ac_mat Ux = {0}, Vx = {0};
        size_t p = d < n ? d : n;
        double *sx = malloc((p ? p : 1) * sizeof(double));
        if (!sx)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        if ((st = ac_approx_svd(X, &Ux, sx, &Vx, err)) || (st = ac_mat_init(&Xp, n, d, err))) {
            free(sx);
            ac_mat_free(&Ux);
            ac_mat_free(&Vx);
            return st;
        }
        for (size_t k = 0; k < r && k < p; k++) {
            if (sx[k] == 0)
                break;
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < d; j++)
                    AC_MAT(&Xp, i, j) += AC_MAT(&Vx, k, i) * AC_MAT(&Ux, j, k) / sx[k];
        }
        free(sx);
        ac_mat_free(&Ux);
        ac_mat_free(&Vx);
    }
    if ((st = ac_mat_init(&Pi, n, n, err)) ||
        (st = ac_gemm(&Pi, AC_NOTRANS, &Xp, AC_NOTRANS, X, err)) ||
        (st = ac_mat_init(&T, n, n, err)) || (st = ac_mat_init(&W1, n, n, err)))
        goto out;
    s = calloc(n + 1, sizeof(double));
    g = calloc(n, sizeof(double));
    v = calloc(n, sizeof(double));
    pv = calloc(n, sizeof(double));
    c = calloc(n, sizeof(double));
    if (!s || !g || !v || !pv || !c) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    /* L in T; W1 = Pi L Pi; T <- L - Pi L Pi */
    for (size_t i = 0; i < n * n; i++)
        T.data[i] = log(P->data[i]);
    {
        ac_mat L = T, tmp = {0};
        if ((st = ac_mat_init(&tmp, n, n, err)))
            goto out;
        ac_gemm(&tmp, AC_NOTRANS, &Pi, AC_NOTRANS, &L, err);
        ac_gemm(&W1, AC_NOTRANS, &tmp, AC_NOTRANS, &Pi, err);
        ac_mat_free(&tmp);
    }
    double b = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            g[i] += AC_MAT(&Pi, i, j);
            v[j] += AC_MAT(&T, i, j) - AC_MAT(&W1, i, j);
        }
        b += g[i];
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            pv[i] += AC_MAT(&Pi, i, j) * v[j];
    int pi_term = (double)n - b > 1e3 * (double)n * AC_U * (double)n;
    for (size_t i = 0; i < n; i++)
        c[i] = -((v[i] - pv[i]) / (double)n + (pi_term ? pv[i] / ((double)n - b) : 0.0));
    /* T <- Pi (L + 1 c') Pi  =  Pi L Pi + g (Pi c)' */
    {
        double *pc = s; /* reuse */
        memset(pc, 0, n * sizeof(double));
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                pc[i] += AC_MAT(&Pi, i, j) * c[j];
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                AC_MAT(&T, i, j) = AC_MAT(&W1, i, j) + g[i] * pc[j];
    }
    /* A = Xp' T Xp (d x d) */
    {
        ac_mat TX = {0};
        if ((st = ac_mat_init(&TX, n, d, err)) || (st = ac_mat_init(&A, d, d, err))) {
            ac_mat_free(&TX);
            goto out;
        }
        ac_gemm(&TX, AC_NOTRANS, &T, AC_NOTRANS, &Xp, err);
        ac_gemm(&A, AC_TRANS, &Xp, AC_NOTRANS, &TX, err);
        ac_mat_free(&TX);
    }
    free(s);
    s = malloc(d * sizeof(double));
    if (!s) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if ((st = ac_approx_svd(&A, &U, s, &Vt, err)) || (st = ac_mat_init(&res->Wk, dk, d, err)) ||
        (st = ac_mat_init(&res->Wq, dk, d, err)))
        goto out;
    double sq = sqrt((double)dk);
    for (size_t k = 0; k < dk && k < d; k++) {
        double rs = sqrt(s[k]);
        for (size_t j = 0; j < d; j++) {
            AC_MAT(&res->Wk, k, j) = rs * AC_MAT(&U, j, k);
            AC_MAT(&res->Wq, k, j) = sq * rs * AC_MAT(&Vt, k, j);
        }
    }
out:
    free(s);
    free(g);
    free(v);
    free(pv);
    free(c);
    ac_mat_free(&Xp);
    ac_mat_free(&Pi);
    ac_mat_free(&T);
    ac_mat_free(&W1);
    ac_mat_free(&A);
    ac_mat_free(&U);
    ac_mat_free(&Vt);
    return st;
}

/* f(Wk, Wq) = sum_ij (Softmax(Z) - P)_ij^2, Z = (Wk X)'(Wq X)/sqrt(dk), and
 * its gradient (the column softmax backward: dZ = S o (G - 1 (1'(S o G)))). */
typedef struct {
    const ac_mat *X, *P;
    size_t d, n, dk;
    double *K, *Q, *Z, *G, *dK, *dQ;
    double *scratch; /* 2n: the softmax's column maxima and sums */
} fit_ctx;

static double fit_eval(const gsl_vector *th, void *params, gsl_vector *grad)
{
    fit_ctx *c = params;
    size_t d = c->d, n = c->n, dk = c->dk;
    const double *Wk = th->data, *Wq = th->data + dk * d;
    double s = 1.0 / sqrt((double)dk);
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, dk, n, d, 1.0, Wk, d, c->X->data, n, 0.0, c->K, n);
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, dk, n, d, 1.0, Wq, d, c->X->data, n, 0.0, c->Q, n);
    ac_head_softmax_kq(c->Z, c->K, c->Q, n, dk, c->scratch);
    double f = 0;
    for (size_t i = 0; i < n * n; i++) {
        double e = c->Z[i] - c->P->data[i];
        f += e * e;
        c->G[i] = 2 * e;
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

/* Refine res->Wk, res->Wq by BFGS on the squared error (GSL multimin); the
 * refined weights replace the old ones only if their certified maximum error
 * is lower (decided by the caller).  Returns 1 if a refinement was produced
 * into Wk2, Wq2. */
static int refine_weights(ac_mat *Wk2, ac_mat *Wq2, const ac_mat *X, const ac_mat *P,
                          const ac_mat *Wk, const ac_mat *Wq, int iters)
{
    size_t d = X->rows, n = X->cols, dk = Wk->rows, np = 2 * dk * d;
    if (iters <= 0 || np == 0 || np > 200000 || n > 512)
        return 0;
    /* GSL's default handler aborts on errors (allocation failures included):
     * the library must return instead, so it is off for the whole call. */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    fit_ctx c = {X, P, d, n, dk, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    c.K = malloc(dk * n * sizeof(double));
    c.Q = malloc(dk * n * sizeof(double));
    c.Z = malloc(n * n * sizeof(double));
    c.G = malloc(n * n * sizeof(double));
    c.dK = malloc(dk * n * sizeof(double));
    c.dQ = malloc(dk * n * sizeof(double));
    c.scratch = malloc(2 * n * sizeof(double));
    gsl_vector *th = gsl_vector_alloc(np);
    gsl_multimin_fdfminimizer *m =
        gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, np);
    int ok = 0;
    if (!c.K || !c.Q || !c.Z || !c.G || !c.dK || !c.dQ || !c.scratch || !th || !m)
        goto out;
    memcpy(th->data, Wk->data, dk * d * sizeof(double));
    memcpy(th->data + dk * d, Wq->data, dk * d * sizeof(double));
    /* a small deterministic nudge off the symmetric saddle of zero weights */
    for (size_t i = 0; i < np; i++)
        if (th->data[i] == 0.0)
            th->data[i] = 1e-3 * sin((double)(i + 1));
    gsl_multimin_function_fdf fn = {fit_f, fit_df, fit_fdf, np, &c};
    if (gsl_multimin_fdfminimizer_set(m, &fn, th, 0.01, 0.1) == GSL_SUCCESS) {
        for (int it = 0; it < iters; it++) {
            int status = gsl_multimin_fdfminimizer_iterate(m);
            if (status)
                break;
            if (gsl_multimin_test_gradient(m->gradient, 1e-14) == GSL_SUCCESS)
                break;
        }
        if (ac_mat_init(Wk2, dk, d, NULL) == AC_OK && ac_mat_init(Wq2, dk, d, NULL) == AC_OK) {
            memcpy(Wk2->data, m->x->data, dk * d * sizeof(double));
            memcpy(Wq2->data, m->x->data + dk * d, dk * d * sizeof(double));
            ok = 1;
        } else {
            ac_mat_free(Wk2);
        }
    }
out:
    if (m)
        gsl_multimin_fdfminimizer_free(m);
    if (th)
        gsl_vector_free(th);
    gsl_set_error_handler(old);
    free(c.K);
    free(c.Q);
    free(c.Z);
    free(c.G);
    free(c.dK);
    free(c.dQ);
    free(c.scratch);
    return ok;
}

/* ---- orchestration -------------------------------------------------------- */

/* t* = p_min (1 - exp(-m/n)) rounded down (MPFR, directed rounding): if some
 * head reached max|S - P| <= t < p_min, then |log S - log P| <= -log(1 -
 * t/p_min) entrywise, so the log-domain obstruction m would be at most n
 * times that (MATH.md §1.3). */
static double dist_lower_bound(double m, size_t n, double pmin)
{
    if (!(m > 0))
        return 0.0;
    mpfr_t q, e;
    mpfr_init2(q, 64);
    mpfr_init2(e, 64);
    mpfr_set_d(q, m, MPFR_RNDD);
    mpfr_div_ui(q, q, (unsigned long)n, MPFR_RNDD);
    mpfr_neg(q, q, MPFR_RNDU); /* exact */
    mpfr_exp(e, q, MPFR_RNDU); /* e >= exp(-m/n) */
    mpfr_ui_sub(e, 1, e, MPFR_RNDD);
    mpfr_mul_d(e, e, pmin, MPFR_RNDD);
    double t = mpfr_get_d(e, MPFR_RNDD);
    mpfr_clear(q);
    mpfr_clear(e);
    return t > 0 ? t : 0.0;
}

static int certify_rank(ac_t1_result *res, ac_mat *Y, ac_imat *YX, size_t **piv_out,
                        const ac_mat *X, const ac_t1_opts *o, ac_err *err)
{
    size_t d = X->rows, n = X->cols, p = d < n ? d : n;
    int st;
    double qlo, qhi, slo;
    *piv_out = NULL;
    res->rank = -1;
    res->sigma_lo = 0;
    /* 1. full rank p by a certified left inverse (stage 0): X^+ X = I (d >= n)
     *    or (X')^+ X' = I (d < n) */
    ac_mat Xt = {0}, Yt = {0};
    const ac_mat *A = X;
    if (d < n) {
        if ((st = ac_mat_init(&Xt, n, d, err)))
            return st;
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < n; j++)
                AC_MAT(&Xt, j, i) = AC_MAT(X, i, j);
        A = &Xt;
    }
    ac_mat *Yp = (d >= n) ? Y : &Yt;
    st = ac_approx_pinv_fullcol(Yp, A, NULL);
    if (st == AC_OK) {
        if ((st = ac_cert_left_inverse(Yp, A, &qlo, &qhi, &slo, d >= n ? YX : NULL, err)))
            goto out;
        add_step(res, d >= n ? "step 1: X^+ X = I" : "rank: (X')^+ X' = I",
                 d >= n ? "||X^+ X - I||_F" : "||(X')^+ X' - I||_F", qlo, qhi, AC_STAGE_DOUBLE, 53,
                 qhi < 1 ? "< 1, so X has full rank and sigma_min(X) >= (1 - q)/||X^+||_F"
                         : "not < 1: full rank not certified by the left inverse");
        if (qhi < 1) {
            res->rank = (long)p;
            res->sigma_lo = slo;
            snprintf(res->rank_method, sizeof res->rank_method,
                     "left inverse, ||YX - I||_F <= %.3g < 1 (stage 0)", qhi);
            goto out;
        }
    } else {
        ac_mat_free(Yp);
        st = AC_OK;
    }
    /* 2. exact rank with independent rows */
    size_t *piv = malloc((d ? d : 1) * sizeof(size_t));
    if (!piv) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    long rk = -1;
    if ((st = ac_rank_exact(X, o->max_rank_work, &rk, piv, err))) {
        free(piv);
        goto out;
    }
    if (rk >= 0) {
        res->rank = rk;
        snprintf(res->rank_method, sizeof res->rank_method, "exact rational elimination (FLINT)");
        add_step(res, "rank X (exact)", "rank X", (double)rk, (double)rk, AC_STAGE_EXACT, 0,
                 "fraction-free Gaussian elimination on the exact doubles");
        *piv_out = piv;
        goto out;
    }
    free(piv);
    /* 3. rank mod p: a lower bound, enough to prove full rank */
    if ((st = ac_rank_lower_modp(X, &rk, err)))
        goto out;
    if (rk == (long)p) {
        res->rank = rk;
        snprintf(res->rank_method, sizeof res->rank_method, "exact rank modulo a 61-bit prime");
        add_step(res, "rank X (mod p)", "rank X mod p", (double)rk, (double)rk, AC_STAGE_EXACT, 0,
                 "rank over Q >= rank mod p = min(d, n)");
    }
out:
    ac_mat_free(&Xt);
    ac_mat_free(&Yt);
    if (d >= n && res->rank != (long)n)
        ac_mat_free(Y);
    return st;
}

int ac_t1_check(ac_t1_result *res, const ac_mat *X, const ac_mat *P, const ac_t1_opts *opts,
                ac_err *err)
{
    ac_t1_opts defaults;
    const ac_t1_opts *o = opts;
    size_t d = X->rows, n = X->cols;
    ac_mat Y = {0}, Wt = {0}, Wk2 = {0}, Wq2 = {0};
    ac_imat YX = {0};
    size_t *piv = NULL;
    int st;
    double t_start = ac_seconds();
    memset(res, 0, sizeof *res);
    if (!o) {
        ac_t1_opts_default(&defaults);
        o = &defaults;
    }
    size_t dk = o->dk ? o->dk : d;
    res->d = d;
    res->n = n;
    res->dk = dk;
    res->rho_lo = res->rho_hi = NAN;
    res->lowrank_lo = res->lowrank_hi = NAN;
    res->exact = AC_UNDECIDED;
    res->verdict = AC_UNDECIDED;
    if ((st = ac_t1_validate(X, "X", P, "P", o->d0, o->d0 ? n : 0, "D0", dk, err)))
        return st;

    double pmin = INFINITY;
    for (size_t i = 0; i < n * n; i++)
        pmin = fmin(pmin, P->data[i]);
    res->norm_gap = normalisation_gap(P);
    res->dist_lo = 0;
    res->dist_hi = INFINITY;
    ac_cert_set(&res->weights_cert, "max|Softmax - P| (written weights)", AC_LE, o->tol,
                AC_STAGE_NONE, 0, 0, INFINITY, "no weights constructed");
    res->weights_cert.verdict = AC_UNDECIDED;

    if ((st = certify_rank(res, &Y, &YX, &piv, X, o, err)))
        goto out;
    int stage = AC_STAGE_DOUBLE;
    long prec = 53;
    char method[128] = "";

    if (res->rank == (long)n && dk >= n) {
        /* Theorem 1: exact representation of the column-normalised P */
        res->route = AC_T1_ROUTE_CONSTRUCT;
        res->exact = AC_PROVED;
        res->dist_hi = res->norm_gap;
        snprintf(method, sizeof method, "Theorem 1 (rank X = n <= dk, %s)", res->rank_method);
        if (o->want_weights && !Y.data &&
            (st = ac_approx_pinv(&Y, X, 0.0, err))) /* rank proved exactly, QR gave up */
            goto out;
        if (o->want_weights) {
            double pre[2];
            if ((st = construct_theorem1(res, &Wt, &Y, P, o->d0, dk, err)) ||
                (st = trace_theorem1(res, pre, X, &Wt, P, o->d0, dk, &YX, err)) ||
                (st = certify_weights(&res->weights_cert, X, &res->Wk, &res->Wq, P, pre, o, err)))
                goto out;
            add_step(res, "final identity: Softmax(X'Wk'WqX/sqrt(dk)) = P", "max|Softmax - P|",
                     res->weights_cert.lo, res->weights_cert.hi, res->weights_cert.stage,
                     res->weights_cert.prec, "the written weights represent P to this accuracy");
            if (res->weights_cert.hi < res->dist_hi)
                res->dist_hi = res->weights_cert.hi;
        }
        snprintf(res->summary, sizeof res->summary,
                 "rank X = n = %zu <= dk = %zu: Theorem 1 applies, P is exactly representable "
                 "(up to its column normalisation, %.2g)",
                 n, dk, res->norm_gap);
    } else if (res->rank >= 0) {
        res->route = AC_T1_ROUTE_DECIDE;
        size_t r = (size_t)res->rank;
        decide_ctx c = {X, P, n, r, dk, NULL, 0, -1, 0};
        c.pi_identity = (r == n);
        if (!c.pi_identity && r < d && !piv) {
            /* full row rank certified without pivots only when r == d */
            st = ac_err_set(err, AC_EINTERNAL, "rank %zu < d without a row basis", r);
            goto out;
        }
        c.piv = (r < d) ? piv : NULL;
        if (!c.pi_identity) {
            c.one_in_row = r == 0 ? 0 : one_in_row_space(X, c.piv, r, o->max_rank_work);
            c.one_perp = rows_sum_to_zero(X);
        }
        double obstruction = 0;
        if (r == 0) {
            /* X = 0: every logit is 0 and every column of the softmax is uniform */
            res->rho_lo = res->rho_hi = NAN;
        }
        if (!c.pi_identity && r > 0) {
            ac_quantity q = {"rho = min_c ||M(c) - Pi M(c) Pi||_F",
                             NULL,
                             rho_ball,
                             NULL,
                             &c,
                             NULL,
                             "Arb: projector by Cholesky solve, exact minimiser c*",
                             NULL};
            ac_cert rc;
            if ((st = ac_decide(&rc, &q, AC_GT, 0.0, &o->sched, err)))
                goto out;
            res->rho_lo = rc.lo;
            res->rho_hi = rc.hi;
            add_step(res, "log-domain residual (MATH.md 1.3)",
                     "rho = min_c ||M(c) - Pi M(c) Pi||_F", rc.lo, rc.hi, rc.stage, rc.prec,
                     rc.verdict == AC_PROVED ? "> 0: log P + 1c' never lies in {X'AX}"
                                             : "not certified positive");
            if (rc.verdict == AC_PROVED) {
                obstruction = rc.lo;
                stage = rc.stage;
                prec = rc.prec;
                snprintf(method, sizeof method, "log-domain residual rho >= %.3g (Arb, %ld bits)",
                         rc.lo, rc.prec);
            }
        }
        if (dk < r) {
            ac_quantity q = {"sigma_{dk+1}(K Pi L Pi)",        NULL, lowrank_ball, NULL, &c, NULL,
                             "Arb + Weyl bound around an SVD", NULL};
            ac_cert lc;
            if ((st = ac_decide(&lc, &q, AC_GT, 0.0, &o->sched, err)))
                goto out;
            res->lowrank_lo = lc.lo;
            res->lowrank_hi = lc.hi;
            add_step(res, "rank condition (dk < rank X)", "sigma_{dk+1}(K Pi log(P) Pi)", lc.lo,
                     lc.hi, lc.stage, lc.prec,
                     lc.verdict == AC_PROVED ? "> 0: no choice of c brings the rank down to dk"
                                             : "not certified positive");
            if (lc.verdict == AC_PROVED && lc.lo > obstruction) {
                obstruction = lc.lo;
                stage = lc.stage;
                prec = lc.prec;
                snprintf(method, sizeof method, "rank obstruction sigma_{dk+1} >= %.3g", lc.lo);
            }
        }
        if (r == 0) {
            /* X = 0: every head gives Softmax(0), uniform columns; the
             * column-normalised P is representable iff each of its columns
             * is constant. */
            int constant = 1;
            for (size_t j = 0; j < n; j++)
                for (size_t i = 1; i < n; i++)
                    if (AC_MAT(P, i, j) != AC_MAT(P, 0, j))
                        constant = 0;
            res->exact = constant ? AC_PROVED : AC_REFUTED;
        } else if (obstruction > 0) {
            res->exact = AC_REFUTED;
            res->dist_lo = dist_lower_bound(obstruction, n, pmin);
            add_step(res, "distance lower bound", "p_min (1 - exp(-obstruction/n))", res->dist_lo,
                     res->dist_lo, AC_STAGE_EXACT, 64,
                     "no head of size dk gets max|Softmax - P| below this");
        }
        if (o->want_weights) {
            if ((st = construct_projected(res, X, P, r, dk, err)) ||
                (st = certify_weights(&res->weights_cert, X, &res->Wk, &res->Wq, P, NULL, o, err)))
                goto out;
            if (res->weights_cert.verdict != AC_PROVED &&
                refine_weights(&Wk2, &Wq2, X, P, &res->Wk, &res->Wq, o->optimize)) {
                ac_cert c2;
                if ((st = certify_weights(&c2, X, &Wk2, &Wq2, P, NULL, o, err)))
                    goto out;
                if (c2.hi < res->weights_cert.hi) {
                    ac_mat_free(&res->Wk);
                    ac_mat_free(&res->Wq);
                    res->Wk = Wk2;
                    res->Wq = Wq2;
                    Wk2.data = Wq2.data = NULL;
                    res->weights_cert = c2;
                }
            }
            add_step(res, "best approximation found", "max|Softmax - P| (written weights)",
                     res->weights_cert.lo, res->weights_cert.hi, res->weights_cert.stage,
                     res->weights_cert.prec, "an upper bound on the achievable error");
            res->dist_hi = res->weights_cert.hi;
            if (r == 0) {
                /* every head gives the same (uniform) softmax: the enclosure
                 * of its error is an enclosure of dist itself */
                res->dist_lo = res->weights_cert.lo;
            }
        }
        if (res->exact == AC_REFUTED && res->dist_hi <= o->tol)
            snprintf(res->summary, sizeof res->summary,
                     "rank X = %zu < n = %zu: P itself is off the set of head outputs (every head "
                     "is >= %.3g away), but the written weights come within %.3g",
                     r, n, res->dist_lo, res->dist_hi);
        else if (res->exact == AC_REFUTED)
            snprintf(res->summary, sizeof res->summary,
                     "rank X = %zu < n = %zu%s: P is not representable by a head of size %zu; "
                     "every head is at least %.3g away in max-abs",
                     r, n, dk < r ? " and dk < rank" : "", dk, res->dist_lo);
        else
            snprintf(res->summary, sizeof res->summary,
                     "rank X = %zu, dk = %zu: no obstruction certified; the written weights reach "
                     "max|Softmax - P| <= %.3g",
                     r, dk, res->dist_hi);
    } else {
        res->route = AC_T1_ROUTE_DECIDE;
        snprintf(res->summary, sizeof res->summary,
                 "the rank of X could not be certified (too large for exact elimination and not "
                 "full)");
    }

    /* the verdict: dist <= tol  with dist in [dist_lo, dist_hi] */
    {
        double lo = res->dist_lo, hi = res->dist_hi;
        int by_weights = res->weights_cert.hi <= hi && res->weights_cert.stage != AC_STAGE_NONE;
        ac_cert_set(&res->cert, "dist = inf over heads of max|Softmax - P|", AC_LE, o->tol, stage,
                    prec, lo, hi, method);
        if (res->cert.verdict == AC_PROVED && by_weights && res->route == AC_T1_ROUTE_DECIDE) {
            res->cert.stage = res->weights_cert.stage;
            res->cert.prec = res->weights_cert.prec;
            snprintf(res->cert.method, sizeof res->cert.method,
                     "constructed weights, certified max|Softmax - P| <= %.3g", hi);
        }
        res->verdict = res->cert.verdict;
        res->cert.seconds = ac_seconds() - t_start;
    }
out:
    free(piv);
    ac_imat_free(&YX);
    ac_mat_free(&Y);
    ac_mat_free(&Wt);
    ac_mat_free(&Wk2);
    ac_mat_free(&Wq2);
    return st;
}

void ac_t1_result_free(ac_t1_result *res)
{
    if (!res)
        return;
    ac_mat_free(&res->Wk);
    ac_mat_free(&res->Wq);
}
