/* test_rmt.c — random-matrix predictions (attncheck/rmt.h).
 * Oracles: published constants (Bornemann 2010 for the TW1 moments, to 13
 * digits), the reference values of doc/mathematics.md §5.4 (at their printed
 * precision), values computed independently in Python from the formulas
 * (hand-checked; rounding-level agreement), the direct Nyström determinant
 * against the table, and numerical integration of the MP density. */
#include <config.h>

#include <math.h>

#include "attncheck/rmt.h"
#include "testutil.h"

#define U 0x1p-53

/* relative difference */
static double rel(double a, double b)
{
    return fabs(a - b) / fabs(b);
}

START_TEST(test_tw1_moments)
{
    double m, sd;
    ac_tw1_moments(&m, &sd);
    /* Bornemann (2010): mean -1.2065335745820, variance
     * 1.6077810345810.  The table is accurate to ~1e-14 and its quadrature
     * to ~1e-12 (documented in rmt.h); 1e-10 leaves a wide margin. */
    ck_assert_msg(fabs(m - (-1.2065335745820)) < 1e-10, "TW1 mean %.15g", m);
    ck_assert_msg(fabs(sd * sd - 1.6077810345810) < 1e-10, "TW1 variance %.15g", sd * sd);
    /* doc/mathematics.md §5.4 at its printed precision (half a unit of the last digit) */
    ck_assert(fabs(sd - 1.2680) <= 5e-5);
    ck_assert(fabs(ac_tw1_quantile(0.05) - (-3.180)) <= 5e-4);
    ck_assert(fabs(ac_tw1_quantile(0.50) - (-1.269)) <= 5e-4);
    ck_assert(fabs(ac_tw1_quantile(0.95) - 0.979) <= 5e-4);
    ck_assert(isnan(ac_tw1_quantile(0.0)) && isnan(ac_tw1_quantile(1.0)));
}
END_TEST

START_TEST(test_tw1_table_vs_direct)
{
    /* The Nyström discretisation converges exponentially: 64 and 128 nodes
     * agree to rounding level, and the tabulated series reproduces the
     * determinant.  Bound: 1e-12 (the documented table accuracy 1e-14 with a
     * 100x margin; about 4500 u). */
    int fails = 0;
    double worst = 0, worst_s = 0;
    test_rng r;
    test_rng_init(&r, 1);
    for (int i = 0; i < 40; i++) {
        double s = test_rng_range(&r, -9.0, 9.0);
        double a = ac_tw1_cdf_direct(s, 64), b = ac_tw1_cdf_direct(s, 128), t = ac_tw1_cdf(s);
        double e = fmax(fabs(a - b), fabs(t - b));
        if (e > worst) {
            worst = e;
            worst_s = s;
        }
        if (e > 1e-12)
            fails++;
    }
    ck_assert_msg(fails == 0, "%d points off; worst %.3g at s = %.6f", fails, worst, worst_s);
    /* monotone, density non-negative and integrating to 1 (midpoint rule on
     * [-12, 12], h = 0.001: error O(h^2 max|f''|) < 1e-6) */
    double prev = 0, mass = 0;
    int bad = 0;
    for (int i = 0; i < 24000; i++) {
        double s = -12.0 + 0.001 * (i + 0.5);
        double F = ac_tw1_cdf(s), f = ac_tw1_pdf(s);
        if (F < prev - 1e-14 || f < 0) /* monotone to the table's accuracy */
            bad++;
        prev = F;
        mass += 0.001 * f;
    }
    ck_assert_int_eq(bad, 0);
    ck_assert_msg(fabs(mass - 1) < 1e-6, "mass %.12g", mass);
    ck_assert(ac_tw1_cdf(-20) == 0 && ac_tw1_cdf(20) == 1);
    ck_assert(isnan(ac_tw1_cdf(NAN)));
}
END_TEST

START_TEST(test_edelman)
{
    /* closed forms (python: 1/y with 2y^2 + 2y + log p = 0) */
    ck_assert(rel(ac_edelman_quantile(0.5), 3.6713177237995387) < 16 * U);
    ck_assert(rel(ac_edelman_quantile(0.05), 1.216443072112799) < 16 * U);
    ck_assert(rel(ac_edelman_quantile(0.95), 39.967041626362246) < 16 * U);
    for (double p = 0.01; p < 1; p += 0.07)
        ck_assert(fabs(ac_edelman_cdf(ac_edelman_quantile(p)) - p) < 64 * U);
    /* E log(kappa/N): trapezoid in log y in NumPy, 4e6 points on [-60, 3.2]:
     * 1.537089435383546 (independent of GSL's QAGS used here); §5.5: 1.537 */
    ck_assert_msg(fabs(ac_edelman_elog() - 1.537089435383546) < 1e-9, "%.15g", ac_edelman_elog());
    /* tail P(kappa/N > x) ~ 2/x */
    ck_assert(rel(1 - ac_edelman_cdf(1e6), 2e-6) < 1e-5);
    ck_assert(ac_edelman_cdf(0) == 0 && ac_edelman_cdf(-1) == 0);
}
END_TEST

/* int of the MP density from the lower edge to x, by the substitution
 * x = c - r cos(t) (smooth integrand) and the composite midpoint rule. */
static double mp_numeric(double x, double y)
{
    double c = 1 + y, r = 2 * sqrt(y);
    double th = acos(fmin(1, fmax(-1, (c - x) / r)));
    const int n = 200000;
    double s = 0, h = th / n;
    for (int i = 0; i < n; i++) {
        double t = h * (i + 0.5), u = c - r * cos(t);
        s += h * ac_mp_pdf(u, y) * r * sin(t);
    }
    return s;
}

START_TEST(test_mp)
{
    const double ys[] = {0.05, 0.3, 0.5, 1.0, 1.7, 2.0, 8.0};
    int fails = 0;
    for (size_t k = 0; k < sizeof ys / sizeof *ys; k++) {
        double y = ys[k], lo, hi;
        ac_mp_edges(y, &lo, &hi);
        double atom = y > 1 ? 1 - 1 / y : 0;
        /* midpoint rule on a smooth periodic-like integrand: error far below
         * 1e-9 with 2e5 points */
        for (int i = 1; i < 8; i++) {
            double x = lo + (hi - lo) * i / 8.0;
            double a = ac_mp_cdf(x, y), b = atom + mp_numeric(x, y);
            if (fabs(a - b) > 1e-9)
                fails++;
        }
        ck_assert(fabs(ac_mp_cdf(hi, y) - 1) < 64 * U);
        ck_assert(fabs(ac_mp_cdf(lo * (1 - 1e-9), y) - atom) < 64 * U || lo == 0);
        ck_assert(ac_mp_pdf(hi + 1, y) == 0);
    }
    ck_assert_int_eq(fails, 0);
    ck_assert(isnan(ac_mp_cdf(1, 0)) && isnan(ac_mp_pdf(1, -1)));
}
END_TEST

START_TEST(test_predictions_hand)
{
    ac_rmt_pred p;
    /* N = 128, D = 256: first order (sqrt2 + 1)/(sqrt2 - 1) = 3 + 2 sqrt 2 */
    ck_assert(ac_rmt_predict(&p, 128, 256, NULL) == AC_OK);
    ck_assert(rel(p.first_order, 3 + 2 * sqrt(2.0)) < 16 * U);
    /* a = sqrt(255.5), b = sqrt(127.5): mu+ = (a+b)^2 = 743.9778..., etc.
     * (python floats) */
    ck_assert(rel(p.mu_plus, 743.97783865495114) < 16 * U);
    ck_assert(rel(p.sigma_plus, 14.528579400652571) < 16 * U);
    ck_assert(rel(p.mu_minus, 22.022161345048779) < 64 * U);
    ck_assert(rel(p.sigma_minus, 1.3902399958109071) < 64 * U);
    /* tw_point uses the tabulated TW1 mean (accurate to 1e-11) */
    ck_assert(rel(p.tw_point, 5.53646503118149) < 1e-10);
    ck_assert(rel(p.gordon_t, 2.7162030314812391) < 16 * U);
    ck_assert(rel(p.gordon_kappa95, 15.242925378660383) < 64 * U);
    ck_assert(rel(p.gordon_smax_hi, 16 + sqrt(128.0)) < 16 * U);
    ck_assert(p.regime == AC_REGIME_WIDE && isnan(p.edelman_median));
    /* the TW band brackets the median, which is near the point estimate */
    ck_assert(p.tw_q05 < p.tw_median && p.tw_median < p.tw_q95);
    ck_assert(rel(p.tw_median, p.tw_point) < 0.01);
    double c = ac_rmt_tw_kappa_cdf(&p, p.tw_median);
    ck_assert_msg(fabs(c - 0.5) < 1e-9, "cdf at the median %.12g", c);

    /* D < N: roles swapped */
    ck_assert(ac_rmt_predict(&p, 128, 64, NULL) == AC_OK);
    ck_assert(rel(p.first_order, 5.8284271247461881) < 16 * U);
    ck_assert(rel(p.tw_point, 5.3711252885151328) < 1e-10);
    ck_assert(rel(p.gordon_kappa95, 36.869807438768149) < 64 * U);
    ck_assert(p.regime == AC_REGIME_TALL);
    ck_assert(ac_rmt_predict(&p, 100, 37, NULL) == AC_OK);
    ck_assert(rel(p.mu_minus, 15.471994955529112) < 64 * U);
    ck_assert(rel(p.sigma_minus, 1.5837193362616093) < 64 * U);
    ck_assert(rel(p.tw_point, 3.7473747919800759) < 1e-10);

    /* very wide */
    ck_assert(ac_rmt_predict(&p, 128, 4096, NULL) == AC_OK);
    ck_assert(rel(p.first_order, 1.429474467709186) < 16 * U);
    ck_assert(rel(p.tw_point, 1.4163332317862936) < 1e-10);
    ck_assert(p.regime == AC_REGIME_VERY_WIDE);

    /* square: Edelman, first order infinite, no TW */
    ck_assert(ac_rmt_predict(&p, 128, 128, NULL) == AC_OK);
    ck_assert(isinf(p.first_order) && isnan(p.tw_point) && isinf(p.gordon_kappa95));
    ck_assert(rel(p.edelman_median, 128 * 3.6713177237995387) < 16 * U);
    ck_assert(rel(p.edelman_elog, log(128.0) + 1.537089435383546) < 1e-9);
    ck_assert(p.regime == AC_REGIME_SQUARE);
    ck_assert(isnan(ac_rmt_tw_kappa_cdf(&p, 10)));

    /* 1 x 1 and bad sizes */
    ck_assert(ac_rmt_predict(&p, 1, 1, NULL) == AC_OK);
    ac_err err;
    ck_assert_int_eq(ac_rmt_predict(&p, 0, 5, &err), AC_EUSAGE);
    ck_assert_int_eq(ac_rmt_predict(&p, 5, 0, &err), AC_EUSAGE);
}
END_TEST

START_TEST(test_predictions_math_md)
{
    /* doc/mathematics.md §5.4: reference sample means (400 trials) for N = 128, d = 64,
     * and "TW within 1% for every |D - N| >= 32".  The references carry
     * their own sampling error (se <= 0.5%), so 1% is the claim itself. */
    static const struct {
        size_t h;
        double mean;
    } ref[] = {{1, 5.39}, {3, 9.23}, {4, 5.54}, {8, 2.91}, {16, 2.054}, {32, 1.644}, {64, 1.416}};
    for (size_t i = 0; i < sizeof ref / sizeof *ref; i++) {
        ac_rmt_pred p;
        ck_assert(ac_rmt_predict(&p, 128, 64 * ref[i].h, NULL) == AC_OK);
        ck_assert_msg(rel(p.tw_point, ref[i].mean) < 0.01, "h = %zu: TW %.4f vs %.4f", ref[i].h,
                      p.tw_point, ref[i].mean);
    }
    /* first-order bias: +8% at D = 64, +5% at D = 256, +1% at D = 4096
     * (doc/mathematics.md §5.2, rounded to the percent) */
    ac_rmt_pred p;
    ac_rmt_predict(&p, 128, 64, NULL);
    ck_assert(fabs(p.first_order / 5.39 - 1 - 0.08) < 0.01);
    ac_rmt_predict(&p, 128, 256, NULL);
    ck_assert(fabs(p.first_order / 5.54 - 1 - 0.05) < 0.01);
    ac_rmt_predict(&p, 128, 4096, NULL);
    ck_assert(fabs(p.first_order / 1.416 - 1 - 0.01) < 0.005);
}
END_TEST

START_TEST(test_regimes)
{
    ck_assert(ac_rmt_regime_of(128, 96) == AC_REGIME_TALL);
    ck_assert(ac_rmt_regime_of(128, 97) == AC_REGIME_SQUARE);
    ck_assert(ac_rmt_regime_of(128, 159) == AC_REGIME_SQUARE);
    ck_assert(ac_rmt_regime_of(128, 160) == AC_REGIME_WIDE);
    ck_assert(ac_rmt_regime_of(128, 2047) == AC_REGIME_WIDE);
    ck_assert(ac_rmt_regime_of(128, 2048) == AC_REGIME_VERY_WIDE);
    ck_assert(ac_rmt_regime_of(1, 1) == AC_REGIME_SQUARE);
    ck_assert_str_eq(ac_rmt_regime_name(AC_REGIME_VERY_WIDE), "D>>N");
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("rmt");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_tw1_moments);
    tcase_add_test(tc, test_tw1_table_vs_direct);
    tcase_add_test(tc, test_edelman);
    tcase_add_test(tc, test_mp);
    tcase_add_test(tc, test_predictions_hand);
    tcase_add_test(tc, test_predictions_math_md);
    tcase_add_test(tc, test_regimes);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
