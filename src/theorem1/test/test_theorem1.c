/* test_theorem1.c — Theorem 1: construction, the decision procedure and
 * input validation (the head itself: test_head.c).
 *
 * Oracles: a dense least-squares solve
 * (LAPACK on the n^2 x n design matrix) for the log-domain residual rho;
 * the paper's exact rho = log(3)/sqrt(2); and, for soundness of the distance
 * lower bound, random heads, none of which may come closer to P than the
 * certified dist_lo. */
#include <config.h>

#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <mpfr.h>
#include <string.h>

#include "attncheck/linalg.h"
#include "attncheck/rng.h"
#include "attncheck/theorem1.h"
#include "core/sum_exact.h"
#include "testutil.h"

static void opts(ac_t1_opts *o, size_t dk)
{
    ac_t1_opts_default(o);
    o->dk = dk;
}

/* ---- route 1: the construction -------------------------------------------- */

START_TEST(test_construction_proves)
{
    static const size_t cases[][3] = {{1, 1, 1}, {3, 3, 3}, {8, 8, 8}, {12, 8, 8},
                                      {8, 8, 20}, {40, 17, 17}, {64, 64, 64}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t d = cases[c][0], n = cases[c][1], dk = cases[c][2];
        ac_mat X = {0}, P = {0}, S = {0};
        ac_t1_generate(&X, &P, d, n, test_seed_value + c, NULL);
        ac_t1_opts o;
        opts(&o, dk);
        double d0[64];
        for (size_t j = 0; j < n; j++)
            d0[j] = 0.5 + (double)(j % 5); /* any positive diagonal (paper 1, eq. (6)) */
        if (c % 2) {
            o.d0 = d0;
            o.nd0 = n;
        }
        ac_t1_result res;
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert_msg(res.verdict == AC_PROVED, "case %zu not proved", c);
        ck_assert_int_eq(res.route, AC_T1_ROUTE_CONSTRUCT);
        ck_assert_int_eq(res.exact, AC_PROVED);
        ck_assert_int_eq(res.rank, (long)n);
        ck_assert(res.Wk.rows == dk && res.Wk.cols == d && res.Wq.rows == dk);
        /* the written weights reproduce P; the certified bound covers the
         * double recomputation up to its own rounding */
        ck_assert(ac_head_softmax(&S, &X, &res.Wk, &res.Wq, NULL) == AC_OK);
        double e = 0;
        for (size_t i = 0; i < n * n; i++)
            e = fmax(e, fabs(S.data[i] - P.data[i]));
        ck_assert_msg(e <= res.weights_cert.hi + 1e4 * (double)(d + n) * AC_U,
                      "double error %g above the certified %g", e, res.weights_cert.hi);
        ck_assert(res.weights_cert.hi < 1e-8);
        /* dist_lo: the column-sum bound, 0 exactly when every column of P
         * sums to exactly 1 (summed exactly, doc/mathematics.md §3.6) */
        int ones = 1;
        for (size_t j = 0; j < n; j++)
            ones &= ac_sum_is_exactly(P.data + j, n, n, 1.0);
        ck_assert((res.dist_lo == 0) == ones);
        ck_assert(res.dist_lo <= 4 * AC_U && res.dist_lo <= res.dist_hi && res.dist_hi <= o.tol);
        /* the trace has the four steps of section 1.1 */
        int seen = 0;
        for (size_t s = 0; s < res.nsteps; s++)
            if (strstr(res.steps[s].name, "step 1") || strstr(res.steps[s].name, "eq. (4)") ||
                strstr(res.steps[s].name, "eq. (7)") || strstr(res.steps[s].name, "final"))
                seen++;
        ck_assert_int_eq(seen, 4);
        ac_t1_result_free(&res);
        ac_mat_free(&S);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* ---- route 2: the decision procedure -------------------------------------- */

START_TEST(test_paper_example)
{
    ac_mat X = {0}, P = {0};
    ck_assert(ac_t1_example_paper(&X, &P, NULL) == AC_OK);
    ac_t1_opts o;
    opts(&o, 1);
    ac_t1_result res;
    ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
    ck_assert_int_eq(res.verdict, AC_REFUTED);
    ck_assert_int_eq(res.exact, AC_REFUTED);
    /* rho = log(3)/sqrt(2) exactly */
    mpfr_t v;
    mpfr_init2(v, 200);
    mpfr_set_ui(v, 3, MPFR_RNDN);
    mpfr_log(v, v, MPFR_RNDN);
    mpfr_div_d(v, v, sqrt(2.0), MPFR_RNDN); /* sqrt(2) rounded: compare loosely below */
    double rho = log(3.0) / sqrt(2.0);
    ck_assert(res.rho_lo <= rho * (1 + 1e-15) && rho * (1 - 1e-15) <= res.rho_hi);
    ck_assert(res.rho_hi - res.rho_lo < 1e-15);
    mpfr_clear(v);
    /* the true distance is 0.25: column 2 is always (1/2, 1/2) */
    ck_assert(res.dist_lo <= 0.25 && 0.25 <= res.dist_hi);
    ck_assert(res.dist_lo > 0.08 && res.dist_hi < 0.25 + 1e-12);
    ac_t1_result_free(&res);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

/* rho by brute force: minimise ||T(L + 1c')||_F over c with a dense
 * least-squares solve (LAPACK dgels on the n^2 x n design matrix). */
static double rho_bruteforce(const ac_mat *X, const ac_mat *P)
{
    size_t d = X->rows, n = X->cols, N = n * n;
    ac_mat Pi = {0}, Xp = {0};
    ac_approx_pinv(&Xp, X, 1e-12, NULL);
    ac_mat_init(&Pi, n, n, NULL);
    ac_gemm(&Pi, AC_NOTRANS, &Xp, AC_NOTRANS, X, NULL);
    double *A = calloc(N * n, sizeof(double)), *b = calloc(N, sizeof(double));
    /* T(M) = M - Pi M Pi; column k of the design: T(1 e_k') */
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                double g = 0;
                for (size_t a = 0; a < n; a++)
                    g += AC_MAT(&Pi, i, a);
                A[(i * n + j) * n + k] = (j == k ? 1.0 : 0.0) - g * AC_MAT(&Pi, k, j);
            }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double v = log(AC_MAT(P, i, j));
            for (size_t a = 0; a < n; a++)
                for (size_t c = 0; c < n; c++)
                    v -= AC_MAT(&Pi, i, a) * log(AC_MAT(P, a, c)) * AC_MAT(&Pi, c, j);
            b[i * n + j] = -v;
        }
    LAPACKE_dgelss(LAPACK_ROW_MAJOR, (lapack_int)N, (lapack_int)n, 1, A, (lapack_int)n, b, 1,
                   (double[64]){0}, 1e-12, &(lapack_int){0});
    double r2 = 0;
    for (size_t i = n; i < N; i++)
        r2 += b[i] * b[i];
    free(A);
    free(b);
    ac_mat_free(&Pi);
    ac_mat_free(&Xp);
    (void)d;
    return sqrt(r2);
}

/* Random heads never beat the certified lower bound (soundness of dist_lo). */
static void random_heads_respect(const ac_mat *X, const ac_mat *P, size_t dk, double dist_lo,
                                 uint64_t seed)
{
    size_t d = X->rows;
    ac_rng r;
    for (int h = 0; h < 20; h++) {
        ac_mat Wk = {0}, Wq = {0};
        ac_mat_init(&Wk, dk, d, NULL);
        ac_mat_init(&Wq, dk, d, NULL);
        ac_rng_init(&r, seed, 55, (uint64_t)h);
        ac_rng_normal_fill(&r, Wk.data, dk * d);
        ac_rng_normal_fill(&r, Wq.data, dk * d);
        double s = ldexp(1.0, h % 5 - 2);
        for (size_t i = 0; i < dk * d; i++)
            Wq.data[i] *= s;
        double lo, hi;
        ac_head_maxdev_enclose(&lo, &hi, X, &Wk, &Wq, P, 0, NULL);
        ck_assert_msg(hi >= dist_lo, "a random head reached %g < certified lower bound %g", hi,
                      dist_lo);
        ac_mat_free(&Wk);
        ac_mat_free(&Wq);
    }
}

START_TEST(test_decide_random_refuted)
{
    for (int t = 0; t < 12; t++) {
        size_t d = 1 + (size_t)t % 4, n = d + 1 + (size_t)t % 5, dk = 1 + (size_t)t % d;
        ac_mat X = {0}, P = {0};
        ac_t1_generate(&X, &P, d, n, test_seed_value + 100 + t, NULL);
        ac_t1_opts o;
        opts(&o, dk);
        ac_t1_result res;
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert_int_eq(res.route, AC_T1_ROUTE_DECIDE);
        ck_assert_msg(res.verdict == AC_REFUTED, "random d<n instance %d: %s", t,
                      ac_verdict_name(res.verdict));
        ck_assert(res.dist_lo > 0 && res.dist_lo <= res.dist_hi);
        /* rho agrees with a brute-force least-squares solve */
        double rb = rho_bruteforce(&X, &P);
        ck_assert_msg(res.rho_lo <= rb * (1 + 1e-9) + 1e-12 && rb <= res.rho_hi * (1 + 1e-9) + 1e-12,
                      "rho [%g, %g] vs least squares %g", res.rho_lo, res.rho_hi, rb);
        random_heads_respect(&X, &P, dk, res.dist_lo, test_seed_value + t);
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

START_TEST(test_decide_representable_never_refuted)
{
    /* P produced by a head: C(tol) is true for tol >= 1e-8, so REFUTED would
     * be a soundness bug; with enough precision it must be PROVED. */
    for (int t = 0; t < 12; t++) {
        size_t d = 2 + (size_t)t % 4, n = d + 1 + (size_t)t % 4, dk = 1 + (size_t)t % d;
        ac_mat X = {0}, P = {0}, dummy = {0};
        ac_t1_generate(&X, &dummy, d, n, test_seed_value + 200 + t, NULL);
        ck_assert(ac_t1_generate_representable(&P, &X, dk, test_seed_value + t, NULL) == AC_OK);
        ac_t1_opts o;
        opts(&o, dk);
        ac_t1_result res;
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert_msg(res.verdict == AC_PROVED, "representable instance %d: %s (dist [%g, %g])",
                      t, ac_verdict_name(res.verdict), res.dist_lo, res.dist_hi);
        ck_assert(res.dist_lo <= res.dist_hi);
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
        ac_mat_free(&dummy);
    }
}
END_TEST

START_TEST(test_decide_dk_below_n_full_rank)
{
    /* d >= n, rank n, dk < n: the rank condition refutes a random P */
    ac_mat X = {0}, P = {0};
    ac_t1_generate(&X, &P, 8, 8, test_seed_value + 300, NULL);
    ac_t1_opts o;
    opts(&o, 4);
    ac_t1_result res;
    ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
    ck_assert_int_eq(res.verdict, AC_REFUTED);
    ck_assert(res.lowrank_lo > 0);
    random_heads_respect(&X, &P, 4, res.dist_lo, test_seed_value);
    ac_t1_result_free(&res);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

START_TEST(test_decide_special_row_spaces)
{
    /* (a) rank-deficient X with exact rank (row 3 = row 1 + 2 row 2),
     * (b) 1 in the row space of X (a row of ones),
     * (c) X 1 = 0 (every row sums to zero),
     * (d) X = 0. */
    for (int kind = 0; kind < 4; kind++) {
        size_t d = 3, n = 6;
        ac_mat X = {0}, P = {0};
        ac_t1_generate(&X, &P, d, n, test_seed_value + 400 + kind, NULL);
        for (size_t j = 0; j < n; j++) {
            AC_MAT(&X, 0, j) = (double)((int)(j * 7 % 5) - 2);
            AC_MAT(&X, 1, j) = (double)((int)(j * 3 % 4) - 1);
            if (kind == 0)
                AC_MAT(&X, 2, j) = AC_MAT(&X, 0, j) + 2 * AC_MAT(&X, 1, j);
            if (kind == 1)
                AC_MAT(&X, 2, j) = 1.0;
            if (kind == 3)
                AC_MAT(&X, 0, j) = AC_MAT(&X, 1, j) = AC_MAT(&X, 2, j) = 0.0;
        }
        if (kind == 2)
            for (size_t i = 0; i < d; i++) {
                double s = 0;
                for (size_t j = 0; j + 1 < n; j++)
                    s += AC_MAT(&X, i, j);
                AC_MAT(&X, i, n - 1) = -s; /* small integers / exact */
            }
        if (kind == 2)
            for (size_t i = 0; i < d; i++)
                for (size_t j = 0; j < n; j++)
                    AC_MAT(&X, i, j) = round(AC_MAT(&X, i, j) * 8) / 8;
        if (kind == 2)
            for (size_t i = 0; i < d; i++) {
                double s = 0;
                for (size_t j = 0; j + 1 < n; j++)
                    s += AC_MAT(&X, i, j);
                AC_MAT(&X, i, n - 1) = -s;
            }
        ac_t1_opts o;
        opts(&o, 2);
        ac_t1_result res;
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert_msg(res.verdict == AC_REFUTED, "kind %d: %s", kind, ac_verdict_name(res.verdict));
        if (kind == 0)
            ck_assert_int_eq(res.rank, 2);
        if (kind == 3) {
            ck_assert_int_eq(res.rank, 0);
            /* every head gives uniform columns: dist is known exactly */
            double dist = 0;
            for (size_t i = 0; i < n * n; i++)
                dist = fmax(dist, fabs(P.data[i] - 1.0 / (double)n));
            ck_assert(res.dist_lo <= dist * (1 + 1e-12) && dist <= res.dist_hi * (1 + 1e-12));
        } else {
            random_heads_respect(&X, &P, 2, res.dist_lo, test_seed_value + kind);
        }
        ac_t1_result_free(&res);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

START_TEST(test_undecided_not_guessed)
{
    /* a tolerance below what double weights reach and above the certified
     * lower bound: UNDECIDED, never PROVED or REFUTED */
    ac_mat X = {0}, P = {0}, dummy = {0};
    ac_t1_generate(&X, &dummy, 4, 8, 2, NULL);
    ac_t1_generate_representable(&P, &X, 2, 2, NULL);
    ac_t1_opts o;
    opts(&o, 2);
    o.tol = 1e-17;
    ac_t1_result res;
    ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
    if (res.verdict != AC_UNDECIDED)
        ck_assert_msg(res.dist_lo > o.tol || res.dist_hi <= o.tol, "verdict without a certificate");
    ac_t1_result_free(&res);
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&dummy);
}
END_TEST

/* ---- validation and generators -------------------------------------------- */

START_TEST(test_validate)
{
    ac_mat X = {0}, P = {0};
    ac_err err;
    double d0[3] = {1, 2, 3};
    ac_t1_generate(&X, &P, 3, 3, 1, NULL);
    ck_assert_int_eq(ac_t1_validate(&X, "X.npy", &P, "P.npy", d0, 3, "D0.npy", 3, &err), AC_OK);
    ck_assert_int_eq(ac_t1_validate(&X, "X.npy", &P, "P.npy", NULL, 0, NULL, 0, &err), AC_EUSAGE);
    AC_MAT(&P, 1, 2) = 0.0;
    ck_assert_int_eq(ac_t1_validate(&X, "X.npy", &P, "P.npy", NULL, 0, NULL, 3, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "P.npy") && strstr(err.msg, "not positive"));
    AC_MAT(&P, 1, 2) = NAN;
    ck_assert_int_eq(ac_t1_validate(&X, "X.npy", &P, "P.npy", NULL, 0, NULL, 3, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "NaN"));
    AC_MAT(&P, 1, 2) = 0.5; /* column 2 no longer sums to 1 */
    ck_assert_int_eq(ac_t1_validate(&X, "X.npy", &P, "P.npy", NULL, 0, NULL, 3, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "column 2 sums"));
    /* the message names the remedy by its field, not by a program's option */
    ck_assert_str_eq(err.fields, "normalize");
    ck_assert(strstr(err.msg, "or pass normalize)") && !strstr(err.msg, "--"));
    /* ac_t1_normalize makes it column-stochastic; a non-positive column is left */
    ac_t1_normalize(&P);
    ck_assert_int_eq(ac_t1_validate(&X, "X.npy", &P, "P.npy", NULL, 0, NULL, 3, &err), AC_OK);
    for (size_t j = 0; j < 3; j++) {
        double cs = 0;
        for (size_t i = 0; i < 3; i++)
            cs += AC_MAT(&P, i, j);
        ck_assert(fabs(cs - 1) <= 3 * AC_U);
    }
    AC_MAT(&P, 0, 1) = -1.0; /* the column sums to a negative number */
    double before = AC_MAT(&P, 2, 1);
    ac_t1_normalize(&P);
    ck_assert(AC_MAT(&P, 2, 1) == before);
    ac_mat_free(&P);
    ac_mat_free(&X);
    ac_t1_generate(&X, &P, 3, 3, 1, NULL);
    ac_mat_free(&X);
    ac_mat Xb = {0};
    ac_mat_init(&Xb, 3, 3, NULL);
    Xb.data[4] = INFINITY;
    ck_assert_int_eq(ac_t1_validate(&Xb, "X.npy", &P, "P.npy", NULL, 0, NULL, 3, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "X.npy") && strstr(err.msg, "(1, 1)") && strstr(err.msg, "Inf"));
    ac_mat_free(&Xb);
    ac_mat_init(&Xb, 3, 4, NULL);
    ck_assert_int_eq(ac_t1_validate(&Xb, "X.npy", &P, "P.npy", NULL, 0, NULL, 3, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "must be 4 x 4"));
    ac_mat_free(&Xb);
    ac_mat_init(&Xb, 3, 3, NULL);
    d0[1] = -1;
    ck_assert_int_eq(ac_t1_validate(&Xb, "X.npy", &P, "P.npy", d0, 3, "D0.npy", 3, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "D0.npy"));
    ck_assert_int_eq(ac_t1_validate(&Xb, "X.npy", &P, "P.npy", d0, 2, "D0.npy", 3, &err), AC_EDATA);
    /* within the documented tolerance 16 n u a column sum passes */
    d0[1] = 1;
    double s = 0;
    for (size_t i = 0; i < 3; i++)
        s += AC_MAT(&P, i, 0);
    AC_MAT(&P, 0, 0) += 8 * 3 * AC_U;
    ck_assert_int_eq(ac_t1_validate(&Xb, "X.npy", &P, "P.npy", NULL, 0, NULL, 3, &err), AC_OK);
    (void)s;
    ac_mat_free(&Xb);
    ac_mat_free(&P);
}
END_TEST

START_TEST(test_generators)
{
    ac_mat X1 = {0}, P1 = {0}, X2 = {0}, P2 = {0};
    ac_t1_generate(&X1, &P1, 5, 9, 42, NULL);
    ac_t1_generate(&X2, &P2, 5, 9, 42, NULL);
    ck_assert(memcmp(X1.data, X2.data, 45 * sizeof(double)) == 0);
    ck_assert(memcmp(P1.data, P2.data, 81 * sizeof(double)) == 0);
    for (size_t j = 0; j < 9; j++) {
        double s = 0;
        for (size_t i = 0; i < 9; i++) {
            ck_assert(AC_MAT(&P1, i, j) > 0);
            s += AC_MAT(&P1, i, j);
        }
        ck_assert(fabs(s - 1) <= ac_t1_colsum_tol(9));
    }
    ac_mat_free(&X2);
    ac_mat_free(&P2);
    ac_t1_generate(&X2, &P2, 5, 9, 43, NULL);
    ck_assert(memcmp(X1.data, X2.data, 45 * sizeof(double)) != 0);
    ac_mat_free(&X1);
    ac_mat_free(&P1);
    ac_mat_free(&X2);
    ac_mat_free(&P2);
    ac_err err;
    ck_assert_int_eq(ac_t1_generate(&X1, &P1, 0, 3, 1, &err), AC_EUSAGE);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("theorem1");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_construction_proves);
    tcase_add_test(tc, test_paper_example);
    tcase_add_test(tc, test_decide_random_refuted);
    tcase_add_test(tc, test_decide_representable_never_refuted);
    tcase_add_test(tc, test_decide_dk_below_n_full_rank);
    tcase_add_test(tc, test_decide_special_row_spaces);
    tcase_add_test(tc, test_undecided_not_guessed);
    tcase_add_test(tc, test_validate);
    tcase_add_test(tc, test_generators);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
