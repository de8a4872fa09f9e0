/* attncheck/learned.h — the theorems on learned weights: the experiments
 * that train heads or layers with the training stack (attncheck/train.h)
 * and certify what was learned with the checks of the theorems
 * (doc/mathematics.md §6.5, §4.8, §6.6).
 *
 * Each experiment decides its own verdict here, in the library; the program
 * (rep-theorem --learn, train --task fit-p, separate --student, condition
 * --model, report) and the Python package only present it.
 */
#ifndef ATTNCHECK_LEARNED_H
#define ATTNCHECK_LEARNED_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/json.h"
#include "attncheck/train.h"
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

/* ---- Theorem 1: one learned head (attncheck train --task fit-p) ----------------- */

/* The trainer of fit-p (attncheck/train.h) on its instance: X and P given
 * in memory (X, P non-NULL, named "X", "P"), else read from cfg's x_path,
 * p_path (made absolute, as checkpoints record them; p_rows: the file is
 * row-stochastic, its transpose is fitted), else generated as rep-theorem's
 * (Gaussian X of fitp_d x fitp_n, Dirichlet P, keyed by cfg's seed),
 * validated by Theorem 1's checks (ac_t1_validate: shapes, finite values,
 * P positive and column-stochastic, messages naming the files), then
 * ac_trainer_init_fitp.  tr is freed by ac_trainer_free in every case. */
int ac_learn_fitp_init(ac_trainer *tr, const ac_train_config *cfg, const ac_mat *X,
                       const ac_mat *P, ac_err *err);

/* The certified claim "max|Softmax((Wk X)^T (Wq X)/sqrt(dk)) - P| <= tol"
 * for the weights the trainer returns (ac_trainer_fitp_instance: the best
 * iterate), by ac_head_certify with the ball stages of sched; the quantity
 * says "of the learned weights". */
int ac_learn_fitp_certify(ac_cert *cert, const ac_trainer *tr, double tol,
                          const ac_schedule *sched, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_LEARNED_H */
