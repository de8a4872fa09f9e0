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
#include <flint/fmpz_vec.h>
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
 * beyond the budget.
 *
 * The budget (doc/mathematics.md §3.4): the rational route costs about
 * n^4 w bit operations for M with entries of w bits (Pi's denominator
 * det(MM') has about r (2w + log2 n) bits, and the products with Pi are n^3
 * of them).  Measured for ac_t1_pow2_decide on one loaded core: w = 60
 * (Gaussian X) n = 64 2.3 s, n = 96 12.5 s; w = 3 (small integers) n = 128
 * 1.1 s, n = 192 4.4 s: about 1 s per 10^9 of n^4 w.  It runs for every
 * n <= 64 (as before) and beyond that while n^4 w <= AC_T1_EXACT_WORK
 * (about 4 s), up to n = AC_T1_EXACT_PI_MAX_N. */
#define AC_T1_EXACT_PI_MAX_N 1024
#define AC_T1_EXACT_PI_FREE_N 64
#define AC_T1_EXACT_WORK 4e9
#define AC_T1_EXACT_PI_MAX_BITS 8192
/* Q = Pi in rationals (Q initialised n x n); 0 beyond the budget. */
static int pi_rational(fmpq_mat_t Q, const ac_mat *X, const size_t *piv, size_t rr)
{
    slong n = (slong)X->cols, r = (slong)rr;
    if (n > AC_T1_EXACT_PI_MAX_N || r == 0)
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
    double w = ok ? (double)ac_xmat_bits(&B) : 0, nn = (double)n;
    if (ok && n > AC_T1_EXACT_PI_FREE_N && nn * nn * nn * nn * w > AC_T1_EXACT_WORK) {
        ac_xmat_clear(&B);
        return 0;
    }
    if (!ok)
        return 0;
    fmpz_mat_t Bt, G;
    fmpq_mat_t Z, Btq;
    fmpz_mat_init(Bt, n, r);
    fmpz_mat_init(G, r, r);
    fmpq_mat_init(Z, r, n);
    fmpq_mat_init(Btq, n, r);
    fmpz_mat_transpose(Bt, B.m);
    fmpz_mat_mul(G, B.m, Bt);
    ok = fmpq_mat_solve_fmpz_mat(Z, G, B.m); /* Z = (BB')^-1 B */
    if (ok) {
        fmpq_mat_set_fmpz_mat(Btq, Bt);
        fmpq_mat_mul(Q, Btq, Z);
    }
    fmpz_mat_clear(Bt);
    fmpz_mat_clear(G);
    fmpq_mat_clear(Z);
    fmpq_mat_clear(Btq);
    ac_xmat_clear(&B);
    return ok;
}

int ac_t1_exact_pi(arb_mat_t Pi, const ac_mat *X, const size_t *piv, size_t r, slong prec)
{
    slong n = (slong)X->cols;
    fmpq_mat_t Q;
    fmpq_mat_init(Q, n, n);
    int ok = pi_rational(Q, X, piv, r);
    if (ok)
        for (slong i = 0; i < n; i++)
            for (slong j = 0; j < n; j++)
                arb_set_fmpq(arb_mat_entry(Pi, i, j), fmpq_mat_entry(Q, i, j), prec);
    fmpq_mat_clear(Q);
    return ok;
}

/* ---- P with power-of-two entries: the whole criterion in rationals -------- */

/* E = log2 P (integers) if every entry of P is a power of two. */
static int log2_matrix(fmpq_mat_t E, const ac_mat *P)
{
    size_t n = P->rows;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            int e;
            if (frexp(AC_MAT(P, i, j), &e) != 0.5)
                return 0;
            fmpq_set_si(fmpq_mat_entry(E, i, j), e - 1, 1);
        }
    return 1;
}

/* The log-domain residual in rationals, the twin of rho_resid_ball (the
 * derivation: t1_decide.h), and the family member of doc/mathematics.md
 * §3.4, for the rational matrix E in place of L (both linear in L with
 * rational coefficients): R = T(E) + 1c*' - g(Pi c*)', F = K Pi E Pi (1 in
 * the row space) or Pi (E + 1c*') Pi. */
static void rho_resid_exact(fmpq_mat_t R, fmpq_mat_t F, const fmpq_mat_t Pi, const fmpq_mat_t E,
                            slong n)
{
    fmpq_mat_t W, M, g, v, pv, c, pc, one;
    fmpq_t b, t, nb;
    fmpq_mat_init(W, n, n);
    fmpq_mat_init(M, n, n);
    fmpq_mat_init(g, n, 1);
    fmpq_mat_init(v, n, 1);
    fmpq_mat_init(pv, n, 1);
    fmpq_mat_init(c, n, 1);
    fmpq_mat_init(pc, n, 1);
    fmpq_mat_init(one, n, 1);
    fmpq_init(b);
    fmpq_init(t);
    fmpq_init(nb);
    for (slong i = 0; i < n; i++)
        fmpq_one(fmpq_mat_entry(one, i, 0));
    fmpq_mat_mul(W, Pi, E);
    fmpq_mat_mul(M, W, Pi);  /* M = Pi E Pi */
    fmpq_mat_sub(R, E, M);   /* R = T(E) */
    fmpq_mat_mul(g, Pi, one);
    for (slong i = 0; i < n; i++) {
        fmpq_addmul(b, fmpq_mat_entry(g, i, 0), fmpq_mat_entry(g, i, 0));
        for (slong j = 0; j < n; j++)
            fmpq_add(fmpq_mat_entry(v, i, 0), fmpq_mat_entry(v, i, 0), fmpq_mat_entry(R, j, i));
    }
    fmpq_mat_mul(pv, Pi, v);
    fmpq_set_si(nb, n, 1);
    fmpq_sub(nb, nb, b); /* n - b = 0 iff 1 is in the row space */
    int one_in = fmpq_is_zero(nb);
    for (slong i = 0; i < n; i++) {
        fmpq *ci = fmpq_mat_entry(c, i, 0);
        fmpq_sub(ci, fmpq_mat_entry(v, i, 0), fmpq_mat_entry(pv, i, 0));
        fmpq_set_si(t, n, 1);
        fmpq_div(ci, ci, t);
        if (!one_in) {
            fmpq_div(t, fmpq_mat_entry(pv, i, 0), nb);
            fmpq_add(ci, ci, t);
        }
        fmpq_neg(ci, ci);
    }
    fmpq_mat_mul(pc, Pi, c);
    for (slong i = 0; i < n; i++)
        for (slong j = 0; j < n; j++) {
            fmpq_add(fmpq_mat_entry(R, i, j), fmpq_mat_entry(R, i, j), fmpq_mat_entry(c, j, 0));
            fmpq_submul(fmpq_mat_entry(R, i, j), fmpq_mat_entry(g, i, 0), fmpq_mat_entry(pc, j, 0));
        }
    if (one_in) { /* F = M - g (g'M)/b, b = n */
        fmpq_mat_set(F, M);
        for (slong j = 0; j < n; j++) {
            fmpq_zero(t);
            for (slong i = 0; i < n; i++)
                fmpq_addmul(t, fmpq_mat_entry(g, i, 0), fmpq_mat_entry(M, i, j));
            fmpq_div(t, t, b);
            for (slong i = 0; i < n; i++)
                fmpq_submul(fmpq_mat_entry(F, i, j), fmpq_mat_entry(g, i, 0), t);
        }
    } else { /* F = Pi (E + 1c') Pi */
        fmpq_mat_set(W, E);
        for (slong i = 0; i < n; i++)
            for (slong j = 0; j < n; j++)
                fmpq_add(fmpq_mat_entry(W, i, j), fmpq_mat_entry(W, i, j), fmpq_mat_entry(c, j, 0));
        fmpq_mat_mul(M, Pi, W);
        fmpq_mat_mul(F, M, Pi);
    }
    fmpq_mat_clear(W);
    fmpq_mat_clear(M);
    fmpq_mat_clear(g);
    fmpq_mat_clear(v);
    fmpq_mat_clear(pv);
    fmpq_mat_clear(c);
    fmpq_mat_clear(pc);
    fmpq_mat_clear(one);
    fmpq_clear(b);
    fmpq_clear(t);
    fmpq_clear(nb);
}

int ac_t1_pow2_decide(const ac_mat *X, const size_t *piv, size_t r, const ac_mat *P,
                      int *rho_zero, long *famrank)
{
    slong n = (slong)P->rows;
    fmpq_mat_t Pi, E, R, F;
    int ok;
    if (r == 0 || r >= (size_t)n || n > AC_T1_EXACT_PI_MAX_N)
        return 0;
    fmpq_mat_init(Pi, n, n);
    fmpq_mat_init(E, n, n);
    fmpq_mat_init(R, n, n);
    fmpq_mat_init(F, n, n);
    ok = log2_matrix(E, P) && pi_rational(Pi, X, piv, r);
    if (ok) {
        rho_resid_exact(R, F, Pi, E, n);
        *rho_zero = fmpq_mat_is_zero(R);
        fmpz_mat_t Fz;
        fmpz *den = _fmpz_vec_init(n);
        fmpz_mat_init(Fz, n, n);
        fmpq_mat_get_fmpz_mat_rowwise(Fz, den, F); /* each row times its denominator */
        *famrank = (long)fmpz_mat_rank(Fz);
        fmpz_mat_clear(Fz);
        _fmpz_vec_clear(den, n);
    }
    fmpq_mat_clear(Pi);
    fmpq_mat_clear(E);
    fmpq_mat_clear(R);
    fmpq_mat_clear(F);
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

/* If every entry of P_IJ is a power of two, log P_IJ = E log 2 with E
 * integer and rank(K_I log P_IJ) = rank([E 1]) - 1 exactly
 * (doc/mathematics.md §3.5, §3.8); returns that, or -1 (not all powers of
 * two, or beyond the exact-rank budget).  I, J NULL: rows, columns 0.. */
long ac_t1_pow2_centred_rank(const ac_mat *P, const size_t *I, size_t a, const size_t *J,
                             size_t b, double budget)
{
    ac_mat E = {0};
    long rk = -1;
    for (size_t u = 0; u < a; u++)
        for (size_t v = 0; v < b; v++) {
            int e;
            if (frexp(AC_MAT(P, I ? I[u] : u, J ? J[v] : v), &e) != 0.5)
                return -1;
        }
    if (ac_mat_init(&E, a, b + 1, NULL))
        return -1;
    for (size_t u = 0; u < a; u++) {
        for (size_t v = 0; v < b; v++) {
            int e;
            frexp(AC_MAT(P, I ? I[u] : u, J ? J[v] : v), &e);
            AC_MAT(&E, u, v) = (double)(e - 1);
        }
        AC_MAT(&E, u, b) = 1.0;
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
    if ((q = ac_t1_pow2_centred_rank(P, NULL, n, NULL, n, budget)) >= 0 && q <= u) {
        u = q;
        *why = "exact rank of [log2 P 1] minus 1 (P's entries are powers of two)";
    }
    return u;
}

