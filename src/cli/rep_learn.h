/* rep_learn.h — `attncheck rep-theorem --learn` (not part of the library):
 * Theorem 1 on learned weights across head sizes.  For one instance (X, P)
 * and each dk of a range, one head is trained (fit-p, attncheck/train.h:
 * BFGS on KL(P || Softmax), the best iterate kept), its weights certified
 * (ac_head_certify), and beside it the exact criterion of
 * doc/mathematics.md §3.4 is run for the same dk (ac_t1_check): its
 * certified lower bound on the distance and its verdict on C(tol).  The
 * table shows where learning reaches tol and where the criterion puts the
 * transition (dk = n - 1 for rank X = n and generic P, §3.5).
 *
 * cmd_rep_theorem.c parses the options with rep_learn_option and, with
 * --learn, hands the loaded instance to rep_learn_run. */
#ifndef AC_CLI_REP_LEARN_H
#define AC_CLI_REP_LEARN_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"
#include "cli.h"

typedef struct {
    int on;                 /* --learn */
    int have_range;
    size_t dk_lo, dk_hi;    /* --dk-range A:B (default 1 .. n + 1) */
    const char *csv, *plot; /* --csv FILE, --plot FILE */
} rep_learn_opts;

/* The options of --learn, by name ("learn", "dk-range", "csv", "plot"):
 * store the value; AC_EUSAGE (message printed) for a bad value. */
int rep_learn_option(rep_learn_opts *o, const char *name, const char *val);

/* The options that contradict each other (after parsing): --dk-range,
 * --csv, --plot without --learn; --learn with an option it cannot honour
 * (named by the caller: e.g. "--dk" or "--out-dir", NULL for none). */
int rep_learn_check(const rep_learn_opts *o, const char *conflict);

/* Run --learn on the instance: the table (text or --json), --csv, --plot.
 * The instance is validated first (messages name it xname, pname, e.g. the
 * files).  seed keys the initial weights of every trained head; tol, the schedule
 * and optimize are those of the exact check.  The exit status: 0 when
 * learning reaches tol at exactly the head sizes where C(tol) is not
 * refuted, 1 when it misses a head size where the exact criterion proves
 * C(tol), 2 otherwise (some head size decided by neither), 70 if a learned
 * error is below the certified lower bound (a bug: one of them is wrong). */
int rep_learn_run(const rep_learn_opts *o, const ac_mat *X, const ac_mat *P,
                  const char *xname, const char *pname, const char *instance, uint64_t seed,
                  double tol, const cli_common *common, int optimize);

/* `attncheck report`: the learned transition at dk = n - 1 for n = 6. */
void report_rows_learn(cli_report *rep);

#endif
