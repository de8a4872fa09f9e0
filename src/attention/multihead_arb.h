/* multihead_arb.h — multi-head attention layers in Arb ball arithmetic
 * (internal: Arb types do not appear in the installed headers). */
#ifndef AC_MULTIHEAD_ARB_H
#define AC_MULTIHEAD_ARB_H

#include "core/ac_arb.h"
#include "attncheck/multihead.h"

/* Y (d x n, initialised) = y(X) for the ball matrix X (d x n): every ball of Y
 * contains the exact layer output for every X' in X, with the exact doubles
 * of L.  The logit scale is the ball 1/sqrt(hs) (arb_rsqrt_ui). */
void ac_mh_forward_arb(arb_mat_t Y, const ac_mh *L, const arb_mat_t X, slong prec);

/* P_i (n x n, initialised) = the softmax matrix of head i in balls. */
void ac_mh_head_softmax_arb(arb_mat_t P, const ac_mh *L, size_t i, const arb_mat_t X, slong prec);

#endif
