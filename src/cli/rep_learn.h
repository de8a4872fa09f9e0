/* rep_learn.h — what `attncheck rep-theorem --learn` prints and writes (the
 * experiment itself is the library's: ac_learn_t1_transition,
 * attncheck/learned.h): the table or JSON, --csv and --plot. */
#ifndef AC_CLI_REP_LEARN_H
#define AC_CLI_REP_LEARN_H

#include "attncheck/commands.h"
#include "attncheck/fileio.h"
#include "cli.h"
#include "plot.h"

/* --csv and --plot, staged before the work and committed after (plot.h). */
typedef cli_plot_files rep_learn_files;

int rep_learn_files_open(const ac_rt_request *q, rep_learn_files *f);
void rep_learn_files_abort(rep_learn_files *f);
/* The plot (gnuplot), the CSV, then the table or JSON on stdout. */
int rep_learn_write(const ac_rt_request *q, const ac_rt_result *res, rep_learn_files *f);

#endif
