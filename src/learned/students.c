/* students.c — Theorem 2 of paper 1 on learned weights (attncheck/learned.h,
 * doc/mathematics.md §4.8): standard-head students (h' heads of size d/h')
 * and a fixed-head student (the teacher's h heads of size dp) trained by
 * regression onto a fixed-head teacher g_V given in memory
 * (ac_trainer_init_teacher); per student the held-out relative error, its
 * worst held-out X and the certificate there (ac_t2_certify); the head
 * counts that represent g_V exactly (ac_headcount_decide); and the
 * comparison of each standard student with the fixed one. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/interval.h"
#include "attncheck/learned.h"
#include "attncheck/train.h"

void ac_learn_t2_opts_default(ac_learn_t2_opts *o)
{
    memset(o, 0, sizeof *o);
    o->n = 8;
    o->seeds = 3;
    o->steps = 2000;
    o->batch = 32;
    o->lr = 1e-2;
    o->samples = 64;
    o->seed = 1;
    o->sched = ac_schedule_upto(512);
}

const char *ac_learn_t2_outcome_name(ac_learn_t2_outcome o)
{
    return o == AC_LEARN_T2_AGREES ? "agrees" : o == AC_LEARN_T2_DISAGREES ? "disagrees" : "";
}

ac_verdict ac_learn_t2_compare(const ac_learn_t2_row *a, const ac_learn_t2_row *b, size_t s)
{
    if (s >= a->nseeds || s >= b->nseeds)
        return AC_UNDECIDED;
    double alo = a->cert_lo[s], ahi = a->cert_hi[s], blo = b->cert_lo[s], bhi = b->cert_hi[s];
    return alo > bhi ? AC_PROVED : ahi < blo ? AC_REFUTED : AC_UNDECIDED;
}

/* ---- one student --------------------------------------------------------------- */

/* The trained weights as a layer (the model's Wq, Wk, Wv (H,S,C), Wo (H,C,S)
 * are the stacks of attncheck/multihead.h). */
static int student_layer(ac_mh *S, const ac_trainer *tr, ac_err *err)
{
    static const char *const names[4] = {"Wq", "Wk", "Wv", "Wo"};
    static const char *const msg[4] = {"student Wq", "student Wk", "student Wv", "student Wo"};
    ac_array arr[4];
    int st = AC_OK;
    memset(arr, 0, sizeof arr);
    for (int i = 0; i < 4 && !st; i++) {
        const ac_nn_tensor *t = ac_nn_tensor_find(&tr->model, names[i]);
        if (!t)
            st = ac_err_set(err, AC_EINTERNAL, "student has no tensor %s", names[i]);
        else if (!(st = ac_array_init(&arr[i], t->ndim, t->shape, err)))
            memcpy(arr[i].data, tr->model.params + t->offset, t->size * sizeof(double));
    }
    if (!st)
        st = ac_mh_from_arrays(S, &arr[0], &arr[1], &arr[2], &arr[3], msg, err);
    for (int i = 0; i < 4; i++)
        ac_array_free(&arr[i]);
    return st;
}

/* Lower bound on ||g(X)||_F from the stage-0 enclosure. */
static double norm_lo(const ac_mh *L, const ac_mat *X, ac_err *err)
{
    ac_imat G = {0};
    if (ac_mh_enclose(&G, L, X, err))
        return 0.0;
    double s = 0;
    size_t N = G.rows * G.cols;
    for (size_t i = 0; i < N; i++) {
        double lo = ac_imat_lo(&G, i), hi = ac_imat_hi(&G, i);
        double m = lo > 0 ? lo : (hi < 0 ? -hi : 0.0);
        s += ac_mul_dn(m, m);
    }
    ac_imat_free(&G);
    /* the rounded sum of N nonnegative terms is at most (1 + gamma_N) times the exact one */
    double q = ac_div_dn(s, ac_add_up(1.0, ac_gamma_up((double)(N ? N : 1))));
    return isfinite(q) && q > 0 ? ac_sqrt_dn(q) : 0.0;
}

/* The held-out inputs X_k (in the result) and g_V(X_k), the same for every
 * student. */
typedef struct {
    const ac_mh *V;
    const ac_learn_t2_opts *o;
    ac_learn_t2_result *res;
    ac_mat *G;
} experiment;

static int heldout_init(experiment *e, ac_err *err)
{
    ac_learn_t2_result *r = e->res;
    size_t k = e->o->samples;
    int st;
    r->X = calloc(k, sizeof *r->X);
    e->G = calloc(k, sizeof *e->G);
    if (!r->X || !e->G)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    r->samples = k;
    for (size_t i = 0; i < k; i++) {
        if ((st = ac_t2_sample_input(&r->X[i], e->V->d, e->o->n, e->o->seed, i, err)) ||
            (st = ac_mat_init(&e->G[i], e->V->d, e->o->n, err)) ||
            (st = ac_mh_forward(&e->G[i], e->V, &r->X[i], NULL, err)))
            return st;
    }
    return AC_OK;
}

/* Held-out error of the trained student S, its worst X, and the certificate
 * there (seed j of row w). */
static int assess(ac_learn_t2_row *w, size_t j, const ac_mh *S, const experiment *e,
                  ac_err *err)
{
    const ac_learn_t2_result *r = e->res;
    ac_mat F = {0};
    int st = ac_mat_init(&F, e->V->d, e->o->n, err);
    double sse = 0, syy = 0, worst = -1;
    size_t wk = 0;
    for (size_t k = 0; k < r->samples && !st; k++) {
        if ((st = ac_mh_forward(&F, S, &r->X[k], NULL, err)))
            break;
        double ek = 0, y = 0;
        for (size_t i = 0; i < F.rows * F.cols; i++) {
            double t = F.data[i] - e->G[k].data[i];
            ek += t * t;
            y += e->G[k].data[i] * e->G[k].data[i];
        }
        sse += ek;
        syy += y;
        double q = y > 0 ? ek / y : (ek > 0 ? INFINITY : 0);
        if (q > worst)
            worst = q, wk = k;
    }
    ac_mat_free(&F);
    if (st)
        return st;
    w->rel[j] = syy > 0 ? sse / syy : NAN;
    w->worst_k[j] = wk;
    w->worst_est[j] = sqrt(worst);
    ac_t2_sep s;
    memset(&s, 0, sizeof s);
    if ((st = ac_mat_copy(&s.X, &r->X[wk], err)) ||
        (st = ac_t2_certify(&s, S, e->V, &e->o->sched, 0.0, err))) {
        ac_t2_sep_free(&s);
        return st;
    }
    w->sep[j] = s.cert.verdict;
    double glo = norm_lo(e->V, &s.X, err);
    w->cert_lo[j] = s.cert.verdict == AC_PROVED && isfinite(s.g_hi) && s.g_hi > 0
                        ? ac_div_dn(s.gap_lo, s.g_hi) : 0.0;
    w->cert_hi[j] = glo > 0 && isfinite(s.gap_hi) ? ac_div_up(s.gap_hi, glo) : INFINITY;
    ac_t2_sep_free(&s);
    return AC_OK;
}

/* Train student row w with seed index j on the teacher; its layer goes to
 * w->layers[j]. */
static int train_one(ac_learn_t2_row *w, size_t j, const experiment *e, ac_err *err)
{
    const ac_learn_t2_opts *o = e->o;
    ac_train_config c;
    ac_trainer tr;
    int st;
    memset(&tr, 0, sizeof tr);
    ac_train_config_default(&c, AC_TASK_TEACHER);
    c.seq = o->n;
    c.batch = o->batch;
    c.steps = o->steps;
    c.lr = o->lr;
    c.min_lr = o->lr / 10;
    c.warmup = o->steps / 10;
    c.seed = o->seed + j;
    c.model.heads = w->heads;
    c.model.kind = w->fixed ? AC_NN_ATTN_FIXED : AC_NN_ATTN_STANDARD;
    c.model.head_dim = w->fixed ? w->hs : 0;
    double t0 = ac_seconds();
    if ((st = ac_trainer_init_teacher(&tr, &c, e->V, err)))
        goto out;
    w->nparams = tr.model.nparams;
    size_t every = o->steps / (w->ncurve - 1), pt = 0;
    for (size_t s = 1; s <= o->steps && !st; s++) {
        ac_step_info si;
        if ((st = ac_trainer_step(&tr, &si, err)))
            break;
        if (s == 1 || s % every == 0 || s == o->steps) {
            if (pt >= w->ncurve || (pt > 0 && w->curve_step[pt - 1] == s))
                continue;
            ac_eval_info ev;
            if ((st = ac_trainer_eval(&tr, &ev, err)))
                break;
            w->curve_step[pt] = s;
            w->curve_loss[j * w->ncurve + pt] = si.loss;
            w->curve_rel[j * w->ncurve + pt] = ev.rel_mse;
            pt++;
        }
    }
    w->seconds[j] = ac_seconds() - t0;
    if (!st && !(st = student_layer(&w->layers[j], &tr, err)))
        st = assess(w, j, &w->layers[j], e, err);
out:
    ac_trainer_free(&tr);
    return st;
}

/* ---- the rows ------------------------------------------------------------------- */

static int row_alloc(ac_learn_t2_row *w, size_t nseeds, size_t steps, ac_err *err)
{
    w->nseeds = nseeds;
    w->ncurve = steps >= 20 ? 21 : steps + 1;
    size_t K = nseeds, C = nseeds * w->ncurve;
    w->rel = calloc(K, sizeof(double));
    w->worst_est = calloc(K, sizeof(double));
    w->worst_k = calloc(K, sizeof(size_t));
    w->cert_lo = calloc(K, sizeof(double));
    w->cert_hi = calloc(K, sizeof(double));
    w->sep = calloc(K, sizeof(ac_verdict));
    w->seconds = calloc(K, sizeof(double));
    w->curve_step = calloc(w->ncurve, sizeof(size_t));
    w->curve_loss = calloc(C, sizeof(double));
    w->curve_rel = calloc(C, sizeof(double));
    w->layers = calloc(K, sizeof(ac_mh));
    if (!w->rel || !w->worst_est || !w->worst_k || !w->cert_lo || !w->cert_hi || !w->sep ||
        !w->seconds || !w->curve_step || !w->curve_loss || !w->curve_rel || !w->layers)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < C; i++)
        w->curve_loss[i] = w->curve_rel[i] = NAN;
    w->mean = w->sd = w->min = w->max = w->ratio = NAN;
    return AC_OK;
}

static void row_free(ac_learn_t2_row *w)
{
    for (size_t j = 0; w->layers && j < w->nseeds; j++)
        ac_mh_free(&w->layers[j]);
    free(w->layers);
    free(w->rel);
    free(w->worst_est);
    free(w->worst_k);
    free(w->cert_lo);
    free(w->cert_hi);
    free(w->sep);
    free(w->seconds);
    free(w->curve_step);
    free(w->curve_loss);
    free(w->curve_rel);
}

/* mean, sd, min, max of the errors; the certified range over the seeds */
static void row_stats(ac_learn_t2_row *w)
{
    double s = 0, q = 0;
    w->min = INFINITY;
    w->max = -INFINITY;
    for (size_t j = 0; j < w->nseeds; j++) {
        s += w->rel[j];
        w->min = fmin(w->min, w->rel[j]);
        w->max = fmax(w->max, w->rel[j]);
    }
    w->mean = s / (double)w->nseeds;
    for (size_t j = 0; j < w->nseeds; j++)
        q += (w->rel[j] - w->mean) * (w->rel[j] - w->mean);
    w->sd = w->nseeds > 1 ? sqrt(q / (double)(w->nseeds - 1)) : 0.0;
    w->cert_lo_min = INFINITY;
    w->cert_hi_max = 0;
    w->worst_est_max = 0;
    for (size_t j = 0; j < w->nseeds; j++) {
        w->cert_lo_min = fmin(w->cert_lo_min, w->cert_lo[j]);
        w->cert_hi_max = fmax(w->cert_hi_max, w->cert_hi[j]);
        w->worst_est_max = fmax(w->worst_est_max, w->worst_est[j]);
    }
}

/* The rows: one standard student per opts.heads (default: the teacher's h),
 * then the fixed student (the teacher's shape). */
static int make_rows(ac_learn_t2_result *r, const ac_mh *V, const ac_learn_t2_opts *o,
                     ac_err *err)
{
    size_t d = V->d;
    size_t list[AC_LEARN_T2_MAX_HEADS], nl = o->nheads;
    if (nl > AC_LEARN_T2_MAX_HEADS)
        return ac_err_set_field(err, AC_EUSAGE, "student_heads", "student_heads: at most %d "
                                "head counts", AC_LEARN_T2_MAX_HEADS);
    if (nl)
        memcpy(list, o->heads, nl * sizeof *list);
    else
        list[0] = V->h, nl = 1;
    for (size_t i = 0; i < nl; i++)
        if (list[i] == 0 || d % list[i])
            return ac_err_set_field(err, AC_EUSAGE, "student_heads", "%zu heads do not divide "
                                    "d = %zu: a standard student has head size d/h'", list[i], d);
    r->rows = calloc(nl + 1, sizeof *r->rows);
    if (!r->rows)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i <= nl; i++) {
        ac_learn_t2_row *w = &r->rows[r->nrows++];
        int st = row_alloc(w, o->seeds, o->steps, err);
        if (st)
            return st;
        w->fixed = i == nl;
        w->heads = w->fixed ? V->h : list[i];
        w->hs = w->fixed ? V->hs : d / list[i];
        w->expect = w->fixed ? AC_HC_YES : ac_headcount_answer(&r->hc, w->heads);
    }
    return AC_OK;
}

/* The comparison with the fixed student: whether a layer of a shape can
 * represent g_V is a question of existence, so the best seed is compared
 * with the fixed student's best seed (a seed that trains badly does not
 * refute it). */
static void compare_rows(ac_learn_t2_result *r)
{
    const ac_learn_t2_row *f = NULL;
    for (size_t i = 0; i < r->nrows; i++)
        if (r->rows[i].fixed)
            f = &r->rows[i];
    for (size_t i = 0; i < r->nrows; i++) {
        ac_learn_t2_row *w = &r->rows[i];
        w->ratio = f && f->mean > 0 ? w->mean / f->mean : NAN;
        w->outcome = AC_LEARN_T2_NONE;
        if (w->fixed || !f || w->expect == AC_HC_NOT_DECIDED || isnan(w->min) || isnan(f->min))
            continue;
        int close = w->min <= AC_LEARN_T2_MATCH_FACTOR * f->min;
        w->outcome = (w->expect == AC_HC_YES) == close ? AC_LEARN_T2_AGREES
                                                       : AC_LEARN_T2_DISAGREES;
    }
}

static int check_opts(const ac_learn_t2_opts *o, ac_err *err)
{
    if (o->n < 2)
        return ac_err_set_field(err, AC_EUSAGE, "n", "the students need n >= 2 tokens (n = %zu)",
                                o->n);
    if (o->seeds < 1 || o->steps < 1 || o->batch < 1 || o->samples < 1)
        return ac_err_set(err, AC_EUSAGE, "the students need at least one seed, step, input "
                          "per batch and held-out input");
    if (!(o->lr > 0) || !isfinite(o->lr))
        return ac_err_set_field(err, AC_EUSAGE, "lr", "lr must be positive and finite");
    return AC_OK;
}

int ac_learn_t2_students(ac_learn_t2_result *res, const ac_mh *V, const ac_learn_t2_opts *o,
                         ac_err *err)
{
    experiment e = {V, o, res, NULL};
    int st;
    memset(res, 0, sizeof *res);
    res->n = o->n;
    double t0 = ac_seconds();
    if ((st = check_opts(o, err)) || (st = ac_t2_hypotheses(&res->hyp, V, o->n, err)) ||
        (st = ac_headcount_decide(&res->hc, V, o->n, err)) || (st = make_rows(res, V, o, err)) ||
        (st = heldout_init(&e, err)))
        goto out;
    size_t done = 0, total = res->nrows * o->seeds;
    for (size_t i = 0; i < res->nrows && !st; i++) {
        for (size_t j = 0; j < o->seeds && !st; j++) {
            st = train_one(&res->rows[i], j, &e, err);
            if (!st && o->progress)
                o->progress(o->progress_ctx, ++done, total);
        }
        row_stats(&res->rows[i]);
    }
    if (!st)
        compare_rows(res);
out:
    for (size_t i = 0; e.G && i < res->samples; i++)
        ac_mat_free(&e.G[i]);
    free(e.G);
    res->seconds = ac_seconds() - t0;
    return st;
}

void ac_learn_t2_result_free(ac_learn_t2_result *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->nrows; i++)
        row_free(&res->rows[i]);
    free(res->rows);
    for (size_t i = 0; res->X && i < res->samples; i++)
        ac_mat_free(&res->X[i]);
    free(res->X);
    ac_headcount_free(&res->hc);
    memset(res, 0, sizeof *res);
}
