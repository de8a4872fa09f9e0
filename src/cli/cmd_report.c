/* cmd_report.c — `attncheck report`: every check on built-in defaults.
 * The options, the rows, their outcome and the JSON result are the
 * library's (src/commands/report.c); this file prints the table and draws
 * --plot (report_plot.c). */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "attncheck/blas.h"
#include "cli.h"
#include "report_plot.h"

/* The marks of the table by a row's outcome (ac_report_row_outcome): ""
 * as predicted, " !" contradicting, " ?" undecided or not run. */
static const char *const outcome_mark[] = {[AC_PROVED] = "", [AC_REFUTED] = " !",
                                           [AC_UNDECIDED] = " ?"};

/* 98 columns at most: the instance on a line of its own, under the claim
 * (one line would need 125) */
static void print_table(const ac_report_result *res)
{
    const ac_report *rep = &res->rep;
    printf("attncheck report: built-in defaults, seed %llu%s, BLAS %s\n\n",
           (unsigned long long)rep->seed, rep->quick ? ", quick" : "", ac_blas_corename());
    printf("%-36s %-9s %-9s %-30s %8s\n    %s\n", "claim", "verdict", "expected", "bound",
           "time", "instance");
    for (size_t i = 0; i < rep->n; i++) {
        const ac_report_row *r = &rep->rows[i];
        printf("%-36.36s %-9s %-9s %-30.30s %7.3fs%s\n    %.90s\n", r->claim,
               ac_verdict_name(r->verdict), ac_verdict_name(r->expected),
               r->error ? "error" : r->bound, r->seconds, outcome_mark[ac_report_row_outcome(r)], r->instance);
    }
    printf("\n%zu checks: %zu as expected, %zu contradicting (!), %zu undecided "
           "(?); %.2f s\n", rep->n, res->as_expected, res->contradicting, res->undecided,
           res->seconds);
    for (size_t i = 0; i < rep->n; i++)
        if (rep->rows[i].error)
            printf("  error in '%s': %s\n", rep->rows[i].claim, rep->rows[i].detail);
}

int cmd_report(int argc, char **argv)
{
    ac_request *r = NULL;
    ac_err err;
    report_plot fig;
    int st;
    memset(&fig, 0, sizeof fig);
    ac_err_clear(&err);
    if (ac_request_new(&r, "report", &err))
        return cli_fail_err(&err);
    if ((st = cli_parse_request(r, argc, argv)) || (st = cli_check_request(r)))
        goto out;
    const ac_report_request *q = ac_request_options(r);
    if ((st = report_plot_open(&fig, q->plot)) ||
        (st = cli_run_request(r, NULL)))
        goto out;
    const ac_report_result *res = ac_request_result(r);
    if ((st = report_plot_write(&fig, &res->rep)))
        goto out;
    if (q->json) {
        if ((st = cli_print_json(r)))
            goto out;
    } else {
        print_table(res);
    }
    st = ac_request_status(r);
out:
    report_plot_abort(&fig);
    ac_request_free(r);
    return st;
}
