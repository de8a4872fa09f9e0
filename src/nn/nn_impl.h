/* nn_impl.h — internals of src/nn shared between its files (not
 * installed), and the map of the module.
 *
 * Files of src/nn/ (this map; tests/docs.sh checks it against local.mk):
 *   the model (attncheck/nn.h):
 *     model.c           configuration check, tensor table, allocation,
 *                       initial weights;
 *     forward.c, backward.c  the passes of the whole model (their parallel
 *                       structure: below);
 *     adamw.c           the gradient norm and the AdamW step;
 *     layers.c          the layers, each a forward/backward pair on flat
 *                       arrays, and their naive reference kernels;
 *     attn_fused.c, attn_fused.h  BLAS-free multi-head attention for small
 *                       heads;
 *     attn_tiled.c      causal attention on the register-tiled product;
 *     softmax_fused.c   the softmax of one attention row in AVX-512 vectors;
 *     attn_merged.c     the attention block with each head's two products
 *                       merged (heads at least as wide as the model);
 *     nn_tgemm.c, nn_tgemm.h  the register-tiled matrix product;
 *   the trainer (attncheck/train.h):
 *     config.c          defaults, names, schedule;
 *     data_text.c, data_listops.c, data_teacher.c, data_fitp.c  one file per
 *                       data source: each opens its data (completing the
 *                       configuration) and fills batches;
 *     fitp_opt.c        fit-p's optimisation: the best iterate, BFGS;
 *     trainer.c         init, steps, evaluation;
 *     checkpoint.c      config.json, the staged directory swap;
 *     checkpoint_load.c reading a checkpoint back;
 *   nn_impl.h           this header;
 *   test/               the unit tests, one Check program per file:
 *     test_nn.c         layers and models against finite differences, thread
 *                       independence, merged heads and their choice by the
 *                       flop count, ac_nn_exp;
 *     test_adamw.c      the AdamW step against its formula;
 *     test_nn_attn.c    the attention kernels against their naive twins;
 *     test_nn_tgemm.c   nn_tgemm against its twin, bit for bit;
 *     test_train.c      tasks, schedule, checkpoints and resume;
 *     test_fitp.c       fit-p's optimisation against an independent
 *                       evaluation of the head.
 */
#ifndef AC_NN_IMPL_H
#define AC_NN_IMPL_H

#include <stdint.h>
#include <string.h>

#include "attncheck/blas.h"
#include "attncheck/linalg.h"
#include "attncheck/nn.h"
#include "attncheck/train.h"

/* ================================================================ trainer */

/* Random stream ids (stream_a of ac_rng_init), one per use. */
#define STREAM_TEXT 0x74657874ull          /* "text": training windows */
#define STREAM_LISTOPS 0x6c6f7073ull       /* "lops": training examples */
#define STREAM_LISTOPS_EVAL 0x6c6f7065ull  /* "lope": held-out examples */
#define STREAM_TEACH 0x74636872ull         /* "tchr": teacher inputs / samples */
#define STREAM_TEACH_EVAL 0x74636865ull    /* "tche": teacher held-out inputs */

/* The task's data and the buffers of one batch. */
struct ac_train_data {
    char summary[2 * AC_TRAIN_PATH_MAX + 320];
    uint64_t checksum;      /* of the input files / instance (0: generated on the fly) */
    /* one batch (B x T), in the row layout of nn.h */
    size_t B, T;
    int32_t *tokens, *targets;
    double *x, *y;
    /* text */
    int32_t *ids;
    size_t nids, ntrain;
    size_t nvocab;
    unsigned char vocab[256];
    /* listops */
    int32_t *expr;
    size_t *len;            /* (B) CLS + expression tokens of each sequence */
    /* teacher */
    int gen;                /* generator mode */
    ac_nn_model teacher;
    double *tx, *ty;        /* dataset mode: (m, n, d), (m, n, e) */
    size_t tm, td, te, ttrain;
    /* fit-p */
    ac_mat X, P;
    unsigned char *keep;    /* (n,n) row layout: keep[t * n + j] = key j visible to
                               query t (the mask of a masked head), or NULL */
    struct train_fitp_state *fitp; /* best iterate, BFGS (fitp_opt.c) */
};

/* Each data source: *_open reads or generates the data and completes c
 * (sizes the data fix: vocabulary, widths, n and d, ...); *_batch fills b
 * (whose B and T are set, the rest zeroed) with split 0 = the training
 * batch of step `index` (1-based), split 1 = evaluation batch `index`
 * (0-based), drawing from the streams above keyed by the seed. */
int train_text_open(ac_train_data *d, ac_train_config *c, ac_err *err);
void train_text_batch(ac_train_data *d, const ac_train_config *c, int split, size_t index,
                      ac_nn_batch *b);
int train_listops_open(ac_train_data *d, ac_train_config *c, ac_err *err);
int train_listops_batch(ac_train_data *d, const ac_train_config *c, int split, size_t index,
                        ac_nn_batch *b, ac_err *err);
/* the teacher: from c->teacher_dir, or the layer in memory when layer != NULL */
int train_teacher_open(ac_train_data *d, ac_train_config *c, const ac_mh *layer, ac_err *err);
/* Add sum (output - target)^2 and sum target^2 of the last forward pass of a
 * regression model on b to *sse, *syy (data_teacher.c). */
void train_regress_sums(const ac_nn_model *m, const ac_nn_batch *b, double *sse, double *syy);
int train_teacher_batch(ac_train_data *d, const ac_train_config *c, int split, size_t index,
                        ac_nn_batch *b, ac_err *err);
int train_fitp_open(ac_train_data *d, ac_train_config *c, const ac_mat *X, const char *xname,
                    const ac_mat *P, const char *pname, ac_err *err);
void train_fitp_batch(ac_train_data *d, const ac_train_config *c, ac_nn_batch *b);
/* after train_fitp_open: the mask omega (n x n, row = key, column = query) */
int train_fitp_mask(ac_train_data *d, const unsigned char *omega, ac_err *err);

/* fit-p's optimisation state (fitp_opt.c): the best iterate and BFGS.
 *   train_fitp_setup    after the model is built (allocates d->fitp);
 *   train_fitp_free     releases it;
 *   train_fitp_kl       KL(P || S) summed over columns, from the last
 *                       forward pass (before its backward);
 *   train_fitp_note     after an evaluation: keep the weights if their
 *                       max|S - P| is the best so far;
 *   train_fitp_bfgs_step one BFGS iteration (ac_trainer_step's BFGS branch);
 *   train_fitp_weights  the parameters of the best iterate (or the current
 *                       ones before any evaluation). */
int train_fitp_setup(ac_trainer *tr, ac_err *err);
void train_fitp_free(ac_train_data *d);
void train_fitp_reset(ac_trainer *tr); /* after a load: forget the best, restart BFGS */
void train_fitp_moved(ac_trainer *tr); /* a step leaves the best iterate */
/* The trainer's state is the best iterate's (a checkpoint of it says so). */
int train_fitp_best_current(const ac_trainer *tr);
double train_fitp_kl(const ac_trainer *tr);
void train_fitp_note(ac_trainer *tr, double maxdev, double kl);
int train_fitp_bfgs_step(ac_trainer *tr, ac_step_info *info, ac_err *err);
const double *train_fitp_weights(const ac_trainer *tr);

/* The batch of (split, index) for the trainer's task (trainer.c). */
int train_fill_batch(ac_trainer *tr, int split, size_t index, ac_nn_batch *b, ac_err *err);

/* Head size of a configuration: width/heads (standard) or head_dim (fixed). */
size_t train_head_size(const ac_nn_config *m);

/* ---- checksums: FNV-1a (core/fnv.h) */
#include "core/fnv.h"

/* ================================================================ model */

/* Parallel structure (deterministic for any thread count;
 * doc/mathematics.md §6.3)
 * -------------------------------------------------------
 * Everything except the parameter gradients is local to a sequence, so the
 * batch is cut into fixed chunks of whole sequences (about CHUNK_ROWS rows;
 * the cut depends only on B and T) and OpenMP runs the chunks:
 *   forward:  all layers of a chunk, its head and per-row losses;
 *   backward: per layer, phase 1 runs the chunks through the layer's
 *             activation gradients; phase 2 computes the layer's parameter
 *             gradients as fixed tiles (TILE x TILE blocks of each weight
 *             gradient, one product over all N rows each: nn_tgemm on
 *             AVX-512 builds, else dgemm; LayerNorm and
 *             embedding gradients as single tasks).
 * Each number is produced by one fixed piece of code on fixed data, and
 * scalar reductions (loss, gradient norm) are summed in a fixed order, so
 * the results are bit-identical whatever the number of threads.
 */

#define CHUNK_ROWS 256
#define TILE_O 128
#define TILE_I 256
#define NORM_BLOCK 4096

/* Slots of a transformer layer's tensors, in table order. */
enum {
    L_LN1W, L_LN1B, L_QKVW, L_QKVB, L_PROJW, L_PROJB, L_LN2W, L_LN2B, L_FCW, L_FCB, L_FCPW,
    L_FCPB, L_NTENSORS
};

/* Activations of one transformer layer (rows of the whole batch). */
typedef struct {
    double *ln1, *ln1_mean, *ln1_rstd, *qkv, *att, *atty, *res2, *ln2, *ln2_mean, *ln2_rstd, *fch,
        *fchg, *res3;
} layer_acts;

typedef enum { TK_LINEAR, TK_LN, TK_EMBED, TK_HEADPROJ } task_kind;

/* One piece of phase 2: a weight-gradient tile, a LayerNorm's parameters,
 * the embedding, or one head of the per-head output projection. */
typedef struct {
    task_kind kind;
    double *dw, *db;
    const double *dout, *inp, *mean, *rstd;
    size_t N, IC, OC, o0, o1, i0, i1;
    double cost;
} nn_task;

struct ac_nn_work {
    size_t B, T;              /* of the last forward */
    size_t spc;               /* sequences per chunk (for the last forward's T) */
    int have_forward;
    /* tensor indices */
    long i_wte, i_win, i_bin, i_wpe, i_layer0, i_lnfw, i_lnfb, i_headw, i_headb, i_wq, i_wo;
    /* inputs copied from the batch */
    int32_t *tokens, *targets;
    size_t *len;              /* (B) real tokens per sequence (batch len), else T */
    int have_len;             /* the last batch had len */
    unsigned char *keep;      /* (T,T) the last batch's keep (ARCH_SCORES; allocated at
                               * the first batch with one) */
    int have_keep;            /* the last batch had keep */
    double *x, *y;
    /* activations */
    double *acts;
    double *enc;              /* (N,C) embedding output / layer-0 input */
    layer_acts *layers;
    double *lnf, *lnf_mean, *lnf_rstd, *pooled, *logits, *losses;
    /* ARCH_ATTENTION / ARCH_SCORES */
    double *qkv, *att, *pre, *atty, *out;
    /* gradient scratch (one layer) */
    double *gacts;
    double *gout, *gx, *gres2, *gln, *gln1, *gf, *gatty, *gqkv, *glnf, *gpool;
    double *scratch;          /* per chunk: T*T */
    double *bias_part;        /* per chunk: column sums of one layer's bias gradients
                               * (transformer: FCPB C, FCB F, PROJB C, QKVB 3D) */
    size_t nchunks_max;
    size_t *chunk_correct;
    double *chunk_maxdev;
    double *norm_part;
    nn_task *tasks;
    size_t ntasks_cap;
    /* merged heads (attn_merged.c; transformer with head size >= width):
     * the mode (NN_MERGE_*), whether this forward pass (and the backward
     * pass after it) runs merged, per layer Mq (C,HC), Mv (C,HC), uq (HC),
     * be (C), and one layer's gradients of them: dMq^T, dMv^T as rows
     * [0,HC) and [2HC,3HC) of a (3HC, C) block, then duq (HC), dbe (C) */
    int merge, merge_pass;
    double *mrg, *mrg_grad;
};

/* Key j visible to query row t (of T) in the last batch: keep, or every key. */
static inline int nn_visible(const ac_nn_work *w, size_t t, size_t j)
{
    return !w->have_keep || w->keep[t * w->T + j];
}

/* A size as the BLAS's integer type (cblas.h's blasint). */
#define BLAS_INT(x) ((blasint)(x))

/* The parameters and the gradient of tensor i. */
#define PAR(m, i) ((m)->params + (m)->tensors[(i)].offset)
#define GRD(m, i) ((m)->grads + (m)->tensors[(i)].offset)

/* The kernels call BLAS from OpenMP threads: BLAS itself runs one thread
 * for the duration of a forward or backward pass. */
static inline int blas_single(void)
{
    int t = ac_blas_get_threads();
    if (t != 1)
        ac_blas_set_threads(1);
    return t;
}

static inline void blas_restore(int t)
{
    if (t != 1)
        ac_blas_set_threads(t);
}

static inline size_t seqs_per_chunk(size_t T)
{
    size_t s = CHUNK_ROWS / T;
    return s ? s : 1;
}

/* The input and the output of transformer layer l (rows of the batch). */
static inline const double *layer_input(const ac_nn_model *m, size_t l)
{
    const ac_nn_work *w = m->w;
    if (l == 0)
        return w->enc;
    return m->cfg.ln == AC_NN_LN_PRE ? w->layers[l - 1].res3 : w->layers[l - 1].ln2;
}

static inline const double *layer_output(const ac_nn_model *m, size_t l)
{
    const ac_nn_work *w = m->w;
    return m->cfg.ln == AC_NN_LN_PRE ? w->layers[l].res3 : w->layers[l].ln2;
}

/* ac_nn_attention_forward with a key padding mask (layers.c): in sequence b
 * no row attends to a key j >= klen[b] (weight 0; the softmax runs over the
 * remaining keys); klen NULL or klen[b] outside [1, T): no mask.  The
 * backward needs no mask: ac_nn_softmax_backward gives dpre = att (datt -
 * sum att datt) = 0 wherever att = 0. */
void nn_attention_forward_len(double *out, double *att, const double *qkv, size_t B, size_t T,
                              size_t H, size_t S, int causal, const size_t *klen);

/* ---- merged heads (attn_merged.c; doc/mathematics.md §6.7) ----
 * nn_merge_eligible: a transformer whose head size is at least its width;
 * nn_merge_set: NN_MERGE_AUTO (the default after ac_nn_model_init, if
 *   eligible): each forward pass runs merged when nn_merge_pays for its
 *   batch; NN_MERGE_OFF: the unmerged block, whose per-head outputs (atty)
 *   some callers read (src/learned/kappa.c); NN_MERGE_ON: merged whatever
 *   the batch (tests compare the two forms on small batches);
 * nn_merge_pays: the merged block multiplies fewer flops than the unmerged
 *   one on a batch of B sequences of T tokens (the count of §6.7 (iii));
 * nn_merged_prepare: the merged weights of every layer, from the
 *   parameters (at the start of each forward pass);
 * nn_merged_block_forward: res (N,C) = xres + attention block of xin, with
 *   qkv (N,3HC), atty (N,HC), att (nb,H,T,T) as in the unmerged layer;
 * nn_merged_block_backward: gxin (=, or += if accumulate) the gradient of
 *   xin given gres; gatty, gqkv, scratch as in the unmerged layer;
 * nn_merged_param_grads: after the phase-2 tiles have filled w->mrg_grad
 *   for layer l, add the gradients of Wqkv, bqkv, Wproj. */
enum { NN_MERGE_OFF = 0, NN_MERGE_AUTO = 1, NN_MERGE_ON = 2 };
int nn_merge_eligible(const ac_nn_model *m);
void nn_merge_set(ac_nn_model *m, int mode);
int nn_merge_pays(const ac_nn_model *m, size_t B, size_t T);
void nn_merged_prepare(ac_nn_model *m);
void nn_merged_block_forward(const ac_nn_model *m, size_t l, double *res, double *qkv,
                             double *atty, double *att, const double *xin, const double *xres,
                             size_t nb, const size_t *klen);
void nn_merged_block_backward(const ac_nn_model *m, size_t l, double *gxin, int accumulate,
                              const double *gres, double *gatty, double *gqkv, double *scratch,
                              const double *qkv, const double *att, size_t nb);
void nn_merged_param_grads(ac_nn_model *m, size_t l);

/* ---- checkpoints (checkpoint.c writes, checkpoint_load.c reads) ---- */
#define AC_CKPT_FORMAT "attncheck-train-checkpoint"
#define AC_CKPT_VERSION 1
/* Index of s in the NULL-terminated names (the enums' spellings,
 * ac_task_names, ac_nn_arch_names, ...: config.c), or -1. */
int train_name_index(const char *s, const char *const *names);

#endif /* AC_NN_IMPL_H */
