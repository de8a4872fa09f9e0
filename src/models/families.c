/* families.c — the tensors of each family (attncheck/models.h): names,
 * shapes and layouts as the files really store them, the checks of
 * ac_model_open, and the canonical layer (ac_model_layer).
 *
 * Names are matched after removing the prefixes a model class adds
 * ("transformer.", "model.", "bert.", "roberta.", "distilbert.", "vit.",
 * "_orig_mod." of torch.compile), repeatedly; in the BERT family the old
 * LayerNorm names "gamma"/"beta" read as "weight"/"bias".  Each family's
 * table lists, per slot (a role: query weight, first norm, ...), the name,
 * the shape in the canonical (out, in) layout implied by config.json, and
 * whether the file stores the transpose (Hugging Face's Conv1D in GPT-2:
 * [in, out]).  A layer may hold nothing else; outside the layers, tensors
 * of heads after the last layer (lm_head, pooler, classifier, ...) are
 * ignored and anything else is refused.
 */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "models/models_impl.h"

/* Shapes are written with these letters, evaluated on the configuration. */
enum { D_END = 0, D_C, D_QD, D_KVD, D_QKV, D_F, D_V, D_P, D_T, D_1, D_NTOK, D_CH, D_PS };
/* When a slot's tensor is present: always, per a bias flag of md_cfg, with
 * token types, optionally, or iff the layer has a norm. */
enum { C_ALL = 0, C_QKVB, C_OB, C_MLPB, C_NORMB, C_TYPES, C_MAYBE, C_NORM };

typedef struct {
    int slot;
    const char *name;
    unsigned char dims[4];
    unsigned char cond;
    unsigned char t; /* stored [in, out] */
} slotdef;

#define G(s, n, ...) {s, n, {__VA_ARGS__}, C_ALL, 0}
#define GC(s, n, c, ...) {s, n, {__VA_ARGS__}, c, 0}
#define GT(s, n, c, ...) {s, n, {__VA_ARGS__}, c, 1}

static const slotdef gpt2_global[] = {
    G(S_TOK, "wte.weight", D_V, D_C), G(S_POS, "wpe.weight", D_P, D_C),
    G(S_FLN_W, "ln_f.weight", D_C), GC(S_FLN_B, "ln_f.bias", C_NORMB, D_C), {-1, 0, {0}, 0, 0}};
static const slotdef gpt2_layer[] = {
    G(S_LN1_W, "ln_1.weight", D_C), GC(S_LN1_B, "ln_1.bias", C_NORMB, D_C),
    GT(S_QKV_W, "attn.c_attn.weight", C_ALL, D_QKV, D_C),
    GC(S_QKV_B, "attn.c_attn.bias", C_QKVB, D_QKV),
    GT(S_O_W, "attn.c_proj.weight", C_ALL, D_C, D_QD), GC(S_O_B, "attn.c_proj.bias", C_OB, D_C),
    G(S_LN2_W, "ln_2.weight", D_C), GC(S_LN2_B, "ln_2.bias", C_NORMB, D_C),
    GT(S_FC1_W, "mlp.c_fc.weight", C_ALL, D_F, D_C), GC(S_FC1_B, "mlp.c_fc.bias", C_MLPB, D_F),
    GT(S_FC2_W, "mlp.c_proj.weight", C_ALL, D_C, D_F),
    GC(S_FC2_B, "mlp.c_proj.bias", C_MLPB, D_C), {-1, 0, {0}, 0, 0}};
static const slotdef nanogpt_layer[] = {
    G(S_LN1_W, "ln_1.weight", D_C), GC(S_LN1_B, "ln_1.bias", C_NORMB, D_C),
    G(S_QKV_W, "attn.c_attn.weight", D_QKV, D_C), GC(S_QKV_B, "attn.c_attn.bias", C_QKVB, D_QKV),
    G(S_O_W, "attn.c_proj.weight", D_C, D_QD), GC(S_O_B, "attn.c_proj.bias", C_OB, D_C),
    G(S_LN2_W, "ln_2.weight", D_C), GC(S_LN2_B, "ln_2.bias", C_NORMB, D_C),
    G(S_FC1_W, "mlp.c_fc.weight", D_F, D_C), GC(S_FC1_B, "mlp.c_fc.bias", C_MLPB, D_F),
    G(S_FC2_W, "mlp.c_proj.weight", D_C, D_F), GC(S_FC2_B, "mlp.c_proj.bias", C_MLPB, D_C),
    {-1, 0, {0}, 0, 0}};
static const slotdef bert_global[] = {
    G(S_TOK, "embeddings.word_embeddings.weight", D_V, D_C),
    G(S_POS, "embeddings.position_embeddings.weight", D_P, D_C),
    GC(S_TYPE, "embeddings.token_type_embeddings.weight", C_TYPES, D_T, D_C),
    G(S_ELN_W, "embeddings.LayerNorm.weight", D_C), G(S_ELN_B, "embeddings.LayerNorm.bias", D_C),
    {-1, 0, {0}, 0, 0}};
static const slotdef bert_layer[] = {
    G(S_Q_W, "attention.self.query.weight", D_QD, D_C),
    G(S_Q_B, "attention.self.query.bias", D_QD),
    G(S_K_W, "attention.self.key.weight", D_KVD, D_C),
    G(S_K_B, "attention.self.key.bias", D_KVD),
    G(S_V_W, "attention.self.value.weight", D_KVD, D_C),
    G(S_V_B, "attention.self.value.bias", D_KVD),
    G(S_O_W, "attention.output.dense.weight", D_C, D_QD),
    G(S_O_B, "attention.output.dense.bias", D_C),
    G(S_LN1_W, "attention.output.LayerNorm.weight", D_C),
    G(S_LN1_B, "attention.output.LayerNorm.bias", D_C),
    G(S_FC1_W, "intermediate.dense.weight", D_F, D_C), G(S_FC1_B, "intermediate.dense.bias", D_F),
    G(S_FC2_W, "output.dense.weight", D_C, D_F), G(S_FC2_B, "output.dense.bias", D_C),
    G(S_LN2_W, "output.LayerNorm.weight", D_C), G(S_LN2_B, "output.LayerNorm.bias", D_C),
    {-1, 0, {0}, 0, 0}};
static const slotdef distil_global[] = {
    G(S_TOK, "embeddings.word_embeddings.weight", D_V, D_C),
    G(S_POS, "embeddings.position_embeddings.weight", D_P, D_C),
    G(S_ELN_W, "embeddings.LayerNorm.weight", D_C), G(S_ELN_B, "embeddings.LayerNorm.bias", D_C),
    {-1, 0, {0}, 0, 0}};
static const slotdef distil_layer[] = {
    G(S_Q_W, "attention.q_lin.weight", D_QD, D_C), G(S_Q_B, "attention.q_lin.bias", D_QD),
    G(S_K_W, "attention.k_lin.weight", D_KVD, D_C), G(S_K_B, "attention.k_lin.bias", D_KVD),
    G(S_V_W, "attention.v_lin.weight", D_KVD, D_C), G(S_V_B, "attention.v_lin.bias", D_KVD),
    G(S_O_W, "attention.out_lin.weight", D_C, D_QD), G(S_O_B, "attention.out_lin.bias", D_C),
    G(S_LN1_W, "sa_layer_norm.weight", D_C), G(S_LN1_B, "sa_layer_norm.bias", D_C),
    G(S_FC1_W, "ffn.lin1.weight", D_F, D_C), G(S_FC1_B, "ffn.lin1.bias", D_F),
    G(S_FC2_W, "ffn.lin2.weight", D_C, D_F), G(S_FC2_B, "ffn.lin2.bias", D_C),
    G(S_LN2_W, "output_layer_norm.weight", D_C), G(S_LN2_B, "output_layer_norm.bias", D_C),
    {-1, 0, {0}, 0, 0}};
static const slotdef llama_global[] = {G(S_TOK, "embed_tokens.weight", D_V, D_C),
                                       G(S_FLN_W, "norm.weight", D_C), {-1, 0, {0}, 0, 0}};
static const slotdef llama_layer[] = {
    G(S_LN1_W, "input_layernorm.weight", D_C),
    G(S_Q_W, "self_attn.q_proj.weight", D_QD, D_C),
    GC(S_Q_B, "self_attn.q_proj.bias", C_QKVB, D_QD),
    G(S_K_W, "self_attn.k_proj.weight", D_KVD, D_C),
    GC(S_K_B, "self_attn.k_proj.bias", C_QKVB, D_KVD),
    G(S_V_W, "self_attn.v_proj.weight", D_KVD, D_C),
    GC(S_V_B, "self_attn.v_proj.bias", C_QKVB, D_KVD),
    G(S_O_W, "self_attn.o_proj.weight", D_C, D_QD),
    GC(S_O_B, "self_attn.o_proj.bias", C_OB, D_C),
    G(S_LN2_W, "post_attention_layernorm.weight", D_C),
    G(S_FC1_W, "mlp.gate_proj.weight", D_F, D_C), GC(S_FC1_B, "mlp.gate_proj.bias", C_MLPB, D_F),
    G(S_UP_W, "mlp.up_proj.weight", D_F, D_C), GC(S_UP_B, "mlp.up_proj.bias", C_MLPB, D_F),
    G(S_FC2_W, "mlp.down_proj.weight", D_C, D_F), GC(S_FC2_B, "mlp.down_proj.bias", C_MLPB, D_C),
    {-1, 0, {0}, 0, 0}};
static const slotdef vit_global[] = {
    G(S_CLS, "embeddings.cls_token", D_1, D_1, D_C),
    G(S_POS, "embeddings.position_embeddings", D_1, D_NTOK, D_C),
    G(S_PATCH_W, "embeddings.patch_embeddings.projection.weight", D_C, D_CH, D_PS, D_PS),
    G(S_PATCH_B, "embeddings.patch_embeddings.projection.bias", D_C),
    G(S_FLN_W, "layernorm.weight", D_C), G(S_FLN_B, "layernorm.bias", D_C), {-1, 0, {0}, 0, 0}};
static const slotdef vit_layer[] = {
    G(S_LN1_W, "layernorm_before.weight", D_C), G(S_LN1_B, "layernorm_before.bias", D_C),
    G(S_Q_W, "attention.attention.query.weight", D_QD, D_C),
    GC(S_Q_B, "attention.attention.query.bias", C_QKVB, D_QD),
    G(S_K_W, "attention.attention.key.weight", D_KVD, D_C),
    GC(S_K_B, "attention.attention.key.bias", C_QKVB, D_KVD),
    G(S_V_W, "attention.attention.value.weight", D_KVD, D_C),
    GC(S_V_B, "attention.attention.value.bias", C_QKVB, D_KVD),
    G(S_O_W, "attention.output.dense.weight", D_C, D_QD),
    G(S_O_B, "attention.output.dense.bias", D_C),
    G(S_LN2_W, "layernorm_after.weight", D_C), G(S_LN2_B, "layernorm_after.bias", D_C),
    G(S_FC1_W, "intermediate.dense.weight", D_F, D_C), G(S_FC1_B, "intermediate.dense.bias", D_F),
    G(S_FC2_W, "output.dense.weight", D_C, D_F), G(S_FC2_B, "output.dense.bias", D_C),
    {-1, 0, {0}, 0, 0}};
static const slotdef timm_global[] = {
    G(S_CLS, "cls_token", D_1, D_1, D_C), G(S_POS, "pos_embed", D_1, D_NTOK, D_C),
    G(S_PATCH_W, "patch_embed.proj.weight", D_C, D_CH, D_PS, D_PS),
    G(S_PATCH_B, "patch_embed.proj.bias", D_C), G(S_FLN_W, "norm.weight", D_C),
    G(S_FLN_B, "norm.bias", D_C), {-1, 0, {0}, 0, 0}};
static const slotdef timm_layer[] = {
    G(S_LN1_W, "norm1.weight", D_C), G(S_LN1_B, "norm1.bias", D_C),
    G(S_QKV_W, "attn.qkv.weight", D_QKV, D_C), GC(S_QKV_B, "attn.qkv.bias", C_QKVB, D_QKV),
    G(S_O_W, "attn.proj.weight", D_C, D_QD), G(S_O_B, "attn.proj.bias", D_C),
    G(S_LN2_W, "norm2.weight", D_C), G(S_LN2_B, "norm2.bias", D_C),
    G(S_FC1_W, "mlp.fc1.weight", D_F, D_C), G(S_FC1_B, "mlp.fc1.bias", D_F),
    G(S_FC2_W, "mlp.fc2.weight", D_C, D_F), G(S_FC2_B, "mlp.fc2.bias", D_C), {-1, 0, {0}, 0, 0}};
static const slotdef layer_slots[] = {
    G(S_Q_W, "Wq", D_QD, D_C), GC(S_Q_B, "bq", C_MAYBE, D_QD), G(S_K_W, "Wk", D_KVD, D_C),
    GC(S_K_B, "bk", C_MAYBE, D_KVD), G(S_V_W, "Wv", D_KVD, D_C), GC(S_V_B, "bv", C_MAYBE, D_KVD),
    G(S_O_W, "Wo", D_C, D_QD), GC(S_O_B, "bo", C_MAYBE, D_C),
    GC(S_LN1_W, "norm.weight", C_NORM, D_C), GC(S_LN1_B, "norm.bias", C_NORMB, D_C),
    {-1, 0, {0}, 0, 0}};

static const slotdef none[] = {{-1, 0, {0}, 0, 0}};

typedef struct {
    const char *name;
    const slotdef *global, *layer;
    const char *stem;           /* layer l's tensors: stem "l." name (NULL: one layer, no stem) */
    const char *const *skip;    /* tensors of a layer that hold no weight (buffers) */
} family;

static const char *const gpt2_skip[] = {"attn.bias", "attn.masked_bias", NULL};
static const char *const llama_skip[] = {"self_attn.rotary_emb.inv_freq", NULL};
static const char *const no_skip[] = {NULL};

static const family fams[AC_MODEL_NFAMILIES] = {
    [AC_MODEL_GPT2] = {"gpt2", gpt2_global, gpt2_layer, "h.", gpt2_skip},
    [AC_MODEL_NANOGPT] = {"nanogpt", gpt2_global, nanogpt_layer, "h.", gpt2_skip},
    [AC_MODEL_BERT] = {"bert", bert_global, bert_layer, "encoder.layer.", no_skip},
    [AC_MODEL_ROBERTA] = {"roberta", bert_global, bert_layer, "encoder.layer.", no_skip},
    [AC_MODEL_DISTILBERT] = {"distilbert", distil_global, distil_layer, "layer.", no_skip},
    [AC_MODEL_LLAMA] = {"llama", llama_global, llama_layer, "layers.", llama_skip},
    [AC_MODEL_MISTRAL] = {"mistral", llama_global, llama_layer, "layers.", llama_skip},
    [AC_MODEL_QWEN2] = {"qwen2", llama_global, llama_layer, "layers.", llama_skip},
    [AC_MODEL_VIT] = {"vit", vit_global, vit_layer, "encoder.layer.", no_skip},
    [AC_MODEL_VIT_TIMM] = {"vit-timm", timm_global, timm_layer, "blocks.", no_skip},
    [AC_MODEL_LAYER] = {"attncheck_layer", none, layer_slots, NULL, no_skip},
};

/* Prefixes a model class puts before the names, and the tensors after the
 * last layer that the attention does not depend on. */
static const char *const prefixes[] = {"_orig_mod.", "transformer.", "model.", "bert.",
                                       "roberta.", "distilbert.", "vit.", NULL};
static const char *const heads[] = {
    "lm_head.", "cls.", "pooler.", "classifier.", "pre_classifier.", "qa_outputs.", "score.",
    "head.", "fc_norm.", "vocab_transform.", "vocab_layer_norm.", "vocab_projector.",
    "embeddings.position_ids", "embeddings.mask_token", "multiple_choice_head.", "dropout.",
    NULL};

const char *ac_model_family_name(ac_model_family f)
{
    return (unsigned)f < AC_MODEL_NFAMILIES ? fams[f].name : "?";
}

void ac_model_opts_default(ac_model_opts *o)
{
    o->rope = AC_ROPE_NONE;
    o->checksum = 1;
}

/* ---------------------------------------------------------------- names */

static int starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct md_name *)a)->name, ((const struct md_name *)b)->name);
}

static const ac_st_tensor *lookup(const ac_model *m, const char *name)
{
    const ac_model_priv *p = m->priv;
    struct md_name key = {(char *)name, NULL};
    const struct md_name *r = bsearch(&key, p->names, p->nnames, sizeof key, cmp_name);
    return r ? r->t : NULL;
}

/* The names without prefixes (and BERT's gamma/beta as weight/bias). */
static int strip_names(ac_model *m, ac_err *err)
{
    ac_model_priv *p = m->priv;
    const ac_st *st = &m->st;
    int bertlike = p->c.fam == AC_MODEL_BERT || p->c.fam == AC_MODEL_ROBERTA;
    p->names = calloc(st->ntensors + 1, sizeof *p->names);
    if (!p->names)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < st->ntensors; i++) {
        const char *s = st->tensors[i].name;
        for (int again = 1; again && p->c.fam != AC_MODEL_LAYER;) {
            again = 0;
            for (size_t k = 0; prefixes[k]; k++)
                if (starts(s, prefixes[k]) && s[strlen(prefixes[k])]) {
                    s += strlen(prefixes[k]);
                    again = 1;
                }
        }
        size_t n = strlen(s);
        char *c = malloc(n + 2);
        if (!c)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        memcpy(c, s, n + 1);
        if (bertlike && n >= 6 && !strcmp(c + n - 6, ".gamma"))
            strcpy(c + n - 6, ".weight");
        else if (bertlike && n >= 5 && !strcmp(c + n - 5, ".beta"))
            strcpy(c + n - 5, ".bias");
        p->names[i] = (struct md_name){c, &st->tensors[i]};
        p->nnames = i + 1;
    }
    qsort(p->names, p->nnames, sizeof *p->names, cmp_name);
    for (size_t i = 1; i < p->nnames; i++)
        if (!strcmp(p->names[i - 1].name, p->names[i].name))
            return ac_err_set(err, AC_EDATA, "%s: tensors %s and %s are both %s once their "
                              "prefixes are removed", m->st.path, p->names[i - 1].t->name,
                              p->names[i].t->name, p->names[i].name);
    return AC_OK;
}

/* ---------------------------------------------------------------- shapes */

static size_t dimval(const md_cfg *c, int d)
{
    switch (d) {
    case D_C: return c->d;
    case D_QD: return c->h * c->dk;
    case D_KVD: return c->hkv * c->dk;
    case D_QKV: return (c->h + 2 * c->hkv) * c->dk;
    case D_F: return c->ffn;
    case D_V: return c->vocab;
    case D_P: return c->max_pos;
    case D_T: return c->type_vocab;
    case D_1: return 1;
    case D_NTOK: return c->ntok;
    case D_CH: return c->channels;
    case D_PS: return c->patch;
    default: return 0;
    }
}

static int cond_present(const md_cfg *c, int cond)
{
    switch (cond) {
    case C_QKVB: return c->qkv_bias;
    case C_OB: return c->o_bias;
    case C_MLPB: return c->mlp_bias;
    case C_NORMB: return c->norm_bias;
    case C_TYPES: return c->type_vocab > 0;
    case C_NORM: return c->norm != AC_NORM_NONE;
    default: return 1;
    }
}

/* The tensor of one slot: present as the condition says, with the shape the
 * configuration implies (stored transposed for Conv1D), of a readable
 * dtype. */
static int check_slot(ac_model *m, const slotdef *sd, const char *name, const ac_st_tensor **out,
                      ac_err *err)
{
    const md_cfg *c = &m->priv->c;
    const ac_st_tensor *t = lookup(m, name);
    *out = NULL;
    if (!t) {
        if (sd->cond == C_MAYBE || !cond_present(c, sd->cond))
            return AC_OK;
        return ac_err_set(err, AC_EDATA, "%s: no tensor %s (a %s checkpoint has it; names are "
                          "compared without prefixes such as \"transformer.\")", m->st.path,
                          name, fams[c->fam].name);
    }
    if (!cond_present(c, sd->cond))
        return ac_err_set(err, AC_EDATA, "%s: tensor %s is present but %s says the model has "
                          "none", m->st.files[t->file].path, t->name, m->priv->config);
    if (!md_dtype_readable(t->dtype))
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: dtype %s is not read (quantised and "
                          "integer tensors are not converted; F64, F32, F16 and BF16 are)",
                          m->st.files[t->file].path, t->name, ac_st_dtype_name(t->dtype));
    size_t want[4], nd = 0;
    while (nd < 4 && sd->dims[nd])
        want[nd] = dimval(c, sd->dims[nd]), nd++;
    if (sd->t && nd == 2) {
        size_t x = want[0];
        want[0] = want[1];
        want[1] = x;
    }
    int ok = t->ndim == nd;
    for (size_t i = 0; ok && i < nd; i++)
        ok = t->shape[i] == want[i];
    if (!ok) {
        char a[128], b[128];
        md_fmt_shape(a, sizeof a, t->shape, t->ndim);
        md_fmt_shape(b, sizeof b, want, nd);
        return ac_err_set(err, AC_EDATA, "%s: tensor %s has shape %s; %s implies %s (width %zu, "
                          "%zu heads of %zu, %zu key/value heads, feed-forward %zu)",
                          m->st.files[t->file].path, t->name, a, m->priv->config, b, c->d, c->h,
                          c->dk, c->hkv, c->ffn);
    }
    *out = t;
    return AC_OK;
}

static size_t slot_index(const ac_model *m, size_t l, int s)
{
    return (s < S_LN1_W ? m->layers : l) * S_NSLOTS + (size_t)s;
}

const ac_st_tensor *md_slot(const ac_model *m, size_t l, int s)
{
    return m->priv->slot[slot_index(m, l, s)];
}

/* The layer index of a name "STEM<l>.REST" (REST in *rest), or -1. */
static long layer_of(const char *stem, const char *name, const char **rest)
{
    if (!stem || !starts(name, stem))
        return -1;
    const char *p = name + strlen(stem);
    if (*p < '0' || *p > '9')
        return -1;
    long v = 0;
    while (*p >= '0' && *p <= '9' && v < 1L << 40)
        v = 10 * v + (*p++ - '0');
    if (*p != '.')
        return -1;
    *rest = p + 1;
    return v;
}

/* GPT-2's attn.bias buffer (old checkpoints) must be the causal mask: ones
 * on and below the diagonal, zeros above. */
static int check_causal_buffer(const ac_model *m, const ac_st_tensor *t, ac_err *err)
{
    const ac_st_file *f = &m->st.files[t->file];
    size_t T = t->ndim >= 2 ? t->shape[t->ndim - 1] : 0;
    int ok = t->ndim >= 2 && t->shape[t->ndim - 2] == T && T && t->numel == T * T;
    unsigned bits = ac_st_dtype_bits(t->dtype);
    const unsigned char *p = f->map + f->data_start + t->begin;
    for (size_t i = 0; ok && i < T; i++)
        for (size_t j = 0; ok && j < T; j++) {
            double v;
            if (t->dtype == AC_ST_BOOL || t->dtype == AC_ST_U8)
                v = p[i * T + j];
            else if (md_dtype_readable(t->dtype))
                md_convert(&v, p + (i * T + j) * (bits / 8), 1, t->dtype);
            else
                v = -1;
            ok = v == (j <= i ? 1.0 : 0.0);
        }
    if (!ok)
        return ac_err_set(err, AC_EDATA, "%s: tensor %s is not the causal mask (ones on and "
                          "below the diagonal): another mask is not implemented", f->path,
                          t->name);
    return AC_OK;
}

/* timm: the sizes from the tensors (config.json has none but the heads). */
static int timm_sizes(ac_model *m, ac_err *err)
{
    md_cfg *c = &m->priv->c;
    const ac_st_tensor *cls = lookup(m, "cls_token"), *pw = lookup(m, "patch_embed.proj.weight"),
                       *fc = lookup(m, "blocks.0.mlp.fc1.weight");
    if (!cls || cls->ndim != 3 || !pw || pw->ndim != 4 || pw->shape[2] != pw->shape[3])
        return ac_err_set(err, AC_EDATA, "%s: not a timm ViT checkpoint (cls_token [1, 1, d] and "
                          "patch_embed.proj.weight [d, channels, p, p] expected)", m->st.path);
    c->d = cls->shape[2];
    c->patch = pw->shape[2];
    c->ffn = fc && fc->ndim == 2 ? fc->shape[0] : 1;
    if (!c->d || c->d % c->h)
        return ac_err_set(err, AC_EDATA, "%s: %zu heads do not divide the width %zu",
                          m->priv->config, c->h, c->d);
    c->dk = c->d / c->h;
    c->hkv = c->h;
    if (!c->patch || c->image % c->patch)
        return ac_err_set(err, AC_EDATA, "%s: the patch size %zu does not divide the image size "
                          "%zu", m->st.path, c->patch, c->image);
    c->ntok = 1 + (c->image / c->patch) * (c->image / c->patch);
    c->qkv_bias = lookup(m, "blocks.0.attn.qkv.bias") != NULL;
    /* the depth: blocks 0, 1, ... present */
    c->L = 0;
    for (size_t i = 0; i < m->priv->nnames; i++) {
        const char *rest;
        long l = layer_of("blocks.", m->priv->names[i].name, &rest);
        if (l >= 0 && (size_t)l + 1 > c->L)
            c->L = (size_t)l + 1;
    }
    return AC_OK;
}

/* Every tensor a layer needs, nothing more; every other tensor a known
 * head after the last layer. */
static int check_tensors(ac_model *m, ac_err *err)
{
    ac_model_priv *p = m->priv;
    const md_cfg *c = &p->c;
    const family *fa = &fams[c->fam];
    size_t nslots = (m->layers + 1) * S_NSLOTS;
    unsigned char *used = calloc(m->st.ntensors + 1, 1);
    p->slot = calloc(nslots, sizeof *p->slot);
    p->transposed = calloc(S_NSLOTS, 1);
    int st = AC_OK;
    if (!used || !p->slot || !p->transposed) {
        free(used);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    char name[512];
    for (const slotdef *sd = fa->global; sd->slot >= 0 && !st; sd++) {
        const ac_st_tensor **o = &p->slot[slot_index(m, 0, sd->slot)];
        st = check_slot(m, sd, sd->name, o, err);
        if (*o)
            used[*o - m->st.tensors] = 1;
    }
    for (size_t l = 0; l < m->layers && !st; l++)
        for (const slotdef *sd = fa->layer; sd->slot >= 0 && !st; sd++) {
            if (fa->stem)
                snprintf(name, sizeof name, "%s%zu.%s", fa->stem, l, sd->name);
            else
                snprintf(name, sizeof name, "%s", sd->name);
            const ac_st_tensor **o = &p->slot[slot_index(m, l, sd->slot)];
            st = check_slot(m, sd, name, o, err);
            if (*o)
                used[*o - m->st.tensors] = 1;
            p->transposed[sd->slot] = sd->t;
        }
    for (size_t i = 0; i < p->nnames && !st; i++) {
        const struct md_name *nm = &p->names[i];
        if (used[nm->t - m->st.tensors])
            continue;
        const char *rest;
        long l = layer_of(fa->stem, nm->name, &rest);
        if (l >= 0 && (size_t)l >= m->layers) {
            st = ac_err_set(err, AC_EDATA, "%s: tensor %s belongs to layer %ld, but %s says the "
                            "model has %zu layers", m->st.files[nm->t->file].path, nm->t->name, l,
                            p->config, m->layers);
        } else if (l >= 0) {
            size_t k = 0;
            while (fa->skip[k] && strcmp(fa->skip[k], rest))
                k++;
            if (!fa->skip[k])
                st = ac_err_set(err, AC_EDATA, "%s: tensor %s is not part of a %s layer: its "
                                "role is unknown to attncheck", m->st.files[nm->t->file].path,
                                nm->t->name, fa->name);
            else if (!strcmp(rest, "attn.bias"))
                st = check_causal_buffer(m, nm->t, err);
        } else {
            size_t k = 0;
            while (c->fam != AC_MODEL_LAYER && heads[k] && !starts(nm->name, heads[k]))
                k++;
            if (c->fam == AC_MODEL_LAYER || !heads[k])
                st = ac_err_set(err, AC_EDATA, "%s: tensor %s is not part of a %s model: its "
                                "role is unknown to attncheck", m->st.files[nm->t->file].path,
                                nm->t->name, fa->name);
        }
    }
    free(used);
    return st;
}

/* ---------------------------------------------------------------- open */

void ac_model_close(ac_model *m)
{
    if (!m)
        return;
    ac_model_priv *p = m->priv;
    if (p) {
        for (size_t i = 0; i < p->nnames; i++)
            free(p->names[i].name);
        free(p->names);
        free(p->slot);
        free(p->transposed);
        free(p);
    }
    ac_st_close(&m->st);
    memset(m, 0, sizeof *m);
}

int ac_model_open(ac_model *m, const char *dir, const ac_model_opts *opts, ac_err *err)
{
    ac_model_opts o;
    struct stat sb;
    int st;
    if (!opts)
        ac_model_opts_default(&o);
    else
        o = *opts;
    memset(m, 0, sizeof *m);
    if (stat(dir, &sb) != 0)
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return ac_err_set(err, AC_ENOINPUT, "%s: not a checkpoint directory (config.json and "
                          "model.safetensors)", dir);
    if (!(m->priv = calloc(1, sizeof *m->priv)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    ac_model_priv *p = m->priv;
    if ((size_t)snprintf(p->config, sizeof p->config, "%s/config.json", dir) >= sizeof p->config) {
        st = ac_err_set(err, AC_ENOINPUT, "%s: path too long", dir);
        goto fail;
    }
    if ((st = md_config_read(&p->c, p->config, o.rope, err)) ||
        (st = ac_st_open(&m->st, dir, o.checksum ? AC_ST_SHA256 : 0, err)) ||
        (st = strip_names(m, err)))
        goto fail;
    if (p->c.fam == AC_MODEL_VIT_TIMM && (st = timm_sizes(m, err)))
        goto fail;
    if (p->c.fam == AC_MODEL_LAYER)
        p->c.norm_bias = p->c.norm == AC_NORM_LAYER && lookup(m, "norm.bias");
    m->family = p->c.fam;
    snprintf(m->model_type, sizeof m->model_type, "%s", p->c.model_type);
    m->layers = p->c.L;
    m->d = p->c.d;
    m->h = p->c.h;
    m->hkv = p->c.hkv;
    m->dk = p->c.dk;
    m->ffn = p->c.ffn;
    m->vocab = p->c.vocab;
    m->max_pos = p->c.max_pos;
    m->type_vocab = p->c.type_vocab;
    m->image = p->c.image;
    m->patch = p->c.patch;
    m->channels = p->c.channels;
    if ((st = check_tensors(m, err)))
        goto fail;
    return AC_OK;
fail:
    ac_model_close(m);
    return st;
}

char *ac_model_describe(char *buf, size_t size, const ac_model *m)
{
    const md_cfg *c = &m->priv->c;
    size_t k = (size_t)snprintf(buf, size, "%s (%s): %zu layers, width %zu, %zu heads of %zu",
                                fams[m->family].name, c->model_type, m->layers, m->d, m->h,
                                m->dk);
    if (k < size && m->hkv != m->h)
        k += (size_t)snprintf(buf + k, size - k, " (%zu key/value heads)", m->hkv);
    for (size_t i = 0; i < m->st.nfiles && k < size; i++) {
        const ac_st_file *f = &m->st.files[i];
        const char *base = strrchr(f->path, '/');
        char hx[65];
        if (f->have_sha256)
            md_hex(hx, f->sha256, 32);
        k += (size_t)snprintf(buf + k, size - k, "; %s sha256 %s", base ? base + 1 : f->path,
                              f->have_sha256 ? hx : "not computed");
    }
    if (c->notes[0] && k < size)
        snprintf(buf + k, size - k, "; %s", c->notes);
    return buf;
}

/* ---------------------------------------------------------------- reading */

int md_read_slot(double *out, const ac_model *m, size_t l, int s, ac_err *err)
{
    const ac_st_tensor *t = md_slot(m, l, s);
    if (!t)
        return ac_err_set(err, AC_EINTERNAL, "internal: slot %d of layer %zu is empty", s, l);
    if (!m->priv->transposed[s] || t->ndim != 2)
        return ac_st_read(out, &m->st, t, err);
    /* Conv1D: the file holds [in, out]; out is [out, in] */
    size_t r = t->shape[0], c = t->shape[1];
    double *tmp = malloc(t->numel * sizeof *tmp + 1);
    if (!tmp)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    int st = ac_st_read(tmp, &m->st, t, err);
    for (size_t i = 0; !st && i < r; i++)
        for (size_t j = 0; j < c; j++)
            out[j * r + i] = tmp[i * c + j];
    free(tmp);
    return st;
}

void ac_attn_layer_free(ac_attn_layer *L)
{
    if (!L)
        return;
    free(L->block);
    memset(L, 0, sizeof *L);
}

int ac_model_layer(ac_attn_layer *L, const ac_model *m, size_t l, ac_err *err)
{
    const md_cfg *c = &m->priv->c;
    memset(L, 0, sizeof *L);
    if (l >= m->layers)
        return ac_err_set_field(err, AC_EUSAGE, "layer", "layer %zu: the model has %zu layers",
                                l, m->layers);
    size_t d = c->d, qd = c->h * c->dk, kvd = c->hkv * c->dk;
    /* wq wk wv wo | bq bk bv bo | norm w b */
    size_t n = qd * d + 2 * kvd * d + d * qd + qd + 2 * kvd + d + 2 * d;
    double *b = calloc(n, sizeof *b);
    if (!b)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    L->block = b;
    L->layer = c->fam == AC_MODEL_LAYER ? c->layer_index : l;
    L->d = d;
    L->h = c->h;
    L->hkv = c->hkv;
    L->dk = c->dk;
    L->wq = b;
    L->wk = L->wq + qd * d;
    L->wv = L->wk + kvd * d;
    L->wo = L->wv + kvd * d;
    double *bq = L->wo + d * qd, *bk = bq + qd, *bv = bk + kvd, *bo = bv + kvd;
    double *nw = bo + d, *nb = nw + d;
    int st = AC_OK;
    if (md_slot(m, l, S_QKV_W)) {
        /* fused: rows [0, qd) queries, then keys, then values */
        size_t rows = qd + 2 * kvd;
        double *t = malloc(rows * (d + 1) * sizeof *t + 1);
        if (!t) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            goto out;
        }
        if (!(st = md_read_slot(t, m, l, S_QKV_W, err)))
            memcpy(L->wq, t, rows * d * sizeof *t);
        if (!st && md_slot(m, l, S_QKV_B) && !(st = md_read_slot(t, m, l, S_QKV_B, err))) {
            memcpy(bq, t, rows * sizeof *t);
            L->bq = bq;
            L->bk = bk;
            L->bv = bv;
        }
        free(t);
    } else {
        if ((st = md_read_slot(L->wq, m, l, S_Q_W, err)) ||
            (st = md_read_slot(L->wk, m, l, S_K_W, err)) ||
            (st = md_read_slot(L->wv, m, l, S_V_W, err)))
            goto out;
        if (md_slot(m, l, S_Q_B) && !(st = md_read_slot(bq, m, l, S_Q_B, err)))
            L->bq = bq;
        if (!st && md_slot(m, l, S_K_B) && !(st = md_read_slot(bk, m, l, S_K_B, err)))
            L->bk = bk;
        if (!st && md_slot(m, l, S_V_B) && !(st = md_read_slot(bv, m, l, S_V_B, err)))
            L->bv = bv;
    }
    if (st || (st = md_read_slot(L->wo, m, l, S_O_W, err)))
        goto out;
    if (md_slot(m, l, S_O_B) && !(st = md_read_slot(bo, m, l, S_O_B, err)))
        L->bo = bo;
    if (st)
        goto out;
    /* the norm before the projections: the block's first norm (pre-LN) */
    L->norm = c->post_ln ? AC_NORM_NONE : c->norm;
    if (L->norm != AC_NORM_NONE) {
        L->norm_eps = c->eps;
        if ((st = md_read_slot(nw, m, l, S_LN1_W, err)))
            goto out;
        L->norm_w = nw;
        if (md_slot(m, l, S_LN1_B)) {
            if ((st = md_read_slot(nb, m, l, S_LN1_B, err)))
                goto out;
            L->norm_b = nb;
        }
        const char *nm = md_slot(m, l, S_LN1_W)->name;
        size_t k = strlen(nm);
        if (k > 7 && !strcmp(nm + k - 7, ".weight"))
            k -= 7;
        snprintf(L->norm_name, sizeof L->norm_name, "%.*s", (int)k, nm);
    }
    /* the scale */
    double sq = sqrt((double)c->dk);
    if (c->has_scale) {
        L->scale = c->scale;
        snprintf(L->scale_rule, sizeof L->scale_rule, "%.17g (\"scale\" of config.json)",
                 c->scale);
    } else if (!c->scale_weights) {
        L->scale = 1.0;
        snprintf(L->scale_rule, sizeof L->scale_rule, "1 (scale_attn_weights false)");
    } else {
        L->scale = 1.0 / sq;
        snprintf(L->scale_rule, sizeof L->scale_rule, "1/sqrt(%zu)", c->dk);
    }
    if (c->scale_inv_layer) {
        L->scale /= (double)(l + 1);
        size_t k = strlen(L->scale_rule);
        snprintf(L->scale_rule + k, sizeof L->scale_rule - k,
                 "/%zu (scale_attn_by_inverse_layer_idx)", l + 1);
    }
    L->mask = c->causal ? AC_MASK_CAUSAL : AC_MASK_NONE;
    L->window = c->window;
    L->rope = c->rope;
    L->rope_theta = c->rope ? c->rope_theta : 0;
out:
    if (st)
        ac_attn_layer_free(L);
    return st;
}
