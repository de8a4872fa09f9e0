/* test_circuit.c — the circuits of src/models/circuit.c (doc/mathematics.md
 * §6.9, "Circuits"): the rank-dk core route against the full d x d product
 * (the two certified enclosures must intersect, and the core must be about
 * as tight) and against exact structure (Sylvester-Hadamard factors whose
 * product has known dyadic singular values), over the classes that break a
 * Cholesky route: random factors, rank-deficient ones (an exact zero
 * column, duplicated rows), scales 2^-500 and 2^500 (about 1e-150 and
 * 1e150), badly scaled columns, ill-conditioned factors, two query heads
 * sharing one key head (GQA).  A false claim (a true singular value outside
 * its enclosure, a rank range that excludes the rank) fails the test.
 *
 * Randomised tests take their seed from ATTNCHECK_TEST_SEED (printed on
 * failure).
 */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/models_impl.h"
#include "testutil.h"

static void fill_gauss(ac_mat *M, test_rng *r, double s)
{
    for (size_t i = 0; i < M->rows * M->cols; i++)
        M->data[i] = s * test_rng_gauss(r);
}

/* Both routes on A B; checks every i: the enclosures intersect, each is
 * ordered, values beyond dk are exactly 0 on the core; md_circuit agrees
 * with both.  Returns the largest ratio of md_circuit's width to the full
 * product's over the dk values; *core_ok, and *core_ratio the same ratio
 * for the core alone (0 if it did not certify). */
static double compare_routes(const ac_mat *A, const ac_mat *B, int *core_ok, double *core_ratio,
                             const char *what)
{
    double mworst = 0;
    ac_inspect_circuit c = {0}, f = {0}, m = {0};
    ac_err e = {0};
    size_t d = A->rows, dk = A->cols;
    ck_assert_int_eq(md_circuit_core(&c, core_ok, A, B, &e), AC_OK);
    ck_assert_int_eq(md_circuit_full(&f, A, B, &e), AC_OK);
    ck_assert_int_eq(md_circuit(&m, A, B, &e), AC_OK);
    ck_assert_int_eq(f.route, 0);
    double worst = 0;
    for (size_t i = 0; i < d; i++) {
        ck_assert_msg(f.lo[i] <= f.hi[i], "%s: full sigma_%zu [%g, %g]", what, i + 1, f.lo[i],
                      f.hi[i]);
        ck_assert_msg(m.lo[i] >= 0 && m.lo[i] <= m.hi[i] && m.lo[i] <= f.hi[i] &&
                      f.lo[i] <= m.hi[i],
                      "%s: md_circuit sigma_%zu [%.17g, %.17g], the full product [%.17g, %.17g]",
                      what, i + 1, m.lo[i], m.hi[i], f.lo[i], f.hi[i]);
        if (m.route != 1) /* the full product alone, or intersected with the core */
            ck_assert_msg(m.lo[i] >= f.lo[i] && m.hi[i] <= f.hi[i],
                          "%s: md_circuit (route %d) sigma_%zu not within the full product's",
                          what, m.route, i + 1);
        if (i < dk && f.hi[i] - f.lo[i] > 0 && f.hi[i] < INFINITY)
            mworst = fmax(mworst, (m.hi[i] - m.lo[i]) / (f.hi[i] - f.lo[i]));
        if (!*core_ok)
            continue;
        ck_assert_msg(c.lo[i] >= 0 && c.lo[i] <= c.hi[i], "%s: core sigma_%zu [%g, %g]", what, i + 1, c.lo[i],
                      c.hi[i]);
        ck_assert_msg(c.lo[i] <= f.hi[i] && f.lo[i] <= c.hi[i],
                      "%s: sigma_%zu: core [%.17g, %.17g] and full [%.17g, %.17g] disjoint",
                      what, i + 1, c.lo[i], c.hi[i], f.lo[i], f.hi[i]);
        ck_assert_msg(m.lo[i] >= c.lo[i] && m.hi[i] <= c.hi[i],
                      "%s: md_circuit sigma_%zu not within the core's enclosure", what, i + 1);
        if (i >= dk)
            ck_assert(c.lo[i] == 0 && c.hi[i] == 0);
        else if (f.hi[i] - f.lo[i] > 0 && f.hi[i] < INFINITY)
            worst = fmax(worst, (c.hi[i] - c.lo[i]) / (f.hi[i] - f.lo[i]));
    }
    if (*core_ok) {
        ck_assert_int_eq(c.route, 1);
        ck_assert(m.route == 1 || m.route == 2);
        ck_assert(c.rank_lo <= c.rank_hi && c.rank_hi <= (long)dk);
    } else {
        ck_assert_int_eq(m.route, 0);
    }
    if (m.route != 1)
        ck_assert(m.rank_lo >= f.rank_lo && m.rank_hi <= f.rank_hi);
    ck_assert(m.rank_lo <= f.rank_hi && f.rank_lo <= m.rank_hi);
    if (getenv("TEST_CIRCUIT_VERBOSE"))
        printf("%s: core %d e %.3g, width / full: core %.3g, md_circuit (route %d) %.3g\n",
               what, *core_ok, c.e_core, worst, m.route, mworst);
    md_circuit_free(&c);
    md_circuit_free(&f);
    md_circuit_free(&m);
    if (core_ratio)
        *core_ratio = worst;
    return mworst;
}

/* Random Gaussian factors (the GPT-2 class, N(0, 0.02^2), up to GPT-2
 * small's 768 x 64), sizes from 2 x 1 up, d not a multiple of dk included: the core certifies, the enclosures intersect,
 * and the core's width is at most 4 times the full product's (measured:
 * it is below 1 on these classes). */
START_TEST(test_random)
{
    static const size_t sz[][2] = {{2, 1}, {5, 2}, {17, 3}, {64, 8}, {96, 16}, {200, 12}, {130, 64}, {768, 64}};
    test_rng r;
    test_rng_init(&r, 1);
    double worst = 0;
    for (size_t k = 0; k < sizeof sz / sizeof sz[0]; k++) {
        size_t d = sz[k][0], dk = sz[k][1];
        ac_mat A = {0}, B = {0};
        ck_assert_int_eq(ac_mat_init(&A, d, dk, NULL), AC_OK);
        ck_assert_int_eq(ac_mat_init(&B, dk, d, NULL), AC_OK);
        for (int rep = 0; rep < (d > 300 ? 1 : 3); rep++) { /* 768 x 64: GPT-2 small */
            fill_gauss(&A, &r, 0.02);
            fill_gauss(&B, &r, 0.02);
            int ok;
            char what[64];
            snprintf(what, sizeof what, "random %zu x %zu rep %d", d, dk, rep);
            double w;
            compare_routes(&A, &B, &ok, &w, what);
            ck_assert_msg(ok, "%s: the core did not certify", what);
            ck_assert_msg(w <= 4, "%s: the core is %.3g times wider", what, w);
            worst = fmax(worst, w);
        }
        ac_mat_free(&A);
        ac_mat_free(&B);
    }
    printf("test_circuit: random: the core's width is at most %.3g times the full product's\n",
           worst);
}
END_TEST

/* Sylvester's Hadamard matrix of order n (a power of two): H' H = n I. */
static double hadamard(size_t i, size_t j)
{
    return __builtin_popcountll((unsigned long long)(i & j)) & 1 ? -1.0 : 1.0;
}

/* A = Hd[:, J] diag(a) Hk, B = Hk' diag(b) Hd[:, J']' (J, J' random column
 * sets): A B = dk Hd[:, J] diag(a b) Hd[:, J']', whose singular values are
 * exactly d dk |a_j b_j| (dyadic), and the Gram matrices A'A = d Hk' diag(a^2) Hk
 * are not diagonal.  Scaled by 2^sa, 2^sb; a zero a_j gives rank dk - 1. */
static void hadamard_case(size_t d, size_t dk, int sa, int sb, int zero, test_rng *r,
                          const char *what)
{
    ac_mat A = {0}, B = {0};
    double *a = calloc(dk, sizeof *a), *b = calloc(dk, sizeof *b), *sv = calloc(dk, sizeof *sv);
    size_t *J = calloc(dk, sizeof *J), *J2 = calloc(dk, sizeof *J2), *perm = calloc(d, sizeof *perm);
    ck_assert(a && b && sv && J && J2 && perm);
    ck_assert_int_eq(ac_mat_init(&A, d, dk, NULL), AC_OK);
    ck_assert_int_eq(ac_mat_init(&B, dk, d, NULL), AC_OK);
    for (int side = 0; side < 2; side++) {
        for (size_t i = 0; i < d; i++)
            perm[i] = i;
        for (size_t i = d - 1; i > 0; i--) {
            size_t j = test_rng_u64(r) % (i + 1), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        memcpy(side ? J2 : J, perm, dk * sizeof *J);
    }
    for (size_t j = 0; j < dk; j++) {
        a[j] = ldexp(1 + (double)(test_rng_u64(r) % 16) / 16, (int)(test_rng_u64(r) % 9) - 4 + sa);
        b[j] = ldexp(1 + (double)(test_rng_u64(r) % 16) / 16, (int)(test_rng_u64(r) % 9) - 4 + sb);
    }
    if (zero)
        a[dk / 2] = 0;
    for (size_t i = 0; i < d; i++)
        for (size_t c = 0; c < dk; c++) {
            double s = 0, t = 0;
            for (size_t j = 0; j < dk; j++) {
                s += hadamard(i, J[j]) * a[j] * hadamard(j, c);
                t += hadamard(c, j) * b[j] * hadamard(i, J2[j]);
            }
            AC_MAT(&A, i, c) = s; /* exact: sums of dk dyadic terms of few bits */
            AC_MAT(&B, c, i) = t;
        }
    for (size_t j = 0; j < dk; j++)
        sv[j] = ldexp(fabs(a[j] * b[j]), 0) * (double)(d * dk);
    for (size_t i = 0; i < dk; i++) /* descending */
        for (size_t j = i + 1; j < dk; j++)
            if (sv[j] > sv[i]) {
                double t = sv[i];
                sv[i] = sv[j], sv[j] = t;
            }
    ac_inspect_circuit c = {0};
    ac_err e = {0};
    int ok;
    ck_assert_int_eq(md_circuit_core(&c, &ok, &A, &B, &e), AC_OK);
    ck_assert_msg(ok == !zero, "%s: core certified %d", what, ok);
    if (ok)
        for (size_t i = 0; i < dk; i++) {
            ck_assert_msg(c.lo[i] <= sv[i] && sv[i] <= c.hi[i],
                          "%s: sigma_%zu = %.17g not in [%.17g, %.17g]", what, i + 1, sv[i],
                          c.lo[i], c.hi[i]);
        }
    md_circuit_free(&c);
    ck_assert_int_eq(md_circuit(&c, &A, &B, &e), AC_OK);
    for (size_t i = 0; i < dk; i++)
        ck_assert_msg(c.lo[i] <= sv[i] && sv[i] <= c.hi[i],
                      "%s: md_circuit: sigma_%zu = %.17g not in [%.17g, %.17g]", what, i + 1,
                      sv[i], c.lo[i], c.hi[i]);
    long rank = zero ? (long)dk - 1 : (long)dk;
    ck_assert_msg(c.rank_lo <= rank && rank <= c.rank_hi, "%s: rank %ld not in [%ld, %ld]", what,
                  rank, c.rank_lo, c.rank_hi);
    if (!zero && sa > -400 && sb > -400)
        ck_assert_int_eq(c.rank_lo, rank);
    md_circuit_free(&c);
    int okc;
    double w = compare_routes(&A, &B, &okc, NULL, what);
    ck_assert_msg(w <= 4, "%s: md_circuit is %.3g times wider than the full product", what, w);
    ac_mat_free(&A);
    ac_mat_free(&B);
    free(a);
    free(b);
    free(sv);
    free(J);
    free(J2);
    free(perm);
}

/* Exact singular values at every scale: 1, 2^-500 (about 1e-150), 2^500
 * (1e150), mixed; and with a zero singular value (the core refuses, the
 * full product is used, rank dk - 1 stays in the range). */
START_TEST(test_exact)
{
    static const int sc[][2] = {{0, 0}, {-500, -500}, {500, 500}, {-500, 500}, {500, -480}};
    test_rng r;
    test_rng_init(&r, 2);
    for (size_t k = 0; k < sizeof sc / sizeof sc[0]; k++)
        for (int rep = 0; rep < 2; rep++) {
            char what[80];
            snprintf(what, sizeof what, "hadamard 64 x 8, scales 2^%d 2^%d", sc[k][0], sc[k][1]);
            hadamard_case(64, 8, sc[k][0], sc[k][1], 0, &r, what);
            snprintf(what, sizeof what, "hadamard 128 x 16, scales 2^%d 2^%d", sc[k][0], sc[k][1]);
            hadamard_case(128, 16, sc[k][0], sc[k][1], 0, &r, what);
        }
    hadamard_case(64, 8, 0, 0, 1, &r, "hadamard with a zero singular value");
}
END_TEST

/* Rank-deficient factors: an exact zero column of A, two equal rows of B,
 * a column of A twice: the core must not certify (Cholesky or e >= 1), the
 * full product is used, and sigma_dk's lower end is 0 (it is 0). */
START_TEST(test_rank_deficient)
{
    test_rng r;
    test_rng_init(&r, 3);
    size_t d = 48, dk = 6;
    for (int kind = 0; kind < 3; kind++) {
        ac_mat A = {0}, B = {0};
        ck_assert_int_eq(ac_mat_init(&A, d, dk, NULL), AC_OK);
        ck_assert_int_eq(ac_mat_init(&B, dk, d, NULL), AC_OK);
        fill_gauss(&A, &r, 1);
        fill_gauss(&B, &r, 1);
        for (size_t i = 0; i < d; i++) {
            if (kind == 0)
                AC_MAT(&A, i, 2) = 0;
            else if (kind == 1)
                AC_MAT(&B, 4, i) = AC_MAT(&B, 1, i);
            else
                AC_MAT(&A, i, 5) = AC_MAT(&A, i, 0);
        }
        int ok;
        char what[48];
        snprintf(what, sizeof what, "rank-deficient kind %d", kind);
        compare_routes(&A, &B, &ok, NULL, what);
        ck_assert_msg(!ok, "%s: the core certified a singular factor", what);
        ac_inspect_circuit c = {0};
        ac_err e = {0};
        ck_assert_int_eq(md_circuit(&c, &A, &B, &e), AC_OK);
        ck_assert_msg(c.lo[dk - 1] == 0, "%s: sigma_dk >= %g > 0", what, c.lo[dk - 1]);
        ck_assert(c.rank_lo <= (long)dk - 1);
        md_circuit_free(&c);
        ac_mat_free(&A);
        ac_mat_free(&B);
    }
}
END_TEST

/* Columns of A at scales 2^0 ... 2^-60 and rows of B at 2^40 ... (the power
 * of two scaling makes them harmless), and truly ill-conditioned factors (a
 * column close to another, at distances 1e-4 ... 1e-12): the core certifies
 * or declines, md_circuit is never looser than the full product and its
 * enclosures intersect the full product's. */
START_TEST(test_ill_conditioned)
{
    test_rng r;
    test_rng_init(&r, 4);
    size_t d = 64, dk = 8;
    ac_mat A = {0}, B = {0};
    ck_assert_int_eq(ac_mat_init(&A, d, dk, NULL), AC_OK);
    ck_assert_int_eq(ac_mat_init(&B, dk, d, NULL), AC_OK);
    fill_gauss(&A, &r, 1);
    fill_gauss(&B, &r, 1);
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < dk; j++) {
            AC_MAT(&A, i, j) = ldexp(AC_MAT(&A, i, j), -8 * (int)j);
            AC_MAT(&B, j, i) = ldexp(AC_MAT(&B, j, i), 40 - 3 * (int)j);
        }
    int ok;
    compare_routes(&A, &B, &ok, NULL, "badly scaled columns");
    ck_assert_msg(ok, "the core did not certify power-of-two scaled columns");
    static const double gap[] = {1e-4, 1e-8, 1e-12};
    for (size_t g = 0; g < 3; g++) {
        fill_gauss(&A, &r, 1);
        fill_gauss(&B, &r, 1);
        for (size_t i = 0; i < d; i++) {
            AC_MAT(&A, i, 3) = AC_MAT(&A, i, 1) + gap[g] * test_rng_gauss(&r);
            AC_MAT(&B, 6, i) = AC_MAT(&B, 0, i) + gap[g] * test_rng_gauss(&r);
        }
        char what[48];
        snprintf(what, sizeof what, "ill-conditioned, gap %g", gap[g]);
        compare_routes(&A, &B, &ok, NULL, what);
    }
    ac_mat_free(&A);
    ac_mat_free(&B);
}
END_TEST

/* GQA: two query heads on one key head (the same B): each circuit
 * certified on its own, consistent with the full product. */
START_TEST(test_gqa)
{
    test_rng r;
    test_rng_init(&r, 5);
    size_t d = 96, dk = 12;
    ac_mat A1 = {0}, A2 = {0}, B = {0};
    ck_assert_int_eq(ac_mat_init(&A1, d, dk, NULL), AC_OK);
    ck_assert_int_eq(ac_mat_init(&A2, d, dk, NULL), AC_OK);
    ck_assert_int_eq(ac_mat_init(&B, dk, d, NULL), AC_OK);
    fill_gauss(&A1, &r, 0.02);
    fill_gauss(&A2, &r, 0.05);
    fill_gauss(&B, &r, 0.02);
    int ok1, ok2;
    compare_routes(&A1, &B, &ok1, NULL, "gqa head 0");
    compare_routes(&A2, &B, &ok2, NULL, "gqa head 1");
    ck_assert(ok1 && ok2);
    ac_mat_free(&A1);
    ac_mat_free(&A2);
    ac_mat_free(&B);
}
END_TEST

int main(void)
{
    test_seed_init();
    TCase *tc;
    Suite *s = test_suite_one("circuit", &tc);
    tcase_add_test(tc, test_random);
    tcase_add_test(tc, test_exact);
    tcase_add_test(tc, test_rank_deficient);
    tcase_add_test(tc, test_ill_conditioned);
    tcase_add_test(tc, test_gqa);
    return test_run_suite(s);
}
