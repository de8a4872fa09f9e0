/* data_teacher.c — the teacher task's data (attncheck/train.h, "teacher"):
 * regression onto the output of a given attention layer g (paper 1,
 * Theorem 2), either generated (the layer's Wq, Wk, Wv, Wo stacks from a
 * directory, or the layer in memory; inputs X ~ N(0,1), targets g(X)) or
 * read as fixed pairs (X.npy, Y.npy). */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attncheck/multihead.h"
#include "attncheck/npy.h"
#include "attncheck/rng.h"
#include "nn/nn_impl.h"

static int file_exists(const char *dir, const char *name)
{
    char p[PATH_MAX];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

/* Read DIR/NAME.npy as an array (m, a, b) (a 2-D array counts as m = 1):
 * the X.npy, Y.npy pairs of the dataset mode. */
static int read_pairs_array(const char *dir, const char *name, ac_array *a, size_t *h, size_t *r,
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

/* Generator mode: the layer becomes d->teacher (source names it in the
 * summary: the directory and its stack letter, or NULL for a layer given in
 * memory). */
static int teacher_from_layer(ac_train_data *d, ac_train_config *c, const ac_mh *layer,
                              const char *source, char L, ac_err *err)
{
    int st;
    if (c->seq == 0)
        c->seq = 8;
    ac_nn_config tc;
    memset(&tc, 0, sizeof tc);
    tc.arch = AC_NN_ARCH_ATTENTION;
    tc.input = AC_NN_INPUT_VECTORS;
    tc.max_seq = c->seq;
    tc.width = layer->d;
    tc.heads = layer->h;
    tc.kind = layer->h * layer->hs == layer->d ? AC_NN_ATTN_STANDARD : AC_NN_ATTN_FIXED;
    tc.head_dim = layer->hs;
    tc.head = AC_NN_HEAD_REGRESS;
    if ((st = ac_nn_model_init(&d->teacher, &tc, c->batch, c->seq, err)))
        return st;
    static const char *const names[4] = {"Wq", "Wk", "Wv", "Wo"};
    static const ac_mh_param which[4] = {AC_MH_Q, AC_MH_K, AC_MH_V, AC_MH_O};
    uint64_t h = FNV_INIT;
    for (int i = 0; i < 4; i++) {
        ac_array a = {0};
        if ((st = ac_mh_get_array(layer, which[i], &a, err)))
            return st;
        const ac_nn_tensor *t = ac_nn_tensor_find(&d->teacher, names[i]);
        memcpy(d->teacher.params + t->offset, a.data, t->size * sizeof(double));
        h = fnv_doubles(h, a.data, a.size);
        ac_array_free(&a);
    }
    d->checksum = h;
    d->gen = 1;
    d->td = d->te = layer->d;
    char src[AC_TRAIN_PATH_MAX + 16];
    if (source)
        snprintf(src, sizeof src, "%s (%c stack)", source, L);
    else
        snprintf(src, sizeof src, "in memory");
    snprintf(d->summary, sizeof d->summary,
             "teacher %s: %zu heads of size %zu on d = %zu (%s); inputs X ~ "
             "N(0,1), %zu tokens", src, layer->h, layer->hs, layer->d,
             tc.kind == AC_NN_ATTN_STANDARD ? "standard" : "fixed", c->seq);
    return AC_OK;
}

/* Generator mode from a directory: the layer of the stacks LETTERq.npy ...
 * LETTERo.npy in dir, (h, s, d) for q, k, v and (h, d, s) for o (2-D arrays
 * for one head), read by the one reader of such stacks
 * (ac_mh_load_dir_flex). */
static int teacher_from_weights(ac_train_data *d, ac_train_config *c, const char *dir, char L,
                                ac_err *err)
{
    ac_mh layer = {0};
    int st;
    c->teacher_stack = L;
    if (!(st = ac_mh_load_dir_flex(&layer, dir, L, 1, err)))
        st = teacher_from_layer(d, c, &layer, dir, L, err);
    ac_mh_free(&layer);
    return st;
}

/* Generator mode from a layer in memory (ac_trainer_init_teacher): its
 * parameters must be finite, as those of a file are. */
static int teacher_from_memory(ac_train_data *d, ac_train_config *c, const ac_mh *layer,
                               ac_err *err)
{
    if (!layer->params || layer->d == 0 || layer->h == 0 || layer->hs == 0)
        return ac_err_set(err, AC_EUSAGE, "the teacher layer in memory is empty");
    size_t np = ac_mh_nparams(layer);
    for (size_t i = 0; i < np; i++)
        if (!isfinite(layer->params[i]))
            return ac_err_set(err, AC_EDATA, "the teacher layer in memory: parameter %zu of "
                              "the block wq | wk | wv | wo is %g", i, layer->params[i]);
    return teacher_from_layer(d, c, layer, NULL, 0, err);
}

/* Dataset mode: pairs X.npy (m, d, n) -> Y.npy (m, e, n) in paper 1's
 * layout, stored as rows (m, n, d), (m, n, e); the last holdout fraction
 * of the pairs is held out (at least one pair stays for training). */
static int teacher_from_pairs(ac_train_data *d, ac_train_config *c, const char *dir,
                              ac_err *err)
{
    ac_array X = {0}, Y = {0};
    size_t mx, dx, nx, my, ey, ny;
    int st;
    if ((st = read_pairs_array(dir, "X.npy", &X, &mx, &dx, &nx, err)) ||
        (st = read_pairs_array(dir, "Y.npy", &Y, &my, &ey, &ny, err)))
        goto out;
    if (mx != my || nx != ny || mx == 0 || nx == 0 || dx == 0 || ey == 0) {
        st = ac_err_set(err, AC_EDATA,
                        "%s: X.npy (m, d, n) and Y.npy (m, e, n) must agree in m and n: "
                        "got X (%zu, %zu, %zu), Y (%zu, %zu, %zu)",
                        dir, mx, dx, nx, my, ey, ny);
        goto out;
    }
    if (c->seq && c->seq != nx) {
        st = ac_err_set_field(err, AC_EUSAGE, "seq", "seq %zu contradicts %s/X.npy, which has "
                              "n = %zu tokens", c->seq, dir, nx);
        goto out;
    }
    c->seq = nx;
    d->tm = mx, d->td = dx, d->te = ey;
    d->tx = malloc(mx * nx * dx * sizeof *d->tx);
    d->ty = malloc(mx * nx * ey * sizeof *d->ty);
    if (!d->tx || !d->ty) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    /* paper layout (m, d, n) -> rows (m, n, d) */
    for (size_t i = 0; i < mx; i++)
        for (size_t t = 0; t < nx; t++) {
            for (size_t k = 0; k < dx; k++)
                d->tx[(i * nx + t) * dx + k] = X.data[(i * dx + k) * nx + t];
            for (size_t k = 0; k < ey; k++)
                d->ty[(i * nx + t) * ey + k] = Y.data[(i * ey + k) * nx + t];
        }
    d->checksum = fnv_doubles(fnv_doubles(FNV_INIT, X.data, X.size), Y.data, Y.size);
    size_t held = (size_t)floor(c->holdout * (double)mx);
    if (held >= mx)
        held = mx - 1;
    d->ttrain = mx - held;
    snprintf(d->summary, sizeof d->summary,
             "teacher %s: %zu pairs X (d = %zu, n = %zu) -> Y (e = %zu); %zu for training, "
             "%zu held out", dir, mx, dx, nx, ey, d->ttrain, held);
out:
    ac_array_free(&X);
    ac_array_free(&Y);
    return st;
}

/* The student's configuration from the teacher's sizes: regression from d
 * to e; the bare attention layer (--arch attention) maps d to d. */
static int teacher_student_config(const ac_train_data *d, ac_train_config *c, ac_err *err)
{
    ac_nn_config *m = &c->model;
    if (m->heads == 0) /* default: the teacher's heads (1 for pairs) */
        m->heads = d->gen ? d->teacher.cfg.heads : 1;
    m->head = AC_NN_HEAD_REGRESS;
    m->input = AC_NN_INPUT_VECTORS;
    if (m->arch == AC_NN_ARCH_ATTENTION) {
        if (d->te != d->td)
            return ac_err_set_field(err, AC_EUSAGE, "arch", "%s: the bare attention layer maps "
                                    "d = %zu to d; the targets have e = %zu (use arch "
                                    "transformer)", c->teacher_dir[0] ? c->teacher_dir
                                    : "the teacher", d->td, d->te);
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

int train_teacher_open(ac_train_data *d, ac_train_config *c, const ac_mh *layer, ac_err *err)
{
    const char *dir = c->teacher_dir;
    int st;
    struct stat sb;
    if (layer) {
        if ((st = teacher_from_memory(d, c, layer, err)))
            return st;
        return teacher_student_config(d, c, err);
    }
    if (!dir[0])
        return ac_err_set_field(err, AC_EUSAGE, "task,teacher_dir",
                                "task teacher needs teacher_dir DIR");
    if (stat(dir, &sb) != 0)
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return ac_err_set_field(err, AC_ENOINPUT, "teacher_dir",
                                "%s: not a directory (teacher_dir wants a directory with Wq.npy, "
                                "Wk.npy, Wv.npy, Wo.npy or X.npy, Y.npy)", dir);
    char L = c->teacher_stack;
    if (L == 0)
        L = file_exists(dir, "Vq.npy") ? 'V' : 'W'; /* g_V when `separate` wrote both */
    if (L != 'W' && L != 'V')
        return ac_err_set_field(err, AC_EUSAGE, "teacher_stack", "teacher_stack must be W or V");
    char fq[8], fo[8];
    snprintf(fq, sizeof fq, "%cq.npy", L);
    snprintf(fo, sizeof fo, "%co.npy", L);
    if (file_exists(dir, fq) || file_exists(dir, fo) || c->teacher_stack)
        st = teacher_from_weights(d, c, dir, L, err);
    else if (file_exists(dir, "X.npy") && file_exists(dir, "Y.npy"))
        st = teacher_from_pairs(d, c, dir, err);
    else
        return ac_err_set(err, AC_ENOINPUT,
                          "%s: neither the weights of an attention layer (Wq.npy, Wk.npy, Wv.npy, "
                          "Wo.npy, or Vq.npy ... Vo.npy) nor input/target pairs (X.npy, Y.npy)",
                          dir);
    if (st)
        return st;
    return teacher_student_config(d, c, err);
}

/* Generator mode: inputs from the stream, targets the teacher's outputs;
 * dataset mode: random pairs of the training part, or the held-out pairs in
 * order (the last evaluation batch may be partial: b->B counts them). */
int train_teacher_batch(ac_train_data *d, const ac_train_config *c, int split, size_t index,
                        ac_nn_batch *b, ac_err *err)
{
    size_t B = c->batch, T = c->seq, dd = d->td, e = d->te;
    int st;
    if (d->gen) {
        ac_rng r;
        ac_rng_init(&r, c->seed, split == 0 ? STREAM_TEACH : STREAM_TEACH_EVAL, index);
        ac_rng_normal_fill(&r, d->x, B * T * dd);
        ac_nn_batch tb = {B, T, NULL, d->x, NULL, d->x, NULL, NULL}; /* y unused for the output */
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
    return AC_OK;
}

void train_regress_sums(const ac_nn_model *m, const ac_nn_batch *b, double *sse, double *syy)
{
    size_t rows, cols;
    const double *out = ac_nn_output(m, &rows, &cols);
    size_t N = b->B * b->T * cols;
    if (N > rows * cols)
        N = rows * cols;
    double e2 = 0, y2 = 0;
    for (size_t i = 0; i < N; i++) {
        double e = out[i] - b->y[i];
        e2 += e * e;
        y2 += b->y[i] * b->y[i];
    }
    *sse += e2;
    *syy += y2;
}
