/* test_mh_gemm.c — the register-tiled product of the multi-head forward
 * pass (src/attention/mh_gemm.c) against its naive reference twin.
 *
 * Both compute every entry as one chain of AC_MADD over p = 0..k-1 followed
 * by one multiplication by alpha, so the stated bound is 0: the same bits.
 * Shapes cover every tile edge (m and n from 1 to 2 tiles + 1, i.e. not
 * multiples of the 8 x 16 tile or of the vector width), k = 0 and 1, A read
 * transposed in place (ras = 1), row strides larger than the row (a block of
 * a bigger matrix), and a destination whose neighbours must not be written
 * (masked stores).  Independently of the twin, one product of small
 * integers is checked against its exact value. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/mh_gemm.h"
#include "testutil.h"

static double *gauss(size_t len, test_rng *r, double scale)
{
    double *a = malloc((len ? len : 1) * sizeof *a);
    ck_assert_ptr_nonnull(a);
    for (size_t i = 0; i < len; i++)
        a[i] = scale * test_rng_gauss(r);
    return a;
}

/* one case: C = alpha A B with A m x k (transposed in storage when tr),
 * row strides padded by pad; compares the kernel with the twin bit for bit
 * and checks that the padding of C is untouched.  Returns 1 on a mismatch. */
static int one_case(size_t m, size_t n, size_t k, int tr, size_t pad, double alpha, test_rng *r,
                    char *msg, size_t msglen)
{
    size_t lda = (tr ? m : k) + pad, ldb = n + pad, ldc = n + pad;
    size_t rowsA = tr ? k : m;
    double *A = gauss(rowsA * lda, r, 1.0), *B = gauss(k * ldb + 1, r, 1.0);
    double *C1 = malloc((m * ldc + 8) * sizeof *C1), *C2 = malloc((m * ldc + 8) * sizeof *C2);
    ck_assert(C1 && C2);
    for (size_t i = 0; i < m * ldc + 8; i++)
        C1[i] = C2[i] = -7.25; /* sentinel in the padding */
    size_t ras = tr ? 1 : lda, cas = tr ? lda : 1;
    ac_mh_gemm(m, n, k, alpha, A, ras, cas, B, ldb, C1, ldc);
    ac_mh_gemm_ref(m, n, k, alpha, A, ras, cas, B, ldb, C2, ldc);
    int bad = memcmp(C1, C2, (m * ldc + 8) * sizeof *C1) != 0;
    for (size_t i = 0; i < m && !bad; i++)
        for (size_t j = n; j < ldc; j++)
            if (C1[i * ldc + j] != -7.25)
                bad = 1;
    for (size_t i = m * ldc; i < m * ldc + 8; i++)
        if (C1[i] != -7.25)
            bad = 1;
    if (bad && !*msg)
        snprintf(msg, msglen, "m %zu n %zu k %zu tr %d pad %zu alpha %g", m, n, k, tr, pad, alpha);
    free(A);
    free(B);
    free(C1);
    free(C2);
    return bad;
}

START_TEST(test_kernel_vs_twin)
{
    static const size_t ms[] = {1, 2, 7, 8, 9, 15, 16, 17, 24, 33};
    static const size_t ns[] = {1, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 64, 70};
    static const size_t ks[] = {0, 1, 2, 5, 8, 64, 129};
    test_rng r;
    test_rng_init(&r, 901);
    int bad = 0, cases = 0;
    char msg[200] = "";
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
            for (size_t c = 0; c < sizeof ks / sizeof *ks; c++) {
                int tr = (int)((a + b + c) % 2);
                size_t pad = (a + c) % 3 == 0 ? 0 : 5;
                double alpha = c % 2 ? 0.125 : 1.0 / sqrt(3.0);
                bad += one_case(ms[a], ns[b], ks[c], tr, pad, alpha, &r, msg, sizeof msg);
                cases++;
            }
    ck_assert_msg(bad == 0, "%d of %d cases differ from the twin (first: %s; AVX-512 kernel: %d)",
                  bad, cases, msg, AC_MH_GEMM_SIMD);
}
END_TEST

START_TEST(test_kernel_exact)
{
    /* small integers: every partial sum is exact, so C is the exact product
     * whatever the order; A(i, p) = i - p, B(p, j) = p + 2 j - 3 */
    size_t m = 19, n = 21, k = 13;
    double A[19 * 13], B[13 * 21], C[19 * 21];
    for (size_t i = 0; i < m; i++)
        for (size_t p = 0; p < k; p++)
            A[i * k + p] = (double)i - (double)p;
    for (size_t p = 0; p < k; p++)
        for (size_t j = 0; j < n; j++)
            B[p * n + j] = (double)p + 2.0 * (double)j - 3.0;
    ac_mh_gemm(m, n, k, 2.0, A, k, 1, B, n, C, n);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            long s = 0;
            for (size_t p = 0; p < k; p++)
                s += ((long)i - (long)p) * ((long)p + 2 * (long)j - 3);
            ck_assert_msg(C[i * n + j] == 2.0 * (double)s, "C(%zu, %zu) = %g, exact %ld", i, j,
                          C[i * n + j], 2 * s);
        }
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("mh_gemm");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_kernel_vs_twin);
    tcase_add_test(tc, test_kernel_exact);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
