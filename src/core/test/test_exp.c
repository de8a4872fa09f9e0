/* test_exp.c — the exp kernels of core/exp_kernel.h against MPFR's
 * correctly rounded exp, and their vector forms against their scalar twins.
 *
 * ac_exp_kernel (the fast kernel, relative error below 2u, u = 2^-53):
 * 200 000 arguments over [-708.39, 709.78] (a quarter in [-1, 1], a quarter
 * in [-40, 40]) and the reduction's edges, then the specials: 0 under
 * -745.14, +Inf above 709.78, NaN, and the subnormal range within one
 * subnormal step plus 2u.  With AVX-512 its 8 lanes (ac_exp_kernel8) give
 * the same bits on the same arguments.
 *
 * ac_exp_tab16 (the table kernel, doc/mathematics.md §4.11): relative error
 * below 3u where e^x is a normal double, plus 2^-1074 absolute (one rounding
 * to the subnormal grid) below, checked against MPFR's exp at 128 bits on a
 * sweep of the whole range where it is not constant (-750 to 715: zero,
 * subnormal, normal and infinite results), on every power of two and its
 * neighbours, on random doubles of every exponent, on the ties of
 * k = x 16/ln2, and on -0, +-Inf and NaN; ac_exp_tab16_array (8 lanes with
 * AVX-512) gives the same bits as the scalar function, also on array
 * lengths that are not multiples of 8 (the masked tail).
 *
 * (The rigorous enclosure ac_exp_enclose is tested with interval.h's other
 * primitives, test_interval.c.) */
#include <config.h>

#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/exp_kernel.h"
#include "testutil.h"

static const double U = 0x1p-53;

/* y[i] = ac_exp_kernel(x[i]) */
static void exp_kernel_array(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = ac_exp_kernel(x[i]);
}

/* same double, or both NaN */
static int same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

/* ---------------------------------------------------------------- the fast kernel */

START_TEST(test_exp_accuracy)
{
    test_rng r;
    test_rng_init(&r, 1);
    size_t n = 200000, bad = 0;
    double *x = test_vec(n), *y = test_vec(n), worst = 0, wx = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 4 == 0)
            x[i] = test_rng_range(&r, -1, 1);
        else if (i % 4 == 1)
            x[i] = test_rng_range(&r, -40, 40);
        else
            x[i] = test_rng_range(&r, -708.39, 709.78);
    }
    x[0] = 0;
    x[1] = -0.0;
    x[2] = 0x1p-60;
    x[3] = -0x1p-60;
    x[4] = 709.78;
    x[5] = -708.39;
    x[6] = 0.5 * M_LN2;
    x[7] = -0.5 * M_LN2;
    exp_kernel_array(y, x, n);
    mpfr_t e, d;
    mpfr_inits2(128, e, d, (mpfr_ptr)0);
    for (size_t i = 0; i < n; i++) {
        mpfr_set_d(e, x[i], MPFR_RNDN);
        mpfr_exp(e, e, MPFR_RNDN);
        mpfr_set_d(d, y[i], MPFR_RNDN);
        mpfr_sub(d, d, e, MPFR_RNDN);
        mpfr_div(d, d, e, MPFR_RNDN);
        double rel = fabs(mpfr_get_d(d, MPFR_RNDN)) / U;
        if (!(rel <= 2.0))
            bad++;
        if (rel > worst)
            worst = rel, wx = x[i];
    }
    mpfr_clears(e, d, (mpfr_ptr)0);
    ck_assert_msg(bad == 0, "%zu values off by more than 2u; worst %.3gu at x = %a (seed %llu)",
                  bad, worst, wx, (unsigned long long)test_seed_value);
    free(x);
    free(y);
}
END_TEST

START_TEST(test_exp_special)
{
    double x[] = {-745.2, -800, -INFINITY, INFINITY, 710, 709.79, NAN, -745.1, -708.5};
    double y[9];
    exp_kernel_array(y, x, 9);
    ck_assert(y[0] == 0 && y[1] == 0 && y[2] == 0);
    ck_assert(isinf(y[3]) && y[3] > 0 && isinf(y[4]) && isinf(y[5]));
    ck_assert(isnan(y[6]));
    /* subnormal range: within one subnormal step plus 2u relative */
    ck_assert(fabs(y[7] - exp(-745.1)) <= DBL_TRUE_MIN);
    ck_assert(fabs(y[8] - exp(-708.5)) <= 2 * U * exp(-708.5) + DBL_TRUE_MIN);
}
END_TEST

/* ac_exp_kernel8 lane by lane against ac_exp_kernel, bit for bit, on the
 * arguments of test_exp_accuracy and the specials (a build without AVX-512
 * has no 8-lane form: nothing to compare) */
START_TEST(test_exp_kernel8)
{
#if AC_EXP_SIMD
    test_rng r;
    test_rng_init(&r, 1);
    size_t n = 200008, bad = 0;
    double *x = test_vec(n), first = 0;
    for (size_t i = 0; i < n; i++)
        x[i] = test_rng_range(&r, -750, 715);
    static const double sp[] = {0, -0.0, INFINITY, -INFINITY, NAN, 709.78, -708.39, -745.1};
    memcpy(x, sp, sizeof sp);
    for (size_t i = 0; i < n; i += 8) {
        double y[8];
        _mm512_storeu_pd(y, ac_exp_kernel8(_mm512_loadu_pd(x + i)));
        for (size_t l = 0; l < 8; l++)
            if (!same(y[l], ac_exp_kernel(x[i + l])) && bad++ == 0)
                first = x[i + l];
    }
    free(x);
    ck_assert_msg(bad == 0, "%zu lanes differ from the scalar kernel (first x = %a; seed %llu)",
                  bad, first, (unsigned long long)test_seed_value);
#endif
}
END_TEST

/* ---------------------------------------------------------------- the table kernel */

/* checks y = exp(x) lane by lane against the scalar twin (bits) and MPFR
 * (3u relative, plus one subnormal step 2^-1074); returns the number of failures and
 * reports the first */
static long check_exp(const double *x, size_t n, char *msg, size_t msglen)
{
    double *y = malloc((n + 1) * sizeof *y);
    ck_assert_ptr_nonnull(y);
    y[n] = -3.5; /* the masked tail must not write past n */
    ac_exp_tab16_array(y, x, n);
    long bad = y[n] != -3.5;
    mpfr_t e, dd;
    mpfr_inits2(128, e, dd, (mpfr_ptr)0);
    for (size_t i = 0; i < n; i++) {
        double s = ac_exp_tab16(x[i]);
        int ok = same(y[i], s);
        if (ok && isnan(x[i])) {
            ok = isnan(s);
        } else if (ok) {
            mpfr_set_d(e, x[i], MPFR_RNDN);
            mpfr_exp(e, e, MPFR_RNDN);
            double ed = mpfr_get_d(e, MPFR_RNDN);
            if (isinf(ed) || isinf(s)) {
                ok = s == ed; /* overflow on both sides */
            } else {
                mpfr_set_d(dd, s, MPFR_RNDN);
                mpfr_sub(dd, dd, e, MPFR_RNDN);
                double err = fabs(mpfr_get_d(dd, MPFR_RNDN));
                ok = err <= 3.0 * 0x1p-53 * ed + 0x1p-1074;
            }
        }
        if (!ok) {
            if (!*msg)
                snprintf(msg, msglen, "x = %a: vector %a, scalar %a", x[i], y[i], s);
            bad++;
        }
    }
    mpfr_clears(e, dd, (mpfr_ptr)0);
    free(y);
    return bad;
}

START_TEST(test_tab16_vs_scalar)
{
    char msg[200] = "";
    long bad = 0, total = 0;
    /* a fine sweep of [-750, 715] (every result class: 0, subnormal,
     * normal, +Inf), in arrays of odd length */
    size_t n = 366251;
    double *x = malloc(n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++)
        x[i] = -750.0 + (double)i * 4e-3 + 1e-7 * (double)(i % 7);
    bad += check_exp(x, n, msg, sizeof msg);
    total += (long)n;
    /* powers of two and their neighbours, both signs, and the specials */
    size_t m = 0;
    for (int e = -1074; e <= 1023; e++) {
        double p = ldexp(1.0, e);
        x[m++] = p;
        x[m++] = -p;
        x[m++] = nextafter(p, 0.0);
        x[m++] = -nextafter(p, INFINITY);
    }
    x[m++] = 0.0;
    x[m++] = -0.0;
    x[m++] = INFINITY;
    x[m++] = -INFINITY;
    x[m++] = NAN;
    x[m++] = -NAN;
    x[m++] = DBL_MAX;
    x[m++] = -DBL_MAX;
    x[m++] = 709.782712893384;
    x[m++] = -708.3964185322641;
    x[m++] = -745.1332191019411;
    x[m++] = -745.1332191019412;
    bad += check_exp(x, m, msg, sizeof msg);
    total += (long)m;
    /* random doubles of every exponent (uniform bits), then halves and odd
     * multiples of ln2 / 2 (the rounding ties of k) */
    test_rng r;
    test_rng_init(&r, 77);
    for (size_t i = 0; i < 200003; i++) {
        uint64_t b = test_rng_u64(&r);
        memcpy(&x[i], &b, sizeof b);
    }
    bad += check_exp(x, 200003, msg, sizeof msg);
    total += 200003;
    for (size_t i = 0; i < 4003; i++)
        x[i] = ((double)i - 2001.0) * 0x1.62e42fefa0000p-6; /* halves of ln2/16 */
    bad += check_exp(x, 4003, msg, sizeof msg);
    total += 4003;
    for (size_t len = 0; len <= 17; len++)
        bad += check_exp(x + 1000, len, msg, sizeof msg);
    free(x);
    ck_assert_msg(bad == 0, "%ld of %ld exps fail (twin or MPFR) (first: %s; AVX-512: %d)",
                  bad, total, msg, AC_EXP_SIMD);
}
END_TEST

int main(void)
{
    test_seed_init();
    TCase *tc;
    Suite *s = test_suite_one("exp", &tc);
    tcase_add_test(tc, test_exp_accuracy);
    tcase_add_test(tc, test_exp_special);
    tcase_add_test(tc, test_exp_kernel8);
    tcase_add_test(tc, test_tab16_vs_scalar);
    return test_run_suite(s);
}
