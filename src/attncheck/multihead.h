/* attncheck/multihead.h — multi-head attention layers, in double and with
 * certified enclosures (Bhojanapalli et al. 2020, paper 1, eq. (8) and §3; doc/mathematics.md §4.1).
 *
 * Dimension letters: d model width, n tokens, h heads, hs head size.
 * One layer is
 *
 *     y(X) = sum_{i=1..h} Wo_i Wv_i X Softmax((Wk_i X)^T (Wq_i X) / sqrt(hs)),
 *
 * X d x n (one column per token, paper 1's layout), the softmax taken over
 * each column; Wq_i, Wk_i, Wv_i are hs x d and Wo_i is d x hs.  The standard
 * MultiHead layer f_W of the paper has hs = d/h; the FixedMultiHead layer g_V
 * has hs = dp, any size.  (The residual connection and LayerNorm of a
 * Transformer block are not part of f and g: Theorem 2 is about f and g.)
 *
 * Storage (llm.c style: one block carved into named tensors):
 *     wq, wk, wv   (h*hs) x d, row-major: rows i*hs .. i*hs+hs-1 are head i
 *                  (the same bytes as a C-order array of shape (h, hs, d));
 *     wo           d x (h*hs), row-major: Wo_cat = [Wo_1, ..., Wo_h], head i
 *                  in columns i*hs .. i*hs+hs-1.
 * On disk every parameter is a float64 .npy stack over the heads:
 *     Wq.npy, Wk.npy, Wv.npy of shape (h, hs, d) and Wo.npy of shape (h, d, hs)
 * (prefix V for the fixed-size layer: Vq.npy, ...), Wo_i = Wo[i].
 *
 * Certified evaluation: ac_mh_enclose gives an interval matrix containing
 * y(X) for the exact doubles of X and the parameters (stage 0: interval
 * matrix products with the gamma_k bound, an enclosure of 1/sqrt(hs),
 * rigorous exp in the column softmax); the ball-arithmetic version (Arb) is
 * internal (multihead_arb.h) and used by the verdict engine's later stages.
 */
#ifndef ATTNCHECK_MULTIHEAD_H
#define ATTNCHECK_MULTIHEAD_H

#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/interval.h"
#include "attncheck/npy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    size_t d, h, hs;
    double *params;          /* one block of 4 h hs d doubles: wq | wk | wv | wo */
    double *wq, *wk, *wv;    /* (h*hs) x d each, views into params */
    double *wo;              /* d x (h*hs), view into params */
} ac_mh;

typedef enum { AC_MH_Q = 0, AC_MH_K = 1, AC_MH_V = 2, AC_MH_O = 3 } ac_mh_param;

/* Allocate a layer with every parameter 0.  d, h, hs >= 1 (AC_EUSAGE
 * otherwise, or if the size overflows).  A zeroed ac_mh is empty and may be
 * passed to ac_mh_free. */
int ac_mh_init(ac_mh *L, size_t d, size_t h, size_t hs, ac_err *err);
void ac_mh_free(ac_mh *L);
/* Deep copy: dst zeroed or freed. */
int ac_mh_copy(ac_mh *dst, const ac_mh *src, ac_err *err);
/* Number of parameters, 4 h hs d. */
size_t ac_mh_nparams(const ac_mh *L);
/* Element (r, c) of Wo_i (d x hs). */
static inline double *ac_mh_wo_at(const ac_mh *L, size_t i, size_t r, size_t c)
{
    return L->wo + r * (L->h * L->hs) + i * L->hs + c;
}

/* Every parameter i.i.d. Gaussian from the Philox stream (seed, stream, k),
 * k = 0..3 for Q, K, V, O, scaled so that outputs and logits are O(1) for
 * X with O(1) entries: Wq, Wk, Wv by 1/sqrt(d), Wo by 1/sqrt(h hs). */
int ac_mh_random(ac_mh *L, size_t d, size_t h, size_t hs, uint64_t seed, uint64_t stream,
                 ac_err *err);

/* ---- double precision ---------------------------------------------------- */

/* Workspace for n tokens (reused across calls of the same shape; no
 * allocation happens in ac_mh_forward / ac_mh_backward when one is given). */
typedef struct {
    size_t d, h, hs, n;
    double *qkv;   /* 3 h hs x n: [Q; K; V] = [Wq; Wk; Wv] X, head i's Q_i at rows i hs .. */
    double *p;     /* h x n x n: the softmax matrices P_i (column-stochastic) */
    double *hb;    /* h hs x n: H = [V_1 P_1; ...; V_h P_h] */
    double *tmp;   /* scratch of the backward pass and of the softmax */
    int threads;   /* threads of ac_mh_forward / ac_mh_backward with this workspace; 0 (set
                      by ac_mh_work_init) = as many as the BLAS is allowed */
    int scratch_threads; /* at most this many (the OpenMP threads at ac_mh_work_init) */
} ac_mh_work;

int ac_mh_work_init(ac_mh_work *w, const ac_mh *L, size_t n, ac_err *err);
void ac_mh_work_free(ac_mh_work *w);

/* Y = y(X) in double (Y d x n allocated by the caller).  w may be NULL (a
 * workspace is allocated for the call) or a workspace for this layer and n;
 * after the call it holds Q, K, V, the softmax matrices and H (used by
 * ac_mh_backward).  AC_EUSAGE on a shape mismatch.
 *
 * Cost: about 2 n h hs (4 d + 2 n) flops.  Small layers (n <= 128, X, H and
 * each Q_i at most 64 K doubles; AVX-512 builds, --enable-native): one
 * register-tiled product kernel, no BLAS, each head's projections, logits,
 * softmax and V_i P_i in cache, then y = Wo_cat H.  Otherwise a fixed list
 * of BLAS calls: one dgemm per block of rows of [Wq; Wk; Wv] (the
 * projections of every head at once, weights read in place), two dgemm and
 * a column softmax per head, one dgemm per block of rows of Wo_cat.
 * Threads: up to the OpenMP threads allowed (and those at ac_mh_work_init),
 * bounded by w->threads or, when that is 0 (or w is NULL), by the BLAS
 * threads (ac_blas_get_threads; so OPENBLAS_NUM_THREADS=1 or --threads 1
 * means one thread), for problems above ~2 Mflop; the threads share out
 * whole heads and blocks of rows; on the BLAS path each block is a
 * single-threaded BLAS call (the BLAS thread count is set to 1 for the
 * duration and restored: do not run it concurrently with code that changes
 * that setting).  The result does not depend on the number of threads, to
 * the last bit. */
int ac_mh_forward(ac_mat *Y, const ac_mh *L, const ac_mat *X, ac_mh_work *w, ac_err *err);

/* The same by plain loops, one head and one entry at a time (the reference
 * kernel the tests compare ac_mh_forward against). */
int ac_mh_forward_ref(ac_mat *Y, const ac_mh *L, const ac_mat *X, ac_err *err);

/* dX = (d y / d X)^T applied to dY: the gradient of <dY, y(X)> with respect
 * to X (d x n, allocated by the caller), by the backward pass of
 *   K = Wk X, Q = Wq X, Z = K^T Q / sqrt(hs), P = Softmax(Z), H = (Wv X) P,
 *   y = Wo H:
 *   dH = Wo^T dY, dP = (Wv X)^T dH, dZ = P o (dP - 1 (1^T (P o dP))),
 *   dK = Q dZ^T / sqrt(hs), dQ = K dZ / sqrt(hs),
 *   dX = Wv^T (dH P^T) + Wk^T dK + Wq^T dQ.
 * w as for ac_mh_forward (the forward pass is recomputed into it, threaded as
 * there; the rest runs on the calling thread). */
int ac_mh_backward(ac_mat *dX, const ac_mh *L, const ac_mat *X, const ac_mat *dY,
                   ac_mh_work *w, ac_err *err);

/* ---- certified ----------------------------------------------------------- */

/* Y (d x n, with radius; allocated here, Y zeroed or freed) encloses y(X)
 * for the exact doubles of X and L (stage 0, see above).  Returns AC_OK;
 * the enclosure may be infinite/NaN after overflow: check ac_imat_finite. */
int ac_mh_enclose(ac_imat *Y, const ac_mh *L, const ac_mat *X, ac_err *err);

/* ---- files --------------------------------------------------------------- */

/* The parameter `which` as an .npy-shaped array: (h, hs, d) for Q, K, V and
 * (h, d, hs) for O.  out zeroed or freed; allocated here. */
int ac_mh_get_array(const ac_mh *L, ac_mh_param which, ac_array *out, ac_err *err);

/* Build L from the four arrays (names used in messages, e.g. "dir/Wq.npy").
 * AC_EDATA: a wrong number of dimensions ("expected a 3-D array (h, hs, d)"),
 * shapes that disagree between the files, a zero dimension, or a non-finite
 * entry.  L zeroed or freed. */
int ac_mh_from_arrays(ac_mh *L, const ac_array *q, const ac_array *k, const ac_array *v,
                      const ac_array *o, const char *const names[4], ac_err *err);

/* Read DIR/<P>q.npy, <P>k.npy, <P>v.npy, <P>o.npy (P = prefix, e.g. 'W').
 * Errors as ac_npy_read (AC_ENOINPUT for a missing file) and
 * ac_mh_from_arrays.  L zeroed or freed; zeroed on failure. */
int ac_mh_load_dir(ac_mh *L, const char *dir, char prefix, ac_err *err);

/* ac_mh_load_dir with a choice of how strict the files are read.
 * allow_2d = 0: exactly ac_mh_load_dir (3-D stacks only, its messages).
 * allow_2d != 0: a 2-D array is one head (h = 1): (hs, d) for <P>q, <P>k,
 * <P>v and (d, hs) for <P>o, besides the stacks (h, hs, d) / (h, d, hs).
 * The files are read in the order q, k, v, o, each checked as soon as it is
 * read: AC_EDATA "DIR/Wq.npy: expected a 2-D or 3-D array, got N dimensions",
 * or the message of ac_array_check_finite naming the file.  Then AC_EDATA
 * "DIR: shapes do not form one attention layer: Wq, Wk, Wv must be (h, s, d)
 * and Wo (h, d, s); got (..), (..), (..), (..)" (2-D arrays shown with h = 1)
 * unless all four agree with h, s, d >= 1.  The layer then holds the same
 * numbers as ac_mh_load_dir would give for the 3-D stacks (the trainer's
 * reading of a teacher directory). */
int ac_mh_load_dir_flex(ac_mh *L, const char *dir, char prefix, int allow_2d, ac_err *err);

/* File name of a parameter: "Wq.npy" etc. for prefix 'W'.  buf >= 8 bytes. */
const char *ac_mh_file_name(char *buf, size_t n, char prefix, ac_mh_param which);

/* The four files of L, the one description of what a layer's files hold
 * (every writer of them uses it): f[t] is the parameter t (AC_MH_Q ..
 * AC_MH_O) in the file layout (ac_mh_get_array) and its name without
 * ".npy", STEM PREFIX q|k|v|o ("Wq"; "standard_h4_seed1_Wq" for the stem
 * "standard_h4_seed1_").  f is overwritten (zeroed on failure) and released
 * with ac_mh_files_free.  AC_EUSAGE if the name would not fit
 * AC_MH_FILE_NAME_MAX bytes. */
#define AC_MH_FILE_NAME_MAX 128
typedef struct {
    char name[AC_MH_FILE_NAME_MAX];
    ac_array a;
} ac_mh_file;
int ac_mh_files(ac_mh_file f[4], const ac_mh *L, const char *stem, char prefix, ac_err *err);
void ac_mh_files_free(ac_mh_file f[4]);

/* Write DIR/<P>q.npy ... <P>o.npy (ac_mh_files, each file by ac_npy_write:
 * complete or absent), the inverse of ac_mh_load_dir.  DIR must exist.
 * AC_ECANTCREAT naming the file that cannot be written. */
int ac_mh_save_dir(const ac_mh *L, const char *dir, char prefix, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_MULTIHEAD_H */
