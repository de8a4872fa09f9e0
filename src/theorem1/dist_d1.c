/* dist_d1.c — d = 1 (doc/mathematics.md §3.6): X is one row x, every
 * head's logits are (Wk X)'(Wq X)/sqrt(dk) = a x_i x_j with the scalar
 * a = Wk'Wq/sqrt(dk), and every real a occurs (dk >= 1).  So
 *     dist = inf over a in R of f(a),
 *     f(a) = max_ij |S_ij(a) - P_ij|,  S_ij(a) = 1 / sum_k exp(a x_j (x_k - x_i)).
 * Branch and bound over a: on a cell [A, B] (ends possibly infinite) each
 * term exp(a delta_k) is monotone in a, so S_ij is enclosed by the ends'
 * terms, rounded outward; the distance of P_ij to that enclosure bounds f
 * from below on the whole cell.  The cell with the lowest bound is split
 * until the bound meets the best f(a) seen (to a relative 2^-43, about the
 * width of the enclosures) or the budget is spent; the
 * lowest bound over the cells left is a certified lower bound on dist.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/interval.h"
#include "attncheck/theorem1.h"
#include "theorem1/t1_dist.h"

typedef struct {
    double a, b, lb;
} cell;

/* Enclosure of {a delta : a in [A, B], delta in [dlo, dhi]} with 0 * inf = 0
 * (delta = 0 exactly gives 0 for every finite a). */
static void mul_enclose(double A, double B, double dlo, double dhi, double *lo, double *hi)
{
    double e[4][2];
    const double av[2] = {A, B}, dv[2] = {dlo, dhi};
    for (int s = 0; s < 2; s++)
        for (int t = 0; t < 2; t++) {
            double x = av[s], y = dv[t];
            if (x == 0 || y == 0)
                e[2 * s + t][0] = e[2 * s + t][1] = 0;
            else {
                e[2 * s + t][0] = ac_mul_dn(x, y);
                e[2 * s + t][1] = ac_mul_up(x, y);
            }
        }
    *lo = e[0][0];
    *hi = e[0][1];
    for (int q = 1; q < 4; q++) {
        *lo = fmin(*lo, e[q][0]);
        *hi = fmax(*hi, e[q][1]);
    }
}

/* The distance of p to [lo, hi], rounded down. */
static double gap_dn(double p, double lo, double hi)
{
    if (p > hi)
        return ac_sub_dn(p, hi);
    if (p < lo)
        return ac_sub_dn(lo, p);
    return 0;
}

/* Lower bound on f over a finite cell [A, B] in O(n^2): every logit
 * u_k = a x_j x_k lies in [ulo_k, uhi_k] for all a in the cell at once, and
 * S_i = e^{u_i} / (e^{u_i} + sum_{k != i} e^{u_k}) increases with u_i and
 * decreases with the others, so the ends of the u's bound S_i (shifted by
 * M = max uhi, which cancels). */
static double cell_lb_narrow(const double *x, const ac_mat *P, double A, double B, double *ulo,
                             double *uhi)
{
    size_t n = P->rows;
    double best = 0;
    for (size_t j = 0; j < n; j++) {
        double M = -INFINITY, slo = 0, shi = 0;
        for (size_t k = 0; k < n; k++) {
            double w = x[j] * x[k], wlo = ac_dn(w), whi = ac_up(w); /* one ulp out */
            if (x[j] == 0 || x[k] == 0)
                wlo = whi = 0;
            mul_enclose(A, B, wlo, whi, &ulo[k], &uhi[k]);
            M = fmax(M, uhi[k]);
        }
        for (size_t k = 0; k < n; k++) {
            double t;
            ac_exp_enclose(ac_sub_dn(ulo[k], M), &ulo[k], &t);
            ac_exp_enclose(ac_sub_up(uhi[k], M), &t, &uhi[k]);
            slo = ac_add_dn(slo, ulo[k]);
            shi = ac_add_up(shi, uhi[k]);
        }
        for (size_t i = 0; i < n; i++) {
            double others_hi = ac_sub_up(shi, uhi[i]);
            double others_lo = fmax(0.0, ac_sub_dn(slo, ulo[i]));
            double lo = ac_div_dn(ulo[i], ac_add_up(ulo[i], others_hi));
            double den = ac_add_dn(uhi[i], others_lo);
            double hi = den > 0 ? fmin(1.0, ac_div_up(uhi[i], den)) : 1.0;
            best = fmax(best, gap_dn(AC_MAT(P, i, j), lo, hi));
        }
    }
    return best;
}

/* Lower bound on f over a in [A, B] (ends possibly infinite), O(n^3). */
static double cell_lb_wide(const double *x, const ac_mat *P, double A, double B)
{
    size_t n = P->rows;
    double best = 0;
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < n; i++) {
            double slo = 0, shi = 0; /* enclosure of sum_k exp(a delta_k) */
            for (size_t k = 0; k < n; k++) {
                if (x[k] == x[i] || x[j] == 0) {
                    slo = ac_add_dn(slo, 1.0);
                    shi = ac_add_up(shi, 1.0);
                    continue;
                }
                double flo = ac_sub_dn(x[k], x[i]), fhi = ac_sub_up(x[k], x[i]);
                double dlo, dhi, plo, phi, elo, ehi, t;
                mul_enclose(x[j], x[j], flo, fhi, &dlo, &dhi);
                mul_enclose(A, B, dlo, dhi, &plo, &phi);
                ac_exp_enclose(plo, &elo, &t);
                ac_exp_enclose(phi, &t, &ehi);
                slo = ac_add_dn(slo, elo);
                shi = ac_add_up(shi, ehi);
            }
            double lo = shi == INFINITY ? 0 : ac_div_dn(1.0, shi);
            double hi = ac_div_up(1.0, slo);
            best = fmax(best, gap_dn(AC_MAT(P, i, j), lo, hi));
        }
    return best;
}

/* The bound on a cell: O(n^2) where the logits move by at most 1 over the
 * cell ((B - A) max x^2 <= 1), else the O(n^3) form, which stays tight on
 * wide cells and the tails.  buf: 2n doubles. */
static double cell_lb(const double *x, const ac_mat *P, double A, double B, double *buf)
{
    size_t n = P->rows;
    double w = 0;
    for (size_t k = 0; k < n; k++)
        w = fmax(w, x[k] * x[k]);
    if (isfinite(A) && isfinite(B) && (B - A) * w <= 1)
        return cell_lb_narrow(x, P, A, B, buf, buf + n);
    return cell_lb_wide(x, P, A, B);
}

/* f(a) in double (no guarantee; picks the candidate head). */
static double f_approx(const double *x, const ac_mat *P, double a)
{
    size_t n = P->rows;
    double worst = 0;
    for (size_t j = 0; j < n; j++) {
        double mx = -INFINITY, s = 0;
        for (size_t i = 0; i < n; i++)
            mx = fmax(mx, a * x[i] * x[j]);
        for (size_t i = 0; i < n; i++)
            s += exp(a * x[i] * x[j] - mx);
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(exp(a * x[i] * x[j] - mx) / s - AC_MAT(P, i, j)));
    }
    return worst;
}

/* A point inside [A, B] to split at and to sample: geometric in the tails. */
static double split_point(double A, double B)
{
    if (B == INFINITY)
        return A >= 1 ? 4 * A : (A >= 0 ? 1 : (A >= -1 ? 0 : A / 4));
    if (A == -INFINITY)
        return -split_point(-B, INFINITY);
    if (A >= 1 && B > 2 * A)
        return sqrt(A) * sqrt(B);
    if (B <= -1 && A < 2 * B)
        return -sqrt(-A) * sqrt(-B);
    if (A < 0 && B > 0)
        return 0;
    return A + 0.5 * (B - A);
}

/* binary min-heap of cells by lb */
static void heap_push(cell *h, size_t *len, cell c)
{
    size_t i = (*len)++;
    h[i] = c;
    while (i > 0 && h[(i - 1) / 2].lb > h[i].lb) {
        cell t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static cell heap_pop(cell *h, size_t *len)
{
    cell top = h[0];
    h[0] = h[--*len];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *len && h[l].lb < h[m].lb)
            m = l;
        if (r < *len && h[r].lb < h[m].lb)
            m = r;
        if (m == i)
            break;
        cell t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
    return top;
}

void ac_t1_d1_search(const ac_mat *X, const ac_mat *P, double work, double *lo, double *a_best,
                     double *f_best)
{
    size_t n = P->rows;
    double cost = (double)n * (double)n + 1; /* per finite cell; the tails cost n^3 */
    size_t maxcells = (size_t)fmin(work / cost, 200000.0);
    *lo = 0;
    *a_best = 0;
    *f_best = INFINITY;
    if (X->rows != 1 || maxcells < 16)
        return;
    const double *x = X->data;
    cell *h = malloc((maxcells + 8) * sizeof *h);
    double *buf = malloc(2 * n * sizeof(double));
    if (!h || !buf) {
        free(h);
        free(buf);
        return;
    }
    size_t len = 0, evals = 0;
    const double ends[] = {-INFINITY, -1e6, -1, 0, 1, 1e6, INFINITY};
    double fb = f_approx(x, P, 0);
    double ab = 0;
    for (int q = 0; q < 6; q++) {
        cell c = {ends[q], ends[q + 1], cell_lb(x, P, ends[q], ends[q + 1], buf)};
        heap_push(h, &len, c);
        evals++;
    }
    double final_lo = INFINITY; /* lowest bound of cells too narrow to split */
    while (len > 0 && evals + 2 <= maxcells) {
        /* the bound meets the best f sampled up to the enclosures' own width */
        if (h[0].lb >= fb * (1 - 0x1p-43) || h[0].lb >= final_lo)
            break;
        cell c = heap_pop(h, &len);
        double m = split_point(c.a, c.b);
        if (!(m > c.a && m < c.b)) {
            final_lo = fmin(final_lo, c.lb);
            continue;
        }
        double fm = f_approx(x, P, m);
        if (fm < fb) {
            fb = fm;
            ab = m;
        }
        cell c1 = {c.a, m, fmax(c.lb, cell_lb(x, P, c.a, m, buf))};
        cell c2 = {m, c.b, fmax(c.lb, cell_lb(x, P, m, c.b, buf))};
        heap_push(h, &len, c1);
        heap_push(h, &len, c2);
        evals += 2;
    }
    double l = final_lo;
    for (size_t i = 0; i < len; i++)
        l = fmin(l, h[i].lb);
    *lo = l == INFINITY ? 0 : l;
    *a_best = ab;
    *f_best = fb;
    free(h);
    free(buf);
}
