/* train_cli.h — the pieces of `attncheck train` (not part of the library):
 *   cmd_train.c       options, the configuration they give, the command;
 *   train_run.c       the run: the training loop of llm.c's train_gpt2.c
 *                     (step, evaluate at intervals, log, checkpoint), the
 *                     dump, fit-p's certificate, the summary, report rows;
 *   train_progress.c  the progress bar, the log file, the lines printed.
 */
#ifndef AC_CLI_TRAIN_H
#define AC_CLI_TRAIN_H

#include <stddef.h>
#include <stdio.h>

#include "attncheck/train.h"
#include "cli.h"

/* The options of a run (besides the configuration). */
typedef struct {
    const char *save, *resume, *log, *dump;
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

/* ---- train_progress.c */

typedef struct {
    FILE *log;
    int jsonl;
    int bar;
    double t_start, t_last_draw;
    size_t first_step;
    double tokens;
} train_progress;

/* The lines "task", "model", "training" before the first step. */
void train_print_header(const ac_trainer *tr, size_t last, int nthreads);
/* Open --log (appended to when resuming, with the CSV header when new). */
int train_log_open(train_progress *rs, const train_run_opts *o);
/* One row of the log: the step, and the evaluation when ev != NULL. */
void train_log_row(train_progress *rs, const ac_step_info *si, const ac_eval_info *ev,
                   double tps, double secs);
/* The progress bar on stderr (at most every 0.1 s unless force). */
void train_draw_bar(train_progress *rs, const ac_step_info *si, size_t steps,
                    const ac_eval_info *ev, double now, int force);
/* The line of an evaluation on stdout. */
void train_print_eval(const ac_trainer *tr, const ac_step_info *si, const ac_eval_info *ev,
                      double tps);

#endif
