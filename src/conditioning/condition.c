/* condition.c — Theorem 3.2: sampled condition numbers of the multi-head
 * block against the random-matrix predictions (attncheck/condition.h).
 *
 * Dimension letters (paper 2): N tokens (rows of A), d head width, h heads,
 * D = h d columns, E input width (attention), m = min(N, D), M = max(N, D).
 * A is row-major N x D.  LAPACK is called in column-major form on the same
 * memory (a row-major N x D array is the column-major D x N matrix A^T,
 * which has the same singular values), so no call copies or transposes.
 *
 * Parallelism: one OpenMP thread per sample with single-threaded BLAS; a
 * sample's stream is (seed, h, trial) and its route depends on itself and on
 * trial 0 (computed first, alone), so results do not depend on the threads.
 */
#include <config.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <lapacke.h>
#include <mpfr.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "attention/softmax.h"
#include "core/ac_arb.h"
#include "core/ball.h"
#include "attncheck/blas.h"
#include "attncheck/condition.h"
#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "attncheck/rng.h"

#define U53 0x1p-53

const char *ac_cond_mode_name(ac_cond_mode m)
{
    return m == AC_COND_ATTENTION ? "attention" : "iid";
}

const char *ac_cond_route_name(ac_cond_route r)
{
    switch (r) {
    case AC_COND_GRAM: return "gram";
    case AC_COND_SVD: return "svd";
    default: return "mpfr";
    }
}

void ac_cond_opts_default(ac_cond_opts *o)
{
    memset(o, 0, sizeof *o);
    o->N = 128;
    o->mode = AC_COND_IID;
    o->seed = 1;
    o->trials = 100;
    o->rtol = AC_COND_RTOL_DEFAULT;
    o->bins = AC_COND_BINS_DEFAULT;
    o->sched = ac_schedule_default();
    o->max_prec = 1024;
    o->start_route = -1;
}

/* ---- workspace ------------------------------------------------------------------ */

/* Per-thread buffers, sized for one (N, h, d, E). */
typedef struct {
    size_t N, D, d, h, E, m, M;
    double *A;      /* N x D, the block */
    double *G;      /* m x m Gram matrix */
    double *C;      /* N x D scratch copy for dgesdd (destroys its input) */
    double *sv;     /* m singular values / eigenvalues */
    double *td, *te, *tau; /* tridiagonal form */
    double *work;
    lapack_int lwork;
    lapack_int *iwork;
    size_t liwork;
    /* attention */
    double *X, *L, *Q, *K, *V, *W, *S;
    /* accounting (thread-seconds, flops) */
    double t_sample, t_reduce, t_solve, t_mpfr, t_certify, flops;
} cond_ws;

static void ws_free(cond_ws *w)
{
    free(w->A);
    free(w->G);
    free(w->C);
    free(w->sv);
    free(w->td);
    free(w->te);
    free(w->tau);
    free(w->work);
    free(w->iwork);
    free(w->X);
    free(w->L);
    free(w->Q);
    free(w->K);
    free(w->V);
    free(w->W);
    free(w->S);
    memset(w, 0, sizeof *w);
}

/* 64-byte aligned doubles (OpenBLAS kernels take the same path for every
 * buffer, so results do not depend on where the memory lands). */
static double *dalloc(size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof(double);
    bytes = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, bytes);
}

/* LAPACK workspace sizes for dgesdd('N') on the column-major D x N view and
 * dsytrd on m x m, by workspace queries. */
static int ws_lapack_sizes(size_t N, size_t D, size_t m, lapack_int *lwork, size_t *liwork)
{
    double q = 0;
    double dummy = 0;
    lapack_int ld = (lapack_int)D;
    lapack_int info = LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'N', (lapack_int)D, (lapack_int)N,
                                          &dummy, ld, &dummy, NULL, 1, NULL, 1, &q, -1, NULL);
    if (info != 0)
        return -1;
    double need = q;
    info = LAPACKE_dsytrd_work(LAPACK_COL_MAJOR, 'U', (lapack_int)m, &dummy, (lapack_int)m,
                               &dummy, &dummy, &dummy, &q, -1);
    if (info != 0)
        return -1;
    if (q > need)
        need = q;
    if (need < 4.0 * (double)m) /* dstebz */
        need = 4.0 * (double)m;
    *lwork = (lapack_int)need + 16;
    *liwork = 8 * m + 16; /* dgesdd: 8 min(m,n); dstebz: 3 n */
    return 0;
}

static int ws_init(cond_ws *w, size_t N, size_t h, size_t d, size_t E, ac_cond_mode mode)
{
    memset(w, 0, sizeof *w);
    w->N = N;
    w->h = h;
    w->d = d;
    w->D = h * d;
    w->E = E;
    w->m = N < w->D ? N : w->D;
    w->M = N < w->D ? w->D : N;
    size_t m = w->m;
    if (ws_lapack_sizes(N, w->D, m, &w->lwork, &w->liwork))
        return AC_EINTERNAL;
    w->A = dalloc(N * w->D);
    w->C = dalloc(N * w->D);
    w->G = dalloc(m * m);
    w->sv = dalloc(w->M);
    w->td = dalloc(m);
    w->te = dalloc(m);
    w->tau = dalloc(m);
    w->work = dalloc((size_t)w->lwork);
    w->iwork = malloc(w->liwork * sizeof(lapack_int));
    if (!w->A || !w->C || !w->G || !w->sv || !w->td || !w->te || !w->tau || !w->work ||
        !w->iwork)
        goto oom;
    if (mode == AC_COND_ATTENTION) {
        w->X = dalloc(N * E);
        w->L = dalloc(N * N);
        w->Q = dalloc(N * d);
        w->K = dalloc(N * d);
        w->V = dalloc(N * d);
        w->W = dalloc(E * d);
        w->S = dalloc(N * N);
        if (!w->X || !w->L || !w->Q || !w->K || !w->V || !w->W || !w->S)
            goto oom;
    }
    return AC_OK;
oom:
    ws_free(w);
    return AC_EINTERNAL;
}

static double ws_bytes(size_t N, size_t h, size_t d, size_t E, ac_cond_mode mode)
{
    double D = (double)h * (double)d, n = (double)N;
    double m = n < D ? n : D, M = n < D ? D : n;
    double b = 2 * n * D + m * m + M + 4 * m + 6 * m + 3 * M + 8 * m;
    if (mode == AC_COND_ATTENTION)
        b += n * (double)E + 2 * n * n + 3 * n * (double)d + (double)E * (double)d;
    return b * 8 + 4096;
}

/* ---- sampling ------------------------------------------------------------------------ */

/* Draw one N x d projection of X into P: P = X W, W E x d i.i.d. N(0, 1/E)
 * (direct), or P = L Z with L L^T = X X^T / E (factor form). */
static void draw_projection(cond_ws *w, ac_rng *r, int factor, double *P)
{
    size_t N = w->N, d = w->d, E = w->E;
    double t0 = ac_seconds();
    if (factor) {
        ac_rng_normal_fill(r, P, N * d);
        double t1 = ac_seconds();
        w->t_sample += t1 - t0;
        cblas_dtrmm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, (int)N,
                    (int)d, 1.0, w->L, (int)N, P, (int)d);
        w->flops += (double)N * (double)N * (double)d;
        w->t_reduce += ac_seconds() - t1;
    } else {
        ac_rng_normal_fill(r, w->W, E * d);
        double t1 = ac_seconds();
        w->t_sample += t1 - t0;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)d, (int)E,
                    1.0 / sqrt((double)E), w->X, (int)E, w->W, (int)d, 0.0, P, (int)d);
        w->flops += 2.0 * (double)N * (double)E * (double)d;
        w->t_reduce += ac_seconds() - t1;
    }
}

/* Fill w->A with block `trial` (see condition.h for the streams). */
static void sample_block(cond_ws *w, const ac_cond_opts *o, uint64_t trial)
{
    size_t N = w->N, D = w->D, d = w->d, E = w->E;
    ac_rng r;
    double t0 = ac_seconds();
    ac_rng_init(&r, o->seed, (uint64_t)w->h, trial);
    if (o->mode == AC_COND_IID) {
        ac_rng_normal_fill(&r, w->A, N * D);
        w->t_sample += ac_seconds() - t0;
        return;
    }
    ac_rng_normal_fill(&r, w->X, N * E);
    double t1 = ac_seconds();
    w->t_sample += t1 - t0;
    int factor = 0;
    if (E > N && !o->attention_direct) {
        /* L L^T = X X^T / E: row-major lower = column-major upper */
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)N, (int)E, 1.0 / (double)E,
                    w->X, (int)E, 0.0, w->L, (int)N);
        lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'U', (lapack_int)N, w->L,
                                              (lapack_int)N);
        factor = (info == 0);
        w->flops += (double)N * (double)N * (double)E + (double)N * N * N / 3.0;
    }
    w->t_reduce += ac_seconds() - t1;
    const double scale = 1.0 / sqrt((double)d);
    for (size_t i = 0; i < w->h; i++) {
        draw_projection(w, &r, factor, w->Q);
        draw_projection(w, &r, factor, w->K);
        draw_projection(w, &r, factor, w->V);
        double t2 = ac_seconds();
        /* S = Q K^T / sqrt d, P = rowsoftmax(S), A_i = P V */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)N, (int)d, scale, w->Q,
                    (int)d, w->K, (int)d, 0.0, w->S, (int)N);
        for (size_t row = 0; row < N; row++)
            ac_softmax_row(w->S + row * N, N);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)d, (int)N, 1.0, w->S,
                    (int)N, w->V, (int)d, 0.0, w->A + i * d, (int)D);
        w->flops += 4.0 * (double)N * (double)N * (double)d;
        w->t_reduce += ac_seconds() - t2;
    }
}

/* ---- kappa of one block ---------------------------------------------------------------- */

/* Relative error bound of kappa from relative bounds on sigma_1, sigma_min. */
static double kappa_relerr(double d1, double dm)
{
    if (!(dm < 1))
        return INFINITY;
    return (d1 + dm) / (1 - dm) + 4 * U53;
}

/* Bound on |sqrt(l~) - sqrt(l)| / sqrt(l~) given |l~ - l| <= eta. */
static double sqrt_relerr(double l, double eta)
{
    if (!(l > eta))
        return INFINITY;
    return 1 - sqrt(1 - eta / l) + 2 * U53;
}

/* GRAM route on w->A.  Returns 1 if accepted (s filled), 0 if the bound
 * fails.  With eig != NULL all eigenvalues are computed (dsterf) and stored
 * ascending in eig[0..m-1] (of G, unscaled). */
static int route_gram(cond_ws *w, double rtol, ac_cond_sample *s, double *eig)
{
    size_t N = w->N, D = w->D, m = w->m, M = w->M;
    double t0 = ac_seconds();
    if (D >= N)
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)N, (int)D, 1.0, w->A, (int)D,
                    0.0, w->G, (int)m);
    else
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, (int)D, (int)N, 1.0, w->A, (int)D, 0.0,
                    w->G, (int)m);
    w->flops += (double)m * (double)(m + 1) * (double)M;
    double t1 = ac_seconds();
    w->t_reduce += t1 - t0;
    double tr = 0;
    for (size_t i = 0; i < m; i++)
        tr += w->G[i * m + i];
    /* row-major lower = column-major upper */
    lapack_int info = LAPACKE_dsytrd_work(LAPACK_COL_MAJOR, 'U', (lapack_int)m, w->G,
                                          (lapack_int)m, w->td, w->te, w->tau, w->work, w->lwork);
    w->flops += 4.0 / 3.0 * (double)m * m * m;
    double lmin, lmax;
    if (info != 0) {
        w->t_solve += ac_seconds() - t1;
        return 0;
    }
    if (eig) {
        memcpy(eig, w->td, m * sizeof(double));
        info = LAPACKE_dsterf(m, eig, w->te);
        lmin = eig[0];
        lmax = eig[m - 1];
    } else {
        /* bisection for the two extreme eigenvalues only; iwork holds
         * dstebz's 3m workspace, then IBLOCK (m) and ISPLIT (m) */
        lapack_int nf, nsplit;
        double wv[2];
        lapack_int *iblock = w->iwork + 3 * m, *isplit = w->iwork + 4 * m;
        info = LAPACKE_dstebz_work('I', 'E', (lapack_int)m, 0, 0, 1, 1, 0.0, w->td, w->te, &nf,
                                   &nsplit, &wv[0], iblock, isplit, w->work, w->iwork);
        if (info == 0)
            info = LAPACKE_dstebz_work('I', 'E', (lapack_int)m, 0, 0, (lapack_int)m,
                                       (lapack_int)m, 0.0, w->td, w->te, &nf, &nsplit, &wv[1],
                                       iblock, isplit, w->work, w->iwork);
        lmin = wv[0];
        lmax = wv[1];
    }
    w->t_solve += ac_seconds() - t1;
    if (info != 0)
        return 0;
    /* eta >= |lambda~ - lambda|: product error + eigensolver error */
    double eta = ac_gamma_up((double)M) * tr * (1 + 2 * (double)(m + 1) * U53) +
                 (double)m * U53 * lmax;
    double dm = sqrt_relerr(lmin, eta), d1 = sqrt_relerr(lmax, eta);
    double re = kappa_relerr(d1, dm);
    if (!(re <= rtol))
        return 0;
    s->sigma1 = sqrt(lmax);
    s->sigmin = sqrt(lmin);
    s->kappa = s->sigma1 / s->sigmin;
    s->relerr = re;
    s->route = AC_COND_GRAM;
    s->resolved = 1;
    s->prec = 53;
    return 1;
}

/* SVD route: singular values of w->A by dgesdd (values only) into w->sv.
 * Returns 1 if the bound meets rtol, 0 if not, -1 if LAPACK failed. */
static int route_svd(cond_ws *w, double rtol, ac_cond_sample *s)
{
    size_t N = w->N, D = w->D, m = w->m, M = w->M;
    double t0 = ac_seconds();
    memcpy(w->C, w->A, N * D * sizeof(double));
    lapack_int info = LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'N', (lapack_int)D, (lapack_int)N,
                                          w->C, (lapack_int)D, w->sv, NULL, 1, NULL, 1, w->work,
                                          w->lwork, w->iwork);
    w->flops += 4.0 * (double)m * m * (double)M - 4.0 / 3.0 * (double)m * m * m;
    w->t_solve += ac_seconds() - t0;
    if (info != 0)
        return -1;
    double s1 = w->sv[0], sm = w->sv[m - 1];
    double d1 = (double)M * U53;
    double dm = sm > 0 ? (double)M * U53 * s1 / sm : INFINITY;
    double re = kappa_relerr(d1, dm);
    s->sigma1 = s1;
    s->sigmin = sm;
    s->kappa = sm > 0 ? s1 / sm : INFINITY;
    s->relerr = re;
    s->route = AC_COND_SVD;
    s->resolved = 1;
    s->prec = 53;
    return re <= rtol ? 1 : 0;
}

/* ---- the MPFR kernel ------------------------------------------------------------------------ */

/* High-precision smallest eigenpair of the Gram matrix of the short side.
 * xout (m entries, initialised by the caller at >= prec bits) receives the
 * unit approximate eigenvector when non-NULL. */
typedef struct {
    size_t m, M;
    long prec;
    mpfr_t *a;      /* m x M short-side rows, exact (53 bits) */
    mpfr_t *G;      /* m x m */
    mpfr_t *Lc;     /* m x m Cholesky factor (lower) */
    mpfr_t *x, *y, *z, *g; /* m vectors */
    mpfr_t t, u, v;
} hp_ws;

static void hp_clear(hp_ws *h)
{
    size_t m = h->m, M = h->M;
    if (h->a)
        for (size_t i = 0; i < m * M; i++)
            mpfr_clear(h->a[i]);
    if (h->G)
        for (size_t i = 0; i < m * m; i++) {
            mpfr_clear(h->G[i]);
            mpfr_clear(h->Lc[i]);
        }
    if (h->x)
        for (size_t i = 0; i < m; i++) {
            mpfr_clear(h->x[i]);
            mpfr_clear(h->y[i]);
            mpfr_clear(h->z[i]);
            mpfr_clear(h->g[i]);
        }
    if (h->G) {
        mpfr_clear(h->t);
        mpfr_clear(h->u);
        mpfr_clear(h->v);
    }
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
static int hp_init(hp_ws *h, const ac_mat *A, long prec)
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
    for (size_t i = 0; i < m * m; i++) {
        mpfr_init2(h->G[i], prec);
        mpfr_init2(h->Lc[i], prec);
    }
    for (size_t i = 0; i < m; i++) {
        mpfr_init2(h->x[i], prec);
        mpfr_init2(h->y[i], prec);
        mpfr_init2(h->z[i], prec);
        mpfr_init2(h->g[i], prec);
    }
    mpfr_init2(h->t, prec);
    mpfr_init2(h->u, prec);
    mpfr_init2(h->v, prec);
    return AC_OK;
}

static void hp_set_prec(hp_ws *h, long prec)
{
    size_t m = h->m;
    h->prec = prec;
    for (size_t i = 0; i < m * m; i++) {
        mpfr_set_prec(h->G[i], prec);
        mpfr_set_prec(h->Lc[i], prec);
    }
    for (size_t i = 0; i < m; i++) {
        mpfr_set_prec(h->x[i], prec);
        mpfr_set_prec(h->y[i], prec);
        mpfr_set_prec(h->z[i], prec);
        mpfr_set_prec(h->g[i], prec);
    }
    mpfr_set_prec(h->t, prec);
    mpfr_set_prec(h->u, prec);
    mpfr_set_prec(h->v, prec);
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

/* Core of ac_cond_sigma_min_mpfr; leaves the eigenvector in h->x.
 *
 * Shifted inverse iteration: with the double estimate sigma~_min and its
 * error bound e, mu = (sigma~_min - 2e)^2 <= lambda_min (when the bound
 * holds), so G - mu I is positive definite and the iteration contracts by
 * (lambda_min - mu)/(lambda_2 - mu) per step, fast even when the two
 * smallest singular values are close.  If the Cholesky factorisation of
 * G - mu I fails (the bound did not hold), mu = 0 is used. */
static int hp_sigma_min(hp_ws *h, const ac_mat *A, double rtol, double kappa_hint, long max_prec,
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
    double best_rho = NAN, best_rel = INFINITY;
    long best_p = p;
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
            hp_start(h);
            double rho = NAN, res = INFINITY, prev = INFINITY;
            int stall = 0;
            for (int it = 0; it < 500; it++) {
                hp_step(h, &rho, &res);
                double rad = res * 1.0001 + floor_err;
                double rel = rho > rad ? rad / rho : INFINITY; /* >= relative error of sigma */
                if (rel < best_rel) {
                    best_rel = rel;
                    best_rho = rho;
                    best_p = p;
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
            if (best_rel <= 0.5 * rtol && best_p == p)
                break;
        }
        if (p >= max_prec)
            break;
        p = p * 2 > max_prec ? max_prec : p * 2;
    }
    *prec_used = best_p;
    if (best_rel <= 0.5 * rtol) {
        *sigmin = sqrt(best_rho);
        *relerr = best_rel + 2 * U53;
        *resolved = 1;
    } else {
        *sigmin = (best_rho > 0) ? sqrt(best_rho) : 0.0;
        *relerr = best_rel;
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
        return ac_err_set(err, AC_EUSAGE, "rtol must be in (0, 1), not %g", rtol);
    if (max_prec < 64 || max_prec > MPFR_PREC_MAX / 2)
        return ac_err_set(err, AC_EUSAGE, "max_prec must be >= 64 bits, not %ld", max_prec);
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

/* ---- the routes together ------------------------------------------------------------------------ */

/* kappa of w->A, starting with route `start`; eig (spectrum) receives the m
 * eigenvalues of G ascending, or NULL. */
static int kappa_ws(cond_ws *w, double rtol, int start, long max_prec, ac_cond_sample *s,
                    double *eig, ac_err *err)
{
    /* every route must meet rtol/2: the other half is the room the
     * certification needs to prove "within rtol" */
    rtol *= 0.5;
    memset(s, 0, sizeof *s);
    s->cert = AC_UNDECIDED;
    s->cert_stage = AC_STAGE_NONE;
    if (start <= AC_COND_GRAM && route_gram(w, rtol, s, eig))
        return AC_OK;
    int r = route_svd(w, rtol, s);
    if (r < 0)
        return ac_err_set(err, AC_EDATA, "SVD did not converge (sample of %zu x %zu)", w->N, w->D);
    if (eig) {
        size_t m = w->m;
        for (size_t i = 0; i < m; i++)
            eig[i] = w->sv[m - 1 - i] * w->sv[m - 1 - i];
    }
    if (r == 1)
        return AC_OK;
    /* MPFR fallback for sigma_min; sigma_1 stays from the SVD */
    double t0 = ac_seconds();
    ac_mat Am = {w->N, w->D, w->A};
    double sm, rel;
    long prec;
    int resolved;
    int st = ac_cond_sigma_min_mpfr(&Am, rtol, s->kappa, max_prec, &sm, &rel, &prec, &resolved,
                                    err);
    w->t_mpfr += ac_seconds() - t0;
    if (st)
        return st;
    s->route = AC_COND_MPFR;
    s->prec = prec;
    s->resolved = resolved;
    s->sigmin = sm;
    if (resolved) {
        s->kappa = s->sigma1 / sm;
        s->relerr = kappa_relerr((double)w->M * U53, rel);
    } else {
        s->kappa = INFINITY;
        s->relerr = INFINITY;
    }
    return AC_OK;
}

int ac_cond_kappa(const ac_mat *A, double rtol, int start_route, long max_prec,
                  ac_cond_sample *s, ac_err *err)
{
    cond_ws w;
    if (A->rows == 0 || A->cols == 0)
        return ac_err_set(err, AC_EUSAGE, "kappa of an empty matrix (%zu x %zu)", A->rows,
                          A->cols);
    if ((double)A->rows * (double)A->cols > (double)INT_MAX)
        return ac_err_set(err, AC_EUSAGE, "matrix %zu x %zu too large for LAPACK", A->rows,
                          A->cols);
    if (!(rtol > 0 && rtol < 1))
        return ac_err_set(err, AC_EUSAGE, "rtol must be in (0, 1), not %g", rtol);
    for (size_t i = 0; i < A->rows * A->cols; i++)
        if (!isfinite(A->data[i]))
            return ac_err_set(err, AC_EDATA, "matrix has a non-finite entry");
    if (ws_init(&w, A->rows, 1, A->cols, 0, AC_COND_IID))
        return ac_err_set(err, AC_EINTERNAL, "out of memory for a %zu x %zu matrix", A->rows,
                          A->cols);
    memcpy(w.A, A->data, A->rows * A->cols * sizeof(double));
    int old = ac_blas_get_threads();
    ac_blas_set_threads(1); /* as in ac_cond_run: the same kernels, the same bits */
    int st = kappa_ws(&w, rtol, start_route < 0 ? AC_COND_GRAM : start_route, max_prec, s, NULL,
                      err);
    ac_blas_set_threads(old);
    ws_free(&w);
    return st;
}

/* ---- certification ------------------------------------------------------------------------------ */

/* Enclose dev = |kappa / kappa~ - 1| from kappa in [klo, khi] and judge
 * claim C for the sample: dev <= rtol (which needs khi finite, i.e.
 * sigma_min > 0). */
static ac_verdict judge_kappa(ac_cond_sample *s, double rtol)
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

static void set_kappa_bounds(ac_cond_sample *s)
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

/* Stage k >= 1: enclosures from ball Cholesky tests and Rayleigh quotients.
 * Returns 0 on success (bounds in s), nonzero if something was not
 * available (bounds left as they were). */
static int certify_ball(const ac_mat *A, const ac_cond_sample *est, long prec, long max_prec,
                        double rtol, ac_cond_sample *s)
{
    size_t N = A->rows, D = A->cols;
    size_t m = N < D ? N : D, M = N < D ? D : N;
    int rc = 1;
    /* approximate eigenvectors: the smallest from the MPFR kernel at >= prec
     * bits, the largest from LAPACK on the double Gram matrix */
    hp_ws h;
    if (hp_init(&h, A, 128))
        return 1;
    double sm, rel;
    long pused;
    int resolved;
    long pk = prec > max_prec ? prec : max_prec;
    hp_sigma_min(&h, A, rtol / 16, est->kappa, pk, &sm, &rel, &pused, &resolved);
    double *Gd = malloc(m * m * sizeof(double)), *ev = malloc(m * sizeof(double)),
           *z = malloc(m * sizeof(double));
    lapack_int *isuppz = malloc(2 * sizeof(lapack_int) + 2 * m * sizeof(lapack_int));
    arb_mat_t Am, At, G;
    arb_ptr xm = _arb_vec_init((slong)m), x1 = _arb_vec_init((slong)m);
    arb_mat_init(Am, (slong)m, (slong)M);
    arb_mat_init(At, (slong)M, (slong)m);
    arb_mat_init(G, (slong)m, (slong)m);
    if (!Gd || !ev || !z || !isuppz)
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
                       isuppz) != 0)
        goto out;
    for (size_t i = 0; i < m; i++) {
        arb_set_d(x1 + i, z[i]);
        arf_set_mpfr(arb_midref(xm + i), h.x[i]);
        mag_zero(arb_radref(xm + i));
    }
    /* G = a a^T in balls (a exact) */
    for (size_t i = 0; i < m; i++)
        for (size_t k = 0; k < M; k++) {
            double v = (N <= D) ? A->data[i * D + k] : A->data[k * D + i];
            arb_set_d(arb_mat_entry(Am, (slong)i, (slong)k), v);
            arb_set_d(arb_mat_entry(At, (slong)k, (slong)i), v);
        }
    arb_mat_mul(G, Am, At, prec);
    arb_t r1, rm, b;
    arb_init(r1);
    arb_init(rm);
    arb_init(b);
    arb_rayleigh(r1, G, x1, (slong)m, prec); /* lambda_max >= r1 */
    arb_rayleigh(rm, G, xm, (slong)m, prec); /* lambda_min <= rm */
    double lmax_lo = ac_arb_lo(r1), lmin_hi = ac_arb_hi(rm);
    double lmax_mid = arf_get_d(arb_midref(r1), ARF_RND_NEAR);
    double lmin_mid = arf_get_d(arb_midref(rm), ARF_RND_NEAR);
    double q = rtol / 4;
    double t = ac_mul_up(lmax_mid, 1 + q), sh = ac_mul_dn(lmin_mid, 1 - q);
    double lmax_hi = arb_shift_pd(G, t, -1, prec) ? t : INFINITY;
    double lmin_lo = (sh > 0 && arb_shift_pd(G, sh, +1, prec)) ? sh : 0.0;
    /* sigma = sqrt(lambda), rounded outward */
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
    arb_clear(r1);
    arb_clear(rm);
    arb_clear(b);
    rc = 0;
out:
    arb_mat_clear(Am);
    arb_mat_clear(At);
    arb_mat_clear(G);
    _arb_vec_clear(xm, (slong)m);
    _arb_vec_clear(x1, (slong)m);
    free(Gd);
    free(ev);
    free(z);
    free(isuppz);
    hp_clear(&h);
    return rc;
}

int ac_cond_certify(const ac_mat *A, double rtol, const ac_schedule *sched, long max_prec,
                    ac_cond_sample *s, ac_err *err)
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
    s->s1_lo = lo[0];
    s->s1_hi = hi[0];
    s->smin_lo = lo[m - 1];
    s->smin_hi = hi[m - 1];
    free(lo);
    free(hi);
    set_kappa_bounds(s);
    s->cert = judge_kappa(s, rtol);
    s->cert_stage = AC_STAGE_DOUBLE;
    s->cert_prec = 53;
    for (int k = 0; s->cert == AC_UNDECIDED && sched && k < sched->n; k++) {
        ac_cond_sample t = *s;
        if (certify_ball(A, s, sched->prec[k], max_prec, rtol, &t) == 0) {
            /* keep the tighter of the two enclosures (both are rigorous) */
            s->s1_lo = fmax(s->s1_lo, t.s1_lo);
            s->s1_hi = fmin(s->s1_hi, t.s1_hi);
            s->smin_lo = fmax(s->smin_lo, t.smin_lo);
            s->smin_hi = fmin(s->smin_hi, t.smin_hi);
            set_kappa_bounds(s);
            s->cert = judge_kappa(s, rtol);
        }
        s->cert_stage = k + 1;
        s->cert_prec = sched->prec[k];
    }
    flint_cleanup();
    return AC_OK;
}

/* ---- statistics ------------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ac_cond_quantile_sorted(const double *x, size_t n, double p)
{
    if (n == 0)
        return NAN;
    double hpos = (double)(n - 1) * p;
    size_t j = (size_t)floor(hpos);
    if (j >= n - 1)
        return x[n - 1];
    double g = hpos - (double)j;
    if (g == 0 || x[j] == x[j + 1])
        return x[j];
    if (isinf(x[j + 1]))
        return INFINITY;
    return x[j] + g * (x[j + 1] - x[j]);
}

int ac_cond_stats_compute(ac_cond_stats *st, const double *kappa, const double *sigma1,
                          const double *sigmin, size_t n, ac_err *err)
{
    memset(st, 0, sizeof *st);
    st->n = n;
    if (n == 0) {
        st->mean = st->sd = st->se_mean = st->median = st->q05 = st->q95 = NAN;
        st->elog = st->sd_log = st->se_elog = st->min = st->max = NAN;
        st->mean_sigma1 = st->mean_sigmin = NAN;
        return AC_OK;
    }
    double *x = malloc(n * sizeof(double));
    if (!x)
        return ac_err_set(err, AC_EINTERNAL, "out of memory for statistics of %zu samples", n);
    memcpy(x, kappa, n * sizeof(double));
    qsort(x, n, sizeof(double), cmp_double);
    st->min = x[0];
    st->max = x[n - 1];
    st->median = ac_cond_quantile_sorted(x, n, 0.5);
    st->q05 = ac_cond_quantile_sorted(x, n, 0.05);
    st->q95 = ac_cond_quantile_sorted(x, n, 0.95);
    double s = 0, sl = 0, s1 = 0, sm = 0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(kappa[i]))
            st->n_inf++;
        s += kappa[i];
        sl += log(kappa[i]);
        if (sigma1)
            s1 += sigma1[i];
        if (sigmin)
            sm += sigmin[i];
    }
    st->mean = s / (double)n;
    st->elog = sl / (double)n;
    st->mean_sigma1 = sigma1 ? s1 / (double)n : NAN;
    st->mean_sigmin = sigmin ? sm / (double)n : NAN;
    double v = 0, vl = 0;
    for (size_t i = 0; i < n; i++) {
        v += (kappa[i] - st->mean) * (kappa[i] - st->mean);
        double dl = log(kappa[i]) - st->elog;
        vl += dl * dl;
    }
    st->sd = n > 1 ? sqrt(v / (double)(n - 1)) : NAN;
    st->sd_log = n > 1 ? sqrt(vl / (double)(n - 1)) : NAN;
    st->se_mean = st->sd / sqrt((double)n);
    st->se_elog = st->sd_log / sqrt((double)n);
    if (st->n_inf) {
        st->mean = st->elog = INFINITY;
        st->sd = st->sd_log = st->se_mean = st->se_elog = NAN;
    }
    free(x);
    return AC_OK;
}

/* Certified statistics from the per-sample enclosures. */
static int cert_stats(ac_cond_result *r, ac_err *err)
{
    size_t n = r->trials;
    ac_cond_certstats *c = &r->cst;
    memset(c, 0, sizeof *c);
    double *lo = malloc(n * sizeof(double)), *hi = malloc(n * sizeof(double));
    if (!lo || !hi) {
        free(lo);
        free(hi);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    c->valid = 1;
    for (size_t i = 0; i < n; i++) {
        lo[i] = r->samples[i].kappa_lo;
        hi[i] = r->samples[i].kappa_hi;
        if (!(lo[i] >= 1) || !isfinite(hi[i]))
            c->valid = 0;
    }
    double nan = NAN;
    c->err_first_order_lo = c->err_first_order_hi = nan;
    c->err_tw_point_lo = c->err_tw_point_hi = nan;
    c->err_tw_median_lo = c->err_tw_median_hi = nan;
    c->err_edelman_median_lo = c->err_edelman_median_hi = nan;
    if (!c->valid) {
        free(lo);
        free(hi);
        return AC_OK;
    }
    double a, b;
    ac_sum_enclose(lo, n, 1, &a, &b);
    c->mean_lo = ac_div_dn(a, (double)n);
    ac_sum_enclose(hi, n, 1, &a, &b);
    c->mean_hi = ac_div_up(b, (double)n);
    /* E log kappa: MPFR logs rounded outward */
    {
        mpfr_t x, sl, sh;
        mpfr_init2(x, 64);
        mpfr_init2(sl, 128);
        mpfr_init2(sh, 128);
        mpfr_set_zero(sl, 1);
        mpfr_set_zero(sh, 1);
        for (size_t i = 0; i < n; i++) {
            mpfr_set_d(x, lo[i], MPFR_RNDN);
            mpfr_log(x, x, MPFR_RNDD);
            mpfr_add(sl, sl, x, MPFR_RNDD);
            mpfr_set_d(x, hi[i], MPFR_RNDN);
            mpfr_log(x, x, MPFR_RNDU);
            mpfr_add(sh, sh, x, MPFR_RNDU);
        }
        mpfr_div_ui(sl, sl, (unsigned long)n, MPFR_RNDD);
        mpfr_div_ui(sh, sh, (unsigned long)n, MPFR_RNDU);
        c->elog_lo = mpfr_get_d(sl, MPFR_RNDD);
        c->elog_hi = mpfr_get_d(sh, MPFR_RNDU);
        mpfr_clear(x);
        mpfr_clear(sl);
        mpfr_clear(sh);
    }
    /* order statistics are monotone in every sample, and so is the type-7
     * interpolation (1 - g) x_j + g x_{j+1} (0 <= g < 1): evaluate it on the
     * sorted lower and upper ends, rounding outward */
    qsort(lo, n, sizeof(double), cmp_double);
    qsort(hi, n, sizeof(double), cmp_double);
    const double ps[3] = {0.5, 0.05, 0.95};
    double *qlo[3] = {&c->median_lo, &c->q05_lo, &c->q95_lo};
    double *qhi[3] = {&c->median_hi, &c->q05_hi, &c->q95_hi};
    for (int k = 0; k < 3; k++) {
        double hpos = (double)(n - 1) * ps[k];
        size_t j = (size_t)floor(hpos);
        if (j >= n - 1) {
            *qlo[k] = lo[n - 1];
            *qhi[k] = hi[n - 1];
            continue;
        }
        double g = hpos - (double)j;
        if (g == 0) {
            *qlo[k] = lo[j];
            *qhi[k] = hi[j];
            continue;
        }
        /* the statistic x_j + g (x_{j+1} - x_j) = (1 - g) x_j + g x_{j+1}
         * (g as computed, the rest exact); every x >= 1 > 0, so rounding
         * 1 - g down (up) and every product and sum down (up) bounds it */
        *qlo[k] = ac_add_dn(ac_mul_dn(ac_sub_dn(1.0, g), lo[j]), ac_mul_dn(g, lo[j + 1]));
        *qhi[k] = ac_add_up(ac_mul_up(ac_sub_up(1.0, g), hi[j]), ac_mul_up(g, hi[j + 1]));
    }
    free(lo);
    free(hi);
    /* prediction / statistic - 1, for the predictions as computed (doubles) */
#define REL_ENCLOSE(pred, slo, shi, outlo, outhi)                                 \
    do {                                                                          \
        if (isfinite(pred) && (slo) > 0) {                                        \
            outlo = ac_sub_dn(ac_div_dn((pred), (shi)), 1.0);                     \
            outhi = ac_sub_up(ac_div_up((pred), (slo)), 1.0);                     \
        }                                                                         \
    } while (0)
    if (r->D != r->N) {
        REL_ENCLOSE(r->pred.first_order, c->mean_lo, c->mean_hi, c->err_first_order_lo,
                    c->err_first_order_hi);
        REL_ENCLOSE(r->pred.tw_point, c->mean_lo, c->mean_hi, c->err_tw_point_lo,
                    c->err_tw_point_hi);
        REL_ENCLOSE(r->pred.tw_median, c->median_lo, c->median_hi, c->err_tw_median_lo,
                    c->err_tw_median_hi);
    } else {
        REL_ENCLOSE(r->pred.edelman_median, c->median_lo, c->median_hi, c->err_edelman_median_lo,
                    c->err_edelman_median_hi);
    }
#undef REL_ENCLOSE
    return AC_OK;
}

/* ---- spectrum ------------------------------------------------------------------------------------ */

static int spectrum_stats(ac_cond_result *r, ac_err *err)
{
    size_t n = r->trials * r->m;
    double y = (double)r->N / (double)r->D;
    double atom = y > 1 ? 1.0 - 1.0 / y : 0.0;
    double *x = malloc(n * sizeof(double));
    size_t B = r->bins;
    r->hist_lo = malloc(B * sizeof(double));
    r->hist_hi = malloc(B * sizeof(double));
    r->hist_density = calloc(B, sizeof(double));
    r->hist_mp = malloc(B * sizeof(double));
    if (!x || !r->hist_lo || !r->hist_hi || !r->hist_density || !r->hist_mp) {
        free(x);
        return ac_err_set(err, AC_EINTERNAL, "out of memory for the spectrum");
    }
    memcpy(x, r->eig, n * sizeof(double));
    qsort(x, n, sizeof(double), cmp_double);
    /* KS distance to the continuous part of MP (conditioned on x > 0) */
    double ks = 0;
    for (size_t i = 0; i < n; i++) {
        double F = (ac_mp_cdf(x[i], y) - atom) / (1 - atom);
        double a = fabs((double)i / (double)n - F), b = fabs((double)(i + 1) / (double)n - F);
        if (a > ks)
            ks = a;
        if (b > ks)
            ks = b;
    }
    r->ks = ks;
    double lm, lp;
    ac_mp_edges(y, &lm, &lp);
    double a = fmin(x[0], lm), b = fmax(x[n - 1], lp);
    if (!(b > a))
        b = a + 1;
    double wd = (b - a) / (double)B;
    for (size_t k = 0; k < B; k++) {
        r->hist_lo[k] = a + wd * (double)k;
        r->hist_hi[k] = a + wd * (double)(k + 1);
        /* mean MP density of the continuous part over the bin */
        r->hist_mp[k] = (ac_mp_cdf(r->hist_hi[k], y) - ac_mp_cdf(r->hist_lo[k], y) -
                         (r->hist_lo[k] < 0 && r->hist_hi[k] >= 0 ? atom : 0)) /
                        ((1 - atom) * wd);
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)((x[i] - a) / wd);
        if (k >= B)
            k = B - 1;
        r->hist_density[k] += 1.0;
    }
    for (size_t k = 0; k < B; k++)
        r->hist_density[k] /= (double)n * wd;
    free(x);
    return AC_OK;
}

/* ---- the driver ------------------------------------------------------------------------------------- */

void ac_cond_result_free(ac_cond_result *r)
{
    if (!r)
        return;
    free(r->samples);
    free(r->eig);
    free(r->hist_lo);
    free(r->hist_hi);
    free(r->hist_density);
    free(r->hist_mp);
    memset(r, 0, sizeof *r);
}

static int check_sizes(size_t N, size_t h, size_t d, size_t E, const ac_cond_opts *o,
                       ac_err *err)
{
    if (N == 0)
        return ac_err_set(err, AC_EUSAGE, "sequence length N must be >= 1");
    if (h == 0)
        return ac_err_set(err, AC_EUSAGE, "number of heads h must be >= 1");
    if (d == 0)
        return ac_err_set(err, AC_EUSAGE, "head dimension d must be >= 1");
    if (o->trials == 0)
        return ac_err_set(err, AC_EUSAGE, "trials must be >= 1");
    double D = (double)h * (double)d;
    if (D * (double)N > (double)INT_MAX || D > (double)INT_MAX)
        return ac_err_set(err, AC_EUSAGE,
                          "block N x D = %zu x %.0f is too large for LAPACK's 32-bit indices", N, D);
    if (o->mode == AC_COND_ATTENTION &&
        ((double)E * (double)N > (double)INT_MAX || (double)E * (double)d > (double)INT_MAX))
        return ac_err_set(err, AC_EUSAGE, "input width E = %zu too large", E);
    if (!(o->rtol >= 1e-14 && o->rtol <= 0.1))
        return ac_err_set(err, AC_EUSAGE, "rtol must be in [1e-14, 0.1], not %g", o->rtol);
    if (o->max_prec < 128)
        return ac_err_set(err, AC_EUSAGE, "max_prec must be >= 128 bits, not %ld", o->max_prec);
    if (o->spectrum && o->bins == 0)
        return ac_err_set(err, AC_EUSAGE, "bins must be >= 1");
    return AC_OK;
}

static size_t eff_E(const ac_cond_opts *o, size_t h, size_t d)
{
    return o->input_dim ? o->input_dim : h * d;
}

static int n_threads(const ac_cond_opts *o)
{
#ifdef _OPENMP
    return o->threads > 0 ? o->threads : omp_get_max_threads();
#else
    (void)o;
    return 1;
#endif
}

double ac_cond_memory_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                fclose(f);
                return (double)kb * 1024.0;
            }
        fclose(f);
    }
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    long p = sysconf(_SC_AVPHYS_PAGES), s = sysconf(_SC_PAGESIZE);
    if (p > 0 && s > 0)
        return (double)p * (double)s;
#endif
    return 0;
}

int ac_cond_memory_need(const ac_cond_opts *o, const size_t *h, const size_t *d, size_t nh,
                        double *bytes, ac_err *err)
{
    double total = 0, ws_max = 0;
    int st;
    for (size_t i = 0; i < nh; i++) {
        size_t E = eff_E(o, h[i], d[i]);
        if ((st = check_sizes(o->N, h[i], d[i], E, o, err)))
            return st;
        double D = (double)h[i] * (double)d[i], n = (double)o->N;
        double m = n < D ? n : D;
        double T = (double)o->trials;
        total += T * ((double)sizeof(ac_cond_sample) + 3 * sizeof(double));
        if (o->spectrum)
            total += 2 * T * m * sizeof(double) + 4.0 * (double)o->bins * sizeof(double);
        double w = ws_bytes(o->N, h[i], d[i], E, o->mode);
        if (w > ws_max)
            ws_max = w;
    }
    total += (double)n_threads(o) * ws_max;
    *bytes = total;
    return AC_OK;
}

/* One sample: block, kappa, optional certify.  Returns status. */
static int do_sample(cond_ws *w, const ac_cond_opts *o, uint64_t trial, int start,
                     ac_cond_sample *s, double *eig, ac_err *err)
{
    sample_block(w, o, trial);
    int st = kappa_ws(w, o->rtol, start, o->max_prec, s, eig, err);
    if (st)
        return st;
    if (o->certify) {
        double t0 = ac_seconds();
        ac_mat Am = {w->N, w->D, w->A};
        ac_schedule sc = o->sched;
        st = ac_cond_certify(&Am, o->rtol, &sc, o->max_prec, s, err);
        w->t_certify += ac_seconds() - t0;
    }
    return st;
}

static void accumulate(ac_cond_result *r, const cond_ws *w)
{
    r->t_sample += w->t_sample;
    r->t_reduce += w->t_reduce;
    r->t_solve += w->t_solve;
    r->t_mpfr += w->t_mpfr;
    r->t_certify += w->t_certify;
    r->flops += w->flops;
}

int ac_cond_run(ac_cond_result *r, size_t h, size_t d, const ac_cond_opts *o, ac_err *err)
{
    size_t N = o->N, E = eff_E(o, h, d);
    int st;
    memset(r, 0, sizeof *r);
    if ((st = check_sizes(N, h, d, E, o, err)))
        return st;
    double t_start = ac_seconds();
    r->h = h;
    r->d = d;
    r->D = h * d;
    r->N = N;
    r->E = o->mode == AC_COND_ATTENTION ? E : 0;
    r->m = N < r->D ? N : r->D;
    r->trials = o->trials;
    r->mode = o->mode;
    r->seed = o->seed;
    r->rtol = o->rtol;
    r->bins = o->spectrum ? o->bins : 0;
    size_t T = o->trials, m = r->m;
    r->samples = calloc(T, sizeof *r->samples);
    if (o->spectrum)
        r->eig = malloc(T * m * sizeof(double));
    if (!r->samples || (o->spectrum && !r->eig)) {
        ac_cond_result_free(r);
        return ac_err_set(err, AC_EINTERNAL, "out of memory for %zu samples", T);
    }
    if ((st = ac_rmt_predict(&r->pred, N, r->D, err))) {
        ac_cond_result_free(r);
        return st;
    }

    int old_blas = ac_blas_get_threads();
    ac_blas_set_threads(1);

    /* trial 0 alone: it fixes the first route of the others */
    cond_ws w0;
    if (ws_init(&w0, N, h, d, E, o->mode)) {
        ac_blas_set_threads(old_blas);
        ac_cond_result_free(r);
        return ac_err_set(err, AC_EINTERNAL, "out of memory for the workspace (N = %zu, D = %zu)",
                          N, r->D);
    }
    int start = o->start_route >= 0 ? o->start_route : AC_COND_GRAM;
    st = do_sample(&w0, o, 0, start, &r->samples[0], o->spectrum ? r->eig : NULL, err);
    accumulate(r, &w0);
    ws_free(&w0);
    if (o->start_route < 0)
        start = r->samples[0].route == AC_COND_GRAM ? AC_COND_GRAM : AC_COND_SVD;
    size_t done = 1;
    if (!st && o->progress)
        o->progress(o->progress_ctx, done, T);

    int fail = st, have_ferr = 0;
    ac_err ferr;
    ac_err_clear(&ferr);
    if (!fail && T > 1) {
        int nt = n_threads(o);
#pragma omp parallel num_threads(nt)
        {
            cond_ws w;
            ac_err lerr;
            ac_err_clear(&lerr);
            int lst = ws_init(&w, N, h, d, E, o->mode);
            if (lst) {
                lst = ac_err_set(&lerr, AC_EINTERNAL, "out of memory for a thread's workspace");
#pragma omp atomic write
                fail = lst;
            }
#pragma omp for schedule(dynamic, 1)
            for (size_t t = 1; t < T; t++) {
                int f;
#pragma omp atomic read
                f = fail;
                if (lst || f)
                    continue;
                lst = do_sample(&w, o, t, start, &r->samples[t],
                                o->spectrum ? r->eig + t * m : NULL, &lerr);
                if (lst) {
#pragma omp atomic write
                    fail = lst;
                }
                size_t dn;
#pragma omp atomic capture
                dn = ++done;
#ifdef _OPENMP
                if (omp_get_thread_num() == 0 && o->progress)
                    o->progress(o->progress_ctx, dn, T);
#else
                if (o->progress)
                    o->progress(o->progress_ctx, dn, T);
#endif
            }
#pragma omp critical(ac_cond_reduce)
            {
                accumulate(r, &w);
                if (lst && !have_ferr) {
                    ferr = lerr;
                    have_ferr = 1;
                    fail = lst;
                }
            }
            ws_free(&w);
            flint_cleanup();
        }
    }
    ac_blas_set_threads(old_blas);
    if (fail) {
        if (err && st == AC_OK)
            *err = ferr;
        ac_cond_result_free(r);
        return fail;
    }
    if (o->progress)
        o->progress(o->progress_ctx, T, T);

    /* statistics */
    double *k = malloc(T * sizeof(double)), *s1 = malloc(T * sizeof(double)),
           *sm = malloc(T * sizeof(double));
    if (!k || !s1 || !sm) {
        free(k);
        free(s1);
        free(sm);
        ac_cond_result_free(r);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    size_t in_tw = 0, in_ed = 0, above_g = 0;
    for (size_t t = 0; t < T; t++) {
        const ac_cond_sample *s = &r->samples[t];
        k[t] = s->kappa;
        s1[t] = s->sigma1;
        sm[t] = s->sigmin;
        r->n_route[s->route]++;
        if (!s->resolved)
            r->n_unresolved++;
        if (s->kappa >= r->pred.tw_q05 && s->kappa <= r->pred.tw_q95)
            in_tw++;
        if (s->kappa >= r->pred.edelman_q05 && s->kappa <= r->pred.edelman_q95)
            in_ed++;
        if (s->kappa > r->pred.gordon_kappa95)
            above_g++;
    }
    st = ac_cond_stats_compute(&r->st, k, s1, sm, T, err);
    free(k);
    free(s1);
    free(sm);
    if (st) {
        ac_cond_result_free(r);
        return st;
    }
    const ac_rmt_pred *p = &r->pred;
    double nan = NAN;
    int square = (r->D == N);
    r->err_first_order = square ? nan : p->first_order / r->st.mean - 1;
    r->err_tw_point = isnan(p->tw_point) ? nan : p->tw_point / r->st.mean - 1;
    r->err_tw_median = isnan(p->tw_median) ? nan : p->tw_median / r->st.median - 1;
    r->tw_coverage = isnan(p->tw_q05) ? nan : (double)in_tw / (double)T;
    r->gordon_exceed = (double)above_g / (double)T;
    r->err_edelman_median = square ? p->edelman_median / r->st.median - 1 : nan;
    r->diff_edelman_elog = square ? p->edelman_elog - r->st.elog : nan;
    r->edelman_coverage = square ? (double)in_ed / (double)T : nan;

    if (o->spectrum) {
        /* eigenvalues of G -> of (1/D) A A^T; in attention mode also divided
         * by the mean square entry, so that the shape is compared */
        for (size_t t = 0; t < T; t++) {
            double *e = r->eig + t * m, sc = 1.0 / (double)r->D;
            if (o->mode == AC_COND_ATTENTION) {
                double tr = 0;
                for (size_t i = 0; i < m; i++)
                    tr += e[i];
                sc = tr > 0 ? (double)N / tr : sc; /* tr / (N D) = mean square entry */
            }
            for (size_t i = 0; i < m; i++)
                e[i] *= sc;
        }
        if ((st = spectrum_stats(r, err))) {
            ac_cond_result_free(r);
            return st;
        }
    } else {
        r->ks = nan;
    }

    r->max_stage = AC_STAGE_NONE;
    if (o->certify) {
        r->dev_lo = 0;
        r->dev_hi = 0;
        for (size_t t = 0; t < T; t++) {
            const ac_cond_sample *s = &r->samples[t];
            r->dev_lo = fmax(r->dev_lo, s->dev_lo);
            r->dev_hi = isnan(s->dev_hi) ? INFINITY : fmax(r->dev_hi, s->dev_hi);
            if (s->cert_stage > r->max_stage) {
                r->max_stage = s->cert_stage;
                r->max_stage_prec = s->cert_prec;
            }
            if (s->cert == AC_PROVED)
                r->n_proved++;
            else if (s->cert == AC_REFUTED)
                r->n_refuted++;
            else
                r->n_undecided++;
            if (s->cert != AC_UNDECIDED && s->cert_stage >= 0 && s->cert_stage <= AC_MAX_STAGES)
                r->n_stage[s->cert_stage]++;
        }
        /* the conjunction over samples = the judgement of the maximum */
        r->verdict = ac_judge(r->dev_lo, r->dev_hi, AC_LE, r->rtol);
        if ((st = cert_stats(r, err))) {
            ac_cond_result_free(r);
            return st;
        }
    } else {
        r->verdict = AC_UNDECIDED;
        r->dev_lo = 0;
        r->dev_hi = INFINITY;
    }
    r->wall = ac_seconds() - t_start;
    return AC_OK;
}

int ac_cond_block(ac_mat *A, size_t h, size_t d, uint64_t trial, const ac_cond_opts *o,
                  ac_err *err)
{
    size_t E = eff_E(o, h, d);
    cond_ws w;
    int st;
    ac_cond_opts o1 = *o;
    o1.trials = o1.trials ? o1.trials : 1;
    if ((st = check_sizes(o->N, h, d, E, &o1, err)))
        return st;
    if (ws_init(&w, o->N, h, d, E, o->mode))
        return ac_err_set(err, AC_EINTERNAL, "out of memory for the block");
    if ((st = ac_mat_init(A, o->N, h * d, err))) {
        ws_free(&w);
        return st;
    }
    int old = ac_blas_get_threads();
    ac_blas_set_threads(1); /* as in ac_cond_run: the same kernels, the same bits */
    sample_block(&w, o, trial);
    ac_blas_set_threads(old);
    memcpy(A->data, w.A, o->N * h * d * sizeof(double));
    ws_free(&w);
    return AC_OK;
}
