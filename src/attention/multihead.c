/* multihead.c — multi-head attention layers (attncheck/multihead.h).
 *
 * Dimension letters: d model width, n tokens, h heads, hs head size,
 * hh = h hs.  Buffers are row-major.  Head i of a stacked (hh x n) buffer is
 * rows i hs .. i hs + hs - 1; the softmax matrices P_i (n x n) are
 * column-stochastic, as in the paper.
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "attncheck/linalg.h"
#include "attncheck/multihead.h"
#include "attncheck/rng.h"
#include "core/ball.h"
#include "attention/softmax.h"
#include "attention/multihead_arb.h"

/* malloc size of m doubles, at least one */
static size_t nz(size_t m)
{
    return (m ? m : 1) * sizeof(double);
}

/* Zeroed memory for n doubles.  Large blocks are 2 MiB aligned and marked for
 * transparent huge pages (as NumPy does for its arrays): the weights are
 * re-read by every BLAS call (packing), and 4 KiB pages cost TLB misses. */
static double *alloc_params(size_t n)
{
    size_t bytes = n * sizeof(double);
#if defined(MADV_HUGEPAGE)
    const size_t huge = (size_t)1 << 21;
    if (bytes >= huge) {
        void *p = NULL;
        size_t rounded = (bytes + huge - 1) & ~(huge - 1);
        if (posix_memalign(&p, huge, rounded) == 0) {
            madvise(p, rounded, MADV_HUGEPAGE); /* advice only: failure is harmless */
            memset(p, 0, bytes);
            return p;
        }
    }
#endif
    return calloc(n ? n : 1, sizeof(double));
}

/* ---- the object ----------------------------------------------------------- */

int ac_mh_init(ac_mh *L, size_t d, size_t h, size_t hs, ac_err *err)
{
    size_t hh, blk, total;
    memset(L, 0, sizeof *L);
    if (d == 0 || h == 0 || hs == 0)
        return ac_err_set(err, AC_EUSAGE, "attention layer with d = %zu, h = %zu, head size %zu: "
                          "every size must be at least 1", d, h, hs);
    if (!ac_size_mul(h, hs, &hh) || !ac_size_mul(hh, d, &blk) || !ac_size_mul(blk, 4, &total) ||
        total > SIZE_MAX / sizeof(double))
        return ac_err_set(err, AC_EUSAGE, "attention layer d = %zu, h = %zu, head size %zu is too "
                          "large", d, h, hs);
    L->params = alloc_params(total);
    if (!L->params)
        return ac_err_set(err, AC_EINTERNAL, "out of memory (%zu parameters)", total);
    L->d = d;
    L->h = h;
    L->hs = hs;
    L->wq = L->params;
    L->wk = L->wq + blk;
    L->wv = L->wk + blk;
    L->wo = L->wv + blk;
    return AC_OK;
}

void ac_mh_free(ac_mh *L)
{
    if (!L)
        return;
    free(L->params);
    memset(L, 0, sizeof *L);
}

size_t ac_mh_nparams(const ac_mh *L)
{
    return 4 * L->h * L->hs * L->d;
}

int ac_mh_copy(ac_mh *dst, const ac_mh *src, ac_err *err)
{
    int st = ac_mh_init(dst, src->d, src->h, src->hs, err);
    if (st)
        return st;
    memcpy(dst->params, src->params, ac_mh_nparams(src) * sizeof(double));
    return AC_OK;
}

int ac_mh_random(ac_mh *L, size_t d, size_t h, size_t hs, uint64_t seed, uint64_t stream,
                 ac_err *err)
{
    int st = ac_mh_init(L, d, h, hs, err);
    if (st)
        return st;
    size_t blk = h * hs * d;
    double *t[4] = {L->wq, L->wk, L->wv, L->wo};
    double sc[4] = {1.0 / sqrt((double)d), 1.0 / sqrt((double)d), 1.0 / sqrt((double)d),
                    1.0 / sqrt((double)(h * hs))};
    for (int k = 0; k < 4; k++) {
        ac_rng r;
        ac_rng_init(&r, seed, stream, (uint64_t)k);
        ac_rng_normal_fill(&r, t[k], blk);
        for (size_t i = 0; i < blk; i++)
            t[k][i] *= sc[k];
    }
    return AC_OK;
}

/* ---- workspace ------------------------------------------------------------ */

/* Threads a workspace has softmax scratch for (fixed at ac_mh_work_init). */
static int max_threads(void)
{
#ifdef _OPENMP
    int t = omp_get_max_threads();
    return t > 1 ? t : 1;
#else
    return 1;
#endif
}

int ac_mh_work_init(ac_mh_work *w, const ac_mh *L, size_t n, ac_err *err)
{
    size_t hh = L->h * L->hs, a, b, c, e, f;
    int T = max_threads();
    memset(w, 0, sizeof *w);
    /* qkv 3hh n, p h n^2, hb hh n, tmp: the backward pass's dH hh n +
     * dQKV 3hh n + dP, dZ 2 n^2, then the softmax scratch 2n per thread */
    if (!ac_size_mul(3 * hh, n, &a) || !ac_size_mul(L->h * n, n, &b) ||
        !ac_size_mul(4 * hh, n, &c) || !ac_size_mul(2 * n, n, &e) || c + e < c ||
        !ac_size_mul(2 * n, (size_t)T, &f) || c + e + f < c + e)
        return ac_err_set(err, AC_EUSAGE, "attention workspace for n = %zu is too large", n);
    w->qkv = malloc(nz(a));
    w->p = malloc(nz(b));
    w->hb = malloc(nz(hh * n));
    w->tmp = malloc(nz(c + e + f));
    w->scratch_threads = T;
    if (!w->qkv || !w->p || !w->hb || !w->tmp) {
        ac_mh_work_free(w);
        return ac_err_set(err, AC_EINTERNAL, "out of memory (attention workspace, n = %zu)", n);
    }
    w->d = L->d;
    w->h = L->h;
    w->hs = L->hs;
    w->n = n;
    return AC_OK;
}

void ac_mh_work_free(ac_mh_work *w)
{
    if (!w)
        return;
    free(w->qkv);
    free(w->p);
    free(w->hb);
    free(w->tmp);
    memset(w, 0, sizeof *w);
}

static int work_matches(const ac_mh_work *w, const ac_mh *L, size_t n)
{
    return w->d == L->d && w->h == L->h && w->hs == L->hs && w->n == n && w->qkv;
}

/* ---- the forward pass: a fixed decomposition into BLAS calls --------------
 *
 * Stacked layout (as the parameters): QKV = [Wq; Wk; Wv] X is 3hh x n, head
 * i's Q_i, K_i, V_i the hs-row blocks at rows i hs, hh + i hs, 2hh + i hs;
 * H = [V_1 P_1; ...; V_h P_h] is hh x n; y = Wo_cat H.
 *
 *   1. QKV = W_stack X          dgemm by blocks of rows of W_stack (and chunks
 *                               of the d columns when d n is large)
 *   2. for each head i:         Z_i = K_i^T Q_i / sqrt(hs) (dgemm, n x n),
 *                               P_i = Softmax(Z_i) over columns (in place),
 *                               H_i = V_i P_i (dgemm)
 *   3. y = Wo_cat H             dgemm by blocks of rows of y (and chunks of
 *                               the hh columns of Wo_cat)
 *
 * The blocks depend only on the sizes, never on the number of threads: each
 * is a fixed sequence of single-threaded BLAS calls, and the threads share
 * out whole blocks and heads, so y is the same to the last bit with 1 or 8
 * threads.
 * The weights are read in place (no per-call copy); nothing is allocated.
 */
/* Blocks of a product C = A B, A rows x k (row-major, read in place), B
 * k x n.  OpenBLAS (0.3.21, AVX-512 kernels) multiplies products with
 * M N K <= 10^6 by its small-matrix kernels, without packing the operands:
 * about 55 Gflop/s per core against 45 for the packed path, measured on the
 * 2-core AMD EPYC (Zen 4) of the development machine for the shapes of the
 * benchmark.  So C is cut into blocks of rb rows and the sum over k into
 * chunks of kc, sized to fit that: kc = k unless a block of 16 rows would
 * not fit, then the largest multiple of 64 that leaves room for 32 rows.  At
 * most rows/8 per block, so that there are blocks to share out; rb a
 * multiple of 8.  A function of the sizes only. */
typedef struct {
    size_t rb, kc;
} blocking;

static blocking block_sizes(size_t rows, size_t k, size_t n)
{
    blocking b;
    double nn = (double)(n ? n : 1);
    b.kc = k ? k : 1;
    if (16.0 * (double)b.kc * nn > 1e6) {
        size_t c = (size_t)(1e6 / (32.0 * nn)) & ~(size_t)63;
        b.kc = c < 64 ? 64 : c;
        if (b.kc > k)
            b.kc = k ? k : 1;
    }
    double fit = 1e6 / ((double)b.kc * nn);
    b.rb = fit >= 8 ? (size_t)fit : 64;
    size_t share = (rows + 7) / 8;
    if (b.rb > share)
        b.rb = share;
    b.rb &= ~(size_t)7;
    if (b.rb < 8)
        b.rb = 8;
    return b;
}

/* Row block r of C = A B (sizes as above): one dgemm per chunk of k, summed
 * in order (beta = 1 after the first). */
static void gemm_rowblock(blocking bs, size_t r, size_t rows, size_t k, size_t n,
                          const double *A, const double *B, double *C)
{
    size_t r0 = r * bs.rb, m = rows - r0 < bs.rb ? rows - r0 : bs.rb;
    if (k == 0) {
        memset(C + r0 * n, 0, m * n * sizeof(double));
        return;
    }
    for (size_t k0 = 0; k0 < k; k0 += bs.kc) {
        size_t kk = k - k0 < bs.kc ? k - k0 : bs.kc;
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, m, n, kk, 1.0, A + r0 * k + k0, k, B + k0 * n, n,
                 k0 ? 1.0 : 0.0, C + r0 * n, n);
    }
}

static void head_block(const ac_mh *L, size_t n, ac_mh_work *w, size_t i, double *scratch)
{
    size_t hs = L->hs, hh = L->h * hs;
    const double *Q = w->qkv + i * hs * n, *K = w->qkv + (hh + i * hs) * n,
                 *V = w->qkv + (2 * hh + i * hs) * n;
    double *P = w->p + i * n * n;
    ac_dgemm(AC_TRANS, AC_NOTRANS, n, n, hs, 1.0 / sqrt((double)hs), K, n, Q, n, 0.0, P, n);
    ac_softmax_cols(P, n, n, scratch, scratch + n);
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, hs, n, n, 1.0, V, n, P, n, 0.0, w->hb + i * hs * n, n);
}

/* Threads for a forward pass: the OpenMP threads allowed, bounded by
 * w->threads or else by the BLAS threads (OPENBLAS_NUM_THREADS, --threads,
 * ac_blas_set_threads), and 1 below ~2 Mflop, where starting the threads
 * costs more than it saves. */
static int forward_threads(const ac_mh *L, size_t n, const ac_mh_work *w)
{
#ifdef _OPENMP
    double flops = 2.0 * (double)n * (double)(L->h * L->hs) * (4.0 * (double)L->d + 2.0 * (double)n);
    if (flops < 2e6)
        return 1;
    int t = omp_get_max_threads(), b = w->threads > 0 ? w->threads : ac_blas_get_threads();
    t = b < t ? b : t;
    t = w->scratch_threads < t ? w->scratch_threads : t;
    return t > 1 ? t : 1;
#else
    (void)L;
    (void)n;
    (void)w;
    return 1;
#endif
}

/* The softmax scratch of w: 2n doubles per thread, after the backward area. */
static double *work_scratch(const ac_mh_work *w)
{
    size_t hh = w->h * w->hs, n = w->n;
    return w->tmp + 4 * hh * n + 2 * n * n;
}

/* Steps 1 and 2 (and 3 when Y != NULL) into w, with nt <= w->scratch_threads. */
static void forward_core(const ac_mh *L, const ac_mat *X, ac_mh_work *w, ac_mat *Y, int nt)
{
    double *scratch = work_scratch(w);
    size_t d = L->d, n = X->cols, hh = L->h * L->hs;
    /* wq, wk, wv are consecutive in params: one (3hh x d) matrix */
    blocking bp = block_sizes(3 * hh, d, n), bo = block_sizes(d, hh, n);
    size_t nbp = (3 * hh + bp.rb - 1) / bp.rb, nbo = Y ? (d + bo.rb - 1) / bo.rb : 0;
#ifdef _OPENMP
    if (nt > 1) {
        int old = ac_blas_get_threads();
        ac_blas_set_threads(1); /* every block is single-threaded BLAS calls */
#pragma omp parallel num_threads(nt)
        {
            double *s = scratch + 2 * n * (size_t)omp_get_thread_num();
#pragma omp for schedule(static)
            for (size_t b = 0; b < nbp; b++)
                gemm_rowblock(bp, b, 3 * hh, d, n, L->wq, X->data, w->qkv);
#pragma omp for schedule(static)
            for (size_t i = 0; i < L->h; i++)
                head_block(L, n, w, i, s);
#pragma omp for schedule(static)
            for (size_t b = 0; b < nbo; b++)
                gemm_rowblock(bo, b, d, hh, n, L->wo, w->hb, Y->data);
        }
        ac_blas_set_threads(old);
        return;
    }
#endif
    for (size_t b = 0; b < nbp; b++)
        gemm_rowblock(bp, b, 3 * hh, d, n, L->wq, X->data, w->qkv);
    for (size_t i = 0; i < L->h; i++)
        head_block(L, n, w, i, scratch);
    for (size_t b = 0; b < nbo; b++)
        gemm_rowblock(bo, b, d, hh, n, L->wo, w->hb, Y->data);
}

static int check_x(const ac_mh *L, const ac_mat *X, ac_err *err)
{
    if (!L->params)
        return ac_err_set(err, AC_EUSAGE, "attention layer is empty");
    if (X->rows != L->d)
        return ac_err_set(err, AC_EUSAGE, "X has %zu rows; the layer has d = %zu", X->rows, L->d);
    return AC_OK;
}

int ac_mh_forward(ac_mat *Y, const ac_mh *L, const ac_mat *X, ac_mh_work *w, ac_err *err)
{
    size_t n = X->cols;
    ac_mh_work local;
    int st;
    if ((st = check_x(L, X, err)))
        return st;
    if (Y->rows != L->d || Y->cols != n)
        return ac_err_set(err, AC_EUSAGE, "output is %zu x %zu, expected %zu x %zu", Y->rows,
                          Y->cols, L->d, n);
    if (n == 0)
        return AC_OK;
    if (!w) {
        if ((st = ac_mh_work_init(&local, L, n, err)))
            return st;
        w = &local;
    } else if (!work_matches(w, L, n)) {
        return ac_err_set(err, AC_EUSAGE, "attention workspace was made for another shape");
    }
    forward_core(L, X, w, Y, forward_threads(L, n, w));
    if (w == &local)
        ac_mh_work_free(&local);
    return AC_OK;
}

int ac_mh_forward_ref(ac_mat *Y, const ac_mh *L, const ac_mat *X, ac_err *err)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs, n = X->cols;
    int st;
    if ((st = check_x(L, X, err)))
        return st;
    if (Y->rows != d || Y->cols != n)
        return ac_err_set(err, AC_EUSAGE, "output is %zu x %zu, expected %zu x %zu", Y->rows,
                          Y->cols, d, n);
    double *q = malloc(nz(hs * n));
    double *k = malloc(nz(hs * n));
    double *v = malloc(nz(hs * n));
    double *p = malloc(nz(n * n));
    double *hd = malloc(nz(hs * n));
    if (!q || !k || !v || !p || !hd) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    memset(Y->data, 0, d * n * sizeof(double));
    for (size_t i = 0; i < L->h; i++) {
        for (size_t r = 0; r < hs; r++)
            for (size_t j = 0; j < n; j++) {
                double aq = 0, ak = 0, av = 0;
                for (size_t c = 0; c < d; c++) {
                    double x = AC_MAT(X, c, j);
                    aq += L->wq[(i * hs + r) * d + c] * x;
                    ak += L->wk[(i * hs + r) * d + c] * x;
                    av += L->wv[(i * hs + r) * d + c] * x;
                }
                q[r * n + j] = aq;
                k[r * n + j] = ak;
                v[r * n + j] = av;
            }
        /* P = Softmax(K^T Q / sqrt(hs)), column by column */
        for (size_t j = 0; j < n; j++) {
            double mx = -INFINITY, s = 0;
            for (size_t a = 0; a < n; a++) {
                double z = 0;
                for (size_t r = 0; r < hs; r++)
                    z += k[r * n + a] * q[r * n + j];
                z /= sqrt((double)hs);
                p[a * n + j] = z;
                if (z > mx)
                    mx = z;
            }
            for (size_t a = 0; a < n; a++) {
                p[a * n + j] = exp(p[a * n + j] - mx);
                s += p[a * n + j];
            }
            for (size_t a = 0; a < n; a++)
                p[a * n + j] /= s;
        }
        /* H = V P; Y += Wo_i H */
        for (size_t r = 0; r < hs; r++)
            for (size_t j = 0; j < n; j++) {
                double a = 0;
                for (size_t t = 0; t < n; t++)
                    a += v[r * n + t] * p[t * n + j];
                hd[r * n + j] = a;
            }
        for (size_t r = 0; r < d; r++)
            for (size_t j = 0; j < n; j++) {
                double a = 0;
                for (size_t c = 0; c < hs; c++)
                    a += L->wo[r * hh + i * hs + c] * hd[c * n + j];
                AC_MAT(Y, r, j) += a;
            }
    }
out:
    free(q);
    free(k);
    free(v);
    free(p);
    free(hd);
    return st;
}

int ac_mh_backward(ac_mat *dX, const ac_mh *L, const ac_mat *X, const ac_mat *dY,
                   ac_mh_work *w, ac_err *err)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs, n = X->cols;
    ac_mh_work local;
    int st;
    if ((st = check_x(L, X, err)))
        return st;
    if (dY->rows != d || dY->cols != n || dX->rows != d || dX->cols != n)
        return ac_err_set(err, AC_EUSAGE, "backward: dY and dX must be %zu x %zu", d, n);
    if (n == 0)
        return AC_OK;
    if (!w) {
        if ((st = ac_mh_work_init(&local, L, n, err)))
            return st;
        w = &local;
    } else if (!work_matches(w, L, n)) {
        return ac_err_set(err, AC_EUSAGE, "attention workspace was made for another shape");
    }
    forward_core(L, X, w, NULL, forward_threads(L, n, w));
    double s = 1.0 / sqrt((double)hs);
    double *dH = w->tmp, *dqkv = dH + hh * n, *dP = dqkv + 3 * hh * n, *dZ = dP + n * n;
    double *dot = work_scratch(w);
    /* y = Wo_cat H:  dH = Wo_cat^T dY (hh x n) */
    ac_dgemm(AC_TRANS, AC_NOTRANS, hh, n, d, 1.0, L->wo, hh, dY->data, n, 0.0, dH, n);
    for (size_t i = 0; i < L->h; i++) {
        const double *Q = w->qkv + i * hs * n, *K = w->qkv + (hh + i * hs) * n,
                     *V = w->qkv + (2 * hh + i * hs) * n, *P = w->p + i * n * n,
                     *dHi = dH + i * hs * n;
        /* H_i = V_i P_i:  dV_i = dH_i P_i^T,  dP_i = V_i^T dH_i */
        ac_dgemm(AC_NOTRANS, AC_TRANS, hs, n, n, 1.0, dHi, n, P, n, 0.0,
                 dqkv + (2 * hh + i * hs) * n, n);
        ac_dgemm(AC_TRANS, AC_NOTRANS, n, n, hs, 1.0, V, n, dHi, n, 0.0, dP, n);
        /* softmax over each column j:  dZ_aj = P_aj (dP_aj - sum_b P_bj dP_bj) */
        for (size_t j = 0; j < n; j++)
            dot[j] = 0.0;
        for (size_t a = 0; a < n; a++)
            for (size_t j = 0; j < n; j++)
                dot[j] += P[a * n + j] * dP[a * n + j];
        for (size_t a = 0; a < n; a++)
            for (size_t j = 0; j < n; j++)
                dZ[a * n + j] = P[a * n + j] * (dP[a * n + j] - dot[j]);
        /* Z_i = s K_i^T Q_i:  dQ_i = s K_i dZ,  dK_i = s Q_i dZ^T */
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, hs, n, n, s, K, n, dZ, n, 0.0, dqkv + i * hs * n, n);
        ac_dgemm(AC_NOTRANS, AC_TRANS, hs, n, n, s, Q, n, dZ, n, 0.0, dqkv + (hh + i * hs) * n, n);
    }
    /* QKV = W_stack X:  dX = W_stack^T dQKV */
    ac_dgemm(AC_TRANS, AC_NOTRANS, d, n, 3 * hh, 1.0, L->wq, d, dqkv, n, 0.0, dX->data, n);
    if (w == &local)
        ac_mh_work_free(&local);
    return AC_OK;
}

/* ---- certified (stage 0) -------------------------------------------------- */

int ac_mh_enclose(ac_imat *Y, const ac_mh *L, const ac_mat *X, ac_err *err)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs, n = X->cols;
    ac_imat QKV = {0}, Z = {0}, P = {0}, H = {0};
    double *plo = NULL, *phi = NULL, *llo = NULL, *lhi = NULL;
    int st;
    memset(Y, 0, sizeof *Y);
    if ((st = check_x(L, X, err)))
        return st;
    if ((st = ac_imat_init(Y, d, n, 1, err)))
        return st;
    if (n == 0)
        return AC_OK;
    if ((st = ac_imat_init(&QKV, 3 * hh, n, 1, err)) || (st = ac_imat_init(&Z, n, n, 1, err)) ||
        (st = ac_imat_init(&P, n, n, 1, err)) || (st = ac_imat_init(&H, hh, n, 1, err)))
        goto out;
    plo = malloc(n * n * sizeof(double));
    phi = malloc(n * n * sizeof(double));
    llo = malloc(n * n * sizeof(double));
    lhi = malloc(n * n * sizeof(double));
    if (!plo || !phi || !llo || !lhi) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    {
        ac_imat W3 = {3 * hh, d, L->wq, NULL}, Xi = ac_imat_view(X);
        if ((st = ac_imat_mul(&QKV, AC_NOTRANS, &W3, AC_NOTRANS, &Xi, err)))
            goto out;
    }
    /* 1/sqrt(hs) in [s_lo, s_hi] (sqrt and / are correctly rounded) */
    double s_lo = ac_div_dn(1.0, ac_sqrt_up((double)hs));
    double s_hi = ac_div_up(1.0, ac_sqrt_dn((double)hs));
    for (size_t i = 0; i < L->h; i++) {
        size_t oq = i * hs * n, ok = (hh + i * hs) * n, ov = (2 * hh + i * hs) * n;
        ac_imat Qi = {hs, n, QKV.mid + oq, QKV.rad + oq};
        ac_imat Ki = {hs, n, QKV.mid + ok, QKV.rad + ok};
        ac_imat Vi = {hs, n, QKV.mid + ov, QKV.rad + ov};
        ac_imat Hi = {hs, n, H.mid + i * hs * n, H.rad + i * hs * n};
        /* Z = K^T Q, then the logits Z/sqrt(hs) */
        if ((st = ac_imat_mul(&Z, AC_TRANS, &Ki, AC_NOTRANS, &Qi, err)))
            goto out;
        for (size_t t = 0; t < n * n; t++) {
            double a = ac_imat_lo(&Z, t), b = ac_imat_hi(&Z, t);
            llo[t] = a >= 0 ? ac_mul_dn(a, s_lo) : ac_mul_dn(a, s_hi);
            lhi[t] = b >= 0 ? ac_mul_up(b, s_hi) : ac_mul_up(b, s_lo);
        }
        if (!ac_softmax_col_enclose(llo, lhi, n, n, plo, phi)) {
            for (size_t t = 0; t < n * n; t++) {
                plo[t] = 0.0;
                phi[t] = 1.0;
            }
        }
        for (size_t t = 0; t < n * n; t++) {
            double m = 0.5 * (plo[t] + phi[t]); /* exact or rounded: the radius covers it */
            P.mid[t] = m;
            P.rad[t] = fmax(ac_sub_up(phi[t], m), ac_sub_up(m, plo[t]));
        }
        if ((st = ac_imat_mul(&Hi, AC_NOTRANS, &Vi, AC_NOTRANS, &P, err)))
            goto out;
    }
    {
        ac_imat Wo = {d, hh, L->wo, NULL};
        st = ac_imat_mul(Y, AC_NOTRANS, &Wo, AC_NOTRANS, &H, err);
    }
out:
    ac_imat_free(&QKV);
    ac_imat_free(&Z);
    ac_imat_free(&P);
    ac_imat_free(&H);
    free(plo);
    free(phi);
    free(llo);
    free(lhi);
    if (st)
        ac_imat_free(Y);
    return st;
}

/* ---- files ---------------------------------------------------------------- */

const char *ac_mh_file_name(char *buf, size_t n, char prefix, ac_mh_param which)
{
    static const char letter[4] = {'q', 'k', 'v', 'o'};
    snprintf(buf, n, "%c%c.npy", prefix, letter[which & 3]);
    return buf;
}

int ac_mh_get_array(const ac_mh *L, ac_mh_param which, ac_array *out, ac_err *err)
{
    size_t d = L->d, h = L->h, hs = L->hs, hh = h * hs;
    size_t shape[3] = {h, hs, d};
    if (which == AC_MH_O) {
        shape[1] = d;
        shape[2] = hs;
    }
    int st = ac_array_init(out, 3, shape, err);
    if (st)
        return st;
    if (which == AC_MH_O) {
        for (size_t i = 0; i < h; i++)
            for (size_t r = 0; r < d; r++)
                for (size_t c = 0; c < hs; c++)
                    out->data[(i * d + r) * hs + c] = L->wo[r * hh + i * hs + c];
    } else {
        const double *src = which == AC_MH_Q ? L->wq : which == AC_MH_K ? L->wk : L->wv;
        memcpy(out->data, src, hh * d * sizeof(double));
    }
    return AC_OK;
}

static void fmt_shape(char *buf, size_t n, const ac_array *a)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "(");
    for (size_t i = 0; i < a->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%zu", i ? ", " : "", a->shape[i]);
    if (k < n)
        snprintf(buf + k, n - k, a->ndim == 1 ? ",)" : ")");
}

int ac_mh_from_arrays(ac_mh *L, const ac_array *q, const ac_array *k, const ac_array *v,
                      const ac_array *o, const char *const names[4], ac_err *err)
{
    const ac_array *a[4] = {q, k, v, o};
    char sb[96], sq[96];
    int st;
    memset(L, 0, sizeof *L);
    for (int t = 0; t < 4; t++)
        if (a[t]->ndim != 3) {
            fmt_shape(sb, sizeof sb, a[t]);
            return ac_err_set(err, AC_EDATA, "%s: expected a 3-D array %s (a stack over the "
                              "heads), got shape %s", names[t],
                              t == 3 ? "(h, d, hs)" : "(h, hs, d)", sb);
        }
    size_t h = q->shape[0], hs = q->shape[1], d = q->shape[2];
    fmt_shape(sq, sizeof sq, q);
    if (h == 0 || hs == 0 || d == 0)
        return ac_err_set(err, AC_EDATA, "%s: shape %s has a zero dimension (h, hs and d must "
                          "be at least 1)", names[0], sq);
    for (int t = 1; t < 3; t++)
        if (a[t]->shape[0] != h || a[t]->shape[1] != hs || a[t]->shape[2] != d) {
            fmt_shape(sb, sizeof sb, a[t]);
            return ac_err_set(err, AC_EDATA, "%s: shape %s does not match %s, which has shape %s",
                              names[t], sb, names[0], sq);
        }
    if (o->shape[0] != h || o->shape[1] != d || o->shape[2] != hs) {
        fmt_shape(sb, sizeof sb, o);
        return ac_err_set(err, AC_EDATA, "%s: shape %s, expected (h, d, hs) = (%zu, %zu, %zu) "
                          "to match %s %s", names[3], sb, h, d, hs, names[0], sq);
    }
    for (int t = 0; t < 4; t++)
        if ((st = ac_array_check_finite(names[t], a[t]->data, 3, a[t]->shape, err)))
            return st;
    if ((st = ac_mh_init(L, d, h, hs, err)))
        return st;
    size_t blk = h * hs * d, hh = h * hs;
    memcpy(L->wq, q->data, blk * sizeof(double));
    memcpy(L->wk, k->data, blk * sizeof(double));
    memcpy(L->wv, v->data, blk * sizeof(double));
    for (size_t i = 0; i < h; i++)
        for (size_t r = 0; r < d; r++)
            for (size_t c = 0; c < hs; c++)
                L->wo[r * hh + i * hs + c] = o->data[(i * d + r) * hs + c];
    return AC_OK;
}

int ac_mh_load_dir(ac_mh *L, const char *dir, char prefix, ac_err *err)
{
    ac_array a[4];
    char *names[4] = {NULL, NULL, NULL, NULL};
    int st = AC_OK;
    memset(a, 0, sizeof a);
    memset(L, 0, sizeof *L);
    for (int t = 0; t < 4; t++) {
        char fn[16];
        size_t len = strlen(dir) + 20;
        names[t] = malloc(len);
        if (!names[t]) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            goto out;
        }
        snprintf(names[t], len, "%s/%s", dir, ac_mh_file_name(fn, sizeof fn, prefix, (ac_mh_param)t));
        if ((st = ac_npy_read(names[t], &a[t], err)))
            goto out;
    }
    st = ac_mh_from_arrays(L, &a[0], &a[1], &a[2], &a[3], (const char *const *)names, err);
out:
    for (int t = 0; t < 4; t++) {
        ac_array_free(&a[t]);
        free(names[t]);
    }
    return st;
}

/* ---- certified (ball arithmetic) ------------------------------------------ */


/* Q, K, V of head i (hs x n each) in balls. */
static void head_qkv_arb(arb_mat_t Q, arb_mat_t K, arb_mat_t V, const ac_mh *L, size_t i,
                         const arb_mat_t X, slong prec)
{
    size_t d = L->d, hs = L->hs;
    arb_mat_t W;
    arb_mat_init(W, (slong)hs, (slong)d);
    ac_arb_mat_set_d(W, L->wq + i * hs * d, hs, d);
    arb_mat_mul(Q, W, X, prec);
    ac_arb_mat_set_d(W, L->wk + i * hs * d, hs, d);
    arb_mat_mul(K, W, X, prec);
    ac_arb_mat_set_d(W, L->wv + i * hs * d, hs, d);
    arb_mat_mul(V, W, X, prec);
    arb_mat_clear(W);
}

static void head_softmax_from_qk(arb_mat_t P, const arb_mat_t Q, const arb_mat_t K, size_t hs,
                                 slong prec)
{
    slong n = arb_mat_ncols(Q);
    arb_mat_t KT, Z;
    arb_t rs;
    arb_mat_init(KT, n, (slong)hs);
    arb_mat_init(Z, n, n);
    arb_init(rs);
    arb_mat_transpose(KT, K);
    arb_mat_mul(Z, KT, Q, prec);
    arb_rsqrt_ui(rs, (ulong)hs, prec);
    arb_mat_scalar_mul_arb(Z, Z, rs, prec);
    ac_arb_softmax_cols(P, Z, prec);
    arb_mat_clear(KT);
    arb_mat_clear(Z);
    arb_clear(rs);
}

void ac_mh_head_softmax_arb(arb_mat_t P, const ac_mh *L, size_t i, const arb_mat_t X, slong prec)
{
    slong hs = (slong)L->hs, n = arb_mat_ncols(X);
    arb_mat_t Q, K, V;
    arb_mat_init(Q, hs, n);
    arb_mat_init(K, hs, n);
    arb_mat_init(V, hs, n);
    head_qkv_arb(Q, K, V, L, i, X, prec);
    head_softmax_from_qk(P, Q, K, L->hs, prec);
    arb_mat_clear(Q);
    arb_mat_clear(K);
    arb_mat_clear(V);
}

void ac_mh_forward_arb(arb_mat_t Y, const ac_mh *L, const arb_mat_t X, slong prec)
{
    slong d = (slong)L->d, hs = (slong)L->hs, hh = (slong)(L->h * L->hs), n = arb_mat_ncols(X);
    arb_mat_t Q, K, V, P, Hi, H, Wo;
    arb_mat_init(Q, hs, n);
    arb_mat_init(K, hs, n);
    arb_mat_init(V, hs, n);
    arb_mat_init(P, n, n);
    arb_mat_init(Hi, hs, n);
    arb_mat_init(H, hh, n);
    arb_mat_init(Wo, d, hh);
    for (size_t i = 0; i < L->h; i++) {
        head_qkv_arb(Q, K, V, L, i, X, prec);
        head_softmax_from_qk(P, Q, K, L->hs, prec);
        arb_mat_mul(Hi, V, P, prec);
        for (slong r = 0; r < hs; r++)
            for (slong j = 0; j < n; j++)
                arb_swap(arb_mat_entry(H, (slong)i * hs + r, j), arb_mat_entry(Hi, r, j));
    }
    ac_arb_mat_set_d(Wo, L->wo, (size_t)d, (size_t)hh);
    arb_mat_mul(Y, Wo, H, prec);
    arb_mat_clear(Q);
    arb_mat_clear(K);
    arb_mat_clear(V);
    arb_mat_clear(P);
    arb_mat_clear(Hi);
    arb_mat_clear(H);
    arb_mat_clear(Wo);
}
