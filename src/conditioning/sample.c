/* sample.c — the blocks of Theorem 3.2 (paper 2): the per-thread
 * workspace, i.i.d. Gaussian blocks and attention heads with Gaussian
 * weights, drawn directly (Q = X Wq) or in the Cholesky form Q = L Z
 * (doc/mathematics.md §5.7; the streams are fixed in attncheck/condition.h).
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "attention/softmax.h"
#include "attncheck/blas.h"
#include "attncheck/rng.h"
#include "cond_impl.h"

const char *ac_cond_mode_name(ac_cond_mode m)
{
    return m == AC_COND_ATTENTION ? "attention" : "iid";
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

void cond_ws_free(cond_ws *w)
{
    free(w->A);
    free(w->G);
    free(w->P);
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

int cond_ws_init(cond_ws *w, size_t N, size_t h, size_t d, size_t E, ac_cond_mode mode)
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
    w->P = dalloc(w->D >= N ? N * (w->D < COND_PANEL ? w->D : COND_PANEL)
                            : (N < COND_PANEL ? N : COND_PANEL) * w->D);
    w->sv = dalloc(w->M);
    w->td = dalloc(m);
    w->te = dalloc(m);
    w->tau = dalloc(m);
    w->work = dalloc((size_t)w->lwork);
    w->iwork = malloc(w->liwork * sizeof(lapack_int));
    if (!w->A || !w->C || !w->G || !w->P || !w->sv || !w->td || !w->te || !w->tau || !w->work ||
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
    cond_ws_free(w);
    return AC_EINTERNAL;
}

double cond_ws_bytes(size_t N, size_t h, size_t d, size_t E, ac_cond_mode mode)
{
    double D = (double)h * (double)d, n = (double)N;
    double m = n < D ? n : D, M = n < D ? D : n;
    double b = 2 * n * D + m * m + M + 4 * m + 6 * m + 3 * M + 8 * m;
    b += (D >= n ? n * fmin(D, COND_PANEL) : fmin(n, COND_PANEL) * D); /* P */
    if (mode == AC_COND_ATTENTION)
        b += n * (double)E + 2 * n * n + 3 * n * (double)d + (double)E * (double)d;
    return b * 8 + 4096;
}

/* ---- sampling ------------------------------------------------------------------------ */

/* Draw one N x d projection of X into P: P = X W, W E x d i.i.d. N(0, 1/E)
 * (direct), or P = L Z with L L^T = X X^T / E (factor form): given X both
 * are N x d with i.i.d. N(0, X X^T / E) columns (doc/mathematics.md §5.7). */
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

/* Fill w->A with block `trial`, A = [A_1, ..., A_h] (paper 2, eq. (4)):
 * i.i.d. N(0,1) entries (the theorem's assumption), or attention heads
 * A_i = Softmax(Q_i K_i^T / sqrt d) V_i (doc/mathematics.md §5.7); see
 * attncheck/condition.h for the streams. */
void cond_sample_block(cond_ws *w, const ac_cond_opts *o, uint64_t trial)
{
    size_t N = w->N, D = w->D, d = w->d, E = w->E;
    ac_rng r;
    double t0 = ac_seconds();
    w->a_pending = 0;
    w->g_ready = 0;
    if (o->mode == AC_COND_IID) {
        /* entry (i, j) is entry i D + j of the block stream (seed, h, trial) */
        ac_rng_normal_block(w->A, N * D, o->seed, (uint64_t)w->h, trial, 0);
        w->t_sample += ac_seconds() - t0;
        return;
    }
    ac_rng_init(&r, o->seed, (uint64_t)w->h, trial);
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

void cond_gram_iid(cond_ws *w, const ac_cond_opts *o, uint64_t trial)
{
    size_t N = w->N, D = w->D, K = D >= N ? D : N;
    w->o = o;
    w->trial = trial;
    w->a_pending = 1;
    for (size_t c = 0; c < K; c += COND_PANEL) {
        size_t k = K - c < COND_PANEL ? K - c : COND_PANEL;
        double t0 = ac_seconds();
        /* the panel's entries at their positions i D + j in the block */
        if (D >= N)
            for (size_t i = 0; i < N; i++)
                ac_rng_normal_block(w->P + i * k, k, o->seed, (uint64_t)w->h, trial, i * D + c);
        else
            ac_rng_normal_block(w->P, k * D, o->seed, (uint64_t)w->h, trial, c * D);
        double t1 = ac_seconds();
        w->t_sample += t1 - t0;
        cond_gram_panel(w, w->P, k, D >= N ? k : D, c > 0);
        w->t_reduce += ac_seconds() - t1;
    }
    w->g_ready = 1;
}

void cond_ws_need_a(cond_ws *w)
{
    if (!w->a_pending)
        return;
    w->a_pending = 0;
    cond_sample_block(w, w->o, w->trial);
}

int cond_check_sizes(size_t N, size_t h, size_t d, size_t E, const ac_cond_opts *o,
                     ac_err *err)
{
    if (N == 0)
        return ac_err_set_field(err, AC_EUSAGE, "N", "N (the sequence length) must be >= 1");
    if (h == 0)
        return ac_err_set_field(err, AC_EUSAGE, "h", "h (the number of heads) must be >= 1");
    if (d == 0)
        return ac_err_set_field(err, AC_EUSAGE, "d", "d (the head dimension) must be >= 1");
    if (o->trials == 0 || o->trials > AC_COND_MAX_TRIALS)
        return ac_err_set_field(err, AC_EUSAGE, "trials", "trials must be in [1, 2^40], not %zu",
                                o->trials);
    double D = (double)h * (double)d;
    if (D * (double)N > (double)INT_MAX || D > (double)INT_MAX)
        return ac_err_set(err, AC_EUSAGE,
                          "block N x D = %zu x %.0f is too large for LAPACK's 32-bit indices", N,
                          D);
    if (o->mode == AC_COND_ATTENTION &&
        ((double)E * (double)N > (double)INT_MAX || (double)E * (double)d > (double)INT_MAX))
        return ac_err_set(err, AC_EUSAGE, "input width E = %zu too large", E);
    if (!(o->rtol >= 1e-14 && o->rtol <= 0.1))
        return ac_err_set_field(err, AC_EUSAGE, "rtol", "rtol must be in [1e-14, 0.1], not %g",
                                o->rtol);
    if (o->max_prec < 128)
        return ac_err_set_field(err, AC_EUSAGE, "max_prec",
                                "max_prec must be >= 128 bits, not %ld", o->max_prec);
    if (o->spectrum && o->bins == 0)
        return ac_err_set_field(err, AC_EUSAGE, "bins", "bins must be >= 1");
    return AC_OK;
}

size_t cond_eff_E(const ac_cond_opts *o, size_t h, size_t d)
{
    return o->input_dim ? o->input_dim : h * d;
}

int ac_cond_block(ac_mat *A, size_t h, size_t d, uint64_t trial, const ac_cond_opts *o,
                  ac_err *err)
{
    size_t E = cond_eff_E(o, h, d);
    cond_ws w;
    int st;
    ac_cond_opts o1 = *o;
    o1.trials = o1.trials ? o1.trials : 1;
    if ((st = cond_check_sizes(o->N, h, d, E, &o1, err)))
        return st;
    if (cond_ws_init(&w, o->N, h, d, E, o->mode))
        return ac_err_set(err, AC_EINTERNAL, "out of memory for the block");
    if ((st = ac_mat_init(A, o->N, h * d, err))) {
        cond_ws_free(&w);
        return st;
    }
    int old = ac_blas_get_threads();
    ac_blas_set_threads(1); /* as in ac_cond_run: the same kernels, the same bits */
    cond_sample_block(&w, o, trial);
    ac_blas_set_threads(old);
    memcpy(A->data, w.A, o->N * h * d * sizeof(double));
    cond_ws_free(&w);
    return AC_OK;
}
