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
 * Pi and log P in balls and the rank condition live in rank_condition.c
 * (t1_decide.h), stage 0 in criterion_stage0.c and criterion_stage0_pi.c.
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
#include "attncheck/json.h"
#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "core/ac_arb.h"
#include "core/ball.h"
#include "theorem1/t1_decide.h"
#include "theorem1/t1_impl.h"
#include "theorem1/t1_stage0.h"

/* The threshold head size is computed without a verdict to decide only up
 * to this n (one Arb evaluation of K log P and an SVD). */
#define AC_T1_THRESHOLD_MAX_N 256


/* ---- the exact criterion in balls ---------------------------------------- */

/* The log-domain residual rho in balls (the derivation and the twins of
 * this function: t1_decide.h): R = T(L) + 1 c*' - g (Pi c*)' at the
 * enclosed exact minimiser c*, rho = ||R||_F. */
static int rho_resid_ball(void *v, long prec, mpfr_t lo, mpfr_t hi, ac_err *err)
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
    if (!ac_t1_ball_pi_L(Pi, L, c, prec))
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

/* Stage 0 of rho (criterion_stage0.c, computed once in decide_setup). */
static int rho_stage0(void *v, double *lo, double *hi, ac_err *err)
{
    const decide_ctx *c = v;
    (void)err;
    *lo = c->rho0_lo;
    *hi = c->rho0_hi;
    return AC_OK;
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

/* ---- route DECIDE ---------------------------------------------------------- */

/* The facts about X the criterion needs: Pi = I (r == n), a row basis, is 1
 * in the row space, is X 1 = 0. */
static int decide_setup(decide_ctx *c, const ac_mat *X, const ac_mat *P, size_t r, size_t dk,
                        const size_t *piv, double sigma_lo, const ac_t1_opts *o, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    decide_ctx c0 = {X, P, n, r, dk, NULL, 0, -1, 0, -1, -1, NULL, 0, 0, -1, 0, 0, INFINITY, 0};
    int st;
    *c = c0;
    c->pi_identity = (r == n);
    if (r == n)
        c->famrank_hi = ac_t1_family_rank_upper(P, o->max_rank_work, &c->famrank_why);
    if (!c->pi_identity && r < d && !piv) {
        /* full row rank certified without pivots only when r == d */
        return ac_err_set(err, AC_EINTERNAL, "rank %zu < d without a row basis", r);
    }
    c->piv = (r < d) ? piv : NULL;
    if (!c->pi_identity && r == d && r > 0 && sigma_lo > 0) {
        /* stage 0 of rho (criterion_stage0.c); its certified dist(1, row space) > 0
         * proves 1 outside the row space without exact arithmetic */
        if ((st = ac_t1_rho_stage0(X, P, sigma_lo, &c->rho0_lo, &c->rho0_hi, &c->h0_lo, err)))
            return st;
        c->have_rho0 = 1;
    }
    if (!c->pi_identity) {
        c->one_in_row = r == 0 ? 0
                        : c->h0_lo > 0 ? 0
                                       : ac_t1_one_in_row_space(X, c->piv, r, o->max_rank_work);
        c->one_perp = ac_t1_rows_sum_to_zero(X);
        if (r > 0)
            c->pow2 = ac_t1_pow2_decide(X, c->piv, r, P, &c->pow2_rho_zero, &c->pow2_famrank);
    }
    return AC_OK;
}

/* Below this n a quantity decided at stage 0 is enclosed again by one Arb
 * evaluation at the first ball precision, only to report a tighter
 * enclosure (the decision stays with stage 0; the cost is negligible here). */
#define AC_T1_TIGHTEN_MAX_N 64

static int tighten_small(double *lo, double *hi,
                         int (*ball)(void *, long, mpfr_t, mpfr_t, ac_err *), decide_ctx *c,
                         const ac_t1_opts *o, ac_err *err)
{
    if (c->n > AC_T1_TIGHTEN_MAX_N || o->sched.n < 1)
        return AC_OK;
    mpfr_t a, b;
    mpfr_init2(a, o->sched.prec[0]);
    mpfr_init2(b, o->sched.prec[0]);
    mpfr_set_inf(a, -1);
    mpfr_set_inf(b, 1);
    int st = ball(c, o->sched.prec[0], a, b, err);
    if (!st) { /* both enclose the same number: intersect */
        *lo = fmax(*lo, mpfr_get_d(a, MPFR_RNDD));
        *hi = fmin(*hi, mpfr_get_d(b, MPFR_RNDU));
    }
    mpfr_clear(a);
    mpfr_clear(b);
    return st;
}

/* The log-domain residual rho (r < n, r > 0), certified positive or not;
 * a positive one becomes the obstruction. */
static int certify_rho(ac_t1_result *res, ac_t1_basis *basis, double *obstruction,
                       decide_ctx *c, const ac_t1_opts *o, ac_err *err)
{
    ac_quantity q = {"rho = min_c ||M(c) - Pi M(c) Pi||_F",
                     c->have_rho0 ? rho_stage0 : NULL,
                     rho_resid_ball,
                     NULL,
                     c,
                     "double: dual certificate, a-priori rounding bounds",
                     "Arb: projector by Cholesky solve, exact minimiser c*",
                     NULL};
    ac_cert rc;
    int st;
    if ((st = ac_decide(&rc, &q, AC_GT, 0.0, &o->sched, err)))
        return st;
    if (rc.stage == AC_STAGE_DOUBLE &&
        (st = tighten_small(&rc.lo, &rc.hi, rho_resid_ball, c, o, err)))
        return st;
    res->rho_lo = rc.lo;
    res->rho_hi = rc.hi;
    res->rho_stage = rc.stage;
    res->rho_prec = rc.prec;
    ac_t1_add_step(res, "log-domain residual (doc/mathematics.md §3.4)",
                   "rho = min_c ||M(c) - Pi M(c) Pi||_F", rc.lo, rc.hi, rc.stage, rc.prec,
                   rc.verdict == AC_PROVED ? "> 0: log P + 1c' never lies in {X'AX}"
                                           : "not certified positive");
    if (rc.verdict == AC_PROVED) {
        *obstruction = rc.lo;
        basis->stage = rc.stage;
        basis->prec = rc.prec;
        char fb[AC_FMT_BOUND_BUFSIZE];
        if (rc.stage == AC_STAGE_DOUBLE)
            snprintf(basis->method, sizeof basis->method,
                     "log-domain residual rho >= %s (stage 0, double)", ac_str_lo(fb, ".3g", rc.lo));
        else
            snprintf(basis->method, sizeof basis->method,
                     "log-domain residual rho >= %s (Arb, %ld bits)", ac_str_lo(fb, ".3g", rc.lo),
                     rc.prec);
    }
    return AC_OK;
}

/* The rank condition sigma_{dk+1}(K Pi log P Pi) (dk < r); it becomes the
 * obstruction when it is certified positive and larger than rho. */
static int certify_lowrank(ac_t1_result *res, ac_t1_basis *basis, double *obstruction,
                           decide_ctx *c, const ac_t1_opts *o, ac_err *err)
{
    ac_quantity q = {"sigma_{dk+1}(K Pi L Pi)",
                     c->pi_identity || c->have_rho0 ? ac_t1_lowrank_stage0 : NULL,
                     ac_t1_lowrank_ball,
                     NULL,
                     c,
                     "double enclosure of K log P + Weyl bound around an SVD",
                     "Arb + Weyl bound around an SVD",
                     NULL};
    ac_cert lc;
    int st;
    if ((st = ac_decide(&lc, &q, AC_GT, 0.0, &o->sched, err)))
        return st;
    if (lc.stage == AC_STAGE_DOUBLE &&
        (st = tighten_small(&lc.lo, &lc.hi, ac_t1_lowrank_ball, c, o, err)))
        return st;
    res->lowrank_lo = lc.lo;
    res->lowrank_hi = lc.hi;
    res->lowrank_stage = lc.stage;
    res->lowrank_prec = lc.prec;
    ac_t1_add_step(res, "rank condition (dk < rank X)", "sigma_{dk+1}(K Pi log(P) Pi)", lc.lo,
                   lc.hi, lc.stage, lc.prec,
                   lc.verdict == AC_PROVED ? "> 0: no choice of c brings the rank down to dk"
                                           : "not certified positive");
    if (lc.verdict == AC_PROVED && lc.lo > *obstruction) {
        *obstruction = lc.lo;
        basis->stage = lc.stage;
        basis->prec = lc.prec;
        char fb[AC_FMT_BOUND_BUFSIZE];
        snprintf(basis->method, sizeof basis->method,
                 "rank obstruction sigma_{dk+1} >= %s (%s)", ac_str_lo(fb, ".3g", lc.lo),
                 lc.stage == AC_STAGE_DOUBLE ? "stage 0, double" : "Arb");
    }
    return AC_OK;
}

/* The certified lower bound on rank(K Pi log(P) Pi) without a verdict to
 * decide (dk >= rank X): one evaluation at the first ball stage, for the
 * threshold only.  Optional: a failure leaves famrank_lo unknown. */
static void family_rank_only(decide_ctx *c, const ac_t1_opts *o)
{
    if (c->n > AC_T1_THRESHOLD_MAX_N || o->sched.n < 1)
        return;
    mpfr_t lo, hi;
    ac_err e;
    ac_err_clear(&e);
    if (c->pi_identity) { /* stage 0 first; Arb only if it certifies nothing */
        double l0, h0;
        (void)ac_t1_lowrank_stage0(c, &l0, &h0, &e);
        ac_err_clear(&e);
        if (c->famrank_hi >= 0 && c->famrank_lo >= c->famrank_hi)
            return; /* the threshold is exact already: Arb cannot raise it */
    }
    mpfr_init2(lo, 64);
    mpfr_init2(hi, 64);
    (void)ac_t1_lowrank_ball(c, o->sched.prec[0], lo, hi, &e);
    mpfr_clear(lo);
    mpfr_clear(hi);
}

/* X = 0: every head gives Softmax(0), uniform columns; the column-normalised
 * P is representable iff each of its columns is constant. */
static void decide_zero_x(ac_t1_result *res, const ac_mat *P)
{
    size_t n = P->rows;
    int constant = 1;
    for (size_t j = 0; j < n; j++)
        for (size_t i = 1; i < n; i++)
            if (AC_MAT(P, i, j) != AC_MAT(P, 0, j))
                constant = 0;
    res->exact = constant ? AC_PROVED : AC_REFUTED;
    snprintf(res->exact_method, sizeof res->exact_method,
             "X = 0: every head's softmax has uniform columns, and P's columns are %s",
             constant ? "constant (compared exactly)" : "not all constant (compared exactly)");
    ac_t1_threshold t = {constant ? 1 : -1, constant ? 1 : -1, !constant, 0, 1, ""};
    snprintf(t.method, sizeof t.method, "%s", constant ? "X = 0 and P has constant columns: any head"
                                                       : "X = 0: no head reaches a non-constant column");
    res->threshold = t;
}

/* Exact representability by a head of size dk (doc/mathematics.md §3.4,
 * §3.5) from the certified obstruction (or its absence), and the distance
 * lower bound an obstruction gives (§3.6). */
static void decide_exact(ac_t1_result *res, const decide_ctx *c, const ac_mat *P,
                         double obstruction, const ac_t1_basis *basis)
{
    size_t n = P->rows, r = c->r, dk = c->dk;
    if (obstruction > 0) {
        double pmin = INFINITY;
        for (size_t i = 0; i < n * n; i++)
            pmin = fmin(pmin, P->data[i]);
        res->exact = AC_REFUTED;
        res->exact_stage = basis->stage;
        res->exact_prec = basis->prec;
        snprintf(res->exact_method, sizeof res->exact_method, "certified obstruction: %s",
                 basis->method);
        res->dist_lo = dist_lower_bound(obstruction, n, pmin);
        ac_t1_add_step(res, "distance lower bound", "p_min (1 - exp(-obstruction/n))",
                       res->dist_lo, res->dist_lo, AC_STAGE_EXACT, 64,
                       "no head of size dk gets max|Softmax - P| below this");
    } else if (c->pow2) {
        res->exact = c->pow2_rho_zero && (long)dk >= c->pow2_famrank ? AC_PROVED : AC_REFUTED;
        res->exact_stage = AC_STAGE_EXACT;
        res->exact_prec = 0;
        snprintf(res->exact_method, sizeof res->exact_method,
                 "exact rational arithmetic (P's entries are powers of two, log P = E log 2; "
                 "doc/mathematics.md §3.4): rho %s 0, family rank %ld",
                 c->pow2_rho_zero ? "=" : ">", c->pow2_famrank);
    } else if (r == n && dk + 1 >= n) {
        res->exact = AC_PROVED;
        snprintf(res->exact_method, sizeof res->exact_method,
                 "doc/mathematics.md §3.5: rank X = n and dk >= n - 1, so log P + 1c' with "
                 "c = -log(P)'1/n has rank <= n - 1 <= dk");
    } else if (r == n && c->famrank_hi >= 0 && (long)dk >= c->famrank_hi) {
        res->exact = AC_PROVED;
        snprintf(res->exact_method, sizeof res->exact_method,
                 "doc/mathematics.md §3.5: rank X = n and rank(K log P) <= %ld <= dk (%s)",
                 c->famrank_hi, c->famrank_why);
    } else if (r == n) {
        snprintf(res->exact_method, sizeof res->exact_method,
                 "needs rank(K log P) <= dk: sigma_{dk+1}(K log P) is not certified positive, "
                 "and a rank drop of a matrix of logarithms is not provable from enclosures");
    } else {
        snprintf(res->exact_method, sizeof res->exact_method,
                 "needs rho = 0%s: rho is not certified positive, and an equality between "
                 "logarithms is not provable from enclosures",
                 dk < r ? " and a rank drop" : "");
    }
}

/* The smallest representing head size (doc/mathematics.md §3.5): lo from the
 * certified singular values of K Pi log(P) Pi, hi from the theorem (r = n:
 * n - 1; 1 in the row space: r - 1; else r), conditional on rho = 0 when
 * r < n. */
static void decide_threshold(ac_t1_result *res, const decide_ctx *c, int rho_positive)
{
    size_t n = c->n, r = c->r;
    ac_t1_threshold t = {-1, -1, 0, 0, 0, ""};
    long lo = c->famrank_lo > 1 ? c->famrank_lo : 1;
    /* why lo: k singular values certified positive (k >= 1), or only the
     * smallest head size, 1 (K Pi log(P) Pi may be 0: n = 1, equal columns) */
    char why[40];
    if (c->famrank_lo >= 1)
        snprintf(why, sizeof why, "sigma_%ld(%s) > 0", (long)(c->famrank_lo % 1000000000),
                 r == n ? "K log P" : "K Pi log(P) Pi");
    else
        snprintf(why, sizeof why, "1, the smallest head size");
    if (c->pow2 && c->pow2_rho_zero) {
        t.lo = t.hi = c->pow2_famrank > 1 ? c->pow2_famrank : 1;
        t.exact = 1;
        snprintf(t.method, sizeof t.method,
                 "exact: rank of the family member in rationals (P's entries are powers of two)");
    } else if (rho_positive || c->pow2) {
        t.none = 1;
        t.exact = 1;
        snprintf(t.method, sizeof t.method, "rho > 0: no head size represents P");
    } else if (r == n) {
        t.lo = lo;
        t.hi = c->famrank_hi >= 1 ? c->famrank_hi : 1;
        t.exact = t.lo == t.hi;
        snprintf(t.method, sizeof t.method, "lo: %s; hi: rank(K log P) <= %s (rank X = n, §3.5)",
                 why, c->famrank_why ? c->famrank_why : "n - 1");
    } else {
        t.lo = lo;
        t.hi = c->one_in_row == 1 ? (r > 1 ? (long)r - 1 : 1) : (long)r;
        t.if_any = 1;
        snprintf(t.method, sizeof t.method,
                 "lo: %s; hi: %s, if P is representable at all (rho = 0 is not decided)", why,
                 c->one_in_row == 1 ? "rank X - 1 (1 in the row space of X)" : "rank X");
    }
    res->threshold = t;
}

/* Weights for route DECIDE: the family K Pi log(P) Pi truncated to rank dk
 * (construct.c); if they do not prove C(tol), the best approximation
 * (refine.c), and the better of the two certified errors is kept.  The
 * steps are optional: a failure keeps what was certified before it. */
static int decide_weights(ac_t1_result *res, const ac_mat *X, const ac_mat *P, size_t r,
                          const ac_t1_opts *o, ac_err *err)
{
    ac_mat Wk = {0}, Wq = {0};
    ac_cert wc0 = res->weights_cert, wc = wc0;
    int st = AC_OK, fam_ok = r > 0 && ac_t1_construct_family(res, X, P, r, o, err) == AC_OK;
    if (fam_ok && res->weights_cert.verdict == AC_PROVED) {
        snprintf(res->refine_stop, sizeof res->refine_stop,
                 "not needed: the weights of K Pi log(P) Pi prove C(tol)");
        /* a tighter upper end: the P-weighted truncation, kept only if its
         * certified error is smaller (optional: a failure keeps the family's) */
        if (ac_t1_weighted_upper(res, X, P, r, o, err) != AC_OK)
            ac_err_clear(err);
        return AC_OK;
    }
    if (!fam_ok) {
        ac_mat_free(&res->Wk);
        ac_mat_free(&res->Wq);
        res->weights_cert = wc0;
    } else { /* keep the family's weights aside */
        Wk = res->Wk;
        Wq = res->Wq;
        wc = res->weights_cert;
        res->Wk.data = res->Wq.data = NULL;
    }
    ac_err_clear(err);
    if (ac_t1_best_weights(res, X, P, r, o, err) != AC_OK || !res->Wk.data ||
        (Wk.data && wc.hi <= res->weights_cert.hi)) {
        ac_mat_free(&res->Wk);
        ac_mat_free(&res->Wq);
        res->Wk = Wk;
        res->Wq = Wq;
        res->weights_cert = wc;
        res->upper_method[0] = '\0'; /* named by ac_t1_tighten */
        Wk.data = Wq.data = NULL;
        ac_err_clear(err);
    }
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    return st;
}

int ac_t1_route_decide(ac_t1_result *res, ac_t1_basis *basis, const ac_mat *X, const ac_mat *P,
                       const size_t *piv, const ac_t1_opts *o, ac_err *err)
{
    size_t r = (size_t)res->rank, dk = res->dk;
    decide_ctx c;
    double obstruction = 0;
    int st;
    res->route = AC_T1_ROUTE_DECIDE;
    if ((st = decide_setup(&c, X, P, r, dk, piv, res->sigma_lo, o, err)))
        return st;
    if (r == 0)
        decide_zero_x(res, P);
    else {
        if (!c.pi_identity && (st = certify_rho(res, basis, &obstruction, &c, o, err)))
            return st;
        int rho_positive = obstruction > 0 || (c.pow2 && !c.pow2_rho_zero);
        /* K Pi log(P) Pi has rank <= r - 1 when 1 is in the row space of X
         * (always when r = n): sigma_{dk+1} = 0 for dk >= r - 1 */
        int no_gap = (dk + 1 >= r && (r == res->n || c.one_in_row == 1)) ||
                     (c.famrank_hi >= 0 && (long)dk >= c.famrank_hi);
        if (dk < r && !no_gap &&
            (st = certify_lowrank(res, basis, &obstruction, &c, o, err)))
            return st;
        if ((dk >= r || no_gap) && !rho_positive)
            family_rank_only(&c, o);
        decide_exact(res, &c, P, obstruction, basis);
        decide_threshold(res, &c, rho_positive);
        if (!res->threshold.none)
            ac_t1_add_step(res, "threshold (doc/mathematics.md §3.5)",
                           "smallest dk representing P", (double)res->threshold.lo,
                           res->threshold.hi >= 0 ? (double)res->threshold.hi : INFINITY,
                           AC_STAGE_EXACT, 0, res->threshold.method);
        if (res->exact == AC_PROVED) {
            basis->stage = AC_STAGE_DOUBLE;
            basis->prec = 53;
            snprintf(basis->method, sizeof basis->method, "%s",
                     c.pow2 ? "exact representability, decided in rationals (P's entries are "
                              "powers of two, doc/mathematics.md §3.4)"
                            : "exact representability: rank X = n certified, rank(K log P) <= "
                              "dk (doc/mathematics.md §3.5)");
        }
    }
    if (o->want_weights && (st = decide_weights(res, X, P, r, o, err)))
        return st;
    if (r == 0) {
        basis->stage = res->weights_cert.stage;
        basis->prec = res->weights_cert.prec;
        snprintf(basis->method, sizeof basis->method,
                 "X = 0: every head gives uniform columns (the zero head's error, certified)");
    }
    return AC_OK;
}

void ac_t1_threshold_full_rank(ac_t1_result *res, const ac_mat *P, const ac_t1_opts *o)
{
    size_t n = P->rows;
    decide_ctx c = {NULL, P, n, n, n, NULL, 1, 1, 0, -1, -1, NULL, 0, 0, -1, 0, 0, INFINITY, 0};
    c.famrank_hi = ac_t1_family_rank_upper(P, o->max_rank_work, &c.famrank_why);
    family_rank_only(&c, o);
    decide_threshold(res, &c, 0);
}
