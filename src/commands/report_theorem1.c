/* report_theorem1.c — the rows of `attncheck report` for Theorem 1 of
 * paper 1 (attncheck/commands.h): the theorem and its refinement (dk = n,
 * n - 1, n - 2), the paper's counterexample, random and representable
 * d < n instances, and the learned transition (doc/mathematics.md §6.5).
 * Every verdict is the library's (ac_t1_check, ac_learn_t1_summarise). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attncheck/commands.h"
#include "attncheck/json.h"
#include "commands/cmd_impl.h"

/* How rep-theorem spells the parameters the library's messages name. */
static const char *const t1_flags[] = {"normalize", "--normalize", "rows", "--rows", NULL};

/* ---- report rows ---------------------------------------------------------- */

static void t1_row(ac_report *rep, const char *claim, const char *instance, ac_verdict expected,
                   const ac_mat *X, const ac_mat *P, size_t dk)
{
    ac_report_row *row = ac_report_add(rep);
    ac_t1_result r;
    ac_err err;
    char b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE];
    if (!row)
        return;
    snprintf(row->claim, sizeof row->claim, "%s", claim);
    snprintf(row->instance, sizeof row->instance, "%s", instance);
    row->expected = expected;
    ac_t1_opts o;
    ac_t1_opts_default(&o);
    o.dk = dk;
    double t0 = ac_seconds();
    ac_err_clear(&err);
    int st = ac_t1_check(&r, X, P, &o, &err);
    row->seconds = ac_seconds() - t0;
    if (st) {
        ac_report_fail(row, st, &err, t1_flags);
    } else {
        row->verdict = r.verdict;
        ac_report_bounds(row, "max|Softmax - P| over heads of size dk", r.dist_lo, r.dist_hi);
        if (r.verdict == AC_REFUTED)
            snprintf(row->bound, sizeof row->bound, "dist >= %s",
                     ac_str_lo(b1, ".3g", r.dist_lo));
        else
            snprintf(row->bound, sizeof row->bound, "dist <= %s",
                     ac_str_hi(b2, ".3g", r.dist_hi));
        snprintf(row->detail, sizeof row->detail, "%.255s", r.summary);
    }
    ac_t1_result_free(&r);
}

void ac_report_rows_theorem1(ac_report *rep)
{
    ac_mat X = {0}, P = {0}, Xr = {0};
    ac_err err;
    char inst[96];
    uint64_t seed = rep->seed;
    /* Theorem 1, d >= n: proved by construction */
    size_t n = rep->quick ? 16 : 256;
    if (ac_t1_generate(&X, &P, n, n, seed, &err) == AC_OK) {
        snprintf(inst, sizeof inst, "d=n=dk=%zu, Gaussian X, Dirichlet P", n);
        t1_row(rep, "Thm 1: head of size n represents P", inst, AC_PROVED, &X, &P, n);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
    /* the refined threshold (doc/mathematics.md §3.5): n - 1 suffices, n - 2 does not */
    if (ac_t1_generate(&X, &P, 16, 8, seed, &err) == AC_OK) {
        t1_row(rep, "Thm 1 refined: dk = n - 1 suffices", "d=16, n=8, dk=7, Dirichlet P",
               AC_PROVED, &X, &P, 7);
        t1_row(rep, "Thm 1 refined: dk = n - 2 fails", "d=16, n=8, dk=6, Dirichlet P",
               AC_REFUTED, &X, &P, 6);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
    /* the paper's counterexample */
    if (ac_t1_example_paper(&X, &P, &err) == AC_OK)
        t1_row(rep, "Thm 1: d < n bottleneck (paper)", "d=1, n=2, X=[1, 0]", AC_REFUTED,
               &X, &P, 1);
    ac_mat_free(&X);
    ac_mat_free(&P);
    /* a random d < n instance */
    if (ac_t1_generate(&X, &P, 4, 8, seed, &err) == AC_OK)
        t1_row(rep, "Thm 1: d < n, random P", "d=dk=4, n=8, Dirichlet P", AC_REFUTED, &X,
               &P, 4);
    ac_mat_free(&X);
    ac_mat_free(&P);
    /* a constructed representable d < n instance */
    if (ac_t1_generate(&Xr, &P, 4, 8, seed + 1, &err) == AC_OK) {
        ac_mat_free(&P);
        if (ac_t1_generate_representable(&P, &Xr, 2, seed + 1, &err) == AC_OK)
            t1_row(rep, "Thm 1: d < n, representable P", "d=4, n=8, dk=2, P from a random head",
                   AC_PROVED, &Xr, &P, 2);
    }
    ac_mat_free(&Xr);
    ac_mat_free(&P);
}

/* ---- report row ------------------------------------------------------------------------ */

/* The learned transition on a small instance: n = d = 6 (rank X = n),
 * Dirichlet P, dk = n - 2 and n - 1.  The row's verdict is the comparison's
 * (PROVED: learning reaches tol = 1e-6 at dk = n - 1 and the exact
 * criterion refutes C(tol) at dk = n - 2).  Measured: PROVED for seeds 1..30
 * (see doc/mathematics.md §6.5). */
void ac_report_rows_learn(ac_report *rep)
{
    ac_report_row *row = ac_report_add(rep);
    ac_mat X = {0}, P = {0};
    ac_err err;
    ac_learn_t1_row rows[2];
    const size_t n = 6;
    const double tol = 1e-6;
    if (!row)
        return;
    snprintf(row->claim, sizeof row->claim, "Thm 1 learned: transition dk = n-1");
    snprintf(row->instance, sizeof row->instance, "d = n = %zu, Dirichlet P, dk = %zu, %zu", n,
             n - 2, n - 1);
    row->expected = AC_PROVED;
    row->verdict = AC_UNDECIDED;
    ac_err_clear(&err);
    double t0 = ac_seconds();
    ac_schedule sched = ac_schedule_upto(512);
    ac_learn_t1_opts lo = {.seed = rep->seed, .tol = tol, .sched = sched, .optimize = 200};
    memset(rows, 0, sizeof rows);
    int st = ac_t1_generate(&X, &P, n, n, rep->seed, &err);
    for (size_t i = 0; !st && i < 2; i++)
        st = ac_learn_t1_row_run(&rows[i], &X, &P, n - 2 + i, &lo, &err);
    row->seconds = ac_seconds() - t0;
    if (st) {
        ac_report_fail(row, st, &err, NULL);
    } else {
        ac_learn_t1_summary s;
        ac_learn_t1_summarise(&s, rows, 2, n);
        row->verdict = s.inconsistent >= 0 ? AC_REFUTED : s.outcome;
        char c1[AC_FMT_BOUND_BUFSIZE], c2[AC_FMT_BOUND_BUFSIZE], c3[AC_FMT_BOUND_BUFSIZE];
        snprintf(row->bound, sizeof row->bound, "dk=%zu: %s", n - 1,
                 ac_str_hi(c1, ".2g", rows[1].learned.hi));
        ac_report_bounds(row, "max|Softmax - P| of the head learned at dk = n - 1",
                          rows[1].learned.lo, rows[1].learned.hi);
        snprintf(row->detail, sizeof row->detail,
                 "dk = %zu: learned error %s >= certified lower bound %s (%s); dk = %zu: "
                 "learned error %s (%s at tol %g)", n - 2, ac_str_hi(c1, ".3g", rows[0].learned.hi),
                 ac_str_lo(c2, ".3g", rows[0].dist_lo), ac_verdict_name(rows[0].verdict), n - 1,
                 ac_str_hi(c3, ".3g", rows[1].learned.hi),
                 ac_verdict_name(rows[1].learned.verdict), tol);
    }
    ac_learn_t1_row_free(&rows[0]);
    ac_learn_t1_row_free(&rows[1]);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
