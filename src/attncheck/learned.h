/* attncheck/learned.h — the theorems on learned weights: the experiments
 * that train heads or layers with the training stack (attncheck/train.h)
 * and certify what was learned with the checks of the theorems
 * (doc/mathematics.md §6.5, §4.8, §6.6).
 *
 * Each experiment decides its own verdict here, in the library; the program
 * (rep-theorem --learn, train --task fit-p, separate --student, condition
 * --model, report) and the Python package only present it.  The module's
 * files: t1_transition.c (rep-theorem --learn), fitp.c (train --task
 * fit-p's instance and certificate), students.c (separate --student),
 * kappa.c (the blocks of trained heads, condition --model).
 */
#ifndef ATTNCHECK_LEARNED_H
#define ATTNCHECK_LEARNED_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/condition.h"
#include "attncheck/headcount.h"
#include "attncheck/json.h"
#include "attncheck/multihead.h"
#include "attncheck/rmt.h"
#include "attncheck/theorem1.h"
#include "attncheck/theorem2.h"
#include "attncheck/train.h"
#include "attncheck/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Theorem 1: the learned transition (rep-theorem --learn, §6.5) ---------------- */

/* One head size dk: one head trained by fit-p (BFGS on KL(P || Softmax),
 * evaluated at every step, the best iterate kept), its weights certified at
 * tol; beside it the exact criterion of doc/mathematics.md §3.4 for the same
 * dk (ac_t1_check).  With a mask (doc/mathematics.md §3.8) the head is
 * trained under the mask (the softmax of each query over its visible keys,
 * the loss on the visible entries of P), certified by the masked
 * certification of given weights (ac_head_certify_masked, as rep-theorem
 * --wq --wk --mask), and the criterion is the masked one; with a bias the
 * head is an unbiased head on X with a row of ones appended, its weights
 * dk x (d + 1), the last column the bias. */
typedef struct {
    size_t dk;
    /* learned */
    size_t steps, max_steps, best_step;
    int stalled;               /* BFGS stopped: no further progress */
    size_t start, starts;      /* the start kept (0-based: seed + start), starts trained */
    double dev, kl;            /* best iterate, in double */
    ac_cert learned;           /* max|Softmax - P| <= tol for its weights, certified */
    ac_mat Wq, Wk;             /* those weights (dk x d, or dk x (d + 1) with a bias) */
    char wq_name[32], wk_name[32]; /* "Wq_dk3", "Wk_dk3": their names as arrays */
    double learn_seconds;
    /* the exact criterion */
    ac_verdict verdict;        /* C(tol) */
    ac_verdict exact;          /* exact representability */
    double dist_lo, dist_hi;
    long rank;
    long thr_lo, thr_hi;       /* the threshold of exact representability (masked or
                                  not), certified range; -1: unknown (hi) or none */
    int thr_exact;
    double exact_seconds;
} ac_learn_t1_row;

/* The comparison over the rows (dk increasing). */
typedef struct {
    long learned_from;   /* first dk whose learned head is within tol (-1: none) */
    long criterion_from; /* first dk where the criterion does not refute C(tol) */
    long missed;         /* first dk with C(tol) proved but the learned head not within tol */
    long open;           /* first dk decided by neither */
    long inconsistent;   /* first dk with learned error < certified lower bound */
    long rank;           /* rank X (-1: not certified) */
    size_t n;
    int masked, bias;    /* the head class: a mask, biases (§3.8) */
    long thr_lo, thr_hi; /* the threshold of exact representability (the first row's) */
    int thr_exact;
    ac_verdict outcome;  /* PROVED agree, REFUTED disagree, UNDECIDED */
} ac_learn_t1_summary;

typedef struct {
    size_t dk_lo, dk_hi;   /* head sizes (inclusive) */
    uint64_t seed;         /* initial weights of every trained head */
    double tol;
    ac_schedule sched;     /* ball stages of the certificates and the exact check */
    int optimize;          /* BFGS iterations of the exact check's refinement */
    const ac_t1_mask *mask; /* NULL: the unmasked head; else trained, certified and
                               decided under this mask (doc/mathematics.md §3.8) */
    int bias;              /* heads with query/key biases (X with a row of ones) */
    size_t starts;         /* heads trained per dk, from the seeds seed, seed + 1, ...,
                              until one is certified within tol (0 or 1: one); the
                              row keeps the one of least certified error */
    /* called after each head size (NULL: none) */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
} ac_learn_t1_opts;

typedef struct {
    ac_learn_t1_row *rows;
    size_t nrows;
    ac_learn_t1_summary s;
    double seconds;
} ac_learn_t1_result;

/* Train and certify the head of size dk and run the exact check, with o's
 * seed, tol, sched, optimize, mask and bias (dk_lo, dk_hi, progress
 * unused).  The instance is validated by the exact check.  row is freed by
 * ac_learn_t1_row_free in every case. */
int ac_learn_t1_row_run(ac_learn_t1_row *row, const ac_mat *X, const ac_mat *P, size_t dk,
                        const ac_learn_t1_opts *o, ac_err *err);
void ac_learn_t1_row_free(ac_learn_t1_row *row);
void ac_learn_t1_summarise(ac_learn_t1_summary *s, const ac_learn_t1_row *rows, size_t nrows,
                           size_t n);
/* The sentence of the comparison (text, JSON "summary"). */
void ac_learn_t1_sentence(char *buf, size_t len, const ac_learn_t1_summary *s, double tol);
/* The whole experiment on (X, P), validated first (messages name xname,
 * pname).  res is freed by ac_learn_t1_result_free in every case. */
int ac_learn_t1_transition(ac_learn_t1_result *res, const ac_mat *X, const char *xname,
                           const ac_mat *P, const char *pname, const ac_learn_t1_opts *o,
                           ac_err *err);
void ac_learn_t1_result_free(ac_learn_t1_result *res);
/* The verdict of the experiment: "INCONSISTENT" when a learned error is
 * below a certified lower bound (a bug: one certificate is wrong), else the
 * outcome's name. */
const char *ac_learn_t1_verdict_name(const ac_learn_t1_summary *s);

/* ---- Theorem 1: one learned head (attncheck train --task fit-p) ----------------- */

/* The trainer of fit-p (attncheck/train.h) on its instance: X and P given
 * in memory (X, P non-NULL, named "X", "P"), else read from cfg's x_path,
 * p_path (made absolute, as checkpoints record them; p_rows: the file is
 * row-stochastic, its transpose is fitted), else generated as rep-theorem's
 * (Gaussian X of fitp_d x fitp_n, Dirichlet P, keyed by cfg's seed),
 * validated by Theorem 1's checks (ac_t1_validate: shapes, finite values,
 * P positive and column-stochastic, messages naming the files), then
 * ac_trainer_init_fitp.  tr is freed by ac_trainer_free in every case. */
int ac_learn_fitp_init(ac_trainer *tr, const ac_train_config *cfg, const ac_mat *X,
                       const ac_mat *P, ac_err *err);

/* The certified claim "max|Softmax((Wk X)^T (Wq X)/sqrt(dk)) - P| <= tol"
 * for the weights the trainer returns (ac_trainer_fitp_instance: the best
 * iterate), by ac_head_certify with the ball stages of sched; the quantity
 * says "of the learned weights". */
int ac_learn_fitp_certify(ac_cert *cert, const ac_trainer *tr, double tol,
                          const ac_schedule *sched, ac_err *err);
/* ---- Theorem 2: students of a fixed-head teacher (separate --student, §4.8) ----------- */

/* Standard-head students (h' heads of size d/h') and a fixed-head student
 * (the teacher's h heads of size dp) are trained by regression onto the
 * teacher g_V (ac_trainer_init_teacher, task teacher: AdamW, inputs
 * X ~ N(0,1), the teacher given in memory); each is evaluated on held-out
 * inputs (the relative error |f - g|^2/|g|^2) and its worst held-out X is
 * certified (ac_t2_certify, tol 0) with bounds on |f - g|_F/|g|_F there; the
 * head counts that represent g_V exactly come from ac_headcount_decide. */

#define AC_LEARN_T2_MAX_HEADS 32
/* A standard student "matches" g_V when its best seed's relative error is
 * within this factor of the fixed student's best seed: a display threshold,
 * not a theorem (doc/mathematics.md §4.8). */
#define AC_LEARN_T2_MATCH_FACTOR 10.0

typedef struct {
    size_t heads[AC_LEARN_T2_MAX_HEADS]; /* the standard students' h' */
    size_t nheads;          /* 0: one standard student with the teacher's h */
    size_t n;               /* tokens of every input (>= 2) */
    size_t seeds;           /* students per shape: seeds seed .. seed + seeds - 1 */
    size_t steps, batch;    /* AdamW steps, inputs per step */
    double lr;              /* peak learning rate (warm-up 10% of the steps, cosine to lr/10) */
    size_t samples;         /* held-out inputs: ac_t2_sample_input(seed, k), k < samples */
    uint64_t seed;
    ac_schedule sched;      /* ball stages of the certificates (empty: stage 0 only) */
    /* called after each trained student (NULL: none) */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
} ac_learn_t2_opts;

/* Default options: the teacher's h, n = 8, 3 seeds, 2000 steps, batch 32,
 * lr 1e-2, 64 held-out inputs, seed 1, ac_schedule_upto(512). */
void ac_learn_t2_opts_default(ac_learn_t2_opts *o);

/* How a standard student compares with the fixed one, against whether its
 * shape represents g_V exactly (ac_hc_answer): its best seed within
 * AC_LEARN_T2_MATCH_FACTOR of the fixed student's best seed exactly when it
 * does ("agrees"), or not ("disagrees"); NONE when there is nothing to
 * compare (the fixed student itself, an undecided head count, NaN). */
typedef enum {
    AC_LEARN_T2_NONE = 0,
    AC_LEARN_T2_AGREES = 1,
    AC_LEARN_T2_DISAGREES = 2
} ac_learn_t2_outcome;

/* One student shape over its seeds (arrays of nseeds entries, curves
 * nseeds x ncurve). */
typedef struct {
    int fixed;                 /* 0: standard (head size d/h'), 1: fixed (head size dp) */
    size_t heads, hs, nparams;
    ac_hc_answer expect;       /* does a layer of this shape represent g_V exactly */
    size_t nseeds, ncurve;
    double *rel;               /* held-out sum |f-g|^2 / sum |g|^2 */
    double *worst_est;         /* |f-g|_F/|g|_F at the worst held-out X (double) */
    size_t *worst_k;           /* which held-out X (0-based) */
    double *cert_lo, *cert_hi; /* certified bounds on |f-g|_F/|g|_F there */
    ac_verdict *sep;           /* "|f(X) - g(X)|_F > 0" at that X */
    double *seconds;           /* training wall time */
    size_t *curve_step;        /* ncurve steps at which the curves were recorded (0: unused) */
    double *curve_loss;        /* training loss (MSE per entry) */
    double *curve_rel;         /* evaluation relative error */
    double mean, sd, min, max; /* of rel over the seeds */
    double ratio;              /* mean / the fixed student's mean (NaN: none) */
    double cert_lo_min, cert_hi_max; /* over the seeds: smallest lower, largest upper bound */
    double worst_est_max;      /* over the seeds */
    ac_learn_t2_outcome outcome;
    ac_mh *layers;             /* the trained students (attncheck/multihead.h) */
} ac_learn_t2_row;

typedef struct {
    ac_t2_hyp hyp;             /* Theorem 2's hypotheses for the teacher */
    ac_headcount hc;           /* which head counts represent the teacher exactly */
    ac_learn_t2_row *rows;     /* the standard students (in the order of opts.heads), then the
                                  fixed one */
    size_t nrows;
    size_t n, samples;
    ac_mat *X;                 /* the held-out inputs (samples of them, d x n) */
    double seconds;
} ac_learn_t2_result;

/* The experiment on the teacher V (validated by the callers: any layer with
 * d, h, hs >= 1).  AC_EUSAGE (field student_heads) when some h' does not
 * divide d, or for options out of range; the trainer's errors.  res is freed
 * by ac_learn_t2_result_free in every case. */
int ac_learn_t2_students(ac_learn_t2_result *res, const ac_mh *V, const ac_learn_t2_opts *o,
                         ac_err *err);
void ac_learn_t2_result_free(ac_learn_t2_result *res);
/* "", "agrees", "disagrees" */
const char *ac_learn_t2_outcome_name(ac_learn_t2_outcome o);
/* The claim "student a's certified relative gap |f-g|_F/|g|_F at its worst
 * held-out X exceeds student b's at b's" for seed index s of both:
 * PROVED when a's lower bound exceeds b's upper bound, REFUTED when a's
 * upper bound is below b's lower bound, UNDECIDED otherwise (the report's
 * row: a standard student against the fixed one). */
ac_verdict ac_learn_t2_compare(const ac_learn_t2_row *a, const ac_learn_t2_row *b, size_t s);

/* ---- Theorem 3.2 on learned weights: kappa of trained heads (condition --model, §6.6) ---- */

/* The condition number of the multi-head block of every layer of a trained
 * transformer (a checkpoint of `attncheck train`, task text or listops), on
 * real inputs (doc/mathematics.md §6.6).
 *
 * The block.  For layer l and one input sequence, paper 2's block
 *     A = [A_1 ... A_h] in R^{N x D},  A_i = Softmax_i V_i,  D = h S,
 * is the concatenation of the head outputs, exactly the rows the model
 * feeds its output projection (nn.h: the attention output "atty"):
 * V_i = Z Wv_i + bv_i with Z the layer's attention input (LN1(x) for pre-LN,
 * x for post-LN), Softmax_i the head's attention (causal for text, padding
 * masked for ListOps).  One row per token; padded rows (ListOps: the
 * positions after the expression) are dropped, so N = the real tokens of
 * the sequence (text: the window length T).
 *
 * kappa of each block by ac_cond_kappa (attncheck/condition.h; the routes
 * and a-priori error bounds of doc/mathematics.md §5.8), one block per
 * sequence of the evaluated batches; per layer the distribution over the
 * blocks (ac_cond_stats).  Nothing here is certified unless opts.certify:
 * these are estimates with the stated a-priori bound rtol on each kappa.
 *
 * Data: the checkpoint's own held-out data (text: evenly spaced windows of
 * the held-out part of its file; listops: the held-out stream), batches x
 * batch sequences; or a file: text, any file whose bytes all occur in the
 * checkpoint's vocabulary (evenly spaced windows of T bytes); listops, one
 * expression per line in the LRA syntax ("[MAX 2 9 [MIN 4 7 ] 0 ]";
 * parentheses are ignored; a tab and anything after it — the label column
 * of LRA's .tsv files — is ignored; a first line starting with "Source" is
 * a header).
 *
 * Determinism: the blocks are computed in parallel, each by one thread,
 * and stored by index: results are identical for every thread count. */

typedef struct {
    const char *data_path; /* NULL: the checkpoint's held-out data */
    size_t batches;        /* batches of sequences (>= 1; default 4) */
    double rtol;           /* relative accuracy of each kappa (default AC_COND_RTOL_DEFAULT) */
    long max_prec;         /* MPFR fallback's highest precision (default 1024) */
    int threads;           /* OpenMP threads (0: OpenMP's default) */
    int initial;           /* ac_learn_kappa_run: also the initial weights (r->init) */
    int certify;           /* rigorous enclosure of every block's kappa (ac_cond_certify)
                              and of the median over the blocks */
    ac_schedule sched;     /* certify: the ball stages */
} ac_learn_kappa_opts;

void ac_learn_kappa_opts_default(ac_learn_kappa_opts *o);

/* One layer. */
typedef struct {
    size_t layer, H, S, D;    /* heads, head size, D = H S */
    size_t n;                 /* blocks (sequences) */
    double *kappa, *sigma1, *sigmin; /* n entries, in sequence order */
    size_t *N;                /* n entries: rows of each block (real tokens) */
    size_t N_min, N_med, N_max; /* N_med: the median of N (lower middle) */
    size_t n_unresolved;      /* blocks whose sigma_min max_prec did not resolve */
    ac_cond_stats st;         /* statistics of kappa over the blocks */
    /* certify: each block's exact kappa lies in [kappa_lo, kappa_hi] (n
     * entries), and the median over the blocks in [median_lo, median_hi]
     * (the median is non-decreasing in every entry); NULL / NaN otherwise */
    double *kappa_lo, *kappa_hi;
    double median_lo, median_hi;
} ac_learn_kappa_layer;

typedef struct {
    ac_train_config cfg;      /* the checkpoint's configuration */
    size_t step;              /* its step */
    size_t nparams;
    size_t width;             /* C: the width of each layer's input */
    size_t L;
    ac_learn_kappa_layer *layers; /* L entries */
    /* opts.initial: the same blocks (same data) for the model's initial
     * weights, drawn as `attncheck train` drew them (seed, init_std);
     * L entries, else NULL */
    ac_learn_kappa_layer *init;
    double init_loss, init_accuracy;
    double loss, accuracy;    /* of the model on the evaluated sequences */
    size_t sequences;
    char source[AC_TRAIN_PATH_MAX + 128]; /* what the data were */
} ac_learn_kappa_result;

/* Load the checkpoint DIR (its data must be readable: ac_trainer_load) and
 * compute every layer's kappa (with opts.initial, first for the initial
 * weights of the same configuration and seed).  r must be zeroed or freed.
 * AC_ENOINPUT, AC_EDATA (bad checkpoint or data file, messages name the
 * file), AC_EUSAGE (a checkpoint of another task or architecture; field
 * "model"), AC_EINTERNAL. */
int ac_learn_kappa_run(ac_learn_kappa_result *r, const char *dir, const ac_learn_kappa_opts *o,
                       ac_err *err);

/* The same for a trainer already in memory (e.g. just trained). */
int ac_learn_kappa_trainer(ac_learn_kappa_result *r, ac_trainer *tr,
                           const ac_learn_kappa_opts *o, ac_err *err);

void ac_learn_kappa_free(ac_learn_kappa_result *r);

/* The Gaussian prediction for a block of N rows and D columns (attncheck/rmt.h),
 * its median and 5-95% band: Edelman's at D = N, else Tracy-Widom's (q05, q95
 * may be NULL). */
int ac_learn_kappa_predict(ac_rmt_pred *p, double *median, double *q05, double *q95, size_t N,
                           size_t D, ac_err *err);

/* "The median kappa of the layer's blocks is at most lim", decided from the
 * certified enclosure [median_lo, median_hi] of the median (opts.certify):
 * PROVED when median_hi <= lim, REFUTED when median_lo > lim, UNDECIDED
 * otherwise (and without an enclosure). */
ac_verdict ac_learn_kappa_median_at_most(const ac_learn_kappa_layer *ly, double lim);

/* `condition --model DIR`: the trained blocks of a checkpoint beside the
 * Gaussian comparison for the shapes of its first layer: the prediction for
 * an N x D Gaussian block (N = layer 0's median rows) and attention heads
 * with Gaussian weights of the model's shapes (ac_cond_run, mode attention,
 * input width C, non-causal).  A measurement: nothing is certified, and the
 * verdict is UNDECIDED. */
typedef struct {
    ac_learn_kappa_opts kappa; /* the trained blocks (initial weights too) */
    size_t trials;             /* samples of the Gaussian-weight heads (>= 1) */
    uint64_t seed;             /* their streams (ac_cond_opts.seed) */
} ac_learn_kappa_compare_opts;

typedef struct {
    ac_learn_kappa_result r;   /* the trained blocks (r.init: the initial weights) */
    ac_rmt_pred pred;          /* the Gaussian N x D block */
    double pred_median, pred_q05, pred_q95; /* its median and band (ac_learn_kappa_predict) */
    ac_cond_result gauss;      /* attention heads with Gaussian weights */
    /* per layer (r.L entries): the trained median over pred_median and over
     * the Gaussian-weight heads' median */
    double *ratio_pred, *ratio_gauss;
    ac_verdict verdict;        /* UNDECIDED: measured, not certified */
    double seconds;
} ac_learn_kappa_compare;

/* Run the comparison on the checkpoint dir.  c is freed by
 * ac_learn_kappa_compare_free in every case.  Errors as ac_learn_kappa_run
 * and ac_cond_run. */
int ac_learn_kappa_compare_run(ac_learn_kappa_compare *c, const char *dir,
                               const ac_learn_kappa_compare_opts *o, ac_err *err);
void ac_learn_kappa_compare_free(ac_learn_kappa_compare *c);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_LEARNED_H */
