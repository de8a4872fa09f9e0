/* t1_transition.c — Theorem 1 on learned weights (attncheck/learned.h,
 * doc/mathematics.md §6.5): for each dk of a range, train one head on
 * (X, P) and certify it, run the exact criterion for the same dk, and
 * compare the two transitions. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/head.h"
#include "attncheck/learned.h"
#include "attncheck/theorem1.h"
#include "attncheck/train.h"

/* Train the head of size dk on Xu (X, or [X; 1'] with a bias) under the
 * mask omega of o->mask (every pair visible for a bias alone; NULL: the
 * unmasked class), fit-p's defaults: BFGS, evaluated at every step
 * so that the best iterate is exact; keep its weights in row and certify
 * them: ac_head_certify for the unmasked head without bias (paper 1's
 * class), else the masked certification of given weights that rep-theorem
 * --wq --wk --mask/--bias runs (ac_head_certify_masked on Xu and omega,
 * every pair visible for a bias alone). */
static int learn_head(const ac_mat *Xu, const ac_mat *P, const unsigned char *omega,
                      int masked_class, size_t dk, uint64_t seed, const ac_learn_t1_opts *o,
                      ac_learn_t1_row *row, ac_err *err)
{
    ac_train_config c;
    ac_trainer tr;
    ac_step_info si;
    ac_eval_info ev;
    ac_mat Xc = {0}, Pc = {0};
    ac_train_config_default(&c, AC_TASK_FIT_P);
    c.fitp_dk = dk;
    c.seed = seed;
    c.eval_every = 1;
    memset(&si, 0, sizeof si);
    /* trained under the mask; a bias alone trains the unmasked head on Xu */
    int st = ac_trainer_init_fitp_masked(&tr, &c, Xu, NULL, P, NULL, o->mask ? omega : NULL, err);
    while (!st && tr.step < tr.cfg.steps && !si.done) {
        st = ac_trainer_step(&tr, &si, err);
        if (!st)
            st = ac_trainer_eval(&tr, &ev, err);
    }
    if (!st) {
        row->steps = tr.step;
        row->max_steps = tr.cfg.steps;
        row->stalled = si.done;
        if (!ac_trainer_fitp_best(&tr, &row->best_step, &row->dev, &row->kl))
            row->dev = row->kl = NAN;
        st = ac_trainer_fitp_instance(&tr, &Xc, &Pc, &row->Wq, &row->Wk, err);
    }
    if (!st && masked_class)
        st = ac_head_certify_masked(&row->learned, Xu, &row->Wk, &row->Wq, P, omega, o->tol,
                                    &o->sched, err);
    else if (!st)
        st = ac_head_certify(&row->learned, Xu, &row->Wk, &row->Wq, P, o->tol, &o->sched, err);
    ac_trainer_free(&tr);
    ac_mat_free(&Xc);
    ac_mat_free(&Pc);
    return st;
}

int ac_learn_t1_row_run(ac_learn_t1_row *row, const ac_mat *X, const ac_mat *P, size_t dk,
                        const ac_learn_t1_opts *lo, ac_err *err)
{
    ac_t1_result r;
    ac_t1_opts o;
    ac_mat Xb = {0};
    unsigned char *omega = NULL;
    size_t n = X->cols;
    int masked_class = lo->mask || lo->bias, st = AC_OK;
    memset(row, 0, sizeof *row);
    memset(&r, 0, sizeof r);
    row->dk = dk;
    row->thr_lo = row->thr_hi = -1;
    snprintf(row->wq_name, sizeof row->wq_name, "Wq_dk%zu", dk);
    snprintf(row->wk_name, sizeof row->wk_name, "Wk_dk%zu", dk);
    /* the exact check first: it validates the instance (on its mask) */
    double t0 = ac_seconds();
    ac_t1_opts_default(&o);
    o.dk = dk;
    o.tol = lo->tol;
    o.sched = lo->sched;
    o.optimize = lo->optimize;
    o.mask = lo->mask;
    o.bias = lo->bias;
    st = ac_t1_check(&r, X, P, &o, err);
    row->exact_seconds = ac_seconds() - t0;
    if (!st) {
        row->verdict = r.verdict;
        row->exact = r.exact;
        row->dist_lo = r.dist_lo;
        row->dist_hi = r.dist_hi;
        row->rank = r.rank;
        row->thr_lo = r.threshold.none ? -1 : r.threshold.lo;
        row->thr_hi = r.threshold.hi;
        row->thr_exact = r.threshold.exact && !r.threshold.none;
    }
    ac_t1_result_free(&r);
    if (!st && masked_class && !(omega = malloc(n > 0 ? n * n : 1)))
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
    if (!st && masked_class)
        st = ac_t1_mask_support(omega, n, lo->mask, err);
    if (!st && lo->bias)
        st = ac_t1_append_ones(&Xb, X, err);
    /* the starts: seeds seed, seed + 1, ... until one is within tol; the row
     * keeps the head of least certified error (any head is a valid witness,
     * so choosing among them costs no soundness) */
    t0 = ac_seconds();
    size_t starts = lo->starts > 1 ? lo->starts : 1;
    ac_learn_t1_row cand;
    for (size_t k = 0; !st && k < starts && !(k > 0 && row->learned.verdict == AC_PROVED); k++) {
        memset(&cand, 0, sizeof cand);
        st = learn_head(lo->bias ? &Xb : X, P, omega, masked_class, dk, lo->seed + k, lo, &cand,
                        err);
        if (!st && (k == 0 || cand.learned.hi < row->learned.hi)) {
            ac_learn_t1_row_free(row);
            row->steps = cand.steps;
            row->max_steps = cand.max_steps;
            row->best_step = cand.best_step;
            row->stalled = cand.stalled;
            row->dev = cand.dev;
            row->kl = cand.kl;
            row->learned = cand.learned;
            row->Wq = cand.Wq;
            row->Wk = cand.Wk;
            row->start = k;
        } else {
            ac_learn_t1_row_free(&cand);
        }
        row->starts = k + 1;
    }
    row->learn_seconds = ac_seconds() - t0;
    free(omega);
    ac_mat_free(&Xb);
    return st;
}

void ac_learn_t1_row_free(ac_learn_t1_row *row)
{
    if (!row)
        return;
    ac_mat_free(&row->Wq);
    ac_mat_free(&row->Wk);
}

/* ---- the comparison -------------------------------------------------------------- */

void ac_learn_t1_summarise(ac_learn_t1_summary *s, const ac_learn_t1_row *rows, size_t nrows,
                           size_t n)
{
    memset(s, 0, sizeof *s);
    s->learned_from = s->criterion_from = s->missed = s->open = s->inconsistent = -1;
    s->rank = nrows ? rows[0].rank : -1;
    s->n = n;
    s->thr_lo = nrows ? rows[0].thr_lo : -1;
    s->thr_hi = nrows ? rows[0].thr_hi : -1;
    s->thr_exact = nrows ? rows[0].thr_exact : 0;
    int agree = 1;
    for (size_t i = 0; i < nrows; i++) {
        const ac_learn_t1_row *r = &rows[i];
        int lp = r->learned.verdict == AC_PROVED;
        if (lp && s->learned_from < 0)
            s->learned_from = (long)r->dk;
        if (r->verdict != AC_REFUTED && s->criterion_from < 0)
            s->criterion_from = (long)r->dk;
        /* soundness: the learned head's error is at least the distance */
        if (r->learned.hi < r->dist_lo && s->inconsistent < 0)
            s->inconsistent = (long)r->dk;
        if (r->verdict == AC_PROVED && !lp && s->missed < 0)
            s->missed = (long)r->dk;
        if (!lp && r->verdict != AC_REFUTED) {
            agree = 0;
            if (r->verdict != AC_PROVED && s->open < 0)
                s->open = (long)r->dk;
        }
    }
    s->outcome = s->missed >= 0 ? AC_REFUTED : agree ? AC_PROVED : AC_UNDECIDED;
}

const char *ac_learn_t1_verdict_name(const ac_learn_t1_summary *s)
{
    return s->inconsistent >= 0 ? "INCONSISTENT" : ac_verdict_name(s->outcome);
}

/* %.3g with inf and nan spelled out */
static const char *num3(char *buf, size_t n, double x)
{
    if (x != x)
        snprintf(buf, n, "nan");
    else if (isinf(x))
        snprintf(buf, n, x > 0 ? "inf" : "-inf");
    else
        snprintf(buf, n, "%.3g", x);
    return buf;
}

void ac_learn_t1_sentence(char *buf, size_t len, const ac_learn_t1_summary *s, double tol)
{
    char t[32], pred[160] = "";
    num3(t, sizeof t, tol);
    if ((s->masked || s->bias) && s->thr_exact)
        snprintf(pred, sizeof pred, " The %s threshold of exact representability "
                 "(doc/mathematics.md §3.8) is dk = %ld.",
                 s->masked ? "masked" : "biased", s->thr_lo);
    else if ((s->masked || s->bias) && s->thr_hi >= 0)
        snprintf(pred, sizeof pred, " The %s threshold of exact representability "
                 "(doc/mathematics.md §3.8) is certified in [%ld, %ld].",
                 s->masked ? "masked" : "biased", s->thr_lo < 0 ? 0 : s->thr_lo, s->thr_hi);
    else if ((s->masked || s->bias) && s->thr_lo > 0)
        snprintf(pred, sizeof pred, " The %s threshold of exact representability "
                 "(doc/mathematics.md §3.8) is certified to be at least %ld.",
                 s->masked ? "masked" : "biased", s->thr_lo);
    else if (s->rank >= 0 && (size_t)s->rank == s->n)
        snprintf(pred, sizeof pred, " For rank X = n = %zu, doc/mathematics.md §3.5 puts exact "
                 "representability at dk >= n - 1 = %zu (generic P).", s->n, s->n - 1);
    if (s->inconsistent >= 0) {
        snprintf(buf, len, "INCONSISTENT: at dk = %ld the learned head's certified error is below "
                 "the certified lower bound on the distance; one of the two certificates is "
                 "wrong (please report).", s->inconsistent);
        return;
    }
    char lf[64], cf[64];
    if (s->learned_from >= 0)
        snprintf(lf, sizeof lf, "from dk = %ld", s->learned_from);
    else
        snprintf(lf, sizeof lf, "at no dk of the range");
    if (s->criterion_from >= 0)
        snprintf(cf, sizeof cf, "from dk = %ld", s->criterion_from);
    else
        snprintf(cf, sizeof cf, "at no dk of the range");
    if (s->outcome == AC_PROVED && s->learned_from < 0)
        snprintf(buf, len, "No learned head reaches max|Softmax - P| <= %s, and the exact "
                 "criterion refutes C(tol) at every dk of the range: they agree, with no "
                 "transition in the range.%s", t, pred);
    else if (s->outcome == AC_PROVED)
        snprintf(buf, len, "Learned heads reach max|Softmax - P| <= %s %s, exactly where the exact "
                 "criterion stops refuting C(tol) (%s): the transition appears where the "
                 "criterion puts it.%s", t, lf, cf, pred);
    else if (s->outcome == AC_REFUTED)
        snprintf(buf, len, "Learned heads reach tol %s %s, but the exact criterion proves C(tol) "
                 "already at dk = %ld, where training did not get within tol: the learned "
                 "transition does NOT appear where the criterion puts it (%s).%s", t, lf,
                 s->missed, cf, pred);
    else
        snprintf(buf, len, "Learned heads reach tol %s %s; the exact criterion stops refuting "
                 "C(tol) %s, and at dk = %ld neither training nor the criterion decides it: the "
                 "transitions cannot be compared there.%s", t, lf, cf, s->open, pred);
}

/* ---- the experiment -------------------------------------------------------------------- */

int ac_learn_t1_transition(ac_learn_t1_result *res, const ac_mat *X, const char *xname,
                           const ac_mat *P, const char *pname, const ac_learn_t1_opts *o,
                           ac_err *err)
{
    memset(res, 0, sizeof *res);
    int st = AC_OK;
    if (!o->mask) {
        st = ac_t1_validate(X, xname, P, pname, NULL, 0, "D0", 1, err);
    } else { /* on its support, the messages naming the files */
        size_t n = X->cols;
        unsigned char *om = malloc(n > 0 ? n * n : 1);
        if (!om)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        if (!(st = ac_t1_mask_support(om, n, o->mask, err)))
            st = ac_t1_validate_masked(X, xname, P, pname, om,
                                       o->mask->name ? o->mask->name : "mask", 1, err);
        free(om);
    }
    if (st)
        return st;
    if (o->dk_lo < 1 || o->dk_lo > o->dk_hi)
        return ac_err_set(err, AC_EUSAGE, "the head sizes %zu:%zu are not a range of sizes >= 1",
                          o->dk_lo, o->dk_hi);
    size_t nrows = o->dk_hi - o->dk_lo + 1;
    if (!(res->rows = calloc(nrows, sizeof *res->rows)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    double t0 = ac_seconds();
    for (size_t i = 0; i < nrows; i++) {
        res->nrows = i + 1;
        if ((st = ac_learn_t1_row_run(&res->rows[i], X, P, o->dk_lo + i, o, err)))
            return st;
        if (o->progress)
            o->progress(o->progress_ctx, i + 1, nrows);
    }
    ac_learn_t1_summarise(&res->s, res->rows, nrows, X->cols);
    res->s.masked = o->mask != NULL;
    res->s.bias = o->bias;
    res->seconds = ac_seconds() - t0;
    return AC_OK;
}

void ac_learn_t1_result_free(ac_learn_t1_result *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->nrows; i++)
        ac_learn_t1_row_free(&res->rows[i]);
    free(res->rows);
    memset(res, 0, sizeof *res);
}
