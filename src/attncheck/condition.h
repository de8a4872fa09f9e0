/* attncheck/condition.h — Theorem 3.2 of Saratchandran et al. (2025),
 * "Leaner Transformers": sampled condition numbers of the multi-head block
 * A = [A_1, ..., A_h] against every prediction (doc/mathematics.md §5).
 *
 * Layout (paper 2): A is N x D, D = h d, one row per token, head i in
 * columns [i d, (i+1) d); softmax over each row.  kappa(A) =
 * sigma_1(A) / sigma_m(A), m = min(N, D), M = max(N, D).
 *
 * Blocks
 * ------
 *   AC_COND_IID        the theorem's assumption: A_i i.i.d. N(0,1).  Entry
 *                      (i, j) of A is entry i D + j of the block stream
 *                      (seed, h, trial) of ac_rng_normal_block (rng.h:
 *                      ARS-7 words, the 256-layer ziggurat), so a block can
 *                      be drawn in panels (the GRAM route draws 256 columns
 *                      at a time and reduces them in cache).
 *   AC_COND_ATTENTION  real heads with Gaussian weights (doc/mathematics.md
 *                      §5.7):
 *                        A_i = Softmax(Q_i K_i^T / sqrt d) V_i  (row softmax),
 *                        Q_i = X Wq_i, K_i = X Wk_i, V_i = X Wv_i,
 *                      X in R^{N x E} i.i.d. N(0,1) (the input sequence),
 *                      projections E x d i.i.d. N(0, 1/E) (fan-in scaled).
 *                      Stream (seed, h, trial): X row-major first, then for
 *                      head 0, 1, ...: Wq_i, Wk_i, Wv_i (row-major).
 *                      When E > N the projections are drawn in the
 *                      equivalent form Q_i = L Z_i with L L^T = X X^T / E
 *                      (Cholesky) and Z_i in R^{N x d} i.i.d. N(0,1): given
 *                      X, both are N x d matrices with i.i.d. N(0, X X^T/E)
 *                      columns, so the law of A is the same, at a cost of
 *                      N^2 d instead of N E d per projection (streams: X,
 *                      then Zq_i, Zk_i, Zv_i).  opts.attention_direct forces
 *                      the literal X W form.
 *
 * kappa of one block (doc/mathematics.md §5.8): three routes, chosen per
 * sample from a stated error bound (rtol = the requested relative accuracy
 * of kappa; a route is accepted when its bound on kappa is <= rtol/2, which
 * leaves the certification room to prove "within rtol")
 * -------------------------------------------------------------------------
 *   GRAM  G = A A^T (D >= N) or A^T A (D < N), m x m, by dsyrk; its extreme
 *         eigenvalues by dsytrd + dstebz (all of them by dsterf with
 *         spectrum).  With t = fl(trace G) = ||A||_F^2 (1 + O(mu)):
 *             |lambda~_i - lambda_i| <= eta = gamma_M t (1 + 2(m+1)u)
 *                                            + m u lambda~_max
 *         (Higham, ASNA §3.5 for the product, |G~ - G| <= gamma_M |A||A|^T,
 *         ||.||_2 <= ||.||_F <= gamma_M ||A||_F^2; LAPACK's eigenvalue
 *         bound p(m) u ||G||_2 with p(m) = m).  Accepted when
 *         lambda~_min > eta and the resulting bound on kappa is <= rtol.
 *         Cheap (m^2 M + 4/3 m^3 flops) but squares kappa.
 *   SVD   singular values of A by dgesdd (values only):
 *             |sigma~_i - sigma_i| <= M u sigma~_1
 *         (LAPACK's p(m, n) u sigma_1 with p = max(m, n)); accepted when
 *         the bound on kappa, 2 M u kappa~ to first order, is <= rtol/2.
 *   MPFR  the high-precision fallback: sigma_min from ac_cond_sigma_min_mpfr
 *         (below), sigma_1 from the SVD route (whose relative error M u is
 *         far below any rtol >= 1e-12).
 * These error bounds are the standard a-priori bounds; they decide routes
 * and are reported as `relerr`, but they are estimates (LAPACK's constants
 * are not rigorous).  Rigorous enclosures come from --certify.
 *
 * Certification (opts.certify; doc/mathematics.md §5.9)
 * ---------------------------------------------------
 * For each sample, rigorous enclosures of sigma_1, sigma_min and kappa of
 * its block: iid, the doubles sampled; attention, the exact heads of the
 * sampled X and weights (not their double rounding), REFUTED outright when
 * h min(N, E, d) < min(N, D) bounds the rank (doc/mathematics.md §5.10):
 *   stage 0: Weyl around a double SVD (ac_sv_enclose, doc/mathematics.md §2.5);
 *   stage k: Arb balls at the schedule's precisions: G = A A^T enclosed
 *            exactly-ish (arb_mat_mul), lambda_min(G) >= s proved by a
 *            successful ball Cholesky of G - s I (arb_mat_cho returns 1 only
 *            when positive definiteness is certain), lambda_min <= the
 *            Rayleigh quotient of a high-precision approximate eigenvector
 *            (from the MPFR kernel); lambda_max likewise with t I - G.
 * The claim decided for the whole run is
 *     C:  every sampled block has full rank min(N, D) (sigma_min > 0, the
 *         conclusion of Lemma 3.3 of paper 2) and every reported kappa~
 *         is within rtol of the exact kappa of its block:
 *         (1 - rtol) kappa~ <= kappa <= (1 + rtol) kappa~.
 * Equivalently dev = max over samples of |kappa / kappa~ - 1| <= rtol, which
 * is how the certificate states it (dev enclosed in [dev_lo, dev_hi]).
 * PROVED if every sample's enclosure proves it, REFUTED if some enclosure
 * lies outside, UNDECIDED otherwise (and always without certify: then
 * nothing is certified).  With certify the sample statistics (mean,
 * median, quantiles, E log kappa) of the seeded sample get rigorous
 * enclosures too, and so do the relative errors of the predictions
 * against them; these are facts about the seeded sample, not about the
 * distribution.
 *
 * Determinism: every block comes from its own stream (seed, h, trial) and is
 * processed by one thread with single-threaded BLAS, and the route of a
 * sample depends only on the sample (and on the route of trial 0 of the
 * same h, as if trial 0 were computed first), so results are bit-identical
 * for any number of threads.
 */
#ifndef ATTNCHECK_CONDITION_H
#define ATTNCHECK_CONDITION_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/rmt.h"
#include "attncheck/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AC_COND_IID = 0, AC_COND_ATTENTION = 1 } ac_cond_mode;

typedef enum { AC_COND_GRAM = 0, AC_COND_SVD = 1, AC_COND_MPFR = 2 } ac_cond_route;
#define AC_COND_NROUTES 3

/* "iid", "attention" / "gram", "svd", "mpfr" */
const char *ac_cond_mode_name(ac_cond_mode m);
const char *ac_cond_route_name(ac_cond_route r);

/* The largest trials and sizes a sweep may have (the ranges of
 * condition's --trials and of --seq, --heads, --head-dim, --embed,
 * --input-dim and of D = h d); a shard outside them is refused. */
#define AC_COND_MAX_TRIALS ((size_t)1 << 40)
#define AC_COND_MAX_DIM ((size_t)1 << 24)

/* Default requested relative accuracy of each kappa. */
#define AC_COND_RTOL_DEFAULT 1e-8
/* Histogram bins of the spectrum by default. */
#define AC_COND_BINS_DEFAULT 24

typedef struct {
    size_t N;              /* sequence length: rows of A */
    size_t input_dim;      /* attention: width E of X (0 = D = h d) */
    ac_cond_mode mode;
    uint64_t seed;
    size_t trials;         /* samples per h (>= 1) */
    double rtol;           /* requested relative accuracy of kappa (1e-14 .. 0.1) */
    int spectrum;          /* keep the eigenvalues of (1/D) A A^T, KS and histogram */
    size_t bins;           /* histogram bins (spectrum) */
    int certify;           /* rigorous enclosures, claim C */
    ac_schedule sched;     /* ball stages of certify (precisions) */
    long max_prec;         /* highest MPFR precision of the fallback (bits, >= 128) */
    int threads;           /* OpenMP threads (0 = OpenMP's default) */
    int start_route;       /* -1 automatic; else the first route every sample tries */
    int attention_direct;  /* attention: always Q = X Wq (never the Cholesky form) */
    /* Called by the calling thread as samples complete (done of total), at
     * most once per sample; may be NULL. */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
} ac_cond_opts;

void ac_cond_opts_default(ac_cond_opts *o);

/* One sample. */
typedef struct {
    double kappa, sigma1, sigmin; /* estimates (kappa = inf if unresolved) */
    double relerr;                /* stated bound on |kappa~ - kappa| / kappa */
    int route;                    /* ac_cond_route that produced sigmin */
    int resolved;                 /* 0: sigma_min below the resolution of max_prec */
    long prec;                    /* MPFR bits (route MPFR), else 53 */
    /* certify */
    ac_verdict cert;              /* claim C for this sample */
    int cert_stage;               /* deciding stage: 0 double Weyl, k >= 1 ball */
    long cert_prec;
    double s1_lo, s1_hi, smin_lo, smin_hi, kappa_lo, kappa_hi;
    /* enclosure of dev = |kappa / kappa~ - 1| (claim C: dev <= rtol) */
    double dev_lo, dev_hi;
    /* upper bound on ||B - A~||_2, B the mathematical block, A~ the double
     * block (0 when they are the same, iid; inf: no enclosure) */
    double block_rad;
    /* 1: claim C refuted by the rank bound (rank B <= rank_bound < m) */
    int rank_refuted;
} ac_cond_sample;

/* Summary statistics of a set of kappa values (estimates). */
typedef struct {
    size_t n;            /* samples */
    size_t n_inf;        /* infinite (unresolved) ones */
    double mean, sd, se_mean;        /* sd with n - 1; se = sd / sqrt(n) */
    double median, q05, q95, min, max; /* quantiles: linear interpolation
                                          between order statistics (NumPy's
                                          default, "type 7") */
    double elog, sd_log, se_elog;    /* E log kappa and its spread */
    double mean_sigma1, mean_sigmin;
} ac_cond_stats;

/* Rigorous enclosures of statistics of the seeded sample (certify). */
typedef struct {
    int valid;           /* 1 when every sample had a finite enclosure */
    double mean_lo, mean_hi, median_lo, median_hi, q05_lo, q05_hi, q95_lo, q95_hi;
    double elog_lo, elog_hi;
    /* prediction / statistic - 1, enclosed (NaN when not applicable) */
    double err_first_order_lo, err_first_order_hi;  /* vs mean */
    double err_tw_point_lo, err_tw_point_hi;        /* vs mean */
    double err_tw_median_lo, err_tw_median_hi;      /* vs median */
    double err_edelman_median_lo, err_edelman_median_hi;
} ac_cond_certstats;

/* Results for one h. */
typedef struct {
    size_t h, d, D, N, E, m, trials;
    /* upper bound on the rank of every block from its factors: attention
     * h min(N, E, d) (capped at m), iid m (doc/mathematics.md §5.10) */
    size_t rank_bound;
    ac_cond_mode mode;
    uint64_t seed;
    double rtol;
    ac_cond_sample *samples;   /* trials entries, in trial order */
    double *eig;               /* spectrum: trials x m eigenvalues of
                                  (1/D) A A^T (the nonzero ones), ascending */
    ac_cond_stats st;
    ac_rmt_pred pred;
    /* prediction / sample statistic - 1 (NaN where not applicable; at D = N
     * only the median and E log kappa are compared) */
    double err_first_order;    /* vs mean */
    double err_tw_point;       /* vs mean */
    double err_tw_median;      /* vs median */
    double tw_coverage;        /* fraction of samples in [tw_q05, tw_q95] */
    double gordon_exceed;      /* fraction above gordon_kappa95 (theory: <= 5%) */
    double err_edelman_median; /* D = N */
    double diff_edelman_elog;  /* D = N: edelman_elog - elog (absolute) */
    double edelman_coverage;   /* D = N: fraction in [edelman_q05, edelman_q95] */
    /* spectrum */
    double ks;                 /* sup |F_emp - F_MP| over the pooled eigenvalues */
    size_t bins;
    double *hist_lo, *hist_hi, *hist_density, *hist_mp; /* bins entries each */
    /* routes */
    size_t n_route[AC_COND_NROUTES];
    size_t n_unresolved;
    /* certify */
    ac_verdict verdict;        /* claim C over this h's samples */
    double dev_lo, dev_hi;     /* max over samples of |kappa/kappa~ - 1|, enclosed */
    int max_stage;             /* highest certify stage used (-2: none) */
    long max_stage_prec;
    size_t n_proved, n_refuted, n_undecided;
    size_t n_stage[AC_MAX_STAGES + 1]; /* samples decided at stage k */
    ac_cond_certstats cst;
    /* time (seconds): wall clock, and thread-seconds spent in each part */
    double wall, t_sample, t_reduce, t_solve, t_mpfr, t_certify;
    double flops;              /* nominal flop count of the double kernels */
} ac_cond_result;

void ac_cond_result_free(ac_cond_result *r);

/* Bytes needed to run every (h, d) pair of the list with these options
 * (results kept for all of them, plus per-thread workspace). */
int ac_cond_memory_need(const ac_cond_opts *o, const size_t *h, const size_t *d, size_t nh,
                        double *bytes, ac_err *err);
/* Available memory (MemAvailable of /proc/meminfo, else free physical
 * pages), in bytes; 0 if unknown. */
double ac_cond_memory_available(void);

/* Sample `trials` blocks of h heads of width d and compute everything
 * above.  r must be zeroed or freed.  Errors: AC_EUSAGE for impossible sizes
 * (N, h or d zero, N*D or E too large for LAPACK's 32-bit indices, trials 0),
 * AC_EINTERNAL out of memory. */
int ac_cond_run(ac_cond_result *r, size_t h, size_t d, const ac_cond_opts *o, ac_err *err);

/* The block of sample `trial` (N x h d), exactly as ac_cond_run samples it.
 * A zeroed; allocated here. */
int ac_cond_block(ac_mat *A, size_t h, size_t d, uint64_t trial, const ac_cond_opts *o,
                  ac_err *err);

/* kappa of one matrix by the routes above (start_route -1: GRAM first).
 * Fills s (estimates only; the certify fields are cleared). */
int ac_cond_kappa(const ac_mat *A, double rtol, int start_route, long max_prec,
                  ac_cond_sample *s, ac_err *err);

/* The high-precision fallback: sigma_min(A) of an m x n double matrix
 * (exact input) to relative accuracy rtol.  At precision p (a guess from
 * the double SVD's kappa and kappa_hint, which may be 0; doubled up to
 * max_prec when needed): the Gram matrix G of the short side in MPFR (error
 * ||dG||_2 <= M 2^-p ||A||_F^2), the Cholesky factor of G - mu I with
 * mu = (sigma~_min - 2 e)^2 below lambda_min (sigma~_min from the double
 * SVD, e = M u sigma~_1 its error bound; mu = 0 if that factorisation
 * fails), then shifted inverse iteration.  With z the iterate,
 * rho = z^T G z / z^T z >= lambda_min and r = G z - rho z, some eigenvalue
 * of the exact G lies within ||r||/||z|| + ||dG|| + rounding of rho (Weyl);
 * the iteration stops when that radius is <= rtol/2 rho.  *relerr receives
 * the resulting bound on the relative error of sigma_min, *prec_used the
 * bits.  *resolved = 0 when even max_prec does not resolve sigma_min (A is
 * singular or nearly so at that precision): *sigmin is then only an upper
 * estimate.  This is an estimate with an a-posteriori bound, not a
 * certificate: the eigenvalue found is the smallest one for a generic start
 * vector and a valid shift, not provably. */
int ac_cond_sigma_min_mpfr(const ac_mat *A, double rtol, double kappa_hint, long max_prec,
                           double *sigmin, double *relerr, long *prec_used, int *resolved,
                           ac_err *err);

/* Certify one sample: rigorous enclosures of sigma_1, sigma_min, kappa of A
 * (see above) and the verdict of "(1 - rtol) kappa~ <= kappa <= (1 + rtol)
 * kappa~ and sigma_min > 0" for s->kappa.  Fills the certify fields of s. */
int ac_cond_certify(const ac_mat *A, double rtol, const ac_schedule *sched, long max_prec,
                    ac_cond_sample *s, ac_err *err);

/* Statistics of n kappa values (the order of x is not changed). */
int ac_cond_stats_compute(ac_cond_stats *st, const double *kappa, const double *sigma1,
                          const double *sigmin, size_t n, ac_err *err);

/* Sample quantile of sorted values (type 7: x[j] + g (x[j+1] - x[j]),
 * j + g = (n - 1) p). */
double ac_cond_quantile_sorted(const double *sorted, size_t n, double p);

/* ---- claims over several results ------------------------------------------
 * The verdicts of the program and of `attncheck report`, decided here from
 * the certified enclosures (doc/mathematics.md §5.9). */

/* The certificate of claim C over every result of a sweep (res[0..n-1],
 * one per h, all run with the options o): dev = max over every sample of
 * |kappa / kappa~ - 1|, enclosed in [cert->lo, cert->hi] by the maxima of
 * the results' dev_lo, dev_hi, judged "dev <= o->rtol" (the conjunction of
 * the results' verdicts); the stage is the highest any sample needed.
 * Without o->certify: UNDECIDED, [0, inf], no stage ("not certified").
 * cert->seconds = seconds. */
void ac_cond_certificate(ac_cert *cert, const ac_cond_result *res, size_t n,
                         const ac_cond_opts *o, double seconds);

/* "The median kappa decreases from a to b": PROVED when the certified
 * enclosures give median(b) < median(a) (median_hi(b) < median_lo(a), the
 * difference rounded outward), REFUTED when they give median(b) >=
 * median(a), UNDECIDED otherwise or when a or b has no valid certified
 * statistics (cst.valid). */
ac_verdict ac_cond_median_decreases(const ac_cond_result *a, const ac_cond_result *b);

/* "|x| <= tol" from a rigorous enclosure [lo, hi] of x, e.g. a relative
 * error prediction / statistic - 1 of ac_cond_certstats; UNDECIDED when lo
 * or hi is NaN (not applicable). */
ac_verdict ac_cond_within(double lo, double hi, double tol);

/* "|median(a) / median(b) - 1| <= tol" from the certified enclosures of the
 * two medians (ac_cond_within of the ratio rounded outward); UNDECIDED when
 * a or b has no valid certified statistics. */
ac_verdict ac_cond_median_ratio_within(const ac_cond_result *a, const ac_cond_result *b,
                                       double tol);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_CONDITION_H */
