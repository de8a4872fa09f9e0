/* pattern.c — every head of a canonical layer (attncheck/models.h): the
 * norm before the projections, the projections, rotary positions, the
 * masks and the row softmax, exactly in the order the models compute them;
 * the block's output (for ac_model_run); a head in Theorem 1's form; the
 * one-line description of what changes a pattern.
 *
 * Dimension letters: n tokens, d width, h heads, hkv key/value heads, dk
 * head size.  Buffers are row-major, one row per token.  BLAS runs on one
 * thread here (restored after), so that every number is computed by one
 * fixed sequence of operations whatever the thread count.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "attncheck/blas.h"
#include "attncheck/nn.h"
#include "models/models_impl.h"

/* ---------------------------------------------------------------- norms */

int md_norm_rows(double *out, const double *x, size_t n, size_t d, ac_norm_kind k,
                 const double *w, const double *b, double eps, ac_err *err)
{
    /* LayerNorm: ac_nn_layernorm_forward_eps (PyTorch's: the biased
     * variance, (x - mean) / sqrt(var + eps) w + b), per row, a bias of 0s
     * when there is none; RMSNorm: w (x / sqrt(mean(x^2) + eps))
     * (modeling_llama.py, LlamaRMSNorm) */
    double *zero = NULL;
    if (k == AC_NORM_LAYER && !b && !(b = zero = calloc(d + 1, sizeof *zero)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t r = 0; r < n; r++) {
        const double *xr = x + r * d;
        double *o = out + r * d;
        if (k == AC_NORM_LAYER) {
            double mean, rstd;
            ac_nn_layernorm_forward_eps(o, &mean, &rstd, xr, w, b, 1, d, eps);
        } else if (k == AC_NORM_RMS) {
            double v = 0;
            for (size_t i = 0; i < d; i++)
                v += xr[i] * xr[i];
            v /= (double)d;
            double s = 1.0 / sqrt(v + eps);
            for (size_t i = 0; i < d; i++)
                o[i] = w[i] * (xr[i] * s);
        } else if (o != xr) {
            memcpy(o, xr, d * sizeof *o);
        }
    }
    free(zero);
    return AC_OK;
}

int ac_attn_input(ac_mat *X, const ac_attn_layer *L, const ac_mat *R, ac_err *err)
{
    *X = (ac_mat){0};
    if (R->cols != L->d)
        return ac_err_set_field(err, AC_EUSAGE, "cols", "the residual stream has %zu columns, "
                                "the layer's width is %zu", R->cols, L->d);
    int st = ac_mat_init(X, R->rows, R->cols, err);
    if (st)
        return st;
    if ((st = md_norm_rows(X->data, R->data, R->rows, R->cols, L->norm, L->norm_w, L->norm_b,
                           L->norm_eps, err)))
        ac_mat_free(X);
    return st;
}

/* ---------------------------------------------------------------- rotary */

/* RoPE of y (n x dk, one head) at positions 0..n-1: pair j (frequency
 * theta^(-2j/dk), j < dk/2) is (j, j + dk/2) for AC_ROPE_HALF (Hugging
 * Face's rotate_half) or (2j, 2j+1) for AC_ROPE_INTERLEAVED (GPT-J, Meta);
 * each pair (a, b) turns by the angle t f_j:
 *   (a, b) -> (a cos - b sin, b cos + a sin). */
static void rope_apply(double *y, size_t n, size_t dk, ac_rope_kind kind, double theta)
{
    size_t half = dk / 2;
    for (size_t j = 0; j < half; j++) {
        double f = 1.0 / pow(theta, (double)(2 * j) / (double)dk);
        size_t ia = kind == AC_ROPE_HALF ? j : 2 * j, ib = kind == AC_ROPE_HALF ? j + half : 2 * j + 1;
        for (size_t t = 0; t < n; t++) {
            double ang = (double)t * f, c = cos(ang), s = sin(ang);
            double a = y[t * dk + ia], b = y[t * dk + ib];
            y[t * dk + ia] = a * c - b * s;
            y[t * dk + ib] = b * c + a * s;
        }
    }
}

/* ---------------------------------------------------------------- patterns */

static int visible(const ac_attn_layer *L, const unsigned char *keep, size_t q, size_t k)
{
    if (keep && !keep[k])
        return 0;
    if (L->mask == AC_MASK_CAUSAL && k > q)
        return 0;
    if (L->window && q >= k && q - k >= L->window)
        return 0;
    return 1;
}

size_t ac_attn_blind_query(const ac_attn_layer *L, const unsigned char *keep, size_t n)
{
    for (size_t q = 0; q < n; q++) {
        size_t k = 0;
        while (k < n && !visible(L, keep, q, k))
            k++;
        if (k == n)
            return q;
    }
    return n;
}

/* The projection of head rows: out (n x dk) = X W^T + b, W (dk x d). */
static void project(double *out, const ac_mat *X, const double *w, const double *b, size_t dk)
{
    ac_nn_linear_forward(out, X->data, w, b, X->rows, X->cols, dk, 0);
}

/* Q (h, n, dk) and K, V (hkv, n, dk) of the layer on X, RoPE applied. */
static void qkv(double *Q, double *K, double *V, const ac_attn_layer *L, const ac_mat *X)
{
    size_t n = X->rows, dk = L->dk, d = L->d;
    for (size_t i = 0; i < L->h; i++) {
        project(Q + i * n * dk, X, L->wq + i * dk * d, L->bq ? L->bq + i * dk : NULL, dk);
        if (L->rope)
            rope_apply(Q + i * n * dk, n, dk, L->rope, L->rope_theta);
    }
    for (size_t g = 0; g < L->hkv; g++) {
        project(K + g * n * dk, X, L->wk + g * dk * d, L->bk ? L->bk + g * dk : NULL, dk);
        if (V)
            project(V + g * n * dk, X, L->wv + g * dk * d, L->bv ? L->bv + g * dk : NULL, dk);
        if (L->rope)
            rope_apply(K + g * n * dk, n, dk, L->rope, L->rope_theta);
    }
}

/* P (n x n) = row softmax of scale Q K^T over the visible keys. */
static int softmax_rows(double *P, const double *Q, const double *K, const ac_attn_layer *L,
                        size_t n, const unsigned char *keep, size_t head, ac_err *err)
{
    size_t dk = L->dk;
    if (n && dk)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)n,
                    (blasint)dk, 1.0, Q, (blasint)dk, K, (blasint)dk, 0.0, P, (blasint)n);
    else
        memset(P, 0, n * n * sizeof *P);
    for (size_t q = 0; q < n; q++) {
        double *p = P + q * n, mx = -INFINITY;
        int any = 0;
        for (size_t k = 0; k < n; k++)
            if (visible(L, keep, q, k)) {
                p[k] *= L->scale;
                if (!any || p[k] > mx)
                    mx = p[k];
                any = 1;
            }
        if (!any)
            return ac_err_set(err, AC_EDATA, "head %zu: query %zu has no key to attend to (every "
                              "key is masked)", head, q);
        double s = 0;
        for (size_t k = 0; k < n; k++) {
            p[k] = visible(L, keep, q, k) ? exp(p[k] - mx) : 0.0;
            s += p[k];
        }
        for (size_t k = 0; k < n; k++)
            p[k] /= s;
    }
    return AC_OK;
}

static int check_x(const ac_attn_layer *L, const ac_mat *X, ac_err *err)
{
    if (X->cols != L->d)
        return ac_err_set_field(err, AC_EUSAGE, "cols", "the input has %zu columns, the layer's "
                                "width is %zu", X->cols, L->d);
    if (L->hkv == 0 || L->h % L->hkv)
        return ac_err_set(err, AC_EUSAGE, "%zu key/value heads do not divide %zu heads", L->hkv,
                          L->h);
    return AC_OK;
}

/* The scratch of one pass: Q, K, V (NULL when want_v is 0). */
static int alloc_qkv(double **Q, double **K, double **V, const ac_attn_layer *L, size_t n,
                     int want_v, ac_err *err)
{
    size_t nq = L->h * n * L->dk, nk = L->hkv * n * L->dk;
    *Q = malloc((nq + 1) * sizeof **Q);
    *K = malloc((nk + 1) * sizeof **K);
    *V = want_v ? malloc((nk + 1) * sizeof **V) : NULL;
    if (!*Q || !*K || (want_v && !*V)) {
        free(*Q);
        free(*K);
        free(*V);
        *Q = *K = *V = NULL;
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    return AC_OK;
}

int ac_attn_patterns(ac_array *P, const ac_attn_layer *L, const ac_mat *X,
                     const unsigned char *keep, ac_err *err)
{
    *P = (ac_array){0};
    int st = check_x(L, X, err);
    if (st)
        return st;
    size_t n = X->rows, shape[3] = {L->h, n, n};
    double *Q, *K, *V;
    if ((st = alloc_qkv(&Q, &K, &V, L, n, 0, err)))
        return st;
    if ((st = ac_array_init(P, 3, shape, err))) {
        free(Q);
        free(K);
        return st;
    }
    int bt = ac_blas_get_threads();
    ac_blas_set_threads(1);
    qkv(Q, K, NULL, L, X);
    for (size_t i = 0; i < L->h && !st; i++)
        st = softmax_rows(P->data + i * n * n, Q + i * n * L->dk,
                          K + ac_attn_kv_head(L, i) * n * L->dk, L, n, keep, i, err);
    ac_blas_set_threads(bt);
    free(Q);
    free(K);
    if (st)
        ac_array_free(P);
    return st;
}

int md_attn_output(double *out, const ac_attn_layer *L, const ac_mat *X,
                   const unsigned char *keep, ac_err *err)
{
    int st = check_x(L, X, err);
    if (st)
        return st;
    size_t n = X->rows, dk = L->dk, qd = L->h * dk;
    double *Q, *K, *V, *P = malloc((n * n + 1) * sizeof *P),
                       *Y = malloc((n * qd + 1) * sizeof *Y);
    if (!P || !Y || (st = alloc_qkv(&Q, &K, &V, L, n, 1, err))) {
        free(P);
        free(Y);
        return st ? st : ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    qkv(Q, K, V, L, X);
    /* Y (n x h dk): head i's P_i V_g in columns i dk .. */
    for (size_t i = 0; i < L->h && !st; i++) {
        size_t g = ac_attn_kv_head(L, i);
        if ((st = softmax_rows(P, Q + i * n * dk, K + g * n * dk, L, n, keep, i, err)))
            break;
        if (n && dk)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)dk,
                        (blasint)n, 1.0, P, (blasint)n, V + g * n * dk, (blasint)dk, 0.0,
                        Y + i * dk, (blasint)qd);
    }
    /* out = Y Wo^T + bo, Wo (d x h dk) */
    if (!st)
        ac_nn_linear_forward(out, Y, L->wo, L->bo, n, qd, L->d, 0);
    free(P);
    free(Y);
    free(Q);
    free(K);
    free(V);
    return st;
}

/* ---------------------------------------------------------------- Theorem 1 */

int ac_attn_head_t1(ac_mat *Xt, ac_mat *Wq, ac_mat *Wk, double *factor, const ac_attn_layer *L,
                    size_t head, const ac_mat *X, ac_err *err)
{
    *Xt = *Wq = *Wk = (ac_mat){0};
    int st = check_x(L, X, err);
    if (st)
        return st;
    if (head >= L->h)
        return ac_err_set_field(err, AC_EUSAGE, "head", "head %zu: the layer has %zu heads",
                                head, L->h);
    if (L->rope)
        return ac_err_set(err, AC_EUSAGE, "RoPE: a rotary layer's logits depend on the positions: "
                          "no single Wq, Wk gives head %zu", head);
    size_t n = X->rows, d = L->d, dk = L->dk, g = ac_attn_kv_head(L, head);
    int aug = L->bq || L->bk;
    size_t dd = d + (size_t)aug;
    if ((st = ac_mat_init(Xt, dd, n, err)) || (st = ac_mat_init(Wq, dk, dd, err)) ||
        (st = ac_mat_init(Wk, dk, dd, err))) {
        ac_mat_free(Xt);
        ac_mat_free(Wq);
        ac_mat_free(Wk);
        return st;
    }
    for (size_t t = 0; t < n; t++) {
        for (size_t i = 0; i < d; i++)
            AC_MAT(Xt, i, t) = AC_MAT(X, t, i);
        if (aug)
            AC_MAT(Xt, d, t) = 1.0;
    }
    for (size_t r = 0; r < dk; r++) {
        memcpy(&AC_MAT(Wq, r, 0), L->wq + (head * dk + r) * d, d * sizeof(double));
        memcpy(&AC_MAT(Wk, r, 0), L->wk + (g * dk + r) * d, d * sizeof(double));
        if (aug) {
            AC_MAT(Wq, r, d) = L->bq ? L->bq[head * dk + r] : 0.0;
            AC_MAT(Wk, r, d) = L->bk ? L->bk[g * dk + r] : 0.0;
        }
    }
    *factor = L->scale * sqrt((double)dk);
    return AC_OK;
}

/* ---------------------------------------------------------------- descriptions */

char *ac_attn_describe(char *buf, size_t size, const ac_attn_layer *L)
{
    size_t k = 0;
#define ADD(...)                                                                          \
    do {                                                                                  \
        if (k < size)                                                                     \
            k += (size_t)snprintf(buf + k, size - k, __VA_ARGS__);                        \
    } while (0)
    ADD("layer %zu: %zu heads of size %zu on width %zu", L->layer, L->h, L->dk, L->d);
    if (L->hkv != L->h)
        ADD(", %zu key/value heads (query head i reads key/value head i/%zu)", L->hkv,
            L->h / L->hkv);
    ADD("; scale %.17g = %s", L->scale, L->scale_rule);
    if (L->mask == AC_MASK_CAUSAL && L->window)
        ADD("; causal mask with a sliding window of %zu (key k visible from query q iff "
            "0 <= q - k < %zu)", L->window, L->window);
    else
        ADD("; %s", L->mask == AC_MASK_CAUSAL ? "causal mask" : "no mask (every key visible)");
    if (L->rope)
        ADD("; RoPE theta %.17g, %s pairing (dimension %s)", L->rope_theta,
            L->rope == AC_ROPE_HALF ? "rotate_half" : "interleaved",
            L->rope == AC_ROPE_HALF ? "j with j + dk/2" : "2j with 2j + 1");
    else
        ADD("; no rotary embedding");
    if (L->norm == AC_NORM_NONE)
        ADD("; no norm before the projections");
    else
        ADD("; %s %s (eps %.17g) before the projections",
            L->norm == AC_NORM_LAYER ? "LayerNorm" : "RMSNorm", L->norm_name, L->norm_eps);
    ADD("; biases:%s%s%s%s%s", L->bq ? " q" : "", L->bk ? " k" : "", L->bv ? " v" : "",
        L->bo ? " o" : "", L->bq || L->bk || L->bv || L->bo ? "" : " none");
    ADD("; weights as stored (no folding, centring or rescaling)");
#undef ADD
    return buf;
}
