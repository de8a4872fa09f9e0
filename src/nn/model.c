/* model.c — the model of attncheck/nn.h: the configuration check, the
 * tensor table (parameters, gradients and the AdamW moments each one block
 * carved into named tensors), the activation buffers, and the initial
 * weights.  The passes are in forward.c and backward.c, the optimiser in
 * adamw.c; their parallel structure is described in nn_impl.h.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/rng.h"
#include "nn/nn_impl.h"

/* ---------------------------------------------------------------- config */

int ac_nn_config_check(const ac_nn_config *c, ac_err *err)
{
    if (c->width == 0)
        return ac_err_set_field(err, AC_EUSAGE, "width", "width must be at least 1");
    if (c->heads == 0)
        return ac_err_set_field(err, AC_EUSAGE, "heads", "heads must be at least 1");
    if (c->max_seq == 0)
        return ac_err_set_field(err, AC_EUSAGE, "max_seq", "max_seq must be at least 1");
    if (c->kind == AC_NN_ATTN_STANDARD && c->width % c->heads != 0)
        return ac_err_set_field(err, AC_EUSAGE, "heads,width,kind,head_dim",
                                "heads %zu does not divide width %zu (standard heads have size "
                                "width/heads; use kind fixed head_dim for another size)",
                                c->heads, c->width);
    if (c->kind == AC_NN_ATTN_FIXED && c->head_dim == 0)
        return ac_err_set_field(err, AC_EUSAGE, "head_dim",
                                "head_dim must be at least 1 for fixed heads");
    if (c->kind != AC_NN_ATTN_STANDARD && c->kind != AC_NN_ATTN_FIXED)
        return ac_err_set(err, AC_EUSAGE, "unknown attention kind");
    switch (c->arch) {
    case AC_NN_ARCH_TRANSFORMER:
        if (c->layers == 0)
            return ac_err_set_field(err, AC_EUSAGE, "layers", "layers must be at least 1");
        if (c->ffn == 0)
            return ac_err_set(err, AC_EUSAGE, "the feed-forward width must be at least 1");
        if (c->input == AC_NN_INPUT_TOKENS && c->vocab == 0)
            return ac_err_set(err, AC_EUSAGE, "the vocabulary must have at least one token");
        if (c->input == AC_NN_INPUT_VECTORS && c->in_dim == 0)
            return ac_err_set(err, AC_EUSAGE, "the input dimension must be at least 1");
        if (c->head == AC_NN_HEAD_LM && c->input != AC_NN_INPUT_TOKENS)
            return ac_err_set(err, AC_EUSAGE, "a language-model head needs token inputs");
        if ((c->head == AC_NN_HEAD_CLASSIFY || c->head == AC_NN_HEAD_REGRESS) && c->out_dim == 0)
            return ac_err_set(err, AC_EUSAGE, "the head needs at least one output");
        if (c->head == AC_NN_HEAD_SCORES)
            return ac_err_set(err, AC_EUSAGE, "the scores head belongs to the scores architecture");
        if (c->ln != AC_NN_LN_PRE && c->ln != AC_NN_LN_POST)
            return ac_err_set(err, AC_EUSAGE, "unknown LayerNorm placement");
        if (c->head == AC_NN_HEAD_CLASSIFY && c->pool > AC_NN_POOL_MEAN)
            return ac_err_set(err, AC_EUSAGE, "unknown pooling");
        break;
    case AC_NN_ARCH_ATTENTION:
        if (c->head != AC_NN_HEAD_REGRESS)
            return ac_err_set(err, AC_EUSAGE, "the bare attention layer has a regression head");
        break;
    case AC_NN_ARCH_SCORES:
        if (c->head != AC_NN_HEAD_SCORES)
            return ac_err_set(err, AC_EUSAGE, "the scores architecture has the scores head");
        break;
    default:
        return ac_err_set(err, AC_EUSAGE, "unknown architecture");
    }
    return AC_OK;
}

/* ---------------------------------------------------------------- tensor table */

typedef struct {
    ac_nn_tensor *t;
    size_t n, cap, total;
    int overflow;
} table;

static long add_tensor(table *tb, const char *name, size_t ndim, size_t s0, size_t s1, size_t s2,
                       int init, size_t fan_in, double gain)
{
    if (tb->n == tb->cap) {
        size_t cap = tb->cap ? 2 * tb->cap : 32;
        ac_nn_tensor *nt = realloc(tb->t, cap * sizeof *nt);
        if (!nt) {
            tb->overflow = 2;
            return -1;
        }
        tb->t = nt;
        tb->cap = cap;
    }
    ac_nn_tensor *t = &tb->t[tb->n];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->shape[0] = s0;
    t->shape[1] = s1;
    t->shape[2] = s2;
    size_t size = 1;
    for (size_t k = 0; k < ndim; k++)
        if (!ac_size_mul(size, t->shape[k], &size))
            tb->overflow = 1;
    t->size = size;
    t->offset = tb->total;
    if (tb->total + size < tb->total)
        tb->overflow = 1;
    tb->total += size;
    t->decay = ndim >= 2;
    t->init = init;
    t->fan_in = fan_in;
    t->init_gain = gain;
    return (long)tb->n++;
}

static int build_table(ac_nn_model *m, ac_err *err)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    table tb = {0};
    size_t C = c->width, D = m->D, S = m->S, H = c->heads;
    char name[AC_NN_NAME_MAX];
    w->i_wte = w->i_win = w->i_bin = w->i_wpe = w->i_layer0 = w->i_lnfw = w->i_lnfb = -1;
    w->i_headw = w->i_headb = w->i_wq = w->i_wo = -1;
    if (c->arch == AC_NN_ARCH_TRANSFORMER) {
        double gproj = 1.0 / sqrt(2.0 * (double)c->layers);
        if (c->input == AC_NN_INPUT_TOKENS) {
            w->i_wte = add_tensor(&tb, "embed.tokens.weight", 2, c->vocab, C, 0, AC_NN_INIT_NORMAL,
                                  C, 1.0);
        } else {
            w->i_win = add_tensor(&tb, "embed.input.weight", 2, C, c->in_dim, 0,
                                  AC_NN_INIT_NORMAL, c->in_dim, 1.0);
            w->i_bin = add_tensor(&tb, "embed.input.bias", 1, C, 0, 0, AC_NN_INIT_ZERO, 0, 1.0);
        }
        if (c->positions)
            w->i_wpe = add_tensor(&tb, "embed.positions.weight", 2, c->max_seq, C, 0,
                                  AC_NN_INIT_NORMAL, C, 1.0);
        for (size_t l = 0; l < c->layers; l++) {
#define LNAME(s) (snprintf(name, sizeof name, "layer%zu." s, l), name)
            long i0 = add_tensor(&tb, LNAME("ln1.weight"), 1, C, 0, 0, AC_NN_INIT_ONE, 0, 1.0);
            add_tensor(&tb, LNAME("ln1.bias"), 1, C, 0, 0, AC_NN_INIT_ZERO, 0, 1.0);
            add_tensor(&tb, LNAME("attn.qkv.weight"), 2, 3 * D, C, 0, AC_NN_INIT_NORMAL, C, 1.0);
            add_tensor(&tb, LNAME("attn.qkv.bias"), 1, 3 * D, 0, 0, AC_NN_INIT_ZERO, 0, 1.0);
            add_tensor(&tb, LNAME("attn.proj.weight"), 2, C, D, 0, AC_NN_INIT_NORMAL, D, gproj);
            add_tensor(&tb, LNAME("attn.proj.bias"), 1, C, 0, 0, AC_NN_INIT_ZERO, 0, 1.0);
            add_tensor(&tb, LNAME("ln2.weight"), 1, C, 0, 0, AC_NN_INIT_ONE, 0, 1.0);
            add_tensor(&tb, LNAME("ln2.bias"), 1, C, 0, 0, AC_NN_INIT_ZERO, 0, 1.0);
            add_tensor(&tb, LNAME("ffn.fc.weight"), 2, c->ffn, C, 0, AC_NN_INIT_NORMAL, C, 1.0);
            add_tensor(&tb, LNAME("ffn.fc.bias"), 1, c->ffn, 0, 0, AC_NN_INIT_ZERO, 0, 1.0);
            add_tensor(&tb, LNAME("ffn.proj.weight"), 2, C, c->ffn, 0, AC_NN_INIT_NORMAL, c->ffn,
                       gproj);
            add_tensor(&tb, LNAME("ffn.proj.bias"), 1, C, 0, 0, AC_NN_INIT_ZERO, 0, 1.0);
#undef LNAME
            if (l == 0)
                w->i_layer0 = i0;
        }
        w->i_lnfw = add_tensor(&tb, "lnf.weight", 1, C, 0, 0, AC_NN_INIT_ONE, 0, 1.0);
        w->i_lnfb = add_tensor(&tb, "lnf.bias", 1, C, 0, 0, AC_NN_INIT_ZERO, 0, 1.0);
        size_t K = c->head == AC_NN_HEAD_LM ? c->vocab : c->out_dim;
        w->i_headw = add_tensor(&tb, "head.weight", 2, K, C, 0, AC_NN_INIT_NORMAL, C, 1.0);
        if (c->head != AC_NN_HEAD_LM)
            w->i_headb = add_tensor(&tb, "head.bias", 1, K, 0, 0, AC_NN_INIT_ZERO, 0, 1.0);
    } else if (c->arch == AC_NN_ARCH_ATTENTION) {
        /* the stacks of doc/mathematics.md §4.1: Wq, Wk, Wv (H,S,C) consecutive = one
         * (3D, C) matrix; Wo (H,C,S) */
        w->i_wq = add_tensor(&tb, "Wq", 3, H, S, C, AC_NN_INIT_NORMAL, C, 1.0);
        add_tensor(&tb, "Wk", 3, H, S, C, AC_NN_INIT_NORMAL, C, 1.0);
        add_tensor(&tb, "Wv", 3, H, S, C, AC_NN_INIT_NORMAL, C, 1.0);
        w->i_wo = add_tensor(&tb, "Wo", 3, H, C, S, AC_NN_INIT_NORMAL, D, 1.0);
    } else {
        /* Theorem 1's head: Wq, Wk (S,C) for one head (the layout of
         * rep-theorem's Wq.npy, Wk.npy), (H,S,C) for several */
        if (H == 1) {
            w->i_wq = add_tensor(&tb, "Wq", 2, S, C, 0, AC_NN_INIT_NORMAL, C, 1.0);
            add_tensor(&tb, "Wk", 2, S, C, 0, AC_NN_INIT_NORMAL, C, 1.0);
        } else {
            w->i_wq = add_tensor(&tb, "Wq", 3, H, S, C, AC_NN_INIT_NORMAL, C, 1.0);
            add_tensor(&tb, "Wk", 3, H, S, C, AC_NN_INIT_NORMAL, C, 1.0);
        }
    }
    if (tb.overflow) {
        free(tb.t);
        return tb.overflow == 2 ? ac_err_set(err, AC_EINTERNAL, "out of memory")
                                : ac_err_set(err, AC_EUSAGE, "the model is too large");
    }
    m->tensors = tb.t;
    m->ntensors = tb.n;
    m->nparams = tb.total;
    return AC_OK;
}

const ac_nn_tensor *ac_nn_tensor_find(const ac_nn_model *m, const char *name)
{
    for (size_t i = 0; i < m->ntensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0)
            return &m->tensors[i];
    return NULL;
}

/* ---------------------------------------------------------------- allocation */

/* Carve sizes[k] doubles for *ptrs[k] out of one block (sizes summed with
 * overflow checks). */
static double *carve(double **ptrs[], const size_t *sizes, size_t n, size_t *total, int *overflow)
{
    size_t tot = 0;
    for (size_t k = 0; k < n; k++) {
        if (tot + sizes[k] < tot)
            *overflow = 1;
        tot += sizes[k];
    }
    *total = tot;
    if (*overflow || tot > SIZE_MAX / sizeof(double))
        return (*overflow = 1), NULL;
    double *mem = malloc((tot ? tot : 1) * sizeof(double));
    if (!mem)
        return NULL;
    double *p = mem;
    for (size_t k = 0; k < n; k++) {
        *ptrs[k] = sizes[k] ? p : NULL;
        p += sizes[k];
    }
    return mem;
}

static int mul3(size_t a, size_t b, size_t c, size_t *out)
{
    size_t t;
    return ac_size_mul(a, b, &t) && ac_size_mul(t, c, out);
}

static int alloc_acts(ac_nn_model *m, ac_err *err)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t B = m->B, T = m->T, C = c->width, D = m->D, H = c->heads, F = c->ffn, L = c->layers;
    size_t N, NC, ND, NF, BH, BHTT, tmp;
    int of = 0;
    if (!ac_size_mul(B, T, &N) || !ac_size_mul(N, C, &NC) || !ac_size_mul(N, D, &ND) ||
        !ac_size_mul(N, c->arch == AC_NN_ARCH_TRANSFORMER ? F : 1, &NF) ||
        !ac_size_mul(B, H, &BH) || !mul3(BH, T, T, &BHTT) || !ac_size_mul(ND, 3, &tmp))
        return ac_err_set(err, AC_EUSAGE, "batch %zu x sequence %zu is too large for memory", B, T);
    size_t K = c->head == AC_NN_HEAD_LM ? c->vocab : c->out_dim;
    size_t in_dim = c->arch == AC_NN_ARCH_TRANSFORMER ? c->in_dim : C;
    size_t NK, NI;
    if (!ac_size_mul(N, K ? K : 1, &NK) || !ac_size_mul(N, in_dim ? in_dim : 1, &NI))
        return ac_err_set(err, AC_EUSAGE, "batch %zu x sequence %zu is too large for memory", B, T);
    w->nchunks_max = B; /* at most one chunk per sequence (B >= 1) */
    /* integer buffers */
    w->tokens = calloc(N ? N : 1, sizeof *w->tokens);
    w->targets = calloc(N ? N : 1, sizeof *w->targets);
    w->len = calloc(B ? B : 1, sizeof *w->len);
    w->chunk_correct = calloc(w->nchunks_max, sizeof *w->chunk_correct);
    w->chunk_maxdev = calloc(w->nchunks_max, sizeof *w->chunk_maxdev);
    size_t nblocks = m->nparams / NORM_BLOCK + 1;
    w->norm_part = calloc(nblocks, sizeof *w->norm_part);
    /* per chunk: the bias-gradient column sums of one transformer layer */
    size_t nbias = c->arch == AC_NN_ARCH_TRANSFORMER ? 2 * C + F + 3 * D : 1, nbp;
    if (!ac_size_mul(nbias, w->nchunks_max, &nbp))
        return ac_err_set(err, AC_EUSAGE, "batch %zu x sequence %zu is too large for memory", B, T);
    w->bias_part = calloc(nbp, sizeof *w->bias_part);
    if (!w->tokens || !w->targets || !w->len || !w->chunk_correct || !w->chunk_maxdev ||
        !w->norm_part || !w->bias_part)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");

    /* forward activations */
    size_t total;
    if (c->arch == AC_NN_ARCH_TRANSFORMER) {
        w->layers = calloc(L, sizeof *w->layers);
        if (!w->layers)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        size_t nptr = 2 + 13 * L + 7;
        double ***ptrs = malloc(nptr * sizeof *ptrs);
        size_t *sizes = malloc(nptr * sizeof *sizes);
        if (!ptrs || !sizes) {
            free(ptrs);
            free(sizes);
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        }
        size_t k = 0;
        ptrs[k] = &w->enc, sizes[k++] = NC;
        ptrs[k] = &w->x, sizes[k++] = c->input == AC_NN_INPUT_VECTORS ? NI : 0;
        for (size_t l = 0; l < L; l++) {
            layer_acts *a = &w->layers[l];
            ptrs[k] = &a->ln1, sizes[k++] = NC;
            ptrs[k] = &a->ln1_mean, sizes[k++] = N;
            ptrs[k] = &a->ln1_rstd, sizes[k++] = N;
            ptrs[k] = &a->qkv, sizes[k++] = tmp;
            ptrs[k] = &a->att, sizes[k++] = BHTT;
            ptrs[k] = &a->atty, sizes[k++] = ND;
            ptrs[k] = &a->res2, sizes[k++] = NC;
            ptrs[k] = &a->ln2, sizes[k++] = NC;
            ptrs[k] = &a->ln2_mean, sizes[k++] = N;
            ptrs[k] = &a->ln2_rstd, sizes[k++] = N;
            ptrs[k] = &a->fch, sizes[k++] = NF;
            ptrs[k] = &a->fchg, sizes[k++] = NF;
            ptrs[k] = &a->res3, sizes[k++] = NC;
        }
        ptrs[k] = &w->lnf, sizes[k++] = NC;
        ptrs[k] = &w->lnf_mean, sizes[k++] = N;
        ptrs[k] = &w->lnf_rstd, sizes[k++] = N;
        ptrs[k] = &w->pooled, sizes[k++] = c->head == AC_NN_HEAD_CLASSIFY ? B * C : 0;
        ptrs[k] = &w->logits, sizes[k++] = NK;
        ptrs[k] = &w->losses, sizes[k++] = N;
        ptrs[k] = &w->y, sizes[k++] = c->head == AC_NN_HEAD_REGRESS ? NK : 0;
        w->acts = carve(ptrs, sizes, k, &total, &of);
        free(ptrs);
        free(sizes);
    } else if (c->arch == AC_NN_ARCH_ATTENTION) {
        double **ptrs[] = {&w->x, &w->qkv, &w->att, &w->atty, &w->out, &w->losses, &w->y};
        size_t sizes[] = {NC, tmp, BHTT, ND, NC, N, NC};
        w->acts = carve(ptrs, sizes, 7, &total, &of);
    } else {
        double **ptrs[] = {&w->x, &w->qkv, &w->att, &w->pre, &w->losses, &w->y};
        size_t sizes[] = {NC, 2 * ND, BHTT, BHTT, B * H * T, BHTT};
        w->acts = carve(ptrs, sizes, 6, &total, &of);
    }
    if (!w->acts)
        return of ? ac_err_set(err, AC_EUSAGE, "batch %zu x sequence %zu is too large for memory",
                               B, T)
                  : ac_err_set(err, AC_EINTERNAL, "out of memory");

    /* gradient scratch: one layer */
    size_t TT = T * T, scr;
    if (!ac_size_mul(TT, w->nchunks_max, &scr))
        return ac_err_set(err, AC_EUSAGE, "sequence %zu is too long", T);
    if (c->arch == AC_NN_ARCH_TRANSFORMER) {
        size_t NKg = c->head == AC_NN_HEAD_CLASSIFY ? B * C : 0;
        double **ptrs[] = {&w->gout, &w->gx, &w->gres2, &w->gln, &w->gln1, &w->gf,
                           &w->gatty, &w->gqkv, &w->glnf, &w->gpool, &w->scratch};
        size_t sizes[] = {NC, NC, NC, NC, NC, NF, ND, tmp, NC, NKg, scr};
        w->gacts = carve(ptrs, sizes, 11, &total, &of);
    } else if (c->arch == AC_NN_ARCH_ATTENTION) {
        double **ptrs[] = {&w->gout, &w->gatty, &w->gqkv, &w->scratch};
        size_t sizes[] = {NC, ND, tmp, scr};
        w->gacts = carve(ptrs, sizes, 4, &total, &of);
    } else {
        double **ptrs[] = {&w->gqkv};
        size_t sizes[] = {2 * ND};
        w->gacts = carve(ptrs, sizes, 1, &total, &of);
    }
    if (!w->gacts)
        return of ? ac_err_set(err, AC_EUSAGE, "batch %zu x sequence %zu is too large for memory",
                               B, T)
                  : ac_err_set(err, AC_EINTERNAL, "out of memory");
    /* phase-2 tasks: the largest phase is one layer (or the head) */
    /* tiles of (OC, IC): ceil(OC/TILE_O) ceil(IC/TILE_I) <= (OC/TILE_O+1)(IC/TILE_I+1) */
#define NT(oc, ic) (((oc) / TILE_O + 1) * ((ic) / TILE_I + 1))
    size_t tiles = NT(3 * D, C) + NT(C, D) + NT(F, C) + NT(C, F) + NT(K, C) + NT(C, in_dim) +
                   NT(2 * D, C) + H + 16;
#undef NT
    w->ntasks_cap = tiles;
    w->tasks = malloc(tiles * sizeof *w->tasks);
    if (!w->tasks)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    /* merged heads: weights of every layer, gradients of one (attn_merged.c) */
    if (nn_merge_eligible(m)) {
        size_t HC = H * C, per = 2 * C * HC + HC + C; /* HC <= D, so no overflow */
        w->mrg = malloc((L > 0 ? per * L : 1) * sizeof *w->mrg);
        w->mrg_grad = malloc((3 * HC * C + HC + C) * sizeof *w->mrg_grad);
        if (!w->mrg || !w->mrg_grad)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        w->merge = NN_MERGE_AUTO;
    }
    return AC_OK;
}

void ac_nn_model_free(ac_nn_model *m)
{
    if (!m)
        return;
    free(m->tensors);
    free(m->params);
    free(m->grads);
    free(m->m);
    free(m->v);
    if (m->w) {
        ac_nn_work *w = m->w;
        free(w->tokens);
        free(w->targets);
        free(w->len);
        free(w->keep);
        free(w->acts);
        free(w->gacts);
        free(w->layers);
        free(w->chunk_correct);
        free(w->chunk_maxdev);
        free(w->norm_part);
        free(w->bias_part);
        free(w->tasks);
        free(w->mrg);
        free(w->mrg_grad);
        free(w);
    }
    memset(m, 0, sizeof *m);
}

int ac_nn_model_init(ac_nn_model *m, const ac_nn_config *cfg, size_t B, size_t T, ac_err *err)
{
    int st;
    memset(m, 0, sizeof *m);
    if ((st = ac_nn_config_check(cfg, err)))
        return st;
    if (B == 0 || T == 0)
        return ac_err_set(err, AC_EUSAGE, "batch and sequence must be at least 1");
    if (T > cfg->max_seq)
        return ac_err_set(err, AC_EUSAGE, "sequence %zu is longer than the model's %zu", T,
                          cfg->max_seq);
    m->cfg = *cfg;
    m->S = cfg->kind == AC_NN_ATTN_STANDARD ? cfg->width / cfg->heads : cfg->head_dim;
    if (!ac_size_mul(m->S, cfg->heads, &m->D))
        return ac_err_set(err, AC_EUSAGE, "heads x head size overflows");
    m->B = B;
    m->T = T;
    m->w = calloc(1, sizeof *m->w);
    if (!m->w)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if ((st = build_table(m, err)))
        goto fail;
    size_t np = m->nparams ? m->nparams : 1;
    m->params = calloc(np, sizeof(double));
    m->grads = calloc(np, sizeof(double));
    m->m = calloc(np, sizeof(double));
    m->v = calloc(np, sizeof(double));
    if (!m->params || !m->grads || !m->m || !m->v) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory (%zu parameters)", m->nparams);
        goto fail;
    }
    if ((st = alloc_acts(m, err)))
        goto fail;
    return AC_OK;
fail:
    ac_nn_model_free(m);
    return st;
}

/* ---------------------------------------------------------------- weights */

void ac_nn_model_init_weights(ac_nn_model *m, uint64_t seed, double std)
{
    for (size_t i = 0; i < m->ntensors; i++) {
        const ac_nn_tensor *t = &m->tensors[i];
        double *p = m->params + t->offset;
        if (t->init == AC_NN_INIT_ZERO) {
            memset(p, 0, t->size * sizeof *p);
        } else if (t->init == AC_NN_INIT_ONE) {
            for (size_t k = 0; k < t->size; k++)
                p[k] = 1.0;
        } else {
            ac_rng r;
            ac_rng_init(&r, seed, 0x696e6974 /* "init" */, i);
            ac_rng_normal_fill(&r, p, t->size);
            double s = (std > 0 ? std : 1.0 / sqrt((double)(t->fan_in ? t->fan_in : 1))) *
                       t->init_gain;
            for (size_t k = 0; k < t->size; k++)
                p[k] *= s;
        }
    }
    memset(m->grads, 0, m->nparams * sizeof(double));
    memset(m->m, 0, m->nparams * sizeof(double));
    memset(m->v, 0, m->nparams * sizeof(double));
}

