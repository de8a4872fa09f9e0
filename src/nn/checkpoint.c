/* checkpoint.c — checkpoints of the trainer (attncheck/train.h,
 * doc/mathematics.md §6.4): config.json (the configuration, the step and an
 * FNV-1a checksum of every tensor), one .npy per tensor and the AdamW
 * moments, written into a staged directory and swapped in whole
 * (ac_stagedir_begin_replace: the checkpoint swap); reading a checkpoint's
 * configuration and loading it, every file checked before anything changes.
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

#define CKPT_FORMAT "attncheck-train-checkpoint"
#define CKPT_VERSION 1

/* The spellings of the enums in config.json. */
static const char *const sched_names[] = {"cosine", "linear", "constant"};
static const char *const arch_names[] = {"transformer", "attention", "scores"};
static const char *const input_names[] = {"tokens", "vectors"};
static const char *const kind_names[] = {"standard", "fixed"};
static const char *const ln_names[] = {"pre", "post"};
static const char *const head_names[] = {"lm", "classify", "regress", "scores"};
static const char *const pool_names[] = {"first", "last", "mean"};

static int name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

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
    ac_json_kv_string(j, "arch", arch_names[m->arch]);
    ac_json_kv_string(j, "input", input_names[m->input]);
    ac_json_kv_int(j, "vocab", (long long)m->vocab);
    ac_json_kv_int(j, "in_dim", (long long)m->in_dim);
    ac_json_kv_bool(j, "positions", m->positions);
    ac_json_kv_int(j, "max_seq", (long long)m->max_seq);
    ac_json_kv_int(j, "width", (long long)m->width);
    ac_json_kv_int(j, "layers", (long long)m->layers);
    ac_json_kv_int(j, "heads", (long long)m->heads);
    ac_json_kv_string(j, "attention", kind_names[m->kind]);
    ac_json_kv_int(j, "head_dim", (long long)head_size);
    ac_json_kv_int(j, "ffn", (long long)m->ffn);
    ac_json_kv_string(j, "ln", ln_names[m->ln]);
    ac_json_kv_bool(j, "causal", m->causal);
    ac_json_kv_string(j, "head", head_names[m->head]);
    ac_json_kv_int(j, "out_dim", (long long)m->out_dim);
    ac_json_kv_string(j, "pool", pool_names[m->pool]);
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
    ac_json_kv_string(j, "schedule", sched_names[c->schedule]);
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
    ac_json_kv_string(j, "format", CKPT_FORMAT);
    ac_json_kv_int(j, "version", CKPT_VERSION);
    ac_json_kv_string(j, "attncheck", AC_VERSION_STRING);
    ac_json_kv_int(j, "step", (long long)tr->step);
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
        ok = f && f->type == AC_JV_STRING && strcmp(f->s, CKPT_FORMAT) == 0;
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
 * layout of nn.h) and its loss (0-d). */
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
    free(buf);
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


/* ---------------------------------------------------------------- reading */

static int get_enum(const ac_jv *o, const char *key, const char *const *names, int n, int *out,
                    const char *file, ac_err *err)
{
    const char *s;
    int st = ac_jv_get_string(o, key, &s, file, err);
    if (st)
        return st;
    int i = name_index(s, names, n);
    if (i < 0)
        return ac_err_set(err, AC_EDATA, "%s: \"%s\": unknown value \"%s\"", file, key, s);
    *out = i;
    return AC_OK;
}

static int get_path(const ac_jv *o, const char *key, char *out, const char *file, ac_err *err)
{
    const char *s;
    int st = ac_jv_get_string(o, key, &s, file, err);
    if (st)
        return st;
    if (strlen(s) >= AC_TRAIN_PATH_MAX)
        return ac_err_set(err, AC_EDATA, "%s: \"%s\" is too long", file, key);
    strcpy(out, s);
    return AC_OK;
}


/* "model": the architecture. */
static int model_from_json(const ac_jv *m, ac_nn_config *mc, const char *file, ac_err *err)
{
    int st, e;
    if ((st = get_enum(m, "arch", arch_names, 3, &e, file, err)))
        return st;
    mc->arch = (ac_nn_arch)e;
    if ((st = get_enum(m, "input", input_names, 2, &e, file, err)))
        return st;
    mc->input = (ac_nn_input)e;
    if ((st = get_enum(m, "attention", kind_names, 2, &e, file, err)))
        return st;
    mc->kind = (ac_nn_attn_kind)e;
    if ((st = get_enum(m, "ln", ln_names, 2, &e, file, err)))
        return st;
    mc->ln = (ac_nn_ln_place)e;
    if ((st = get_enum(m, "head", head_names, 4, &e, file, err)))
        return st;
    mc->head = (ac_nn_head)e;
    if ((st = get_enum(m, "pool", pool_names, 3, &e, file, err)))
        return st;
    mc->pool = (ac_nn_pool)e;
    if ((st = ac_jv_get_size(m, "vocab", &mc->vocab, file, err)) ||
        (st = ac_jv_get_size(m, "in_dim", &mc->in_dim, file, err)) ||
        (st = ac_jv_get_bool(m, "positions", &mc->positions, file, err)) ||
        (st = ac_jv_get_size(m, "max_seq", &mc->max_seq, file, err)) ||
        (st = ac_jv_get_size(m, "width", &mc->width, file, err)) ||
        (st = ac_jv_get_size(m, "layers", &mc->layers, file, err)) ||
        (st = ac_jv_get_size(m, "heads", &mc->heads, file, err)) ||
        (st = ac_jv_get_size(m, "head_dim", &mc->head_dim, file, err)) ||
        (st = ac_jv_get_size(m, "ffn", &mc->ffn, file, err)) ||
        (st = ac_jv_get_bool(m, "causal", &mc->causal, file, err)) ||
        (st = ac_jv_get_size(m, "out_dim", &mc->out_dim, file, err)))
        return st;
    if (mc->kind == AC_NN_ATTN_STANDARD)
        mc->head_dim = 0;
    return AC_OK;
}

/* "train": the optimisation. */
static int train_from_json(const ac_jv *t, ac_train_config *c, const char *file, ac_err *err)
{
    int st, e;
    if ((st = ac_jv_get_size(t, "batch", &c->batch, file, err)) ||
        (st = ac_jv_get_size(t, "seq", &c->seq, file, err)) ||
        (st = ac_jv_get_size(t, "steps", &c->steps, file, err)) ||
        (st = ac_jv_get_size(t, "warmup", &c->warmup, file, err)) ||
        (st = ac_jv_get_double(t, "lr", &c->lr, file, err)) ||
        (st = ac_jv_get_double(t, "min_lr", &c->min_lr, file, err)) ||
        (st = ac_jv_get_double(t, "beta1", &c->beta1, file, err)) ||
        (st = ac_jv_get_double(t, "beta2", &c->beta2, file, err)) ||
        (st = ac_jv_get_double(t, "eps", &c->eps, file, err)) ||
        (st = ac_jv_get_double(t, "weight_decay", &c->weight_decay, file, err)) ||
        (st = ac_jv_get_double(t, "clip", &c->clip, file, err)) ||
        (st = ac_jv_get_double(t, "init_std", &c->init_std, file, err)) ||
        (st = ac_jv_get_u64(t, "seed", &c->seed, file, err)) ||
        (st = ac_jv_get_size(t, "eval_every", &c->eval_every, file, err)) ||
        (st = ac_jv_get_size(t, "eval_batches", &c->eval_batches, file, err)))
        return st;
    if ((st = get_enum(t, "schedule", sched_names, 3, &e, file, err)))
        return st;
    c->schedule = (ac_sched_kind)e;
    return AC_OK;
}

/* "data": the task's inputs. */
static int data_from_json(const ac_jv *d, ac_train_config *c, const char *file, ac_err *err)
{
    const char *s;
    int st;
    if ((st = get_path(d, "x", c->x_path, file, err)) ||
        (st = get_path(d, "p", c->p_path, file, err)) ||
        (st = get_path(d, "teacher", c->teacher_dir, file, err)) ||
        (st = ac_jv_get_string(d, "teacher_stack", &s, file, err)) ||
        (st = get_path(d, "text", c->text_path, file, err)) ||
        (st = ac_jv_get_size(d, "n", &c->fitp_n, file, err)) ||
        (st = ac_jv_get_size(d, "d", &c->fitp_d, file, err)) ||
        (st = ac_jv_get_size(d, "dk", &c->fitp_dk, file, err)) ||
        (st = ac_jv_get_double(d, "holdout", &c->holdout, file, err)) ||
        (st = ac_jv_get_size(d, "listops_depth", &c->listops_depth, file, err)) ||
        (st = ac_jv_get_size(d, "listops_args", &c->listops_args, file, err)) ||
        (st = ac_jv_get_size(d, "listops_min_len", &c->listops_min, file, err)) ||
        (st = ac_jv_get_size(d, "listops_max_len", &c->listops_max, file, err)))
        return st;
    if (strlen(s) > 1 || (s[0] && s[0] != 'W' && s[0] != 'V'))
        return ac_err_set(err, AC_EDATA, "%s: \"teacher_stack\" must be \"W\", \"V\" or \"\"",
                          file);
    c->teacher_stack = s[0];
    return AC_OK;
}

static int config_from_json(const ac_jv *root, ac_train_config *c, size_t *step, const char *file,
                            ac_err *err)
{
    int st;
    const char *s;
    if ((st = ac_jv_get_string(root, "format", &s, file, err)))
        return st;
    if (strcmp(s, CKPT_FORMAT) != 0)
        return ac_err_set(err, AC_EDATA, "%s: not an attncheck checkpoint (format \"%s\")", file,
                          s);
    size_t ver;
    if ((st = ac_jv_get_size(root, "version", &ver, file, err)))
        return st;
    if (ver != CKPT_VERSION)
        return ac_err_set(err, AC_EDATA, "%s: checkpoint version %zu; this attncheck reads "
                          "version %d", file, ver, CKPT_VERSION);
    if ((st = ac_jv_get_size(root, "step", step, file, err)))
        return st;
    if ((st = ac_jv_get_string(root, "task", &s, file, err)))
        return st;
    ac_task_kind task;
    if (ac_task_parse(s, &task))
        return ac_err_set(err, AC_EDATA, "%s: unknown task \"%s\"", file, s);
    ac_train_config_default(c, task);
    const ac_jv *m = ac_jv_get(root, "model"), *t = ac_jv_get(root, "train"),
                *d = ac_jv_get(root, "data");
    if (!m || m->type != AC_JV_OBJECT || !t || t->type != AC_JV_OBJECT || !d ||
        d->type != AC_JV_OBJECT)
        return ac_err_set(err, AC_EDATA, "%s: missing \"model\", \"train\" or \"data\"", file);
    if ((st = model_from_json(m, &c->model, file, err)) ||
        (st = train_from_json(t, c, file, err)) || (st = data_from_json(d, c, file, err)))
        return st;
    return AC_OK;
}

int ac_train_config_read(const char *dir, ac_train_config *cfg, size_t *step, ac_err *err)
{
    char p[PATH_MAX];
    ac_jv *root = NULL;
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return ac_err_set(err, AC_ENOINPUT, "%s: not a checkpoint directory", dir);
    snprintf(p, sizeof p, "%s/config.json", dir);
    if (access(p, F_OK) != 0)
        return ac_err_set(err, AC_EDATA, "%s: not an attncheck checkpoint (no config.json)", dir);
    int st = ac_jparse_file(&root, p, err);
    if (st)
        return st;
    st = config_from_json(root, cfg, step, p, err);
    ac_jv_free(root);
    return st;
}

static int parse_hex64(const char *s, uint64_t *out)
{
    if (strlen(s) != 16)
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        int h = s[i] >= '0' && s[i] <= '9'   ? s[i] - '0'
                : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
                                             : -1;
        if (h < 0)
            return 0;
        v = v * 16 + (uint64_t)h;
    }
    *out = v;
    return 1;
}

static int get_hex(const ac_jv *o, const char *key, uint64_t *out, const char *file, ac_err *err)
{
    const char *s;
    int st = ac_jv_get_string(o, key, &s, file, err);
    if (st)
        return st;
    if (!parse_hex64(s, out))
        return ac_err_set(err, AC_EDATA, "%s: \"%s\" is not a 64-bit hexadecimal checksum", file,
                          key);
    return AC_OK;
}

/* Read DIR/NAME into dst (n doubles) checking the shape and checksum. */
static int load_array(const char *dir, const char *name, double *dst, size_t ndim,
                      const size_t *shape, uint64_t sum, ac_err *err)
{
    char p[PATH_MAX];
    ac_array a = {0};
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int st = ac_npy_read(p, &a, err);
    if (st == AC_ENOINPUT)
        return ac_err_set(err, AC_EDATA, "%s: missing from the checkpoint", p);
    if (st)
        return st == AC_EINTERNAL ? st : AC_EDATA;
    int ok = a.ndim == ndim;
    for (size_t k = 0; ok && k < ndim; k++)
        ok = a.shape[k] == shape[k];
    if (!ok) {
        char want[96] = "(", got[96] = "(";
        for (size_t k = 0; k < ndim; k++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%zu", k ? ", " : "",
                     shape[k]);
        for (size_t k = 0; k < a.ndim; k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%zu", k ? ", " : "",
                     a.shape[k]);
        ac_array_free(&a);
        return ac_err_set(err, AC_EDATA, "%s: shape %s), the model needs %s)", p, got, want);
    }
    if (fnv_doubles(FNV_INIT, a.data, a.size) != sum) {
        ac_array_free(&a);
        return ac_err_set(err, AC_EDATA, "%s: checksum mismatch: the file is not the one this "
                          "checkpoint's config.json describes", p);
    }
    memcpy(dst, a.data, a.size * sizeof *dst);
    ac_array_free(&a);
    return AC_OK;
}

int ac_trainer_load(ac_trainer *tr, const char *dir, ac_err *err)
{
    char p[PATH_MAX], name[AC_NN_NAME_MAX + 8];
    ac_jv *root = NULL;
    ac_train_config ck;
    size_t step;
    double *np = NULL, *nm = NULL, *nv = NULL;
    ac_nn_model *m = &tr->model;
    int st;
    snprintf(p, sizeof p, "%s/config.json", dir);
    {
        struct stat sb;
        if (stat(dir, &sb) != 0)
            return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", dir, strerror(errno));
    }
    if ((st = ac_jparse_file(&root, p, err)))
        return st == AC_ENOINPUT ? ac_err_set(err, AC_EDATA, "%s: missing: %s is not a "
                                              "checkpoint", p, dir)
                                 : st;
    if ((st = config_from_json(root, &ck, &step, p, err)))
        goto out;
    /* the data the checkpoint fixes (vocabulary, widths) came from the data */
    ck.model.max_seq = ck.seq;
    ac_train_config mine = tr->cfg;
    ck.steps = mine.steps;
    ck.eval_every = mine.eval_every;
    ck.eval_batches = mine.eval_batches;
    const char *f = ac_train_config_diff(&mine, &ck);
    if (f) {
        st = ac_err_set_field(err, AC_EDATA, f, "%s: the checkpoint was made with another "
                              "configuration (%s differs)", dir, f);
        goto out;
    }
    const ac_jv *data = ac_jv_get(root, "data");
    uint64_t dsum;
    if ((st = get_hex(data, "fnv1a64", &dsum, p, err)))
        goto out;
    if (dsum != tr->data->checksum) {
        st = ac_err_set(err, AC_EDATA, "%s: the task's data changed since the checkpoint was "
                        "written (checksum of the input files differs)", dir);
        goto out;
    }
    const ac_jv *tl = ac_jv_get(root, "tensors");
    if (!tl || tl->type != AC_JV_ARRAY || tl->n != m->ntensors) {
        st = ac_err_set(err, AC_EDATA, "%s: \"tensors\" does not list the model's %zu tensors", p,
                        m->ntensors);
        goto out;
    }
    np = malloc(m->nparams * sizeof *np + 1);
    nm = malloc(m->nparams * sizeof *nm + 1);
    nv = malloc(m->nparams * sizeof *nv + 1);
    if (!np || !nm || !nv) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m->ntensors; i++) {
        const ac_nn_tensor *t = &m->tensors[i];
        const ac_jv *e = tl->kids[i];
        const char *nm_s;
        uint64_t sum;
        if ((st = ac_jv_get_string(e, "name", &nm_s, p, err)) ||
            (st = get_hex(e, "fnv1a64", &sum, p, err)))
            goto out;
        if (strcmp(nm_s, t->name) != 0) {
            st = ac_err_set(err, AC_EDATA, "%s: tensor %zu is \"%s\", the model's is \"%s\"", p,
                            i, nm_s, t->name);
            goto out;
        }
        snprintf(name, sizeof name, "%s.npy", t->name);
        if ((st = load_array(dir, name, np + t->offset, t->ndim, t->shape, sum, err)))
            goto out;
    }
    const ac_jv *aw = ac_jv_get(root, "adamw");
    uint64_t msum, vsum;
    if ((st = get_hex(aw, "m", &msum, p, err)) || (st = get_hex(aw, "v", &vsum, p, err)))
        goto out;
    size_t n = m->nparams;
    if ((st = load_array(dir, "adamw.m.npy", nm, 1, &n, msum, err)) ||
        (st = load_array(dir, "adamw.v.npy", nv, 1, &n, vsum, err)))
        goto out;
    if (step > tr->cfg.steps) {
        st = ac_err_set_field(err, AC_EUSAGE, "steps", "%s: the checkpoint is at step %zu, "
                              "beyond steps %zu", dir, step, tr->cfg.steps);
        goto out;
    }
    /* everything checked: commit */
    memcpy(m->params, np, n * sizeof *np);
    memcpy(m->m, nm, n * sizeof *nm);
    memcpy(m->v, nv, n * sizeof *nv);
    memset(m->grads, 0, n * sizeof *m->grads);
    tr->step = step;
out:
    free(np);
    free(nm);
    free(nv);
    ac_jv_free(root);
    return st;
}
