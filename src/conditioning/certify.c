/* certify.c — certification of one sample (doc/mathematics.md §5.9):
 * rigorous enclosures of sigma_1, sigma_min and kappa of the exact double
 * block, and the verdict of claim C for its reported kappa~.
 * The block is the double matrix A itself (ac_cond_certify), or the
 * mathematical block B that A rounds (cond_certify_block with a function
 * enclosing B in balls, e.g. attention heads from their factors): then
 * stage 0 widens Weyl's bounds by r >= ||B - A||_2 and the ball stages
 * work with the Gram matrix of the enclosure of B.
 *   stage 0: Weyl around a double SVD (ac_sv_enclose; §2.5);
 *   stage k: Arb balls at the schedule's precisions: lambda_min(G) >= s
 *            proved by a successful ball Cholesky of G - s I, lambda_min <=
 *            the Rayleigh quotient of the MPFR eigenvector; lambda_max
 *            likewise with t I - G. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "core/ac_arb.h"
#include "core/ball.h"
#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "cond_impl.h"

ac_verdict cond_judge_kappa(ac_cond_sample *s, double rtol)
{
    double k = s->kappa, klo = s->kappa_lo, khi = s->kappa_hi;
    if (!(k > 0) || isnan(klo) || isnan(khi)) {
        s->dev_lo = 0;
        s->dev_hi = INFINITY;
        return AC_UNDECIDED;
    }
    if (isinf(k)) { /* reported unresolved: kappa / kappa~ = 0 once kappa is finite */
        s->dev_lo = isfinite(khi) ? 1.0 : 0.0;
        s->dev_hi = 1.0;
    } else {
        double rlo = ac_div_dn(klo, k), rhi = ac_div_up(khi, k); /* kappa/kappa~ in [rlo, rhi] */
        s->dev_hi = fmax(ac_sub_up(rhi, 1.0), ac_sub_up(1.0, rlo));
        s->dev_lo = fmax(0.0, fmax(ac_sub_dn(rlo, 1.0), ac_sub_dn(1.0, rhi)));
    }
    return ac_judge(s->dev_lo, s->dev_hi, AC_LE, rtol);
}

void cond_kappa_bounds(ac_cond_sample *s)
{
    s->kappa_lo = s->smin_hi > 0 && isfinite(s->smin_hi) ? ac_div_dn(s->s1_lo, s->smin_hi) : 0.0;
    s->kappa_hi = s->smin_lo > 0 ? ac_div_up(s->s1_hi, s->smin_lo) : INFINITY;
    if (s->kappa_lo < 1)
        s->kappa_lo = 1; /* kappa >= 1 always */
}

/* Rayleigh quotient of the ball matrix G with vector x (balls): res. */
static void arb_rayleigh(arb_t res, const arb_mat_t G, arb_srcptr x, slong m, slong prec)
{
    arb_t num, den, t;
    arb_init(num);
    arb_init(den);
    arb_init(t);
    for (slong i = 0; i < m; i++) {
        arb_dot(t, NULL, 0, arb_mat_entry(G, i, 0), 1, x, 1, m, prec);
        arb_addmul(num, t, x + i, prec);
        arb_addmul(den, x + i, x + i, prec);
    }
    arb_div(res, num, den, prec);
    arb_clear(num);
    arb_clear(den);
    arb_clear(t);
}

/* 1 if G - shift I (sign = +1) or shift I - G (sign = -1) is certainly
 * positive definite. */
static int arb_shift_pd(const arb_mat_t G, double shift, int sign, slong prec)
{
    slong m = arb_mat_nrows(G);
    arb_mat_t B, Lm;
    arb_mat_init(B, m, m);
    arb_mat_init(Lm, m, m);
    for (slong i = 0; i < m; i++)
        for (slong j = 0; j < m; j++) {
            if (sign > 0)
                arb_set(arb_mat_entry(B, i, j), arb_mat_entry(G, i, j));
            else
                arb_neg(arb_mat_entry(B, i, j), arb_mat_entry(G, i, j));
        }
    for (slong i = 0; i < m; i++) {
        arb_t sh;
        arb_init(sh);
        arb_set_d(sh, shift);
        if (sign > 0)
            arb_sub(arb_mat_entry(B, i, i), arb_mat_entry(B, i, i), sh, prec);
        else
            arb_add(arb_mat_entry(B, i, i), arb_mat_entry(B, i, i), sh, prec);
        arb_clear(sh);
    }
    int ok = arb_mat_cho(Lm, B, prec);
    arb_mat_clear(B);
    arb_mat_clear(Lm);
    return ok;
}

/* The unit eigenvector of the largest eigenvalue of the double Gram matrix
 * of the short side of A (LAPACK dsyevr) into z (m entries).  0 on success. */
static int top_eigvec(const ac_mat *A, double *z)
{
    size_t N = A->rows, D = A->cols;
    size_t m = N < D ? N : D;
    int rc = 1;
    double *Gd = malloc(m * m * sizeof(double)), *ev = malloc(m * sizeof(double));
    lapack_int *isuppz = malloc(2 * sizeof(lapack_int) + 2 * m * sizeof(lapack_int));
    if (!Gd || !ev || !isuppz)
        goto out;
    if (N <= D)
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)N, (int)D, 1.0, A->data,
                    (int)D, 0.0, Gd, (int)m);
    else
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, (int)D, (int)N, 1.0, A->data, (int)D,
                    0.0, Gd, (int)m);
    lapack_int nf;
    if (LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'U', (lapack_int)m, Gd, (lapack_int)m, 0, 0,
                       (lapack_int)m, (lapack_int)m, 0.0, &nf, ev, z, (lapack_int)m,
                       isuppz) == 0)
        rc = 0;
out:
    free(Gd);
    free(ev);
    free(isuppz);
    return rc;
}

/* G = a a^T in balls at prec bits, a the short side of A (exact), or of
 * the ball matrix Ab (N x D) when it is given. */
static void ball_gram(arb_mat_t G, const ac_mat *A, const arb_mat_struct *Ab, slong prec)
{
    size_t N = A->rows, D = A->cols;
    size_t m = N < D ? N : D, M = N < D ? D : N;
    arb_mat_t Am, At;
    arb_mat_init(Am, (slong)m, (slong)M);
    arb_mat_init(At, (slong)M, (slong)m);
    for (size_t i = 0; i < m; i++)
        for (size_t k = 0; k < M; k++) {
            size_t r = (N <= D) ? i : k, c = (N <= D) ? k : i;
            arb_ptr a = arb_mat_entry(Am, (slong)i, (slong)k);
            if (Ab)
                arb_set(a, arb_mat_entry(Ab, (slong)r, (slong)c));
            else
                arb_set_d(a, A->data[r * D + c]);
            arb_set(arb_mat_entry(At, (slong)k, (slong)i), a);
        }
    arb_mat_mul(G, Am, At, prec);
    arb_mat_clear(Am);
    arb_mat_clear(At);
}

/* sigma = sqrt(lambda), rounded outward: s1 from [lmax_lo, lmax_hi], smin
 * from [lmin_lo, lmin_hi]. */
static void sigma_from_lambda(ac_cond_sample *s, double lmax_lo, double lmax_hi, double lmin_lo,
                              double lmin_hi, slong prec)
{
    arb_t b;
    arb_init(b);
    if (lmax_lo > 0) {
        arb_set_d(b, lmax_lo);
        arb_sqrt(b, b, prec);
        s->s1_lo = ac_arb_lo(b);
    } else {
        s->s1_lo = 0;
    }
    arb_set_d(b, lmax_hi);
    arb_sqrt(b, b, prec);
    s->s1_hi = isfinite(lmax_hi) ? ac_arb_hi(b) : INFINITY;
    arb_set_d(b, lmin_lo);
    arb_sqrt(b, b, prec);
    s->smin_lo = lmin_lo > 0 ? ac_arb_lo(b) : 0.0;
    arb_set_d(b, lmin_hi);
    arb_sqrt(b, b, prec);
    s->smin_hi = (isfinite(lmin_hi) && lmin_hi >= 0) ? ac_arb_hi(b) : INFINITY;
    arb_clear(b);
}

/* Stage k >= 1: enclosures from ball Cholesky tests and Rayleigh quotients.
 * With x1, xm approximate eigenvectors of lambda_max and lambda_min (the
 * largest from LAPACK on the double Gram matrix, the smallest from the MPFR
 * kernel at >= prec bits): lambda_max >= R(x1), lambda_min <= R(xm)
 * (Rayleigh quotients in balls); t I - G positive definite proves
 * lambda_max <= t, G - s I proves lambda_min >= s, with t, s the quotients
 * widened by rtol/4.  Returns 0 on success (bounds in s), nonzero if
 * something was not available (bounds left as they were). */
static int certify_ball(const ac_mat *A, const cond_block_fn *blk, const ac_cond_sample *est,
                        long prec, long max_prec, double rtol, ac_cond_sample *s)
{
    size_t N = A->rows, D = A->cols;
    size_t m = N < D ? N : D;
    int rc = 1;
    hp_ws h;
    if (hp_init(&h, A, 128))
        return 1;
    double sm, rel;
    long pused;
    int resolved;
    long pk = prec > max_prec ? prec : max_prec;
    hp_sigma_min(&h, A, rtol / 16, est->kappa, pk, &sm, &rel, &pused, &resolved);
    double *z = malloc(m * sizeof(double));
    arb_mat_t G;
    arb_ptr xm = _arb_vec_init((slong)m), x1 = _arb_vec_init((slong)m);
    arb_mat_init(G, (slong)m, (slong)m);
    if (!z || top_eigvec(A, z))
        goto out;
    for (size_t i = 0; i < m; i++) {
        arb_set_d(x1 + i, z[i]);
        arf_set_mpfr(arb_midref(xm + i), h.x[i]);
        mag_zero(arb_radref(xm + i));
    }
    arb_mat_t Ab;
    arb_mat_init(Ab, blk ? (slong)N : 0, blk ? (slong)D : 0);
    if (blk && blk->fn(Ab, blk->ctx, prec)) {
        arb_mat_clear(Ab);
        goto out; /* no enclosure of the block at this precision */
    }
    ball_gram(G, A, blk ? Ab : NULL, prec);
    arb_mat_clear(Ab);
    arb_t r1, rm;
    arb_init(r1);
    arb_init(rm);
    arb_rayleigh(r1, G, x1, (slong)m, prec); /* lambda_max >= r1 */
    arb_rayleigh(rm, G, xm, (slong)m, prec); /* lambda_min <= rm */
    double lmax_lo = ac_arb_lo(r1), lmin_hi = ac_arb_hi(rm);
    double lmax_mid = arf_get_d(arb_midref(r1), ARF_RND_NEAR);
    double lmin_mid = arf_get_d(arb_midref(rm), ARF_RND_NEAR);
    double q = rtol / 4;
    double t = ac_mul_up(lmax_mid, 1 + q), sh = ac_mul_dn(lmin_mid, 1 - q);
    double lmax_hi = arb_shift_pd(G, t, -1, prec) ? t : INFINITY;
    double lmin_lo = (sh > 0 && arb_shift_pd(G, sh, +1, prec)) ? sh : 0.0;
    sigma_from_lambda(s, lmax_lo, lmax_hi, lmin_lo, lmin_hi, prec);
    arb_clear(r1);
    arb_clear(rm);
    rc = 0;
out:
    arb_mat_clear(G);
    _arb_vec_clear(xm, (slong)m);
    _arb_vec_clear(x1, (slong)m);
    free(z);
    hp_clear(&h);
    return rc;
}

/* Upper bound of ||Ab - A||_F (>= ||Ab - A||_2) for every matrix in the
 * balls Ab against the doubles A; +inf if the balls are not finite. */
static double ball_dev_fro(const arb_mat_t Ab, const ac_mat *A, slong prec)
{
    arb_t t, a;
    arb_init(t);
    arb_init(a);
    double ss = 0;
    for (size_t i = 0; i < A->rows; i++)
        for (size_t j = 0; j < A->cols; j++) {
            arb_set_d(a, A->data[i * A->cols + j]);
            arb_sub(t, arb_mat_entry(Ab, (slong)i, (slong)j), a, prec);
            arb_abs(t, t);
            double e = ac_arb_hi(t);
            ss = ac_add_up(ss, ac_mul_up(e, e));
        }
    arb_clear(t);
    arb_clear(a);
    return isfinite(ss) ? ac_sqrt_up(ss) : INFINITY;
}

int cond_certify_block(const ac_mat *A, const cond_block_fn *blk, double rtol,
                       const ac_schedule *sched, long max_prec, ac_cond_sample *s, ac_err *err)
{
    size_t N = A->rows, D = A->cols, m = N < D ? N : D;
    if (m == 0)
        return ac_err_set(err, AC_EUSAGE, "certify: empty matrix");
    double *lo = malloc(m * sizeof(double)), *hi = malloc(m * sizeof(double));
    if (!lo || !hi) {
        free(lo);
        free(hi);
        return ac_err_set(err, AC_EINTERNAL, "out of memory in certify");
    }
    ac_imat Ai = ac_imat_view(A);
    double eps;
    int st = ac_sv_enclose(&Ai, lo, hi, &eps, err);
    if (st) {
        free(lo);
        free(hi);
        return st;
    }
    /* stage 0 for the block of blk: Weyl, |sigma_i(B) - sigma_i(A)| <=
     * ||B - A||_2 <= r for every B in the balls (doc/mathematics.md §5.9) */
    double r = 0;
    if (blk && blk->rad0) {
        if (blk->rad0(blk->ctx, A, &r))
            r = INFINITY;
    } else if (blk) {
        long p0 = 64; /* r is dominated by the double rounding of the block */
        arb_mat_t Ab;
        arb_mat_init(Ab, (slong)N, (slong)D);
        r = blk->fn(Ab, blk->ctx, p0) ? INFINITY : ball_dev_fro(Ab, A, p0);
        arb_mat_clear(Ab);
    }
    s->block_rad = r;
    s->s1_lo = fmax(0.0, ac_sub_dn(lo[0], r));
    s->s1_hi = ac_add_up(hi[0], r);
    s->smin_lo = fmax(0.0, ac_sub_dn(lo[m - 1], r));
    s->smin_hi = ac_add_up(hi[m - 1], r);
    free(lo);
    free(hi);
    cond_kappa_bounds(s);
    s->cert = cond_judge_kappa(s, rtol);
    s->cert_stage = AC_STAGE_DOUBLE;
    s->cert_prec = 53;
    for (int k = 0; s->cert == AC_UNDECIDED && sched && k < sched->n; k++) {
        ac_cond_sample t = *s;
        if (certify_ball(A, blk, s, sched->prec[k], max_prec, rtol, &t) == 0) {
            /* keep the tighter of the two enclosures (both are rigorous) */
            s->s1_lo = fmax(s->s1_lo, t.s1_lo);
            s->s1_hi = fmin(s->s1_hi, t.s1_hi);
            s->smin_lo = fmax(s->smin_lo, t.smin_lo);
            s->smin_hi = fmin(s->smin_hi, t.smin_hi);
            cond_kappa_bounds(s);
            s->cert = cond_judge_kappa(s, rtol);
        }
        s->cert_stage = k + 1;
        s->cert_prec = sched->prec[k];
    }
    flint_cleanup();
    return AC_OK;
}

int ac_cond_certify(const ac_mat *A, double rtol, const ac_schedule *sched, long max_prec,
                    ac_cond_sample *s, ac_err *err)
{
    return cond_certify_block(A, NULL, rtol, sched, max_prec, s, err);
}
