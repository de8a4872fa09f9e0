/* test_dist.c — the distance bounds of Theorem 1 (src/theorem1/dist_lower.c,
 * dist_d1.c, dist_upper.c, refine.c; doc/mathematics.md §3.6).
 *
 * Oracles: the exact distance where the structure fixes it (a zero column
 * of X: a uniform softmax column; the paper's example, 1/4); equal columns
 * (half the gap of P, recomputed here); d = 1 by a dense scan of f(a) in
 * double; soundness: no head (random, scaled, zero, the written one) may have
 * a certified error below dist_lo.  The independent optimisers and the
 * d = 1, n = 2 closed form at 50 digits are in t1_bounds_numpy.py.  The
 * entrywise t (ac_t1_t_estimate, ac_t1_t_certified) against its reference
 * twins, bit for bit, and the answers settled in double against MPFR's. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/theorem1.h"
#include "theorem1/t1_dist.h"
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

/* ---- the entrywise t against its reference twins -------------------------------- */

/* p (cnt entries, positive) of one kind: 0-2 log-normal of spread 0.1, 1, 4;
 * 3 all equal; 4 one entry of 1e-12 among log-normal ones; 5 powers of two. */
static void entries(double *p, size_t cnt, int kind, test_rng *r)
{
    static const double spread[] = {0.1, 1.0, 4.0};
    for (size_t e = 0; e < cnt; e++) {
        if (kind < 3 || kind == 4)
            p[e] = exp(spread[kind < 3 ? kind : 1] * test_rng_gauss(r)) / (double)cnt;
        else if (kind == 3)
            p[e] = 1.0 / (double)cnt;
        else
            p[e] = ldexp(1.0, -1 - (int)(test_rng_unif(r) * 30));
    }
    if (kind == 4)
        p[cnt / 2] = 1e-12;
}

/* m = sqrt(sum_e phi(t/p_e)^2) in double, the obstruction that t reaches */
static double m_at(const double *p, size_t cnt, double t)
{
    double s = 0;
    for (size_t e = 0; e < cnt; e++) {
        double v = log1p(-t / p[e]);
        s += v * v;
    }
    return sqrt(s);
}

/* ac_t1_t_estimate and ac_t1_t_certified return the t of their reference
 * twins bit for bit (the bisection stopped at its fixed point, the sums cut
 * short, MPFR's answer settled in double), over sizes 1 .. 66000 (above
 * 256^2 no MPFR), spreads from equal entries to 1e-12 beside 1, and m from
 * t = 1e-9 min p (x tiny) to 0.9 min p (x > 1/4: MPFR); m = 0, < 0, NaN,
 * +inf.  And the settled answers are MPFR's, near the root where the double
 * logarithm alone does not decide. */
START_TEST(test_t_twins)
{
    static const size_t sizes[] = {1, 2, 7, 100, 1000, 5000, 66000};
    static const double fracs[] = {1e-9, 1e-4, 0.01, 0.2, 0.5, 0.9};
    test_rng r;
    test_rng_init(&r, 77);
    size_t settled_yes = 0, settled_no = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t cnt = sizes[si];
        double *p = malloc(cnt * sizeof(double));
        ck_assert(p != NULL);
        for (int kind = 0; kind < 6; kind++) {
            if (cnt > 5000 && kind != 1)
                continue; /* one large case: the reference's 64 full sums */
            entries(p, cnt, kind, &r);
            double pmin = INFINITY;
            for (size_t e = 0; e < cnt; e++)
                pmin = fmin(pmin, p[e]);
            for (size_t fi = 0; fi < sizeof fracs / sizeof fracs[0] + 4; fi++) {
                double m = fi < 6    ? m_at(p, cnt, fracs[fi] * pmin)
                           : fi == 6 ? 0.0
                           : fi == 7 ? -1.0
                           : fi == 8 ? NAN
                                     : INFINITY;
                double a = ac_t1_t_estimate(p, cnt, m), b = ac_t1_t_estimate_ref(p, cnt, m);
                ck_assert_msg(!memcmp(&a, &b, sizeof a), "estimate: cnt %zu kind %d m %a: %a "
                              "vs %a (seed %llu)", cnt, kind, m, a, b,
                              (unsigned long long)test_seed_value);
                a = ac_t1_t_certified(p, cnt, m);
                b = ac_t1_t_certified_ref(p, cnt, m);
                ck_assert_msg(!memcmp(&a, &b, sizeof a), "certified: cnt %zu kind %d m %a: %a "
                              "vs %a (seed %llu)", cnt, kind, m, a, b,
                              (unsigned long long)test_seed_value);
                if (fi >= 6 || cnt > 1000 || !(b > 0))
                    continue;
                /* near the root (the estimate): t (1 +- 2^-k) */
                double t0 = ac_t1_t_estimate(p, cnt, m);
                for (int k = 8; k <= 52; k += 2)
                    for (int sg = -1; sg <= 1; sg += 2) {
                        double t = t0 * (1 + sg * ldexp(1.0, -k));
                        int v = ac_t1_phi_fro_up_settle(p, cnt, t, m);
                        if (v < 0)
                            continue;
                        int ref = ac_t1_phi_fro_up(p, cnt, t, 0) < m;
                        ck_assert_msg(v == ref, "settled %d, MPFR %d: cnt %zu kind %d t %a m %a "
                                      "(seed %llu)", v, ref, cnt, kind, t, m,
                                      (unsigned long long)test_seed_value);
                        settled_yes += v == 1;
                        settled_no += v == 0;
                    }
            }
        }
        free(p);
    }
    ck_assert_msg(settled_yes > 10 && settled_no > 10, "settled %zu yes, %zu no", settled_yes,
                  settled_no);
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
    tcase_add_test(tc, test_t_twins);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
