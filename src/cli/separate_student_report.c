/* separate_student_report.c — the report's row of `separate --student`
 * (cmd_report.c): a standard student with h' = h heads against the
 * fixed-head student, both trained on one small g_V for which no standard
 * layer with h heads is exact (doc/mathematics.md §4.8).  The claim compares
 * certified relative gaps at each student's worst held-out X: PROVED when
 * the standard student's lower bound exceeds the fixed student's upper
 * bound, REFUTED when the opposite holds, UNDECIDED otherwise.  The
 * expected verdict is the one measured (seed 1: see the man page). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "separate_student.h"
#include "json_contract.h"

void report_rows_student(cli_report *rep)
{
    cli_report_row *row = cli_report_add(rep);
    stu_args a;
    stu_run r;
    ac_err err;
    char b1[32], b2[32];
    if (!row)
        return;
    ac_err_clear(&err);
    stu_args_default(&a);
    a.d = 8, a.h = 4, a.dp = 4, a.n = 4;
    a.seeds = 1;
    a.steps = 400;
    a.samples = 16;
    a.seed = rep->seed;
    a.common.max_prec = 0;
    snprintf(row->claim, sizeof row->claim, "Thm 2 student: std gap > fixed gap");
    snprintf(row->instance, sizeof row->instance, "d=8 h=4 dp=4, h'=4 vs fixed, %zu steps", a.steps);
    row->expected = AC_PROVED;
    double t0 = ac_seconds();
    int st = stu_run_all(&r, &a, NULL, &err);
    row->seconds = ac_seconds() - t0;
    if (st) {
        cli_report_fail(row, st, &err, NULL);
    } else {
        const stu_row *s = &r.rows[0], *f = &r.rows[1];
        double slo = s->cert_lo[0], shi = s->cert_hi[0], flo = f->cert_lo[0], fhi = f->cert_hi[0];
        row->verdict = slo > fhi ? AC_PROVED : shi < flo ? AC_REFUTED : AC_UNDECIDED;
        cli_report_bounds(row, "worst held-out |f-g|/|g| of the standard student", slo, shi);
        snprintf(row->bound, sizeof row->bound, "std >= %s, fixed <= %s",
                 cli_num(b1, sizeof b1, slo), cli_num(b2, sizeof b2, fhi));
        snprintf(row->detail, sizeof row->detail,
                 "held-out |f-g|^2/|g|^2: standard %.3g, fixed %.3g (ratio %.3g); %s", s->mean,
                 f->mean, stu_ratio_to_fixed(&r, s), r.hc.summary);
    }
    stu_run_free(&r);
}
