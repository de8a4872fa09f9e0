/* head_impl.h — the pieces of one attention head (head.c) that the
 * multi-head layers and Theorem 1 share: "the logits of one head" and "the
 * softmax of one head", one function per arithmetic.  Not installed (Arb
 * types).
 *
 * Layout (paper 1, eqs. (1) and (3)): K = Wk X and Q = Wq X are dk x n
 * (row-major), the logits (K^T Q / sqrt(dk)) and the softmax matrix are
 * n x n with the softmax over each column.
 */
#ifndef AC_ATTENTION_HEAD_IMPL_H
#define AC_ATTENTION_HEAD_IMPL_H

#include "attncheck/head.h"
#include "attncheck/interval.h"
#include "core/ac_arb.h"

/* ---- double -------------------------------------------------------------- */

/* Z = K^T Q / sqrt(dk) (one dgemm, the scale as its alpha). */
void ac_head_logits(double *Z, const double *K, const double *Q, size_t n, size_t dk);

/* P = Softmax(K^T Q / sqrt(dk)) over columns (ac_head_logits, then
 * ac_softmax_cols); scratch holds 2n doubles. */
void ac_head_softmax_kq(double *P, const double *K, const double *Q, size_t n, size_t dk,
                        double *scratch);

/* The masked column softmax of the logits Z (n x n) in place: column j over
 * the rows i with mask[i * n + j] != 0 (max shift, libm exp), 0 elsewhere;
 * every column must have a visible row (doc/mathematics.md §3.8). */
void ac_head_softmax_cols_masked(double *Z, size_t n, const unsigned char *mask);

/* ---- stage 0 (doc/mathematics.md §2.3, §2.4) ----------------------------- */

/* S (n x n, initialised with a radius) = K^T Q in interval arithmetic, and
 * llo <= S / sqrt(dk) <= lhi entrywise (n x n buffers), with 1/sqrt(dk) in
 * [1/sqrt_up(dk), 1/sqrt_dn(dk)] rounded outward. */
int ac_head_logits_enclose(double *llo, double *lhi, ac_imat *S, const ac_imat *K,
                           const ac_imat *Q, size_t dk, ac_err *err);

/* The same from the weights: K = Wk X (or *Kpre when given, an enclosure of
 * it), Q = Wq X; S_out (zeroed; may be NULL) receives the interval
 * (Wk X)^T (Wq X). */
int ac_head_logits_stage0(double *llo, double *lhi, ac_imat *S_out, const ac_mat *X,
                          const ac_mat *Wk, const ac_mat *Wq, const ac_imat *Kpre,
                          ac_err *err);

/* The number r of leading rows of Wk, Wq (dk x d) that can contribute to
 * the logits: rows past r have Wk_i = 0 or Wq_i = 0 (exact zero terms). */
size_t ac_head_live_rows(const ac_mat *Wk, const ac_mat *Wq);

/* plo <= Softmax(L) <= phi for every logit matrix L in [llo, lhi] (n x n, the
 * columns the softmax groups; ac_softmax_col_enclose).  Returns 0 if some
 * logit bound is not finite (the caller decides the fallback). */
int ac_head_softmax_enclose(double *plo, double *phi, const double *llo, const double *lhi,
                            size_t n);

/* The same over the visible keys only (doc/mathematics.md §3.8): the w
 * columns j0 .. j0 + w - 1 of an n-row panel (n x w, row-major), column j
 * visible where mask[i * ncols + j0 + j] != 0; masked entries are exactly 0.
 * Returns 0 if some visible logit is not finite or memory runs out (those
 * columns get [0, 1] on their visible rows). */
int ac_head_softmax_enclose_masked(double *plo, double *phi, const double *llo,
                                   const double *lhi, size_t n, size_t w,
                                   const unsigned char *mask, size_t ncols, size_t j0);

/* [lo, hi] encloses max_i |p_i - P_i| over plo <= p <= phi (N entries). */
void ac_head_maxdev_from_bounds(const double *plo, const double *phi, const double *P, size_t N,
                                double *lo, double *hi);

/* ac_head_certify with the stage-0 enclosure already known: pre = {lo, hi}
 * (NULL: computed), sched not NULL. */
int ac_head_certify_pre(ac_cert *cert, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                        const ac_mat *P, const double *pre, double tol, const ac_schedule *sched,
                        ac_err *err);

/* ---- Arb balls ----------------------------------------------------------- */

/* Y (rows x n, initialised) = W X for the exact doubles W (rows x d,
 * row-major) and the ball matrix X (d x n). */
void ac_head_project_arb(arb_mat_t Y, const double *W, size_t rows, size_t d, const arb_mat_t X,
                         slong prec);

/* Z (n x n, initialised) = K^T Q / sqrt(dk), the scale the ball
 * 1/sqrt(dk) (arb_rsqrt_ui). */
void ac_head_logits_arb(arb_mat_t Z, const arb_mat_t K, const arb_mat_t Q, size_t dk, slong prec);

/* P (n x n, initialised) = Softmax(K^T Q / sqrt(dk)) over columns. */
void ac_head_softmax_arb(arb_mat_t P, const arb_mat_t K, const arb_mat_t Q, size_t dk,
                         slong prec);

#endif /* AC_ATTENTION_HEAD_IMPL_H */
