/* test_mh_softmax.c — the column softmax of the small-layer forward pass
 * (src/attention/mh_softmax.c): its 8-lane kernel against its scalar twin,
 * and the softmax against ac_softmax_cols.  (Its exp, ac_exp_tab16 of
 * core/exp_kernel.h, is tested in src/core/test/test_exp.c.)
 *
 * Bounds: the 8-lane softmax gives the same bits as its twin
 * (ac_mh_softmax_cols_ref; stated bound 0).  The softmax is checked
 * on shapes with 1 row or 1 column, odd sizes, sizes that are not
 * multiples of the 8-column block, logits of spread up to 2000
 * (underflowing exps) and ties, with a sentinel past the matrix; every
 * column must sum to 1 within (rows + 2) 2u, and every entry must agree
 * with ac_softmax_cols (the library's exp, below 2u) within 16u relative
 * plus 2^-1070. */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/mh_softmax.h"
#include "attention/softmax.h"
#include "testutil.h"

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
    test_no_timeout(tc);
    tcase_add_test(tc, test_softmax_vs_twin);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
