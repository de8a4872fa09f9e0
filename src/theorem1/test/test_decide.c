/* test_decide.c — Theorem 1: the exact decision and the threshold
 * head size (doc/mathematics.md §3.4, §3.5), the weights of rank dk built
 * from K Pi log(P) Pi, scale invariance, exact tol = 0 decisions and the
 * same result for any BLAS thread count.
 *
 * Oracles: the written weights recomputed in double (their error must lie
 * in the certified enclosure up to the recomputation's rounding, and never
 * below a certified lower bound on the distance); the unscaled instance for
 * the scaled ones; the exact structure of the inputs (dyadic P whose
 * columns sum to 1 exactly, X = 0). */
#include <config.h>

#include <math.h>
#include <string.h>

#include "attncheck/blas.h"
#include "attncheck/head.h"
#include "attncheck/linalg.h"
#include "attncheck/rng.h"
#include "attncheck/theorem1.h"
#include "testutil.h"

static void opts(ac_t1_opts *o, size_t dk)
{
    ac_t1_opts_default(o);
    o->dk = dk;
}

/* max|Softmax - P| of res's weights, recomputed in double. */
static double recomputed_error(const ac_t1_result *res, const ac_mat *X, const ac_mat *P)
{
    ac_mat S = {0};
    ck_assert(ac_head_softmax(&S, X, &res->Wk, &res->Wq, NULL) == AC_OK);
    double e = 0;
    for (size_t i = 0; i < P->rows * P->cols; i++) {
        ck_assert(isfinite(S.data[i]));
        e = fmax(e, fabs(S.data[i] - P->data[i]));
    }
    ac_mat_free(&S);
    return e;
}

/* rank X = n: dk = n - 1 is PROVED exactly with constructed weights, and for
 * a Dirichlet P dk = n - 2 is REFUTED; the threshold is n - 1 exactly. */
START_TEST(test_threshold_full_rank)
{
    for (size_t n = 2; n <= 16; n++) {
        ac_mat X = {0}, P = {0};
        ck_assert(ac_t1_generate(&X, &P, n + (n % 3), n, test_seed_value + n, NULL) == AC_OK);
        ac_t1_opts o;
        ac_t1_result res;
        opts(&o, n - 1);
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert_msg(res.exact == AC_PROVED && res.verdict == AC_PROVED, "n = %zu", n);
        ck_assert(res.Wk.rows == n - 1 && res.weights_cert.hi <= 1e-10);
        double e = recomputed_error(&res, &X, &P);
        ck_assert_msg(e <= res.weights_cert.hi + 64 * (double)n * AC_U, "n = %zu: %g", n, e);
        ck_assert_msg(res.threshold.hi == (long)(n > 1 ? n - 1 : 1), "n = %zu", n);
        ck_assert(!res.threshold.none && !res.threshold.if_any);
        if (n >= 3)
            ck_assert_msg(res.threshold.exact && res.threshold.lo == (long)n - 1, "n = %zu", n);
        ac_t1_result_free(&res);
        if (n >= 3) {
            opts(&o, n - 2);
            ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
            ck_assert_msg(res.exact == AC_REFUTED, "n = %zu, dk = n - 2", n);
            ck_assert(res.verdict != AC_PROVED && res.dist_lo > 0);
            ck_assert(res.lowrank_lo > 0);
            ck_assert(res.threshold.lo == (long)n - 1 && res.threshold.exact);
            /* soundness of the lower bound against the written head */
            ck_assert(recomputed_error(&res, &X, &P) >= res.dist_lo);
            ac_t1_result_free(&res);
        }
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* Scaling X by any nonzero factor changes nothing mathematically: the same
 * verdicts, exact answer and threshold; weights are finite or absent. */
START_TEST(test_scale_invariance)
{
    static const double scales[] = {0x1p-600, 0x1p600, 1e-160, 1e160, 1e-300, 1e-310};
    static const size_t dims[][3] = {{8, 8, 7}, {8, 8, 6}, {4, 8, 2}, {10, 6, 5}};
    for (size_t c = 0; c < sizeof dims / sizeof *dims; c++) {
        size_t d = dims[c][0], n = dims[c][1], dk = dims[c][2];
        ac_mat X = {0}, P = {0}, Xs = {0};
        ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + 17 * c, NULL) == AC_OK);
        ac_t1_opts o;
        ac_t1_result ref, res;
        opts(&o, dk);
        ck_assert(ac_t1_check(&ref, &X, &P, &o, NULL) == AC_OK);
        for (size_t k = 0; k < sizeof scales / sizeof *scales; k++) {
            ck_assert(ac_mat_copy(&Xs, &X, NULL) == AC_OK);
            for (size_t i = 0; i < d * n; i++)
                Xs.data[i] *= scales[k];
            ck_assert(ac_t1_check(&res, &Xs, &P, &o, NULL) == AC_OK);
            ck_assert_msg(res.verdict == ref.verdict && res.exact == ref.exact,
                          "case %zu, scale %g: verdict %d/%d, exact %d/%d", c, scales[k],
                          res.verdict, ref.verdict, res.exact, ref.exact);
            ck_assert_int_eq(res.rank, ref.rank);
            ck_assert(res.threshold.lo == ref.threshold.lo &&
                      res.threshold.hi == ref.threshold.hi);
            if (res.Wk.data) {
                for (size_t i = 0; i < res.Wk.rows * res.Wk.cols; i++)
                    ck_assert(isfinite(res.Wk.data[i]) && isfinite(res.Wq.data[i]));
                ck_assert(recomputed_error(&res, &Xs, &P) <=
                          res.weights_cert.hi + 64 * (double)n * AC_U);
            } else
                ck_assert(res.weights_unusable);
            ac_t1_result_free(&res);
            ac_mat_free(&Xs);
        }
        ac_t1_result_free(&ref);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* The weights and every bound are bit-identical for 1 and 3 BLAS threads. */
START_TEST(test_thread_identity)
{
    static const size_t dims[][3] = {{32, 48, 8}, {40, 40, 40}, {24, 24, 23}};
    int old = ac_blas_get_threads();
    for (size_t c = 0; c < sizeof dims / sizeof *dims; c++) {
        ac_mat X = {0}, P = {0};
        ck_assert(ac_t1_generate(&X, &P, dims[c][0], dims[c][1], 3 + c, NULL) == AC_OK);
        ac_t1_opts o;
        ac_t1_result r1, r3;
        opts(&o, dims[c][2]);
        ac_blas_set_threads(1);
        ck_assert(ac_t1_check(&r1, &X, &P, &o, NULL) == AC_OK);
        ac_blas_set_threads(3);
        ck_assert(ac_t1_check(&r3, &X, &P, &o, NULL) == AC_OK);
        ck_assert_int_eq(ac_blas_get_threads(), 3); /* restored */
        size_t len = r1.Wk.rows * r1.Wk.cols;
        ck_assert(r3.Wk.rows * r3.Wk.cols == len);
        ck_assert(memcmp(r1.Wk.data, r3.Wk.data, len * sizeof(double)) == 0);
        ck_assert(memcmp(r1.Wq.data, r3.Wq.data, len * sizeof(double)) == 0);
        ck_assert(r1.dist_lo == r3.dist_lo && r1.dist_hi == r3.dist_hi);
        ck_assert(r1.weights_cert.lo == r3.weights_cert.lo &&
                  r1.weights_cert.hi == r3.weights_cert.hi);
        ac_t1_result_free(&r1);
        ac_t1_result_free(&r3);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
    ac_blas_set_threads(old);
}
END_TEST

/* tol = 0 on exact inputs: P dyadic with columns summing to exactly 1. */
START_TEST(test_tol_zero_dyadic)
{
    ac_mat X = {0}, P = {0};
    ck_assert(ac_mat_init(&X, 3, 3, NULL) == AC_OK && ac_mat_init(&P, 3, 3, NULL) == AC_OK);
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 3; j++) {
            AC_MAT(&X, i, j) = i == j ? 1.0 : 0.0;
            AC_MAT(&P, i, j) = i == j ? 0.5 : 0.25;
        }
    ac_t1_opts o;
    ac_t1_result res;
    for (size_t dk = 1; dk <= 3; dk++) {
        opts(&o, dk);
        o.tol = 0;
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        /* log P = log 2 (-2 + I): K log P has rank 2, so dk = 2 = n - 1 is the threshold */
        ck_assert_int_eq(res.verdict, dk >= 2 ? AC_PROVED : AC_REFUTED);
        ck_assert_int_eq(res.exact, dk >= 2 ? AC_PROVED : AC_REFUTED);
        ck_assert(res.threshold.exact && res.threshold.lo == 2 && res.threshold.hi == 2);
        if (dk >= 2)
            ck_assert(res.dist_hi == 0 && res.norm_gap == 0);
        ac_t1_result_free(&res);
    }
    /* the same columns, off 1 by one unit in the last place: C(0) fails */
    AC_MAT(&P, 0, 0) = nextafter(0.5, 0);
    opts(&o, 3);
    o.tol = 0;
    ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
    ck_assert_int_eq(res.exact, AC_PROVED);
    ck_assert(res.norm_gap > 0 && res.verdict != AC_PROVED);
    ac_t1_result_free(&res);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

/* X = 0: the exact answer, the verdict and the threshold agree. */
START_TEST(test_zero_x)
{
    ac_mat X = {0}, P = {0};
    ck_assert(ac_mat_init(&X, 2, 4, NULL) == AC_OK && ac_mat_init(&P, 4, 4, NULL) == AC_OK);
    for (int variant = 0; variant < 2; variant++) {
        for (size_t i = 0; i < 16; i++)
            P.data[i] = 0.25;
        if (variant) {
            AC_MAT(&P, 0, 1) = 0.375;
            AC_MAT(&P, 1, 1) = 0.125;
        }
        ac_t1_opts o;
        ac_t1_result res;
        opts(&o, 1);
        o.tol = 0;
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert_int_eq(res.rank, 0);
        ck_assert_int_eq(res.exact, variant ? AC_REFUTED : AC_PROVED);
        ck_assert_int_eq(res.verdict, variant ? AC_REFUTED : AC_PROVED);
        ck_assert(res.threshold.none == variant);
        if (variant)
            ck_assert(res.dist_lo <= 0.125 && res.dist_hi >= 0.125 && res.dist_lo > 0.12);
        ck_assert(res.cert.method[0] && res.exact_method[0]);
        ac_t1_result_free(&res);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

/* rank X < n: 1 in the row space (a constant row) gives threshold <= r - 1,
 * and a P generated by a head of size r - 1 is reached by the constructed
 * weights; without 1 in the row space the bound is r. */
START_TEST(test_rank_deficient_row_space)
{
    for (int with_one = 0; with_one < 2; with_one++) {
        size_t d = 4, n = 9, r = 4;
        ac_mat X = {0}, P = {0}, dummy = {0};
        ck_assert(ac_t1_generate(&X, &dummy, d, n, test_seed_value + 5 + with_one, NULL) ==
                  AC_OK);
        if (with_one)
            for (size_t j = 0; j < n; j++)
                AC_MAT(&X, 0, j) = 1.0;
        ck_assert(ac_t1_generate_representable(&P, &X, r - 1, 11, NULL) == AC_OK);
        ac_t1_opts o;
        ac_t1_result res;
        opts(&o, r - 1);
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert_int_eq(res.rank, (long)r);
        ck_assert(res.threshold.if_any || res.threshold.none);
        if (!res.threshold.none)
            ck_assert_int_eq(res.threshold.hi, with_one ? (long)r - 1 : (long)r);
        ck_assert_msg(res.verdict == AC_PROVED, "with_one %d: %s", with_one, res.summary);
        ck_assert(recomputed_error(&res, &X, &P) <= res.weights_cert.hi + 1e-13);
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
        ac_mat_free(&dummy);
    }
}
END_TEST

/* An integer X of rank 3 whose columns are scaled by 2^+-1000: the exact
 * rank is found within the default budget. */
START_TEST(test_rank_columns_scaled)
{
    size_t d = 5, n = 6;
    ac_mat X = {0}, P = {0}, dummy = {0};
    static const int e[6] = {1000, -1000, 0, 500, -900, 3};
    ck_assert(ac_mat_init(&X, d, n, NULL) == AC_OK);
    test_rng g;
    test_rng_init(&g, 77);
    double B[5][3], C[3][6];
    ac_mat X0 = {0};
    ck_assert(ac_mat_init(&X0, d, n, NULL) == AC_OK);
    for (size_t i = 0; i < 5; i++)
        for (size_t k = 0; k < 3; k++)
            B[i][k] = floor(test_rng_range(&g, -5, 6));
    for (size_t k = 0; k < 3; k++)
        for (size_t j = 0; j < 6; j++)
            C[k][j] = floor(test_rng_range(&g, -5, 6));
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t k = 0; k < 3; k++)
                s += B[i][k] * C[k][j];
            AC_MAT(&X, i, j) = ldexp(s, e[j]);
            AC_MAT(&X0, i, j) = s;
        }
    long r0 = -1;
    ck_assert(ac_rank_exact(&X0, 0, &r0, NULL, NULL) == AC_OK && r0 >= 1 && r0 <= 3);
    ck_assert(ac_t1_generate(&dummy, &P, 1, n, 3, NULL) == AC_OK);
    ac_t1_opts o;
    ac_t1_result res;
    opts(&o, 2);
    ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
    ck_assert_int_eq(res.rank, r0); /* the rank of the unscaled integer matrix */
    ck_assert(res.cert.method[0]);
    ac_t1_result_free(&res);
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&dummy);
    ac_mat_free(&X0);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("theorem1_decide");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_threshold_full_rank);
    tcase_add_test(tc, test_scale_invariance);
    tcase_add_test(tc, test_thread_identity);
    tcase_add_test(tc, test_tol_zero_dyadic);
    tcase_add_test(tc, test_zero_x);
    tcase_add_test(tc, test_rank_deficient_row_space);
    tcase_add_test(tc, test_rank_columns_scaled);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
