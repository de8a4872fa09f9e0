/* sum_exact.h — exact comparison of a sum of doubles with a double, and
 * the exact deviation rounded toward zero, by a fixed-point accumulator over
 * the whole exponent range (no rounding before the last step).  Internal. */
#ifndef AC_CORE_SUM_EXACT_H
#define AC_CORE_SUM_EXACT_H

#include <stddef.h>

/* 1 if the exact sum x_0 + x_stride + ... (n terms) equals target, 0
 * otherwise (also when an input is not finite). */
int ac_sum_is_exactly(const double *x, size_t n, size_t stride, double target);

/* out[j] = ac_sum_is_exactly(A + j, rows, ld, target) for the cols columns
 * of A (row-major, leading dimension ld), read row by row (each column's
 * accumulator in cache; the answer is exact, so it is the same).  Returns
 * 0 when out of memory (out untouched), 1 otherwise. */
int ac_sum_is_exactly_cols(const double *A, size_t rows, size_t cols, size_t ld, double target,
                           int *out);

/* |x_0 + x_stride + ... (n terms) - target| rounded toward zero to a
 * double: a lower bound on the exact deviation that is 0 exactly when the
 * sum is target (DBL_MAX when the deviation is larger; NaN when an input is
 * not finite). */
double ac_sum_dev_rz(const double *x, size_t n, size_t stride, double target);

#endif /* AC_CORE_SUM_EXACT_H */
