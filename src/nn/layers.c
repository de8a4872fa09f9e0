/* layers.c — layers of the trainable attention stack (attncheck/nn.h): each a
 * forward/backward pair on flat arrays, outputs first, shapes at the top.
 * The model that strings them together is in model.c, forward.c and
 * backward.c.
 *
 * Dimension letters: B batch, T tokens, N = B*T rows, C width, V vocabulary,
 * H heads, S head size, D = H*S, F feed-forward width (see nn.h).
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cblas.h>

#include "attncheck/nn.h"
#include "nn/nn_impl.h"
#include "nn/attn_fused.h"
#include "nn/nn_tgemm.h"
#include "attention/softmax.h"
#include "core/exp_kernel.h"

/* ---------------------------------------------------------------- exp */

void ac_nn_exp(double *y, const double *x, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        y[i] = ac_exp_kernel(x[i]);
}

/* ---------------------------------------------------------------- encoder */

void ac_nn_encoder_forward(double *out, const int32_t *inp, const double *wte, const double *wpe,
                           size_t B, size_t T, size_t C)
{
    /* out (B,T,C), inp (B,T), wte (V,C), wpe (maxT,C) or NULL */
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            double *o = out + (b * T + t) * C;
            const double *e = wte + (size_t)inp[b * T + t] * C;
            if (wpe) {
                const double *p = wpe + t * C;
                for (size_t i = 0; i < C; i++)
                    o[i] = e[i] + p[i];
            } else {
                memcpy(o, e, C * sizeof *o);
            }
        }
}

void ac_nn_encoder_backward(double *dwte, double *dwpe, const double *dout, const int32_t *inp,
                            size_t B, size_t T, size_t C)
{
    /* forward: out[b,t,i] = wte[inp[b,t], i] + wpe[t, i] */
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            const double *d = dout + (b * T + t) * C;
            double *e = dwte + (size_t)inp[b * T + t] * C;
            for (size_t i = 0; i < C; i++)
                e[i] += d[i];
            if (dwpe) {
                double *p = dwpe + t * C;
                for (size_t i = 0; i < C; i++)
                    p[i] += d[i];
            }
        }
}

/* ---------------------------------------------------------------- linear */

void ac_nn_linear_forward(double *out, const double *inp, const double *w, const double *bias,
                          size_t N, size_t IC, size_t OC, int accumulate)
{
    /* out (N,OC) (+)= inp (N,IC) w^T + bias; w (OC,IC), bias (OC) */
    if (N == 0 || OC == 0)
        return;
#if NN_TGEMM_SIMD
    /* the register-tiled product, its sums started from the bias or the old
     * out (nn/nn_tgemm.h) */
    if (!(bias && accumulate)) {
        nn_tgemm(N, OC, IC, 1.0, inp, IC, 1, w, IC, 1, out, OC,
                 bias ? NN_TG_BIAS : accumulate ? NN_TG_ADD : NN_TG_ZERO, bias);
        return;
    }
#endif
    double beta = accumulate ? 1.0 : 0.0;
    if (bias) {
        for (size_t n = 0; n < N; n++) {
            double *o = out + n * OC;
            if (accumulate)
                for (size_t j = 0; j < OC; j++)
                    o[j] += bias[j];
            else
                memcpy(o, bias, OC * sizeof *o);
        }
        beta = 1.0;
    }
    if (IC == 0) {
        if (!bias && !accumulate)
            memset(out, 0, N * OC * sizeof *out);
        return;
    }
#if NN_TGEMM_SIMD
    nn_tgemm(N, OC, IC, 1.0, inp, IC, 1, w, IC, 1, out, OC, NN_TG_ADD, NULL);
    return;
#endif
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BLAS_INT(N), BLAS_INT(OC), BLAS_INT(IC),
                1.0, inp, BLAS_INT(IC), w, BLAS_INT(IC), beta, out, BLAS_INT(OC));
}

void ac_nn_linear_forward_ref(double *out, const double *inp, const double *w, const double *bias,
                              size_t N, size_t IC, size_t OC, int accumulate)
{
    for (size_t n = 0; n < N; n++)
        for (size_t o = 0; o < OC; o++) {
            double s = 0;
            for (size_t i = 0; i < IC; i++)
                s += inp[n * IC + i] * w[o * IC + i];
            if (bias)
                s += bias[o];
            out[n * OC + o] = accumulate ? out[n * OC + o] + s : s;
        }
}

void ac_nn_linear_backward_input(double *dinp, const double *dout, const double *w, size_t N,
                                 size_t IC, size_t OC, int accumulate)
{
    /* forward: out = inp w^T, so dinp (N,IC) (+)= dout (N,OC) w (OC,IC) */
    if (N == 0 || IC == 0)
        return;
    if (OC == 0) {
        if (!accumulate)
            memset(dinp, 0, N * IC * sizeof *dinp);
        return;
    }
#if NN_TGEMM_SIMD
    nn_tgemm(N, IC, OC, 1.0, dout, OC, 1, w, IC, 0, dinp, IC, accumulate ? NN_TG_ADD : NN_TG_ZERO,
             NULL);
    return;
#endif
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BLAS_INT(N), BLAS_INT(IC), BLAS_INT(OC),
                1.0, dout, BLAS_INT(OC), w, BLAS_INT(IC), accumulate ? 1.0 : 0.0, dinp,
                BLAS_INT(IC));
}

void ac_nn_linear_backward_input_ref(double *dinp, const double *dout, const double *w, size_t N,
                                     size_t IC, size_t OC, int accumulate)
{
    for (size_t n = 0; n < N; n++)
        for (size_t i = 0; i < IC; i++) {
            double s = 0;
            for (size_t o = 0; o < OC; o++)
                s += dout[n * OC + o] * w[o * IC + i];
            dinp[n * IC + i] = accumulate ? dinp[n * IC + i] + s : s;
        }
}

void ac_nn_linear_backward_weight(double *dw, double *dbias, const double *dout, const double *inp,
                                  size_t N, size_t IC, size_t OC, size_t o0, size_t o1, size_t i0,
                                  size_t i1)
{
    /* forward: out[n,o] = sum_i inp[n,i] w[o,i] + bias[o], so
     * dw[o,i] += sum_n dout[n,o] inp[n,i] and dbias[o] += sum_n dout[n,o] */
    if (o1 <= o0 || N == 0)
        return;
#if NN_TGEMM_SIMD
    if (i1 > i0)
        nn_tgemm(o1 - o0, i1 - i0, N, 1.0, dout + o0, 1, OC, inp + i0, IC, 0, dw + o0 * IC + i0,
                 IC, NN_TG_ADD, NULL);
#else
    if (i1 > i0)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, BLAS_INT(o1 - o0), BLAS_INT(i1 - i0),
                    BLAS_INT(N), 1.0, dout + o0, BLAS_INT(OC), inp + i0, BLAS_INT(IC), 1.0,
                    dw + o0 * IC + i0, BLAS_INT(IC));
#endif
    if (dbias) {
        double *db = dbias + o0;
        size_t m = o1 - o0;
        for (size_t n = 0; n < N; n++) {
            const double *d = dout + n * OC + o0;
#pragma omp simd
            for (size_t o = 0; o < m; o++)
                db[o] += d[o];
        }
    }
}

void ac_nn_linear_backward_weight_ref(double *dw, double *dbias, const double *dout,
                                      const double *inp, size_t N, size_t IC, size_t OC)
{
    for (size_t o = 0; o < OC; o++) {
        for (size_t i = 0; i < IC; i++) {
            double s = 0;
            for (size_t n = 0; n < N; n++)
                s += dout[n * OC + o] * inp[n * IC + i];
            dw[o * IC + i] += s;
        }
        if (dbias) {
            double s = 0;
            for (size_t n = 0; n < N; n++)
                s += dout[n * OC + o];
            dbias[o] += s;
        }
    }
}

/* ---------------------------------------------------------------- head projection */

void ac_nn_headproj_forward(double *out, const double *y, const double *wo, size_t N, size_t C,
                            size_t H, size_t S)
{
    /* out (N,C) = sum_h y[:, h*S:(h+1)*S] Wo_h^T, y (N,H*S), wo (H,C,S) */
    size_t D = H * S;
    if (N == 0 || C == 0)
        return;
    if (H == 0 || S == 0) {
        memset(out, 0, N * C * sizeof *out);
        return;
    }
    for (size_t h = 0; h < H; h++)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BLAS_INT(N), BLAS_INT(C), BLAS_INT(S),
                    1.0, y + h * S, BLAS_INT(D), wo + h * C * S, BLAS_INT(S), h ? 1.0 : 0.0, out,
                    BLAS_INT(C));
}

void ac_nn_headproj_backward_input(double *dy, const double *dout, const double *wo, size_t N,
                                   size_t C, size_t H, size_t S)
{
    /* forward: out += y_h Wo_h^T, so dy_h (N,S) = dout (N,C) Wo_h (C,S) */
    size_t D = H * S;
    if (N == 0 || S == 0)
        return;
    for (size_t h = 0; h < H; h++)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BLAS_INT(N), BLAS_INT(S),
                    BLAS_INT(C), 1.0, dout, BLAS_INT(C), wo + h * C * S, BLAS_INT(S), 0.0,
                    dy + h * S, BLAS_INT(D));
}

void ac_nn_headproj_backward_weight(double *dwo, const double *dout, const double *y, size_t N,
                                    size_t C, size_t H, size_t S, size_t h)
{
    /* forward: out += y_h Wo_h^T, so dWo_h (C,S) += dout^T (C,N) y_h (N,S) */
    size_t D = H * S;
    if (N == 0 || C == 0 || S == 0)
        return;
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, BLAS_INT(C), BLAS_INT(S), BLAS_INT(N), 1.0,
                dout, BLAS_INT(C), y + h * S, BLAS_INT(D), 1.0, dwo + h * C * S, BLAS_INT(S));
}

/* ---------------------------------------------------------------- layernorm */

void ac_nn_layernorm_forward(double *out, double *mean, double *rstd, const double *inp,
                             const double *w, const double *b, size_t N, size_t C)
{
    ac_nn_layernorm_forward_eps(out, mean, rstd, inp, w, b, N, C, AC_NN_LN_EPS);
}

void ac_nn_layernorm_forward_eps(double *out, double *mean, double *rstd, const double *inp,
                                 const double *w, const double *b, size_t N, size_t C, double eps)
{
    /* out (N,C), mean (N), rstd (N), inp (N,C), w (C), b (C) */
    for (size_t n = 0; n < N; n++) {
        const double *x = inp + n * C;
        double *o = out + n * C;
        double m = 0;
#pragma omp simd reduction(+ : m)
        for (size_t i = 0; i < C; i++)
            m += x[i];
        m /= (double)C;
        double v = 0;
#pragma omp simd reduction(+ : v)
        for (size_t i = 0; i < C; i++) {
            double xs = x[i] - m;
            v += xs * xs;
        }
        v /= (double)C;
        double s = 1.0 / sqrt(v + eps);
#pragma omp simd
        for (size_t i = 0; i < C; i++)
            o[i] = (x[i] - m) * s * w[i] + b[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

void ac_nn_layernorm_backward(double *dinp, const double *dres, const double *dout,
                              const double *inp, const double *w, const double *mean,
                              const double *rstd, size_t N, size_t C)
{
    /* forward: out[i] = norm[i] w[i] + b[i], norm[i] = (x[i] - mean) rstd; with
     * g = w dout: dx = rstd (g - mean(g) - norm mean(g norm)), plus dres (the
     * gradient arriving at x by another path, e.g. a residual) */
    for (size_t n = 0; n < N; n++) {
        const double *d = dout + n * C, *x = inp + n * C;
        double *dx = dinp + n * C;
        double m = mean[n], s = rstd[n];
        double gm = 0, gnm = 0;
#pragma omp simd reduction(+ : gm, gnm)
        for (size_t i = 0; i < C; i++) {
            double g = w[i] * d[i];
            gm += g;
            gnm += g * ((x[i] - m) * s);
        }
        gm /= (double)C;
        gnm /= (double)C;
        if (dres) {
            const double *r = dres + n * C;
#pragma omp simd
            for (size_t i = 0; i < C; i++)
                dx[i] = r[i] + (w[i] * d[i] - gm - ((x[i] - m) * s) * gnm) * s;
        } else {
#pragma omp simd
            for (size_t i = 0; i < C; i++)
                dx[i] = (w[i] * d[i] - gm - ((x[i] - m) * s) * gnm) * s;
        }
    }
}

void ac_nn_layernorm_backward_params(double *dw, double *db, const double *dout,
                                     const double *inp, const double *mean, const double *rstd,
                                     size_t N, size_t C)
{
    /* forward: out[n,i] = norm[n,i] w[i] + b[i] */
    for (size_t n = 0; n < N; n++) {
        const double *d = dout + n * C, *x = inp + n * C;
        double m = mean[n], s = rstd[n];
#pragma omp simd
        for (size_t i = 0; i < C; i++) {
            dw[i] += d[i] * ((x[i] - m) * s);
            db[i] += d[i];
        }
    }
}

/* ---------------------------------------------------------------- attention */

/* The scores with keys t >= klen[b] of sequence b masked (klen NULL: none). */
static void scores_forward_len(double *att, double *pre, const double *qk, size_t ld, size_t B,
                               size_t T, size_t H, size_t S, int causal, const size_t *klen)
{
    /* att, pre (B,H,T,T); qk rows of stride ld: q_h at h*S, k_h at D + h*S */
    size_t D = H * S;
    double scale = 1.0 / sqrt((double)S);
    if (T == 0)
        return;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const double *q = qk + b * T * ld + h * S, *k = q + D;
            double *a = att + (b * H + h) * T * T;
            /* pre = Q K^T / sqrt(S) (T,T) */
            if (S > 0)
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BLAS_INT(T), BLAS_INT(T),
                            BLAS_INT(S), scale, q, BLAS_INT(ld), k, BLAS_INT(ld), 0.0, a,
                            BLAS_INT(T));
            else
                memset(a, 0, T * T * sizeof *a);
            if (pre)
                memcpy(pre + (b * H + h) * T * T, a, T * T * sizeof *a);
            size_t kl = klen && klen[b] >= 1 && klen[b] < T ? klen[b] : T;
            for (size_t t = 0; t < T; t++) {
                size_t len = causal ? t + 1 : T;
                len = len < kl ? len : kl;
                ac_softmax_row(a + t * T, len);
                if (len < T)
                    memset(a + t * T + len, 0, (T - len) * sizeof *a);
            }
        }
}

void ac_nn_scores_forward(double *att, double *pre, const double *qk, size_t ld, size_t B,
                          size_t T, size_t H, size_t S, int causal)
{
    scores_forward_len(att, pre, qk, ld, B, T, H, S, causal, NULL);
}

void ac_nn_softmax_backward(double *datt, const double *att, size_t B, size_t T, size_t H,
                            int causal)
{
    /* forward: att[t,j] = exp(pre[t,j]) / sum_i exp(pre[t,i]), so
     * dpre[t,j] = att[t,j] (datt[t,j] - sum_i att[t,i] datt[t,i]) */
    for (size_t r = 0; r < B * H * T; r++) {
        size_t t = r % T, len = causal ? t + 1 : T;
        double *d = datt + r * T;
        const double *a = att + r * T;
        double s = 0;
#pragma omp simd reduction(+ : s)
        for (size_t j = 0; j < len; j++)
            s += a[j] * d[j];
#pragma omp simd
        for (size_t j = 0; j < len; j++)
            d[j] = a[j] * (d[j] - s);
        for (size_t j = len; j < T; j++)
            d[j] = 0;
    }
}

void ac_nn_scores_backward(double *dqk, size_t ldd, const double *dpre, const double *qk,
                           size_t ld, size_t B, size_t T, size_t H, size_t S)
{
    /* forward: pre = Q K^T / sqrt(S), so dQ = dpre K / sqrt(S) and
     * dK = dpre^T Q / sqrt(S) */
    size_t D = H * S;
    double scale = 1.0 / sqrt((double)S);
    if (T == 0 || S == 0)
        return;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const double *q = qk + b * T * ld + h * S, *k = q + D;
            double *dq = dqk + b * T * ldd + h * S, *dk = dq + D;
            const double *dp = dpre + (b * H + h) * T * T;
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BLAS_INT(T), BLAS_INT(S),
                        BLAS_INT(T), scale, dp, BLAS_INT(T), k, BLAS_INT(ld), 0.0, dq,
                        BLAS_INT(ldd));
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, BLAS_INT(T), BLAS_INT(S),
                        BLAS_INT(T), scale, dp, BLAS_INT(T), q, BLAS_INT(ld), 0.0, dk,
                        BLAS_INT(ldd));
        }
}

void nn_attention_forward_len(double *out, double *att, const double *qkv, size_t B, size_t T,
                              size_t H, size_t S, int causal, const size_t *klen)
{
    int masked = 0;
    for (size_t b = 0; klen && b < B; b++)
        masked |= klen[b] >= 1 && klen[b] < T;
    if (T > 0 && nn_attn_fused_fits(T, S) && S <= AC_NN_FUSED_FWD_MAX_S)
        nn_attention_forward_fused(out, att, qkv, B, T, H, S, causal, klen);
    else if (causal && !masked && nn_attn_tiled_fits(T, S))
        nn_attention_forward_causal_tiled(out, att, qkv, B, T, H, S);
    else if (causal && !masked && T > AC_NN_CAUSAL_BLOCK)
        nn_attention_forward_causal_blas(out, att, qkv, B, T, H, S);
    else
        nn_attention_forward_blas(out, att, qkv, B, T, H, S, causal, klen);
}

void nn_attention_forward_blas(double *out, double *att, const double *qkv, size_t B, size_t T,
                               size_t H, size_t S, int causal, const size_t *klen)
{
    /* out (B,T,D), att (B,H,T,T), qkv (B,T,3D) */
    size_t D = H * S, ld = 3 * D;
    if (T == 0)
        return;
    scores_forward_len(att, NULL, qkv, ld, B, T, H, S, causal, klen);
    if (S == 0)
        return;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const double *v = qkv + b * T * ld + 2 * D + h * S;
            const double *a = att + (b * H + h) * T * T;
            /* out_h (T,S) = att (T,T) V_h (T,S) */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BLAS_INT(T), BLAS_INT(S),
                        BLAS_INT(T), 1.0, a, BLAS_INT(T), v, BLAS_INT(ld), 0.0,
                        out + b * T * D + h * S, BLAS_INT(D));
        }
}

void ac_nn_attention_forward(double *out, double *att, const double *qkv, size_t B, size_t T,
                             size_t H, size_t S, int causal)
{
    nn_attention_forward_len(out, att, qkv, B, T, H, S, causal, NULL);
}

void ac_nn_attention_forward_ref(double *out, double *att, const double *qkv, size_t B, size_t T,
                                 size_t H, size_t S, int causal)
{
    size_t D = H * S, ld = 3 * D;
    double scale = 1.0 / sqrt((double)S);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                const double *q = qkv + (b * T + t) * ld + h * S;
                double *a = att + ((b * H + h) * T + t) * T;
                size_t len = causal ? t + 1 : T;
                double m = -INFINITY;
                for (size_t j = 0; j < len; j++) {
                    const double *k = qkv + (b * T + j) * ld + D + h * S;
                    double s = 0;
                    for (size_t i = 0; i < S; i++)
                        s += q[i] * k[i];
                    a[j] = s * scale;
                    m = a[j] > m ? a[j] : m;
                }
                double sum = 0;
                for (size_t j = 0; j < len; j++) {
                    a[j] = exp(a[j] - m);
                    sum += a[j];
                }
                for (size_t j = 0; j < T; j++)
                    a[j] = j < len ? a[j] / sum : 0.0;
                double *o = out + (b * T + t) * D + h * S;
                for (size_t i = 0; i < S; i++) {
                    double s = 0;
                    for (size_t j = 0; j < len; j++)
                        s += a[j] * qkv[(b * T + j) * ld + 2 * D + h * S + i];
                    o[i] = s;
                }
            }
}

void ac_nn_attention_backward(double *dqkv, double *scratch, const double *dout,
                              const double *qkv, const double *att, size_t B, size_t T, size_t H,
                              size_t S, int causal)
{
    if (T > 0 && nn_attn_fused_fits(T, S) && S <= AC_NN_FUSED_BWD_MAX_S)
        nn_attention_backward_fused(dqkv, scratch, dout, qkv, att, B, T, H, S, causal);
    else if (causal && nn_attn_tiled_fits(T, S))
        nn_attention_backward_causal_tiled(dqkv, scratch, dout, qkv, att, B, T, H, S);
    else if (causal && T > AC_NN_CAUSAL_BLOCK)
        nn_attention_backward_causal_blas(dqkv, scratch, dout, qkv, att, B, T, H, S);
    else
        nn_attention_backward_blas(dqkv, scratch, dout, qkv, att, B, T, H, S, causal);
}

void nn_attention_backward_blas(double *dqkv, double *scratch, const double *dout,
                                const double *qkv, const double *att, size_t B, size_t T,
                                size_t H, size_t S, int causal)
{
    /* dqkv (B,T,3D), scratch (T,T), dout (B,T,D), qkv (B,T,3D), att (B,H,T,T) */
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
            /* forward: y = att V, so datt = dy V^T and dV = att^T dy */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BLAS_INT(T), BLAS_INT(T),
                        BLAS_INT(S), 1.0, dy, BLAS_INT(D), v, BLAS_INT(ld), 0.0, scratch,
                        BLAS_INT(T));
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, BLAS_INT(T), BLAS_INT(S),
                        BLAS_INT(T), 1.0, a, BLAS_INT(T), dy, BLAS_INT(D), 0.0, dv, BLAS_INT(ld));
            /* forward: att = softmax(pre) row by row */
            ac_nn_softmax_backward(scratch, a, 1, T, 1, causal);
            /* forward: pre = Q K^T / sqrt(S) */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BLAS_INT(T), BLAS_INT(S),
                        BLAS_INT(T), scale, scratch, BLAS_INT(T), k, BLAS_INT(ld), 0.0, dq,
                        BLAS_INT(ld));
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, BLAS_INT(T), BLAS_INT(S),
                        BLAS_INT(T), scale, scratch, BLAS_INT(T), q, BLAS_INT(ld), 0.0, dk,
                        BLAS_INT(ld));
        }
}

void ac_nn_attention_backward_ref(double *dqkv, const double *dout, const double *qkv,
                                  const double *att, size_t B, size_t T, size_t H, size_t S,
                                  int causal)
{
    size_t D = H * S, ld = 3 * D;
    double scale = 1.0 / sqrt((double)S);
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++)
            memset(dqkv + (b * T + t) * ld, 0, ld * sizeof *dqkv);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                size_t len = causal ? t + 1 : T;
                const double *a = att + ((b * H + h) * T + t) * T;
                const double *dy = dout + (b * T + t) * D + h * S;
                const double *q = qkv + (b * T + t) * ld + h * S;
                double *dq = dqkv + (b * T + t) * ld + h * S;
                double da[len > 0 ? len : 1], dot = 0;
                for (size_t j = 0; j < len; j++) {
                    /* forward: y[t,i] += att[t,j] v[j,i] */
                    const double *v = qkv + (b * T + j) * ld + 2 * D + h * S;
                    double *dv = dqkv + (b * T + j) * ld + 2 * D + h * S;
                    double s = 0;
                    for (size_t i = 0; i < S; i++) {
                        s += dy[i] * v[i];
                        dv[i] += a[j] * dy[i];
                    }
                    da[j] = s;
                    dot += a[j] * s;
                }
                for (size_t j = 0; j < len; j++) {
                    /* forward: pre[t,j] = q_t . k_j * scale, att = softmax(pre) */
                    double dp = a[j] * (da[j] - dot) * scale;
                    const double *k = qkv + (b * T + j) * ld + D + h * S;
                    double *dk = dqkv + (b * T + j) * ld + D + h * S;
                    for (size_t i = 0; i < S; i++) {
                        dq[i] += dp * k[i];
                        dk[i] += dp * q[i];
                    }
                }
            }
}

/* ---------------------------------------------------------------- GELU */

/* sqrt(2/pi) and the cubic coefficient of GPT-2's GELU */
static const double GELU_K0 = 0.7978845608028654;
static const double GELU_K1 = 0.044715;

void ac_nn_gelu_forward(double *out, const double *inp, size_t n)
{
    /* out = x sigma(2z) = x / (1 + exp(-2z)), z = K0 (x + K1 x^3) */
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        double x = inp[i];
        double e = ac_exp_kernel(-2.0 * GELU_K0 * (x + GELU_K1 * x * x * x));
        out[i] = x / (1.0 + e);
    }
}

void ac_nn_gelu_backward(double *dinp, const double *inp, const double *out, const double *dout,
                         size_t n)
{
    /* forward: out = x s, s = sigma(2z); d out/dx = s + x s (1 - s) 2 z',
     * z' = K0 (1 + 3 K1 x^2).  s is recovered as out/x (relative error 2u;
     * where out/x would lose accuracy, |x| < 2^-500, s = 1/2 + O(x)). */
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        double x = inp[i];
        double s = fabs(x) > 0x1p-500 ? out[i] / x : 0.5;
        double dz = GELU_K0 * (1.0 + 3.0 * GELU_K1 * x * x);
        double g = s + x * (s * (1.0 - s)) * 2.0 * dz;
        dinp[i] = g * dout[i];
    }
}

/* ---------------------------------------------------------------- residual */

void ac_nn_residual_forward(double *out, const double *inp, const double *bias, size_t N, size_t C)
{
    /* out (N,C) = inp (N,C) + bias (C): the start of out = inp + f(inp) */
    for (size_t n = 0; n < N; n++) {
        const double *x = inp + n * C;
        double *o = out + n * C;
        if (bias) {
#pragma omp simd
            for (size_t i = 0; i < C; i++)
                o[i] = x[i] + bias[i];
        } else {
            memcpy(o, x, C * sizeof *o);
        }
    }
}

/* ---------------------------------------------------------------- cross-entropy */

size_t ac_nn_xent_forward(double *losses, double *probs, const double *logits,
                          const int32_t *targets, size_t N, size_t V)
{
    /* losses (N), probs (N,V), logits (N,V), targets (N) */
    size_t correct = 0;
    for (size_t n = 0; n < N; n++) {
        const double *l = logits + n * V;
        double *p = probs + n * V;
        size_t am = 0;
        double m = l[0];
        for (size_t j = 1; j < V; j++)
            if (l[j] > m) {
                m = l[j];
                am = j;
            }
        double lt = l[targets[n]];
        for (size_t j = 0; j < V; j++)
            p[j] = l[j] - m;
        ac_nn_exp(p, p, V);
        double s = 0;
        for (size_t j = 0; j < V; j++)
            s += p[j];
        losses[n] = m + log(s) - lt;
        double inv = 1.0 / s;
        for (size_t j = 0; j < V; j++)
            p[j] *= inv;
        correct += am == (size_t)targets[n];
    }
    return correct;
}

void ac_nn_xent_backward(double *dlogits, const double *probs, const int32_t *targets,
                         double scale, size_t N, size_t V)
{
    /* forward: loss = logsumexp(l) - l[target]: dl = (p - onehot) scale */
    for (size_t n = 0; n < N; n++) {
        double *d = dlogits + n * V;
        const double *p = probs + n * V;
        for (size_t j = 0; j < V; j++)
            d[j] = p[j] * scale;
        d[targets[n]] -= scale;
    }
}
