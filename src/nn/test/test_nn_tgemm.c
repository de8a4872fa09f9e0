/* test_nn_tgemm.c — the register-tiled product of the training stack
 * (src/nn/nn_tgemm.c) against its naive twin, bit for bit: every entry is
 * the same chain of fused multiply-adds in the same order (nn/nn_tgemm.h),
 * so the two must give the same doubles (memcmp), on row counts, column
 * counts and inner sizes below, at and across the tile (8 x 24), the
 * vector (8) and the block of the inner dimension (128), including the
 * empty inner product, with B read in place and transposed, A read by
 * rows and by columns, padded row strides, the three initial values and a
 * scale.  Entries outside the m x n block are never written.  The same
 * for the triangular parts of causal attention (nn_tgemm_tri), plus the
 * count of terms each mode keeps, checked on a product of ones.  On builds
 * without AVX-512 nn_tgemm is the twin itself and the test checks the
 * wiring only.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "nn/nn_tgemm.h"
#include "testutil.h"

/* one case: C0 (m x n inside a row stride ldc, guard values around) */
static void check_case(test_rng *r, size_t m, size_t n, size_t k, int btrans, int atrans, int init,
                       double alpha)
{
    size_t pad = 3, ldc = n + pad;
    size_t ras = atrans ? 1 : k + pad, cas = atrans ? m + pad : 1;
    size_t na = atrans ? (k ? k : 1) * cas : (m ? m : 1) * ras;
    size_t ldb = btrans ? k + pad : n + pad, nb = btrans ? n * ldb : (k ? k : 1) * ldb;
    double *A = test_vec(na), *B = test_vec(nb), *bias = test_vec(n), *C1 = test_vec(m * ldc + 1),
           *C2 = test_vec(m * ldc + 1);
    for (size_t i = 0; i < na; i++)
        A[i] = test_rng_unif(r) - 0.5;
    for (size_t i = 0; i < nb; i++)
        B[i] = test_rng_unif(r) - 0.5;
    for (size_t i = 0; i < n; i++)
        bias[i] = test_rng_unif(r) - 0.5;
    for (size_t i = 0; i < m * ldc + 1; i++)
        C1[i] = C2[i] = test_rng_unif(r) - 0.5;
    nn_tgemm(m, n, k, alpha, A, ras, cas, B, ldb, btrans, C1, ldc, init, bias);
    nn_tgemm_ref(m, n, k, alpha, A, ras, cas, B, ldb, btrans, C2, ldc, init, bias);
    ck_assert_msg(memcmp(C1, C2, (m * ldc + 1) * sizeof *C1) == 0,
                  "m %zu n %zu k %zu btrans %d atrans %d init %d alpha %g", m, n, k, btrans,
                  atrans, init, alpha);
    free(A), free(B), free(bias), free(C1), free(C2);
}

START_TEST(test_tgemm_vs_ref)
{
    test_rng r;
    test_rng_init(&r, 71);
    const size_t ms[] = {1, 2, 7, 8, 9, 16, 17, 33};
    const size_t ns[] = {1, 5, 8, 9, 16, 23, 24, 25, 40, 48, 49, 64, 70};
    const size_t ks[] = {0, 1, 7, 64, 128, 129, 300};
    size_t cases = 0;
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
            for (size_t c = 0; c < sizeof ks / sizeof *ks; c++)
                for (int bt = 0; bt < 2; bt++)
                    for (int init = 0; init < 3; init++) {
                        int at = (int)((a + b + c + (size_t)init) % 2);
                        double alpha = (a + c) % 3 == 0 ? 0.125 : (a + c) % 3 == 1 ? 1.0 : -0.7;
                        check_case(&r, ms[a], ns[b], ks[c], bt, at, init, alpha);
                        cases++;
                    }
    ck_assert(cases == 8 * 13 * 7 * 6);
}
END_TEST

/* The triangular parts (nn_tgemm_tri): the same comparison, bit for bit,
 * with the entries a mode leaves alone still holding their old values. */
START_TEST(test_tgemm_tri_vs_ref)
{
    test_rng r;
    test_rng_init(&r, 72);
    const size_t ms[] = {1, 7, 8, 9, 17, 24, 33, 64, 70};
    const size_t ns[] = {1, 8, 9, 24, 25, 64, 70};
    const size_t ks[] = {0, 1, 9, 64, 129, 133};
    size_t cases = 0;
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
            for (size_t c = 0; c < sizeof ks / sizeof *ks; c++)
                for (int tri = NN_TRI_COLS; tri <= NN_TRI_KLO; tri++) {
                    size_t m = ms[a], n = ns[b], k = ks[c], pad = 2, ldc = n + pad;
                    int bt = (int)((a + c) % 2), at = (int)((b + (size_t)tri) % 2);
                    size_t ras = at ? 1 : k + pad, cas = at ? m + pad : 1;
                    size_t na = at ? (k ? k : 1) * cas : m * ras;
                    size_t ldb = bt ? k + pad : n + pad, nb = bt ? n * ldb : (k ? k : 1) * ldb;
                    double *A = test_vec(na), *B = test_vec(nb), *C1 = test_vec(m * ldc), *C2 = test_vec(m * ldc);
                    for (size_t i = 0; i < na; i++)
                        A[i] = test_rng_unif(&r) - 0.5;
                    for (size_t i = 0; i < nb; i++)
                        B[i] = test_rng_unif(&r) - 0.5;
                    for (size_t i = 0; i < m * ldc; i++)
                        C1[i] = C2[i] = test_rng_unif(&r) - 0.5;
                    double alpha = c % 2 ? 0.125 : 1.0;
                    nn_tgemm_tri(m, n, k, alpha, A, ras, cas, B, ldb, bt, C1, ldc, tri);
                    nn_tgemm_tri_ref(m, n, k, alpha, A, ras, cas, B, ldb, bt, C2, ldc, tri);
                    ck_assert_msg(memcmp(C1, C2, m * ldc * sizeof *C1) == 0,
                                  "tri %d m %zu n %zu k %zu", tri, m, n, k);
                    free(A), free(B), free(C1), free(C2);
                    cases++;
                }
    ck_assert(cases == 9 * 7 * 6 * 3);
}
END_TEST

/* The triangular twin is the formula: on a 10 x 10 x 10 product of ones,
 * row i's entries count the terms its mode keeps (i0 = 8 floor(i/8)). */
START_TEST(test_tgemm_tri_formula)
{
    size_t n = 10;
    double A[100], B[100], C[100];
    for (size_t i = 0; i < 100; i++)
        A[i] = B[i] = 1.0;
    for (int tri = NN_TRI_COLS; tri <= NN_TRI_KLO; tri++) {
        for (size_t i = 0; i < 100; i++)
            C[i] = -1.0;
        nn_tgemm_tri(n, n, n, 1.0, A, n, 1, B, n, 0, C, n, tri);
        for (size_t i = 0; i < n; i++) {
            size_t i0 = i / 8 * 8, e = i0 + 8 < n ? i0 + 8 : n;
            for (size_t j = 0; j < n; j++) {
                double want = tri == NN_TRI_COLS ? (j < e ? (double)n : -1.0)
                              : tri == NN_TRI_KHI ? (double)e
                                                  : (double)(n - i0);
                ck_assert_msg(C[i * n + j] == want, "tri %d (%zu, %zu): %g, want %g", tri, i, j,
                              C[i * n + j], want);
            }
        }
    }
}
END_TEST

/* The twin is the formula: a few entries by hand (2 x 2 x 3, B transposed,
 * bias), so that a wrong twin cannot hide a wrong kernel. */
START_TEST(test_tgemm_formula)
{
    const double A[6] = {1, 2, 3, 4, 5, 6};     /* 2 x 3 */
    const double W[6] = {1, 0, -1, 2, 1, 0};    /* B = W^T, W 2 x 3 */
    const double bias[2] = {0.5, -1};
    double C[4] = {9, 9, 9, 9}, R[4];
    nn_tgemm(2, 2, 3, 2.0, A, 3, 1, W, 3, 1, C, 2, NN_TG_BIAS, bias);
    /* row 0: 0.5 + (1 - 3) = -1.5, -1 + (2 + 2) = 3; row 1: 0.5 + (4 - 6), -1 + (8 + 5) */
    R[0] = 2 * -1.5, R[1] = 2 * 3.0, R[2] = 2 * -1.5, R[3] = 2 * 12.0;
    ck_assert(memcmp(C, R, sizeof C) == 0);
    nn_tgemm(2, 2, 3, 1.0, A, 3, 1, W, 3, 1, C, 2, NN_TG_ADD, NULL);
    R[0] = -3 - 2, R[1] = 6 + 4, R[2] = -3 - 2, R[3] = 24 + 13;
    ck_assert(memcmp(C, R, sizeof C) == 0);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("nn_tgemm");
    TCase *tc = tcase_create("tgemm");
    test_no_timeout(tc);
    tcase_add_test(tc, test_tgemm_vs_ref);
    tcase_add_test(tc, test_tgemm_formula);
    tcase_add_test(tc, test_tgemm_tri_vs_ref);
    tcase_add_test(tc, test_tgemm_tri_formula);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
