/* attncheck/learned.h — the theorems on learned weights: the experiments
 * that train heads or layers with the training stack (attncheck/train.h)
 * and certify what was learned with the checks of the theorems
 * (doc/mathematics.md §6.5, §4.8, §6.6).
 *
 * Each experiment decides its own verdict here, in the library; the program
 * (rep-theorem --learn, separate --student, condition --model, report) and
 * the Python package only present it.  The module's files: t1_transition.c
 * (rep-theorem --learn), kappa.c (the blocks of trained heads, condition
 * --model).
 */
#ifndef ATTNCHECK_LEARNED_H
#define ATTNCHECK_LEARNED_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/condition.h"
#include "attncheck/json.h"
#include "attncheck/rmt.h"
#include "attncheck/train.h"
#include "attncheck/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Theorem 1: the learned transition (rep-theorem --learn, §6.5) ---------------- */

/* One head size dk: one head trained by fit-p (BFGS on KL(P || Softmax),
 * evaluated at every step, the best iterate kept), its weights certified at
 * tol; beside it the exact criterion of doc/mathematics.md §3.4 for the same
 * dk (ac_t1_check). */
typedef struct {
    size_t dk;
    /* learned */
    size_t steps, max_steps, best_step;
    int stalled;               /* BFGS stopped: no further progress */
    double dev, kl;            /* best iterate, in double */
    ac_cert learned;           /* max|Softmax - P| <= tol for its weights, certified */
    double learn_seconds;
    /* the exact criterion */
    ac_verdict verdict;        /* C(tol) */
    ac_verdict exact;          /* exact representability */
    double dist_lo, dist_hi;
    long rank;
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
    ac_verdict outcome;  /* PROVED agree, REFUTED disagree, UNDECIDED */
} ac_learn_t1_summary;

typedef struct {
    size_t dk_lo, dk_hi;   /* head sizes (inclusive) */
    uint64_t seed;         /* initial weights of every trained head */
    double tol;
    ac_schedule sched;     /* ball stages of the certificates and the exact check */
    int optimize;          /* BFGS iterations of the exact check's refinement */
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

/* Train and certify the head of size dk and run the exact check. */
int ac_learn_t1_row_run(ac_learn_t1_row *row, const ac_mat *X, const ac_mat *P, size_t dk,
                        uint64_t seed, double tol, const ac_schedule *sched, int optimize,
                        ac_err *err);
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
