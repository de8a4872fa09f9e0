/* attncheck/models.h — pretrained checkpoints: safetensors files, the
 * architecture a Hugging Face config.json describes, running a model up to
 * a layer, and every head's attention pattern exactly as the model
 * computes it (ac_models(3)).
 *
 * Dimension letters: n tokens, d width (hidden size), h query heads, hkv
 * key/value heads, dk head size, L layers.  Token-major arrays are
 * row-major n x d (one row per token, PyTorch's layout); a layer's patterns
 * are an array [h, n, n] of row-stochastic matrices P[i][q][k] = the weight
 * query q gives key k in head i (the layout TransformerLens and bertviz
 * plot).  attncheck's Theorem 1 layout is the transpose: X d x n (column j =
 * token j) and column-stochastic P (entry (k, q)); ac_attn_head_t1 gives a
 * head in that form.
 *
 * Everything is IEEE double.  Weights stored as F64, F32, F16 or BF16 are
 * converted exactly (every such number is a double); nothing else is read.
 * Weights are used as stored: no LayerNorm folding, no centring, no
 * re-scaling (the transformations of TransformerLens are not applied).
 */
#ifndef ATTNCHECK_MODELS_H
#define ATTNCHECK_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/npy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ safetensors */

/* The element types of the format (huggingface/safetensors), in its order. */
typedef enum {
    AC_ST_BOOL, AC_ST_F4, AC_ST_F6_E2M3, AC_ST_F6_E3M2, AC_ST_U8, AC_ST_I8, AC_ST_F8_E5M2,
    AC_ST_F8_E4M3, AC_ST_F8_E8M0, AC_ST_F8_E4M3FNUZ, AC_ST_F8_E5M2FNUZ, AC_ST_I16, AC_ST_U16,
    AC_ST_F16, AC_ST_BF16, AC_ST_I32, AC_ST_U32, AC_ST_F32, AC_ST_C64, AC_ST_F64, AC_ST_I64,
    AC_ST_U64, AC_ST_NDTYPES
} ac_st_dtype;

/* The largest header the reader accepts (the reference reader's limit). */
#define AC_ST_MAX_HEADER 100000000u

/* The dtype's name as the format spells it ("BF16"), and its size in bits. */
const char *ac_st_dtype_name(ac_st_dtype t);
unsigned ac_st_dtype_bits(ac_st_dtype t);

/* One tensor of a checkpoint. */
typedef struct {
    const char *name;       /* as in the file */
    ac_st_dtype dtype;
    size_t ndim;
    const size_t *shape;    /* ndim entries (NULL when ndim == 0) */
    size_t numel;           /* product of the shape (1 when ndim == 0) */
    size_t file;            /* index into ac_st.files */
    size_t begin, end;      /* data_offsets: bytes [begin, end) of the file's data */
} ac_st_tensor;

/* One safetensors file, mapped read-only. */
typedef struct {
    char *path;
    const unsigned char *map;  /* the whole file (NULL for an empty one) */
    size_t size;               /* bytes */
    size_t data_start;         /* 8 + header length: offset of the data buffer */
    size_t nmeta;              /* "__metadata__": key/value strings */
    char **meta_key, **meta_val;
    int have_sha256;
    unsigned char sha256[32];  /* of the whole file (ac_st_checksum) */
} ac_st_file;

/* A checkpoint: one file or the shards of an index.  Tensors are sorted by
 * name.  A zeroed ac_st is empty and may be passed to ac_st_close. */
typedef struct {
    char *path;                /* what was opened */
    char *index;               /* the index file (NULL: a single file) */
    size_t nfiles;
    ac_st_file *files;
    size_t ntensors;
    ac_st_tensor *tensors;
    void *priv;                /* names and shapes */
} ac_st;

/* Open a checkpoint: PATH is a .safetensors file, an index
 * (model.safetensors.index.json: {"weight_map": {tensor: shard file}},
 * shards in the index's directory) or a directory holding model.safetensors
 * (else model.safetensors.index.json; the single file first, as Hugging
 * Face's loader).  Every file is mapped (mmap, never read twice) and its
 * header validated as the reference reader does: length field and header
 * within the file and at most AC_ST_MAX_HEADER bytes, valid UTF-8, a JSON
 * object of tensors {"dtype", "shape", "data_offsets"} and an optional
 * "__metadata__" of strings, no duplicate key anywhere, known dtypes, sizes
 * (dtype bits x shape, overflow-checked) equal to the offsets' span, and
 * offsets that tile the data buffer exactly (sorted, no overlap, no gap, no
 * trailing byte).  An index must list every tensor of every shard it names,
 * in that shard, once; a shard name must be a file name in the index's
 * directory.  Flags: AC_ST_SHA256 computes each file's SHA-256 now.
 *
 * Returns AC_OK; AC_ENOINPUT "PATH: cannot open: <strerror>" (also for a
 * directory with neither file); AC_EDATA "FILE: PROBLEM" for any malformed
 * or inconsistent file (a missing shard: "INDEX: names shard F, which does
 * not exist"); AC_EINTERNAL.  On failure st is zeroed. */
#define AC_ST_SHA256 1
int ac_st_open(ac_st *st, const char *path, int flags, ac_err *err);
void ac_st_close(ac_st *st);

/* The tensor called name, or NULL. */
const ac_st_tensor *ac_st_find(const ac_st *st, const char *name);

/* out[0 .. numel-1] = the tensor as doubles, in C order.  Exact for F64,
 * F32, F16 and BF16 (subnormals included).  AC_EDATA "FILE: tensor NAME:
 * entry (i, j) is NaN" (or +Inf, -Inf) for the first non-finite entry;
 * "FILE: tensor NAME: dtype F8_E4M3 is not read (quantised or integer
 * weights are not converted)" for every other dtype. */
int ac_st_read(double *out, const ac_st *st, const ac_st_tensor *t, ac_err *err);

/* The rows rows[0 .. nrows-1] of a tensor of ndim >= 1 (row r = the
 * numel/shape[0] entries with first index r), into out (nrows x
 * numel/shape[0]); errors as ac_st_read, AC_EUSAGE for a row out of range. */
int ac_st_read_rows(double *out, const ac_st *st, const ac_st_tensor *t, const size_t *rows,
                    size_t nrows, ac_err *err);

/* The SHA-256 (FIPS 180-4) of every file, whole, computed once and kept in
 * files[i].sha256 (have_sha256 set). */
void ac_st_checksum(ac_st *st);

/* ================================================================ one attention layer */

typedef enum { AC_NORM_NONE = 0, AC_NORM_LAYER = 1, AC_NORM_RMS = 2 } ac_norm_kind;
typedef enum {
    AC_ROPE_NONE = 0,
    AC_ROPE_HALF = 1,        /* Hugging Face's rotate_half: dimension i pairs with i + dk/2 */
    AC_ROPE_INTERLEAVED = 2  /* GPT-J / original Meta: dimension 2i pairs with 2i + 1 */
} ac_rope_kind;
typedef enum { AC_MASK_NONE = 0, AC_MASK_CAUSAL = 1 } ac_mask_kind;

/* One attention layer, canonical: what every head of it computes.
 *   X = norm(R)           (n x d; R the residual stream entering the layer)
 *   q_i = X Wq_i^T + bq_i,  k_i = X Wk_g^T + bk_g,  v_i = X Wv_g^T + bv_g
 *   (g = i / (h / hkv), grouped-query attention), RoPE applied to q_i, k_i
 *   at positions 0..n-1, then
 *   P_i[q][k] = Softmax_k(scale q_i[q] . k_i[k]) over the keys k the mask
 *   leaves (causal: k <= q; window w: q - k < w; padding: real keys);
 *   out = sum_i (P_i v_i) Wo_i^T + bo.
 * Weights (row-major): wq (h*dk) x d with rows i*dk .. of head i (Wq_i,
 * dk x d), wk, wv (hkv*dk) x d, wo d x (h*dk) with columns i*dk .. of head
 * i; biases bq (h*dk), bk, bv (hkv*dk), bo (d), NULL when the model has
 * none.  Layouts of the files (Conv1D [in, out], fused qkv, ...) are undone
 * on reading.  A zeroed ac_attn_layer may be passed to ac_attn_layer_free. */
typedef struct {
    size_t layer;            /* its index in the model */
    size_t d, h, hkv, dk;
    double *wq, *wk, *wv, *wo;
    double *bq, *bk, *bv, *bo;
    double scale;            /* logits = scale * q.k */
    char scale_rule[96];     /* how the model sets it, e.g. "1/sqrt(64)" */
    ac_mask_kind mask;
    size_t window;           /* sliding window (0: none) */
    ac_rope_kind rope;
    double rope_theta;       /* base of the frequencies theta^(-2j/dk) */
    ac_norm_kind norm;       /* the norm applied before the projections */
    double norm_eps;
    double *norm_w, *norm_b; /* d each (norm_b NULL for RMSNorm) */
    char norm_name[48];      /* its tensor, e.g. "h.3.ln_1" ("" if none) */
    double *block;           /* owns every array above */
} ac_attn_layer;

void ac_attn_layer_free(ac_attn_layer *L);

/* The key/value head query head i reads: i / (h / hkv). */
static inline size_t ac_attn_kv_head(const ac_attn_layer *L, size_t i)
{
    return i / (L->h / L->hkv);
}

/* One line saying everything that changes the layer's patterns: heads and
 * sizes, the scale and its rule, the mask, RoPE and its pairing, the norm
 * and its eps, the biases, "weights as stored".  Returns buf. */
char *ac_attn_describe(char *buf, size_t size, const ac_attn_layer *L);

/* X (n x d) = the layer's norm applied to each row of R (n x d); a copy of
 * R when the layer has no norm.  AC_EUSAGE if R is not n x d. */
int ac_attn_input(ac_mat *X, const ac_attn_layer *L, const ac_mat *R, ac_err *err);

/* The patterns of every head on X (n x d, the input of the projections):
 * P (allocated here, which need not be initialised) of shape [h, n, n].
 * keep (n entries, NULL: all) marks the real tokens: a key k with keep[k]
 * = 0 gets weight 0 (padding, as an attention_mask of 0s); a query whose
 * every key is masked is refused (AC_EDATA).  AC_EUSAGE on shapes. */
int ac_attn_patterns(ac_array *P, const ac_attn_layer *L, const ac_mat *X,
                     const unsigned char *keep, ac_err *err);

/* The first query of n tokens that sees no key under L's mask (causal,
 * window) and keep (as ac_attn_patterns), or n when every query sees one:
 * left padding under a causal mask leaves the first queries blind. */
size_t ac_attn_blind_query(const ac_attn_layer *L, const unsigned char *keep, size_t n);

/* Head i in Theorem 1's form (attncheck/theorem1.h): Xt (d' x n) = X^T,
 * and Wq, Wk (dk x d') such that the head's logits are
 *     factor * (Wk Xt)^T (Wq Xt) / sqrt(dk),
 * i.e. its pattern is the transpose of P[i] (before masking).  With
 * biases, d' = d + 1: Xt has a last row of ones and Wq = [Wq_i bq_i], Wk =
 * [Wk_g bk_g] (a zero column when one side has no bias); else d' = d.
 * Nothing is rounded: factor = scale sqrt(dk) is returned, not folded.
 * AC_EUSAGE "RoPE..." for a rotary layer (its logits depend on the
 * positions, not on one Wq, Wk) or a head out of range. */
int ac_attn_head_t1(ac_mat *Xt, ac_mat *Wq, ac_mat *Wk, double *factor, const ac_attn_layer *L,
                    size_t head, const ac_mat *X, ac_err *err);

/* ================================================================ models */

typedef enum {
    AC_MODEL_GPT2 = 0,       /* Hugging Face GPT-2 (Conv1D weights [in, out], fused c_attn) */
    AC_MODEL_NANOGPT,        /* nanoGPT (nn.Linear [out, in], fused c_attn) */
    AC_MODEL_BERT,           /* BERT, MiniLM and other BERT-layout models */
    AC_MODEL_ROBERTA,
    AC_MODEL_DISTILBERT,
    AC_MODEL_LLAMA,
    AC_MODEL_MISTRAL,
    AC_MODEL_QWEN2,
    AC_MODEL_VIT,            /* Hugging Face ViT (vit.encoder.layer.N...) */
    AC_MODEL_VIT_TIMM,       /* timm ViT (blocks.N.attn.qkv) */
    AC_MODEL_LAYER,          /* attncheck's generic single layer (ac_models(3)) */
    AC_MODEL_NFAMILIES
} ac_model_family;

/* The family's name ("gpt2", "vit-timm", "attncheck_layer", ...). */
const char *ac_model_family_name(ac_model_family f);

typedef struct {
    ac_rope_kind rope;       /* RoPE pairing: AC_ROPE_NONE (0) = the family's
                                (Hugging Face: AC_ROPE_HALF); else forced */
    int checksum;            /* SHA-256 of every file at open (1) or not (0) */
} ac_model_opts;

void ac_model_opts_default(ac_model_opts *o);

typedef struct ac_model_priv ac_model_priv;

/* A checkpoint directory: config.json and its safetensors file(s).  The
 * architecture is read from config.json; every tensor a layer needs is
 * checked (present, shape as config.json implies) at open, and nothing
 * else in a layer may be present.  Weights are read (converted) only when
 * a layer or a run needs them. */
typedef struct {
    ac_model_family family;
    char model_type[48];     /* config.json's model_type (or timm's architecture) */
    size_t layers, d, h, hkv, dk;
    size_t ffn;              /* feed-forward width */
    size_t vocab, max_pos, type_vocab;
    size_t image, patch, channels; /* ViT */
    ac_st st;
    ac_model_priv *priv;
} ac_model;

/* Open DIR (config.json + model.safetensors or its index).  Refused, with
 * AC_EDATA and a message naming the file and the key: an unknown
 * model_type, any option that changes the attention and is not implemented
 * (rope_scaling other than "default", relative position embeddings,
 * Qwen2's use_sliding_window, ...), a missing tensor, a shape config.json
 * contradicts, an unknown tensor inside a layer, a layer beyond the count.
 * AC_ENOINPUT if DIR or config.json cannot be opened.  On failure m is
 * zeroed. */
int ac_model_open(ac_model *m, const char *dir, const ac_model_opts *opts, ac_err *err);
void ac_model_close(ac_model *m);

/* One line: the family, sizes, files and their SHA-256 (if computed). */
char *ac_model_describe(char *buf, size_t size, const ac_model *m);

/* Layer l's attention (l < layers), weights converted from the files. */
int ac_model_layer(ac_attn_layer *L, const ac_model *m, size_t l, ac_err *err);

/* The input of a run: n tokens (ids in [0, vocab)), their token types
 * (BERT, RoBERTa; NULL: 0) and the attention mask keep (1 real, 0 padding;
 * NULL: all real).  ViT takes pixels instead: an image channels x image x
 * image (C order, already normalised as the model's processor does). */
typedef struct {
    size_t n;
    const int32_t *ids;
    const int32_t *type_ids;
    const unsigned char *keep;
    const double *pixels;
} ac_model_input;

/* R (n x d, allocated here) = the residual stream entering block l
 * (0 <= l <= layers; l = layers: the output of the last block, before any
 * final norm), computed in double: embeddings, positions (RoBERTa's from
 * the padding), token types, the embedding norm, every earlier block.  The
 * attention of each block uses the patterns of ac_attn_patterns.  For ViT
 * n = 1 + (image/patch)^2 tokens.  Not for AC_MODEL_LAYER (AC_EUSAGE).
 * AC_EDATA for an id or a type out of range, more tokens than positions. */
int ac_model_run(ac_mat *R, const ac_model *m, size_t l, const ac_model_input *in,
                 ac_err *err);

/* R, the residual stream entering block from (n x d, as ac_model_run gave
 * it for the same input), advanced in place through blocks from .. l - 1:
 * the same numbers as ac_model_run(R, m, l, in), bit for bit, without
 * running blocks 0 .. from - 1 again.  AC_EUSAGE when from > l or R is not
 * n x d; the errors of ac_model_run.  On failure R is freed. */
int ac_model_run_from(ac_mat *R, const ac_model *m, size_t from, size_t l,
                      const ac_model_input *in, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_MODELS_H */
