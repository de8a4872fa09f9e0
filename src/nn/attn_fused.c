/* attn_fused.c — multi-head attention for small heads without BLAS: per
 * (sequence, head) the scores, the masked softmax and the weighted sum of
 * the values run block of rows by block of rows in cache, over the
 * unmasked keys only (j <= t when causal, j < klen).  For the head sizes
 * of the training benchmarks (S = 16..64, T = 64..128) one dgemm per head
 * pays its call, packing and edge overhead on a 64 x 64 x 16 product and
 * computes the masked half of the causal scores; here every product is one
 * register-blocked kernel (MR x NC tiles of fused multiply-adds) on the
 * operands as they lie, and the causal step does about T^2/2 S
 * multiply-adds per product instead of T^2 S.
 *
 * Summation orders are fixed by the sizes (never by threads).  The naive
 * references are ac_nn_attention_forward_ref / _backward_ref (layers.c);
 * src/nn/test/test_nn_attn.c checks this path and the BLAS path against them.
 */
#include <config.h>

#include <math.h>
#include <string.h>

#include "nn/attn_fused.h"
#include "attention/softmax.h"
#include "core/exp_kernel.h"

#include <cblas.h>

#if defined(__AVX512F__)
#include <immintrin.h>
typedef __m512d vd;
#define VW 8
#define VZERO() _mm512_setzero_pd()
#define VLOAD(p) _mm512_loadu_pd(p)
#define VSTORE(p, x) _mm512_storeu_pd(p, x)
#define VSET1(x) _mm512_set1_pd(x)
#define VFMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define VMUL(a, b) _mm512_mul_pd(a, b)
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
typedef __m256d vd;
#define VW 4
#define VZERO() _mm256_setzero_pd()
#define VLOAD(p) _mm256_loadu_pd(p)
#define VSTORE(p, x) _mm256_storeu_pd(p, x)
#define VSET1(x) _mm256_set1_pd(x)
#define VFMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define VMUL(a, b) _mm256_mul_pd(a, b)
#endif

#ifdef VW
#define MR 4        /* rows of a tile */
#define NC (2 * VW) /* columns of a tile */
#define PADNC(T) (((T) + NC - 1) / NC * NC)

int nn_attn_fused_fits(size_t T, size_t S)
{
    return S >= 1 && S % NC == 0 && S <= AC_NN_FUSED_MAX_S && T >= 1 &&
           S * PADNC(T) <= AC_NN_FUSED_MAX_ST;
}

/* The tile C[r*ldc + c] = alpha sum_{k0 <= k < k1} A[r*ars + k*aks] Bm[k*ldb + c]
 * for r < mr (<= MR), c < nc (<= NC); each entry summed in the order of k
 * with fused multiply-adds.  Bm's rows must hold NC readable doubles. */
static inline __attribute__((always_inline)) void tile(double *C, size_t ldc, const double *A, size_t ars, size_t aks,
                        const double *Bm, size_t ldb, size_t k0, size_t k1, double alpha,
                        size_t mr, size_t nc)
{
    const double *a0 = A, *a1 = A + (mr > 1 ? ars : 0), *a2 = A + (mr > 2 ? 2 * ars : 0),
                 *a3 = A + (mr > 3 ? 3 * ars : 0);
    vd c00 = VZERO(), c01 = VZERO(), c10 = VZERO(), c11 = VZERO();
    vd c20 = VZERO(), c21 = VZERO(), c30 = VZERO(), c31 = VZERO();
    for (size_t k = k0; k < k1; k++) {
        const double *b = Bm + k * ldb;
        vd b0 = VLOAD(b), b1 = VLOAD(b + VW), x;
        size_t o = k * aks;
        x = VSET1(a0[o]);
        c00 = VFMA(x, b0, c00);
        c01 = VFMA(x, b1, c01);
        x = VSET1(a1[o]);
        c10 = VFMA(x, b0, c10);
        c11 = VFMA(x, b1, c11);
        x = VSET1(a2[o]);
        c20 = VFMA(x, b0, c20);
        c21 = VFMA(x, b1, c21);
        x = VSET1(a3[o]);
        c30 = VFMA(x, b0, c30);
        c31 = VFMA(x, b1, c31);
    }
    vd s = VSET1(alpha);
    if (alpha != 1.0) {
        c00 = VMUL(c00, s), c01 = VMUL(c01, s), c10 = VMUL(c10, s), c11 = VMUL(c11, s);
        c20 = VMUL(c20, s), c21 = VMUL(c21, s), c30 = VMUL(c30, s), c31 = VMUL(c31, s);
    }
    if (mr == MR && nc == NC) {
        VSTORE(C, c00), VSTORE(C + VW, c01), VSTORE(C + ldc, c10), VSTORE(C + ldc + VW, c11);
        C += 2 * ldc;
        VSTORE(C, c20), VSTORE(C + VW, c21), VSTORE(C + ldc, c30), VSTORE(C + ldc + VW, c31);
        return;
    }
    double buf[MR][NC];
    VSTORE(buf[0], c00), VSTORE(buf[0] + VW, c01), VSTORE(buf[1], c10), VSTORE(buf[1] + VW, c11);
    VSTORE(buf[2], c20), VSTORE(buf[2] + VW, c21), VSTORE(buf[3], c30), VSTORE(buf[3] + VW, c31);
    for (size_t r = 0; r < mr; r++)
        for (size_t c = 0; c < nc; c++)
            C[r * ldc + c] = buf[r][c];
}

/* keys of row t that the softmax sees */
static inline size_t row_len(size_t t, size_t T, size_t kl, int causal)
{
    size_t len = causal ? t + 1 : T;
    return len < kl ? len : kl;
}

/* One (sequence, head): q, k, v rows of stride ld, out rows of stride ldo,
 * a (T,T); kt: S x PADNC(T) scratch for K transposed. */
static void fwd_head(double *out, size_t ldo, double *a, const double *q, const double *k,
                     const double *v, size_t ld, size_t T, size_t S, size_t kl, int causal,
                     double *kt)
{
    double scale = 1.0 / sqrt((double)S);
    size_t Tp = PADNC(T);
    for (size_t i = 0; i < S; i++)
        for (size_t j = kl; j < Tp; j++)
            kt[i * Tp + j] = 0;
    for (size_t i = 0; i < S; i++)
        for (size_t j = 0; j < kl; j++)
            kt[i * Tp + j] = k[j * ld + i];
    for (size_t t0 = 0; t0 < T; t0 += MR) {
        size_t mr = T - t0 < MR ? T - t0 : MR, lmax = row_len(t0 + mr - 1, T, kl, causal);
        /* pre[t,j] = (q_t . k_j) / sqrt(S), the sum over i in order */
        for (size_t j0 = 0; j0 < lmax; j0 += NC)
            tile(a + t0 * T + j0, T, q + t0 * ld, ld, 1, kt + j0, Tp, 0, S, scale, mr,
                 T - j0 < NC ? T - j0 : NC);
        for (size_t t = t0; t < t0 + mr; t++) {
            size_t len = row_len(t, T, kl, causal);
            nn_softmax_row(a + t * T, len);
            if (len < T)
                memset(a + t * T + len, 0, (T - len) * sizeof *a);
        }
        /* out_t = sum_j att[t,j] v_j over j < lmax (att is 0 past len) */
        for (size_t c0 = 0; c0 < S; c0 += NC)
            tile(out + t0 * ldo + c0, ldo, a + t0 * T, T, 1, v + c0, ld, 0, lmax, 1.0, mr, NC);
    }
}

void nn_attention_forward_fused(double *out, double *att, const double *qkv, size_t B, size_t T,
                                size_t H, size_t S, int causal, const size_t *klen)
{
    size_t D = H * S, ld = 3 * D;
    double kt[AC_NN_FUSED_MAX_ST];
    for (size_t b = 0; b < B; b++) {
        size_t kl = klen && klen[b] >= 1 && klen[b] < T ? klen[b] : T;
        for (size_t h = 0; h < H; h++) {
            const double *q = qkv + b * T * ld + h * S;
            fwd_head(out + b * T * D + h * S, D, att + (b * H + h) * T * T, q, q + D, q + 2 * D,
                     ld, T, S, kl, causal, kt);
        }
    }
}

/* One (sequence, head) backward.  dq, dk, dv rows of stride ld (set, =);
 * dy rows of stride ldy; a (T,T) the forward's probabilities (zero on the
 * masked entries); dp (T,T) and vt (S x PADNC(T)) scratch. */
static void bwd_head(double *dq, double *dk, double *dv, const double *dy, size_t ldy,
                     const double *a, const double *q, const double *k, const double *v,
                     size_t ld, size_t T, size_t S, int causal, double *dp, double *vt)
{
    double scale = 1.0 / sqrt((double)S);
    size_t Tp = PADNC(T);
    for (size_t i = 0; i < S; i++)
        for (size_t j = T; j < Tp; j++)
            vt[i * Tp + j] = 0;
    for (size_t i = 0; i < S; i++)
        for (size_t j = 0; j < T; j++)
            vt[i * Tp + j] = v[j * ld + i];
    for (size_t t0 = 0; t0 < T; t0 += MR) {
        size_t mr = T - t0 < MR ? T - t0 : MR, lmax = causal ? t0 + mr : T;
        /* forward: y = att V, so datt[t,j] = dy_t . v_j */
        for (size_t j0 = 0; j0 < lmax; j0 += NC)
            tile(dp + t0 * T + j0, T, dy + t0 * ldy, ldy, 1, vt + j0, Tp, 0, S, 1.0, mr,
                 T - j0 < NC ? T - j0 : NC);
        /* att = softmax(pre): dpre = att (datt - att . datt); the 1/sqrt(S)
         * of pre = Q K^T / sqrt(S) is folded in */
        for (size_t t = t0; t < t0 + mr; t++)
            nn_softmax_backward_row(dp + t * T, a + t * T, causal ? t + 1 : T, T, scale);
        /* dq_t = sum_j dpre[t,j] k_j */
        for (size_t c0 = 0; c0 < S; c0 += NC)
            tile(dq + t0 * ld + c0, ld, dp + t0 * T, T, 1, k + c0, ld, 0, lmax, 1.0, mr, NC);
    }
    /* key j: dk_j = sum_t dpre[t,j] q_t, dv_j = sum_t att[t,j] dy_t, over
     * t >= j when causal (both factors are 0 for t < j) */
    for (size_t j0 = 0; j0 < T; j0 += MR) {
        size_t mr = T - j0 < MR ? T - j0 : MR, ts = causal ? j0 : 0;
        for (size_t c0 = 0; c0 < S; c0 += NC) {
            tile(dk + j0 * ld + c0, ld, dp + j0, 1, T, q + c0, ld, ts, T, 1.0, mr, NC);
            tile(dv + j0 * ld + c0, ld, a + j0, 1, T, dy + c0, ldy, ts, T, 1.0, mr, NC);
        }
    }
}

void nn_attention_backward_fused(double *dqkv, double *scratch, const double *dout,
                                 const double *qkv, const double *att, size_t B, size_t T,
                                 size_t H, size_t S, int causal)
{
    size_t D = H * S, ld = 3 * D;
    double vt[AC_NN_FUSED_MAX_ST];
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const double *q = qkv + b * T * ld + h * S;
            double *dq = dqkv + b * T * ld + h * S;
            bwd_head(dq, dq + D, dq + 2 * D, dout + b * T * D + h * S, D,
                     att + (b * H + h) * T * T, q, q + D, q + 2 * D, ld, T, S, causal, scratch,
                     vt);
        }
}

#endif /* VW */

/* ---------------------------------------------------------------- causal blocks on BLAS
 *
 * Causal attention on BLAS in row blocks of AC_NN_CAUSAL_BLOCK: row block
 * [r0, r1) sees keys [0, r1) only, key block [c0, c1) is seen by rows
 * [c0, T) only, so the products skip the upper triangle of blocks above the
 * diagonal (at T = 2 blocks 3/4 of the dense work, at 4 blocks 5/8).  The
 * entries inside a diagonal block above the diagonal are computed and then
 * zeroed by the softmax / its backward (att and dpre are exactly 0 there),
 * so every result is a sum of the same nonzero terms as the dense path, in
 * the order of BLAS on the sizes, which depend only on T and S. */

static size_t blk_end(size_t r0, size_t T)
{
    return r0 + AC_NN_CAUSAL_BLOCK < T ? r0 + AC_NN_CAUSAL_BLOCK : T;
}

void nn_attention_forward_causal_blas(double *out, double *att, const double *qkv, size_t B,
                                      size_t T, size_t H, size_t S)
{
    size_t D = H * S, ld = 3 * D;
    double scale = 1.0 / sqrt((double)S);
    if (T == 0 || S == 0) {
        nn_attention_forward_blas(out, att, qkv, B, T, H, S, 1, NULL);
        return;
    }
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const double *q = qkv + b * T * ld + h * S, *k = q + D, *v = q + 2 * D;
            double *a = att + (b * H + h) * T * T, *o = out + b * T * D + h * S;
            for (size_t r0 = 0; r0 < T; r0 += AC_NN_CAUSAL_BLOCK) {
                size_t r1 = blk_end(r0, T), m = r1 - r0;
                /* pre[r0:r1, 0:r1] = Q[r0:r1] K[0:r1]^T / sqrt(S) */
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)r1,
                            (blasint)S, scale, q + r0 * ld, (blasint)ld, k, (blasint)ld, 0.0,
                            a + r0 * T, (blasint)T);
                for (size_t t = r0; t < r1; t++) {
                    nn_softmax_row(a + t * T, t + 1);
                    memset(a + t * T + t + 1, 0, (T - t - 1) * sizeof *a);
                }
                /* out[r0:r1] = att[r0:r1, 0:r1] V[0:r1] */
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)S,
                            (blasint)r1, 1.0, a + r0 * T, (blasint)T, v, (blasint)ld, 0.0,
                            o + r0 * D, (blasint)D);
            }
        }
}

void nn_attention_backward_causal_blas(double *dqkv, double *scratch, const double *dout,
                                       const double *qkv, const double *att, size_t B, size_t T,
                                       size_t H, size_t S)
{
    size_t D = H * S, ld = 3 * D;
    double scale = 1.0 / sqrt((double)S);
    if (T == 0 || S == 0)
        return;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const double *q = qkv + b * T * ld + h * S, *k = q + D, *v = q + 2 * D;
            double *dq = dqkv + b * T * ld + h * S, *dk = dq + D, *dv = dq + 2 * D;
            const double *a = att + (b * H + h) * T * T;
            const double *dy = dout + b * T * D + h * S;
            for (size_t r0 = 0; r0 < T; r0 += AC_NN_CAUSAL_BLOCK) {
                size_t r1 = blk_end(r0, T), m = r1 - r0;
                /* forward: y = att V, so datt[r0:r1, 0:r1] = dy[r0:r1] V[0:r1]^T */
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)r1,
                            (blasint)S, 1.0, dy + r0 * D, (blasint)D, v, (blasint)ld, 0.0,
                            scratch + r0 * T, (blasint)T);
                /* att = softmax(pre) row by row (zeroes columns past t) */
                for (size_t t = r0; t < r1; t++)
                    nn_softmax_backward_row(scratch + t * T, a + t * T, t + 1, T, 1.0);
                /* pre = Q K^T / sqrt(S): dQ[r0:r1] = dpre[r0:r1, 0:r1] K[0:r1] / sqrt(S) */
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)S,
                            (blasint)r1, scale, scratch + r0 * T, (blasint)T, k, (blasint)ld, 0.0,
                            dq + r0 * ld, (blasint)ld);
            }
            for (size_t c0 = 0; c0 < T; c0 += AC_NN_CAUSAL_BLOCK) {
                size_t c1 = blk_end(c0, T), m = c1 - c0, n = T - c0;
                /* dV[c0:c1] = att[c0:T, c0:c1]^T dy[c0:T] (att[t, j] = 0 for t < j) */
                cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)m, (blasint)S,
                            (blasint)n, 1.0, a + c0 * T + c0, (blasint)T, dy + c0 * D, (blasint)D,
                            0.0, dv + c0 * ld, (blasint)ld);
                /* dK[c0:c1] = dpre[c0:T, c0:c1]^T Q[c0:T] / sqrt(S) */
                cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)m, (blasint)S,
                            (blasint)n, scale, scratch + c0 * T + c0, (blasint)T, q + c0 * ld,
                            (blasint)ld, 0.0, dk + c0 * ld, (blasint)ld);
            }
        }
}

#ifndef VW
/* no vector fused multiply-add: the BLAS path everywhere */

int nn_attn_fused_fits(size_t T, size_t S)
{
    (void)T, (void)S;
    return 0;
}

void nn_attention_forward_fused(double *out, double *att, const double *qkv, size_t B, size_t T,
                                size_t H, size_t S, int causal, const size_t *klen)
{
    nn_attention_forward_blas(out, att, qkv, B, T, H, S, causal, klen);
}

void nn_attention_backward_fused(double *dqkv, double *scratch, const double *dout,
                                 const double *qkv, const double *att, size_t B, size_t T,
                                 size_t H, size_t S, int causal)
{
    nn_attention_backward_blas(dqkv, scratch, dout, qkv, att, B, T, H, S, causal);
}

#endif
