/* train.c — the command train (attncheck/commands.h): the attention stack
 * of attncheck/nn.h trained on a task, with checkpoints.  The option
 * table, the configuration the options give (a task's defaults or a
 * checkpoint's, then the options), the training loop (as the main() of
 * llm.c's train_gpt2.c: step, evaluate at intervals, checkpoint; the
 * program draws and logs through the hooks), --dump-grads, fit-p's
 * certified verdict (attncheck/learned.h), the JSON result. */
#include <config.h>

#define _GNU_SOURCE 1 /* realpath */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "attncheck/commands.h"
#include "attncheck/fileio.h"
#include "commands/cmd_impl.h"

#define Q(f) offsetof(ac_train_request, f)
#define F(f) AC_OPT_FIELD(ac_train_request, f)
#define S(f) AC_OPT_SET(ac_train_request, f)
#define A(f) AC_OPT_ARRAY_AT(ac_train_request, f)
#define NS AC_OPT_NOSET
#define MAX_SIZE 4294967296.0 /* 2^32 */

/* --positions (the model's positions flag: 0 none, 1 learned) and
 * --log-format: the program's words for them */
static const char *const positions_names[] = {"none", "learned", NULL};
static const char *const log_format_names[] = {"csv", "jsonl", NULL};

const char *const ac_train_fields[] = {
    "text_path", "--text", "teacher_dir", "--teacher", "x_path", "--x", "p_path", "--p",
    "p_rows", "--rows", "fitp_n", "--n", "fitp_d", "--d", "fitp_dk", "--dk",
    "eps", "--adam-eps", "listops_min", "--listops-min-len", "listops_max", "--listops-max-len",
    "max_seq", "--seq", "kind", "--attention", "ffn", "--ffn-mult", "input", "--arch",
    "head", "--task", "vocab", "the vocabulary", "in_dim", "the input dimension",
    "out_dim", "the number of outputs", NULL,
};

/* a path the configuration can hold */
static int check_path(const ac_opt *o, const void *q, const char *text, ac_err *err)
{
    (void)q;
    if (strlen(text) >= AC_TRAIN_PATH_MAX)
        return ac_err_set(err, AC_EUSAGE, "--%s: path too long", o->name);
    return AC_OK;
}

static int check_stack(const ac_opt *o, const void *q, const char *text, ac_err *err)
{
    (void)o;
    (void)q;
    if (strcmp(text, "W") && strcmp(text, "V"))
        return ac_err_set(err, AC_EUSAGE, "--teacher-stack: '%s' is not W or V", text);
    return AC_OK;
}

/* --arch offers the first two architectures of ac_nn_arch_names, in its
 * order (the third, scores, is fit-p's own) */
static const char *const arch_choices[] = {"transformer", "attention", NULL};

static const ac_opt train_opts[] = {
    {.name = "task", .kind = AC_OPT_CHOICE, F(task), S(have_task),
     .choices = ac_task_names, .arg = "TASK", .group = "Task:",
     .help = "the task (required, unless --resume):\n"
             "fit-p: Theorem 1 on learned weights: learn Wq, Wk (dk x d) so that "
             "Softmax((Wk X)^T (Wq X)/sqrt(dk)) = P; ends with a certified verdict on "
             "max|Softmax - P| <= --tol for the learned weights\n"
             "teacher: regress onto the output of a given attention layer\n"
             "listops: the ListOps task of the Long Range Arena (generated)\n"
             "text: character-level language model of a text file"},
    {.name = "x", .kind = AC_OPT_STRING, F(x), S(have_x), .arg = "FILE",
     .flags = AC_OPTF_ARRAY, A(x_mem), .pyname = "X", .check = check_path,
     .group = "Data:", .help = "fit-p: X, d x n (one column per token), float64 .npy"},
    {.name = "p", .kind = AC_OPT_STRING, F(p), S(have_p), .arg = "FILE",
     .flags = AC_OPTF_ARRAY, A(p_mem), .pyname = "P", .check = check_path,
     .help = "fit-p: P, n x n column-stochastic (as for rep-theorem)"},
    {.name = "rows", .kind = AC_OPT_FLAG, F(rows), .set_offset = NS,
     .help = "fit-p: the --p file is row-stochastic (PyTorch's layout): fit its transpose"},
    {.name = "n", .kind = AC_OPT_SIZE, F(n), S(have_n), .min = 1,
     .max = 16384, .arg = "N", .flags = AC_OPTF_JOIN},
    {.name = "d", .kind = AC_OPT_SIZE, F(d), S(have_d), .min = 1,
     .max = 16384, .arg = "D",
     .help = "fit-p: size of the generated X (Gaussian) and P (Dirichlet) when --x / --p are "
             "not given (default n = 8, d = n)"},
    {.name = "dk", .kind = AC_OPT_SIZE, F(dk), S(have_dk), .min = 1,
     .max = 16384, .arg = "K", .help = "fit-p: head size (default d)"},
    {.name = "teacher", .kind = AC_OPT_STRING, F(teacher),
     S(have_teacher), .arg = "DIR", .check = check_path,
     .help = "teacher: Wq.npy, Wk.npy, Wv.npy (h, s, d) and Wo.npy (h, d, s), as written by "
             "`attncheck separate` (inputs drawn N(0,1)), or X.npy (m, d, n) and Y.npy "
             "(m, e, n) pairs"},
    {.name = "teacher-stack", .kind = AC_OPT_STRING, F(teacher_stack),
     S(have_teacher_stack), .arg = "L", .check = check_stack,
     .help = "teacher: read Lq.npy ... Lo.npy, L = V (the fixed-head layer g_V of a `separate` "
             "directory; the default when Vq.npy exists) or W (the standard layer f_W; the "
             "default otherwise)"},
    {.name = "text", .kind = AC_OPT_STRING, F(text), S(have_text),
     .arg = "FILE", .check = check_path, .help = "text: any file; its bytes are the characters"},
    {.name = "holdout", .kind = AC_OPT_DOUBLE, F(holdout),
     S(have_holdout), .min = 0, .max = 0.99, .arg = "F",
     .help = "fraction held out for evaluation (text, teacher pairs; default 0.1)"},
    {.name = "listops-depth", .kind = AC_OPT_SIZE, F(listops_depth),
     S(have_listops_depth), .min = 1, .max = 64, .arg = "N",
     .flags = AC_OPTF_JOIN},
    {.name = "listops-args", .kind = AC_OPT_SIZE, F(listops_args),
     S(have_listops_args), .min = 2, .max = 1000, .arg = "N",
     .help = "listops: operator nesting and arguments (default 10, 10)"},
    {.name = "listops-min-len", .kind = AC_OPT_SIZE, F(listops_min_len),
     S(have_listops_min_len), .min = 1, .max = MAX_SIZE, .arg = "N",
     .flags = AC_OPTF_JOIN},
    {.name = "listops-max-len", .kind = AC_OPT_SIZE, F(listops_max_len),
     S(have_listops_max_len), .min = 1, .max = MAX_SIZE, .arg = "N",
     .help = "listops: expression length (default seq/4 .. seq-1)"},
    {.name = "arch", .kind = AC_OPT_CHOICE, F(arch), S(have_arch),
     .choices = arch_choices, .arg = "A", .group = "Model:",
     .help = "transformer (default) or attention (teacher: one bare multi-head attention "
             "layer, the default for teacher)"},
    {.name = "layers", .kind = AC_OPT_SIZE, F(layers), S(have_layers),
     .min = 1, .max = 1024, .arg = "L", .def = "2", .help = "blocks"},
    {.name = "width", .kind = AC_OPT_SIZE, F(width), S(have_width),
     .min = 1, .max = 65536, .arg = "C", .def = "64", .help = "width d"},
    {.name = "heads", .kind = AC_OPT_SIZE, F(heads), S(have_heads),
     .min = 1, .max = 4096, .arg = "H",
     .help = "heads (default 4; teacher: the teacher's; fit-p: 1)"},
    {.name = "attention", .kind = AC_OPT_CHOICE, F(attention),
     S(have_attention), .choices = ac_nn_kind_names, .arg = "K",
     .help = "standard (H heads of size C/H, default) or fixed"},
    {.name = "head-dim", .kind = AC_OPT_SIZE, F(head_dim),
     S(have_head_dim), .min = 1, .max = 65536, .arg = "DP",
     .help = "head size of fixed heads (default C/H); with DP >= C the layer runs merged heads "
             "(same function and checkpoints), for each batch whose flop count it lowers"},
    {.name = "ffn-mult", .kind = AC_OPT_SIZE, F(ffn_mult),
     S(have_ffn_mult), .min = 1, .max = 64, .arg = "M",
     .help = "feed-forward width M x C (default 4)"},
    {.name = "ln", .kind = AC_OPT_CHOICE, F(ln), S(have_ln),
     .choices = ac_nn_ln_names, .arg = "P",
     .help = "LayerNorm placement: pre (GPT-2, default) or post (paper 1)"},
    {.name = "causal", .kind = AC_OPT_FLAG, F(causal), .set_offset = NS,
     .flags = AC_OPTF_JOIN},
    {.name = "no-causal", .kind = AC_OPT_FLAG, F(no_causal), .set_offset = NS,
     .help = "causal attention mask (default: on for text only)"},
    {.name = "positions", .kind = AC_OPT_CHOICE, F(positions),
     S(have_positions), .choices = positions_names, .arg = "P",
     .help = "learned (default with tokens) or none"},
    {.name = "pool", .kind = AC_OPT_CHOICE, F(pool), S(have_pool),
     .choices = ac_nn_pool_names, .arg = "P",
     .help = "listops: first (the CLS token, default), last or mean"},
    {.name = "seq", .kind = AC_OPT_SIZE, F(seq), S(have_seq), .min = 1,
     .max = 65536, .arg = "T",
     .help = "tokens per sequence (default 64; listops 128; teacher 8 or n of X.npy; fit-p n)"},
    {.name = "init-std", .kind = AC_OPT_DOUBLE, F(init_std),
     S(have_init_std), .min = -1e3, .max = 1e3, .arg = "S",
     .help = "standard deviation of the initial weights (default 0.02; <= 0: 1/sqrt(fan-in), "
             "the default of teacher and fit-p)"},
    {.name = "optimizer", .kind = AC_OPT_CHOICE, F(optimizer),
     S(have_optimizer), .choices = ac_train_optimizer_names, .arg = "O",
     .group = "Optimisation:",
     .help = "adamw (default) or bfgs (fit-p only, and its default: GSL's BFGS on the whole "
             "loss, one iteration per step, stopping early when no further progress is "
             "possible; the learning-rate, AdamW and clipping options do not apply)"},
    {.name = "steps", .kind = AC_OPT_SIZE, F(steps), S(have_steps),
     .min = 1, .max = MAX_SIZE, .arg = "N",
     .help = "optimisation steps (default 1000; listops, teacher 2000; fit-p 3000)"},
    {.name = "batch", .kind = AC_OPT_SIZE, F(batch), S(have_batch),
     .min = 1, .max = 1 << 20, .arg = "B", .help = "sequences per step (default 32; fit-p 1)"},
    {.name = "lr", .kind = AC_OPT_DOUBLE, F(lr), S(have_lr),
     .min = 1e-300, .max = 1e6, .arg = "LR",
     .help = "peak learning rate (default 1e-3; teacher 1e-2; fit-p 0.05)"},
    {.name = "min-lr", .kind = AC_OPT_DOUBLE, F(min_lr), S(have_min_lr),
     .min = 0, .max = 1e6, .arg = "LR",
     .help = "learning rate at the last step (default lr/10)"},
    {.name = "warmup", .kind = AC_OPT_SIZE, F(warmup), S(have_warmup),
     .min = 0, .max = MAX_SIZE, .arg = "N", .help = "linear warm-up steps (default steps/10)"},
    {.name = "schedule", .kind = AC_OPT_CHOICE, F(schedule),
     S(have_schedule), .choices = ac_sched_names, .arg = "S",
     .help = "cosine (default), linear or constant after warm-up"},
    {.name = "weight-decay", .kind = AC_OPT_DOUBLE, F(weight_decay),
     S(have_weight_decay), .min = 0, .max = 1e6, .arg = "W",
     .help = "AdamW weight decay of the matrices (default 0.01; teacher, fit-p 0)"},
    {.name = "beta1", .kind = AC_OPT_DOUBLE, F(beta1), S(have_beta1),
     .min = 0, .max = 0.999999999, .arg = "B", .flags = AC_OPTF_JOIN},
    {.name = "beta2", .kind = AC_OPT_DOUBLE, F(beta2), S(have_beta2),
     .min = 0, .max = 0.999999999, .arg = "B", .flags = AC_OPTF_JOIN},
    {.name = "adam-eps", .kind = AC_OPT_DOUBLE, F(adam_eps),
     S(have_adam_eps), .min = 1e-300, .max = 1, .arg = "E",
     .help = "AdamW (default 0.9, 0.999, 1e-8)"},
    {.name = "clip", .kind = AC_OPT_DOUBLE, F(clip), S(have_clip),
     .min = 0, .max = 1e300, .arg = "G",
     .help = "clip the gradient norm at G (default 1; fit-p 0 = off)"},
    {.name = "seed", .kind = AC_OPT_U64, F(seed), S(have_seed),
     .arg = "S", .def = "1", .group = "Run:", .help = "seed of every random stream"},
    {.name = "eval-every", .kind = AC_OPT_SIZE, F(eval_every),
     S(have_eval_every), .min = 1, .max = MAX_SIZE, .arg = "N",
     .help = "evaluate every N steps and at the end (default steps/10)"},
    {.name = "eval-batches", .kind = AC_OPT_SIZE, F(eval_batches),
     S(have_eval_batches), .min = 1, .max = 1 << 20, .arg = "N", .def = "4",
     .help = "batches per evaluation"},
    {.name = "save", .kind = AC_OPT_STRING, F(save), .set_offset = NS, .arg = "DIR",
     .help = "write a checkpoint to DIR at the end (atomically); fit-p: the best iterate, "
             "whose weights are the ones certified, at its step"},
    {.name = "save-every", .kind = AC_OPT_SIZE, F(save_every),
     S(have_save_every), .min = 1, .max = MAX_SIZE, .arg = "N",
     .help = "and every N steps"},
    {.name = "resume", .kind = AC_OPT_STRING, F(resume), .set_offset = NS,
     .arg = "DIR", .help = "continue from the checkpoint DIR, bit-identically"},
    {.name = "stop-at", .kind = AC_OPT_SIZE, F(stop_at), S(have_stop_at),
     .min = 1, .max = MAX_SIZE, .arg = "STEP",
     .help = "stop after STEP steps (the schedule still spans --steps)"},
    {.name = "log", .kind = AC_OPT_STRING, F(log), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM,
     .help = "write per-step metrics to FILE (CSV, or JSON lines if FILE ends in .jsonl)"},
    {.name = "log-format", .kind = AC_OPT_CHOICE, F(log_format),
     S(have_log_format), .choices = log_format_names, .arg = "F",
     .flags = AC_OPTF_PROGRAM, .help = "csv or jsonl"},
    {.name = "plot", .kind = AC_OPT_STRING, F(plot), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM, .check = ac_cmd_check_plot,
     .help = "loss and evaluation curves of the run (.svg, .png or .pdf) with gnuplot"},
    {.name = "dump-grads", .kind = AC_OPT_STRING, F(dump_grads), .set_offset = NS,
     .arg = "DIR",
     .help = "write the weights, the next batch, its loss and every gradient to DIR and stop "
             "(for cross-checks)"},
    {.name = "tol", .kind = AC_OPT_DOUBLE, F(tol), S(have_tol), .min = 0,
     .max = 1, .arg = "T", .def = "1e-3", .help = "fit-p: tolerance of the certified claim"},
    {.name = "max-prec", .kind = AC_OPT_LONG, F(max_prec),
     S(have_max_prec), .min = 0, .max = 1 << 20, .arg = "BITS", .def = "512",
     .help = "fit-p: highest precision of the ball stages"},
    {.name = "quiet", .kind = AC_OPT_FLAG, F(quiet), .set_offset = NS,
     .flags = AC_OPTF_PROGRAM, .help = "no progress bar or evaluation lines"},
    {.name = "json", .kind = AC_OPT_FLAG, F(json), .set_offset = NS,
     .flags = AC_OPTF_PROGRAM,
     .help = "print one JSON object (summary, evaluations, verdict)"},
    {.name = "threads", .kind = AC_OPT_LONG, F(threads), .set_offset = NS, .min = 1,
     .max = 1024, .arg = "N",
     .help = "threads (default: all cores); results do not depend on it"},
    {0},
};

static const char train_description[] =
    "Trains an attention stack (double precision, hand-written backward, AdamW)\n"
    "on a task and writes checkpoints NumPy and PyTorch can read.";

static const char train_epilogue[] =
    "Exit status: 0 trained (fit-p: proved), 1 fit-p refuted, 2 fit-p undecided,\n"
    "64 usage error, 65 bad input data, 66 cannot open input, 70 internal error,\n"
    "73 cannot create output.";

/* ---- the configuration ------------------------------------------------------------ */

/* Options that apply to some tasks only: the option's given flag, its
 * name, the tasks (a bit per task). */
#define TASK(t) (1u << (t))
#define NOT_FITP (~TASK(AC_TASK_FIT_P))
#define STACKS (TASK(AC_TASK_TEACHER) | TASK(AC_TASK_LISTOPS) | TASK(AC_TASK_TEXT))

static const struct {
    size_t given;
    const char *name;
    unsigned tasks;
} task_only[] = {
    {Q(have_x), "--x", TASK(AC_TASK_FIT_P)},
    {Q(have_p), "--p", TASK(AC_TASK_FIT_P)},
    {Q(rows), "--rows", TASK(AC_TASK_FIT_P)},
    {Q(have_n), "--n", TASK(AC_TASK_FIT_P)},
    {Q(have_d), "--d", TASK(AC_TASK_FIT_P)},
    {Q(have_dk), "--dk", TASK(AC_TASK_FIT_P)},
    {Q(have_tol), "--tol", TASK(AC_TASK_FIT_P)},
    {Q(have_max_prec), "--max-prec", TASK(AC_TASK_FIT_P)},
    {Q(have_teacher), "--teacher", TASK(AC_TASK_TEACHER)},
    {Q(have_teacher_stack), "--teacher-stack", TASK(AC_TASK_TEACHER)},
    {Q(have_text), "--text", TASK(AC_TASK_TEXT)},
    {Q(have_holdout), "--holdout", TASK(AC_TASK_TEXT) | TASK(AC_TASK_TEACHER)},
    {Q(have_listops_depth), "--listops-depth", TASK(AC_TASK_LISTOPS)},
    {Q(have_listops_args), "--listops-args", TASK(AC_TASK_LISTOPS)},
    {Q(have_listops_min_len), "--listops-min-len", TASK(AC_TASK_LISTOPS)},
    {Q(have_listops_max_len), "--listops-max-len", TASK(AC_TASK_LISTOPS)},
    {Q(have_pool), "--pool", TASK(AC_TASK_LISTOPS)},
    {Q(have_arch), "--arch", TASK(AC_TASK_TEACHER)},
    {Q(have_batch), "--batch", NOT_FITP},
    {Q(have_layers), "--layers", STACKS},
    {Q(have_ffn_mult), "--ffn-mult", STACKS},
    {Q(have_ln), "--ln", STACKS},
    {Q(have_positions), "--positions", STACKS},
    {Q(have_width), "--width", STACKS},
    {Q(have_heads), "--heads", NOT_FITP},
    {Q(have_attention), "--attention", NOT_FITP},
    {Q(have_head_dim), "--head-dim", NOT_FITP},
    {Q(causal), "--causal", NOT_FITP},
};

/* The options of the bare attention layer's teacher run cannot have. */
static const struct {
    size_t given;
    const char *name;
} transformer_only[] = {
    {Q(have_width), "--width"}, {Q(have_layers), "--layers"}, {Q(have_ffn_mult), "--ffn-mult"},
    {Q(have_ln), "--ln"}, {Q(have_positions), "--positions"},
};

static int given(const ac_train_request *q, size_t off)
{
    return *(const int *)((const char *)q + off);
}

static int check_task_options(const ac_train_request *q, ac_task_kind t, ac_err *err)
{
    for (size_t i = 0; i < sizeof task_only / sizeof *task_only; i++)
        if (given(q, task_only[i].given) && !(task_only[i].tasks & TASK(t)))
            return ac_err_set(err, AC_EUSAGE, "%s does not apply to --task %s", task_only[i].name,
                              ac_task_name(t));
    return AC_OK;
}

/* The base configuration: the checkpoint's (--resume), or the task's
 * defaults. */
static int base_config(ac_train_config *cfg, const ac_train_request *q, ac_err *err)
{
    size_t ck_step = 0;
    int st;
    if (q->resume) {
        if ((st = ac_train_config_read(q->resume, cfg, &ck_step, err)))
            return st;
        if (q->have_task && (ac_task_kind)q->task != cfg->task)
            return ac_err_set(err, AC_EUSAGE, "--task %s contradicts the checkpoint %s (task %s)",
                              ac_task_names[q->task], q->resume, ac_task_name(cfg->task));
        return AC_OK;
    }
    if (!q->have_task)
        return ac_err_set(err, AC_EUSAGE, "--task is required (fit-p, teacher, listops or text)");
    ac_train_config_default(cfg, (ac_task_kind)q->task);
    if (cfg->task == AC_TASK_TEACHER)
        cfg->model.heads = 0; /* the teacher's, resolved with the data */
    return AC_OK;
}

#define SET(field, have, value)                                                                    \
    do {                                                                                           \
        if (q->have)                                                                               \
            c->field = (value);                                                                    \
    } while (0)

/* The options given, applied to c. */
static void apply(ac_train_config *c, const ac_train_request *q)
{
    ac_nn_config *m = &c->model;
    if (q->x)
        snprintf(c->x_path, sizeof c->x_path, "%s", q->x);
    if (q->p)
        snprintf(c->p_path, sizeof c->p_path, "%s", q->p);
    if (q->rows)
        c->p_rows = 1;
    SET(fitp_n, have_n, q->n);
    SET(fitp_d, have_d, q->d);
    SET(fitp_dk, have_dk, q->dk);
    if (q->have_teacher)
        snprintf(c->teacher_dir, sizeof c->teacher_dir, "%s", q->teacher);
    SET(teacher_stack, have_teacher_stack, q->teacher_stack[0]);
    if (q->have_text)
        snprintf(c->text_path, sizeof c->text_path, "%s", q->text);
    SET(holdout, have_holdout, q->holdout);
    SET(listops_depth, have_listops_depth, q->listops_depth);
    SET(listops_args, have_listops_args, q->listops_args);
    SET(listops_min, have_listops_min_len, q->listops_min_len);
    SET(listops_max, have_listops_max_len, q->listops_max_len);
    SET(model.arch, have_arch, (ac_nn_arch)q->arch);
    SET(model.layers, have_layers, q->layers);
    SET(model.width, have_width, q->width);
    SET(model.heads, have_heads, q->heads);
    SET(model.kind, have_attention, (ac_nn_attn_kind)q->attention);
    SET(model.head_dim, have_head_dim, q->head_dim);
    SET(model.ln, have_ln, (ac_nn_ln_place)q->ln);
    if (q->causal)
        m->causal = 1;
    if (q->no_causal) /* after --causal: --no-causal wins */
        m->causal = 0;
    SET(model.positions, have_positions, q->positions);
    SET(model.pool, have_pool, (ac_nn_pool)q->pool);
    SET(seq, have_seq, q->seq);
    SET(init_std, have_init_std, q->init_std);
    SET(steps, have_steps, q->steps);
    SET(batch, have_batch, q->batch);
    SET(lr, have_lr, q->lr);
    SET(min_lr, have_min_lr, q->min_lr);
    SET(warmup, have_warmup, q->warmup);
    SET(schedule, have_schedule, (ac_sched_kind)q->schedule);
    SET(weight_decay, have_weight_decay, q->weight_decay);
    SET(beta1, have_beta1, q->beta1);
    SET(beta2, have_beta2, q->beta2);
    SET(eps, have_adam_eps, q->adam_eps);
    SET(clip, have_clip, q->clip);
    SET(seed, have_seed, q->seed);
    SET(eval_every, have_eval_every, q->eval_every);
    SET(eval_batches, have_eval_batches, q->eval_batches);
    SET(optimizer, have_optimizer, (ac_train_optimizer)q->optimizer);
    if (q->have_ffn_mult) /* of the width given or configured */
        m->ffn = q->ffn_mult * m->width;
}

#undef SET

/* A new run: the defaults that follow other options. */
static void derived_defaults(ac_train_config *c, const ac_train_request *q)
{
    ac_nn_config *m = &c->model;
    ac_task_kind task = c->task;
    if (!q->have_ffn_mult)
        m->ffn = 4 * m->width;
    if (!q->have_warmup)
        c->warmup = c->steps / 10;
    if (!q->have_min_lr)
        c->min_lr = c->lr / 10;
    if (!q->have_eval_every)
        c->eval_every = c->steps / 10 ? c->steps / 10 : 1;
    if (!q->have_positions && m->arch == AC_NN_ARCH_TRANSFORMER && task == AC_TASK_TEACHER)
        m->positions = 0;
    if (task == AC_TASK_TEACHER && m->heads == 0 && m->arch == AC_NN_ARCH_TRANSFORMER)
        m->heads = 4;
    if (m->arch == AC_NN_ARCH_TRANSFORMER && m->kind == AC_NN_ATTN_FIXED && m->head_dim == 0 &&
        m->heads)
        m->head_dim = m->width / m->heads;
    if (m->arch == AC_NN_ARCH_TRANSFORMER && task == AC_TASK_TEACHER) {
        m->input = AC_NN_INPUT_VECTORS;
        c->init_std = q->have_init_std ? c->init_std : 0.02;
    }
}

/* A resumed run may change only --steps and the evaluation: the
 * configuration with the options applied (paths made absolute, as the
 * checkpoint stores them) against the checkpoint's. */
static int check_resume(const ac_train_config *base, const ac_train_config *cfg,
                        const ac_train_request *q, ac_err *err)
{
    ac_train_config mine = *cfg;
    char *paths[] = {mine.x_path, mine.p_path, mine.teacher_dir, mine.text_path};
    const int gave[] = {q->x != NULL, q->p != NULL, q->have_teacher, q->have_text};
    for (int i = 0; i < 4; i++)
        if (gave[i]) {
            char buf[PATH_MAX];
            if (!realpath(paths[i], buf) || strlen(buf) >= AC_TRAIN_PATH_MAX)
                return ac_err_set(err, AC_ENOINPUT, "%s: cannot open", paths[i]);
            strcpy(paths[i], buf);
        }
    mine.steps = base->steps;
    mine.eval_every = base->eval_every;
    mine.eval_batches = base->eval_batches;
    const char *f = ac_train_config_diff(base, &mine);
    if (f)
        return ac_err_set_field(err, AC_EUSAGE, f, "%s contradicts the checkpoint %s; a resumed "
                                "run may change only --steps, --eval-every and --eval-batches",
                                f, q->resume);
    return AC_OK;
}

/* Options the configuration cannot honour. */
static int check_consistent(const ac_train_config *cfg, const ac_train_request *q, ac_err *err)
{
    if (cfg->task == AC_TASK_TEACHER && cfg->model.arch == AC_NN_ARCH_ATTENTION)
        for (size_t i = 0; i < sizeof transformer_only / sizeof *transformer_only; i++)
            if (given(q, transformer_only[i].given))
                return ac_err_set(err, AC_EUSAGE, "%s does not apply to the bare attention layer "
                                  "(--arch attention, whose width is the teacher's d); use "
                                  "--arch transformer", transformer_only[i].name);
    if (cfg->optimizer == AC_OPT_BFGS && cfg->task != AC_TASK_FIT_P)
        return ac_err_set(err, AC_EUSAGE, "--optimizer bfgs applies to --task fit-p only");
    if (cfg->optimizer == AC_OPT_BFGS && q->resume)
        return ac_err_set(err, AC_EUSAGE, "--resume: %s was trained with BFGS, whose curvature "
                          "estimate is not saved in checkpoints; run it again from the start",
                          q->resume);
    if (q->have_stop_at && q->stop_at > cfg->steps)
        return ac_err_set(err, AC_EUSAGE, "--stop-at %zu is beyond --steps %zu", q->stop_at,
                          cfg->steps);
    if (cfg->warmup > cfg->steps)
        return ac_err_set(err, AC_EUSAGE, "--warmup %zu exceeds --steps %zu", cfg->warmup,
                          cfg->steps);
    if (q->plot && q->dump_grads)
        return ac_err_set(err, AC_EUSAGE,
                          "--plot does not apply to --dump-grads (no training is run)");
    return AC_OK;
}

int ac_train_configure(ac_train_config *cfg, const ac_train_request *q, ac_err *err)
{
    int st;
    if ((st = base_config(cfg, q, err)) || (st = check_task_options(q, cfg->task, err)))
        return st;
    ac_train_config base = *cfg;
    apply(cfg, q);
    if (!q->resume)
        derived_defaults(cfg, q);
    else if ((st = check_resume(&base, cfg, q, err)))
        return st;
    return check_consistent(cfg, q, err);
}

/* ---- memory ----------------------------------------------------------------------- */

#define BASE_BYTES (16.0 * 1048576.0) /* the program, the libraries, the BLAS buffers */

/* The memory a run needs (cmd_impl.h, the memory estimates: measured peak
 * sizes, fitted by the dominant terms). */
static double mem_train(const ac_train_config *c)
{
    const ac_nn_config *m = &c->model;
    double B = (double)c->batch, T = (double)(c->seq ? c->seq : 8), L = (double)m->layers;
    double w = (double)m->width, h = (double)m->heads, ffn = (double)m->ffn;
    double V = (double)(m->vocab ? m->vocab : 256);
    if (c->task == AC_TASK_FIT_P) {
        /* n = 64 .. 256: 34 n x n per head (scores, gradients, AdamW, the
         * certification at the end) */
        double n = (double)(c->fitp_n ? c->fitp_n : 8);
        return BASE_BYTES + 8.0 * 40.0 * n * n * (h > 0 ? h : 1);
    }
    if (m->arch != AC_NN_ARCH_TRANSFORMER) {
        L = 1;
        ffn = 0;
    }
    /* width 128 .. 512, layers 2 .. 4, batch 4 .. 16: the parameters with
     * their gradients and two AdamW moments, 12 w + 4 ffn activations per
     * token and layer, 3 T x T per head and layer, 3 logits per token */
    double P = L * (4.0 * w * w + 2.0 * w * ffn) + (V + T) * w + V * w;
    double act = B * T * L * (12.0 * w + 4.0 * ffn) + 3.0 * B * L * h * T * T + 3.0 * B * T * V;
    return BASE_BYTES + 8.0 * (4.0 * P + act);
}

static int memory_check(const ac_train_config *cfg, const ac_train_request *q, ac_err *err)
{
    if (q->resume)
        return ac_cmd_memory_check(mem_train(cfg), AC_EDATA, err,
                                   "%s/config.json: the model it describes", q->resume);
    return ac_cmd_memory_check(mem_train(cfg), AC_EUSAGE, err, "training this model");
}

/* ---- the command ------------------------------------------------------------------ */

/* The rules between options, the configuration they give and whether the
 * machine can run it (the checkpoint of --resume is read here too). */
static int train_check(void *qv, ac_err *err)
{
    const ac_train_request *q = qv;
    ac_train_config cfg;
    int st = ac_train_configure(&cfg, q, err);
    return st ? st : memory_check(&cfg, q, err);
}

/* Threads: OpenMP over chunks; BLAS single-threaded inside.  The count. */
static int set_threads(long threads)
{
    ac_blas_set_threads(1);
#ifdef _OPENMP
    if (threads > 0)
        omp_set_num_threads((int)threads);
    return omp_get_max_threads();
#else
    (void)threads;
    return 1;
#endif
}

/* The trainer of the configuration: fit-p's instance read, generated or
 * given in memory (ac_learn_fitp_init), the checkpoint loaded. */
static int build(ac_trainer *tr, const ac_train_config *cfg, const ac_train_request *q,
                 ac_err *err)
{
    ac_mat X = {0}, P = {0};
    int st;
    if (cfg->task != AC_TASK_FIT_P)
        st = ac_trainer_init(tr, cfg, err);
    else if (!(st = q->x_mem.data ? ac_cmd_input_mat(&X, NULL, &q->x_mem, "X", err) : AC_OK) &&
             !(st = q->p_mem.data ? ac_cmd_input_mat(&P, NULL, &q->p_mem, "P", err) : AC_OK))
        st = ac_learn_fitp_init(tr, cfg, q->x_mem.data ? &X : NULL, q->p_mem.data ? &P : NULL,
                                err);
    ac_mat_free(&X);
    ac_mat_free(&P);
    if (!st && q->resume)
        st = ac_trainer_load(tr, q->resume, err);
    return st;
}

static void progress_of(ac_train_progress *p, const ac_train_result *res, const ac_eval_info *ev,
                        double step_tps, double t_start)
{
    p->tr = &res->tr;
    p->step = &res->si;
    p->eval = ev;
    p->last_eval = &res->last_eval;
    p->first_step = res->first_step;
    p->last = res->last;
    p->step_tokens_per_s = step_tps;
    p->tokens = res->tokens;
    p->seconds = ac_seconds() - t_start;
}

/* Steps until res->last: evaluate every eval_every steps and at the last,
 * report to the hooks, save every save_every steps. */
static int train_loop(ac_train_result *res, const ac_train_request *q, const ac_train_hooks *h,
                      double t_start, ac_err *err)
{
    ac_trainer *tr = &res->tr;
    const ac_train_config *c = &tr->cfg;
    ac_step_info *si = &res->si;
    double loss_sum = 0; /* training losses since the last evaluation */
    size_t loss_n = 0;
    int st;
    while (tr->step < res->last) {
        double t0 = ac_seconds();
        if ((st = ac_trainer_step(tr, si, err)))
            return st;
        double t1 = ac_seconds();
        res->tokens += (double)si->tokens;
        if (isfinite(si->loss)) {
            loss_sum += si->loss;
            loss_n++;
        }
        ac_eval_info ev, *evp = NULL;
        if (si->done) /* BFGS: no further progress; evaluate and stop here */
            res->last = si->step;
        if (si->step % c->eval_every == 0 || si->step == res->last) {
            if ((st = ac_trainer_eval(tr, &ev, err)))
                return st;
            evp = &ev;
            res->last_eval = ev;
            if (res->nevals < res->maxevals)
                res->evals[res->nevals++] =
                    (ac_train_eval){si->step, loss_n ? loss_sum / (double)loss_n : NAN, ev};
            loss_sum = 0;
            loss_n = 0;
        }
        if (h && h->step) {
            ac_train_progress p;
            progress_of(&p, res, evp, t1 > t0 ? (double)si->tokens / (t1 - t0) : 0, t_start);
            h->step(h->ctx, &p);
        }
        if (q->save && q->have_save_every && si->step % q->save_every == 0 &&
            si->step != res->last && (st = ac_trainer_save(tr, q->save, err)))
            return st;
    }
    return AC_OK;
}

/* After the loop: the hooks' end, the checkpoint (fit-p: of the best
 * iterate, the weights certified), fit-p's certificate. */
static int finish(ac_train_result *res, const ac_train_request *q, const ac_train_hooks *h,
                  double t_start, ac_err *err)
{
    ac_trainer *tr = &res->tr;
    int st, fitp = tr->cfg.task == AC_TASK_FIT_P;
    res->seconds = ac_seconds() - t_start;
    res->tokens_per_s = res->seconds > 0 ? res->tokens / res->seconds : 0;
    res->step = tr->step;
    if (h && h->end) {
        ac_train_progress p;
        progress_of(&p, res, NULL, 0, t_start);
        if ((st = h->end(h->ctx, &p, err)))
            return st;
    }
    if (fitp)
        res->have_best =
            ac_trainer_fitp_best(tr, &res->best_step, &res->best_maxdev, &res->best_kl);
    if (q->save) {
        /* fit-p: the checkpoint holds the weights certified below */
        if (fitp)
            ac_trainer_fitp_restore_best(tr);
        if ((st = ac_trainer_save(tr, q->save, err)))
            return st;
        res->saved = 1;
        res->saved_step = tr->step;
    }
    if (!fitp)
        return AC_OK;
    ac_schedule s = ac_schedule_upto(q->max_prec);
    ac_mat X = {0}, P = {0};
    if ((st = ac_learn_fitp_certify(&res->cert, tr, q->tol, &s, err)) ||
        (st = ac_trainer_fitp_instance(tr, &X, &P, &res->Wq, &res->Wk, err)))
        goto out;
    res->certified = 1;
out:
    ac_mat_free(&X);
    ac_mat_free(&P);
    return st;
}

static int run_steps(ac_train_result *res, const ac_train_request *q, const ac_train_hooks *h,
                     ac_err *err)
{
    ac_trainer *tr = &res->tr;
    const ac_train_config *c = &tr->cfg;
    int st;
    res->last = q->have_stop_at ? q->stop_at : c->steps;
    if (h && h->start && (st = h->start(h->ctx, tr, res->last, res->threads, err)))
        return st;
    double t_start = ac_seconds();
    res->first_step = tr->step;
    /* (a resumed run may start at or after its --stop-at: no step, then) */
    size_t todo = res->last > tr->step ? res->last - tr->step : 0;
    res->maxevals = todo / (c->eval_every ? c->eval_every : 1) + 2;
    res->evals = calloc(res->maxevals, sizeof *res->evals);
    if (!res->evals)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    res->si.loss = NAN;
    res->si.step = tr->step;
    res->last_eval = (ac_eval_info){NAN, NAN, NAN, NAN, 0};
    if ((st = train_loop(res, q, h, t_start, err)))
        return st;
    return finish(res, q, h, t_start, err);
}

static int train_run(void *rv, const void *qv, void *hv, ac_err *err)
{
    ac_train_result *res = rv;
    const ac_train_request *q = qv;
    const ac_train_hooks *h = hv;
    ac_train_config cfg;
    double t0 = ac_seconds();
    int st;
    if ((st = ac_train_configure(&cfg, q, err)))
        return st;
    res->threads = set_threads(q->threads);
    if ((st = memory_check(&cfg, q, err)) || (st = build(&res->tr, &cfg, q, err)))
        return st;
    if (!q->dump_grads)
        return run_steps(res, q, h, err);
    res->dump = 1;
    st = ac_trainer_dump_grads(&res->tr, q->dump_grads, &res->dump_loss, err);
    res->seconds = ac_seconds() - t0;
    return st;
}

/* ---- JSON ------------------------------------------------------------------------- */

/* The options that define a run. */
static void json_parameters(ac_json *j, const ac_train_config *c)
{
    ac_json_parameters_begin(j, c->seed);
    ac_json_kv_string(j, "task", ac_task_name(c->task));
    ac_json_kv_string(j, "optimizer", ac_train_optimizer_name(c->optimizer));
    ac_json_kv_int(j, "steps", (long long)c->steps);
    ac_json_kv_number(j, "lr", c->lr);
    ac_json_parameters_end(j);
}

/* the measures of an evaluation that the task has, as PREFIX + name */
static void json_measures(ac_json *j, const ac_eval_info *ev, const char *prefix)
{
    const char *const names[3] = {"accuracy", "maxdev", "rel_mse"};
    const double v[3] = {ev->accuracy, ev->maxdev, ev->rel_mse};
    for (int i = 0; i < 3; i++)
        if (!isnan(v[i])) {
            char key[32];
            snprintf(key, sizeof key, "%s%s", prefix, names[i]);
            ac_json_kv_number(j, key, v[i]);
        }
}

static void write_json_dump(ac_json *j, const ac_train_request *q, const ac_train_result *res)
{
    const ac_trainer *tr = &res->tr;
    ac_json_envelope_begin(j, "train", NULL, NULL);
    json_parameters(j, &tr->cfg);
    ac_json_kv_number(j, "seconds", res->seconds);
    ac_json_kv_string(j, "dump", q->dump_grads);
    ac_json_kv_int(j, "step", (long long)tr->step + 1);
    ac_json_kv_number(j, "loss", res->dump_loss);
    ac_json_kv_int(j, "params", (long long)tr->model.nparams);
    ac_json_end_object(j);
}

static void train_write_json(ac_json *j, const void *qv, const void *rv)
{
    const ac_train_request *q = qv;
    const ac_train_result *res = rv;
    const ac_trainer *tr = &res->tr;
    const ac_train_config *c = &tr->cfg;
    const ac_eval_info *ev = &res->last_eval;
    const ac_cert *cert = res->certified ? &res->cert : NULL;
    if (res->dump) {
        write_json_dump(j, q, res);
        return;
    }
    ac_json_envelope_begin(j, "train", cert ? ac_verdict_name(cert->verdict) : NULL, cert);
    json_parameters(j, c);
    ac_json_kv_string(j, "task", ac_task_name(c->task));
    ac_json_kv_string(j, "data", ac_trainer_data_summary(tr));
    if (cert) {
        ac_json_kv_string(j, "claim", "the learned head has max|Softmax - P| <= tol");
        ac_json_kv_string(j, "optimizer", ac_train_optimizer_name(c->optimizer));
        ac_json_kv_bool(j, "stopped_early", res->step < c->steps && !q->have_stop_at);
        if (res->have_best) {
            ac_json_key(j, "best");
            ac_json_begin_object(j);
            ac_json_kv_int(j, "step", (long long)res->best_step);
            ac_json_kv_number(j, "maxdev", res->best_maxdev);
            ac_json_kv_number(j, "kl", res->best_kl);
            ac_json_end_object(j);
        }
        ac_json_kv_number(j, "tol", q->tol);
    }
    ac_json_kv_int(j, "params", (long long)tr->model.nparams);
    ac_json_kv_int(j, "step", (long long)res->step);
    ac_json_kv_int(j, "steps", (long long)c->steps);
    ac_json_kv_number(j, "loss", res->si.loss);
    ac_json_kv_number(j, "eval_loss", ev->loss);
    json_measures(j, ev, "eval_");
    ac_json_kv_number(j, "tokens_per_s", res->tokens_per_s);
    ac_json_kv_number(j, "seconds", res->seconds);
    ac_json_kv_int(j, "threads", res->threads);
    if (res->saved) {
        ac_json_kv_string(j, "checkpoint", q->save);
        if (cert) /* the best iterate's step: the weights certified */
            ac_json_kv_int(j, "checkpoint_step", (long long)res->saved_step);
    }
    ac_json_key(j, "evals");
    ac_json_begin_array(j);
    for (size_t i = 0; i < res->nevals; i++) {
        const ac_train_eval *e = &res->evals[i];
        ac_json_begin_object(j);
        ac_json_kv_int(j, "step", (long long)e->step);
        ac_json_kv_number(j, "loss", e->ev.loss);
        json_measures(j, &e->ev, "");
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_end_object(j);
}

/* Python: fit-p's weights certified (dk x d) */
static size_t train_arrays(const void *qv, const void *rv, ac_out_array *out, size_t max)
{
    const ac_train_result *res = rv;
    size_t k = 0;
    (void)qv;
    if (res->certified) {
        k = ac_cmd_out_mat(out, k, max, "Wq", &res->Wq);
        k = ac_cmd_out_mat(out, k, max, "Wk", &res->Wk);
    }
    return k;
}

static int train_status(const void *qv, const void *rv)
{
    const ac_train_result *res = rv;
    (void)qv;
    return res->certified ? ac_verdict_status(res->cert.verdict) : 0;
}

static void train_result_free(void *rv)
{
    ac_train_result *res = rv;
    ac_trainer_free(&res->tr);
    free(res->evals);
    ac_mat_free(&res->Wq);
    ac_mat_free(&res->Wk);
}

const ac_command ac_cmd_train = {
    .name = "train",
    .summary = "train an attention stack (fit-p, teacher, listops, text) with checkpoints",
    .synopsis = "attncheck train --task TASK [OPTIONS]",
    .description = train_description,
    .epilogue = train_epilogue,
    .opts = train_opts,
    .request_size = sizeof(ac_train_request),
    .result_size = sizeof(ac_train_result),
    .check = train_check,
    .run = train_run,
    .write_json = train_write_json,
    .arrays = train_arrays,
    .status = train_status,
    .result_free = train_result_free,
};
