/* criterion_stage0_pi.c — stage 0 of the rank condition when rank X = d < n
 * (doc/mathematics.md §3.4, "Stage 0 of the criterion", the rank condition
 * with Pi != I): enclosures of the singular values of K Pi log(P) Pi in
 * double, without Arb.
 *
 * Pi = X'(XX')^{-1}X is replaced by Pi~ = X'SX with S ~ (XX')^{-1} a point
 * matrix; ||I - S XX'||_F <= theta < 1 (an interval product) gives
 * ||Pi - Pi~||_2 <= ||X||_2^2 theta ||S||_2 / (1 - theta) =: delta.  K is
 * replaced by the exact projector K~ = I - g~g~'/(g~'g~) of the point
 * vector g~ ~ Pi 1 (||K - K~||_2 <= ||Pi 1 - g~|| / ||g~||).  The matrix
 * K~ Pi~ L Pi~ is enclosed by interval products over the verified
 * enclosure of L = log P, its singular values by the Weyl enclosure of
 * §2.5, and Weyl's inequality widens them by
 *   eps = ||L||_F (||Pi 1 - g~||/||g~|| + delta (2 + delta)).
 *
 * Dimension letters: d model width, n tokens.  Buffers are row-major:
 * X d x n, P n x n, S d x d.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "theorem1/t1_impl.h"
#include "theorem1/t1_stage0.h"

/* [lo, hi] of the product of [a, b] and [c, e], rounded outward. */
static void imul(double a, double b, double c, double e, double *lo, double *hi)
{
    double p[4] = {ac_mul_dn(a, c), ac_mul_dn(a, e), ac_mul_dn(b, c), ac_mul_dn(b, e)};
    double q[4] = {ac_mul_up(a, c), ac_mul_up(a, e), ac_mul_up(b, c), ac_mul_up(b, e)};
    *lo = fmin(fmin(p[0], p[1]), fmin(p[2], p[3]));
    *hi = fmax(fmax(q[0], q[1]), fmax(q[2], q[3]));
}

/* Upper bound on ||A||_F over an interval matrix. */
static double ifro_up(const ac_imat *A)
{
    return ac_imat_fro_dev_up(A, NULL, 0);
}

/* N <- K~ N = N - g (g'N)/(g'g) enclosed (g a point vector, N n x n with a
 * radius); 0 if g'g is not certified positive. */
static int apply_k(ac_imat *N, const double *g, size_t n, double *gnorm_lo)
{
    ac_mat gm = {1, n, (double *)g};
    ac_imat gi = ac_imat_view(&gm), w = {0};
    double s_lo = 0, s_hi = 0;
    for (size_t i = 0; i < n; i++) {
        s_lo = ac_add_dn(s_lo, ac_mul_dn(g[i], g[i]));
        s_hi = ac_add_up(s_hi, ac_mul_up(g[i], g[i]));
    }
    *gnorm_lo = ac_sqrt_dn(s_lo);
    if (!(s_lo > 0) || ac_imat_init(&w, 1, n, 1, NULL) ||
        ac_imat_mul(&w, AC_NOTRANS, &gi, AC_NOTRANS, N, NULL) || !ac_imat_finite(&w)) {
        ac_imat_free(&w);
        return 0;
    }
    int ok = 1;
    for (size_t j = 0; j < n && ok; j++) {
        /* q_j = w_j / s in [qlo, qhi] */
        double wl = ac_imat_lo(&w, j), wh = ac_imat_hi(&w, j);
        double c1 = wl >= 0 ? ac_div_dn(wl, s_hi) : ac_div_dn(wl, s_lo);
        double c2 = wh >= 0 ? ac_div_up(wh, s_lo) : ac_div_up(wh, s_hi);
        for (size_t i = 0; i < n; i++) {
            size_t e = i * n + j;
            double plo, phi;
            imul(g[i], g[i], c1, c2, &plo, &phi);
            double lo = ac_sub_dn(ac_imat_lo(N, e), phi), hi = ac_sub_up(ac_imat_hi(N, e), plo);
            double m = 0.5 * lo + 0.5 * hi;
            N->mid[e] = m;
            N->rad[e] = fmax(ac_sub_up(hi, m), ac_sub_up(m, lo));
            ok = isfinite(N->rad[e]);
        }
    }
    ac_imat_free(&w);
    return ok;
}

int ac_t1_kpilpi_sv_stage0(const ac_mat *X, const ac_mat *P, int one_perp, double *slo,
                           double *shi)
{
    size_t d = X->rows, n = X->cols;
    ac_mat Xt = {0}, Yp = {0}, S = {0};
    int ok = d > 0 && d < n && ac_mat_init(&Xt, n, d, NULL) == AC_OK;
    for (size_t i = 0; i < d && ok; i++)
        for (size_t j = 0; j < n; j++)
            AC_MAT(&Xt, j, i) = AC_MAT(X, i, j);
    /* S = Yp Yp' ~ (XX')^{-1}, Yp = (X')^+ */
    ok = ok && ac_approx_pinv_fullcol(&Yp, &Xt, NULL) == AC_OK && ac_mat_init(&S, d, d, NULL) == AC_OK;
    if (ok) {
        ac_dgemm(AC_NOTRANS, AC_TRANS, d, d, n, 1.0, Yp.data, n, Yp.data, n, 0.0, S.data, d);
        ok = ac_t1_kpilpi_sv_given(X, P, one_perp, &S, slo, shi);
    }
    ac_mat_free(&Xt);
    ac_mat_free(&Yp);
    ac_mat_free(&S);
    return ok;
}

int ac_t1_kpilpi_sv_given(const ac_mat *X, const ac_mat *P, int one_perp, const ac_mat *S,
                          double *slo, double *shi)
{
    size_t d = X->rows, n = X->cols, nn = n * n;
    ac_imat Xi = ac_imat_view(X), Si = ac_imat_view(S), M = {0}, SM = {0}, Li = {0}, U = {0};
    ac_imat V = {0}, W1 = {0}, W = {0}, T = {0}, N = {0};
    double *Llo = malloc(nn * sizeof(double)), *Lhi = malloc(nn * sizeof(double));
    double *g = malloc(n * sizeof(double)), *sg = malloc(d * sizeof(double));
    double *xg = malloc(d * sizeof(double));
    int ok = Llo && Lhi && g && sg && xg && d > 0 && d < n && S->rows == d && S->cols == d;
    ok = ok && ac_t1_log_enclose(P->data, nn, Llo, Lhi);
    if (!ok)
        goto out;
    /* theta >= ||I - S XX'||_F, ||X||_2^2 = ||XX'||_2 <= ||XX'||_F */
    ok = ac_imat_init(&M, d, d, 1, NULL) == AC_OK && ac_imat_init(&SM, d, d, 1, NULL) == AC_OK &&
         ac_imat_mul(&M, AC_NOTRANS, &Xi, AC_TRANS, &Xi, NULL) == AC_OK &&
         ac_imat_mul(&SM, AC_NOTRANS, &Si, AC_NOTRANS, &M, NULL) == AC_OK && ac_imat_finite(&SM);
    if (!ok)
        goto out;
    double theta = ac_imat_fro_dev_up(&SM, NULL, 1);
    double x2 = ifro_up(&M), s2 = ac_norm2_up(S->data, d * d);
    ok = theta < 1;
    if (!ok)
        goto out;
    double delta = ac_div_up(ac_mul_up(ac_mul_up(x2, theta), s2), ac_sub_dn(1.0, theta));
    /* N = X'(S (X L X') S) X enclosed: Pi~ L Pi~ for every L in the box */
    ok = ac_imat_init(&Li, n, n, 1, NULL) == AC_OK;
    for (size_t e = 0; e < nn && ok; e++) {
        double m = 0.5 * Llo[e] + 0.5 * Lhi[e];
        Li.mid[e] = m;
        Li.rad[e] = fmax(ac_sub_up(Lhi[e], m), ac_sub_up(m, Llo[e]));
    }
    ok = ok && ac_imat_init(&U, d, n, 1, NULL) == AC_OK && ac_imat_init(&V, d, d, 1, NULL) == AC_OK &&
         ac_imat_init(&W1, d, d, 1, NULL) == AC_OK && ac_imat_init(&W, d, d, 1, NULL) == AC_OK &&
         ac_imat_init(&T, n, d, 1, NULL) == AC_OK && ac_imat_init(&N, n, n, 1, NULL) == AC_OK &&
         ac_imat_mul(&U, AC_NOTRANS, &Xi, AC_NOTRANS, &Li, NULL) == AC_OK &&
         ac_imat_mul(&V, AC_NOTRANS, &U, AC_TRANS, &Xi, NULL) == AC_OK &&
         ac_imat_mul(&W1, AC_NOTRANS, &Si, AC_NOTRANS, &V, NULL) == AC_OK &&
         ac_imat_mul(&W, AC_NOTRANS, &W1, AC_NOTRANS, &Si, NULL) == AC_OK &&
         ac_imat_mul(&T, AC_TRANS, &Xi, AC_NOTRANS, &W, NULL) == AC_OK &&
         ac_imat_mul(&N, AC_NOTRANS, &T, AC_NOTRANS, &Xi, NULL) == AC_OK && ac_imat_finite(&N);
    if (!ok)
        goto out;
    double lnorm = ifro_up(&Li), kerr = 0;
    if (!one_perp) { /* g~ = X'(S(X 1)) in double; K~ applied exactly */
        for (size_t i = 0; i < d; i++) {
            double s = 0;
            for (size_t j = 0; j < n; j++)
                s += AC_MAT(X, i, j);
            xg[i] = s;
        }
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, d, 1, d, 1.0, S->data, d, xg, 1, 0.0, sg, 1);
        ac_dgemm(AC_TRANS, AC_NOTRANS, n, 1, d, 1.0, X->data, n, sg, 1, 0.0, g, 1);
        /* ||Pi 1 - g~|| <= ||(Pi - Pi~) 1|| + ||Pi~ 1 - g~||: the first
         * <= delta sqrt(n); the second by an interval product */
        ac_mat sm = {d, d, S->data}, om = {n, 1, NULL};
        double *ones = malloc(n * sizeof(double));
        ac_imat C1 = {0}, C2 = {0}, C3 = {0};
        ok = ones != NULL;
        for (size_t j = 0; j < n && ok; j++)
            ones[j] = 1.0;
        om.data = ones;
        ac_imat Oi = ac_imat_view(&om), Sm = ac_imat_view(&sm);
        ok = ok && ac_imat_init(&C1, d, 1, 1, NULL) == AC_OK &&
             ac_imat_init(&C2, d, 1, 1, NULL) == AC_OK && ac_imat_init(&C3, n, 1, 1, NULL) == AC_OK &&
             ac_imat_mul(&C1, AC_NOTRANS, &Xi, AC_NOTRANS, &Oi, NULL) == AC_OK &&
             ac_imat_mul(&C2, AC_NOTRANS, &Sm, AC_NOTRANS, &C1, NULL) == AC_OK &&
             ac_imat_mul(&C3, AC_TRANS, &Xi, AC_NOTRANS, &C2, NULL) == AC_OK && ac_imat_finite(&C3);
        double gerr = ok ? ac_add_up(ac_mul_up(delta, ac_sqrt_up((double)n)),
                                     ac_imat_fro_dev_up(&C3, g, 0))
                         : INFINITY;
        free(ones);
        ac_imat_free(&C1);
        ac_imat_free(&C2);
        ac_imat_free(&C3);
        double gn = 0;
        ok = ok && apply_k(&N, g, n, &gn);
        if (!ok)
            goto out;
        /* ||K - K~||_2 = sin of the angle of Pi 1 and g~ <= ||Pi 1 - g~|| / ||g~|| */
        kerr = ac_div_up(gerr, gn);
        ok = kerr < 1;
        if (!ok)
            goto out;
    }
    double eps = ac_mul_up(lnorm, ac_add_up(kerr, ac_mul_up(delta, ac_add_up(2.0, delta))));
    ok = ac_sv_enclose(&N, slo, shi, NULL, NULL) == AC_OK && isfinite(eps);
    for (size_t i = 0; i < n && ok; i++) {
        slo[i] = fmax(0.0, ac_sub_dn(slo[i], eps));
        shi[i] = ac_add_up(shi[i], eps);
    }
out:
    ac_imat_free(&M);
    ac_imat_free(&SM);
    ac_imat_free(&Li);
    ac_imat_free(&U);
    ac_imat_free(&V);
    ac_imat_free(&W1);
    ac_imat_free(&W);
    ac_imat_free(&T);
    ac_imat_free(&N);
    free(Llo);
    free(Lhi);
    free(g);
    free(sg);
    free(xg);
    return ok;
}
