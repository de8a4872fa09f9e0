/* plot.h — gnuplot output for the commands of the attncheck program (not
 * part of the library): the terminal of a file name, the gnuplot program,
 * quoting, and running gnuplot on a script written by the command. */
#ifndef AC_CLI_PLOT_H
#define AC_CLI_PLOT_H

#include <stddef.h>
#include <stdio.h>

#include "attncheck/fileio.h"

/* The gnuplot terminal for a file name ending in .svg, .png or .pdf; NULL
 * for any other name. */
const char *cli_plot_terminal(const char *path);

/* The gnuplot program: $ATTNCHECK_GNUPLOT, else the one found by configure,
 * searched in PATH when it has no slash (the path is built in buf).  NULL if
 * not executable. */
const char *cli_find_gnuplot(char *buf, size_t n);

/* A gnuplot single-quoted string (a quote is written twice; a control
 * character, which could end the command, is written as '?'). */
void cli_gp_quote(FILE *f, const char *s);
/* " %.10g", or " NaN" for a value that is not finite (lines break there). */
void cli_gp_val(FILE *f, double x);

/* Run gnuplot `gp` with the script write(f, ctx) on its standard input and
 * its standard output on the descriptor out_fd (/dev/null if out_fd < 0).
 * The script names no output file: gnuplot writes the picture to its
 * standard output, so no file name of the user's ever reaches the script.
 * Returns gnuplot's exit status, or -1 if it could not be started or did
 * not exit normally. */
int cli_run_gnuplot(const char *gp, int out_fd, void (*write)(FILE *f, void *ctx), void *ctx);

/* A command's --csv and --plot files (rep-theorem --learn, separate
 * --student): staged (ac_atomic) before the work, so that a missing gnuplot
 * or an unwritable file stops the command before anything is computed, and
 * committed when the result is known. */
typedef struct {
    ac_atomic csv, plot;
    const char *csv_name, *plot_name; /* NULL: not asked for */
    char gpbuf[4096];
    const char *gp;
} cli_plot_files;

/* Find gnuplot (for plot) and open the staged files: AC_OK, or the error
 * printed ("--plot FILE: gnuplot not found ...; nothing was computed"). */
int cli_plot_files_open(cli_plot_files *f, const char *csv, const char *plot);
/* The plot first (gnuplot on the script of write_plot; it may fail), then
 * the CSV written by write_csv, each committed: AC_OK, or the error printed
 * and the files abandoned. */
int cli_plot_files_commit(cli_plot_files *f, void (*write_csv)(FILE *f, void *ctx),
                          void (*write_plot)(FILE *f, void *ctx), void *ctx);
/* Abandon what is not committed (safe after a commit and on a zeroed f). */
void cli_plot_files_abort(cli_plot_files *f);

/* inspect's outputs after its run (cmd_inspect.c), also merge's for inspect's
 * shards (cmd_merge.c): --csv committed into files (opened before), then the
 * JSON or the text (a shard: one line naming its file).  The types are those
 * of attncheck/inspect.h. */
struct ac_request;
int cli_inspect_outputs(struct ac_request *r, const void *q, const void *res, cli_plot_files *files,
                        int json);

#endif
