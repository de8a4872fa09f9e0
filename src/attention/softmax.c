/* softmax.c — the one double-precision softmax (attention/softmax.h). */
#include <config.h>

#include "attention/softmax.h"
#include "core/exp_kernel.h"

void ac_softmax_row(double *a, size_t len)
{
    double m = a[0];
#pragma omp simd reduction(max : m) /* the maximum is exact in any order */
    for (size_t j = 1; j < len; j++)
        m = a[j] > m ? a[j] : m;
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t j = 0; j < len; j++) {
        double e = ac_exp_kernel(a[j] - m);
        a[j] = e;
        s += e;
    }
    double inv = 1.0 / s;
#pragma omp simd
    for (size_t j = 0; j < len; j++)
        a[j] *= inv;
}

/* GCC vectorises the exp loop only with its dynamic cost model (-O3), so the
 * function asks for it whatever the global -O level. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#endif
void ac_softmax_cols(double *Z, size_t rows, size_t cols, double *colmax, double *colsum)
{
    if (rows == 0)
        return;
    for (size_t j = 0; j < cols; j++) {
        colmax[j] = Z[j];
        colsum[j] = 0.0;
    }
    for (size_t a = 1; a < rows; a++) {
        const double *z = Z + a * cols;
        for (size_t j = 0; j < cols; j++)
            colmax[j] = z[j] > colmax[j] ? z[j] : colmax[j];
    }
    for (size_t a = 0; a < rows; a++) {
        double *z = Z + a * cols;
        for (size_t j = 0; j < cols; j++) {
            double e = ac_exp_kernel(z[j] - colmax[j]);
            z[j] = e;
            colsum[j] += e;
        }
    }
    for (size_t j = 0; j < cols; j++)
        colsum[j] = 1.0 / colsum[j];
    for (size_t a = 0; a < rows; a++) {
        double *z = Z + a * cols;
        for (size_t j = 0; j < cols; j++)
            z[j] *= colsum[j];
    }
}
