/* exact.c — exact facts about a Theorem 1 instance (paper 1), in rational
 * arithmetic on the input doubles (doc/mathematics.md §2.6, §3.4, §3.5):
 *   - the projector Pi on the row space of X, exactly (for X whose entries
 *     span too many binades for the ball Cholesky of decide.c);
 *   - X 1 = 0, and whether 1 lies in the row space of X;
 *   - proved upper bounds on rank(K log P) when rank X = n.
 *
 * Dimension letters: d model width, n tokens, r = rank X.  X is d x n,
 * P is n x n, row-major.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <flint/fmpq_mat.h>
#include <mpfr.h>

#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "core/ac_arb.h"
#include "core/dyadic.h"
#include "theorem1/t1_impl.h"

/* Pi = B'(BB')^-1 B exactly (B the r independent rows of X, as one integer
 * matrix 2^e M: Pi depends only on M), into balls at prec.  For X whose
 * entries span so many binades that the ball Cholesky cannot separate its
 * Gram matrix from singular (e.g. columns scaled by 2^+-1000).  Returns 0
 * beyond the size budget. */
#define AC_T1_EXACT_PI_MAX_N 64
#define AC_T1_EXACT_PI_MAX_BITS 8192
int ac_t1_exact_pi(arb_mat_t Pi, const ac_mat *X, const size_t *piv, size_t rr, slong prec)
{
    slong n = (slong)X->cols, r = (slong)rr;
    if (n > AC_T1_EXACT_PI_MAX_N)
        return 0;
    double *rows = malloc((size_t)(r * n) * sizeof(double));
    if (!rows)
        return 0;
    for (slong i = 0; i < r; i++)
        memcpy(rows + i * n, X->data + (piv ? piv[i] : (size_t)i) * (size_t)n,
               (size_t)n * sizeof(double));
    ac_xmat B;
    int ok = ac_xmat_from_d(&B, rows, (size_t)r, (size_t)n, (size_t)n, 0,
                            AC_T1_EXACT_PI_MAX_BITS) == AC_XMAT_OK;
    free(rows);
    if (!ok)
        return 0;
    fmpz_mat_t Bt, G;
    fmpq_mat_t Z, Q;
    fmpz_mat_init(Bt, n, r);
    fmpz_mat_init(G, r, r);
    fmpq_mat_init(Z, r, n);
    fmpq_mat_init(Q, n, n);
    fmpz_mat_transpose(Bt, B.m);
    fmpz_mat_mul(G, B.m, Bt);
    ok = fmpq_mat_solve_fmpz_mat(Z, G, B.m); /* Z = (BB')^-1 B */
    if (ok) {
        fmpq_mat_t Btq;
        fmpq_mat_init(Btq, n, r);
        fmpq_mat_set_fmpz_mat(Btq, Bt);
        fmpq_mat_mul(Q, Btq, Z);
        fmpq_mat_clear(Btq);
        for (slong i = 0; i < n; i++)
            for (slong j = 0; j < n; j++)
                arb_set_fmpq(arb_mat_entry(Pi, i, j), fmpq_mat_entry(Q, i, j), prec);
    }
    fmpz_mat_clear(Bt);
    fmpz_mat_clear(G);
    fmpq_mat_clear(Z);
    fmpq_mat_clear(Q);
    ac_xmat_clear(&B);
    return ok;
}

/* Exactly: is X 1 = 0 (each row sums to 0)?  MPFR's sum is correctly rounded,
 * so it is zero iff the exact sum is. */
int ac_t1_rows_sum_to_zero(const ac_mat *X)
{
    size_t d = X->rows, n = X->cols;
    mpfr_t s;
    mpfr_ptr *tab = malloc(n * sizeof(mpfr_ptr));
    mpfr_t *vals = malloc(n * sizeof(mpfr_t));
    int zero = 1;
    mpfr_init2(s, 64);
    for (size_t j = 0; j < n; j++) {
        mpfr_init2(vals[j], 53);
        tab[j] = vals[j];
    }
    for (size_t i = 0; i < d && zero; i++) {
        for (size_t j = 0; j < n; j++)
            mpfr_set_d(vals[j], AC_MAT(X, i, j), MPFR_RNDN);
        mpfr_sum(s, tab, n, MPFR_RNDN);
        if (!mpfr_zero_p(s))
            zero = 0;
    }
    for (size_t j = 0; j < n; j++)
        mpfr_clear(vals[j]);
    mpfr_clear(s);
    free(tab);
    free(vals);
    return zero;
}

/* Is 1 in the row space of X?  1 if proved yes (exact rank), 0 if proved no
 * (rank mod p of [B; 1'] is r + 1), -1 unknown. */
int ac_t1_one_in_row_space(const ac_mat *X, const size_t *piv, size_t r, double budget)
{
    size_t n = X->cols;
    ac_mat B = {0};
    int ans = -1;
    if (ac_mat_init(&B, r + 1, n, NULL))
        return -1;
    for (size_t i = 0; i < r; i++)
        memcpy(B.data + i * n, X->data + (piv ? piv[i] : i) * n, n * sizeof(double));
    for (size_t j = 0; j < n; j++)
        AC_MAT(&B, r, j) = 1.0;
    long rk;
    if (ac_rank_lower_modp(&B, &rk, NULL) == AC_OK && rk == (long)r + 1)
        ans = 0;
    else if (ac_rank_exact(&B, budget, &rk, NULL, NULL) == AC_OK && rk >= 0)
        ans = (rk == (long)r) ? 1 : 0;
    ac_mat_free(&B);
    return ans;
}


/* ---- exact upper bounds on rank(K log P) (rank X = n) ------------------- */

/* Number of distinct columns (cols = 1) or rows (cols = 0) of P, compared
 * exactly. */
static size_t distinct_lines(const ac_mat *P, int cols)
{
    size_t n = P->rows, q = 0;
    for (size_t a = 0; a < n; a++) {
        int seen = 0;
        for (size_t b = 0; b < a && !seen; b++) {
            int eq = 1;
            for (size_t k = 0; k < n && eq; k++)
                eq = cols ? AC_MAT(P, k, a) == AC_MAT(P, k, b) : AC_MAT(P, a, k) == AC_MAT(P, b, k);
            seen = eq;
        }
        q += !seen;
    }
    return q;
}

/* If every entry of P is a power of two, log P = E log 2 with E integer and
 * rank(K log P) = rank([E 1]) - 1 exactly (doc/mathematics.md §3.5); returns
 * that, or -1 (not all powers of two, or beyond the exact-rank budget). */
static long pow2_family_rank(const ac_mat *P, double budget)
{
    size_t n = P->rows;
    ac_mat E = {0};
    long rk = -1;
    for (size_t i = 0; i < n * n; i++) {
        int e;
        if (frexp(P->data[i], &e) != 0.5)
            return -1;
    }
    if (ac_mat_init(&E, n, n + 1, NULL))
        return -1;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            int e;
            frexp(AC_MAT(P, i, j), &e);
            AC_MAT(&E, i, j) = (double)(e - 1);
        }
        AC_MAT(&E, i, n) = 1.0;
    }
    if (ac_rank_exact(&E, budget, &rk, NULL, NULL) != AC_OK || rk < 1)
        rk = -1;
    else
        rk -= 1;
    ac_mat_free(&E);
    return rk;
}

/* A proved upper bound on rank(K log P) = rank([log P 1]) - 1 (rank X = n;
 * doc/mathematics.md §3.5): n - 1; the number of distinct columns of P;
 * the number of distinct rows minus 1; the exact rank when P's entries are
 * powers of two.  *why receives the source of the bound. */
long ac_t1_family_rank_upper(const ac_mat *P, double budget, const char **why)
{
    size_t n = P->rows;
    long u = n > 1 ? (long)n - 1 : 0, q;
    *why = "n - 1";
    if ((q = (long)distinct_lines(P, 1)) < u) {
        u = q;
        *why = "the number of distinct columns of P";
    }
    if ((q = (long)distinct_lines(P, 0) - 1) < u) {
        u = q;
        *why = "the number of distinct rows of P minus 1";
    }
    if ((q = pow2_family_rank(P, budget)) >= 0 && q <= u) {
        u = q;
        *why = "exact rank of [log2 P 1] minus 1 (P's entries are powers of two)";
    }
    return u;
}

