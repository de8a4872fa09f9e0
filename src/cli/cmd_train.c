/* cmd_train.c — `attncheck train`: train the attention stack of nn.h on a
 * task and write checkpoints.  The options, the configuration, the run
 * (checkpoints, fit-p's certificate) and the JSON result are the library's
 * (src/commands/train.c); this file draws what the run reports through
 * its hooks (the header, the progress bar, the evaluation lines, --log),
 * draws --plot and prints the text summary. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncheck/commands.h"
#include "attncheck/json.h"
#include "attncheck/fileio.h"
#include "cli.h"
#include "plot.h"
#include "train_cli.h"

/* What the program shows and writes while the library trains. */
typedef struct {
    const ac_train_request *q;
    train_progress rs;
    int started, ended;  /* the start and end hooks ran */
    ac_atomic plot;      /* --plot: the staged file */
    char gpbuf[4096];
    const char *gp;      /* the gnuplot program */
} train_view;

/* --plot: gnuplot and the staged output file, before anything is printed. */
static int plot_open(train_view *v, ac_err *err)
{
    v->gp = cli_find_gnuplot(v->gpbuf, sizeof v->gpbuf);
    if (!v->gp)
        return ac_err_set(err, AC_ECANTCREAT,
                          "--plot %s: gnuplot not found (install it: apt-get install "
                          "gnuplot-nox, or set ATTNCHECK_GNUPLOT); nothing was trained",
                          v->q->plot);
    return ac_atomic_open(&v->plot, v->q->plot, err);
}

/* --log's format: --log-format, else JSON lines for a name ending in .jsonl */
static int log_jsonl(const ac_train_request *q)
{
    size_t n = strlen(q->log);
    if (q->have_log_format)
        return q->log_format == 1;
    return n > 6 && strcmp(q->log + n - 6, ".jsonl") == 0;
}

static int on_start(void *ctx, const ac_trainer *tr, size_t last, int threads, ac_err *err)
{
    train_view *v = ctx;
    const ac_train_request *q = v->q;
    int st;
    if (q->plot && (st = plot_open(v, err)))
        return st;
    if (!q->quiet && !q->json)
        train_print_header(tr, last, threads);
    if (q->log && (st = train_log_open(&v->rs, q->log, log_jsonl(q), q->resume != NULL, err)))
        return st;
    v->rs.bar = !q->quiet && isatty(2);
    v->rs.t_start = ac_seconds();
    v->started = 1;
    return AC_OK;
}

static void on_step(void *ctx, const ac_train_progress *p)
{
    train_view *v = ctx;
    train_log_row(&v->rs, p->step, p->eval, p->step_tokens_per_s, p->seconds);
    if (p->eval && !v->q->quiet && !v->q->json) {
        train_clear_bar(&v->rs);
        train_print_eval(p->tr, p->step, p->eval, p->tokens / (ac_seconds() - v->rs.t_start));
    }
    /* an evaluation line cleared the bar: draw it again at once */
    train_draw_bar(&v->rs, p, ac_seconds(), p->eval != NULL);
}

/* the last bar; the log complete */
static int on_end(void *ctx, const ac_train_progress *p, ac_err *err)
{
    train_view *v = ctx;
    train_progress *rs = &v->rs;
    v->ended = 1;
    if (rs->bar) {
        train_draw_bar(rs, p, ac_seconds(), 1);
        fputc('\n', stderr);
    }
    if (rs->log) {
        int bad = ferror(rs->log) | (rs->log == stdout ? fflush(stdout) != 0
                                                       : fclose(rs->log) != 0);
        rs->log = NULL;
        if (bad)
            return ac_err_set(err, AC_ECANTCREAT, "%s: cannot write", v->q->log);
    }
    return AC_OK;
}

/* The summary as text: "done", "checkpoint", "best", "verdict". */
static void print_text(const ac_train_request *q, const ac_train_result *res)
{
    const ac_trainer *tr = &res->tr;
    const ac_eval_info *ev = &res->last_eval;
    size_t done = res->step - res->first_step;
    if (tr->cfg.task == AC_TASK_FIT_P) /* the loss reported is KL(P || Softmax) */
        printf("done       %zu steps in %.2f s%s; KL %.3g", done, res->seconds,
               res->si.done ? " (BFGS: no further progress)" : "", ev->loss);
    else
        printf("done       %zu steps in %.2f s, %.0f tokens/s; train loss %.6f, eval loss %.6f",
               done, res->seconds, res->tokens_per_s, res->si.loss, ev->loss);
    if (!isnan(ev->accuracy))
        printf(", accuracy %.4f", ev->accuracy);
    if (!isnan(ev->maxdev))
        printf(", max dev %.3g", ev->maxdev);
    if (!isnan(ev->rel_mse))
        printf(", relative MSE |f-g|^2/|g|^2 %.3g", ev->rel_mse);
    printf("\n");
    if (res->saved)
        printf("checkpoint %s (step %zu%s)\n", q->save, res->saved_step,
               res->certified ? ": the weights certified" : "");
    if (res->certified) {
        const ac_cert *c = &res->cert;
        char b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE], b3[AC_FMT_BOUND_BUFSIZE], sb[64];
        if (res->have_best)
            printf("best       step %zu: max|Softmax - P| %.3g, KL(P || Softmax) %.3g (the "
                   "weights certified)\n", res->best_step, res->best_maxdev, res->best_kl);
        printf("verdict    %s: max|Softmax - P| <= %s for the learned weights; certified "
               "[%s, %s], %s\n", ac_verdict_name(c->verdict), cli_num(b1, sizeof b1, q->tol),
               ac_str_lo(b2, ".3g", c->lo), ac_str_hi(b3, ".3g", c->hi),
               ac_stage_name(sb, sizeof sb, c->stage, c->prec));
    }
}

/* --plot: drawn into the staged file, committed when gnuplot succeeded */
static int plot_write(train_view *v, const ac_train_result *res)
{
    ac_err err;
    ac_err_clear(&err);
    int gs = train_plot_write(v->gp, cli_plot_terminal(v->q->plot), fileno(v->plot.fp), &res->tr,
                              res->evals, res->nevals, res->first_step,
                              res->certified ? v->q->tol : NAN);
    if (gs != 0)
        return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)", v->q->plot,
                        v->gp, gs);
    if (ac_atomic_commit(&v->plot, &err))
        return cli_fail_err(&err);
    return AC_OK;
}

/* What the run printed and wrote, after it ended. */
static int print_result(train_view *v, const ac_request *r)
{
    const ac_train_request *q = v->q;
    const ac_train_result *res = ac_request_result(r);
    int st;
    if (res->dump) {
        if (q->json)
            return cli_print_json(r);
        printf("wrote %s: weights, the batch of step %zu, loss %.17g and %zu gradients\n",
               q->dump_grads, res->tr.step + 1, res->dump_loss, res->tr.model.ntensors);
        return AC_OK;
    }
    if (q->plot && (st = plot_write(v, res)))
        return st;
    if (q->json)
        return cli_print_json(r);
    print_text(q, res);
    return AC_OK;
}

/* The log of a run that failed after opening it ends with a line saying
 * so, so that it never looks like the log of a complete run (CSV: a
 * comment line; JSON lines: {"incomplete": true, "exit_status": N}). */
static void mark_failed_log(const train_view *v, int st)
{
    const char *log = v->q->log;
    if (!log || !v->started || st < AC_EUSAGE)
        return;
    int to_stdout = strcmp(log, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(log, "a");
    if (!f)
        return;
    if (v->rs.jsonl)
        fprintf(f, "{\"incomplete\": true, \"exit_status\": %d}\n", st);
    else
        fprintf(f, "# incomplete: the run failed (exit status %d)\n", st);
    if (to_stdout)
        fflush(stdout);
    else
        fclose(f);
}

/* How train spells its configuration's fields in messages (the library's
 * table, ac_train_fields). */
static void set_flags(void)
{
    static cli_flag flags[64];
    size_t k = 0;
    for (size_t i = 0; ac_train_fields[i] && k + 1 < sizeof flags / sizeof *flags; i += 2, k++)
        flags[k] = (cli_flag){ac_train_fields[i], ac_train_fields[i + 1]};
    flags[k] = (cli_flag){NULL, NULL};
    cli_set_flags(flags);
}

int cmd_train(int argc, char **argv)
{
    ac_request *r = NULL;
    ac_err err;
    train_view v;
    int st;
    memset(&v, 0, sizeof v);
    ac_err_clear(&err);
    set_flags();
    if (ac_request_new(&r, "train", &err))
        return cli_fail_err(&err);
    if ((st = cli_parse_request(r, argc, argv)))
        goto out;
    v.q = ac_request_options(r);
    ac_train_hooks hooks = {&v, on_start, on_step, on_end};
    if ((st = cli_run_request(r, &hooks))) {
        if (v.rs.bar && !v.ended) /* the message on a line of its own */
            fputc('\n', stderr);
        goto out;
    }
    if (!(st = print_result(&v, r)))
        st = ac_request_status(r);
out:
    if (st < AC_EUSAGE && cli_stdout_check()) /* the output is part of the run */
        st = AC_ECANTCREAT;
    if (v.rs.log && v.rs.log != stdout)
        fclose(v.rs.log);
    v.rs.log = NULL;
    if (v.q)
        mark_failed_log(&v, st);
    ac_atomic_abort(&v.plot);
    ac_request_free(r);
    return st;
}
