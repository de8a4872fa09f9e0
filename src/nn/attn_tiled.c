/* attn_tiled.c — causal multi-head attention on the register-tiled product
 * nn_tgemm (nn/nn_tgemm.h), in row strips of AC_NN_TILED_STRIP tokens.
 *
 * The same blocking as the causal path on BLAS (attn_fused.c): strip
 * [r0, r1) of queries multiplies against keys [0, r1) only, and strip
 * [c0, c1) of keys receives gradient from queries [c0, T) only; entries
 * above the diagonal inside a strip are computed and then zeroed by the
 * softmax or its backward, so every sum has the same nonzero terms as the
 * dense formula.  Every product entry is summed in the fixed order of
 * nn_tgemm (index order of the inner dimension), so the result depends only
 * on the sizes, never on the number of threads.  The keys (forward) and the
 * values (backward) of one head are transposed once per head into a stack
 * buffer (S x T doubles), so that the score products read both operands
 * in place.
 *
 * The naive references are ac_nn_attention_forward_ref / _backward_ref
 * (layers.c); tests/test_nn_attn.c checks these functions against them.
 */
#include <config.h>

#include <math.h>
#include <string.h>

#include "nn/attn_fused.h"
#include "nn/nn_tgemm.h"

int nn_attn_tiled_fits(size_t T, size_t S)
{
    return NN_TGEMM_SIMD && T > AC_NN_TILED_STRIP && S > 0 && S * T <= AC_NN_TILED_MAX_ST;
}

static size_t strip_end(size_t r0, size_t T)
{
    return r0 + AC_NN_TILED_STRIP < T ? r0 + AC_NN_TILED_STRIP : T;
}

/* xt (S x T, row stride T) = the S columns of the T rows x (row stride ld) */
static void transpose_head(double *xt, const double *x, size_t ld, size_t T, size_t S)
{
    for (size_t t = 0; t < T; t++) {
        const double *r = x + t * ld;
        for (size_t i = 0; i < S; i++)
            xt[i * T + t] = r[i];
    }
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
    double kt[AC_NN_TILED_MAX_ST] __attribute__((aligned(64)));
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const double *q = qkv + b * T * ld + h * S, *k = q + D, *v = q + 2 * D;
            double *a = att + (b * H + h) * T * T, *o = out + b * T * D + h * S;
            transpose_head(kt, k, ld, T, S);
            for (size_t r0 = 0; r0 < T; r0 += AC_NN_TILED_STRIP) {
                size_t r1 = strip_end(r0, T), m = r1 - r0;
                /* pre[r0:r1, 0:r1] = Q[r0:r1] K[0:r1]^T / sqrt(S) */
                nn_tgemm(m, r1, S, scale, q + r0 * ld, ld, 1, kt, T, 0, a + r0 * T, T,
                         NN_TG_ZERO, NULL);
                for (size_t t = r0; t < r1; t++) {
                    nn_softmax_row(a + t * T, t + 1);
                    memset(a + t * T + t + 1, 0, (T - t - 1) * sizeof *a);
                }
                /* out[r0:r1] = att[r0:r1, 0:r1] V[0:r1] */
                nn_tgemm(m, S, r1, 1.0, a + r0 * T, T, 1, v, ld, 0, o + r0 * D, D, NN_TG_ZERO,
                         NULL);
            }
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
    double vt[AC_NN_TILED_MAX_ST] __attribute__((aligned(64)));
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const double *q = qkv + b * T * ld + h * S, *k = q + D, *v = q + 2 * D;
            double *dq = dqkv + b * T * ld + h * S, *dk = dq + D, *dv = dq + 2 * D;
            const double *a = att + (b * H + h) * T * T;
            const double *dy = dout + b * T * D + h * S;
            transpose_head(vt, v, ld, T, S);
            for (size_t r0 = 0; r0 < T; r0 += AC_NN_TILED_STRIP) {
                size_t r1 = strip_end(r0, T), m = r1 - r0;
                /* forward: y = att V, so datt[r0:r1, 0:r1] = dy[r0:r1] V[0:r1]^T */
                nn_tgemm(m, r1, S, 1.0, dy + r0 * D, D, 1, vt, T, 0, scratch + r0 * T, T,
                         NN_TG_ZERO, NULL);
                /* att = softmax(pre) row by row (zeroes columns past t) */
                for (size_t t = r0; t < r1; t++)
                    nn_softmax_backward_row(scratch + t * T, a + t * T, t + 1, T, 1.0);
                /* pre = Q K^T / sqrt(S): dQ[r0:r1] = dpre[r0:r1, 0:r1] K[0:r1] / sqrt(S) */
                nn_tgemm(m, S, r1, scale, scratch + r0 * T, T, 1, k, ld, 0, dq + r0 * ld, ld,
                         NN_TG_ZERO, NULL);
            }
            for (size_t c0 = 0; c0 < T; c0 += AC_NN_TILED_STRIP) {
                size_t c1 = strip_end(c0, T), m = c1 - c0, n = T - c0;
                /* dV[c0:c1] = att[c0:T, c0:c1]^T dy[c0:T] (att[t, j] = 0 for t < j) */
                nn_tgemm(m, S, n, 1.0, a + c0 * T + c0, 1, T, dy + c0 * D, D, 0, dv + c0 * ld, ld,
                         NN_TG_ZERO, NULL);
                /* dK[c0:c1] = dpre[c0:T, c0:c1]^T Q[c0:T] / sqrt(S) */
                nn_tgemm(m, S, n, scale, scratch + c0 * T + c0, 1, T, q + c0 * ld, ld, 0,
                         dk + c0 * ld, ld, NN_TG_ZERO, NULL);
            }
        }
}
