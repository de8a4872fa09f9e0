/* test_linalg_lu.c — the rank step's kernels (core/linalg_lu.h, linalg.c):
 *   - ac_inverse_lu_panels against its reference twin (textbook elimination
 *     in plain loops) on edge and odd shapes, around the panel widths, with
 *     pivoting forced, scaled by 2^+-300, and on singular inputs;
 *   - its bits, and those of ac_cert_left_inverse, the same on 1, 2 and 3
 *     OpenMP threads;
 *   - ac_cert_left_inverse against the exact ||Y X - I||_F (Arb balls):
 *     q_lo <= exact <= q_hi, for inverses from both routes and tall X. */
#include <config.h>

#include <math.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/ac_arb.h"
#include "core/linalg_lu.h"
#include "attncheck/linalg.h"
#include "testutil.h"

static void gauss(ac_mat *A, size_t r, size_t c, test_rng *g)
{
    ck_assert(ac_mat_init(A, r, c, NULL) == AC_OK);
    for (size_t i = 0; i < r * c; i++)
        A->data[i] = test_rng_gauss(g);
}

/* max |(Y X - I)_ij| in double (a check of accuracy, not a bound) */
static double resid(const ac_mat *Y, const ac_mat *X)
{
    size_t n = X->cols, k = X->rows;
    double m = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double s = i == j ? -1.0 : 0.0;
            for (size_t l = 0; l < k; l++)
                s += AC_MAT(Y, i, l) * AC_MAT(X, l, j);
            m = fmax(m, fabs(s));
        }
    return m;
}

START_TEST(test_inverse_twin)
{
    test_rng g;
    test_rng_init(&g, 31);
    static const size_t ns[] = {1, 2, 3, 5, 17, 63, 64, 65, 127, 128, 129, 130, 193, 257};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++)
        for (int scale = -1; scale <= 1; scale++) {
            size_t n = ns[t];
            ac_mat X = {0}, Y = {0}, R = {0};
            gauss(&X, n, n, &g);
            for (size_t i = 0; i < n * n; i++)
                X.data[i] = ldexp(X.data[i], 300 * scale);
            ck_assert(ac_inverse_lu_panels(&Y, &X, 0, NULL) == AC_OK);
            ck_assert(ac_inverse_lu_panels(&R, &X, 1, NULL) == AC_OK);
            /* both are inverses of X, so they agree to about cond(X) u */
            double rp = resid(&Y, &X), rr = resid(&R, &X), dm = 0, ym = 0;
            for (size_t i = 0; i < n * n; i++) {
                dm = fmax(dm, fabs(Y.data[i] - R.data[i]));
                ym = fmax(ym, fabs(R.data[i]));
            }
            ck_assert_msg(rp < 1e-9 && rr < 1e-9, "n = %zu: residuals %g %g", n, rp, rr);
            ck_assert_msg(dm <= 1e-8 * ym, "n = %zu, scale %d: routes differ by %g (max %g)", n,
                          scale, dm, ym);
            ac_mat_free(&X);
            ac_mat_free(&Y);
            ac_mat_free(&R);
        }
}
END_TEST

/* A permutation times a diagonal of powers of two: every pivot must be
 * found by interchanges, and the inverse is exact (D^-1 P^T). */
START_TEST(test_inverse_pivoting_exact)
{
    static const size_t ns[] = {1, 4, 65, 150};
    test_rng g;
    test_rng_init(&g, 32);
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        size_t n = ns[t], *pm = malloc(n * sizeof(size_t));
        for (size_t i = 0; i < n; i++)
            pm[i] = i;
        for (size_t i = n; i-- > 1;) { /* Fisher–Yates */
            size_t j = (size_t)(test_rng_unif(&g) * (double)(i + 1)), s = pm[i];
            pm[i] = pm[j];
            pm[j] = s;
        }
        ac_mat X = {0};
        ck_assert(ac_mat_init(&X, n, n, NULL) == AC_OK);
        for (size_t i = 0; i < n; i++)
            AC_MAT(&X, i, pm[i]) = ldexp(1.0, (int)(i % 7) - 3);
        for (int ref = 0; ref <= 1; ref++) {
            ac_mat Y = {0};
            ck_assert(ac_inverse_lu_panels(&Y, &X, ref, NULL) == AC_OK);
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++) {
                    /* Y = X^-1: Y[pm[j]][j] = 1 / X[j][pm[j]], zero elsewhere */
                    double e = (i == pm[j]) ? 1.0 / AC_MAT(&X, j, pm[j]) : 0.0;
                    ck_assert_msg(AC_MAT(&Y, i, j) == e, "n = %zu ref %d: Y[%zu][%zu] = %g, not %g",
                                  n, ref, i, j, AC_MAT(&Y, i, j), e);
                }
            ac_mat_free(&Y);
        }
        ac_mat_free(&X);
        free(pm);
    }
}
END_TEST

START_TEST(test_inverse_singular)
{
    test_rng g;
    test_rng_init(&g, 33);
    static const size_t ns[] = {1, 3, 70, 140};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++)
        for (int kind = 0; kind < 2; kind++) {
            size_t n = ns[t];
            ac_mat X = {0}, Y = {0};
            gauss(&X, n, n, &g);
            for (size_t l = 0; l < n; l++) /* a zero row, or a zero column */
                X.data[kind ? l * n + n / 2 : (n / 2) * n + l] = 0;
            for (int ref = 0; ref <= 1; ref++) {
                ck_assert_int_eq(ac_inverse_lu_panels(&Y, &X, ref, NULL), AC_EDATA);
                ck_assert(Y.data == NULL);
            }
            ac_mat_free(&X);
        }
    ac_mat X = {0}, Y = {0};
    ck_assert(ac_mat_init(&X, 2, 3, NULL) == AC_OK);
    ck_assert_int_eq(ac_inverse_lu_panels(&Y, &X, 0, NULL), AC_EUSAGE);
    ac_mat_free(&X);
}
END_TEST

/* The same bits on 1, 2 and 3 threads: the inverse, and every output of
 * the left-inverse certificate. */
START_TEST(test_threads_identical)
{
#ifdef _OPENMP
    test_rng g;
    test_rng_init(&g, 34);
    static const size_t ns[] = {129, 300};
    int saved = omp_get_max_threads();
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        size_t n = ns[t];
        ac_mat X = {0}, Y[3] = {{0}};
        ac_imat YX[3] = {{0}};
        double q[3][3];
        gauss(&X, n, n, &g);
        for (int th = 1; th <= 3; th++) {
            omp_set_num_threads(th);
            ck_assert(ac_inverse_lu_panels(&Y[th - 1], &X, 0, NULL) == AC_OK);
            ck_assert(ac_cert_left_inverse(&Y[th - 1], &X, &q[th - 1][0], &q[th - 1][1],
                                           &q[th - 1][2], &YX[th - 1], NULL) == AC_OK);
        }
        for (int th = 1; th < 3; th++) {
            ck_assert_msg(!memcmp(Y[0].data, Y[th].data, n * n * sizeof(double)),
                          "n = %zu: inverse differs on %d threads", n, th + 1);
            ck_assert(!memcmp(YX[0].mid, YX[th].mid, n * n * sizeof(double)));
            ck_assert(!memcmp(YX[0].rad, YX[th].rad, n * n * sizeof(double)));
            ck_assert(!memcmp(q[0], q[th], sizeof q[0]));
        }
        for (int th = 0; th < 3; th++) {
            ac_mat_free(&Y[th]);
            ac_imat_free(&YX[th]);
        }
        ac_mat_free(&X);
    }
    omp_set_num_threads(saved);
#endif
}
END_TEST

/* ||Y X - I||_F exactly enough: Arb balls at 256 bits (rigorous; the
 * comparisons below hold only when they are certain). */
static void exact_fro(arb_t f, const ac_mat *Y, const ac_mat *X)
{
    size_t n = X->cols, k = X->rows;
    arb_t s, a, b;
    arb_init(s);
    arb_init(a);
    arb_init(b);
    arb_zero(f);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            arb_set_si(s, i == j ? -1 : 0);
            for (size_t l = 0; l < k; l++) {
                arb_set_d(a, AC_MAT(Y, i, l));
                arb_set_d(b, AC_MAT(X, l, j));
                arb_addmul(s, a, b, 256);
            }
            arb_addmul(f, s, s, 256);
        }
    arb_sqrt(f, f, 256);
    arb_clear(s);
    arb_clear(a);
    arb_clear(b);
}

START_TEST(test_cert_left_inverse_exact)
{
    test_rng g;
    test_rng_init(&g, 35);
    /* (d, n, how Y is made): 0 panel LU, 1 reference LU, 2 pinv_fullcol,
     * 3 a poor Y (the LU inverse perturbed: q near 1), 4 Y scaled by 2^-400 */
    static const size_t cases[][3] = {{1, 1, 0}, {7, 7, 1}, {40, 40, 0}, {150, 150, 0},
                                      {60, 25, 2}, {130, 129, 2}, {30, 30, 3}, {140, 140, 3},
                                      {20, 20, 4}};
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        size_t d = cases[t][0], n = cases[t][1], how = cases[t][2];
        ac_mat X = {0}, Y = {0};
        gauss(&X, d, n, &g);
        if (how == 4)
            for (size_t i = 0; i < d * n; i++)
                X.data[i] = ldexp(X.data[i], 400);
        if (how == 2)
            ck_assert(ac_approx_pinv_fullcol(&Y, &X, NULL) == AC_OK);
        else
            ck_assert(ac_inverse_lu_panels(&Y, &X, how == 1, NULL) == AC_OK);
        if (how == 3)
            for (size_t i = 0; i < n * d; i++)
                Y.data[i] *= 1.0 + 0.5 * (test_rng_unif(&g) - 0.5) / sqrt((double)n);
        double ql, qh, sl;
        ck_assert(ac_cert_left_inverse(&Y, &X, &ql, &qh, &sl, NULL, NULL) == AC_OK);
        arb_t f, b;
        arb_init(f);
        arb_init(b);
        exact_fro(f, &Y, &X);
        arb_set_d(b, qh);
        ck_assert_msg(arb_le(f, b), "case %zu: q_hi = %.17g below the exact norm", t, qh);
        arb_set_d(b, ql);
        ck_assert_msg(arb_le(b, f), "case %zu: q_lo = %.17g above the exact norm", t, ql);
        ck_assert(ql <= qh && (how == 3 || qh < 1e-6));
        if (qh < 1)
            ck_assert(sl > 0);
        arb_clear(f);
        arb_clear(b);
        ac_mat_free(&X);
        ac_mat_free(&Y);
    }
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("linalg_lu");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_inverse_twin);
    tcase_add_test(tc, test_inverse_pivoting_exact);
    tcase_add_test(tc, test_inverse_singular);
    tcase_add_test(tc, test_threads_identical);
    tcase_add_test(tc, test_cert_left_inverse_exact);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
