/* attncheck/inspect.h — every check on one attention layer of a pretrained
 * model, head by head (attncheck-inspect(1), doc/mathematics.md §6.9).
 *
 * For layer l of a model (attncheck/models.h) and its input X (n x d, the
 * exact input of the q/k/v projections, one row per token) each head i:
 *   - its pattern P_i (row-stochastic [query, key], as the model computes it);
 *   - its class for Theorem 1: biases -> heads on [X'; 1'] (d' = d + 1),
 *     masked (causal, window, or padding by opts.keep) -> the masked criterion
 *     (doc/mathematics.md §3.8);
 *   - the threshold at tol (ac_t1_threshold_at_tol): C(tol) REFUTED below lo,
 *     PROVED from hi; exact when lo == hi; and the exact-representability
 *     threshold;
 *   - the certified distance [lo, hi] of the best head of each smaller size
 *     dk' (ac_t1_check, tightened by the monotone closure over the sizes the
 *     threshold evaluated: dist is non-increasing in dk);
 *   - the self-check: the head's own weights certified to reproduce P_i within
 *     tol (ac_head_certify / ac_head_certify_masked; a REFUTED self-check is a
 *     bug in the reading);
 *   - the circuits QK = Wq_i' Wk_g (d x d) and OV = Wo_i Wv_g (d x d):
 *     certified enclosures of their singular values (on the rank-dk core
 *     of two Cholesky factors, or ac_sv_enclose on an interval enclosure
 *     of the whole product; doc/mathematics.md §6.9) and the certified range of rank
 *     [#(sigma_lo > 0), min(dk, #(sigma_hi > 0))];
 * and per layer
 *   - kappa of the block [A_1 ... A_h], A_i = P_i V_i (n x dk), as computed in
 *     double, enclosed by ac_cond_certify (or proved singular), next to the
 *     Gaussian prediction for an n x h dk block (ac_learn_kappa_predict);
 *   - the hypotheses of Theorem 2 that concern the input: d >= n, rank X = n
 *     (certified), dk >= n.
 * Every verdict is decided here.  The overall verdict of a run is the
 * self-check over every head inspected: PROVED when every head's weights
 * are certified to reproduce its pattern, REFUTED when one is certified not
 * to, UNDECIDED otherwise.
 */
#ifndef ATTNCHECK_INSPECT_H
#define ATTNCHECK_INSPECT_H

#include <stddef.h>

#include "attncheck/commands.h"
#include "attncheck/common.h"
#include "attncheck/condition.h"
#include "attncheck/models.h"
#include "attncheck/theorem1.h"
#include "attncheck/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_INSPECT_MAX_DKP 8

typedef struct {
    double tol;               /* tolerance of C(tol) and of the self-check */
    size_t ndkp;              /* sizes dk' (0: dk/2 and dk/4, those >= 1) */
    size_t dkp[AC_INSPECT_MAX_DKP];
    ac_schedule sched;        /* ball stages */
    double rtol;              /* kappa's relative accuracy */
    long max_prec;            /* kappa's MPFR fallback */
    int weights;              /* keep the compressed heads' weights */
    int optimize;             /* BFGS iterations refining the compressed heads (ac_t1_opts) */
    int threads;              /* OpenMP threads over heads (0: OpenMP's default);
                                 the results do not depend on it */
    int heads_only;           /* the heads only: no kappa, no Theorem 2 hypotheses (a
                                 shard of inspect --shard; the merge computes them) */
    const unsigned char *keep; /* the attention mask: n flags (n = X's rows), 1 a real
                                  token, 0 padding (a key hidden from every query, as
                                  Hugging Face's attention_mask); NULL: every token real */
} ac_inspect_opts;

void ac_inspect_opts_default(ac_inspect_opts *o);

/* The certified distance of the best head of size dk to P_i. */
typedef struct {
    size_t dk;
    ac_verdict verdict;       /* C(tol) at dk */
    double lo, hi;            /* certified dist(dk) in [lo, hi] */
    double decades;           /* log10(hi / lo) (inf when lo = 0) */
    ac_mat Wq, Wk;            /* opts.weights: the head found (dk x d'), else empty */
} ac_inspect_dist;

/* Certified singular values of a circuit (d x d, rank <= dk). */
typedef struct {
    size_t nsv;               /* dk values kept (the largest) */
    double *lo, *hi;          /* nsv each */
    long rank_lo, rank_hi;    /* certified rank range */
    double eps;               /* the absolute part of the enclosure's radius (Weyl's) */
    int route;                /* 0 the d x d product, 1 the rank-dk core, 2 both
                                 intersected (doc/mathematics.md §6.9) */
    double e_core;            /* the core's orthogonality defect max(e_A, e_B) */
} ac_inspect_circuit;

typedef struct {
    size_t layer, head, kv_head, dk;
    size_t dprime;            /* d, or d + 1 with biases */
    int bias, masked;
    char klass[160];          /* the class decided, in words */
    double factor;            /* scale sqrt(dk): the logits' factor over 1/sqrt(dk) */
    ac_t1_tol_threshold thr;
    ac_verdict own;           /* C(tol) at the head's own dk from the threshold */
    size_t ndist;
    ac_inspect_dist dist[AC_INSPECT_MAX_DKP];
    ac_cert self;             /* the head's own weights reproduce P_i within tol */
    char self_note[160];      /* what exactly was certified */
    ac_inspect_circuit qk, ov;
    double pmin, pmax;        /* the smallest and largest weight on the visible keys */
    double seconds;           /* the head's whole time; of which: */
    double t_dist, t_circuits; /* the distances, the circuits (thr.seconds, self.seconds: the
                                  threshold, the self-check) */
} ac_inspect_head;

typedef struct {
    size_t layer, n, d, h, hkv, dk;
    size_t padded;            /* keys hidden by opts.keep (padding) */
    char describe[680];       /* ac_attn_describe and the padding: what changes a pattern */
    size_t nheads;
    ac_inspect_head *heads;
    ac_array patterns;        /* [h, n, n] row-stochastic (every head of the layer) */
    /* Theorem 3.2 */
    ac_cond_sample kappa;     /* kappa~ and its certified enclosure (cert, kappa_lo/hi) */
    ac_verdict kappa_full_rank; /* sigma_min > 0 certified (PROVED), or singular (REFUTED) */
    double pred_median, pred_q05, pred_q95; /* Gaussian n x h dk block */
    /* Theorem 2's hypotheses on the input */
    ac_verdict d_ge_n, rank_x_full, dk_ge_n;
    long rank_x;              /* certified rank of X, -1 if unknown */
    char t2_line[240];
    double seconds, t_threshold, t_dist, t_self, t_circuits, t_kappa;
} ac_inspect_layer;

/* Inspect layer L on X (n x d, the projections' input); heads (NULL: all)
 * lists nheads head indices.  res must be zeroed; freed by
 * ac_inspect_layer_free in every case.  AC_EUSAGE for a head out of range
 * or a dk' out of [1, dk], AC_EDATA for X with a non-finite entry or the
 * wrong width, or an attention mask (opts.keep) leaving a query no key,
 * AC_EINTERNAL. */
int ac_inspect_layer_run(ac_inspect_layer *res, const ac_attn_layer *L, const ac_mat *X,
                         const size_t *heads, size_t nheads, const ac_inspect_opts *o,
                         ac_err *err);
void ac_inspect_layer_free(ac_inspect_layer *res);

/* The keys padding hides (keep[k] == 0 of n; 0 when keep is NULL), and
 * whether a head of layer L is masked under keep: causal, windowed or
 * padded (the masked criterion decides it, doc/mathematics.md §3.8). */
size_t ac_inspect_padded(const unsigned char *keep, size_t n);
int ac_inspect_masked(const ac_attn_layer *L, const unsigned char *keep, size_t n);

/* The overall verdict of layers (see above). */
ac_verdict ac_inspect_verdict(const ac_inspect_layer *ly, size_t nlayers);

/* ---- the command inspect (attncheck-inspect(1); attncheck/commands.h) ---------- */

typedef struct {
    const char *model;              /* --model DIR */
    int have_model;
    size_t layer, head;             /* --layer L, --head H */
    int have_layer, have_head;
    const char *tokens, *hidden, *normed; /* the input: .npy files ... */
    ac_array tokens_mem, hidden_mem, normed_mem; /* ... or arrays in memory (Python) */
    int have_tokens, have_hidden, have_normed;
    const char *attention_mask;     /* --attention-mask FILE: n entries 0/1 ... */
    ac_array attention_mask_mem;    /* ... or in memory (Python) */
    int have_attention_mask;
    double tol;
    int have_tol;
    ac_opt_sizes dk_prime;          /* --dk-prime LIST */
    int have_dk_prime;
    long max_prec;
    long optimize;                  /* --optimize ITERS */
    long threads;
    int have_threads;
    int weights;                    /* --weights: the compressed heads */
    int rope;                       /* --rope: 0 half, 1 interleaved (have_rope) */
    int have_rope;
    size_t shard[2];                /* --shard I/K: pairs of shard I of K */
    int have_shard;
    const char *shard_out;          /* --shard-out FILE: the shard file */
    /* the program's */
    int json;
    const char *csv, *out_dir, *plot;
} ac_inspect_request;

typedef struct {
    ac_model m;
    char model_desc[2048];
    char input_kind[16];            /* "tokens", "hidden", "normed" */
    size_t n;
    unsigned char *keep;            /* --attention-mask: n flags (1 real, 0 padding), or NULL */
    size_t padded;                  /* the tokens it marks padding */
    size_t nlayers;
    ac_inspect_layer *layers;
    ac_verdict verdict;             /* ac_inspect_verdict */
    /* the arrays (--out-dir, Python) */
    ac_array patterns;              /* [layers, heads, n, n] */
    ac_array hidden, normed;        /* [layers, n, d] (hidden: when known) */
    ac_array wq[AC_INSPECT_MAX_DKP], wk[AC_INSPECT_MAX_DKP]; /* --weights: [layers, heads,
                                                                 dk', d'] */
    char wnames[2 * AC_INSPECT_MAX_DKP][32];
    double seconds;
    /* --shard I/K: the (layer, head) pairs [pair_lo, pair_hi) of pairs, written to
       --shard-out (layers empty); merged: the heads came from shard files */
    int shard, merged;
    size_t pair_lo, pair_hi, pairs;
} ac_inspect_result;

extern const ac_command ac_cmd_inspect;

/* The (layer, head) pairs of a run, in the order layer by layer, head by head
 * within a layer (--layer, --head select them), are split into K shards as
 * condition's trials: shard I holds pairs [floor((I-1) P / K), floor(I P / K))
 * (ac_cond_shard_range).  A shard computes every check of its heads only;
 * `attncheck merge` reads a complete set of shard files, recomputes from the
 * model and the input each layer's patterns (the checksum of every head's
 * pattern must be the one the shard recorded), kappa and Theorem 2's
 * hypotheses (which need every head of a layer), and takes each head's
 * record from its shard after checking it (attncheck-merge(1), CHECKS). */

/* merge's result (attncheck-merge(1)): condition's (cond, its first member,
 * inspect = 0), or inspect's (inspect = 1: the options read from the shards'
 * words in request, the merged result in insp). */
typedef struct {
    ac_condition_result cond;
    int inspect;
    ac_inspect_request request;
    ac_inspect_result insp;
    char **words;                   /* the words request's strings point into */
    size_t nwords;
} ac_merge_result;

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_INSPECT_H */
