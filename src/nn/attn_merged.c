/* attn_merged.c — the attention block of a transformer layer with each
 * head's two products merged, for heads at least as wide as the model
 * (head size S >= width C; doc/mathematics.md §6.7).
 *
 * A head computes softmax((x Wq_h^T + bq_h)(x Wk_h^T + bk_h)^T / sqrt(S))
 * (x Wv_h^T + bv_h) Wp_h^T, Wp_h = columns [hS, hS+S) of the output
 * projection.  Because a softmax row is unchanged by a constant added to
 * the whole row, and a softmax row sums to 1, the block equals
 *
 *     out = x + be + sum_h softmax(Q'_h x^T / sqrt(C)) (x Mv_h),
 *     Q'_h = x Mq_h + uq_h,
 *     Mq_h = f Wq_h^T Wk_h,  uq_h = f bq_h Wk_h,  f = sqrt(C / S),
 *     Mv_h = Wv_h^T Wp_h^T,  be = bp + sum_h bv_h Wp_h^T,
 *
 * with C x C matrices Mq_h, Mv_h in place of the S-wide products.  With
 * S >= C a step then costs fewer flops: the key projection and the output
 * projection disappear (the keys of every head are x itself, and the
 * heads' outputs are summed), and the attention runs at head size C <= S.
 * bk_h drops out of the function altogether; its gradient is exactly 0.
 *
 * Layout: qkv (N, 3HC) = [Q'_1 .. Q'_H | x .. x | x Mv_1 .. x Mv_H], so
 * the attention kernels of layers.c run unchanged with H heads of size C.
 * The parameters, their gradients and the checkpoints are those of the
 * unmerged layer: the merged weights are rebuilt from them at every
 * forward pass, and the gradients of Mq, uq, Mv, be are taken back to the
 * parameters by the chain rule (nn_merged_param_grads).  Every product has
 * fixed operands and a fixed order, so the result is the same for any
 * number of threads (§6.3). */
#include <config.h>

#include <math.h>
#include <string.h>
#include <cblas.h>

#include "nn/nn_impl.h"
#include "nn/nn_tgemm.h"

int nn_merge_eligible(const ac_nn_model *m)
{
    return m->cfg.arch == AC_NN_ARCH_TRANSFORMER && m->cfg.width > 0 && m->cfg.heads > 0 &&
           m->S >= m->cfg.width;
}

void nn_merge_set(ac_nn_model *m, int mode)
{
    m->w->merge = nn_merge_eligible(m) && m->w->mrg != NULL ? mode : NN_MERGE_OFF;
}

/* §6.7 (iii), per head and forward pass: unmerged 8NCS + 4BT^2 S, merged
 * 4NC^2 + 4BT^2 C + 4C^2 S (forming Mq, Mv); the backward pass multiplies
 * twice the per-row products of each form and the merged one 8C^2 S more
 * (the chain rule of nn_merged_param_grads), so a training step compares
 * the same two numbers times 3.  Counted in double: no overflow. */
int nn_merge_pays(const ac_nn_model *m, size_t B, size_t T)
{
    double C = (double)m->cfg.width, S = (double)m->S, N = (double)B * (double)T;
    double att = (double)B * (double)T * (double)T;
    double unmerged = 8 * N * C * S + 4 * att * S;
    double merged = 4 * N * C * C + 4 * att * C + 4 * C * C * S;
    return merged < unmerged;
}

/* The merged weights of layer l: Mq (C, HC), Mv (C, HC), uq (HC), be (C). */
static double *layer_mrg(const ac_nn_model *m, size_t l)
{
    size_t C = m->cfg.width, HC = m->cfg.heads * C;
    return m->w->mrg + l * (2 * C * HC + HC + C);
}

static double head_factor(const ac_nn_model *m)
{
    /* the kernels scale by 1/sqrt(C) in place of 1/sqrt(S) */
    return m->S == m->cfg.width ? 1.0 : sqrt((double)m->cfg.width / (double)m->S);
}

#define LAYER_P(m, l, slot)                                                                        \
    ((m)->params + (m)->tensors[(m)->w->i_layer0 + (long)((l) * L_NTENSORS) + (slot)].offset)
#define LAYER_G(m, l, slot)                                                                        \
    ((m)->grads + (m)->tensors[(m)->w->i_layer0 + (long)((l) * L_NTENSORS) + (slot)].offset)

void nn_merged_prepare(ac_nn_model *m)
{
    size_t C = m->cfg.width, H = m->cfg.heads, S = m->S, D = m->D, HC = H * C;
    double f = head_factor(m);
    for (size_t l = 0; l < m->cfg.layers; l++) {
        const double *W = LAYER_P(m, l, L_QKVW), *b = LAYER_P(m, l, L_QKVB);
        const double *Wp = LAYER_P(m, l, L_PROJW), *bp = LAYER_P(m, l, L_PROJB);
        double *Mq = layer_mrg(m, l), *Mv = Mq + C * HC, *uq = Mv + C * HC, *be = uq + HC;
        for (size_t h = 0; h < H; h++) {
            const double *Wq = W + h * S * C, *Wk = W + (D + h * S) * C;
            const double *Wv = W + (2 * D + h * S) * C;
            /* Mq_h = f Wq_h^T Wk_h, Mv_h = Wv_h^T Wp_h^T, uq_h = f bq_h Wk_h */
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, BLAS_INT(C), BLAS_INT(C),
                        BLAS_INT(S), f, Wq, BLAS_INT(C), Wk, BLAS_INT(C), 0.0, Mq + h * C,
                        BLAS_INT(HC));
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, BLAS_INT(C), BLAS_INT(C),
                        BLAS_INT(S), 1.0, Wv, BLAS_INT(C), Wp + h * S, BLAS_INT(D), 0.0,
                        Mv + h * C, BLAS_INT(HC));
            cblas_dgemv(CblasRowMajor, CblasTrans, BLAS_INT(S), BLAS_INT(C), f, Wk, BLAS_INT(C),
                        b + h * S, 1, 0.0, uq + h * C, 1);
        }
        /* be = bp + Wp bv */
        memcpy(be, bp, C * sizeof *be);
        cblas_dgemv(CblasRowMajor, CblasNoTrans, BLAS_INT(C), BLAS_INT(D), 1.0, Wp, BLAS_INT(D),
                    b + 2 * D, 1, 1.0, be, 1);
    }
}

/* out (N, n; row stride ldo) = inp (N, k) B (k, n; row-major) + bias (or 0). */
static void mm_nn(size_t N, size_t n, size_t k, const double *inp, const double *B, double *out,
                  size_t ldo, const double *bias)
{
#if NN_TGEMM_SIMD
    nn_tgemm(N, n, k, 1.0, inp, k, 1, B, n, 0, out, ldo, bias ? NN_TG_BIAS : NN_TG_ZERO, bias);
#else
    for (size_t r = 0; r < N; r++) {
        if (bias)
            memcpy(out + r * ldo, bias, n * sizeof *out);
        else
            memset(out + r * ldo, 0, n * sizeof *out);
    }
    if (k > 0)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BLAS_INT(N), BLAS_INT(n),
                    BLAS_INT(k), 1.0, inp, BLAS_INT(k), B, BLAS_INT(n), 1.0, out, BLAS_INT(ldo));
#endif
}

/* out (N, n) += A (N, k; row stride lda) B^T, B (n, k; row-major). */
static void mm_nt_add(size_t N, size_t n, size_t k, const double *A, size_t lda, const double *B,
                      double *out)
{
#if NN_TGEMM_SIMD
    nn_tgemm(N, n, k, 1.0, A, lda, 1, B, k, 1, out, n, NN_TG_ADD, NULL);
#else
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BLAS_INT(N), BLAS_INT(n), BLAS_INT(k),
                1.0, A, BLAS_INT(lda), B, BLAS_INT(k), 1.0, out, BLAS_INT(n));
#endif
}

void nn_merged_block_forward(const ac_nn_model *m, size_t l, double *res, double *qkv,
                             double *atty, double *att, const double *xin, const double *xres,
                             size_t nb, const size_t *klen)
{
    size_t C = m->cfg.width, H = m->cfg.heads, HC = H * C, ld = 3 * HC, T = m->w->T;
    size_t N = nb * T;
    const double *Mq = layer_mrg(m, l), *Mv = Mq + C * HC, *uq = Mv + C * HC, *be = uq + HC;
    mm_nn(N, HC, C, xin, Mq, qkv, ld, uq);
    mm_nn(N, HC, C, xin, Mv, qkv + 2 * HC, ld, NULL);
    for (size_t r = 0; r < N; r++)
        for (size_t h = 0; h < H; h++)
            memcpy(qkv + r * ld + HC + h * C, xin + r * C, C * sizeof *qkv);
    nn_attention_forward_len(atty, att, qkv, nb, T, H, C, m->cfg.causal, klen);
    /* res = xres + be + sum_h atty_h, in this order */
    for (size_t r = 0; r < N; r++) {
        const double *x = xres + r * C, *a = atty + r * HC;
        double *o = res + r * C;
#pragma omp simd
        for (size_t i = 0; i < C; i++)
            o[i] = x[i] + be[i];
        for (size_t h = 0; h < H; h++) {
#pragma omp simd
            for (size_t i = 0; i < C; i++)
                o[i] += a[h * C + i];
        }
    }
}

void nn_merged_block_backward(const ac_nn_model *m, size_t l, double *gxin, int accumulate,
                              const double *gres, double *gatty, double *gqkv, double *scratch,
                              const double *qkv, const double *att, size_t nb)
{
    size_t C = m->cfg.width, H = m->cfg.heads, HC = H * C, ld = 3 * HC, T = m->w->T;
    size_t N = nb * T;
    const double *Mq = layer_mrg(m, l), *Mv = Mq + C * HC;
    /* every head's output enters the sum with weight 1 */
    for (size_t r = 0; r < N; r++)
        for (size_t h = 0; h < H; h++)
            memcpy(gatty + r * HC + h * C, gres + r * C, C * sizeof *gatty);
    ac_nn_attention_backward(gqkv, scratch, gatty, qkv, att, nb, T, H, C, m->cfg.causal);
    /* x feeds the keys of every head directly, Q' through Mq, V' through Mv */
    for (size_t r = 0; r < N; r++) {
        const double *dk = gqkv + r * ld + HC;
        double *g = gxin + r * C;
        if (!accumulate)
            memset(g, 0, C * sizeof *g);
        for (size_t h = 0; h < H; h++) {
#pragma omp simd
            for (size_t i = 0; i < C; i++)
                g[i] += dk[h * C + i];
        }
    }
    mm_nt_add(N, C, HC, gqkv, ld, Mq, gxin);
    mm_nt_add(N, C, HC, gqkv + 2 * HC, ld, Mv, gxin);
}

void nn_merged_param_grads(ac_nn_model *m, size_t l)
{
    ac_nn_work *w = m->w;
    size_t C = m->cfg.width, H = m->cfg.heads, S = m->S, D = m->D, HC = H * C;
    double f = head_factor(m);
    const double *W = LAYER_P(m, l, L_QKVW), *b = LAYER_P(m, l, L_QKVB);
    const double *Wp = LAYER_P(m, l, L_PROJW);
    double *dW = LAYER_G(m, l, L_QKVW), *db = LAYER_G(m, l, L_QKVB);
    double *dWp = LAYER_G(m, l, L_PROJW);
    const double *gM = w->mrg_grad, *du = gM + 3 * HC * C, *dbe = du + HC;
    for (size_t h = 0; h < H; h++) {
        const double *Wq = W + h * S * C, *Wk = W + (D + h * S) * C;
        const double *Wv = W + (2 * D + h * S) * C, *bq = b + h * S, *bv = b + 2 * D + h * S;
        /* E = dMq_h^T and F = dMv_h^T, as the phase-2 tiles wrote them */
        const double *E = gM + h * C * C, *F = gM + (2 * HC + h * C) * C;
        double *dWq = dW + h * S * C, *dWk = dW + (D + h * S) * C, *dWv = dW + (2 * D + h * S) * C;
        /* Mq_h = f Wq_h^T Wk_h:  dWq_h += f Wk_h E,  dWk_h += f Wq_h E^T */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BLAS_INT(S), BLAS_INT(C),
                    BLAS_INT(C), f, Wk, BLAS_INT(C), E, BLAS_INT(C), 1.0, dWq, BLAS_INT(C));
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BLAS_INT(S), BLAS_INT(C),
                    BLAS_INT(C), f, Wq, BLAS_INT(C), E, BLAS_INT(C), 1.0, dWk, BLAS_INT(C));
        /* uq_h = f bq_h Wk_h:  dbq_h += f Wk_h du_h,  dWk_h += f bq_h du_h^T */
        cblas_dgemv(CblasRowMajor, CblasNoTrans, BLAS_INT(S), BLAS_INT(C), f, Wk, BLAS_INT(C),
                    du + h * C, 1, 1.0, db + h * S, 1);
        cblas_dger(CblasRowMajor, BLAS_INT(S), BLAS_INT(C), f, bq, 1, du + h * C, 1, dWk,
                   BLAS_INT(C));
        /* Mv_h = Wv_h^T Wp_h^T:  dWv_h += Wp_h^T F,  dWp_h += F Wv_h^T */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, BLAS_INT(S), BLAS_INT(C),
                    BLAS_INT(C), 1.0, Wp + h * S, BLAS_INT(D), F, BLAS_INT(C), 1.0, dWv,
                    BLAS_INT(C));
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BLAS_INT(C), BLAS_INT(S),
                    BLAS_INT(C), 1.0, F, BLAS_INT(C), Wv, BLAS_INT(C), 1.0, dWp + h * S,
                    BLAS_INT(D));
        /* be = bp + sum_h Wp_h bv_h:  dbv_h += Wp_h^T dbe,  dWp_h += dbe bv_h^T */
        cblas_dgemv(CblasRowMajor, CblasTrans, BLAS_INT(C), BLAS_INT(S), 1.0, Wp + h * S,
                    BLAS_INT(D), dbe, 1, 1.0, db + 2 * D + h * S, 1);
        cblas_dger(CblasRowMajor, BLAS_INT(C), BLAS_INT(S), 1.0, dbe, 1, bv, 1, dWp + h * S,
                   BLAS_INT(D));
    }
}
