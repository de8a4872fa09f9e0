/* trainer.c — the trainer of attncheck/train.h: building it (the task's
 * data, the model and its initial weights), one AdamW step with gradient
 * clipping (doc/mathematics.md §6.2), evaluation on the held-out data.
 *
 * The training loop itself is the command's (src/commands/train.c), as the
 * main() of llm.c's train_gpt2.c is; this module provides its pieces.
 */
#include <config.h>

#define _GNU_SOURCE 1 /* realpath */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_impl.h"

static void data_free(ac_train_data *d)
{
    if (!d)
        return;
    free(d->tokens);
    free(d->targets);
    free(d->x);
    free(d->y);
    free(d->ids);
    free(d->expr);
    free(d->len);
    free(d->keep);
    ac_nn_model_free(&d->teacher);
    free(d->tx);
    free(d->ty);
    ac_mat_free(&d->X);
    ac_mat_free(&d->P);
    train_fitp_free(d);
    free(d);
}

int ac_train_path_absolute(char *path, ac_err *err)
{
    char buf[PATH_MAX];
    if (!path[0])
        return AC_OK;
    if (!realpath(path, buf))
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", path, strerror(errno));
    if (strlen(buf) >= AC_TRAIN_PATH_MAX)
        return ac_err_set(err, AC_EUSAGE, "%s: path too long", buf);
    strcpy(path, buf);
    return AC_OK;
}

/* ---------------------------------------------------------------- batches */

int train_fill_batch(ac_trainer *tr, int split, size_t index, ac_nn_batch *b, ac_err *err)
{
    ac_train_data *d = tr->data;
    const ac_train_config *c = &tr->cfg;
    memset(b, 0, sizeof *b);
    b->B = c->batch;
    b->T = c->seq;
    switch (c->task) {
    case AC_TASK_TEXT:
        train_text_batch(d, c, split, index, b);
        break;
    case AC_TASK_LISTOPS:
        return train_listops_batch(d, c, split, index, b, err);
    case AC_TASK_TEACHER:
        return train_teacher_batch(d, c, split, index, b, err);
    case AC_TASK_FIT_P:
        train_fitp_batch(d, c, b);
        break;
    }
    return AC_OK;
}

/* Number of evaluation batches actually available. */
static size_t eval_batch_count(const ac_trainer *tr)
{
    const ac_train_config *c = &tr->cfg;
    const ac_train_data *d = tr->data;
    if (c->task == AC_TASK_FIT_P)
        return 1;
    if (c->task == AC_TASK_TEACHER && !d->gen) {
        size_t nheld = d->tm - d->ttrain, lim = nheld ? nheld : d->ttrain;
        size_t nb = (lim + c->batch - 1) / c->batch;
        return nb < c->eval_batches ? nb : c->eval_batches;
    }
    return c->eval_batches;
}

/* Check the optimiser's settings, then open the task's data (completing
 * the configuration); fit-p's X and P, the teacher's layer, from memory when
 * given. */
static int open_data(ac_train_data *d, ac_train_config *c, const ac_mat *X, const char *xname,
                     const ac_mat *P, const char *pname, const ac_mh *teacher, ac_err *err)
{
    int st;
    if (c->batch == 0)
        return ac_err_set_field(err, AC_EUSAGE, "batch", "batch must be at least 1");
    if (!(c->lr > 0) || !isfinite(c->lr) || !(c->min_lr >= 0) || !isfinite(c->min_lr))
        return ac_err_set_field(err, AC_EUSAGE, "lr,min_lr",
                                "lr must be positive and min_lr non-negative");
    if (!(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1) || !(c->eps > 0))
        return ac_err_set(err, AC_EUSAGE, "AdamW needs 0 <= beta < 1 and eps > 0");
    if (!(c->holdout >= 0 && c->holdout < 1))
        return ac_err_set_field(err, AC_EUSAGE, "holdout", "holdout must be in [0, 1)");
    if (c->optimizer == AC_OPT_BFGS && c->task != AC_TASK_FIT_P)
        return ac_err_set_field(err, AC_EUSAGE, "optimizer",
                                "optimizer bfgs is for fit-p only (one fixed batch)");
    if (c->optimizer != AC_OPT_ADAMW && c->optimizer != AC_OPT_BFGS)
        return ac_err_set_field(err, AC_EUSAGE, "optimizer", "unknown optimizer");
    switch (c->task) {
    case AC_TASK_TEXT:
        if ((st = ac_train_path_absolute(c->text_path, err)) || (st = train_text_open(d, c, err)))
            return st;
        break;
    case AC_TASK_LISTOPS:
        if ((st = train_listops_open(d, c, err)))
            return st;
        break;
    case AC_TASK_TEACHER:
        if ((!teacher && (st = ac_train_path_absolute(c->teacher_dir, err))) ||
            (st = train_teacher_open(d, c, teacher, err)))
            return st;
        break;
    case AC_TASK_FIT_P:
        /* x_path, p_path only name the files the caller read X, P from */
        if ((st = train_fitp_open(d, c, X, xname, P, pname, err)))
            return st;
        break;
    default:
        return ac_err_set(err, AC_EUSAGE, "unknown task");
    }
    return AC_OK;
}

static int trainer_init(ac_trainer *tr, const ac_train_config *cfg, const ac_mat *X,
                        const char *xname, const ac_mat *P, const char *pname,
                        const ac_mh *teacher, ac_err *err)
{
    int st;
    memset(tr, 0, sizeof *tr);
    tr->cfg = *cfg;
    ac_train_config *c = &tr->cfg;
    tr->data = calloc(1, sizeof *tr->data);
    if (!tr->data)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    ac_train_data *d = tr->data;
    if ((st = open_data(d, c, X, xname, P, pname, teacher, err)))
        return st;
    if (c->seq == 0)
        return ac_err_set_field(err, AC_EUSAGE, "seq", "seq must be at least 1");
    c->model.max_seq = c->seq;
    if ((st = ac_nn_config_check(&c->model, err)))
        return st;
    size_t B = c->batch, T = c->seq, N = B * T;
    size_t din = c->model.arch == AC_NN_ARCH_TRANSFORMER ? c->model.in_dim : c->model.width;
    size_t dy = c->task == AC_TASK_FIT_P ? T * c->model.heads : (d->te ? d->te : 1);
    d->B = B;
    d->T = T;
    d->tokens = calloc(N, sizeof *d->tokens);
    d->targets = calloc(N, sizeof *d->targets);
    d->x = calloc(N * (din ? din : 1), sizeof *d->x);
    d->y = calloc(N * dy, sizeof *d->y);
    if (!d->tokens || !d->targets || !d->x || !d->y)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if ((st = ac_nn_model_init(&tr->model, &c->model, B, T, err)))
        return st;
    ac_nn_model_init_weights(&tr->model, c->seed, c->init_std);
    tr->step = 0;
    if (c->task == AC_TASK_FIT_P && (st = train_fitp_setup(tr, err)))
        return st;
    return AC_OK;
}

int ac_trainer_init(ac_trainer *tr, const ac_train_config *cfg, ac_err *err)
{
    return trainer_init(tr, cfg, NULL, NULL, NULL, NULL, NULL, err);
}

int ac_trainer_init_fitp(ac_trainer *tr, const ac_train_config *cfg, const ac_mat *X,
                         const char *xname, const ac_mat *P, const char *pname, ac_err *err)
{
    memset(tr, 0, sizeof *tr);
    if (cfg->task != AC_TASK_FIT_P)
        return ac_err_set(err, AC_EUSAGE, "ac_trainer_init_fitp needs the fit-p task");
    if (!X || !P)
        return ac_err_set(err, AC_EUSAGE, "ac_trainer_init_fitp needs X and P");
    return trainer_init(tr, cfg, X, xname ? xname : "X", P, pname ? pname : "P", NULL, err);
}

int ac_trainer_init_fitp_masked(ac_trainer *tr, const ac_train_config *cfg, const ac_mat *X,
                                const char *xname, const ac_mat *P, const char *pname,
                                const unsigned char *omega, ac_err *err)
{
    int st = ac_trainer_init_fitp(tr, cfg, X, xname, P, pname, err);
    if (!st && omega)
        st = train_fitp_mask(tr->data, omega, err);
    return st;
}

int ac_trainer_init_teacher(ac_trainer *tr, const ac_train_config *cfg, const ac_mh *teacher,
                            ac_err *err)
{
    memset(tr, 0, sizeof *tr);
    if (cfg->task != AC_TASK_TEACHER || cfg->teacher_dir[0])
        return ac_err_set(err, AC_EUSAGE, "ac_trainer_init_teacher needs the teacher task "
                          "without teacher_dir");
    if (!teacher)
        return ac_err_set(err, AC_EUSAGE, "ac_trainer_init_teacher needs a teacher layer");
    return trainer_init(tr, cfg, NULL, NULL, NULL, NULL, teacher, err);
}

void ac_trainer_free(ac_trainer *tr)
{
    if (!tr)
        return;
    data_free(tr->data);
    ac_nn_model_free(&tr->model);
    memset(tr, 0, sizeof *tr);
}

const char *ac_trainer_data_summary(const ac_trainer *tr)
{
    return tr->data ? tr->data->summary : "";
}

static double ratio_or_nan(const ac_trainer *tr, size_t correct, size_t count)
{
    const ac_nn_config *m = &tr->cfg.model;
    if ((m->head != AC_NN_HEAD_LM && m->head != AC_NN_HEAD_CLASSIFY) || count == 0)
        return NAN;
    return (double)correct / (double)count;
}

static double maxdev_or_nan(const ac_trainer *tr, double md)
{
    const ac_nn_config *m = &tr->cfg.model;
    return m->head == AC_NN_HEAD_REGRESS || m->head == AC_NN_HEAD_SCORES ? md : NAN;
}

int ac_trainer_step(ac_trainer *tr, ac_step_info *info, ac_err *err)
{
    const ac_train_config *c = &tr->cfg;
    ac_nn_model *m = &tr->model;
    ac_nn_batch b;
    ac_nn_stats st;
    int rc;
    size_t s = tr->step + 1;
    train_fitp_moved(tr);
    if (c->optimizer == AC_OPT_BFGS)
        return train_fitp_bfgs_step(tr, info, err);
    if ((rc = train_fill_batch(tr, 0, s, &b, err)))
        return rc;
    if ((rc = ac_nn_forward(m, &b, &st, err)))
        return rc;
    double kl = c->task == AC_TASK_FIT_P ? train_fitp_kl(tr) : NAN;
    if (!isfinite(st.loss))
        return ac_err_set_field(err, AC_EDATA, "lr", "the loss became %g at step %zu (try a "
                                "smaller lr)", st.loss, s);
    ac_nn_zero_grad(m);
    ac_nn_backward(m);
    double gn = ac_nn_grad_norm(m);
    if (!isfinite(gn))
        return ac_err_set_field(err, AC_EDATA, "lr", "the gradient became %g at step %zu (try a "
                                "smaller lr)", gn, s);
    double gscale = c->clip > 0 && gn > c->clip ? c->clip / gn : 1.0;
    double lr = ac_train_lr(c, s);
    ac_nn_adamw o = {lr, c->beta1, c->beta2, c->eps, c->weight_decay};
    ac_nn_adamw_step(m, &o, (long)s, gscale);
    tr->step = s;
    if (info) {
        info->step = s;
        info->lr = lr;
        info->loss = c->task == AC_TASK_FIT_P ? kl : st.loss;
        info->done = 0;
        info->grad_norm = gn;
        info->tokens = b.B * b.T;
        info->accuracy = ratio_or_nan(tr, st.correct, st.count);
        info->maxdev = maxdev_or_nan(tr, st.maxdev);
    }
    return AC_OK;
}

int ac_trainer_eval(ac_trainer *tr, ac_eval_info *ev, ac_err *err)
{
    size_t nb = eval_batch_count(tr), count = 0, correct = 0;
    double sum = 0, md = 0, sse = 0, syy = 0;
    int rc;
    for (size_t i = 0; i < nb; i++) {
        ac_nn_batch b;
        ac_nn_stats st;
        if ((rc = train_fill_batch(tr, 1, i, &b, err)))
            return rc;
        if (b.B == 0)
            break;
        if ((rc = ac_nn_forward(&tr->model, &b, &st, err)))
            return rc;
        if (tr->cfg.task == AC_TASK_FIT_P) { /* KL, and the best iterate */
            double kl = train_fitp_kl(tr);
            st.loss = kl / (double)st.count;
            train_fitp_note(tr, st.maxdev, kl);
        }
        sum += st.loss * (double)st.count;
        count += st.count;
        correct += st.correct;
        md = st.maxdev > md ? st.maxdev : md;
        if (tr->cfg.model.head == AC_NN_HEAD_REGRESS)
            train_regress_sums(&tr->model, &b, &sse, &syy);
    }
    ev->loss = count ? sum / (double)count : NAN;
    if (tr->cfg.task == AC_TASK_FIT_P) /* KL summed over the columns */
        ev->loss = sum;
    ev->count = count;
    ev->accuracy = ratio_or_nan(tr, correct, count);
    ev->maxdev = maxdev_or_nan(tr, md);
    ev->rel_mse = tr->cfg.model.head == AC_NN_HEAD_REGRESS && syy > 0 ? sse / syy : NAN;
    return AC_OK;
}

int ac_trainer_fitp_instance(const ac_trainer *tr, ac_mat *X, ac_mat *P, ac_mat *Wq, ac_mat *Wk,
                             ac_err *err)
{
    int st;
    if (tr->cfg.task != AC_TASK_FIT_P)
        return ac_err_set(err, AC_EUSAGE, "not a fit-p trainer");
    const ac_nn_model *m = &tr->model;
    size_t dk = m->S, d = m->cfg.width;
    if ((st = ac_mat_copy(X, &tr->data->X, err)) || (st = ac_mat_copy(P, &tr->data->P, err)) ||
        (st = ac_mat_init(Wq, dk, d, err)) || (st = ac_mat_init(Wk, dk, d, err)))
        return st;
    const ac_nn_tensor *q = ac_nn_tensor_find(m, "Wq"), *k = ac_nn_tensor_find(m, "Wk");
    const double *w = train_fitp_weights(tr);
    memcpy(Wq->data, w + q->offset, dk * d * sizeof(double));
    memcpy(Wk->data, w + k->offset, dk * d * sizeof(double));
    return AC_OK;
}
