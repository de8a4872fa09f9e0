/* config.c — the trainer's configuration (attncheck/train.h): task names,
 * each task's defaults, the learning-rate schedule (doc/mathematics.md §6.2)
 * and the comparison a resumed run makes with its checkpoint. */
#include <config.h>

#define _GNU_SOURCE 1 /* M_PI */
#include <math.h>
#include <string.h>

#include "nn/nn_impl.h"

/* The spellings of the enums (attncheck/train.h, attncheck/nn.h): in
 * config.json, the options of attncheck train and messages. */
const char *const ac_task_names[] = {"fit-p", "teacher", "listops", "text", NULL};
const char *const ac_sched_names[] = {"cosine", "linear", "constant", NULL};
const char *const ac_train_optimizer_names[] = {"adamw", "bfgs", NULL};
const char *const ac_nn_arch_names[] = {"transformer", "attention", "scores", NULL};
const char *const ac_nn_input_names[] = {"tokens", "vectors", NULL};
const char *const ac_nn_kind_names[] = {"standard", "fixed", NULL};
const char *const ac_nn_ln_names[] = {"pre", "post", NULL};
const char *const ac_nn_head_names[] = {"lm", "classify", "regress", "scores", NULL};
const char *const ac_nn_pool_names[] = {"first", "last", "mean", NULL};

int train_name_index(const char *s, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

const char *ac_task_name(ac_task_kind t)
{
    return (unsigned)t < 4 ? ac_task_names[t] : "unknown";
}

int ac_task_parse(const char *s, ac_task_kind *t)
{
    int i = train_name_index(s, ac_task_names);
    if (i < 0)
        return AC_EUSAGE;
    *t = (ac_task_kind)i;
    return AC_OK;
}

const char *ac_train_optimizer_name(ac_train_optimizer o)
{
    return (unsigned)o < 2 ? ac_train_optimizer_names[o] : "unknown";
}

int ac_train_optimizer_parse(const char *s, ac_train_optimizer *o)
{
    int i = train_name_index(s, ac_train_optimizer_names);
    if (i < 0)
        return AC_EUSAGE;
    *o = (ac_train_optimizer)i;
    return AC_OK;
}

/* ---------------------------------------------------------------- config */

void ac_train_config_default(ac_train_config *c, ac_task_kind task)
{
    memset(c, 0, sizeof *c);
    c->task = task;
    ac_nn_config *m = &c->model;
    m->arch = AC_NN_ARCH_TRANSFORMER;
    m->input = AC_NN_INPUT_TOKENS;
    m->positions = 1;
    m->width = 64;
    m->layers = 2;
    m->heads = 4;
    m->kind = AC_NN_ATTN_STANDARD;
    m->head_dim = 0;
    m->ffn = 256;
    m->ln = AC_NN_LN_PRE;
    c->batch = 32;
    c->seq = 64;
    c->steps = 1000;
    c->lr = 1e-3;
    c->beta1 = 0.9;
    c->beta2 = 0.999;
    c->eps = 1e-8;
    c->weight_decay = 0.01;
    c->clip = 1.0;
    c->init_std = 0.02;
    c->schedule = AC_SCHED_COSINE;
    c->seed = 1;
    c->eval_batches = 4;
    c->holdout = 0.1;
    c->listops_depth = 10;
    c->listops_args = 10;
    switch (task) {
    case AC_TASK_TEXT:
        m->head = AC_NN_HEAD_LM;
        m->causal = 1;
        break;
    case AC_TASK_LISTOPS:
        m->head = AC_NN_HEAD_CLASSIFY;
        m->out_dim = 10;
        m->pool = AC_NN_POOL_FIRST;
        c->seq = 128;
        c->steps = 2000;
        break;
    case AC_TASK_TEACHER:
        m->arch = AC_NN_ARCH_ATTENTION;
        m->input = AC_NN_INPUT_VECTORS;
        m->positions = 0;
        m->head = AC_NN_HEAD_REGRESS;
        c->seq = 0; /* n of X.npy, or 8 in generator mode */
        c->steps = 2000;
        c->lr = 1e-2;
        c->weight_decay = 0;
        c->init_std = -1;
        break;
    case AC_TASK_FIT_P:
        m->arch = AC_NN_ARCH_SCORES;
        m->input = AC_NN_INPUT_VECTORS;
        m->positions = 0;
        m->heads = 1;
        m->kind = AC_NN_ATTN_FIXED;
        m->head = AC_NN_HEAD_SCORES;
        c->batch = 1;
        c->seq = 0; /* n of the instance */
        c->steps = 3000;
        c->lr = 0.05;
        c->weight_decay = 0;
        c->clip = 0;
        c->init_std = -1;
        c->fitp_n = 8;
        c->optimizer = AC_OPT_BFGS;
        break;
    }
    c->warmup = c->steps / 10;
    c->min_lr = c->lr / 10;
    c->eval_every = c->steps / 10 ? c->steps / 10 : 1;
}

double ac_train_lr(const ac_train_config *c, size_t step)
{
    if (step == 0)
        step = 1;
    if (c->warmup > 0 && step <= c->warmup)
        return c->lr * (double)step / (double)c->warmup;
    if (c->schedule == AC_SCHED_CONSTANT || c->steps <= c->warmup)
        return c->lr;
    double f = (double)(step - c->warmup) / (double)(c->steps - c->warmup); /* (0, 1] */
    if (f > 1)
        f = 1;
    if (c->schedule == AC_SCHED_LINEAR)
        return c->lr + (c->min_lr - c->lr) * f;
    return c->min_lr + 0.5 * (c->lr - c->min_lr) * (1.0 + cos(M_PI * f));
}

/* The head size: width/heads for standard heads, head_dim for fixed ones. */
size_t train_head_size(const ac_nn_config *m)
{
    return m->kind == AC_NN_ATTN_STANDARD ? (m->heads ? m->width / m->heads : 0) : m->head_dim;
}

const char *ac_train_config_diff(const ac_train_config *a, const ac_train_config *b)
{
    const ac_nn_config *x = &a->model, *y = &b->model;
#define DIFF(f)                                                                                    \
    if (a->f != b->f)                                                                              \
        return #f;
#define MDIFF(f)                                                                                   \
    if (x->f != y->f)                                                                              \
        return #f;
    DIFF(task);
    MDIFF(arch);
    MDIFF(input);
    MDIFF(vocab);
    MDIFF(in_dim);
    MDIFF(positions);
    MDIFF(max_seq);
    MDIFF(width);
    MDIFF(layers);
    MDIFF(heads);
    MDIFF(kind);
    if (train_head_size(x) != train_head_size(y))
        return "head_dim";
    MDIFF(ffn);
    MDIFF(ln);
    MDIFF(causal);
    MDIFF(head);
    MDIFF(out_dim);
    MDIFF(pool);
    DIFF(batch);
    DIFF(seq);
    DIFF(warmup);
    DIFF(lr);
    DIFF(min_lr);
    DIFF(beta1);
    DIFF(beta2);
    DIFF(eps);
    DIFF(weight_decay);
    DIFF(clip);
    DIFF(init_std);
    DIFF(schedule);
    DIFF(optimizer);
    DIFF(seed);
    if (strcmp(a->x_path, b->x_path) != 0)
        return "x_path";
    if (strcmp(a->p_path, b->p_path) != 0)
        return "p_path";
    DIFF(p_rows);
    if (strcmp(a->teacher_dir, b->teacher_dir) != 0)
        return "teacher_dir";
    if (a->task == AC_TASK_TEACHER && a->teacher_stack != b->teacher_stack)
        return "teacher_stack";
    if (strcmp(a->text_path, b->text_path) != 0)
        return "text_path";
    if (a->task == AC_TASK_FIT_P) {
        DIFF(fitp_n);
        DIFF(fitp_d);
        DIFF(fitp_dk);
    }
    if (a->task == AC_TASK_TEXT || a->task == AC_TASK_TEACHER)
        DIFF(holdout);
    if (a->task == AC_TASK_LISTOPS) {
        DIFF(listops_depth);
        DIFF(listops_args);
        DIFF(listops_min);
        DIFF(listops_max);
    }
#undef DIFF
#undef MDIFF
    return NULL;
}
