/* rep_learn_impl.h — the pieces of `rep-theorem --learn` shared by
 * rep_learn.c (the rows, the comparison, the run, the report row) and
 * rep_learn_out.c (table, JSON, CSV, plot). */
#ifndef AC_CLI_REP_LEARN_IMPL_H
#define AC_CLI_REP_LEARN_IMPL_H

#include "attncheck/fileio.h"
#include "attncheck/verdict.h"
#include "plot.h"
#include "rep_learn.h"

#define REP_LEARN_MAX_DK ((size_t)1 << 16)

/* One head size. */
typedef struct {
    size_t dk;
    /* learned */
    size_t steps, max_steps, best_step;
    int stalled;               /* BFGS stopped: no further progress */
    double dev, kl;            /* best iterate, in double */
    ac_cert learned;           /* max|Softmax - P| <= tol for its weights, certified */
    double learn_seconds;
    /* the exact criterion (ac_t1_check) */
    ac_verdict verdict;        /* C(tol) */
    ac_verdict exact;          /* exact representability */
    double dist_lo, dist_hi;
    long rank;
    double exact_seconds;
} learn_row;

/* Train and certify the head of size dk, and run the exact check (tol, the
 * ball stages sched, optimize BFGS iterations of its refinement). */
int rep_learn_row(const ac_mat *X, const ac_mat *P, size_t dk, uint64_t seed, double tol,
                  const ac_schedule *sched, int optimize, learn_row *row, ac_err *err);

/* The comparison over the rows (dk increasing). */
typedef struct {
    long learned_from;   /* first dk whose learned head is within tol (-1: none) */
    long criterion_from; /* first dk where the criterion does not refute C(tol) */
    long missed;         /* first dk with C(tol) proved but the learned head not within tol */
    long open;           /* first dk decided by neither */
    long inconsistent;   /* first dk with learned error < certified lower bound */
    long rank;           /* rank X (-1: not certified) */
    size_t n;
    int outcome;         /* AC_PROVED agree, AC_REFUTED disagree, AC_UNDECIDED */
} learn_summary;

void rep_learn_summarise(const learn_row *rows, size_t nrows, size_t n, learn_summary *s);
void rep_learn_sentence(char *buf, size_t len, const learn_summary *s, double tol);

/* Everything the outputs are written from. */
typedef struct {
    const rep_learn_opts *o;
    const char *instance;
    size_t d, n;
    uint64_t seed;
    double tol;
    const learn_row *rows;
    size_t nrows;
    const learn_summary *s;
    double seconds;
} learn_report;

/* --csv and --plot, staged (ac_atomic) before the work and committed after. */
typedef struct {
    ac_atomic csv, plot;
    char gpbuf[4096];
    const char *gp;
} rep_learn_files;

int rep_learn_files_open(const rep_learn_opts *o, rep_learn_files *f);
void rep_learn_files_abort(rep_learn_files *f);
/* The plot (gnuplot), the CSV, then the table or JSON on stdout. */
int rep_learn_write(const learn_report *r, rep_learn_files *f, int json);

#endif
