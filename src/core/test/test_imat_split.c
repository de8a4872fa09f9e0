/* test_imat_split.c — the split products (core/imat_split.c) against exact
 * and high-precision oracles (Arb): every enclosure must contain the exact
 * value, on random, cancelling, badly scaled, huge and tiny inputs; the
 * optimised kernel agrees with its loop twin and does not depend on the
 * thread count; the split radius is far below the gamma_k radius.  (The
 * head's split stage and column-wise ball stage, attention/head.c, are
 * tested in src/attention/test/test_head.c.) */
#include <config.h>

#include <float.h>
#include <math.h>
#include <string.h>

#include "core/ac_arb.h"
#include "core/imat_split.h"
#include "attncheck/blas.h"
#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "core/test/imat_oracle.h"
#include "testutil.h"

static void check_case(int cls, size_t m, size_t k, size_t n, test_rng *r)
{
    double *A = malloc((m * k + 1) * sizeof(double)), *B = malloc((k * n + 1) * sizeof(double));
    ac_imat C = {0}, Cr = {0}, G = {0};
    oracle_inputs(cls, ORACLE_CANCEL_B, A, B, m, k, n, r);
    ac_mat Am = {m, k, A}, Bm = {k, n, B};
    ck_assert_int_eq(ac_imat_init(&C, m, n, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&Cr, m, n, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&G, m, n, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_mul_split(&C, &Am, &Bm, NULL), AC_OK);
    ac_split s;
    ck_assert_int_eq(ac_split_cols(&s, B, k, n, n, NULL), AC_OK);
    ck_assert_int_eq(ac_mul_split_ref(Cr.mid, Cr.rad, n, A, m, k, &s, NULL), AC_OK);
    ac_split_free(&s);
    ac_imat Ai = ac_imat_view(&Am), Bi = ac_imat_view(&Bm);
    ck_assert_int_eq(ac_imat_mul(&G, AC_NOTRANS, &Ai, AC_NOTRANS, &Bi, NULL), AC_OK);
    size_t finite = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            size_t e = i * n + j;
            SOFT(oracle_encloses(A, B, k, n, i, j, C.mid[e], C.rad[e]),
                 "class %d %zux%zux%zu: split entry (%zu,%zu) [%a +- %a] misses A B", cls, m, k, n,
                 i, j, C.mid[e], C.rad[e]);
            SOFT(oracle_encloses(A, B, k, n, i, j, Cr.mid[e], Cr.rad[e]),
                 "class %d: loop twin entry (%zu,%zu) misses A B", cls, i, j);
            /* the twins enclose the same number: their intervals meet */
            if (C.rad[e] < INFINITY && Cr.rad[e] < INFINITY)
                SOFT(fabs(C.mid[e] - Cr.mid[e]) <= C.rad[e] + Cr.rad[e],
                     "class %d: twins disagree at (%zu,%zu)", cls, i, j);
            if (C.rad[e] < INFINITY)
                finite++;
            if (cls == GAUSS || cls == CANCEL)
                SOFT(C.rad[e] <= 2 * AC_U * fabs(C.mid[e]) + 1e-4 * G.rad[e] + 2 * AC_REALMIN,
                     "class %d %zux%zux%zu: split radius %g not far below gamma_k radius %g", cls,
                     m, k, n, C.rad[e], G.rad[e]);
        }
    /* in range the stage must give finite radii; out of range it may not */
    if (cls != HUGE_ && cls != TINY)
        SOFT(finite == m * n, "class %d: %zu of %zu radii infinite", cls, m * n - finite, m * n);
    ac_imat_free(&C);
    ac_imat_free(&Cr);
    ac_imat_free(&G);
    free(A);
    free(B);
}

START_TEST(test_split_encloses)
{
    test_rng r;
    test_rng_init(&r, test_seed_value + 11);
    static const size_t sizes[][3] = {{1, 1, 1},    {3, 1, 4},   {5, 7, 3},   {17, 40, 9},
                                      {40, 40, 40}, {4, 300, 5}, {130, 20, 6}};
    fails = 0;
    for (int cls = 0; cls < NCLASS; cls++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            check_case(cls, sizes[s][0], sizes[s][1], sizes[s][2], &r);
    ck_assert_msg(fails == 0, "%ld failed checks (first printed above)", fails);
}
END_TEST

START_TEST(test_split_edge)
{
    /* empty shapes, k = 0, non-finite input, mismatched shapes */
    double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, -1, 2, 0.5, 3};
    ac_mat A0 = {2, 0, a}, B0 = {0, 3, b}, A = {2, 3, a}, B = {3, 2, b};
    ac_imat C = {0};
    ck_assert_int_eq(ac_imat_init(&C, 2, 3, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_mul_split(&C, &A0, &B0, NULL), AC_OK);
    for (int i = 0; i < 6; i++)
        ck_assert(C.mid[i] == 0 && C.rad[i] == 0);
    ck_assert_int_eq(ac_imat_mul_split(&C, &A, &B, NULL), AC_EUSAGE);
    ac_imat_free(&C);
    ck_assert_int_eq(ac_imat_init(&C, 2, 2, 1, NULL), AC_OK);
    b[2] = NAN;
    ck_assert_int_eq(ac_imat_mul_split(&C, &A, &B, NULL), AC_EDATA);
    b[2] = -1;
    a[4] = INFINITY;
    ck_assert_int_eq(ac_imat_mul_split(&C, &A, &B, NULL), AC_EDATA);
    ac_imat_free(&C);
    /* beta keeps k 2^(2 beta) <= 2^53 */
    for (size_t k = 1; k < ((size_t)1 << 40); k = k * 3 + 1) {
        int b2 = 2 * ac_split_beta(k);
        ck_assert(ldexp((double)k, b2) <= 0x1p53);
        ck_assert(ldexp((double)k, b2 + 2) > 0x1p53); /* and is the largest such */
    }
}
END_TEST

START_TEST(test_split_threads)
{
    /* identical enclosures for any BLAS thread count */
    size_t m = 300, k = 257, n = 290;
    test_rng r;
    test_rng_init(&r, test_seed_value + 12);
    double *A = malloc(m * k * sizeof(double)), *B = malloc(k * n * sizeof(double));
    oracle_inputs(GAUSS, ORACLE_CANCEL_B, A, B, m, k, n, &r);
    ac_mat Am = {m, k, A}, Bm = {k, n, B};
    ac_imat C1 = {0}, C2 = {0};
    ck_assert_int_eq(ac_imat_init(&C1, m, n, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&C2, m, n, 1, NULL), AC_OK);
    int t0 = ac_blas_get_threads();
    ac_blas_set_threads(1);
    ck_assert_int_eq(ac_imat_mul_split(&C1, &Am, &Bm, NULL), AC_OK);
    ac_blas_set_threads(2);
    ck_assert_int_eq(ac_imat_mul_split(&C2, &Am, &Bm, NULL), AC_OK);
    ac_blas_set_threads(t0);
    ck_assert(memcmp(C1.mid, C2.mid, m * n * sizeof(double)) == 0);
    ck_assert(memcmp(C1.rad, C2.rad, m * n * sizeof(double)) == 0);
    ac_imat_free(&C1);
    ac_imat_free(&C2);
    free(A);
    free(B);
}
END_TEST

START_TEST(test_imat_mul_panels)
{
    /* ac_imat_mul forms |A| a panel of 256 rows of op(A) at a time and B's
     * factors 512 columns at a time: more rows and columns than one panel, A
     * given as is and transposed, point and interval A */
    size_t m = 600, k = 7, n = 1100;
    test_rng r;
    test_rng_init(&r, test_seed_value + 15);
    double *A = malloc(m * k * sizeof(double)), *At = malloc(m * k * sizeof(double));
    double *Ar = malloc(m * k * sizeof(double)), *Art = malloc(m * k * sizeof(double));
    double *B = malloc(k * n * sizeof(double)), *Bt = malloc(k * n * sizeof(double));
    oracle_inputs(GAUSS, ORACLE_CANCEL_B, A, B, m, k, n, &r);
    for (size_t l = 0; l < k; l++)
        for (size_t j = 0; j < n; j++)
            Bt[j * k + l] = B[l * n + j];
    for (size_t i = 0; i < m; i++)
        for (size_t l = 0; l < k; l++) {
            At[l * m + i] = A[i * k + l];
            Ar[i * k + l] = Art[l * m + i] = (i % 3) ? 0.0 : 1e-3;
        }
    fails = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int wr = 0; wr < 2; wr++)
            for (int tb = 0; tb < 2; tb++) {
                ac_imat Ai = {ta ? k : m, ta ? m : k, ta ? At : A, wr ? (ta ? Art : Ar) : NULL};
                ac_mat Bm = {tb ? n : k, tb ? k : n, tb ? Bt : B};
                ac_imat Bi = ac_imat_view(&Bm), C = {0};
                ck_assert_int_eq(ac_imat_init(&C, m, n, 1, NULL), AC_OK);
                ck_assert_int_eq(ac_imat_mul(&C, ta ? AC_TRANS : AC_NOTRANS, &Ai,
                                             tb ? AC_TRANS : AC_NOTRANS, &Bi, NULL),
                                 AC_OK);
                for (size_t i = 0; i < m; i++)
                    for (size_t j = 0; j < n; j++) {
                        double rad = C.rad[i * n + j];
                        if (wr) /* every A' in A: the radius covers the midpoint's box */
                            SOFT(rad >= 1e-3 * (i % 3 ? 0 : 1) * fabs(B[j]) * 0.999 &&
                                     rad < INFINITY,
                                 "ta %d: radius %g misses A_r", ta, rad);
                        if ((i + j) % 5 == 0 || j % 512 < 2 ||
                            i % 256 < 2) /* a sample: Arb is slow */
                            SOFT(oracle_encloses(A, B, k, n, i, j, C.mid[i * n + j], rad),
                                 "ta %d wr %d tb %d: (%zu,%zu) not enclosed", ta, wr, tb, i, j);
                    }
                ac_imat_free(&C);
            }
    ck_assert_msg(fails == 0, "%ld failed checks (first printed above)", fails);
    free(A);
    free(At);
    free(Ar);
    free(Art);
    free(B);
    free(Bt);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("imat_split");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_split_encloses);
    tcase_add_test(tc, test_split_edge);
    tcase_add_test(tc, test_split_threads);
    tcase_add_test(tc, test_imat_mul_panels);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
