/* config.c — the trainer's configuration (attncheck/train.h): task names,
 * each task's defaults, the learning-rate schedule (doc/mathematics.md §6.2)
 * and the comparison a resumed run makes with its checkpoint. */
#include <config.h>

#define _GNU_SOURCE 1 /* M_PI */
#include <math.h>
#include <string.h>

#include "nn/nn_impl.h"

static const char *const task_names[] = {"fit-p", "teacher", "listops", "text"};

const char *ac_task_name(ac_task_kind t)
{
    return (unsigned)t < 4 ? task_names[t] : "unknown";
}

int ac_task_parse(const char *s, ac_task_kind *t)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, task_names[i]) == 0) {
            *t = (ac_task_kind)i;
            return AC_OK;
        }
    return AC_EUSAGE;
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


size_t train_head_size(const ac_nn_config *m)
{
    return m->kind == AC_NN_ATTN_STANDARD ? (m->heads ? m->width / m->heads : 0) : m->head_dim;
}

const char *ac_train_config_diff(const ac_train_config *a, const ac_train_config *b)
{
    const ac_nn_config *x = &a->model, *y = &b->model;
#define DIFF(f, name)                                                                              \
    if (a->f != b->f)                                                                              \
        return name;
#define MDIFF(f, name)                                                                             \
    if (x->f != y->f)                                                                              \
        return name;
    DIFF(task, "--task");
    MDIFF(arch, "--arch");
    MDIFF(input, "--arch");
    MDIFF(vocab, "the vocabulary");
    MDIFF(in_dim, "the input dimension");
    MDIFF(positions, "--positions");
    MDIFF(max_seq, "--seq");
    MDIFF(width, "--width");
    MDIFF(layers, "--layers");
    MDIFF(heads, "--heads");
    MDIFF(kind, "--attention");
    if (train_head_size(x) != train_head_size(y))
        return "--head-dim";
    MDIFF(ffn, "--ffn-mult");
    MDIFF(ln, "--ln");
    MDIFF(causal, "--causal");
    MDIFF(head, "--task");
    MDIFF(out_dim, "the number of outputs");
    MDIFF(pool, "--pool");
    DIFF(batch, "--batch");
    DIFF(seq, "--seq");
    DIFF(warmup, "--warmup");
    DIFF(lr, "--lr");
    DIFF(min_lr, "--min-lr");
    DIFF(beta1, "--beta1");
    DIFF(beta2, "--beta2");
    DIFF(eps, "--adam-eps");
    DIFF(weight_decay, "--weight-decay");
    DIFF(clip, "--clip");
    DIFF(init_std, "--init-std");
    DIFF(schedule, "--schedule");
    DIFF(seed, "--seed");
    if (strcmp(a->x_path, b->x_path) != 0)
        return "--x";
    if (strcmp(a->p_path, b->p_path) != 0)
        return "--p";
    if (strcmp(a->teacher_dir, b->teacher_dir) != 0)
        return "--teacher";
    if (a->task == AC_TASK_TEACHER && a->teacher_stack != b->teacher_stack)
        return "--teacher-stack";
    if (strcmp(a->text_path, b->text_path) != 0)
        return "--text";
    if (a->task == AC_TASK_FIT_P) {
        DIFF(fitp_n, "--n");
        DIFF(fitp_d, "--d");
        DIFF(fitp_dk, "--dk");
    }
    if (a->task == AC_TASK_TEXT || a->task == AC_TASK_TEACHER)
        DIFF(holdout, "--holdout");
    if (a->task == AC_TASK_LISTOPS) {
        DIFF(listops_depth, "--listops-depth");
        DIFF(listops_args, "--listops-args");
        DIFF(listops_min, "--listops-min-len");
        DIFF(listops_max, "--listops-max-len");
    }
#undef DIFF
#undef MDIFF
    return NULL;
}
