/* multihead.c — the multi-head attention layer object (attncheck/multihead.h):
 * init, free, copy, parameter count and Gaussian initialisation.
 *
 * The layer (paper 1, eq. (8)) is computed elsewhere in this folder:
 *   mh_forward.c    the forward pass in double (blocking, threads) and the
 *                   naive reference kernel;
 *   mh_gemm.c       the register-tiled product of its small-layer path;
 *   mh_softmax.c    the column softmax of its small-layer path;
 *   mh_backward.c   the backward pass in double;
 *   mh_certified.c  the certified forward pass (stage 0 intervals, Arb balls);
 *   mh_files.c      the Wq/Wk/Wv/Wo .npy stacks;
 * one head of it is head.c (attncheck/head.h).
 *
 * Dimension letters: d model width, n tokens, h heads, hs head size,
 * hh = h hs.  Buffers are row-major.  Head i of a stacked (hh x n) buffer is
 * rows i hs .. i hs + hs - 1; the softmax matrices P_i (n x n) are
 * column-stochastic, as in the paper.
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "attncheck/multihead.h"
#include "attncheck/rng.h"

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
