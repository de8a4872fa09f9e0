/* test_pinv.c — t1_pinv (X^+ by one dgemm, Pi = X^+ X by one dsyrk)
 * against its reference twin t1_pinv_ref (the same sums in plain loops), on
 * tall, wide, square, rank-deficient and ill-conditioned X, with the rank
 * cut by r and by rel, and on the edge shapes 1 x 1 and r = 0; and X^+ X
 * against Pi. */
#include <config.h>

#include <math.h>
#include <string.h>

#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "theorem1/t1_impl.h"
#include "testutil.h"

/* max |A - B| over max |B| (0 when both are zero) */
static double rel_diff(const ac_mat *A, const ac_mat *B)
{
    double m = 0, s = 0;
    for (size_t i = 0; i < A->rows * A->cols; i++) {
        m = fmax(m, fabs(A->data[i] - B->data[i]));
        s = fmax(s, fabs(B->data[i]));
    }
    return s > 0 ? m / s : m;
}

START_TEST(test_pinv_twin)
{
    test_rng g;
    test_rng_init(&g, 41);
    /* d, n, rank of X (0: full), r passed, rel x 1e6 */
    static const size_t cases[][5] = {{1, 1, 0, 1, 0},    {5, 3, 0, 3, 0},     {3, 5, 0, 3, 0},
                                      {40, 17, 0, 17, 0}, {17, 40, 0, 17, 0},  {30, 30, 0, 10, 0},
                                      {64, 100, 0, 64, 0}, {50, 70, 7, 7, 0},  {129, 70, 0, 70, 1000},
                                      {20, 20, 0, 0, 0},  {33, 31, 12, 12, 0}};
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        size_t d = cases[t][0], n = cases[t][1], rk = cases[t][2], r = cases[t][3];
        double rel = (double)cases[t][4] * 1e-6;
        ac_mat X = {0}, Xp = {0}, Pi = {0}, Xr = {0}, Pr = {0};
        ck_assert(ac_mat_init(&X, d, n, NULL) == AC_OK);
        if (rk) { /* exact rank rk: a product of Gaussian d x rk and rk x n factors */
            ac_mat A = {0}, B = {0};
            ck_assert(ac_mat_init(&A, d, rk, NULL) == AC_OK && ac_mat_init(&B, rk, n, NULL) == AC_OK);
            for (size_t i = 0; i < d * rk; i++)
                A.data[i] = test_rng_gauss(&g);
            for (size_t i = 0; i < rk * n; i++)
                B.data[i] = test_rng_gauss(&g);
            ck_assert(ac_gemm(&X, AC_NOTRANS, &A, AC_NOTRANS, &B, NULL) == AC_OK);
            ac_mat_free(&A);
            ac_mat_free(&B);
        } else
            for (size_t i = 0; i < d * n; i++) /* columns of very different sizes when rel > 0 */
                X.data[i] = test_rng_gauss(&g) * (rel > 0 ? ldexp(1.0, -(int)(i % n) / 4) : 1.0);
        ck_assert(t1_pinv(&Xp, &Pi, &X, r, rel, NULL) == AC_OK);
        ck_assert(t1_pinv_ref(&Xr, &Pr, &X, r, rel, NULL) == AC_OK);
        ck_assert(Xp.rows == n && Xp.cols == d && Pi.rows == n && Pi.cols == n);
        double dx = rel_diff(&Xp, &Xr), dp = rel_diff(&Pi, &Pr);
        ck_assert_msg(dx <= 1e-12 && dp <= 1e-12, "case %zu: X^+ differs by %g, Pi by %g", t, dx,
                      dp);
        if (r == 0)
            for (size_t i = 0; i < n * n; i++)
                ck_assert(Pi.data[i] == 0 && Pr.data[i] == 0);
        /* Pi is symmetric, and X^+ X = Pi for the kept triplets */
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                ck_assert(AC_MAT(&Pi, i, j) == AC_MAT(&Pi, j, i));
        ac_mat K = {0};
        ck_assert(ac_mat_init(&K, n, n, NULL) == AC_OK);
        ck_assert(ac_gemm(&K, AC_NOTRANS, &Xp, AC_NOTRANS, &X, NULL) == AC_OK);
        ck_assert_msg(rel_diff(&K, &Pi) <= (rel > 0 ? 1e-3 : 1e-9), "case %zu: X^+ X is not Pi", t);
        /* without Pi: the same X^+ */
        ac_mat Xq = {0};
        ck_assert(t1_pinv(&Xq, NULL, &X, r, rel, NULL) == AC_OK);
        ck_assert(!memcmp(Xq.data, Xp.data, n * d * sizeof(double)));
        ac_mat_free(&Xq);
        ac_mat_free(&K);
        ac_mat_free(&X);
        ac_mat_free(&Xp);
        ac_mat_free(&Pi);
        ac_mat_free(&Xr);
        ac_mat_free(&Pr);
    }
}
END_TEST

/* t1_normalisation_gap_rows gives the bits of ac_t1_normalisation_gap:
 * columns normalised in double (some sum to exactly 1, some do not), some
 * made exact on purpose, widths around the block of 64 columns. */
START_TEST(test_normgap_rows)
{
    test_rng g;
    test_rng_init(&g, 42);
    static const size_t ns[] = {1, 2, 17, 63, 64, 65, 130, 200};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++)
        for (int kind = 0; kind < 3; kind++) {
            size_t n = ns[t];
            ac_mat P = {0};
            ck_assert(ac_mat_init(&P, n, n, NULL) == AC_OK);
            for (size_t i = 0; i < n * n; i++)
                P.data[i] = kind == 2 ? ldexp(test_rng_unif(&g) + 0.01, -(int)(i % 40))
                                      : test_rng_unif(&g) + 1e-3;
            ac_t1_normalize(&P);
            if (kind == 1) /* every third column exactly 1/n-free: powers of two summing to 1 */
                for (size_t j = 0; j < n; j += 3)
                    for (size_t i = 0; i < n; i++)
                        AC_MAT(&P, i, j) = i + 1 < n ? ldexp(1.0, -(int)(i + 1)) : ldexp(1.0, -(int)(n - 1));
            double a = t1_normalisation_gap_rows(&P), b = ac_t1_normalisation_gap(&P);
            ck_assert_msg(!memcmp(&a, &b, sizeof a), "n = %zu kind %d: %a vs %a", n, kind, a, b);
            ac_mat_free(&P);
        }
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("t1_pinv");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_pinv_twin);
    tcase_add_test(tc, test_normgap_rows);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
