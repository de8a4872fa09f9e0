/* hfconfig.c — the architecture from config.json (models_impl.h).
 *
 * model_type picks the family; each family reads the keys of its Hugging
 * Face configuration class, with that class's defaults for absent keys (as
 * from_pretrained does).  Options that change the attention and are not
 * implemented are refused by name, never ignored: an unknown model_type,
 * rope_scaling other than "default", partial rotary embeddings, relative
 * position embeddings, cross-attention, Qwen2's use_sliding_window, soft-
 * capped logits, ....  nanoGPT (as attncheck.from_torch writes it:
 * python/attncheck/torch_convert.py) and attncheck_layer are attncheck's
 * own formats: there every key must be known.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/models_impl.h"

/* Limits on sizes read from a file (a value beyond is corrupt data). */
#define MAX_DIM ((size_t)1 << 20)
#define MAX_HEADS ((size_t)1 << 14)
#define MAX_LAYERS ((size_t)1 << 12)
#define MAX_VOCAB ((size_t)1 << 24)

typedef struct {
    const ac_jv *o;
    const char *file;
    ac_err *err;
} cfgr;

static const ac_jv *present(const cfgr *r, const char *key)
{
    const ac_jv *v = ac_jv_get(r->o, key);
    return v && v->type != AC_JV_NULL ? v : NULL;
}

/* A size: the first of keys[] present (NULL-terminated aliases), else def
 * (def == 0 with required: missing is an error). */
static int get_size(const cfgr *r, const char *const *keys, size_t def, size_t lo, size_t hi,
                    size_t *out)
{
    for (size_t i = 0; keys[i]; i++) {
        const ac_jv *v = present(r, keys[i]);
        if (!v)
            continue;
        uint64_t x;
        if (!md_json_u64(v, &x) || x < lo || x > hi)
            return ac_err_set(r->err, AC_EDATA, "%s: \"%s\" must be an integer in [%zu, %zu]",
                              r->file, keys[i], lo, hi);
        *out = (size_t)x;
        return AC_OK;
    }
    if (def == (size_t)-1)
        return ac_err_set(r->err, AC_EDATA, "%s: missing \"%s\"", r->file, keys[0]);
    *out = def;
    return AC_OK;
}

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define REQUIRED ((size_t)-1)

static int get_double(const cfgr *r, const char *key, double def, double lo, double hi,
                      double *out)
{
    const ac_jv *v = present(r, key);
    if (!v) {
        *out = def;
        return AC_OK;
    }
    char *end;
    double x = v->type == AC_JV_NUMBER ? strtod(v->s, &end) : NAN;
    if (!(x >= lo && x <= hi))
        return ac_err_set(r->err, AC_EDATA, "%s: \"%s\" must be a number in [%g, %g]", r->file,
                          key, lo, hi);
    *out = x;
    return AC_OK;
}

static int get_bool(const cfgr *r, const char *key, int def, int *out)
{
    const ac_jv *v = present(r, key);
    if (!v) {
        *out = def;
        return AC_OK;
    }
    if (v->type != AC_JV_BOOL)
        return ac_err_set(r->err, AC_EDATA, "%s: \"%s\" must be true or false", r->file, key);
    *out = v->b;
    return AC_OK;
}

static int get_string(const cfgr *r, const char *key, const char *def, const char **out)
{
    const ac_jv *v = present(r, key);
    if (!v) {
        *out = def;
        return AC_OK;
    }
    if (v->type != AC_JV_STRING)
        return ac_err_set(r->err, AC_EDATA, "%s: \"%s\" must be a string", r->file, key);
    *out = v->s;
    return AC_OK;
}

/* An option that changes the attention, not implemented: refused when set
 * to anything but null, false or 0 (a value meaning "off"). */
static int refuse_if_set(const cfgr *r, const char *key, const char *what)
{
    const ac_jv *v = present(r, key);
    if (!v)
        return AC_OK;
    if (v->type == AC_JV_BOOL && !v->b)
        return AC_OK;
    if (v->type == AC_JV_NUMBER && strtod(v->s, NULL) == 0)
        return AC_OK;
    return ac_err_set(r->err, AC_EDATA, "%s: \"%s\" is set: %s is not implemented", r->file, key,
                      what);
}

static int parse_act(const cfgr *r, const char *key, const char *def, md_act *act)
{
    const char *s;
    int st = get_string(r, key, def, &s);
    if (st)
        return st;
    if (!strcmp(s, "gelu"))
        *act = MD_ACT_GELU;
    else if (!strcmp(s, "gelu_new") || !strcmp(s, "gelu_pytorch_tanh"))
        *act = MD_ACT_GELU_TANH;
    else if (!strcmp(s, "relu"))
        *act = MD_ACT_RELU;
    else if (!strcmp(s, "silu") || !strcmp(s, "swish"))
        *act = MD_ACT_SILU;
    else
        return ac_err_set(r->err, AC_EDATA, "%s: \"%s\": activation \"%.40s\" is not implemented "
                          "(gelu, gelu_new, gelu_pytorch_tanh, relu, silu are)", r->file, key, s);
    return AC_OK;
}

/* Every key of o must be in keys (attncheck's own formats). */
static int only_keys(const cfgr *r, const char *const *keys)
{
    for (size_t i = 0; i < r->o->n; i++) {
        const char *k = r->o->kids[i]->key;
        size_t j = 0;
        while (keys[j] && strcmp(keys[j], k))
            j++;
        if (!keys[j])
            return ac_err_set(r->err, AC_EDATA, "%s: unknown key \"%.60s\"", r->file, k);
    }
    return AC_OK;
}

static void note(md_cfg *c, const char *s)
{
    size_t k = strlen(c->notes);
    snprintf(c->notes + k, sizeof c->notes - k, "%s%s", k ? "; " : "", s);
}

/* The head size: d / h, which must divide, unless given. */
static int head_size(const cfgr *r, md_cfg *c, const char *hkey)
{
    if (c->h == 0 || c->d % c->h)
        return ac_err_set(r->err, AC_EDATA, "%s: \"%s\" %zu does not divide the width %zu",
                          r->file, hkey, c->h, c->d);
    c->dk = c->d / c->h;
    return AC_OK;
}

/* The sizes the Hugging Face classes of BERT, ViT and Llama spell alike,
 * with the class's defaults (width, heads, layers, feed-forward). */
static int hf_sizes(const cfgr *r, md_cfg *c, size_t d, size_t h, size_t L, size_t ffn)
{
    int st;
    if ((st = get_size(r, KEYS("hidden_size"), d, 1, MAX_DIM, &c->d)) ||
        (st = get_size(r, KEYS("num_attention_heads"), h, 1, MAX_HEADS, &c->h)) ||
        (st = get_size(r, KEYS("num_hidden_layers"), L, 0, MAX_LAYERS, &c->L)) ||
        (st = get_size(r, KEYS("intermediate_size"), ffn, 1, 64 * MAX_DIM, &c->ffn)))
        return st;
    return AC_OK;
}

/* ---------------------------------------------------------------- families */

static int gpt2(const cfgr *r, md_cfg *c)
{
    int st, upcast;
    if ((st = get_size(r, KEYS("n_embd"), 768, 1, MAX_DIM, &c->d)) ||
        (st = get_size(r, KEYS("n_head"), 12, 1, MAX_HEADS, &c->h)) ||
        (st = get_size(r, KEYS("n_layer"), 12, 0, MAX_LAYERS, &c->L)) ||
        (st = get_size(r, KEYS("n_positions"), 1024, 1, MAX_DIM, &c->max_pos)) ||
        (st = get_size(r, KEYS("vocab_size"), 50257, 1, MAX_VOCAB, &c->vocab)) ||
        (st = head_size(r, c, "n_head")) ||
        (st = get_size(r, KEYS("n_inner"), 4 * c->d, 1, 64 * MAX_DIM, &c->ffn)) ||
        (st = get_double(r, "layer_norm_epsilon", 1e-5, 0, 1, &c->eps)) ||
        (st = parse_act(r, "activation_function", "gelu_new", &c->act)) ||
        (st = get_bool(r, "scale_attn_weights", 1, &c->scale_weights)) ||
        (st = get_bool(r, "scale_attn_by_inverse_layer_idx", 0, &c->scale_inv_layer)) ||
        (st = get_bool(r, "reorder_and_upcast_attn", 0, &upcast)) ||
        (st = refuse_if_set(r, "add_cross_attention", "cross-attention")))
        return st;
    if (upcast)
        note(c, "reorder_and_upcast_attn: float32 arithmetic order only, the same in double");
    c->norm = AC_NORM_LAYER;
    c->qkv_bias = c->o_bias = c->mlp_bias = c->norm_bias = 1;
    c->causal = 1;
    return AC_OK;
}

static int nanogpt(const cfgr *r, md_cfg *c)
{
    int st;
    if ((st = only_keys(r, KEYS("model_type", "n_layer", "n_head", "n_embd", "block_size",
                                "vocab_size", "bias", "dropout"))) ||
        (st = get_size(r, KEYS("n_embd"), REQUIRED, 1, MAX_DIM, &c->d)) ||
        (st = get_size(r, KEYS("n_head"), REQUIRED, 1, MAX_HEADS, &c->h)) ||
        (st = get_size(r, KEYS("n_layer"), REQUIRED, 0, MAX_LAYERS, &c->L)) ||
        (st = get_size(r, KEYS("block_size"), REQUIRED, 1, MAX_DIM, &c->max_pos)) ||
        (st = get_size(r, KEYS("vocab_size"), REQUIRED, 1, MAX_VOCAB, &c->vocab)) ||
        (st = get_bool(r, "bias", 1, &c->qkv_bias)) || (st = head_size(r, c, "n_head")))
        return st;
    /* model.py: LayerNorm(eps 1e-5, bias optional), nn.GELU() (erf), 4 n_embd */
    c->o_bias = c->mlp_bias = c->norm_bias = c->qkv_bias;
    c->ffn = 4 * c->d;
    c->eps = 1e-5;
    c->act = MD_ACT_GELU;
    c->norm = AC_NORM_LAYER;
    c->causal = 1;
    c->scale_weights = 1;
    return AC_OK;
}

static int bert(const cfgr *r, md_cfg *c)
{
    int st, dec;
    const char *pe;
    if ((st = hf_sizes(r, c, 768, 12, 12, 3072)) ||
        (st = get_size(r, KEYS("max_position_embeddings"), 512, 1, MAX_DIM, &c->max_pos)) ||
        (st = get_size(r, KEYS("type_vocab_size"), 2, 0, MAX_VOCAB, &c->type_vocab)) ||
        (st = get_size(r, KEYS("vocab_size"), c->fam == AC_MODEL_ROBERTA ? 50265 : 30522, 1,
                       MAX_VOCAB, &c->vocab)) ||
        (st = head_size(r, c, "num_attention_heads")) ||
        (st = get_double(r, "layer_norm_eps", 1e-12, 0, 1, &c->eps)) ||
        (st = parse_act(r, "hidden_act", "gelu", &c->act)) ||
        (st = get_string(r, "position_embedding_type", "absolute", &pe)) ||
        (st = get_bool(r, "is_decoder", 0, &dec)) ||
        (st = refuse_if_set(r, "add_cross_attention", "cross-attention")))
        return st;
    if (strcmp(pe, "absolute"))
        return ac_err_set(r->err, AC_EDATA, "%s: \"position_embedding_type\" is \"%.40s\": "
                          "relative position embeddings are not implemented", r->file, pe);
    if (c->fam == AC_MODEL_ROBERTA) {
        size_t pad;
        if ((st = get_size(r, KEYS("pad_token_id"), 1, 0, MAX_VOCAB, &pad)))
            return st;
        c->pad_id = (long)pad;
    }
    c->causal = dec; /* BertModel as a decoder: a causal mask */
    c->post_ln = c->emb_norm = 1;
    c->norm = AC_NORM_NONE;
    c->qkv_bias = c->o_bias = c->mlp_bias = c->norm_bias = 1;
    c->scale_weights = 1;
    return AC_OK;
}

static int distilbert(const cfgr *r, md_cfg *c)
{
    int st;
    if ((st = get_size(r, KEYS("dim"), 768, 1, MAX_DIM, &c->d)) ||
        (st = get_size(r, KEYS("n_heads"), 12, 1, MAX_HEADS, &c->h)) ||
        (st = get_size(r, KEYS("n_layers"), 6, 0, MAX_LAYERS, &c->L)) ||
        (st = get_size(r, KEYS("hidden_dim"), 3072, 1, 64 * MAX_DIM, &c->ffn)) ||
        (st = get_size(r, KEYS("max_position_embeddings"), 512, 1, MAX_DIM, &c->max_pos)) ||
        (st = get_size(r, KEYS("vocab_size"), 30522, 1, MAX_VOCAB, &c->vocab)) ||
        (st = head_size(r, c, "n_heads")) || (st = parse_act(r, "activation", "gelu", &c->act)))
        return st;
    c->eps = 1e-12; /* modeling_distilbert.py: nn.LayerNorm(dim, eps=1e-12) */
    c->post_ln = c->emb_norm = 1;
    c->norm = AC_NORM_NONE;
    c->qkv_bias = c->o_bias = c->mlp_bias = c->norm_bias = 1;
    c->scale_weights = 1;
    return AC_OK;
}

static int llama(const cfgr *r, md_cfg *c)
{
    int st, ab = 0, mb = 0, swa = 0;
    size_t defpos = c->fam == AC_MODEL_LLAMA ? 2048 : c->fam == AC_MODEL_QWEN2 ? 32768 : 131072;
    size_t defvocab = c->fam == AC_MODEL_QWEN2 ? 151936 : 32000;
    if ((st = hf_sizes(r, c, 4096, 32, 32, 11008)) ||
        (st = get_size(r, KEYS("num_key_value_heads"), c->h, 1, MAX_HEADS, &c->hkv)) ||
        (st = get_size(r, KEYS("max_position_embeddings"), defpos, 1, (size_t)1 << 30,
                       &c->max_pos)) ||
        (st = get_size(r, KEYS("vocab_size"), defvocab, 1, MAX_VOCAB, &c->vocab)) ||
        (st = get_double(r, "rms_norm_eps", 1e-6, 0, 1, &c->eps)) ||
        (st = get_double(r, "rope_theta", 10000.0, 1, 1e30, &c->rope_theta)) ||
        (st = parse_act(r, "hidden_act", "silu", &c->act)) ||
        (st = refuse_if_set(r, "attn_logit_softcapping", "soft-capped attention logits")) ||
        (st = refuse_if_set(r, "qk_layernorm", "normalised queries and keys")) ||
        (st = refuse_if_set(r, "use_qk_norm", "normalised queries and keys")))
        return st;
    if (c->h % c->hkv)
        return ac_err_set(r->err, AC_EDATA, "%s: \"num_key_value_heads\" %zu does not divide "
                          "\"num_attention_heads\" %zu", r->file, c->hkv, c->h);
    if (present(r, "head_dim")) {
        if ((st = get_size(r, KEYS("head_dim"), 0, 1, MAX_DIM, &c->dk)))
            return st;
    } else if ((st = head_size(r, c, "num_attention_heads"))) {
        return st;
    }
    if (c->dk % 2)
        return ac_err_set(r->err, AC_EDATA, "%s: head size %zu is odd: rotary embeddings pair "
                          "its dimensions", r->file, c->dk);
    const ac_jv *rs = present(r, "rope_scaling");
    if (rs) {
        const ac_jv *t = rs->type == AC_JV_OBJECT ? ac_jv_get(rs, "rope_type") : NULL;
        if (!t && rs->type == AC_JV_OBJECT)
            t = ac_jv_get(rs, "type");
        if (!t || t->type != AC_JV_STRING || strcmp(t->s, "default"))
            return ac_err_set(r->err, AC_EDATA, "%s: \"rope_scaling\" of type \"%.40s\" is not "
                              "implemented (only \"default\": no scaling)", r->file,
                              t && t->type == AC_JV_STRING ? t->s : "?");
    }
    const ac_jv *pr = present(r, "partial_rotary_factor");
    if (pr && (pr->type != AC_JV_NUMBER || strtod(pr->s, NULL) != 1.0))
        return ac_err_set(r->err, AC_EDATA, "%s: \"partial_rotary_factor\" is not 1: partial "
                          "rotary embeddings are not implemented", r->file);
    if (c->fam == AC_MODEL_LLAMA) {
        if ((st = get_bool(r, "attention_bias", 0, &ab)) ||
            (st = get_bool(r, "mlp_bias", 0, &mb)))
            return st;
        c->qkv_bias = c->o_bias = ab;
        c->mlp_bias = mb;
    } else if (c->fam == AC_MODEL_QWEN2) {
        c->qkv_bias = 1;
        if ((st = get_bool(r, "use_sliding_window", 0, &swa)))
            return st;
        if (swa)
            return ac_err_set(r->err, AC_EDATA, "%s: \"use_sliding_window\" is true: Qwen2's "
                              "per-layer sliding window is not implemented", r->file);
    } else { /* Mistral: the window of every layer (MistralConfig's default 4096) */
        const ac_jv *sw = ac_jv_get(r->o, "sliding_window");
        if (!sw)
            c->window = 4096;
        else if (sw->type != AC_JV_NULL &&
                 (st = get_size(r, KEYS("sliding_window"), 0, 1, (size_t)1 << 30, &c->window)))
            return st;
    }
    const ac_jv *lt = present(r, "layer_types");
    for (size_t i = 0; lt && i < lt->n; i++)
        if (lt->type != AC_JV_ARRAY || lt->kids[i]->type != AC_JV_STRING ||
            strcmp(lt->kids[i]->s, "full_attention"))
            return ac_err_set(r->err, AC_EDATA, "%s: \"layer_types\": only \"full_attention\" "
                              "layers are implemented", r->file);
    size_t tp;
    if ((st = get_size(r, KEYS("pretraining_tp"), 1, 1, MAX_HEADS, &tp)))
        return st;
    if (tp > 1)
        note(c, "pretraining_tp: sliced products, the same sums in exact arithmetic");
    c->norm = AC_NORM_RMS;
    c->gated = 1;
    c->causal = 1;
    c->rope = AC_ROPE_HALF; /* modeling_llama.py: rotate_half */
    c->scale_weights = 1;
    return AC_OK;
}

static int vit(const cfgr *r, md_cfg *c)
{
    int st;
    if ((st = hf_sizes(r, c, 768, 12, 12, 3072)) ||
        (st = get_size(r, KEYS("image_size"), 224, 1, 1 << 16, &c->image)) ||
        (st = get_size(r, KEYS("patch_size"), 16, 1, 1 << 16, &c->patch)) ||
        (st = get_size(r, KEYS("num_channels"), 3, 1, 1 << 10, &c->channels)) ||
        (st = head_size(r, c, "num_attention_heads")) ||
        (st = get_double(r, "layer_norm_eps", 1e-12, 0, 1, &c->eps)) ||
        (st = parse_act(r, "hidden_act", "gelu", &c->act)) ||
        (st = get_bool(r, "qkv_bias", 1, &c->qkv_bias)))
        return st;
    c->o_bias = c->mlp_bias = c->norm_bias = 1;
    c->norm = AC_NORM_LAYER;
    c->scale_weights = 1;
    return AC_OK;
}

/* timm: the sizes come from the tensors (families.c); here the heads, from
 * model_args or the size in the architecture's name (timm's vit_* models). */
static int vit_timm(const cfgr *r, md_cfg *c, const char *arch)
{
    static const struct {
        const char *prefix;
        size_t heads;
    } sizes[] = {{"vit_tiny_", 3}, {"vit_small_", 6}, {"vit_base_", 12}, {"vit_large_", 16},
                 {"vit_huge_", 16}};
    int st;
    const ac_jv *ma = present(r, "model_args");
    c->h = 0;
    if (ma) {
        static const char *const ok[] = {"num_heads", "embed_dim", "depth", "patch_size",
                                         "img_size", "mlp_ratio", "qkv_bias", "num_classes",
                                         "global_pool", "class_token", NULL};
        cfgr m = {ma, r->file, r->err};
        if (ma->type != AC_JV_OBJECT)
            return ac_err_set(r->err, AC_EDATA, "%s: \"model_args\" is not an object", r->file);
        for (size_t i = 0; i < ma->n; i++) {
            size_t j = 0;
            while (ok[j] && strcmp(ok[j], ma->kids[i]->key))
                j++;
            if (!ok[j])
                return ac_err_set(r->err, AC_EDATA, "%s: \"model_args\": \"%.60s\" is not "
                                  "implemented for timm ViT models", r->file, ma->kids[i]->key);
        }
        int ct;
        if ((st = get_bool(&m, "class_token", 1, &ct)))
            return st;
        if (!ct)
            return ac_err_set(r->err, AC_EDATA, "%s: \"model_args\": \"class_token\" false is "
                              "not implemented", r->file);
        if (present(&m, "num_heads") &&
            (st = get_size(&m, KEYS("num_heads"), 0, 1, MAX_HEADS, &c->h)))
            return st;
    }
    for (size_t i = 0; !c->h && i < sizeof sizes / sizeof *sizes; i++)
        if (!strncmp(arch, sizes[i].prefix, strlen(sizes[i].prefix)))
            c->h = sizes[i].heads;
    if (!c->h)
        return ac_err_set(r->err, AC_EDATA, "%s: timm architecture \"%.60s\": its number of heads "
                          "is unknown (give model_args.num_heads)", r->file, arch);
    /* the image size: pretrained_cfg.input_size [C, H, W] */
    const ac_jv *pc = present(r, "pretrained_cfg");
    const ac_jv *is = pc ? ac_jv_get(pc, "input_size") : NULL;
    uint64_t ch, hh, ww;
    if (!is || is->type != AC_JV_ARRAY || is->n != 3 || !md_json_u64(is->kids[0], &ch) ||
        !md_json_u64(is->kids[1], &hh) || !md_json_u64(is->kids[2], &ww) || hh != ww || !hh ||
        hh > 1 << 16 || !ch || ch > 1 << 10)
        return ac_err_set(r->err, AC_EDATA, "%s: \"pretrained_cfg\": \"input_size\" must be "
                          "[channels, size, size]", r->file);
    c->channels = (size_t)ch;
    c->image = (size_t)hh;
    c->eps = 1e-6; /* timm vision_transformer.py: LayerNorm(eps=1e-6) */
    c->act = MD_ACT_GELU;
    c->norm = AC_NORM_LAYER;
    c->o_bias = c->mlp_bias = c->norm_bias = 1;
    c->scale_weights = 1;
    return AC_OK;
}

/* attncheck's generic single layer (ac_models(3), section THE GENERIC LAYER). */
static int layer(const cfgr *r, md_cfg *c)
{
    int st;
    const char *mask, *norm, *rope;
    if ((st = only_keys(r, KEYS("model_type", "format_version", "hidden_size",
                                "num_attention_heads", "num_key_value_heads", "head_dim", "scale",
                                "mask", "sliding_window", "norm", "norm_eps", "rope",
                                "rope_theta", "layer_index", "source"))) ||
        (st = get_size(r, KEYS("hidden_size"), REQUIRED, 1, MAX_DIM, &c->d)) ||
        (st = get_size(r, KEYS("num_attention_heads"), REQUIRED, 1, MAX_HEADS, &c->h)) ||
        (st = get_size(r, KEYS("num_key_value_heads"), c->h, 1, MAX_HEADS, &c->hkv)) ||
        (st = get_string(r, "mask", "none", &mask)) ||
        (st = get_size(r, KEYS("sliding_window"), 0, 0, (size_t)1 << 30, &c->window)) ||
        (st = get_string(r, "norm", "none", &norm)) ||
        (st = get_double(r, "norm_eps", 0, 0, 1, &c->eps)) ||
        (st = get_string(r, "rope", "none", &rope)) ||
        (st = get_double(r, "rope_theta", 10000.0, 1, 1e30, &c->rope_theta)))
        return st;
    size_t fv;
    if ((st = get_size(r, KEYS("format_version"), 1, 1, 1, &fv)) ||
        (st = get_size(r, KEYS("layer_index"), 0, 0, MAX_LAYERS, &c->layer_index)))
        return st;
    if (c->h % c->hkv)
        return ac_err_set(r->err, AC_EDATA, "%s: \"num_key_value_heads\" %zu does not divide "
                          "\"num_attention_heads\" %zu", r->file, c->hkv, c->h);
    if (present(r, "head_dim")) {
        if ((st = get_size(r, KEYS("head_dim"), 0, 1, MAX_DIM, &c->dk)))
            return st;
    } else if ((st = head_size(r, c, "num_attention_heads"))) {
        return st;
    }
    if (present(r, "scale")) {
        if ((st = get_double(r, "scale", 0, -1e300, 1e300, &c->scale)))
            return st;
        c->has_scale = 1;
    }
    if (!strcmp(mask, "causal"))
        c->causal = 1;
    else if (strcmp(mask, "none"))
        return ac_err_set(r->err, AC_EDATA, "%s: \"mask\" must be \"none\" or \"causal\"",
                          r->file);
    if (c->window && !c->causal)
        return ac_err_set(r->err, AC_EDATA, "%s: \"sliding_window\" needs \"mask\": \"causal\"",
                          r->file);
    if (!strcmp(norm, "layernorm"))
        c->norm = AC_NORM_LAYER;
    else if (!strcmp(norm, "rmsnorm"))
        c->norm = AC_NORM_RMS;
    else if (strcmp(norm, "none"))
        return ac_err_set(r->err, AC_EDATA, "%s: \"norm\" must be \"none\", \"layernorm\" or "
                          "\"rmsnorm\"", r->file);
    if (c->norm != AC_NORM_NONE && !present(r, "norm_eps"))
        return ac_err_set(r->err, AC_EDATA, "%s: missing \"norm_eps\" (the norm's epsilon)",
                          r->file);
    if (!strcmp(rope, "half"))
        c->rope = AC_ROPE_HALF;
    else if (!strcmp(rope, "interleaved"))
        c->rope = AC_ROPE_INTERLEAVED;
    else if (strcmp(rope, "none"))
        return ac_err_set(r->err, AC_EDATA, "%s: \"rope\" must be \"none\", \"half\" or "
                          "\"interleaved\"", r->file);
    if (c->rope && c->dk % 2)
        return ac_err_set(r->err, AC_EDATA, "%s: head size %zu is odd: rotary embeddings pair "
                          "its dimensions", r->file, c->dk);
    c->L = 1;
    c->scale_weights = 1;
    return AC_OK;
}

/* ---------------------------------------------------------------- entry */

static const struct {
    const char *type;
    ac_model_family fam;
} types[] = {
    {"gpt2", AC_MODEL_GPT2},         {"nanogpt", AC_MODEL_NANOGPT},
    {"bert", AC_MODEL_BERT},         {"roberta", AC_MODEL_ROBERTA},
    {"distilbert", AC_MODEL_DISTILBERT}, {"llama", AC_MODEL_LLAMA},
    {"mistral", AC_MODEL_MISTRAL},   {"qwen2", AC_MODEL_QWEN2},
    {"vit", AC_MODEL_VIT},           {"attncheck_layer", AC_MODEL_LAYER},
};

int md_config_read(md_cfg *c, const char *path, ac_rope_kind ro, ac_err *err)
{
    ac_jv *root = NULL;
    int st = ac_jparse_file(&root, path, err);
    if (st)
        return st;
    const char *dup, *mt = NULL, *arch = NULL;
    cfgr r = {root, path, err};
    memset(c, 0, sizeof *c);
    c->pad_id = -1;
    if (root->type != AC_JV_OBJECT) {
        st = ac_err_set(err, AC_EDATA, "%s: not a JSON object", path);
        goto out;
    }
    if ((dup = md_json_duplicate(root))) {
        st = ac_err_set(err, AC_EDATA, "%s: duplicate key \"%.200s\"", path, dup);
        goto out;
    }
    if ((st = get_string(&r, "model_type", NULL, &mt)) ||
        (st = get_string(&r, "architecture", NULL, &arch)))
        goto out;
    if (mt) {
        size_t i = 0;
        while (i < sizeof types / sizeof *types && strcmp(types[i].type, mt))
            i++;
        if (i == sizeof types / sizeof *types) {
            st = ac_err_set(err, AC_EDATA, "%s: model_type \"%.60s\" is not a family attncheck "
                            "reads (gpt2, nanogpt, bert, roberta, distilbert, llama, mistral, "
                            "qwen2, vit, attncheck_layer; timm vit_* by \"architecture\")",
                            path, mt);
            goto out;
        }
        c->fam = types[i].fam;
        snprintf(c->model_type, sizeof c->model_type, "%s", mt);
    } else if (arch && !strncmp(arch, "vit_", 4)) {
        c->fam = AC_MODEL_VIT_TIMM;
        snprintf(c->model_type, sizeof c->model_type, "%s", arch);
    } else {
        st = ac_err_set(err, AC_EDATA, "%s: no \"model_type\"%s%.60s%s: the architecture is "
                        "unknown", path, arch ? " and architecture \"" : "", arch ? arch : "",
                        arch ? "\" is not a timm vit_* model" : "");
        goto out;
    }
    switch (c->fam) {
    case AC_MODEL_GPT2: st = gpt2(&r, c); break;
    case AC_MODEL_NANOGPT: st = nanogpt(&r, c); break;
    case AC_MODEL_BERT:
    case AC_MODEL_ROBERTA: st = bert(&r, c); break;
    case AC_MODEL_DISTILBERT: st = distilbert(&r, c); break;
    case AC_MODEL_LLAMA:
    case AC_MODEL_MISTRAL:
    case AC_MODEL_QWEN2: st = llama(&r, c); break;
    case AC_MODEL_VIT: st = vit(&r, c); break;
    case AC_MODEL_VIT_TIMM: st = vit_timm(&r, c, arch); break;
    default: st = layer(&r, c); break;
    }
    if (st)
        goto out;
    if (!c->hkv)
        c->hkv = c->h;
    if (ro) {
        if (!c->rope)
            st = ac_err_set_field(err, AC_EUSAGE, "rope", "%s: rope: a %s model has no rotary "
                                  "embeddings", path, c->model_type);
        else
            c->rope = ro;
    }
    if (c->fam == AC_MODEL_VIT && (c->patch > c->image || c->image % c->patch))
        st = ac_err_set(err, AC_EDATA, "%s: \"patch_size\" %zu does not divide \"image_size\" "
                        "%zu", path, c->patch, c->image);
    if (c->fam == AC_MODEL_VIT)
        c->ntok = 1 + (c->image / c->patch) * (c->image / c->patch);
out:
    ac_jv_free(root);
    return st;
}
