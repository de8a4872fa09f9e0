/* mh_forward.c — the forward pass of a multi-head attention layer in double
 * (attncheck/multihead.h, paper 1, eq. (8)): the workspace, the small-layer
 * path (the register-tiled products of mh_gemm.c, head by head in cache), a
 * fixed blocking into BLAS calls for the others, both shared out over
 * threads, and the naive reference kernel the tests compare them against.
 *
 * Dimension letters: d model width, n tokens, h heads, hs head size,
 * hh = h hs.  Buffers are row-major.
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "attncheck/linalg.h"
#include "attncheck/multihead.h"
#include "attention/head_impl.h"
#include "attention/mh_gemm.h"
#include "attention/mh_softmax.h"
#include "attention/softmax.h"
#include "attention/mh_impl.h"

/* malloc size of m doubles, at least one */
static size_t nz(size_t m)
{
    return (m ? m : 1) * sizeof(double);
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

int ac_mh_work_prepare(ac_mh_work **w, ac_mh_work *local, const ac_mh *L, size_t n,
                       ac_err *err)
{
    int st;
    if (!*w) {
        if ((st = ac_mh_work_init(local, L, n, err)))
            return st;
        *w = local;
    } else if (!work_matches(*w, L, n)) {
        return ac_err_set(err, AC_EUSAGE, "attention workspace was made for another shape");
    }
    return AC_OK;
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
    ac_head_softmax_kq(P, K, Q, n, hs, scratch); /* P_i = Softmax(K_i^T Q_i / sqrt(hs)) */
    ac_dgemm(AC_NOTRANS, AC_NOTRANS, hs, n, n, 1.0, V, n, P, n, 0.0, w->hb + i * hs * n, n);
}

/* Threads for a forward pass: the OpenMP threads allowed, bounded by
 * w->threads or else by the BLAS threads (OPENBLAS_NUM_THREADS, --threads,
 * ac_blas_set_threads), and 1 below ~2 Mflop, where starting the threads
 * costs more than it saves. */
int ac_mh_forward_threads(const ac_mh *L, size_t n, const ac_mh_work *w)
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

double *ac_mh_work_scratch(const ac_mh_work *w)
{
    size_t hh = w->h * w->hs, n = w->n;
    return w->tmp + 4 * hh * n + 2 * n * n;
}

/* Steps 1 and 2 (and 3 when Y != NULL) by BLAS calls. */
static void blas_forward(const ac_mh *L, const ac_mat *X, ac_mh_work *w, ac_mat *Y, int nt)
{
    double *scratch = ac_mh_work_scratch(w);
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

/* ---- the small path: the register-tiled kernel of mh_gemm.h -------------
 *
 * The same three steps with ac_mh_gemm instead of BLAS, when it is
 * vectorised (AC_MH_GEMM_SIMD) and the products are small: every right-hand
 * factor (X d x n, the head's Q_i or P_i, H hh x n) at most 64 K doubles, so
 * that it stays in the L2 cache while the weights stream past it, and n <= 128
 * (an n x n softmax matrix in L1/L2).  There the packing and the call
 * overhead of dgemm cost more than the products: measured with perf on the
 * layers of bench_t2 (n = 16 and 64, head sizes 8 to 64; OpenBLAS 0.3.21,
 * Haswell kernels), a quarter of the samples were OpenBLAS copying
 * operands, and the kernel of mh_gemm.c ran these products 1.2 to 1.8 times
 * faster than dgemm.  Head i is fused in cache: its logits, their column
 * softmax (in place, in w->p) and H_i = V_i P_i, one head after the other.
 * ac_mh_gemm computes every entry in one fixed order whatever the blocking,
 * so the row blocks can be shared out freely: y is the same to the last bit
 * for any number of threads. */
static int small_path(const ac_mh *L, size_t n)
{
    size_t hh = L->h * L->hs;
    return AC_MH_GEMM_SIMD && n <= 128 && L->d * n <= 65536 && hh * n <= 65536 &&
           L->hs * n <= 65536;
}

/* rows per block of a product with m rows: a multiple of 8, at least 64
 * (about 16 rows per block for the work to share, never below 8 rows) */
static size_t small_rows(size_t m)
{
    size_t rb = (m / 16 + 7) & ~(size_t)7;
    return rb < 64 ? 64 : rb;
}

/* Head i, in cache: its projections Q_i, K_i, V_i (three blocks of hs rows
 * of [Wq; Wk; Wv] X, into w->qkv), its logits, their column softmax (in
 * place, in w->p) and H_i = V_i P_i (into w->hb). */
static void small_head(const ac_mh *L, const ac_mat *X, ac_mh_work *w, size_t i)
{
    size_t d = L->d, n = X->cols, hs = L->hs, hh = L->h * hs;
    double *Q = w->qkv + i * hs * n, *K = w->qkv + (hh + i * hs) * n,
           *V = w->qkv + (2 * hh + i * hs) * n;
    double *P = w->p + i * n * n;
    ac_mh_gemm(hs, n, d, 1.0, L->wq + i * hs * d, d, 1, X->data, n, Q, n);
    ac_mh_gemm(hs, n, d, 1.0, L->wk + i * hs * d, d, 1, X->data, n, K, n);
    ac_mh_gemm(hs, n, d, 1.0, L->wv + i * hs * d, d, 1, X->data, n, V, n);
    /* Z_i = K_i^T Q_i / sqrt(hs): K_i read transposed in place */
    ac_mh_gemm(n, n, hs, 1.0 / sqrt((double)hs), K, 1, n, Q, n, P, n);
    ac_mh_softmax_cols(P, n, n); /* mh_softmax.h */
    ac_mh_gemm(hs, n, n, 1.0, V, n, 1, P, n, w->hb + i * hs * n, n);
}

/* The heads shared out over the threads (no barrier between a head's
 * projections and its attention), then one barrier and the rows of
 * y = Wo_cat H shared out. */
static void small_forward(const ac_mh *L, const ac_mat *X, ac_mh_work *w, ac_mat *Y, int nt)
{
    size_t d = L->d, n = X->cols, hh = L->h * L->hs;
    size_t ro = small_rows(d), nbo = Y ? (d + ro - 1) / ro : 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#else
    (void)nt;
#endif
    {
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (size_t i = 0; i < L->h; i++)
            small_head(L, X, w, i);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (size_t b = 0; b < nbo; b++) {
            size_t r0 = b * ro, mr = d - r0 < ro ? d - r0 : ro;
            ac_mh_gemm(mr, n, hh, 1.0, L->wo + r0 * hh, hh, 1, w->hb, n, Y->data + r0 * n, n);
        }
    }
}

/* Steps 1 and 2 (and 3 when Y != NULL) into w, with nt <= w->scratch_threads
 * (mh_impl.h). */
void ac_mh_forward_core(const ac_mh *L, const ac_mat *X, ac_mh_work *w, ac_mat *Y, int nt)
{
    if (small_path(L, X->cols)) {
        small_forward(L, X, w, Y, nt);
        return;
    }
    blas_forward(L, X, w, Y, nt);
}

int ac_mh_check_x(const ac_mh *L, const ac_mat *X, ac_err *err)
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
    if ((st = ac_mh_check_x(L, X, err)))
        return st;
    if (Y->rows != L->d || Y->cols != n)
        return ac_err_set(err, AC_EUSAGE, "output is %zu x %zu, expected %zu x %zu", Y->rows,
                          Y->cols, L->d, n);
    if (n == 0)
        return AC_OK;
    if ((st = ac_mh_work_prepare(&w, &local, L, n, err)))
        return st;
    ac_mh_forward_core(L, X, w, Y, ac_mh_forward_threads(L, n, w));
    if (w == &local)
        ac_mh_work_free(&local);
    return AC_OK;
}

int ac_mh_forward_ref(ac_mat *Y, const ac_mh *L, const ac_mat *X, ac_err *err)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs, n = X->cols;
    int st;
    if ((st = ac_mh_check_x(L, X, err)))
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

