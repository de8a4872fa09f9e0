/* dist_resid.c — the residual obstruction on a submatrix of P
 * (doc/mathematics.md §3.6, "The residual obstruction on a submatrix").
 *
 * For rows I (|I| = a) and columns J (|J| = b) every head's logits satisfy
 * log S_IJ = X_I' A X_J + 1_a c'_J', so L_IJ = log P_IJ lies within
 * ||E_IJ||_F of the subspace S_IJ = {1_a c' + X_I' A X_J}: its distance
 * rho_IJ to S_IJ bounds ||E_IJ||_F from below for every head, of any size.
 * rho_IJ is certified from below by a dual certificate Y (the residual of
 * L_IJ off S_IJ computed in double) with certified sigma_d(X_I),
 * sigma_min(X_J) (approximate left inverses, checked by interval products)
 * and h <= dist(1_a, range X_I'); Lemma A on I x J then turns it into a
 * lower bound t on the distance.  The submatrix is chosen as one column j
 * and its a largest entries (a > d + 1), which keeps min P_IJ large while
 * the residual stays of order one (§3.6 says why one column beats a larger
 * block here).
 *
 * Dimension letters: d model width, n tokens, a = |I|, b = |J|.  Buffers
 * are row-major: X d x n, P n x n, X_I d x a, X_J d x b, L_IJ and Y a x b.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "theorem1/t1_dist.h"
#include "theorem1/t1_impl.h"
#include "theorem1/t1_stage0.h"

/* ---- certified pieces ------------------------------------------------------ */

double ac_t1_sigma_min_lo(const ac_mat *M, const ac_mat *G)
{
    ac_mat Gl = {0};
    double qlo, qhi, slo = 0;
    if (M->rows < M->cols || M->cols == 0)
        return 0;
    if (!G) {
        if (ac_approx_pinv_fullcol(&Gl, M, NULL) != AC_OK) {
            ac_mat_free(&Gl);
            return 0;
        }
        G = &Gl;
    }
    if (ac_cert_left_inverse(G, M, &qlo, &qhi, &slo, NULL, NULL) != AC_OK || !(qhi < 1))
        slo = 0;
    ac_mat_free(&Gl);
    return slo > 0 ? slo : 0;
}

/* Upper bound on the absolute error of a recursive dot product of length N
 * whose computed sum of |a_i b_i| is t (Higham (3.5), as in criterion_stage0.c). */
static double dot_err_up(double t, size_t N)
{
    return ac_add_up(ac_mul_up(ac_gamma_up(2.0 * (double)N + 2.0), t), (double)N * AC_ETA);
}

double ac_t1_resid_dual_lo(const ac_mat *XI, const ac_mat *XJ, const double *Y, const double *Llo,
                           const double *Lhi, double sI, double sJ, double h)
{
    size_t d = XI->rows, a = XI->cols, b = XJ->cols, ab = a * b;
    double res = 0, s = 0, t = 0;
    double *buf = malloc((ab > b ? ab : b) * sizeof(double));
    ac_mat Ym = {a, b, (double *)Y};
    ac_imat XIi = ac_imat_view(XI), XJi = ac_imat_view(XJ), Yi = ac_imat_view(&Ym);
    ac_imat C1 = {0}, C2 = {0};
    double s2 = ac_mul_dn(sI, sJ);
    if (!buf || !(h > 0) || !(s2 > 0) || XJ->rows != d || ab == 0)
        goto out;
    /* <Y, L> from below over the enclosure of L */
    for (size_t e = 0; e < ab; e++) {
        double q = Y[e] * (Y[e] >= 0 ? Llo[e] : Lhi[e]);
        s += q;
        t += fabs(q);
    }
    double yl = ac_sub_dn(s, dot_err_up(t, ab));
    for (size_t e = 0; e < ab; e++)
        buf[e] = fmax(fabs(Llo[e]), fabs(Lhi[e]));
    double ln = ac_norm2_up(buf, ab);
    double yn = ac_norm2_up(Y, ab);
    /* ||Y' 1_a||: column sums of Y */
    for (size_t j = 0; j < b; j++) {
        double lo, hi;
        if (!ac_sum_enclose(Y + j, a, b, &lo, &hi))
            goto out;
        buf[j] = fmax(fabs(lo), fabs(hi));
    }
    double e1 = ac_norm2_up(buf, b);
    /* ||X_I Y X_J'||_F by two interval products */
    if (ac_imat_init(&C1, d, b, 1, NULL) || ac_imat_init(&C2, d, d, 1, NULL) ||
        ac_imat_mul(&C1, AC_NOTRANS, &XIi, AC_NOTRANS, &Yi, NULL) ||
        ac_imat_mul(&C2, AC_NOTRANS, &C1, AC_TRANS, &XJi, NULL) || !ac_imat_finite(&C2))
        goto out;
    double e2 = ac_imat_fro_dev_up(&C2, NULL, 0);
    /* ||c|| <= ||L||/h, ||A||_F <= ||L|| (1 + sqrt(a)/h) / (sI sJ) */
    double t1 = ac_div_up(e1, h);
    double t2 = ac_div_up(ac_mul_up(e2, ac_add_up(1.0, ac_div_up(ac_sqrt_up((double)a), h))), s2);
    double num = ac_sub_dn(yl, ac_mul_up(ln, ac_add_up(t1, t2)));
    if (num > 0 && yn > 0 && isfinite(yn) && isfinite(num))
        res = ac_div_dn(num, yn);
out:
    free(buf);
    ac_imat_free(&C1);
    ac_imat_free(&C2);
    return res;
}

/* ---- the certificate in double ---------------------------------------------- */

/* The residual R of L (a x b) off S_IJ and hv = 1_a - Pi_I 1_a in double,
 * with Pi_I = X_I' G_I (G_I = (X_I')^+, d x a) and, for b > d,
 * Pi_J = X_J' G_J (G_J = (X_J')^+, d x b); for b <= d, Pi_J = I_b.
 * R = T(L) + 1 c2' + h c1' with T(L) = L - Pi_I L Pi_J,
 * c2 = -(I - Pi_J) T(L)' 1 / a, c1 = -Pi_J T(L)' h / ||h||^2.
 * Approximate: only proposes the certificate.  Returns 0 if ||h|| is
 * within rounding of 0 or memory runs out. */
static int resid_double(double *R, double *hv, const ac_mat *XI, const ac_mat *GI,
                        const ac_mat *XJ, const ac_mat *GJ, const double *L)
{
    size_t d = XI->rows, a = XI->cols, b = XJ->cols;
    double *T1 = malloc(d * b * sizeof(double)), *T2 = malloc(a * (b > d ? b : d) * sizeof(double));
    double *u = malloc(b * sizeof(double)), *w = malloc(b * sizeof(double));
    double *g = malloc(d * sizeof(double)), *one = malloc(a * sizeof(double));
    int ok = T1 && T2 && u && w && g && one;
    if (!ok)
        goto out;
    /* Pi_I L = X_I' (G_I L) */
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, d, b, a, 1.0, GI->data, a, L, b, 0.0, T1, b);
    ac_dgemm(AC_TRANS, AC_NOTRANS, a, b, d, 1.0, XI->data, a, T1, b, 0.0, R, b);
    if (GJ) { /* (Pi_I L) Pi_J = ((Pi_I L) G_J') X_J */
        ac_dgemm(AC_NOTRANS, AC_TRANS, a, d, b, 1.0, R, b, GJ->data, b, 0.0, T2, d);
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, a, b, d, 1.0, T2, d, XJ->data, b, 0.0, R, b);
    }
    for (size_t e = 0; e < a * b; e++)
        R[e] = L[e] - R[e];
    /* hv = 1 - X_I' (G_I 1) */
    for (size_t i = 0; i < a; i++)
        one[i] = 1.0;
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, d, 1, a, 1.0, GI->data, a, one, 1, 0.0, g, 1);
    ac_dgemm(AC_TRANS, AC_NOTRANS, a, 1, d, 1.0, XI->data, a, g, 1, 0.0, hv, 1);
    double hh = 0;
    for (size_t i = 0; i < a; i++) {
        hv[i] = 1.0 - hv[i];
        hh += hv[i] * hv[i];
    }
    if (!(hh > 1e6 * (double)a * AC_U * AC_U)) {
        ok = 0;
        goto out;
    }
    /* u = T(L)' 1, w = T(L)' h */
    for (size_t j = 0; j < b; j++)
        u[j] = w[j] = 0;
    for (size_t i = 0; i < a; i++)
        for (size_t j = 0; j < b; j++) {
            u[j] += R[i * b + j];
            w[j] += R[i * b + j] * hv[i];
        }
    if (GJ) { /* u <- (I - Pi_J) u, w <- Pi_J w */
        double *pu = T2, *pw = T2 + b, *gu = T1, *gw = T1 + d;
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, d, 1, b, 1.0, GJ->data, b, u, 1, 0.0, gu, 1);
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, d, 1, b, 1.0, GJ->data, b, w, 1, 0.0, gw, 1);
        ac_dgemm(AC_TRANS, AC_NOTRANS, b, 1, d, 1.0, XJ->data, b, gu, 1, 0.0, pu, 1);
        ac_dgemm(AC_TRANS, AC_NOTRANS, b, 1, d, 1.0, XJ->data, b, gw, 1, 0.0, pw, 1);
        for (size_t j = 0; j < b; j++) {
            u[j] -= pu[j];
            w[j] = pw[j];
        }
    } else
        for (size_t j = 0; j < b; j++)
            u[j] = 0;
    for (size_t i = 0; i < a; i++)
        for (size_t j = 0; j < b; j++)
            R[i * b + j] -= u[j] / (double)a + hv[i] * w[j] / hh;
out:
    free(T1);
    free(T2);
    free(u);
    free(w);
    free(g);
    free(one);
    return ok;
}

/* The columns idx[0..cnt) of X (d x cnt); 0 out of memory. */
static int gather_cols(ac_mat *S, const ac_mat *X, const size_t *idx, size_t cnt)
{
    if (ac_mat_init(S, X->rows, cnt, NULL))
        return 0;
    for (size_t i = 0; i < X->rows; i++)
        for (size_t k = 0; k < cnt; k++)
            AC_MAT(S, i, k) = AC_MAT(X, i, idx[k]);
    return 1;
}

static int transpose(ac_mat *T, const ac_mat *M)
{
    if (ac_mat_init(T, M->cols, M->rows, NULL))
        return 0;
    for (size_t i = 0; i < M->rows; i++)
        for (size_t k = 0; k < M->cols; k++)
            AC_MAT(T, k, i) = AC_MAT(M, i, k);
    return 1;
}

int ac_t1_resid_rho(const ac_mat *X, const ac_mat *P, const size_t *I, size_t a, const size_t *J,
                    size_t b, int certify, double *rho_lo, double *rho_est)
{
    size_t d = X->rows, ab = a * b;
    ac_mat XI = {0}, XJ = {0}, XIt = {0}, XJt = {0}, GI = {0}, GJ = {0};
    double *p = malloc(ab * sizeof(double)), *Llo = malloc(ab * sizeof(double));
    double *Lhi = malloc(ab * sizeof(double)), *L = malloc(ab * sizeof(double));
    double *R = malloc(ab * sizeof(double)), *hv = malloc(a * sizeof(double));
    int ok = p && Llo && Lhi && L && R && hv && a >= d + 2 && b > 0 && d > 0;
    *rho_lo = 0;
    *rho_est = 0;
    for (size_t i = 0; i < a && ok; i++)
        for (size_t j = 0; j < b; j++)
            p[i * b + j] = AC_MAT(P, I[i], J[j]);
    ok = ok && gather_cols(&XI, X, I, a) && gather_cols(&XJ, X, J, b) && transpose(&XIt, &XI);
    ok = ok && ac_approx_pinv_fullcol(&GI, &XIt, NULL) == AC_OK;
    if (ok && b > d)
        ok = transpose(&XJt, &XJ) && ac_approx_pinv_fullcol(&GJ, &XJt, NULL) == AC_OK;
    ok = ok && ac_t1_log_enclose(p, ab, Llo, Lhi);
    if (!ok)
        goto out;
    for (size_t e = 0; e < ab; e++)
        L[e] = 0.5 * Llo[e] + 0.5 * Lhi[e];
    if (!resid_double(R, hv, &XI, &GI, &XJ, b > d ? &GJ : NULL, L))
        goto out;
    *rho_est = ac_norm2_up(R, ab);
    if (!certify)
        goto out;
    double sI = ac_t1_sigma_min_lo(&XIt, &GI);
    double sJ = b > d ? ac_t1_sigma_min_lo(&XJt, &GJ) : ac_t1_sigma_min_lo(&XJ, NULL);
    double h = ac_t1_dist_one_lo(&XI, hv, sI, NULL);
    *rho_lo = ac_t1_resid_dual_lo(&XI, &XJ, R, Llo, Lhi, sI, sJ, h);
out:
    ac_mat_free(&XI);
    ac_mat_free(&XJ);
    ac_mat_free(&XIt);
    ac_mat_free(&XJt);
    ac_mat_free(&GI);
    ac_mat_free(&GJ);
    free(p);
    free(Llo);
    free(Lhi);
    free(L);
    free(R);
    free(hv);
    return ok;
}

/* ---- the choice of the column and its rows ---------------------------------- */

#define RESID_CANDIDATES 3 /* columns whose residual is computed in double */

typedef struct {
    double t; /* estimated bound */
    size_t j, a;
} resid_cand;

/* Rows of one column keyed by their entry, sorted descending. */
typedef struct {
    double p;
    size_t i;
} keyed;

static int cmp_keyed_desc(const void *x, const void *y)
{
    const keyed *u = x, *v = y;
    if (u->p != v->p)
        return u->p < v->p ? 1 : -1;
    return (u->i > v->i) - (u->i < v->i);
}

/* For column j (rows sorted by P descending in ks): the a in [d + 2, n]
 * maximising the estimate min(p_(a), rho_a / ||1/p||) with rho_a^2 the
 * centred energy of log p_(1..a) times (a - d - 1)/(a - 1) (the share a
 * d-dimensional subspace in general position leaves).  A heuristic: only
 * the choice depends on it. */
static resid_cand column_estimate(const keyed *ks, size_t n, size_t d, size_t j)
{
    resid_cand c = {0, j, 0};
    double s1 = 0, s2 = 0, sinv = 0;
    for (size_t k = 0; k < n; k++) {
        if (!(ks[k].p > 0))
            break; /* the keys a masked query does not see (P = 0) come last */
        double p = ks[k].p, l = log(p);
        s1 += l;
        s2 += l * l;
        sinv += 1.0 / (p * p);
        size_t a = k + 1;
        if (a < d + 2)
            continue;
        double cen = s2 - s1 * s1 / (double)a;
        double rho = sqrt(fmax(cen, 0) * (double)(a - d - 1) / (double)(a - 1));
        double t = fmin(0.5 * p, rho / sqrt(sinv));
        if (t > c.t)
            c.t = t, c.a = a;
    }
    return c;
}

double ac_t1_lb_resid(const ac_mat *X, const ac_mat *P, size_t *col, size_t *rows, double *rho_out)
{
    size_t d = X->rows, n = P->rows;
    double best_t = 0, res = 0;
    *col = *rows = 0;
    *rho_out = 0;
    if (d == 0 || d + 2 > n || X->cols != n)
        return 0;
    keyed *ks = malloc(n * sizeof(keyed));
    size_t *I = malloc(n * sizeof(size_t)), J;
    double *p = malloc(n * sizeof(double));
    resid_cand cand[RESID_CANDIDATES] = {{0, 0, 0}};
    if (!ks || !I || !p)
        goto out;
    for (size_t j = 0; j < n; j++) {
        for (size_t i = 0; i < n; i++)
            ks[i].p = AC_MAT(P, i, j), ks[i].i = i;
        qsort(ks, n, sizeof(keyed), cmp_keyed_desc);
        resid_cand c = column_estimate(ks, n, d, j);
        for (int q = 0; q < RESID_CANDIDATES; q++)
            if (c.t > cand[q].t) {
                resid_cand tmp = cand[q];
                cand[q] = c;
                c = tmp;
            }
    }
    /* the residual in double for each candidate; the best is certified */
    resid_cand win = {0, 0, 0};
    for (int q = 0; q < RESID_CANDIDATES; q++) {
        if (!(cand[q].t > 0))
            continue;
        J = cand[q].j;
        for (size_t i = 0; i < n; i++)
            ks[i].p = AC_MAT(P, i, J), ks[i].i = i;
        qsort(ks, n, sizeof(keyed), cmp_keyed_desc);
        for (size_t i = 0; i < cand[q].a; i++)
            I[i] = ks[i].i, p[i] = ks[i].p;
        double rl, re;
        if (!ac_t1_resid_rho(X, P, I, cand[q].a, &J, 1, 0, &rl, &re))
            continue;
        double t = ac_t1_t_estimate(p, cand[q].a, re * (1 - 1e-6));
        if (t > best_t)
            best_t = t, win = cand[q];
    }
    if (best_t > 0) {
        J = win.j;
        for (size_t i = 0; i < n; i++)
            ks[i].p = AC_MAT(P, i, J), ks[i].i = i;
        qsort(ks, n, sizeof(keyed), cmp_keyed_desc);
        for (size_t i = 0; i < win.a; i++)
            I[i] = ks[i].i, p[i] = ks[i].p;
        double rl, re;
        if (ac_t1_resid_rho(X, P, I, win.a, &J, 1, 1, &rl, &re) && rl > 0) {
            res = ac_t1_t_certified(p, win.a, rl);
            *col = win.j;
            *rows = win.a;
            *rho_out = rl;
        }
    }
out:
    free(ks);
    free(I);
    free(p);
    return res;
}
