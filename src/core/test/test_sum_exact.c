/* test_sum_exact.c — the exact comparison of a sum of doubles with a double
 * (core/sum_exact.c) against MPFR's correctly rounded sums, rounded down and
 * up: the exact sum equals t iff both do.  Classes: sums that are 1 up to
 * rounding (1 exactly or not), huge and tiny terms with subnormals and
 * signs, sums exactly 1 by construction, cancellation to exactly 0 against
 * a huge pair; strided sums and the column form read row by row; the
 * largest finite doubles, subnormal sums and NaN. */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "core/sum_exact.h"
#include "testutil.h"

/* MPFR's sum, correctly rounded both ways: equal to t iff the exact sum is. */
static int mpfr_sum_is(const double *x, size_t n, double t)
{
    mpfr_t *v = malloc((n + 1) * sizeof(mpfr_t));
    mpfr_ptr *tab = malloc((n + 1) * sizeof(mpfr_ptr));
    mpfr_t lo, hi;
    for (size_t i = 0; i < n; i++) {
        mpfr_init2(v[i], 53);
        mpfr_set_d(v[i], x[i], MPFR_RNDN);
        tab[i] = v[i];
    }
    mpfr_inits2(53, lo, hi, (mpfr_ptr)0);
    mpfr_sum(lo, tab, n, MPFR_RNDD);
    mpfr_sum(hi, tab, n, MPFR_RNDU);
    int one = mpfr_cmp_d(lo, t) == 0 && mpfr_cmp_d(hi, t) == 0;
    mpfr_clears(lo, hi, (mpfr_ptr)0);
    for (size_t i = 0; i < n; i++)
        mpfr_clear(v[i]);
    free(v);
    free(tab);
    return one;
}

/* |sum x_i - t| rounded toward zero to a double, by MPFR (exact sum at
 * 4200 bits, which hold any sum of 300 doubles, then one rounding). */
static double mpfr_dev_rz(const double *x, size_t n, size_t stride, double t)
{
    mpfr_t s, v;
    mpfr_init2(s, 4200);
    mpfr_init2(v, 53);
    mpfr_set_d(s, -t, MPFR_RNDN);
    for (size_t i = 0; i < n; i++) {
        mpfr_set_d(v, x[i * stride], MPFR_RNDN);
        mpfr_add(s, s, v, MPFR_RNDN); /* exact at 4200 bits */
    }
    mpfr_abs(s, s, MPFR_RNDN);
    double d = mpfr_get_d(s, MPFR_RNDZ);
    mpfr_clear(s);
    mpfr_clear(v);
    return d;
}

static int mpfr_sum_is_strided(const double *x, size_t n, double t)
{
    double y[150];
    for (size_t i = 0; i < n; i++)
        y[i] = x[2 * i];
    return mpfr_sum_is(y, n, t);
}

START_TEST(test_sum_exact)
{
    test_rng r;
    test_rng_init(&r, test_seed_value + 34);
    double x[300];
    for (int rep = 0; rep < 400; rep++) {
        size_t n = 1 + (size_t)(test_rng_unif(&r) * 299);
        int kind = rep % 5;
        double s = 0;
        for (size_t i = 0; i < n; i++) {
            x[i] = test_rng_unif(&r) + 1e-3;
            if (kind == 1) /* huge and tiny terms, subnormals, signs */
                x[i] = ldexp(test_rng_gauss(&r), (int)(test_rng_unif(&r) * 2090) - 1070);
            s += x[i];
        }
        if (kind == 0 || kind == 2)
            for (size_t i = 0; i < n; i++)
                x[i] /= s;        /* sums to 1 up to rounding: 1 exactly or not */
        if (kind == 3 && n > 1) { /* exactly 1 by construction: x_0 = 1 - rest, Sterbenz-free */
            for (size_t i = 1; i < n; i++)
                x[i] = ldexp(1.0, -(int)(i % 40) - 12);
            double rest = 0;
            for (size_t i = 1; i < n; i++)
                rest += x[i]; /* exact: distinct small powers of two repeat at most n/40 times */
            x[0] = 1.0 - rest;
        }
        if (kind == 4) { /* cancellation to exactly 0 against a huge pair */
            x[0] = 0x1p1000;
            x[n > 1 ? n - 1 : 0] = n > 1 ? -0x1p1000 : x[0];
        }
        double t = kind == 4 ? 0.0 : 1.0;
        ck_assert_int_eq(ac_sum_is_exactly(x, n, 1, t), mpfr_sum_is(x, n, t));
        /* the deviation rounded toward zero, bit for bit; 0 iff exact */
        for (size_t st = 1; st <= 2; st++) {
            double a = ac_sum_dev_rz(x, n / st, st, t), b = mpfr_dev_rz(x, n / st, st, t);
            ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "dev_rz %a vs MPFR %a (kind %d, seed %lu)",
                          a, b, kind, (unsigned long)test_seed_value);
            ck_assert_int_eq(a == 0, ac_sum_is_exactly(x, n / st, st, t));
        }
        /* strided, and the largest finite doubles */
        ck_assert_int_eq(ac_sum_is_exactly(x, n / 2, 2, t), mpfr_sum_is_strided(x, n / 2, t));
        /* by columns, row by row: x as (n/2) x 2 and as (n/3) x 3 (ld 3, 2 columns) */
        int out[3] = {-1, -1, -1};
        ck_assert(ac_sum_is_exactly_cols(x, n / 2, 2, 2, t, out));
        ck_assert_int_eq(out[0], mpfr_sum_is_strided(x, n / 2, t));
        ck_assert_int_eq(out[1], mpfr_sum_is_strided(x + 1, n / 2, t));
        ck_assert(ac_sum_is_exactly_cols(x, n / 3, 2, 3, t, out) && out[2] == -1);
        for (int c = 0; c < 2; c++)
            ck_assert_int_eq(out[c], ac_sum_is_exactly(x + c, n / 3, 3, t));
    }
    double big[3] = {DBL_MAX, DBL_MAX, -DBL_MAX}, sub[2] = {0x1p-1074, 0x1p-1074};
    ck_assert(ac_sum_is_exactly(big, 3, 1, DBL_MAX));
    ck_assert(!ac_sum_is_exactly(big, 2, 1, DBL_MAX));
    ck_assert(ac_sum_is_exactly(sub, 2, 1, 0x1p-1073));
    ck_assert(!ac_sum_is_exactly(sub, 2, 1, 0x1p-1074));
    ck_assert(ac_sum_is_exactly(sub, 0, 1, 0.0));
    /* the deviation at the ends of the range: subnormal, tiny against 1,
     * beyond DBL_MAX, negative, NaN */
    ck_assert(ac_sum_dev_rz(sub, 2, 1, 0x1p-1074) == 0x1p-1074);
    ck_assert(ac_sum_dev_rz(sub, 2, 1, 1.0) == 1.0 - 0x1p-1073 - 0x1p-53);
    double one_eps[3] = {0.5, 0.5, 0x1p-1074};
    ck_assert(ac_sum_dev_rz(one_eps, 3, 1, 1.0) == 0x1p-1074);
    ck_assert(ac_sum_dev_rz(one_eps, 2, 1, 1.0) == 0.0);
    ck_assert(ac_sum_dev_rz(big, 2, 1, -DBL_MAX) == DBL_MAX);
    ck_assert(ac_sum_dev_rz(big, 3, 1, 0.0) == DBL_MAX);
    ck_assert(ac_sum_dev_rz(big + 2, 1, 1, 0.0) == DBL_MAX);
    sub[1] = NAN;
    ck_assert(isnan(ac_sum_dev_rz(sub, 2, 1, 0.0)));
    ck_assert(!ac_sum_is_exactly(sub, 2, 1, 0x1p-1073));
    int o2[2];
    ck_assert(ac_sum_is_exactly_cols(sub, 1, 2, 2, 0x1p-1074, o2) && o2[0] == 1 && o2[1] == 0);
    ck_assert(ac_sum_is_exactly_cols(big, 1, 2, 1, INFINITY, o2) && o2[0] == 0 && o2[1] == 0);
}
END_TEST

int main(void)
{
    test_seed_init();
    TCase *tc;
    Suite *s = test_suite_one("sum_exact", &tc);
    tcase_add_test(tc, test_sum_exact);
    return test_run_suite(s);
}
