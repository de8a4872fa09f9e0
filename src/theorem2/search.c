/* theorem2.c — Theorem 2 (fixed head size is strictly more expressive) on
 * concrete instances (attncheck/theorem2.h, MATH.md §2).
 *
 * Dimension letters: d model width, n tokens, h heads, dh = d/h the head size
 * of f_W, dp the head size of g_V, hh = h * head size.  X is d x n, one column
 * per token; softmax over each column.  Exact checks use dyadic.h (products of
 * doubles as exact dyadic rationals); certified values use the verdict engine
 * with stage 0 = ac_mh_enclose and Arb balls after it (multihead_arb.h).
 */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>

#include "core/ac_arb.h"
#include "core/ball.h"
#include "core/dyadic.h"
#include "attention/multihead_arb.h"
#include "attncheck/blas.h"
#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "attncheck/rng.h"
#include "attncheck/theorem2.h"

/* Streams of the random draws: (seed, STREAM_*, index). */
enum {
    STREAM_V = 100,     /* g_V generator (+ 8 * attempt + k) */
    STREAM_W = 2,       /* f_W generator */
    STREAM_WCASE = 3,   /* f_W built for case 2 / 3 */
    STREAM_CON = 200,   /* construction c uses 200 + c */
    STREAM_SAMPLE = 301 /* --embed sample inputs */
};

#define TRACE_PREC 128

void ac_t2_opts_default(ac_t2_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->tries = 3;
    o->nalpha = 4;
    o->alpha[0] = 1;
    o->alpha[1] = 4;
    o->alpha[2] = 16;
    o->alpha[3] = 64;
    o->optimize = 60;
    o->sched = ac_schedule_default();
    o->threads = 1;
}

const char *ac_t2_case_name(ac_t2_case c)
{
    switch (c) {
    case AC_T2_CASE_1: return "case 1 (S_W != S_V)";
    case AC_T2_CASE_2: return "case 2 (S_W = S_V, some M_i not skew-symmetric)";
    case AC_T2_CASE_3: return "case 3 (S_W = S_V, every M_i skew-symmetric)";
    case AC_T2_CASE_NONE: return "no case of the paper (S_W = S_V, but the heads of g_V do not share U)";
    default: return "not classified (numbers too large for exact comparison)";
    }
}

const char *ac_t2_construction_name(int c)
{
    switch (c) {
    case AC_T2_CON_1: return "X = v 1' (case 1)";
    case AC_T2_CON_2: return "X = v e_1' (case 2)";
    case AC_T2_CON_3: return "X = [v1, alpha v2~, 0, ...] (case 3)";
    case AC_T2_CON_OPT: return "multimin on the relative gap";
    default: return "none";
    }
}

/* ---- exact parts of a layer (dyadic.h) ------------------------------------ */

/* S = Wo_cat Wv_stack = sum_i Wo_i Wv_i (d x d) */
static int x_S(ac_xmat *S, const ac_mh *L)
{
    size_t d = L->d, hh = L->h * L->hs;
    ac_xmat O, V;
    int st = ac_xmat_from_d(&O, L->wo, d, hh, hh, 0, 0);
    if (st)
        return st;
    if ((st = ac_xmat_from_d(&V, L->wv, hh, d, d, 0, 0))) {
        ac_xmat_clear(&O);
        return st;
    }
    ac_xmat_mul(S, &O, &V);
    ac_xmat_clear(&O);
    ac_xmat_clear(&V);
    return AC_XMAT_OK;
}

/* A_i = Wk_i^T Wq_i (d x d) */
static int x_qk(ac_xmat *A, const ac_mh *L, size_t i)
{
    size_t d = L->d, hs = L->hs;
    ac_xmat KT, Q;
    int st = ac_xmat_from_d(&KT, L->wk + i * hs * d, hs, d, d, 1, 0);
    if (st)
        return st;
    if ((st = ac_xmat_from_d(&Q, L->wq + i * hs * d, hs, d, d, 0, 0))) {
        ac_xmat_clear(&KT);
        return st;
    }
    ac_xmat_mul(A, &KT, &Q);
    ac_xmat_clear(&KT);
    ac_xmat_clear(&Q);
    return AC_XMAT_OK;
}

/* Wo_i Wv_i (d x d) */
static int x_ov(ac_xmat *A, const ac_mh *L, size_t i)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs;
    ac_xmat O, V;
    int st = ac_xmat_from_d(&O, L->wo + i * hs, d, hs, hh, 0, 0);
    if (st)
        return st;
    if ((st = ac_xmat_from_d(&V, L->wv + i * hs * d, hs, d, d, 0, 0))) {
        ac_xmat_clear(&O);
        return st;
    }
    ac_xmat_mul(A, &O, &V);
    ac_xmat_clear(&O);
    ac_xmat_clear(&V);
    return AC_XMAT_OK;
}

/* ---- validation and hypotheses -------------------------------------------- */

int ac_t2_validate(const ac_mh *W, const char *wname, const ac_mh *V, const char *vname,
                   ac_err *err)
{
    if (!W->params || !V->params)
        return ac_err_set(err, AC_EUSAGE, "Theorem 2 check: a layer is empty");
    if (W->h * W->hs != W->d)
        return ac_err_set(err, AC_EDATA, "%s: f_W has h = %zu heads of size %zu but d = %zu; a "
                          "standard MultiHead layer has head size d/h", wname, W->h, W->hs, W->d);
    if (V->d != W->d)
        return ac_err_set(err, AC_EDATA, "%s: g_V has d = %zu but f_W (%s) has d = %zu", vname,
                          V->d, wname, W->d);
    if (V->h != W->h)
        return ac_err_set(err, AC_EDATA, "%s: g_V has h = %zu heads but f_W (%s) has %zu; "
                          "Theorem 2 compares layers with the same number of heads", vname, V->h,
                          wname, W->h);
    return AC_OK;
}

int ac_t2_hypotheses(ac_t2_hyp *hyp, const ac_mh *V, size_t n, ac_err *err)
{
    size_t d = V->d, h = V->h, dp = V->hs;
    ac_xmat S, U1, Ui;
    memset(hyp, 0, sizeof *hyp);
    hyp->d = d;
    hyp->h = h;
    hyp->dp = dp;
    hyp->n = n;
    hyp->sv_rank_value = hyp->u_rank_value = -1;

    /* sizes */
    int ok_n = n >= 2, ok_d = d >= dp, ok_h = h * dp > d, ok_div = d % h == 0;
    snprintf(hyp->sizes_note, sizeof hyp->sizes_note,
             "n = %zu %s 2%s, d = %zu %s dp = %zu%s, h dp = %zu %s d%s, h = %zu %s d%s", n,
             ok_n ? ">=" : "<", ok_n ? "" : " (fails)", d, ok_d ? ">=" : "<", dp,
             ok_d ? "" : " (fails)", h * dp, ok_h ? ">" : "<=", ok_h ? "" : " (fails: h <= d/dp)",
             h, ok_div ? "divides" : "does not divide", ok_div ? "" : " (fails: no head size d/h)");
    hyp->sizes = (ok_n && ok_d && ok_h && ok_div) ? AC_PROVED : AC_REFUTED;

    /* (i) rank S_V = d */
    hyp->sv_rank = AC_UNDECIDED;
    if (x_S(&S, V) == AC_XMAT_OK) {
        slong rk = ac_xmat_rank_modp(&S);
        if (rk == (slong)d) {
            hyp->sv_rank = AC_PROVED;
            hyp->sv_rank_value = (long)d;
            snprintf(hyp->sv_method, sizeof hyp->sv_method,
                     "exact: rank modulo a 61-bit prime is d");
        } else {
            rk = ac_xmat_rank(&S);
            hyp->sv_rank_value = (long)rk;
            hyp->sv_rank = rk == (slong)d ? AC_PROVED : AC_REFUTED;
            snprintf(hyp->sv_method, sizeof hyp->sv_method, "exact rank over Q (FLINT)");
        }
        ac_xmat_clear(&S);
    } else {
        /* too large for exact arithmetic: Weyl bound around an SVD */
        ac_imat O = {d, h * dp, V->wo, NULL}, Vv = {h * dp, d, V->wv, NULL}, Si = {0};
        double *lo = malloc(d * sizeof(double)), *hi = malloc(d * sizeof(double));
        int st = AC_OK;
        if (!lo || !hi)
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        if (!st && !(st = ac_imat_init(&Si, d, d, 1, err)) &&
            !(st = ac_imat_mul(&Si, AC_NOTRANS, &O, AC_NOTRANS, &Vv, err)) &&
            !(st = ac_sv_enclose(&Si, lo, hi, NULL, err)) && lo[d - 1] > 0) {
            hyp->sv_rank = AC_PROVED;
            hyp->sv_rank_value = (long)d;
            snprintf(hyp->sv_method, sizeof hyp->sv_method,
                     "Weyl bound: sigma_min(S_V) >= %.3g > 0", lo[d - 1]);
        } else if (!st) {
            snprintf(hyp->sv_method, sizeof hyp->sv_method,
                     "not decided (entries too wide for exact rank, sigma_min not separated "
                     "from 0)");
        }
        ac_imat_free(&Si);
        free(lo);
        free(hi);
        if (st)
            return st;
    }

    /* (ii) U_i = U_1 for every head */
    hyp->u_shared = AC_UNDECIDED;
    int have_u1 = x_qk(&U1, V, 0) == AC_XMAT_OK;
    if (have_u1) {
        hyp->u_shared = AC_PROVED;
        for (size_t i = 1; i < h; i++) {
            if (x_qk(&Ui, V, i) != AC_XMAT_OK) {
                hyp->u_shared = AC_UNDECIDED;
                break;
            }
            int eq = ac_xmat_equal(&Ui, &U1);
            ac_xmat_clear(&Ui);
            if (!eq) {
                hyp->u_shared = AC_REFUTED;
                hyp->u_first_bad = i + 1;
                break;
            }
        }
    }

    /* rank U_1 = dp: rank Vk_1' Vq_1 = dp when both factors have rank dp */
    hyp->u_rank = AC_UNDECIDED;
    if (dp > d) {
        hyp->u_rank = AC_REFUTED;
        snprintf(hyp->u_method, sizeof hyp->u_method, "U is d x d with d < dp");
    } else {
        ac_xmat K1, Q1;
        int okk = ac_xmat_from_d(&K1, V->wk, dp, d, d, 0, 0) == AC_XMAT_OK;
        int okq = okk && ac_xmat_from_d(&Q1, V->wq, dp, d, d, 0, 0) == AC_XMAT_OK;
        if (okq && ac_xmat_rank_modp(&K1) == (slong)dp && ac_xmat_rank_modp(&Q1) == (slong)dp) {
            hyp->u_rank = AC_PROVED;
            hyp->u_rank_value = (long)dp;
            snprintf(hyp->u_method, sizeof hyp->u_method,
                     "exact: Vk_1, Vq_1 have rank dp modulo a prime");
        } else if (have_u1) {
            slong rk = ac_xmat_rank(&U1);
            hyp->u_rank_value = (long)rk;
            hyp->u_rank = rk == (slong)dp ? AC_PROVED : AC_REFUTED;
            snprintf(hyp->u_method, sizeof hyp->u_method, "exact rank over Q (FLINT)");
        }
        if (okk)
            ac_xmat_clear(&K1);
        if (okq)
            ac_xmat_clear(&Q1);
    }
    if (have_u1)
        ac_xmat_clear(&U1);
    hyp->applies = ac_verdict_and(ac_verdict_and(hyp->sizes, hyp->sv_rank),
                                  ac_verdict_and(hyp->u_shared, hyp->u_rank));
    return AC_OK;
}

/* ---- identity and classification ------------------------------------------ */

int ac_t2_identical(int *same, const ac_mh *W, const ac_mh *V, ac_err *err)
{
    *same = 1;
    if (W->d != V->d || W->h != V->h) {
        *same = 0;
        return AC_OK;
    }
    for (size_t i = 0; i < W->h && *same == 1; i++) {
        ac_xmat a, b;
        if (x_ov(&a, W, i) != AC_XMAT_OK) {
            *same = -1;
            break;
        }
        if (x_ov(&b, V, i) != AC_XMAT_OK) {
            ac_xmat_clear(&a);
            *same = -1;
            break;
        }
        if (!ac_xmat_equal(&a, &b))
            *same = 0;
        ac_xmat_clear(&a);
        ac_xmat_clear(&b);
        if (*same != 1)
            break;
        if (x_qk(&a, W, i) != AC_XMAT_OK) {
            *same = -1;
            break;
        }
        if (x_qk(&b, V, i) != AC_XMAT_OK) {
            ac_xmat_clear(&a);
            *same = -1;
            break;
        }
        /* U_i / sqrt(dp) = A_i / sqrt(dh)  <=>  sqrt(dh) U_i = sqrt(dp) A_i */
        if (!ac_xmat_scaled_equal(&b, (unsigned long)W->hs, &a, (unsigned long)V->hs))
            *same = 0;
        ac_xmat_clear(&a);
        ac_xmat_clear(&b);
    }
    (void)err;
    return AC_OK;
}

int ac_t2_classify(ac_t2_class *cls, const ac_mh *W, const ac_mh *V, ac_err *err)
{
    ac_xmat SW, SV, U1;
    memset(cls, 0, sizeof *cls);
    cls->kase = AC_T2_CASE_UNKNOWN;
    cls->sw_equals_sv = AC_UNDECIDED;
    if (x_S(&SW, W) != AC_XMAT_OK) {
        snprintf(cls->note, sizeof cls->note, "S_W has entries too wide to compare exactly");
        return AC_OK;
    }
    if (x_S(&SV, V) != AC_XMAT_OK) {
        ac_xmat_clear(&SW);
        snprintf(cls->note, sizeof cls->note, "S_V has entries too wide to compare exactly");
        return AC_OK;
    }
    int eq = ac_xmat_equal(&SW, &SV);
    ac_xmat_clear(&SW);
    ac_xmat_clear(&SV);
    if (!eq) {
        cls->kase = AC_T2_CASE_1;
        cls->sw_equals_sv = AC_REFUTED;
        snprintf(cls->note, sizeof cls->note, "S_W != S_V (exact comparison of the products)");
        return AC_OK;
    }
    cls->sw_equals_sv = AC_PROVED;
    if (x_qk(&U1, V, 0) != AC_XMAT_OK) {
        snprintf(cls->note, sizeof cls->note,
                 "S_W = S_V exactly; U has entries too wide to compare exactly");
        return AC_OK;
    }
    for (size_t i = 1; i < V->h; i++) {
        ac_xmat Ui;
        if (x_qk(&Ui, V, i) != AC_XMAT_OK) {
            ac_xmat_clear(&U1);
            snprintf(cls->note, sizeof cls->note, "S_W = S_V exactly; U_%zu too wide", i + 1);
            return AC_OK;
        }
        int same = ac_xmat_equal(&Ui, &U1);
        ac_xmat_clear(&Ui);
        if (!same) {
            ac_xmat_clear(&U1);
            cls->kase = AC_T2_CASE_NONE;
            snprintf(cls->note, sizeof cls->note,
                     "S_W = S_V exactly, but U_%zu != U_1: the paper's cases assume a shared U",
                     i + 1);
            return AC_OK;
        }
    }
    /* M_i + M_i' = (U + U')/sqrt(dp) - (A_i + A_i')/sqrt(dh) */
    ac_xmat symU;
    ac_xmat_sym(&symU, &U1);
    ac_xmat_clear(&U1);
    int unknown = 0;
    for (size_t i = 0; i < W->h; i++) {
        ac_xmat A, symA;
        if (x_qk(&A, W, i) != AC_XMAT_OK) {
            unknown = 1;
            break;
        }
        ac_xmat_sym(&symA, &A);
        ac_xmat_clear(&A);
        if (!ac_xmat_scaled_equal(&symU, (unsigned long)W->hs, &symA, (unsigned long)V->hs)) {
            cls->nonskew++;
            if (!cls->first_nonskew)
                cls->first_nonskew = i + 1;
        }
        ac_xmat_clear(&symA);
    }
    ac_xmat_clear(&symU);
    if (unknown) {
        snprintf(cls->note, sizeof cls->note,
                 "S_W = S_V exactly; some Wk_i'Wq_i too wide to compare exactly");
        return AC_OK;
    }
    if (cls->nonskew) {
        cls->kase = AC_T2_CASE_2;
        snprintf(cls->note, sizeof cls->note,
                 "S_W = S_V and M_i is not skew-symmetric for %zu of %zu heads (first: head %zu); "
                 "both exact", cls->nonskew, W->h, cls->first_nonskew);
    } else {
        cls->kase = AC_T2_CASE_3;
        snprintf(cls->note, sizeof cls->note,
                 "S_W = S_V and every M_i is skew-symmetric (both exact)");
    }
    (void)err;
    return AC_OK;
}

/* ---- generators ----------------------------------------------------------- */

/* Smallest k with 2^k >= sqrt(m) (a power-of-two scaling keeps entries exact). */
static int pow2_above_sqrt(size_t m)
{
    int k = 0;
    while ((double)((size_t)1 << (2 * k)) < (double)m && k < 30)
        k++;
    return k;
}

/* x[0..m) = integers uniform in {-2, ..., 2} times 2^-k */
static void fill_small_int(ac_rng *r, double *x, size_t m, int k)
{
    for (size_t i = 0; i < m; i++)
        x[i] = ldexp((double)ac_rng_below(r, 5) - 2.0, -k);
}

/* A random signed permutation: perm[r] and sign[r] = +-1. */
static void signed_perm(ac_rng *r, size_t *perm, double *sign, size_t m)
{
    for (size_t i = 0; i < m; i++)
        perm[i] = i;
    for (size_t i = m; i > 1; i--) {
        size_t j = (size_t)ac_rng_below(r, i);
        size_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < m; i++)
        sign[i] = (ac_rng_u64(r) >> 63) ? -1.0 : 1.0;
}

int ac_t2_generate_v(ac_mh *V, size_t d, size_t h, size_t dp, ac_t2_gen kind, uint64_t seed,
                     ac_err *err)
{
    int st;
    memset(V, 0, sizeof *V);
    if (d == 0 || h == 0 || dp == 0)
        return ac_err_set(err, AC_EUSAGE, "g_V needs d, h, dp >= 1");
    if (dp > d)
        return ac_err_set(err, AC_EUSAGE, "dp = %zu > d = %zu: U = Vk'Vq (d x d) cannot have "
                          "rank dp", dp, d);
    if (kind == AC_T2_GEN_SKEW && dp % 2)
        return ac_err_set(err, AC_EUSAGE, "a skew-symmetric U of rank dp needs dp even (dp = %zu)",
                          dp);
    size_t hh = h * dp;
    double *k0 = malloc(dp * d * sizeof(double)), *q0 = malloc(dp * d * sizeof(double));
    double *sign = malloc(dp * sizeof(double));
    size_t *perm = malloc(dp * sizeof(size_t));
    if (!k0 || !q0 || !sign || !perm) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (int attempt = 0; attempt < 32; attempt++) {
        ac_rng r;
        uint64_t base = STREAM_V + 8 * (uint64_t)attempt;
        if ((st = ac_mh_init(V, d, h, dp, err)))
            goto out;
        if (kind == AC_T2_GEN_GAUSSIAN) {
            ac_rng_init(&r, seed, base, 0);
            ac_rng_normal_fill(&r, V->wo, d * hh);
            ac_rng_init(&r, seed, base, 1);
            ac_rng_normal_fill(&r, V->wv, hh * d);
            ac_rng_init(&r, seed, base, 2);
            ac_rng_normal_fill(&r, k0, dp * d);
            ac_rng_normal_fill(&r, q0, dp * d);
            double so = 1.0 / sqrt((double)hh), sd = 1.0 / sqrt((double)d);
            for (size_t i = 0; i < d * hh; i++) {
                V->wo[i] *= so;
                V->wv[i] *= sd;
            }
            for (size_t i = 0; i < dp * d; i++) {
                k0[i] *= sd;
                q0[i] *= sd;
            }
        } else {
            int ko = pow2_above_sqrt(hh), kd = pow2_above_sqrt(d);
            ac_rng_init(&r, seed, base, 0);
            fill_small_int(&r, V->wo, d * hh, ko);
            ac_rng_init(&r, seed, base, 1);
            fill_small_int(&r, V->wv, hh * d, kd);
            ac_rng_init(&r, seed, base, 2);
            if (kind == AC_T2_GEN_INTEGER) {
                fill_small_int(&r, k0, dp * d, kd);
                fill_small_int(&r, q0, dp * d, kd);
            } else {
                /* rows of Vk: x_1, y_1, x_2, y_2, ...; of Vq: y_1, -x_1, ...:
                 * U = sum_p (x_p y_p' - y_p x_p'), skew-symmetric */
                fill_small_int(&r, k0, dp * d, kd);
                for (size_t p = 0; p < dp / 2; p++)
                    for (size_t c = 0; c < d; c++) {
                        q0[(2 * p) * d + c] = k0[(2 * p + 1) * d + c];
                        q0[(2 * p + 1) * d + c] = -k0[(2 * p) * d + c];
                    }
            }
        }
        /* Vk_i = P_i Vk, Vq_i = P_i Vq with signed permutations, P_1 = I */
        ac_rng_init(&r, seed, base, 3);
        for (size_t i = 0; i < h; i++) {
            if (i == 0) {
                for (size_t t = 0; t < dp; t++) {
                    perm[t] = t;
                    sign[t] = 1.0;
                }
            } else {
                signed_perm(&r, perm, sign, dp);
            }
            for (size_t t = 0; t < dp; t++)
                for (size_t c = 0; c < d; c++) {
                    V->wk[(i * dp + t) * d + c] = sign[t] * k0[perm[t] * d + c];
                    V->wq[(i * dp + t) * d + c] = sign[t] * q0[perm[t] * d + c];
                }
        }
        if (kind == AC_T2_GEN_GAUSSIAN)
            goto out; /* generic: the hypotheses are certified by the caller */
        /* integer kinds: redraw until rank S_V = d and rank Vk = rank Vq = dp */
        ac_xmat S, K, Q;
        int good = 0;
        if (x_S(&S, V) == AC_XMAT_OK) {
            good = ac_xmat_rank_modp(&S) == (slong)d;
            ac_xmat_clear(&S);
        }
        if (good && ac_xmat_from_d(&K, k0, dp, d, d, 0, 0) == AC_XMAT_OK) {
            good = ac_xmat_rank_modp(&K) == (slong)dp;
            ac_xmat_clear(&K);
        }
        if (good && ac_xmat_from_d(&Q, q0, dp, d, d, 0, 0) == AC_XMAT_OK) {
            good = ac_xmat_rank_modp(&Q) == (slong)dp;
            ac_xmat_clear(&Q);
        }
        if (good)
            goto out;
        ac_mh_free(V);
    }
    st = ac_err_set(err, AC_EDATA, "could not draw an integer g_V with rank S_V = d and rank U = dp "
                    "in 32 attempts (d = %zu, h = %zu, dp = %zu)", d, h, dp);
out:
    free(k0);
    free(q0);
    free(sign);
    free(perm);
    if (st)
        ac_mh_free(V);
    return st;
}

int ac_t2_generate_w(ac_mh *W, const ac_mh *V, int want, uint64_t seed, ac_err *err)
{
    size_t d = V->d, h = V->h;
    int st;
    memset(W, 0, sizeof *W);
    if (d % h)
        return ac_err_set(err, AC_EUSAGE, "h = %zu does not divide d = %zu: a standard MultiHead "
                          "layer needs head size d/h", h, d);
    size_t dh = d / h;
    if (want == 0 || want == 1)
        return ac_mh_random(W, d, h, dh, seed, STREAM_W, err);
    if (want != 2 && want != 3)
        return ac_err_set(err, AC_EUSAGE, "case %d: the cases are 1, 2 and 3", want);

    ac_xmat SV, U1, SW;
    double *Sd = NULL, *T = NULL, *Ti = NULL, *Li = NULL, *Ri = NULL, *u1 = NULL, *Ud = NULL;
    int have_sv = 0, have_u = 0;
    if (x_S(&SV, V) != AC_XMAT_OK)
        return ac_err_set(err, AC_EDATA, "g_V: S_V = sum_i Vo_i Vv_i is too wide for exact "
                          "arithmetic, so S_W = S_V cannot be built exactly");
    have_sv = 1;
    Sd = malloc(d * d * sizeof(double));
    T = calloc(d * d, sizeof(double));
    Ti = calloc(d * d, sizeof(double));
    Li = calloc(d * d, sizeof(double));
    Ri = calloc(d * d, sizeof(double));
    Ud = malloc(d * d * sizeof(double));
    u1 = malloc(d * sizeof(double));
    if (!Sd || !T || !Ti || !Li || !Ri || !Ud || !u1) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if (!ac_xmat_to_d(&SV, Sd)) {
        st = ac_err_set(err, AC_EDATA, "g_V: S_V = sum_i Vo_i Vv_i is not exactly representable in "
                        "double, so no f_W with S_W = S_V exactly can be built this way (cases 2 "
                        "and 3 need g_V with exactly representable products, e.g. --case with a "
                        "generated g_V)");
        goto out;
    }
    int u_ok = 0;
    if (x_qk(&U1, V, 0) == AC_XMAT_OK) {
        have_u = 1;
        u_ok = ac_xmat_to_d(&U1, Ud);
    }
    if (want == 3) {
        int shared = have_u;
        for (size_t i = 1; i < h && shared; i++) {
            ac_xmat Ui;
            if (x_qk(&Ui, V, i) != AC_XMAT_OK) {
                shared = 0;
                break;
            }
            shared = ac_xmat_equal(&Ui, &U1);
            ac_xmat_clear(&Ui);
        }
        ac_xmat symU;
        int skew = 0;
        if (shared) {
            ac_xmat_sym(&symU, &U1);
            skew = ac_xmat_is_zero(&symU);
            ac_xmat_clear(&symU);
        }
        if (!shared || !skew) {
            st = ac_err_set(err, AC_EDATA, "g_V: case 3 is built here with skew-symmetric "
                            "Wk_i'Wq_i, which needs U = Vk_i'Vq_i shared by the heads and "
                            "skew-symmetric (%s); generate g_V with --case 3 (dp even)",
                            !shared ? "the heads do not share U" : "U is not skew-symmetric");
            goto out;
        }
    }
    if ((st = ac_mh_init(W, d, h, dh, err)))
        goto out;
    ac_rng r;
    ac_rng_init(&r, seed, STREAM_WCASE, 0);
    /* T = L R, L unit lower bidiagonal, R unit upper bidiagonal with +-1:
     * T^-1 = R^-1 L^-1, integer, entries of L^-1 and R^-1 are +-1 products. */
    double *l = malloc(d * sizeof(double)), *rr = malloc(d * sizeof(double));
    if (!l || !rr) {
        free(l);
        free(rr);
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (size_t k = 0; k + 1 < d; k++) {
        l[k] = (ac_rng_u64(&r) >> 63) ? -1.0 : 1.0;
        rr[k] = (ac_rng_u64(&r) >> 63) ? -1.0 : 1.0;
    }
    for (size_t i = 0; i < d; i++) {
        Li[i * d + i] = Ri[i * d + i] = 1.0;
        for (size_t j = 0; j < i; j++) {
            /* (L^-1)_ij = prod_{k=j}^{i-1} (-l_k); (R^-1)_ji likewise with r */
            double pl = 1, pr = 1;
            for (size_t k = j; k < i; k++) {
                pl *= -l[k];
                pr *= -rr[k];
            }
            Li[i * d + j] = pl;
            Ri[j * d + i] = pr;
        }
    }
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            /* T = L R: L has 1 on the diagonal and l_{i-1} at (i, i-1); R has r_j at (j, j+1) */
            double t = (i == j ? 1.0 : 0.0);
            if (j == i + 1)
                t += rr[i];
            if (i >= 1 && j == i - 1)
                t += l[i - 1];
            if (i >= 1 && j == i)
                t += l[i - 1] * rr[i - 1];
            T[i * d + j] = t;
        }
    free(l);
    free(rr);
    /* Ti = Ri Li (integers, |entries| <= d: exact) ; Wv_stack = T; Wo_cat = S_V Ti */
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            double s = 0;
            for (size_t k = 0; k < d; k++)
                s += Ri[i * d + k] * Li[k * d + j];
            Ti[i * d + j] = s;
        }
    memcpy(W->wv, T, d * d * sizeof(double));
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            double s = 0;
            for (size_t k = 0; k < d; k++)
                s += Sd[i * d + k] * Ti[k * d + j];
            W->wo[i * d + j] = s; /* Wo_cat is d x (h dh) = d x d */
        }
    /* confirm S_W = S_V exactly (the sums above are exact when no entry
     * exceeds 2^53 in units of the smallest power of two; checked, not assumed) */
    if (x_S(&SW, W) != AC_XMAT_OK || !ac_xmat_equal(&SW, &SV)) {
        if (SW.ready)
            ac_xmat_clear(&SW);
        st = ac_err_set(err, AC_EDATA, "g_V: the entries of S_V are too wide to build "
                        "Wo_cat = S_V T^-1 exactly in double");
        goto out;
    }
    ac_xmat_clear(&SW);
    int kd = pow2_above_sqrt(d);
    if (want == 2) {
        ac_rng_init(&r, seed, STREAM_WCASE, 1);
        fill_small_int(&r, W->wk, d * d, kd);
        fill_small_int(&r, W->wq, d * d, kd);
    } else {
        /* A_i = sum_p (x_p y_p' - y_p x_p'): rows of Wk_i x_1, y_1, ...; of Wq_i y_1, -x_1, ... */
        ac_rng_init(&r, seed, STREAM_WCASE, 2);
        size_t npairs = dh / 2;
        for (size_t i = 0; i < h; i++)
            for (size_t p = 0; p < npairs; p++) {
                double *kx = W->wk + (i * dh + 2 * p) * d, *ky = kx + d;
                double *qy = W->wq + (i * dh + 2 * p) * d, *qx = qy + d;
                fill_small_int(&r, kx, d, kd);
                fill_small_int(&r, ky, d, kd);
                if (i == 0 && p == 0 && u_ok) {
                    /* x = U e_1 (U_11 = 0 as U is skew), y_1 = 1: A_1 e_1 = x = U e_1 */
                    for (size_t c = 0; c < d; c++)
                        kx[c] = Ud[c * d + 0];
                    ky[0] = 1.0;
                } else if (i == 0 && u_ok) {
                    kx[0] = ky[0] = 0.0; /* keep A_1 e_1 = U e_1 */
                }
                for (size_t c = 0; c < d; c++) {
                    qy[c] = ky[c];
                    qx[c] = -kx[c];
                }
            }
    }
out:
    if (have_sv)
        ac_xmat_clear(&SV);
    if (have_u)
        ac_xmat_clear(&U1);
    free(Sd);
    free(T);
    free(Ti);
    free(Li);
    free(Ri);
    free(Ud);
    free(u1);
    if (st)
        ac_mh_free(W);
    return st;
}

static size_t isqrt_size(size_t x)
{
    size_t r = (size_t)sqrt((double)x);
    while (r * r > x)
        r--;
    while ((r + 1) * (r + 1) <= x)
        r++;
    return r;
}

static size_t gcd_size(size_t a, size_t b)
{
    while (b) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int ac_t2_embed(ac_mh *V, const ac_mh *W, size_t dp, char *note, size_t note_len, ac_err *err)
{
    size_t d = W->d, h = W->h, dh = W->hs, hhW = h * dh, hhV;
    int st;
    memset(V, 0, sizeof *V);
    if (dp < dh)
        return ac_err_set(err, AC_EUSAGE, "the embedding F in G needs dp >= d/h (dp = %zu, d/h = "
                          "%zu)", dp, dh);
    if ((st = ac_mh_init(V, d, h, dp, err)))
        return st;
    hhV = h * dp;
    /* s^2 = dp/dh = num/den in lowest terms; s is a dyadic rational p/2^k iff
     * num = p^2 and den = 4^k */
    size_t g = gcd_size(dp, dh), num = dp / g, den = dh / g;
    size_t sn = isqrt_size(num), sd = isqrt_size(den);
    int dyadic = sn * sn == num && sd * sd == den && (sd & (sd - 1)) == 0;
    int k = 0;
    while (dyadic && ((size_t)1 << k) < sd)
        k++;
    /* copies c = 0..: Vk block c = Wk_i, Vq block c = 2^(e_c) Wq_i, with
     * sum_c 2^(e_c) = s (binary expansion of p, shifted by k) */
    int exps[64];
    size_t ncopies = 0;
    double single = 0; /* multiplier when one copy is used */
    if (dyadic) {
        for (int b = 0; b < 63; b++)
            if ((sn >> b) & 1)
                exps[ncopies++] = b - k;
        if (ncopies == 1 || ncopies * dh > dp) {
            if (ncopies * dh > dp) {
                single = ldexp((double)sn, -k);
                ncopies = 0;
            } else {
                single = ldexp(1.0, exps[0]);
            }
        }
    } else {
        single = sqrt((double)dp / (double)dh);
    }
    for (size_t i = 0; i < h; i++) {
        /* value and output: zero padding */
        for (size_t t = 0; t < dh; t++)
            memcpy(V->wv + (i * dp + t) * d, W->wv + (i * dh + t) * d, d * sizeof(double));
        for (size_t rr = 0; rr < d; rr++)
            for (size_t c = 0; c < dh; c++)
                V->wo[rr * hhV + i * dp + c] = W->wo[rr * hhW + i * dh + c];
        size_t nc = (dyadic && ncopies > 1) ? ncopies : 1;
        for (size_t c = 0; c < nc; c++) {
            double m = nc > 1 ? ldexp(1.0, exps[c]) : single;
            for (size_t t = 0; t < dh; t++)
                for (size_t j = 0; j < d; j++) {
                    V->wk[(i * dp + c * dh + t) * d + j] = W->wk[(i * dh + t) * d + j];
                    V->wq[(i * dp + c * dh + t) * d + j] = m * W->wq[(i * dh + t) * d + j];
                }
        }
    }
    if (note) {
        if (dyadic && ncopies > 1)
            snprintf(note, note_len, "s = sqrt(dp/(d/h)) = %zu/%zu: %zu copies of (Wk_i, 2^e Wq_i) "
                     "per head, exact", sn, sd, ncopies);
        else if (dyadic)
            snprintf(note, note_len, "s = sqrt(dp/(d/h)) = %.17g: query multiplied by s%s", single,
                     (single == ldexp(1.0, ilogb(single))) ? " (a power of two: exact)"
                                                          : " (exactness checked below)");
        else
            snprintf(note, note_len, "s = sqrt(dp/(d/h)) = sqrt(%zu/%zu) is irrational: query "
                     "multiplied by fl(s) = %.17g, exact only in real arithmetic", num, den, single);
    }
    return AC_OK;
}

/* ---- constructions of X (MATH.md §2) -------------------------------------- */

static void rng_vec(double *v, size_t m, uint64_t seed, uint64_t a, uint64_t b)
{
    ac_rng r;
    ac_rng_init(&r, seed, a, b);
    ac_rng_normal_fill(&r, v, m);
}

static double dot(const double *a, const double *b, size_t m)
{
    double s = 0;
    for (size_t i = 0; i < m; i++)
        s += a[i] * b[i];
    return s;
}

/* out = Wk_i^T (Wq_i x) / sqrt(hs): then y' out = y' Wk_i' Wq_i x / sqrt(hs),
 * the logit of token y in the softmax group of token x (double). */
static void bilin_vec(double *out, const ac_mh *L, size_t i, const double *x, double *tmp)
{
    size_t d = L->d, hs = L->hs;
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, hs, 1, d, 1.0, L->wq + i * hs * d, d, x, 1, 0.0, tmp, 1);
    ac_dgemm(AC_TRANS, AC_NOTRANS, d, 1, hs, 1.0 / sqrt((double)hs), L->wk + i * hs * d, d, tmp,
             1, 0.0, out, 1);
}

/* The power of two nearest to x > 0 (1 for x <= 0 or not finite). */
static double pow2_near(double x)
{
    if (!(x > 0) || !isfinite(x))
        return 1.0;
    return ldexp(1.0, (int)lround(log2(x)));
}

int ac_t2_construct(ac_mat *X, int construction, const ac_mh *W, const ac_mh *V, size_t n,
                    uint64_t seed, size_t index, double alpha, size_t *head, ac_err *err)
{
    size_t d = W->d, h = W->h;
    double *v = NULL, *a = NULL, *b = NULL, *best_b = NULL, *tmp = NULL, *v2 = NULL;
    int st;
    memset(X, 0, sizeof *X);
    if (head)
        *head = 0;
    if (construction < AC_T2_CON_1 || construction > AC_T2_CON_3)
        return ac_err_set(err, AC_EUSAGE, "construction %d: the constructions are 1, 2 and 3",
                          construction);
    if (construction == AC_T2_CON_3 && n < 2)
        return ac_err_set(err, AC_EUSAGE, "construction 3 needs n >= 2 tokens");
    if (n == 0)
        return ac_err_set(err, AC_EUSAGE, "X needs n >= 1 tokens");
    if ((st = ac_mat_init(X, d, n, err)))
        return st;
    size_t hsmax = W->hs > V->hs ? W->hs : V->hs;
    v = malloc(d * sizeof(double));
    a = malloc(d * sizeof(double));
    b = malloc(d * sizeof(double));
    best_b = malloc(d * sizeof(double));
    v2 = malloc(d * sizeof(double));
    tmp = malloc(hsmax * sizeof(double));
    if (!v || !a || !b || !best_b || !v2 || !tmp) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    rng_vec(v, d, seed, STREAM_CON + (uint64_t)construction, index);
    if (construction == AC_T2_CON_1) {
        /* case 1: X = v 1'; X P = X for every column-stochastic P */
        double s = 1.0 / sqrt((double)d);
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < n; j++)
                AC_MAT(X, i, j) = s * v[i];
        goto out;
    }
    if (construction == AC_T2_CON_2) {
        /* case 2: X = c v e_1'; the self-logits tau = v'Uv/sqrt(dp) (g) and
         * t_i = v'A_i v/sqrt(d/h) (head i of f), scaled by c^2 to about 2 */
        bilin_vec(a, V, 0, v, tmp);
        double tau = dot(v, a, d), m = fabs(tau), gap = -1;
        for (size_t i = 0; i < h; i++) {
            bilin_vec(b, W, i, v, tmp);
            double t = dot(v, b, d);
            if (fabs(t) > m)
                m = fabs(t);
            if (fabs(t - tau) > gap) {
                gap = fabs(t - tau);
                if (head)
                    *head = i + 1;
            }
        }
        double c = m > 0 ? pow2_near(sqrt(2.0 / m)) : 1.0;
        for (size_t i = 0; i < d; i++)
            AC_MAT(X, i, 0) = c * v[i];
        goto out;
    }
    /* case 3: X = [c v1, alpha c v2~, 0, ...].  a = U v1/sqrt(dp),
     * b = A_i v1/sqrt(d/h) for the head with the largest |M_i v1| = |a - b|;
     * v2~ separates the signs of v2~'a > 0 and v2~'b < 0:
     * v2~ = a/|a| - b/|b| (fails only when a, b are positively parallel),
     * a/|a| when b = 0, -b/|b| when a = 0. */
    bilin_vec(a, V, 0, v, tmp);
    double best = -1;
    size_t bi = 0;
    for (size_t i = 0; i < h; i++) {
        bilin_vec(b, W, i, v, tmp);
        double m2 = 0;
        for (size_t t = 0; t < d; t++)
            m2 += (a[t] - b[t]) * (a[t] - b[t]);
        if (m2 > best) {
            best = m2;
            bi = i;
            memcpy(best_b, b, d * sizeof(double));
        }
    }
    if (head)
        *head = bi + 1;
    double na = sqrt(dot(a, a, d)), nb = sqrt(dot(best_b, best_b, d)), nv = sqrt(dot(v, v, d));
    double tiny = 1e-12 * (na + nb);
    for (size_t t = 0; t < d; t++) {
        double x = 0;
        if (na > tiny)
            x += a[t] / na;
        if (nb > tiny)
            x -= best_b[t] / nb;
        v2[t] = x;
    }
    /* |v2~| <= 2; when it is tiny, a and b are (numerically) positively
     * parallel, v2~ is rounding noise and scaling it to |v| would blow X up
     * (logits ~ 1/|v2~|^2): the construction is then degenerate and the
     * second column is left 0 */
    double n2 = sqrt(dot(v2, v2, d));
    double scale2 = n2 > 0x1p-20 ? nv / n2 : 0.0;
    double mx = na > nb ? na : nb;
    double c = (mx > 0 && nv > 0) ? pow2_near(1.0 / sqrt(mx * nv)) : 1.0;
    for (size_t t = 0; t < d; t++) {
        AC_MAT(X, t, 0) = c * v[t];
        AC_MAT(X, t, 1) = alpha * c * scale2 * v2[t];
    }
out:
    free(v);
    free(a);
    free(b);
    free(best_b);
    free(v2);
    free(tmp);
    if (st)
        ac_mat_free(X);
    return st;
}

/* ---- double-precision gap ------------------------------------------------- */

typedef struct {
    const ac_mh *W, *V;
    size_t n;
    ac_mh_work ww, wv;
    ac_mat Yf, Yg;
} gap_ws;

/* threads: of the forward and backward passes (0 = as the BLAS) */
static int gap_ws_init(gap_ws *g, const ac_mh *W, const ac_mh *V, size_t n, int threads,
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

static void gap_ws_free(gap_ws *g)
{
    ac_mh_work_free(&g->ww);
    ac_mh_work_free(&g->wv);
    ac_mat_free(&g->Yf);
    ac_mat_free(&g->Yg);
}

/* gap = ||f - g||_F, nf, ng the norms; returns the relative gap */
static double gap_eval(gap_ws *g, const ac_mat *X, double *gap, double *nf, double *ng)
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
    gap_ws g;
    int st = gap_ws_init(&g, W, V, X->cols, 0, err);
    if (st)
        return st;
    if (X->rows != W->d) {
        gap_ws_free(&g);
        return ac_err_set(err, AC_EUSAGE, "X has %zu rows, d = %zu", X->rows, W->d);
    }
    double r = gap_eval(&g, X, gap, NULL, NULL);
    if (rel)
        *rel = r;
    gap_ws_free(&g);
    return AC_OK;
}

/* ---- the separation certificate ------------------------------------------- */

/* Lower bound on sqrt(sum m_i^2) over nonnegative m_i (rounded down; the
 * floating-point sum of nonnegative terms is at most (1 + gamma_{N-1}) times
 * the exact one). */
static double norm2_dn(const double *m, size_t N)
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
    if ((st = ac_mh_enclose(&F, c->W, c->X, err)) || (st = ac_mh_enclose(&G, c->V, c->X, err))) {
        ac_imat_free(&F);
        return st;
    }
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
            m[i] = dl > 0 ? dl : (dh < 0 ? -dh : 0.0);
            u[i] = fmax(fabs(dl), fabs(dh));
        }
        *lo = norm2_dn(m, N);
        *hi = ac_norm2_up(u, N);
        for (size_t i = 0; i < N; i++)
            u[i] = fmax(fabs(ac_imat_lo(&F, i)), fabs(ac_imat_hi(&F, i)));
        c->f_hi = ac_norm2_up(u, N);
        for (size_t i = 0; i < N; i++)
            u[i] = fmax(fabs(ac_imat_lo(&G, i)), fabs(ac_imat_hi(&G, i)));
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
    ac_arb_mat_set_d(X, c->X->data, (size_t)d, (size_t)n);
    ac_mh_forward_arb(F, c->W, X, prec);
    ac_mh_forward_arb(G, c->V, X, prec);
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

/* ---- numerical maximisation of the relative gap (GSL multimin) ------------ */

/* r(X) = N / D, N = ||f - g||_F, D = ||f||_F + ||g||_F.  Gradient through
 * the upstream gradients
 *   dr/df = (f - g)/(N D) - N f/(||f|| D^2),  dr/dg = -(f - g)/(N D) - N g/(||g|| D^2)
 * and the layers' backward passes.  The minimiser works on -r.
 *
 * The work is bounded by design, not by convergence: BFGS iterations are
 * capped by `iters`, and so are the evaluations -- GSL's line search may
 * evaluate up to ~100 times per iteration when it cannot satisfy its
 * conditions (a flat or noisy r, e.g. f = g up to rounding), so at most
 * MULTIMIN_EVALS(iters) evaluations are computed; past that, opt_eval
 * returns +inf without computing, which ends the line search at once.  The
 * result is the best point evaluated (not GSL's last iterate), so it does
 * not depend on how the minimiser stopped. */
#define MULTIMIN_EVALS(iters) (5L * (long)(iters) + 10)

typedef struct {
    gap_ws g;
    ac_mat X, Gf, Gg, dXf, dXg;
    long evals, max_evals;
    double best_r;      /* largest r evaluated, at best_X */
    ac_mat best_X;
} opt_ctx;

static double opt_eval(const gsl_vector *th, void *p, gsl_vector *grad)
{
    opt_ctx *c = p;
    size_t N = c->X.rows * c->X.cols;
    if (c->evals >= c->max_evals) {
        if (grad)
            gsl_vector_set_zero(grad);
        return INFINITY; /* budget spent: no more layer evaluations */
    }
    c->evals++;
    memcpy(c->X.data, th->data, N * sizeof(double));
    double gap, nf, ng;
    double r = gap_eval(&c->g, &c->X, &gap, &nf, &ng);
    if (!isfinite(r)) {
        if (grad)
            gsl_vector_set_zero(grad);
        return INFINITY;
    }
    if (r > c->best_r) {
        c->best_r = r;
        memcpy(c->best_X.data, c->X.data, N * sizeof(double));
    }
    if (!grad)
        return -r;
    double D = nf + ng;
    if (!(gap > 0) || !(nf > 0) || !(ng > 0) || !(D > 0)) {
        gsl_vector_set_zero(grad);
        return -r;
    }
    for (size_t i = 0; i < N; i++) {
        double f = c->g.Yf.data[i], g = c->g.Yg.data[i];
        c->Gf.data[i] = (f - g) / (gap * D) - gap * f / (nf * D * D);
        c->Gg.data[i] = -(f - g) / (gap * D) - gap * g / (ng * D * D);
    }
    ac_mh_backward(&c->dXf, c->g.W, &c->X, &c->Gf, &c->g.ww, NULL);
    ac_mh_backward(&c->dXg, c->g.V, &c->X, &c->Gg, &c->g.wv, NULL);
    for (size_t i = 0; i < N; i++)
        grad->data[i] = -(c->dXf.data[i] + c->dXg.data[i]);
    return -r;
}

static double opt_f(const gsl_vector *th, void *p) { return opt_eval(th, p, NULL); }
static void opt_df(const gsl_vector *th, void *p, gsl_vector *g) { opt_eval(th, p, g); }
static void opt_fdf(const gsl_vector *th, void *p, double *f, gsl_vector *g)
{
    *f = opt_eval(th, p, g);
}

/* BFGS (GSL vector_bfgs2) from X0; the best point evaluated goes to Xout
 * (allocated here).  Returns its relative gap estimate (or -1 if nothing was
 * done); *evals receives the number of evaluations. */
static double maximise_gap(ac_mat *Xout, const ac_mh *W, const ac_mh *V, const ac_mat *X0,
                           int iters, int threads, long *evals, ac_err *err)
{
    size_t d = X0->rows, n = X0->cols, N = d * n;
    opt_ctx c;
    double res = -1;
    memset(&c, 0, sizeof c);
    if (evals)
        *evals = 0;
    if (iters <= 0 || N == 0)
        return -1;
    c.max_evals = MULTIMIN_EVALS(iters);
    c.best_r = -1;
    if (gap_ws_init(&c.g, W, V, n, threads, err) || ac_mat_init(&c.X, d, n, err) ||
        ac_mat_init(&c.Gf, d, n, err) || ac_mat_init(&c.Gg, d, n, err) ||
        ac_mat_init(&c.dXf, d, n, err) || ac_mat_init(&c.dXg, d, n, err) ||
        ac_mat_init(&c.best_X, d, n, err))
        goto out;
    gsl_vector *th = gsl_vector_alloc(N);
    gsl_multimin_fdfminimizer *m =
        gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, N);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    if (th && m) {
        memcpy(th->data, X0->data, N * sizeof(double));
        double nx = 0;
        for (size_t i = 0; i < N; i++)
            nx += X0->data[i] * X0->data[i];
        gsl_multimin_function_fdf fn = {opt_f, opt_df, opt_fdf, N, &c};
        if (gsl_multimin_fdfminimizer_set(m, &fn, th, 0.05 * (sqrt(nx) + 1e-3), 0.1) ==
            GSL_SUCCESS) {
            for (int it = 0; it < iters && c.evals < c.max_evals; it++) {
                if (gsl_multimin_fdfminimizer_iterate(m))
                    break;
                if (gsl_multimin_test_gradient(m->gradient, 1e-10) == GSL_SUCCESS)
                    break;
            }
        }
        if (c.best_r >= 0 && ac_mat_copy(Xout, &c.best_X, err) == AC_OK)
            res = c.best_r;
    }
    gsl_set_error_handler(old);
    if (m)
        gsl_multimin_fdfminimizer_free(m);
    if (th)
        gsl_vector_free(th);
out:
    if (evals)
        *evals = c.evals;
    gap_ws_free(&c.g);
    ac_mat_free(&c.X);
    ac_mat_free(&c.Gf);
    ac_mat_free(&c.Gg);
    ac_mat_free(&c.dXf);
    ac_mat_free(&c.dXg);
    ac_mat_free(&c.best_X);
    return res;
}

/* ---- trace: the proof's steps with certified values (Arb, 128 bits) -------- */

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
    add_step(res, name, quantity, lo, hi, 1, TRACE_PREC, note);
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

static void arb_col_of(arb_mat_t v, const ac_mat *X, size_t j)
{
    for (size_t i = 0; i < X->rows; i++)
        arb_set_d(arb_mat_entry(v, (slong)i, 0), AC_MAT(X, i, j));
}

/* Certified lower bound on sigma_h of B = [Wo_1 Wv_1 v, ..., Wo_h Wv_h v] (d x h). */
static int sigma_ov(double *lo, double *hi, const ac_mh *W, const arb_mat_t v, ac_err *err)
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
        arb_ov_apply(y, W, (size_t)i, v, TRACE_PREC);
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

static int trace_case(ac_t2_result *res, const ac_mh *W, const ac_mh *V, const ac_t2_sep *cand,
                      ac_err *err)
{
    const slong prec = TRACE_PREC;
    slong d = (slong)W->d, n = (slong)cand->X.cols;
    size_t hi = cand->head ? cand->head - 1 : 0;
    char name[96], q[96], note[200];
    arb_mat_t X, F, G, D, x1, x2, t1, A, U;
    arb_t r, s;
    int st = AC_OK;
    arb_mat_init(X, d, n);
    arb_mat_init(F, d, n);
    arb_mat_init(G, d, n);
    arb_mat_init(D, d, n);
    arb_mat_init(x1, d, 1);
    arb_mat_init(x2, d, 1);
    arb_mat_init(t1, d, 1);
    arb_mat_init(A, d, d);
    arb_mat_init(U, d, d);
    arb_init(r);
    arb_init(s);
    ac_arb_mat_set_d(X, cand->X.data, (size_t)d, (size_t)n);
    ac_mh_forward_arb(F, W, X, prec);
    ac_mh_forward_arb(G, V, X, prec);
    arb_mat_sub(D, F, G, prec);
    arb_col_of(x1, &cand->X, 0);
    if (n >= 2)
        arb_col_of(x2, &cand->X, 1);
    arb_logit_form(U, V, 0, prec);   /* U/sqrt(dp) */
    arb_logit_form(A, W, hi, prec);  /* A_i/sqrt(d/h) */
    ac_t2_case k = res->cls.kase;

    if (k == AC_T2_CASE_1) {
        ac_xmat SW, SV, Dx;
        if (x_S(&SW, W) == AC_XMAT_OK && x_S(&SV, V) == AC_XMAT_OK) {
            arb_mat_t Da;
            arb_mat_init(Da, d, d);
            ac_xmat_sub(&Dx, &SW, &SV);
            ac_xmat_to_arb(Da, &Dx, prec);
            arb_mat_frobenius_norm(r, Da, prec);
            add_step(res, "case 1: S_W != S_V", "||S_W - S_V||_F", ac_arb_lo(r), ac_arb_hi(r),
                     AC_STAGE_EXACT, 0, "decided by exact comparison of the products; the value "
                     "is a 128-bit enclosure");
            arb_mat_mul(t1, Da, x1, prec);
            arb_mat_frobenius_norm(r, t1, prec);
            add_step_arb(res, "(S_W - S_V) v != 0 for the generic v", "||(S_W - S_V) v||_2", r, 1,
                         "v = X[:, 1]; any v outside the null space of S_W - S_V works");
            arb_mat_clear(Da);
            ac_xmat_clear(&Dx);
            ac_xmat_clear(&SW);
            ac_xmat_clear(&SV);
        }
        arb_mat_t SX;
        arb_mat_init(SX, d, n);
        arb_S_apply(SX, W, X, prec);
        arb_mat_sub(SX, F, SX, prec);
        arb_mat_frobenius_norm(r, SX, prec);
        add_step_arb(res, "X = v 1': X P = X for column-stochastic P, so f_W(X) = S_W X",
                     "||f_W(X) - S_W X||_F", r, 1, "0 in exact arithmetic; the enclosure "
                     "contains 0");
        arb_S_apply(SX, V, X, prec);
        arb_mat_sub(SX, G, SX, prec);
        arb_mat_frobenius_norm(r, SX, prec);
        add_step_arb(res, "likewise g_V(X) = S_V X", "||g_V(X) - S_V X||_F", r, 1,
                     "so f_W(X) - g_V(X) = (S_W - S_V) v 1'");
        arb_mat_clear(SX);
    } else if (k == AC_T2_CASE_2) {
        add_step(res, "case 2: S_W = S_V", "||S_W - S_V||_F", 0, 0, AC_STAGE_EXACT, 0,
                 "exact comparison of the dyadic products");
        /* M_i + M_i' for the head the construction uses */
        arb_mat_t M, MT;
        arb_mat_init(M, d, d);
        arb_mat_init(MT, d, d);
        arb_mat_sub(M, U, A, prec);
        arb_mat_transpose(MT, M);
        arb_mat_add(M, M, MT, prec);
        arb_mat_frobenius_norm(r, M, prec);
        snprintf(name, sizeof name, "M_%zu is not skew-symmetric", hi + 1);
        snprintf(note, sizeof note, "M_i = U/sqrt(dp) - Wk_i'Wq_i/sqrt(d/h); non-skew for %zu of "
                 "%zu heads (exact)", res->cls.nonskew, W->h);
        add_step_arb(res, name, "||M_i + M_i'||_F", r, 1, note);
        arb_mat_clear(M);
        arb_mat_clear(MT);
        /* t_i - tau = v'M_i v (scaled), v = X[:, 1] */
        arb_bilinear(r, x1, A, x1, prec);
        arb_bilinear(s, x1, U, x1, prec);
        arb_sub(r, r, s, prec);
        arb_abs(r, r);
        snprintf(name, sizeof name, "X = v e_1': t_%zu != tau for the generic v", hi + 1);
        add_step_arb(res, name, "|v'A_i v/sqrt(d/h) - v'U v/sqrt(dp)|", r, 1,
                     "so phi(t_i) != phi(tau): the head's weight on v differs");
        double slo, shi;
        if ((st = sigma_ov(&slo, &shi, W, x1, err)))
            goto done;
        add_step(res, "{Wo_i Wv_i v} linearly independent (generic v)",
                 "sigma_h([Wo_1 Wv_1 v, ..., Wo_h Wv_h v])", slo, shi, 1, prec,
                 slo > 0 ? "> 0: independent for this v (not for every v: see --audit)"
                         : "not certified positive");
        if (n >= 2) {
            arb_mat_t Dr;
            arb_mat_window_init(Dr, D, 0, 1, d, n);
            arb_mat_frobenius_norm(r, Dr, prec);
            arb_mat_window_clear(Dr);
            add_step_arb(res, "columns 2..n of f_W(X) and g_V(X) agree", "||(f - g)[:, 2:n]||_F",
                         r, 1, "both equal S v / n = S_V v / n; 0 in exact arithmetic");
        }
        /* column 1 = sum_i (phi(t_i) - phi(tau)) Wo_i Wv_i v, phi(t) = e^t / (e^t + n - 1) */
        arb_t ph, pt, e;
        arb_init(ph);
        arb_init(pt);
        arb_init(e);
        arb_mat_t pred, y;
        arb_mat_init(pred, d, 1);
        arb_mat_init(y, d, 1);
        arb_bilinear(s, x1, U, x1, prec);
        arb_exp(e, s, prec);
        arb_add_ui(ph, e, (ulong)(n - 1), prec);
        arb_div(ph, e, ph, prec);
        for (size_t i = 0; i < W->h; i++) {
            arb_mat_t Ai;
            arb_mat_init(Ai, d, d);
            arb_logit_form(Ai, W, i, prec);
            arb_bilinear(s, x1, Ai, x1, prec);
            arb_exp(e, s, prec);
            arb_add_ui(pt, e, (ulong)(n - 1), prec);
            arb_div(pt, e, pt, prec);
            arb_sub(pt, pt, ph, prec);
            arb_ov_apply(y, W, i, x1, prec);
            for (slong t = 0; t < d; t++)
                arb_addmul(arb_mat_entry(pred, t, 0), pt, arb_mat_entry(y, t, 0), prec);
            arb_mat_clear(Ai);
        }
        arb_mat_frobenius_norm(r, pred, prec);
        add_step_arb(res, "column 1: sum_i (phi(t_i) - phi(tau)) Wo_i Wv_i v != 0",
                     "||sum_i (phi(t_i) - phi(tau)) Wo_i Wv_i v||_2", r, 1,
                     "phi(t) = e^t/(e^t + n - 1); nonzero by the independence above");
        for (slong t = 0; t < d; t++)
            arb_sub(arb_mat_entry(pred, t, 0), arb_mat_entry(D, t, 0), arb_mat_entry(pred, t, 0),
                    prec);
        arb_mat_frobenius_norm(r, pred, prec);
        add_step_arb(res, "... and it is column 1 of f_W(X) - g_V(X)",
                     "||(f - g)[:, 1] - sum_i (phi(t_i) - phi(tau)) Wo_i Wv_i v||_2", r, 1,
                     "0 in exact arithmetic (uses S_W = S_V)");
        arb_mat_clear(pred);
        arb_mat_clear(y);
        arb_clear(ph);
        arb_clear(pt);
        arb_clear(e);
    } else if (k == AC_T2_CASE_3) {
        add_step(res, "case 3: S_W = S_V", "||S_W - S_V||_F", 0, 0, AC_STAGE_EXACT, 0,
                 "exact comparison of the dyadic products");
        add_step(res, "every M_i is skew-symmetric", "max_i ||M_i + M_i'||_F", 0, 0,
                 AC_STAGE_EXACT, 0, "exact: sqrt(d/h)(U + U') = sqrt(dp)(A_i + A_i') entrywise");
        {
            arb_mat_t M, Mx;
            arb_mat_init(M, d, d);
            arb_mat_init(Mx, d, 1);
            arb_mat_sub(M, U, A, prec);
            arb_mat_mul(Mx, M, x1, prec);
            arb_mat_frobenius_norm(r, Mx, prec);
            snprintf(name, sizeof name, "M_%zu v1 != 0 (rank M_i >= dp - d/h >= 1)", hi + 1);
            add_step_arb(res, name, "||M_i v1||_2", r, 1, "v1 = X[:, 1], generic");
            arb_mat_clear(M);
            arb_mat_clear(Mx);
        }
        arb_bilinear(r, x2, U, x1, prec);
        add_step_arb(res, "v2' U v1 / sqrt(dp) > 0 (v2 = alpha v2~ = X[:, 2])",
                     "v2'U v1/sqrt(dp)", r, 0, "the logit of token 2 in column 1 of g_V: grows "
                     "with alpha");
        arb_bilinear(r, x2, A, x1, prec);
        snprintf(name, sizeof name, "v2' Wk_%zu'Wq_%zu v1 / sqrt(d/h) < 0", hi + 1, hi + 1);
        add_step_arb(res, name, "v2'A_i v1/sqrt(d/h)", r, 0,
                     "the logit of token 2 in column 1 of head i of f_W: falls with alpha");
        arb_mat_t Pg, Pf;
        arb_mat_init(Pg, n, n);
        arb_mat_init(Pf, n, n);
        ac_mh_head_softmax_arb(Pg, V, 0, X, prec);
        ac_mh_head_softmax_arb(Pf, W, hi, X, prec);
        snprintf(name, sizeof name, "alpha = %g: g_V puts weight -> 1 on v2 in column 1",
                 cand->alpha);
        add_step_arb(res, name, "Softmax(X'UX/sqrt(dp))[2, 1]", arb_mat_entry(Pg, 1, 0), 1,
                     "every head of g_V shares U, so this is g_V's weight");
        snprintf(name, sizeof name, "... while head %zu of f_W puts weight -> 0 on it", hi + 1);
        add_step_arb(res, name, "Softmax(X'A_i X/sqrt(d/h))[2, 1]", arb_mat_entry(Pf, 1, 0), 1,
                     "");
        /* head i's part: Wo_i Wv_i ((Pf11 - Pg11) v1 + (Pf21 - Pg21) v2) */
        arb_mat_t w, y;
        arb_mat_init(w, d, 1);
        arb_mat_init(y, d, 1);
        arb_sub(r, arb_mat_entry(Pf, 0, 0), arb_mat_entry(Pg, 0, 0), prec);
        arb_sub(s, arb_mat_entry(Pf, 1, 0), arb_mat_entry(Pg, 1, 0), prec);
        for (slong t = 0; t < d; t++) {
            arb_mul(arb_mat_entry(w, t, 0), r, arb_mat_entry(x1, t, 0), prec);
            arb_addmul(arb_mat_entry(w, t, 0), s, arb_mat_entry(x2, t, 0), prec);
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
    }
    /* the final inequality: the certificate of this X */
    snprintf(q, sizeof q, "||f_W(X) - g_V(X)||_F");
    add_step(res, "f_W(X) != g_V(X)", q, cand->cert.lo, cand->cert.hi, cand->cert.stage,
             cand->cert.prec, cand->cert.verdict == AC_PROVED ? "> 0: separated at this X"
                                                              : "not certified positive");
done:
    arb_mat_clear(X);
    arb_mat_clear(F);
    arb_mat_clear(G);
    arb_mat_clear(D);
    arb_mat_clear(x1);
    arb_mat_clear(x2);
    arb_mat_clear(t1);
    arb_mat_clear(A);
    arb_mat_clear(U);
    arb_clear(r);
    arb_clear(s);
    return st;
}

/* ---- audit: the gaps of MATH.md §2 ---------------------------------------- */

/* Gap 1: a v != 0 in the null space of Wv_1 (exact integers), so that
 * Wo_1 Wv_1 v = 0 and {Wo_i Wv_i v} is linearly dependent. */
static void audit_dependence(ac_t2_audit *a, const ac_mh *W)
{
    size_t d = W->d, hs = W->hs;
    ac_xmat Wv;
    a->dep = AC_UNDECIDED;
    if (ac_xmat_from_d(&Wv, W->wv, hs, d, d, 0, 0) != AC_XMAT_OK) {
        snprintf(a->note, sizeof a->note, "Wv_1 too wide for exact arithmetic");
        return;
    }
    fmpz *v = _fmpz_vec_init((slong)d);
    if (ac_xmat_null_vector(v, &Wv)) {
        /* re-check Wv_1 v = 0 exactly, independently of the null-space routine */
        int zero = 1;
        fmpz_t s;
        fmpz_init(s);
        for (slong r = 0; r < (slong)hs && zero; r++) {
            fmpz_zero(s);
            for (slong j = 0; j < (slong)d; j++)
                fmpz_addmul(s, fmpz_mat_entry(Wv.m, r, j), v + j);
            zero = fmpz_is_zero(s);
        }
        fmpz_clear(s);
        int nonzero = !_fmpz_vec_is_zero(v, (slong)d);
        if (zero && nonzero) {
            a->dep = AC_PROVED;
            a->dep_head = 1;
            a->dep_bits = (long)FLINT_ABS(_fmpz_vec_max_bits(v, (slong)d));
            /* display: v / ||v||, from the integers shifted to double range */
            long shift = a->dep_bits > 60 ? a->dep_bits - 60 : 0;
            double nn = 0, tmp[8];
            fmpz_t t;
            fmpz_init(t);
            a->dep_nshow = d < 8 ? d : 8;
            for (size_t j = 0; j < d; j++) {
                fmpz_tdiv_q_2exp(t, v + j, (ulong)shift);
                double x = fmpz_get_d(t);
                nn += x * x;
                if (j < a->dep_nshow)
                    tmp[j] = x;
            }
            fmpz_clear(t);
            for (size_t j = 0; j < a->dep_nshow; j++)
                a->dep_v[j] = nn > 0 ? tmp[j] / sqrt(nn) : 0.0;
        }
    }
    _fmpz_vec_clear(v, (slong)d);
    ac_xmat_clear(&Wv);
}

/* Gap 2 (case 3): a v1 = e_j and a head i with U e_j and A_i e_j positively
 * parallel and M_i e_j != 0: then v2~'U v1 and v2~'A_i v1 have the same sign
 * for every v2~, and no sign-separating v2~ exists. */
static void audit_parallel(ac_t2_audit *a, const ac_mh *W, const ac_mh *V)
{
    size_t d = W->d;
    ac_xmat U, A;
    a->parallel = AC_UNDECIDED;
    if (x_qk(&U, V, 0) != AC_XMAT_OK) {
        snprintf(a->par_note, sizeof a->par_note, "U too wide for exact arithmetic");
        return;
    }
    fmpz_t x, y;
    fmpz_init(x);
    fmpz_init(y);
    for (size_t i = 0; i < W->h && a->parallel != AC_PROVED; i++) {
        if (x_qk(&A, W, i) != AC_XMAT_OK)
            continue;
        for (slong j = 0; j < (slong)d && a->parallel != AC_PROVED; j++) {
            slong k = -1;
            for (slong l = 0; l < (slong)d; l++)
                if (!fmpz_is_zero(fmpz_mat_entry(U.m, l, j))) {
                    k = l;
                    break;
                }
            if (k < 0)
                continue;
            const fmpz *ak = fmpz_mat_entry(U.m, k, j), *bk = fmpz_mat_entry(A.m, k, j);
            if (fmpz_sgn(bk) == 0 || fmpz_sgn(bk) != fmpz_sgn(ak))
                continue;
            int par = 1;
            for (slong l = 0; l < (slong)d && par; l++) {
                /* b_l a_k == b_k a_l (the exponents cancel) */
                fmpz_mul(x, fmpz_mat_entry(A.m, l, j), ak);
                fmpz_mul(y, bk, fmpz_mat_entry(U.m, l, j));
                par = fmpz_equal(x, y);
            }
            if (!par)
                continue;
            ac_xmat ca, cb;
            ac_xmat_block(&ca, &U, 0, j, (slong)d, 1);
            ac_xmat_block(&cb, &A, 0, j, (slong)d, 1);
            /* M_i e_j = U e_j/sqrt(dp) - A_i e_j/sqrt(dh) != 0 */
            int mnz = !ac_xmat_scaled_equal(&ca, (unsigned long)W->hs, &cb, (unsigned long)V->hs);
            ac_xmat_clear(&ca);
            ac_xmat_clear(&cb);
            if (!mnz)
                continue;
            a->parallel = AC_PROVED;
            a->par_head = i + 1;
            a->par_coord = (size_t)j + 1;
            double kappa = ldexp(fmpz_get_d(bk) / fmpz_get_d(ak), (int)(A.exp - U.exp));
            snprintf(a->par_note, sizeof a->par_note,
                     "v1 = e_%zu, head %zu: Wk_i'Wq_i v1 = %.6g U v1 exactly (kappa > 0) and "
                     "M_i v1 != 0, so v2~'U v1 and v2~'Wk_i'Wq_i v1 have the same sign for "
                     "every v2~", (size_t)j + 1, i + 1, kappa);
        }
        ac_xmat_clear(&A);
    }
    fmpz_clear(x);
    fmpz_clear(y);
    ac_xmat_clear(&U);
    if (a->parallel != AC_PROVED)
        snprintf(a->par_note, sizeof a->par_note,
                 "no basis vector v1 = e_j with U v1 and Wk_i'Wq_i v1 positively parallel "
                 "(such v1 need v1'U v1 = 0; not found here)");
}

static int run_audit(ac_t2_result *res, const ac_mh *W, const ac_mh *V, const ac_mat *Xgen,
                     ac_err *err)
{
    ac_t2_audit *a = &res->audit;
    a->done = 1;
    audit_dependence(a, W);
    a->indep = AC_UNDECIDED;
    if (Xgen && Xgen->data) {
        arb_mat_t v;
        double lo, hi;
        arb_mat_init(v, (slong)W->d, 1);
        arb_col_of(v, Xgen, 0);
        int st = sigma_ov(&lo, &hi, W, v, err);
        arb_mat_clear(v);
        if (st)
            return st;
        a->indep_sigma_lo = lo;
        a->indep = lo > 0 ? AC_PROVED : AC_UNDECIDED;
    }
    if (res->cls.kase == AC_T2_CASE_3) {
        audit_parallel(a, W, V);
    } else {
        a->parallel = AC_UNDECIDED;
        snprintf(a->par_note, sizeof a->par_note,
                 "not applicable: the second gap concerns case 3's construction and the "
                 "instance is in %s", ac_t2_case_name(res->cls.kase));
    }
    return AC_OK;
}

/* ---- orchestration -------------------------------------------------------- */

typedef struct {
    ac_t2_sep *v;
    size_t n, cap;
} cand_list;

static ac_t2_sep *cand_push(cand_list *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        ac_t2_sep *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv)
            return NULL;
        l->v = nv;
        l->cap = cap;
    }
    ac_t2_sep *s = &l->v[l->n++];
    memset(s, 0, sizeof *s);
    s->cert.verdict = AC_UNDECIDED;
    s->cert.stage = AC_STAGE_NONE;
    return s;
}

static void cand_free(cand_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ac_t2_sep_free(&l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static int better(const ac_t2_sep *a, const ac_t2_sep *b)
{
    /* a certified candidate beats b */
    if (a->cert.verdict != AC_PROVED)
        return 0;
    if (!b || b->cert.verdict != AC_PROVED)
        return 1;
    return a->rel_lo > b->rel_lo;
}

static int sep_copy(ac_t2_sep *dst, const ac_t2_sep *src, ac_err *err)
{
    *dst = *src;
    dst->X.data = NULL;
    return ac_mat_copy(&dst->X, &src->X, err);
}

static const char *verdict_word(ac_verdict v)
{
    return v == AC_PROVED ? "holds" : v == AC_REFUTED ? "fails" : "undecided";
}

static void failing_hypotheses(char *buf, size_t n, const ac_t2_hyp *hy)
{
    size_t k = 0;
    buf[0] = '\0';
    const char *names[4] = {"the sizes", "rank S_V = d", "U_i = U for every head", "rank U = dp"};
    ac_verdict v[4] = {hy->sizes, hy->sv_rank, hy->u_shared, hy->u_rank};
    for (int i = 0; i < 4; i++)
        if (v[i] != AC_PROVED && k < n)
            k += (size_t)snprintf(buf + k, n - k, "%s%s %s", k ? ", " : "", names[i],
                                  verdict_word(v[i]) );
}

static int separate(ac_t2_result *res, const ac_mh *W, const ac_mh *V, size_t n,
                    const ac_t2_opts *opts, int threads, ac_err *err)
{
    ac_t2_opts defaults;
    const ac_t2_opts *o = opts;
    cand_list L = {NULL, 0, 0};
    gap_ws g;
    int st, have_g = 0;
    double t0 = ac_seconds();
    memset(res, 0, sizeof *res);
    res->verdict = AC_UNDECIDED;
    res->identical = -1;
    res->opt_from = res->opt_to = NAN;
    res->best.cert.verdict = res->by_case.cert.verdict = AC_UNDECIDED;
    res->best.cert.stage = res->by_case.cert.stage = AC_STAGE_NONE;
    if (!o) {
        ac_t2_opts_default(&defaults);
        o = &defaults;
    }
    if ((st = ac_t2_validate(W, "f_W", V, "g_V", err)))
        return st;
    if (n == 0)
        return ac_err_set(err, AC_EUSAGE, "X needs n >= 1 tokens");
    if ((st = ac_t2_hypotheses(&res->hyp, V, n, err)) ||
        (st = ac_t2_identical(&res->identical, W, V, err)) ||
        (st = ac_t2_classify(&res->cls, W, V, err)))
        return st;
    int kase = (int)res->cls.kase;
    ac_t2_sep *best = NULL, *bycase = NULL;
    if (res->identical == 1 && !o->search_if_identical) {
        res->verdict = AC_REFUTED;
        goto finish;
    }
    if ((st = gap_ws_init(&g, W, V, n, threads, err)))
        goto out;
    have_g = 1;

    /* 1. the three constructions with several generic vectors */
    for (int con = AC_T2_CON_1; con <= AC_T2_CON_3; con++) {
        if (con == AC_T2_CON_3 && n < 2)
            continue;
        size_t na = con == AC_T2_CON_3 ? (o->nalpha ? o->nalpha : 1) : 1;
        for (size_t k = 0; k < o->tries; k++)
            for (size_t ia = 0; ia < na; ia++) {
                ac_t2_sep *s = cand_push(&L);
                if (!s) {
                    st = ac_err_set(err, AC_EINTERNAL, "out of memory");
                    goto out;
                }
                s->construction = con;
                s->index = k;
                s->alpha = con == AC_T2_CON_3 ? (o->nalpha ? o->alpha[ia] : 1.0) : 0.0;
                if ((st = ac_t2_construct(&s->X, con, W, V, n, o->seed, k, s->alpha, &s->head,
                                          err)))
                    goto out;
                s->est_rel = gap_eval(&g, &s->X, &s->est_gap, NULL, NULL);
            }
    }
    res->ncand = L.n;
    /* 2. stage-0 certificates (cheap); a candidate whose estimate is 0 cannot
     *    be separated and is skipped */
    for (size_t i = 0; i < L.n; i++) {
        ac_t2_sep *s = &L.v[i];
        if (!(s->est_gap > 0))
            continue;
        if ((st = ac_t2_certify(s, W, V, NULL, err)))
            goto out;
        if (s->cert.verdict == AC_PROVED) {
            res->ncert++;
            if (better(s, best))
                best = s;
            if (s->construction == kase && better(s, bycase))
                bycase = s;
        }
    }
    /* 3. the case's own construction at higher precision if stage 0 failed */
    if (kase >= 1 && kase <= 3 && !bycase) {
        ac_t2_sep *top = NULL;
        for (size_t i = 0; i < L.n; i++)
            if (L.v[i].construction == kase && L.v[i].est_gap > 0 &&
                (!top || L.v[i].est_rel > top->est_rel))
                top = &L.v[i];
        if (top) {
            if ((st = ac_t2_certify(top, W, V, &o->sched, err)))
                goto out;
            if (top->cert.verdict == AC_PROVED) {
                res->ncert++;
                bycase = top;
                if (better(top, best))
                    best = top;
            } else {
                top->est_gap = 0; /* every stage tried */
            }
        }
    }
    /* 4. multimin on the relative gap, from the best X so far (copied: the
     *    candidate array may move when the result is appended) */
    if (o->optimize > 0) {
        ac_mat X0 = {0};
        const ac_t2_sep *from = best;
        if (!from)
            for (size_t i = 0; i < L.n; i++)
                if (L.v[i].est_rel > 0 && (!from || L.v[i].est_rel > from->est_rel))
                    from = &L.v[i];
        if (from) {
            if ((st = ac_mat_copy(&X0, &from->X, err)))
                goto out;
        } else {
            if ((st = ac_mat_init(&X0, W->d, n, err)))
                goto out;
            rng_vec(X0.data, W->d * n, o->seed, STREAM_CON + AC_T2_CON_OPT, 0);
        }
        double g0, r0 = gap_eval(&g, &X0, &g0, NULL, NULL);
        ac_t2_sep *s = cand_push(&L);
        if (!s) {
            ac_mat_free(&X0);
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            goto out;
        }
        s->construction = AC_T2_CON_OPT;
        double r1 = maximise_gap(&s->X, W, V, &X0, o->optimize, threads, &res->opt_evals, NULL);
        ac_mat_free(&X0);
        if (r1 >= 0 && s->X.data) {
            res->opt_from = r0;
            res->opt_to = r1;
            res->ncand++;
            s->est_rel = gap_eval(&g, &s->X, &s->est_gap, NULL, NULL);
            if (s->est_gap > 0) {
                if ((st = ac_t2_certify(s, W, V, NULL, err)))
                    goto out;
                if (s->cert.verdict != AC_PROVED &&
                    (st = ac_t2_certify(s, W, V, &o->sched, err)))
                    goto out;
                if (s->cert.verdict == AC_PROVED)
                    res->ncert++;
                else
                    s->est_gap = 0; /* every stage tried */
            }
        }
        best = bycase = NULL;
        for (size_t i = 0; i < L.n; i++) {
            ac_t2_sep *c = &L.v[i];
            if (c->cert.verdict != AC_PROVED)
                continue;
            if (better(c, best))
                best = c;
            if (c->construction == kase && better(c, bycase))
                bycase = c;
        }
    }
    /* 5. nothing certified at stage 0: the best estimates at full precision */
    if (!best) {
        for (int rep = 0; rep < 3 && !best; rep++) {
            ac_t2_sep *top = NULL;
            for (size_t i = 0; i < L.n; i++) {
                ac_t2_sep *s = &L.v[i];
                if (s->est_gap > 0 && s->cert.verdict != AC_PROVED &&
                    (!top || s->est_rel > top->est_rel))
                    top = s;
            }
            if (!top)
                break;
            if ((st = ac_t2_certify(top, W, V, &o->sched, err)))
                goto out;
            if (top->cert.verdict == AC_PROVED) {
                res->ncert++;
                best = top;
                if (top->construction == kase)
                    bycase = top;
            } else {
                top->est_gap = 0; /* do not retry */
            }
        }
    }
    if (best) {
        res->verdict = AC_PROVED;
        if ((st = sep_copy(&res->best, best, err)))
            goto out;
    } else {
        /* no X: keep the certificate of the most promising attempt */
        const ac_t2_sep *top = NULL;
        for (size_t i = 0; i < L.n; i++)
            if (L.v[i].cert.stage != AC_STAGE_NONE && (!top || L.v[i].est_rel > top->est_rel))
                top = &L.v[i];
        if (top)
            res->best.cert = top->cert;
        if (res->identical == 1)
            res->verdict = AC_REFUTED;
    }
    if (bycase && (st = sep_copy(&res->by_case, bycase, err)))
        goto out;

finish:
    if (res->verdict == AC_REFUTED)
        ac_cert_set(&res->best.cert, "||f_W(X) - g_V(X)||_F for every X", AC_GT, 0.0,
                    AC_STAGE_EXACT, 0, 0.0, 0.0,
                    "exact head-by-head identity of the products (dyadic rationals)");
    /* trace of the case's construction */
    if (o->trace && kase >= 1 && kase <= 3) {
        const ac_t2_sep *tc = res->by_case.X.data ? &res->by_case : NULL;
        if (!tc) {
            for (size_t i = 0; i < L.n; i++)
                if (L.v[i].construction == kase && (!tc || L.v[i].est_rel > tc->est_rel))
                    tc = &L.v[i];
        }
        if (tc && (st = trace_case(res, W, V, tc, err)))
            goto out;
    }
    if (o->audit) {
        const ac_mat *Xg = NULL;
        if (res->by_case.X.data && (kase == 2 || kase == 3))
            Xg = &res->by_case.X;
        ac_mat Xv = {0};
        if (!Xg && ac_t2_construct(&Xv, AC_T2_CON_2, W, V, n, o->seed, 0, 1.0, NULL, NULL) == AC_OK)
            Xg = &Xv;
        st = run_audit(res, W, V, Xg, err);
        ac_mat_free(&Xv);
        if (st)
            goto out;
    }
    {
        char fails[200], b1[64];
        failing_hypotheses(fails, sizeof fails, &res->hyp);
        snprintf(b1, sizeof b1, "%.3g", res->best.cert.lo);
        if (res->verdict == AC_PROVED && res->hyp.applies == AC_PROVED)
            snprintf(res->summary, sizeof res->summary,
                     "Theorem 2 applies (every hypothesis proved) and f_W is separated from g_V "
                     "at the X found: ||f_W(X) - g_V(X)||_F >= %s, relative gap >= %.3g (%s; "
                     "best X from %s)", b1, res->best.rel_lo, ac_t2_case_name(res->cls.kase),
                     ac_t2_construction_name(res->best.construction));
        else if (res->verdict == AC_PROVED)
            snprintf(res->summary, sizeof res->summary,
                     "f_W is separated from g_V at the X found (||f_W(X) - g_V(X)||_F >= %s): a "
                     "fact about these two layers; Theorem 2 itself says nothing here, because "
                     "its hypotheses are not all proved (%.150s)", b1, fails);
        else if (res->verdict == AC_REFUTED)
            snprintf(res->summary, sizeof res->summary,
                     "no X separates f_W from g_V: they are equal head by head (exact: "
                     "Vo_i Vv_i = Wo_i Wv_i and U_i/sqrt(dp) = Wk_i'Wq_i/sqrt(d/h)); %s",
                     res->hyp.applies == AC_PROVED
                         ? "this contradicts Theorem 2, whose hypotheses were proved: report a bug"
                         : "consistent with Theorem 2, whose hypotheses fail");
        else if (res->hyp.applies == AC_PROVED)
            snprintf(res->summary, sizeof res->summary,
                     "the theorem's hypotheses hold, so some X separates f_W from g_V, but none "
                     "of the %zu candidates could be certified (the differences are below what "
                     "the precision schedule resolves)", res->ncand);
        else
            snprintf(res->summary, sizeof res->summary,
                     "no separating X was certified among %zu candidates; the hypotheses of "
                     "Theorem 2 are not all proved (%s), so f_W and g_V may be equal; that is not "
                     "concluded from a failed search", res->ncand, fails);
    }
out:
    if (have_g)
        gap_ws_free(&g);
    cand_free(&L);
    res->seconds = ac_seconds() - t0;
    return st;
}

/* The check runs with single-threaded BLAS.  It is made of many small
 * products in a loop, and a thread pool (OpenBLAS's, or OpenMP's in
 * ac_mh_forward) makes each parallel call wait for its workers: on a loaded
 * machine a descheduled worker costs a scheduler time slice per call, which
 * turned a 0.25 s search into 5.3 s with 4 busy processes on 2 cores.  And
 * the vector operations of GSL's BFGS go through the CBLAS, whose threaded
 * dot products would make the search path depend on the thread count.  The
 * double forward and backward passes use opts->threads threads (default 1;
 * their result does not depend on it). */
int ac_t2_separate(ac_t2_result *res, const ac_mh *W, const ac_mh *V, size_t n,
                   const ac_t2_opts *opts, ac_err *err)
{
    int old = ac_blas_get_threads();
    int threads = opts ? (opts->threads > 0 ? opts->threads : old) : 1;
    ac_blas_set_threads(1);
    int st = separate(res, W, V, n, opts, threads, err);
    ac_blas_set_threads(old);
    return st;
}

void ac_t2_result_free(ac_t2_result *res)
{
    if (!res)
        return;
    ac_t2_sep_free(&res->best);
    ac_t2_sep_free(&res->by_case);
}

/* ---- the embedding check (F in G) ----------------------------------------- */

/* Exactly: head i of f_W and of g_V agree at X, i.e. Vo_i Vv_i X = Wo_i Wv_i X
 * and X'U_i X/sqrt(dp) = X'A_i X/sqrt(dh).  1 yes, 0 no, -1 too wide. */
static int heads_agree_at(const ac_mh *W, const ac_mh *V, const ac_mat *X)
{
    ac_xmat Xx, XT;
    int ans = 1;
    if (ac_xmat_from_d(&Xx, X->data, X->rows, X->cols, X->cols, 0, 0) != AC_XMAT_OK)
        return -1;
    ac_xmat_transpose(&XT, &Xx);
    for (size_t i = 0; i < W->h && ans == 1; i++) {
        ac_xmat a, b, pa, pb, t;
        if (x_ov(&a, W, i) != AC_XMAT_OK) {
            ans = -1;
            break;
        }
        if (x_ov(&b, V, i) != AC_XMAT_OK) {
            ac_xmat_clear(&a);
            ans = -1;
            break;
        }
        ac_xmat_mul(&pa, &a, &Xx);
        ac_xmat_mul(&pb, &b, &Xx);
        if (!ac_xmat_equal(&pa, &pb))
            ans = 0;
        ac_xmat_clear(&a);
        ac_xmat_clear(&b);
        ac_xmat_clear(&pa);
        ac_xmat_clear(&pb);
        if (ans != 1)
            break;
        if (x_qk(&a, W, i) != AC_XMAT_OK) {
            ans = -1;
            break;
        }
        if (x_qk(&b, V, i) != AC_XMAT_OK) {
            ac_xmat_clear(&a);
            ans = -1;
            break;
        }
        ac_xmat_mul(&t, &XT, &a);
        ac_xmat_mul(&pa, &t, &Xx);
        ac_xmat_clear(&t);
        ac_xmat_mul(&t, &XT, &b);
        ac_xmat_mul(&pb, &t, &Xx);
        ac_xmat_clear(&t);
        /* X'U_i X / sqrt(dp) = X'A_i X / sqrt(dh) */
        if (!ac_xmat_scaled_equal(&pb, (unsigned long)W->hs, &pa, (unsigned long)V->hs))
            ans = 0;
        ac_xmat_clear(&a);
        ac_xmat_clear(&b);
        ac_xmat_clear(&pa);
        ac_xmat_clear(&pb);
    }
    ac_xmat_clear(&Xx);
    ac_xmat_clear(&XT);
    return ans;
}

int ac_t2_sample_input(ac_mat *X, size_t d, size_t n, uint64_t seed, size_t k, ac_err *err)
{
    int st = ac_mat_init(X, d, n, err);
    if (!st)
        rng_vec(X->data, d * n, seed, STREAM_SAMPLE, k);
    return st;
}

/* The relative deviation r = ||g_V(X) - f_W(X)||_F / ||f_W(X)||_F of the
 * embedding check (r = 0 when g = f; +inf when f = 0 != g). */
typedef struct {
    const ac_mh *W, *V;
    const ac_mat *X;
    double diff_hi;   /* upper bound on ||g - f||_F from the last stage run */
} dev_ctx;

/* [lo, hi] for r from the bounds dlo <= ||g - f|| <= dhi, flo <= ||f|| <= fhi
 * (all >= 0), rounded outward. */
static void ratio_bounds(double dlo, double dhi, double flo, double fhi, double *lo, double *hi)
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

/* Stage 0: both layers enclosed (ac_mh_enclose); per entry the magnitude and
 * the mignitude of g - f and of f, then directed norms. */
static int dev_stage0(void *vc, double *lo, double *hi, ac_err *err)
{
    dev_ctx *c = vc;
    ac_imat F = {0}, G = {0};
    int st;
    *lo = 0;
    *hi = INFINITY;
    c->diff_hi = INFINITY;
    if ((st = ac_mh_enclose(&F, c->W, c->X, err)) || (st = ac_mh_enclose(&G, c->V, c->X, err))) {
        ac_imat_free(&F);
        return st;
    }
    size_t N = F.rows * F.cols, nn = N ? N : 1;
    double *dm = malloc(nn * sizeof(double)), *du = malloc(nn * sizeof(double));
    double *fm = malloc(nn * sizeof(double)), *fu = malloc(nn * sizeof(double));
    if (!dm || !du || !fm || !fu) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if (ac_imat_finite(&F) && ac_imat_finite(&G)) {
        for (size_t i = 0; i < N; i++) {
            double gl = ac_imat_lo(&G, i), gh = ac_imat_hi(&G, i);
            double fl = ac_imat_lo(&F, i), fh = ac_imat_hi(&F, i);
            double dl = ac_sub_dn(gl, fh), dh = ac_sub_up(gh, fl); /* g - f in [dl, dh] */
            dm[i] = dl > 0 ? dl : (dh < 0 ? -dh : 0.0);
            du[i] = fmax(fabs(dl), fabs(dh));
            fm[i] = fl > 0 ? fl : (fh < 0 ? -fh : 0.0);
            fu[i] = fmax(fabs(fl), fabs(fh));
        }
        double dhi = ac_norm2_up(du, N);
        c->diff_hi = dhi;
        ratio_bounds(norm2_dn(dm, N), dhi, norm2_dn(fm, N), ac_norm2_up(fu, N), lo, hi);
    }
out:
    free(dm);
    free(du);
    free(fm);
    free(fu);
    ac_imat_free(&F);
    ac_imat_free(&G);
    return st;
}

/* Ball stages: F, G in Arb from the exact doubles, then the quotient of the
 * Frobenius norms (an indeterminate ball when ||F|| contains 0). */
static int dev_ball(void *vc, long prec, mpfr_t lo, mpfr_t hi, ac_err *err)
{
    dev_ctx *c = vc;
    slong d = (slong)c->X->rows, n = (slong)c->X->cols;
    arb_mat_t X, F, G;
    arb_t nd, nf;
    arb_mat_init(X, d, n);
    arb_mat_init(F, d, n);
    arb_mat_init(G, d, n);
    arb_init(nd);
    arb_init(nf);
    ac_arb_mat_set_d(X, c->X->data, (size_t)d, (size_t)n);
    ac_mh_forward_arb(F, c->W, X, prec);
    ac_mh_forward_arb(G, c->V, X, prec);
    arb_mat_frobenius_norm(nf, F, prec);
    arb_mat_sub(G, G, F, prec);
    arb_mat_frobenius_norm(nd, G, prec);
    double dhi = ac_arb_hi(nd), dlo = ac_arb_lo(nd), flo = ac_arb_lo(nf), fhi = ac_arb_hi(nf);
    c->diff_hi = dhi;
    if (arb_is_zero(nd)) {
        mpfr_set_zero(lo, 1);
        mpfr_set_zero(hi, 1);
    } else if (arb_is_positive(nf)) {
        arb_div(nd, nd, nf, prec);
        ac_arb_get_interval_mpfr(lo, hi, nd);
        if (mpfr_sgn(lo) < 0)
            mpfr_set_zero(lo, 1);
    } else {
        /* ||f|| not certified positive: only the lower bound, through doubles */
        double l, h;
        ratio_bounds(dlo > 0 ? dlo : 0, dhi, flo > 0 ? flo : 0, fhi, &l, &h);
        mpfr_set_d(lo, l, MPFR_RNDD);
        mpfr_set_inf(hi, 1);
    }
    arb_clear(nd);
    arb_clear(nf);
    arb_mat_clear(X);
    arb_mat_clear(F);
    arb_mat_clear(G);
    (void)err;
    return AC_OK;
}

#define EMBED_QUANTITY "max over the samples of ||g_V(X) - f_W(X)||_F / ||f_W(X)||_F"

static int embed_check(ac_t2_embed_result *r, const ac_mh *W, const ac_mh *V, size_t n,
                       size_t samples, uint64_t seed, double tol, const ac_schedule *sched,
                       ac_err *err)
{
    int st;
    memset(r, 0, sizeof *r);
    r->verdict = AC_UNDECIDED;
    r->samples = samples;
    r->tol = tol;
    r->cert.verdict = AC_UNDECIDED;
    r->cert.stage = AC_STAGE_NONE;
    if (W->d != V->d || W->h != V->h)
        return ac_err_set(err, AC_EDATA, "embedding check: f_W and g_V differ in d or h");
    if (n == 0 || samples == 0)
        return ac_err_set(err, AC_EUSAGE, "embedding check needs n >= 1 and at least one sample");
    if (!(tol >= 0) || !isfinite(tol))
        return ac_err_set(err, AC_EUSAGE, "embedding check: tolerance %g must be finite and >= 0",
                          tol);
    if ((st = ac_t2_identical(&r->params_identical, W, V, err)))
        return st;
    ac_quantity q = {"||g_V(X) - f_W(X)||_F / ||f_W(X)||_F", dev_stage0, dev_ball, NULL, NULL,
                     "interval products in double (gamma_k bound) + rigorous softmax, directed "
                     "norms and quotient",
                     "Arb ball arithmetic from the exact doubles", NULL};
    ac_cert refute;
    int top_stage = AC_STAGE_NONE;
    long top_prec = 0;
    double max_lo = 0, max_hi = 0, secs = 0;
    memset(&refute, 0, sizeof refute);
    r->diff_hi = 0;
    for (size_t k = 0; k < samples; k++) {
        ac_mat X = {0};
        ac_cert c;
        if ((st = ac_t2_sample_input(&X, W->d, n, seed, k, err)))
            return st;
        /* exact: equal value paths and logit matrices, head by head => r = 0 */
        int agree = heads_agree_at(W, V, &X);
        /* certified enclosure of r (for an exact sample: a cross-check) */
        dev_ctx dc = {W, V, &X, INFINITY};
        q.ctx = &dc;
        st = ac_decide(&c, &q, AC_LE, tol, sched, err);
        ac_mat_free(&X);
        if (st)
            return st;
        secs += c.seconds;
        if (!(dc.diff_hi <= r->diff_hi))
            r->diff_hi = dc.diff_hi;
        if (agree != 1) {
            /* the max over the samples: an exactly equal sample contributes
             * its exact 0, the others their enclosure */
            if (c.lo > max_lo)
                max_lo = c.lo;
            if (!(c.hi <= max_hi))
                max_hi = c.hi;
            if (c.stage > top_stage || (c.stage == top_stage && c.prec > top_prec)) {
                top_stage = c.stage;
                top_prec = c.prec;
            }
        }
        if (agree == 1) {
            r->equal_samples++;
            r->within_samples++;
            if (c.verdict == AC_REFUTED)
                return ac_err_set(err, AC_EINTERNAL, "embedding check, sample %zu: exactly equal "
                                  "head by head but the enclosure of the deviation excludes 0 "
                                  "(report a bug)", k + 1);
        } else if (c.verdict == AC_PROVED) {
            r->within_samples++;
        } else if (c.verdict == AC_REFUTED) {
            if (!r->refuted_sample) {
                r->refuted_sample = k + 1;
                refute = c;
            }
        } else if (!r->undecided_sample) {
            r->undecided_sample = k + 1;
        }
    }
    r->rel_lo = max_lo;
    r->rel_hi = max_hi;
    r->exact = r->equal_samples == samples;
    if (r->refuted_sample) {
        r->verdict = AC_REFUTED;
        ac_cert_set(&r->cert, EMBED_QUANTITY, AC_LE, tol, refute.stage, refute.prec, refute.lo,
                    refute.hi, refute.method);
        r->cert.seconds = secs;
    } else if (r->exact) {
        r->verdict = AC_PROVED;
        ac_cert_set(&r->cert, EMBED_QUANTITY, AC_LE, tol, AC_STAGE_EXACT, 0, 0.0, 0.0,
                    "exact head-by-head equality at every sample (dyadic rationals): the "
                    "deviation is 0");
        r->cert.seconds = secs;
    } else {
        /* the enclosure of the max over the samples; an exactly equal sample
         * contributes its certified enclosure (which contains its true 0) */
        ac_cert_set(&r->cert, EMBED_QUANTITY, AC_LE, tol, top_stage, top_prec, max_lo, max_hi,
                    top_stage >= 1 ? q.method_ball : q.method0);
        r->cert.seconds = secs;
        r->verdict = r->within_samples == samples ? AC_PROVED : AC_UNDECIDED;
        if (r->verdict == AC_UNDECIDED)
            r->cert.verdict = AC_UNDECIDED;
        else if (r->cert.verdict != AC_PROVED)
            return ac_err_set(err, AC_EINTERNAL, "embedding check: every sample is within tol "
                              "but the combined enclosure [%g, %g] is not (report a bug)", max_lo,
                              max_hi);
    }
    char tb[32];
    snprintf(tb, sizeof tb, "%.3g", tol);
    if (r->verdict == AC_PROVED && r->exact)
        snprintf(r->summary, sizeof r->summary,
                 "g_V(X) = f_W(X) exactly on all %zu sample inputs (head by head: equal value "
                 "paths and equal logits), so ||g - f||_F <= tol ||f||_F with deviation 0; the "
                 "parameters %s", samples,
                 r->params_identical == 1 ? "are equal head by head, so g_V = f_W for every X"
                                          : "are not identical head by head");
    else if (r->verdict == AC_PROVED)
        snprintf(r->summary, sizeof r->summary,
                 "||g_V(X) - f_W(X)||_F <= %.3g ||f_W(X)||_F on all %zu sample inputs "
                 "(certified; tol = %s), %zu of them equal exactly; not exact: the parameters "
                 "are %s head by head (e.g. the double V rounds an irrational rescaling)",
                 r->rel_hi, samples, tb, r->equal_samples,
                 r->params_identical == 0 ? "not equal" : "not known to be equal");
    else if (r->verdict == AC_REFUTED)
        snprintf(r->summary, sizeof r->summary,
                 "at sample %zu the relative deviation ||g_V(X) - f_W(X)||_F / ||f_W(X)||_F >= "
                 "%.3g > tol = %s (certified): g_V is not the embedding of f_W to the precision "
                 "of the weights", r->refuted_sample, r->cert.lo, tb);
    else
        snprintf(r->summary, sizeof r->summary,
                 "%zu of %zu samples proved within tol = %s; sample %zu could neither be proved "
                 "within nor beyond it (relative deviation in [%.3g, %.3g]%s)", r->within_samples,
                 samples, tb, r->undecided_sample, r->rel_lo, r->rel_hi,
                 isinf(r->rel_hi) ? ": ||f_W(X)||_F is not certified positive, so no relative "
                                    "bound"
                 : sched && sched->n ? "" : "; no ball stage allowed");
    return AC_OK;
}

/* single-threaded BLAS, as ac_t2_separate */
int ac_t2_embed_check(ac_t2_embed_result *r, const ac_mh *W, const ac_mh *V, size_t n,
                      size_t samples, uint64_t seed, double tol, const ac_schedule *sched,
                      ac_err *err)
{
    int old = ac_blas_get_threads();
    ac_blas_set_threads(1);
    int st = embed_check(r, W, V, n, samples, seed, tol, sched, err);
    ac_blas_set_threads(old);
    return st;
}
