/* forward.c — the forward pass of the model (attncheck/nn.h): the
 * transformer, the bare attention layer and the scores architecture, each
 * on chunks of whole sequences in parallel, then the head and its losses. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_impl.h"

/* res2 (nr,C) = xres + the attention block of layer l on xin (merged heads
 * when w->merge_pass: attn_merged.c). */
static void attn_block_forward(const ac_nn_model *m, size_t l, double *res2, double *qkv,
                               double *atty, double *att, const double *xin, const double *xres,
                               size_t nb, const size_t *klen)
{
    const ac_nn_config *c = &m->cfg;
    size_t T = m->w->T, C = c->width, D = m->D, H = c->heads, S = m->S, nr = nb * T;
    if (m->w->merge_pass) {
        nn_merged_block_forward(m, l, res2, qkv, atty, att, xin, xres, nb, klen);
        return;
    }
    const double *p = PAR(m, m->w->i_layer0 + (long)(l * L_NTENSORS));
    const ac_nn_tensor *tt = &m->tensors[m->w->i_layer0 + l * L_NTENSORS];
#define LP(slot) (p + (tt[slot].offset - tt[0].offset))
    ac_nn_linear_forward(qkv, xin, LP(L_QKVW), LP(L_QKVB), nr, C, 3 * D, 0);
    nn_attention_forward_len(atty, att, qkv, nb, T, H, S, c->causal, klen);
    ac_nn_residual_forward(res2, xres, LP(L_PROJB), nr, C);
    ac_nn_linear_forward(res2, atty, LP(L_PROJW), NULL, nr, D, C, 1);
#undef LP
}

/* The transformer on sequences [b0, b0+nb). */
static void tf_forward_chunk(ac_nn_model *m, size_t chunk, size_t b0, size_t nb, size_t B)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t T = w->T, C = c->width, D = m->D, H = c->heads, F = c->ffn;
    size_t r0 = b0 * T, nr = nb * T;
    double *x0 = w->enc + r0 * C;
    if (c->input == AC_NN_INPUT_TOKENS) {
        ac_nn_encoder_forward(x0, w->tokens + r0, PAR(m, w->i_wte),
                              w->i_wpe >= 0 ? PAR(m, w->i_wpe) : NULL, nb, T, C);
    } else {
        ac_nn_linear_forward(x0, w->x + r0 * c->in_dim, PAR(m, w->i_win), PAR(m, w->i_bin), nr,
                             c->in_dim, C, 0);
        if (w->i_wpe >= 0) {
            const double *wpe = PAR(m, w->i_wpe);
            for (size_t r = 0; r < nr; r++)
                for (size_t i = 0; i < C; i++)
                    x0[r * C + i] += wpe[(r % T) * C + i];
        }
    }
    for (size_t l = 0; l < c->layers; l++) {
        const double *p = PAR(m, w->i_layer0 + (long)(l * L_NTENSORS));
        const ac_nn_tensor *tt = &m->tensors[w->i_layer0 + l * L_NTENSORS];
#define LP(slot) (p + (tt[slot].offset - tt[0].offset))
        const layer_acts *A = &w->layers[l];
        const double *x = layer_input(m, l) + r0 * C;
        const size_t *klen = w->have_len ? w->len + b0 : NULL;
        double *ln1 = A->ln1 + r0 * C, *qkv = A->qkv + r0 * 3 * D, *atty = A->atty + r0 * D;
        double *att = A->att + b0 * H * T * T, *res2 = A->res2 + r0 * C, *ln2 = A->ln2 + r0 * C;
        double *fch = A->fch + r0 * F, *fchg = A->fchg + r0 * F, *res3 = A->res3 + r0 * C;
        double *m1 = A->ln1_mean + r0, *s1 = A->ln1_rstd + r0;
        double *m2 = A->ln2_mean + r0, *s2 = A->ln2_rstd + r0;
        if (c->ln == AC_NN_LN_PRE) {
            ac_nn_layernorm_forward(ln1, m1, s1, x, LP(L_LN1W), LP(L_LN1B), nr, C);
            attn_block_forward(m, l, res2, qkv, atty, att, ln1, x, nb, klen);
            ac_nn_layernorm_forward(ln2, m2, s2, res2, LP(L_LN2W), LP(L_LN2B), nr, C);
            ac_nn_linear_forward(fch, ln2, LP(L_FCW), LP(L_FCB), nr, C, F, 0);
            ac_nn_gelu_forward(fchg, fch, nr * F);
            ac_nn_residual_forward(res3, res2, LP(L_FCPB), nr, C);
            ac_nn_linear_forward(res3, fchg, LP(L_FCPW), NULL, nr, F, C, 1);
        } else {
            attn_block_forward(m, l, res2, qkv, atty, att, x, x, nb, klen);
            ac_nn_layernorm_forward(ln1, m1, s1, res2, LP(L_LN1W), LP(L_LN1B), nr, C);
            ac_nn_linear_forward(fch, ln1, LP(L_FCW), LP(L_FCB), nr, C, F, 0);
            ac_nn_gelu_forward(fchg, fch, nr * F);
            ac_nn_residual_forward(res3, ln1, LP(L_FCPB), nr, C);
            ac_nn_linear_forward(res3, fchg, LP(L_FCPW), NULL, nr, F, C, 1);
            ac_nn_layernorm_forward(ln2, m2, s2, res3, LP(L_LN2W), LP(L_LN2B), nr, C);
        }
#undef LP
    }
    const double *xl = layer_output(m, c->layers - 1) + r0 * C;
    double *lnf = w->lnf + r0 * C;
    ac_nn_layernorm_forward(lnf, w->lnf_mean + r0, w->lnf_rstd + r0, xl, PAR(m, w->i_lnfw),
                            PAR(m, w->i_lnfb), nr, C);
    size_t correct = 0;
    double maxdev = 0;
    if (c->head == AC_NN_HEAD_LM) {
        size_t V = c->vocab;
        double *lg = w->logits + r0 * V;
        ac_nn_linear_forward(lg, lnf, PAR(m, w->i_headw), NULL, nr, C, V, 0);
        correct = ac_nn_xent_forward(w->losses + r0, lg, lg, w->targets + r0, nr, V);
    } else if (c->head == AC_NN_HEAD_CLASSIFY) {
        size_t K = c->out_dim;
        double *pool = w->pooled + b0 * C;
        for (size_t b = 0; b < nb; b++) {
            const double *rows = lnf + b * T * C;
            double *pb = pool + b * C;
            size_t len = w->have_len ? w->len[b0 + b] : T; /* real rows */
            if (c->pool == AC_NN_POOL_FIRST)
                memcpy(pb, rows, C * sizeof *pb);
            else if (c->pool == AC_NN_POOL_LAST)
                memcpy(pb, rows + (len - 1) * C, C * sizeof *pb);
            else {
                for (size_t i = 0; i < C; i++) {
                    double s = 0;
                    for (size_t t = 0; t < len; t++)
                        s += rows[t * C + i];
                    pb[i] = s / (double)len;
                }
            }
        }
        double *lg = w->logits + b0 * K;
        ac_nn_linear_forward(lg, pool, PAR(m, w->i_headw), PAR(m, w->i_headb), nb, C, K, 0);
        correct = ac_nn_xent_forward(w->losses + b0, lg, lg, w->targets + b0, nb, K);
    } else {
        size_t K = c->out_dim;
        double *out = w->logits + r0 * K;
        const double *y = w->y + r0 * K;
        ac_nn_linear_forward(out, lnf, PAR(m, w->i_headw), PAR(m, w->i_headb), nr, C, K, 0);
        for (size_t r = 0; r < nr; r++) {
            double s = 0;
            for (size_t k = 0; k < K; k++) {
                double e = out[r * K + k] - y[r * K + k];
                s += e * e;
                maxdev = fabs(e) > maxdev ? fabs(e) : maxdev;
            }
            w->losses[r0 + r] = s;
        }
    }
    (void)B;
    w->chunk_correct[chunk] = correct;
    w->chunk_maxdev[chunk] = maxdev;
}

static void attn_forward_chunk(ac_nn_model *m, size_t chunk, size_t b0, size_t nb)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t T = w->T, C = c->width, D = m->D, H = c->heads, S = m->S;
    size_t r0 = b0 * T, nr = nb * T;
    const double *x = w->x + r0 * C;
    double *qkv = w->qkv + r0 * 3 * D, *atty = w->atty + r0 * D, *out = w->out + r0 * C;
    ac_nn_linear_forward(qkv, x, PAR(m, w->i_wq), NULL, nr, C, 3 * D, 0);
    ac_nn_attention_forward(atty, w->att + b0 * H * T * T, qkv, nb, T, H, S, c->causal);
    ac_nn_headproj_forward(out, atty, PAR(m, w->i_wo), nr, C, H, S);
    double maxdev = 0;
    const double *y = w->y + r0 * C;
    for (size_t r = 0; r < nr; r++) {
        double s = 0;
        for (size_t k = 0; k < C; k++) {
            double e = out[r * C + k] - y[r * C + k];
            s += e * e;
            maxdev = fabs(e) > maxdev ? fabs(e) : maxdev;
        }
        w->losses[r0 + r] = s;
    }
    w->chunk_correct[chunk] = 0;
    w->chunk_maxdev[chunk] = maxdev;
}

static void scores_forward_chunk(ac_nn_model *m, size_t chunk, size_t b0, size_t nb)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t T = w->T, C = c->width, D = m->D, H = c->heads, S = m->S;
    size_t r0 = b0 * T, nr = nb * T;
    double *qk = w->qkv + r0 * 2 * D;
    double *att = w->att + b0 * H * T * T, *pre = w->pre + b0 * H * T * T;
    const double *y = w->y + b0 * H * T * T;
    ac_nn_linear_forward(qk, w->x + r0 * C, PAR(m, w->i_wq), NULL, nr, C, 2 * D, 0);
    ac_nn_scores_forward(att, pre, qk, 2 * D, nb, T, H, S, c->causal);
    /* with keep: the softmax of each row over its visible keys only (the
     * others get weight exactly 0), and the loss of a row
     * sum_{j visible} y_j (lse - pre_j), lse over the visible keys
     * (doc/mathematics.md §3.8); without: every key up to len */
    double maxdev = 0;
    for (size_t r = 0; r < nb * H * T; r++) {
        size_t t = r % T, len = c->causal ? t + 1 : T;
        const double *p = pre + r * T, *yr = y + r * T;
        double *a = att + r * T;
        double mx = -INFINITY;
        for (size_t j = 0; j < len; j++)
            if (nn_visible(w, t, j))
                mx = p[j] > mx ? p[j] : mx;
        double s = 0;
        for (size_t j = 0; j < len; j++)
            if (nn_visible(w, t, j))
                s += exp(p[j] - mx);
        double lse = mx + log(s), loss = 0;
        for (size_t j = 0; j < len; j++) {
            if (w->have_keep) /* the masked softmax, as ac_softmax_row on the visible keys */
                a[j] = nn_visible(w, t, j) ? exp(p[j] - mx) / s : 0.0;
            if (nn_visible(w, t, j))
                loss += yr[j] * (lse - p[j]);
            double e = fabs(a[j] - yr[j]); /* a masked key: |0 - y_j| */
            maxdev = e > maxdev ? e : maxdev;
        }
        w->losses[b0 * H * T + r] = loss;
    }
    w->chunk_correct[chunk] = 0;
    w->chunk_maxdev[chunk] = maxdev;
}

static int copy_batch(ac_nn_model *m, const ac_nn_batch *b, ac_err *err)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t B = b->B, T = b->T, N = B * T, C = c->width, H = c->heads;
    if (B == 0 || B > m->B || T == 0 || T > m->T)
        return ac_err_set(err, AC_EUSAGE, "batch %zu x %zu does not fit the model's %zu x %zu", B,
                          T, m->B, m->T);
    if (c->arch == AC_NN_ARCH_TRANSFORMER && c->input == AC_NN_INPUT_TOKENS) {
        if (!b->tokens)
            return ac_err_set(err, AC_EUSAGE, "the batch has no tokens");
        for (size_t i = 0; i < N; i++)
            if (b->tokens[i] < 0 || (size_t)b->tokens[i] >= c->vocab)
                return ac_err_set(err, AC_EDATA, "token %ld at position %zu is outside the "
                                  "vocabulary [0, %zu)", (long)b->tokens[i], i, c->vocab);
        memcpy(w->tokens, b->tokens, N * sizeof *w->tokens);
    } else {
        size_t I = c->arch == AC_NN_ARCH_TRANSFORMER ? c->in_dim : C;
        if (!b->x)
            return ac_err_set(err, AC_EUSAGE, "the batch has no input vectors");
        memcpy(w->x, b->x, N * I * sizeof *w->x);
    }
    w->have_keep = 0;
    if (b->keep) {
        if (c->arch != AC_NN_ARCH_SCORES)
            return ac_err_set(err, AC_EUSAGE, "a batch with a keep mask needs the scores "
                              "architecture");
        if (!w->keep && !(w->keep = malloc(m->T * m->T)))
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        for (size_t t = 0; t < T; t++) {
            size_t seen = 0, len = c->causal ? t + 1 : T;
            for (size_t j = 0; j < T; j++) {
                w->keep[t * T + j] = b->keep[t * T + j] != 0;
                seen += j < len && b->keep[t * T + j];
            }
            if (!seen)
                return ac_err_set(err, AC_EDATA, "query %zu sees no key under the mask (its "
                                  "softmax is undefined)", t);
        }
        w->have_keep = 1;
    }
    w->have_len = 0;
    if (b->len && c->arch == AC_NN_ARCH_TRANSFORMER) {
        for (size_t i = 0; i < B; i++)
            if (b->len[i] < 1 || b->len[i] > T)
                return ac_err_set(err, AC_EDATA, "sequence %zu has length %zu, outside [1, %zu]",
                                  i, b->len[i], T);
        memcpy(w->len, b->len, B * sizeof *w->len);
        w->have_len = 1;
    }
    size_t K = c->out_dim;
    switch (c->head) {
    case AC_NN_HEAD_LM:
    case AC_NN_HEAD_CLASSIFY: {
        size_t n = c->head == AC_NN_HEAD_LM ? N : B;
        size_t lim = c->head == AC_NN_HEAD_LM ? c->vocab : K;
        if (!b->targets)
            return ac_err_set(err, AC_EUSAGE, "the batch has no targets");
        for (size_t i = 0; i < n; i++)
            if (b->targets[i] < 0 || (size_t)b->targets[i] >= lim)
                return ac_err_set(err, AC_EDATA, "target %ld at position %zu is outside [0, %zu)",
                                  (long)b->targets[i], i, lim);
        memcpy(w->targets, b->targets, n * sizeof *w->targets);
        break;
    }
    case AC_NN_HEAD_REGRESS:
        if (!b->y)
            return ac_err_set(err, AC_EUSAGE, "the batch has no targets");
        memcpy(w->y, b->y, N * (c->arch == AC_NN_ARCH_ATTENTION ? C : K) * sizeof *w->y);
        break;
    case AC_NN_HEAD_SCORES:
        if (!b->y)
            return ac_err_set(err, AC_EUSAGE, "the batch has no targets");
        memcpy(w->y, b->y, B * H * T * T * sizeof *w->y);
        break;
    }
    return AC_OK;
}

int ac_nn_forward(ac_nn_model *m, const ac_nn_batch *b, ac_nn_stats *st, ac_err *err)
{
    ac_nn_work *w = m->w;
    const ac_nn_config *c = &m->cfg;
    int rc;
    w->have_forward = 0;
    if ((rc = copy_batch(m, b, err)))
        return rc;
    size_t B = b->B, T = b->T;
    w->B = B;
    w->T = T;
    w->spc = seqs_per_chunk(T);
    size_t spc = w->spc, nch = (B + spc - 1) / spc;
    int bt = blas_single();
    w->merge_pass = c->arch == AC_NN_ARCH_TRANSFORMER &&
                    (w->merge == NN_MERGE_ON || (w->merge == NN_MERGE_AUTO && nn_merge_pays(m, B, T)));
    if (w->merge_pass)
        nn_merged_prepare(m);
#pragma omp parallel for schedule(dynamic, 1) if (nch > 1)
    for (size_t ch = 0; ch < nch; ch++) {
        size_t b0 = ch * spc, nb = b0 + spc <= B ? spc : B - b0;
        if (c->arch == AC_NN_ARCH_TRANSFORMER)
            tf_forward_chunk(m, ch, b0, nb, B);
        else if (c->arch == AC_NN_ARCH_ATTENTION)
            attn_forward_chunk(m, ch, b0, nb);
        else
            scores_forward_chunk(m, ch, b0, nb);
    }
    blas_restore(bt);
    /* the loss, summed in row order */
    size_t nl, count;
    double denom;
    switch (c->head) {
    case AC_NN_HEAD_LM: nl = B * T; count = nl; denom = (double)nl; break;
    case AC_NN_HEAD_CLASSIFY: nl = B; count = B; denom = (double)B; break;
    case AC_NN_HEAD_REGRESS:
        nl = B * T;
        count = nl;
        denom = (double)nl * (double)(c->arch == AC_NN_ARCH_ATTENTION ? c->width : c->out_dim);
        break;
    default: nl = B * c->heads * T; count = nl; denom = (double)nl; break;
    }
    double s = 0;
    for (size_t i = 0; i < nl; i++)
        s += w->losses[i];
    size_t correct = 0;
    double maxdev = 0;
    for (size_t ch = 0; ch < nch; ch++) {
        correct += w->chunk_correct[ch];
        maxdev = w->chunk_maxdev[ch] > maxdev ? w->chunk_maxdev[ch] : maxdev;
    }
    if (st) {
        st->loss = s / denom;
        st->count = count;
        st->correct = correct;
        st->maxdev = maxdev;
    }
    w->have_forward = 1;
    return AC_OK;
}

const double *ac_nn_output(const ac_nn_model *m, size_t *rows, size_t *cols)
{
    const ac_nn_config *c = &m->cfg;
    const ac_nn_work *w = m->w;
    size_t N = w->B * w->T;
    switch (c->arch) {
    case AC_NN_ARCH_TRANSFORMER:
        if (c->head == AC_NN_HEAD_LM)
            *rows = N, *cols = c->vocab;
        else if (c->head == AC_NN_HEAD_CLASSIFY)
            *rows = w->B, *cols = c->out_dim;
        else
            *rows = N, *cols = c->out_dim;
        return w->logits;
    case AC_NN_ARCH_ATTENTION:
        *rows = N, *cols = c->width;
        return w->out;
    default:
        *rows = w->B * c->heads * w->T, *cols = w->T;
        return w->att;
    }
}

