/* checkpoint_load.c — reading a checkpoint of the trainer (attncheck/train.h,
 * doc/mathematics.md §6.4): its configuration (ac_train_config_read) and its
 * tensors (ac_trainer_load), every file checked (presence, shape, FNV-1a
 * checksum) before anything in the trainer changes.  Writing is checkpoint.c.
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

/* ---------------------------------------------------------------- reading */

static int get_enum(const ac_jv *o, const char *key, const char *const *names, int *out,
                    const char *file, ac_err *err)
{
    const char *s;
    int st = ac_jv_get_string(o, key, &s, file, err);
    if (st)
        return st;
    int i = train_name_index(s, names);
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
    if ((st = get_enum(m, "arch", ac_nn_arch_names, &e, file, err)))
        return st;
    mc->arch = (ac_nn_arch)e;
    if ((st = get_enum(m, "input", ac_nn_input_names, &e, file, err)))
        return st;
    mc->input = (ac_nn_input)e;
    if ((st = get_enum(m, "attention", ac_nn_kind_names, &e, file, err)))
        return st;
    mc->kind = (ac_nn_attn_kind)e;
    if ((st = get_enum(m, "ln", ac_nn_ln_names, &e, file, err)))
        return st;
    mc->ln = (ac_nn_ln_place)e;
    if ((st = get_enum(m, "head", ac_nn_head_names, &e, file, err)))
        return st;
    mc->head = (ac_nn_head)e;
    if ((st = get_enum(m, "pool", ac_nn_pool_names, &e, file, err)))
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
    if ((st = get_enum(t, "schedule", ac_sched_names, &e, file, err)))
        return st;
    c->schedule = (ac_sched_kind)e;
    /* "optimizer" (absent in checkpoints written before BFGS: AdamW) */
    const ac_jv *ov = ac_jv_get(t, "optimizer");
    c->optimizer = AC_OPT_ADAMW;
    if (ov && (ov->type != AC_JV_STRING || ac_train_optimizer_parse(ov->s, &c->optimizer)))
        return ac_err_set(err, AC_EDATA, "%s: \"optimizer\": must be \"adamw\" or \"bfgs\"",
                          file);
    return AC_OK;
}

/* "data": the task's inputs. */
static int data_from_json(const ac_jv *d, ac_train_config *c, const char *file, ac_err *err)
{
    const char *s;
    int st;
    if (ac_jv_get(d, "p_rows") && (st = ac_jv_get_bool(d, "p_rows", &c->p_rows, file, err)))
        return st;
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

/* ---------------------------------------------------------------- checking */

/* The ranges of the values a checkpoint may hold: those of the options that
 * made it (attncheck-train(1)); a value outside them is corrupt file data,
 * never a usage error about an option the user did not give. */
#define CK_MAX_SIZE ((size_t)1 << 32)

static int size_in(size_t v, size_t lo, size_t hi, const char *key, const char *file,
                   ac_err *err)
{
    if (v < lo || v > hi)
        return ac_err_set(err, AC_EDATA, "%s: \"%s\" is %zu, outside [%zu, %zu]", file, key, v,
                          lo, hi);
    return AC_OK;
}

static int real_in(double v, double lo, double hi, const char *key, const char *file,
                   ac_err *err)
{
    if (!(v >= lo && v <= hi)) /* also NaN */
        return ac_err_set(err, AC_EDATA, "%s: \"%s\" is %g, outside [%g, %g]", file, key, v, lo,
                          hi);
    return AC_OK;
}

static int check_model(const ac_nn_config *m, const char *file, ac_err *err)
{
    int st;
    if ((st = size_in(m->width, 1, 1 << 16, "width", file, err)) ||
        (st = size_in(m->layers, 0, 1024, "layers", file, err)) ||
        (st = size_in(m->heads, 1, 4096, "heads", file, err)) ||
        (st = size_in(m->head_dim, 0, 1 << 16, "head_dim", file, err)) ||
        (st = size_in(m->ffn, 0, (size_t)64 << 16, "ffn", file, err)) ||
        (st = size_in(m->vocab, 0, 256, "vocab", file, err)) ||
        (st = size_in(m->in_dim, 0, 1 << 20, "in_dim", file, err)) ||
        (st = size_in(m->out_dim, 0, 1 << 20, "out_dim", file, err)) ||
        (st = size_in(m->max_seq, 0, 1 << 20, "max_seq", file, err)))
        return st;
    ac_err e;
    ac_err_clear(&e);
    if (ac_nn_config_check(m, &e))
        return ac_err_set(err, AC_EDATA, "%s: \"model\" describes no model the trainer builds "
                          "(%s)", file, e.msg);
    return AC_OK;
}

static int check_train(const ac_train_config *c, const char *file, ac_err *err)
{
    int st;
    if ((st = size_in(c->batch, 1, 1 << 20, "batch", file, err)) ||
        (st = size_in(c->seq, 1, c->task == AC_TASK_FIT_P ? 1 << 20 : 1 << 16, "seq", file,
                      err)) ||
        (st = size_in(c->steps, 1, CK_MAX_SIZE, "steps", file, err)) ||
        (st = size_in(c->warmup, 0, c->steps, "warmup", file, err)) ||
        (st = size_in(c->eval_every, 1, CK_MAX_SIZE, "eval_every", file, err)) ||
        (st = size_in(c->eval_batches, 1, 1 << 20, "eval_batches", file, err)) ||
        (st = real_in(c->lr, 1e-300, 1e6, "lr", file, err)) ||
        (st = real_in(c->min_lr, 0, 1e6, "min_lr", file, err)) ||
        (st = real_in(c->beta1, 0, 0.999999999, "beta1", file, err)) ||
        (st = real_in(c->beta2, 0, 0.999999999, "beta2", file, err)) ||
        (st = real_in(c->eps, 1e-300, 1, "eps", file, err)) ||
        (st = real_in(c->weight_decay, 0, 1e6, "weight_decay", file, err)) ||
        (st = real_in(c->clip, 0, 1e300, "clip", file, err)) ||
        (st = real_in(c->init_std, -1e3, 1e3, "init_std", file, err)))
        return st;
    return AC_OK;
}

static int check_data(const ac_train_config *c, const char *file, ac_err *err)
{
    int st;
    /* sizes taken from the task's files may exceed the options' ranges (the
     * memory check bounds them); generated ones may not */
    size_t fitp_max = c->x_path[0] || c->p_path[0] ? (size_t)1 << 20 : (size_t)1 << 14;
    if ((st = size_in(c->fitp_n, 0, fitp_max, "n", file, err)) ||
        (st = size_in(c->fitp_d, 0, fitp_max, "d", file, err)) ||
        (st = size_in(c->fitp_dk, 0, fitp_max, "dk", file, err)) ||
        (st = real_in(c->holdout, 0, 0.99, "holdout", file, err)) ||
        (st = size_in(c->listops_depth, 1, 64, "listops_depth", file, err)) ||
        (st = size_in(c->listops_args, 2, 1000, "listops_args", file, err)) ||
        (st = size_in(c->listops_min, 0, CK_MAX_SIZE, "listops_min_len", file, err)) ||
        (st = size_in(c->listops_max, 0, CK_MAX_SIZE, "listops_max_len", file, err)))
        return st;
    if (c->task == AC_TASK_TEXT && !c->text_path[0])
        return ac_err_set(err, AC_EDATA, "%s: \"text\" is empty: a text checkpoint names its "
                          "text file", file);
    return AC_OK;
}

/* Every value read from a checkpoint, checked as file data (AC_EDATA,
 * naming the file and the key). */
static int check_config(const ac_train_config *c, const char *file, ac_err *err)
{
    int st;
    ac_nn_config m = c->model;
    m.max_seq = c->seq; /* as the trainer sets it */
    if ((st = check_train(c, file, err)) || (st = check_model(&m, file, err)) ||
        (st = check_data(c, file, err)))
        return st;
    return AC_OK;
}

static int config_from_json(const ac_jv *root, ac_train_config *c, size_t *step, const char *file,
                            ac_err *err)
{
    int st;
    const char *s;
    if ((st = ac_jv_get_string(root, "format", &s, file, err)))
        return st;
    if (strcmp(s, AC_CKPT_FORMAT) != 0)
        return ac_err_set(err, AC_EDATA, "%s: not an attncheck checkpoint (format \"%s\")", file,
                          s);
    size_t ver;
    if ((st = ac_jv_get_size(root, "version", &ver, file, err)))
        return st;
    if (ver != AC_CKPT_VERSION)
        return ac_err_set(err, AC_EDATA, "%s: checkpoint version %zu; this attncheck reads "
                          "version %d", file, ver, AC_CKPT_VERSION);
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
        (st = train_from_json(t, c, file, err)) || (st = data_from_json(d, c, file, err)) ||
        (st = check_config(c, file, err)))
        return st;
    if (*step > c->steps)
        return ac_err_set(err, AC_EDATA, "%s: \"step\" %zu is beyond \"steps\" %zu", file, *step,
                          c->steps);
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
    train_fitp_reset(tr); /* fit-p: the best iterate and BFGS start again here */
    /* fit-p: a checkpoint of the best iterate (ac_trainer_fitp_restore_best)
     * is the best so far of the resumed run, as it was of the run that wrote
     * it: evaluated again here (its maxdev is not taken from the file) */
    const ac_jv *best = ac_jv_get(root, "best");
    size_t bstep;
    if (tr->cfg.task == AC_TASK_FIT_P && best && best->type == AC_JV_OBJECT &&
        !ac_jv_get_size(best, "step", &bstep, p, NULL) && bstep == step) {
        ac_eval_info ev;
        st = ac_trainer_eval(tr, &ev, err);
    }
out:
    free(np);
    free(nm);
    free(nv);
    ac_jv_free(root);
    return st;
}
