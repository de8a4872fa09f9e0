/* mh_impl.h — internals of the multi-head attention layer: the workspace
 * and the forward core of mh_forward.c, which mh_backward.c and
 * mh_certified.c share.  Not installed.
 *
 * Dimension letters: d model width, n tokens, h heads, hs head size,
 * hh = h hs.
 */
#ifndef AC_ATTENTION_MH_IMPL_H
#define AC_ATTENTION_MH_IMPL_H

#include "attncheck/multihead.h"

/* AC_EUSAGE unless L holds parameters and X has d = L->d rows. */
int ac_mh_check_x(const ac_mh *L, const ac_mat *X, ac_err *err);

/* The workspace of a forward or backward pass over n tokens: *w itself when
 * it was made for L and n (AC_EUSAGE if for another shape), else a new one in
 * *local (the caller frees it when *w == local). */
int ac_mh_work_prepare(ac_mh_work **w, ac_mh_work *local, const ac_mh *L, size_t n,
                       ac_err *err);

/* Threads of a forward pass (see ac_mh_forward in multihead.h). */
int ac_mh_forward_threads(const ac_mh *L, size_t n, const ac_mh_work *w);

/* The forward pass into w: QKV = [Wq; Wk; Wv] X, the softmax matrices P_i and
 * H = [V_1 P_1; ...]; and Y = Wo_cat H when Y != NULL.  nt threads,
 * nt <= w->scratch_threads. */
void ac_mh_forward_core(const ac_mh *L, const ac_mat *X, ac_mh_work *w, ac_mat *Y, int nt);

/* The softmax scratch of w: 2n doubles per thread, after the backward area
 * (dH hh n, dQKV 3 hh n, dP and dZ n^2 each). */
double *ac_mh_work_scratch(const ac_mh_work *w);

#endif /* AC_ATTENTION_MH_IMPL_H */
