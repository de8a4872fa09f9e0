/* attncheck/learned.h — the theorems on learned weights: the experiments
 * that train heads or layers with the training stack (attncheck/train.h)
 * and certify what was learned with the checks of the theorems
 * (doc/mathematics.md §6.5, §4.8, §6.6).
 *
 * Each experiment decides its own verdict here, in the library; the program
 * (rep-theorem --learn, separate --student, condition --model, report) and
 * the Python package only present it.
 */
#ifndef ATTNCHECK_LEARNED_H
#define ATTNCHECK_LEARNED_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/json.h"
#include "attncheck/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Theorem 1: the learned transition (rep-theorem --learn, §6.5) ---------------- */

/* One head size dk: one head trained by fit-p (BFGS on KL(P || Softmax),
 * evaluated at every step, the best iterate kept), its weights certified at
 * tol; beside it the exact criterion of doc/mathematics.md §3.4 for the same
 * dk (ac_t1_check). */
typedef struct {
    size_t dk;
    /* learned */
    size_t steps, max_steps, best_step;
    int stalled;               /* BFGS stopped: no further progress */
    double dev, kl;            /* best iterate, in double */
    ac_cert learned;           /* max|Softmax - P| <= tol for its weights, certified */
    double learn_seconds;
    /* the exact criterion */
    ac_verdict verdict;        /* C(tol) */
    ac_verdict exact;          /* exact representability */
    double dist_lo, dist_hi;
    long rank;
    double exact_seconds;
} ac_learn_t1_row;

/* The comparison over the rows (dk increasing). */
typedef struct {
    long learned_from;   /* first dk whose learned head is within tol (-1: none) */
    long criterion_from; /* first dk where the criterion does not refute C(tol) */
    long missed;         /* first dk with C(tol) proved but the learned head not within tol */
    long open;           /* first dk decided by neither */
    long inconsistent;   /* first dk with learned error < certified lower bound */
    long rank;           /* rank X (-1: not certified) */
    size_t n;
    ac_verdict outcome;  /* PROVED agree, REFUTED disagree, UNDECIDED */
} ac_learn_t1_summary;

typedef struct {
    size_t dk_lo, dk_hi;   /* head sizes (inclusive) */
    uint64_t seed;         /* initial weights of every trained head */
    double tol;
    ac_schedule sched;     /* ball stages of the certificates and the exact check */
    int optimize;          /* BFGS iterations of the exact check's refinement */
    /* called after each head size (NULL: none) */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
} ac_learn_t1_opts;

typedef struct {
    ac_learn_t1_row *rows;
    size_t nrows;
    ac_learn_t1_summary s;
    double seconds;
} ac_learn_t1_result;

/* Train and certify the head of size dk and run the exact check. */
int ac_learn_t1_row_run(ac_learn_t1_row *row, const ac_mat *X, const ac_mat *P, size_t dk,
                        uint64_t seed, double tol, const ac_schedule *sched, int optimize,
                        ac_err *err);
void ac_learn_t1_summarise(ac_learn_t1_summary *s, const ac_learn_t1_row *rows, size_t nrows,
                           size_t n);
/* The sentence of the comparison (text, JSON "summary"). */
void ac_learn_t1_sentence(char *buf, size_t len, const ac_learn_t1_summary *s, double tol);
/* The whole experiment on (X, P), validated first (messages name xname,
 * pname).  res is freed by ac_learn_t1_result_free in every case. */
int ac_learn_t1_transition(ac_learn_t1_result *res, const ac_mat *X, const char *xname,
                           const ac_mat *P, const char *pname, const ac_learn_t1_opts *o,
                           ac_err *err);
void ac_learn_t1_result_free(ac_learn_t1_result *res);
/* The verdict of the experiment: "INCONSISTENT" when a learned error is
 * below a certified lower bound (a bug: one certificate is wrong), else the
 * outcome's name. */
const char *ac_learn_t1_verdict_name(const ac_learn_t1_summary *s);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_LEARNED_H */
