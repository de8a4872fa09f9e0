/* sigma_min_mpfr.c — the high-precision fallback of kappa
 * (doc/mathematics.md §5.8): sigma_min of a double matrix by shifted inverse
 * iteration on the Gram matrix of its short side in MPFR, with an
 * a-posteriori bound (Weyl) on the eigenvalue found; the iterate is also the
 * approximate eigenvector of the certification (certify.c). */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>
#include <mpfr.h>

#include "attncheck/rng.h"
#include "cond_impl.h"

/* f(x, prec) on every working variable of h (G, Lc, x, y, z, g, t, u, v):
 * all of them are initialised, re-sized and cleared together. */
static void for_work_vars(hp_ws *h, void (*f)(mpfr_ptr, mpfr_prec_t), mpfr_prec_t prec)
{
    size_t m = h->m;
    for (size_t i = 0; i < m * m; i++) {
        f(h->G[i], prec);
        f(h->Lc[i], prec);
    }
    for (size_t i = 0; i < m; i++) {
        f(h->x[i], prec);
        f(h->y[i], prec);
        f(h->z[i], prec);
        f(h->g[i], prec);
    }
    f(h->t, prec);
    f(h->u, prec);
    f(h->v, prec);
}

static void var_init(mpfr_ptr x, mpfr_prec_t prec) { mpfr_init2(x, prec); }
static void var_set_prec(mpfr_ptr x, mpfr_prec_t prec) { mpfr_set_prec(x, prec); }
static void var_clear(mpfr_ptr x, mpfr_prec_t prec)
{
    (void)prec;
    mpfr_clear(x);
}

void hp_clear(hp_ws *h)
{
    size_t m = h->m, M = h->M;
    if (h->a)
        for (size_t i = 0; i < m * M; i++)
            mpfr_clear(h->a[i]);
    if (h->G) /* set only once every array was allocated and initialised */
        for_work_vars(h, var_clear, 0);
    free(h->a);
    free(h->G);
    free(h->Lc);
    free(h->x);
    free(h->y);
    free(h->z);
    free(h->g);
    memset(h, 0, sizeof *h);
}

/* a = the short side of A as m rows of length M, exactly. */
int hp_init(hp_ws *h, const ac_mat *A, long prec)
{
    size_t N = A->rows, D = A->cols;
    memset(h, 0, sizeof *h);
    h->m = N < D ? N : D;
    h->M = N < D ? D : N;
    h->prec = prec;
    size_t m = h->m, M = h->M;
    h->a = malloc(m * M * sizeof(mpfr_t));
    h->G = malloc(m * m * sizeof(mpfr_t));
    h->Lc = malloc(m * m * sizeof(mpfr_t));
    h->x = malloc(m * sizeof(mpfr_t));
    h->y = malloc(m * sizeof(mpfr_t));
    h->z = malloc(m * sizeof(mpfr_t));
    h->g = malloc(m * sizeof(mpfr_t));
    if (!h->a || !h->G || !h->Lc || !h->x || !h->y || !h->z || !h->g) {
        free(h->a);
        free(h->G);
        free(h->Lc);
        free(h->x);
        free(h->y);
        free(h->z);
        free(h->g);
        memset(h, 0, sizeof *h);
        return AC_EINTERNAL;
    }
    for (size_t i = 0; i < m; i++)
        for (size_t k = 0; k < M; k++) {
            mpfr_init2(h->a[i * M + k], 53);
            double v = (N <= D) ? A->data[i * D + k] : A->data[k * D + i];
            mpfr_set_d(h->a[i * M + k], v, MPFR_RNDN); /* exact */
        }
    for_work_vars(h, var_init, (mpfr_prec_t)prec);
    return AC_OK;
}

static void hp_set_prec(hp_ws *h, long prec)
{
    h->prec = prec;
    for_work_vars(h, var_set_prec, (mpfr_prec_t)prec);
}

/* G = a a^T at h->prec (one rounding per fma). */
static void hp_gram(hp_ws *h)
{
    size_t m = h->m, M = h->M;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j <= i; j++) {
            mpfr_t *g = &h->G[i * m + j];
            mpfr_set_zero(*g, 1);
            for (size_t k = 0; k < M; k++)
                mpfr_fma(*g, h->a[i * M + k], h->a[j * M + k], *g, MPFR_RNDN);
            if (j != i)
                mpfr_set(h->G[j * m + i], *g, MPFR_RNDN);
        }
}

/* Cholesky G - mu I = L L^T (lower); 0 if a pivot is not positive. */
static int hp_cholesky(hp_ws *h, double mu)
{
    size_t m = h->m;
    for (size_t j = 0; j < m; j++) {
        mpfr_sub_d(h->t, h->G[j * m + j], mu, MPFR_RNDN);
        for (size_t k = 0; k < j; k++) {
            mpfr_mul(h->u, h->Lc[j * m + k], h->Lc[j * m + k], MPFR_RNDN);
            mpfr_sub(h->t, h->t, h->u, MPFR_RNDN);
        }
        if (mpfr_sgn(h->t) <= 0)
            return 0;
        mpfr_sqrt(h->Lc[j * m + j], h->t, MPFR_RNDN);
        for (size_t i = j + 1; i < m; i++) {
            mpfr_set(h->t, h->G[i * m + j], MPFR_RNDN);
            for (size_t k = 0; k < j; k++) {
                mpfr_mul(h->u, h->Lc[i * m + k], h->Lc[j * m + k], MPFR_RNDN);
                mpfr_sub(h->t, h->t, h->u, MPFR_RNDN);
            }
            mpfr_div(h->Lc[i * m + j], h->t, h->Lc[j * m + j], MPFR_RNDN);
        }
    }
    return 1;
}

/* x <- x / ||x||; returns ||x|| as a double */
static double hp_normalize(hp_ws *h, mpfr_t *x)
{
    size_t m = h->m;
    mpfr_set_zero(h->t, 1);
    for (size_t i = 0; i < m; i++)
        mpfr_fma(h->t, x[i], x[i], h->t, MPFR_RNDN);
    mpfr_sqrt(h->t, h->t, MPFR_RNDN);
    double n = mpfr_get_d(h->t, MPFR_RNDN);
    if (mpfr_sgn(h->t) > 0)
        for (size_t i = 0; i < m; i++)
            mpfr_div(x[i], x[i], h->t, MPFR_RNDN);
    return n;
}

/* One inverse-iteration step x <- (G - mu I)^{-1} x / ||.|| (with the
 * factor L of G - mu I), then rho = x^T G x and ||G x - rho x|| (into
 * *rho, *res as doubles). */
static void hp_step(hp_ws *h, double *rho, double *res)
{
    size_t m = h->m;
    /* L y = x */
    for (size_t i = 0; i < m; i++) {
        mpfr_set(h->t, h->x[i], MPFR_RNDN);
        for (size_t k = 0; k < i; k++) {
            mpfr_mul(h->u, h->Lc[i * m + k], h->y[k], MPFR_RNDN);
            mpfr_sub(h->t, h->t, h->u, MPFR_RNDN);
        }
        mpfr_div(h->y[i], h->t, h->Lc[i * m + i], MPFR_RNDN);
    }
    /* L^T z = y */
    for (size_t ii = m; ii-- > 0;) {
        mpfr_set(h->t, h->y[ii], MPFR_RNDN);
        for (size_t k = ii + 1; k < m; k++) {
            mpfr_mul(h->u, h->Lc[k * m + ii], h->z[k], MPFR_RNDN);
            mpfr_sub(h->t, h->t, h->u, MPFR_RNDN);
        }
        mpfr_div(h->z[ii], h->t, h->Lc[ii * m + ii], MPFR_RNDN);
    }
    for (size_t i = 0; i < m; i++)
        mpfr_set(h->x[i], h->z[i], MPFR_RNDN);
    hp_normalize(h, h->x);
    /* g = G x, rho = x^T g, r = g - rho x */
    for (size_t i = 0; i < m; i++) {
        mpfr_set_zero(h->g[i], 1);
        for (size_t k = 0; k < m; k++)
            mpfr_fma(h->g[i], h->G[i * m + k], h->x[k], h->g[i], MPFR_RNDN);
    }
    mpfr_set_zero(h->v, 1);
    for (size_t i = 0; i < m; i++)
        mpfr_fma(h->v, h->x[i], h->g[i], h->v, MPFR_RNDN);
    mpfr_set_zero(h->u, 1);
    for (size_t i = 0; i < m; i++) {
        mpfr_mul(h->t, h->v, h->x[i], MPFR_RNDN);
        mpfr_sub(h->t, h->g[i], h->t, MPFR_RNDN);
        mpfr_fma(h->u, h->t, h->t, h->u, MPFR_RNDN);
    }
    mpfr_sqrt(h->u, h->u, MPFR_RNDN);
    *rho = mpfr_get_d(h->v, MPFR_RNDN);
    *res = mpfr_get_d(h->u, MPFR_RNDU);
}

/* A generic start vector (a fixed Philox stream, so runs are reproducible). */
static void hp_start(hp_ws *h)
{
    ac_rng r;
    ac_rng_init(&r, 0x61747463686b2d33ull, 0x6870737461727400ull, 0);
    for (size_t i = 0; i < h->m; i++)
        mpfr_set_d(h->x[i], 1.0 + 0.5 * ac_rng_normal(&r), MPFR_RNDN);
    hp_normalize(h, h->x);
}

/* Bits for sigma_min to relative rtol when kappa ~ kappa_hint. */
static long hp_bits_guess(double kappa_hint, double rtol, size_t m, size_t M)
{
    double lk = (kappa_hint > 1 && isfinite(kappa_hint)) ? log2(kappa_hint) : 60.0;
    double b = 2 * lk + log2(1.0 / rtol) + log2((double)m * (double)M) + 24;
    long p = (long)ceil(b / 64.0) * 64;
    return p < 128 ? 128 : p;
}

/* Double-precision singular values of A: sigma~_1, sigma~_min and the
 * absolute error bound e = M u sigma~_1 (LAPACK's bound, p(m, n) = M).
 * Returns 0 on failure. */
static int hp_double_hint(const ac_mat *A, double *s1, double *sm, double *e)
{
    size_t N = A->rows, D = A->cols, m = N < D ? N : D, M = N < D ? D : N;
    double *c = malloc(N * D * sizeof(double)), *sv = malloc(m * sizeof(double));
    int ok = 0;
    if (c && sv) {
        memcpy(c, A->data, N * D * sizeof(double));
        lapack_int info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', (lapack_int)D, (lapack_int)N, c,
                                         (lapack_int)D, sv, NULL, 1, NULL, 1);
        if (info == 0) {
            *s1 = sv[0];
            *sm = sv[m - 1];
            *e = (double)M * U53 * sv[0];
            ok = 1;
        }
    }
    free(c);
    free(sv);
    return ok;
}

/* The best Rayleigh quotient so far: rho and its relative error bound rel
 * at precision p. */
typedef struct {
    double rho, rel;
    long p;
} hp_best;

/* Inverse iteration at the current precision h->prec from the generic start
 * vector, with the factor of G - mu I in h->Lc.  The radius of step k is
 * ||G x - rho x|| (rounded up) + floor_err, the error of the MPFR Gram
 * matrix and of the rounding of the step; some eigenvalue of the exact G
 * lies within it of rho (Weyl), so rad / rho bounds the relative error.
 * Stops when rel <= rtol/2, or when the residual stops shrinking (the
 * precision floor), or after 500 steps. */
static void hp_iterate(hp_ws *h, double floor_err, double rtol, hp_best *best)
{
    hp_start(h);
    double rho = NAN, res = INFINITY, prev = INFINITY;
    int stall = 0;
    for (int it = 0; it < 500; it++) {
        hp_step(h, &rho, &res);
        double rad = res * 1.0001 + floor_err;
        double rel = rho > rad ? rad / rho : INFINITY; /* >= relative error of sigma */
        if (rel < best->rel) {
            best->rel = rel;
            best->rho = rho;
            best->p = h->prec;
        }
        if (rel <= 0.5 * rtol)
            break;
        /* stop when the residual no longer shrinks (precision floor) */
        if (res >= prev) {
            if (++stall >= 5)
                break;
        } else {
            stall = 0;
        }
        prev = res;
    }
}

/* Core of ac_cond_sigma_min_mpfr; leaves the eigenvector in h->x.
 *
 * Shifted inverse iteration: with the double estimate sigma~_min and its
 * error bound e, mu = (sigma~_min - 2e)^2 <= lambda_min (when the bound
 * holds), so G - mu I is positive definite and the iteration contracts by
 * (lambda_min - mu)/(lambda_2 - mu) per step, fast even when the two
 * smallest singular values are close.  If the Cholesky factorisation of
 * G - mu I fails (the bound did not hold), mu = 0 is used.  The precision
 * starts from a guess (hp_bits_guess) and doubles up to max_prec. */
int hp_sigma_min(hp_ws *h, const ac_mat *A, double rtol, double kappa_hint, long max_prec,
                 double *sigmin, double *relerr, long *prec_used, int *resolved)
{
    size_t m = h->m, M = h->M;
    double fro2 = 0;
    for (size_t i = 0; i < A->rows * A->cols; i++)
        fro2 += A->data[i] * A->data[i];
    fro2 *= 1 + 2 * (double)(A->rows * A->cols) * U53; /* >= ||A||_F^2 */
    double s1, sm, e, mu = 0;
    if (hp_double_hint(A, &s1, &sm, &e)) {
        if (sm > 2 * e)
            mu = (sm - 2 * e) * (sm - 2 * e);
        double k = sm > e ? s1 / (sm - e) : 1 / U53;
        if (k > kappa_hint)
            kappa_hint = k;
    }
    long p = hp_bits_guess(kappa_hint, rtol, m, M);
    if (p > max_prec)
        p = max_prec;
    hp_best best = {NAN, INFINITY, p};
    for (;;) {
        hp_set_prec(h, p);
        hp_gram(h);
        double two_p = ldexp(1.0, (int)-p);
        /* ||G~ - G||_2 <= M 2^-p ||A||_F^2 (one rounding per fma, relative
         * 2^-p of partial sums bounded by sum |a_ik a_jk|), plus the rounding
         * of G x, x^T G x and the residual: (m + 3) 2^-p ||G||, ||G|| <= ||A||_F^2 */
        double floor_err = ((double)M + (double)m + 3) * two_p * fro2 * 1.0001;
        double shift = mu;
        int factored = hp_cholesky(h, shift);
        if (!factored && shift > 0) {
            shift = 0;
            factored = hp_cholesky(h, shift);
        }
        if (factored) {
            hp_iterate(h, floor_err, rtol, &best);
            if (best.rel <= 0.5 * rtol && best.p == p)
                break;
        }
        if (p >= max_prec)
            break;
        p = p * 2 > max_prec ? max_prec : p * 2;
    }
    *prec_used = best.p;
    if (best.rel <= 0.5 * rtol) {
        *sigmin = sqrt(best.rho);
        *relerr = best.rel + 2 * U53;
        *resolved = 1;
    } else {
        *sigmin = (best.rho > 0) ? sqrt(best.rho) : 0.0;
        *relerr = best.rel;
        *resolved = 0;
    }
    return AC_OK;
}

int ac_cond_sigma_min_mpfr(const ac_mat *A, double rtol, double kappa_hint, long max_prec,
                           double *sigmin, double *relerr, long *prec_used, int *resolved,
                           ac_err *err)
{
    hp_ws h;
    if (A->rows == 0 || A->cols == 0)
        return ac_err_set(err, AC_EUSAGE, "sigma_min of an empty matrix (%zu x %zu)", A->rows,
                          A->cols);
    if (!(rtol > 0 && rtol < 1))
        return ac_err_set_field(err, AC_EUSAGE, "rtol", "rtol must be in (0, 1), not %g", rtol);
    if (max_prec < 64 || max_prec > MPFR_PREC_MAX / 2)
        return ac_err_set_field(err, AC_EUSAGE, "max_prec", "max_prec must be >= 64 bits, not %ld",
                                max_prec);
    for (size_t i = 0; i < A->rows * A->cols; i++)
        if (!isfinite(A->data[i]))
            return ac_err_set(err, AC_EDATA, "matrix has a non-finite entry");
    if (hp_init(&h, A, 128))
        return ac_err_set(err, AC_EINTERNAL, "out of memory in the MPFR fallback");
    int st = hp_sigma_min(&h, A, rtol, kappa_hint, max_prec, sigmin, relerr, prec_used, resolved);
    hp_clear(&h);
    mpfr_free_cache();
    return st;
}

