/* run.c — a model from its inputs up to a layer (ac_model_run,
 * attncheck/models.h), in double, block by block, each block's weights
 * converted from the files when it runs.
 *
 *   embeddings  GPT-2, nanoGPT: wte[id] + wpe[t];
 *               BERT: LN(word[id] + position[t] + type[type_id]);
 *               RoBERTa: the same with position padding_idx + 1 + (number
 *                 of real tokens up to t) for real tokens, padding_idx for
 *                 padding (create_position_ids_from_input_ids);
 *               DistilBERT: LN(word[id] + position[t]);
 *               Llama, Mistral, Qwen2: embed_tokens[id];
 *               ViT: [cls; patches W^T + b] + positions, patch p the
 *                 channels x P x P block of the image (Conv2d with stride P).
 *   blocks      pre-LN:  x = x + Attn(N1(x)),  x = x + MLP(N2(x));
 *               post-LN: x = LN1(x + Attn(x)), x = LN2(x + MLP(x));
 *   MLP         W2 act(W1 x + b1) + b2, or W2 (act(Wg x) * (Wu x)) (gated).
 * Activations: GELU erf form x Phi(x) (nn.GELU(), "gelu"), the tanh form
 * (ac_nn_gelu_forward: "gelu_new", "gelu_pytorch_tanh"), ReLU, SiLU.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/blas.h"
#include "attncheck/nn.h"
#include "models/models_impl.h"

static void activate(double *x, size_t n, md_act a)
{
    switch (a) {
    case MD_ACT_GELU:
        for (size_t i = 0; i < n; i++)
            x[i] = 0.5 * x[i] * (1.0 + erf(x[i] / M_SQRT2));
        break;
    case MD_ACT_GELU_TANH:
        ac_nn_gelu_forward(x, x, n);
        break;
    case MD_ACT_RELU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] > 0 ? x[i] : 0.0;
        break;
    case MD_ACT_SILU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] / (1.0 + exp(-x[i]));
        break;
    }
}

/* A block of doubles for weights read from the file (grown as needed). */
typedef struct {
    double *w[6];
    size_t cap[6];
} scratch;

static double *need(scratch *s, int i, size_t n)
{
    if (s->cap[i] < n) {
        free(s->w[i]);
        s->w[i] = malloc(n * sizeof(double));
        s->cap[i] = s->w[i] ? n : 0;
    }
    return s->w[i];
}

/* Read slot sl of layer l into scratch i (NULL, AC_OK when the slot is empty
 * and optional). */
static int slot(double **out, scratch *s, int i, const ac_model *m, size_t l, int sl, ac_err *err)
{
    const ac_st_tensor *t = md_slot(m, l, sl);
    *out = NULL;
    if (!t)
        return AC_OK;
    double *p = need(s, i, t->numel + 1);
    if (!p)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    int st = md_read_slot(p, m, l, sl, err);
    if (!st)
        *out = p;
    return st;
}

/* The embeddings: x (n x d). */
static int embed(double *x, const ac_model *m, const ac_model_input *in, scratch *s,
                 ac_err *err)
{
    const md_cfg *c = &m->priv->c;
    size_t n = in->n, d = c->d;
    size_t *rows = malloc((n + 1) * sizeof *rows);
    double *w = malloc((n * d + 1) * sizeof *w);
    int st = AC_OK;
    if (!rows || !w) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if (c->fam == AC_MODEL_VIT || c->fam == AC_MODEL_VIT_TIMM) {
        size_t P = c->patch, G = c->image / P, CH = c->channels, pp = CH * P * P;
        double *pw, *pb, *cls, *pos;
        if ((st = slot(&pw, s, 0, m, 0, S_PATCH_W, err)) ||
            (st = slot(&pb, s, 1, m, 0, S_PATCH_B, err)) ||
            (st = slot(&cls, s, 2, m, 0, S_CLS, err)) || (st = slot(&pos, s, 3, m, 0, S_POS, err)))
            goto out;
        double *patch = need(s, 4, pp);
        if (!patch) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            goto out;
        }
        memcpy(x, cls, d * sizeof *x);
        for (size_t gy = 0; gy < G; gy++)
            for (size_t gx = 0; gx < G; gx++) {
                /* the channels x P x P block, in the order of the kernel's
                 * [d, channels, P, P] */
                for (size_t ch = 0; ch < CH; ch++)
                    for (size_t y = 0; y < P; y++)
                        memcpy(patch + (ch * P + y) * P,
                               in->pixels + (ch * c->image + gy * P + y) * c->image + gx * P,
                               P * sizeof *patch);
                ac_nn_linear_forward(x + (1 + gy * G + gx) * d, patch, pw, pb, 1, pp, d, 0);
            }
        for (size_t i = 0; i < n * d; i++)
            x[i] += pos[i];
        goto out;
    }
    for (size_t t = 0; t < n; t++) {
        if (in->ids[t] < 0 || (size_t)in->ids[t] >= c->vocab) {
            st = ac_err_set(err, AC_EDATA, "token %zu: id %ld is outside the vocabulary [0, %zu)",
                            t, (long)in->ids[t], c->vocab);
            goto out;
        }
        rows[t] = (size_t)in->ids[t];
    }
    if ((st = ac_st_read_rows(x, &m->st, md_slot(m, 0, S_TOK), rows, n, err)))
        goto out;
    if (md_slot(m, 0, S_POS)) {
        /* positions: t, or RoBERTa's from the padding */
        size_t real = 0;
        for (size_t t = 0; t < n; t++) {
            if (c->pad_id >= 0) {
                int isreal = in->ids[t] != c->pad_id;
                real += (size_t)isreal;
                rows[t] = (size_t)c->pad_id + (isreal ? real : 0);
            } else {
                rows[t] = t;
            }
            if (rows[t] >= c->max_pos) {
                st = ac_err_set(err, AC_EDATA, "token %zu: position %zu is beyond the model's "
                                "%zu positions", t, rows[t], c->max_pos);
                goto out;
            }
        }
        if ((st = ac_st_read_rows(w, &m->st, md_slot(m, 0, S_POS), rows, n, err)))
            goto out;
        for (size_t i = 0; i < n * d; i++)
            x[i] += w[i];
    }
    if (md_slot(m, 0, S_TYPE)) {
        for (size_t t = 0; t < n; t++) {
            long ty = in->type_ids ? (long)in->type_ids[t] : 0;
            if (ty < 0 || (size_t)ty >= c->type_vocab) {
                st = ac_err_set(err, AC_EDATA, "token %zu: type %ld is outside [0, %zu)", t, ty,
                                c->type_vocab);
                goto out;
            }
            rows[t] = (size_t)ty;
        }
        if ((st = ac_st_read_rows(w, &m->st, md_slot(m, 0, S_TYPE), rows, n, err)))
            goto out;
        for (size_t i = 0; i < n * d; i++)
            x[i] += w[i];
    } else if (in->type_ids) {
        for (size_t t = 0; t < n; t++)
            if (in->type_ids[t]) {
                st = ac_err_set(err, AC_EDATA, "token %zu: type %ld, but the model has no token "
                                "types", t, (long)in->type_ids[t]);
                goto out;
            }
    }
    if (c->emb_norm) {
        double *lw, *lb;
        if ((st = slot(&lw, s, 0, m, 0, S_ELN_W, err)) ||
            (st = slot(&lb, s, 1, m, 0, S_ELN_B, err)))
            goto out;
        st = md_norm_rows(x, x, n, d, AC_NORM_LAYER, lw, lb, c->eps, err);
    }
out:
    free(rows);
    free(w);
    return st;
}

/* y (n x d) = MLP(x) of layer l. */
static int mlp(double *y, const ac_model *m, size_t l, const double *x, size_t n, scratch *s,
               ac_err *err)
{
    const md_cfg *c = &m->priv->c;
    size_t d = c->d, F = c->ffn;
    double *w1, *b1, *w2, *b2, *wu = NULL, *bu = NULL;
    int st;
    if ((st = slot(&w1, s, 0, m, l, S_FC1_W, err)) || (st = slot(&b1, s, 1, m, l, S_FC1_B, err)) ||
        (st = slot(&w2, s, 2, m, l, S_FC2_W, err)) || (st = slot(&b2, s, 3, m, l, S_FC2_B, err)))
        return st;
    if (c->gated && ((st = slot(&wu, s, 4, m, l, S_UP_W, err)) ||
                     (st = slot(&bu, s, 5, m, l, S_UP_B, err))))
        return st;
    double *h = malloc((n * F + 1) * sizeof *h), *u = c->gated ? malloc((n * F + 1) * sizeof *u) : NULL;
    if (!h || (c->gated && !u)) {
        free(h);
        free(u);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    ac_nn_linear_forward(h, x, w1, b1, n, d, F, 0);
    activate(h, n * F, c->act);
    if (c->gated) {
        ac_nn_linear_forward(u, x, wu, bu, n, d, F, 0);
        for (size_t i = 0; i < n * F; i++)
            h[i] *= u[i];
    }
    ac_nn_linear_forward(y, h, w2, b2, n, F, d, 0);
    free(h);
    free(u);
    return AC_OK;
}

/* One block: x (n x d) in place. */
static int block(double *x, const ac_model *m, size_t l, const ac_model_input *in, scratch *s,
                 double *t1, double *t2, ac_err *err)
{
    const md_cfg *c = &m->priv->c;
    size_t n = in->n, d = c->d;
    ac_attn_layer L;
    int st = ac_model_layer(&L, m, l, err);
    if (st)
        return st;
    double *nw, *nb;
    ac_mat X = {n, d, t1};
    /* attention: X = N1(x) (pre-LN; L applies it) or x */
    st = md_norm_rows(t1, x, n, d, L.norm, L.norm_w, L.norm_b, L.norm_eps, err);
    if (!st)
        st = md_attn_output(t2, &L, &X, in->keep, err);
    ac_attn_layer_free(&L);
    if (st)
        return st;
    for (size_t i = 0; i < n * d; i++)
        x[i] += t2[i];
    if (c->post_ln) {
        if ((st = slot(&nw, s, 0, m, l, S_LN1_W, err)) || (st = slot(&nb, s, 1, m, l, S_LN1_B, err)))
            return st;
        if ((st = md_norm_rows(x, x, n, d, AC_NORM_LAYER, nw, nb, c->eps, err)) ||
            (st = mlp(t2, m, l, x, n, s, err)))
            return st;
        for (size_t i = 0; i < n * d; i++)
            x[i] += t2[i];
        if ((st = slot(&nw, s, 0, m, l, S_LN2_W, err)) || (st = slot(&nb, s, 1, m, l, S_LN2_B, err)))
            return st;
        if ((st = md_norm_rows(x, x, n, d, AC_NORM_LAYER, nw, nb, c->eps, err)))
            return st;
    } else {
        if ((st = slot(&nw, s, 0, m, l, S_LN2_W, err)) || (st = slot(&nb, s, 1, m, l, S_LN2_B, err)))
            return st;
        /* the MLP reads scratch 0..5: keep the norm's weights out of them */
        double *w = malloc((2 * d + 1) * sizeof *w);
        if (!w)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        memcpy(w, nw, d * sizeof *w);
        if (nb)
            memcpy(w + d, nb, d * sizeof *w);
        st = md_norm_rows(t1, x, n, d, c->norm, w, nb ? w + d : NULL, c->eps, err);
        free(w);
        if (st || (st = mlp(t2, m, l, t1, n, s, err)))
            return st;
        for (size_t i = 0; i < n * d; i++)
            x[i] += t2[i];
    }
    return AC_OK;
}

/* What ac_model_run and ac_model_run_from refuse before any work. */
static int run_check(const ac_model *m, size_t l, const ac_model_input *in, ac_err *err)
{
    const md_cfg *c = &m->priv->c;
    if (c->fam == AC_MODEL_LAYER)
        return ac_err_set(err, AC_EUSAGE, "an attncheck_layer checkpoint is one layer: it has no "
                          "embeddings to run (give its input)");
    if (l > m->layers)
        return ac_err_set_field(err, AC_EUSAGE, "layer", "layer %zu: the model has %zu layers", l,
                                m->layers);
    int vit = c->fam == AC_MODEL_VIT || c->fam == AC_MODEL_VIT_TIMM;
    if (vit && (!in->pixels || in->n != c->ntok))
        return ac_err_set(err, AC_EUSAGE, "a ViT takes an image of %zu x %zu x %zu pixels (%zu "
                          "tokens)", c->channels, c->image, c->image, c->ntok);
    if (!vit && (!in->ids || in->n == 0))
        return ac_err_set(err, AC_EUSAGE, "no tokens to run");
    if (vit && in->keep)
        return ac_err_set(err, AC_EUSAGE, "a ViT takes no attention mask");
    size_t nd;
    if (!ac_size_mul(in->n, c->d, &nd))
        return ac_err_set(err, AC_EUSAGE, "%zu tokens of width %zu: too large", in->n, c->d);
    if (vit)
        for (size_t i = 0; i < c->channels * c->image * c->image; i++)
            if (!isfinite(in->pixels[i]))
                return ac_err_set(err, AC_EDATA, "pixel %zu is not finite", i);
    return AC_OK;
}

/* x (n x d): the embeddings first when embed, then blocks from .. l - 1,
 * BLAS single-threaded (the same bits for any thread count). */
static int run(double *x, const ac_model *m, int embed_first, size_t from, size_t l,
               const ac_model_input *in, ac_err *err)
{
    size_t nd = in->n * m->priv->c.d;
    scratch s = {{0}, {0}};
    double *t1 = malloc((nd + 1) * sizeof *t1), *t2 = malloc((nd + 1) * sizeof *t2);
    int bt = ac_blas_get_threads(), st = AC_OK;
    ac_blas_set_threads(1);
    if (!t1 || !t2)
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
    if (!st && embed_first)
        st = embed(x, m, in, &s, err);
    for (size_t j = from; j < l && !st; j++)
        st = block(x, m, j, in, &s, t1, t2, err);
    ac_blas_set_threads(bt);
    for (int i = 0; i < 6; i++)
        free(s.w[i]);
    free(t1);
    free(t2);
    return st;
}

int ac_model_run(ac_mat *R, const ac_model *m, size_t l, const ac_model_input *in,
                 ac_err *err)
{
    *R = (ac_mat){0};
    int st = run_check(m, l, in, err);
    if (st || (st = ac_mat_init(R, in->n, m->priv->c.d, err)))
        return st;
    if ((st = run(R->data, m, 1, 0, l, in, err)))
        ac_mat_free(R);
    return st;
}

int ac_model_run_from(ac_mat *R, const ac_model *m, size_t from, size_t l,
                      const ac_model_input *in, ac_err *err)
{
    int st = run_check(m, l, in, err);
    if (!st && (from > l || R->rows != in->n || R->cols != m->priv->c.d || !R->data))
        st = ac_err_set(err, AC_EUSAGE, "the residual stream (%zu x %zu) entering block %zu is not "
                        "one of %zu tokens of width %zu before block %zu", R->rows, R->cols, from,
                        in->n, m->priv->c.d, l);
    if (!st)
        st = run(R->data, m, 0, from, l, in, err);
    if (st)
        ac_mat_free(R);
    return st;
}
