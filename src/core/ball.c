/* ball.c — Arb helpers (ball.h). */
#include <config.h>

#include <math.h>

#include "core/ball.h"

void ac_arb_mat_set_d(arb_mat_t A, const double *x, size_t rows, size_t cols)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            arb_set_d(arb_mat_entry(A, i, j), x[i * cols + j]);
}

double ac_arb_lo(const arb_t x)
{
    arf_t t;
    double d;
    if (!arb_is_finite(x))
        return -INFINITY;
    arf_init(t);
    arb_get_lbound_arf(t, x, 64);
    d = arf_get_d(t, ARF_RND_FLOOR);
    arf_clear(t);
    return d;
}

double ac_arb_hi(const arb_t x)
{
    arf_t t;
    double d;
    if (!arb_is_finite(x))
        return INFINITY;
    arf_init(t);
    arb_get_ubound_arf(t, x, 64);
    d = arf_get_d(t, ARF_RND_CEIL);
    arf_clear(t);
    return d;
}

void ac_arb_get_interval_mpfr(mpfr_t lo, mpfr_t hi, const arb_t x)
{
    arf_t t;
    if (!arb_is_finite(x)) {
        mpfr_set_inf(lo, -1);
        mpfr_set_inf(hi, 1);
        return;
    }
    arf_init(t);
    arb_get_lbound_arf(t, x, mpfr_get_prec(lo));
    arf_get_mpfr(lo, t, MPFR_RNDD);
    arb_get_ubound_arf(t, x, mpfr_get_prec(hi));
    arf_get_mpfr(hi, t, MPFR_RNDU);
    arf_clear(t);
}

void ac_arb_softmax_cols(arb_mat_t P, const arb_mat_t L, slong prec)
{
    slong n = arb_mat_nrows(L), m = arb_mat_ncols(L);
    arb_t s, mx;
    arb_init(s);
    arb_init(mx);
    for (slong j = 0; j < m; j++) {
        /* shift by the largest midpoint: the shift is exact and cancels */
        arf_struct *best = NULL;
        for (slong i = 0; i < n; i++) {
            arf_struct *mi = arb_midref(arb_mat_entry(L, i, j));
            if (!best || arf_cmp(mi, best) > 0)
                best = mi;
        }
        if (best)
            arb_set_arf(mx, best);
        else
            arb_zero(mx);
        arb_zero(s);
        for (slong i = 0; i < n; i++) {
            arb_sub(arb_mat_entry(P, i, j), arb_mat_entry(L, i, j), mx, prec);
            arb_exp(arb_mat_entry(P, i, j), arb_mat_entry(P, i, j), prec);
            arb_add(s, s, arb_mat_entry(P, i, j), prec);
        }
        for (slong i = 0; i < n; i++)
            arb_div(arb_mat_entry(P, i, j), arb_mat_entry(P, i, j), s, prec);
    }
    arb_clear(s);
    arb_clear(mx);
}

void ac_arb_max_abs_dev(arb_t res, const arb_mat_t A, const double *B, slong prec)
{
    slong n = arb_mat_nrows(A), m = arb_mat_ncols(A);
    arb_t t;
    arb_init(t);
    arb_zero(res);
    for (slong i = 0; i < n; i++)
        for (slong j = 0; j < m; j++) {
            if (B) {
                arb_set_d(t, B[i * m + j]);
                arb_sub(t, arb_mat_entry(A, i, j), t, prec);
            } else {
                arb_set(t, arb_mat_entry(A, i, j));
            }
            arb_abs(t, t);
            arb_max(res, res, t, prec);
        }
    arb_clear(t);
}

void ac_arb_fro(arb_t res, const arb_mat_t A, slong prec)
{
    arb_mat_frobenius_norm(res, A, prec);
}

int ac_arb_mat_to_imat(ac_imat *A, const arb_mat_t M, ac_err *err)
{
    slong r = arb_mat_nrows(M), c = arb_mat_ncols(M);
    int st = ac_imat_init(A, (size_t)r, (size_t)c, 1, err);
    if (st)
        return st;
    arb_t t;
    arb_init(t);
    for (slong i = 0; i < r; i++)
        for (slong j = 0; j < c; j++) {
            arb_srcptr e = arb_mat_entry(M, i, j);
            double m = arf_get_d(arb_midref(e), ARF_RND_NEAR);
            /* |x - m| over the ball: the ball of x - m, enclosed exactly
             * enough at 128 bits, its upper end rounded up */
            arb_set_d(t, m);
            arb_sub(t, e, t, 128);
            arb_abs(t, t);
            A->mid[i * c + j] = m;
            A->rad[i * c + j] = ac_arb_hi(t);
        }
    arb_clear(t);
    return AC_OK;
}
