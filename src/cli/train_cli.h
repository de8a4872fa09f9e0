/* train_cli.h — the pieces of `attncheck train` (not part of the library):
 *   cmd_train.c       options, the configuration they give, the command;
 *   train_run.c       the run: the training loop of llm.c's train_gpt2.c
 *                     (step, evaluate at intervals, log, checkpoint), the
 *                     dump, fit-p's certificate, the summary, report rows;
 *   train_progress.c  the progress bar, the log file, the lines printed;
 *   train_plot.c      --plot: the curves of the run drawn by gnuplot.
 */
#ifndef AC_CLI_TRAIN_H
#define AC_CLI_TRAIN_H

#include <stddef.h>
#include <stdio.h>

#include "attncheck/train.h"
#include "cli.h"

/* The options of a run (besides the configuration). */
typedef struct {
    const char *save, *resume, *log, *dump, *plot;
    int log_jsonl, quiet, json, threads;
    size_t save_every, stop_at;
    int have_stop;
    double tol;
    long max_prec;
} train_run_opts;

/* How train spells the configuration's fields in messages (cmd_train.c). */
extern const cli_flag train_flags[];

/* Train with configuration cfg as the options say; the exit status. */
int train_run(const train_run_opts *o, const ac_train_config *cfg);

/* One evaluation of the run: its step, the mean training loss of the steps
 * since the previous evaluation (or since the start of the run), and the
 * evaluation. */
typedef struct {
    size_t step;
    double train_loss;
    ac_eval_info ev;
} train_eval_rec;

/* ---- train_plot.c */

/* Run gnuplot gp on the script of the curves of e[0..n-1] (the run started
 * after step first_step; tol: fit-p's tolerance, else NaN), drawn with the
 * gnuplot terminal term into the file out.  Returns gnuplot's status. */
int train_plot_write(const char *gp, const char *term, int out_fd, const ac_trainer *tr,
                     const train_eval_rec *e, size_t n, size_t first_step, double tol);

/* ---- train_progress.c */

typedef struct {
    FILE *log;
    int jsonl;
    int bar;
    double t_start, t_last_draw;
    size_t first_step;
    double tokens;
    int tail_max;       /* the longest text after the bar so far */
} train_progress;

/* The lines "task", "model", "training" before the first step. */
void train_print_header(const ac_trainer *tr, size_t last, int nthreads);
/* Open --log (appended to when resuming, with the CSV header when new). */
int train_log_open(train_progress *rs, const train_run_opts *o);
/* One row of the log: the step, and the evaluation when ev != NULL. */
void train_log_row(train_progress *rs, const ac_step_info *si, const ac_eval_info *ev,
                   double tps, double secs);
/* The progress bar on stderr (at most every 0.1 s unless force), fitted
 * to the width of the terminal. */
void train_draw_bar(train_progress *rs, const ac_step_info *si, size_t steps,
                    const ac_eval_info *ev, double now, int force);
/* Clear the progress bar's row (before a line on stdout). */
void train_clear_bar(train_progress *rs);
/* The line of an evaluation on stdout. */
void train_print_eval(const ac_trainer *tr, const ac_step_info *si, const ac_eval_info *ev,
                      double tps);

#endif
