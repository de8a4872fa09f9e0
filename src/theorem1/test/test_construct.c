/* test_construct.c — the construction route's certificate of the
 * written weights must cover their actual error: max|Softmax(X'Wk'WqX /
 * sqrt(dk)) - P|, evaluated here in long double (an independent evaluation,
 * accurate to far below the errors of ~1e-16 checked), on tall and square X
 * with one panel of the trace of eq. (4) (n <= 128) and several (n > 128).
 * (A trace that dropped a panel's maxima reported 0 here.) */
#include <config.h>

#include <math.h>

#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "testutil.h"

/* max_ij |Softmax((Wk X)'(Wq X)/sqrt(dk))_ij - P_ij|, columns as softmax groups */
static long double actual_error(const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                                const ac_mat *P)
{
    size_t d = X->rows, n = X->cols, dk = Wk->rows;
    long double *A = calloc(dk * n, sizeof(long double)), *B = calloc(dk * n, sizeof(long double));
    long double *L = malloc(n * sizeof(long double)), e = 0;
    for (size_t k = 0; k < dk; k++)
        for (size_t j = 0; j < n; j++)
            for (size_t l = 0; l < d; l++) {
                A[k * n + j] += (long double)AC_MAT(Wk, k, l) * AC_MAT(X, l, j);
                B[k * n + j] += (long double)AC_MAT(Wq, k, l) * AC_MAT(X, l, j);
            }
    for (size_t j = 0; j < n; j++) {
        long double mx = -INFINITY, s = 0;
        for (size_t i = 0; i < n; i++) {
            long double t = 0;
            for (size_t k = 0; k < dk; k++)
                t += A[k * n + i] * B[k * n + j];
            L[i] = t / sqrtl((long double)dk);
            mx = L[i] > mx ? L[i] : mx;
        }
        for (size_t i = 0; i < n; i++)
            s += (L[i] = expl(L[i] - mx));
        for (size_t i = 0; i < n; i++) {
            long double dv = fabsl(L[i] / s - AC_MAT(P, i, j));
            e = dv > e ? dv : e;
        }
    }
    free(A);
    free(B);
    free(L);
    return e;
}

START_TEST(test_weights_cert_covers_error)
{
    static const size_t cases[][2] = {{7, 5}, {5, 5}, {12, 9}, {130, 130}, {140, 131}, {260, 257}};
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        size_t d = cases[t][0], n = cases[t][1];
        ac_mat X = {0}, P = {0};
        ck_assert(ac_t1_generate(&X, &P, d, n, 11 + t, NULL) == AC_OK);
        ac_t1_opts o;
        ac_t1_opts_default(&o);
        ac_t1_result res;
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert(res.route == AC_T1_ROUTE_CONSTRUCT && res.Wk.data && res.Wq.data);
        long double e = actual_error(&X, &res.Wk, &res.Wq, &P);
        ck_assert_msg((long double)res.weights_cert.hi >= e * (1 - 1e-6L) && res.weights_cert.hi > 0,
                      "%zu x %zu: certificate %g below the actual error %Lg", d, n,
                      res.weights_cert.hi, e);
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("t1_construct");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_weights_cert_covers_error);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
