/* sum_exact.h — exact comparison of a sum of doubles with a double, by a
 * fixed-point accumulator over the whole exponent range (no rounding at
 * all).  Internal. */
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

#endif /* AC_CORE_SUM_EXACT_H */
