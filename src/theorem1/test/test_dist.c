/* test_dist.c — the distance bounds of Theorem 1 (src/theorem1/dist_lower.c,
 * dist_d1.c, dist_upper.c, refine.c; doc/mathematics.md §3.6).
 *
 * Oracles: the exact distance where the structure fixes it (a zero column
 * of X: a uniform softmax column; the paper's example, 1/4); equal columns
 * (half the gap of P, recomputed here); d = 1 by a dense scan of f(a) in
 * double; soundness: no head (random, scaled, zero, the written one) may have
 * a certified error below dist_lo.  The independent optimisers and the
 * d = 1, n = 2 closed form at 50 digits are in t1_bounds_numpy.py. */
#include <config.h>

#include <math.h>
#include <string.h>

#include "attncheck/theorem1.h"
#include "testutil.h"

static int check(ac_t1_result *res, const ac_mat *X, const ac_mat *P, size_t dk)
{
    ac_t1_opts o;
    ac_t1_opts_default(&o);
    o.dk = dk;
    return ac_t1_check(res, X, P, &o, NULL);
}

/* max_ij |Softmax - P| of the head (Wk, Wq) in double */
static double head_err(const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq, const ac_mat *P)
{
    ac_mat S = {0};
    ck_assert(ac_head_softmax(&S, X, Wk, Wq, NULL) == AC_OK);
    double e = 0;
    for (size_t i = 0; i < P->rows * P->cols; i++)
        e = fmax(e, fabs(S.data[i] - P->data[i]));
    ac_mat_free(&S);
    return e;
}

/* Soundness: heads of size dk (random at several scales, zero, the written
 * one) all have certified error >= dist_lo. */
static void assert_sound(const ac_t1_result *res, const ac_mat *X, const ac_mat *P, size_t dk,
                         uint64_t stream)
{
    test_rng r;
    test_rng_init(&r, stream);
    size_t d = X->rows;
    ac_schedule sched = ac_schedule_default();
    ck_assert_msg(res->dist_lo <= res->dist_hi, "dist_lo %.17g > dist_hi %.17g", res->dist_lo,
                  res->dist_hi);
    for (int h = 0; h < 12; h++) {
        ac_mat Wk = {0}, Wq = {0};
        ac_mat_init(&Wk, dk, d, NULL);
        ac_mat_init(&Wq, dk, d, NULL);
        double scale = h == 0 ? 0 : pow(10.0, (double)(h % 6) - 2);
        for (size_t i = 0; i < dk * d; i++) {
            Wk.data[i] = scale * test_rng_gauss(&r);
            Wq.data[i] = scale * test_rng_gauss(&r);
        }
        ac_cert c;
        ck_assert(ac_head_certify(&c, X, &Wk, &Wq, P, 0, &sched, NULL) == AC_OK);
        ck_assert_msg(res->dist_lo <= c.hi,
                      "head %d (scale %g): certified error %.17g < dist_lo %.17g", h, scale, c.hi,
                      res->dist_lo);
        ac_mat_free(&Wk);
        ac_mat_free(&Wq);
    }
    if (res->Wk.data)
        ck_assert(res->dist_lo <= res->weights_cert.hi);
}

/* A zero column j forces a uniform softmax column: dist >= max_i |P_ij - 1/n|
 * (checked as a floor on dist_lo, with soundness against heads), and
 * dist = 1/4 exactly on the paper's example. */
START_TEST(test_zero_column)
{
    static const size_t cases[][3] = {{1, 2, 1}, {3, 5, 3}, {6, 8, 2}, {16, 12, 4}};
    for (size_t c = 0; c < 4; c++) {
        size_t d = cases[c][0], n = cases[c][1], dk = cases[c][2], j0 = c % n;
        ac_mat X = {0}, P = {0};
        ac_t1_generate(&X, &P, d, n, test_seed_value + c, NULL);
        for (size_t i = 0; i < d; i++)
            AC_MAT(&X, i, j0) = c % 2 ? -0.0 : 0.0;
        double want = 0;
        for (size_t i = 0; i < n; i++)
            want = fmax(want, fabs(AC_MAT(&P, i, j0) - 1.0 / (double)n));
        ac_t1_result res;
        ck_assert(check(&res, &X, &P, dk) == AC_OK);
        ck_assert_msg(res.dist_lo >= want * (1 - 1e-14), "case %zu: dist_lo %.17g < %.17g", c,
                      res.dist_lo, want);
        assert_sound(&res, &X, &P, dk, 10 + c);
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
    /* the paper's example: exactly 1/4 */
    ac_mat X = {0}, P = {0};
    ac_t1_example_paper(&X, &P, NULL);
    ac_t1_result res;
    ck_assert(check(&res, &X, &P, 1) == AC_OK);
    ck_assert(res.dist_lo <= 0.25 && res.dist_lo >= 0.25 * (1 - 1e-14));
    ck_assert(res.dist_hi >= 0.25 && res.dist_hi <= 0.25 * (1 + 1e-12));
    ck_assert(strstr(res.lower_method, "is 0") != NULL);
    ac_t1_result_free(&res);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

/* Equal columns j, k of X: softmax columns and rows j, k are equal. */
START_TEST(test_equal_columns)
{
    static const size_t cases[][3] = {{2, 4, 2}, {5, 8, 3}, {10, 10, 10}, {3, 16, 2}};
    for (size_t c = 0; c < 4; c++) {
        size_t d = cases[c][0], n = cases[c][1], dk = cases[c][2], j = 1, k = n - 1;
        ac_mat X = {0}, P = {0};
        ac_t1_generate(&X, &P, d, n, test_seed_value + 20 + c, NULL);
        for (size_t i = 0; i < d; i++)
            AC_MAT(&X, i, k) = AC_MAT(&X, i, j);
        double want = 0;
        for (size_t i = 0; i < n; i++) {
            want = fmax(want, 0.5 * fabs(AC_MAT(&P, i, j) - AC_MAT(&P, i, k)));
            want = fmax(want, 0.5 * fabs(AC_MAT(&P, j, i) - AC_MAT(&P, k, i)));
        }
        ac_t1_result res;
        ck_assert(check(&res, &X, &P, dk) == AC_OK);
        ck_assert_msg(res.dist_lo >= want * (1 - 1e-14), "case %zu: dist_lo %.17g < %.17g", c,
                      res.dist_lo, want);
        ck_assert_int_ne(res.verdict, AC_PROVED);
        assert_sound(&res, &X, &P, dk, 30 + c);
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* d = 1: the branch and bound encloses inf_a f(a); a dense scan of f never
 * goes below dist_lo, and its minimum is close to dist_hi. */
START_TEST(test_d1_enclosure)
{
    for (size_t c = 0; c < 5; c++) {
        size_t n = 2 + 3 * c;
        ac_mat X = {0}, P = {0};
        ac_t1_generate(&X, &P, 1, n, test_seed_value + 40 + c, NULL);
        if (c == 0) {
            X.data[0] = 0.5;
            X.data[1] = 3.0;
        }
        for (size_t i = 0; i < n; i++)
            X.data[i] *= pow(10.0, (double)c - 2); /* scales 1e-2 .. 1e2 */
        ac_t1_result res;
        ck_assert(check(&res, &X, &P, 1 + c % 2) == AC_OK);
        ck_assert(strstr(res.lower_method, "d = 1") != NULL || res.dist_lo > 0);
        ck_assert_msg(res.dist_hi - res.dist_lo <= 1e-6 * res.dist_hi + 1e-12,
                      "n = %zu: enclosure [%.17g, %.17g] not tight", n, res.dist_lo, res.dist_hi);
        ac_mat Wk = {0}, Wq = {0};
        ac_mat_init(&Wk, 1, 1, NULL);
        ac_mat_init(&Wq, 1, 1, NULL);
        Wk.data[0] = 1;
        double fmin_scan = INFINITY;
        for (int s = -4000; s <= 4000; s++) {
            double a = sinh(s / 250.0) * 1e2 / pow(10.0, 2.0 * ((double)c - 2));
            Wq.data[0] = a;
            double f = head_err(&X, &Wk, &Wq, &P);
            ck_assert_msg(f >= res.dist_lo * (1 - 1e-12), "a = %g: f = %.17g < dist_lo %.17g", a,
                          f, res.dist_lo);
            fmin_scan = fmin(fmin_scan, f);
        }
        ck_assert(fmin_scan >= res.dist_lo * (1 - 1e-12));
        ac_mat_free(&Wk);
        ac_mat_free(&Wq);
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* Random instances of several sizes and scales: every bound is sound. */
START_TEST(test_soundness_random)
{
    static const size_t cases[][3] = {{4, 8, 2}, {16, 8, 4}, {8, 16, 4}, {32, 16, 8},
                                      {6, 6, 3}, {20, 24, 5}};
    for (size_t c = 0; c < 6; c++) {
        size_t d = cases[c][0], n = cases[c][1], dk = cases[c][2];
        ac_mat X = {0}, P = {0};
        ac_t1_generate(&X, &P, d, n, test_seed_value + 60 + c, NULL);
        for (size_t i = 0; i < d * n; i++)
            X.data[i] *= pow(4.0, (double)c - 3);
        ac_t1_result res;
        ck_assert(check(&res, &X, &P, dk) == AC_OK);
        ck_assert(res.lower_method[0] != '\0' && res.upper_method[0] != '\0');
        assert_sound(&res, &X, &P, dk, 70 + c);
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* Known failures: a representable P with dk < rank X = n was left at 8e-3
 * (the generating head reaches 1e-16). */
START_TEST(test_representable_found)
{
    for (uint64_t seed = 1; seed <= 9; seed++) {
        ac_mat X = {0}, P = {0}, Pd = {0};
        ac_t1_generate(&X, &Pd, 6, 6, seed, NULL);
        ck_assert(ac_t1_generate_representable(&P, &X, 3, seed, NULL) == AC_OK);
        ac_t1_result res;
        ck_assert(check(&res, &X, &P, 3) == AC_OK);
        ck_assert_msg(res.verdict == AC_PROVED && res.dist_hi < 1e-12,
                      "seed %llu: dist_hi %.3g", (unsigned long long)seed, res.dist_hi);
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
        ac_mat_free(&Pd);
    }
}
END_TEST

/* The given head: shape errors name the file; a good head is certified and
 * written when it is the best. */
START_TEST(test_user_head)
{
    ac_mat X = {0}, P = {0}, Wk = {0}, Wq = {0}, Pd = {0};
    ac_t1_generate(&X, &Pd, 4, 8, test_seed_value + 80, NULL);
    ck_assert(ac_t1_generate_representable(&P, &X, 2, test_seed_value + 80, NULL) == AC_OK);
    ac_t1_opts o;
    ac_t1_opts_default(&o);
    o.dk = 2;
    o.optimize = 0;
    ac_mat_init(&Wk, 2, 3, NULL);
    ac_mat_init(&Wq, 2, 4, NULL);
    o.user_wk = &Wk;
    o.user_wq = &Wq;
    o.wkname = "k.npy";
    o.wqname = "q.npy";
    ac_t1_result res;
    ac_err err;
    ck_assert_int_eq(ac_t1_check(&res, &X, &P, &o, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "k.npy") != NULL && strstr(err.msg, "2 x 4") != NULL);
    ck_assert(strchr(err.msg, '\n') == NULL);
    ac_t1_result_free(&res);
    ac_mat_free(&Wk);
    ac_mat_init(&Wk, 2, 4, NULL);
    Wq.data[3] = NAN;
    ck_assert_int_eq(ac_t1_check(&res, &X, &P, &o, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "q.npy") != NULL);
    ac_t1_result_free(&res);
    Wq.data[3] = 0;
    /* the zero head given: certified, the bound it gives is an upper bound */
    ck_assert_int_eq(ac_t1_check(&res, &X, &P, &o, &err), AC_OK);
    ck_assert(res.user_cert.stage != AC_STAGE_NONE);
    ck_assert(res.dist_hi <= res.user_cert.hi);
    ac_t1_result_free(&res);
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&Pd);
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("t1_bounds");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_zero_column);
    tcase_add_test(tc, test_equal_columns);
    tcase_add_test(tc, test_d1_enclosure);
    tcase_add_test(tc, test_soundness_random);
    tcase_add_test(tc, test_representable_found);
    tcase_add_test(tc, test_user_head);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
