/* backward.c — the backward pass of the model (attncheck/nn.h): per layer,
 * phase 1 runs the chunks through the activation gradients, phase 2 the
 * parameter gradients as fixed tiles (nn_impl.h). */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_impl.h"

void ac_nn_zero_grad(ac_nn_model *m)
{
    memset(m->grads, 0, m->nparams * sizeof(double));
}

typedef struct {
    nn_task *t;
    size_t n, cap;
} task_list;

static void push_task(task_list *L, const nn_task *t)
{
    if (L->n < L->cap)
        L->t[L->n++] = *t;
}

/* Tiles of rows [ob, oe) of the weight gradient dw (OC,IC) += dout^T inp
 * over N rows. */
static void push_linear_rows(task_list *L, double *dw, double *db, const double *dout,
                             const double *inp, size_t N, size_t IC, size_t OC, size_t ob,
                             size_t oe)
{
    for (size_t o0 = ob; o0 < oe; o0 += TILE_O)
        for (size_t i0 = 0; i0 < (IC ? IC : 1); i0 += TILE_I) {
            nn_task t = {TK_LINEAR, dw, i0 == 0 ? db : NULL, dout, inp, NULL, NULL, N, IC, OC, o0,
                         o0 + TILE_O < oe ? o0 + TILE_O : oe, i0,
                         i0 + TILE_I < IC ? i0 + TILE_I : IC, 0};
            t.cost = (double)(t.o1 - t.o0) * (double)(t.i1 - t.i0 + 1) * (double)N;
            push_task(L, &t);
        }
}

/* Tiles of the whole weight gradient dw (OC,IC) += dout^T inp. */
static void push_linear(task_list *L, double *dw, double *db, const double *dout,
                        const double *inp, size_t N, size_t IC, size_t OC)
{
    push_linear_rows(L, dw, db, dout, inp, N, IC, OC, 0, OC);
}

static void push_ln(task_list *L, double *dw, double *db, const double *dout, const double *inp,
                    const double *mean, const double *rstd, size_t N, size_t C)
{
    nn_task t = {TK_LN, dw, db, dout, inp, mean, rstd, N, C, C, 0, 0, 0, 0, 0};
    t.cost = 2.0 * (double)N * (double)C;
    push_task(L, &t);
}

static void run_task(const ac_nn_model *m, const nn_task *t)
{
    switch (t->kind) {
    case TK_LINEAR:
        ac_nn_linear_backward_weight(t->dw, t->db, t->dout, t->inp, t->N, t->IC, t->OC, t->o0,
                                     t->o1, t->i0, t->i1);
        break;
    case TK_LN:
        ac_nn_layernorm_backward_params(t->dw, t->db, t->dout, t->inp, t->mean, t->rstd, t->N,
                                        t->IC);
        break;
    case TK_HEADPROJ:
        ac_nn_headproj_backward_weight(t->dw, t->dout, t->inp, t->N, t->IC, t->OC, t->i0, t->o0);
        break;
    case TK_EMBED: {
        const ac_nn_config *c = &m->cfg;
        const ac_nn_work *w = m->w;
        double *dwpe = w->i_wpe >= 0 ? GRD(m, w->i_wpe) : NULL;
        if (c->input == AC_NN_INPUT_TOKENS) {
            ac_nn_encoder_backward(GRD(m, w->i_wte), dwpe, t->dout, w->tokens, w->B, w->T,
                                   c->width);
        } else if (dwpe) {
            size_t C = c->width;
            for (size_t r = 0; r < w->B * w->T; r++)
                for (size_t i = 0; i < C; i++)
                    dwpe[(r % w->T) * C + i] += t->dout[r * C + i];
        }
        break;
    }
    }
}

/* Run the phase-2 tasks, largest first (a stable order fixed by the sizes). */
static void run_tasks(const ac_nn_model *m, task_list *L)
{
    for (size_t i = 1; i < L->n; i++) {
        nn_task t = L->t[i];
        size_t j = i;
        while (j > 0 && L->t[j - 1].cost < t.cost) {
            L->t[j] = L->t[j - 1];
            j--;
        }
        L->t[j] = t;
    }
    size_t n = L->n;
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += L->t[i].cost;
    /* small phases run on the calling thread: waking the team costs more */
#pragma omp parallel for schedule(dynamic, 1) if (n > 1 && total > 1e5)
    for (size_t i = 0; i < n; i++)
        run_task(m, &L->t[i]);
    L->n = 0;
}

/* out[j] = sum over the nr rows of x (row stride n) of x[r][j], in row
 * order: a bias gradient's share of one chunk, taken while the chunk's
 * gradient rows are still in cache (phase 2 adds the chunks in order). */
static void col_sums(double *out, const double *x, size_t nr, size_t n)
{
    memset(out, 0, n * sizeof *out);
    for (size_t r = 0; r < nr; r++) {
        const double *xr = x + r * n;
#pragma omp simd
        for (size_t j = 0; j < n; j++)
            out[j] += xr[j];
    }
}

/* Offsets of the four bias gradients of a transformer layer in a chunk's
 * row of w->bias_part (model.c sizes it 2C + F + 3D). */
typedef struct {
    size_t fcp, fc, proj, qkv, n;
} bias_slots;

static bias_slots layer_bias_slots(const ac_nn_model *m)
{
    size_t C = m->cfg.width, F = m->cfg.ffn, D = m->D;
    bias_slots b = {0, C, C + F, 2 * C + F, 2 * C + F + 3 * D};
    return b;
}

/* Head and final LayerNorm, phase 1, on one chunk: w->gout = d loss / d
 * (output of the last block). */
static void tf_head_backward_chunk(ac_nn_model *m, size_t b0, size_t nb)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t T = w->T, C = c->width, B = w->B, N = B * T, r0 = b0 * T, nr = nb * T;
    double *glnf = w->glnf + r0 * C;
    if (c->head == AC_NN_HEAD_LM) {
        size_t V = c->vocab;
        double *dl = w->logits + r0 * V;
        /* forward: loss = mean over N rows of xent(logits) */
        ac_nn_xent_backward(dl, dl, w->targets + r0, 1.0 / (double)N, nr, V);
        ac_nn_linear_backward_input(glnf, dl, PAR(m, w->i_headw), nr, C, V, 0);
    } else if (c->head == AC_NN_HEAD_CLASSIFY) {
        size_t K = c->out_dim;
        double *dl = w->logits + b0 * K, *gp = w->gpool + b0 * C;
        ac_nn_xent_backward(dl, dl, w->targets + b0, 1.0 / (double)B, nb, K);
        ac_nn_linear_backward_input(gp, dl, PAR(m, w->i_headw), nb, C, K, 0);
        /* forward: pooled = row 0, row T-1 or the mean of the rows */
        for (size_t b = 0; b < nb; b++) {
            double *g = glnf + b * T * C;
            const double *d = gp + b * C;
            size_t len = w->have_len ? w->len[b0 + b] : T; /* real rows */
            if (c->pool == AC_NN_POOL_MEAN) {
                for (size_t t = 0; t < T; t++)
                    for (size_t i = 0; i < C; i++)
                        g[t * C + i] = t < len ? d[i] / (double)len : 0.0;
            } else {
                memset(g, 0, T * C * sizeof *g);
                memcpy(g + (c->pool == AC_NN_POOL_FIRST ? 0 : (len - 1) * C), d, C * sizeof *g);
            }
        }
    } else {
        size_t K = c->out_dim;
        double *out = w->logits + r0 * K;
        const double *y = w->y + r0 * K;
        /* forward: loss = sum (out - y)^2 / (N K) */
        double sc = 2.0 / ((double)N * (double)K);
        for (size_t i = 0; i < nr * K; i++)
            out[i] = (out[i] - y[i]) * sc;
        ac_nn_linear_backward_input(glnf, out, PAR(m, w->i_headw), nr, C, K, 0);
    }
    const double *xl = layer_output(m, c->layers - 1) + r0 * C;
    ac_nn_layernorm_backward(w->gout + r0 * C, NULL, glnf, xl, PAR(m, w->i_lnfw),
                             w->lnf_mean + r0, w->lnf_rstd + r0, nr, C);
}

/* The attention block of layer l on one chunk (res = xres + block(xin)):
 * gxin (=, or += if accumulate) the gradient of xin given gres; merged heads
 * when w->merge_pass (attn_merged.c), else the projection, the attention and qkv. */
static void attn_block_backward(const ac_nn_model *m, size_t l, double *gxin, int accumulate,
                                const double *gres, double *gatty, double *gqkv, double *scr,
                                const double *qkv, const double *att, size_t nb)
{
    const ac_nn_config *c = &m->cfg;
    size_t T = m->w->T, C = c->width, D = m->D, H = c->heads, S = m->S, nr = nb * T;
    if (m->w->merge_pass) {
        nn_merged_block_backward(m, l, gxin, accumulate, gres, gatty, gqkv, scr, qkv, att, nb);
        return;
    }
    const double *p = PAR(m, m->w->i_layer0 + (long)(l * L_NTENSORS));
    const ac_nn_tensor *tt = &m->tensors[m->w->i_layer0 + l * L_NTENSORS];
#define LP(slot) (p + (tt[slot].offset - tt[0].offset))
    /* res = xres + atty Wo^T + bo, atty = attention(qkv), qkv = xin Wqkv^T + b */
    ac_nn_linear_backward_input(gatty, gres, LP(L_PROJW), nr, D, C, 0);
    ac_nn_attention_backward(gqkv, scr, gatty, qkv, att, nb, T, H, S, c->causal);
    ac_nn_linear_backward_input(gxin, gqkv, LP(L_QKVW), nr, C, 3 * D, accumulate);
#undef LP
}

/* One transformer layer, phase 1, on one chunk: from w->gout (gradient of
 * the layer's output) to w->gx (gradient of its input). */
static void tf_layer_backward_chunk(ac_nn_model *m, size_t l, size_t chunk, size_t b0, size_t nb)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t T = w->T, C = c->width, D = m->D, H = c->heads, F = c->ffn;
    size_t r0 = b0 * T, nr = nb * T;
    const double *p = PAR(m, w->i_layer0 + (long)(l * L_NTENSORS));
    const ac_nn_tensor *tt = &m->tensors[w->i_layer0 + l * L_NTENSORS];
#define LP(slot) (p + (tt[slot].offset - tt[0].offset))
    const layer_acts *A = &w->layers[l];
    const double *x = layer_input(m, l) + r0 * C;
    const double *qkv = A->qkv + r0 * 3 * D, *att = A->att + b0 * H * T * T;
    const double *res2 = A->res2 + r0 * C, *res3 = A->res3 + r0 * C, *fch = A->fch + r0 * F;
    const double *fchg = A->fchg + r0 * F;
    const double *m1 = A->ln1_mean + r0, *s1 = A->ln1_rstd + r0;
    const double *m2 = A->ln2_mean + r0, *s2 = A->ln2_rstd + r0;
    double *gout = w->gout + r0 * C, *gx = w->gx + r0 * C, *gres2 = w->gres2 + r0 * C;
    double *gln = w->gln + r0 * C, *gln1 = w->gln1 + r0 * C, *gf = w->gf + r0 * F;
    double *gatty = w->gatty + r0 * D, *gqkv = w->gqkv + r0 * 3 * D;
    double *scr = w->scratch + chunk * T * T;
    bias_slots bs = layer_bias_slots(m);
    double *bp = w->bias_part + chunk * bs.n;
    if (c->ln == AC_NN_LN_PRE) {
        /* res3 = res2 + gelu(fch) Wp^T + bp */
        ac_nn_linear_backward_input(gf, gout, LP(L_FCPW), nr, F, C, 0);
        ac_nn_gelu_backward(gf, fch, fchg, gf, nr * F);
        /* fch = ln2 Wfc^T + bfc */
        ac_nn_linear_backward_input(gln, gf, LP(L_FCW), nr, C, F, 0);
        /* ln2 = LN2(res2), and res2 also feeds res3 directly */
        ac_nn_layernorm_backward(gres2, gout, gln, res2, LP(L_LN2W), m2, s2, nr, C);
        /* res2 = x + attention(ln1), ln1 = LN1(x), and x also feeds res2 */
        attn_block_backward(m, l, gln1, 0, gres2, gatty, gqkv, scr, qkv, att, nb);
        ac_nn_layernorm_backward(gx, gres2, gln1, x, LP(L_LN1W), m1, s1, nr, C);
        col_sums(bp + bs.fcp, gout, nr, C);
    } else {
        /* out = LN2(res3): gln1 holds d res3 */
        ac_nn_layernorm_backward(gln1, NULL, gout, res3, LP(L_LN2W), m2, s2, nr, C);
        /* res3 = ln1 + gelu(fch) Wp^T + bp */
        ac_nn_linear_backward_input(gf, gln1, LP(L_FCPW), nr, F, C, 0);
        ac_nn_gelu_backward(gf, fch, fchg, gf, nr * F);
        /* fch = ln1 Wfc^T + bfc: gln = d ln1 */
        memcpy(gln, gln1, nr * C * sizeof *gln);
        ac_nn_linear_backward_input(gln, gf, LP(L_FCW), nr, C, F, 1);
        /* ln1 = LN1(res2) */
        ac_nn_layernorm_backward(gres2, NULL, gln, res2, LP(L_LN1W), m1, s1, nr, C);
        memcpy(gx, gres2, nr * C * sizeof *gx);
        /* res2 = x + attention(x) */
        attn_block_backward(m, l, gx, 1, gres2, gatty, gqkv, scr, qkv, att, nb);
        col_sums(bp + bs.fcp, gln1, nr, C);
    }
    /* the biases of the two products and the attention's qkv */
    col_sums(bp + bs.fc, gf, nr, F);
    col_sums(bp + bs.proj, gres2, nr, C);
    col_sums(bp + bs.qkv, gqkv, nr, w->merge_pass ? 3 * H * C : 3 * D);
#undef LP
}

/* Phase-2 tasks of a layer's attention block: the weight gradients of the
 * output projection and of qkv, or with merged heads those of Mq and Mv
 * (rows [0,HC) and [2HC,3HC) of w->mrg_grad; attn_merged.c), whose bias
 * and chain-rule parts follow in tf_layer_tasks and tf_backward. */
static void push_attn(ac_nn_model *m, task_list *L, double *dwproj, double *dwqkv,
                      const double *atty, const double *xin)
{
    ac_nn_work *w = m->w;
    size_t N = w->B * w->T, C = m->cfg.width, D = m->D;
    if (w->merge_pass) {
        size_t HC = m->cfg.heads * C;
        memset(w->mrg_grad, 0, 3 * HC * C * sizeof *w->mrg_grad);
        push_linear_rows(L, w->mrg_grad, NULL, w->gqkv, xin, N, C, 3 * HC, 0, HC);
        push_linear_rows(L, w->mrg_grad, NULL, w->gqkv, xin, N, C, 3 * HC, 2 * HC, 3 * HC);
        return;
    }
    push_linear(L, dwproj, NULL, w->gres2, atty, N, D, C);
    push_linear(L, dwqkv, NULL, w->gqkv, xin, N, C, 3 * D);
}

/* Phase-2 tasks of transformer layer l. */
static void tf_layer_tasks(ac_nn_model *m, size_t l, task_list *L)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t N = w->B * w->T, C = c->width, D = m->D, F = c->ffn;
    long i0 = w->i_layer0 + (long)(l * L_NTENSORS);
#define LG(slot) GRD(m, i0 + (slot))
    const layer_acts *A = &w->layers[l];
    const double *x = layer_input(m, l);
    /* the four linear biases come from the chunks' column sums (below) */
    if (c->ln == AC_NN_LN_PRE) {
        push_linear(L, LG(L_FCPW), NULL, w->gout, A->fchg, N, F, C);
        push_linear(L, LG(L_FCW), NULL, w->gf, A->ln2, N, C, F);
        push_ln(L, LG(L_LN2W), LG(L_LN2B), w->gln, A->res2, A->ln2_mean, A->ln2_rstd, N, C);
        push_attn(m, L, LG(L_PROJW), LG(L_QKVW), A->atty, A->ln1);
        push_ln(L, LG(L_LN1W), LG(L_LN1B), w->gln1, x, A->ln1_mean, A->ln1_rstd, N, C);
    } else {
        push_ln(L, LG(L_LN2W), LG(L_LN2B), w->gout, A->res3, A->ln2_mean, A->ln2_rstd, N, C);
        push_linear(L, LG(L_FCPW), NULL, w->gln1, A->fchg, N, F, C);
        push_linear(L, LG(L_FCW), NULL, w->gf, A->ln1, N, C, F);
        push_ln(L, LG(L_LN1W), LG(L_LN1B), w->gln, A->res2, A->ln1_mean, A->ln1_rstd, N, C);
        push_attn(m, L, LG(L_PROJW), LG(L_QKVW), A->atty, x);
    }
    /* bias gradients: the chunks' column sums added in chunk order (the cut
     * into chunks depends only on B and T, never on threads) */
    bias_slots bs = layer_bias_slots(m);
    size_t nch = (w->B + w->spc - 1) / w->spc;
    const size_t off[5] = {bs.fcp, bs.fc, bs.proj, bs.qkv, bs.proj};
    size_t len[5] = {C, F, C, 3 * D, 0};
    double *db[5] = {LG(L_FCPB), LG(L_FCB), LG(L_PROJB), LG(L_QKVB), NULL};
    int nk = 4;
    if (w->merge_pass) {
        /* the gradients of uq (the Q' columns' bias) and of be (= this pass's
         * projection-bias gradient), for nn_merged_param_grads */
        size_t HC = c->heads * C;
        double *du = w->mrg_grad + 3 * HC * C;
        memset(du, 0, (HC + C) * sizeof *du);
        len[3] = HC;
        db[3] = du;
        len[4] = C;
        db[4] = du + HC;
        nk = 5;
    }
    for (size_t ch = 0; ch < nch; ch++)
        for (int k = 0; k < nk; k++) {
            const double *p = w->bias_part + ch * bs.n + off[k];
            double *d = db[k];
#pragma omp simd
            for (size_t j = 0; j < len[k]; j++)
                d[j] += p[j];
        }
#undef LG
}

static void tf_backward(ac_nn_model *m)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t B = w->B, T = w->T, N = B * T, C = c->width, spc = w->spc;
    size_t nch = (B + spc - 1) / spc;
    task_list L = {w->tasks, 0, w->ntasks_cap};
    /* head: phase 1 */
#pragma omp parallel for schedule(dynamic, 1) if (nch > 1)
    for (size_t ch = 0; ch < nch; ch++) {
        size_t b0 = ch * spc, nb = b0 + spc <= B ? spc : B - b0;
        tf_head_backward_chunk(m, b0, nb);
    }
    /* head: phase 2 */
    const double *xl = layer_output(m, c->layers - 1);
    if (c->head == AC_NN_HEAD_CLASSIFY)
        push_linear(&L, GRD(m, w->i_headw), GRD(m, w->i_headb), w->logits, w->pooled, B, C,
                    c->out_dim);
    else
        push_linear(&L, GRD(m, w->i_headw), w->i_headb >= 0 ? GRD(m, w->i_headb) : NULL,
                    w->logits, w->lnf, N, C, c->head == AC_NN_HEAD_LM ? c->vocab : c->out_dim);
    push_ln(&L, GRD(m, w->i_lnfw), GRD(m, w->i_lnfb), w->glnf, xl, w->lnf_mean, w->lnf_rstd, N,
            C);
    run_tasks(m, &L);
    for (size_t l = c->layers; l-- > 0;) {
#pragma omp parallel for schedule(dynamic, 1) if (nch > 1)
        for (size_t ch = 0; ch < nch; ch++) {
            size_t b0 = ch * spc, nb = b0 + spc <= B ? spc : B - b0;
            tf_layer_backward_chunk(m, l, ch, b0, nb);
        }
        tf_layer_tasks(m, l, &L);
        run_tasks(m, &L);
        if (w->merge_pass)
            nn_merged_param_grads(m, l);
        double *t = w->gout;
        w->gout = w->gx;
        w->gx = t;
    }
    /* embedding */
    if (c->input == AC_NN_INPUT_TOKENS || w->i_wpe >= 0) {
        nn_task t = {TK_EMBED, NULL, NULL, w->gout, NULL, NULL, NULL, N, 0, 0, 0, 0, 0, 0, 1.0};
        push_task(&L, &t);
    }
    if (c->input == AC_NN_INPUT_VECTORS)
        push_linear(&L, GRD(m, w->i_win), GRD(m, w->i_bin), w->gout, w->x, N, c->in_dim, C);
    run_tasks(m, &L);
}

static void attn_backward(ac_nn_model *m)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t B = w->B, T = w->T, N = B * T, C = c->width, D = m->D, H = c->heads, S = m->S;
    size_t spc = w->spc, nch = (B + spc - 1) / spc;
    task_list L = {w->tasks, 0, w->ntasks_cap};
    double sc = 2.0 / ((double)N * (double)C);
#pragma omp parallel for schedule(dynamic, 1) if (nch > 1)
    for (size_t ch = 0; ch < nch; ch++) {
        size_t b0 = ch * spc, nb = b0 + spc <= B ? spc : B - b0, r0 = b0 * T, nr = nb * T;
        double *g = w->gout + r0 * C;
        const double *out = w->out + r0 * C, *y = w->y + r0 * C;
        /* forward: loss = sum (out - y)^2 / (N C) */
        for (size_t i = 0; i < nr * C; i++)
            g[i] = (out[i] - y[i]) * sc;
        /* out = sum_h atty_h Wo_h^T */
        ac_nn_headproj_backward_input(w->gatty + r0 * D, g, PAR(m, w->i_wo), nr, C, H, S);
        ac_nn_attention_backward(w->gqkv + r0 * 3 * D, w->scratch + ch * T * T,
                                 w->gatty + r0 * D, w->qkv + r0 * 3 * D, w->att + b0 * H * T * T,
                                 nb, T, H, S, c->causal);
    }
    /* qkv = x [Wq; Wk; Wv]^T */
    push_linear(&L, GRD(m, w->i_wq), NULL, w->gqkv, w->x, N, C, 3 * D);
    for (size_t h = 0; h < H; h++) {
        nn_task t = {TK_HEADPROJ, GRD(m, w->i_wo), NULL, w->gout, w->atty, NULL, NULL, N, C, H,
                     h, h + 1, S, 0, (double)N * (double)C * (double)S};
        push_task(&L, &t);
    }
    run_tasks(m, &L);
}

static void scores_backward(ac_nn_model *m)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t B = w->B, T = w->T, N = B * T, C = c->width, D = m->D, H = c->heads, S = m->S;
    size_t spc = w->spc, nch = (B + spc - 1) / spc;
    task_list L = {w->tasks, 0, w->ntasks_cap};
    double sc = 1.0 / ((double)B * (double)H * (double)T);
#pragma omp parallel for schedule(dynamic, 1) if (nch > 1)
    for (size_t ch = 0; ch < nch; ch++) {
        size_t b0 = ch * spc, nb = b0 + spc <= B ? spc : B - b0, r0 = b0 * T;
        double *dp = w->pre + b0 * H * T * T;
        const double *att = w->att + b0 * H * T * T, *y = w->y + b0 * H * T * T;
        /* forward: loss_row = sum_{j visible} y_j (lse - pre_j), lse over the
         * visible keys, so d pre_j = (att_j sum_{i visible} y_i - y_j) / (B H T)
         * for visible j and 0 for a masked key (it reaches neither the loss
         * nor the softmax) */
        for (size_t r = 0; r < nb * H * T; r++) {
            size_t t = r % T, len = c->causal ? t + 1 : T;
            double sy = 0;
            for (size_t j = 0; j < len; j++)
                if (nn_visible(w, t, j))
                    sy += y[r * T + j];
            for (size_t j = 0; j < T; j++)
                dp[r * T + j] = j < len && nn_visible(w, t, j)
                                    ? (att[r * T + j] * sy - y[r * T + j]) * sc
                                    : 0.0;
        }
        ac_nn_scores_backward(w->gqkv + r0 * 2 * D, 2 * D, dp, w->qkv + r0 * 2 * D, 2 * D, nb, T,
                              H, S);
    }
    push_linear(&L, GRD(m, w->i_wq), NULL, w->gqkv, w->x, N, C, 2 * D);
    run_tasks(m, &L);
}

void ac_nn_backward(ac_nn_model *m)
{
    if (!m->w->have_forward)
        return;
    int bt = blas_single();
    switch (m->cfg.arch) {
    case AC_NN_ARCH_TRANSFORMER: tf_backward(m); break;
    case AC_NN_ARCH_ATTENTION: attn_backward(m); break;
    default: scores_backward(m); break;
    }
    blas_restore(bt);
    m->w->have_forward = 0; /* the head's buffers now hold gradients */
}
