/* rep_learn.c — `attncheck rep-theorem --learn` (rep_learn.h): for each dk
 * of a range, train one head on (X, P) and certify it, run the exact
 * criterion for the same dk, compare the two transitions; the report row.
 * The table, JSON, CSV and plot are written by rep_learn_out.c. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncheck/theorem1.h"
#include "attncheck/train.h"
#include "rep_learn_impl.h"
#include "json_contract.h"

/* ---- options ----------------------------------------------------------------- */

int rep_learn_option(rep_learn_opts *o, const char *name, const char *val)
{
    if (strcmp(name, "learn") == 0) {
        o->on = 1;
    } else if (strcmp(name, "dk-range") == 0) {
        const char *colon = strchr(val, ':');
        char a[32];
        size_t la = colon ? (size_t)(colon - val) : 0;
        if (!colon || la == 0 || la >= sizeof a || !colon[1])
            return cli_usage("--dk-range: '%s' is not A:B (e.g. 1:9)", val);
        memcpy(a, val, la);
        a[la] = 0;
        int st = cli_parse_size("--dk-range", a, 1, REP_LEARN_MAX_DK, &o->dk_lo);
        if (!st)
            st = cli_parse_size("--dk-range", colon + 1, 1, REP_LEARN_MAX_DK, &o->dk_hi);
        if (st)
            return st;
        if (o->dk_lo > o->dk_hi)
            return cli_usage("--dk-range %s: A must not exceed B", val);
        o->have_range = 1;
    } else if (strcmp(name, "csv") == 0) {
        o->csv = val;
    } else if (strcmp(name, "plot") == 0) {
        if (!cli_plot_terminal(val))
            return cli_usage("--plot %s: the file name must end in .svg, .png or .pdf", val);
        o->plot = val;
    }
    return AC_OK;
}

int rep_learn_check(const rep_learn_opts *o, const char *conflict)
{
    if (!o->on) {
        if (o->have_range)
            return cli_usage("--dk-range needs --learn");
        if (o->csv)
            return cli_usage("--csv needs --learn");
        if (o->plot)
            return cli_usage("--plot needs --learn");
        return AC_OK;
    }
    if (conflict)
        return cli_usage("--learn cannot be combined with %s%s", conflict,
                         strcmp(conflict, "--dk") == 0 ? " (use --dk-range A:B)" : "");
    return AC_OK;
}

/* ---- one head size ----------------------------------------------------------- */

/* Train the head of size dk (fit-p's defaults: BFGS, evaluated at every
 * step so that the best iterate is exact), certify its weights. */
static int learn_head(const ac_mat *X, const ac_mat *P, size_t dk, uint64_t seed, double tol,
                      const ac_schedule *sched, learn_row *row, ac_err *err)
{
    ac_train_config c;
    ac_trainer tr;
    ac_step_info si;
    ac_eval_info ev;
    ac_mat Xc = {0}, Pc = {0}, Wq = {0}, Wk = {0};
    ac_train_config_default(&c, AC_TASK_FIT_P);
    c.fitp_dk = dk;
    c.seed = seed;
    c.eval_every = 1;
    memset(&si, 0, sizeof si);
    int st = ac_trainer_init_fitp(&tr, &c, X, P, err);
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
        st = ac_trainer_fitp_instance(&tr, &Xc, &Pc, &Wq, &Wk, err);
    }
    if (!st)
        st = ac_head_certify(&row->learned, X, &Wk, &Wq, P, tol, sched, err);
    ac_trainer_free(&tr);
    ac_mat_free(&Xc);
    ac_mat_free(&Pc);
    ac_mat_free(&Wq);
    ac_mat_free(&Wk);
    return st;
}

int rep_learn_row(const ac_mat *X, const ac_mat *P, size_t dk, uint64_t seed, double tol,
                  const ac_schedule *sched, int optimize, learn_row *row, ac_err *err)
{
    ac_t1_result r;
    ac_t1_opts o;
    memset(row, 0, sizeof *row);
    memset(&r, 0, sizeof r);
    row->dk = dk;
    double t0 = ac_seconds();
    int st = learn_head(X, P, dk, seed, tol, sched, row, err);
    row->learn_seconds = ac_seconds() - t0;
    if (st)
        return st;
    t0 = ac_seconds();
    ac_t1_opts_default(&o);
    o.dk = dk;
    o.tol = tol;
    o.sched = *sched;
    o.optimize = optimize;
    st = ac_t1_check(&r, X, P, &o, err);
    row->exact_seconds = ac_seconds() - t0;
    if (!st) {
        row->verdict = r.verdict;
        row->exact = r.exact;
        row->dist_lo = r.dist_lo;
        row->dist_hi = r.dist_hi;
        row->rank = r.rank;
    }
    ac_t1_result_free(&r);
    return st;
}

/* ---- the comparison -------------------------------------------------------------- */

void rep_learn_summarise(const learn_row *rows, size_t nrows, size_t n, learn_summary *s)
{
    memset(s, 0, sizeof *s);
    s->learned_from = s->criterion_from = s->missed = s->open = s->inconsistent = -1;
    s->rank = nrows ? rows[0].rank : -1;
    s->n = n;
    int agree = 1;
    for (size_t i = 0; i < nrows; i++) {
        const learn_row *r = &rows[i];
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

/* The sentences of the comparison (text, JSON "summary"). */
void rep_learn_sentence(char *buf, size_t len, const learn_summary *s, double tol)
{
    char t[32], pred[160] = "";
    cli_num(t, sizeof t, tol);
    if (s->rank >= 0 && (size_t)s->rank == s->n)
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

/* ---- the run ------------------------------------------------------------------------ */

int rep_learn_run(const rep_learn_opts *o, const ac_mat *X, const ac_mat *P,
                  const char *xname, const char *pname, const char *instance, uint64_t seed,
                  double tol, const cli_common *common, int optimize)
{
    size_t n = X->cols;
    size_t lo = o->have_range ? o->dk_lo : 1, hi = o->have_range ? o->dk_hi : n + 1;
    size_t nrows = hi - lo + 1;
    learn_row *rows = calloc(nrows, sizeof *rows);
    rep_learn_files files;
    ac_err err;
    int st;
    ac_err_clear(&err);
    if ((st = ac_t1_validate(X, xname, P, pname, NULL, 0, "D0", 1, &err))) {
        free(rows);
        return cli_fail_err(&err);
    }
    if (!rows)
        return cli_fail(AC_EINTERNAL, "out of memory");
    if ((st = rep_learn_files_open(o, &files))) {
        free(rows);
        return st;
    }
    ac_schedule sched = cli_schedule(common);
    double t0 = ac_seconds();
    for (size_t i = 0; i < nrows; i++) {
        if ((st = rep_learn_row(X, P, lo + i, seed, tol, &sched, optimize, &rows[i], &err))) {
            st = cli_fail_err(&err);
            rep_learn_files_abort(&files);
            free(rows);
            return st;
        }
        if (isatty(2) && !common->json)
            fprintf(stderr, "\r  dk %zu/%zu done ", lo + i, hi);
    }
    if (isatty(2) && !common->json)
        fprintf(stderr, "\r%*s\r", 30, "");
    learn_summary s;
    rep_learn_summarise(rows, nrows, n, &s);
    learn_report rep = {o, instance, X->rows, n, seed, tol, rows, nrows, &s,
                        ac_seconds() - t0};
    st = rep_learn_write(&rep, &files, common->json);
    free(rows);
    if (st)
        return st;
    if (s.inconsistent >= 0)
        return AC_EINTERNAL;
    return cli_exit_of((ac_verdict)s.outcome);
}

/* ---- report row ------------------------------------------------------------------------ */

/* The learned transition on a small instance: n = d = 6 (rank X = n),
 * Dirichlet P, dk = n - 2 and n - 1.  The row's verdict is the comparison's
 * (PROVED: learning reaches tol = 1e-6 at dk = n - 1 and the exact
 * criterion refutes C(tol) at dk = n - 2).  Measured: PROVED for seeds 1..30
 * (see doc/mathematics.md §6.5). */
void report_rows_learn(cli_report *rep)
{
    cli_report_row *row = cli_report_add(rep);
    ac_mat X = {0}, P = {0};
    ac_err err;
    learn_row rows[2];
    const size_t n = 6;
    const double tol = 1e-6;
    if (!row)
        return;
    snprintf(row->claim, sizeof row->claim, "Thm 1 learned: transition dk = n-1");
    snprintf(row->instance, sizeof row->instance, "d = n = %zu, Dirichlet P, dk = %zu, %zu", n,
             n - 2, n - 1);
    row->expected = AC_PROVED;
    row->verdict = AC_UNDECIDED;
    ac_err_clear(&err);
    double t0 = ac_seconds();
    ac_schedule sched = ac_schedule_upto(512);
    int st = ac_t1_generate(&X, &P, n, n, rep->seed, &err);
    for (size_t i = 0; !st && i < 2; i++)
        st = rep_learn_row(&X, &P, n - 2 + i, rep->seed, tol, &sched, 200, &rows[i], &err);
    row->seconds = ac_seconds() - t0;
    if (st) {
        cli_report_fail(row, st, &err, NULL);
    } else {
        learn_summary s;
        rep_learn_summarise(rows, 2, n, &s);
        row->verdict = s.inconsistent >= 0 ? AC_REFUTED : (ac_verdict)s.outcome;
        snprintf(row->bound, sizeof row->bound, "dk=%zu: %.2g", n - 1, rows[1].learned.hi);
        cli_report_bounds(row, "max|Softmax - P| of the head learned at dk = n - 1",
                          rows[1].learned.lo, rows[1].learned.hi);
        snprintf(row->detail, sizeof row->detail,
                 "dk = %zu: learned error %.3g >= certified lower bound %.3g (%s); dk = %zu: "
                 "learned error %.3g (%s at tol %g)", n - 2, rows[0].learned.hi, rows[0].dist_lo,
                 ac_verdict_name(rows[0].verdict), n - 1, rows[1].learned.hi,
                 ac_verdict_name(rows[1].learned.verdict), tol);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
}
