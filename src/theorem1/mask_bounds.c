/* mask_bounds.c — certified lower bounds on dist = inf over masked heads of
 * size dk of max|Softmax_Omega((Wk X)'(Wq X)/sqrt(dk)) - P|
 * (doc/mathematics.md §3.8, the lemmas of §3.6 on rectangles inside Omega).
 * On Omega a masked head has log S = Z + 1c' (c_j = -lse of column j over
 * its visible keys), so Lemmas A, C and D hold for every rectangle I x J of
 * visible entries:
 *   - column sums over the visible keys, zero and equal columns of X;
 *   - the residual on one column j and its largest visible entries (Lemma D,
 *     rank X = r < n: Xb the r independent rows), for every head size;
 *   - the rank obstruction sigma_{k+1}(K_I log P_IJ), k = min(dk, r), on the
 *     blocks of the staircase (their singular values certified once by
 *     mask_rank.c) and on submatrices of the best block without its
 *     smallest entries (Lemma C).
 *
 * Dimension letters: d model width, n tokens, dk head size, r = rank X.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/theorem1.h"
#include "theorem1/t1_dist.h"
#include "theorem1/t1_mask.h"
#include "theorem1/t1_stage0.h"

double t1_masked_lb_fixed(const ac_mat *X, const ac_mat *Xb, long r, const ac_mat *P,
                          const t1_support *s, char *method, size_t mlen, int *none,
                          double *rho_out)
{
    size_t n = s->n, j1 = 0, j2 = 0;
    double best = 0, v;
    *none = 0;
    *rho_out = 0;
    snprintf(method, mlen, "none (no bound certified above 0)");
    v = ac_t1_lb_colsum(P, s->om, &j1);
    if (v > best) {
        best = v;
        snprintf(method, mlen, "column %zu of P does not sum to 1 over its visible keys", j1 + 1);
    }
    v = ac_t1_lb_zero_cols(X, P, s->om, &j1);
    if (v > best) {
        best = v;
        snprintf(method, mlen,
                 "column %zu of X is 0: masked softmax column %zu is uniform on its visible keys",
                 j1 + 1, j1 + 1);
    }
    v = ac_t1_lb_equal_cols(X, P, s->om, &j1, &j2);
    if (v > best) {
        best = v;
        snprintf(method, mlen,
                 "columns %zu and %zu of X are equal: equal logits, half the largest gap of P "
                 "where both are visible",
                 j1 + 1, j2 + 1);
    }
    if (Xb && r > 0 && (size_t)r + 2 <= n) {
        size_t col = 0, rows = 0;
        double rho = 0, t = ac_t1_lb_resid(Xb, P, &col, &rows, &rho);
        if (rho > 0) {
            *none = 1;
            *rho_out = rho;
        }
        if (t > best) {
            best = t;
            snprintf(method, mlen,
                     "residual on column %zu, its %zu largest visible entries: dist(log P_Ij, "
                     "range X_I' + span 1) >= %.4g, entry by entry",
                     col + 1, rows, rho);
        }
    }
    return best;
}

/* The rank obstruction on one rectangle: t with sqrt(sum phi(t/P)^2) < m
 * certified (0 if none). */
static double rect_t(const ac_mat *P, const size_t *I, size_t a, const size_t *J, size_t b,
                     double m)
{
    double *buf = malloc((a > 0 && b > 0 ? a * b : 1) * sizeof(double)), t = 0;
    if (buf && m > 0) {
        ac_t1_gather(buf, P, I, a, J, b);
        t = ac_t1_t_certified(buf, a * b, m);
    }
    free(buf);
    return t;
}

/* A quick estimate of the t a rectangle gives with obstruction m: the first
 * order m / ||1/P_IJ||_F, below min P_IJ (only the choice depends on it). */
static double rect_estimate(const ac_mat *P, const size_t *I, size_t a, const size_t *J, size_t b,
                            double m)
{
    double s = 0, pmin = INFINITY;
    for (size_t u = 0; u < a; u++)
        for (size_t v = 0; v < b; v++) {
            double p = AC_MAT(P, I[u], J[v]);
            s += 1.0 / (p * p);
            pmin = fmin(pmin, p);
        }
    return fmin(0.5 * pmin, m / sqrt(s));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define RANK_TAUS 12 /* thresholds for dropping small entries of the best block */
#define RANK_CERT_N 256 /* submatrices above this size are certified at stage 0 */

double t1_masked_lb_rank(const ac_mat *P, const t1_support *s, const t1_mthr *t, size_t k,
                         char *method, size_t mlen, int *stage, long *prec)
{
    const t1_stair *st = &s->stair;
    size_t bk = 0;
    double best_est = 0, res = 0;
    *stage = AC_STAGE_NONE;
    *prec = 0;
    method[0] = '\0';
    /* 1. the blocks, with the singular values certified for their ranks */
    for (size_t b = 0; b < t->K; b++) {
        const t1_brank *br = &t->kap[b];
        size_t p = br->a < br->b ? br->a : br->b;
        if (!br->slo || k >= p || !(br->slo[k] > 0))
            continue;
        double e = rect_estimate(P, st->korder, br->a, st->qorder, br->b, br->slo[k]);
        if (e > best_est)
            best_est = e, bk = b;
    }
    if (best_est > 0) {
        const t1_brank *br = &t->kap[bk];
        res = rect_t(P, st->korder, br->a, st->qorder, br->b, br->slo[k]);
        if (res > 0) {
            *stage = br->stage == AC_STAGE_EXACT ? AC_STAGE_DOUBLE : br->stage;
            *prec = *stage == AC_STAGE_DOUBLE ? 53 : br->prec;
            snprintf(method, mlen,
                     "rank <= %zu on block %zu of Omega (%zu x %zu visible entries): "
                     "sigma_%zu(K_I log P_IJ) entry by entry",
                     k, bk + 1, br->a, br->b, k + 1);
        }
    }
    /* 2. submatrices of the best block without its small entries */
    const t1_brank *br = best_est > 0 ? &t->kap[bk] : NULL;
    if (!br || br->a < k + 2 || br->b < k + 1)
        return res;
    size_t a0 = br->a, b0 = br->b, bni = 0, bnj = 0;
    double *vals = malloc(a0 * b0 * sizeof(double)), taus[RANK_TAUS];
    if (!vals)
        return res;
    ac_t1_gather(vals, P, st->korder, a0, st->qorder, b0);
    qsort(vals, a0 * b0, sizeof(double), cmp_double);
    for (int q = 0; q < RANK_TAUS; q++) /* quantiles up to the 70th percentile */
        taus[q] = vals[(size_t)((double)(a0 * b0) * 0.7 * (q + 1) / RANK_TAUS)];
    free(vals);
    int big = a0 > RANK_CERT_N || b0 > RANK_CERT_N;
    double t2 = ac_t1_lb_greedy(P, k, st->korder, a0, st->qorder, b0, taus, RANK_TAUS, res,
                                big ? 0 : 128, &bni, &bnj);
    if (t2 > res) {
        res = t2;
        *stage = big ? AC_STAGE_DOUBLE : 1;
        *prec = big ? 53 : 128;
        snprintf(method, mlen,
                 "rank <= %zu on a %zu x %zu submatrix of block %zu of Omega: "
                 "sigma_%zu(K_I log P_IJ) entry by entry",
                 k, bni, bnj, bk + 1, k + 1);
    }
    return res;
}
