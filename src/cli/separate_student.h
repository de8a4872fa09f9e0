/* separate_student.h — `attncheck separate --student`: Theorem 2 of paper 1
 * on learned weights (doc/mathematics.md §4.8).  Standard-head students
 * (h' heads of size d/h') and a fixed-head student (the teacher's h heads of
 * size dp) are trained by regression onto a fixed-head teacher g_V
 * (ac_trainer, task teacher); each is evaluated on held-out inputs (relative
 * error |f - g|^2/|g|^2) and its worst held-out X is certified
 * (ac_t2_certify) with the relative size of the gap; the head counts that
 * represent g_V exactly come from ac_headcount_decide.
 * separate_student.c parses and runs, separate_student_out.c prints the
 * table, the JSON, the CSV and the plot; not part of the library. */
#ifndef AC_CLI_SEPARATE_STUDENT_H
#define AC_CLI_SEPARATE_STUDENT_H

#include <stdint.h>

#include "attncheck/headcount.h"
#include "attncheck/theorem2.h"
#include "cli.h"

#define STU_MAX_HEADS 32

typedef struct {
    const char *vdir, *csv, *plot;
    size_t d, h, dp, n, seeds, steps, batch, samples;
    size_t heads[STU_MAX_HEADS], nheads;
    int have_d, have_h, have_dp;
    double lr;
    uint64_t seed;
    cli_common common;
} stu_args;

/* One student architecture over its seeds. */
typedef struct {
    int fixed;               /* 0: standard (head size d/h'), 1: fixed (head size dp) */
    size_t heads, hs, nparams;
    ac_hc_answer expect;     /* does a layer of this shape represent g_V exactly */
    size_t nseeds, ncurve;
    double *rel;             /* per seed: held-out sum |f-g|^2 / sum |g|^2 */
    double *worst_est;       /* per seed: |f-g|_F/|g|_F at the worst held-out X (double) */
    size_t *worst_k;         /* per seed: which held-out X (0-based) */
    double *cert_lo, *cert_hi; /* per seed: certified bounds on |f-g|_F/|g|_F there */
    ac_verdict *sep;         /* per seed: "|f(X) - g(X)|_F > 0" at that X */
    double *seconds;         /* per seed: training wall time */
    size_t *curve_step;      /* ncurve steps at which the curves were recorded */
    double *curve_loss;      /* nseeds x ncurve: training loss (MSE per entry) */
    double *curve_rel;       /* nseeds x ncurve: evaluation relative error */
    double mean, sd, min, max; /* of rel over the seeds */
} stu_row;

typedef struct {
    const stu_args *a;
    char vdesc[200];
    ac_mh V;
    ac_t2_hyp hyp;
    ac_headcount hc;
    stu_row *rows;
    size_t nrows;
    double wall;
    cli_outdir *od;          /* --out-dir (NULL: none): the teacher, the held-out X and
                                every trained student */
} stu_run;

/* separate_student.c */
/* 1 if argv asks for --student (cmd_separate then hands over). */
int sep_student_requested(int argc, char **argv);
int cmd_separate_student(int argc, char **argv);
/* Run the experiment for the options a into r (r->a = a), writing into od
 * (may be NULL); on failure the error is in err.  r must be released with stu_run_free. */
int stu_run_all(stu_run *r, const stu_args *a, cli_outdir *od, ac_err *err);
void stu_run_free(stu_run *r);
void stu_args_default(stu_args *a);
/* Ratio of a row's mean relative error to the fixed student's (NaN if none). */
double stu_ratio_to_fixed(const stu_run *r, const stu_row *row);

/* separate_student_out.c */
void stu_print(const stu_run *r);
void stu_json(ac_json *j, const stu_run *r);
void stu_write_csv(FILE *f, const stu_run *r);
void stu_write_gnuplot(FILE *f, const stu_run *r, const char *out);

/* The report's row (cmd_report.c). */
void report_rows_student(cli_report *rep);

#endif
