/* criterion_stage0.c — stage 0 of route DECIDE of Theorem 1 (doc/mathematics.md
 * §3.4, "Stage 0 of the criterion"): the log-domain residual rho and the
 * rank condition in double with a-priori rounding-error bounds.
 *
 * rho is the Frobenius distance from L = log P to the subspace
 * S = {1 c' + X'AX}.  Any matrix Y gives a lower bound through
 * <Y, L - Z*> <= rho ||Y||_F (Z* the nearest point of S); when Y is nearly
 * orthogonal to S (1'Y ~ 0, X Y X' ~ 0: the residual computed in double),
 * <Y, Z*> is bounded by those small quantities times the size of c and A
 * in a decomposition Z* = 1c' + X'AX, which the certified sigma_d(X) and
 * dist(1, row space of X) bound.  No projector is certified: the only
 * products whose rounding matters are enclosed by the interval products of
 * interval.h (gamma_k bounds), sums by ac_sum_enclose, norms by
 * ac_norm2_up.  The upper bound is the exact residual of an explicit c
 * and A.
 *
 * Dimension letters: d model width, n tokens.  Buffers are row-major:
 * X d x n, P n x n, Yp d x n ((X')^+), A d x d.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "theorem1/t1_impl.h"
#include "theorem1/t1_stage0.h"

int ac_t1_log_enclose(const double *p, size_t len, double *lo, double *hi)
{
    double *elo = malloc(len * sizeof(double)), *ehi = malloc(len * sizeof(double));
    int ok = elo && ehi;
    for (size_t i = 0; i < len && ok; i++) {
        if (!(p[i] > 0) || !isfinite(p[i])) {
            ok = 0;
            break;
        }
        double l = log(p[i]), w = ac_mul_up(0x1p-43, ac_add_up(1.0, fabs(l)));
        lo[i] = ac_sub_dn(l, w);
        hi[i] = ac_add_up(l, w);
    }
    if (ok) { /* exp(lo) <= p: lo <= log p */
        ac_exp_enclose_array(lo, len, elo, ehi);
        for (size_t i = 0; i < len && ok; i++)
            ok = ehi[i] <= p[i];
    }
    if (ok) { /* exp(hi) >= p: hi >= log p */
        ac_exp_enclose_array(hi, len, elo, ehi);
        for (size_t i = 0; i < len && ok; i++)
            ok = elo[i] >= p[i];
    }
    free(elo);
    free(ehi);
    return ok;
}

/* Upper bound on the absolute error of a recursive dot product of length N
 * whose computed sum of |a_i b_i| is t: gamma_N sum|a_i b_i| <= gamma_2N t
 * (Higham (3.5); t >= (1 - gamma_N) sum|a_i b_i|), plus N eta for
 * underflow. */
static double dot_err_up(double t, size_t N)
{
    return ac_add_up(ac_mul_up(ac_gamma_up(2.0 * (double)N + 2.0), t), (double)N * AC_ETA);
}

/* A lower bound on <Y, L> for L in [Llo, Lhi] (len entries). */
static double dot_lo(const double *Y, const double *Llo, const double *Lhi, size_t len)
{
    double s = 0, t = 0;
    for (size_t i = 0; i < len; i++) {
        double q = Y[i] * (Y[i] >= 0 ? Llo[i] : Lhi[i]);
        s += q;
        t += fabs(q);
    }
    return ac_sub_dn(s, dot_err_up(t, len));
}

/* Upper bound on ||v||_2 for entries in [lo, hi]. */
static double norm_box_up(const double *lo, const double *hi, size_t len, double *buf)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = fmax(fabs(lo[i]), fabs(hi[i]));
    return ac_norm2_up(buf, len);
}

/* Upper bound on ||Y'1||_2 (the column sums of Y, n x n). */
static double colsum_norm_up(const double *Y, size_t n, double *buf)
{
    for (size_t j = 0; j < n; j++) {
        double lo, hi;
        if (!ac_sum_enclose(Y + j, n, n, &lo, &hi))
            return INFINITY;
        buf[j] = fmax(fabs(lo), fabs(hi));
    }
    return ac_norm2_up(buf, n);
}

/* Upper bound on ||X M X'||_F (M n x n point, X d x n), by two interval
 * products. */
static double sandwich_fro_up(const ac_mat *X, const double *M, size_t n, ac_err *err)
{
    size_t d = X->rows;
    ac_mat Mv = {n, n, (double *)M};
    ac_imat Xi = ac_imat_view(X), Mi = ac_imat_view(&Mv), C1 = {0}, C2 = {0};
    double r = INFINITY;
    if (ac_imat_init(&C1, d, n, 1, err) == AC_OK && ac_imat_init(&C2, d, d, 1, err) == AC_OK &&
        ac_imat_mul(&C1, AC_NOTRANS, &Xi, AC_NOTRANS, &Mi, err) == AC_OK &&
        ac_imat_mul(&C2, AC_NOTRANS, &C1, AC_TRANS, &Xi, err) == AC_OK && ac_imat_finite(&C2))
        r = ac_imat_fro_dev_up(&C2, NULL, 0);
    ac_imat_free(&C1);
    ac_imat_free(&C2);
    return r;
}

/* Upper bound on ||L + 1c' - X'AX||_F over L in [Llo, Lhi] (A d x d point). */
static double residual_fro_up(const ac_mat *X, const double *A, const double *Llo,
                              const double *Lhi, const double *c, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    ac_mat Av = {d, d, (double *)A};
    ac_imat Xi = ac_imat_view(X), Ai = ac_imat_view(&Av), C3 = {0}, C4 = {0};
    double r = INFINITY;
    if (ac_imat_init(&C3, d, n, 1, err) || ac_imat_init(&C4, n, n, 1, err) ||
        ac_imat_mul(&C3, AC_NOTRANS, &Ai, AC_NOTRANS, &Xi, err) ||
        ac_imat_mul(&C4, AC_TRANS, &Xi, AC_NOTRANS, &C3, err) || !ac_imat_finite(&C4))
        goto out;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            size_t e = i * n + j;
            double lo = ac_sub_dn(ac_add_dn(Llo[e], c[j]), ac_imat_hi(&C4, e));
            double hi = ac_sub_up(ac_add_up(Lhi[e], c[j]), ac_imat_lo(&C4, e));
            double a = fmax(fabs(lo), fabs(hi));
            s = ac_add_up(s, ac_mul_up(a, a));
        }
    r = ac_sqrt_up(s);
out:
    ac_imat_free(&C3);
    ac_imat_free(&C4);
    return r;
}

/* The log-domain residual in double, the twin of rho_resid_ball (the
 * derivation: t1_decide.h): A = Yp M(c) Yp' and R = M(c) - X'AX with
 * M(c) = L + 1c' and the minimiser c* for the projector Pi = X'Yp, and
 * hv = 1 - Pi 1.  Approximate: only proposes the certificate.  Returns 0
 * when n - 1'Pi 1 is within rounding of 0. */
static int rho_resid_double(double *R, double *A, double *c, double *hv, const ac_mat *X,
                            const double *Yp, const double *L, double *W)
{
    size_t d = X->rows, n = X->cols;
    const double *x = X->data;
    double *y1 = calloc(d, sizeof(double)), *yv = calloc(d, sizeof(double));
    double *v = calloc(n, sizeof(double)), *pv = calloc(n, sizeof(double));
    double *yc = calloc(d, sizeof(double));
    int ok = y1 && yv && v && pv && yc;
    if (!ok)
        goto out;
    /* A0 = Yp L Yp' (W: d x n scratch), R = X' A0 X (R as scratch: Pi L Pi) */
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, d, n, n, 1.0, Yp, n, L, n, 0.0, W, n);
    ac_dgemm(AC_NOTRANS, AC_TRANS, d, d, n, 1.0, W, n, Yp, n, 0.0, A, d);
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, d, n, d, 1.0, A, d, x, n, 0.0, W, n);
    ac_dgemm(AC_TRANS, AC_NOTRANS, n, n, d, 1.0, x, n, W, n, 0.0, R, n);
    /* g = Pi 1 = X'(Yp 1), b = 1'g; v = (L - Pi L Pi)' 1 */
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < n; j++)
            y1[i] += Yp[i * n + j];
    double b = 0;
    for (size_t j = 0; j < n; j++) {
        double g = 0;
        for (size_t i = 0; i < d; i++)
            g += x[i * n + j] * y1[i];
        hv[j] = 1.0 - g;
        b += g;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            v[j] += L[i * n + j] - R[i * n + j];
    /* pv = Pi v */
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < n; j++)
            yv[i] += Yp[i * n + j] * v[j];
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < d; i++)
            pv[j] += x[i * n + j] * yv[i];
    double nb = (double)n - b;
    if (!(nb > 1e3 * (double)n * (double)n * AC_U)) {
        ok = 0;
        goto out;
    }
    for (size_t j = 0; j < n; j++)
        c[j] = -((v[j] - pv[j]) / (double)n + pv[j] / nb);
    /* A = A0 + (Yp 1)(Yp c)'; R = L + 1c' - X'AX */
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < n; j++)
            yc[i] += Yp[i * n + j] * c[j];
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++)
            A[i * d + j] += y1[i] * yc[j];
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, d, n, d, 1.0, A, d, x, n, 0.0, W, n);
    ac_dgemm(AC_TRANS, AC_NOTRANS, n, n, d, 1.0, x, n, W, n, 0.0, R, n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            R[i * n + j] = L[i * n + j] + c[j] - R[i * n + j];
out:
    free(y1);
    free(yv);
    free(v);
    free(pv);
    free(yc);
    return ok;
}

double ac_t1_dist_one_lo(const ac_mat *X, const double *hv, double sigma_lo, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    ac_mat hm = {n, 1, (double *)hv};
    ac_imat Xi = ac_imat_view(X), hi_ = ac_imat_view(&hm), C = {0};
    double slo, shi, res = 0;
    if (!(sigma_lo > 0) || ac_imat_init(&C, d, 1, 1, err) ||
        ac_imat_mul(&C, AC_NOTRANS, &Xi, AC_NOTRANS, &hi_, err) || !ac_imat_finite(&C) ||
        !ac_sum_enclose(hv, n, 1, &slo, &shi))
        goto out;
    /* ||hv|| dist >= hv'1 - ||X hv|| ||a||, ||a|| <= sqrt(n) / sigma_d */
    double xh = ac_imat_fro_dev_up(&C, NULL, 0);
    double an = ac_div_up(ac_sqrt_up((double)n), sigma_lo);
    double num = ac_sub_dn(slo, ac_mul_up(xh, an));
    double den = ac_norm2_up(hv, n);
    if (num > 0 && den > 0 && isfinite(den))
        res = ac_div_dn(num, den);
out:
    ac_imat_free(&C);
    return res;
}

int ac_t1_rho_dual_lo(const ac_mat *X, const double *Y, const double *Llo, const double *Lhi,
                      double sigma_lo, double h_lo, double *rho_lo, ac_err *err)
{
    size_t n = X->cols, nn = n * n;
    double *buf = malloc(nn * sizeof(double));
    *rho_lo = 0;
    if (!buf)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    double s2 = ac_mul_dn(sigma_lo, sigma_lo);
    if (h_lo > 0 && s2 > 0) {
        double yl = dot_lo(Y, Llo, Lhi, nn);
        double ln = norm_box_up(Llo, Lhi, nn, buf);
        double yn = ac_norm2_up(Y, nn);
        double e1 = colsum_norm_up(Y, n, buf);
        double e2 = sandwich_fro_up(X, Y, n, err);
        /* ||c|| <= ||L|| / h, ||A||_F <= ||L|| (1 + sqrt(n)/h) / sigma^2 */
        double t1 = ac_div_up(e1, h_lo);
        double t2 =
            ac_div_up(ac_mul_up(e2, ac_add_up(1.0, ac_div_up(ac_sqrt_up((double)n), h_lo))), s2);
        double num = ac_sub_dn(yl, ac_mul_up(ln, ac_add_up(t1, t2)));
        if (num > 0 && yn > 0 && isfinite(yn))
            *rho_lo = ac_div_dn(num, yn);
    }
    free(buf);
    return AC_OK;
}

int ac_t1_rho_stage0(const ac_mat *X, const ac_mat *P, double sigma_lo, double *rho_lo,
                     double *rho_hi, double *h_lo, ac_err *err)
{
    size_t d = X->rows, n = X->cols, nn = n * n;
    ac_mat Xt = {0}, Yp = {0};
    double *Llo = malloc(nn * sizeof(double)), *Lhi = malloc(nn * sizeof(double));
    double *L = malloc(nn * sizeof(double)), *R = malloc(nn * sizeof(double));
    double *A = malloc(d * d * sizeof(double)), *W = malloc(d * n * sizeof(double));
    double *c = malloc(n * sizeof(double)), *hv = malloc(n * sizeof(double));
    *rho_lo = 0;
    *rho_hi = INFINITY;
    *h_lo = 0;
    int st = AC_OK;
    if (!Llo || !Lhi || !L || !R || !A || !W || !c || !hv) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if (d == 0 || d >= n || !(sigma_lo > 0) || !ac_t1_log_enclose(P->data, nn, Llo, Lhi))
        goto out;
    for (size_t i = 0; i < nn; i++)
        L[i] = 0.5 * Llo[i] + 0.5 * Lhi[i];
    /* Yp = (X')^+ (d x n), an approximate left inverse of X' */
    if ((st = ac_mat_init(&Xt, n, d, err)))
        goto out;
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < n; j++)
            AC_MAT(&Xt, j, i) = AC_MAT(X, i, j);
    if (ac_approx_pinv_fullcol(&Yp, &Xt, NULL) != AC_OK)
        goto out; /* LAPACK gave up: no stage-0 bound */
    if (rho_resid_double(R, A, c, hv, X, Yp.data, L, W)) {
        *h_lo = ac_t1_dist_one_lo(X, hv, sigma_lo, err);
        *rho_hi = residual_fro_up(X, A, Llo, Lhi, c, err);
        if ((st = ac_t1_rho_dual_lo(X, R, Llo, Lhi, sigma_lo, *h_lo, rho_lo, err)))
            goto out;
        if (*rho_hi < *rho_lo) /* cannot happen with sound bounds; keep the pair ordered */
            *rho_lo = 0, *rho_hi = INFINITY;
    }
    ac_err_clear(err); /* an optional stage: failures leave it undecided */
out:
    ac_mat_free(&Xt);
    ac_mat_free(&Yp);
    free(Llo);
    free(Lhi);
    free(L);
    free(R);
    free(A);
    free(W);
    free(c);
    free(hv);
    return st;
}

int ac_t1_klogp_sv_stage0(const ac_mat *P, double *slo, double *shi)
{
    return ac_t1_centred_log_sv_stage0(P, NULL, P->rows, NULL, P->cols, slo, shi);
}

int ac_t1_centred_log_sv_stage0(const ac_mat *P, const size_t *I, size_t ni, const size_t *J,
                                size_t nj, double *slo, double *shi)
{
    size_t nn = ni * nj;
    double *lo = malloc(nn * sizeof(double)), *hi = malloc(nn * sizeof(double));
    double *p = malloc(nn * sizeof(double));
    ac_imat M = {0};
    int ok = lo && hi && p && ni > 0 && nj > 0 && ac_imat_init(&M, ni, nj, 1, NULL) == AC_OK;
    for (size_t a = 0; a < ni && ok; a++)
        for (size_t b = 0; b < nj; b++)
            p[a * nj + b] = AC_MAT(P, I ? I[a] : a, J ? J[b] : b);
    ok = ok && ac_t1_log_enclose(p, nn, lo, hi);
    for (size_t j = 0; j < nj && ok; j++) {
        /* mean_j of column j of L in [mlo, mhi] */
        double slo_, shi_, tlo, thi;
        ok = ac_sum_enclose(lo + j, ni, nj, &slo_, &tlo) &&
             ac_sum_enclose(hi + j, ni, nj, &thi, &shi_);
        double mlo = ac_div_dn(slo_, (double)ni), mhi = ac_div_up(shi_, (double)ni);
        for (size_t i = 0; i < ni && ok; i++) {
            size_t e = i * nj + j;
            double a = ac_sub_dn(lo[e], mhi), b = ac_sub_up(hi[e], mlo);
            double m = 0.5 * a + 0.5 * b;
            M.mid[e] = m;
            M.rad[e] = fmax(ac_sub_up(b, m), ac_sub_up(m, a));
            ok = isfinite(M.rad[e]);
        }
    }
    if (ok)
        ok = ac_sv_enclose(&M, slo, shi, NULL, NULL) == AC_OK;
    free(lo);
    free(hi);
    free(p);
    ac_imat_free(&M);
    return ok;
}
