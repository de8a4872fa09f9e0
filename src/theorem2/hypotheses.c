/* hypotheses.c — Theorem 2 of paper 1: the exact decisions on an instance
 * (doc/mathematics.md §4.9): the shapes, the hypotheses (sizes, rank S_V = d,
 * U_i = U, rank U = dp), the head-by-head identity of f_W and g_V, and the
 * case of the proof (paper 1, Theorem 2, cases 1, 2, 3).  Products of doubles
 * are computed exactly as dyadic rationals (dyadic.h,
 * doc/mathematics.md §2.6); the irrational factors 1/sqrt(dp), 1/sqrt(d/h) are compared through
 * squares. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ball.h"
#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "t2_impl.h"

/* ---- exact parts of a layer (dyadic.h) ------------------------------------ */

/* x = a b for the a_rows x a_cols block a (row stride lda, transposed if ta)
 * and the b_rows x b_cols block b (row stride ldb) */
static int x_product(ac_xmat *x, const double *a, size_t a_rows, size_t a_cols, size_t lda,
                     int ta, const double *b, size_t b_rows, size_t b_cols, size_t ldb)
{
    ac_xmat A, B;
    int st = ac_xmat_from_d(&A, a, a_rows, a_cols, lda, ta, T2_X_BITS);
    if (st)
        return st;
    if ((st = ac_xmat_from_d(&B, b, b_rows, b_cols, ldb, 0, T2_X_BITS))) {
        ac_xmat_clear(&A);
        return st;
    }
    ac_xmat_mul(x, &A, &B);
    ac_xmat_clear(&A);
    ac_xmat_clear(&B);
    return AC_XMAT_OK;
}

int t2_x_S(ac_xmat *S, const ac_mh *L)
{
    size_t d = L->d, hh = L->h * L->hs;
    return x_product(S, L->wo, d, hh, hh, 0, L->wv, hh, d, d);
}

int t2_x_qk(ac_xmat *A, const ac_mh *L, size_t i)
{
    size_t d = L->d, hs = L->hs;
    return x_product(A, L->wk + i * hs * d, hs, d, d, 1, L->wq + i * hs * d, hs, d, d);
}

int t2_x_ov(ac_xmat *A, const ac_mh *L, size_t i)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs;
    return x_product(A, L->wo + i * hs, d, hs, hh, 0, L->wv + i * hs * d, hs, d, d);
}

int t2_x_pair(ac_xmat *a, ac_xmat *b, t2_x_part part, const ac_mh *W, const ac_mh *V, size_t i)
{
    if (part(a, W, i) != AC_XMAT_OK)
        return 0;
    if (part(b, V, i) != AC_XMAT_OK) {
        ac_xmat_clear(a);
        return 0;
    }
    return 1;
}

/* ---- shapes ---------------------------------------------------------------- */

int ac_t2_validate_w(const ac_mh *W, const char *wname, ac_err *err)
{
    if (W->h * W->hs != W->d)
        return ac_err_set(err, AC_EDATA, "%s: f_W has h = %zu heads of size %zu but d = %zu; a "
                          "standard MultiHead layer has head size d/h", wname, W->h, W->hs, W->d);
    return AC_OK;
}

int ac_t2_validate(const ac_mh *W, const char *wname, const ac_mh *V, const char *vname,
                   ac_err *err)
{
    int st;
    if (!W->params || !V->params)
        return ac_err_set(err, AC_EUSAGE, "Theorem 2 check: a layer is empty");
    if ((st = ac_t2_validate_w(W, wname, err)))
        return st;
    if (V->d != W->d)
        return ac_err_set(err, AC_EDATA, "%s: g_V has d = %zu but f_W (%s) has d = %zu", vname,
                          V->d, wname, W->d);
    if (V->h != W->h)
        return ac_err_set(err, AC_EDATA, "%s: g_V has h = %zu heads but f_W (%s) has %zu; "
                          "Theorem 2 compares layers with the same number of heads", vname, V->h,
                          wname, W->h);
    return AC_OK;
}

/* ---- the hypotheses (paper 1, Theorem 2) ----------------------------------- */

/* n >= 2, d >= dp, h dp > d, h divides d (exact integers) */
static void hyp_sizes(ac_t2_hyp *hyp)
{
    size_t n = hyp->n, d = hyp->d, h = hyp->h, dp = hyp->dp;
    int ok_n = n >= 2, ok_d = d >= dp, ok_h = h * dp > d, ok_div = d % h == 0;
    snprintf(hyp->sizes_note, sizeof hyp->sizes_note,
             "n = %zu %s 2%s, d = %zu %s dp = %zu%s, h dp = %zu %s d%s, h = %zu %s d%s", n,
             ok_n ? ">=" : "<", ok_n ? "" : " (fails)", d, ok_d ? ">=" : "<", dp,
             ok_d ? "" : " (fails)", h * dp, ok_h ? ">" : "<=", ok_h ? "" : " (fails: h <= d/dp)",
             h, ok_div ? "divides" : "does not divide", ok_div ? "" : " (fails: no head size d/h)");
    hyp->sizes = (ok_n && ok_d && ok_h && ok_div) ? AC_PROVED : AC_REFUTED;
}

/* rank S_V = d when S_V is too wide for exact arithmetic: a Weyl bound
 * around an SVD (doc/mathematics.md §2.5) */
static int hyp_sv_rank_weyl(ac_t2_hyp *hyp, const ac_mh *V, ac_err *err)
{
    size_t d = V->d, hh = V->h * V->hs;
    ac_imat O = {d, hh, V->wo, NULL}, Vv = {hh, d, V->wv, NULL}, Si = {0};
    double *lo = malloc(d * sizeof(double)), *hi = malloc(d * sizeof(double));
    int st = AC_OK;
    if (!lo || !hi)
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
    if (!st && !(st = ac_imat_init(&Si, d, d, 1, err)) &&
        !(st = ac_imat_mul(&Si, AC_NOTRANS, &O, AC_NOTRANS, &Vv, err)) &&
        !(st = ac_sv_enclose(&Si, lo, hi, NULL, err)) && lo[d - 1] > 0) {
        hyp->sv_rank = AC_PROVED;
        hyp->sv_rank_value = (long)d;
        char fb[AC_FMT_BOUND_BUFSIZE];
        snprintf(hyp->sv_method, sizeof hyp->sv_method, "Weyl bound: sigma_min(S_V) >= %s > 0",
                 ac_str_lo(fb, ".3g", lo[d - 1]));
    } else if (!st) {
        snprintf(hyp->sv_method, sizeof hyp->sv_method,
                 "not decided (entries too wide for exact rank, sigma_min not separated "
                 "from 0)");
    }
    ac_imat_free(&Si);
    free(lo);
    free(hi);
    return st;
}

/* hypothesis (i): rank S_V = d, exactly (modulo a prime, then over Q) */
static int hyp_sv_rank(ac_t2_hyp *hyp, const ac_mh *V, ac_err *err)
{
    size_t d = V->d;
    ac_xmat S;
    hyp->sv_rank = AC_UNDECIDED;
    if (t2_x_S(&S, V) != AC_XMAT_OK)
        return hyp_sv_rank_weyl(hyp, V, err);
    slong rk = ac_xmat_rank_modp(&S);
    if (rk == (slong)d) {
        hyp->sv_rank = AC_PROVED;
        hyp->sv_rank_value = (long)d;
        snprintf(hyp->sv_method, sizeof hyp->sv_method, "exact: rank modulo a 61-bit prime is d");
    } else {
        rk = ac_xmat_rank(&S);
        hyp->sv_rank_value = (long)rk;
        hyp->sv_rank = rk == (slong)d ? AC_PROVED : AC_REFUTED;
        snprintf(hyp->sv_method, sizeof hyp->sv_method, "exact rank over Q (FLINT)");
    }
    ac_xmat_clear(&S);
    return AC_OK;
}

/* hypothesis (ii), first half: U_i = U_1 for every head.  U1 receives U_1
 * (returns 1) unless it is too wide (returns 0). */
static int hyp_u_shared(ac_t2_hyp *hyp, ac_xmat *U1, const ac_mh *V)
{
    ac_xmat Ui;
    hyp->u_shared = AC_UNDECIDED;
    if (t2_x_qk(U1, V, 0) != AC_XMAT_OK)
        return 0;
    hyp->u_shared = AC_PROVED;
    for (size_t i = 1; i < V->h; i++) {
        if (t2_x_qk(&Ui, V, i) != AC_XMAT_OK) {
            hyp->u_shared = AC_UNDECIDED;
            break;
        }
        int eq = ac_xmat_equal(&Ui, U1);
        ac_xmat_clear(&Ui);
        if (!eq) {
            hyp->u_shared = AC_REFUTED;
            hyp->u_first_bad = i + 1;
            break;
        }
    }
    return 1;
}

/* hypothesis (ii), second half: rank U_1 = dp; rank Vk_1' Vq_1 = dp when both
 * factors have rank dp, else the exact rank of U1 (when have_u1) */
static void hyp_u_rank(ac_t2_hyp *hyp, const ac_mh *V, const ac_xmat *U1, int have_u1)
{
    size_t d = V->d, dp = V->hs;
    hyp->u_rank = AC_UNDECIDED;
    if (dp > d) {
        hyp->u_rank = AC_REFUTED;
        snprintf(hyp->u_method, sizeof hyp->u_method, "U is d x d with d < dp");
        return;
    }
    ac_xmat K1, Q1;
    int okk = ac_xmat_from_d(&K1, V->wk, dp, d, d, 0, T2_X_BITS) == AC_XMAT_OK;
    int okq = okk && ac_xmat_from_d(&Q1, V->wq, dp, d, d, 0, T2_X_BITS) == AC_XMAT_OK;
    if (okq && ac_xmat_rank_modp(&K1) == (slong)dp && ac_xmat_rank_modp(&Q1) == (slong)dp) {
        hyp->u_rank = AC_PROVED;
        hyp->u_rank_value = (long)dp;
        snprintf(hyp->u_method, sizeof hyp->u_method,
                 "exact: Vk_1, Vq_1 have rank dp modulo a prime");
    } else if (have_u1) {
        slong rk = ac_xmat_rank(U1);
        hyp->u_rank_value = (long)rk;
        hyp->u_rank = rk == (slong)dp ? AC_PROVED : AC_REFUTED;
        snprintf(hyp->u_method, sizeof hyp->u_method, "exact rank over Q (FLINT)");
    }
    if (okk)
        ac_xmat_clear(&K1);
    if (okq)
        ac_xmat_clear(&Q1);
}

int ac_t2_hypotheses(ac_t2_hyp *hyp, const ac_mh *V, size_t n, ac_err *err)
{
    ac_xmat U1;
    int st;
    memset(hyp, 0, sizeof *hyp);
    hyp->d = V->d;
    hyp->h = V->h;
    hyp->dp = V->hs;
    hyp->n = n;
    hyp->sv_rank_value = hyp->u_rank_value = -1;
    hyp_sizes(hyp);
    if ((st = hyp_sv_rank(hyp, V, err)))
        return st;
    int have_u1 = hyp_u_shared(hyp, &U1, V);
    hyp_u_rank(hyp, V, &U1, have_u1);
    if (have_u1)
        ac_xmat_clear(&U1);
    hyp->applies = ac_verdict_and(ac_verdict_and(hyp->sizes, hyp->sv_rank),
                                  ac_verdict_and(hyp->u_shared, hyp->u_rank));
    return AC_OK;
}

/* ---- identity and classification ------------------------------------------ */

/* Head i of f_W and of g_V: 1 equal (Vo_i Vv_i = Wo_i Wv_i and
 * U_i/sqrt(dp) = A_i/sqrt(dh)), 0 not, -1 too wide. */
static int head_identical(const ac_mh *W, const ac_mh *V, size_t i)
{
    ac_xmat a, b;
    int same = 1;
    if (!t2_x_pair(&a, &b, t2_x_ov, W, V, i))
        return -1;
    if (!ac_xmat_equal(&a, &b))
        same = 0;
    ac_xmat_clear(&a);
    ac_xmat_clear(&b);
    if (same != 1)
        return same;
    if (!t2_x_pair(&a, &b, t2_x_qk, W, V, i))
        return -1;
    /* U_i / sqrt(dp) = A_i / sqrt(dh)  <=>  sqrt(dh) U_i = sqrt(dp) A_i */
    if (!ac_xmat_scaled_equal(&b, (unsigned long)W->hs, &a, (unsigned long)V->hs))
        same = 0;
    ac_xmat_clear(&a);
    ac_xmat_clear(&b);
    return same;
}

int ac_t2_identical(int *same, const ac_mh *W, const ac_mh *V, ac_err *err)
{
    *same = 1;
    if (W->d != V->d || W->h != V->h) {
        *same = 0;
        return AC_OK;
    }
    for (size_t i = 0; i < W->h && *same == 1; i++)
        *same = head_identical(W, V, i);
    (void)err;
    return AC_OK;
}

/* S_W = S_V and U_i = U_1 for every head (U1 receives U_1): 1; otherwise 0
 * with cls->kase and cls->note set. */
static int classify_shared_u(ac_t2_class *cls, ac_xmat *U1, const ac_mh *V)
{
    if (t2_x_qk(U1, V, 0) != AC_XMAT_OK) {
        snprintf(cls->note, sizeof cls->note,
                 "S_W = S_V exactly; U has entries too wide to compare exactly");
        return 0;
    }
    for (size_t i = 1; i < V->h; i++) {
        ac_xmat Ui;
        if (t2_x_qk(&Ui, V, i) != AC_XMAT_OK) {
            ac_xmat_clear(U1);
            snprintf(cls->note, sizeof cls->note, "S_W = S_V exactly; U_%zu too wide", i + 1);
            return 0;
        }
        int same = ac_xmat_equal(&Ui, U1);
        ac_xmat_clear(&Ui);
        if (!same) {
            ac_xmat_clear(U1);
            cls->kase = AC_T2_CASE_NONE;
            snprintf(cls->note, sizeof cls->note,
                     "S_W = S_V exactly, but U_%zu != U_1: the paper's cases assume a shared U",
                     i + 1);
            return 0;
        }
    }
    return 1;
}

/* Cases 2 and 3 (paper 1, Theorem 2): count the heads whose
 * M_i + M_i' = (U + U')/sqrt(dp) - (A_i + A_i')/sqrt(d/h) is not 0; U1 is
 * cleared here.  Returns 0 when some A_i is too wide. */
static int classify_skew(ac_t2_class *cls, ac_xmat *U1, const ac_mh *W, const ac_mh *V)
{
    ac_xmat symU;
    ac_xmat_sym(&symU, U1);
    ac_xmat_clear(U1);
    int known = 1;
    for (size_t i = 0; i < W->h; i++) {
        ac_xmat A, symA;
        if (t2_x_qk(&A, W, i) != AC_XMAT_OK) {
            known = 0;
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
    return known;
}

int ac_t2_classify(ac_t2_class *cls, const ac_mh *W, const ac_mh *V, ac_err *err)
{
    ac_xmat SW, SV, U1;
    memset(cls, 0, sizeof *cls);
    cls->kase = AC_T2_CASE_UNKNOWN;
    cls->sw_equals_sv = AC_UNDECIDED;
    if (t2_x_S(&SW, W) != AC_XMAT_OK) {
        snprintf(cls->note, sizeof cls->note, "S_W has entries too wide to compare exactly");
        return AC_OK;
    }
    if (t2_x_S(&SV, V) != AC_XMAT_OK) {
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
    if (!classify_shared_u(cls, &U1, V))
        return AC_OK;
    if (!classify_skew(cls, &U1, W, V)) {
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
