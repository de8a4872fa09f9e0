/* decide.c — route DECIDE of Theorem 1: the exact criterion for any X, P
 * and dk (doc/mathematics.md §3.4), and the rank of X it starts from (§2.5).
 *
 * The column softmax forgets a constant per column, so P is exactly
 * representable by a head of size dk iff X^T A X = log P + 1 c^T for some c
 * and some A of rank <= dk.  With Pi the projector on the row space of X:
 *   - the log-domain residual rho = min_c ||M(c) - Pi M(c) Pi||_F,
 *     M(c) = log P + 1 c^T, is positive iff no c puts M(c) in {X^T A X}
 *     (needs r < n);
 *   - the rank condition sigma_{dk+1}(K Pi log P Pi) > 0, K the projector
 *     killing Pi 1, rules out every A of rank <= dk (dk < r);
 * either one certified positive refutes exact representability, and gives
 * the distance lower bound p_min (1 - exp(-m/n)) (§3.6).
 *
 * Dimension letters: d model width, n tokens, dk head size, r = rank X.
 * Buffers are row-major: X d x n, P n x n.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "core/ac_arb.h"
#include "core/ball.h"
#include "theorem1/t1_bounds.h"
#include "theorem1/t1_impl.h"

typedef struct {
    const ac_mat *X, *P;
    size_t n, r, dk;
    const size_t *piv; /* r independent rows of X (NULL: rows 0..r-1 are) */
    int pi_identity;   /* r == n: Pi = I */
    int one_in_row;    /* 1 in the row space of X: 1 yes, 0 no, -1 unknown */
    int one_perp;      /* X 1 = 0 exactly (Pi 1 = 0) */
} decide_ctx;

/* ---- the exact criterion in balls ---------------------------------------- */

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
 * (doc/mathematics.md §3.4, dk < r): if it is positive, no rank-dk B fits. */
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


/* ---- the distance lower bound --------------------------------------------- */

/* t* = p_min (1 - exp(-m/n)) rounded down (MPFR, directed rounding): if some
 * head reached max|S - P| <= t < p_min, then |log S - log P| <= -log(1 -
 * t/p_min) entrywise, so the log-domain obstruction m would be at most n
 * times that (doc/mathematics.md §3.6). */
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

/* ---- the rank of X (doc/mathematics.md §2.5) ------------------------------ */

int ac_t1_certify_rank(ac_t1_result *res, ac_mat *Y, ac_imat *YX, size_t **piv_out,
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
        ac_t1_add_step(res, d >= n ? "step 1: X^+ X = I" : "rank: (X')^+ X' = I",
                       d >= n ? "||X^+ X - I||_F" : "||(X')^+ X' - I||_F", qlo, qhi,
                       AC_STAGE_DOUBLE, 53,
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
        ac_t1_add_step(res, "rank X (exact)", "rank X", (double)rk, (double)rk, AC_STAGE_EXACT,
                       0, "fraction-free Gaussian elimination on the exact doubles");
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
        ac_t1_add_step(res, "rank X (mod p)", "rank X mod p", (double)rk, (double)rk,
                       AC_STAGE_EXACT, 0, "rank over Q >= rank mod p = min(d, n)");
    }
out:
    ac_mat_free(&Xt);
    ac_mat_free(&Yt);
    if (d >= n && res->rank != (long)n)
        ac_mat_free(Y);
    return st;
}

/* ---- route DECIDE ---------------------------------------------------------- */

/* The facts about X the criterion needs: Pi = I (r == n), a row basis, is 1
 * in the row space, is X 1 = 0. */
static int decide_setup(decide_ctx *c, const ac_mat *X, const ac_mat *P, size_t r, size_t dk,
                        const size_t *piv, const ac_t1_opts *o, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    decide_ctx c0 = {X, P, n, r, dk, NULL, 0, -1, 0};
    *c = c0;
    c->pi_identity = (r == n);
    if (!c->pi_identity && r < d && !piv) {
        /* full row rank certified without pivots only when r == d */
        return ac_err_set(err, AC_EINTERNAL, "rank %zu < d without a row basis", r);
    }
    c->piv = (r < d) ? piv : NULL;
    if (!c->pi_identity) {
        c->one_in_row = r == 0 ? 0 : one_in_row_space(X, c->piv, r, o->max_rank_work);
        c->one_perp = rows_sum_to_zero(X);
    }
    return AC_OK;
}

/* The log-domain residual rho (r < n, r > 0), certified positive or not;
 * a positive one becomes the obstruction. */
static int certify_rho(ac_t1_result *res, ac_t1_basis *basis, double *obstruction,
                       decide_ctx *c, const ac_t1_opts *o, ac_err *err)
{
    ac_quantity q = {"rho = min_c ||M(c) - Pi M(c) Pi||_F",
                     NULL,
                     rho_ball,
                     NULL,
                     c,
                     NULL,
                     "Arb: projector by Cholesky solve, exact minimiser c*",
                     NULL};
    ac_cert rc;
    int st;
    if ((st = ac_decide(&rc, &q, AC_GT, 0.0, &o->sched, err)))
        return st;
    res->rho_lo = rc.lo;
    res->rho_hi = rc.hi;
    ac_t1_add_step(res, "log-domain residual (doc/mathematics.md §3.4)",
                   "rho = min_c ||M(c) - Pi M(c) Pi||_F", rc.lo, rc.hi, rc.stage, rc.prec,
                   rc.verdict == AC_PROVED ? "> 0: log P + 1c' never lies in {X'AX}"
                                           : "not certified positive");
    if (rc.verdict == AC_PROVED) {
        *obstruction = rc.lo;
        basis->stage = rc.stage;
        basis->prec = rc.prec;
        snprintf(basis->method, sizeof basis->method,
                 "log-domain residual rho >= %.3g (Arb, %ld bits)", rc.lo, rc.prec);
    }
    return AC_OK;
}

/* The rank condition sigma_{dk+1}(K Pi log P Pi) (dk < r); it becomes the
 * obstruction when it is certified positive and larger than rho. */
static int certify_lowrank(ac_t1_result *res, ac_t1_basis *basis, double *obstruction,
                           decide_ctx *c, const ac_t1_opts *o, ac_err *err)
{
    ac_quantity q = {"sigma_{dk+1}(K Pi L Pi)",        NULL, lowrank_ball, NULL, c, NULL,
                     "Arb + Weyl bound around an SVD", NULL};
    ac_cert lc;
    int st;
    if ((st = ac_decide(&lc, &q, AC_GT, 0.0, &o->sched, err)))
        return st;
    res->lowrank_lo = lc.lo;
    res->lowrank_hi = lc.hi;
    ac_t1_add_step(res, "rank condition (dk < rank X)", "sigma_{dk+1}(K Pi log(P) Pi)", lc.lo,
                   lc.hi, lc.stage, lc.prec,
                   lc.verdict == AC_PROVED ? "> 0: no choice of c brings the rank down to dk"
                                           : "not certified positive");
    if (lc.verdict == AC_PROVED && lc.lo > *obstruction) {
        *obstruction = lc.lo;
        basis->stage = lc.stage;
        basis->prec = lc.prec;
        snprintf(basis->method, sizeof basis->method, "rank obstruction sigma_{dk+1} >= %.3g",
                 lc.lo);
    }
    return AC_OK;
}

/* Exact representability from the obstruction, and the distance lower bound
 * it gives (doc/mathematics.md §3.6). */
static void decide_exact(ac_t1_result *res, const ac_mat *P, size_t r, double obstruction)
{
    size_t n = P->rows;
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
        double pmin = INFINITY;
        for (size_t i = 0; i < n * n; i++)
            pmin = fmin(pmin, P->data[i]);
        res->exact = AC_REFUTED;
        res->dist_lo = dist_lower_bound(obstruction, n, pmin);
        ac_t1_add_step(res, "distance lower bound", "p_min (1 - exp(-obstruction/n))",
                       res->dist_lo, res->dist_lo, AC_STAGE_EXACT, 64,
                       "no head of size dk gets max|Softmax - P| below this");
    }
}

static void decide_summary(ac_t1_result *res, size_t r, const ac_t1_opts *o)
{
    size_t n = res->n, dk = res->dk;
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
}

int ac_t1_route_decide(ac_t1_result *res, ac_t1_basis *basis, const ac_mat *X, const ac_mat *P,
                       const size_t *piv, const ac_t1_opts *o, ac_err *err)
{
    size_t r = (size_t)res->rank, dk = res->dk;
    decide_ctx c;
    double obstruction = 0;
    int st;
    res->route = AC_T1_ROUTE_DECIDE;
    if ((st = decide_setup(&c, X, P, r, dk, piv, o, err)))
        return st;
    if (!c.pi_identity && r > 0 && (st = certify_rho(res, basis, &obstruction, &c, o, err)))
        return st;
    if (dk < r && (st = certify_lowrank(res, basis, &obstruction, &c, o, err)))
        return st;
    decide_exact(res, P, r, obstruction);
    if (o->want_weights) {
        if ((st = ac_t1_best_weights(res, X, P, r, o, err)))
            return st;
        res->dist_hi = res->weights_cert.hi;
        if (r == 0) {
            /* every head gives the same (uniform) softmax: the enclosure
             * of its error is an enclosure of dist itself */
            res->dist_lo = res->weights_cert.lo;
        }
    }
    if ((st = ac_t1_tighten(res, X, P, o, err))) /* bounds.c, upper.c */
        return st;
    decide_summary(res, r, o);
    return AC_OK;
}
