/* train_cli.h — the pieces of `attncheck train` in the program (not part
 * of the library; the options, the run and the JSON result are the
 * library's, src/commands/train.c):
 *   cmd_train.c       the command: the hooks of the run, the text summary;
 *   train_progress.c  the header lines, the progress bar, the log file,
 *                     the evaluation lines;
 *   train_plot.c      --plot: the curves of the run drawn by gnuplot.
 */
#ifndef AC_CLI_TRAIN_H
#define AC_CLI_TRAIN_H

#include <stddef.h>
#include <stdio.h>

#include "attncheck/commands.h"
#include "cli.h"

/* ---- train_plot.c */

/* Run gnuplot gp on the script of the curves of e[0..n-1] (the run started
 * after step first_step; tol: fit-p's tolerance, else NaN), drawn with the
 * gnuplot terminal term into the file out.  Returns gnuplot's status. */
int train_plot_write(const char *gp, const char *term, int out_fd, const ac_trainer *tr,
                     const ac_train_eval *e, size_t n, size_t first_step, double tol);

/* ---- train_progress.c */

typedef struct {
    FILE *log;
    int jsonl;
    int bar;
    double t_start, t_last_draw;
    int tail_max;       /* the longest text after the bar so far */
} train_progress;

/* The lines "task", "model", "training" before the first step. */
void train_print_header(const ac_trainer *tr, size_t last, int nthreads);
/* Open --log PATH ("-": standard output; appended to when append and it
 * exists, with the CSV header when new): AC_OK, or AC_ECANTCREAT in err. */
int train_log_open(train_progress *rs, const char *path, int jsonl, int append, ac_err *err);
/* One row of the log: the step, and the evaluation when ev != NULL. */
void train_log_row(train_progress *rs, const ac_step_info *si, const ac_eval_info *ev,
                   double tps, double secs);
/* The progress bar on stderr (at most every 0.1 s unless force), fitted
 * to the width of the terminal. */
void train_draw_bar(train_progress *rs, const ac_train_progress *p, double now, int force);
/* Clear the progress bar's row (before a line on stdout). */
void train_clear_bar(train_progress *rs);
/* The line of an evaluation on stdout. */
void train_print_eval(const ac_trainer *tr, const ac_step_info *si, const ac_eval_info *ev,
                      double tps);

#endif
