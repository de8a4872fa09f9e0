/* kappa.c — paper 2's condition number on learned weights
 * (attncheck/learned.h, doc/mathematics.md §6.6): the blocks [A_1 ... A_h]
 * of every layer of a trained transformer on real sequences, each block's
 * kappa by the routes of src/conditioning/kappa.c, and the distribution per
 * layer; the data: the checkpoint's held-out batches, or a text / ListOps
 * file read here.  Then condition --model's comparison with Gaussian blocks
 * and Gaussian-weight heads of the same shapes, and the claim of the
 * report's row on the median.
 *
 * The blocks are the head outputs of the forward pass (the activations
 * "atty" of the unmerged layer), which only the training stack's private
 * header gives: this file reads them through src/nn/nn_impl.h, as the
 * FFI does, and src/nn knows nothing of it. */
#include <config.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/fileio.h"
#include "attncheck/learned.h"
#include "nn/nn_impl.h"

void ac_learn_kappa_opts_default(ac_learn_kappa_opts *o)
{
    memset(o, 0, sizeof *o);
    o->batches = 4;
    o->rtol = AC_COND_RTOL_DEFAULT;
    o->max_prec = 1024;
    o->sched = ac_schedule_upto(512);
}

static void free_layers(ac_learn_kappa_layer *ly, size_t L)
{
    for (size_t l = 0; l < L && ly; l++) {
        free(ly[l].kappa);
        free(ly[l].sigma1);
        free(ly[l].sigmin);
        free(ly[l].N);
        free(ly[l].kappa_lo);
        free(ly[l].kappa_hi);
    }
    free(ly);
}

void ac_learn_kappa_free(ac_learn_kappa_result *r)
{
    if (!r)
        return;
    free_layers(r->layers, r->L);
    free_layers(r->init, r->L);
    memset(r, 0, sizeof *r);
}

/* ---- data files ---------------------------------------------------------------- */

/* The sequences of a data file, in the model's token ids: nseq x T tokens,
 * targets (text: nseq x T next bytes; listops: nseq labels), lengths. */
typedef struct {
    size_t nseq, T;
    int32_t *tok, *tgt;
    size_t *len;
} file_data;

static void file_data_free(file_data *f)
{
    free(f->tok);
    free(f->tgt);
    free(f->len);
}

static int file_data_alloc(file_data *f, size_t nseq, size_t T, size_t ntgt, ac_err *err)
{
    f->nseq = nseq;
    f->T = T;
    f->tok = calloc(nseq * T, sizeof *f->tok);
    f->tgt = calloc(ntgt ? ntgt : 1, sizeof *f->tgt);
    f->len = calloc(nseq, sizeof *f->len);
    if (!f->tok || !f->tgt || !f->len)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    return AC_OK;
}

/* Text: `want` windows of T bytes evenly spaced over the file (fewer if the
 * file is short: at most one per starting byte), every byte mapped through
 * the checkpoint's vocabulary. */
static int text_file(file_data *f, const ac_train_data *d, const char *path, size_t T,
                     size_t want, ac_err *err)
{
    unsigned char *buf;
    size_t n;
    int st, map[256];
    if ((st = ac_file_read(path, 0, &buf, &n, err)))
        return st;
    for (int b = 0; b < 256; b++)
        map[b] = -1;
    for (size_t i = 0; i < d->nvocab; i++)
        map[d->vocab[i]] = (int)i;
    for (size_t i = 0; i < n; i++)
        if (map[buf[i]] < 0) {
            unsigned byte = buf[i];
            free(buf);
            return ac_err_set(err, AC_EDATA, "%s: byte 0x%02x at offset %zu does not occur in the "
                              "checkpoint's text (its vocabulary has %zu bytes)", path, byte, i,
                              d->nvocab);
        }
    if (n < T + 1) {
        free(buf);
        return ac_err_set(err, AC_EDATA, "%s: %zu bytes; a window needs seq + 1 = %zu", path, n,
                          T + 1);
    }
    size_t room = n - T; /* starting offsets 0 .. n - T - 1 */
    size_t nseq = want < room ? want : room;
    if ((st = file_data_alloc(f, nseq, T, nseq * T, err))) {
        free(buf);
        return st;
    }
    for (size_t j = 0; j < nseq; j++) {
        size_t off = nseq > 1 ? (size_t)((double)j * (double)(room - 1) / (double)(nseq - 1)) : 0;
        for (size_t t = 0; t < T; t++) {
            f->tok[j * T + t] = map[buf[off + t]];
            f->tgt[j * T + t] = map[buf[off + t + 1]];
        }
        f->len[j] = T;
    }
    free(buf);
    return AC_OK;
}

/* One LRA token at *p (advanced): an id, or -1 for "(" / ")" (ignored), or
 * -2 for an unknown token. */
static int lra_token(const char **p)
{
    const char *s = *p;
    size_t k = 0;
    while (s[k] && !isspace((unsigned char)s[k]))
        k++;
    *p = s + k;
    static const struct { const char *w; int id; } words[] = {
        {"[MIN", AC_LISTOPS_MIN}, {"[MAX", AC_LISTOPS_MAX}, {"[MED", AC_LISTOPS_MED},
        {"[SM", AC_LISTOPS_SM}, {"]", AC_LISTOPS_END}, {"(", -1}, {")", -1}};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i].w) == k && strncmp(s, words[i].w, k) == 0)
            return words[i].id;
    if (k == 1 && s[0] >= '0' && s[0] <= '9')
        return AC_LISTOPS_DIGIT0 + (s[0] - '0');
    return -2;
}

/* ListOps: the first `want` expressions of the file, [CLS] + expression,
 * labels by ac_listops_eval. */
static int listops_file(file_data *f, const char *path, size_t T, size_t want, ac_err *err)
{
    unsigned char *buf;
    size_t n;
    int st;
    if ((st = ac_file_read(path, 0, &buf, &n, err)))
        return st;
    if ((st = file_data_alloc(f, want, T, want, err))) {
        free(buf);
        return st;
    }
    f->nseq = 0;
    char *line = (char *)buf, *next;
    size_t lineno = 0;
    for (; line && *line && f->nseq < want; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        lineno++;
        char *tab = strchr(line, '\t');
        if (tab)
            *tab = 0;
        if (lineno == 1 && strncmp(line, "Source", 6) == 0)
            continue;
        int32_t *tok = f->tok + f->nseq * T;
        size_t len = 1;
        tok[0] = AC_LISTOPS_CLS;
        const char *p = line;
        while (*p) {
            while (isspace((unsigned char)*p))
                p++;
            if (!*p)
                break;
            const char *w = p;
            int id = lra_token(&p);
            if (id == -2)
                st = ac_err_set(err, AC_EDATA, "%s:%zu: '%.*s' is not a ListOps token ([MIN, "
                                "[MAX, [MED, [SM, ], a digit, or parentheses)", path, lineno,
                                (int)(p - w), w);
            else if (id >= 0 && len == T)
                st = ac_err_set(err, AC_EDATA, "%s:%zu: the expression has more than %zu tokens "
                                "(the checkpoint's seq %zu minus the CLS token)", path, lineno,
                                T - 1, T);
            if (st)
                goto out;
            if (id >= 0)
                tok[len++] = id;
        }
        if (len == 1)
            continue; /* a blank line */
        int v = ac_listops_eval(tok + 1, len - 1);
        if (v < 0) {
            st = ac_err_set(err, AC_EDATA, "%s:%zu: not a well-formed ListOps expression", path,
                            lineno);
            goto out;
        }
        for (size_t t = len; t < T; t++)
            tok[t] = AC_LISTOPS_PAD;
        f->tgt[f->nseq] = v;
        f->len[f->nseq] = len;
        f->nseq++;
    }
    if (f->nseq == 0)
        st = ac_err_set(err, AC_EDATA, "%s: no ListOps expression", path);
out:
    free(buf);
    return st;
}

/* ---- kappa of the blocks ----------------------------------------------------------- */

/* kappa of the blocks of sequences [s0, s0 + nb) of the last forward pass,
 * for every layer; sequence s of the batch is block j0 + s. */
static int batch_kappas(ac_learn_kappa_result *r, const ac_nn_model *m, size_t nb, size_t j0,
                        const ac_learn_kappa_opts *o, ac_err *err)
{
    const ac_nn_work *w = m->w;
    size_t T = w->T, D = m->D;
    int fail = AC_OK;
    ac_err ferr;
    ac_err_clear(&ferr);
    size_t jobs = r->L * nb;
    int nt = 1;
#ifdef _OPENMP
    nt = o->threads > 0 ? o->threads : omp_get_max_threads();
#endif
    int bt = ac_blas_get_threads();
    ac_blas_set_threads(1);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (size_t job = 0; job < jobs; job++) {
        size_t l = job / nb, s = job % nb;
        ac_learn_kappa_layer *ly = &r->layers[l];
        size_t N = w->have_len ? w->len[s] : T;
        ac_mat A = {0, 0, NULL};
        ac_err e;
        ac_err_clear(&e);
        ac_cond_sample cs;
        int st = ac_mat_init(&A, N, D, &e);
        if (!st) {
            memcpy(A.data, w->layers[l].atty + s * T * D, N * D * sizeof *A.data);
            st = ac_cond_kappa(&A, o->rtol, -1, o->max_prec, &cs, &e);
        }
        if (!st && o->certify)
            st = ac_cond_certify(&A, o->rtol, &o->sched, o->max_prec, &cs, &e);
        ac_mat_free(&A);
        size_t j = j0 + s;
        if (st) {
#pragma omp critical(learn_kappa_err)
            if (!fail) {
                fail = st;
                ferr = e;
            }
            continue;
        }
        ly->kappa[j] = cs.kappa;
        ly->sigma1[j] = cs.sigma1;
        ly->sigmin[j] = cs.sigmin;
        ly->N[j] = N;
        if (o->certify) {
            ly->kappa_lo[j] = cs.kappa_lo;
            ly->kappa_hi[j] = cs.kappa_hi;
        }
        if (!cs.resolved) {
#pragma omp atomic
            ly->n_unresolved++;
        }
    }
    ac_blas_set_threads(bt);
    if (fail && err)
        *err = ferr;
    return fail;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* The median of sorted positive x, rounded down (dir < 0) or up: for even
 * n the mean of the two middle values a <= b, m = a + (b - a)/2, is
 * computed with one rounding in the subtraction (error <= u (b - a) / 2
 * after the exact halving, <= u m) and one in the addition (<= u m (1 +
 * u)): |fl(m) - m| < 2.1 u m <= 1.05 ulp(m); three steps of nextafter
 * (each at least half an ulp) cover it. */
static double median_round(const double *x, size_t n, int dir)
{
    if (n % 2)
        return x[n / 2];
    double a = x[n / 2 - 1], b = x[n / 2], m = a + (b - a) / 2;
    double to = dir < 0 ? -INFINITY : INFINITY;
    return nextafter(nextafter(nextafter(m, to), to), to);
}

static int finish_layers(ac_learn_kappa_result *r, size_t n, ac_err *err)
{
    size_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t l = 0; l < r->L; l++) {
        ac_learn_kappa_layer *ly = &r->layers[l];
        ly->n = n;
        memcpy(tmp, ly->N, n * sizeof *tmp);
        qsort(tmp, n, sizeof *tmp, cmp_size);
        ly->N_min = tmp[0];
        ly->N_max = tmp[n - 1];
        ly->N_med = tmp[(n - 1) / 2];
        int st = ac_cond_stats_compute(&ly->st, ly->kappa, ly->sigma1, ly->sigmin, n, err);
        if (st) {
            free(tmp);
            return st;
        }
        ly->median_lo = ly->median_hi = NAN;
        if (ly->kappa_lo) {
            double *x = malloc(n * sizeof *x);
            if (!x) {
                free(tmp);
                return ac_err_set(err, AC_EINTERNAL, "out of memory");
            }
            /* the median of the lower (upper) endpoints bounds the median
             * from below (above): order statistics and the interpolation
             * x[j] + g (x[j+1] - x[j]), 0 <= g < 1, are non-decreasing in
             * every entry; the interpolation is rounded outward */
            memcpy(x, ly->kappa_lo, n * sizeof *x);
            qsort(x, n, sizeof *x, cmp_double);
            ly->median_lo = median_round(x, n, -1);
            memcpy(x, ly->kappa_hi, n * sizeof *x);
            qsort(x, n, sizeof *x, cmp_double);
            ly->median_hi = median_round(x, n, 1);
            free(x);
        }
    }
    free(tmp);
    return AC_OK;
}

static int alloc_layers(ac_learn_kappa_result *r, const ac_nn_model *m, size_t n,
                        const ac_learn_kappa_opts *o, ac_err *err)
{
    r->layers = calloc(r->L, sizeof *r->layers);
    if (!r->layers)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t l = 0; l < r->L; l++) {
        ac_learn_kappa_layer *ly = &r->layers[l];
        ly->layer = l;
        ly->H = m->cfg.heads;
        ly->S = m->S;
        ly->D = m->D;
        ly->kappa = calloc(n, sizeof *ly->kappa);
        ly->sigma1 = calloc(n, sizeof *ly->sigma1);
        ly->sigmin = calloc(n, sizeof *ly->sigmin);
        ly->N = calloc(n, sizeof *ly->N);
        if (o->certify) {
            ly->kappa_lo = calloc(n, sizeof *ly->kappa_lo);
            ly->kappa_hi = calloc(n, sizeof *ly->kappa_hi);
            if (!ly->kappa_lo || !ly->kappa_hi)
                return ac_err_set(err, AC_EINTERNAL, "out of memory");
        }
        if (!ly->kappa || !ly->sigma1 || !ly->sigmin || !ly->N)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    return AC_OK;
}

int ac_learn_kappa_trainer(ac_learn_kappa_result *r, ac_trainer *tr,
                           const ac_learn_kappa_opts *o, ac_err *err)
{
    const ac_train_config *c = &tr->cfg;
    ac_nn_model *m = &tr->model;
    int st;
    file_data fd;
    memset(&fd, 0, sizeof fd);
    ac_learn_kappa_free(r);
    if (m->cfg.arch != AC_NN_ARCH_TRANSFORMER ||
        (c->task != AC_TASK_TEXT && c->task != AC_TASK_LISTOPS))
        return ac_err_set_field(err, AC_EUSAGE, "model", "the condition number of trained heads "
                                "needs a transformer of task text or listops (this is %s)",
                                ac_task_name(c->task));
    if (o->batches < 1)
        return ac_err_set_field(err, AC_EUSAGE, "batches", "batches must be at least 1");
    size_t B = c->batch, T = c->seq, want = o->batches * B;
    /* the blocks measured are the heads' outputs (atty) of the unmerged
     * layer; merged heads (attn_merged.c) would leave their sums there */
    int merged = m->w->merge;
    nn_merge_set(m, NN_MERGE_OFF);
    r->cfg = *c;
    r->step = tr->step;
    r->nparams = m->nparams;
    r->width = m->cfg.width;
    r->L = m->cfg.layers;
    if (o->data_path) {
        st = c->task == AC_TASK_TEXT ? text_file(&fd, tr->data, o->data_path, T, want, err)
                                     : listops_file(&fd, o->data_path, T, want, err);
        if (st)
            goto out;
        want = fd.nseq;
        snprintf(r->source, sizeof r->source, "%s: %zu sequences", o->data_path, want);
    } else {
        snprintf(r->source, sizeof r->source, "the checkpoint's held-out data: %zu batches of %zu",
                 o->batches, B);
    }
    if ((st = alloc_layers(r, m, want, o, err)))
        goto out;
    double loss = 0;
    size_t correct = 0, count = 0;
    size_t keep_eval = tr->cfg.eval_batches;
    tr->cfg.eval_batches = o->batches; /* the held-out windows are spaced by it */
    for (size_t j0 = 0, bi = 0; j0 < want; j0 += B, bi++) {
        ac_nn_batch b;
        ac_nn_stats ns;
        if (o->data_path) {
            size_t nb = want - j0 < B ? want - j0 : B;
            memset(&b, 0, sizeof b);
            b.B = nb;
            b.T = T;
            b.tokens = fd.tok + j0 * T;
            b.targets = fd.tgt + (c->task == AC_TASK_TEXT ? j0 * T : j0);
            b.len = c->task == AC_TASK_LISTOPS ? fd.len + j0 : NULL;
        } else if ((st = train_fill_batch(tr, 1, bi, &b, err))) {
            break;
        }
        if ((st = ac_nn_forward(m, &b, &ns, err)) || (st = batch_kappas(r, m, b.B, j0, o, err)))
            break;
        loss += ns.loss * (double)ns.count;
        correct += ns.correct;
        count += ns.count;
    }
    tr->cfg.eval_batches = keep_eval;
    if (st)
        goto out;
    r->loss = loss / (double)count;
    r->accuracy = (double)correct / (double)count;
    r->sequences = want;
    st = finish_layers(r, want, err);
out:
    nn_merge_set(m, merged);
    file_data_free(&fd);
    if (st)
        ac_learn_kappa_free(r);
    return st;
}

int ac_learn_kappa_run(ac_learn_kappa_result *r, const char *dir, const ac_learn_kappa_opts *o,
                       ac_err *err)
{
    ac_train_config cfg;
    ac_trainer tr;
    size_t step;
    int st;
    memset(&tr, 0, sizeof tr);
    if ((st = ac_train_config_read(dir, &cfg, &step, err)))
        return st;
    if (cfg.model.arch != AC_NN_ARCH_TRANSFORMER ||
        (cfg.task != AC_TASK_TEXT && cfg.task != AC_TASK_LISTOPS))
        return ac_err_set_field(err, AC_EUSAGE, "model", "%s: a checkpoint of task %s; the "
                                "condition number of trained heads needs task text or listops",
                                dir, ac_task_name(cfg.task));
    cfg.eval_batches = o->batches;
    ac_learn_kappa_result r0;
    memset(&r0, 0, sizeof r0);
    if ((st = ac_trainer_init(&tr, &cfg, err)))
        goto out;
    /* the trainer starts from the initial weights of the checkpoint's run */
    if (o->initial && (st = ac_learn_kappa_trainer(&r0, &tr, o, err)))
        goto out;
    if ((st = ac_trainer_load(&tr, dir, err)) || (st = ac_learn_kappa_trainer(r, &tr, o, err)))
        goto out;
    if (o->initial) {
        r->init = r0.layers;
        r->init_loss = r0.loss;
        r->init_accuracy = r0.accuracy;
        r0.layers = NULL;
    }
out:
    ac_learn_kappa_free(&r0);
    ac_trainer_free(&tr);
    return st;
}

/* ---- the Gaussian comparison (condition --model) ------------------------------ */

int ac_learn_kappa_predict(ac_rmt_pred *p, double *median, double *q05, double *q95, size_t N,
                           size_t D, ac_err *err)
{
    int st = ac_rmt_predict(p, N, D, err);
    if (st)
        return st;
    *median = N == D ? p->edelman_median : p->tw_median;
    if (q05)
        *q05 = N == D ? p->edelman_q05 : p->tw_q05;
    if (q95)
        *q95 = N == D ? p->edelman_q95 : p->tw_q95;
    return AC_OK;
}

ac_verdict ac_learn_kappa_median_at_most(const ac_learn_kappa_layer *ly, double lim)
{
    /* NaN bounds (no enclosure) fail both comparisons */
    if (ly->median_lo > lim)
        return AC_REFUTED;
    if (ly->median_hi <= lim)
        return AC_PROVED;
    return AC_UNDECIDED;
}

void ac_learn_kappa_compare_free(ac_learn_kappa_compare *c)
{
    if (!c)
        return;
    ac_learn_kappa_free(&c->r);
    ac_cond_result_free(&c->gauss);
    free(c->ratio_pred);
    free(c->ratio_gauss);
    memset(c, 0, sizeof *c);
}

int ac_learn_kappa_compare_run(ac_learn_kappa_compare *c, const char *dir,
                               const ac_learn_kappa_compare_opts *o, ac_err *err)
{
    double t0 = ac_seconds();
    c->verdict = AC_UNDECIDED; /* a measurement: no claim is certified */
    int st = ac_learn_kappa_run(&c->r, dir, &o->kappa, err);
    if (st)
        return st;
    /* the comparison for the trained blocks' shapes: an N x D Gaussian
     * block (N = the median rows) and attention heads with Gaussian weights
     * of the model's shapes (input width C) */
    const ac_learn_kappa_layer *ly = &c->r.layers[0];
    if ((st = ac_learn_kappa_predict(&c->pred, &c->pred_median, &c->pred_q05, &c->pred_q95,
                                     ly->N_med, ly->D, err)))
        return st;
    ac_cond_opts co;
    ac_cond_opts_default(&co);
    co.N = ly->N_med;
    co.mode = AC_COND_ATTENTION;
    co.input_dim = c->r.width;
    co.seed = o->seed;
    co.trials = o->trials;
    co.rtol = o->kappa.rtol;
    co.max_prec = o->kappa.max_prec;
    co.sched = ac_schedule_upto(o->kappa.max_prec);
    co.threads = o->kappa.threads;
    if ((st = ac_cond_run(&c->gauss, ly->H, ly->S, &co, err)))
        return st;
    c->ratio_pred = malloc(c->r.L * sizeof *c->ratio_pred);
    c->ratio_gauss = malloc(c->r.L * sizeof *c->ratio_gauss);
    if (!c->ratio_pred || !c->ratio_gauss)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t l = 0; l < c->r.L; l++) {
        c->ratio_pred[l] = c->r.layers[l].st.median / c->pred_median;
        c->ratio_gauss[l] = c->r.layers[l].st.median / c->gauss.st.median;
    }
    c->seconds = ac_seconds() - t0;
    return AC_OK;
}
