/* test_imat_split.c — the split products (core/imat_split.c) and the head's
 * split stage and column-wise ball stage (attention/head.c) against exact
 * and high-precision oracles (Arb): every enclosure must contain the exact
 * value, on random, cancelling, badly scaled, huge and tiny inputs; the
 * optimised kernel agrees with its loop twin and does not depend on the
 * thread count; the split radius is far below the gamma_k radius. */
#include <config.h>

#include <float.h>
#include <math.h>
#include <string.h>

#include "core/ac_arb.h"
#include "core/imat_split.h"
#include "attncheck/blas.h"
#include "attncheck/head.h"
#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "imat_oracle.h"
#include "testutil.h"

static void check_case(int cls, size_t m, size_t k, size_t n, test_rng *r)
{
    double *A = malloc((m * k + 1) * sizeof(double)), *B = malloc((k * n + 1) * sizeof(double));
    ac_imat C = {0}, Cr = {0}, G = {0};
    oracle_inputs(cls, ORACLE_CANCEL_B, A, B, m, k, n, r);
    ac_mat Am = {m, k, A}, Bm = {k, n, B};
    ck_assert_int_eq(ac_imat_init(&C, m, n, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&Cr, m, n, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&G, m, n, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_mul_split(&C, &Am, &Bm, NULL), AC_OK);
    ac_split s;
    ck_assert_int_eq(ac_split_cols(&s, B, k, n, n, NULL), AC_OK);
    ck_assert_int_eq(ac_mul_split_ref(Cr.mid, Cr.rad, n, A, m, k, &s, NULL), AC_OK);
    ac_split_free(&s);
    ac_imat Ai = ac_imat_view(&Am), Bi = ac_imat_view(&Bm);
    ck_assert_int_eq(ac_imat_mul(&G, AC_NOTRANS, &Ai, AC_NOTRANS, &Bi, NULL), AC_OK);
    size_t finite = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            size_t e = i * n + j;
            SOFT(oracle_encloses(A, B, k, n, i, j, C.mid[e], C.rad[e]),
                 "class %d %zux%zux%zu: split entry (%zu,%zu) [%a +- %a] misses A B", cls, m, k, n,
                 i, j, C.mid[e], C.rad[e]);
            SOFT(oracle_encloses(A, B, k, n, i, j, Cr.mid[e], Cr.rad[e]),
                 "class %d: loop twin entry (%zu,%zu) misses A B", cls, i, j);
            /* the twins enclose the same number: their intervals meet */
            if (C.rad[e] < INFINITY && Cr.rad[e] < INFINITY)
                SOFT(fabs(C.mid[e] - Cr.mid[e]) <= C.rad[e] + Cr.rad[e],
                     "class %d: twins disagree at (%zu,%zu)", cls, i, j);
            if (C.rad[e] < INFINITY)
                finite++;
            if (cls == GAUSS || cls == CANCEL)
                SOFT(C.rad[e] <= 2 * AC_U * fabs(C.mid[e]) + 1e-4 * G.rad[e] + 2 * AC_REALMIN,
                     "class %d %zux%zux%zu: split radius %g not far below gamma_k radius %g", cls,
                     m, k, n, C.rad[e], G.rad[e]);
        }
    /* in range the stage must give finite radii; out of range it may not */
    if (cls != HUGE_ && cls != TINY)
        SOFT(finite == m * n, "class %d: %zu of %zu radii infinite", cls, m * n - finite, m * n);
    ac_imat_free(&C);
    ac_imat_free(&Cr);
    ac_imat_free(&G);
    free(A);
    free(B);
}

START_TEST(test_split_encloses)
{
    test_rng r;
    test_rng_init(&r, test_seed_value + 11);
    static const size_t sizes[][3] = {{1, 1, 1},    {3, 1, 4},   {5, 7, 3},   {17, 40, 9},
                                      {40, 40, 40}, {4, 300, 5}, {130, 20, 6}};
    fails = 0;
    for (int cls = 0; cls < NCLASS; cls++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            check_case(cls, sizes[s][0], sizes[s][1], sizes[s][2], &r);
    ck_assert_msg(fails == 0, "%ld failed checks (first printed above)", fails);
}
END_TEST

START_TEST(test_split_edge)
{
    /* empty shapes, k = 0, non-finite input, mismatched shapes */
    double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, -1, 2, 0.5, 3};
    ac_mat A0 = {2, 0, a}, B0 = {0, 3, b}, A = {2, 3, a}, B = {3, 2, b};
    ac_imat C = {0};
    ck_assert_int_eq(ac_imat_init(&C, 2, 3, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_mul_split(&C, &A0, &B0, NULL), AC_OK);
    for (int i = 0; i < 6; i++)
        ck_assert(C.mid[i] == 0 && C.rad[i] == 0);
    ck_assert_int_eq(ac_imat_mul_split(&C, &A, &B, NULL), AC_EUSAGE);
    ac_imat_free(&C);
    ck_assert_int_eq(ac_imat_init(&C, 2, 2, 1, NULL), AC_OK);
    b[2] = NAN;
    ck_assert_int_eq(ac_imat_mul_split(&C, &A, &B, NULL), AC_EDATA);
    b[2] = -1;
    a[4] = INFINITY;
    ck_assert_int_eq(ac_imat_mul_split(&C, &A, &B, NULL), AC_EDATA);
    ac_imat_free(&C);
    /* beta keeps k 2^(2 beta) <= 2^53 */
    for (size_t k = 1; k < ((size_t)1 << 40); k = k * 3 + 1) {
        int b2 = 2 * ac_split_beta(k);
        ck_assert(ldexp((double)k, b2) <= 0x1p53);
        ck_assert(ldexp((double)k, b2 + 2) > 0x1p53); /* and is the largest such */
    }
}
END_TEST

START_TEST(test_split_threads)
{
    /* identical enclosures for any BLAS thread count */
    size_t m = 300, k = 257, n = 290;
    test_rng r;
    test_rng_init(&r, test_seed_value + 12);
    double *A = malloc(m * k * sizeof(double)), *B = malloc(k * n * sizeof(double));
    oracle_inputs(GAUSS, ORACLE_CANCEL_B, A, B, m, k, n, &r);
    ac_mat Am = {m, k, A}, Bm = {k, n, B};
    ac_imat C1 = {0}, C2 = {0};
    ck_assert_int_eq(ac_imat_init(&C1, m, n, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&C2, m, n, 1, NULL), AC_OK);
    int t0 = ac_blas_get_threads();
    ac_blas_set_threads(1);
    ck_assert_int_eq(ac_imat_mul_split(&C1, &Am, &Bm, NULL), AC_OK);
    ac_blas_set_threads(2);
    ck_assert_int_eq(ac_imat_mul_split(&C2, &Am, &Bm, NULL), AC_OK);
    ac_blas_set_threads(t0);
    ck_assert(memcmp(C1.mid, C2.mid, m * n * sizeof(double)) == 0);
    ck_assert(memcmp(C1.rad, C2.rad, m * n * sizeof(double)) == 0);
    ac_imat_free(&C1);
    ac_imat_free(&C2);
    free(A);
    free(B);
}
END_TEST

START_TEST(test_imat_mul_panels)
{
    /* ac_imat_mul forms |A| a panel of 256 rows of op(A) at a time and B's
     * factors 512 columns at a time: more rows and columns than one panel, A
     * given as is and transposed, point and interval A */
    size_t m = 600, k = 7, n = 1100;
    test_rng r;
    test_rng_init(&r, test_seed_value + 15);
    double *A = malloc(m * k * sizeof(double)), *At = malloc(m * k * sizeof(double));
    double *Ar = malloc(m * k * sizeof(double)), *Art = malloc(m * k * sizeof(double));
    double *B = malloc(k * n * sizeof(double)), *Bt = malloc(k * n * sizeof(double));
    oracle_inputs(GAUSS, ORACLE_CANCEL_B, A, B, m, k, n, &r);
    for (size_t l = 0; l < k; l++)
        for (size_t j = 0; j < n; j++)
            Bt[j * k + l] = B[l * n + j];
    for (size_t i = 0; i < m; i++)
        for (size_t l = 0; l < k; l++) {
            At[l * m + i] = A[i * k + l];
            Ar[i * k + l] = Art[l * m + i] = (i % 3) ? 0.0 : 1e-3;
        }
    fails = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int wr = 0; wr < 2; wr++)
            for (int tb = 0; tb < 2; tb++) {
                ac_imat Ai = {ta ? k : m, ta ? m : k, ta ? At : A, wr ? (ta ? Art : Ar) : NULL};
                ac_mat Bm = {tb ? n : k, tb ? k : n, tb ? Bt : B};
                ac_imat Bi = ac_imat_view(&Bm), C = {0};
                ck_assert_int_eq(ac_imat_init(&C, m, n, 1, NULL), AC_OK);
                ck_assert_int_eq(ac_imat_mul(&C, ta ? AC_TRANS : AC_NOTRANS, &Ai,
                                             tb ? AC_TRANS : AC_NOTRANS, &Bi, NULL),
                                 AC_OK);
                for (size_t i = 0; i < m; i++)
                    for (size_t j = 0; j < n; j++) {
                        double rad = C.rad[i * n + j];
                        if (wr) /* every A' in A: the radius covers the midpoint's box */
                            SOFT(rad >= 1e-3 * (i % 3 ? 0 : 1) * fabs(B[j]) * 0.999 &&
                                     rad < INFINITY,
                                 "ta %d: radius %g misses A_r", ta, rad);
                        if ((i + j) % 5 == 0 || j % 512 < 2 ||
                            i % 256 < 2) /* a sample: Arb is slow */
                            SOFT(oracle_encloses(A, B, k, n, i, j, C.mid[i * n + j], rad),
                                 "ta %d wr %d tb %d: (%zu,%zu) not enclosed", ta, wr, tb, i, j);
                    }
                ac_imat_free(&C);
            }
    ck_assert_msg(fails == 0, "%ld failed checks (first printed above)", fails);
    free(A);
    free(At);
    free(Ar);
    free(Art);
    free(B);
    free(Bt);
}
END_TEST

/* ---- the head's split stage ------------------------------------------------ */

/* A Theorem-1 style head on X (n x n): Wk = X^-1, Wq = Wt X^-1 with
 * Wt = sqrt(n) log P, so the logits are Wt up to rounding; cond scales one
 * column of X (sigma_min(X) small makes the weights large), wscale scales X
 * down and the weights up by the same power of two. */
static void t1_head(ac_mat *X, ac_mat *Wk, ac_mat *Wq, ac_mat *P, size_t n, double cond, int wexp,
                    test_rng *r)
{
    ac_mat Wt = {0};
    ck_assert_int_eq(ac_mat_init(X, n, n, NULL), AC_OK);
    ck_assert_int_eq(ac_mat_init(P, n, n, NULL), AC_OK);
    ck_assert_int_eq(ac_mat_init(&Wt, n, n, NULL), AC_OK);
    ck_assert_int_eq(ac_mat_init(Wq, n, n, NULL), AC_OK);
    for (size_t i = 0; i < n * n; i++)
        X->data[i] = test_rng_gauss(r);
    for (size_t i = 0; i < n; i++)
        X->data[i * n + 1] = X->data[i * n] + X->data[i * n + 1] / cond; /* near-dependent */
    for (size_t j = 0; j < n; j++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += (P->data[i * n + j] = -log(test_rng_unif(r) + 1e-300)); /* Dirichlet(1) */
        for (size_t i = 0; i < n; i++)
            P->data[i * n + j] /= s;
    }
    for (size_t i = 0; i < n * n; i++)
        Wt.data[i] = sqrt((double)n) * log(P->data[i]);
    for (size_t i = 0; i < n * n; i++)
        X->data[i] = ldexp(X->data[i], -wexp);
    ck_assert_int_eq(ac_approx_pinv_fullcol(Wk, X, NULL), AC_OK);
    ck_assert_int_eq(ac_gemm(Wq, AC_NOTRANS, &Wt, AC_NOTRANS, Wk, NULL), AC_OK);
    ac_mat_free(&Wt);
}

START_TEST(test_head_split_stage)
{
    test_rng r;
    test_rng_init(&r, test_seed_value + 13);
    static const struct {
        size_t n;
        double cond;
        int wexp, pad;
    } cases[] = {{6, 1, 0, 0},      {20, 1e3, 0, 0},  {33, 1e6, 0, 0}, {24, 10, 400, 0},
                 {24, 10, -400, 0}, {48, 1e4, 30, 0}, {9, 10, 0, 20},  {12, 1e3, 0, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ac_mat X = {0}, Wk = {0}, Wq = {0}, P = {0};
        t1_head(&X, &Wk, &Wq, &P, cases[c].n, cases[c].cond, cases[c].wexp, &r);
        if (cases[c].pad) {
            /* Theorem 1's [X^+; 0] with dk = n + pad: zero rows (one of Wq's
             * padded rows nonzero where Wk's is zero: it still adds 0) */
            size_t n = cases[c].n, dk = n + cases[c].pad;
            ac_mat K2 = {0}, Q2 = {0};
            ck_assert_int_eq(ac_mat_init(&K2, dk, n, NULL), AC_OK);
            ck_assert_int_eq(ac_mat_init(&Q2, dk, n, NULL), AC_OK);
            memcpy(K2.data, Wk.data, n * n * sizeof(double));
            memcpy(Q2.data, Wq.data, n * n * sizeof(double));
            Q2.data[(dk - 1) * n] = 3.0;
            ac_mat_free(&Wk);
            ac_mat_free(&Wq);
            Wk = K2;
            Wq = Q2;
        }
        double l0, h0, l1, h1, l2, h2;
        ck_assert_int_eq(ac_head_maxdev_enclose(&l0, &h0, &X, &Wk, &Wq, &P, 0, NULL), AC_OK);
        ck_assert_int_eq(ac_head_maxdev_enclose(&l1, &h1, &X, &Wk, &Wq, &P, -1, NULL), AC_OK);
        ck_assert_int_eq(ac_head_maxdev_enclose(&l2, &h2, &X, &Wk, &Wq, &P, 600, NULL), AC_OK);
        /* one number in all three: the Arb ball at 600 bits is tight */
        ck_assert_msg(l1 <= h2 && l2 <= h1, "case %zu: split [%g, %g] misses Arb [%g, %g]", c, l1,
                      h1, l2, h2);
        ck_assert_msg(l0 <= h2 && l2 <= h0, "case %zu: gamma stage misses Arb", c);
        ck_assert_msg(h1 <= h0, "case %zu: split %g looser than gamma_k %g", c, h1, h0);
        /* the split stage is close to the truth: width within 1e-12 + 10% */
        ck_assert_msg(h1 - l1 <= 1e-12 + 0.1 * h2, "case %zu: split [%g, %g] too wide (Arb %g)", c,
                      l1, h1, h2);
        ac_mat_free(&X);
        ac_mat_free(&Wk);
        ac_mat_free(&Wq);
        ac_mat_free(&P);
    }
}
END_TEST

START_TEST(test_head_certify_columns)
{
    /* tol between the truth and the split stage's upper bound: the gamma_k and
     * split stages cannot prove, the ball stage recomputes only the columns
     * whose split bound exceeds tol and proves */
    test_rng r;
    test_rng_init(&r, test_seed_value + 14);
    ac_mat X = {0}, Wk = {0}, Wq = {0}, P = {0};
    t1_head(&X, &Wk, &Wq, &P, 16, 1e3, 0, &r);
    for (size_t i = 0; i < 16 * 16; i++) /* perturb P so the deviation is clearly > 0 */
        P.data[i] *= 1 + 1e-9 * (double)(i % 7);
    double l1, h1, l2, h2;
    ck_assert_int_eq(ac_head_maxdev_enclose(&l1, &h1, &X, &Wk, &Wq, &P, -1, NULL), AC_OK);
    ck_assert_int_eq(ac_head_maxdev_enclose(&l2, &h2, &X, &Wk, &Wq, &P, 600, NULL), AC_OK);
    ck_assert(h2 < h1);
    double tol = (h2 + h1) / 2;
    ac_schedule sched = {1, {128}};
    ac_cert cert;
    ck_assert_int_eq(ac_head_certify(&cert, &X, &Wk, &Wq, &P, tol, &sched, NULL), AC_OK);
    ck_assert_int_eq(cert.verdict, AC_PROVED);
    ck_assert_int_eq(cert.stage, 1);
    ck_assert_msg(strstr(cert.method, "of 16 columns") != NULL, "method: %s", cert.method);
    ck_assert(cert.hi <= tol && cert.lo <= h2 && l2 <= cert.hi);
    /* and a tol between the gamma_k stage's lower bound and the split
     * stage's is refuted by the split stage */
    double l0, h0;
    ck_assert_int_eq(ac_head_maxdev_enclose(&l0, &h0, &X, &Wk, &Wq, &P, 0, NULL), AC_OK);
    ck_assert(l0 < l1);
    ck_assert_int_eq(ac_head_certify(&cert, &X, &Wk, &Wq, &P, (l0 + l1) / 2, &sched, NULL), AC_OK);
    ck_assert_int_eq(cert.verdict, AC_REFUTED);
    ck_assert_int_eq(cert.stage, 0);
    ck_assert_msg(strstr(cert.method, "split") != NULL, "method: %s", cert.method);
    /* a non-finite weight: the split stage cannot run; no error, no verdict */
    Wq.data[3] = INFINITY;
    ck_assert_int_eq(ac_head_certify(&cert, &X, &Wk, &Wq, &P, 1e-3, &sched, NULL), AC_OK);
    ck_assert_int_eq(cert.verdict, AC_UNDECIDED);
    ac_mat_free(&X);
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    ac_mat_free(&P);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("imat_split");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_split_encloses);
    tcase_add_test(tc, test_split_edge);
    tcase_add_test(tc, test_split_threads);
    tcase_add_test(tc, test_imat_mul_panels);
    tcase_add_test(tc, test_head_split_stage);
    tcase_add_test(tc, test_head_certify_columns);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
