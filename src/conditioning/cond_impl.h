/* cond_impl.h — internals of src/conditioning/ (Theorem 3.2 of paper 2:
 * condition numbers of the multi-head block and the random-matrix
 * predictions), and the map of the module.  Not installed.
 *
 * Files of src/conditioning/ (this map; tests/docs.sh checks it against
 * local.mk), by concept (doc/mathematics.md §5):
 *   sample.c          the per-thread workspace and the sampling of one block:
 *                     i.i.d. Gaussian, or attention heads with Gaussian
 *                     weights in the direct or the Cholesky form (§5.7);
 *                     ac_cond_block
 *   kappa.c           kappa of one block by the GRAM and SVD routes and their
 *                     a-priori error bounds, the choice of route (§5.8);
 *                     ac_cond_kappa
 *   sigma_min_mpfr.c  the high-precision fallback: shifted inverse iteration
 *                     in MPFR (hp_*, ac_cond_sigma_min_mpfr) (§5.8)
 *   certify.c         certification of one sample: Weyl at stage 0, Arb
 *                     ball Cholesky and Rayleigh quotients (§5.9);
 *                     ac_cond_certify
 *   certify_block.c   the certificate of the mathematical block of a sample,
 *                     not of its rounding (§5.10)
 *   claims.c          the claims decided from several results: claim C over
 *                     every h, the median decreasing in h, a relative error
 *                     within a tolerance
 *   stats.c           sample statistics, quantiles, certified statistics,
 *                     the spectrum against Marchenko-Pastur (KS, histogram)
 *   run.c             ac_cond_run in named steps; sizes and memory
 *   shard.c           sweeps in shards: the samples file and the merge
 *                     (attncheck/shard.h)
 *   tracy_widom.c     TW1 by Nyström's method and its table (§5.4)
 *   edelman.c         Edelman's law of kappa/N for square blocks (§5.5)
 *   marchenko_pastur.c  the Marchenko-Pastur law of the spectrum (§5.6)
 *   predict.c         ac_rmt_predict: first order (paper 2, eq. (6); §5.2),
 *                     the Tracy-Widom correction and its kappa law (§5.4),
 *                     the Gordon bounds (§5.3), Edelman at D = N (§5.5)
 *   cond_impl.h       this header
 *   test/             the unit tests, one Check program per file:
 *     test_condition.c        the sampler and the kappa routes against blocks
 *                             of known singular values, certified enclosures,
 *                             thread independence, the two attention samplers;
 *     test_kappa_clustered.c  kappa of nearly rank-one blocks (clustered small
 *                             eigenvalues) against LAPACK's SVD;
 *     test_rmt.c              the random-matrix predictions against published
 *                             constants and reference values.
 *
 * Dimension letters (paper 2): N tokens (rows of A), d head width, h heads,
 * D = h d columns, E input width (attention), m = min(N, D), M = max(N, D).
 * A is row-major N x D.  LAPACK is called in column-major form on the same
 * memory (a row-major N x D array is the column-major D x N matrix A^T,
 * which has the same singular values), so no call copies or transposes.
 */
#ifndef AC_COND_IMPL_H
#define AC_COND_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <lapacke.h>
#include <mpfr.h>

#include "core/ac_arb.h"
#include "attncheck/condition.h"
#include "attncheck/linalg.h"

/* the unit roundoff of binary64 */
#define U53 0x1p-53

/* ---- sample.c: the workspace and the sampling ----------------------------- */

/* Per-thread buffers, sized for one (N, h, d, E). */
typedef struct {
    size_t N, D, d, h, E, m, M;
    double *A;      /* N x D, the block (see a_pending) */
    double *G;      /* m x m Gram matrix */
    double *P;      /* Gram panel scratch: N x COND_PANEL or COND_PANEL x D */
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
    /* fused i.i.d. sampling (cond_gram_iid): G holds the Gram matrix of
     * block `trial` of o (g_ready), and A is drawn only when a route needs
     * it (a_pending; cond_ws_need_a) */
    const ac_cond_opts *o;
    uint64_t trial;
    int a_pending, g_ready;
} cond_ws;

/* Columns (D >= N) or rows (D < N) of A per step of the Gram matrix: the
 * GRAM route sums G = sum_panels P P^T (or P^T P) in this order, whether
 * the panels come from w->A or straight from the sampler. */
#define COND_PANEL 256

int cond_ws_init(cond_ws *w, size_t N, size_t h, size_t d, size_t E, ac_cond_mode mode);
void cond_ws_free(cond_ws *w);
/* Bytes of one workspace (cond_ws_init with the same sizes). */
double cond_ws_bytes(size_t N, size_t h, size_t d, size_t E, ac_cond_mode mode);
/* Fill w->A with block `trial` (the streams of attncheck/condition.h). */
void cond_sample_block(cond_ws *w, const ac_cond_opts *o, uint64_t trial);
/* i.i.d. mode: the Gram matrix of block `trial` into w->G panel by panel,
 * each panel drawn into w->P and reduced while in cache; w->A is not
 * written (a_pending).  Same G, bit for bit, as the GRAM route on the
 * block drawn by cond_sample_block. */
void cond_gram_iid(cond_ws *w, const ac_cond_opts *o, uint64_t trial);
/* Draw w->A if cond_gram_iid left it pending. */
void cond_ws_need_a(cond_ws *w);

/* ---- kappa.c: the routes --------------------------------------------------- */

/* G = P P^T (D >= N; P is N x k with leading dimension ld, columns of A)
 * or P^T P (D < N; P is k x D, rows of A), added to G when accumulate. */
void cond_gram_panel(cond_ws *w, const double *P, size_t k, size_t ld, int accumulate);

/* kappa of w->A, starting with route `start`; eig (spectrum) receives the m
 * eigenvalues of G ascending, or NULL. */
int cond_kappa_ws(cond_ws *w, double rtol, int start, long max_prec, ac_cond_sample *s,
                  double *eig, ac_err *err);

/* ---- sigma_min_mpfr.c: the MPFR kernel ------------------------------------ */

/* High-precision smallest eigenpair of the Gram matrix of the short side;
 * the approximate eigenvector stays in x. */
typedef struct {
    size_t m, M;
    long prec;
    mpfr_t *a;      /* m x M short-side rows, exact (53 bits) */
    mpfr_t *G;      /* m x m */
    mpfr_t *Lc;     /* m x m Cholesky factor (lower) */
    mpfr_t *x, *y, *z, *g; /* m vectors */
    mpfr_t t, u, v;
} hp_ws;

int hp_init(hp_ws *h, const ac_mat *A, long prec);
void hp_clear(hp_ws *h);
/* The core of ac_cond_sigma_min_mpfr (same arguments); leaves the unit
 * approximate eigenvector in h->x. */
int hp_sigma_min(hp_ws *h, const ac_mat *A, double rtol, double kappa_hint, long max_prec,
                 double *sigmin, double *relerr, long *prec_used, int *resolved);

/* ---- certify.c, certify_block.c: the mathematical block ----------------- */

/* A function enclosing the mathematical block B (N x D) in balls at prec
 * bits: fills B, returns 0, or nonzero when no enclosure is available. */
typedef struct {
    int (*fn)(arb_mat_t B, void *ctx, slong prec);
    /* optional, for stage 0: *r >= ||B - A||_2 for the double block A
     * (e.g. by double interval arithmetic); 0 on success */
    int (*rad0)(void *ctx, const ac_mat *A, double *r);
    void *ctx;
} cond_block_fn;

/* ac_cond_certify for the block B enclosed by blk (NULL: B = A exactly),
 * with A the double matrix that rounds it (doc/mathematics.md §5.9). */
int cond_certify_block(const ac_mat *A, const cond_block_fn *blk, double rtol,
                       const ac_schedule *sched, long max_prec, ac_cond_sample *s, ac_err *err);
/* [kappa_lo, kappa_hi] of s from its enclosures of sigma_1 and sigma_min,
 * rounded outward (kappa >= 1 always). */
void cond_kappa_bounds(ac_cond_sample *s);
/* Enclose dev = |kappa / kappa~ - 1| (s->dev_lo, s->dev_hi) from kappa in
 * [kappa_lo, kappa_hi] and judge claim C for the sample, dev <= rtol
 * (which needs kappa_hi finite, i.e. sigma_min > 0).  Deterministic, so a
 * reader of the sample can recompute both exactly (shard.c). */
ac_verdict cond_judge_kappa(ac_cond_sample *s, double rtol);
/* Upper bound on rank A for a block of h attention heads of width d from
 * an N x E input: h min(N, E, d), capped at min(N, h d) (§5.10). */
size_t cond_rank_bound(const ac_cond_opts *o, size_t N, size_t h, size_t d, size_t E);
/* Certify sample `trial` of w (just sampled by cond_sample_block): the
 * mathematical block of the mode (iid: w->A itself; attention: the heads
 * from the sampled X and weights, REFUTED by the rank bound when it is
 * below min(N, D)).  Fills the certify fields of s. */
int cond_certify_sample(const cond_ws *w, const ac_cond_opts *o, uint64_t trial,
                        ac_cond_sample *s, ac_err *err);

/* ---- stats.c --------------------------------------------------------------- */

/* qsort comparison of doubles, ascending */
int cond_cmp_double(const void *a, const void *b);
/* Certified statistics of r from the enclosures of its samples (r->cst). */
int cond_cert_stats(ac_cond_result *r, ac_err *err);
/* KS distance and histogram of the pooled eigenvalues r->eig against
 * Marchenko-Pastur (r->ks, r->hist_*). */
int cond_spectrum_stats(ac_cond_result *r, ac_err *err);

/* ---- run.c ------------------------------------------------------------------ */

/* AC_EUSAGE when (N, h, d, E) or the options cannot be run. */
int cond_check_sizes(size_t N, size_t h, size_t d, size_t E, const ac_cond_opts *o,
                     ac_err *err);
/* The input width E of attention blocks (input_dim, else D = h d). */
size_t cond_eff_E(const ac_cond_opts *o, size_t h, size_t d);

/* ---- tracy_widom.c ---------------------------------------------------------- */

/* The table of F1 covers [AC_TW_LO, AC_TW_HI]; outside F1 is 0 resp. 1. */
#define AC_TW_LO (-12.0)
#define AC_TW_HI 12.0

/* run.c: r initialised as ac_cond_run does before sampling (sizes, zeroed
 * samples, the predictions); shard.c fills the samples of a merge into it. */
int cond_result_init(ac_cond_result *r, size_t h, size_t d, const ac_cond_opts *o, ac_err *err);

#endif /* AC_COND_IMPL_H */
