/* attncheck/verdict.h — three-valued verdicts decided as filtered predicates.
 *
 * Every check attncheck makes is a claim "q REL tau" about a real quantity q
 * (REL one of <, <=, >, >=).  ac_decide settles it like a filtered geometric
 * predicate (Shewchuk 1997; CGAL's filtered kernels), doc/mathematics.md §2.2:
 *
 *   stage 0   double precision with an a-priori rounding-error bound:
 *             the quantity's stage0 callback returns [lo, hi] containing q;
 *   stage k   ball arithmetic at rising precision (Arb/MPFR), recomputed from
 *             the exact input doubles: the ball callback returns an enclosure
 *             as two MPFR numbers at the stage's precision;
 *   exact     optionally, an exact (rational) decision;
 *   otherwise UNDECIDED with the last interval.
 *
 * PROVED means the enclosure lies entirely on the claimed side of tau,
 * REFUTED entirely on the other side; a stage that cannot tell passes on to the
 * next.  The engine never guesses: a bug in a callback is the only way to get a
 * wrong PROVED, which is why every enclosure routine is tested against exact or
 * higher-precision oracles.
 */
#ifndef ATTNCHECK_VERDICT_H
#define ATTNCHECK_VERDICT_H

#include <mpfr.h>

#include "attncheck/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    AC_PROVED = 0,    /* exit status 0 */
    AC_REFUTED = 1,   /* exit status 1 */
    AC_UNDECIDED = 2  /* exit status 2 */
} ac_verdict;

typedef enum { AC_LT, AC_LE, AC_GT, AC_GE } ac_relation;

/* "PROVED", "REFUTED", "UNDECIDED" */
const char *ac_verdict_name(ac_verdict v);
/* "<", "<=", ">", ">=" */
const char *ac_relation_name(ac_relation r);

/* Stage numbers recorded in certificates. */
#define AC_STAGE_DOUBLE 0   /* double + a-priori bound */
#define AC_STAGE_EXACT (-1) /* exact rational / integer arithmetic */
#define AC_STAGE_NONE (-2)  /* nothing was computed */

/* A certificate: what was claimed, how it was decided, the rigorous bounds. */
typedef struct {
    ac_verdict verdict;
    char quantity[96];  /* the name of q, e.g. "max|Softmax(X'Wk'WqX/sqrt(dk)) - P|" */
    ac_relation rel;
    double tau;
    int stage;          /* deciding (or last) stage: 0 double, k >= 1 ball, -1 exact */
    long prec;          /* bits of that stage: 53 at stage 0, 0 for exact */
    int stages_tried;
    double lo, hi;      /* q in [lo, hi]: the deciding stage's enclosure rounded
                           outward to double; -inf/+inf where unbounded */
    double seconds;     /* time spent deciding */
    char method[128];   /* how the bound was obtained, for the reader */
} ac_cert;

/* Precision schedule for the ball stages, e.g. {128, 256, 512}. */
#define AC_MAX_STAGES 8
typedef struct {
    int n;
    long prec[AC_MAX_STAGES];
} ac_schedule;

/* The default {128, 256, 512}. */
ac_schedule ac_schedule_default(void);
/* Rising doublings from 128 up to max_bits (>= 64), at most AC_MAX_STAGES;
 * max_bits = 0 gives no ball stage at all (stage 0 only). */
ac_schedule ac_schedule_upto(long max_bits);

/* The quantity q.  Any callback may be NULL (stage skipped).
 *   stage0: set lo <= q <= hi in double (lo = -inf / hi = +inf when it cannot
 *           bound, e.g. after overflow).  Return AC_OK or an error status.
 *   ball:   lo, hi arrive initialised with precision prec; set them with
 *           lo <= q <= hi (round lo down, hi up).  Return AC_OK or an error.
 *   exact:  decide "q REL tau" exactly: set *v to AC_PROVED / AC_REFUTED, or
 *           AC_UNDECIDED if it cannot (e.g. too large); run last.
 */
typedef struct {
    const char *name;
    int (*stage0)(void *ctx, double *lo, double *hi, ac_err *err);
    int (*ball)(void *ctx, long prec, mpfr_t lo, mpfr_t hi, ac_err *err);
    int (*exact)(void *ctx, ac_relation rel, double tau, ac_verdict *v, ac_err *err);
    void *ctx;
    const char *method0;      /* description of stage 0 for the certificate */
    const char *method_ball;  /* description of the ball stages */
    const char *method_exact; /* description of the exact stage */
} ac_quantity;

/* Decide "q rel tau".  Fills cert (always, also on error: verdict UNDECIDED).
 * Returns AC_OK or the error of a callback. */
int ac_decide(ac_cert *cert, const ac_quantity *q, ac_relation rel, double tau,
              const ac_schedule *sched, ac_err *err);

/* The verdict of "q rel tau" given a rigorous enclosure [lo, hi] of q:
 * PROVED if every point of [lo, hi] satisfies it, REFUTED if none does,
 * UNDECIDED otherwise.  NaN bounds give UNDECIDED. */
ac_verdict ac_judge(double lo, double hi, ac_relation rel, double tau);
ac_verdict ac_judge_mpfr(const mpfr_t lo, const mpfr_t hi, ac_relation rel, double tau);

/* Fill a certificate directly from an enclosure computed elsewhere. */
void ac_cert_set(ac_cert *cert, const char *quantity, ac_relation rel, double tau, int stage,
                 long prec, double lo, double hi, const char *method);

/* One step of a proof with the certified value of the quantity it claims
 * (what every command's --trace prints). */
typedef struct {
    char name[96];       /* e.g. "step 1: X^+ X = I" */
    char quantity[96];   /* e.g. "||X^+ X - I||_F" */
    double lo, hi;       /* certified enclosure of the quantity */
    int stage;           /* AC_STAGE_DOUBLE, a ball stage, AC_STAGE_EXACT */
    long prec;           /* bits of that stage */
    char note[200];      /* what the step shows */
} ac_step;

/* Append a step to steps[0 .. max-1] (ignored once *n == max); note may be
 * NULL. */
void ac_step_add(ac_step *steps, size_t *n, size_t max, const char *name, const char *quantity,
                 double lo, double hi, int stage, long prec, const char *note);

/* Combine verdicts of a conjunction: REFUTED if any is, else UNDECIDED if any
 * is, else PROVED. */
ac_verdict ac_verdict_and(ac_verdict a, ac_verdict b);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_VERDICT_H */
