/* dyadic.h — exact dyadic matrices (internal: FLINT types do not appear in
 * the installed headers).
 *
 * Every finite double is m 2^e with m an integer of at most 53 bits, so a
 * double matrix is exactly 2^exp M with M an integer matrix (FLINT fmpz_mat)
 * and exp the smallest exponent of its entries.  Sums and products of such
 * matrices stay in this form and are computed exactly, which is how attncheck
 * confirms equalities between products of parameters (S_W = S_V,
 * Vk_i'Vq_i = U, skew-symmetry of M_i, the embedding identities of Theorem 2)
 * without rounding: an equality is claimed only when the integers agree.
 *
 * Conversions from double cost one pass; the integers have at most
 * 53 + (emax - emin) bits, emax/emin the largest/smallest binary exponent of
 * the nonzero entries.  ac_xmat_from_d refuses (returns AC_XMAT_TOO_BIG) when
 * that span exceeds a budget, so that a file with entries 1e-300 and 1e300
 * cannot make a check run for hours: the caller then reports "cannot be
 * confirmed exactly".
 */
#ifndef AC_DYADIC_H
#define AC_DYADIC_H

#include <stddef.h>

#include "core/ac_arb.h"
#include "attncheck/common.h"

/* value = 2^exp * m; rows/cols mirror m */
typedef struct {
    fmpz_mat_t m;
    slong exp;
    int ready;   /* 1 when m is initialised */
} ac_xmat;

/* Default budget of ac_xmat_from_d: integer entries of at most this many bits. */
#define AC_XMAT_MAX_BITS 2048

enum { AC_XMAT_OK = 0, AC_XMAT_NONFINITE = 1, AC_XMAT_TOO_BIG = 2 };

/* A = the double matrix x (rows x cols, row stride ld), or its transpose when
 * trans != 0 (then A is cols x rows).  Exact.  Returns AC_XMAT_OK,
 * AC_XMAT_NONFINITE (an Inf/NaN entry) or AC_XMAT_TOO_BIG (bit budget
 * max_bits, 0 = AC_XMAT_MAX_BITS); on failure A is left cleared. */
int ac_xmat_from_d(ac_xmat *A, const double *x, size_t rows, size_t cols, size_t ld, int trans,
                   slong max_bits);
void ac_xmat_init_zero(ac_xmat *A, slong rows, slong cols);
void ac_xmat_clear(ac_xmat *A);
slong ac_xmat_rows(const ac_xmat *A);
slong ac_xmat_cols(const ac_xmat *A);

/* C = A B, C = A + B, C = A - B, C = A^T, C = A + A^T (exact; C is
 * (re)initialised, and may not alias the inputs). */
void ac_xmat_mul(ac_xmat *C, const ac_xmat *A, const ac_xmat *B);
void ac_xmat_add(ac_xmat *C, const ac_xmat *A, const ac_xmat *B);
void ac_xmat_sub(ac_xmat *C, const ac_xmat *A, const ac_xmat *B);
void ac_xmat_transpose(ac_xmat *C, const ac_xmat *A);
void ac_xmat_sym(ac_xmat *C, const ac_xmat *A);
/* C = the block A[r0..r0+nr, c0..c0+nc] (a copy). */
void ac_xmat_block(ac_xmat *C, const ac_xmat *A, slong r0, slong c0, slong nr, slong nc);

/* Exact tests. */
int ac_xmat_equal(const ac_xmat *A, const ac_xmat *B);
int ac_xmat_is_zero(const ac_xmat *A);
/* sqrt(a) A == sqrt(b) B entrywise (a, b > 0 integers): the signs agree and
 * a A_ij^2 == b B_ij^2.  Decides identities such as
 * U/sqrt(dp) == Wk'Wq/sqrt(d/h) exactly, irrational factors included. */
int ac_xmat_scaled_equal(const ac_xmat *A, unsigned long a, const ac_xmat *B, unsigned long b);
/* Number of entries where the test above fails (0 = equal). */
size_t ac_xmat_scaled_ndiff(const ac_xmat *A, unsigned long a, const ac_xmat *B, unsigned long b);

/* Rank modulo a 61-bit prime: a lower bound on the rank over Q. */
slong ac_xmat_rank_modp(const ac_xmat *A);
/* Exact rank over Q (fraction-free elimination). */
slong ac_xmat_rank(const ac_xmat *A);
/* The same, and if pivot_cols != NULL (room for cols) the indices of rank
 * linearly independent columns, ascending: the pivot columns of the reduced
 * row echelon form. */
slong ac_xmat_rank_cols(const ac_xmat *A, size_t *pivot_cols);
/* Largest number of bits of an integer entry (0 for a zero matrix). */
slong ac_xmat_bits(const ac_xmat *A);

/* 1 if every entry is exactly a double; then out (rows x cols, row-major)
 * receives them.  0 otherwise (out unspecified). */
int ac_xmat_to_d(const ac_xmat *A, double *out);
/* out = A as Arb balls (exact when prec is at least the entry bits; rounded
 * into the ball otherwise).  out must be rows x cols. */
void ac_xmat_to_arb(arb_mat_t out, const ac_xmat *A, slong prec);

/* A nonzero integer vector v (length cols) with A v = 0, or 0 if A has full
 * column rank.  v receives the integers (fmpz vector of length cols,
 * initialised by the caller). */
int ac_xmat_null_vector(fmpz *v, const ac_xmat *A);

#endif
