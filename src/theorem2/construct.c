/* construct.c — the inputs X of the proof of Theorem 2 of paper 1, one
 * construction per case (doc/mathematics.md §4.4-§4.6):
 *   construct_case1  X = v 1'                   (case 1: S_W != S_V)
 *   construct_case2  X = c v e_1'               (case 2: some M_i not skew)
 *   construct_case3  X = [c v1, alpha c v2~, 0] (case 3: every M_i skew)
 * with generic vectors v from the streams (seed, 200 + construction, index). */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/linalg.h"
#include "attncheck/rng.h"
#include "t2_impl.h"

void t2_rng_vec(double *v, size_t m, uint64_t seed, uint64_t a, uint64_t b)
{
    ac_rng r;
    ac_rng_init(&r, seed, a, b);
    ac_rng_normal_fill(&r, v, m);
}

static double dot(const double *a, const double *b, size_t m)
{
    double s = 0;
    for (size_t i = 0; i < m; i++)
        s += a[i] * b[i];
    return s;
}

/* out = Wk_i^T (Wq_i x) / sqrt(hs): then y' out = y' Wk_i' Wq_i x / sqrt(hs),
 * the logit of token y in the softmax group of token x (double). */
static void bilin_vec(double *out, const ac_mh *L, size_t i, const double *x, double *tmp)
{
    size_t d = L->d, hs = L->hs;
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, hs, 1, d, 1.0, L->wq + i * hs * d, d, x, 1, 0.0, tmp, 1);
    ac_dgemm(AC_TRANS, AC_NOTRANS, d, 1, hs, 1.0 / sqrt((double)hs), L->wk + i * hs * d, d, tmp,
             1, 0.0, out, 1);
}

/* The power of two nearest to x > 0 (1 for x <= 0 or not finite). */
static double pow2_near(double x)
{
    if (!(x > 0) || !isfinite(x))
        return 1.0;
    return ldexp(1.0, (int)lround(log2(x)));
}

/* Work vectors of the constructions: v the generic vector, a, b, best_b,
 * v2 (d each), tmp (the larger head size). */
typedef struct {
    double *v, *a, *b, *best_b, *v2, *tmp;
} con_ws;

static void con_ws_free(con_ws *w)
{
    free(w->v);
    free(w->a);
    free(w->b);
    free(w->best_b);
    free(w->v2);
    free(w->tmp);
}

static int con_ws_init(con_ws *w, size_t d, size_t hsmax, ac_err *err)
{
    w->v = malloc(d * sizeof(double));
    w->a = malloc(d * sizeof(double));
    w->b = malloc(d * sizeof(double));
    w->best_b = malloc(d * sizeof(double));
    w->v2 = malloc(d * sizeof(double));
    w->tmp = malloc(hsmax * sizeof(double));
    if (!w->v || !w->a || !w->b || !w->best_b || !w->v2 || !w->tmp)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    return AC_OK;
}

/* Case 1 (paper 1, Theorem 2): X = v 1' / sqrt(d); X P = X for every
 * column-stochastic P, so f_W(X) - g_V(X) = (S_W - S_V) v 1' / sqrt(d). */
static void construct_case1(ac_mat *X, const double *v)
{
    size_t d = X->rows, n = X->cols;
    double s = 1.0 / sqrt((double)d);
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < n; j++)
            AC_MAT(X, i, j) = s * v[i];
}

/* Case 2 (paper 1, Theorem 2): X = c v e_1'; the self-logits
 * tau = v'Uv/sqrt(dp) (g) and t_i = v'A_i v/sqrt(d/h) (head i of f), scaled
 * by c^2 to about 2.  *head: the head with the largest |t_i - tau|. */
static void construct_case2(ac_mat *X, const ac_mh *W, const ac_mh *V, con_ws *w, size_t *head)
{
    size_t d = W->d;
    bilin_vec(w->a, V, 0, w->v, w->tmp);
    double tau = dot(w->v, w->a, d), m = fabs(tau), gap = -1;
    for (size_t i = 0; i < W->h; i++) {
        bilin_vec(w->b, W, i, w->v, w->tmp);
        double t = dot(w->v, w->b, d);
        if (fabs(t) > m)
            m = fabs(t);
        if (fabs(t - tau) > gap) {
            gap = fabs(t - tau);
            if (head)
                *head = i + 1;
        }
    }
    double c = m > 0 ? pow2_near(sqrt(2.0 / m)) : 1.0;
    for (size_t i = 0; i < d; i++)
        AC_MAT(X, i, 0) = c * w->v[i];
}

/* Case 3 (paper 1, Theorem 2): X = [c v1, alpha c v2~, 0, ...].
 * a = U v1/sqrt(dp), b = A_i v1/sqrt(d/h) for the head with the largest
 * |M_i v1| = |a - b|; v2~ separates the signs of v2~'a > 0 and v2~'b < 0:
 * v2~ = a/|a| - b/|b| (fails only when a, b are positively parallel: the
 * second gap, doc/mathematics.md §4.7), a/|a| when b = 0, -b/|b| when a = 0. */
static void construct_case3(ac_mat *X, const ac_mh *W, const ac_mh *V, con_ws *w, double alpha,
                            size_t *head)
{
    size_t d = W->d, bi = 0;
    double *v = w->v, *a = w->a, *best_b = w->best_b, *v2 = w->v2;
    bilin_vec(a, V, 0, v, w->tmp);
    double best = -1;
    for (size_t i = 0; i < W->h; i++) {
        bilin_vec(w->b, W, i, v, w->tmp);
        double m2 = 0;
        for (size_t t = 0; t < d; t++)
            m2 += (a[t] - w->b[t]) * (a[t] - w->b[t]);
        if (m2 > best) {
            best = m2;
            bi = i;
            memcpy(best_b, w->b, d * sizeof(double));
        }
    }
    if (head)
        *head = bi + 1;
    double na = sqrt(dot(a, a, d)), nb = sqrt(dot(best_b, best_b, d)), nv = sqrt(dot(v, v, d));
    double tiny = 1e-12 * (na + nb);
    for (size_t t = 0; t < d; t++) {
        double x = 0;
        if (na > tiny)
            x += a[t] / na;
        if (nb > tiny)
            x -= best_b[t] / nb;
        v2[t] = x;
    }
    /* |v2~| <= 2; when it is tiny, a and b are (numerically) positively
     * parallel, v2~ is rounding noise and scaling it to |v| would blow X up
     * (logits ~ 1/|v2~|^2): the construction is then degenerate and the
     * second column is left 0 */
    double n2 = sqrt(dot(v2, v2, d));
    double scale2 = n2 > 0x1p-20 ? nv / n2 : 0.0;
    double mx = na > nb ? na : nb;
    double c = (mx > 0 && nv > 0) ? pow2_near(1.0 / sqrt(mx * nv)) : 1.0;
    for (size_t t = 0; t < d; t++) {
        AC_MAT(X, t, 0) = c * v[t];
        AC_MAT(X, t, 1) = alpha * c * scale2 * v2[t];
    }
}

int ac_t2_construct(ac_mat *X, int construction, const ac_mh *W, const ac_mh *V, size_t n,
                    uint64_t seed, size_t index, double alpha, size_t *head, ac_err *err)
{
    size_t d = W->d;
    con_ws w = {0};
    int st;
    memset(X, 0, sizeof *X);
    if (head)
        *head = 0;
    if (construction < AC_T2_CON_1 || construction > AC_T2_CON_3)
        return ac_err_set(err, AC_EUSAGE, "construction %d: the constructions are 1, 2 and 3",
                          construction);
    if (construction == AC_T2_CON_3 && n < 2)
        return ac_err_set(err, AC_EUSAGE, "construction 3 needs n >= 2 tokens");
    if (n == 0)
        return ac_err_set(err, AC_EUSAGE, "X needs n >= 1 tokens");
    if ((st = ac_mat_init(X, d, n, err)))
        return st;
    if ((st = con_ws_init(&w, d, W->hs > V->hs ? W->hs : V->hs, err)))
        goto out;
    t2_rng_vec(w.v, d, seed, T2_STREAM_CON + (uint64_t)construction, index);
    switch (construction) {
    case AC_T2_CON_1: construct_case1(X, w.v); break;
    case AC_T2_CON_2: construct_case2(X, W, V, &w, head); break;
    default: construct_case3(X, W, V, &w, alpha, head); break;
    }
out:
    con_ws_free(&w);
    if (st)
        ac_mat_free(X);
    return st;
}

const char *ac_t2_construction_name(int c)
{
    switch (c) {
    case AC_T2_CON_1: return "X = v 1' (case 1)";
    case AC_T2_CON_2: return "X = v e_1' (case 2)";
    case AC_T2_CON_3: return "X = [v1, alpha v2~, 0, ...] (case 3)";
    case AC_T2_CON_OPT: return "multimin on the relative gap";
    case AC_T2_CON_TIE: return "a near-tie of two logits at the scale that resolves it";
    case AC_T2_CON_BASIS: return "the basis vector e_k as the first token";
    case AC_T2_CON_SCALE: return "a Gaussian X at one head's logit scale";
    case AC_T2_CON_CANCEL: return "equal tokens where the head outputs cancel";
    default: return "none";
    }
}
