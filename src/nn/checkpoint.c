/* checkpoint.c — writing checkpoints of the trainer (attncheck/train.h,
 * doc/mathematics.md §6.4): config.json (the configuration, the step and an
 * FNV-1a checksum of every tensor), one .npy per tensor and the AdamW
 * moments, written into a staged directory and swapped in whole
 * (ac_stagedir_begin_replace: the checkpoint swap).  Reading them back is
 * checkpoint_load.c.
 */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attncheck/fileio.h"
#include "attncheck/json.h"
#include "attncheck/npy.h"
#include "io/jsonparse.h"
#include "nn/nn_impl.h"

/* ---------------------------------------------------------------- writing */

static void hex64(char *buf, uint64_t h)
{
    snprintf(buf, 17, "%016llx", (unsigned long long)h);
}

/* "model": the architecture (head_dim as built: the head size). */
static void write_model_json(ac_json *j, const ac_nn_config *m, size_t head_size)
{
    ac_json_key(j, "model");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "arch", ac_nn_arch_names[m->arch]);
    ac_json_kv_string(j, "input", ac_nn_input_names[m->input]);
    ac_json_kv_int(j, "vocab", (long long)m->vocab);
    ac_json_kv_int(j, "in_dim", (long long)m->in_dim);
    ac_json_kv_bool(j, "positions", m->positions);
    ac_json_kv_int(j, "max_seq", (long long)m->max_seq);
    ac_json_kv_int(j, "width", (long long)m->width);
    ac_json_kv_int(j, "layers", (long long)m->layers);
    ac_json_kv_int(j, "heads", (long long)m->heads);
    ac_json_kv_string(j, "attention", ac_nn_kind_names[m->kind]);
    ac_json_kv_int(j, "head_dim", (long long)head_size);
    ac_json_kv_int(j, "ffn", (long long)m->ffn);
    ac_json_kv_string(j, "ln", ac_nn_ln_names[m->ln]);
    ac_json_kv_bool(j, "causal", m->causal);
    ac_json_kv_string(j, "head", ac_nn_head_names[m->head]);
    ac_json_kv_int(j, "out_dim", (long long)m->out_dim);
    ac_json_kv_string(j, "pool", ac_nn_pool_names[m->pool]);
    ac_json_kv_number(j, "ln_eps", AC_NN_LN_EPS);
    ac_json_kv_string(j, "gelu", "tanh");
    ac_json_end_object(j);
}

/* "train": the optimisation. */
static void write_train_json(ac_json *j, const ac_train_config *c)
{
    char sb[32];
    ac_json_key(j, "train");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "batch", (long long)c->batch);
    ac_json_kv_int(j, "seq", (long long)c->seq);
    ac_json_kv_int(j, "steps", (long long)c->steps);
    ac_json_kv_int(j, "warmup", (long long)c->warmup);
    ac_json_kv_number(j, "lr", c->lr);
    ac_json_kv_number(j, "min_lr", c->min_lr);
    ac_json_kv_string(j, "schedule", ac_sched_names[c->schedule]);
    ac_json_kv_string(j, "optimizer", ac_train_optimizer_name(c->optimizer));
    ac_json_kv_number(j, "beta1", c->beta1);
    ac_json_kv_number(j, "beta2", c->beta2);
    ac_json_kv_number(j, "eps", c->eps);
    ac_json_kv_number(j, "weight_decay", c->weight_decay);
    ac_json_kv_number(j, "clip", c->clip);
    ac_json_kv_number(j, "init_std", c->init_std);
    snprintf(sb, sizeof sb, "%llu", (unsigned long long)c->seed);
    ac_json_kv_string(j, "seed", sb);
    ac_json_kv_int(j, "eval_every", (long long)c->eval_every);
    ac_json_kv_int(j, "eval_batches", (long long)c->eval_batches);
    ac_json_end_object(j);
}

/* "data": the task's inputs, their checksum and (text) the vocabulary. */
static void write_data_json(ac_json *j, const ac_train_config *c, const ac_train_data *d)
{
    char hb[20];
    ac_json_key(j, "data");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "x", c->x_path);
    ac_json_kv_string(j, "p", c->p_path);
    if (c->p_rows)
        ac_json_kv_bool(j, "p_rows", 1);
    ac_json_kv_int(j, "n", (long long)c->fitp_n);
    ac_json_kv_int(j, "d", (long long)c->fitp_d);
    ac_json_kv_int(j, "dk", (long long)c->fitp_dk);
    ac_json_kv_string(j, "teacher", c->teacher_dir);
    {
        char ts[2] = {c->teacher_stack, 0};
        ac_json_kv_string(j, "teacher_stack", ts);
    }
    ac_json_kv_string(j, "text", c->text_path);
    ac_json_kv_number(j, "holdout", c->holdout);
    ac_json_kv_int(j, "listops_depth", (long long)c->listops_depth);
    ac_json_kv_int(j, "listops_args", (long long)c->listops_args);
    ac_json_kv_int(j, "listops_min_len", (long long)c->listops_min);
    ac_json_kv_int(j, "listops_max_len", (long long)c->listops_max);
    hex64(hb, d->checksum);
    ac_json_kv_string(j, "fnv1a64", hb);
    if (c->task == AC_TASK_TEXT) {
        ac_json_key(j, "vocab");
        ac_json_begin_array(j);
        for (size_t i = 0; i < d->nvocab; i++)
            ac_json_int(j, d->vocab[i]);
        ac_json_end_array(j);
    }
    ac_json_end_object(j);
}

/* "tensors" (name, shape, checksum of each) and "adamw" (the step and the
 * checksums of the two moments). */
static void write_tensors_json(ac_json *j, const ac_trainer *tr, const uint64_t *sums,
                               uint64_t msum, uint64_t vsum)
{
    const ac_nn_model *md = &tr->model;
    char hb[20];
    ac_json_key(j, "tensors");
    ac_json_begin_array(j);
    for (size_t i = 0; i < md->ntensors; i++) {
        const ac_nn_tensor *t = &md->tensors[i];
        ac_json_begin_object(j);
        ac_json_kv_string(j, "name", t->name);
        ac_json_key(j, "shape");
        ac_json_begin_array(j);
        for (size_t k = 0; k < t->ndim; k++)
            ac_json_int(j, (long long)t->shape[k]);
        ac_json_end_array(j);
        hex64(hb, sums[i]);
        ac_json_kv_string(j, "fnv1a64", hb);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_key(j, "adamw");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "t", (long long)tr->step);
    hex64(hb, msum);
    ac_json_kv_string(j, "m", hb);
    hex64(hb, vsum);
    ac_json_kv_string(j, "v", hb);
    ac_json_end_object(j);
}

static void write_config_json(ac_json *j, const ac_trainer *tr, const uint64_t *sums,
                              uint64_t msum, uint64_t vsum)
{
    const ac_train_config *c = &tr->cfg;
    ac_json_begin_object(j);
    ac_json_kv_string(j, "format", AC_CKPT_FORMAT);
    ac_json_kv_int(j, "version", AC_CKPT_VERSION);
    ac_json_kv_string(j, "attncheck", AC_VERSION_STRING);
    ac_json_kv_int(j, "step", (long long)tr->step);
    size_t bstep;
    double bdev, bkl;
    if (train_fitp_best_current(tr) && ac_trainer_fitp_best(tr, &bstep, &bdev, &bkl)) {
        /* fit-p: these weights are the best iterate (evaluated again on load) */
        ac_json_key(j, "best");
        ac_json_begin_object(j);
        ac_json_kv_int(j, "step", (long long)bstep);
        ac_json_kv_number(j, "maxdev", bdev);
        ac_json_kv_number(j, "kl", bkl);
        ac_json_end_object(j);
    }
    ac_json_kv_string(j, "task", ac_task_name(c->task));
    write_model_json(j, &c->model, tr->model.S);
    write_train_json(j, c);
    write_data_json(j, c, tr->data);
    write_tensors_json(j, tr, sums, msum, vsum);
    ac_json_end_object(j);
}

static int write_array(const char *dir, const char *name, const double *data, size_t ndim,
                       const size_t *shape, ac_err *err)
{
    char p[PATH_MAX];
    ac_array a;
    memset(&a, 0, sizeof a);
    a.ndim = ndim;
    a.size = 1;
    for (size_t k = 0; k < ndim; k++) {
        a.shape[k] = shape[k];
        a.size *= shape[k];
    }
    a.data = (double *)data;
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, name) >= sizeof p)
        return ac_err_set(err, AC_ECANTCREAT, "%s/%s: path too long", dir, name);
    return ac_npy_write(p, &a, err);
}


/* The check of the staged directory: an existing non-empty directory is
 * replaced only if it is an attncheck checkpoint. */
static int replaceable_checkpoint(const char *dir, ac_err *err)
{
    char p[PATH_MAX];
    ac_jv *v = NULL;
    ac_err e;
    snprintf(p, sizeof p, "%s/config.json", dir);
    int ok = 0;
    if (!ac_jparse_file(&v, p, &e)) {
        const ac_jv *f = ac_jv_get(v, "format");
        ok = f && f->type == AC_JV_STRING && strcmp(f->s, AC_CKPT_FORMAT) == 0;
        ac_jv_free(v);
    }
    if (!ok)
        return ac_err_set(err, AC_ECANTCREAT, "%s: exists and is not an attncheck checkpoint; "
                          "not replacing it", dir);
    return AC_OK;
}

typedef struct {
    const ac_trainer *tr;
    /* dump extras */
    const ac_nn_batch *batch;
    double loss;
    int dump;
} save_ctx;

/* The weights (and, for a dump, their gradients) as NAME.npy and
 * grad.NAME.npy, the AdamW moments; sums[i] receives tensor i's checksum. */
static int write_tensors(const char *tmp, const save_ctx *sc, uint64_t *sums, ac_err *err)
{
    const ac_nn_model *m = &sc->tr->model;
    char name[AC_NN_NAME_MAX + 16];
    int st;
    for (size_t i = 0; i < m->ntensors; i++) {
        const ac_nn_tensor *t = &m->tensors[i];
        sums[i] = fnv_doubles(FNV_INIT, m->params + t->offset, t->size);
        snprintf(name, sizeof name, "%s.npy", t->name);
        if ((st = write_array(tmp, name, m->params + t->offset, t->ndim, t->shape, err)))
            return st;
        if (sc->dump) {
            snprintf(name, sizeof name, "grad.%s.npy", t->name);
            if ((st = write_array(tmp, name, m->grads + t->offset, t->ndim, t->shape, err)))
                return st;
        }
    }
    size_t np = m->nparams;
    if ((st = write_array(tmp, "adamw.m.npy", m->m, 1, &np, err)) ||
        (st = write_array(tmp, "adamw.v.npy", m->v, 1, &np, err)))
        return st;
    return AC_OK;
}

/* A dump's batch (tokens and targets as float64, or x and y, in the row
 * layout of nn.h; batch.len.npy, the real tokens of each sequence, when
 * the batch has padding; batch.keep.npy, T x T, when it has a mask) and its
 * loss (0-d). */
static int write_batch(const char *tmp, const save_ctx *sc, ac_err *err)
{
    const ac_nn_batch *b = sc->batch;
    const ac_nn_config *c = &sc->tr->model.cfg;
    size_t N = b->B * b->T;
    double *buf = malloc((N ? N : 1) * sizeof *buf);
    if (!buf)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    size_t sh[4];
    int st = AC_OK;
    if (b->tokens) {
        for (size_t i = 0; i < N; i++)
            buf[i] = b->tokens[i];
        sh[0] = b->B, sh[1] = b->T;
        st = write_array(tmp, "batch.tokens.npy", buf, 2, sh, err);
    }
    if (!st && b->targets) {
        size_t nt = c->head == AC_NN_HEAD_CLASSIFY ? b->B : N;
        for (size_t i = 0; i < nt; i++)
            buf[i] = b->targets[i];
        sh[0] = b->B, sh[1] = b->T;
        st = write_array(tmp, "batch.targets.npy", buf, c->head == AC_NN_HEAD_CLASSIFY ? 1 : 2,
                         sh, err);
    }
    if (!st && b->len && c->arch == AC_NN_ARCH_TRANSFORMER) {
        for (size_t i = 0; i < b->B; i++)
            buf[i] = (double)b->len[i];
        sh[0] = b->B;
        st = write_array(tmp, "batch.len.npy", buf, 1, sh, err);
    }
    free(buf);
    if (!st && b->keep) { /* the mask of a masked head, 1 = visible, row = query */
        size_t TT = b->T * b->T;
        double *kb = malloc((TT ? TT : 1) * sizeof *kb);
        if (!kb)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        for (size_t i = 0; i < TT; i++)
            kb[i] = b->keep[i] != 0;
        sh[0] = sh[1] = b->T;
        st = write_array(tmp, "batch.keep.npy", kb, 2, sh, err);
        free(kb);
    }
    if (!st && b->x) {
        size_t I = c->arch == AC_NN_ARCH_TRANSFORMER ? c->in_dim : c->width;
        sh[0] = b->B, sh[1] = b->T, sh[2] = I;
        st = write_array(tmp, "batch.x.npy", b->x, 3, sh, err);
    }
    if (!st && b->y) {
        if (c->head == AC_NN_HEAD_SCORES) {
            sh[0] = b->B, sh[1] = c->heads, sh[2] = b->T, sh[3] = b->T;
            st = write_array(tmp, "batch.y.npy", b->y, 4, sh, err);
        } else {
            sh[0] = b->B, sh[1] = b->T;
            sh[2] = c->arch == AC_NN_ARCH_ATTENTION ? c->width : c->out_dim;
            st = write_array(tmp, "batch.y.npy", b->y, 3, sh, err);
        }
    }
    if (!st)
        st = write_array(tmp, "loss.npy", &sc->loss, 0, NULL, err);
    return st;
}

/* config.json, atomically, last. */
static int write_config(const char *tmp, const save_ctx *sc, const uint64_t *sums, ac_err *err)
{
    const ac_nn_model *m = &sc->tr->model;
    char p[PATH_MAX];
    int st;
    snprintf(p, sizeof p, "%s/config.json", tmp);
    ac_atomic f;
    if ((st = ac_atomic_open(&f, p, err)))
        return st;
    ac_json *j = ac_json_new(f.fp, 2);
    if (!j) {
        ac_atomic_abort(&f);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    write_config_json(j, sc->tr, sums, fnv_doubles(FNV_INIT, m->m, m->nparams),
                      fnv_doubles(FNV_INIT, m->v, m->nparams));
    int jst = ac_json_error(j);
    ac_json_free(j);
    if (jst) {
        ac_atomic_abort(&f);
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot write", p);
    }
    return ac_atomic_commit(&f, err);
}

/* Write the checkpoint (and dump) into a staged directory and swap it in. */
static int save_staged(const char *dir, const save_ctx *sc, ac_err *err)
{
    const ac_nn_model *m = &sc->tr->model;
    ac_stagedir s;
    int st;
    if ((st = ac_stagedir_begin_replace(&s, dir, "checkpoint directory", replaceable_checkpoint,
                                        err)))
        return st;
    uint64_t *sums = malloc((m->ntensors ? m->ntensors : 1) * sizeof *sums);
    if (!sums)
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
    else if (!(st = write_tensors(s.tmp, sc, sums, err)) &&
             !(st = sc->dump ? write_batch(s.tmp, sc, err) : AC_OK))
        st = write_config(s.tmp, sc, sums, err);
    free(sums);
    if (st) {
        ac_stagedir_unstage_err(&s, err); /* the message names DIR/FILE */
        ac_stagedir_abort(&s);
        return st;
    }
    return ac_stagedir_commit(&s, err);
}

int ac_trainer_save(const ac_trainer *tr, const char *dir, ac_err *err)
{
    save_ctx sc = {tr, NULL, 0, 0};
    return save_staged(dir, &sc, err);
}

int ac_trainer_dump_grads(ac_trainer *tr, const char *dir, double *loss, ac_err *err)
{
    ac_nn_batch b;
    ac_nn_stats st;
    int rc;
    if ((rc = train_fill_batch(tr, 0, tr->step + 1, &b, err)))
        return rc;
    if ((rc = ac_nn_forward(&tr->model, &b, &st, err)))
        return rc;
    ac_nn_zero_grad(&tr->model);
    ac_nn_backward(&tr->model);
    /* the head's buffers now hold gradients; the batch arrays still hold
     * the batch (they belong to the data) */
    save_ctx sc = {tr, &b, st.loss, 1};
    if (loss)
        *loss = st.loss;
    return save_staged(dir, &sc, err);
}
