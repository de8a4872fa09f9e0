/* t1_decide.h — internals of route DECIDE shared by decide.c and
 * rank_condition.c (not installed; doc/mathematics.md §3.4): the context of one
 * decision, Pi and log P in balls, and the rank condition
 * sigma_{dk+1}(K Pi log(P) Pi) at stage 0 and in balls.
 *
 * Dimension letters: d model width, n tokens, dk head size, r = rank X.
 */
#ifndef AC_THEOREM1_T1_DECIDE_H
#define AC_THEOREM1_T1_DECIDE_H

#include <mpfr.h>

#include "attncheck/theorem1.h"
#include "core/ac_arb.h"

typedef struct ac_t1_decide_ctx {
    const ac_mat *X, *P;
    size_t n, r, dk;
    const size_t *piv; /* r independent rows of X (NULL: rows 0..r-1 are) */
    int pi_identity;   /* r == n: Pi = I */
    int one_in_row;    /* 1 in the row space of X: 1 yes, 0 no, -1 unknown */
    int one_perp;      /* X 1 = 0 exactly (Pi 1 = 0) */
    long famrank_lo;   /* certified lower bound on rank(K Pi log(P) Pi) (-1: none yet) */
    long famrank_hi;   /* proved upper bound on it when r = n (-1: none) */
    const char *famrank_why; /* where famrank_hi comes from */
    int pow2;          /* P's entries are powers of two and r < n: decided in rationals */
    int pow2_rho_zero; /* then: rho = 0 */
    long pow2_famrank; /* then: the exact rank of the family member */
    int have_rho0;     /* stage 0 of rho ran (criterion_stage0.c): */
    double rho0_lo, rho0_hi, h0_lo; /* its bounds, and dist(1, row space) >= h0_lo */
} decide_ctx;

/* ---- the log-domain residual: one derivation, three twins -----------------
 *
 * rho = min_c ||M(c) - Pi M(c) Pi||_F, M(c) = L + 1 c', L = log P
 * (doc/mathematics.md §3.4).  With T(M) = M - Pi M Pi (an orthogonal
 * projector on matrices), g = Pi 1, b = 1'Pi 1 and v = T(L)' 1,
 * T(M(c)) = T(L) + 1 c' - g (Pi c)' and the objective is
 *   ||T L||^2 + 2 v'c + n ||c||^2 - b ||Pi c||^2,
 * minimised by c* = -((I - Pi) v / n + Pi v / (n - b)) (b < n), or
 * c* = -(I - Pi) v / n when 1 is in the row space (b = n; then Pi v = 0).
 * The residual at the minimiser is
 *   R = T(L) + 1 c*' - g (Pi c*)',  rho = ||R||_F.
 * The same steps in three arithmetics, each pointing here:
 *   rho_resid_ball    decide.c            Arb balls around the exact c*: the
 *                                         enclosure of rho at each precision;
 *   rho_resid_double  criterion_stage0.c  double, Pi = X'Yp: proposes the dual
 *                                         certificate Y = R of stage 0 only;
 *   rho_resid_exact   exact.c             rationals, for log P = E log 2 (P's
 *                                         entries powers of two): rho = 0 exactly.
 * refine.c's projected_logits forms Pi M(c*) Pi with the same c* in double
 * (logits for weights, not a bound).  The residual rho_IJ on a submatrix
 * (dist_resid.c) is that of another subspace, 1 c' + X_I'AX_J (§3.6). */

/* Pi (projector on the row space of X) and L = log P in balls.  Returns 0
 * if the Gram matrix of the basis rows could not be proved positive
 * definite at this precision (and the exact fallback failed). */
int ac_t1_ball_pi_L(arb_mat_t Pi, arb_mat_t L, const decide_ctx *c, slong prec);

/* sigma_{dk+1}(K Pi L Pi) at stage 0 (Pi = I: criterion_stage0.c; rank X = d < n:
 * criterion_stage0_pi.c), an ac_quantity stage-0 callback; raises c->famrank_lo. */
int ac_t1_lowrank_stage0(void *v, double *lo, double *hi, ac_err *err);

/* The same in Arb at prec bits with the Weyl enclosure (ac_quantity ball
 * callback); raises c->famrank_lo. */
int ac_t1_lowrank_ball(void *v, long prec, mpfr_t lo, mpfr_t hi, ac_err *err);

#endif /* AC_THEOREM1_T1_DECIDE_H */
