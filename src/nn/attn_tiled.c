/* attn_tiled.c — causal multi-head attention on the register-tiled product
 * (nn_tgemm_tri, nn/nn_tgemm.h), in row strips of AC_NN_TILED_STRIP =
 * NN_TGEMM_MR tokens, one call per product and head.
 *
 * The same blocking as the causal path on BLAS (attn_fused.c), with strips
 * of 8: strip [r0, r1) of queries multiplies against keys [0, r1) only, and
 * strip [c0, c1) of keys receives gradient from queries [c0, T) only; entries
 * above the diagonal inside a strip are computed and then zeroed by the
 * softmax or its backward, so every sum has the same nonzero terms as the
 * dense formula.  Every product entry is summed in the fixed order of
 * nn_tgemm (index order of the inner dimension), so the result depends only
 * on the sizes, never on the number of threads.  The products read Q, dy,
 * att and the score gradients in place; K^T (forward) and V^T (backward)
 * are copied by nn_tgemm panel by panel (24 keys x up to 128 of the head's
 * coordinates), once per head.
 *
 * The naive references are ac_nn_attention_forward_ref / _backward_ref
 * (layers.c); src/nn/test/test_nn_attn.c checks these functions against them.
 */
#include <config.h>

#include <math.h>
#include <string.h>

#include "nn/attn_fused.h"
#include "nn/nn_tgemm.h"

int nn_attn_tiled_fits(size_t T, size_t S)
{
    return NN_TGEMM_SIMD && T > AC_NN_TILED_STRIP && S > 0;
}

void nn_attention_forward_causal_tiled(double *out, double *att, const double *qkv, size_t B,
                                       size_t T, size_t H, size_t S)
{
    size_t D = H * S, ld = 3 * D;
    double scale = 1.0 / sqrt((double)S);
    if (!nn_attn_tiled_fits(T, S)) {
        nn_attention_forward_causal_blas(out, att, qkv, B, T, H, S);
        return;
    }
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const double *q = qkv + b * T * ld + h * S, *k = q + D, *v = q + 2 * D;
            double *a = att + (b * H + h) * T * T, *o = out + b * T * D + h * S;
            /* pre[t, 0:e] = Q[t] K[0:e]^T / sqrt(S), e the end of t's strip */
            nn_tgemm_tri(T, T, S, scale, q, ld, 1, k, ld, 1, a, T, NN_TRI_COLS);
            for (size_t t = 0; t < T; t++) {
                nn_softmax_row(a + t * T, t + 1);
                memset(a + t * T + t + 1, 0, (T - t - 1) * sizeof *a);
            }
            /* out[t] = att[t, 0:e] V[0:e] (att[t, j] = 0 for j > t) */
            nn_tgemm_tri(T, S, T, 1.0, a, T, 1, v, ld, 0, o, D, NN_TRI_KHI);
        }
}

void nn_attention_backward_causal_tiled(double *dqkv, double *scratch, const double *dout,
                                        const double *qkv, const double *att, size_t B, size_t T,
                                        size_t H, size_t S)
{
    size_t D = H * S, ld = 3 * D;
    double scale = 1.0 / sqrt((double)S);
    if (!nn_attn_tiled_fits(T, S)) {
        nn_attention_backward_causal_blas(dqkv, scratch, dout, qkv, att, B, T, H, S);
        return;
    }
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const double *q = qkv + b * T * ld + h * S, *k = q + D, *v = q + 2 * D;
            double *dq = dqkv + b * T * ld + h * S, *dk = dq + D, *dv = dq + 2 * D;
            const double *a = att + (b * H + h) * T * T;
            const double *dy = dout + b * T * D + h * S;
            /* forward: y = att V, so datt[t, 0:e] = dy[t] V[0:e]^T */
            nn_tgemm_tri(T, T, S, 1.0, dy, D, 1, v, ld, 1, scratch, T, NN_TRI_COLS);
            /* att = softmax(pre) row by row (zeroes columns past t) */
            for (size_t t = 0; t < T; t++)
                nn_softmax_backward_row(scratch + t * T, a + t * T, t + 1, T, 1.0);
            /* pre = Q K^T / sqrt(S): dQ[t] = dpre[t, 0:e] K[0:e] / sqrt(S) */
            nn_tgemm_tri(T, S, T, scale, scratch, T, 1, k, ld, 0, dq, ld, NN_TRI_KHI);
            /* dV[c] = att[c0:T, c]^T dy[c0:T], c0 the start of c's strip
             * (att[t, c] = 0 for t < c) */
            nn_tgemm_tri(T, S, T, 1.0, a, 1, T, dy, D, 0, dv, ld, NN_TRI_KLO);
            /* dK[c] = dpre[c0:T, c]^T Q[c0:T] / sqrt(S) */
            nn_tgemm_tri(T, S, T, scale, scratch, 1, T, q, ld, 0, dk, ld, NN_TRI_KLO);
        }
}
