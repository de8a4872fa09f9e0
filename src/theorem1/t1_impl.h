/* t1_impl.h — internals of Theorem 1 (paper 1) on concrete instances, shared
 * by the files of src/theorem1 (not installed), and the map of the module.
 *
 * Files of src/theorem1/ (this map; tests/docs.sh checks it against
 * local.mk), in the order of ac_t1_check's steps (doc/mathematics.md §3):
 *   check.c          ac_t1_check, the dispatcher of the steps below (and of
 *                    the masked route and heads with biases), and the
 *                    verdict on C(tol);
 *   result.c         the result: its proof steps, the certificate of the
 *                    weights it writes, freeing it;
 *   instance.c       validation, column normalisation of P, generated
 *                    instances (§3.1, §3.3, §3.7), X with a row of ones
 *                    for biased heads (ac_t1_append_ones, §3.8);
 *   normgap_rows.c   the normalisation gap of P read row by row over the
 *                    threads (the same bits as instance.c's);
 *   rank_x.c         the scale of X (powers of two) and its certified rank
 *                    (§2.5);
 *   construct.c      route CONSTRUCT: the paper's construction, paper 1,
 *                    eqs. (4)-(7), and its trace (§3.2); the weights of rank
 *                    dk < rank X from the family K Pi log(P) Pi (§3.5);
 *   decide.c         route DECIDE: the exact criterion (§3.4, §3.5): the
 *                    log-domain residual rho, the rank condition, exact
 *                    representability and the threshold head size, the
 *                    distance lower bound (§3.6);
 *   rank_condition.c Pi and log P in balls, and the rank condition
 *                    sigma_{dk+1}(K Pi log P Pi) at stage 0 and in Arb;
 *   criterion_stage0.c     stage 0 of the criterion (§3.4): rho by a dual
 *                    certificate and sigma(K log P) in double, the verified
 *                    logarithm;
 *   criterion_stage0_pi.c  stage 0 of the rank condition when rank X = d < n;
 *   exact.c          exact facts in rationals: Pi, 1 in the row space,
 *                    bounds on rank(K log P), P of powers of two (§2.6);
 *   decide_summary.c the one-sentence summary of route DECIDE;
 *   refine.c         weights for route DECIDE: the projected construction
 *                    truncated to rank dk, then a BFGS best approximation;
 *   dist_lower.c     the lower bounds on dist (§3.6);
 *   dist_resid.c     the residual obstruction on a submatrix (a lower bound);
 *   dist_d1.c        d = 1: dist by branch and bound over the logit weight;
 *   dist_upper.c     candidate heads for the upper bound on dist, and
 *                    ac_t1_tighten;
 *   masked heads and biases (§3.8):
 *   mask.c           the support of a mask and its staircase of blocks;
 *   mask_rank.c      certified ranks of the blocks, the threshold (Lemma W,
 *                    Lemma G);
 *   mask_construct.c Woerdeman's completion, keys in general position, the
 *                    alternating projection;
 *   mask_bounds.c    lower bounds on dist on rectangles inside the support;
 *   mask_check.c     the masked route, the head size at a tolerance
 *                    (ac_t1_threshold_at_tol) and one instance at several
 *                    head sizes (ac_t1_instance);
 *   t1_mask.h        the masked route's shared declarations;
 *   t1_impl.h        this header: the routes and the steps they share;
 *   t1_decide.h      route DECIDE's context, and the log-domain residual's
 *                    derivation with its three twins;
 *   t1_stage0.h      stage 0 of the criterion;
 *   t1_dist.h        the distance bounds;
 *   test/            the unit tests, one Check program per file:
 *     test_theorem1.c          construction, decision and validation;
 *     test_decide.c            the exact decision, the threshold head size,
 *                              the weights of rank dk, scale invariance;
 *     test_construct.c         the construction's certificate of its weights;
 *     test_pinv.c              t1_pinv against its reference twin;
 *     test_criterion_stage0.c  stage 0 against Arb at 256 bits;
 *     test_dist.c              the distance bounds: exact cases, soundness;
 *     test_dist_resid.c        the residual obstruction against Arb;
 *     test_mask.c              masked heads: supports, staircases, the
 *                              threshold, the completion, the bounds.
 *
 * Dimension letters: d model width, n tokens, dk head size, r = rank X.
 * Buffers are row-major: X d x n, P n x n, Wk/Wq dk x d, logits n x n with the
 * softmax over each column.
 */
#ifndef AC_THEOREM1_T1_IMPL_H
#define AC_THEOREM1_T1_IMPL_H

#include "attncheck/interval.h"
#include "core/ac_arb.h"
#include "attncheck/theorem1.h"

/* What the certificate of C(tol) rests on: the stage and precision of the
 * deciding bound and a one-line method. */
typedef struct {
    int stage;
    long prec;
    char method[128];
} ac_t1_basis;

/* ac_t1_check on (X, P) with the instance in (NULL: none) for the masked
 * route: ac_t1_check is t1_check_instance(..., NULL, ...), and
 * ac_t1_instance_check passes its instance (check.c). */
int t1_check_instance(ac_t1_result *res, const ac_mat *X, const ac_mat *P, const ac_t1_opts *o,
                      ac_t1_instance *in, ac_err *err);

/* Append a proof step to res->steps (ac_step_add). */
void ac_t1_add_step(ac_t1_result *res, const char *name, const char *quantity, double lo,
                    double hi, int stage, long prec, const char *note);

/* weights_cert.quantity names the head the written weights are
 * (res->weights_head; "the constructed head" when empty) (upper.c). */
void ac_t1_name_weights(ac_t1_result *res);

/* Take (Wk, Wq) with certificate c as the written weights if it is certified
 * lower than the current ones (dist_upper.c); the matrices are moved
 * (emptied) then, and upper_method says name, the certificate head. */
void t1_offer_weights(ac_t1_result *res, ac_mat *Wk, ac_mat *Wq, const ac_cert *c,
                      const char *name, const char *head);

/* Certified max_ij |P_ij - P_ij / s_j|, s_j the column sums (instance.c). */
double ac_t1_normalisation_gap(const ac_mat *P);

/* Certify "max|Softmax - P| <= o->tol" for the weights Wk, Wq with the
 * schedule of o; pre as ac_head_certify_pre (check.c). */
int ac_t1_certify_weights(ac_cert *cert, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                          const ac_mat *P, const double *pre, const ac_t1_opts *o, ac_err *err);

/* The rank of X (rank_x.c): by a certified left inverse Y (d >= n: Y = X^+
 * is kept in *Y and the enclosure of Y X in *YX when the rank is n), else
 * exactly (pivot rows in *piv_out, malloc'ed), else modulo a prime when it
 * is full.  res->rank = -1 if none succeeds. */
int ac_t1_certify_rank(ac_t1_result *res, ac_mat *Y, ac_imat *YX, size_t **piv_out,
                       const ac_mat *X, const ac_t1_opts *o, ac_err *err);

/* X is scaled by 2^s (rank_x.c) only when its largest entry is outside
 * [2^-AC_T1_SCALE_FREE, 2^AC_T1_SCALE_FREE]. */
#define AC_T1_SCALE_FREE 64

/* Xs = 2^s X with max|Xs| in [1/2, 1) when X's scale is extreme and the
 * scaling is exact; else s = 0 and Xs is left empty (data NULL, no copy:
 * the caller uses X itself) (rank_x.c). */
int ac_t1_scale_pow2(ac_mat *Xs, int *s, const ac_mat *X, ac_err *err);

/* Weights of size dk from the family of the exact criterion
 * (doc/mathematics.md §3.5, construct.c): logits T = K Pi log(P) Pi, truncated
 * to rank dk by an SVD, factored as Wk = S^{1/2} U' X^+, Wq = sqrt(dk)
 * S^{1/2} V' X^+.  When 1 is in the row space of X (always for r = n) T
 * differs from log P + 1c' (c = -Pi log(P)' 1 / n) only by the log-domain
 * residual and the truncation; with r = n and dk >= n - 1 nothing is
 * truncated (K log P has rank <= n - 1).  Fills res->Wk, res->Wq and
 * res->weights_cert (certified against P). */
int ac_t1_construct_family(ac_t1_result *res, const ac_mat *X, const ac_mat *P, size_t r,
                           const ac_t1_opts *o, ac_err *err);

/* construct.c, shared with refine.c: X^+ (and Pi = X^+ X when Pi is not
 * NULL) from an SVD of X with the certified rank r (rel > 0: stop below
 * rel * sigma_1); and Wk, Wq of size dk whose logits are the rank-dk
 * truncation of T, Wk = S^(1/2) U' X^+, Wq = sqrt(dk) S^(1/2) V' X^+. */
int t1_pinv(ac_mat *Xp, ac_mat *Pi, const ac_mat *X, size_t r, double rel, ac_err *err);
/* ac_t1_normalisation_gap(P), the same bits, read row by row over the
 * OpenMP threads (normgap_rows.c) */
double t1_normalisation_gap_rows(const ac_mat *P);
/* the same from plain loops (t1_pinv's reference twin, src/theorem1/test/test_pinv.c) */
int t1_pinv_ref(ac_mat *Xp, ac_mat *Pi, const ac_mat *X, size_t r, double rel, ac_err *err);
int t1_factor_logits(ac_mat *Wk, ac_mat *Wq, const ac_mat *T, const ac_mat *Xp, size_t dk,
                     ac_err *err);

/* Route CONSTRUCT, rank X = n <= dk (construct.c): paper 1, Theorem 1.  Y is
 * X^+ when known (computed here otherwise), YX its certified product (which
 * may be replaced by a tighter enclosure of the same product, split
 * products, when the trace of eq. (4) needs one). */
int ac_t1_route_construct(ac_t1_result *res, ac_t1_basis *basis, const ac_mat *X,
                          const ac_mat *P, ac_mat *Y, ac_imat *YX, const ac_t1_opts *o,
                          ac_err *err);

/* Route DECIDE, every other certified rank (decide.c): the exact criterion,
 * then weights (refine.c).  piv: r independent rows of X when r < d. */
int ac_t1_route_decide(ac_t1_result *res, ac_t1_basis *basis, const ac_mat *X, const ac_mat *P,
                       const size_t *piv, const ac_t1_opts *o, ac_err *err);

/* The threshold head size when rank X = n (decide.c): hi = n - 1 (the
 * theorem of doc/mathematics.md §3.5), lo from the certified singular
 * values of K log P (n <= 512; else lo = 1). */
void ac_t1_threshold_full_rank(ac_t1_result *res, const ac_mat *P, const ac_t1_opts *o);

/* res->summary for route DECIDE from the final result (decide.c). */
void ac_t1_decide_summary(ac_t1_result *res, const ac_t1_opts *o);

/* Exact facts (exact.c).  Pi = B'(BB')^-1 B in balls at prec from the r
 * independent rows B of X (piv; NULL: rows 0..r-1), computed in rationals;
 * 0 beyond the size budget. */
int ac_t1_exact_pi(arb_mat_t Pi, const ac_mat *X, const size_t *piv, size_t r, slong prec);
/* X 1 = 0 exactly. */
int ac_t1_rows_sum_to_zero(const ac_mat *X);
/* 1 in the row space of X: 1 proved yes, 0 proved no, -1 unknown. */
int ac_t1_one_in_row_space(const ac_mat *X, const size_t *piv, size_t r, double budget);
/* A proved upper bound on rank(K log P) = rank([log P 1]) - 1 (n - 1, the
 * distinct columns of P, its distinct rows minus 1, the exact rank when every
 * entry is a power of two); *why names the bound used. */
long ac_t1_family_rank_upper(const ac_mat *P, double budget, const char **why);

/* rank(K_I log P_IJ) = rank([log2 P_IJ 1]) - 1 exactly when every entry of
 * P_IJ (a x b; I, J NULL: the first rows, columns) is a power of two; -1
 * otherwise or beyond the budget (exact.c). */
long ac_t1_pow2_centred_rank(const ac_mat *P, const size_t *rows, size_t a, const size_t *cols,
                             size_t b, double budget);

/* 0 < rank X = r < n and every entry of P a power of two: log P = E log 2, E
 * integer, and the criterion of doc/mathematics.md §3.4 is linear in log P
 * with rational coefficients, so it is decided in rationals: *rho_zero =
 * (rho = 0), *famrank = the rank of the family member.  Returns 0 when not
 * applicable or beyond the budget (n <= 64). */
int ac_t1_pow2_decide(const ac_mat *X, const size_t *piv, size_t r, const ac_mat *P,
                      int *rho_zero, long *famrank);

/* Weights for route DECIDE (refine.c): the projected construction with the
 * certified rank r, certified; if that does not prove C(tol), a BFGS
 * refinement kept when its certified error is smaller.  Fills res->Wk,
 * res->Wq, res->weights_cert. */
int ac_t1_best_weights(ac_t1_result *res, const ac_mat *X, const ac_mat *P, size_t r,
                       const ac_t1_opts *o, ac_err *err);

/* The P-weighted truncation (refine.c, EM from the written weights
 * res->Wk, res->Wq, through X^+ of rank r): certified, and kept as the
 * written weights when its certified error is smaller.  For the head that
 * already proves C(tol): a tighter upper end of dist (doc/mathematics.md
 * §3.6, Limits).  A failure of the optional step keeps what was there. */
int ac_t1_weighted_upper(ac_t1_result *res, const ac_mat *X, const ac_mat *P, size_t r,
                         const ac_t1_opts *o, ac_err *err);

/* The same refinement (BFGS on the squared error, then p-norms) for a
 * masked head (doc/mathematics.md §3.8): the softmax of each column over
 * its visible keys (mask n x n, row = key); the budget of route DECIDE.
 * Returns 1 with the best iterate in Wk2, Wq2 (allocated), 0 if none was
 * run (why says so); *ran the iterations (refine.c). */
int ac_t1_refine_masked(ac_mat *Wk2, ac_mat *Wq2, int *ran, char *why, size_t wlen,
                        const ac_mat *X, const ac_mat *P, const unsigned char *mask,
                        const ac_mat *Wk, const ac_mat *Wq, int iters);

#endif /* AC_THEOREM1_T1_IMPL_H */
