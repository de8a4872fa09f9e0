/* models_impl.h — internals of src/models shared between its files (not
 * installed).  The module reads pretrained checkpoints (attncheck/models.h).
 *
 * Files of src/models/ (this map; tests/docs.sh checks it against local.mk):
 *   models_impl.h  this header;
 *   sha256.c       SHA-256 (FIPS 180-4), the checksum of checkpoint files;
 *   st_convert.c   F64, F32, F16, BF16 elements to double, exactly, with a
 *                  flag for NaN and Inf;
 *   safetensors.c  the safetensors reader: one file, an index of shards or a
 *                  directory, every header validated as the reference
 *                  reader does; tensors converted on demand;
 *   hfconfig.c     config.json (Hugging Face, timm, nanoGPT as converted,
 *                  attncheck_layer) -> md_cfg, refusing by name every option
 *                  that changes the attention and is not implemented;
 *   families.c     the tensor names and layouts of each family, the checks of
 *                  ac_model_open, and ac_model_layer (the canonical layer);
 *   pattern.c      the layer's input (its norm), RoPE, masks, the per-head
 *                  patterns, Theorem 1's form, the descriptions;
 *   run.c          ac_model_run: embeddings and blocks up to a layer;
 *   circuit.c      certified singular values of a head's circuits: on the
 *                  rank-dk core, or the whole d x d product;
 *   inspect.c      every check on one layer, head by head (attncheck/inspect.h:
 *                  Theorem 1's threshold and distances, the self-check,
 *                  the circuits, kappa of the block, Theorem 2's hypotheses);
 *   test/          the unit tests, one Check program per file:
 *     test_models.c  the readers, the families and the model API on the
 *                    fixtures of tests/models/ (written by
 *                    tests/models_fixtures.py);
 *     test_st_convert.c the element conversions of st_convert.c against
 *                    ldexp formulas (every 16-bit pattern, F32's classes,
 *                    the NaN/Inf flag at every lane);
 *     test_circuit.c the circuits' core route against the full product and
 *                    against exact structure, over classes of factors.
 *
 * Dimension letters as in attncheck/models.h: n tokens, d width, h heads, hkv
 * key/value heads, dk head size, F feed-forward width.
 */
#ifndef AC_MODELS_IMPL_H
#define AC_MODELS_IMPL_H

#include <limits.h>
#include <stdint.h>

#include "attncheck/inspect.h"
#include "attncheck/models.h"
#include "io/jsonparse.h"

/* ---------------------------------------------------------------- sha256.c */
typedef struct {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t nbuf;
} md_sha256_ctx;
void md_sha256_init(md_sha256_ctx *s);
void md_sha256_update(md_sha256_ctx *s, const void *data, size_t n);
void md_sha256_final(md_sha256_ctx *s, unsigned char out[32]);
void md_sha256(unsigned char out[32], const void *data, size_t n);
/* out (2n + 1 chars) = lower-case hex of b[0..n-1]. */
void md_hex(char *out, const unsigned char *b, size_t n);

/* ---------------------------------------------------------------- st_convert.c */
/* out[0..n-1] = the n little-endian elements at p of type t (F64, F32, F16,
 * BF16), exactly.  Returns 1 if some element is NaN or +-Inf (out then holds
 * garbage there), 0 otherwise, -1 for any other type. */
int md_convert(double *out, const unsigned char *p, size_t n, ac_st_dtype t);
/* The index of the first NaN/Inf among the n elements (n if none); *kind =
 * 1 NaN, 2 +Inf, 3 -Inf. */
size_t md_first_nonfinite(const unsigned char *p, size_t n, ac_st_dtype t, int *kind);

/* ---------------------------------------------------------------- safetensors.c */
int md_dtype_readable(ac_st_dtype t);
/* The offset of the first byte that is not valid UTF-8 (len if none). */
size_t md_utf8_check(const unsigned char *s, size_t len);
/* A key that occurs twice in one object anywhere in v, or NULL. */
const char *md_json_duplicate(const ac_jv *v);
/* A JSON number written as a non-negative decimal integer that fits. */
int md_json_u64(const ac_jv *v, uint64_t *out);
/* "[2, 3]" of a shape, truncated to size. */
void md_fmt_shape(char *buf, size_t size, const size_t *shape, size_t ndim);
/* Parse and validate the header of buf[0..len-1] as file `file` of st
 * (st->files allocated; tensors appended).  The fuzz harness's entry. */
int md_st_parse(ac_st *st, size_t file, const unsigned char *buf, size_t len, const char *fname,
                ac_err *err);

/* ---------------------------------------------------------------- hfconfig.c */
typedef enum { MD_ACT_GELU = 0, MD_ACT_GELU_TANH, MD_ACT_RELU, MD_ACT_SILU } md_act;

/* The architecture, from config.json (and, for timm, the tensors). */
typedef struct {
    ac_model_family fam;
    char model_type[48];
    size_t L, d, h, hkv, dk, ffn, vocab, max_pos, type_vocab;
    size_t image, patch, channels, ntok;  /* ViT: ntok = 1 + (image/patch)^2 */
    ac_norm_kind norm;
    double eps;
    int post_ln;          /* BERT, RoBERTa, DistilBERT: x = LN(x + sublayer(x)) */
    int emb_norm;         /* LayerNorm of the embeddings (BERT family) */
    md_act act;
    int gated;            /* MLP down(act(gate x) * up x) (Llama family) */
    int qkv_bias, o_bias, mlp_bias, norm_bias;
    int causal;
    size_t window;        /* sliding window, 0: none */
    int scale_weights;    /* GPT-2 scale_attn_weights (else 1) */
    int scale_inv_layer;  /* GPT-2 scale_attn_by_inverse_layer_idx */
    int has_scale;        /* attncheck_layer: an explicit scale */
    double scale;
    ac_rope_kind rope;
    double rope_theta;
    long pad_id;          /* RoBERTa padding_idx (positions), -1: none */
    size_t layer_index;   /* attncheck_layer: the layer's index in its model */
    char notes[160];      /* options read that change no pattern */
} md_cfg;

/* Read config.json of DIR into c (model_type decides the family; for timm
 * the architecture name).  ro: the RoPE pairing forced by the options (0:
 * the family's).  AC_EDATA naming the file and the key. */
int md_config_read(md_cfg *c, const char *path, ac_rope_kind ro, ac_err *err);

/* ---------------------------------------------------------------- families.c */
/* Slots: the roles of tensors. */
enum {
    S_TOK, S_POS, S_TYPE, S_ELN_W, S_ELN_B, S_FLN_W, S_FLN_B, S_CLS, S_PATCH_W, S_PATCH_B,
    S_LN1_W, S_LN1_B, S_QKV_W, S_QKV_B, S_Q_W, S_Q_B, S_K_W, S_K_B, S_V_W, S_V_B, S_O_W, S_O_B,
    S_LN2_W, S_LN2_B, S_FC1_W, S_FC1_B, S_FC2_W, S_FC2_B, S_UP_W, S_UP_B, S_NSLOTS
};

struct ac_model_priv {
    md_cfg c;
    char config[PATH_MAX];
    /* names with the known prefixes removed, sorted, each with its tensor */
    size_t nnames;
    struct md_name {
        char *name;
        const ac_st_tensor *t;
    } *names;
    /* the tensor of each slot (layer slots: of layer l at [l * S_NSLOTS + s]) */
    const ac_st_tensor **slot;
    unsigned char *transposed; /* the slot's file stores the transpose (Conv1D) */
};

/* The tensor of slot s (of layer l for layer slots), NULL if absent. */
const ac_st_tensor *md_slot(const ac_model *m, size_t l, int s);
/* out (rows x cols, out x in for weights) = slot s of layer l, converted,
 * transposed back when the file stores [in, out]. */
int md_read_slot(double *out, const ac_model *m, size_t l, int s, ac_err *err);

/* ---------------------------------------------------------------- pattern.c */
/* The norm of rows: out (n x d) = norm(x) per row (ac_attn_input's
 * kernel), LayerNorm or RMSNorm (b may be NULL: none); out may be x.
 * AC_EINTERNAL only (memory). */
int md_norm_rows(double *out, const double *x, size_t n, size_t d, ac_norm_kind k,
                 const double *w, const double *b, double eps, ac_err *err);
/* The attention block's output: out (n x d) = sum_i (P_i v_i) Wo_i^T + bo,
 * with P from ac_attn_patterns on X. */
int md_attn_output(double *out, const ac_attn_layer *L, const ac_mat *X,
                   const unsigned char *keep, ac_err *err);

/* ---------------------------------------------------------------- circuit.c */
/* Certified singular values of A B (A d x dk, B dk x d), c zeroed on entry,
 * d values in c->lo, c->hi (the largest dk kept: c->nsv), the certified rank
 * range and c->route (doc/mathematics.md §6.9, "Circuits").  md_circuit:
 * the rank-dk core, and the full product as well when the core cannot
 * certify or is loose (then the intersection).  md_circuit_full: the d x d
 * product only.  md_circuit_core: the core only; *ok = 0 and c empty when it
 * cannot certify (dk >= d, an inexact power-of-two scaling, a failed
 * Cholesky factor or certificate, a defect e >= 1).  Status codes:
 * AC_EINTERNAL (memory, or disjoint enclosures: a bug), AC_EUSAGE (shapes). */
int md_circuit(ac_inspect_circuit *c, const ac_mat *A, const ac_mat *B, ac_err *err);
int md_circuit_full(ac_inspect_circuit *c, const ac_mat *A, const ac_mat *B, ac_err *err);
int md_circuit_core(ac_inspect_circuit *c, int *ok, const ac_mat *A, const ac_mat *B,
                    ac_err *err);
void md_circuit_free(ac_inspect_circuit *c);

#endif /* AC_MODELS_IMPL_H */
