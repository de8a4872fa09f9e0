/* imat_oracle.h — shared by the tests of certified interval products
 * (test_imat_split.c, test_imat_cs.c): the hostile input classes, the
 * exact product entry in Arb, and the "enclosure contains the exact value"
 * check.  EXACT_PREC bits make every sum of products of doubles exact:
 * such products span fewer than 4300 bits. */
#ifndef AC_CORE_TEST_IMAT_ORACLE_H
#define AC_CORE_TEST_IMAT_ORACLE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/ac_arb.h"
#include "attncheck/linalg.h"
#include "testutil.h"

#define EXACT_PREC 4400

/* Soft failures: count them, print the first, assert once at the end. */
static long fails;
#define SOFT(cond, ...)                                                                            \
    do {                                                                                           \
        if (!(cond) && fails++ == 0) {                                                             \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

enum { GAUSS, CANCEL, ROWSCALE, HUGE_, TINY, ZEROS, NCLASS };

/* Where class CANCEL puts an approximate inverse of the Gaussian A:
 * into A itself (A = Y^-1: rows of cancellation; needs m = k), or into B
 * (A B = I up to ~cond u, all of it cancellation; needs m = k = n). */
enum { ORACLE_CANCEL_A, ORACLE_CANCEL_B };

/* Fill A (m x k) and B (k x n), row-major, for a class of inputs. */
static inline void oracle_inputs(int cls, int cancel, double *A, double *B, size_t m, size_t k,
                                 size_t n, test_rng *r)
{
    for (size_t i = 0; i < m * k; i++)
        A[i] = test_rng_gauss(r);
    for (size_t i = 0; i < k * n; i++)
        B[i] = test_rng_gauss(r);
    if (cls == CANCEL && m == k && (cancel == ORACLE_CANCEL_A || k == n)) {
        ac_mat Am = {m, k, A}, Y = {0};
        if (ac_approx_pinv_fullcol(&Y, &Am, NULL) == AC_OK) {
            memcpy(cancel == ORACLE_CANCEL_A ? A : B, Y.data, m * k * sizeof(double));
            ac_mat_free(&Y);
        }
    } else if (cls == ROWSCALE) {
        for (size_t i = 0; i < m; i++) {
            double s = ldexp(1.0, (int)(test_rng_unif(r) * 600) - 300);
            for (size_t l = 0; l < k; l++)
                A[i * k + l] *= s * (l % 3 == 0 ? 1e-9 : 1.0); /* and inside the row */
        }
        for (size_t j = 0; j < n; j++) {
            double s = ldexp(1.0, (int)(test_rng_unif(r) * 600) - 300);
            for (size_t l = 0; l < k; l++)
                B[l * n + j] *= s;
        }
    } else if (cls == HUGE_) {
        for (size_t i = 0; i < m * k; i++)
            A[i] *= 0x1p500;
        for (size_t i = 0; i < k * n; i++)
            B[i] *= (i % 2) ? 0x1p515 : 0x1p400; /* some entries near overflow */
    } else if (cls == TINY) {
        for (size_t i = 0; i < m * k; i++)
            A[i] *= (i % 5) ? 0x1p-520 : 0x1p-1000;
        for (size_t i = 0; i < k * n; i++)
            B[i] *= 0x1p-530;
    } else if (cls == ZEROS) {
        for (size_t l = 0; l < k; l++)
            A[l] = 0; /* row 0 of A */
        for (size_t l = 0; l < k; l++)
            B[l * n + (n - 1)] = 0; /* last column of B */
    }
}

/* s = (A B)_ij exactly; B has leading dimension ldb. */
static inline void oracle_entry(arb_t s, const double *A, const double *B, size_t k, size_t ldb,
                                size_t i, size_t j)
{
    arb_t a, b;
    arb_init(a);
    arb_init(b);
    arb_zero(s);
    for (size_t l = 0; l < k; l++) {
        arb_set_d(a, A[i * k + l]);
        arb_set_d(b, B[l * ldb + j]);
        arb_addmul(s, a, b, EXACT_PREC);
    }
    arb_clear(a);
    arb_clear(b);
}

/* 1 if |exact - mid| <= rad (an infinite radius contains everything). */
static inline int oracle_contains(const arb_t exact, double mid, double rad)
{
    if (rad == INFINITY)
        return 1;
    if (!(rad >= 0) || !isfinite(mid))
        return 0;
    arb_t t, r;
    arb_init(t);
    arb_init(r);
    arb_set_d(t, mid);
    arb_sub(t, exact, t, EXACT_PREC);
    arb_abs(t, t);
    arb_set_d(r, rad);
    int ok = arb_le(t, r);
    arb_clear(t);
    arb_clear(r);
    return ok;
}

/* 1 if the enclosure mid +- rad contains (A B)_ij (B of leading dimension ldb). */
static inline int oracle_encloses(const double *A, const double *B, size_t k, size_t ldb, size_t i,
                                  size_t j, double mid, double rad)
{
    arb_t s;
    arb_init(s);
    oracle_entry(s, A, B, k, ldb, i, j);
    int ok = oracle_contains(s, mid, rad);
    arb_clear(s);
    return ok;
}

#endif
