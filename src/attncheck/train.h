/* attncheck/train.h — training the attention stack of attncheck/nn.h:
 * tasks and their data, the learning-rate schedule, AdamW steps with
 * gradient clipping, evaluation, and checkpoints.
 *
 * A trainer owns a configuration, the task's data and a model.  The program
 * (attncheck train) drives it: ac_trainer_step() does one optimisation step,
 * ac_trainer_eval() evaluates on the held-out data, ac_trainer_save() and
 * ac_trainer_load() write and read checkpoints.
 *
 * Tasks
 * -----
 *   fit-p    Theorem 1 on learned weights: one head (Wq, Wk of size dk x d,
 *            the layout of rep-theorem's Wq.npy, Wk.npy) trained so that
 *            Softmax((Wk X)^T (Wq X)/sqrt(dk)) matches a given P on a given X
 *            (X d x n, P n x n column-stochastic, as read by rep-theorem).
 *            The instance is given in memory (ac_trainer_init_fitp; read
 *            or generated, Gaussian X and Dirichlet P, and validated by
 *            ac_learn_fitp_init of attncheck/learned.h).
 *            Loss: mean over the n columns of the cross-entropy
 *            -sum_i P_ij log S_ij, minimal exactly when S = P; the loss
 *            *reported* (ac_step_info.loss, ac_eval_info.loss) is instead
 *            KL(P || S) summed over the columns, sum_ij P_ij log(P_ij/S_ij)
 *            (the same up to the constant entropy of P, so the same
 *            gradient, and 0 exactly when S = P).  Default optimiser BFGS.
 *            Every evaluation keeps the best iterate so far by
 *            max|S - P| (ac_trainer_fitp_best); the weights returned by
 *            ac_trainer_fitp_instance are the best ones.  In the row
 *            layout of nn.h the tokens are X^T and the target rows P^T.
 *   teacher  regression onto the output of a given attention layer g
 *            (Theorem 2), from a directory holding either the layer's
 *            weights (generator mode: Wq.npy, Wk.npy, Wv.npy of shape
 *            (h, s, d) or (s, d), Wo.npy of shape (h, d, s) or (d, s) — the
 *            stacks written by `attncheck separate` —, or the same with the
 *            letter V (Vq.npy ... Vo.npy, a layer g_V); inputs X are drawn
 *            i.i.d. N(0,1), targets are g(X)), or fixed pairs (dataset
 *            mode: X.npy and Y.npy of shape (m, d, n) or (d, n) and
 *            (m, e, n) or (e, n), columns = tokens as in paper 1); or the
 *            layer given in memory (ac_trainer_init_teacher).  Loss:
 *            mean squared error.
 *   listops  the ListOps task of the Long Range Arena (Tay et al. 2021,
 *            used in paper 2), generated: nested [MIN [MAX [MED [SM ...]
 *            over digits, label = the value 0-9; sequence classification.
 *   text     character-level language model of a text file, the last
 *            holdout fraction of the file held out for evaluation.
 *
 * Random streams (attncheck/rng.h), all keyed by the seed: weights by
 * (seed, "init", tensor), the batch of step s by (seed, task stream, s),
 * evaluation data by a separate stream, so the data order depends only on
 * the seed and the step number: a run resumed from a checkpoint at step s
 * continues bit-identically, and results never depend on the thread count.
 */
#ifndef ATTNCHECK_TRAIN_H
#define ATTNCHECK_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/multihead.h"
#include "attncheck/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AC_TASK_FIT_P = 0, AC_TASK_TEACHER, AC_TASK_LISTOPS, AC_TASK_TEXT } ac_task_kind;
typedef enum { AC_SCHED_COSINE = 0, AC_SCHED_LINEAR, AC_SCHED_CONSTANT } ac_sched_kind;
/* The optimiser: AdamW (every task), or BFGS (fit-p only: GSL's
 * vector_bfgs2 on the whole loss, one BFGS iteration per step; the default
 * of fit-p). */
typedef enum { AC_OPT_ADAMW = 0, AC_OPT_BFGS = 1 } ac_train_optimizer;

#define AC_TRAIN_PATH_MAX 1024

/* ListOps vocabulary: PAD, CLS, digits 0-9, [MIN, [MAX, [MED, [SM, ]. */
enum {
    AC_LISTOPS_PAD = 0, AC_LISTOPS_CLS = 1, AC_LISTOPS_DIGIT0 = 2, AC_LISTOPS_MIN = 12,
    AC_LISTOPS_MAX = 13, AC_LISTOPS_MED = 14, AC_LISTOPS_SM = 15, AC_LISTOPS_END = 16,
    AC_LISTOPS_VOCAB = 17
};

typedef struct {
    ac_task_kind task;
    ac_nn_config model;     /* sizes the data fixes are filled in by ac_trainer_init */
    size_t batch, seq, steps, warmup;
    double lr, min_lr, beta1, beta2, eps, weight_decay, clip, init_std;
    ac_sched_kind schedule;
    ac_train_optimizer optimizer;
    uint64_t seed;
    size_t eval_every, eval_batches;
    /* fit-p: the X, P files the instance was read from (empty: generated with
     * fitp_d x fitp_n and the seed, or given in memory); read by
     * ac_learn_fitp_init (attncheck/learned.h), recorded in checkpoints */
    char x_path[AC_TRAIN_PATH_MAX], p_path[AC_TRAIN_PATH_MAX];
    int p_rows;            /* fit-p: the P file is row-stochastic (PyTorch's layout): its
                              transpose is fitted */
    size_t fitp_n, fitp_d, fitp_dk;
    /* teacher: the directory, and the letter of its weight files (W for
     * Wq.npy ... Wo.npy, V for Vq.npy ... Vo.npy; 0 = V if Vq.npy exists --
     * the fixed-head layer g_V of a directory written by `attncheck
     * separate`, which holds both -- else W) */
    char teacher_dir[AC_TRAIN_PATH_MAX];
    char teacher_stack;
    /* text */
    char text_path[AC_TRAIN_PATH_MAX];
    double holdout;         /* text, teacher (dataset mode) */
    /* listops */
    size_t listops_depth, listops_args, listops_min, listops_max;
} ac_train_config;

/* Defaults for a task: the model (2 pre-LN layers, width 64, 4 standard
 * heads, FFN 4x, ...), AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight
 * decay 0.01), warm-up 10% of the steps then cosine decay to lr/10,
 * clipping at norm 1, seed 1.  See attncheck-train(1) for each task's. */
void ac_train_config_default(ac_train_config *c, ac_task_kind task);

/* The names of the tasks, schedules and optimisers, in enum order,
 * NULL-terminated (the one spelling of each: config.json, the options of
 * attncheck train): "fit-p", "teacher", "listops", "text"; "cosine",
 * "linear", "constant"; "adamw", "bfgs". */
extern const char *const ac_task_names[];
extern const char *const ac_sched_names[];
extern const char *const ac_train_optimizer_names[];

/* "fit-p", "teacher", "listops", "text"; and back (AC_EUSAGE on others). */
const char *ac_task_name(ac_task_kind t);
int ac_task_parse(const char *s, ac_task_kind *t);
/* "adamw", "bfgs"; and back (AC_EUSAGE on others). */
const char *ac_train_optimizer_name(ac_train_optimizer o);
int ac_train_optimizer_parse(const char *s, ac_train_optimizer *o);

/* A path of the configuration (x_path, text_path, ...; AC_TRAIN_PATH_MAX
 * bytes) made absolute in place (realpath), as checkpoints record paths;
 * "" is left alone.  AC_ENOINPUT "PATH: cannot open: ..." when it does not
 * exist, AC_EUSAGE when the absolute path is too long. */
int ac_train_path_absolute(char *path, ac_err *err);

/* The learning rate at step s = 1, 2, ..., steps: linear warm-up from
 * lr/warmup to lr over the first `warmup` steps, then cosine (or linear)
 * decay from lr to min_lr at the last step, or constant. */
double ac_train_lr(const ac_train_config *c, size_t step);

/* First field in which a and b differ, by its name in ac_train_config or
 * ac_nn_config (e.g. "lr", "ln", "text_path"; "head_dim" when the head sizes
 * differ), ignoring steps, eval_every and eval_batches (which a resumed run
 * may change); NULL when they agree.  For the fields of ac_err.fields. */
const char *ac_train_config_diff(const ac_train_config *a, const ac_train_config *b);

typedef struct ac_train_data ac_train_data; /* private */

typedef struct {
    ac_train_config cfg;
    ac_train_data *data;
    ac_nn_model model;
    size_t step;              /* steps done */
} ac_trainer;

/* Load or generate the task's data, complete cfg from it (vocabulary,
 * widths of the teacher, ...), build the model and draw its initial
 * weights.  AC_ENOINPUT / AC_EDATA for unreadable or bad input files
 * (messages name the file), AC_EUSAGE for an impossible configuration,
 * AC_EINTERNAL.  fit-p's instance is not read here: ac_trainer_init_fitp
 * (fit-p without it is AC_EUSAGE).  tr must be freed with ac_trainer_free
 * in every case. */
int ac_trainer_init(ac_trainer *tr, const ac_train_config *cfg, ac_err *err);
/* fit-p on the instance X (d x n), P (n x n) in memory, copied: as
 * ac_trainer_init, cfg completed from the instance (n, d, dk = d unless
 * set).  The values are not checked here (the checks of Theorem 1 belong
 * above the training stack: attncheck/learned.h, ac_learn_fitp_init, reads
 * or generates the instance and validates it), the shapes are (AC_EDATA).
 * xname, pname name X and P in messages and in the data summary (NULL:
 * "X", "P"); cfg's x_path and p_path, when set, record the files they
 * were read from (in checkpoints; a resumed run compares them). */
int ac_trainer_init_fitp(ac_trainer *tr, const ac_train_config *cfg, const ac_mat *X,
                         const char *xname, const ac_mat *P, const char *pname, ac_err *err);
/* fit-p for a masked head (doc/mathematics.md §3.8): as ac_trainer_init_fitp,
 * with omega (n x n, row = key i, column = query j, as P; NULL: none) the
 * keys each query sees: the softmax of a column runs over its visible keys
 * (a hidden key gets weight exactly 0) and the loss over the visible
 * entries of P, so hidden entries reach neither the loss nor the gradient
 * (ac_nn_batch's keep).  A head with biases is fitted as an unbiased head
 * on X with a row of ones appended (pass that X).  A checkpoint records no
 * mask: `attncheck train --resume` cannot resume such a trainer (the
 * instance's checksum includes the mask). */
int ac_trainer_init_fitp_masked(ac_trainer *tr, const ac_train_config *cfg, const ac_mat *X,
                                const char *xname, const ac_mat *P, const char *pname,
                                const unsigned char *omega, ac_err *err);
/* teacher with its layer in memory (a g_V built or loaded by the caller,
 * e.g. `separate --student`): as ac_trainer_init, with the generator mode's
 * layer copied from teacher instead of read from cfg's directory (cfg's
 * teacher_dir must be empty; teacher_stack is ignored).  The data summary
 * says "teacher in memory"; a checkpoint of such a trainer records no
 * teacher directory and cannot be resumed by `attncheck train --resume`. */
int ac_trainer_init_teacher(ac_trainer *tr, const ac_train_config *cfg, const ac_mh *teacher,
                            ac_err *err);
void ac_trainer_free(ac_trainer *tr);

/* A short description of the data ("text.txt: 12345 characters, 65 in the
 * vocabulary, 1234 held out"). */
const char *ac_trainer_data_summary(const ac_trainer *tr);

typedef struct {
    size_t step;        /* the step just done (1-based) */
    double lr, loss, grad_norm;
    size_t tokens;      /* tokens processed by this step */
    double accuracy;    /* LM / classification: fraction correct (else NaN) */
    double maxdev;      /* fit-p, teacher: max |output - target| (else NaN) */
    int done;           /* BFGS: no further progress is possible (the line
                           search found no decrease, also after a restart, or
                           the gradient is 0); later steps change nothing */
} ac_step_info;

/* One step: the batch of step tr->step + 1, forward, backward, gradient
 * clipping at cfg.clip (0 = none), AdamW at the scheduled learning rate;
 * or (optimizer BFGS) one BFGS iteration on the loss of the batch. */
int ac_trainer_step(ac_trainer *tr, ac_step_info *info, ac_err *err);

typedef struct {
    double loss;        /* mean over the evaluation data */
    double accuracy;    /* LM / classification (else NaN) */
    double maxdev;      /* fit-p, teacher (else NaN) */
    double rel_mse;     /* teacher: sum (output - target)^2 / sum target^2 over the
                           evaluation data, the relative error |f - g|^2/|g|^2 (else NaN) */
    size_t count;       /* rows or sequences evaluated */
} ac_eval_info;

/* Evaluate on the held-out data (fit-p: the instance itself; the
 * evaluation also keeps the current weights as the best iterate when their
 * max|S - P| is below the best so far). */
int ac_trainer_eval(ac_trainer *tr, ac_eval_info *ev, ac_err *err);

/* fit-p: the best iterate of the evaluations so far: its step, max|S - P|
 * and KL(P || S) summed over columns (all in double).  Returns 0 (and
 * leaves the outputs alone) before the first evaluation or for another
 * task.  A resumed run tracks the best from the resumed step on; a
 * checkpoint of the best iterate (below) is its best so far. */
int ac_trainer_fitp_best(const ac_trainer *tr, size_t *step, double *maxdev, double *kl);

/* fit-p: make the best iterate the trainer's state again: its weights, its
 * AdamW moments and its step (the state the run had at that evaluation),
 * so that ac_trainer_save writes the weights ac_trainer_fitp_instance
 * returns (the ones certified) as a checkpoint of their step; its
 * config.json then says so ("best": {"step", "maxdev", "kl"}), and
 * ac_trainer_load makes it the resumed run's best so far (evaluated again;
 * the run continues bit-identically from that step, as the AdamW run that
 * wrote it did; BFGS starts afresh).  Returns 1, or 0 (nothing changed)
 * before the first evaluation or for another task. */
int ac_trainer_fitp_restore_best(ac_trainer *tr);

/* Checkpoints: the directory DIR holds config.json (the configuration, the
 * step, and an FNV-1a checksum of every tensor), one .npy per parameter
 * tensor (named as in the model, e.g. layer0.attn.qkv.weight.npy; the
 * attention stacks of the bare layer as Wq.npy ... Wo.npy), and the AdamW
 * moments adamw.m.npy, adamw.v.npy (flat, in tensor order).  Written into a
 * fresh sibling directory and swapped in with one atomic rename, so DIR is
 * always either the previous complete checkpoint or the new one.  An
 * existing DIR that is not an attncheck checkpoint is never replaced
 * (AC_ECANTCREAT). */
int ac_trainer_save(const ac_trainer *tr, const char *dir, ac_err *err);

/* Read the configuration stored in a checkpoint (to rebuild the trainer
 * before ac_trainer_load).  AC_ENOINPUT, AC_EDATA. */
int ac_train_config_read(const char *dir, ac_train_config *cfg, size_t *step, ac_err *err);

/* Load a checkpoint into tr, whose configuration must match the stored one
 * (ac_train_config_diff).  Every tensor is checked (presence, shape,
 * checksum) before anything in tr changes: a missing, truncated, altered
 * or mismatched file is AC_EDATA naming it, and tr is left as it was. */
int ac_trainer_load(ac_trainer *tr, const char *dir, ac_err *err);

/* For cross-checks with other frameworks: write into DIR (staged like a
 * checkpoint) the checkpoint of the current weights, the batch of the next
 * step (batch.tokens.npy, batch.targets.npy as float64, or batch.x.npy,
 * batch.y.npy, in the row layout of nn.h), loss.npy (0-d) and grad.NAME.npy
 * for every tensor: the gradient of that batch's loss. */
int ac_trainer_dump_grads(ac_trainer *tr, const char *dir, double *loss, ac_err *err);

/* fit-p: the instance (X d x n, P n x n) and the learned weights Wq, Wk
 * (dk x d) as matrices (zeroed ac_mat's, allocated here): the best iterate
 * (ac_trainer_fitp_best), or the current weights before any evaluation. */
int ac_trainer_fitp_instance(const ac_trainer *tr, ac_mat *X, ac_mat *P, ac_mat *Wq, ac_mat *Wk,
                             ac_err *err);

/* The ListOps generator (LRA's generate_tree): one example from the random
 * stream (seed, stream, index) with operator nesting at most max_depth
 * (the root is at depth 1; a node below max_depth is an operator with
 * probability 1/4, else a digit), 2 to max_args arguments per operator,
 * and min_len <= length <= max_len tokens (rejection sampling, at most
 * 100000 tries: AC_EDATA if none fits).  tokens (max_len entries) receives
 * the expression (ids above), *len its length, *label its value 0-9.  The
 * value of [MED is int(median) (the mean of the two middle values, rounded
 * down, for an even count), of [SM the sum modulo 10. */
int ac_listops_sample(int32_t *tokens, size_t *len, int *label, uint64_t seed, uint64_t stream,
                      uint64_t index, size_t max_depth, size_t max_args, size_t min_len,
                      size_t max_len, ac_err *err);
/* Value of a token sequence as produced above (for tests); -1 if it is not
 * a well-formed expression. */
int ac_listops_eval(const int32_t *tokens, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_TRAIN_H */
