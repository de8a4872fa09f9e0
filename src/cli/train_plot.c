/* train_plot.c — `attncheck train --plot`: the loss curves of the run and,
 * below them, the task's other evaluation measures, from the per-evaluation
 * records of the run (train_cli.h), drawn by gnuplot (plot.h). */
#include <config.h>

#include <math.h>
#include <stdio.h>

#include "plot.h"
#include "train_cli.h"

typedef struct {
    const ac_trainer *tr;
    const ac_train_eval *e;
    size_t n, first_step;
    double tol; /* fit-p: the tolerance of the certified claim; else NaN */
    const char *term, *out;
} plot_ctx;

/* Has column k (0 accuracy, 1 max dev, 2 relative MSE) a finite value? */
static int have(const plot_ctx *p, int k)
{
    for (size_t i = 0; i < p->n; i++) {
        const ac_eval_info *v = &p->e[i].ev;
        double x = k == 0 ? v->accuracy : k == 1 ? v->maxdev : v->rel_mse;
        if (isfinite(x))
            return 1;
    }
    return 0;
}

/* Log scale when the positive values span more than a factor 8 (values
 * <= 0, as a KL rounded below 0, are then not drawn). */
static int wants_log(const plot_ctx *p)
{
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < p->n; i++) {
        double v[] = {p->e[i].train_loss, p->e[i].ev.loss};
        for (int k = 0; k < 2; k++) {
            if (!isfinite(v[k]) || v[k] <= 0)
                continue;
            lo = fmin(lo, v[k]);
            hi = fmax(hi, v[k]);
        }
    }
    return isfinite(lo) && hi / lo > 8;
}

static void write_data(FILE *f, const plot_ctx *p)
{
    fputs("$data << EOD\n", f);
    for (size_t i = 0; i < p->n; i++) {
        const ac_train_eval *r = &p->e[i];
        fprintf(f, "%zu", r->step);
        cli_gp_val(f, r->train_loss);
        cli_gp_val(f, r->ev.loss);
        cli_gp_val(f, r->ev.accuracy);
        cli_gp_val(f, r->ev.maxdev);
        cli_gp_val(f, r->ev.rel_mse);
        fputc('\n', f);
    }
    fputs("EOD\n", f);
}

/* The lower panel: accuracy (left axis, 0..1) and the deviations (log
 * scale, right axis when there is an accuracy too). */
static void write_measures(FILE *f, const plot_ctx *p, int acc, int dev, int mse)
{
    const char *ax = acc ? "x1y2" : "x1y1";
    fputs("set title ''\nset xlabel 'step'\nunset logscale y\nset format y '%g'\n"
          "set key below box maxrows 1\nset bmargin 5.5\n",
          f);
    if (acc)
        fputs("set ylabel 'accuracy (held out)'\nset yrange [0:1.02]\n", f);
    if (dev || mse) {
        fprintf(f, "set %s '%s'\nset logscale %s\n", acc ? "y2label" : "ylabel",
                dev && mse ? "max deviation, relative MSE"
                : !dev     ? "relative MSE"
                : p->tr->cfg.task == AC_TASK_FIT_P ? "max |Softmax - P|"
                                                   : "max |output - target|",
                acc ? "y2" : "y");
        fprintf(f, "set format %s '10^{%%L}'\n", acc ? "y2" : "y");
        if (acc)
            fputs("set y2tics\nset ytics nomirror\n", f);
    }
    const char *sep = "plot ";
    if (acc) {
        fprintf(f, "%s$data using 1:4 with linespoints pt 7 lw 2 lc rgb '#2ca02c' "
                   "title 'accuracy'", sep);
        sep = ", \\\n     ";
    }
    if (dev) {
        fprintf(f, "%s$data using 1:5 axes %s with linespoints pt 5 lw 2 lc rgb '#9467bd' "
                   "title 'max deviation'", sep, ax);
        sep = ", \\\n     ";
    }
    if (mse) {
        fprintf(f, "%s$data using 1:6 axes %s with linespoints pt 9 lw 2 lc rgb '#8c564b' "
                   "title 'relative MSE |f-g|^2/|g|^2'", sep, ax);
        sep = ", \\\n     ";
    }
    if (dev && isfinite(p->tol) && p->tol > 0)
        fprintf(f, "%s%.10g axes %s with lines dt 2 lw 2 lc rgb '#7f7f7f' "
                   "title 'tolerance of the certified claim'", sep, p->tol, ax);
    fputc('\n', f);
}

static void write_script(FILE *f, void *ctx)
{
    const plot_ctx *p = ctx;
    const ac_train_config *c = &p->tr->cfg;
    int fitp = c->task == AC_TASK_FIT_P;
    int acc = have(p, 0), dev = have(p, 1), mse = have(p, 2);
    int two = acc || dev || mse;
    /* the picture goes to gnuplot's standard output, the staged file: no
     * file name in the script (plot.h) */
    fprintf(f, "set terminal %s\n", p->term);
    write_data(f, p);
    if (two) /* the same margins in both panels: their step axes line up */
        fprintf(f, "set multiplot layout 2,1\nset lmargin 12\nset rmargin %d\n",
                acc && (dev || mse) ? 12 : 4);
    fprintf(f, "set title 'attncheck train --task %s: %zu parameters, steps %zu..%zu, "
               "%s, seed %llu'\n", ac_task_name(c->task), p->tr->model.nparams,
            p->first_step + 1, p->n ? p->e[p->n - 1].step : p->first_step,
            c->optimizer == AC_OPT_BFGS ? "BFGS" : "AdamW", (unsigned long long)c->seed);
    fprintf(f, "set grid\nset key top right box\nset xlabel %s\nset ylabel '%s'\n",
            two ? "''" : "'step'", fitp ? "KL(P || Softmax)"
                                  : c->task == AC_TASK_TEACHER ? "loss (mean squared error)"
                                                               : "loss (cross-entropy)");
    int lg = wants_log(p);
    if (lg)
        fputs("set logscale y\nset format y '10^{%L}'\n", f);
    fprintf(f, "plot $data using 1:%s with linespoints pt 6 lw 2 lc rgb '#1f77b4' "
               "title 'training (mean since the previous evaluation)', \\\n"
               "     $data using 1:%s with linespoints pt 7 lw 2 lc rgb '#d62728' "
               "title 'evaluation%s'\n",
            lg ? "($2 > 0 ? $2 : NaN)" : "2", lg ? "($3 > 0 ? $3 : NaN)" : "3",
            lg ? " (values <= 0 not drawn)" : "");
    if (two) {
        write_measures(f, p, acc, dev, mse);
        fputs("unset multiplot\n", f);
    }
}

int train_plot_write(const char *gp, const char *term, int out_fd, const ac_trainer *tr,
                     const ac_train_eval *e, size_t n, size_t first_step, double tol)
{
    plot_ctx p = {tr, e, n, first_step, tol, term, NULL};
    return cli_run_gnuplot(gp, out_fd, write_script, &p);
}
