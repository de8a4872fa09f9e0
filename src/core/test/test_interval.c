/* test_interval.c — stage-0 rigorous arithmetic against exact / high-precision
 * oracles (MPFR, Arb).  Every test checks containment (soundness) and, where a
 * width is promised, tightness. */
#include <config.h>

#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <string.h>

#include "core/ac_arb.h"
#include "attncheck/interval.h"
#include "testutil.h"

/* Hot loops record failures instead of calling ck_assert (each passing
 * ck_assert costs a pipe write in Check's fork mode); the first message is
 * printed and the test asserts once at the end. */
static long soft_fails;
#define SOFT_CHECK(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            if (soft_fails++ == 0) {                                           \
                fprintf(stderr, __VA_ARGS__);                                  \
                fputc('\n', stderr);                                           \
            }                                                                  \
        }                                                                      \
    } while (0)
#define SOFT_DONE() ck_assert_msg(soft_fails == 0, "%ld failed checks (first printed above)", soft_fails)

/* ---- directed rounding --------------------------------------------------- */

START_TEST(test_up_dn)
{
    ck_assert(ac_up(0.0) == AC_ETA);
    ck_assert(ac_up(-0.0) == AC_ETA);
    ck_assert(ac_dn(0.0) == -AC_ETA);
    ck_assert(ac_up(1.0) == nextafter(1.0, 2.0));
    ck_assert(ac_dn(1.0) == nextafter(1.0, 0.0));
    ck_assert(ac_up(-1.0) == nextafter(-1.0, 0.0));
    ck_assert(ac_dn(-AC_ETA) == -2 * AC_ETA);
    ck_assert(ac_up(-AC_ETA) == 0.0);
    ck_assert(ac_up(DBL_MAX) == INFINITY);
    ck_assert(ac_dn(-DBL_MAX) == -INFINITY);
    ck_assert(ac_up(INFINITY) == INFINITY);
    ck_assert(isnan(ac_up(NAN)));
    test_rng r;
    test_rng_init(&r, 1);
    for (int i = 0; i < 100000; i++) {
        uint64_t b = test_rng_u64(&r);
        double x;
        memcpy(&x, &b, sizeof x);
        if (!isfinite(x))
            continue;
        SOFT_CHECK(ac_up(x) == nextafter(x, INFINITY), "up(%a)", x);
        SOFT_CHECK(ac_dn(x) == nextafter(x, -INFINITY), "dn(%a)", x);
    }
    SOFT_DONE();
}
END_TEST

/* The scalar rule: the exact result of one RN operation lies in [dn(c), up(c)]. */
START_TEST(test_scalar_ops_enclose)
{
    test_rng r;
    test_rng_init(&r, 2);
    mpfr_t a, b, c;
    mpfr_inits2(2200, a, b, c, (mpfr_ptr)0);
    for (int i = 0; i < 200000; i++) {
        double x = ldexp(test_rng_range(&r, -1, 1), (int)test_rng_range(&r, -1070, 1000));
        double y = ldexp(test_rng_range(&r, -1, 1), (int)test_rng_range(&r, -1070, 20));
        mpfr_set_d(a, x, MPFR_RNDN);
        mpfr_set_d(b, y, MPFR_RNDN);
        mpfr_add(c, a, b, MPFR_RNDN); /* exact at 2200 bits */
        SOFT_CHECK(mpfr_cmp_d(c, ac_add_dn(x, y)) >= 0 && mpfr_cmp_d(c, ac_add_up(x, y)) <= 0,
                      "add %a %a", x, y);
        mpfr_mul(c, a, b, MPFR_RNDN);
        if (isfinite(x * y))
            SOFT_CHECK(mpfr_cmp_d(c, ac_mul_dn(x, y)) >= 0 &&
                              mpfr_cmp_d(c, ac_mul_up(x, y)) <= 0,
                          "mul %a %a", x, y);
        if (y != 0 && isfinite(x / y)) {
            mpfr_set_d(c, ac_div_dn(x, y), MPFR_RNDN);
            mpfr_mul(c, c, b, MPFR_RNDN);
            /* dn(x/y) * y <= x when y > 0 */
            if (y > 0)
                SOFT_CHECK(mpfr_cmp(c, a) <= 0, "div %a %a", x, y);
        }
    }
    mpfr_clears(a, b, c, (mpfr_ptr)0);
    SOFT_DONE();
}
END_TEST

/* ---- exp ------------------------------------------------------------------ */

static void check_exp_at(double x, mpfr_t e, int check_width)
{
    double lo, hi;
    ac_exp_enclose(x, &lo, &hi);
    mpfr_set_d(e, x, MPFR_RNDN);
    mpfr_exp(e, e, MPFR_RNDN); /* 300 bits: far below the enclosure width */
    SOFT_CHECK(lo <= hi, "exp(%a): lo > hi", x);
    /* strict containment of the 300-bit value is enough: the enclosure width
     * is >= 2^-48 relative, the MPFR error 2^-300 */
    SOFT_CHECK(mpfr_cmp_d(e, lo) >= 0, "exp(%a) = %.20g below lo %a", x,
                  mpfr_get_d(e, MPFR_RNDN), lo);
    if (hi != INFINITY)
        SOFT_CHECK(mpfr_cmp_d(e, hi) <= 0, "exp(%a) above hi %a", x, hi);
    if (check_width && lo > AC_REALMIN && hi < DBL_MAX) {
        double w = (hi - lo) / lo;
        SOFT_CHECK(w < 200 * AC_U, "exp(%a): relative width %g u is too loose", x, w / AC_U);
    }
}

START_TEST(test_exp_enclose)
{
    test_rng r;
    test_rng_init(&r, 3);
    mpfr_t e;
    mpfr_init2(e, 300);
    static const double special[] = {0.0, -0.0, 1.0, -1.0, 0x1p-1074, -0x1p-1074, 0x1p-60,
                                     0.34657359027997264, -0.34657359027997264,
                                     0.6931471805599453, -0.6931471805599453, 709.0, 708.9999,
                                     -708.3964185322641, -708.4, -720.0, -744.4400719213812,
                                     -745.1332191019411, -745.0, -745.19, 1e-300, -1e-300,
                                     355.0, -355.0, 88.72283905206835, 0.5, -0.5};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        check_exp_at(special[i], e, 1);
    for (int i = 0; i < 1000000; i++) {
        double x = test_rng_range(&r, -746, 709.5);
        check_exp_at(x, e, 1);
    }
    /* near multiples of ln 2 (reduction boundaries) and tiny arguments */
    for (int k = -1075; k <= 1023; k++) {
        double x = (double)k * 0.6931471805599453;
        check_exp_at(x, e, 1);
        check_exp_at(nextafter(x, INFINITY), e, 1);
        check_exp_at(x + 0.3465735902799726, e, 1);
        check_exp_at(x - 0.3465735902799726, e, 1);
    }
    for (int k = -1074; k < 0; k++) {
        check_exp_at(ldexp(1.0, k), e, 1);
        check_exp_at(-ldexp(1.0, k), e, 1);
    }
    /* the batch version: same containment, arguments across every range */
    {
        size_t nb = 200000;
        double *xs = malloc(nb * sizeof(double)), *bl = malloc(nb * sizeof(double)),
               *bh = malloc(nb * sizeof(double));
        for (size_t i = 0; i < nb; i++) {
            xs[i] = (i % 7 == 0) ? test_rng_range(&r, -800, 800) : test_rng_range(&r, -746, 709.5);
            if (i % 1001 == 0)
                xs[i] = (i % 2) ? -708.0 : 709.0;
        }
        xs[17] = NAN;
        ac_exp_enclose_array(xs, nb, bl, bh);
        for (size_t i = 0; i < nb; i++) {
            if (xs[i] != xs[i]) {
                SOFT_CHECK(bl[i] != bl[i], "batch exp(NaN) not NaN");
                continue;
            }
            mpfr_set_d(e, xs[i], MPFR_RNDN);
            mpfr_exp(e, e, MPFR_RNDN);
            SOFT_CHECK(mpfr_cmp_d(e, bl[i]) >= 0, "batch exp(%a) below lo %a", xs[i], bl[i]);
            SOFT_CHECK(bh[i] == INFINITY || mpfr_cmp_d(e, bh[i]) <= 0, "batch exp(%a) above hi", xs[i]);
            if (bl[i] > AC_REALMIN && bh[i] < DBL_MAX)
                SOFT_CHECK((bh[i] - bl[i]) / bl[i] < 400 * AC_U, "batch exp(%a) too wide", xs[i]);
        }
        free(xs);
        free(bl);
        free(bh);
    }
    mpfr_clear(e);
    SOFT_DONE();
    double lo, hi;
    ac_exp_enclose(800.0, &lo, &hi);
    ck_assert(hi == INFINITY && lo > 1e307);
    ac_exp_enclose(-800.0, &lo, &hi);
    ck_assert(lo == 0.0 && hi == AC_ETA);
    ac_exp_enclose(NAN, &lo, &hi);
    ck_assert(isnan(lo) && isnan(hi));
}
END_TEST

/* ac_exp_enclose_shift: El <= e^a, Eh >= e^b against MPFR, for pairs of
 * every width (0, one ulp, 1e-9 like a logit radius, across the 2^-10
 * switch, wide), arguments across the range, and the edges. */
START_TEST(test_exp_enclose_shift)
{
    test_rng r;
    test_rng_init(&r, 5);
    size_t nb = 100000;
    double *a = malloc(nb * sizeof(double)), *b = malloc(nb * sizeof(double));
    double *el = malloc(nb * sizeof(double)), *eh = malloc(nb * sizeof(double));
    double *t = malloc(nb * sizeof(double));
    static const double widths[] = {0, 0x1p-60, 1e-9, 0x1p-10, 0x1.0000000000001p-10, 0.3, 40};
    for (size_t i = 0; i < nb; i++) {
        a[i] = (i % 9 == 0) ? test_rng_range(&r, -800, 720) : test_rng_range(&r, -746, 709);
        double w = widths[i % 7];
        b[i] = i % 11 == 0 ? nextafter(a[i], INFINITY) : a[i] + w * test_rng_unif(&r);
        if (i % 7 == 3)
            b[i] = a[i] + 0x1p-10; /* exactly at the switch (after rounding) */
    }
    a[5] = -INFINITY;
    b[5] = -745.5;
    a[6] = 709.5;
    b[6] = INFINITY;
    ac_exp_enclose_shift(a, b, nb, el, eh, t);
    mpfr_t e;
    mpfr_init2(e, 300);
    for (size_t i = 0; i < nb; i++) {
        mpfr_set_d(e, a[i], MPFR_RNDN);
        mpfr_exp(e, e, MPFR_RNDN);
        SOFT_CHECK(mpfr_cmp_d(e, el[i]) >= 0, "shift: exp(%a) below El %a", a[i], el[i]);
        mpfr_set_d(e, b[i], MPFR_RNDN);
        mpfr_exp(e, e, MPFR_RNDN);
        SOFT_CHECK(eh[i] == INFINITY || mpfr_cmp_d(e, eh[i]) <= 0, "shift: exp(%a) above Eh %a",
                   b[i], eh[i]);
        /* narrow pairs stay tight: within 400 u plus the width */
        if (el[i] > AC_REALMIN && b[i] - a[i] <= 1e-9 && eh[i] < DBL_MAX && a[i] < 700)
            SOFT_CHECK((eh[i] - el[i]) / el[i] < 400 * AC_U + 1.01e-9, "shift: %a, %a too wide",
                       a[i], b[i]);
    }
    mpfr_clear(e);
    free(a);
    free(b);
    free(el);
    free(eh);
    free(t);
    SOFT_DONE();
}
END_TEST

/* ---- sums and norms ------------------------------------------------------- */

START_TEST(test_sum_norm)
{
    test_rng r;
    test_rng_init(&r, 4);
    mpfr_t s, t;
    mpfr_inits2(2300, s, t, (mpfr_ptr)0);
    for (int trial = 0; trial < 2000; trial++) {
        size_t n = (size_t)(test_rng_u64(&r) % 300);
        double x[300];
        int spread = (int)(test_rng_u64(&r) % 200);
        for (size_t i = 0; i < n; i++) {
            x[i] = ldexp(test_rng_range(&r, -1, 1), (int)(test_rng_u64(&r) % (spread + 1)) - 100);
            if (trial % 3 == 0 && i % 2 == 1)
                x[i] = -x[i - 1] * (1 + 0x1p-40); /* cancellation */
        }
        mpfr_set_zero(s, 1);
        for (size_t i = 0; i < n; i++)
            mpfr_add_d(s, s, x[i], MPFR_RNDN); /* exact */
        double lo, hi;
        ck_assert(ac_sum_enclose(x, n, 1, &lo, &hi));
        ck_assert_msg(mpfr_cmp_d(s, lo) >= 0 && mpfr_cmp_d(s, hi) <= 0, "sum n=%zu", n);
        mpfr_set_zero(s, 1);
        for (size_t i = 0; i < n; i++) {
            mpfr_set_d(t, x[i], MPFR_RNDN);
            mpfr_sqr(t, t, MPFR_RNDN);
            mpfr_add(s, s, t, MPFR_RNDN);
        }
        mpfr_sqrt(s, s, MPFR_RNDU);
        double nu = ac_norm2_up(x, n);
        ck_assert_msg(mpfr_cmp_d(s, nu) <= 0, "norm2 n=%zu", n);
        if (n > 0 && mpfr_get_d(s, MPFR_RNDN) > 1e-280)
            ck_assert_msg(nu <= mpfr_get_d(s, MPFR_RNDN) * (1 + (n + 10) * AC_U),
                          "norm2 too loose");
    }
    /* subnormal and huge entries */
    double y[4] = {0x1p-1074, 0x1p-1073, 3 * 0x1p-1074, 0};
    double nu = ac_norm2_up(y, 4);
    ck_assert(nu >= sqrt(1 + 4 + 9) * 0x1p-1074);
    double z[3] = {DBL_MAX, DBL_MAX, 1};
    ck_assert(ac_norm2_up(z, 3) == INFINITY || ac_norm2_up(z, 3) >= DBL_MAX);
    double w[2] = {1e300, 1e300};
    ck_assert(ac_norm2_up(w, 2) >= 1.4142135623730951e300);
    ck_assert(ac_norm2_up(w, 0) == 0.0);
    mpfr_clears(s, t, (mpfr_ptr)0);
}
END_TEST

/* ---- interval matrix product ---------------------------------------------- */

/* Fill a point matrix in [A.mid +- A.rad] and check C contains the exact
 * product of the points (Arb at 2400 bits is exact for these exponents). */
static void check_product(size_t m, size_t k, size_t n, int with_ra, int with_rb, int ta, int tb,
                          int expspread, test_rng *r)
{
    ac_imat A = {0}, B = {0}, C = {0};
    size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    ck_assert(ac_imat_init(&A, ar, ac, with_ra, NULL) == AC_OK);
    ck_assert(ac_imat_init(&B, br, bc, with_rb, NULL) == AC_OK);
    ck_assert(ac_imat_init(&C, m, n, 1, NULL) == AC_OK);
    double *pa = malloc((ar * ac + 1) * sizeof(double)), *pb = malloc((br * bc + 1) * sizeof(double));
    for (size_t i = 0; i < ar * ac; i++) {
        double x = ldexp(test_rng_gauss(r), (int)(test_rng_u64(r) % (expspread + 1)) - expspread / 2);
        if (test_rng_u64(r) % 17 == 0)
            x = 0;
        pa[i] = x;
        if (with_ra) {
            double mid = x + ldexp(test_rng_gauss(r), -30) * fabs(x);
            A.mid[i] = mid;
            A.rad[i] = ac_up(fabs(mid - x)) * (1 + (double)(test_rng_u64(r) % 3));
        } else {
            A.mid[i] = x;
        }
    }
    for (size_t i = 0; i < br * bc; i++) {
        double x = ldexp(test_rng_gauss(r), (int)(test_rng_u64(r) % (expspread + 1)) - expspread / 2);
        pb[i] = x;
        if (with_rb) {
            double mid = x * (1 + 0x1p-35);
            B.mid[i] = mid;
            B.rad[i] = ac_up(fabs(mid - x));
        } else {
            B.mid[i] = x;
        }
    }
    ck_assert(ac_imat_mul(&C, ta, &A, tb, &B, NULL) == AC_OK);
    arb_mat_t a, b, c;
    arb_mat_init(a, (slong)m, (slong)k);
    arb_mat_init(b, (slong)k, (slong)n);
    arb_mat_init(c, (slong)m, (slong)n);
    for (size_t i = 0; i < m; i++)
        for (size_t l = 0; l < k; l++)
            arb_set_d(arb_mat_entry(a, i, l), ta ? pa[l * ac + i] : pa[i * ac + l]);
    for (size_t l = 0; l < k; l++)
        for (size_t j = 0; j < n; j++)
            arb_set_d(arb_mat_entry(b, l, j), tb ? pb[j * bc + l] : pb[l * bc + j]);
    arb_mat_mul(c, a, b, 2400);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            arb_ptr e = arb_mat_entry(c, i, j);
            size_t idx = i * n + j;
            arb_t lo, hi;
            arb_init(lo);
            arb_init(hi);
            arb_set_d(lo, ac_imat_lo(&C, idx));
            arb_set_d(hi, ac_imat_hi(&C, idx));
            ck_assert_msg(arb_le(lo, e) && arb_le(e, hi),
                          "product %zux%zux%zu (ta=%d tb=%d ra=%d rb=%d) entry (%zu,%zu) not enclosed",
                          m, k, n, ta, tb, with_ra, with_rb, i, j);
            arb_clear(lo);
            arb_clear(hi);
        }
    arb_mat_clear(a);
    arb_mat_clear(b);
    arb_mat_clear(c);
    free(pa);
    free(pb);
    ac_imat_free(&A);
    ac_imat_free(&B);
    ac_imat_free(&C);
}

START_TEST(test_imat_mul_encloses)
{
    test_rng r;
    test_rng_init(&r, 5);
    static const size_t sizes[][3] = {{1, 1, 1}, {0, 3, 2}, {3, 0, 2}, {2, 5, 3},
                                      {7, 13, 5}, {17, 40, 9}, {64, 64, 64}, {5, 300, 4}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int ra = 0; ra < 2; ra++)
            for (int rb = 0; rb < 2; rb++)
                for (int ta = 0; ta < 2; ta++)
                    for (int tb = 0; tb < 2; tb++)
                        check_product(sizes[s][0], sizes[s][1], sizes[s][2], ra, rb, ta, tb,
                                      (int)(s * 37 % 200), &r);
}
END_TEST

START_TEST(test_imat_mul_tight)
{
    /* The radius of a point product is about k u |A||B|: for random data it
     * must stay within (k+5) u |A||B| of the midpoint. */
    test_rng r;
    test_rng_init(&r, 6);
    size_t n = 50;
    ac_imat A = {0}, C = {0};
    ac_imat_init(&A, n, n, 0, NULL);
    ac_imat_init(&C, n, n, 1, NULL);
    for (size_t i = 0; i < n * n; i++)
        A.mid[i] = test_rng_gauss(&r);
    ac_imat_mul(&C, AC_NOTRANS, &A, AC_NOTRANS, &A, NULL);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t l = 0; l < n; l++)
                s += fabs(A.mid[i * n + l]) * fabs(A.mid[l * n + j]);
            ck_assert(C.rad[i * n + j] <= (n + 5) * AC_U * s * 1.01 + 1e-300);
        }
    ac_imat_free(&A);
    ac_imat_free(&C);
    /* shape mismatch is a usage error */
    ac_imat X = {0}, Y = {0}, Z = {0};
    ac_imat_init(&X, 2, 3, 0, NULL);
    ac_imat_init(&Y, 2, 3, 0, NULL);
    ac_imat_init(&Z, 2, 3, 1, NULL);
    ac_err err;
    ck_assert_int_eq(ac_imat_mul(&Z, AC_NOTRANS, &X, AC_NOTRANS, &Y, &err), AC_EUSAGE);
    ac_imat_free(&X);
    ac_imat_free(&Y);
    ac_imat_free(&Z);
}
END_TEST

/* ---- softmax enclosure ---------------------------------------------------- */

/* The reference twin of ac_softmax_col_enclose: one column at a time, as
 * the library computed it before the blocked, row-by-row version. */
static int smx_ref(const double *lo, const double *hi, size_t n, size_t m,
                           double *plo, double *phi)
{
    int ok = 1;
    size_t nn = n ? n : 1;
    double *El = malloc(nn * sizeof(double)), *Eh = malloc(nn * sizeof(double));
    double *Al = malloc(nn * sizeof(double)), *Ah = malloc(nn * sizeof(double));
    double *T = malloc(nn * sizeof(double));
    if (!El || !Eh || !Al || !Ah || !T) {
        free(El);
        free(Eh);
        free(Al);
        free(Ah);
        free(T);
        for (size_t i = 0; i < n * m; i++) {
            plo[i] = 0.0;
            phi[i] = 1.0;
        }
        return 0;
    }
    for (size_t j = 0; j < m; j++) {
        double mx = -INFINITY;
        int bad = 0;
        for (size_t i = 0; i < n; i++) {
            double a = lo[i * m + j], b = hi[i * m + j];
            if (!isfinite(a) || !isfinite(b) || a > b)
                bad = 1;
            if (b > mx)
                mx = b;
        }
        if (bad) {
            ok = 0;
            for (size_t i = 0; i < n; i++) {
                plo[i * m + j] = 0.0;
                phi[i * m + j] = 1.0;
            }
            continue;
        }
        /* E-_i <= exp(lo_i - mx), E+_i >= exp(hi_i - mx); the shift cancels
         * in the ratios, so any mx works as long as the bounds are rigorous. */
        for (size_t i = 0; i < n; i++) {
            Al[i] = ac_sub_dn(lo[i * m + j], mx);
            Ah[i] = ac_sub_up(hi[i * m + j], mx);
        }
        ac_exp_enclose_shift(Al, Ah, n, El, Eh, T);
        double sl, sh, tmp;
        ac_sum_enclose(El, n, 1, &sl, &tmp);   /* sl <= sum E-_k */
        ac_sum_enclose(Eh, n, 1, &tmp, &sh);   /* sh >= sum E+_k */
        for (size_t i = 0; i < n; i++) {
            /* sum_{k != i} E+_k <= sh - E+_i; sum_{k != i} E-_k >= sl - E-_i */
            double oh = ac_sub_up(sh, Eh[i]);
            double ol = ac_sub_dn(sl, El[i]);
            if (ol < 0)
                ol = 0;
            double pl = ac_div_dn(El[i], ac_add_up(El[i], oh));
            double den = ac_add_dn(Eh[i], ol);
            double ph = den > 0 ? ac_div_up(Eh[i], den) : 1.0;
            if (!(pl >= 0))
                pl = 0;
            if (!(ph <= 1))
                ph = 1;
            plo[i * m + j] = pl;
            phi[i * m + j] = ph;
        }
    }
    free(El);
    free(Eh);
    free(Al);
    free(Ah);
    free(T);
    return ok;
}

/* The blocked version gives the twin's bits: blocks of 64 columns crossed,
 * wide and point intervals, bad columns (NaN, +-inf, lo > hi) among good. */
START_TEST(test_softmax_enclose_twin)
{
    test_rng r;
    test_rng_init(&r, 8);
    static const size_t shapes[][2] = {{1, 1}, {2, 63}, {50, 64}, {7, 65}, {33, 130}, {3, 200}, {120, 9}};
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++)
        for (int kind = 0; kind < 3; kind++) {
            size_t n = shapes[t][0], m = shapes[t][1];
            double *lo = malloc(6 * n * m * sizeof(double));
            double *hi = lo + n * m, *a = hi + n * m, *b = a + n * m, *c = b + n * m, *d = c + n * m;
            for (size_t i = 0; i < n * m; i++) {
                double x = 8 * test_rng_gauss(&r);
                double w = kind == 0 ? 0 : ldexp(test_rng_unif(&r), -(int)(test_rng_u64(&r) % 40));
                lo[i] = x - w;
                hi[i] = x + w;
            }
            if (kind == 2) /* bad entries in a few columns */
                for (size_t j = 0; j < m; j += 5) {
                    size_t i = (size_t)(test_rng_u64(&r) % n);
                    int e = (int)(j / 5 % 4);
                    if (e == 0)
                        lo[i * m + j] = NAN;
                    else if (e == 1)
                        hi[i * m + j] = INFINITY;
                    else if (e == 2)
                        lo[i * m + j] = -INFINITY;
                    else
                        lo[i * m + j] = hi[i * m + j] + 1;
                }
            int o1 = smx_ref(lo, hi, n, m, a, b), o2 = ac_softmax_col_enclose(lo, hi, n, m, c, d);
            ck_assert_int_eq(o1, o2);
            ck_assert_msg(!memcmp(a, c, n * m * sizeof(double)) && !memcmp(b, d, n * m * sizeof(double)),
                          "%zu x %zu kind %d: blocked softmax enclosure differs from the twin", n, m, kind);
            free(lo);
        }
}
END_TEST


START_TEST(test_softmax_enclose)
{
    test_rng r;
    test_rng_init(&r, 7);
    for (int trial = 0; trial < 300; trial++) {
        size_t n = 1 + test_rng_u64(&r) % 12, m = 1 + test_rng_u64(&r) % 5;
        double scale = ldexp(1.0, (int)(test_rng_u64(&r) % 12) - 2);
        double lo[144], hi[144], plo[144], phi[144], pt[144];
        for (size_t i = 0; i < n * m; i++) {
            double c = scale * test_rng_gauss(&r);
            double w = (trial % 4 == 0) ? 0.0 : ldexp(test_rng_unif(&r), -(int)(test_rng_u64(&r) % 50));
            lo[i] = c - w;
            hi[i] = c + w;
            double t = test_rng_unif(&r);
            pt[i] = (t < 0.3) ? lo[i] : (t < 0.6 ? hi[i] : c);
        }
        ck_assert(ac_softmax_col_enclose(lo, hi, n, m, plo, phi));
        arb_mat_t L, P;
        arb_mat_init(L, (slong)n, (slong)m);
        arb_mat_init(P, (slong)n, (slong)m);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < m; j++)
                arb_set_d(arb_mat_entry(L, i, j), pt[i * m + j]);
        for (size_t j = 0; j < m; j++) {
            arb_t s;
            arb_init(s);
            for (size_t i = 0; i < n; i++) {
                arb_exp(arb_mat_entry(P, i, j), arb_mat_entry(L, i, j), 3000);
                arb_add(s, s, arb_mat_entry(P, i, j), 3000);
            }
            for (size_t i = 0; i < n; i++) {
                arb_div(arb_mat_entry(P, i, j), arb_mat_entry(P, i, j), s, 3000);
                arb_t a, b;
                arb_init(a);
                arb_init(b);
                arb_set_d(a, plo[i * m + j]);
                arb_set_d(b, phi[i * m + j]);
                /* the 3000-bit ball must not lie outside [plo, phi]; where it
                 * straddles an end (p within 2^-3000 of 1, say) containment
                 * cannot be told apart at this precision */
                ck_assert_msg(!arb_lt(arb_mat_entry(P, i, j), a) && !arb_gt(arb_mat_entry(P, i, j), b),
                              "softmax (%zu,%zu) of %zux%zu not enclosed", i, j, n, m);
                if (trial % 4 == 0) /* every logit of the column is a point */
                    ck_assert_msg(phi[i * m + j] - plo[i * m + j] <= 1e-12 * (phi[i * m + j] + 1e-300) + 1e-300,
                                  "point softmax enclosure too wide: [%a, %a] n=%zu", plo[i * m + j], phi[i * m + j], n);
                arb_clear(a);
                arb_clear(b);
            }
            arb_clear(s);
        }
        arb_mat_clear(L);
        arb_mat_clear(P);
    }
    /* non-finite input: trivial bounds, failure reported */
    double lo[2] = {0, NAN}, hi[2] = {0, NAN}, pl[2], ph[2];
    ck_assert(!ac_softmax_col_enclose(lo, hi, 2, 1, pl, ph));
    ck_assert(pl[0] == 0 && ph[0] == 1);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("interval");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_up_dn);
    tcase_add_test(tc, test_scalar_ops_enclose);
    tcase_add_test(tc, test_exp_enclose);
    tcase_add_test(tc, test_exp_enclose_shift);
    tcase_add_test(tc, test_sum_norm);
    tcase_add_test(tc, test_imat_mul_encloses);
    tcase_add_test(tc, test_imat_mul_tight);
    tcase_add_test(tc, test_softmax_enclose);
    tcase_add_test(tc, test_softmax_enclose_twin);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
