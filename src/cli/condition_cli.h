/* condition_cli.h — what the program does for `attncheck condition` and
 * `attncheck merge` (Theorem 3.2 of paper 2) around the library's commands
 * (src/commands/condition.c, merge.c: the options, the runs, the verdicts,
 * the JSON, the shard files), shared by its files (not part of the
 * library):
 *   cmd_condition.c     parsing, the progress line, --trace, the output
 *                       files staged before the run, the outputs
 *   cmd_merge.c         merge: parsing, the run, the same outputs
 *   condition_text.c    the text output, one table per function
 *   condition_files.c   --csv, and the gnuplot script of --plot (plot.h)
 *   condition_model.c   --model's table, --csv and --plot
 * Nothing here decides: every verdict, claim and comparison is the
 * library's. */
#ifndef AC_CLI_CONDITION_CLI_H
#define AC_CLI_CONDITION_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "attncheck/commands.h"
#include "attncheck/fileio.h"
#include "cli.h"

/* The output files (--csv, --plot): staged before the run, committed when
 * complete. */
typedef struct {
    const char *csv, *plot;
    ac_atomic fcsv, fplot;
    char gpbuf[4096];
    const char *gp; /* the gnuplot program (--plot) */
} cond_files;

/* Find gnuplot and open the staged files (nothing when both are NULL):
 * AC_OK, or the error printed. */
int cond_files_open(cond_files *f, const char *csv, const char *plot);
void cond_files_abort(cond_files *f);

/* The outputs of a run, in the order the program has always written them:
 * the plot (gnuplot may fail), the CSV, both committed, then the JSON or the
 * text on stdout.  q: the sweep's options (merge: res->sweep); json: --json. */
int cond_write_outputs(ac_request *r, const ac_condition_request *q,
                       const ac_condition_result *res, cond_files *f, int json);

/* condition_text.c */
void cond_print_text(const ac_condition_request *q, const ac_condition_result *res);
/* condition_files.c */
void cond_write_csv(FILE *f, const ac_condition_request *q, const ac_condition_result *res);
/* The gnuplot script of --plot FILE (its terminal from the name): kappa
 * against h (the picture goes to gnuplot's standard output, plot.h). */
void cond_write_gnuplot_script(FILE *f, const ac_condition_request *q,
                               const ac_condition_result *res, const char *plot);

/* condition_model.c: --model's outputs (the library's ac_learn_kappa_compare):
 * the table or the JSON, --csv, --plot. */
int cond_model_outputs(ac_request *r, const ac_condition_request *q,
                       const ac_condition_result *res, int json);

#endif
