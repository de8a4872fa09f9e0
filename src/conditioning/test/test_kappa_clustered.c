/* test_kappa_clustered.c — kappa of nearly rank-deficient blocks, the shape of
 * trained attention blocks (attncheck condition --model): A = u v^T + eps E
 * with eps down to 1e-7 has a cluster of tiny eigenvalues of A^T A (or
 * A A^T); the Gram route's bisection (LAPACK dstebz) then finds several
 * eigenvalues where one is asked for, and must have room for them (it
 * overflowed a two-entry stack array before).  Every kappa is checked
 * against LAPACK's SVD of the same matrix within the stated bound. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "attncheck/condition.h"
#include "testutil.h"

static double kappa_svd(const ac_mat *A)
{
    size_t m = A->rows < A->cols ? A->rows : A->cols;
    double *c = malloc(A->rows * A->cols * sizeof *c), *s = malloc(m * sizeof *s);
    memcpy(c, A->data, A->rows * A->cols * sizeof *c);
    /* the row-major rows x cols array is the column-major cols x rows A^T */
    lapack_int info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', (lapack_int)A->cols,
                                     (lapack_int)A->rows, c, (lapack_int)A->cols, s, NULL, 1,
                                     NULL, 1);
    ck_assert_int_eq(info, 0);
    double k = s[0] / s[m - 1];
    free(c);
    free(s);
    return k;
}

START_TEST(test_clustered_small_eigenvalues)
{
    static const size_t shapes[][2] = {{12, 128}, {25, 32}, {40, 32}, {63, 32}, {64, 64}, {16, 8}};
    static const double eps[] = {1e-2, 1e-4, 1e-6, 1e-7, 1e-9, 1e-12, 0};
    test_rng r;
    test_rng_init(&r, 71);
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
        for (size_t ei = 0; ei < sizeof eps / sizeof *eps; ei++) {
            size_t N = shapes[si][0], D = shapes[si][1];
            ac_mat A = {0, 0, NULL};
            ac_err err;
            ck_assert_int_eq(ac_mat_init(&A, N, D, &err), AC_OK);
            double u[256], v[256];
            for (size_t i = 0; i < N; i++)
                u[i] = 1 + 0.1 * test_rng_unif(&r);
            for (size_t j = 0; j < D; j++)
                v[j] = 1 + 0.1 * test_rng_unif(&r);
            for (size_t i = 0; i < N; i++)
                for (size_t j = 0; j < D; j++)
                    A.data[i * D + j] = u[i] * v[j] + eps[ei] * (2 * test_rng_unif(&r) - 1);
            ac_cond_sample s;
            ck_assert_int_eq(ac_cond_kappa(&A, 1e-8, -1, 1024, &s, &err), AC_OK);
            double ref = kappa_svd(&A);
            /* the SVD's own relative error on kappa is about 2 M u kappa:
             * a comparison only while that is small; beyond, kappa must
             * be huge or unresolved (eps = 0: rank one) */
            double tol = 1e-8 + 4.0 * (double)(N > D ? N : D) * 0x1p-53 * ref;
            if (!(tol < 1e-3)) {
                ck_assert_msg(!s.resolved || s.kappa > 1e8, "N %zu D %zu eps %g: kappa %g",
                              N, D, eps[ei], s.kappa);
                ac_mat_free(&A);
                continue;
            }
            ck_assert_msg(fabs(s.kappa / ref - 1) <= tol,
                          "N %zu D %zu eps %g: kappa %.15g, SVD %.15g (route %d)", N, D,
                          eps[ei], s.kappa, ref, s.route);
            ac_mat_free(&A);
        }
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("model_kappa");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_clustered_small_eigenvalues);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
