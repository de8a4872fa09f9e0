/* attncheck/theorem1.h — Theorem 1 of Bhojanapalli et al. (2020), the
 * representation power of one attention head and the low-rank bottleneck,
 * checked on concrete instances (doc/mathematics.md §3).
 *
 * Layout (paper 1): X is d x n, one column per token; P is n x n, positive
 * and column-stochastic; the head's context matrix is
 *     Softmax((Wk X)^T (Wq X) / sqrt(dk)),  Wk, Wq in R^{dk x d},
 * with the softmax taken over each column.
 *
 * The claim decided for an instance (X, P, dk) and a tolerance tol is
 *     C(tol):  some head of size dk has max_ij |Softmax(...) - P|_ij <= tol,
 * with real-valued weights.  The certificate encloses
 *     dist = inf over Wk, Wq of max |Softmax - P|
 * in [dist_lo, dist_hi]: dist_hi is reached by the weights actually written
 * (certified, or 0 up to the normalisation of P when exact representability
 * is proved), dist_lo comes from the log-domain residual and rank conditions
 * of doc/mathematics.md §3.4.  PROVED iff dist_hi <= tol, REFUTED iff dist_lo > tol.
 */
#ifndef ATTNCHECK_THEOREM1_H
#define ATTNCHECK_THEOREM1_H

#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/head.h" /* ac_head_softmax, ac_head_certify: one head */
#include "attncheck/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default tolerance of C(tol): 2^-26 ~ 1.5e-8 = sqrt(u), half the digits of
 * double: a P produced in double by any stable computation from exactly
 * representable logits is within that distance of them. */
#define AC_T1_TOL_DEFAULT 0x1p-26

/* Column sums of P must be 1 within AC_T1_COLSUM_FACTOR * n * u: the
 * rounding of n probabilities (u each) and of their sum (gamma_{n-1}), with
 * room for the producer's own normalisation. */
#define AC_T1_COLSUM_FACTOR 16.0

typedef enum {
    AC_T1_ROUTE_CONSTRUCT = 0, /* rank X = n <= dk: paper 1, eqs. (4)-(7), exact */
    AC_T1_ROUTE_DECIDE = 1,    /* doc/mathematics.md §3.4: residual, rank condition */
    AC_T1_ROUTE_MASKED = 2     /* a masked head (opts->mask): doc/mathematics.md §3.8 */
} ac_t1_route;

/* The support Omega of a masked head (doc/mathematics.md §3.8): which keys
 * each query sees.  Key i is visible to query j iff every part that is set
 * allows it:
 *   causal   i <= j (a decoder: P upper triangular);
 *   window   |i - j| < window (0: no window; with causal the sliding window
 *            j - window < i <= j);
 *   valid    valid[i] != 0 (padding: the same keys hidden from every query);
 *   keep     keep[i * n + j] != 0 (any boolean pattern, n x n row-major,
 *            row = key, column = query).
 * P must be 0 off Omega, positive on it, and each query must see a key.
 * A row-stochastic PyTorch pattern and its mask are the transposes. */
typedef struct {
    int causal;
    size_t window;
    const unsigned char *valid; /* n flags, or NULL */
    size_t nvalid;
    const unsigned char *keep;  /* n x n flags, or NULL */
    size_t nkeep;
    const char *name;           /* the mask in messages (NULL: "mask") */
} ac_t1_mask;

typedef struct {
    size_t dk;             /* head size; 0 means dk = d */
    const double *d0;      /* positive diagonal of D0 (length n), NULL = I */
    double tol;            /* the tolerance of C(tol) */
    ac_schedule sched;     /* precisions of the ball stages */
    int optimize;          /* iterations of the best-approximation refinement
                              (decide route; 0 = none) */
    double max_rank_work;  /* budget for exact rational rank (0 = default) */
    int want_weights;      /* construct Wk, Wq (default 1) */
    size_t nd0;            /* entries of d0 (must be n when d0 is set) */
    const char *xname, *pname, *d0name; /* the inputs in messages (e.g. file names;
                                           NULL: "X", "P", "D0") */
    const ac_mat *user_wk, *user_wq; /* a head to certify as an upper bound on dist
                                        (both dk x d, dk x (d + 1) with bias; NULL: none) */
    const char *wkname, *wqname;     /* their names in messages (NULL: "Wk", "Wq") */
    const ac_t1_mask *mask;  /* NULL: every key visible to every query (the unmasked
                                head); else the masked head of doc/mathematics.md §3.8 */
    int bias;                /* heads with biases, (Wk x + bk)'(Wq y + bq): decided as
                                unbiased heads on X with a row of ones appended
                                (doc/mathematics.md §3.8); the weights written are then
                                dk x (d + 1), the last column the bias */
} ac_t1_opts;

void ac_t1_opts_default(ac_t1_opts *o);

#define AC_T1_MAX_STEPS 12

/* One proof step with its certified residual (for --trace): ac_step of
 * verdict.h. */
typedef ac_step ac_t1_step;

/* The smallest head size that represents the column-normalised P exactly on
 * X (doc/mathematics.md §3.5): certified lo <= threshold <= hi.
 *   none = 1:        proved that no head size represents P (lo = hi = -1);
 *   hi = -1:         no upper bound (e.g. exact representability undecided);
 *   if_any = 1:      hi holds only if P is representable for some head size
 *                    (rank X < n with the log-domain residual not decided).
 * exact = the threshold is known: none, or lo == hi without if_any. */
typedef struct {
    long lo, hi;
    int none, if_any, exact;
    char method[160];        /* where lo and hi come from */
} ac_t1_threshold;

typedef struct {
    ac_verdict verdict;      /* C(tol) */
    ac_t1_route route;
    ac_verdict exact;        /* "the column-normalised P is exactly representable
                                by a head of size dk" */
    char exact_method[200];  /* why exact is what it is (a theorem, an obstruction,
                                or why it is not decidable here) */
    ac_t1_threshold threshold;
    int x_scale;             /* X was scaled by 2^x_scale for the computation (exact;
                                representability is scale invariant) */
    int weights_unusable;    /* weights exist in exact arithmetic but not in double
                                (they overflow after undoing x_scale): none written */
    size_t d, n, dk;
    long rank;               /* certified rank of X; -1 if it could not be certified */
    char rank_method[96];
    double sigma_lo;         /* certified lower bound on sigma_rank(X) (0 if unknown) */
    double norm_gap;         /* certified max |P - P diag(1/colsum)| */
    double rho_lo, rho_hi;   /* log-domain residual min_c ||M(c) - Pi M(c) Pi||_F (NAN: n/a) */
    double lowrank_lo, lowrank_hi; /* sigma_{dk+1}(K Pi L Pi) (NAN: n/a) */
    double dist_lo, dist_hi; /* enclosure of dist (see above) */
    ac_cert cert;            /* claim "dist <= tol" with [dist_lo, dist_hi] */
    ac_cert weights_cert;    /* claim "max|Softmax - P| <= tol" for the written weights */
    ac_mat Wq, Wk;           /* dk x d, the weights written (empty if none) */
    ac_t1_step steps[AC_T1_MAX_STEPS];
    size_t nsteps;
    char summary[320];       /* one sentence: why this verdict */
    char lower_method[160];  /* which bound gave dist_lo (doc/mathematics.md §3.6) */
    char upper_method[160];  /* which candidate head gave dist_hi */
    char weights_head[48];   /* the head the written weights are, in a few words ("the
                                given head", "the zero head", "the d = 1 head", "the
                                constructed head"): the certificates that rest on them
                                name it (weights_cert.quantity, cert.method) */
    ac_cert user_cert;       /* max|Softmax - P| of opts->user_wk, user_wq (stage
                                AC_STAGE_NONE when no user head was given) */
    /* The stage (AC_STAGE_DOUBLE = 0, ball stage k >= 1, AC_STAGE_EXACT;
     * AC_STAGE_NONE: not decided / not computed) and its bits that decided
     * each answer: the rank of X, rho, the rank condition, "exact" (the
     * obstruction, or the rank certificate a theorem rests on), and the
     * bound that gave dist_lo. */
    int rank_stage, rho_stage, lowrank_stage, exact_stage, lower_stage;
    long rank_prec, rho_prec, lowrank_prec, exact_prec, lower_prec;
    /* the lower bound above tol of the lowest stage (REFUTED C(tol) rests on
     * it; dist_lo may be a sharper bound of a higher stage): its stage, bits
     * and name ("" if no bound exceeds tol) */
    int refute_stage;
    long refute_prec;
    char refute_method[128];
    int refine_iters;        /* BFGS iterations of the refinement (route DECIDE) */
    char refine_stop[120];   /* why the refinement stopped or did not run ("" if
                                no refinement was considered) */
    /* masked heads and biases (doc/mathematics.md §3.8) */
    int bias;                /* the biased class was decided (X with a row of ones) */
    int masked;              /* route AC_T1_ROUTE_MASKED: a mask was given */
    size_t nvisible;         /* |Omega|, the visible (key, query) pairs */
    int staircase;           /* the keys' visible sets are nested: the threshold is
                                Woerdeman's sum over the maximal blocks (exact when
                                their ranks are certified) */
    size_t nblocks;          /* maximal blocks of the staircase (or of the
                                sub-staircase giving the lower end) */
    char support[200];       /* the support's class, and why the threshold is exact
                                or a range */
} ac_t1_result;

/* Decide C(tol) for (X, P, opts->dk), construct weights and fill the
 * certificate.  The instance is validated first (ac_t1_validate with the
 * names and nd0 of opts): X d x n, P n x n.
 * Returns AC_OK (the verdict is in res), AC_EDATA / AC_EUSAGE for bad input,
 * AC_EINTERNAL.  res must be freed with ac_t1_result_free in every case. */
int ac_t1_check(ac_t1_result *res, const ac_mat *X, const ac_mat *P, const ac_t1_opts *opts,
                ac_err *err);
void ac_t1_result_free(ac_t1_result *res);

/* The support of a mask for n tokens (doc/mathematics.md §3.8): omega
 * (n x n, row = key, column = query) receives 1 where the key is visible.
 * AC_EDATA if valid or keep have the wrong length or a query sees no key
 * (its softmax is undefined: drop such queries, e.g. padding queries). */
int ac_t1_mask_support(unsigned char *omega, size_t n, const ac_t1_mask *m, ac_err *err);

/* Xb = [X; 1'] ((d + 1) x n, allocated): the biased head class on X is the
 * unbiased class on Xb (doc/mathematics.md §3.8, Lemma B); weights on Xb
 * are dk x (d + 1), the last column the bias. */
int ac_t1_append_ones(ac_mat *Xb, const ac_mat *X, ac_err *err);

/* Validate a masked instance: as ac_t1_validate, with P required to be
 * exactly 0 off omega and positive on it, its columns summing to 1 over the
 * visible keys within AC_T1_COLSUM_FACTOR * n * u.  mname names the mask. */
int ac_t1_validate_masked(const ac_mat *X, const char *xname, const ac_mat *P,
                          const char *pname, const unsigned char *omega, const char *mname,
                          size_t dk, ac_err *err);

/* ---- the head size at a tolerance (doc/mathematics.md §3.8) -------------
 *
 * For one pattern P on X (masked or not, biased or not: opts->mask,
 * opts->bias; opts->dk is ignored) the smallest head size dk whose C(tol)
 * is PROVED, with C(tol) REFUTED at dk - 1: dist(dk) is non-increasing in
 * dk (a head of size dk is one of size dk + 1 with a zero row), so one
 * bisection over dk settles both ends.  The dk-independent work (the rank
 * of X, the certified ranks and singular values of the blocks of log P, the
 * completion of §3.8) is done once. */
#define AC_T1_MAX_EVALS 40

typedef struct {
    long lo, hi;             /* C(tol) is REFUTED for every dk < lo and PROVED for
                                every dk >= hi (certified); hi = -1: no size up to
                                dk_max proved */
    int exact;               /* lo == hi: the smallest head size at tol is lo */
    size_t dk_max;           /* the sizes examined: 1 .. dk_max */
    char method[240];        /* what the two ends rest on */
    ac_t1_threshold exact_rep; /* the threshold of exact representability
                                  (as ac_t1_result.threshold) */
    /* the best head of size dk_at (the argument; 0: none asked) */
    size_t dk_at;
    ac_verdict at_verdict;   /* C(tol) at dk_at */
    double at_lo, at_hi;     /* certified dist(dk_at) in [at_lo, at_hi] */
    char at_lower[160], at_upper[160];
    /* every size evaluated, in order */
    size_t nevals;
    struct {
        long dk;
        ac_verdict verdict;
        double lo, hi;
    } eval[AC_T1_MAX_EVALS];
    double seconds;
} ac_t1_tol_threshold;

/* Fill res for (X, P) and the options (tol, mask, bias, sched, ...); dk_at
 * (0: none) asks for the certified distance of the best head of that size
 * as well.  The instance is validated as by ac_t1_check.  AC_OK, AC_EDATA /
 * AC_EUSAGE for bad input, AC_EINTERNAL. */
int ac_t1_threshold_at_tol(ac_t1_tol_threshold *res, const ac_mat *X, const ac_mat *P,
                           size_t dk_at, const ac_t1_opts *opts, ac_err *err);

/* ---- one instance at several head sizes ----------------------------------
 *
 * (X, P) with the options of ac_t1_instance_init (NULL: the defaults),
 * checked at several head sizes: the work that does not depend on dk --
 * validation, the support of the mask, the certified rank of X and X^+, the
 * certified ranks of the blocks of log P, Woerdeman's completion, the
 * dk-independent lower bounds (doc/mathematics.md §3.8) -- is done by the
 * first call that needs it (which reports its errors) and kept, and so is
 * the rank obstruction at each k = min(dk, rank X) once computed.
 *   ac_t1_instance_threshold  = ac_t1_threshold_at_tol on the instance;
 *   ac_t1_instance_check      = ac_t1_check on the instance with opts (NULL:
 *                               the instance's), which may differ from the
 *                               instance's in dk, tol, sched, optimize,
 *                               want_weights, user_wk, user_wq, wkname,
 *                               wqname; mask, bias, d0, nd0, max_rank_work
 *                               must be the instance's (else AC_EUSAGE), and
 *                               messages name the inputs by the instance's
 *                               xname, pname.
 * The results are those of the functions they stand for, bit for bit; the
 * work is shared for masked heads (opts->mask) -- an unmasked check takes
 * ac_t1_check's routes, which share nothing.  X, P and what opts points to
 * (the mask, d0) must outlive the instance; one thread at a time. */
typedef struct ac_t1_instance ac_t1_instance;

int ac_t1_instance_init(ac_t1_instance **inst, const ac_mat *X, const ac_mat *P,
                        const ac_t1_opts *opts, ac_err *err);
int ac_t1_instance_threshold(ac_t1_tol_threshold *res, ac_t1_instance *inst, size_t dk_at,
                             ac_err *err);
int ac_t1_instance_check(ac_t1_result *res, ac_t1_instance *inst, const ac_t1_opts *opts,
                         ac_err *err);
void ac_t1_instance_free(ac_t1_instance *inst); /* NULL is fine */

/* Validate an instance; names (e.g. file names) are used in the messages.
 * AC_EDATA: non-finite entries, P not n x n, P with an entry <= 0, a column
 * sum off 1 by more than AC_T1_COLSUM_FACTOR * n * u (the message suggests
 * ac_t1_normalize, naming it by the field "normalize"), d0 not positive and
 * finite, n = 0 or d = 0.  AC_EUSAGE: dk = 0. */
int ac_t1_validate(const ac_mat *X, const char *xname, const ac_mat *P, const char *pname,
                   const double *d0, size_t nd0, const char *d0name, size_t dk, ac_err *err);

/* Column-stochastic tolerance for n tokens (see AC_T1_COLSUM_FACTOR). */
double ac_t1_colsum_tol(size_t n);

/* Divide each column of P by its sum, in place: the sum of the column in
 * order in double, then each entry divided by it (so the new column sums to
 * 1 within n u).  A column whose sum is not positive and finite is left as it
 * is (ac_t1_validate then rejects it); P with no rows is unchanged.  This is
 * rep-theorem --normalize, for a P whose columns sum to 1 only roughly. */
void ac_t1_normalize(ac_mat *P);

/* Generated instances (Philox streams keyed by seed):
 *   X d x n i.i.d. N(0,1); P n x n with i.i.d. Dirichlet(1,...,1) columns. */
int ac_t1_generate(ac_mat *X, ac_mat *P, size_t d, size_t n, uint64_t seed, ac_err *err);
/* A representable P for a given X: P = Softmax(X^T A X / sqrt(dk)) with
 * A = Wk^T Wq, Wk, Wq dk x d Gaussian scaled by 1/sqrt(d) (rank <= dk). */
int ac_t1_generate_representable(ac_mat *P, const ac_mat *X, size_t dk, uint64_t seed,
                                 ac_err *err);
/* The paper's counterexample (doc/mathematics.md §3.3): d = 1, n = 2, X = [1, 0],
 * P = [[0.5, 0.75], [0.5, 0.25]]. */
int ac_t1_example_paper(ac_mat *X, ac_mat *P, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_THEOREM1_H */
