/* test_mh_softmax.c — the column softmax of the small-layer forward pass
 * (src/attention/mh_softmax.c): its exp against MPFR, its 8-lane kernels
 * against their scalar twins, and the softmax against ac_softmax_cols.
 *
 * Bounds: the 8-lane exp and softmax give the same bits as their twins
 * (ac_mh_exp, ac_mh_softmax_cols_ref; stated bound 0).  ac_mh_exp has
 * relative error below 3u (u = 2^-53) where e^x is a normal double, plus
 * 2^-1074 absolute (one rounding to the subnormal grid) below
 * (doc/mathematics.md §4.11), checked against MPFR's exp at 128 bits.  The
 * exp is checked on a sweep of the whole range where it is not constant
 * (-750 to 715: zero, subnormal, normal and infinite results), on every
 * power of two and its neighbours, on random doubles of every exponent, on
 * the ties of k = x 16/ln2, and on -0, +-Inf and NaN; array lengths that
 * are not multiples of 8 exercise the masked tail.  The softmax is checked
 * on shapes with 1 row or 1 column, odd sizes, sizes that are not
 * multiples of the 8-column block, logits of spread up to 2000
 * (underflowing exps) and ties, with a sentinel past the matrix; every
 * column must sum to 1 within (rows + 2) 2u, and every entry must agree
 * with ac_softmax_cols (the library's exp, below 2u) within 16u relative
 * plus 2^-1070. */
#include <config.h>

#include <float.h>
#include <mpfr.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention/mh_softmax.h"
#include "attention/softmax.h"
#include "testutil.h"

/* same double, or both NaN */
static int same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

/* checks y = exp(x) lane by lane against the scalar twin (bits) and MPFR
 * (3u relative, plus one subnormal step 2^-1074); returns the number of failures and
 * reports the first */
static long check_exp(const double *x, size_t n, char *msg, size_t msglen)
{
    double *y = malloc((n + 1) * sizeof *y);
    ck_assert_ptr_nonnull(y);
    y[n] = -3.5; /* the masked tail must not write past n */
    ac_mh_exp_array(y, x, n);
    long bad = y[n] != -3.5;
    mpfr_t e, dd;
    mpfr_inits2(128, e, dd, (mpfr_ptr)0);
    for (size_t i = 0; i < n; i++) {
        double s = ac_mh_exp(x[i]);
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

START_TEST(test_exp_vs_scalar)
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
                  bad, total, msg, AC_MH_SOFTMAX_SIMD);
}
END_TEST

/* one softmax case; returns 1 on a mismatch */
static int one_case(size_t rows, size_t cols, double spread, int ties, test_rng *r, char *msg,
                    size_t msglen)
{
    size_t len = rows * cols;
    double *Z1 = malloc((len + 8) * sizeof *Z1), *Z2 = malloc((len + 8) * sizeof *Z2);
    double *Z3 = malloc((len + 8) * sizeof *Z3);
    double *sc = malloc((2 * cols + 1) * sizeof *sc);
    ck_assert(Z1 && Z2 && Z3 && sc);
    for (size_t i = 0; i < len; i++)
        Z1[i] = ties ? floor(3.0 * test_rng_unif(r)) : spread * test_rng_gauss(r);
    for (size_t i = len; i < len + 8; i++)
        Z1[i] = -7.25; /* sentinel past the matrix */
    memcpy(Z2, Z1, (len + 8) * sizeof *Z1);
    memcpy(Z3, Z1, (len + 8) * sizeof *Z1);
    ac_mh_softmax_cols(Z1, rows, cols);
    ac_mh_softmax_cols_ref(Z2, rows, cols);
    ac_softmax_cols(Z3, rows, cols, sc, sc + cols);
    int bad = memcmp(Z1, Z2, (len + 8) * sizeof *Z1) != 0;
    for (size_t i = 0; i < len + 8 && !bad; i++)
        if (!(fabs(Z1[i] - Z3[i]) <= 16.0 * 0x1p-53 * fabs(Z3[i]) + 0x1p-1070))
            bad = 1;
    for (size_t j = 0; j < cols && !bad; j++) {
        double s = 0;
        for (size_t a = 0; a < rows; a++)
            s += Z1[a * cols + j];
        if (!(fabs(s - 1.0) <= (double)(rows + 2) * DBL_EPSILON))
            bad = 1;
    }
    if (bad && !*msg)
        snprintf(msg, msglen, "rows %zu cols %zu spread %g ties %d", rows, cols, spread, ties);
    free(Z1);
    free(Z2);
    free(Z3);
    free(sc);
    return bad;
}

START_TEST(test_softmax_vs_twin)
{
    static const size_t rs[] = {1, 2, 3, 7, 8, 9, 16, 17, 33, 64, 65, 128};
    static const size_t cs[] = {1, 2, 5, 7, 8, 9, 15, 16, 17, 31, 64, 70, 129};
    static const double spreads[] = {1e-3, 1.0, 30.0, 2000.0};
    test_rng r;
    test_rng_init(&r, 78);
    int bad = 0, cases = 0;
    char msg[200] = "";
    for (size_t a = 0; a < sizeof rs / sizeof *rs; a++)
        for (size_t b = 0; b < sizeof cs / sizeof *cs; b++)
            for (size_t c = 0; c <= sizeof spreads / sizeof *spreads; c++) {
                int ties = c == sizeof spreads / sizeof *spreads;
                bad += one_case(rs[a], cs[b], ties ? 0 : spreads[c], ties, &r, msg, sizeof msg);
                cases++;
            }
    ck_assert_msg(bad == 0, "%d of %d softmax cases fail (first: %s; AVX-512: %d)",
                  bad, cases, msg, AC_MH_SOFTMAX_SIMD);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("mh_softmax");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_exp_vs_scalar);
    tcase_add_test(tc, test_softmax_vs_twin);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
