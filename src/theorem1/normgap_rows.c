/* normgap_rows.c — the certified normalisation gap of P, read row by row
 * (t1_impl.h).  The value is that of ac_t1_normalisation_gap (instance.c),
 * bit for bit: every column's exact-sum test is exact, its sums s_j and
 * sum |P_ij| are formed in the same order of i, and the maximum of the
 * entry bounds does not depend on the order.  The strided column walks of
 * that function touch a new cache line per entry; here each block of
 * GAP_COLS columns is read row by row, and the blocks are shared out over
 * the OpenMP threads. */
#include <config.h>

#include <math.h>

#include "attncheck/interval.h"
#include "core/sum_exact.h"
#include "theorem1/t1_impl.h"

#define GAP_COLS 64

/* lo, hi as ac_sum_enclose (interval.c) from its two sums s and a = sum |x|
 * over cnt terms: the same operations, so the same bits. */
static void enclose_from(double s, double a, size_t cnt, double *lo, double *hi)
{
    if (!isfinite(s) || !isfinite(a)) {
        *lo = -INFINITY;
        *hi = INFINITY;
        return;
    }
    if (cnt <= 1) {
        *lo = *hi = s;
        return;
    }
    double g = ac_gamma_up((double)(cnt - 1));
    double err = ac_mul_up(ac_div_up(g, ac_sub_dn(1.0, g)), a);
    *lo = ac_sub_dn(s, err);
    *hi = ac_add_up(s, err);
}

double t1_normalisation_gap_rows(const ac_mat *P)
{
    size_t n = P->rows, m = P->cols, nb = (m + GAP_COLS - 1) / GAP_COLS;
    double gap = 0;
    int oom = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) reduction(max : gap) reduction(| : oom)
#endif
    for (size_t b = 0; b < nb; b++) {
        size_t j0 = b * GAP_COLS, w = m - j0 < GAP_COLS ? m - j0 : GAP_COLS;
        int ex[GAP_COLS];
        double s[GAP_COLS] = {0}, a[GAP_COLS] = {0}, f[GAP_COLS];
        if (!ac_sum_is_exactly_cols(P->data + j0, n, w, m, 1.0, ex)) {
            oom = 1;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            const double *p = P->data + i * m + j0;
            for (size_t j = 0; j < w; j++) {
                s[j] += p[j];
                a[j] += fabs(p[j]);
            }
        }
        for (size_t j = 0; j < w; j++) {
            double lo, hi;
            enclose_from(s[j], a[j], n, &lo, &hi);
            /* |1 - 1/s| over s in [lo, hi] */
            f[j] = ac_up(fmax(fabs(ac_sub_up(1.0, ac_div_dn(1.0, hi))),
                              fabs(ac_sub_dn(1.0, ac_div_up(1.0, lo)))));
        }
        for (size_t i = 0; i < n; i++) {
            const double *p = P->data + i * m + j0;
            for (size_t j = 0; j < w; j++) {
                double g = ac_mul_up(p[j], f[j]);
                if (!ex[j] && g > gap) /* an exact column is its own normalisation */
                    gap = g;
            }
        }
    }
    return oom ? ac_t1_normalisation_gap(P) : gap;
}
