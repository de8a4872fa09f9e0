/* nnmodel.c — the model of attncheck/nn.h: tensor table, parameter blocks,
 * forward and backward passes, gradient norm and AdamW.
 *
 * Parallel structure (deterministic for any thread count)
 * -------------------------------------------------------
 * Everything except the parameter gradients is local to a sequence, so the
 * batch is cut into fixed chunks of whole sequences (about CHUNK_ROWS rows;
 * the cut depends only on B and T) and OpenMP runs the chunks:
 *   forward:  all layers of a chunk, its head and per-row losses;
 *   backward: per layer, phase 1 runs the chunks through the layer's
 *             activation gradients; phase 2 computes the layer's parameter
 *             gradients as fixed tiles (TILE x TILE blocks of each weight
 *             gradient, one dgemm over all N rows each; LayerNorm and
 *             embedding gradients as single tasks).
 * Each number is produced by one fixed piece of code on fixed data, and
 * scalar reductions (loss, gradient norm) are summed in a fixed order, so
 * the results are bit-identical whatever the number of threads.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/blas.h"
#include "attncheck/nn.h"
#include "attncheck/rng.h"

#define CHUNK_ROWS 256
#define TILE_O 128
#define TILE_I 256
#define NORM_BLOCK 4096

/* Slots of a transformer layer's tensors, in table order. */
enum {
    L_LN1W, L_LN1B, L_QKVW, L_QKVB, L_PROJW, L_PROJB, L_LN2W, L_LN2B, L_FCW, L_FCB, L_FCPW,
    L_FCPB, L_NTENSORS
};

/* Activations of one transformer layer (rows of the whole batch). */
typedef struct {
    double *ln1, *ln1_mean, *ln1_rstd, *qkv, *att, *atty, *res2, *ln2, *ln2_mean, *ln2_rstd, *fch,
        *fchg, *res3;
} layer_acts;

typedef enum { TK_LINEAR, TK_LN, TK_EMBED, TK_HEADPROJ } task_kind;

/* One piece of phase 2: a weight-gradient tile, a LayerNorm's parameters,
 * the embedding, or one head of the per-head output projection. */
typedef struct {
    task_kind kind;
    double *dw, *db;
    const double *dout, *inp, *mean, *rstd;
    size_t N, IC, OC, o0, o1, i0, i1;
    double cost;
} nn_task;

struct ac_nn_work {
    size_t B, T;              /* of the last forward */
    size_t spc;               /* sequences per chunk (for the last forward's T) */
    int have_forward;
    /* tensor indices */
    long i_wte, i_win, i_bin, i_wpe, i_layer0, i_lnfw, i_lnfb, i_headw, i_headb, i_wq, i_wo;
    /* inputs copied from the batch */
    int32_t *tokens, *targets;
    double *x, *y;
    /* activations */
    double *acts;
    double *enc;              /* (N,C) embedding output / layer-0 input */
    layer_acts *layers;
    double *lnf, *lnf_mean, *lnf_rstd, *pooled, *logits, *losses;
    /* ARCH_ATTENTION / ARCH_SCORES */
    double *qkv, *att, *pre, *atty, *out;
    /* gradient scratch (one layer) */
    double *gacts;
    double *gout, *gx, *gres2, *gln, *gln1, *gf, *gatty, *gqkv, *glnf, *gpool;
    double *scratch;          /* per chunk: T*T */
    size_t nchunks_max;
    size_t *chunk_correct;
    double *chunk_maxdev;
    double *norm_part;
    nn_task *tasks;
    size_t ntasks_cap;
};

/* ---------------------------------------------------------------- config */

int ac_nn_config_check(const ac_nn_config *c, ac_err *err)
{
    if (c->width == 0)
        return ac_err_set_field(err, AC_EUSAGE, "width", "width must be at least 1");
    if (c->heads == 0)
        return ac_err_set(err, AC_EUSAGE, "--heads must be at least 1");
    if (c->max_seq == 0)
        return ac_err_set(err, AC_EUSAGE, "--seq must be at least 1");
    if (c->kind == AC_NN_ATTN_STANDARD && c->width % c->heads != 0)
        return ac_err_set(err, AC_EUSAGE,
                          "--heads %zu does not divide --width %zu (standard heads have size "
                          "width/heads; use --attention fixed --head-dim for another size)",
                          c->heads, c->width);
    if (c->kind == AC_NN_ATTN_FIXED && c->head_dim == 0)
        return ac_err_set(err, AC_EUSAGE, "--head-dim must be at least 1 for fixed heads");
    if (c->kind != AC_NN_ATTN_STANDARD && c->kind != AC_NN_ATTN_FIXED)
        return ac_err_set(err, AC_EUSAGE, "unknown attention kind");
    switch (c->arch) {
    case AC_NN_ARCH_TRANSFORMER:
        if (c->layers == 0)
            return ac_err_set(err, AC_EUSAGE, "--layers must be at least 1");
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
        /* the stacks of MATH.md §2: Wq, Wk, Wv (H,S,C) consecutive = one
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

#define PAR(m, i) ((m)->params + (m)->tensors[(i)].offset)
#define GRD(m, i) ((m)->grads + (m)->tensors[(i)].offset)

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
    w->chunk_correct = calloc(w->nchunks_max, sizeof *w->chunk_correct);
    w->chunk_maxdev = calloc(w->nchunks_max, sizeof *w->chunk_maxdev);
    size_t nblocks = m->nparams / NORM_BLOCK + 1;
    w->norm_part = calloc(nblocks, sizeof *w->norm_part);
    if (!w->tokens || !w->targets || !w->chunk_correct || !w->chunk_maxdev || !w->norm_part)
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
        free(w->acts);
        free(w->gacts);
        free(w->layers);
        free(w->chunk_correct);
        free(w->chunk_maxdev);
        free(w->norm_part);
        free(w->tasks);
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

/* ---------------------------------------------------------------- forward */

/* The kernels call BLAS from OpenMP threads: BLAS itself runs one thread
 * for the duration of a forward or backward pass. */
static int blas_single(void)
{
    int t = ac_blas_get_threads();
    if (t != 1)
        ac_blas_set_threads(1);
    return t;
}

static void blas_restore(int t)
{
    if (t != 1)
        ac_blas_set_threads(t);
}

static size_t seqs_per_chunk(size_t T)
{
    size_t s = CHUNK_ROWS / T;
    return s ? s : 1;
}

static const double *layer_input(const ac_nn_model *m, size_t l)
{
    const ac_nn_work *w = m->w;
    if (l == 0)
        return w->enc;
    return m->cfg.ln == AC_NN_LN_PRE ? w->layers[l - 1].res3 : w->layers[l - 1].ln2;
}

static const double *layer_output(const ac_nn_model *m, size_t l)
{
    const ac_nn_work *w = m->w;
    return m->cfg.ln == AC_NN_LN_PRE ? w->layers[l].res3 : w->layers[l].ln2;
}

/* The transformer on sequences [b0, b0+nb). */
static void tf_forward_chunk(ac_nn_model *m, size_t chunk, size_t b0, size_t nb, size_t B)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t T = w->T, C = c->width, D = m->D, H = c->heads, S = m->S, F = c->ffn;
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
        double *ln1 = A->ln1 + r0 * C, *qkv = A->qkv + r0 * 3 * D, *atty = A->atty + r0 * D;
        double *att = A->att + b0 * H * T * T, *res2 = A->res2 + r0 * C, *ln2 = A->ln2 + r0 * C;
        double *fch = A->fch + r0 * F, *fchg = A->fchg + r0 * F, *res3 = A->res3 + r0 * C;
        double *m1 = A->ln1_mean + r0, *s1 = A->ln1_rstd + r0;
        double *m2 = A->ln2_mean + r0, *s2 = A->ln2_rstd + r0;
        if (c->ln == AC_NN_LN_PRE) {
            ac_nn_layernorm_forward(ln1, m1, s1, x, LP(L_LN1W), LP(L_LN1B), nr, C);
            ac_nn_linear_forward(qkv, ln1, LP(L_QKVW), LP(L_QKVB), nr, C, 3 * D, 0);
            ac_nn_attention_forward(atty, att, qkv, nb, T, H, S, c->causal);
            ac_nn_residual_forward(res2, x, LP(L_PROJB), nr, C);
            ac_nn_linear_forward(res2, atty, LP(L_PROJW), NULL, nr, D, C, 1);
            ac_nn_layernorm_forward(ln2, m2, s2, res2, LP(L_LN2W), LP(L_LN2B), nr, C);
            ac_nn_linear_forward(fch, ln2, LP(L_FCW), LP(L_FCB), nr, C, F, 0);
            ac_nn_gelu_forward(fchg, fch, nr * F);
            ac_nn_residual_forward(res3, res2, LP(L_FCPB), nr, C);
            ac_nn_linear_forward(res3, fchg, LP(L_FCPW), NULL, nr, F, C, 1);
        } else {
            ac_nn_linear_forward(qkv, x, LP(L_QKVW), LP(L_QKVB), nr, C, 3 * D, 0);
            ac_nn_attention_forward(atty, att, qkv, nb, T, H, S, c->causal);
            ac_nn_residual_forward(res2, x, LP(L_PROJB), nr, C);
            ac_nn_linear_forward(res2, atty, LP(L_PROJW), NULL, nr, D, C, 1);
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
            if (c->pool == AC_NN_POOL_FIRST)
                memcpy(pb, rows, C * sizeof *pb);
            else if (c->pool == AC_NN_POOL_LAST)
                memcpy(pb, rows + (T - 1) * C, C * sizeof *pb);
            else {
                for (size_t i = 0; i < C; i++) {
                    double s = 0;
                    for (size_t t = 0; t < T; t++)
                        s += rows[t * C + i];
                    pb[i] = s / (double)T;
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
    /* loss of a row: sum_j y_j (lse - pre_j) = -sum_j y_j log att_j */
    double maxdev = 0;
    for (size_t r = 0; r < nb * H * T; r++) {
        size_t t = r % T, len = c->causal ? t + 1 : T;
        const double *p = pre + r * T, *a = att + r * T, *yr = y + r * T;
        double mx = p[0];
        for (size_t j = 1; j < len; j++)
            mx = p[j] > mx ? p[j] : mx;
        double s = 0;
        for (size_t j = 0; j < len; j++)
            s += exp(p[j] - mx);
        double lse = mx + log(s), loss = 0;
        for (size_t j = 0; j < len; j++) {
            loss += yr[j] * (lse - p[j]);
            double e = fabs(a[j] - yr[j]);
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

/* ---------------------------------------------------------------- backward */

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

/* Tiles of the weight gradient dw (OC,IC) += dout^T inp over N rows. */
static void push_linear(task_list *L, double *dw, double *db, const double *dout,
                        const double *inp, size_t N, size_t IC, size_t OC)
{
    for (size_t o0 = 0; o0 < OC; o0 += TILE_O)
        for (size_t i0 = 0; i0 < (IC ? IC : 1); i0 += TILE_I) {
            nn_task t = {TK_LINEAR, dw, i0 == 0 ? db : NULL, dout, inp, NULL, NULL, N, IC, OC, o0,
                         o0 + TILE_O < OC ? o0 + TILE_O : OC, i0,
                         i0 + TILE_I < IC ? i0 + TILE_I : IC, 0};
            t.cost = (double)(t.o1 - t.o0) * (double)(t.i1 - t.i0 + 1) * (double)N;
            push_task(L, &t);
        }
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
            if (c->pool == AC_NN_POOL_MEAN) {
                for (size_t t = 0; t < T; t++)
                    for (size_t i = 0; i < C; i++)
                        g[t * C + i] = d[i] / (double)T;
            } else {
                memset(g, 0, T * C * sizeof *g);
                memcpy(g + (c->pool == AC_NN_POOL_FIRST ? 0 : (T - 1) * C), d, C * sizeof *g);
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

/* One transformer layer, phase 1, on one chunk: from w->gout (gradient of
 * the layer's output) to w->gx (gradient of its input). */
static void tf_layer_backward_chunk(ac_nn_model *m, size_t l, size_t chunk, size_t b0, size_t nb)
{
    const ac_nn_config *c = &m->cfg;
    ac_nn_work *w = m->w;
    size_t T = w->T, C = c->width, D = m->D, H = c->heads, S = m->S, F = c->ffn;
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
    if (c->ln == AC_NN_LN_PRE) {
        /* res3 = res2 + gelu(fch) Wp^T + bp */
        ac_nn_linear_backward_input(gf, gout, LP(L_FCPW), nr, F, C, 0);
        ac_nn_gelu_backward(gf, fch, fchg, gf, nr * F);
        /* fch = ln2 Wfc^T + bfc */
        ac_nn_linear_backward_input(gln, gf, LP(L_FCW), nr, C, F, 0);
        /* ln2 = LN2(res2), and res2 also feeds res3 directly */
        ac_nn_layernorm_backward(gres2, gout, gln, res2, LP(L_LN2W), m2, s2, nr, C);
        /* res2 = x + atty Wo^T + bo */
        ac_nn_linear_backward_input(gatty, gres2, LP(L_PROJW), nr, D, C, 0);
        ac_nn_attention_backward(gqkv, scr, gatty, qkv, att, nb, T, H, S, c->causal);
        /* qkv = ln1 Wqkv^T + b, ln1 = LN1(x), and x also feeds res2 */
        ac_nn_linear_backward_input(gln1, gqkv, LP(L_QKVW), nr, C, 3 * D, 0);
        ac_nn_layernorm_backward(gx, gres2, gln1, x, LP(L_LN1W), m1, s1, nr, C);
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
        /* res2 = x + atty Wo^T + bo */
        ac_nn_linear_backward_input(gatty, gres2, LP(L_PROJW), nr, D, C, 0);
        ac_nn_attention_backward(gqkv, scr, gatty, qkv, att, nb, T, H, S, c->causal);
        /* qkv = x Wqkv^T + b */
        memcpy(gx, gres2, nr * C * sizeof *gx);
        ac_nn_linear_backward_input(gx, gqkv, LP(L_QKVW), nr, C, 3 * D, 1);
    }
#undef LP
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
    if (c->ln == AC_NN_LN_PRE) {
        push_linear(L, LG(L_FCPW), LG(L_FCPB), w->gout, A->fchg, N, F, C);
        push_linear(L, LG(L_FCW), LG(L_FCB), w->gf, A->ln2, N, C, F);
        push_ln(L, LG(L_LN2W), LG(L_LN2B), w->gln, A->res2, A->ln2_mean, A->ln2_rstd, N, C);
        push_linear(L, LG(L_PROJW), LG(L_PROJB), w->gres2, A->atty, N, D, C);
        push_linear(L, LG(L_QKVW), LG(L_QKVB), w->gqkv, A->ln1, N, C, 3 * D);
        push_ln(L, LG(L_LN1W), LG(L_LN1B), w->gln1, x, A->ln1_mean, A->ln1_rstd, N, C);
    } else {
        push_ln(L, LG(L_LN2W), LG(L_LN2B), w->gout, A->res3, A->ln2_mean, A->ln2_rstd, N, C);
        push_linear(L, LG(L_FCPW), LG(L_FCPB), w->gln1, A->fchg, N, F, C);
        push_linear(L, LG(L_FCW), LG(L_FCB), w->gf, A->ln1, N, C, F);
        push_ln(L, LG(L_LN1W), LG(L_LN1B), w->gln, A->res2, A->ln1_mean, A->ln1_rstd, N, C);
        push_linear(L, LG(L_PROJW), LG(L_PROJB), w->gres2, A->atty, N, D, C);
        push_linear(L, LG(L_QKVW), LG(L_QKVB), w->gqkv, x, N, C, 3 * D);
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
        /* forward: loss_row = sum_j y_j (lse - pre_j), so
         * d pre_j = (att_j sum_i y_i - y_j) / (B H T) */
        for (size_t r = 0; r < nb * H * T; r++) {
            size_t t = r % T, len = c->causal ? t + 1 : T;
            double sy = 0;
            for (size_t j = 0; j < len; j++)
                sy += y[r * T + j];
            for (size_t j = 0; j < T; j++)
                dp[r * T + j] = j < len ? (att[r * T + j] * sy - y[r * T + j]) * sc : 0.0;
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

/* ---------------------------------------------------------------- optimiser */

double ac_nn_grad_norm(const ac_nn_model *m)
{
    size_t n = m->nparams, nb = (n + NORM_BLOCK - 1) / NORM_BLOCK;
    double *part = m->w->norm_part;
    const double *g = m->grads;
#pragma omp parallel for schedule(static) if (nb > 4)
    for (size_t k = 0; k < nb; k++) {
        size_t a = k * NORM_BLOCK, e = a + NORM_BLOCK < n ? a + NORM_BLOCK : n;
        double s = 0;
        for (size_t i = a; i < e; i++)
            s += g[i] * g[i];
        part[k] = s;
    }
    double s = 0;
    for (size_t k = 0; k < nb; k++)
        s += part[k];
    return sqrt(s);
}

void ac_nn_adamw_step(ac_nn_model *m, const ac_nn_adamw *o, long t, double gscale)
{
    double b1 = o->beta1, b2 = o->beta2;
    double c1 = 1.0 - pow(b1, (double)t), c2 = 1.0 - pow(b2, (double)t);
    /* one parallel region for all tensors; each element is independent */
#pragma omp parallel if (m->nparams > 65536)
    for (size_t k = 0; k < m->ntensors; k++) {
        const ac_nn_tensor *T = &m->tensors[k];
        double *p = m->params + T->offset, *mm = m->m + T->offset, *vv = m->v + T->offset;
        const double *g = m->grads + T->offset;
        double decay = T->decay ? 1.0 - o->lr * o->weight_decay : 1.0;
        size_t n = T->size;
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < n; i++) {
            double gi = g[i] * gscale;
            double mi = b1 * mm[i] + (1.0 - b1) * gi;
            double vi = b2 * vv[i] + (1.0 - b2) * gi * gi;
            mm[i] = mi;
            vv[i] = vi;
            double pi = p[i] * decay;
            p[i] = pi - o->lr * (mi / c1) / (sqrt(vi / c2) + o->eps);
        }
    }
}
