/* mask_rank.c — the threshold head size of a masked head when rank X = n
 * (doc/mathematics.md §3.8): the least rank of Z with Z = log P + 1c' on
 * Omega, over c and the entries off Omega, is
 *
 *     tau = min over completions N of rank([N 1]) - 1          (Lemma S)
 *
 * and for a staircase Omega (blocks I_k x S_k, intersections I_k x S_{k+1})
 *
 *     tau = sum_k rank(K_I log P_{I_k S_k}) - sum_k rank(K_I log P_{I_k S_{k+1}})
 *
 * (Lemma W with rank([M 1]) = rank(K M) + 1).  Each rank is certified as a
 * range: from below by the singular values certified positive (stage 0 on
 * the verified logarithm, then the logarithms in Arb where the budget
 * allows), from above by the block's size, both exactly (rationals) when
 * every entry of the block is a power of two.  Then
 *   tau >= the best run of consecutive blocks k1..k2 (a sub-staircase),
 *          sum kappa_lo - sum gamma_hi,
 *   tau <= sum kappa_hi - sum gamma_lo (the whole staircase only),
 * and tau <= min(max_j |Omega_j| - 1, max_i |R_i|, n - 1) for every
 * support (Lemma G: keys or queries in general position).
 *
 * Dimension letters: n tokens; a block is a x b (keys x queries).
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "core/ac_arb.h"
#include "theorem1/t1_dist.h"
#include "theorem1/t1_mask.h"
#include "theorem1/t1_stage0.h"

/* Blocks recomputed with the logarithms in Arb while the sum of a b min(a, b)
 * stays below this (the double SVD that follows dominates the cost). */
#define T1_MASK_ARB_WORK 0x1p27

/* The leading singular values certified positive. */
static long count_positive(const double *slo, size_t p)
{
    long k = 0;
    while ((size_t)k < p && slo[k] > 0)
        k++;
    return k;
}

/* The rank of the centred block K_I log P_IJ (I, J of sizes a, b); *arb_work
 * the Arb budget left (decreased when Arb runs). */
static int brank_compute(t1_brank *br, const ac_mat *P, const size_t *I, size_t a,
                         const size_t *J, size_t b, double *arb_work, double budget, ac_err *err)
{
    size_t p = a < b ? a : b, pmax = a > 0 && a - 1 < b ? a - 1 : b;
    memset(br, 0, sizeof *br);
    br->a = a;
    br->b = b;
    br->stage = AC_STAGE_EXACT;
    if (a <= 1 || b == 0)
        return AC_OK; /* a centred single row is 0 */
    br->hi = (long)pmax;
    br->slo = calloc(p, sizeof(double));
    double *shi = malloc(p * sizeof(double)), *s2 = malloc(p * sizeof(double));
    if (!br->slo || !shi || !s2) {
        free(shi);
        free(s2);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    long ex = ac_t1_pow2_centred_rank(P, I, a, J, b, budget);
    if (ac_t1_centred_log_sv_stage0(P, I, a, J, b, br->slo, shi)) {
        br->lo = count_positive(br->slo, p);
        br->stage = AC_STAGE_DOUBLE;
        br->prec = 53;
    } else
        memset(br->slo, 0, p * sizeof(double)); /* nothing certified */
    double w = (double)a * (double)b * (double)p;
    if (ex < 0 && br->lo < br->hi && w <= *arb_work) {
        *arb_work -= w;
        if (ac_t1_centred_log_sv_arb(P, I, a, J, b, 128, s2, shi)) {
            for (size_t i = 0; i < p; i++)
                br->slo[i] = fmax(br->slo[i], s2[i]);
            long k = count_positive(br->slo, p);
            if (k > br->lo) {
                br->lo = k;
                br->stage = 1;
                br->prec = 128;
            }
        }
    }
    if (ex >= 0) {
        br->lo = br->hi = ex;
        br->stage = AC_STAGE_EXACT;
        br->prec = 0;
    }
    free(shi);
    free(s2);
    return AC_OK;
}

static int stage_cost(int s)
{
    return s == AC_STAGE_EXACT ? 1000 : s;
}

int t1_mthr_compute(t1_mthr *t, const t1_support *s, const ac_mat *P, const ac_t1_opts *o,
                    ac_err *err)
{
    const t1_stair *st = &s->stair;
    size_t K = st->K, n = s->n;
    double arb_work = T1_MASK_ARB_WORK;
    int rc = AC_OK;
    memset(t, 0, sizeof *t);
    t->K = K;
    t->stage = AC_STAGE_DOUBLE;
    t->prec = 53;
    t->kap = calloc(K ? K : 1, sizeof(t1_brank));
    t->gam = calloc(K ? K : 1, sizeof(t1_brank));
    if (!t->kap || !t->gam)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t k = 0; k < K && !rc; k++) {
        rc = brank_compute(&t->kap[k], P, st->korder, st->ilen[k], st->qorder, st->jlen[k],
                           &arb_work, o->max_rank_work, err);
        if (!rc && k + 1 < K)
            rc = brank_compute(&t->gam[k], P, st->korder, st->ilen[k], st->qorder,
                               st->jlen[k + 1], &arb_work, o->max_rank_work, err);
    }
    if (rc)
        return rc;
    /* lo: the best run of consecutive blocks (Kadane) */
    long best = 0, run = 0, hi = 0;
    int exact = 1;
    for (size_t k = 0; k < K; k++) {
        const t1_brank *kb = &t->kap[k];
        run = (k > 0 && run - t->gam[k - 1].hi > 0 ? run - t->gam[k - 1].hi : 0) + kb->lo;
        best = run > best ? run : best;
        hi += kb->hi;
        exact &= kb->lo == kb->hi;
        if (stage_cost(kb->stage) > stage_cost(t->stage))
            t->stage = kb->stage, t->prec = kb->prec;
        if (k + 1 < K) {
            const t1_brank *gb = &t->gam[k];
            hi -= gb->lo;
            exact &= gb->lo == gb->hi;
            if (stage_cost(gb->stage) > stage_cost(t->stage))
                t->stage = gb->stage, t->prec = gb->prec;
        }
    }
    /* Lemma G: general position of the keys or of the queries */
    long g = n > 0 ? (long)n - 1 : 0, why = 0;
    if ((long)s->maxq - 1 < g)
        g = (long)s->maxq - 1, why = 1;
    if ((long)s->maxk < g)
        g = (long)s->maxk, why = 2;
    if (!s->chain || g < hi)
        hi = g;
    t->tau_lo = best;
    t->tau_hi = hi < best ? best : hi;
    t->exact = t->tau_lo == t->tau_hi;
    const char *gname = why == 1 ? "max_j |Omega_j| - 1" : why == 2 ? "max_i |R_i|" : "n - 1";
    if (s->chain && exact && t->exact)
        snprintf(t->method, sizeof t->method,
                 "Lemma W: a staircase of %zu blocks, every block and intersection of centred "
                 "log P of certified rank",
                 K);
    else if (s->chain)
        snprintf(t->method, sizeof t->method,
                 "Lemma W: a staircase of %zu blocks; some rank of a block of log P is not "
                 "certified exactly (lo: best run of blocks, hi: sizes)",
                 K);
    else
        snprintf(t->method, sizeof t->method,
                 "not a staircase: lo by Lemma W on a sub-staircase of %zu blocks, hi = %s "
                 "(Lemma G)",
                 K, gname);
    return AC_OK;
}

void t1_mthr_free(t1_mthr *t)
{
    if (!t)
        return;
    for (size_t k = 0; k < t->K; k++) {
        if (t->kap)
            free(t->kap[k].slo);
        if (t->gam)
            free(t->gam[k].slo);
    }
    free(t->kap);
    free(t->gam);
    memset(t, 0, sizeof *t);
}
