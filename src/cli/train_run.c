/* train_run.c — the run of `attncheck train`: the training loop, as the
 * main() of llm.c's train_gpt2.c (step, evaluate at intervals, log,
 * checkpoint), --dump-grads, the certified verdict of fit-p on the learned
 * weights, the summary (text or --json), and the report rows. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "attncheck/theorem1.h"
#include "attncheck/fileio.h"
#include "cli.h"
#include "plot.h"
#include "train_cli.h"
#include "json_contract.h"

/* ---- fit-p certificate ---- */

static int fitp_certify(const ac_trainer *tr, double tol, long max_prec, ac_cert *cert,
                        ac_err *err)
{
    ac_mat X = {0}, P = {0}, Wq = {0}, Wk = {0};
    int st = ac_trainer_fitp_instance(tr, &X, &P, &Wq, &Wk, err);
    if (!st) {
        ac_schedule s = ac_schedule_upto(max_prec);
        st = ac_head_certify(cert, &X, &Wk, &Wq, &P, tol, &s, err);
        strncat(cert->quantity, " of the learned weights",
                sizeof cert->quantity - strlen(cert->quantity) - 1);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&Wq);
    ac_mat_free(&Wk);
    return st;
}

/* ---- the command ---- */

/* What a run has produced so far. */
typedef struct {
    train_progress rs;
    train_eval_rec *evals;
    size_t nevals, maxe;
    double loss_sum;          /* training losses since the last evaluation */
    size_t loss_n;
    ac_atomic plot;           /* --plot: the staged file */
    char gpbuf[4096];
    const char *gp;           /* the gnuplot program */
    ac_step_info si;          /* the last step */
    ac_eval_info last_ev;     /* the last evaluation */
    size_t last;              /* the step to stop after */
    int nthreads;
} run_state;

/* The options that define a run (json_contract.h). */
static void train_json_parameters(ac_json *j, const ac_train_config *c)
{
    cli_json_parameters_begin(j, c->seed);
    ac_json_kv_string(j, "task", ac_task_name(c->task));
    ac_json_kv_string(j, "optimizer", ac_train_optimizer_name(c->optimizer));
    ac_json_kv_int(j, "steps", (long long)c->steps);
    ac_json_kv_number(j, "lr", c->lr);
    cli_json_parameters_end(j);
}

/* --dump-grads: the weights, the next batch, its loss and the gradients. */
static int dump_grads(ac_trainer *tr, const train_run_opts *o)
{
    ac_err err;
    double loss;
    ac_err_clear(&err);
    if (ac_trainer_dump_grads(tr, o->dump, &loss, &err))
        return cli_fail_err(&err);
    if (o->json) {
        ac_json *j = cli_json_stdout();
        cli_json_envelope_begin(j, "train", NULL, NULL);
        train_json_parameters(j, &tr->cfg);
        cli_json_seconds(j, cli_json_elapsed());
        ac_json_kv_string(j, "dump", o->dump);
        ac_json_kv_int(j, "step", (long long)tr->step + 1);
        ac_json_kv_number(j, "loss", loss);
        ac_json_kv_int(j, "params", (long long)tr->model.nparams);
        ac_json_end_object(j);
        return cli_json_finish(j);
    }
    printf("wrote %s: weights, the batch of step %zu, loss %.17g and %zu gradients\n", o->dump,
           tr->step + 1, loss, tr->model.ntensors);
    return AC_OK;
}

/* Steps until run->last: evaluate every eval_every steps and at the last,
 * log, draw, save every save_every steps. */
static int train_loop(ac_trainer *tr, const train_run_opts *o, run_state *run)
{
    const ac_train_config *c = &tr->cfg;
    train_progress *rs = &run->rs;
    ac_step_info *si = &run->si;
    ac_err err;
    ac_err_clear(&err);
    while (tr->step < run->last) {
        double t0 = ac_seconds();
        if (ac_trainer_step(tr, si, &err)) {
            if (rs->bar)
                fputc('\n', stderr);
            return cli_fail_err(&err);
        }
        double t1 = ac_seconds();
        rs->tokens += (double)si->tokens;
        if (isfinite(si->loss)) {
            run->loss_sum += si->loss;
            run->loss_n++;
        }
        ac_eval_info ev, *evp = NULL;
        if (si->done) /* BFGS: no further progress; evaluate and stop here */
            run->last = si->step;
        if (si->step % c->eval_every == 0 || si->step == run->last) {
            if (ac_trainer_eval(tr, &ev, &err))
                return cli_fail_err(&err);
            evp = &ev;
            run->last_ev = ev;
            if (run->nevals < run->maxe)
                run->evals[run->nevals++] = (train_eval_rec){
                    si->step, run->loss_n ? run->loss_sum / (double)run->loss_n : NAN, ev};
            run->loss_sum = 0;
            run->loss_n = 0;
        }
        double tps = t1 > t0 ? (double)si->tokens / (t1 - t0) : 0;
        train_log_row(rs, si, evp, tps, ac_seconds() - rs->t_start);
        if (evp && !o->quiet && !o->json) {
            train_clear_bar(rs);
            train_print_eval(tr, si, evp, rs->tokens / (ac_seconds() - rs->t_start));
        }
        /* an evaluation line cleared the bar: draw it again at once */
        train_draw_bar(rs, si, run->last, &run->last_ev, ac_seconds(), evp != NULL);
        if (o->save && o->save_every && si->step % o->save_every == 0 && si->step != run->last &&
            ac_trainer_save(tr, o->save, &err))
            return cli_fail_err(&err);
    }
    return AC_OK;
}

/* The summary as one JSON object. */
static int print_json(const ac_trainer *tr, const train_run_opts *o, const run_state *run,
                      const ac_cert *cert, double secs, double tps)
{
    const ac_train_config *c = &tr->cfg;
    const ac_eval_info *ev = &run->last_ev;
    ac_json *j = cli_json_stdout();
    cli_json_envelope_begin(j, "train", cert ? ac_verdict_name(cert->verdict) : NULL, cert);
    train_json_parameters(j, c);
    ac_json_kv_string(j, "task", ac_task_name(c->task));
    ac_json_kv_string(j, "data", ac_trainer_data_summary(tr));
    if (cert) {
        size_t bstep = 0;
        double bdev = NAN, bkl = NAN;
        ac_json_kv_string(j, "claim", "the learned head has max|Softmax - P| <= tol");
        ac_json_kv_string(j, "optimizer", ac_train_optimizer_name(c->optimizer));
        ac_json_kv_bool(j, "stopped_early", tr->step < c->steps && !o->have_stop);
        if (ac_trainer_fitp_best(tr, &bstep, &bdev, &bkl)) {
            ac_json_key(j, "best");
            ac_json_begin_object(j);
            ac_json_kv_int(j, "step", (long long)bstep);
            ac_json_kv_number(j, "maxdev", bdev);
            ac_json_kv_number(j, "kl", bkl);
            ac_json_end_object(j);
        }
        ac_json_kv_number(j, "tol", o->tol);
    }
    ac_json_kv_int(j, "params", (long long)tr->model.nparams);
    ac_json_kv_int(j, "step", (long long)tr->step);
    ac_json_kv_int(j, "steps", (long long)c->steps);
    ac_json_kv_number(j, "loss", run->si.loss);
    ac_json_kv_number(j, "eval_loss", ev->loss);
    if (!isnan(ev->accuracy))
        ac_json_kv_number(j, "eval_accuracy", ev->accuracy);
    if (!isnan(ev->maxdev))
        ac_json_kv_number(j, "eval_maxdev", ev->maxdev);
    if (!isnan(ev->rel_mse))
        ac_json_kv_number(j, "eval_rel_mse", ev->rel_mse);
    ac_json_kv_number(j, "tokens_per_s", tps);
    cli_json_seconds(j, secs);
    ac_json_kv_int(j, "threads", run->nthreads);
    if (o->save)
        ac_json_kv_string(j, "checkpoint", o->save);
    ac_json_key(j, "evals");
    ac_json_begin_array(j);
    for (size_t i = 0; i < run->nevals; i++) {
        const train_eval_rec *e = &run->evals[i];
        ac_json_begin_object(j);
        ac_json_kv_int(j, "step", (long long)e->step);
        ac_json_kv_number(j, "loss", e->ev.loss);
        if (!isnan(e->ev.accuracy))
            ac_json_kv_number(j, "accuracy", e->ev.accuracy);
        if (!isnan(e->ev.maxdev))
            ac_json_kv_number(j, "maxdev", e->ev.maxdev);
        if (!isnan(e->ev.rel_mse))
            ac_json_kv_number(j, "rel_mse", e->ev.rel_mse);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_end_object(j);
    return cli_json_finish(j);
}

/* The summary as text: "done", "checkpoint", "verdict". */
static void print_text(const ac_trainer *tr, const train_run_opts *o, const run_state *run,
                       const ac_cert *cert, double secs, double tps)
{
    const ac_eval_info *ev = &run->last_ev;
    if (tr->cfg.task == AC_TASK_FIT_P) /* the loss reported is KL(P || Softmax) */
        printf("done       %zu steps in %.2f s%s; KL %.3g", tr->step - run->rs.first_step, secs,
               run->si.done ? " (BFGS: no further progress)" : "", ev->loss);
    else
        printf("done       %zu steps in %.2f s, %.0f tokens/s; train loss %.6f, eval loss %.6f",
               tr->step - run->rs.first_step, secs, tps, run->si.loss, ev->loss);
    if (!isnan(ev->accuracy))
        printf(", accuracy %.4f", ev->accuracy);
    if (!isnan(ev->maxdev))
        printf(", max dev %.3g", ev->maxdev);
    if (!isnan(ev->rel_mse))
        printf(", relative MSE |f-g|^2/|g|^2 %.3g", ev->rel_mse);
    printf("\n");
    if (o->save)
        printf("checkpoint %s (step %zu)\n", o->save, tr->step);
    if (cert) {
        char b1[32], b2[32], b3[32], sb[64];
        size_t bstep;
        double bdev, bkl;
        if (ac_trainer_fitp_best(tr, &bstep, &bdev, &bkl))
            printf("best       step %zu: max|Softmax - P| %.3g, KL(P || Softmax) %.3g (the "
                   "weights certified)\n", bstep, bdev, bkl);
        printf("verdict    %s: max|Softmax - P| <= %s for the learned weights; certified "
               "[%s, %s], %s\n", ac_verdict_name(cert->verdict), cli_num(b1, sizeof b1, o->tol),
               cli_num(b2, sizeof b2, cert->lo), cli_num(b3, sizeof b3, cert->hi),
               cli_stage_name(sb, sizeof sb, cert->stage, cert->prec));
    }
}

/* After the loop: close the log, save, certify (fit-p), print; the exit
 * status. */
static int finish(ac_trainer *tr, const train_run_opts *o, run_state *run)
{
    train_progress *rs = &run->rs;
    ac_err err;
    ac_err_clear(&err);
    double secs = ac_seconds() - rs->t_start;
    if (rs->bar) {
        train_draw_bar(rs, &run->si, run->last, &run->last_ev, ac_seconds(), 1);
        fputc('\n', stderr);
    }
    if (rs->log) {
        int bad = ferror(rs->log) | (rs->log == stdout ? fflush(stdout) != 0
                                                       : fclose(rs->log) != 0);
        rs->log = NULL;
        if (bad)
            return cli_fail(AC_ECANTCREAT, "%s: cannot write", o->log);
    }
    if (o->save && ac_trainer_save(tr, o->save, &err))
        return cli_fail_err(&err);
    ac_cert cert, *cp = NULL;
    if (tr->cfg.task == AC_TASK_FIT_P) {
        if (fitp_certify(tr, o->tol, o->max_prec, &cert, &err))
            return cli_fail_err(&err);
        cp = &cert;
    }
    if (o->plot) { /* drawn into the staged file, committed when gnuplot succeeded */
        int gs = train_plot_write(run->gp, cli_plot_terminal(o->plot), fileno(run->plot.fp), tr,
                                  run->evals, run->nevals, rs->first_step, cp ? o->tol : NAN);
        if (gs != 0)
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)", o->plot,
                            run->gp, gs);
        if (ac_atomic_commit(&run->plot, &err))
            return cli_fail_err(&err);
    }
    double tps = secs > 0 ? rs->tokens / secs : 0;
    if (o->json) {
        int st = print_json(tr, o, run, cp, secs, tps);
        if (st)
            return st;
    } else {
        print_text(tr, o, run, cp, secs, tps);
    }
    return cp ? cli_exit_of(cp->verdict) : AC_OK;
}

/* Threads: OpenMP over chunks; BLAS single-threaded inside.  The count. */
static int set_threads(int threads)
{
    ac_blas_set_threads(1);
#ifdef _OPENMP
    if (threads > 0)
        omp_set_num_threads(threads);
    return omp_get_max_threads();
#else
    (void)threads;
    return 1;
#endif
}

/* --plot: gnuplot and the staged output file, before any step. */
static int plot_open(const train_run_opts *o, run_state *run)
{
    ac_err err;
    ac_err_clear(&err);
    run->gp = cli_find_gnuplot(run->gpbuf, sizeof run->gpbuf);
    if (!run->gp)
        return cli_fail(AC_ECANTCREAT,
                        "--plot %s: gnuplot not found (install it: apt-get install "
                        "gnuplot-nox, or set ATTNCHECK_GNUPLOT); nothing was trained",
                        o->plot);
    if (ac_atomic_open(&run->plot, o->plot, &err))
        return cli_fail_err(&err);
    return AC_OK;
}

/* Header, log, then the loop and its end. */
static int run_steps(ac_trainer *tr, const train_run_opts *o, run_state *run)
{
    const ac_train_config *c = &tr->cfg;
    train_progress *rs = &run->rs;
    int st;
    run->last = o->have_stop ? o->stop_at : c->steps;
    if (o->plot && (st = plot_open(o, run))) /* before anything is printed */
        return st;
    if (!o->quiet && !o->json)
        train_print_header(tr, run->last, run->nthreads);
    if (o->log && (st = train_log_open(rs, o)))
        return st;
    rs->bar = !o->quiet && isatty(2);
    rs->t_start = ac_seconds();
    rs->first_step = tr->step;
    run->maxe = (run->last - tr->step) / (c->eval_every ? c->eval_every : 1) + 2;
    run->evals = calloc(run->maxe, sizeof *run->evals);
    if (!run->evals)
        return cli_fail(AC_EINTERNAL, "out of memory");
    run->si.loss = NAN;
    run->si.step = tr->step;
    run->last_ev = (ac_eval_info){NAN, NAN, NAN, NAN, 0};
    if ((st = train_loop(tr, o, run)))
        return st;
    return finish(tr, o, run);
}

/* The log of a run that failed after opening it ends with a line saying
 * so, so that it never looks like the log of a complete run (CSV: a
 * comment line; JSON lines: {"incomplete": true, "exit_status": N}). */
static void mark_failed_log(const train_run_opts *o, const run_state *run, int st)
{
    if (!o->log || !(run->rs.t_start > 0) || st < AC_EUSAGE)
        return;
    int to_stdout = strcmp(o->log, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(o->log, "a");
    if (!f)
        return;
    if (run->rs.jsonl)
        fprintf(f, "{\"incomplete\": true, \"exit_status\": %d}\n", st);
    else
        fprintf(f, "# incomplete: the run failed (exit status %d)\n", st);
    if (to_stdout)
        fflush(stdout);
    else
        fclose(f);
}

int train_run(const train_run_opts *o, const ac_train_config *cfg)
{
    ac_trainer tr;
    ac_err err;
    run_state run;
    int st;
    memset(&tr, 0, sizeof tr);
    memset(&run, 0, sizeof run);
    ac_err_clear(&err);
    run.nthreads = set_threads(o->threads);
    char ck[PATH_MAX + 16];
    snprintf(ck, sizeof ck, "%s/config.json", o->resume ? o->resume : "");
    if ((st = cli_memory_check(cli_mem_train(cfg), o->resume ? AC_EDATA : AC_EUSAGE,
                               o->resume ? "%s: the model it describes" : "%s this model",
                               o->resume ? ck : "training")))
        return st;
    if (ac_trainer_init(&tr, cfg, &err) || (o->resume && ac_trainer_load(&tr, o->resume, &err)))
        st = cli_fail_err(&err);
    else if (o->dump)
        st = dump_grads(&tr, o);
    else
        st = run_steps(&tr, o, &run);
    if (st < AC_EUSAGE && cli_stdout_check()) /* the output is part of the run */
        st = AC_ECANTCREAT;
    if (run.rs.log && run.rs.log != stdout)
        fclose(run.rs.log);
    run.rs.log = NULL;
    mark_failed_log(o, &run, st);
    ac_atomic_abort(&run.plot);
    free(run.evals);
    ac_trainer_free(&tr);
    return st;
}

/* ---- report rows ---------------------------------------------------------- */

/* Theorem 1 on learned weights: AdamW trains one head of size dk = d = 2n on
 * a random instance (Gaussian X, Dirichlet P); the theorem says some head
 * reaches P exactly, so the claim "the learned head is within 1e-3 of P" is
 * expected to be PROVED (certified on the learned doubles, not assumed).
 * d = 2n keeps X well conditioned (sigma_min ~ sqrt(d) - sqrt(n)), which
 * plain gradient training needs: with d = n, Gaussian X is often nearly
 * singular and 3000 steps do not always get there (5 of 40 seeds). */
void report_rows_train(cli_report *rep)
{
    cli_report_row *row = cli_report_add(rep);
    ac_train_config c;
    ac_trainer tr;
    ac_err err;
    ac_cert cert;
    char b1[32];
    const double tol = 1e-3;
    if (!row)
        return;
    size_t n = 6;
    snprintf(row->claim, sizeof row->claim, "Thm 1 on learned weights (AdamW)");
    snprintf(row->instance, sizeof row->instance, "n = %zu, d = dk = %zu, 3000 steps", n, 2 * n);
    row->expected = AC_PROVED;
    row->verdict = AC_UNDECIDED;
    double t0 = ac_seconds();
    ac_err_clear(&err);
    ac_train_config_default(&c, AC_TASK_FIT_P);
    c.optimizer = AC_OPT_ADAMW; /* this row is about AdamW; BFGS has the learn row */
    c.fitp_n = n;
    c.fitp_d = 2 * n;
    c.seed = rep->seed;
    int st = ac_trainer_init(&tr, &c, &err);
    for (size_t s = 0; !st && s < tr.cfg.steps; s++)
        st = ac_trainer_step(&tr, NULL, &err);
    if (!st)
        st = fitp_certify(&tr, tol, 512, &cert, &err);
    row->seconds = ac_seconds() - t0;
    if (st) {
        cli_report_fail(row, st, &err, train_flags);
    } else {
        row->verdict = cert.verdict;
        cli_report_bounds(row, cert.quantity, cert.lo, cert.hi);
        snprintf(row->bound, sizeof row->bound, "dev <= %s", cli_num(b1, sizeof b1, cert.hi));
        snprintf(row->detail, sizeof row->detail,
                 "learned Wq, Wk certified: max|Softmax - P| in [%.3g, %.3g] (tol %g)", cert.lo,
                 cert.hi, tol);
    }
    ac_trainer_free(&tr);
}
