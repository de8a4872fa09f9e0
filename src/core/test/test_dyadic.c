/* test_dyadic.c — exact dyadic matrices (core/dyadic.h): products are
 * associative exactly on doubles of spread exponents, the round trip to
 * doubles and the transpose, A - A = 0 and A + A = 2A, the exact conversion
 * to Arb balls; scaled equality with square roots (sqrt(4) 1.5 = 3, signs,
 * no double equals sqrt(2)); the exponent budget and non-finite input; the
 * rank of exactly rank-2 integer matrices (over Q and modulo a prime) and
 * an exact null vector. */
#include <config.h>

#include <math.h>
#include <string.h>

#include "core/ac_arb.h"
#include "core/dyadic.h"
#include "testutil.h"

/* ---- dyadic.h ------------------------------------------------------------- */

START_TEST(test_dyadic_exact)
{
    test_rng r;
    test_rng_init(&r, 401);
    int bad = 0;
    for (int t = 0; t < 50; t++) {
        /* random doubles with a spread of exponents: (A B) C == A (B C) exactly */
        double a[12], b[12], c[12];
        for (int i = 0; i < 12; i++) {
            a[i] = ldexp(test_rng_gauss(&r), (int)test_rng_range(&r, -30, 30));
            b[i] = ldexp(test_rng_gauss(&r), (int)test_rng_range(&r, -30, 30));
            c[i] = test_rng_gauss(&r);
        }
        ac_xmat A, B, C, AB, BC, l, rr;
        ck_assert(ac_xmat_from_d(&A, a, 3, 4, 4, 0, 0) == AC_XMAT_OK);
        ck_assert(ac_xmat_from_d(&B, b, 4, 3, 3, 0, 0) == AC_XMAT_OK);
        ck_assert(ac_xmat_from_d(&C, c, 3, 4, 4, 0, 0) == AC_XMAT_OK);
        ac_xmat_mul(&AB, &A, &B);
        ac_xmat_mul(&BC, &B, &C);
        ac_xmat_mul(&l, &AB, &C);
        ac_xmat_mul(&rr, &A, &BC);
        if (!ac_xmat_equal(&l, &rr))
            bad++;
        /* round trip of a double matrix, and its transpose */
        double back[12];
        ck_assert(ac_xmat_to_d(&A, back));
        ck_assert(memcmp(back, a, sizeof back) == 0);
        ac_xmat T, TT;
        ck_assert(ac_xmat_from_d(&T, a, 3, 4, 4, 1, 0) == AC_XMAT_OK);
        ac_xmat_transpose(&TT, &T);
        ck_assert(ac_xmat_equal(&TT, &A));
        /* A - A = 0; A + A = 2 A */
        ac_xmat Z, S2, A2;
        ac_xmat_sub(&Z, &A, &A);
        ck_assert(ac_xmat_is_zero(&Z));
        ac_xmat_add(&S2, &A, &A);
        double a2[12];
        for (int i = 0; i < 12; i++)
            a2[i] = 2 * a[i];
        ac_xmat_from_d(&A2, a2, 3, 4, 4, 0, 0);
        ck_assert(ac_xmat_equal(&S2, &A2));
        /* the ball conversion is exact: its midpoints are the entries */
        arb_mat_t M;
        arb_mat_init(M, 3, 4);
        ac_xmat_to_arb(M, &A, 64);
        for (int i = 0; i < 12; i++)
            ck_assert(arb_equal_si(arb_mat_entry(M, i / 4, i % 4), 0) ||
                      arf_get_d(arb_midref(arb_mat_entry(M, i / 4, i % 4)), ARF_RND_NEAR) == a[i]);
        arb_mat_clear(M);
        ac_xmat *all[] = {&A, &B, &C, &AB, &BC, &l, &rr, &T, &TT, &Z, &S2, &A2};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            ac_xmat_clear(all[i]);
    }
    ck_assert_msg(bad == 0, "%d products not associative exactly", bad);
}
END_TEST

START_TEST(test_dyadic_scaled_and_rank)
{
    ac_xmat A, B;
    double one = 1.5, three = 3.0, r2 = sqrt(2.0), m3 = -3.0;
    /* sqrt(4) * 1.5 == sqrt(1) * 3 */
    ac_xmat_from_d(&A, &one, 1, 1, 1, 0, 0);
    ac_xmat_from_d(&B, &three, 1, 1, 1, 0, 0);
    ck_assert(ac_xmat_scaled_equal(&A, 4, &B, 1));
    ck_assert(!ac_xmat_scaled_equal(&A, 1, &B, 1));
    ac_xmat_clear(&B);
    /* signs matter: sqrt(4) 1.5 != -3 */
    ac_xmat_from_d(&B, &m3, 1, 1, 1, 0, 0);
    ck_assert(!ac_xmat_scaled_equal(&A, 4, &B, 1));
    ac_xmat_clear(&A);
    ac_xmat_clear(&B);
    /* no double equals sqrt(2): sqrt(2) * 1 != sqrt(1) * fl(sqrt(2)) */
    one = 1.0;
    ac_xmat_from_d(&A, &one, 1, 1, 1, 0, 0);
    ac_xmat_from_d(&B, &r2, 1, 1, 1, 0, 0);
    ck_assert(!ac_xmat_scaled_equal(&A, 2, &B, 1));
    ac_xmat_clear(&A);
    ac_xmat_clear(&B);
    /* budget and non-finite input */
    double wide[2] = {1e-300, 1e300}, nan2[2] = {1.0, NAN};
    ck_assert_int_eq(ac_xmat_from_d(&A, wide, 1, 2, 2, 0, 1000), AC_XMAT_TOO_BIG);
    ck_assert_int_eq(ac_xmat_from_d(&A, wide, 1, 2, 2, 0, 4096), AC_XMAT_OK);
    ac_xmat_clear(&A);
    ck_assert_int_eq(ac_xmat_from_d(&A, nan2, 1, 2, 2, 0, 0), AC_XMAT_NONFINITE);
    /* rank: a 4 x 5 matrix of rank 2 built exactly; the null vector is one */
    test_rng r;
    test_rng_init(&r, 402);
    for (int t = 0; t < 20; t++) {
        double u[8], v[10], m[20];
        for (int i = 0; i < 8; i++)
            u[i] = (double)(int)test_rng_range(&r, -8, 8);
        for (int i = 0; i < 10; i++)
            v[i] = (double)(int)test_rng_range(&r, -8, 8);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 5; j++)
                m[i * 5 + j] = u[2 * i] * v[j] + u[2 * i + 1] * v[5 + j];
        ac_xmat_from_d(&A, m, 4, 5, 5, 0, 0);
        slong rk = ac_xmat_rank(&A);
        ck_assert(rk <= 2);
        ck_assert(ac_xmat_rank_modp(&A) <= rk);
        fmpz *nv = _fmpz_vec_init(5);
        ck_assert(ac_xmat_null_vector(nv, &A));
        ck_assert(!_fmpz_vec_is_zero(nv, 5));
        fmpz_t s;
        fmpz_init(s);
        for (slong i = 0; i < 4; i++) {
            fmpz_zero(s);
            for (slong j = 0; j < 5; j++)
                fmpz_addmul(s, fmpz_mat_entry(A.m, i, j), nv + j);
            ck_assert(fmpz_is_zero(s));
        }
        fmpz_clear(s);
        _fmpz_vec_clear(nv, 5);
        ac_xmat_clear(&A);
    }
}
END_TEST

int main(void)
{
    test_seed_init();
    TCase *tc;
    Suite *s = test_suite_one("dyadic", &tc);
    tcase_add_test(tc, test_dyadic_exact);
    tcase_add_test(tc, test_dyadic_scaled_and_rank);
    return test_run_suite(s);
}
