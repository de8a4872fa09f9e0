/* test_identity.c — Theorem 2's decisions that issue 9 asked for:
 * layers equal as functions but written differently are REFUTED (the
 * class-sum criterion, doc/mathematics.md §4.9), separation carries the
 * embedding check's tolerance, the certificate of the embedding check
 * encloses the max over its samples, equal-column X and huge logits are
 * certified (the identity f - g = (S_W - S_V) v 1', precision from the
 * magnitudes), the lower norm bound survives near-overflow outputs, the
 * signed-digit embedding is exact, and the audit's third gap. */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/ac_arb.h"
#include "core/ball.h"
#include "attention/multihead_arb.h"
#include "attncheck/theorem2.h"
#include "theorem2/t2_impl.h"
#include "testutil.h"

/* head i of P = head p[i] of L (all four matrices) */
static void permute_heads(ac_mh *P, const ac_mh *L, const size_t *p)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs;
    ck_assert(ac_mh_copy(P, L, NULL) == AC_OK);
    for (size_t i = 0; i < L->h; i++) {
        size_t j = p[i];
        memcpy(P->wq + i * hs * d, L->wq + j * hs * d, hs * d * sizeof(double));
        memcpy(P->wk + i * hs * d, L->wk + j * hs * d, hs * d * sizeof(double));
        memcpy(P->wv + i * hs * d, L->wv + j * hs * d, hs * d * sizeof(double));
        for (size_t r = 0; r < d; r++)
            memcpy(P->wo + r * hh + i * hs, L->wo + r * hh + j * hs, hs * sizeof(double));
    }
}

static ac_verdict verdict_of(const ac_mh *W, const ac_mh *V, size_t n, double tol, int *identical)
{
    ac_t2_opts o;
    ac_t2_result r;
    ac_t2_opts_default(&o);
    o.seed = test_seed_value;
    o.optimize = 5;
    o.tol = tol;
    ck_assert(ac_t2_separate(&r, W, V, n, &o, NULL) == AC_OK);
    ac_verdict v = r.verdict;
    if (identical)
        *identical = r.identical;
    ac_t2_result_free(&r);
    return v;
}

/* integer entries in [-3, 3]: exact products */
static void int_layer(ac_mh *L, size_t d, size_t h, size_t hs, test_rng *r)
{
    ck_assert(ac_mh_init(L, d, h, hs, NULL) == AC_OK);
    size_t N = 4 * h * hs * d;
    for (size_t i = 0; i < N; i++)
        L->params[i] = floor(test_rng_range(r, -3, 4));
}

START_TEST(test_equal_functions_refuted)
{
    test_rng r;
    test_rng_init(&r, 901);
    const size_t d = 8, h = 4, hs = 2, p[4] = {2, 0, 3, 1};
    int bad = 0, same;
    for (int t = 0; t < 6; t++) {
        ac_mh W, V, P;
        int_layer(&W, d, h, hs, &r);
        size_t n = 2 + (size_t)t % 3;
        /* permuted heads */
        permute_heads(&P, &W, p);
        bad += verdict_of(&W, &P, n, 0.0, &same) != AC_REFUTED || same != 1;
        ac_mh_free(&P);
        /* head 0 without a value path (Wv_0 = 0), other logits in V */
        memset(W.wv, 0, hs * d * sizeof(double));
        ck_assert(ac_mh_copy(&V, &W, NULL) == AC_OK);
        for (size_t k = 0; k < hs * d; k++)
            V.wq[k] = W.wq[k] + 1.0;
        permute_heads(&P, &V, p);
        bad += verdict_of(&W, &P, n, 0.0, &same) != AC_REFUTED || same != 1;
        ac_mh_free(&P);
        ac_mh_free(&V);
        /* heads 1 and 2 with equal logits and equal Wo: Wv_1 + B, Wv_2 - B */
        memcpy(W.wq + 2 * hs * d, W.wq + 1 * hs * d, hs * d * sizeof(double));
        memcpy(W.wk + 2 * hs * d, W.wk + 1 * hs * d, hs * d * sizeof(double));
        for (size_t rr = 0; rr < d; rr++)
            for (size_t c = 0; c < hs; c++)
                W.wo[rr * h * hs + 2 * hs + c] = W.wo[rr * h * hs + 1 * hs + c];
        ck_assert(ac_mh_copy(&V, &W, NULL) == AC_OK);
        for (size_t k = 0; k < hs * d; k++) {
            double b = k == 0 ? 1.0 : floor(test_rng_range(&r, -2, 3));
            V.wv[1 * hs * d + k] += b;
            V.wv[2 * hs * d + k] -= b;
        }
        bad += verdict_of(&W, &V, n, 0.0, &same) != AC_REFUTED || same != 1;
        /* the same split with different logits: S_W = S_V, so n = 1 is
         * REFUTED, while at n >= 2 the class sums differ and a difference
         * is certified */
        for (size_t k = 0; k < hs * d; k++)
            V.wq[2 * hs * d + k] += 1.0;
        for (size_t k = 0; k < hs * d; k++)
            W.wq[2 * hs * d + k] += 1.0;
        bad += verdict_of(&W, &V, 1, 0.0, &same) != AC_REFUTED || same != 1;
        bad += verdict_of(&W, &V, 2, 0.0, &same) != AC_PROVED || same != 0;
        ac_mh_free(&V);
        ac_mh_free(&W);
    }
    ck_assert_msg(bad == 0, "%d wrong verdicts", bad);
}
END_TEST

/* the same tolerance as the embedding check: f_W against its sqrt(2)
 * embedding is within the default tol on the embedding's samples, and yet
 * separated beyond it at a near-tie of two logits that fl(sqrt 2) breaks,
 * resolved at a saturating scale (doc/mathematics.md §4.10, "Within
 * reach"); at tol 0 at a generic X.  Layers that differ only in Wo by one
 * rounding are REFUTED by the bound over every X, r(X) <= ||(Vo - Wo) Wo^+||_F
 * (§4.10, "Within tol at every X"); rounded to float32, the bound is above
 * tol and a separation below it is found. */
START_TEST(test_separation_tolerance)
{
    ac_mh W, V;
    ck_assert(ac_mh_random(&W, 8, 4, 2, test_seed_value, 2, NULL) == AC_OK);
    ck_assert(ac_t2_embed(&V, &W, 4, NULL, 0, NULL) == AC_OK);
    int same;
    ck_assert_int_eq(verdict_of(&W, &V, 4, 0.0, &same), AC_PROVED);
    ck_assert_int_eq(same, 0);
    {
        ac_t2_opts o;
        ac_t2_result r;
        ac_t2_opts_default(&o);
        o.seed = test_seed_value;
        o.optimize = 5;
        ck_assert(ac_t2_separate(&r, &W, &V, 4, &o, NULL) == AC_OK);
        ck_assert_int_eq(r.verdict, AC_PROVED);
        ck_assert_int_eq(r.best.construction, AC_T2_CON_TIE);
        ck_assert(r.best.cert.lo > AC_T2_TOL_DEFAULT && r.nreach > 0 && r.logits_pair == 0);
        ac_t2_result_free(&r);
        ac_mh Vo;
        ck_assert(ac_mh_copy(&Vo, &W, NULL) == AC_OK);
        for (size_t k = 0; k < Vo.d * Vo.h * Vo.hs; k++)
            Vo.wo[k] = nextafter(Vo.wo[k], INFINITY);
        ck_assert(ac_t2_separate(&r, &W, &Vo, 3, &o, NULL) == AC_OK);
        /* only Wo differs: r(X) <= ||(Vo - Wo) Wo^+||_F at every X, a few ulps */
        ck_assert_int_eq(r.verdict, AC_REFUTED);
        ck_assert_int_eq(r.logits_pair, 1);
        ck_assert_int_eq(r.identical, 0);
        ck_assert(r.value_bound > 0 && r.value_bound < 1e3 * DBL_EPSILON);
        ck_assert(r.best.cert.hi == r.value_bound && r.best.cert.verdict == AC_REFUTED);
        ck_assert(strstr(r.summary, "differ only in the output projection") != NULL);
        ac_t2_result_free(&r);
        /* the same pair at tol 0: the bound does not decide; f_W(X) != g_V(X) at a
           generic X (certified) */
        o.tol = 0;
        ck_assert(ac_t2_separate(&r, &W, &Vo, 3, &o, NULL) == AC_OK);
        ck_assert_int_ne(r.verdict, AC_REFUTED);
        ck_assert(r.verdict != AC_PROVED || r.best.cert.lo <= r.value_bound);
        ac_t2_result_free(&r);
        o.tol = AC_T2_TOL_DEFAULT;
        /* Wo rounded to float32 (2^-24 relative): the bound is above tol and the
           separation is found at a generic X, below the bound */
        for (size_t k = 0; k < Vo.d * Vo.h * Vo.hs; k++)
            Vo.wo[k] = (double)(float)W.wo[k];
        ck_assert(ac_t2_separate(&r, &W, &Vo, 3, &o, NULL) == AC_OK);
        ck_assert_int_eq(r.verdict, AC_PROVED);
        ck_assert(r.value_bound > AC_T2_TOL_DEFAULT && r.best.cert.lo <= r.value_bound);
        ac_t2_result_free(&r);
        ac_mh_free(&Vo);
    }
    ac_t2_embed_result e;
    ck_assert(ac_t2_embed_check(&e, &W, &V, 4, 3, test_seed_value, AC_T2_TOL_DEFAULT, NULL,
                                NULL) == AC_OK);
    ck_assert_int_eq(e.verdict, AC_PROVED);
    ac_t2_opts o;
    ac_t2_result r;
    ac_t2_opts_default(&o);
    o.tol = -1;
    ck_assert_int_eq(ac_t2_separate(&r, &W, &V, 4, &o, NULL), AC_EUSAGE);
    ac_t2_result_free(&r);
    ac_mh_free(&V);
    ac_mh_free(&W);
}
END_TEST

/* issue 9: --embed --d 8 --h 4 --dp 4 --n 4 --tol 0: the certificate is the
 * enclosure of the max over the samples, checked against 512-bit balls */
START_TEST(test_embed_cert_is_the_max)
{
    ac_mh W, V;
    ck_assert(ac_t2_random_w(&W, 8, 4, 1, NULL) == AC_OK);
    ck_assert(ac_t2_embed(&V, &W, 4, NULL, 0, NULL) == AC_OK);
    ac_schedule sched = ac_schedule_default();
    ac_t2_embed_result e;
    ck_assert(ac_t2_embed_check(&e, &W, &V, 4, 3, 1, 0.0, &sched, NULL) == AC_OK);
    ck_assert_int_eq(e.verdict, AC_REFUTED);
    double mx = 0;
    for (size_t k = 0; k < 3; k++) {
        ac_mat X = {0};
        ck_assert(ac_t2_sample_input(&X, 8, 4, 1, k, NULL) == AC_OK);
        arb_mat_t Xa, F, G;
        arb_t nf, nd;
        arb_mat_init(Xa, 8, 4);
        arb_mat_init(F, 8, 4);
        arb_mat_init(G, 8, 4);
        arb_init(nf);
        arb_init(nd);
        ac_arb_mat_set_d(Xa, X.data, 8, 4);
        ac_mh_forward_arb(F, &W, Xa, 512);
        ac_mh_forward_arb(G, &V, Xa, 512);
        arb_mat_frobenius_norm(nf, F, 512);
        arb_mat_sub(G, G, F, 512);
        arb_mat_frobenius_norm(nd, G, 512);
        arb_div(nd, nd, nf, 512);
        double v = arf_get_d(arb_midref(nd), ARF_RND_NEAR);
        if (v > mx)
            mx = v;
        arb_mat_clear(Xa);
        arb_mat_clear(F);
        arb_mat_clear(G);
        arb_clear(nf);
        arb_clear(nd);
        ac_mat_free(&X);
    }
    ck_assert_msg(e.cert.lo <= mx * (1 + 1e-12) && mx <= e.cert.hi * (1 + 1e-12),
                  "max %g outside the certificate [%g, %g]", mx, e.cert.lo, e.cert.hi);
    ck_assert(e.rel_lo <= mx * (1 + 1e-12) && mx <= e.rel_hi * (1 + 1e-12));
    ac_mh_free(&V);
    ac_mh_free(&W);
}
END_TEST

/* case 1 with huge logits and tiny outputs: equal-column X certified
 * through the identity; the embedding with logits ~1e320 proved with the
 * default schedule (a stage from the magnitudes) */
START_TEST(test_huge_scales)
{
    ac_mh V, W;
    ck_assert(ac_t2_generate_v(&V, 8, 2, 8, AC_T2_GEN_GAUSSIAN, test_seed_value, NULL) == AC_OK);
    ck_assert(ac_t2_generate_w(&W, &V, 1, test_seed_value, NULL) == AC_OK);
    size_t nq = W.h * W.hs * W.d;
    for (size_t k = 0; k < nq; k++) {
        W.wq[k] *= 1e160;
        W.wk[k] *= 1e160;
    }
    ck_assert_int_eq(verdict_of(&W, &V, 3, AC_T2_TOL_DEFAULT, NULL), AC_PROVED);
    ac_schedule sched = ac_schedule_default();
    ac_schedule a = t2_sched_adapt(&sched, &W, &V, &(ac_mat){8, 3, (double[24]){1}});
    ck_assert(a.prec[a.n - 1] > 1024 && a.prec[a.n - 1] <= T2_PREC_CAP);
    ac_mh E;
    ck_assert(ac_t2_embed(&E, &W, 8, NULL, 0, NULL) == AC_OK);
    ac_t2_embed_result e;
    ck_assert(ac_t2_embed_check(&e, &W, &E, 3, 3, test_seed_value, AC_T2_TOL_DEFAULT, &sched,
                                NULL) == AC_OK);
    ck_assert_msg(e.verdict == AC_PROVED, "%s", e.summary);
    ac_mh_free(&E);
    for (size_t k = 0; k < W.d * W.h * W.hs; k++)
        W.wo[k] *= 1e-320;
    ck_assert_int_eq(verdict_of(&W, &V, 3, AC_T2_TOL_DEFAULT, NULL), AC_PROVED);
    ac_mh_free(&V);
    ac_mh_free(&W);
}
END_TEST

/* the lower bound on a norm is near the truth at both ends of the range */
START_TEST(test_norm2_dn_scaled)
{
    double big[4] = {1e308, 1e308, 1e308, 1e308}, tiny[3] = {3e-320, 4e-320, 0};
    double lb = t2_norm2_dn(big, 4);
    ck_assert(isfinite(lb) && lb > 0.99 * DBL_MAX && lb <= DBL_MAX); /* truth 2e308 */
    double lt = t2_norm2_dn(tiny, 3);
    ck_assert(lt <= 5e-320 && lt >= 4.9e-320);
    double m[2] = {3, 4};
    ck_assert(t2_norm2_dn(m, 2) <= 5.0 && t2_norm2_dn(m, 2) > 5.0 * (1 - 1e-15));
}
END_TEST

/* signed binary digits: s = 3/2 (d/h = 4, dp = 9) and 7/4 (d/h = 16,
 * dp = 49) are exact; s = 11/8 with d/h = 64, dp = 121 is not (3 digits
 * need 192 rows) */
START_TEST(test_embed_signed_digits)
{
    const size_t cfg[3][3] = {{8, 2, 9}, {32, 2, 49}, {128, 2, 121}};
    for (int t = 0; t < 3; t++) {
        ac_mh W, V;
        char note[AC_T2_EMBED_NOTE_LEN];
        ck_assert(ac_mh_random(&W, cfg[t][0], cfg[t][1], cfg[t][0] / cfg[t][1],
                               test_seed_value + (uint64_t)t, 2, NULL) == AC_OK);
        ck_assert(ac_t2_embed(&V, &W, cfg[t][2], note, sizeof note, NULL) == AC_OK);
        int same;
        ck_assert(ac_t2_identical(&same, &W, &V, NULL) == AC_OK);
        ck_assert_msg(same == (t < 2), "%zu/%zu/%zu: identical %d (%s)", cfg[t][0], cfg[t][1],
                      cfg[t][2], same, note);
        if (t == 2)
            ck_assert(strstr(note, "192 rows > dp = 121"));
        ac_mh_free(&V);
        ac_mh_free(&W);
    }
}
END_TEST

/* the third gap on the case-3 instance of the CLI (d 16, h 4, dp 8, seed 1) */
START_TEST(test_audit_gap3)
{
    ac_mh V, W;
    ck_assert(ac_t2_generate_v(&V, 16, 4, 8, AC_T2_GEN_SKEW, 1, NULL) == AC_OK);
    ck_assert(ac_t2_generate_w(&W, &V, 3, 1, NULL) == AC_OK);
    ac_t2_opts o;
    ac_t2_result r;
    ac_t2_opts_default(&o);
    o.optimize = 0;
    o.audit = 1;
    ck_assert(ac_t2_separate(&r, &W, &V, 4, &o, NULL) == AC_OK);
    ck_assert_int_eq(r.cls.kase, AC_T2_CASE_3);
    ck_assert_msg(r.audit.v2null == AC_PROVED, "%s", r.audit.v2_note);
    ck_assert(r.audit.v2_mnorm > 0 && r.audit.v2_v && r.audit.v2_len == 16);
    ck_assert(r.audit.v2_rounded < 1e-12);
    ck_assert(r.audit.dep_vec && r.audit.dep_len == 16);
    ac_t2_result_free(&r);
    ac_mh_free(&V);
    ac_mh_free(&W);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("theorem2_identity");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_equal_functions_refuted);
    tcase_add_test(tc, test_separation_tolerance);
    tcase_add_test(tc, test_embed_cert_is_the_max);
    tcase_add_test(tc, test_huge_scales);
    tcase_add_test(tc, test_norm2_dn_scaled);
    tcase_add_test(tc, test_embed_signed_digits);
    tcase_add_test(tc, test_audit_gap3);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
