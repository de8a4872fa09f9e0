/* attn_fused.h — BLAS-free multi-head attention for small heads
 * (attn_fused.c), used by the layers' attention when it fits. */
#ifndef NN_ATTN_FUSED_H
#define NN_ATTN_FUSED_H

#include <stddef.h>

/* the largest head size and head size x padded sequence length handled
 * (the transposed keys / values live on the stack: 64 KiB) */
#define AC_NN_FUSED_MAX_S 64
#define AC_NN_FUSED_MAX_ST 8192
/* the largest head sizes whose forward / backward take the fused path:
 * measured (CPU time of the kernels at the bench/train.sh shapes, notes of
 * issue 13), at S = 32 and 64 the causal blocks on BLAS below are faster
 * (T = 64, S = 64: forward 9.2 -> 6.9 ms, backward 15.8 -> 10.8 ms per
 * step); at S = 16 the fused kernels are (3.0 vs 3.2, 3.2 vs 3.4 ms) */
#define AC_NN_FUSED_FWD_MAX_S 16
#define AC_NN_FUSED_BWD_MAX_S 16

/* Nonzero when the fused kernels handle T tokens and head size S. */
int nn_attn_fused_fits(size_t T, size_t S);
/* As nn_attention_forward_len (nn_impl.h): out (B,T,D), att (B,H,T,T),
 * qkv (B,T,3D), keys t >= klen[b] masked (klen NULL: none). */
void nn_attention_forward_fused(double *out, double *att, const double *qkv, size_t B, size_t T,
                                size_t H, size_t S, int causal, const size_t *klen);
/* As ac_nn_attention_backward: dqkv (B,T,3D) set, scratch T*T doubles. */
void nn_attention_backward_fused(double *dqkv, double *scratch, const double *dout,
                                 const double *qkv, const double *att, size_t B, size_t T,
                                 size_t H, size_t S, int causal);

/* The same on BLAS: two dgemms (forward) or four (backward) per
 * (sequence, head) over the whole T x T square (layers.c). */
void nn_attention_forward_blas(double *out, double *att, const double *qkv, size_t B, size_t T,
                               size_t H, size_t S, int causal, const size_t *klen);
void nn_attention_backward_blas(double *dqkv, double *scratch, const double *dout,
                                const double *qkv, const double *att, size_t B, size_t T,
                                size_t H, size_t S, int causal);

/* The softmax of a[0 .. len-1] in place (softmax_fused.c): AVX-512 with
 * masked tails, exp lane by lane as core/exp_kernel.h; the reference twin
 * nn_softmax_row_ref is the scalar kernel in index order. */
void nn_softmax_row(double *a, size_t len);
void nn_softmax_row_ref(double *a, size_t len);
/* d[j] = scale att[j] (d[j] - sum_i att[i] d[i]) for j < len, 0 for
 * len <= j < n: the backward of a softmax row (dot product in vector lane
 * sums; the twin sums in index order). */
void nn_softmax_backward_row(double *d, const double *a, size_t len, size_t n, double scale);
void nn_softmax_backward_row_ref(double *d, const double *a, size_t len, size_t n, double scale);

/* Causal attention on BLAS in row blocks of AC_NN_CAUSAL_BLOCK tokens
 * (attn_fused.c): the products skip the blocks above the diagonal; same
 * contract as the two functions above with causal = 1 and no key mask. */
/* 16: measured against 8, 32 and 64 at T = 64, S = 64 and T = 128, S = 32 */
#define AC_NN_CAUSAL_BLOCK 16
void nn_attention_forward_causal_blas(double *out, double *att, const double *qkv, size_t B,
                                      size_t T, size_t H, size_t S);
void nn_attention_backward_causal_blas(double *dqkv, double *scratch, const double *dout,
                                       const double *qkv, const double *att, size_t B, size_t T,
                                       size_t H, size_t S);

/* Causal attention on the register-tiled product nn_tgemm_tri in row
 * strips of AC_NN_TILED_STRIP tokens, one call per product and head
 * (attn_tiled.c): same contract and blocking as the two functions above.
 * nn_attn_tiled_fits: nonzero when this path runs (AVX-512 builds,
 * T > AC_NN_TILED_STRIP, S > 0); otherwise the two functions fall back to
 * the BLAS blocks. */
#define AC_NN_TILED_STRIP 8 /* = NN_TGEMM_MR (nn_tgemm.h) */
int nn_attn_tiled_fits(size_t T, size_t S);
void nn_attention_forward_causal_tiled(double *out, double *att, const double *qkv, size_t B,
                                       size_t T, size_t H, size_t S);
void nn_attention_backward_causal_tiled(double *dqkv, double *scratch, const double *dout,
                                        const double *qkv, const double *att, size_t B, size_t T,
                                        size_t H, size_t S);

#endif
