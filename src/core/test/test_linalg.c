/* test_linalg.c — pseudo-inverses, certified singular values and exact rank.
 * Oracles: matrices with exactly known singular values (scaled Hadamard
 * factors, whose entries are dyadic so A is exact in double), exact rational
 * rank by construction, and a second algorithm (mod-p rank vs Q rank). */
#include <config.h>

#include <float.h>
#include <math.h>
#include <string.h>

#include "attncheck/linalg.h"
#include "testutil.h"

static void fill_gauss(ac_mat *A, test_rng *r)
{
    for (size_t i = 0; i < A->rows * A->cols; i++)
        A->data[i] = test_rng_gauss(r);
}

/* Sylvester Hadamard matrix of order n (power of 2) scaled by 1/sqrt(n):
 * orthogonal, entries +-2^-k/2... exact when n is a power of 4. */
static void hadamard(ac_mat *H, size_t n)
{
    ac_mat_init(H, n, n, NULL);
    double s = 1.0 / sqrt((double)n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            AC_MAT(H, i, j) = (__builtin_popcountll(i & j) & 1) ? -s : s;
}

START_TEST(test_pinv_fullcol)
{
    test_rng r;
    test_rng_init(&r, 21);
    static const size_t shapes[][2] = {{1, 1}, {5, 3}, {8, 8}, {40, 17}, {3, 0}, {2000, 2}, {300, 7}};
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++) {
        ac_mat X = {0}, Y = {0};
        ac_mat_init(&X, shapes[t][0], shapes[t][1], NULL);
        fill_gauss(&X, &r);
        ck_assert(ac_approx_pinv_fullcol(&Y, &X, NULL) == AC_OK);
        double qlo, qhi, slo;
        ck_assert(ac_cert_left_inverse(&Y, &X, &qlo, &qhi, &slo, NULL, NULL) == AC_OK);
        ck_assert_msg(qhi < 1e-10, "||YX - I|| <= %g for %zux%zu", qhi, X.rows, X.cols);
        ck_assert(qlo <= qhi);
        ck_assert(slo > 0);
        /* sigma_lo really is below the smallest singular value */
        if (X.cols > 0) {
            double s[64];
            ac_approx_svd_values(&X, s, NULL);
            ck_assert_msg(slo <= s[X.cols - 1] * (1 + 1e-10), "sigma_lo %g > sigma_min %g",
                          slo, s[X.cols - 1]);
        }
        ac_mat_free(&X);
        ac_mat_free(&Y);
    }
    ac_mat X = {0}, Y = {0};
    ac_err err;
    ac_mat_init(&X, 2, 3, NULL);
    ck_assert_int_eq(ac_approx_pinv_fullcol(&Y, &X, &err), AC_EDATA);
    ac_mat_free(&X);
}
END_TEST

START_TEST(test_left_inverse_rank_deficient)
{
    /* X of exact rank 2 < n = 3: no Y can give ||YX - I|| < 1, so the
     * certified bound must be >= 1 whatever Y is (soundness). */
    test_rng r;
    test_rng_init(&r, 22);
    for (int t = 0; t < 200; t++) {
        ac_mat X = {0}, Y = {0};
        ac_mat_init(&X, 6, 3, NULL);
        for (size_t i = 0; i < 6; i++) {
            double a = (double)(int)(test_rng_range(&r, -64, 64)), b = (double)(int)(test_rng_range(&r, -64, 64));
            AC_MAT(&X, i, 0) = a;
            AC_MAT(&X, i, 1) = b;
            AC_MAT(&X, i, 2) = a - 2 * b; /* exact */
        }
        if (t % 2) {
            ac_approx_pinv(&Y, &X, 0.0, NULL); /* the best left inverse there is */
        } else {
            ac_mat_init(&Y, 3, 6, NULL);
            fill_gauss(&Y, &r);
        }
        double qlo, qhi, slo;
        ac_cert_left_inverse(&Y, &X, &qlo, &qhi, &slo, NULL, NULL);
        ck_assert_msg(qhi >= 1.0, "rank-deficient X certified full rank");
        ck_assert(slo == 0.0);
        ac_mat_free(&X);
        ac_mat_free(&Y);
    }
}
END_TEST

START_TEST(test_sv_enclose_exact)
{
    /* A = H1 diag(s) H2^T with Hadamard factors of order 16 (entries +-1/4):
     * A is exact in double and its singular values are exactly |s|. */
    test_rng r;
    test_rng_init(&r, 23);
    size_t n = 16;
    ac_mat H = {0};
    hadamard(&H, n);
    for (int t = 0; t < 50; t++) {
        double s[16];
        for (size_t i = 0; i < n; i++)
            s[i] = ldexp((double)(1 + test_rng_u64(&r) % 1000), -(int)(test_rng_u64(&r) % 30));
        if (t % 5 == 0)
            s[3] = 0; /* exactly singular */
        ac_mat A = {0};
        ac_mat_init(&A, n, n, NULL);
        /* rows permuted by t to vary the factor */
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                double v = 0;
                for (size_t k = 0; k < n; k++)
                    v += AC_MAT(&H, i, k) * s[k] * AC_MAT(&H, (j + (size_t)t) % n, k);
                AC_MAT(&A, i, j) = v; /* exact: dyadic with few bits */
            }
        /* sorted exact singular values */
        double e[16];
        memcpy(e, s, sizeof e);
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                if (e[j] > e[i]) {
                    double tt = e[i];
                    e[i] = e[j];
                    e[j] = tt;
                }
        double lo[16], hi[16], eps;
        ac_imat Ai = ac_imat_view(&A);
        ck_assert(ac_sv_enclose(&Ai, lo, hi, &eps, NULL) == AC_OK);
        for (size_t i = 0; i < n; i++) {
            ck_assert_msg(lo[i] <= e[i] && e[i] <= hi[i], "sigma_%zu = %g not in [%g, %g]",
                          i, e[i], lo[i], hi[i]);
            ck_assert(hi[i] - lo[i] <= 1e-12 * e[0]);
        }
        ac_mat_free(&A);
    }
    ac_mat_free(&H);
}
END_TEST

START_TEST(test_sv_enclose_interval)
{
    /* A rectangular interval matrix: every point inside has singular values
     * inside the enclosures (checked on random points). */
    test_rng r;
    test_rng_init(&r, 24);
    for (int t = 0; t < 30; t++) {
        size_t m = 1 + test_rng_u64(&r) % 9, n = 1 + test_rng_u64(&r) % 9, p = m < n ? m : n;
        ac_imat A = {0};
        ac_imat_init(&A, m, n, 1, NULL);
        for (size_t i = 0; i < m * n; i++) {
            A.mid[i] = test_rng_gauss(&r);
            A.rad[i] = ldexp(test_rng_unif(&r), -20);
        }
        double lo[9], hi[9];
        ck_assert(ac_sv_enclose(&A, lo, hi, NULL, NULL) == AC_OK);
        for (int k = 0; k < 20; k++) {
            ac_mat P = {0};
            ac_mat_init(&P, m, n, NULL);
            for (size_t i = 0; i < m * n; i++)
                P.data[i] = A.mid[i] + A.rad[i] * test_rng_range(&r, -0.999, 0.999);
            double s[9];
            ac_approx_svd_values(&P, s, NULL);
            for (size_t i = 0; i < p; i++)
                ck_assert_msg(lo[i] <= s[i] + 1e-13 * s[0] && s[i] <= hi[i] + 1e-13 * s[0],
                              "interval sv");
            ac_mat_free(&P);
        }
        ac_imat_free(&A);
    }
}
END_TEST

START_TEST(test_rank_exact)
{
    test_rng r;
    test_rng_init(&r, 25);
    for (int t = 0; t < 100; t++) {
        size_t m = 1 + test_rng_u64(&r) % 8, n = 1 + test_rng_u64(&r) % 8;
        size_t k = test_rng_u64(&r) % ((m < n ? m : n) + 1);
        /* A = B C with B m x k, C k x n dyadic small integers times wide
         * powers of two per row: exact in double, rank k (generically) */
        ac_mat A = {0};
        ac_mat_init(&A, m, n, NULL);
        double B[8][8], C[8][8];
        for (size_t i = 0; i < m; i++)
            for (size_t l = 0; l < k; l++)
                B[i][l] = (double)((int)(test_rng_u64(&r) % 15) - 7);
        for (size_t l = 0; l < k; l++)
            for (size_t j = 0; j < n; j++)
                C[l][j] = (double)((int)(test_rng_u64(&r) % 15) - 7);
        for (size_t i = 0; i < m; i++) {
            int sh = (int)(test_rng_u64(&r) % 400) - 200;
            for (size_t j = 0; j < n; j++) {
                double v = 0;
                for (size_t l = 0; l < k; l++)
                    v += B[i][l] * C[l][j];
                AC_MAT(&A, i, j) = ldexp(v, sh);
            }
        }
        long rk, rp;
        size_t piv[8];
        ck_assert(ac_rank_exact(&A, 0, &rk, piv, NULL) == AC_OK);
        ck_assert(rk >= 0 && rk <= (long)k);
        ck_assert(ac_rank_lower_modp(&A, &rp, NULL) == AC_OK);
        ck_assert_msg(rp <= rk, "mod-p rank %ld above Q rank %ld", rp, rk);
        /* pivots: the selected rows have rank rk */
        if (rk > 0) {
            ac_mat S = {0};
            ac_mat_init(&S, (size_t)rk, n, NULL);
            for (long i = 0; i < rk; i++) {
                ck_assert(piv[i] < m);
                if (i)
                    ck_assert(piv[i] > piv[i - 1]);
                memcpy(S.data + i * n, A.data + piv[i] * n, n * sizeof(double));
            }
            long rs;
            ac_rank_exact(&S, 0, &rs, NULL, NULL);
            ck_assert_int_eq(rs, rk);
            ac_mat_free(&S);
        }
        ac_mat_free(&A);
    }
    /* the paper's X = [1, 0] has rank 1; the zero matrix rank 0 */
    ac_mat X = {0};
    long rk;
    ac_mat_init(&X, 1, 2, NULL);
    X.data[0] = 1;
    ac_rank_exact(&X, 0, &rk, NULL, NULL);
    ck_assert_int_eq(rk, 1);
    X.data[0] = 0;
    ac_rank_exact(&X, 0, &rk, NULL, NULL);
    ck_assert_int_eq(rk, 0);
    X.data[0] = NAN;
    ck_assert_int_eq(ac_rank_exact(&X, 0, &rk, NULL, NULL), AC_EDATA);
    ac_mat_free(&X);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("linalg");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_pinv_fullcol);
    tcase_add_test(tc, test_left_inverse_rank_deficient);
    tcase_add_test(tc, test_sv_enclose_exact);
    tcase_add_test(tc, test_sv_enclose_interval);
    tcase_add_test(tc, test_rank_exact);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
