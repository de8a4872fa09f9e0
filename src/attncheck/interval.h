/* attncheck/interval.h — stage-0 rigorous arithmetic in double precision.
 *
 * Everything here runs in the default rounding mode (round to nearest) and
 * obtains rigorous bounds from a-priori error analysis, never by switching the
 * rounding mode: threaded BLAS ignores the mode of the calling thread
 * (doc/mathematics.md §2.7).  u = 2^-53 is the unit roundoff, eta = 2^-1074 the smallest
 * subnormal, realmin = 2^-1022.
 *
 * Scalar rule used throughout: if c = fl(a op b) for op in {+,-,*,/,sqrt} in
 * round-to-nearest and c is finite, the exact result lies in
 * [ac_dn(c), ac_up(c)], the neighbouring doubles of c (the rounding error is at
 * most half an ulp, subnormal results included).
 *
 * Interval matrices are in midpoint-radius form: the set
 * {A : |A - mid| <= rad entrywise}; rad == NULL means a point matrix (radius 0),
 * e.g. exact input data.  Products follow Rump, "Fast and parallel interval
 * arithmetic", BIT 39 (1999) and Ogita & Rump's a-priori bound
 * |fl(AB) - AB| <= gamma_k |A||B| (Higham, ASNA 2nd ed., §3.5).
 */
#ifndef ATTNCHECK_INTERVAL_H
#define ATTNCHECK_INTERVAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attncheck/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_U      0x1p-53    /* unit roundoff */
#define AC_ETA    0x1p-1074  /* smallest positive subnormal */
#define AC_REALMIN 0x1p-1022 /* smallest positive normal */

/* Next double towards +inf / -inf (nextafter without the libm call).
 * ac_up(+inf) = +inf, ac_up(-DBL_MAX) = ..., NaN passes through. */
static inline double ac_up(double x)
{
    /* written as selects without early returns, so that loops over it
     * vectorise; the value is that of the step-by-step definition */
    uint64_t b;
    double y;
    memcpy(&b, &x, sizeof b);
    b += (x > 0) ? 1 : (uint64_t)-1;
    memcpy(&y, &b, sizeof b);
    y = (x == 0.0) ? AC_ETA : y;
    return (x != x || x == INFINITY) ? x : y;
}

static inline double ac_dn(double x)
{
    return -ac_up(-x);
}

/* Directed operations: a bound on the exact result of one operation. */
static inline double ac_add_up(double a, double b) { return ac_up(a + b); }
static inline double ac_add_dn(double a, double b) { return ac_dn(a + b); }
static inline double ac_sub_up(double a, double b) { return ac_up(a - b); }
static inline double ac_sub_dn(double a, double b) { return ac_dn(a - b); }
static inline double ac_mul_up(double a, double b) { return ac_up(a * b); }
static inline double ac_mul_dn(double a, double b) { return ac_dn(a * b); }
static inline double ac_div_up(double a, double b) { return ac_up(a / b); }
static inline double ac_div_dn(double a, double b) { return ac_dn(a / b); }
static inline double ac_sqrt_up(double a) { return ac_up(sqrt(a)); }
static inline double ac_sqrt_dn(double a) { double s = ac_dn(sqrt(a)); return s < 0 ? 0 : s; }

/* An upper bound on gamma_k = k u / (1 - k u) (Higham (3.8)); +inf if k u >= 1/2. */
double ac_gamma_up(double k);

/* Rigorous enclosure of exp(x): *lo <= e^x <= *hi for every finite double x,
 * with relative width about 150 u (see the error analysis in interval.c).
 * NaN input gives NaN bounds; x > 709 gives [a lower bound on e^709, inf],
 * x < -745.2 (including -inf) gives [0, 2^-1074]. */
void ac_exp_enclose(double x, double *lo, double *hi);

/* ac_exp_enclose for n arguments at once (vectorised; same guarantee). */
void ac_exp_enclose_array(const double *x, size_t n, double *lo, double *hi);

/* For a_i <= b_i: El_i <= e^(a_i) and Eh_i >= e^(b_i), one exp per entry
 * when b_i - a_i <= 2^-10 (Eh from e^(b-a) <= 1 + t + t^2, t >= b - a);
 * tmp holds n doubles. */
void ac_exp_enclose_shift(const double *a, const double *b, size_t n, double *El, double *Eh,
                          double *tmp);

/* Enclosure of the sum of n doubles: lo <= sum x_i <= hi (recursive summation
 * with the bound |fl(sum) - sum| <= gamma_{n-1} sum |x_i|).  Returns 0 if the
 * sum overflowed (bounds are then -inf/+inf). */
int ac_sum_enclose(const double *x, size_t n, size_t stride, double *lo, double *hi);

/* Upper bound on sqrt(sum x_i^2) (Frobenius / 2-norm of a vector). */
double ac_norm2_up(const double *x, size_t n);

/* ---- interval matrices (midpoint-radius) ---------------------------------- */

typedef struct {
    size_t rows, cols;
    double *mid;  /* rows*cols, row-major */
    double *rad;  /* rows*cols, >= 0, or NULL for a point matrix */
} ac_imat;

/* Allocate (mid and, if with_rad, rad zero-filled). */
int  ac_imat_init(ac_imat *m, size_t rows, size_t cols, int with_rad, ac_err *err);
void ac_imat_free(ac_imat *m);
/* A point interval matrix viewing an ac_mat (owns nothing: do not free). */
ac_imat ac_imat_view(const ac_mat *m);

typedef enum { AC_NOTRANS = 0, AC_TRANS = 1 } ac_trans;

/* C = op(A) op(B) enclosed: for all A' in A, B' in B, op(A')op(B') in C.
 * op(A) is m x k, op(B) is k x n; C must be allocated m x n with a radius.
 * The radius is up(G / (1 - gamma_{2k+1})) + realmin with
 *   G = fl(|Am| (gamma_k |Bm| + Br) + Ar (|Bm| + Br)),
 * the two factors on the right formed with upward rounding; underflow in the
 * products adds at most 2k eta/2 < realmin.  Cost: 2 dgemm when A is a point
 * matrix, 3 when A has a radius.
 * Returns AC_OK; AC_EUSAGE on a shape mismatch; AC_EINTERNAL out of memory.
 * Non-finite results leave Inf/NaN in C: check with ac_imat_finite. */
int ac_imat_mul(ac_imat *C, ac_trans ta, const ac_imat *A, ac_trans tb, const ac_imat *B,
                ac_err *err);

/* C = A B enclosed tightly for point matrices (doubles) A (m x k), B (k x n)
 * by one error-free split (doc/mathematics.md §2.3, "Split products";
 * Ozaki, Ogita, Oishi & Rump 2012): A = A1 + A2 by rows, B = B1 + B2 by
 * columns, A1 B1 computed exactly by dgemm, the remainder bounded a priori.
 * The radius is about 2^-beta (beta = floor((53 - ceil(log2 k))/2), 20 at
 * k = 4096) times that of ac_imat_mul plus u|C|.  Cost: three dgemm.
 * C allocated m x n with a radius.  Entries whose scales leave the range
 * where A1 B1 is exact (|A||B| near underflow or overflow) get radius +inf.
 * AC_EUSAGE on a shape mismatch, AC_EDATA if A or B has a non-finite entry,
 * AC_EINTERNAL out of memory. */
int ac_imat_mul_split(ac_imat *C, const ac_mat *A, const ac_mat *B, ac_err *err);

/* 1 if every midpoint and radius is finite. */
int ac_imat_finite(const ac_imat *A);

/* Lower/upper endpoints of entry i: [dn(mid - rad), up(mid + rad)]. */
static inline double ac_imat_lo(const ac_imat *A, size_t i)
{
    return A->rad ? ac_sub_dn(A->mid[i], A->rad[i]) : A->mid[i];
}
static inline double ac_imat_hi(const ac_imat *A, size_t i)
{
    return A->rad ? ac_add_up(A->mid[i], A->rad[i]) : A->mid[i];
}

/* Upper bound on max_ij |A_ij - B_ij| for A in the interval matrix and the
 * point matrix B (same shape); B == NULL means B = 0.  With identity != 0,
 * B is the identity instead (A square). */
double ac_imat_maxdev_up(const ac_imat *A, const double *B, int identity);
/* Upper bound on the Frobenius norm of A - B over the interval (same conventions). */
double ac_imat_fro_dev_up(const ac_imat *A, const double *B, int identity);

/* Column-wise softmax enclosure (doc/mathematics.md §2.4): given logit intervals
 * [lo_ij, hi_ij] for an n x m matrix (columns are the softmax groups),
 * fill plo, phi with rigorous bounds on Softmax(L)_ij for every L in the box:
 *   p_ij in [E-_i/(E-_i + sum_{k!=i} E+_k), E+_i/(E+_i + sum_{k!=i} E-_k)],
 * E± the enclosures of exp(endpoint - max_k hi_kj), rounded outward.
 * Returns 0 if some input is not finite or memory runs out (the bounds of the
 * affected columns, or of all, are then the trivial [0, 1]). */
int ac_softmax_col_enclose(const double *lo, const double *hi, size_t n, size_t m,
                           double *plo, double *phi);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_INTERVAL_H */
