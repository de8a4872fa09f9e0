/* report_plot.h — `attncheck report --plot`: the one-page summary figure
 * of the report's rows (not part of the library). */
#ifndef AC_CLI_REPORT_PLOT_H
#define AC_CLI_REPORT_PLOT_H

#include "attncheck/fileio.h"
#include "cli.h"

/* The figure being made: gnuplot and the staged output file. */
typedef struct {
    const char *path;  /* --plot FILE (NULL: no figure) */
    const char *gp;    /* the gnuplot program */
    char gpbuf[4096];
    ac_atomic out;
} report_plot;

/* Before the rows run: find gnuplot and stage the file (an error message
 * and status if either fails; nothing is then computed). */
int report_plot_open(report_plot *p, const char *path);
/* After the rows: draw them into the staged file and commit it; the
 * status (0, or the error printed). */
int report_plot_write(report_plot *p, const ac_report *rep);
/* Remove the staged file unless committed. */
void report_plot_abort(report_plot *p);

/* The certified bound of a row as a number: the value after the last "<="
 * (*rel = +1, an upper bound) or ">=" (*rel = -1, a lower bound) of its
 * bound text; NaN (*rel = 0) when the text has no such bound. */
double report_bound_value(const char *bound, int *rel);

#endif
