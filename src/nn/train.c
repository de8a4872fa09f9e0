/* train.c — tasks, data, schedule, steps and checkpoints (attncheck/train.h).
 *
 * The training loop itself lives in the program (src/cli/cmd_train.c), as
 * the main() of llm.c's train_gpt2.c does; this module provides its pieces.
 */
#include <config.h>

#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attncheck/fileio.h"
#include "attncheck/json.h"
#include "attncheck/npy.h"
#include "attncheck/rng.h"
#include "attncheck/theorem1.h"
#include "attncheck/train.h"
#include "io/jsonparse.h"

#define CKPT_FORMAT "attncheck-train-checkpoint"
#define CKPT_VERSION 1

/* Random stream ids (stream_a of ac_rng_init), one per use. */
#define STREAM_TEXT 0x74657874ull          /* "text": training windows */
#define STREAM_LISTOPS 0x6c6f7073ull       /* "lops": training examples */
#define STREAM_LISTOPS_EVAL 0x6c6f7065ull  /* "lope": held-out examples */
#define STREAM_TEACH 0x74636872ull         /* "tchr": teacher inputs / samples */
#define STREAM_TEACH_EVAL 0x74636865ull    /* "tche": teacher held-out inputs */

/* ---------------------------------------------------------------- names */

static const char *const task_names[] = {"fit-p", "teacher", "listops", "text"};
static const char *const sched_names[] = {"cosine", "linear", "constant"};
static const char *const arch_names[] = {"transformer", "attention", "scores"};
static const char *const input_names[] = {"tokens", "vectors"};
static const char *const kind_names[] = {"standard", "fixed"};
static const char *const ln_names[] = {"pre", "post"};
static const char *const head_names[] = {"lm", "classify", "regress", "scores"};
static const char *const pool_names[] = {"first", "last", "mean"};

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

static int name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
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

static size_t head_size(const ac_nn_config *m)
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
    if (head_size(x) != head_size(y))
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

/* ---------------------------------------------------------------- checksums */

/* FNV-1a, 64 bits, over bytes (Fowler, Noll, Vo); doubles are hashed as
 * their little-endian IEEE bytes. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

static uint64_t fnv_doubles(uint64_t h, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &x[i], sizeof u);
        unsigned char b[8];
        for (int k = 0; k < 8; k++)
            b[k] = (unsigned char)(u >> (8 * k));
        h = fnv1a(h, b, 8);
    }
    return h;
}

/* ---------------------------------------------------------------- data */

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
    /* teacher */
    int gen;                /* generator mode */
    ac_nn_model teacher;
    double *tx, *ty;        /* dataset mode: (m, n, d), (m, n, e) */
    size_t tm, td, te, ttrain;
    /* fit-p */
    ac_mat X, P;
};

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
    ac_nn_model_free(&d->teacher);
    free(d->tx);
    free(d->ty);
    ac_mat_free(&d->X);
    ac_mat_free(&d->P);
    free(d);
}

/* Make path absolute (realpath) so that a checkpoint names its data
 * unambiguously. */
static int canon_path(char *path, ac_err *err)
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

static int read_file(const char *path, unsigned char **buf, size_t *n, ac_err *err)
{
    FILE *f = fopen(path, "rb");
    struct stat sb;
    *buf = NULL;
    *n = 0;
    if (!f)
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(f);
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: Is a directory", path);
    }
    size_t cap = 1 << 16, len = 0;
    unsigned char *b = malloc(cap);
    if (!b) {
        fclose(f);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    for (;;) {
        if (len == cap) {
            unsigned char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                fclose(f);
                return ac_err_set(err, AC_EINTERNAL, "out of memory");
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        free(b);
        fclose(f);
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot read: %s", path, strerror(errno));
    }
    fclose(f);
    *buf = b;
    *n = len;
    return AC_OK;
}

static int text_open(ac_train_data *d, ac_train_config *c, ac_err *err)
{
    unsigned char *buf;
    size_t n;
    int st;
    if (!c->text_path[0])
        return ac_err_set(err, AC_EUSAGE, "--task text needs --text FILE");
    if ((st = read_file(c->text_path, &buf, &n, err)))
        return st;
    int seen[256] = {0};
    for (size_t i = 0; i < n; i++)
        seen[buf[i]] = 1;
    int map[256];
    d->nvocab = 0;
    for (int b = 0; b < 256; b++) {
        map[b] = -1;
        if (seen[b]) {
            map[b] = (int)d->nvocab;
            d->vocab[d->nvocab++] = (unsigned char)b;
        }
    }
    size_t T = c->seq;
    size_t nheld = (size_t)floor(c->holdout * (double)n);
    size_t ntrain = n - nheld;
    if (ntrain < T + 1 || (nheld > 0 && nheld < T + 1)) {
        free(buf);
        return ac_err_set(err, AC_EDATA,
                          "%s: %zu characters; the training part (%zu) and the held-out part "
                          "(%zu, --holdout %g) each need at least --seq + 1 = %zu",
                          c->text_path, n, ntrain, nheld, c->holdout, T + 1);
    }
    d->ids = malloc(n * sizeof *d->ids);
    if (!d->ids) {
        free(buf);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        d->ids[i] = map[buf[i]];
    d->checksum = fnv1a(FNV_INIT, buf, n);
    free(buf);
    d->nids = n;
    d->ntrain = ntrain;
    c->model.input = AC_NN_INPUT_TOKENS;
    c->model.vocab = d->nvocab;
    c->model.head = AC_NN_HEAD_LM;
    snprintf(d->summary, sizeof d->summary,
             "%s: %zu characters, %zu distinct; %zu for training, %zu held out", c->text_path, n,
             d->nvocab, ntrain, nheld);
    return AC_OK;
}

/* ---- ListOps ---- */

typedef struct {
    ac_rng *r;
    int32_t *tok;
    size_t len, max_len, max_depth, max_args;
    int over;
} lo_gen;

static int lo_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Apply operator token op to vals[0..n-1] (LRA's to_value). */
static int lo_apply(int op, int *vals, size_t n)
{
    int r = 0;
    switch (op) {
    case AC_LISTOPS_MIN:
        r = vals[0];
        for (size_t i = 1; i < n; i++)
            r = vals[i] < r ? vals[i] : r;
        break;
    case AC_LISTOPS_MAX:
        r = vals[0];
        for (size_t i = 1; i < n; i++)
            r = vals[i] > r ? vals[i] : r;
        break;
    case AC_LISTOPS_MED:
        qsort(vals, n, sizeof *vals, lo_cmp);
        /* int(np.median): the middle value, or the mean of the two middle
         * values truncated (they are >= 0, so rounded down) */
        r = n % 2 ? vals[n / 2] : (vals[n / 2 - 1] + vals[n / 2]) / 2;
        break;
    default: /* SM */
        for (size_t i = 0; i < n; i++)
            r += vals[i];
        r %= 10;
        break;
    }
    return r;
}

/* LRA's generate_tree(depth): returns the value; appends tokens.  Stops
 * emitting (g->over) once the length exceeds max_len but keeps drawing the
 * same random numbers so the recursion stays that of LRA. */
static int lo_tree(lo_gen *g, size_t depth)
{
    double r = depth < g->max_depth ? ac_rng_uniform(g->r) : 1.0;
    if (r > 0.25) {
        int v = (int)ac_rng_below(g->r, 10);
        if (g->len < g->max_len)
            g->tok[g->len] = AC_LISTOPS_DIGIT0 + v;
        else
            g->over = 1;
        g->len++;
        return v;
    }
    size_t nargs = 2 + (size_t)ac_rng_below(g->r, g->max_args - 1); /* randint(2, max_args) */
    size_t op_pos = g->len++;
    int vals[64];
    int *v = nargs <= 64 ? vals : malloc(nargs * sizeof *v);
    if (!v) {
        g->over = 2;
        return 0;
    }
    for (size_t i = 0; i < nargs; i++)
        v[i] = lo_tree(g, depth + 1);
    /* the operator is drawn after the arguments, as in LRA */
    int op = AC_LISTOPS_MIN + (int)ac_rng_below(g->r, 4);
    if (op_pos < g->max_len)
        g->tok[op_pos] = op;
    if (g->len < g->max_len)
        g->tok[g->len] = AC_LISTOPS_END;
    else
        g->over = g->over ? g->over : 1;
    g->len++;
    int res = lo_apply(op, v, nargs);
    if (v != vals)
        free(v);
    return res;
}

int ac_listops_sample(int32_t *tokens, size_t *len, int *label, uint64_t seed, uint64_t stream,
                      uint64_t index, size_t max_depth, size_t max_args, size_t min_len,
                      size_t max_len, ac_err *err)
{
    ac_rng r;
    if (max_args < 2 || max_depth < 1 || max_len < 1 || min_len > max_len)
        return ac_err_set(err, AC_EUSAGE,
                          "ListOps needs depth >= 1, args >= 2 and min length <= max length");
    ac_rng_init(&r, seed, stream, index);
    for (int attempt = 0; attempt < 100000; attempt++) {
        lo_gen g = {&r, tokens, 0, max_len, max_depth, max_args, 0};
        int v = lo_tree(&g, 1);
        if (g.over == 2)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        if (!g.over && g.len >= min_len && g.len <= max_len) {
            *len = g.len;
            *label = v;
            return AC_OK;
        }
    }
    return ac_err_set(err, AC_EDATA,
                      "ListOps: no expression of length %zu..%zu in 100000 tries (depth %zu, "
                      "args %zu); widen the length range",
                      min_len, max_len, max_depth, max_args);
}

static int lo_eval_at(const int32_t *t, size_t len, size_t *pos)
{
    if (*pos >= len)
        return -1;
    int32_t k = t[(*pos)++];
    if (k >= AC_LISTOPS_DIGIT0 && k < AC_LISTOPS_DIGIT0 + 10)
        return k - AC_LISTOPS_DIGIT0;
    if (k < AC_LISTOPS_MIN || k > AC_LISTOPS_SM)
        return -1;
    int vals[4096];
    size_t n = 0;
    while (*pos < len && t[*pos] != AC_LISTOPS_END) {
        int v = lo_eval_at(t, len, pos);
        if (v < 0 || n == 4096)
            return -1;
        vals[n++] = v;
    }
    if (*pos >= len || n < 1)
        return -1;
    (*pos)++;
    return lo_apply(k, vals, n);
}

int ac_listops_eval(const int32_t *tokens, size_t len)
{
    size_t pos = 0;
    int v = lo_eval_at(tokens, len, &pos);
    return pos == len ? v : -1;
}

static int listops_open(ac_train_data *d, ac_train_config *c, ac_err *err)
{
    if (c->seq < 2)
        return ac_err_set(err, AC_EUSAGE, "--task listops needs --seq >= 2 (a CLS token and "
                          "at least one more)");
    if (c->listops_max == 0 || c->listops_max > c->seq - 1)
        c->listops_max = c->seq - 1;
    if (c->listops_min == 0)
        c->listops_min = c->listops_max / 4 ? c->listops_max / 4 : 1;
    if (c->listops_min > c->listops_max)
        return ac_err_set(err, AC_EUSAGE, "--listops-min-len %zu exceeds the longest possible "
                          "expression (%zu = --seq - 1)", c->listops_min, c->listops_max);
    if (c->listops_args < 2)
        return ac_err_set(err, AC_EUSAGE, "--listops-args must be at least 2");
    if (c->listops_depth < 1)
        return ac_err_set(err, AC_EUSAGE, "--listops-depth must be at least 1");
    d->expr = malloc(c->listops_max * sizeof *d->expr);
    if (!d->expr)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    c->model.input = AC_NN_INPUT_TOKENS;
    c->model.vocab = AC_LISTOPS_VOCAB;
    c->model.head = AC_NN_HEAD_CLASSIFY;
    c->model.out_dim = 10;
    snprintf(d->summary, sizeof d->summary,
             "ListOps (LRA): depth <= %zu, 2..%zu arguments, %zu..%zu tokens + CLS, padded to %zu",
             c->listops_depth, c->listops_args, c->listops_min, c->listops_max, c->seq);
    return AC_OK;
}

/* ---- teacher ---- */

static int file_exists(const char *dir, const char *name)
{
    char p[PATH_MAX];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

/* Read DIR/NAME.npy as a stack (h, a, b) (a 2-D array counts as h = 1). */
static int read_stack(const char *dir, const char *name, ac_array *a, size_t *h, size_t *r,
                      size_t *c, ac_err *err)
{
    char p[PATH_MAX];
    int st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if ((st = ac_npy_read(p, a, err)))
        return st;
    if (a->ndim == 2) {
        *h = 1, *r = a->shape[0], *c = a->shape[1];
    } else if (a->ndim == 3) {
        *h = a->shape[0], *r = a->shape[1], *c = a->shape[2];
    } else {
        ac_err_set(err, AC_EDATA, "%s: expected a 2-D or 3-D array, got %zu dimensions", p,
                   a->ndim);
        ac_array_free(a);
        return AC_EDATA;
    }
    if ((st = ac_array_check_finite(p, a->data, a->ndim, a->shape, err))) {
        ac_array_free(a);
        return st;
    }
    return AC_OK;
}

static int teacher_open(ac_train_data *d, ac_train_config *c, ac_err *err)
{
    const char *dir = c->teacher_dir;
    int st = AC_OK;
    struct stat sb;
    if (!dir[0])
        return ac_err_set(err, AC_EUSAGE, "--task teacher needs --teacher DIR");
    if (stat(dir, &sb) != 0)
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return ac_err_set(err, AC_ENOINPUT, "%s: not a directory (--teacher wants a directory "
                          "with Wq.npy, Wk.npy, Wv.npy, Wo.npy or X.npy, Y.npy)", dir);
    uint64_t h = FNV_INIT;
    char L = c->teacher_stack;
    if (L == 0)
        L = file_exists(dir, "Wq.npy") || !file_exists(dir, "Vq.npy") ? 'W' : 'V';
    if (L != 'W' && L != 'V')
        return ac_err_set(err, AC_EUSAGE, "--teacher-stack must be W or V");
    char fq[8], fk[8], fv[8], fo[8];
    snprintf(fq, sizeof fq, "%cq.npy", L);
    snprintf(fk, sizeof fk, "%ck.npy", L);
    snprintf(fv, sizeof fv, "%cv.npy", L);
    snprintf(fo, sizeof fo, "%co.npy", L);
    if (file_exists(dir, fq) || file_exists(dir, fo) || c->teacher_stack) {
        ac_array q = {0}, k = {0}, v = {0}, o = {0};
        size_t hq, sq, dq, hk, sk, dk, hv, sv, dv, ho, dO, so;
        c->teacher_stack = L;
        if ((st = read_stack(dir, fq, &q, &hq, &sq, &dq, err)) ||
            (st = read_stack(dir, fk, &k, &hk, &sk, &dk, err)) ||
            (st = read_stack(dir, fv, &v, &hv, &sv, &dv, err)) ||
            (st = read_stack(dir, fo, &o, &ho, &dO, &so, err)))
            goto gen_out;
        if (hq != hk || hq != hv || hq != ho || sq != sk || sq != sv || sq != so || dq != dk ||
            dq != dv || dq != dO || hq == 0 || sq == 0 || dq == 0) {
            st = ac_err_set(err, AC_EDATA,
                            "%s: shapes do not form one attention layer: %cq, %ck, %cv must be "
                            "(h, s, d) and %co (h, d, s); got (%zu, %zu, %zu), (%zu, %zu, %zu), "
                            "(%zu, %zu, %zu), (%zu, %zu, %zu)",
                            dir, L, L, L, L, hq, sq, dq, hk, sk, dk, hv, sv, dv, ho, dO, so);
            goto gen_out;
        }
        if (c->seq == 0)
            c->seq = 8;
        ac_nn_config tc;
        memset(&tc, 0, sizeof tc);
        tc.arch = AC_NN_ARCH_ATTENTION;
        tc.input = AC_NN_INPUT_VECTORS;
        tc.max_seq = c->seq;
        tc.width = dq;
        tc.heads = hq;
        tc.kind = hq * sq == dq ? AC_NN_ATTN_STANDARD : AC_NN_ATTN_FIXED;
        tc.head_dim = sq;
        tc.head = AC_NN_HEAD_REGRESS;
        if ((st = ac_nn_model_init(&d->teacher, &tc, c->batch, c->seq, err)))
            goto gen_out;
        const ac_array *src[4] = {&q, &k, &v, &o};
        const char *names[4] = {"Wq", "Wk", "Wv", "Wo"};
        for (int i = 0; i < 4; i++) {
            const ac_nn_tensor *t = ac_nn_tensor_find(&d->teacher, names[i]);
            memcpy(d->teacher.params + t->offset, src[i]->data, t->size * sizeof(double));
            h = fnv_doubles(h, src[i]->data, src[i]->size);
        }
        d->gen = 1;
        d->td = d->te = dq;
        snprintf(d->summary, sizeof d->summary,
                 "teacher %s (%c stack): %zu heads of size %zu on d = %zu (%s); inputs X ~ "
                 "N(0,1), %zu tokens", dir, L, hq, sq, dq,
                 tc.kind == AC_NN_ATTN_STANDARD ? "standard" : "fixed", c->seq);
    gen_out:
        ac_array_free(&q);
        ac_array_free(&k);
        ac_array_free(&v);
        ac_array_free(&o);
        if (st)
            return st;
    } else if (file_exists(dir, "X.npy") && file_exists(dir, "Y.npy")) {
        ac_array X = {0}, Y = {0};
        size_t mx, dx, nx, my, ey, ny;
        if ((st = read_stack(dir, "X.npy", &X, &mx, &dx, &nx, err)) ||
            (st = read_stack(dir, "Y.npy", &Y, &my, &ey, &ny, err)))
            goto ds_out;
        if (mx != my || nx != ny || mx == 0 || nx == 0 || dx == 0 || ey == 0) {
            st = ac_err_set(err, AC_EDATA,
                            "%s: X.npy (m, d, n) and Y.npy (m, e, n) must agree in m and n: "
                            "got X (%zu, %zu, %zu), Y (%zu, %zu, %zu)",
                            dir, mx, dx, nx, my, ey, ny);
            goto ds_out;
        }
        if (c->seq && c->seq != nx) {
            st = ac_err_set(err, AC_EUSAGE, "--seq %zu contradicts %s/X.npy, which has n = %zu "
                            "tokens", c->seq, dir, nx);
            goto ds_out;
        }
        c->seq = nx;
        d->tm = mx, d->td = dx, d->te = ey;
        d->tx = malloc(mx * nx * dx * sizeof *d->tx);
        d->ty = malloc(mx * nx * ey * sizeof *d->ty);
        if (!d->tx || !d->ty) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            goto ds_out;
        }
        /* paper layout (m, d, n) -> rows (m, n, d) */
        for (size_t i = 0; i < mx; i++)
            for (size_t t = 0; t < nx; t++) {
                for (size_t k = 0; k < dx; k++)
                    d->tx[(i * nx + t) * dx + k] = X.data[(i * dx + k) * nx + t];
                for (size_t k = 0; k < ey; k++)
                    d->ty[(i * nx + t) * ey + k] = Y.data[(i * ey + k) * nx + t];
            }
        h = fnv_doubles(h, X.data, X.size);
        h = fnv_doubles(h, Y.data, Y.size);
        size_t held = (size_t)floor(c->holdout * (double)mx);
        if (held >= mx)
            held = mx - 1;
        d->ttrain = mx - held;
        snprintf(d->summary, sizeof d->summary,
                 "teacher %s: %zu pairs X (d = %zu, n = %zu) -> Y (e = %zu); %zu for training, "
                 "%zu held out", dir, mx, dx, nx, ey, d->ttrain, held);
    ds_out:
        ac_array_free(&X);
        ac_array_free(&Y);
        if (st)
            return st;
    } else {
        return ac_err_set(err, AC_ENOINPUT,
                          "%s: neither the weights of an attention layer (Wq.npy, Wk.npy, Wv.npy, "
                          "Wo.npy, or Vq.npy ... Vo.npy) nor input/target pairs (X.npy, Y.npy)",
                          dir);
    }
    d->checksum = h;
    ac_nn_config *m = &c->model;
    if (m->heads == 0) /* default: the teacher's heads (1 for pairs) */
        m->heads = d->gen ? d->teacher.cfg.heads : 1;
    m->head = AC_NN_HEAD_REGRESS;
    m->input = AC_NN_INPUT_VECTORS;
    if (m->arch == AC_NN_ARCH_ATTENTION) {
        if (d->te != d->td)
            return ac_err_set(err, AC_EUSAGE, "%s: the bare attention layer maps d = %zu to d; "
                              "the targets have e = %zu (use --arch transformer)", dir, d->td,
                              d->te);
        m->width = d->td;
        m->out_dim = d->td;
        if (m->kind == AC_NN_ATTN_FIXED && m->head_dim == 0)
            m->head_dim = m->width / m->heads ? m->width / m->heads : 1;
    } else {
        m->in_dim = d->td;
        m->out_dim = d->te;
    }
    return AC_OK;
}

/* ---- fit-p ---- */

static int fitp_open(ac_train_data *d, ac_train_config *c, ac_err *err)
{
    int st;
    if (c->x_path[0]) {
        if ((st = ac_npy_read_mat(c->x_path, &d->X, err)))
            return st;
    }
    if (c->p_path[0]) {
        if ((st = ac_npy_read_mat(c->p_path, &d->P, err)))
            return st;
    }
    size_t n = c->x_path[0] ? d->X.cols : (c->p_path[0] ? d->P.rows : c->fitp_n);
    size_t dd = c->x_path[0] ? d->X.rows : (c->fitp_d ? c->fitp_d : n);
    if (c->x_path[0] && (d->X.rows == 0 || d->X.cols == 0))
        return ac_err_set(err, AC_EDATA, "%s: X is %zu x %zu; it needs at least one row and one "
                          "column", c->x_path, d->X.rows, d->X.cols);
    if (c->x_path[0] && c->fitp_d && c->fitp_d != dd)
        return ac_err_set(err, AC_EUSAGE, "--d %zu contradicts %s, which has d = %zu rows",
                          c->fitp_d, c->x_path, dd);
    if (n == 0 || dd == 0)
        return ac_err_set(err, AC_EUSAGE, "--n and --d must be at least 1");
    if (!c->x_path[0] || !c->p_path[0]) {
        ac_mat X = {0}, P = {0};
        if ((st = ac_t1_generate(&X, &P, dd, n, c->seed, err))) {
            ac_mat_free(&X);
            ac_mat_free(&P);
            return st;
        }
        if (!c->x_path[0]) {
            d->X = X;
            X.data = NULL;
        }
        if (!c->p_path[0]) {
            d->P = P;
            P.data = NULL;
        }
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
    size_t dk = c->fitp_dk ? c->fitp_dk : dd;
    if ((st = ac_t1_validate(&d->X, c->x_path[0] ? c->x_path : "X", &d->P,
                             c->p_path[0] ? c->p_path : "P", NULL, 0, "D0", dk, err)))
        return st;
    if (c->seq && c->seq != n)
        return ac_err_set(err, AC_EUSAGE, "--seq %zu contradicts the instance's n = %zu", c->seq,
                          n);
    c->seq = n;
    c->fitp_n = n;
    c->fitp_d = dd;
    c->fitp_dk = dk;
    c->batch = 1;
    ac_nn_config *m = &c->model;
    m->arch = AC_NN_ARCH_SCORES;
    m->input = AC_NN_INPUT_VECTORS;
    m->head = AC_NN_HEAD_SCORES;
    m->width = dd;
    m->heads = 1;
    m->kind = AC_NN_ATTN_FIXED;
    m->head_dim = dk;
    m->causal = 0;
    d->checksum = fnv_doubles(fnv_doubles(FNV_INIT, d->X.data, dd * n), d->P.data, n * n);
    snprintf(d->summary, sizeof d->summary, "X %s (%zu x %zu), P %s, head size dk = %zu",
             c->x_path[0] ? c->x_path : "Gaussian", dd, n,
             c->p_path[0] ? c->p_path : "Dirichlet", dk);
    return AC_OK;
}

/* ---------------------------------------------------------------- batches */

/* Fill the batch: split 0 = the training batch of step `index` (1-based),
 * split 1 = evaluation batch `index` (0-based).  *B receives the number of
 * sequences (less than cfg.batch only for a last partial evaluation batch). */
static int fill_batch(ac_trainer *tr, int split, size_t index, ac_nn_batch *b, ac_err *err)
{
    ac_train_data *d = tr->data;
    const ac_train_config *c = &tr->cfg;
    size_t B = c->batch, T = c->seq;
    int st;
    memset(b, 0, sizeof *b);
    b->B = B;
    b->T = T;
    switch (c->task) {
    case AC_TASK_TEXT: {
        ac_rng r;
        ac_rng_init(&r, c->seed, STREAM_TEXT, index);
        size_t nheld = d->nids - d->ntrain, W = c->eval_batches * B;
        for (size_t i = 0; i < B; i++) {
            size_t off;
            if (split == 0) {
                off = (size_t)ac_rng_below(&r, d->ntrain - T);
            } else {
                /* held-out windows evenly spaced (on the training part
                 * when nothing is held out) */
                size_t base = nheld ? d->ntrain : 0, len = nheld ? nheld : d->ntrain;
                size_t j = index * B + i;
                off = base + (W > 1 ? (size_t)((double)j * (double)(len - T - 1) /
                                               (double)(W - 1))
                                    : 0);
            }
            memcpy(d->tokens + i * T, d->ids + off, T * sizeof *d->tokens);
            memcpy(d->targets + i * T, d->ids + off + 1, T * sizeof *d->targets);
        }
        b->tokens = d->tokens;
        b->targets = d->targets;
        break;
    }
    case AC_TASK_LISTOPS:
        for (size_t i = 0; i < B; i++) {
            size_t len;
            int label;
            uint64_t idx = (uint64_t)(split == 0 ? (index - 1) : index) * B + i;
            if ((st = ac_listops_sample(d->expr, &len, &label, c->seed,
                                        split == 0 ? STREAM_LISTOPS : STREAM_LISTOPS_EVAL, idx,
                                        c->listops_depth, c->listops_args, c->listops_min,
                                        c->listops_max, err)))
                return st;
            int32_t *t = d->tokens + i * T;
            t[0] = AC_LISTOPS_CLS;
            memcpy(t + 1, d->expr, len * sizeof *t);
            for (size_t k = len + 1; k < T; k++)
                t[k] = AC_LISTOPS_PAD;
            d->targets[i] = label;
        }
        b->tokens = d->tokens;
        b->targets = d->targets;
        break;
    case AC_TASK_TEACHER: {
        size_t dd = d->td, e = d->te;
        if (d->gen) {
            ac_rng r;
            ac_rng_init(&r, c->seed, split == 0 ? STREAM_TEACH : STREAM_TEACH_EVAL, index);
            ac_rng_normal_fill(&r, d->x, B * T * dd);
            ac_nn_batch tb = {B, T, NULL, d->x, NULL, d->x}; /* y unused for the output */
            if ((st = ac_nn_forward(&d->teacher, &tb, NULL, err)))
                return st;
            size_t rows, cols;
            const double *out = ac_nn_output(&d->teacher, &rows, &cols);
            memcpy(d->y, out, B * T * e * sizeof *d->y);
        } else {
            size_t nheld = d->tm - d->ttrain, cnt = 0;
            ac_rng r;
            ac_rng_init(&r, c->seed, STREAM_TEACH, index);
            for (size_t i = 0; i < B; i++) {
                size_t s;
                if (split == 0) {
                    s = (size_t)ac_rng_below(&r, d->ttrain);
                } else {
                    size_t j = index * B + i;
                    size_t lim = nheld ? nheld : d->ttrain;
                    if (j >= lim)
                        break;
                    s = (nheld ? d->ttrain : 0) + j;
                }
                memcpy(d->x + i * T * dd, d->tx + s * T * dd, T * dd * sizeof *d->x);
                memcpy(d->y + i * T * e, d->ty + s * T * e, T * e * sizeof *d->y);
                cnt++;
            }
            b->B = cnt;
        }
        b->x = d->x;
        b->y = d->y;
        break;
    }
    case AC_TASK_FIT_P: {
        size_t n = T, dd = d->X.rows;
        /* tokens are the columns of X; target row t is column t of P */
        for (size_t t = 0; t < n; t++) {
            for (size_t k = 0; k < dd; k++)
                d->x[t * dd + k] = AC_MAT(&d->X, k, t);
            for (size_t j = 0; j < n; j++)
                d->y[t * n + j] = AC_MAT(&d->P, j, t);
        }
        b->B = 1;
        b->x = d->x;
        b->y = d->y;
        break;
    }
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

/* ---------------------------------------------------------------- trainer */

int ac_trainer_init(ac_trainer *tr, const ac_train_config *cfg, ac_err *err)
{
    int st;
    memset(tr, 0, sizeof *tr);
    tr->cfg = *cfg;
    ac_train_config *c = &tr->cfg;
    tr->data = calloc(1, sizeof *tr->data);
    if (!tr->data)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    ac_train_data *d = tr->data;
    if (c->batch == 0)
        return ac_err_set(err, AC_EUSAGE, "--batch must be at least 1");
    if (!(c->lr > 0) || !isfinite(c->lr) || !(c->min_lr >= 0) || !isfinite(c->min_lr))
        return ac_err_set(err, AC_EUSAGE, "--lr must be positive and --min-lr non-negative");
    if (!(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1) || !(c->eps > 0))
        return ac_err_set(err, AC_EUSAGE, "AdamW needs 0 <= beta < 1 and eps > 0");
    if (!(c->holdout >= 0 && c->holdout < 1))
        return ac_err_set(err, AC_EUSAGE, "--holdout must be in [0, 1)");
    switch (c->task) {
    case AC_TASK_TEXT:
        if ((st = canon_path(c->text_path, err)) || (st = text_open(d, c, err)))
            return st;
        break;
    case AC_TASK_LISTOPS:
        if ((st = listops_open(d, c, err)))
            return st;
        break;
    case AC_TASK_TEACHER:
        if ((st = canon_path(c->teacher_dir, err)) || (st = teacher_open(d, c, err)))
            return st;
        break;
    case AC_TASK_FIT_P:
        if ((st = canon_path(c->x_path, err)) || (st = canon_path(c->p_path, err)) ||
            (st = fitp_open(d, c, err)))
            return st;
        break;
    default:
        return ac_err_set(err, AC_EUSAGE, "unknown task");
    }
    if (c->seq == 0)
        return ac_err_set(err, AC_EUSAGE, "--seq must be at least 1");
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
    return AC_OK;
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
    if ((rc = fill_batch(tr, 0, s, &b, err)))
        return rc;
    if ((rc = ac_nn_forward(m, &b, &st, err)))
        return rc;
    if (!isfinite(st.loss))
        return ac_err_set(err, AC_EDATA, "the loss became %g at step %zu (try a smaller --lr)",
                          st.loss, s);
    ac_nn_zero_grad(m);
    ac_nn_backward(m);
    double gn = ac_nn_grad_norm(m);
    if (!isfinite(gn))
        return ac_err_set(err, AC_EDATA, "the gradient became %g at step %zu (try a smaller "
                          "--lr)", gn, s);
    double gscale = c->clip > 0 && gn > c->clip ? c->clip / gn : 1.0;
    double lr = ac_train_lr(c, s);
    ac_nn_adamw o = {lr, c->beta1, c->beta2, c->eps, c->weight_decay};
    ac_nn_adamw_step(m, &o, (long)s, gscale);
    tr->step = s;
    if (info) {
        info->step = s;
        info->lr = lr;
        info->loss = st.loss;
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
    double sum = 0, md = 0;
    int rc;
    for (size_t i = 0; i < nb; i++) {
        ac_nn_batch b;
        ac_nn_stats st;
        if ((rc = fill_batch(tr, 1, i, &b, err)))
            return rc;
        if (b.B == 0)
            break;
        if ((rc = ac_nn_forward(&tr->model, &b, &st, err)))
            return rc;
        sum += st.loss * (double)st.count;
        count += st.count;
        correct += st.correct;
        md = st.maxdev > md ? st.maxdev : md;
    }
    ev->loss = count ? sum / (double)count : NAN;
    ev->count = count;
    ev->accuracy = ratio_or_nan(tr, correct, count);
    ev->maxdev = maxdev_or_nan(tr, md);
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
    memcpy(Wq->data, m->params + q->offset, dk * d * sizeof(double));
    memcpy(Wk->data, m->params + k->offset, dk * d * sizeof(double));
    return AC_OK;
}

/* ---------------------------------------------------------------- checkpoints */

static void hex64(char *buf, uint64_t h)
{
    snprintf(buf, 17, "%016llx", (unsigned long long)h);
}

static void write_config_json(ac_json *j, const ac_trainer *tr, const uint64_t *sums,
                              uint64_t msum, uint64_t vsum)
{
    const ac_train_config *c = &tr->cfg;
    const ac_nn_config *m = &c->model;
    const ac_nn_model *md = &tr->model;
    char hb[20], sb[32];
    ac_json_begin_object(j);
    ac_json_kv_string(j, "format", CKPT_FORMAT);
    ac_json_kv_int(j, "version", CKPT_VERSION);
    ac_json_kv_string(j, "attncheck", AC_VERSION_STRING);
    ac_json_kv_int(j, "step", (long long)tr->step);
    ac_json_kv_string(j, "task", ac_task_name(c->task));
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
    ac_json_kv_int(j, "head_dim", (long long)md->S);
    ac_json_kv_int(j, "ffn", (long long)m->ffn);
    ac_json_kv_string(j, "ln", ln_names[m->ln]);
    ac_json_kv_bool(j, "causal", m->causal);
    ac_json_kv_string(j, "head", head_names[m->head]);
    ac_json_kv_int(j, "out_dim", (long long)m->out_dim);
    ac_json_kv_string(j, "pool", pool_names[m->pool]);
    ac_json_kv_number(j, "ln_eps", AC_NN_LN_EPS);
    ac_json_kv_string(j, "gelu", "tanh");
    ac_json_end_object(j);
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
    hex64(hb, tr->data->checksum);
    ac_json_kv_string(j, "fnv1a64", hb);
    if (c->task == AC_TASK_TEXT) {
        ac_json_key(j, "vocab");
        ac_json_begin_array(j);
        for (size_t i = 0; i < tr->data->nvocab; i++)
            ac_json_int(j, tr->data->vocab[i]);
        ac_json_end_array(j);
    }
    ac_json_end_object(j);
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

/* Remove the plain files in dir, then dir itself (best effort). */
static void remove_tree(const char *dir)
{
    DIR *dp = opendir(dir);
    if (dp) {
        struct dirent *e;
        char p[PATH_MAX];
        while ((e = readdir(dp))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(dp);
    }
    rmdir(dir);
}

static int is_checkpoint_dir(const char *dir)
{
    char p[PATH_MAX];
    ac_jv *v = NULL;
    ac_err e;
    snprintf(p, sizeof p, "%s/config.json", dir);
    if (ac_jparse_file(&v, p, &e))
        return 0;
    const ac_jv *f = ac_jv_get(v, "format");
    int ok = f && f->type == AC_JV_STRING && strcmp(f->s, CKPT_FORMAT) == 0;
    ac_jv_free(v);
    return ok;
}

static int dir_is_empty(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return 0;
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(dp)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            empty = 0;
            break;
        }
    closedir(dp);
    return empty;
}

/* Stage a checkpoint directory next to `dir`: the files are written by
 * `fill` into a new directory PARENT/.BASE.tmp-XXXXXX, which is then
 * swapped with dir in one rename (renameat2 RENAME_EXCHANGE when dir
 * exists), and the old contents removed. */
typedef int (*fill_fn)(const char *tmpdir, void *ctx, ac_err *err);

static int staged_dir(const char *dir, fill_fn fill, void *ctx, ac_err *err)
{
    char parent[PATH_MAX], base[PATH_MAX], tmp[PATH_MAX];
    struct stat sb;
    int st;
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    if (len == 0 || len >= sizeof parent)
        return ac_err_set(err, AC_ECANTCREAT, "%s: bad checkpoint directory name", dir);
    memcpy(parent, dir, len);
    parent[len] = 0;
    char *slash = strrchr(parent, '/');
    if (slash) {
        snprintf(base, sizeof base, "%s", slash + 1);
        if (slash == parent)
            parent[1] = 0;
        else
            *slash = 0;
    } else {
        snprintf(base, sizeof base, "%s", parent);
        strcpy(parent, ".");
    }
    if (!strcmp(base, ".") || !strcmp(base, ".."))
        return ac_err_set(err, AC_ECANTCREAT, "%s: name the checkpoint directory itself", dir);
    int exists = stat(dir, &sb) == 0;
    if (exists && !S_ISDIR(sb.st_mode))
        return ac_err_set(err, AC_ECANTCREAT, "%s: exists and is not a directory", dir);
    if (exists && !is_checkpoint_dir(dir) && !dir_is_empty(dir))
        return ac_err_set(err, AC_ECANTCREAT, "%s: exists and is not an attncheck checkpoint; "
                          "not replacing it", dir);
    if ((st = ac_mkdir_p(parent, err)))
        return st;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/.%s.tmp-XXXXXX", parent, base) >= sizeof tmp)
        return ac_err_set(err, AC_ECANTCREAT, "%s: path too long", dir);
    if (!mkdtemp(tmp))
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create files there: %s", parent,
                          strerror(errno));
    if ((st = fill(tmp, ctx, err))) {
        remove_tree(tmp);
        return st;
    }
    char full[PATH_MAX];
    snprintf(full, sizeof full, "%.*s", (int)len, dir);
    if (exists) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, full, RENAME_EXCHANGE) == 0) {
            remove_tree(tmp); /* now the previous checkpoint */
        } else {
            /* no atomic exchange here: move the old one aside first */
            char old[2 * PATH_MAX + 16];
            snprintf(old, sizeof old, "%s/.%s.old-XXXXXX", parent, base);
            if (!mkdtemp(old) || rmdir(old) != 0 || rename(full, old) != 0) {
                int e = errno;
                remove_tree(tmp);
                return ac_err_set(err, AC_ECANTCREAT, "%s: cannot replace: %s", dir, strerror(e));
            }
            if (rename(tmp, full) != 0) {
                int e = errno;
                rename(old, full);
                remove_tree(tmp);
                return ac_err_set(err, AC_ECANTCREAT, "%s: cannot replace: %s", dir, strerror(e));
            }
            remove_tree(old);
        }
    } else if (rename(tmp, full) != 0) {
        int e = errno;
        remove_tree(tmp);
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create: %s", dir, strerror(e));
    }
    int fd = open(parent, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return AC_OK;
}

typedef struct {
    const ac_trainer *tr;
    /* dump extras */
    const ac_nn_batch *batch;
    double loss;
    int dump;
} save_ctx;

static int fill_checkpoint(const char *tmp, void *vctx, ac_err *err)
{
    save_ctx *sc = vctx;
    const ac_trainer *tr = sc->tr;
    const ac_nn_model *m = &tr->model;
    int st;
    char name[AC_NN_NAME_MAX + 16], p[PATH_MAX];
    uint64_t *sums = malloc((m->ntensors ? m->ntensors : 1) * sizeof *sums);
    if (!sums)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < m->ntensors; i++) {
        const ac_nn_tensor *t = &m->tensors[i];
        sums[i] = fnv_doubles(FNV_INIT, m->params + t->offset, t->size);
        snprintf(name, sizeof name, "%s.npy", t->name);
        if ((st = write_array(tmp, name, m->params + t->offset, t->ndim, t->shape, err)))
            goto out;
        if (sc->dump) {
            snprintf(name, sizeof name, "grad.%s.npy", t->name);
            if ((st = write_array(tmp, name, m->grads + t->offset, t->ndim, t->shape, err)))
                goto out;
        }
    }
    size_t np = m->nparams;
    if ((st = write_array(tmp, "adamw.m.npy", m->m, 1, &np, err)) ||
        (st = write_array(tmp, "adamw.v.npy", m->v, 1, &np, err)))
        goto out;
    if (sc->dump) {
        const ac_nn_batch *b = sc->batch;
        const ac_nn_config *c = &m->cfg;
        size_t N = b->B * b->T;
        double *buf = malloc((N ? N : 1) * sizeof *buf);
        if (!buf) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            goto out;
        }
        size_t sh[4];
        st = AC_OK;
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
        if (st)
            goto out;
    }
    snprintf(p, sizeof p, "%s/config.json", tmp);
    ac_atomic f;
    if ((st = ac_atomic_open(&f, p, err)))
        goto out;
    ac_json *j = ac_json_new(f.fp, 2);
    if (!j) {
        ac_atomic_abort(&f);
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    write_config_json(j, tr, sums, fnv_doubles(FNV_INIT, m->m, np),
                      fnv_doubles(FNV_INIT, m->v, np));
    int jst = ac_json_error(j);
    ac_json_free(j);
    if (jst) {
        ac_atomic_abort(&f);
        st = ac_err_set(err, AC_ECANTCREAT, "%s: cannot write", p);
        goto out;
    }
    st = ac_atomic_commit(&f, err);
out:
    free(sums);
    return st;
}

int ac_trainer_save(const ac_trainer *tr, const char *dir, ac_err *err)
{
    save_ctx sc = {tr, NULL, 0, 0};
    return staged_dir(dir, fill_checkpoint, &sc, err);
}

int ac_trainer_dump_grads(ac_trainer *tr, const char *dir, double *loss, ac_err *err)
{
    ac_nn_batch b;
    ac_nn_stats st;
    int rc;
    if ((rc = fill_batch(tr, 0, tr->step + 1, &b, err)))
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
    return staged_dir(dir, fill_checkpoint, &sc, err);
}

/* ---- reading ---- */

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

static int config_from_json(const ac_jv *root, ac_train_config *c, size_t *step, const char *file,
                            ac_err *err)
{
    int st, e;
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
    ac_nn_config *mc = &c->model;
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
        st = ac_err_set(err, AC_EDATA, "%s: the checkpoint was made with another configuration "
                        "(%s differs)", dir, f);
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
        st = ac_err_set(err, AC_EUSAGE, "%s: the checkpoint is at step %zu, beyond --steps %zu",
                        dir, step, tr->cfg.steps);
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
