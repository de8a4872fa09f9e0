/* test_blas.c — the OpenBLAS core choice (a pure function) and its effect. */
#include <config.h>

#include <string.h>

#include "attncheck/blas.h"
#include "testutil.h"

START_TEST(test_better_core)
{
    /* generic fallbacks are replaced by the best kernels the CPU supports */
    ck_assert_str_eq(ac_blas_better_core("Prescott", 1, 1, 1), "SkylakeX");
    ck_assert_str_eq(ac_blas_better_core("Prescott", 0, 1, 1), "Haswell");
    ck_assert_str_eq(ac_blas_better_core("Core2", 0, 0, 1), "Sandybridge");
    ck_assert_str_eq(ac_blas_better_core("prescott", 1, 1, 1), "SkylakeX");
    ck_assert(ac_blas_better_core("Prescott", 0, 0, 0) == NULL);
    /* a real detection is kept */
    ck_assert(ac_blas_better_core("Cooperlake", 1, 1, 1) == NULL);
    ck_assert(ac_blas_better_core("Haswell", 1, 1, 1) == NULL);
    ck_assert(ac_blas_better_core("Zen", 1, 1, 1) == NULL);
    ck_assert(ac_blas_better_core(NULL, 1, 1, 1) == NULL);
    ck_assert(strlen(ac_blas_corename()) > 0);
    ac_blas_set_threads(1);
    ck_assert_int_eq(ac_blas_get_threads(), 1);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("blas");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_better_core);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
