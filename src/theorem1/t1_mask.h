/* t1_mask.h — internals of Theorem 1 for masked heads and heads with
 * biases (not installed; doc/mathematics.md §3.8), shared by
 *   mask.c            the support Omega of a mask, its keys' visible sets and
 *                     the staircase (or the best sub-staircase) of maximal
 *                     fully specified blocks;
 *   mask_rank.c       certified ranks of the centred blocks K_I log P_IJ and
 *                     the threshold: Woerdeman's sum for a staircase
 *                     (Lemma W), a range otherwise;
 *   mask_construct.c  a completion of log P on Omega (Woerdeman's
 *                     construction), the alternating projection to rank dk,
 *                     and the weights;
 *   mask_bounds.c     lower bounds on dist for masked heads (Lemmas A, C, D
 *                     of §3.6 on rectangles inside Omega);
 *   mask_check.c      the masked route of ac_t1_check and the head size at a
 *                     tolerance (ac_t1_threshold_at_tol).
 *
 * Dimension letters: d model width (d + 1 with a bias), n tokens, dk head
 * size, r = rank X.  Omega is n x n row-major, row = key i, column =
 * query j; R_i = {j : (i, j) in Omega} are the queries that see key i,
 * Omega_j = {i : (i, j) in Omega} the keys query j sees.
 */
#ifndef AC_THEOREM1_T1_MASK_H
#define AC_THEOREM1_T1_MASK_H

#include "attncheck/theorem1.h"
#include "theorem1/t1_impl.h"

/* A staircase of fully specified blocks inside Omega (all of Omega when
 * Omega itself is one): keys korder[0 .. m) and queries qorder[0 .. n);
 * block k (0 <= k < K) is I_k x S_k with I_k = korder[0 .. ilen[k]) growing
 * and S_k = qorder[0 .. jlen[k]) shrinking in k; the entries of Omega it
 * keeps are the union of the blocks (key korder[t] keeps the queries of
 * the first block containing it).  Its consecutive intersections are
 * I_k x S_{k+1}. */
typedef struct {
    size_t K;
    size_t *korder, *qorder; /* n each (korder: the m keys used first) */
    size_t *ilen, *jlen;     /* K each */
    size_t nkept;            /* entries of Omega inside the blocks */
} t1_stair;

typedef struct {
    size_t n;
    unsigned char *om; /* n x n */
    size_t nvis;       /* |Omega| */
    size_t *cq, *ck;   /* |Omega_j| per query, |R_i| per key */
    size_t maxq, maxk; /* their maxima */
    int full;          /* Omega is everything */
    int chain;         /* the R_i are nested: stair covers Omega */
    t1_stair stair;
} t1_support;

/* Build the support from omega (copied; mask.c): the visible counts, the
 * staircase when the R_i are nested, else the sub-staircase whose generic
 * value (Lemma W with every block of full rank) is largest among those the
 * search visits.  Returns AC_OK or AC_EINTERNAL. */
int t1_support_init(t1_support *s, const unsigned char *omega, size_t n, ac_err *err);
void t1_support_free(t1_support *s);

/* Lemma W's sum with every block of full rank: sum_k min(|I_k| - 1, |S_k|)
 * - sum_k min(|I_k| - 1, |S_{k+1}|) (the generic value, mask.c). */
long t1_stair_generic(const t1_stair *st);

/* ---- certified ranks and the threshold (mask_rank.c) ---- */

/* The rank of one centred block C = K_I log P_IJ (a x b): lo <= rank C <=
 * hi, and the certified singular values slo[i] <= sigma_{i+1}(C) (min(a, b)
 * of them; NULL when none were computed), the stage that gave lo. */
typedef struct {
    size_t a, b;
    long lo, hi;
    double *slo;
    int stage;
    long prec;
} t1_brank;

typedef struct {
    size_t K;
    t1_brank *kap; /* K blocks */
    t1_brank *gam; /* K - 1 intersections */
    long tau_lo, tau_hi; /* min rank over c and completions of (log P + 1c') on Omega:
                            certified lo <= tau <= hi (rank X = n) */
    int exact;
    int stage;     /* the highest stage the ranks needed */
    long prec;
    char method[160];
} t1_mthr;

/* Certified ranks of the blocks and intersections of s->stair and the
 * threshold range (Lemma W, §3.8): stage 0 first, Arb up to a work budget,
 * exact rationals for power-of-two entries.  AC_OK or AC_EINTERNAL. */
int t1_mthr_compute(t1_mthr *t, const t1_support *s, const ac_mat *P, const ac_t1_opts *o,
                    ac_err *err);
void t1_mthr_free(t1_mthr *t);

/* ---- completions and weights (mask_construct.c) ---- */

/* N (n x n): a completion of log P on a staircase Omega by Woerdeman's
 * construction (Lemma W), with numerical ranks at the relative cut rel:
 * K N has rank tau when the blocks have the ranks the cut sees. */
int t1_woerdeman_completion(ac_mat *N, const t1_support *s, const ac_mat *P, double rel,
                            ac_err *err);

/* Logits Z (n x n) of rank <= dk in {Q C Q'} (Q an orthonormal basis of the
 * row space of X, n x r, or NULL for r = n) with Softmax_Omega(Z) near P:
 * the start Z (in) truncated to rank dk, then the alternating projection
 * between {Z : Z = log P + 1c' on Omega} and the logits of rank dk, at most
 * iters steps, stopping once the masked error in double is <= stop; the
 * iterate of least error is returned in Z. */
int t1_masked_project(ac_mat *Z, const t1_support *s, const ac_mat *P, const ac_mat *Q,
                      size_t dk, int iters, double stop, ac_err *err);

/* Z (n x n, allocated) of rank <= dk with Z = log P + 1c' on Omega, for
 * dk >= max_j |Omega_j| - 1 (Lemma G, rank X = n): keys (k_i, 1) in general
 * position (a fixed Gaussian stream) and for each query the least-norm
 * solution of its visible equations. */
int t1_general_position_logits(ac_mat *Z, const t1_support *s, const ac_mat *P, size_t dk,
                               ac_err *err);

/* Z (n x n, allocated) = Q B Q' with B (r x r) and c the least-squares
 * solution of (Q B Q')_ij + c_j = log P_ij on Omega (the logits of the best
 * head of size dk >= r in the log domain; a P produced by a head on X, then
 * rounded, is reproduced to rounding).  Cost |Omega| (r^2 + n)^2. */
int t1_masked_lsq_logits(ac_mat *Z, const t1_support *s, const ac_mat *P, const ac_mat *Q,
                         ac_err *err);

/* max over Omega |Softmax_Omega(Z) - P| in double (not certified). */
double t1_masked_err_logits(const ac_mat *Z, const t1_support *s, const ac_mat *P);

/* ---- lower bounds (mask_bounds.c) ---- */

/* The dk-independent lower bounds on dist for masked heads: column sums over
 * Omega_j, zero and equal columns of X, the residual on one column (r < n,
 * Xb the r independent rows of X).  *lo the best, method its name; *none
 * = 1 when the residual proves that no head of any size represents P. */
double t1_masked_lb_fixed(const ac_mat *X, const ac_mat *Xb, long r, const ac_mat *P,
                          const t1_support *s, char *method, size_t mlen, int *none,
                          double *rho_out);

/* The rank obstruction (Lemma C, §3.6) on the blocks of the staircase and on
 * submatrices of the best one without its small entries: every head of size
 * dk on X of rank r has logits of rank <= k = min(dk, r).  Returns the best
 * certified t, method its name, *stage its stage. */
double t1_masked_lb_rank(const ac_mat *P, const t1_support *s, const t1_mthr *t, size_t k,
                         char *method, size_t mlen, int *stage, long *prec);

/* ---- the masked route (mask_check.c) ---- */

/* ac_t1_check with opts->mask set (or a bias): validates the instance on
 * its support and fills res; basis receives what C(tol) rests on. */
int ac_t1_route_masked(ac_t1_result *res, ac_t1_basis *basis, const ac_mat *X, const ac_mat *P,
                       const ac_t1_opts *o, ac_err *err);
/* The same on an instance (attncheck/theorem1.h): its dk-independent work
 * built once (on the first call) and kept; res receives what that work
 * certified (the rank of X, its proof steps) as ac_t1_route_masked's does. */
int ac_t1_route_masked_instance(ac_t1_result *res, ac_t1_basis *basis, ac_t1_instance *in,
                                const ac_t1_opts *o, ac_err *err);

#endif /* AC_THEOREM1_T1_MASK_H */
