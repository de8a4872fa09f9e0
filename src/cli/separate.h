/* separate.h — what `attncheck separate` prints and writes; the command
 * itself (its options, the layers, the run, every verdict, the JSON result
 * and the arrays of --out-dir) is the library's (src/commands/separate.c,
 * attncheck/commands.h).  separate_text.c prints the text of a separation,
 * of --embed and of --student; separate_student_out.c writes --student's
 * --csv and --plot.  Not part of the library. */
#ifndef AC_CLI_SEPARATE_H
#define AC_CLI_SEPARATE_H

#include "attncheck/commands.h"
#include "attncheck/fileio.h"
#include "cli.h"
#include "plot.h"

/* separate_text.c: the text report of a separation, of --embed, of --student */
void sep_print(const ac_sep_request *q, const ac_sep_result *res);
void sep_print_embed(const ac_sep_request *q, const ac_sep_result *res);
void sep_print_student(const ac_sep_request *q, const ac_sep_result *res);

/* separate_student_out.c: --student's --csv and --plot (cli_plot_files of
 * plot.h, opened before the run): the plot, then the CSV.  AC_OK, or the
 * error printed. */
int sep_student_files_write(const ac_sep_request *q, const ac_sep_result *res,
                            cli_plot_files *f);

#endif
