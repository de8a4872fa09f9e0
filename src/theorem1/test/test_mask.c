/* test_t1_mask.c — Theorem 1 for masked heads and heads with biases
 * (doc/mathematics.md §3.8): the support of a mask, the validation of
 * masked instances, Lemma W's threshold on staircases (causal masks,
 * padding, both, no mask), its range elsewhere (sliding windows), the
 * biased class, the head size at a tolerance, scale invariance, the same
 * bits for any thread count, and an instance at several head sizes
 * answering as the one-shot functions, bit for bit.
 *
 * Oracles: the definition of the support; the generic values of Lemma W
 * (floor(n/2) for a causal mask, min(|V| - 1, n) for padding) that
 * Dirichlet columns reach with probability 1; exact rationals (power-of-two
 * P, where the threshold is exact); the unmasked route on the same instance
 * (a mask that hides nothing); the written weights recomputed in double
 * (their masked error must lie in the certificate up to the recomputation's
 * rounding, never below a certified lower bound); logits of known rank r
 * (a head of size r reaches P). */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/blas.h"
#include "attncheck/head.h"
#include "attncheck/interval.h"
#include "attncheck/rng.h"
#include "attncheck/theorem1.h"
#include "testutil.h"

/* P with Dirichlet(1, ..., 1) columns on the visible keys of om. */
static void dirichlet_on(ac_mat *P, const unsigned char *om, size_t n, uint64_t seed)
{
    ac_rng r;
    ac_mat_init(P, n, n, NULL);
    ac_rng_init(&r, seed, 5, 0);
    for (size_t j = 0; j < n; j++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            if (om[i * n + j])
                s += (AC_MAT(P, i, j) = ac_rng_gamma(&r, 1.0));
        for (size_t i = 0; i < n; i++)
            AC_MAT(P, i, j) /= s;
    }
}

/* Each visible column a dyadic partition of 1 (exact sums). */
static void dyadic_on(ac_mat *P, const unsigned char *om, size_t n, uint64_t seed)
{
    ac_rng r;
    ac_mat_init(P, n, n, NULL);
    ac_rng_init(&r, seed, 6, 0);
    for (size_t j = 0; j < n; j++) {
        size_t m = 0, idx[64];
        double col[64] = {1.0};
        size_t len = 1;
        for (size_t i = 0; i < n; i++)
            if (om[i * n + j])
                idx[m++] = i;
        while (len < m) {
            size_t k = ac_rng_below(&r, len);
            col[k] *= 0.5;
            col[len++] = col[k];
        }
        for (size_t t = 0; t < m; t++)
            AC_MAT(P, idx[t], j) = col[t];
    }
}

static void gaussian(ac_mat *X, size_t d, size_t n, uint64_t seed)
{
    ac_rng r;
    ac_mat_init(X, d, n, NULL);
    ac_rng_init(&r, seed, 7, 0);
    ac_rng_normal_fill(&r, X->data, d * n);
}

/* The support of m (omega), Gaussian X (d x n) and Dirichlet columns on it. */
static void instance(unsigned char *om, ac_mat *X, ac_mat *P, const ac_t1_mask *m, size_t d,
                     size_t n, uint64_t seed)
{
    ck_assert(ac_t1_mask_support(om, n, m, NULL) == AC_OK);
    gaussian(X, d, n, seed);
    dirichlet_on(P, om, n, seed);
}

/* The default options with a mask and a head size. */
static void mopts(ac_t1_opts *o, const ac_t1_mask *m, size_t dk)
{
    ac_t1_opts_default(o);
    o->mask = m;
    o->dk = dk;
}

/* max |Softmax_Omega - P| of the written weights, in double (with a bias
 * the weights are dk x (d + 1) and X gains a row of ones). */
static double recomputed_error(const ac_t1_result *res, const ac_mat *X, const ac_mat *P,
                               const unsigned char *om, int bias)
{
    ac_mat S = {0}, Xb = {0};
    const ac_mat *Xc = X;
    if (bias) {
        ac_mat_init(&Xb, X->rows + 1, X->cols, NULL);
        memcpy(Xb.data, X->data, X->rows * X->cols * sizeof(double));
        for (size_t j = 0; j < X->cols; j++)
            AC_MAT(&Xb, X->rows, j) = 1.0;
        Xc = &Xb;
    }
    ck_assert(ac_head_softmax_masked(&S, Xc, &res->Wk, &res->Wq, om, NULL) == AC_OK);
    double e = 0;
    for (size_t i = 0; i < P->rows * P->cols; i++)
        e = fmax(e, fabs(S.data[i] - P->data[i]));
    ac_mat_free(&S);
    ac_mat_free(&Xb);
    return e;
}

static void check_consistent(const ac_t1_result *res, const ac_mat *X, const ac_mat *P,
                             const unsigned char *om, int bias, const char *what)
{
    ck_assert_msg(res->dist_lo <= res->dist_hi, "%s: [%g, %g]", what, res->dist_lo, res->dist_hi);
    if (res->Wk.data && res->weights_cert.stage != AC_STAGE_NONE) {
        double e = recomputed_error(res, X, P, om, bias), slack = 64.0 * (double)X->cols * AC_U;
        ck_assert_msg(e <= res->weights_cert.hi + slack && e + slack >= res->weights_cert.lo,
                      "%s: recomputed %g outside [%g, %g]", what, e, res->weights_cert.lo,
                      res->weights_cert.hi);
        ck_assert_msg(e + slack >= res->dist_lo, "%s: weights %g below dist_lo %g", what, e,
                      res->dist_lo);
    }
    if (res->verdict == AC_PROVED)
        ck_assert(res->dist_hi <= res->cert.tau);
    if (res->verdict == AC_REFUTED)
        ck_assert(res->dist_lo > res->cert.tau);
}

/* ---- the support ------------------------------------------------------------ */

START_TEST(test_support)
{
    size_t n = 7;
    unsigned char om[49], valid[7] = {1, 0, 1, 1, 0, 1, 1}, keep[49];
    for (size_t i = 0; i < n * n; i++)
        keep[i] = (unsigned char)((i * 5 + 3) % 4 != 0 || i % 8 == 0);
    for (int causal = 0; causal < 2; causal++)
        for (size_t w = 0; w < 4; w++)
            for (int pad = 0; pad < 2; pad++)
                for (int kp = 0; kp < 2; kp++) {
                    ac_t1_mask m = {causal, w, pad ? valid : NULL, n, kp ? keep : NULL, n * n,
                                    NULL};
                    ac_err err;
                    int st = ac_t1_mask_support(om, n, &m, &err);
                    int none = 0;
                    for (size_t j = 0; j < n; j++) {
                        int any = 0;
                        for (size_t i = 0; i < n; i++) {
                            size_t dist = i > j ? i - j : j - i;
                            int v = !(causal && i > j) && !(w && dist >= w) &&
                                    !(pad && !valid[i]) && !(kp && !keep[i * n + j]);
                            any |= v;
                            if (st == AC_OK)
                                ck_assert(om[i * n + j] == v);
                        }
                        none |= !any;
                    }
                    ck_assert_msg((st == AC_EDATA) == none, "causal %d w %zu pad %d keep %d",
                                  causal, w, pad, kp);
                    if (st)
                        ck_assert(strstr(err.msg, "sees no key") != NULL);
                }
    ac_t1_mask bad = {0, 0, valid, 6, NULL, 0, "M.npy"};
    ac_err err;
    ck_assert(ac_t1_mask_support(om, n, &bad, &err) == AC_EDATA);
    ck_assert(strstr(err.msg, "M.npy") != NULL);
    ck_assert(ac_t1_mask_support(om, n, NULL, NULL) == AC_OK);
    for (size_t i = 0; i < n * n; i++)
        ck_assert(om[i] == 1);
}
END_TEST

/* Bad input names the file and the entry. */
START_TEST(test_validate_masked)
{
    size_t n = 5;
    unsigned char om[25];
    ac_t1_mask m = {1, 0, NULL, 0, NULL, 0, "causal"};
    ac_mat X = {0}, P = {0};
    instance(om, &X, &P, &m, n, n, test_seed_value);
    ac_err err;
    ck_assert(ac_t1_validate_masked(&X, "X.npy", &P, "P.npy", om, "causal", 2, &err) == AC_OK);
    AC_MAT(&P, 3, 1) = 1e-9; /* off the mask */
    ck_assert(ac_t1_validate_masked(&X, "X.npy", &P, "P.npy", om, "causal", 2, &err) == AC_EDATA);
    ck_assert(strstr(err.msg, "P.npy: entry (3, 1)") && strstr(err.msg, "masked"));
    AC_MAT(&P, 3, 1) = 0;
    double keep = AC_MAT(&P, 0, 2);
    AC_MAT(&P, 0, 2) = 0; /* on the mask */
    ck_assert(ac_t1_validate_masked(&X, "X.npy", &P, "P.npy", om, "causal", 2, &err) == AC_EDATA);
    ck_assert(strstr(err.msg, "entry (0, 2)") && strstr(err.msg, "visible"));
    AC_MAT(&P, 0, 2) = keep * 1.5; /* column 2 off 1 */
    ck_assert(ac_t1_validate_masked(&X, "X.npy", &P, "P.npy", om, "causal", 2, &err) == AC_EDATA);
    ck_assert(strstr(err.msg, "column 2"));
    AC_MAT(&P, 0, 2) = keep;
    /* ac_t1_check reports the same through opts->mask */
    ac_t1_opts o;
    ac_t1_result res;
    mopts(&o, &m, 2);
    AC_MAT(&P, 4, 0) = 0.25;
    ck_assert(ac_t1_check(&res, &X, &P, &o, &err) == AC_EDATA);
    ac_t1_result_free(&res);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

/* ---- Lemma W on staircases ----------------------------------------------------- */

/* A causal mask and Dirichlet columns: the threshold is floor(n/2) (Lemma W,
 * every block of full rank), exact PROVED there and REFUTED below; n = 1
 * and 2 included (one visible key: P = 1). */
START_TEST(test_causal_generic)
{
    for (size_t n = 1; n <= 12; n++) {
        unsigned char om[144];
        ac_t1_mask m = {1, 0, NULL, 0, NULL, 0, NULL};
        ac_mat X = {0}, P = {0};
        instance(om, &X, &P, &m, n + (n % 2), n, test_seed_value + n);
        long tau = (long)(n / 2);
        for (long dk = tau > 1 ? tau - 1 : 1; dk <= tau + 1; dk++) {
            ac_t1_opts o;
            ac_t1_result res;
            mopts(&o, &m, (size_t)dk);
            ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
            ck_assert(res.route == AC_T1_ROUTE_MASKED && res.staircase && res.nblocks == n);
            ck_assert_msg(res.threshold.exact && res.threshold.lo == (tau > 1 ? tau : 1),
                          "n = %zu: threshold [%ld, %ld]", n, res.threshold.lo,
                          res.threshold.hi);
            ac_verdict want = dk >= tau ? AC_PROVED : AC_REFUTED;
            ck_assert_msg(res.exact == want, "n = %zu, dk = %ld: exact %s", n, dk,
                          ac_verdict_name(res.exact));
            if (dk >= tau)
                ck_assert_msg(res.verdict == AC_PROVED && res.weights_cert.hi <= 1e-9,
                              "n = %zu, dk = %ld: weights %g", n, dk, res.weights_cert.hi);
            check_consistent(&res, &X, &P, om, 0, "causal");
            ac_t1_result_free(&res);
        }
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* Padding: the threshold is that of the visible keys alone, min(|V| - 1, n)
 * for Dirichlet columns; with a causal mask as well it is a staircase too. */
START_TEST(test_padding)
{
    size_t n = 9;
    unsigned char valid[9] = {1, 1, 0, 1, 0, 1, 1, 0, 1}, om[81];
    for (int causal = 0; causal < 2; causal++) {
        ac_t1_mask m = {causal, 0, valid, n, NULL, 0, NULL};
        ac_mat X = {0}, P = {0};
        instance(om, &X, &P, &m, n, n, test_seed_value + 40 + causal);
        ac_t1_opts o;
        ac_t1_result res;
        mopts(&o, &m, 3);
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert(res.staircase && res.threshold.exact);
        if (!causal) /* 6 valid keys: rank(K_V log P_V) = 5 */
            ck_assert_msg(res.threshold.lo == 5, "padding: %ld", res.threshold.lo);
        else /* a staircase of the 6 valid keys: floor(6/2) + 0 */
            ck_assert(res.threshold.lo >= 1 && res.threshold.lo <= 5);
        ck_assert(res.exact == (res.threshold.lo <= 3 ? AC_PROVED : AC_REFUTED));
        check_consistent(&res, &X, &P, om, 0, "padding");
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* A mask that hides nothing gives the unmasked answer: the threshold of
 * §3.5 (n - 1 for Dirichlet P) and the same exact verdicts. */
START_TEST(test_full_mask_is_unmasked)
{
    size_t n = 7;
    ac_t1_mask m = {0, n + 3, NULL, 0, NULL, 0, NULL};
    ac_mat X = {0}, P = {0};
    ck_assert(ac_t1_generate(&X, &P, n, n, test_seed_value + 3, NULL) == AC_OK);
    for (size_t dk = n - 2; dk <= n - 1; dk++) {
        ac_t1_opts o;
        ac_t1_result a, b;
        ac_t1_opts_default(&o);
        o.dk = dk;
        ck_assert(ac_t1_check(&a, &X, &P, &o, NULL) == AC_OK);
        o.mask = &m;
        ck_assert(ac_t1_check(&b, &X, &P, &o, NULL) == AC_OK);
        ck_assert(b.route == AC_T1_ROUTE_MASKED && b.staircase && b.nblocks == 1);
        ck_assert(a.exact == b.exact && a.threshold.lo == b.threshold.lo &&
                  a.threshold.hi == b.threshold.hi);
        ck_assert(b.threshold.lo == (long)n - 1);
        ac_t1_result_free(&a);
        ac_t1_result_free(&b);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

/* Power-of-two P: every rank exact (rationals), so the threshold is exact
 * whatever its value, and tol = 0 is decided. */
START_TEST(test_dyadic_exact)
{
    for (size_t n = 2; n <= 8; n++) {
        unsigned char om[64];
        ac_t1_mask m = {1, 0, NULL, 0, NULL, 0, NULL};
        ac_mat X = {0}, P = {0};
        ck_assert(ac_t1_mask_support(om, n, &m, NULL) == AC_OK);
        gaussian(&X, n, n, test_seed_value + 60 + n);
        dyadic_on(&P, om, n, test_seed_value + 60 + n);
        ac_t1_opts o;
        ac_t1_result res;
        mopts(&o, &m, 1);
        o.tol = 0;
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert_msg(res.threshold.exact, "n = %zu: [%ld, %ld]", n, res.threshold.lo,
                      res.threshold.hi);
        long tau = res.threshold.lo;
        ck_assert(tau >= 1 && tau <= (long)n / 2 + 1);
        ck_assert(res.exact == (tau <= 1 ? AC_PROVED : AC_REFUTED));
        ac_t1_result_free(&res);
        o.dk = (size_t)tau;
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert(res.exact == AC_PROVED && res.verdict == AC_PROVED && res.dist_hi == 0);
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* Under a mask the representable set is not closed (doc/mathematics.md
 * §3.8): causal n = 3, column 2 = (1/4, 3/4), column 3 = (1/4, 1/4, 1/2) has
 * least rank 2 exactly (the intersection K L({1,2},{3}) is 0), yet moving
 * P_13 makes it 1, so dist at dk = 1 is 0: exact REFUTED, C(0) never
 * REFUTED.  The entries are dyadic, so every column of the stored P sums to
 * 1 exactly (with 0.3 and 0.7 the stored column sums to 1 - 5.6e-17, and the
 * exact column-sum bound of §3.6 rightly gives dist >= 2.8e-17). */
START_TEST(test_not_closed)
{
    size_t n = 3;
    unsigned char om[9];
    ac_t1_mask m = {1, 0, NULL, 0, NULL, 0, NULL};
    ck_assert(ac_t1_mask_support(om, n, &m, NULL) == AC_OK);
    ac_mat X = {0}, P = {0};
    ac_mat_init(&X, n, n, NULL);
    ac_mat_init(&P, n, n, NULL);
    for (size_t i = 0; i < n; i++)
        AC_MAT(&X, i, i) = 1.0;
    double p[9] = {1, 0.25, 0.25, 0, 0.75, 0.25, 0, 0, 0.5};
    memcpy(P.data, p, sizeof p);
    ac_t1_opts o;
    ac_t1_result res;
    mopts(&o, &m, 1);
    o.tol = 0;
    ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
    ck_assert_msg(res.threshold.exact && res.threshold.lo == 2, "[%ld, %ld]", res.threshold.lo,
                  res.threshold.hi);
    ck_assert(res.exact == AC_REFUTED);
    ck_assert_msg(res.verdict != AC_REFUTED && res.dist_lo == 0, "dist_lo %g", res.dist_lo);
    ac_t1_result_free(&res);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

/* A sliding window is not a staircase: the threshold is a range with
 * lo >= 1 and hi = window - 1 (Lemma G), exact PROVED at hi with weights. */
START_TEST(test_band_range)
{
    size_t n = 10;
    for (size_t w = 2; w <= 5; w++) {
        unsigned char om[100];
        ac_t1_mask m = {1, w, NULL, 0, NULL, 0, NULL};
        ac_mat X = {0}, P = {0};
        instance(om, &X, &P, &m, n, n, test_seed_value + 80 + w);
        ac_t1_opts o;
        ac_t1_result res;
        mopts(&o, &m, w - 1);
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert(!res.staircase && strstr(res.support, "not a staircase"));
        ck_assert(res.threshold.hi == (long)w - 1 && res.threshold.lo >= 1 &&
                  res.threshold.lo <= res.threshold.hi);
        ck_assert(res.exact == AC_PROVED && res.verdict == AC_PROVED);
        check_consistent(&res, &X, &P, om, 0, "band");
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* ---- biases ------------------------------------------------------------------ */

/* rank X = n: a bias adds nothing (Lemma B), the same threshold; d < n:
 * biased heads are heads on [X; 1'], of rank d + 1; the weights written are
 * dk x (d + 1) and reproduce their certificate. */
START_TEST(test_bias)
{
    size_t n = 6;
    unsigned char om[36];
    ac_t1_mask m = {1, 0, NULL, 0, NULL, 0, NULL};
    ck_assert(ac_t1_mask_support(om, n, &m, NULL) == AC_OK);
    for (size_t d = 2; d <= n; d += n - 2) {
        ac_mat X = {0}, P = {0};
        gaussian(&X, d, n, test_seed_value + 90 + d);
        /* P from a biased head of size 2 */
        ac_mat Wk = {0}, Wq = {0}, Xb = {0}, S = {0};
        ac_mat_init(&Wk, 2, d + 1, NULL);
        ac_mat_init(&Wq, 2, d + 1, NULL);
        ac_rng r;
        ac_rng_init(&r, test_seed_value, 91, d);
        ac_rng_normal_fill(&r, Wk.data, 2 * (d + 1));
        ac_rng_normal_fill(&r, Wq.data, 2 * (d + 1));
        ac_mat_init(&Xb, d + 1, n, NULL);
        memcpy(Xb.data, X.data, d * n * sizeof(double));
        for (size_t j = 0; j < n; j++)
            AC_MAT(&Xb, d, j) = 1.0;
        ck_assert(ac_head_softmax_masked(&S, &Xb, &Wk, &Wq, om, NULL) == AC_OK);
        P = S;
        for (int bias = 0; bias < 2; bias++) {
            ac_t1_opts o;
            ac_t1_result res;
            ac_t1_opts_default(&o);
            o.mask = &m;
            o.bias = bias;
            o.dk = 2;
            ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
            ck_assert(res.bias == bias);
            ck_assert(res.rank == (long)(d + bias < n ? d + bias : n));
            if (res.Wk.data)
                ck_assert(res.Wk.cols == d + (size_t)bias && res.Wq.cols == d + (size_t)bias);
            check_consistent(&res, &X, &P, om, bias, "bias");
            if (bias) /* the generating head is a biased head of size 2 */
                ck_assert_msg(res.verdict == AC_PROVED, "d = %zu: %s", d, res.summary);
            ac_t1_result_free(&res);
        }
        ac_mat_free(&Wk);
        ac_mat_free(&Wq);
        ac_mat_free(&Xb);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* Without a mask, a bias is the unmasked route on [X; 1']: the same result
 * as passing [X; 1'] itself, and the weights written are dk x (d + 1). */
START_TEST(test_bias_unmasked)
{
    size_t d = 3, n = 6;
    ac_mat X = {0}, P = {0}, Xb = {0};
    ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + 7, NULL) == AC_OK);
    ac_mat_init(&Xb, d + 1, n, NULL);
    memcpy(Xb.data, X.data, d * n * sizeof(double));
    for (size_t j = 0; j < n; j++)
        AC_MAT(&Xb, d, j) = 1.0;
    ac_t1_opts o;
    ac_t1_result a, b;
    ac_t1_opts_default(&o);
    o.dk = 2;
    ck_assert(ac_t1_check(&a, &Xb, &P, &o, NULL) == AC_OK);
    o.bias = 1;
    ck_assert(ac_t1_check(&b, &X, &P, &o, NULL) == AC_OK);
    ck_assert(b.bias && b.d == d && b.rank == a.rank && b.exact == a.exact &&
              b.verdict == a.verdict && b.dist_lo == a.dist_lo && b.dist_hi == a.dist_hi);
    ck_assert(b.Wk.cols == d + 1);
    ac_t1_result_free(&a);
    ac_t1_result_free(&b);
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&Xb);
}
END_TEST

/* ---- the head size at a tolerance ---------------------------------------------- */

/* Causal patterns of rank-r logits on X = I: the head size at tol is r
 * exactly, and the head of size r - 1 is REFUTED with a certified
 * distance; without a mask on a representable P the same entry point
 * works. */
START_TEST(test_threshold_at_tol)
{
    size_t n = 14;
    unsigned char om[196];
    ac_t1_mask m = {1, 0, NULL, 0, NULL, 0, NULL};
    ck_assert(ac_t1_mask_support(om, n, &m, NULL) == AC_OK);
    for (size_t r = 1; r <= 4; r++) {
        ac_mat X = {0}, P = {0}, A = {0};
        ac_mat_init(&X, n, n, NULL);
        ac_mat_init(&P, n, n, NULL);
        ac_mat_init(&A, n, 2 * r, NULL);
        for (size_t i = 0; i < n; i++)
            AC_MAT(&X, i, i) = 1.0;
        ac_rng g;
        ac_rng_init(&g, test_seed_value, 100, r);
        ac_rng_normal_fill(&g, A.data, n * 2 * r);
        for (size_t j = 0; j < n; j++) {
            double mx = -INFINITY, s = 0;
            for (size_t i = 0; i <= j; i++) {
                double z = 0;
                for (size_t k = 0; k < r; k++)
                    z += 2.0 * AC_MAT(&A, i, k) * AC_MAT(&A, j, r + k);
                AC_MAT(&P, i, j) = z;
                mx = fmax(mx, z);
            }
            for (size_t i = 0; i <= j; i++)
                s += (AC_MAT(&P, i, j) = exp(AC_MAT(&P, i, j) - mx));
            for (size_t i = 0; i <= j; i++)
                AC_MAT(&P, i, j) /= s;
        }
        ac_t1_opts o;
        ac_t1_tol_threshold t;
        ac_t1_opts_default(&o);
        o.mask = &m;
        ck_assert(ac_t1_threshold_at_tol(&t, &X, &P, r > 1 ? r - 1 : 0, &o, NULL) == AC_OK);
        ck_assert_msg(t.exact && t.lo == (long)r && t.hi == (long)r, "r = %zu: [%ld, %ld] %s",
                      r, t.lo, t.hi, t.method);
        ck_assert(t.dk_max == n && t.nevals > 0);
        if (r > 1)
            ck_assert(t.dk_at == r - 1 && t.at_verdict == AC_REFUTED && t.at_lo > o.tol &&
                      t.at_lo <= t.at_hi);
        /* every evaluation agrees with the answer */
        for (size_t q = 0; q < t.nevals; q++) {
            if (t.eval[q].verdict == AC_PROVED)
                ck_assert(t.eval[q].dk >= t.hi);
            if (t.eval[q].verdict == AC_REFUTED)
                ck_assert(t.eval[q].dk < t.lo);
        }
        /* no mask: the same logits under the full softmax */
        for (size_t j = 0; j < n; j++) {
            double mx = -INFINITY, s = 0;
            for (size_t i = 0; i < n; i++) {
                double z = 0;
                for (size_t k = 0; k < r; k++)
                    z += 2.0 * AC_MAT(&A, i, k) * AC_MAT(&A, j, r + k);
                AC_MAT(&P, i, j) = z;
                mx = fmax(mx, z);
            }
            for (size_t i = 0; i < n; i++)
                s += (AC_MAT(&P, i, j) = exp(AC_MAT(&P, i, j) - mx));
            for (size_t i = 0; i < n; i++)
                AC_MAT(&P, i, j) /= s;
        }
        o.mask = NULL;
        ck_assert(ac_t1_threshold_at_tol(&t, &X, &P, 0, &o, NULL) == AC_OK);
        ck_assert_msg(t.exact && t.lo == (long)r, "no mask, r = %zu: [%ld, %ld] %s", r, t.lo,
                      t.hi, t.method);
        ac_mat_free(&X);
        ac_mat_free(&P);
        ac_mat_free(&A);
    }
}
END_TEST

/* ---- scale, degenerate X, threads ---------------------------------------------- */

/* X times 2^+-600 decides as X (exactly representable heads rescale), and
 * X with repeated columns (rank < n) is decided on its row space. */
START_TEST(test_scale_and_degenerate)
{
    size_t n = 6;
    unsigned char om[36];
    ac_t1_mask m = {1, 0, NULL, 0, NULL, 0, NULL};
    ac_mat X = {0}, P = {0};
    instance(om, &X, &P, &m, n, n, test_seed_value + 120);
    ac_t1_opts o;
    ac_t1_result a;
    mopts(&o, &m, 2);
    ck_assert(ac_t1_check(&a, &X, &P, &o, NULL) == AC_OK);
    for (int e = -600; e <= 600; e += 1200) {
        ac_mat Xs = {0};
        ac_t1_result b;
        ac_mat_copy(&Xs, &X, NULL);
        for (size_t i = 0; i < n * n; i++)
            Xs.data[i] = ldexp(Xs.data[i], e);
        ck_assert(ac_t1_check(&b, &Xs, &P, &o, NULL) == AC_OK);
        ck_assert(b.x_scale != 0 && b.exact == a.exact && b.threshold.lo == a.threshold.lo &&
                  b.threshold.hi == a.threshold.hi && b.rank == a.rank);
        ck_assert(b.verdict == a.verdict || b.weights_unusable);
        check_consistent(&b, &Xs, &P, om, 0, "scaled");
        ac_t1_result_free(&b);
        ac_mat_free(&Xs);
    }
    ac_t1_result_free(&a);
    /* repeated columns: tokens 4, 5 equal to 0, 1 */
    for (size_t i = 0; i < n; i++) {
        AC_MAT(&X, i, 4) = AC_MAT(&X, i, 0);
        AC_MAT(&X, i, 5) = AC_MAT(&X, i, 1);
    }
    ck_assert(ac_t1_check(&a, &X, &P, &o, NULL) == AC_OK);
    ck_assert(a.rank == 4);
    check_consistent(&a, &X, &P, om, 0, "repeated columns");
    ac_t1_result_free(&a);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

/* ---- one instance at several head sizes ----------------------------------------- */

/* Bitwise equality of doubles (NaN == NaN, -0 != +0). */
static int same_d(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static int same_cert(const ac_cert *a, const ac_cert *b)
{
    return a->verdict == b->verdict && !strcmp(a->quantity, b->quantity) && a->rel == b->rel &&
           same_d(a->tau, b->tau) && a->stage == b->stage && a->prec == b->prec &&
           a->stages_tried == b->stages_tried && same_d(a->lo, b->lo) && same_d(a->hi, b->hi) &&
           !strcmp(a->method, b->method); /* not seconds */
}

static int same_mat(const ac_mat *a, const ac_mat *b)
{
    return a->rows == b->rows && a->cols == b->cols && (a->data == NULL) == (b->data == NULL) &&
           (!a->data || !memcmp(a->data, b->data, a->rows * a->cols * sizeof(double)));
}

static int same_threshold(const ac_t1_threshold *a, const ac_t1_threshold *b)
{
    return a->lo == b->lo && a->hi == b->hi && a->none == b->none && a->if_any == b->if_any &&
           a->exact == b->exact && !strcmp(a->method, b->method);
}

/* Every member of two results but the times: which one differs (NULL: none). */
static const char *result_diff(const ac_t1_result *a, const ac_t1_result *b)
{
#define SAME(c, what) \
    if (!(c))         \
        return what;
    SAME(a->verdict == b->verdict && a->route == b->route && a->exact == b->exact, "verdicts");
    SAME(!strcmp(a->exact_method, b->exact_method), "exact_method");
    SAME(same_threshold(&a->threshold, &b->threshold), "threshold");
    SAME(a->x_scale == b->x_scale && a->weights_unusable == b->weights_unusable, "x_scale");
    SAME(a->d == b->d && a->n == b->n && a->dk == b->dk, "sizes");
    SAME(a->rank == b->rank && !strcmp(a->rank_method, b->rank_method), "rank");
    SAME(same_d(a->sigma_lo, b->sigma_lo) && same_d(a->norm_gap, b->norm_gap), "sigma, gap");
    SAME(same_d(a->rho_lo, b->rho_lo) && same_d(a->rho_hi, b->rho_hi), "rho");
    SAME(same_d(a->lowrank_lo, b->lowrank_lo) && same_d(a->lowrank_hi, b->lowrank_hi), "lowrank");
    SAME(same_d(a->dist_lo, b->dist_lo) && same_d(a->dist_hi, b->dist_hi), "dist");
    SAME(same_cert(&a->cert, &b->cert), "cert");
    SAME(same_cert(&a->weights_cert, &b->weights_cert), "weights_cert");
    SAME(same_cert(&a->user_cert, &b->user_cert), "user_cert");
    SAME(same_mat(&a->Wk, &b->Wk) && same_mat(&a->Wq, &b->Wq), "weights");
    SAME(a->nsteps == b->nsteps, "nsteps");
    for (size_t i = 0; i < a->nsteps; i++) {
        const ac_step *s = &a->steps[i], *t = &b->steps[i];
        SAME(!strcmp(s->name, t->name) && !strcmp(s->quantity, t->quantity) &&
                 same_d(s->lo, t->lo) && same_d(s->hi, t->hi) && s->stage == t->stage &&
                 s->prec == t->prec && !strcmp(s->note, t->note),
             "a step");
    }
    SAME(!strcmp(a->summary, b->summary) && !strcmp(a->lower_method, b->lower_method) &&
             !strcmp(a->upper_method, b->upper_method) && !strcmp(a->weights_head, b->weights_head),
         "summary or methods");
    SAME(a->rank_stage == b->rank_stage && a->rho_stage == b->rho_stage &&
             a->lowrank_stage == b->lowrank_stage && a->exact_stage == b->exact_stage &&
             a->lower_stage == b->lower_stage && a->rank_prec == b->rank_prec &&
             a->rho_prec == b->rho_prec && a->lowrank_prec == b->lowrank_prec &&
             a->exact_prec == b->exact_prec && a->lower_prec == b->lower_prec,
         "stages");
    SAME(a->refute_stage == b->refute_stage && a->refute_prec == b->refute_prec &&
             !strcmp(a->refute_method, b->refute_method),
         "refute");
    SAME(a->refine_iters == b->refine_iters && !strcmp(a->refine_stop, b->refine_stop), "refine");
    SAME(a->bias == b->bias && a->masked == b->masked && a->nvisible == b->nvisible &&
             a->staircase == b->staircase && a->nblocks == b->nblocks &&
             !strcmp(a->support, b->support),
         "support");
#undef SAME
    return NULL;
}

static int same_tol_threshold(const ac_t1_tol_threshold *a, const ac_t1_tol_threshold *b)
{
    int same = a->lo == b->lo && a->hi == b->hi && a->exact == b->exact &&
               a->dk_max == b->dk_max && !strcmp(a->method, b->method) &&
               same_threshold(&a->exact_rep, &b->exact_rep) && a->dk_at == b->dk_at &&
               a->at_verdict == b->at_verdict && same_d(a->at_lo, b->at_lo) &&
               same_d(a->at_hi, b->at_hi) && !strcmp(a->at_lower, b->at_lower) &&
               !strcmp(a->at_upper, b->at_upper) && a->nevals == b->nevals;
    for (size_t q = 0; same && q < a->nevals; q++)
        same = a->eval[q].dk == b->eval[q].dk && a->eval[q].verdict == b->eval[q].verdict &&
               same_d(a->eval[q].lo, b->eval[q].lo) && same_d(a->eval[q].hi, b->eval[q].hi);
    return same;
}

/* An instance answers as ac_t1_threshold_at_tol and ac_t1_check, bit for
 * bit, whatever the order of the calls and the sizes asked (again, above
 * rank X, the user's head, weights or not, BFGS or not), on every class:
 * causal, sliding window (not a staircase), padding, a boolean pattern, no
 * mask; biases; rank X = n, rank X < n (d < n, repeated tokens); X at 2^600. */
START_TEST(test_instance)
{
    const size_t n = 10;
    unsigned char valid[10], keep[100], om[100];
    for (size_t i = 0; i < n; i++)
        valid[i] = i % 4 != 2;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            keep[i * n + j] = i == j || (i * 7 + j * 3) % 5 != 0;
    const ac_t1_mask masks[] = {
        {1, 0, NULL, 0, NULL, 0, "causal"},     {1, 3, NULL, 0, NULL, 0, "window"},
        {0, 0, valid, n, NULL, 0, "padding"},   {0, 0, NULL, 0, keep, n * n, "pattern"},
        {1, 0, valid, n, NULL, 0, "causal+pad"}};
    const size_t nm = sizeof masks / sizeof masks[0];
    for (size_t cls = 0; cls < 4 * (nm + 1); cls++) {
        size_t mi = cls % (nm + 1), kind = cls / (nm + 1); /* mi = nm: no mask */
        const ac_t1_mask *m = mi < nm ? &masks[mi] : NULL;
        size_t d = kind == 1 ? 4 : n;
        uint64_t seed = test_seed_value + 900 + cls;
        ac_mat X = {0}, P = {0};
        ac_t1_mask full = {0, 0, NULL, 0, NULL, 0, NULL};
        if (kind == 3 && !m)
            continue;
        instance(om, &X, &P, m ? m : &full, d, n, seed);
        if (kind == 2) /* repeated tokens: rank X < n */
            for (size_t i = 0; i < d; i++) {
                AC_MAT(&X, i, 5) = AC_MAT(&X, i, 1);
                AC_MAT(&X, i, 8) = AC_MAT(&X, i, 3);
            }
        if (kind == 3)
            for (size_t i = 0; i < d * n; i++)
                X.data[i] = ldexp(X.data[i], 600);
        ac_t1_opts o;
        ac_t1_opts_default(&o);
        o.mask = m;
        o.bias = (cls & 1) != 0;
        o.optimize = 0;
        o.tol = 1e-3;
        ac_t1_instance *in = NULL;
        ck_assert(ac_t1_instance_init(&in, &X, &P, &o, NULL) == AC_OK);
        /* a check first on odd classes (the first call builds), else the threshold */
        size_t sizes[] = {3, 1, 3, 2 * n, 5, 2};
        for (int pass = 0; pass < 2; pass++) {
            if (pass == (int)(cls & 1)) {
                ac_t1_tol_threshold ta, tb;
                ck_assert(ac_t1_threshold_at_tol(&ta, &X, &P, 2, &o, NULL) == AC_OK);
                ck_assert(ac_t1_instance_threshold(&tb, in, 2, NULL) == AC_OK);
                ck_assert_msg(same_tol_threshold(&ta, &tb), "class %zu: the threshold differs "
                              "(seed %llu)", cls, (unsigned long long)test_seed_value);
                continue;
            }
            for (size_t q = 0; q < sizeof sizes / sizeof sizes[0]; q++) {
                ac_t1_opts oc = o;
                ac_mat uk = {0}, uq = {0};
                size_t dc = d + (size_t)o.bias;
                oc.dk = sizes[q];
                oc.want_weights = q != 4;
                oc.optimize = q == 5 ? 20 : 0;
                if (q == 2) { /* the user's head: a scaled identity block */
                    ac_mat_init(&uk, oc.dk, dc, NULL);
                    ac_mat_init(&uq, oc.dk, dc, NULL);
                    for (size_t i = 0; i < oc.dk && i < dc; i++)
                        AC_MAT(&uk, i, i) = AC_MAT(&uq, i, i) = 0.5;
                    oc.user_wk = &uk;
                    oc.user_wq = &uq;
                }
                ac_t1_result a, b;
                ck_assert(ac_t1_check(&a, &X, &P, &oc, NULL) == AC_OK);
                ck_assert(ac_t1_instance_check(&b, in, &oc, NULL) == AC_OK);
                const char *what = result_diff(&a, &b);
                ck_assert_msg(!what, "class %zu, dk %zu: %s differs (seed %llu)", cls, oc.dk,
                              what, (unsigned long long)test_seed_value);
                ac_t1_result_free(&a);
                ac_t1_result_free(&b);
                ac_mat_free(&uk);
                ac_mat_free(&uq);
            }
        }
        /* the options that shaped the instance cannot change */
        ac_t1_opts ob = o;
        ac_t1_result r;
        ob.bias = !o.bias;
        ck_assert(ac_t1_instance_check(&r, in, &ob, NULL) == AC_EUSAGE);
        ac_t1_result_free(&r);
        ob = o;
        ob.mask = mi < nm ? NULL : &masks[0];
        ck_assert(ac_t1_instance_check(&r, in, &ob, NULL) == AC_EUSAGE);
        ac_t1_result_free(&r);
        ac_t1_instance_free(in);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
    ac_t1_instance_free(NULL);
}
END_TEST

/* An instance reports the errors of the functions it stands for, at its
 * first call, and again at the next. */
START_TEST(test_instance_errors)
{
    size_t n = 4;
    unsigned char om[16];
    ac_t1_mask m = {1, 0, NULL, 0, NULL, 0, NULL};
    ac_mat X = {0}, P = {0};
    instance(om, &X, &P, &m, n, n, test_seed_value + 950);
    AC_MAT(&P, 1, 0) = 0.25; /* above the diagonal: hidden by the causal mask */
    ac_t1_opts o;
    mopts(&o, &m, 2);
    ac_t1_instance *in = NULL;
    ac_t1_tol_threshold t;
    ac_t1_result r;
    ac_err e1 = {0}, e2 = {0}, e3 = {0};
    ck_assert(ac_t1_instance_init(&in, &X, &P, &o, NULL) == AC_OK);
    ck_assert(ac_t1_threshold_at_tol(&t, &X, &P, 0, &o, &e1) == AC_EDATA);
    ck_assert(ac_t1_instance_threshold(&t, in, 0, &e2) == AC_EDATA);
    ck_assert(ac_t1_instance_check(&r, in, &o, &e3) == AC_EDATA);
    ac_t1_result_free(&r);
    ck_assert_msg(!strcmp(e1.msg, e2.msg) && !strcmp(e1.msg, e3.msg), "%s | %s | %s", e1.msg,
                  e2.msg, e3.msg);
    ac_t1_instance_free(in);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

/* The same bits with 1 and 2 threads (BLAS and OpenMP). */
START_TEST(test_threads)
{
    size_t n = 12;
    unsigned char om[144], valid[12];
    for (size_t i = 0; i < n; i++)
        valid[i] = i % 5 != 3;
    ac_t1_mask m = {1, 0, valid, n, NULL, 0, NULL};
    ac_mat X = {0}, P = {0};
    instance(om, &X, &P, &m, n, n, test_seed_value + 130);
    ac_t1_opts o;
    ac_t1_result a, b;
    mopts(&o, &m, 2);
    ac_blas_set_threads(1);
    ck_assert(ac_t1_check(&a, &X, &P, &o, NULL) == AC_OK);
    ac_blas_set_threads(2);
    ck_assert(ac_t1_check(&b, &X, &P, &o, NULL) == AC_OK);
    ck_assert(a.verdict == b.verdict && a.dist_lo == b.dist_lo && a.dist_hi == b.dist_hi);
    ck_assert(a.Wk.rows == b.Wk.rows && a.Wk.cols == b.Wk.cols);
    ck_assert(memcmp(a.Wk.data, b.Wk.data, a.Wk.rows * a.Wk.cols * sizeof(double)) == 0);
    ck_assert(memcmp(a.Wq.data, b.Wq.data, a.Wq.rows * a.Wq.cols * sizeof(double)) == 0);
    ac_t1_result_free(&a);
    ac_t1_result_free(&b);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("t1_mask");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_support);
    tcase_add_test(tc, test_validate_masked);
    tcase_add_test(tc, test_causal_generic);
    tcase_add_test(tc, test_padding);
    tcase_add_test(tc, test_full_mask_is_unmasked);
    tcase_add_test(tc, test_dyadic_exact);
    tcase_add_test(tc, test_not_closed);
    tcase_add_test(tc, test_band_range);
    tcase_add_test(tc, test_bias);
    tcase_add_test(tc, test_bias_unmasked);
    tcase_add_test(tc, test_threshold_at_tol);
    tcase_add_test(tc, test_scale_and_degenerate);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_instance);
    tcase_add_test(tc, test_instance_errors);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
