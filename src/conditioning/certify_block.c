/* certify_block.c — certify the mathematical block of a sample, not its
 * rounding (doc/mathematics.md §5.10).
 *
 * iid: the sampled doubles are the block; certify.c's enclosures are of it.
 * attention: the block is B = [B_1 ... B_h], B_i = Softmax(Q_i K_i^T /
 * sqrt d) V_i computed exactly from the sampled doubles X and weights (the
 * double block A~ = w->A rounds it).  Two facts decide it:
 *   rank: B_i = Softmax(.) X Wv_i / sqrt E (or Softmax(.) L Zv_i) has rank
 *         <= min(N, E, d), so rank B <= h min(N, E, d); when that is below
 *         m = min(N, D) the block is not of full rank and claim C is
 *         REFUTED for every sample, whatever the doubles say;
 *   enclosure: otherwise B is enclosed in Arb balls from the same streams
 *         (X, the projections, the exact Cholesky factor of X X^T / E in
 *         the factor form, the ball softmax of core/ball.c) and certify.c
 *         proves sigma_min(B) > 0 and the accuracy of kappa~ for B.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "core/ball.h"
#include "attncheck/interval.h"
#include "attncheck/rng.h"
#include "cond_impl.h"

size_t cond_rank_bound(const ac_cond_opts *o, size_t N, size_t h, size_t d, size_t E)
{
    size_t D = h * d, m = N < D ? N : D;
    if (o->mode != AC_COND_ATTENTION)
        return m;
    size_t r = N;
    if (E < r)
        r = E;
    if (d < r)
        r = d;
    /* h r < m  <=>  r < ceil(m / h); no overflow: r <= d, h r <= h d */
    return h * r < m ? h * r : m;
}

typedef struct {
    const ac_cond_opts *o;
    size_t N, h, d, E;
    uint64_t trial;
} att_ctx;

/* P = X W / sqrt E (direct) or L Z (factor), in balls; W or Z drawn from r
 * in the order of sample.c's draw_projection. */
static void ball_projection(arb_mat_t P, ac_rng *r, int factor, const arb_mat_t Xb,
                            const arb_mat_t Lb, const arb_t isqE, double *buf, size_t N,
                            size_t E, size_t d, slong prec)
{
    if (factor) {
        arb_mat_t Z;
        arb_mat_init(Z, (slong)N, (slong)d);
        ac_rng_normal_fill(r, buf, N * d);
        ac_arb_mat_set_d(Z, buf, N, d);
        arb_mat_mul(P, Lb, Z, prec);
        arb_mat_clear(Z);
    } else {
        arb_mat_t W;
        arb_mat_init(W, (slong)E, (slong)d);
        ac_rng_normal_fill(r, buf, E * d);
        ac_arb_mat_set_d(W, buf, E, d);
        arb_mat_mul(P, Xb, W, prec);
        arb_mat_scalar_mul_arb(P, P, isqE, prec);
        arb_mat_clear(W);
    }
}

/* Whether sample.c used the factor form for this X: E > N, not forced
 * direct, and LAPACK's Cholesky of fl(X X^T / E) succeeded (the same calls,
 * so the same answer). */
static int used_factor(const ac_cond_opts *o, const double *X, size_t N, size_t E)
{
    if (!(E > N && !o->attention_direct))
        return 0;
    double *L = malloc(N * N * sizeof(double));
    if (!L)
        return -1;
    cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)N, (int)E, 1.0 / (double)E, X,
                (int)E, 0.0, L, (int)N);
    lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'U', (lapack_int)N, L, (lapack_int)N);
    free(L);
    return info == 0;
}

/* The attention block of ctx in balls at prec bits (cond_block_fn). */
static int attention_ball(arb_mat_t B, void *vctx, slong prec)
{
    const att_ctx *c = vctx;
    size_t N = c->N, h = c->h, d = c->d, E = c->E;
    size_t nbuf = N * E > E * d ? N * E : E * d;
    if (N * d > nbuf)
        nbuf = N * d;
    double *buf = malloc(nbuf * sizeof(double));
    if (!buf)
        return 1;
    ac_rng r;
    ac_rng_init(&r, c->o->seed, (uint64_t)h, c->trial);
    ac_rng_normal_fill(&r, buf, N * E);
    int factor = used_factor(c->o, buf, N, E), rc = 1;
    arb_mat_t Xb, Lb, Q, K, V, Lg, Pt, P, Bi;
    arb_t isqE, isqd;
    arb_mat_init(Xb, (slong)N, (slong)E);
    arb_mat_init(Lb, factor == 1 ? (slong)N : 0, factor == 1 ? (slong)N : 0);
    arb_mat_init(Q, (slong)N, (slong)d);
    arb_mat_init(K, (slong)N, (slong)d);
    arb_mat_init(V, (slong)N, (slong)d);
    arb_mat_init(Lg, (slong)N, (slong)N);
    arb_mat_init(Pt, (slong)N, (slong)N);
    arb_mat_init(P, (slong)N, (slong)N);
    arb_mat_init(Bi, (slong)N, (slong)d);
    arb_init(isqE);
    arb_init(isqd);
    if (factor < 0)
        goto out;
    ac_arb_mat_set_d(Xb, buf, N, E);
    arb_set_ui(isqE, (ulong)E);
    arb_rsqrt(isqE, isqE, prec);
    arb_set_ui(isqd, (ulong)d);
    arb_rsqrt(isqd, isqd, prec);
    if (factor) {
        /* the exact Cholesky factor of X X^T / E, enclosed (arb_mat_cho
         * returns 0 unless positive definiteness is certain) */
        arb_mat_t G, Xt;
        arb_mat_init(G, (slong)N, (slong)N);
        arb_mat_init(Xt, (slong)E, (slong)N);
        arb_mat_transpose(Xt, Xb);
        arb_mat_mul(G, Xb, Xt, prec);
        arb_mat_scalar_div_si(G, G, (slong)E, prec);
        int ok = arb_mat_cho(Lb, G, prec);
        arb_mat_clear(G);
        arb_mat_clear(Xt);
        if (!ok)
            goto out;
    }
    for (size_t i = 0; i < h; i++) {
        ball_projection(Q, &r, factor, Xb, Lb, isqE, buf, N, E, d, prec);
        ball_projection(K, &r, factor, Xb, Lb, isqE, buf, N, E, d, prec);
        ball_projection(V, &r, factor, Xb, Lb, isqE, buf, N, E, d, prec);
        /* Lg = K Q^T / sqrt d: column j holds the logits of row j of
         * Q K^T / sqrt d, so the column softmax of Lg is P^T */
        arb_mat_t Qt;
        arb_mat_init(Qt, (slong)d, (slong)N);
        arb_mat_transpose(Qt, Q);
        arb_mat_mul(Lg, K, Qt, prec);
        arb_mat_clear(Qt);
        arb_mat_scalar_mul_arb(Lg, Lg, isqd, prec);
        ac_arb_softmax_cols(Pt, Lg, prec);
        arb_mat_transpose(P, Pt);
        arb_mat_mul(Bi, P, V, prec);
        for (size_t a = 0; a < N; a++)
            for (size_t b = 0; b < d; b++)
                arb_set(arb_mat_entry(B, (slong)a, (slong)(i * d + b)),
                        arb_mat_entry(Bi, (slong)a, (slong)b));
    }
    rc = 0;
out:
    arb_mat_clear(Xb);
    arb_mat_clear(Lb);
    arb_mat_clear(Q);
    arb_mat_clear(K);
    arb_mat_clear(V);
    arb_mat_clear(Lg);
    arb_mat_clear(Pt);
    arb_mat_clear(P);
    arb_mat_clear(Bi);
    arb_clear(isqE);
    arb_clear(isqd);
    free(buf);
    return rc;
}

/* ---- stage 0: r >= ||B - A~||_2 in double interval arithmetic ------------ */

/* A := A * [slo, shi] (slo > 0), entrywise, rounded outward, as a
 * midpoint-radius matrix. */
static void imat_scale(ac_imat *A, double slo, double shi)
{
    for (size_t i = 0; i < A->rows * A->cols; i++) {
        double lo = ac_imat_lo(A, i), hi = ac_imat_hi(A, i);
        double l = lo >= 0 ? ac_mul_dn(lo, slo) : ac_mul_dn(lo, shi);
        double h = hi >= 0 ? ac_mul_up(hi, shi) : ac_mul_up(hi, slo);
        double m = 0.5 * l + 0.5 * h;
        A->mid[i] = m;
        A->rad[i] = fmax(ac_sub_up(h, m), ac_sub_up(m, l));
    }
}

/* [lo, hi] containing 1/sqrt(k): the double value is within 2 ulp of it. */
static void inv_sqrt_enclose(size_t k, double *lo, double *hi)
{
    double v = 1.0 / sqrt((double)k);
    *lo = v * (1 - 0x1p-50);
    *hi = v * (1 + 0x1p-50);
}

/* P (N x d, enclosed) = op(X) W / sqrt E or L Z, W or Z drawn from r. */
static int imat_projection(ac_imat *P, ac_rng *r, int factor, const ac_imat *X,
                           const ac_imat *L, double *buf, size_t N, size_t E, size_t d,
                           double slo, double shi)
{
    ac_err err;
    ac_err_clear(&err);
    size_t rows = factor ? N : E;
    ac_rng_normal_fill(r, buf, rows * d);
    ac_mat Wm = {rows, d, buf};
    ac_imat W = ac_imat_view(&Wm);
    if (ac_imat_mul(P, AC_NOTRANS, factor ? L : X, AC_NOTRANS, &W, &err))
        return 1;
    if (!factor)
        imat_scale(P, slo, shi);
    return 0;
}

/* The exact Cholesky factor of X X^T / E as an interval matrix (Arb at 128
 * bits, arb_mat_cho certain of positive definiteness).  0 on success. */
static int chol_imat(ac_imat *L, const double *X, size_t N, size_t E)
{
    arb_mat_t Xb, Xt, G, Lb;
    arb_mat_init(Xb, (slong)N, (slong)E);
    arb_mat_init(Xt, (slong)E, (slong)N);
    arb_mat_init(G, (slong)N, (slong)N);
    arb_mat_init(Lb, (slong)N, (slong)N);
    ac_arb_mat_set_d(Xb, X, N, E);
    arb_mat_transpose(Xt, Xb);
    arb_mat_mul(G, Xb, Xt, 128);
    arb_mat_scalar_div_si(G, G, (slong)E, 128);
    int ok = arb_mat_cho(Lb, G, 128);
    ac_err err;
    ac_err_clear(&err);
    int rc = !ok || ac_arb_mat_to_imat(L, Lb, &err);
    arb_mat_clear(Xb);
    arb_mat_clear(Xt);
    arb_mat_clear(G);
    arb_mat_clear(Lb);
    return rc;
}

/* One head: B_i enclosed from Q, K, V (N x d) into Bi (N x d). */
static int imat_head(ac_imat *Bi, const ac_imat *Q, const ac_imat *K, const ac_imat *V,
                     size_t N, size_t d, ac_imat *Lg, ac_imat *Pt, double *plo, double *phi)
{
    ac_err err;
    ac_err_clear(&err);
    double slo, shi;
    inv_sqrt_enclose(d, &slo, &shi);
    /* Lg = K Q^T / sqrt d: column j holds the logits of row j */
    if (ac_imat_mul(Lg, AC_NOTRANS, K, AC_TRANS, Q, &err))
        return 1;
    imat_scale(Lg, slo, shi);
    for (size_t i = 0; i < N * N; i++) {
        plo[i] = ac_imat_lo(Lg, i);
        phi[i] = ac_imat_hi(Lg, i);
    }
    double *llo = Lg->mid, *lhi = Lg->rad; /* reuse as the logit bounds */
    memcpy(llo, plo, N * N * sizeof(double));
    memcpy(lhi, phi, N * N * sizeof(double));
    if (!ac_softmax_col_enclose(llo, lhi, N, N, plo, phi))
        return 1;
    for (size_t i = 0; i < N * N; i++) {
        double m = 0.5 * plo[i] + 0.5 * phi[i];
        Pt->mid[i] = m;
        Pt->rad[i] = fmax(ac_sub_up(phi[i], m), ac_sub_up(m, plo[i]));
    }
    return ac_imat_mul(Bi, AC_TRANS, Pt, AC_NOTRANS, V, &err) != AC_OK;
}

/* r >= ||B - A~||_F over the double interval enclosure of B (cond_block_fn
 * rad0): BLAS products with Higham's gamma bounds (ac_imat_mul), the stage-0
 * softmax enclosure of §2.4, the Cholesky factor from Arb.  0 on success. */
static int attention_rad0(void *vctx, const ac_mat *At, double *rout)
{
    const att_ctx *c = vctx;
    size_t N = c->N, h = c->h, d = c->d, E = c->E, D = h * d;
    size_t nbuf = N * E > E * d ? N * E : E * d;
    if (N * d > nbuf)
        nbuf = N * d;
    double *buf = malloc(nbuf * sizeof(double)), *Xd = malloc(N * E * sizeof(double));
    double *plo = malloc(N * N * sizeof(double)), *phi = malloc(N * N * sizeof(double));
    double *Ai = malloc(N * d * sizeof(double));
    ac_imat L = {0}, Q = {0}, K = {0}, V = {0}, Lg = {0}, Pt = {0}, Bi = {0};
    ac_err err;
    ac_err_clear(&err);
    int rc = 1;
    if (!buf || !Xd || !plo || !phi || !Ai || ac_imat_init(&Q, N, d, 1, &err) ||
        ac_imat_init(&K, N, d, 1, &err) || ac_imat_init(&V, N, d, 1, &err) ||
        ac_imat_init(&Lg, N, N, 1, &err) || ac_imat_init(&Pt, N, N, 1, &err) ||
        ac_imat_init(&Bi, N, d, 1, &err))
        goto out;
    ac_rng r;
    ac_rng_init(&r, c->o->seed, (uint64_t)h, c->trial);
    ac_rng_normal_fill(&r, Xd, N * E);
    int factor = used_factor(c->o, Xd, N, E);
    if (factor < 0 || (factor && chol_imat(&L, Xd, N, E)))
        goto out;
    ac_mat Xm = {N, E, Xd};
    ac_imat X = ac_imat_view(&Xm);
    double slo, shi, ss = 0;
    inv_sqrt_enclose(E, &slo, &shi);
    for (size_t i = 0; i < h; i++) {
        if (imat_projection(&Q, &r, factor, &X, &L, buf, N, E, d, slo, shi) ||
            imat_projection(&K, &r, factor, &X, &L, buf, N, E, d, slo, shi) ||
            imat_projection(&V, &r, factor, &X, &L, buf, N, E, d, slo, shi) ||
            imat_head(&Bi, &Q, &K, &V, N, d, &Lg, &Pt, plo, phi))
            goto out;
        for (size_t a = 0; a < N; a++)
            memcpy(Ai + a * d, At->data + a * D + i * d, d * sizeof(double));
        double ri = ac_imat_fro_dev_up(&Bi, Ai, 0);
        ss = ac_add_up(ss, ac_mul_up(ri, ri));
    }
    *rout = isfinite(ss) ? ac_sqrt_up(ss) : INFINITY;
    rc = 0;
out:
    ac_imat_free(&L);
    ac_imat_free(&Q);
    ac_imat_free(&K);
    ac_imat_free(&V);
    ac_imat_free(&Lg);
    ac_imat_free(&Pt);
    ac_imat_free(&Bi);
    free(buf);
    free(Xd);
    free(plo);
    free(phi);
    free(Ai);
    return rc;
}

/* Claim C is false for a block of rank < m: kappa = inf, dev = inf. */
static void refute_rank(ac_cond_sample *s)
{
    s->rank_refuted = 1;
    s->s1_lo = 0;
    s->s1_hi = INFINITY;
    s->smin_lo = 0;
    s->smin_hi = 0;
    s->kappa_lo = INFINITY;
    s->kappa_hi = INFINITY;
    s->dev_lo = INFINITY;
    s->dev_hi = INFINITY;
    s->block_rad = 0;
    s->cert = AC_REFUTED;
    s->cert_stage = AC_STAGE_EXACT;
    s->cert_prec = 0;
}

int cond_certify_sample(const cond_ws *w, const ac_cond_opts *o, uint64_t trial,
                        ac_cond_sample *s, ac_err *err)
{
    ac_mat A = {w->N, w->D, w->A};
    ac_schedule sc = o->sched;
    s->rank_refuted = 0;
    s->block_rad = 0;
    if (o->mode != AC_COND_ATTENTION)
        return cond_certify_block(&A, NULL, o->rtol, &sc, o->max_prec, s, err);
    if (cond_rank_bound(o, w->N, w->h, w->d, w->E) < w->m) {
        refute_rank(s);
        return AC_OK;
    }
    att_ctx c = {o, w->N, w->h, w->d, w->E, trial};
    cond_block_fn blk = {attention_ball, attention_rad0, &c};
    return cond_certify_block(&A, &blk, o->rtol, &sc, o->max_prec, s, err);
}
