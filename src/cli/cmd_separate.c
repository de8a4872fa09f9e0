/* cmd_separate.c — `attncheck separate`: Theorem 2 of paper 1 on one pair of
 * layers, --embed, --student.  The options, the layers, the run, every
 * verdict and the JSON result are the library's (src/commands/separate.c);
 * this file prints the text result (separate_text.c), writes the files
 * (--out-dir; --student's --csv and --plot in separate_student_out.c) and
 * shows --student's progress on a terminal. */
#include <config.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "separate.h"

/* How this command spells the library's parameters (ac_err.fields). */
static const cli_flag sep_flags[] = {
    {"kase", "--case"},
    {"student_heads", "--student-heads"},
    {"batch", "--student-batch"},
    {"lr,min_lr", "--student-lr"},
    {"seq", "--n"},
    {NULL, NULL},
};

/* --student on a terminal: the students trained, on stderr */
static void student_progress(void *ctx, size_t done, size_t total)
{
    (void)ctx;
    fprintf(stderr, "\r  students %zu/%zu trained ", done, total);
}

int cmd_separate(int argc, char **argv)
{
    ac_request *r = NULL;
    cli_plot_files files;
    ac_err err;
    int st;
    memset(&files, 0, sizeof files);
    ac_err_clear(&err);
    if (ac_request_new(&r, "separate", &err))
        return cli_fail_err(&err);
    cli_set_flags(sep_flags);
    if ((st = cli_parse_request(r, argc, argv)))
        goto out;
    const ac_sep_request *q = ac_request_options(r);
    if ((st = cli_check_request(r)) || (q->student && (st = cli_plot_files_open(&files, q->csv, q->plot))))
        goto out;
    ac_cmd_progress prog = {student_progress, NULL};
    int tty = q->student && !q->json && isatty(2);
    st = cli_run_request(r, tty ? &prog : NULL);
    if (tty)
        fprintf(stderr, "\r%*s\r", 40, "");
    if (st)
        goto out;
    const ac_sep_result *res = ac_request_result(r);
    if (q->out_dir && (st = q->student ? cli_write_outdir_arrays(r, q->out_dir)
                                       : cli_write_outdir(r, q->out_dir)))
        goto out;
    if (q->student && (st = sep_student_files_write(q, res, &files)))
        goto out;
    if (q->json) {
        if ((st = cli_print_json(r)))
            goto out;
    } else if (res->mode == AC_SEP_STUDENT) {
        sep_print_student(q, res);
    } else if (res->mode == AC_SEP_EMBED) {
        sep_print_embed(q, res);
    } else {
        sep_print(q, res);
    }
    st = ac_request_status(r);
out:
    cli_plot_files_abort(&files);
    ac_request_free(r);
    return st;
}
