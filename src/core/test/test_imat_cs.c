/* test_imat_cs.c — the norm-bounded products (core/imat_cs.c) against exact
 * oracles (Arb at a precision where sums of products of doubles are exact):
 * every enclosure contains the exact product, for the midpoint and for
 * corner points of the interval factors, on random, cancelling
 * (K = approximate inverse times A), badly scaled (2^+-300 per row and
 * column), huge, tiny and zero-row inputs and odd shapes; the column norms
 * are upper bounds and tight; the dgemm kernels agree with their loop twins
 * (identical radii, midpoints within them); the radius of K^T Q for K close
 * to the identity stays close to gamma_n |Q|. */
#include <config.h>

#include <float.h>
#include <math.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/ac_arb.h"
#include "core/imat_cs.h"
#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "core/test/imat_oracle.h"
#include "testutil.h"

/* ac_mul_cs on a column panel of B (leading dimension n > w), against Arb
 * and against its loop twin. */
static void check_cs(int cls, size_t m, size_t k, size_t n, test_rng *r)
{
    double *A = malloc((m * k + 1) * sizeof(double)), *B = malloc((k * n + 1) * sizeof(double));
    oracle_inputs(cls, ORACLE_CANCEL_A, A, B, m, k, n, r);
    size_t j0 = n > 2 ? 1 : 0, w = n - j0; /* a panel: columns j0.. with ldb = n */
    double *Cm = malloc((m * w + 1) * sizeof(double)), *Cr = malloc((m * w + 1) * sizeof(double));
    double *Tm = malloc((m * w + 1) * sizeof(double)), *Tr = malloc((m * w + 1) * sizeof(double));
    ck_assert_int_eq(ac_mul_cs(Cm, Cr, w, A, m, k, B + j0, k, w, n, NULL, NULL, 0, NULL), AC_OK);
    ck_assert_int_eq(ac_mul_cs(Tm, Tr, w, A, m, k, B + j0, k, w, n, NULL, NULL, 1, NULL), AC_OK);
    arb_t s;
    arb_init(s);
    size_t finite = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < w; j++) {
            oracle_entry(s, A, B + j0, k, n, i, j);
            size_t e = i * w + j;
            SOFT(oracle_contains(s, Cm[e], Cr[e]),
                 "class %d %zux%zux%zu: (%zu,%zu) [%a +- %a] misses A B", cls, m, k, n, i, j, Cm[e],
                 Cr[e]);
            SOFT(oracle_contains(s, Tm[e], Tr[e]), "class %d: loop twin (%zu,%zu) misses A B", cls,
                 i, j);
            SOFT(memcmp(&Cr[e], &Tr[e], sizeof(double)) == 0 || (isinf(Cr[e]) && isinf(Tr[e])),
                 "class %d: twin radii differ at (%zu,%zu)", cls, i, j);
            finite += Cr[e] < INFINITY;
        }
    if (cls != HUGE_)
        SOFT(finite == m * w, "class %d: %zu of %zu radii infinite", cls, m * w - finite, m * w);
    arb_clear(s);
    free(A);
    free(B);
    free(Cm);
    free(Cr);
    free(Tm);
    free(Tr);
}

START_TEST(test_cs_encloses)
{
    test_rng r;
    test_rng_init(&r, test_seed_value + 31);
    static const size_t sizes[][3] = {{1, 1, 1},    {3, 1, 4},   {5, 7, 3},  {17, 40, 9},
                                      {40, 40, 41}, {4, 300, 5}, {33, 33, 7}};
    fails = 0;
    for (int cls = 0; cls < NCLASS; cls++)
        for (size_t q = 0; q < sizeof sizes / sizeof *sizes; q++)
            check_cs(cls, sizes[q][0], sizes[q][1], sizes[q][2], &r);
    ck_assert_msg(fails == 0, "%ld failed checks (first printed above)", fails);
}
END_TEST

/* The exact 2-norm of v (Arb, exact squares) <= bound, and bound <= (1 + 1e-12) norm + tiny. */
static void check_norm(const double *v, size_t cnt, size_t stride, double bound, const char *what)
{
    arb_t s, t;
    arb_init(s);
    arb_init(t);
    for (size_t i = 0; i < cnt; i++) {
        arb_set_d(t, v[i * stride]);
        arb_addmul(s, t, t, EXACT_PREC);
    }
    arb_sqrt(s, s, 200);
    arb_set_d(t, bound);
    SOFT(arb_le(s, t), "%s: bound %a below the norm", what, bound);
    double nv = arf_get_d(arb_midref(s), ARF_RND_NEAR);
    SOFT(bound <= nv * (1 + 1e-12) + 0x1p-1000, "%s: bound %a not tight (norm %a)", what, bound,
         nv);
    arb_clear(s);
    arb_clear(t);
}

START_TEST(test_norms)
{
    test_rng r;
    test_rng_init(&r, test_seed_value + 32);
    fails = 0;
    for (int cls = 0; cls < NCLASS; cls++) {
        size_t m = 13, k = 11;
        double *A = malloc(m * k * sizeof(double)), *B = malloc(k * m * sizeof(double));
        double cn[13], rn[13];
        oracle_inputs(cls, ORACLE_CANCEL_A, A, B, m, k, m, &r);
        ac_colnorms_up(cn, A, m, k, k, 0);
        ac_rownorms_up(rn, A, m, k, k);
        for (size_t j = 0; j < k; j++)
            check_norm(A + j, m, k, cn[j], "column norm");
        for (size_t i = 0; i < m; i++)
            check_norm(A + i * k, k, 1, rn[i], "row norm");
        /* A - I (square part): columns of a matrix close to the identity */
        double *K = malloc(m * m * sizeof(double));
        for (size_t i = 0; i < m * m; i++)
            K[i] = (i / m == i % m ? 1.0 : 0.0) + ldexp(test_rng_gauss(&r), cls * 100 - 300);
        ac_colnorms_up(cn, K, m, m, m, 1);
        for (size_t j = 0; j < m; j++) {
            arb_t e, t;
            arb_init(e);
            arb_init(t);
            for (size_t i = 0; i < m; i++) {
                arb_set_d(t, K[i * m + j]);
                if (i == j)
                    arb_sub_ui(t, t, 1, EXACT_PREC);
                arb_addmul(e, t, t, EXACT_PREC);
            }
            arb_sqrt(e, e, 200);
            arb_set_d(t, cn[j]);
            SOFT(arb_le(e, t), "column of K - I: bound %a below the norm", cn[j]);
            arb_clear(e);
            arb_clear(t);
        }
        free(K);
        free(A);
        free(B);
    }
    /* non-finite and zero columns */
    double Z[8] = {0, 1, 0, 0, INFINITY, 0, NAN, 0}, out[4];
    ac_colnorms_up(out, Z, 2, 4, 4, 0);
    ck_assert(out[0] == INFINITY && out[1] >= 1 && out[1] < 1 + 1e-12 && out[2] == INFINITY &&
              out[3] == 0);
    ck_assert_msg(fails == 0, "%ld failed checks (first printed above)", fails);
}
END_TEST

/* K^T Q for interval K = [A B] (n x n, from ac_imat_mul: close to the
 * identity when B ~ A^-1) and Q = [W X] (ac_mul_cs): the enclosure contains
 * K'^T Q' exactly for K', Q' the midpoints and corners mid +- rad. */
static void check_nearid(int cls, size_t n, size_t w, test_rng *r)
{
    double *A = malloc(n * n * sizeof(double)), *B = malloc(n * n * sizeof(double));
    double *W = malloc(n * n * sizeof(double)), *X = malloc(n * w * sizeof(double));
    oracle_inputs(CANCEL, ORACLE_CANCEL_A, A, B, n, n, n, r);
    ac_mat Am = {n, n, A}, Y = {0};
    if (ac_approx_pinv_fullcol(&Y, &Am, NULL) == AC_OK) {
        memcpy(B, Y.data, n * n * sizeof(double));
        ac_mat_free(&Y);
    }
    oracle_inputs(cls, ORACLE_CANCEL_A, W, X, n, n, w, r);
    ac_imat K = {0}, Q = {0}, C = {0}, T = {0}, G = {0};
    ac_mat Bm = {n, n, B};
    ac_imat Ai = ac_imat_view(&Am), Bi = ac_imat_view(&Bm);
    ck_assert_int_eq(ac_imat_init(&K, n, n, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_mul(&K, AC_NOTRANS, &Bi, AC_NOTRANS, &Ai, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&Q, n, w, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_mul_cs(Q.mid, Q.rad, w, W, n, n, X, n, w, w, NULL, NULL, 0, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&C, n, w, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&T, n, w, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_mul_tn_nearid(&C, &K, NULL, &Q, 0, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_mul_tn_nearid(&T, &K, NULL, &Q, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&G, n, w, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_mul(&G, AC_TRANS, &K, AC_NOTRANS, &Q, NULL), AC_OK);
    /* the product-free bound Q + (K - I)^T Q, once into its own midpoint
     * buffer and once sharing Q's */
    ac_imat D = {0}, D2 = {0};
    double *kn = malloc(2 * n * sizeof(double));
    ac_nearid_norms(kn, &K);
    ck_assert_int_eq(ac_imat_init(&D, n, w, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_tn_nearid_bound(&D, kn, &Q, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_init(&D2, n, w, 1, NULL), AC_OK);
    free(D2.mid);
    D2.mid = Q.mid;
    ck_assert_int_eq(ac_imat_tn_nearid_bound(&D2, kn, &Q, NULL), AC_OK);
    ck_assert(!memcmp(D.mid, Q.mid, n * w * sizeof(double)) &&
              !memcmp(D.rad, D2.rad, n * w * sizeof(double)));
    D2.mid = NULL;
    ac_imat_free(&D2);
    free(kn);
    arb_t s, a, b, t;
    arb_init(s);
    arb_init(a);
    arb_init(b);
    arb_init(t);
    for (int corner = 0; corner < 3; corner++) {
        /* corner 0: midpoints; 1: K + Kr sgn, Q - Qr sgn; 2: K - Kr, Q + Qr */
        double sk = corner == 0 ? 0 : (corner == 1 ? 1 : -1), sq = -sk;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < w; j++) {
                arb_zero(s);
                for (size_t l = 0; l < n; l++) {
                    double km = K.mid[l * n + i], qm = Q.mid[l * w + j];
                    arb_set_d(a, K.rad[l * n + i]);
                    arb_mul_si(a, a, (km * qm >= 0 ? 1 : -1) * (long)sk, EXACT_PREC);
                    arb_set_d(t, km);
                    arb_add(a, a, t, EXACT_PREC);
                    arb_set_d(b, Q.rad[l * w + j]);
                    arb_mul_si(b, b, (long)sq, EXACT_PREC);
                    arb_set_d(t, qm);
                    arb_add(b, b, t, EXACT_PREC);
                    arb_addmul(s, a, b, EXACT_PREC);
                }
                size_t e = i * w + j;
                SOFT(oracle_contains(s, C.mid[e], C.rad[e]),
                     "class %d n %zu w %zu corner %d: (%zu,%zu) [%a +- %a] misses K^T Q", cls, n, w,
                     corner, i, j, C.mid[e], C.rad[e]);
                SOFT(oracle_contains(s, T.mid[e], T.rad[e]),
                     "class %d: loop twin misses at (%zu,%zu)", cls, i, j);
                SOFT(oracle_contains(s, D.mid[e], D.rad[e]),
                     "class %d n %zu w %zu corner %d: bound (%zu,%zu) [%a +- %a] misses K^T Q",
                     cls, n, w, corner, i, j, D.mid[e], D.rad[e]);
                SOFT(memcmp(&C.rad[e], &T.rad[e], sizeof(double)) == 0 ||
                         (isinf(C.rad[e]) && isinf(T.rad[e])),
                     "class %d: twin radii differ at (%zu,%zu)", cls, i, j);
                /* K ~ I: within a small factor of the three-dgemm radius */
                if (corner == 0 && cls == GAUSS)
                    SOFT(C.rad[e] <= 3 * G.rad[e] + 4 * AC_REALMIN,
                         "n %zu: radius %g far above ac_imat_mul's %g", n, C.rad[e], G.rad[e]);
            }
    }
    arb_clear(s);
    arb_clear(a);
    arb_clear(b);
    arb_clear(t);
    ac_imat_free(&K);
    ac_imat_free(&Q);
    ac_imat_free(&C);
    ac_imat_free(&T);
    ac_imat_free(&G);
    ac_imat_free(&D);
    free(A);
    free(B);
    free(W);
    free(X);
}

START_TEST(test_nearid_encloses)
{
    test_rng r;
    test_rng_init(&r, test_seed_value + 33);
    static const size_t sizes[][2] = {{1, 1}, {2, 3}, {7, 5}, {24, 9}, {41, 17}};
    fails = 0;
    for (int cls = 0; cls < NCLASS; cls++)
        for (size_t q = 0; q < sizeof sizes / sizeof *sizes; q++)
            check_nearid(cls, sizes[q][0], sizes[q][1], &r);
    /* any K, not only near the identity: still an enclosure */
    double km[4] = {3, -2, 0.5, 7}, kr[4] = {0.1, 0, 1e-3, 2}, qm[2] = {1, -4};
    ac_imat K = {2, 2, km, kr}, Q = {2, 1, qm, NULL}, C = {0};
    ck_assert_int_eq(ac_imat_init(&C, 2, 1, 1, NULL), AC_OK);
    ck_assert_int_eq(ac_imat_mul_tn_nearid(&C, &K, NULL, &Q, 0, NULL), AC_OK);
    /* (K^T Q)_0 = 3 - 2 = 1 +- (0.1 + 4e-3), (K^T Q)_1 = -2 - 28 = -30 +- 8 */
    ck_assert(fabs(C.mid[0] - 1) < 1e-12 && C.rad[0] >= 0.104);
    ck_assert(fabs(C.mid[1] + 30) < 1e-12 && C.rad[1] >= 8.0);
    ck_assert_int_eq(ac_imat_mul_tn_nearid(&C, &Q, NULL, &Q, 0, NULL), AC_EUSAGE);
    /* the product-free bound: midpoint Q, and the radius covers (K - I)^T Q
     * (entry 1: -30 - (-4) = -26, entry 0: 1 - 1 = 0) plus Kr's part */
    double kn[4];
    ac_nearid_norms(kn, &K);
    ck_assert_int_eq(ac_imat_tn_nearid_bound(&C, kn, &Q, NULL), AC_OK);
    ck_assert(C.mid[0] == 1 && C.mid[1] == -4 && C.rad[1] >= 26 + 8 && C.rad[0] >= 0.104);
    ac_imat Cw = {1, 1, C.mid, C.rad};
    ck_assert_int_eq(ac_imat_tn_nearid_bound(&Cw, kn, &Q, NULL), AC_EUSAGE);
    ac_imat_free(&C);
    ck_assert_msg(fails == 0, "%ld failed checks (first printed above)", fails);
}
END_TEST

/* The same bits for 1 and 3 OpenMP threads (fixed panels inside). */
START_TEST(test_cs_threads)
{
    size_t m = 37, k = 300, n = 700;
    test_rng r;
    test_rng_init(&r, test_seed_value + 36);
    double *A = malloc(m * k * sizeof(double)), *B = malloc(k * n * sizeof(double));
    double *C1 = malloc(2 * m * n * sizeof(double)), *C3 = malloc(2 * m * n * sizeof(double));
    for (size_t i = 0; i < m * k; i++)
        A[i] = test_rng_gauss(&r);
    for (size_t i = 0; i < k * n; i++)
        B[i] = test_rng_gauss(&r);
#ifdef _OPENMP
    int t0 = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    ck_assert_int_eq(ac_mul_cs(C1, C1 + m * n, n, A, m, k, B, k, n, n, NULL, NULL, 0, NULL), AC_OK);
#ifdef _OPENMP
    omp_set_num_threads(3);
#endif
    ck_assert_int_eq(ac_mul_cs(C3, C3 + m * n, n, A, m, k, B, k, n, n, NULL, NULL, 0, NULL), AC_OK);
#ifdef _OPENMP
    omp_set_num_threads(t0);
#endif
    ck_assert(memcmp(C1, C3, 2 * m * n * sizeof(double)) == 0);
    free(A);
    free(B);
    free(C1);
    free(C3);
}
END_TEST

/* ac_imat_fro_dev_up (streamed) equals ac_norm2_up of the entry bounds
 * up(|fl(mid - b)|) + rad, bit for bit, at every scale. */
START_TEST(test_fro_dev_stream)
{
    test_rng r;
    test_rng_init(&r, test_seed_value + 37);
    for (int rep = 0; rep < 40; rep++) {
        size_t m = 1 + rep % 9, n = 1 + (rep * 7) % 13;
        ac_imat A = {0};
        ck_assert_int_eq(ac_imat_init(&A, m, n, 1, NULL), AC_OK);
        double *B = malloc(m * n * sizeof(double)), *d = malloc(m * n * sizeof(double));
        int sc = (rep % 5) * 400 - 1000; /* 2^-1000 .. 2^600 */
        for (size_t i = 0; i < m * n; i++) {
            A.mid[i] = ldexp(test_rng_gauss(&r), sc);
            A.rad[i] = ldexp(fabs(test_rng_gauss(&r)), sc - 30);
            B[i] = ldexp(test_rng_gauss(&r), sc);
        }
        for (int mode = 0; mode < 3; mode++) {
            if (mode == 2 && m != n)
                continue; /* the identity needs a square A */
            const double *Bp = mode == 1 ? B : NULL;
            for (size_t i = 0; i < m * n; i++) {
                double b = mode == 2 ? (i / n == i % n ? 1.0 : 0.0) : (Bp ? B[i] : 0.0);
                d[i] = ac_add_up(ac_up(fabs(A.mid[i] - b)), A.rad[i]);
            }
            double x = ac_imat_fro_dev_up(&A, Bp, mode == 2), y = ac_norm2_up(d, m * n);
            ck_assert_msg(memcmp(&x, &y, sizeof x) == 0, "fro dev %a vs %a", x, y);
        }
        ac_imat_free(&A);
        free(B);
        free(d);
    }
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("imat_cs");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_cs_encloses);
    tcase_add_test(tc, test_norms);
    tcase_add_test(tc, test_nearid_encloses);
    tcase_add_test(tc, test_cs_threads);
    tcase_add_test(tc, test_fro_dev_stream);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
