/* bound.c — a bound on r(X) over every X, for layers that differ only in
 * their output projections (doc/mathematics.md §4.10, "Within tol at every
 * X").
 *
 * When Wq, Wk, Wv of the two layers are equal entry by entry (and so are
 * the sizes), both layers form the same head outputs
 * H(X) = [Wv_1 X P_1(X); ...; Wv_h X P_h(X)] (hh x n, hh = h hs), and
 *   f_W(X) = A H(X),   g_V(X) = (A + Delta) H(X),
 * with A = Wo_cat of f_W (d x hh) and Delta = Vo_cat - Wo_cat.  If A has
 * full column rank (hh <= d), H = A^+ f with A^+ = (A'A)^-1 A', so
 *   ||f - g||_F = ||Delta A^+ f||_F <= ||Delta A^+||_2 ||f||_F
 * and r(X) = ||f - g||_F / ||f||_F <= ||Delta A^+||_F =: B at every X
 * (f = 0 forces H = 0 and g = 0, so r = 0 there).  B is enclosed in Arb
 * balls from the exact doubles: G = A'A, Y = G^-1 Delta' (arb_mat_solve,
 * which certifies or says it could not), M' = A Y, B <= the upper end of
 * ||M||_F, rounded up.  B <= tol proves that no X separates the layers
 * beyond tol. */
#include <config.h>

#include <math.h>
#include <string.h>

#include "t2_impl.h"

/* The layers have the same sizes and equal Wq, Wk, Wv (values). */
static int only_wo_differs(const ac_mh *W, const ac_mh *V)
{
    if (W->d != V->d || W->h != V->h || W->hs != V->hs)
        return 0;
    size_t N = W->h * W->hs * W->d;
    for (size_t t = 0; t < N; t++)
        if (W->wq[t] != V->wq[t] || W->wk[t] != V->wk[t] || W->wv[t] != V->wv[t])
            return 0;
    return 1;
}

/* B at precision prec: 1 and *B set when certified, 0 when the solve could
 * not certify A'A invertible at this precision. */
static int bound_at(double *B, const ac_mh *W, const ac_mh *V, slong prec)
{
    slong d = (slong)W->d, hh = (slong)(W->h * W->hs);
    arb_mat_t A, Dt, G, Y, Mt;
    arb_t s;
    int ok;
    arb_mat_init(A, d, hh);
    arb_mat_init(Dt, hh, d);
    arb_mat_init(G, hh, hh);
    arb_mat_init(Y, hh, d);
    arb_mat_init(Mt, d, d);
    arb_init(s);
    for (slong r = 0; r < d; r++)
        for (slong c = 0; c < hh; c++) {
            size_t t = (size_t)(r * hh + c);
            arb_set_d(arb_mat_entry(A, r, c), W->wo[t]);
            arb_set_d(arb_mat_entry(Dt, c, r), V->wo[t]);
            arb_sub(arb_mat_entry(Dt, c, r), arb_mat_entry(Dt, c, r), arb_mat_entry(A, r, c),
                    prec);
        }
    arb_mat_transpose(G, A);
    arb_mat_mul(G, G, A, prec);          /* G = A'A */
    ok = arb_mat_solve(Y, G, Dt, prec); /* Y = G^-1 Delta' */
    if (ok) {
        arb_mat_mul(Mt, A, Y, prec); /* M' = A (A'A)^-1 Delta' = (Delta A^+)' */
        arb_zero(s);
        for (slong r = 0; r < d; r++)
            for (slong c = 0; c < d; c++)
                arb_addmul(s, arb_mat_entry(Mt, r, c), arb_mat_entry(Mt, r, c), prec);
        arb_sqrtpos(s, s, prec);
        arf_t u;
        arf_init(u);
        arb_get_ubound_arf(u, s, prec);
        *B = arf_get_d(u, ARF_RND_UP);
        arf_clear(u);
        ok = arb_is_finite(s) && isfinite(*B);
    }
    arb_mat_clear(A);
    arb_mat_clear(Dt);
    arb_mat_clear(G);
    arb_mat_clear(Y);
    arb_mat_clear(Mt);
    arb_clear(s);
    return ok;
}

double t2_wo_bound(const ac_mh *W, const ac_mh *V, long *prec)
{
    *prec = 0;
    if (!only_wo_differs(W, V) || W->h * W->hs > W->d)
        return NAN;
    double B;
    for (slong p = 128; p <= 512; p *= 2)
        if (bound_at(&B, W, V, p)) {
            *prec = (long)p;
            return B;
        }
    return NAN;
}
