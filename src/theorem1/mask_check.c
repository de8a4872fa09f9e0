/* mask_check.c — Theorem 1 for masked heads and heads with biases
 * (doc/mathematics.md §3.8): the masked route of ac_t1_check, the head
 * size at a tolerance (ac_t1_threshold_at_tol), and one instance at several
 * head sizes (ac_t1_instance: the context below built once and kept).
 *
 * The work that does not depend on dk is done once (mctx_init):
 *   1. the support Omega, the instance validated on it, X with a row of ones
 *      appended for biased heads, the scale of X (powers of two);
 *   2. the certified rank r of X (rank_x.c), its independent rows, an
 *      orthonormal basis Q of its row space and X^+;
 *   3. the threshold range of Lemma W / Lemma G (mask_rank.c), the
 *      dk-independent lower bounds (mask_bounds.c), Woerdeman's completion
 *      (mask_construct.c).
 * Then for each head size dk (meval): exact representability, the rank
 * obstruction at k = min(dk, r), and weights (the completion truncated to
 * rank dk, the alternating projection, the masked BFGS of refine.c, the zero
 * head, the user's head), certified by ac_head_certify_masked.
 *
 * Dimension letters: d model width (d + 1 with a bias), n tokens, dk head
 * size, r = rank X.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/blas.h"
#include "attncheck/head.h"
#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "theorem1/t1_dist.h"
#include "theorem1/t1_impl.h"
#include "theorem1/t1_mask.h"

/* Relative cut of the pseudo-inverses in Woerdeman's construction. */
#define T1_MASK_REL 1e-11
/* Work budget (n^3 per step) of the alternating projection, and its cap. */
#define T1_MASK_PROJ_WORK 0x1p30
#define T1_MASK_PROJ_MAX 60
/* Work budget of the least-squares start for rank X < n: |Omega| (r^2 + n)^2. */
#define T1_MASK_LSQ_WORK 0x1p31

/* ---- the dk-independent part ------------------------------------------------- */

/* The rank obstruction at one k (t1_masked_lb_rank), once computed: it
 * depends on k = min(dk, r) alone, and the threshold's bisection and the
 * checks at other sizes ask for the same k again. */
typedef struct {
    int done;
    double t;
    int stage;
    long prec;
    char method[160];
} t1_lbk;

typedef struct {
    const ac_t1_opts *o;
    const ac_mat *P;
    size_t n, d;               /* d: rows of the class X (d + 1 with a bias) */
    ac_mat Xb1;                /* [X; 1'] with a bias (owned) */
    const ac_mat *Xu;          /* the class X, unscaled */
    ac_mat Xs;                 /* 2^s Xu when scaled (owned), else empty */
    const ac_mat *Xw;          /* the one the computation runs on */
    int x_scale;
    unsigned char *om;
    t1_support sup;
    long r;
    size_t *piv;
    ac_mat Xr;                 /* the r independent rows of Xw (r < n) */
    ac_mat Q;                  /* orthonormal basis of the row space of Xw, n x r (r < n) */
    ac_mat Xp;                 /* X^+ of rank r, n x d */
    t1_mthr thr;
    double lb_fixed, rho;
    char lb_fixed_method[160];
    int none;                  /* no head of any size represents P exactly */
    char none_why[160];
    int uniform;               /* r = 0: P is uniform on every Omega_j (exactly) */
    int one_in;                /* 1 in the row space of X: 1, 0, -1 unknown */
    ac_mat N;                  /* Woerdeman's completion (staircase, r = n), or empty */
    double norm_gap;
    ac_t1_threshold th;        /* exact representability's threshold */
    t1_lbk *lbk;               /* the rank obstruction at k = 0 .. nlbk - 1, kept once
                                  computed (meval_lower; NULL: not kept) */
    size_t nlbk;
} mctx;

static void mctx_free(mctx *c)
{
    ac_mat_free(&c->Xb1);
    ac_mat_free(&c->Xs);
    free(c->om);
    t1_support_free(&c->sup);
    free(c->piv);
    ac_mat_free(&c->Xr);
    ac_mat_free(&c->Q);
    ac_mat_free(&c->Xp);
    t1_mthr_free(&c->thr);
    ac_mat_free(&c->N);
    free(c->lbk);
}

/* Every visible entry of each column of P is the same double (X = 0). */
static int uniform_columns(const ac_mat *P, const unsigned char *om)
{
    size_t n = P->rows;
    for (size_t j = 0; j < n; j++) {
        double v = NAN;
        for (size_t i = 0; i < n; i++)
            if (om[i * n + j]) {
                if (v == v && AC_MAT(P, i, j) != v)
                    return 0;
                v = AC_MAT(P, i, j);
            }
    }
    return 1;
}

/* Q (n x r): the first r right singular vectors of Xw. */
static int row_basis(ac_mat *Q, const ac_mat *X, size_t r, ac_err *err)
{
    size_t n = X->cols;
    ac_mat U = {0}, Vt = {0};
    size_t p = X->rows < n ? X->rows : n;
    double *s = malloc((p ? p : 1) * sizeof(double));
    int st;
    if (!s)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if (!(st = ac_approx_svd(X, &U, s, &Vt, err)) && !(st = ac_mat_init(Q, n, r, err)))
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < r; k++)
                AC_MAT(Q, i, k) = AC_MAT(&Vt, k, i);
    free(s);
    ac_mat_free(&U);
    ac_mat_free(&Vt);
    return st;
}

/* The threshold of exact representability from what is certified. */
static void exact_threshold(mctx *c)
{
    ac_t1_threshold t = {-1, -1, 0, 0, 0, ""};
    long r = c->r, lo = c->thr.tau_lo > 1 ? c->thr.tau_lo : 1;
    if (c->uniform || r == 0) {
        t.exact = 1;
        t.none = !c->uniform;
        t.lo = t.hi = c->uniform ? 1 : -1;
        snprintf(t.method, sizeof t.method,
                 c->uniform ? "P is uniform on the visible keys of every query: the zero head"
                            : "X = 0: every head is uniform on the visible keys, P is not");
    } else if (c->none) {
        t.none = t.exact = 1;
        snprintf(t.method, sizeof t.method, "%s", c->none_why);
    } else if (r == (long)c->n) {
        t.lo = lo;
        t.hi = c->thr.tau_hi > 1 ? c->thr.tau_hi : 1;
        t.exact = t.lo == t.hi;
        snprintf(t.method, sizeof t.method, "%s", c->thr.method);
    } else if (r > 0) {
        t.lo = lo;
        t.hi = c->one_in == 1 ? (r > 1 ? r - 1 : 1) : r;
        t.if_any = 1;
        snprintf(t.method, sizeof t.method,
                 "lo: the least rank on Omega (Lemma W); hi: %s, if P is representable at all "
                 "(log P + 1c' = X'AX on Omega is not decided)",
                 c->one_in == 1 ? "rank X - 1 (1 in the row space of X)" : "rank X");
    } else {
        t.lo = lo;
        snprintf(t.method, sizeof t.method,
                 "lo: the least rank on Omega (Lemma W); the rank of X is not certified");
    }
    c->th = t;
}

static int mctx_init(mctx *c, ac_t1_result *res, const ac_mat *X, const ac_mat *P,
                     const ac_t1_opts *o, size_t dk, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    const char *xname = o->xname ? o->xname : "X", *pname = o->pname ? o->pname : "P";
    const char *mname = o->mask && o->mask->name ? o->mask->name : "mask";
    ac_mat Y = {0};
    ac_imat YX = {0};
    int st;
    memset(c, 0, sizeof *c);
    c->o = o;
    c->P = P;
    c->n = n;
    c->r = -1;
    if (o->d0)
        return ac_err_set_field(err, AC_EUSAGE, "d0",
                                "d0 belongs to the construction of unmasked heads (paper 1, "
                                "eq. (6)); it does not apply with a mask");
    if (n == 0 || d == 0) /* the message of ac_t1_validate */
        return ac_t1_validate(X, xname, P, pname, NULL, 0, NULL, dk, err);
    if (!(c->om = malloc(n * n)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if ((st = ac_t1_mask_support(c->om, n, o->mask, err)) ||
        (st = ac_t1_validate_masked(X, xname, P, pname, c->om, mname, dk, err)))
        return st;
    c->Xu = X;
    if (o->bias) { /* the biased class: X with a row of ones (§3.8, Lemma B) */
        if ((st = ac_t1_append_ones(&c->Xb1, X, err)))
            return st;
        c->Xu = &c->Xb1;
    }
    c->d = c->Xu->rows;
    if ((st = ac_t1_scale_pow2(&c->Xs, &c->x_scale, c->Xu, err)))
        return st;
    c->Xw = c->Xs.data ? &c->Xs : c->Xu;
    if ((st = t1_support_init(&c->sup, c->om, n, err)))
        return st;
    if ((st = ac_t1_certify_rank(res, &Y, &YX, &c->piv, c->Xw, o, err)))
        goto out;
    c->r = res->rank;
    long r = c->r;
    if (r > 0 && (st = t1_pinv(&c->Xp, NULL, c->Xw, (size_t)r, 0, err)))
        goto out;
    if (r > 0 && r < (long)n) {
        /* the independent rows, for the residual on one column (Lemma D):
         * with a bias without the row of ones, as range X~_I' + span 1 =
         * range X_I' + span 1 */
        size_t nr = 0, ones = o->bias ? c->d - 1 : (size_t)-1;
        if ((st = ac_mat_init(&c->Xr, (size_t)r, n, err)))
            goto out;
        for (long i = 0; i < r; i++) {
            size_t row = c->piv ? c->piv[i] : (size_t)i;
            if (row != ones)
                memcpy(c->Xr.data + nr++ * n, c->Xw->data + row * n, n * sizeof(double));
        }
        c->Xr.rows = nr;
        if ((st = row_basis(&c->Q, c->Xw, (size_t)r, err)))
            goto out;
        c->one_in = ac_t1_one_in_row_space(c->Xw, c->piv, (size_t)r, o->max_rank_work);
    }
    if ((st = t1_mthr_compute(&c->thr, &c->sup, P, o, err)))
        goto out;
    c->lb_fixed = t1_masked_lb_fixed(c->Xw, r > 0 && r < (long)n ? &c->Xr : NULL,
                                     (long)c->Xr.rows, P, &c->sup,
                                     c->lb_fixed_method, sizeof c->lb_fixed_method, &c->none,
                                     &c->rho);
    if (c->none)
        snprintf(c->none_why, sizeof c->none_why,
                 "the residual of log P on one column, off range X_I' + span 1, is >= %.4g > 0 "
                 "(Lemma D; rank X = %ld < n): no head of any size",
                 c->rho, r);
    else if (r > 0 && r < (long)n && c->thr.tau_lo > r) {
        c->none = 1;
        snprintf(c->none_why, sizeof c->none_why,
                 "every head's logits have rank <= rank X = %ld < %ld, the least rank of "
                 "log P + 1c' on Omega (Lemma W): no head of any size",
                 r, c->thr.tau_lo);
    }
    c->uniform = uniform_columns(P, c->om); /* the zero head represents P */
    if (c->sup.chain && r > 0 &&
        t1_woerdeman_completion(&c->N, &c->sup, P, T1_MASK_REL, err) != AC_OK) {
        ac_err_clear(err); /* an optional start: the projection runs without it */
        ac_mat_free(&c->N);
    }
    c->norm_gap = t1_normalisation_gap_rows(P);
    exact_threshold(c);
    /* k = min(dk, r) <= r (or min(d, n) when the rank is not certified) */
    c->nlbk = (size_t)(r >= 0 ? r : (long)(c->d < n ? c->d : n)) + 1;
    c->lbk = calloc(c->nlbk, sizeof *c->lbk); /* NULL: nothing kept, each k recomputed */
out:
    ac_mat_free(&Y);
    ac_imat_free(&YX);
    return st;
}

/* ---- one head size ------------------------------------------------------------ */

typedef struct {
    ac_verdict exact;
    char exact_method[200];
    int exact_stage;
    long exact_prec;
    double dist_lo, dist_hi;
    char lower_method[160];
    int lower_stage;
    long lower_prec;
    ac_cert wcert;
    ac_mat Wk, Wq;             /* for the unscaled class X; empty if none */
    int weights_unusable;
    char upper_method[160];
    int refine_iters;
    char refine_stop[120];
    ac_cert user_cert;
} meval;

static void meval_free(meval *e)
{
    ac_mat_free(&e->Wk);
    ac_mat_free(&e->Wq);
}

static void meval_exact(meval *e, const mctx *c, size_t dk)
{
    long r = c->r;
    const t1_mthr *t = &c->thr;
    e->exact = AC_UNDECIDED;
    e->exact_stage = AC_STAGE_NONE;
    e->exact_prec = 0;
    if (r == 0 || c->uniform) {
        e->exact = c->uniform ? AC_PROVED : AC_REFUTED;
        e->exact_stage = AC_STAGE_EXACT;
        snprintf(e->exact_method, sizeof e->exact_method, "%s", c->th.method);
    } else if (c->none) {
        e->exact = AC_REFUTED;
        e->exact_stage = AC_STAGE_DOUBLE;
        e->exact_prec = 53;
        snprintf(e->exact_method, sizeof e->exact_method, "%s", c->none_why);
    } else if (t->tau_lo > (long)dk) {
        e->exact = AC_REFUTED;
        e->exact_stage = t->stage;
        e->exact_prec = t->prec;
        snprintf(e->exact_method, sizeof e->exact_method,
                 "the least rank of log P + 1c' on Omega is >= %ld > dk (Lemma W, certified "
                 "ranks of the blocks of log P)",
                 t->tau_lo);
    } else if (r == (long)c->n && t->tau_hi <= (long)dk) {
        e->exact = AC_PROVED;
        e->exact_stage = t->stage;
        e->exact_prec = t->prec;
        snprintf(e->exact_method, sizeof e->exact_method,
                 "rank X = n and the least rank of log P + 1c' on Omega is <= %ld <= dk (%s)",
                 t->tau_hi, c->sup.chain ? "Lemma W" : "Lemma G");
    } else if (r == (long)c->n)
        snprintf(e->exact_method, sizeof e->exact_method,
                 "the least rank on Omega is only known to lie in [%ld, %ld]: %.120s", t->tau_lo,
                 t->tau_hi, t->method);
    else if (r > 0)
        snprintf(e->exact_method, sizeof e->exact_method,
                 "rank X = %ld < n: needs log P + 1c' = X'AX on Omega with rank A <= dk, an "
                 "identity between logarithms that no enclosure proves; no obstruction certified",
                 r);
    else
        snprintf(e->exact_method, sizeof e->exact_method, "the rank of X is not certified");
}

static void meval_lower(meval *e, const mctx *c, size_t dk)
{
    e->dist_lo = c->lb_fixed;
    snprintf(e->lower_method, sizeof e->lower_method, "%s", c->lb_fixed_method);
    e->lower_stage = c->lb_fixed > 0 ? AC_STAGE_DOUBLE : AC_STAGE_NONE;
    e->lower_prec = c->lb_fixed > 0 ? 53 : 0;
    long r = c->r >= 0 ? c->r : (long)(c->d < c->n ? c->d : c->n);
    size_t k = (long)dk < r ? dk : (size_t)r;
    t1_lbk b = {0, 0, AC_STAGE_NONE, 0, ""}, *kept = c->lbk && k < c->nlbk ? &c->lbk[k] : NULL;
    if (kept && kept->done)
        b = *kept;
    else if (r > 0) {
        b.t = t1_masked_lb_rank(c->P, &c->sup, &c->thr, k, b.method, sizeof b.method, &b.stage,
                                &b.prec);
        b.done = 1;
        if (kept)
            *kept = b;
    }
    if (b.t > e->dist_lo) {
        e->dist_lo = b.t;
        e->lower_stage = b.stage;
        e->lower_prec = b.prec;
        snprintf(e->lower_method, sizeof e->lower_method, "%s", b.method);
    }
}

/* Weights of size dk for Xw from logits Z (rank <= dk, in {Q C Q'}). */
static int weights_from(ac_mat *Wk, ac_mat *Wq, const mctx *c, const ac_mat *Z, size_t dk,
                        ac_err *err)
{
    return t1_factor_logits(Wk, Wq, Z, &c->Xp, dk, err);
}

/* max over Omega |Softmax_Omega - P| of the weights for Xw in double. */
static double weights_err(const mctx *c, const ac_mat *Wk, const ac_mat *Wq)
{
    ac_mat S = {0};
    double e = INFINITY;
    if (ac_head_softmax_masked(&S, c->Xw, Wk, Wq, c->om, NULL) == AC_OK) {
        e = 0;
        for (size_t i = 0; i < c->n * c->n; i++) {
            double v = fabs(S.data[i] - c->P->data[i]);
            if (!(v <= e))
                e = v == v ? v : INFINITY;
        }
    }
    ac_mat_free(&S);
    return e;
}

/* Weights for Xw become weights for Xu: W Xw = (2^s W) Xu, exactly when
 * every 2^s w is a finite double (else 0: none written). */
static int unscale(ac_mat *W, int s)
{
    for (size_t i = 0; i < W->rows * W->cols && s; i++) {
        double a = ldexp(W->data[i], s);
        if (!isfinite(a) || ldexp(a, -s) != W->data[i])
            return 0;
        W->data[i] = a;
    }
    return 1;
}

/* Certify the weights (for Xw) against Xu with the mask: into *cert, and
 * into e->Wk, e->Wq when better than what e holds. */
static int offer(meval *e, const mctx *c, ac_mat *Wk, ac_mat *Wq, const char *name, ac_err *err)
{
    ac_cert cert;
    int st;
    if (!unscale(Wk, c->x_scale) || !unscale(Wq, c->x_scale)) {
        e->weights_unusable = !e->Wk.data;
        ac_mat_free(Wk);
        ac_mat_free(Wq);
        return AC_OK;
    }
    if ((st = ac_head_certify_masked(&cert, c->Xu, Wk, Wq, c->P, c->om, c->o->tol, &c->o->sched,
                                     err)))
        return st;
    if (!e->Wk.data || cert.hi < e->wcert.hi) {
        meval_free(e);
        e->Wk = *Wk;
        e->Wq = *Wq;
        e->wcert = cert;
        e->weights_unusable = 0;
        snprintf(e->upper_method, sizeof e->upper_method, "%s", name);
        *Wk = (ac_mat){0};
        *Wq = (ac_mat){0};
    }
    ac_mat_free(Wk);
    ac_mat_free(Wq);
    return AC_OK;
}

/* The starting logits of size dk: Woerdeman's completion K N truncated to
 * rank dk (staircase, r = n), else the visible log P centred per column;
 * then the alternating projection when that is not within tol/4 in double. */
/* The logits of size dk to start from: for rank X < n the least-squares
 * logits in {Q B Q'} (within a work budget); else Woerdeman's completion K N
 * (a staircase), or Lemma G's keys in general position (dk >= max_j
 * |Omega_j| - 1), or 0; truncated to rank dk and, unless that is within
 * tol/4 in double, improved by the alternating projection. */
static int start_logits(ac_mat *Z, const char **name, const mctx *c, size_t dk, ac_err *err)
{
    size_t n = c->n;
    int st;
    if ((st = ac_mat_init(Z, n, n, err)))
        return st;
    if (c->r > 0 && c->r < (long)n &&
        (double)c->sup.nvis * pow((double)(c->r * c->r) + (double)n, 2) <= T1_MASK_LSQ_WORK) {
        ac_mat_free(Z);
        if ((st = t1_masked_lsq_logits(Z, &c->sup, c->P, &c->Q, err)))
            return st;
        *name = "least squares in {Q B Q'} on Omega, truncated to rank dk";
    } else if (c->N.data) { /* Z = K N, K = I - 11'/n: rank([N 1]) - 1 (Lemma S) */
        for (size_t j = 0; j < n; j++) {
            double m = 0;
            for (size_t i = 0; i < n; i++)
                m += AC_MAT(&c->N, i, j);
            m /= (double)n;
            for (size_t i = 0; i < n; i++)
                AC_MAT(Z, i, j) = AC_MAT(&c->N, i, j) - m;
        }
        *name = "Woerdeman's completion of log P on Omega (Lemma W), centred, rank dk";
    } else if (c->r == (long)n && c->sup.maxq <= dk + 1) {
        ac_mat_free(Z);
        if ((st = t1_general_position_logits(Z, &c->sup, c->P, dk, err)))
            return st;
        *name = "keys in general position, each query solved on its visible keys (Lemma G)";
    } else
        *name = "log P centred on Omega, alternating projection to rank dk";
    int iters = (int)fmin(T1_MASK_PROJ_MAX, T1_MASK_PROJ_WORK / ((double)n * n * n + 1));
    if (iters < 2)
        iters = 2;
    return t1_masked_project(Z, &c->sup, c->P, c->r < (long)n ? &c->Q : NULL, dk, iters,
                             c->o->tol / 4, err);
}

static int meval_weights(meval *e, const mctx *c, size_t dk, ac_err *err)
{
    const ac_t1_opts *o = c->o;
    ac_mat Z = {0}, Wk = {0}, Wq = {0}, Wk2 = {0}, Wq2 = {0};
    const char *name = "";
    int st;
    ac_cert_set(&e->wcert, "max|Softmax_Omega - P| (written weights)", AC_LE, o->tol,
                AC_STAGE_NONE, 0, 0, INFINITY, "no weights constructed");
    e->wcert.verdict = AC_UNDECIDED;
    if (c->r > 0) {
        if ((st = start_logits(&Z, &name, c, dk, err)) ||
            (st = weights_from(&Wk, &Wq, c, &Z, dk, err)))
            goto out;
        double e0 = weights_err(c, &Wk, &Wq);
        if (!(e0 <= o->tol / 4) && o->optimize > 0) {
            int ran = 0;
            if (ac_t1_refine_masked(&Wk2, &Wq2, &ran, e->refine_stop, sizeof e->refine_stop,
                                    c->Xw, c->P, c->om, &Wk, &Wq, o->optimize)) {
                e->refine_iters = ran;
                if (weights_err(c, &Wk2, &Wq2) < e0) {
                    char nm[160];
                    snprintf(nm, sizeof nm, "masked BFGS (squared error, then p-norms) from %s",
                             name);
                    if ((st = offer(e, c, &Wk2, &Wq2, nm, err)))
                        goto out;
                }
            }
        } else
            snprintf(e->refine_stop, sizeof e->refine_stop,
                     e0 <= o->tol / 4 ? "not needed: the start is within tol/4 in double"
                                      : "off (optimize = 0)");
        if (!(e->Wk.data && e->wcert.verdict == AC_PROVED) &&
            (st = offer(e, c, &Wk, &Wq, name, err)))
            goto out;
    }
    /* a start not offered (a refinement proved C(tol)) is dropped here */
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    /* the zero head: uniform on the visible keys, a head of every size */
    if (e->wcert.verdict != AC_PROVED) {
        if ((st = ac_mat_init(&Wk, dk, c->d, err)) || (st = ac_mat_init(&Wq, dk, c->d, err)) ||
            (st = offer(e, c, &Wk, &Wq, "the zero head (uniform on the visible keys)", err)))
            goto out;
    }
    /* the user's head */
    ac_cert_set(&e->user_cert, "max|Softmax_Omega - P| (given head)", AC_LE, o->tol,
                AC_STAGE_NONE, 0, 0, INFINITY, "no head given");
    e->user_cert.verdict = AC_UNDECIDED;
    if (o->user_wk && o->user_wq) {
        const ac_mat *uk = o->user_wk, *uq = o->user_wq;
        if (uk->rows != dk || uq->rows != dk || uk->cols != c->d || uq->cols != c->d) {
            st = ac_err_set(err, AC_EDATA, "%s, %s: the given head is %zu x %zu and %zu x %zu; "
                            "expected dk x %s = %zu x %zu",
                            o->wkname ? o->wkname : "Wk", o->wqname ? o->wqname : "Wq", uk->rows,
                            uk->cols, uq->rows, uq->cols, o->bias ? "(d + 1)" : "d", dk, c->d);
            goto out;
        }
        if ((st = ac_head_certify_masked(&e->user_cert, c->Xu, uk, uq, c->P, c->om, o->tol,
                                         &o->sched, err)))
            goto out;
        if ((st = ac_mat_copy(&Wk, uk, err)) || (st = ac_mat_copy(&Wq, uq, err)))
            goto out;
        if (!e->Wk.data || e->user_cert.hi < e->wcert.hi) {
            meval_free(e);
            e->Wk = Wk;
            e->Wq = Wq;
            e->wcert = e->user_cert;
            Wk.data = Wq.data = NULL;
            snprintf(e->upper_method, sizeof e->upper_method, "the given head");
        }
    }
out:
    ac_mat_free(&Z);
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    ac_mat_free(&Wk2);
    ac_mat_free(&Wq2);
    return st;
}

static int meval_run(meval *e, const mctx *c, size_t dk, int want_weights, ac_err *err)
{
    int st = AC_OK;
    memset(e, 0, sizeof *e);
    meval_exact(e, c, dk);
    meval_lower(e, c, dk);
    e->dist_hi = INFINITY;
    ac_cert_set(&e->wcert, "max|Softmax_Omega - P| (written weights)", AC_LE, c->o->tol,
                AC_STAGE_NONE, 0, 0, INFINITY, "no weights constructed");
    e->wcert.verdict = AC_UNDECIDED;
    ac_cert_set(&e->user_cert, "max|Softmax_Omega - P| (given head)", AC_LE, c->o->tol,
                AC_STAGE_NONE, 0, 0, INFINITY, "no head given");
    e->user_cert.verdict = AC_UNDECIDED;
    if (want_weights && (st = meval_weights(e, c, dk, err)))
        return st;
    if (e->wcert.stage != AC_STAGE_NONE)
        e->dist_hi = e->wcert.hi;
    if (e->exact == AC_PROVED && c->norm_gap < e->dist_hi) {
        e->dist_hi = c->norm_gap;
        snprintf(e->upper_method, sizeof e->upper_method,
                 "exact representability: dist <= the normalisation gap of P");
    }
    if (e->wcert.stage != AC_STAGE_NONE && c->r == 0 && e->wcert.lo > e->dist_lo) {
        e->dist_lo = e->wcert.lo; /* X = 0: every head is the zero head */
        e->lower_stage = e->wcert.stage;
        e->lower_prec = e->wcert.prec;
        snprintf(e->lower_method, sizeof e->lower_method,
                 "X = 0: every head is uniform on the visible keys (exact)");
    }
    /* every head is >= dist_lo from P, so > 0 from its normalisation */
    if (e->exact == AC_UNDECIDED && e->dist_lo > c->norm_gap) {
        e->exact = AC_REFUTED;
        e->exact_stage = e->lower_stage;
        e->exact_prec = e->lower_prec;
        snprintf(e->exact_method, sizeof e->exact_method,
                 "every head is at least %.3g > the normalisation gap away (%.120s)", e->dist_lo,
                 e->lower_method);
    }
    return AC_OK;
}

/* ---- the masked route of ac_t1_check ------------------------------------------ */

static void support_text(char *buf, size_t len, const mctx *c)
{
    const t1_support *s = &c->sup;
    if (s->full)
        snprintf(buf, len, "full: every key visible to every query (%zu pairs)", s->nvis);
    else if (s->chain)
        snprintf(buf, len,
                 "staircase (the keys' visible sets are nested): %zu maximal blocks, %zu visible "
                 "pairs; Lemma W is exact given the ranks of the blocks",
                 s->stair.K, s->nvis);
    else
        snprintf(buf, len,
                 "not a staircase (the keys' visible sets are not nested): a sub-staircase of "
                 "%zu blocks keeps %zu of the %zu visible pairs; the threshold is a range",
                 s->stair.K, s->stair.nkept, s->nvis);
}

static void masked_summary(ac_t1_result *res, const mctx *c, const ac_t1_opts *o)
{
    char rk[96];
    if (c->r >= 0)
        snprintf(rk, sizeof rk, "%s, rank X%s = %ld, n = %zu, dk = %zu",
                 c->sup.chain ? "staircase mask" : "mask", o->bias ? " (with ones)" : "", c->r,
                 res->n, res->dk);
    else
        snprintf(rk, sizeof rk, "mask, rank X not certified, dk = %zu", res->dk);
    if (res->exact == AC_PROVED)
        snprintf(res->summary, sizeof res->summary,
                 "%s: P is exactly representable on Omega (doc/mathematics.md §3.8); the written "
                 "weights reach max|Softmax_Omega - P| <= %.3g",
                 rk, res->weights_cert.hi);
    else if (res->exact == AC_REFUTED && res->dist_hi <= o->tol)
        snprintf(res->summary, sizeof res->summary,
                 "%s: P itself is not exactly representable (every head is >= %.3g away), but "
                 "the written weights come within %.3g",
                 rk, res->dist_lo, res->dist_hi);
    else if (res->exact == AC_REFUTED)
        snprintf(res->summary, sizeof res->summary,
                 "%s: P is not representable on Omega by a head of size %zu; every head is at "
                 "least %.3g away in max-abs",
                 rk, res->dk, res->dist_lo);
    else if (isfinite(res->dist_hi))
        snprintf(res->summary, sizeof res->summary,
                 "%s: exact representability not decided (threshold in [%ld, %ld]); the written "
                 "weights reach max|Softmax_Omega - P| <= %.3g",
                 rk, res->threshold.lo, res->threshold.hi, res->dist_hi);
    else
        snprintf(res->summary, sizeof res->summary,
                 "%s: exact representability not decided, and no weights were certified", rk);
}

/* The masked route on a context built for (X, P): everything after mctx_init
 * (c->o is the call's options). */
static int route_masked_ctx(ac_t1_result *res, ac_t1_basis *basis, const mctx *c,
                            const ac_t1_opts *o, ac_err *err)
{
    meval e;
    size_t dk = res->dk;
    int st;
    memset(&e, 0, sizeof e);
    res->x_scale = c->x_scale;
    res->nvisible = c->sup.nvis;
    res->staircase = c->sup.chain;
    res->nblocks = c->sup.stair.K;
    support_text(res->support, sizeof res->support, c);
    res->norm_gap = c->norm_gap;
    res->threshold = c->th;
    if (c->rho > 0)
        res->rho_lo = c->rho;
    if (res->sigma_lo > 0 && c->x_scale != 0)
        res->sigma_lo = fmax(0.0, ac_dn(ldexp(res->sigma_lo, -c->x_scale)));
    ac_t1_add_step(res, "threshold on Omega (doc/mathematics.md §3.8)",
                   "least rank of log P + 1c' on Omega", (double)c->thr.tau_lo,
                   (double)c->thr.tau_hi, c->thr.stage, c->thr.prec, c->thr.method);
    if ((st = meval_run(&e, c, dk, o->want_weights, err)))
        goto out;
    res->exact = e.exact;
    res->exact_stage = e.exact_stage;
    res->exact_prec = e.exact_prec;
    snprintf(res->exact_method, sizeof res->exact_method, "%s", e.exact_method);
    res->dist_lo = e.dist_lo;
    res->dist_hi = e.dist_hi;
    res->lower_stage = e.lower_stage;
    res->lower_prec = e.lower_prec;
    snprintf(res->lower_method, sizeof res->lower_method, "%s", e.lower_method);
    snprintf(res->upper_method, sizeof res->upper_method, "%s", e.upper_method);
    res->weights_cert = e.wcert;
    res->user_cert = e.user_cert;
    res->weights_unusable = e.weights_unusable;
    res->refine_iters = e.refine_iters;
    snprintf(res->refine_stop, sizeof res->refine_stop, "%s", e.refine_stop);
    res->Wk = e.Wk;
    res->Wq = e.Wq;
    e.Wk.data = e.Wq.data = NULL;
    if (e.dist_lo > 0)
        ac_t1_add_step(res, "distance lower bound (doc/mathematics.md §3.8)",
                       "inf over masked heads of max|Softmax_Omega - P| >=", e.dist_lo,
                       e.dist_lo, e.lower_stage, e.lower_prec, e.lower_method);
    if (res->weights_cert.stage != AC_STAGE_NONE)
        ac_t1_add_step(res, "best head found", "max|Softmax_Omega - P| (written weights)",
                       res->weights_cert.lo, res->weights_cert.hi, res->weights_cert.stage,
                       res->weights_cert.prec, res->upper_method);
    if (e.dist_lo > o->tol) {
        res->refute_stage = e.lower_stage;
        res->refute_prec = e.lower_prec;
        snprintf(res->refute_method, sizeof res->refute_method, "%.127s", e.lower_method);
        basis->stage = e.lower_stage;
        basis->prec = e.lower_prec;
        snprintf(basis->method, sizeof basis->method, "%.127s", e.lower_method);
    } else if (e.exact == AC_PROVED) {
        basis->stage = e.exact_stage;
        basis->prec = e.exact_prec;
        snprintf(basis->method, sizeof basis->method, "exact representability on Omega (§3.8)");
    }
    masked_summary(res, c, o);
out:
    meval_free(&e);
    return st;
}

int ac_t1_route_masked(ac_t1_result *res, ac_t1_basis *basis, const ac_mat *X, const ac_mat *P,
                       const ac_t1_opts *o, ac_err *err)
{
    mctx c;
    int st;
    res->route = AC_T1_ROUTE_MASKED;
    res->masked = o->mask != NULL;
    res->bias = o->bias != 0;
    if (!(st = mctx_init(&c, res, X, P, o, res->dk, err)))
        st = route_masked_ctx(res, basis, &c, o, err);
    mctx_free(&c);
    return st;
}

/* ---- the head size at a tolerance ----------------------------------------------- */

/* Record an evaluated size; the monotone closure is applied by the caller. */
static void record(ac_t1_tol_threshold *t, long dk, ac_verdict v, double lo, double hi)
{
    if (t->nevals < AC_T1_MAX_EVALS) {
        t->eval[t->nevals].dk = dk;
        t->eval[t->nevals].verdict = v;
        t->eval[t->nevals].lo = lo;
        t->eval[t->nevals].hi = hi;
        t->nevals++;
    }
}

/* The search of ac_t1_threshold_at_tol on a built context (c->o its options);
 * t holds the start of tol_start. */
static int threshold_ctx(ac_t1_tol_threshold *t, const mctx *c, size_t dk_at, ac_err *err)
{
    const ac_t1_opts *o = c->o;
    meval e;
    int st = AC_OK;
    memset(&e, 0, sizeof e);
    t->exact_rep = c->th;
    long r = c->r >= 0 ? c->r : (long)(c->d < c->n ? c->d : c->n);
    size_t dmax = r > 0 ? (size_t)r : 1;
    t->dk_max = dmax;
    /* lower end: the largest dk whose lower bound exceeds tol (bounds are
     * non-increasing in dk; bisection on [0, dmax]) */
    long a = 0, b = (long)dmax + 1; /* REFUTED at a (a = 0: vacuous), not at b */
    while (b - a > 1) {
        long m = (a + b) / 2;
        if ((st = meval_run(&e, c, (size_t)m, 0, err)))
            goto out;
        ac_verdict v = e.dist_lo > o->tol ? AC_REFUTED : AC_UNDECIDED;
        record(t, m, v, e.dist_lo, INFINITY);
        if (v == AC_REFUTED)
            a = m;
        else
            b = m;
        meval_free(&e);
    }
    t->lo = a + 1;
    /* upper end: the smallest dk in [lo, dmax] with certified weights within
     * tol (the exact threshold first: exact representability and a small
     * normalisation gap prove it without weights) */
    long lo = t->lo, hi = -1, left = lo, right = (long)dmax;
    if (c->th.hi >= lo && !c->th.if_any && !c->th.none && c->th.hi <= (long)dmax &&
        c->norm_gap <= o->tol)
        right = c->th.hi, hi = c->th.hi;
    if (hi < 0) { /* is dmax proved at all? */
        if ((st = meval_run(&e, c, (size_t)right, 1, err)))
            goto out;
        record(t, right, e.dist_hi <= o->tol ? AC_PROVED : AC_UNDECIDED, e.dist_lo, e.dist_hi);
        if (e.dist_hi <= o->tol)
            hi = right;
        meval_free(&e);
    }
    if (hi > 0) {
        right = hi;
        while (left < right) {
            long m = (left + right) / 2;
            if ((st = meval_run(&e, c, (size_t)m, 1, err)))
                goto out;
            int proved = e.dist_hi <= o->tol;
            record(t, m, proved ? AC_PROVED : (e.dist_lo > o->tol ? AC_REFUTED : AC_UNDECIDED),
                   e.dist_lo, e.dist_hi);
            meval_free(&e);
            if (proved)
                right = m;
            else
                left = m + 1;
        }
        hi = right;
    }
    t->hi = hi;
    t->exact = hi == t->lo;
    snprintf(t->method, sizeof t->method,
             "dk < %ld: a certified lower bound above tol; %s", t->lo,
             hi > 0 ? "dk >= hi: certified weights (or exact representability) within tol"
                    : "no size up to dk_max proved");
    if (dk_at > 0) {
        t->dk_at = dk_at;
        if ((st = meval_run(&e, c, dk_at, 1, err)))
            goto out;
        t->at_lo = e.dist_lo;
        t->at_hi = e.dist_hi;
        snprintf(t->at_lower, sizeof t->at_lower, "%s", e.lower_method);
        snprintf(t->at_upper, sizeof t->at_upper, "%s", e.upper_method);
        /* monotone closure: dist is non-increasing in dk */
        for (size_t q = 0; q < t->nevals; q++) {
            if (t->eval[q].dk >= (long)dk_at && t->eval[q].lo > t->at_lo)
                t->at_lo = t->eval[q].lo;
            if (t->eval[q].dk <= (long)dk_at && t->eval[q].hi < t->at_hi)
                t->at_hi = t->eval[q].hi;
        }
        t->at_verdict = ac_judge(t->at_lo, t->at_hi, AC_LE, o->tol);
        meval_free(&e);
    }
out:
    meval_free(&e);
    return st;
}

/* ---- one instance at several head sizes (attncheck/theorem1.h) ----------------- */

struct ac_t1_instance {
    const ac_mat *X, *P;
    ac_t1_opts o;              /* the options of ac_t1_instance_init (mask, d0 the caller's) */
    int ready;                 /* c and rank are built */
    mctx c;                    /* c.o = &o */
    ac_t1_result rank;         /* what mctx_init certified about X: the rank, its stage,
                                  method and proof steps (route_masked_instance copies them) */
};

static void instance_setup(ac_t1_instance *in, const ac_mat *X, const ac_mat *P,
                           const ac_t1_opts *opts)
{
    memset(in, 0, sizeof *in);
    in->X = X;
    in->P = P;
    if (opts)
        in->o = *opts;
    else
        ac_t1_opts_default(&in->o);
}

static void instance_clear(ac_t1_instance *in)
{
    if (in->ready) {
        mctx_free(&in->c);
        ac_t1_result_free(&in->rank);
    }
    in->ready = 0;
}

/* The dk-independent work, once (BLAS single-threaded: the same bits for
 * any thread count, §7); a failure leaves nothing built. */
static int instance_ready(ac_t1_instance *in, ac_err *err)
{
    int st, threads;
    if (in->ready)
        return AC_OK;
    memset(&in->rank, 0, sizeof in->rank);
    in->rank.rank = -1;
    in->rank.rank_stage = AC_STAGE_NONE;
    threads = ac_blas_get_threads();
    ac_blas_set_threads(1);
    st = mctx_init(&in->c, &in->rank, in->X, in->P, &in->o, 1, err);
    ac_blas_set_threads(threads);
    if (st) {
        mctx_free(&in->c);
        ac_t1_result_free(&in->rank);
        return st;
    }
    in->ready = 1;
    return AC_OK;
}

static void tol_start(ac_t1_tol_threshold *t)
{
    memset(t, 0, sizeof *t);
    t->lo = 1;
    t->hi = -1;
    t->at_verdict = AC_UNDECIDED;
    t->at_lo = 0;
    t->at_hi = INFINITY;
    t->exact_rep = (ac_t1_threshold){-1, -1, 0, 0, 0, ""};
}

int ac_t1_instance_init(ac_t1_instance **inst, const ac_mat *X, const ac_mat *P,
                        const ac_t1_opts *opts, ac_err *err)
{
    *inst = malloc(sizeof **inst);
    if (!*inst)
        return ac_err_set(err, AC_EINTERNAL, "out of memory (a Theorem 1 instance)");
    instance_setup(*inst, X, P, opts);
    return AC_OK;
}

void ac_t1_instance_free(ac_t1_instance *inst)
{
    if (!inst)
        return;
    instance_clear(inst);
    free(inst);
}

int ac_t1_instance_threshold(ac_t1_tol_threshold *t, ac_t1_instance *in, size_t dk_at,
                             ac_err *err)
{
    double t0 = ac_seconds();
    int st, threads = ac_blas_get_threads();
    tol_start(t);
    ac_blas_set_threads(1); /* the same bits for any thread count (§7) */
    if (!(st = instance_ready(in, err)))
        st = threshold_ctx(t, &in->c, dk_at, err);
    ac_blas_set_threads(threads);
    t->seconds = ac_seconds() - t0;
    return st;
}

int ac_t1_threshold_at_tol(ac_t1_tol_threshold *t, const ac_mat *X, const ac_mat *P, size_t dk_at,
                           const ac_t1_opts *opts, ac_err *err)
{
    ac_t1_instance in;
    instance_setup(&in, X, P, opts);
    int st = ac_t1_instance_threshold(t, &in, dk_at, err);
    instance_clear(&in);
    return st;
}

/* The options a check may change on an instance: dk, want_weights,
 * optimize, user_wk, user_wq, wkname, wqname, tol, sched (the per-size
 * work); the others shaped the dk-independent work and must be the
 * instance's. */
static int instance_opts_agree(const ac_t1_opts *a, const ac_t1_opts *b)
{
    return a->mask == b->mask && (a->bias != 0) == (b->bias != 0) && a->d0 == b->d0 &&
           a->nd0 == b->nd0 && a->max_rank_work == b->max_rank_work;
}

int ac_t1_instance_check(ac_t1_result *res, ac_t1_instance *in, const ac_t1_opts *opts,
                         ac_err *err)
{
    const ac_t1_opts *o = opts ? opts : &in->o;
    if (!instance_opts_agree(o, &in->o)) {
        memset(res, 0, sizeof *res);
        return ac_err_set(err, AC_EUSAGE,
                          "ac_t1_instance_check: the options differ from the instance's in the "
                          "mask, bias, d0 or max_rank_work (attncheck/theorem1.h)");
    }
    return t1_check_instance(res, in->X, in->P, o, in, err);
}

int ac_t1_route_masked_instance(ac_t1_result *res, ac_t1_basis *basis, ac_t1_instance *in,
                                const ac_t1_opts *o, ac_err *err)
{
    int st;
    res->route = AC_T1_ROUTE_MASKED;
    res->masked = o->mask != NULL;
    res->bias = o->bias != 0;
    if ((st = instance_ready(in, err)))
        return st;
    /* what mctx_init wrote into res, from the instance: ac_t1_certify_rank's
     * fields and its proof steps */
    const ac_t1_result *k = &in->rank;
    res->rank = k->rank;
    res->rank_stage = k->rank_stage;
    res->rank_prec = k->rank_prec;
    res->sigma_lo = k->sigma_lo;
    memcpy(res->rank_method, k->rank_method, sizeof res->rank_method);
    for (size_t i = 0; i < k->nsteps; i++)
        res->steps[i] = k->steps[i];
    res->nsteps = k->nsteps;
    mctx c = in->c;
    c.o = o; /* the per-size options of this check (instance_opts_agree) */
    return route_masked_ctx(res, basis, &c, o, err);
}
