/* attncheck/model_kappa.h — Theorem 3.2 of paper 2 on learned weights: the
 * condition number of the multi-head block of every layer of a trained
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
 * blocks (ac_cond_stats).  Nothing here is certified: these are estimates
 * with the stated a-priori bound rtol on each kappa.
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
 * and stored by index: results are identical for every thread count.
 */
#ifndef ATTNCHECK_MODEL_KAPPA_H
#define ATTNCHECK_MODEL_KAPPA_H

#include <stddef.h>

#include "attncheck/common.h"
#include "attncheck/condition.h"
#include "attncheck/train.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *data_path; /* NULL: the checkpoint's held-out data */
    size_t batches;        /* batches of sequences (>= 1; default 4) */
    double rtol;           /* relative accuracy of each kappa (default AC_COND_RTOL_DEFAULT) */
    long max_prec;         /* MPFR fallback's highest precision (default 1024) */
    int threads;           /* OpenMP threads (0: OpenMP's default) */
    int initial;           /* ac_mkappa_run: also the initial weights (r->init) */
    int certify;           /* rigorous enclosure of every block's kappa (ac_cond_certify)
                              and of the median over the blocks */
    ac_schedule sched;     /* certify: the ball stages */
} ac_mkappa_opts;

void ac_mkappa_opts_default(ac_mkappa_opts *o);

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
} ac_mkappa_layer;

typedef struct {
    ac_train_config cfg;      /* the checkpoint's configuration */
    size_t step;              /* its step */
    size_t nparams;
    size_t width;             /* C: the width of each layer's input */
    size_t L;
    ac_mkappa_layer *layers;  /* L entries */
    /* opts.initial: the same blocks (same data) for the model's initial
     * weights, drawn as `attncheck train` drew them (seed, init_std);
     * L entries, else NULL */
    ac_mkappa_layer *init;
    double init_loss, init_accuracy;
    double loss, accuracy;    /* of the model on the evaluated sequences */
    size_t sequences;
    char source[AC_TRAIN_PATH_MAX + 128]; /* what the data were */
} ac_mkappa_result;

/* Load the checkpoint DIR (its data must be readable: ac_trainer_load) and
 * compute every layer's kappa (with opts.initial, first for the initial
 * weights of the same configuration and seed).  r must be zeroed or freed.  AC_ENOINPUT,
 * AC_EDATA (bad checkpoint or data file, messages name the file),
 * AC_EUSAGE (a checkpoint of another task or architecture; field
 * "model"), AC_EINTERNAL. */
int ac_mkappa_run(ac_mkappa_result *r, const char *dir, const ac_mkappa_opts *o, ac_err *err);

/* The same for a trainer already in memory (e.g. just trained). */
int ac_mkappa_trainer(ac_mkappa_result *r, ac_trainer *tr, const ac_mkappa_opts *o,
                      ac_err *err);

void ac_mkappa_free(ac_mkappa_result *r);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_MODEL_KAPPA_H */
