/* attncheck/nn.h — a trainable attention stack in double precision: layers
 * as forward/backward pairs on flat arrays, and the model built from them.
 *
 * The code follows the layout of llm.c's train_gpt2.c (A. Karpathy): every
 * layer is a <layer>_forward / <layer>_backward pair, arguments ordered
 * outputs, inputs, sizes; the parameters, their gradients and the two AdamW
 * moments each live in one contiguous block carved into named tensors, so
 * checkpoint I/O, zeroing and the optimiser are single loops.
 *
 * Dimension letters (used in every shape below)
 * ---------------------------------------------
 *   B  sequences in a batch            T  tokens per sequence
 *   N  = B*T rows                      C  width (channels, d)
 *   V  vocabulary                      H  heads
 *   S  head size (C/H "standard", dp "fixed")
 *   D  = H*S attention width           F  feed-forward width
 *   K  outputs of the head (classes or regression dims)
 *   I  input dimension of continuous inputs
 * Activations are row-major (B, T, C): one row per token, as in llm.c and
 * PyTorch.  Paper 1 writes X as d x n, one *column* per token, with a
 * column softmax; the two are transposes of each other:
 *     rows = X^T,   att (row softmax) = P^T (column softmax),
 * i.e. att[t][j] = Softmax_j(q_t . k_j / sqrt(S)), query t, key j.
 * A linear layer stores its weight as (out, in) (PyTorch's nn.Linear) and
 * computes out = inp W^T + b.
 *
 * Numerics
 * --------
 * Everything is IEEE double, round to nearest.  Matrix products use BLAS
 * dgemm, called from OpenMP threads: the kernels expect a single-threaded
 * BLAS (ac_blas_set_threads(1)), and ac_nn_forward / ac_nn_backward switch
 * BLAS to one thread for their duration and restore it after.  The
 * exponential is ac_nn_exp (below), a vectorisable exp with relative error
 * below 2u (u = 2^-53), so softmax and GELU run at vector speed.  Kernels never
 * allocate and never use threads; the model (ac_nn_forward/backward)
 * parallelises with OpenMP over fixed chunks of whole sequences and over
 * fixed tiles of the weight gradients, so that every number it computes is
 * summed in an order that depends only on the sizes, never on the thread
 * count: the same seed gives bit-identical results with any --threads.
 *
 * The BLAS-based kernels (linear layer, attention) have naive references
 * (suffix _ref: plain loops in the order of the defining formula) for tests;
 * every backward is checked against finite differences of its forward.
 */
#ifndef ATTNCHECK_NN_H
#define ATTNCHECK_NN_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- kernels */

/* y[i] = exp(x[i]) for i < n, vectorised: Cody-Waite reduction
 * x = k ln2 + r, |r| <= ln2/2, Taylor polynomial of degree 13 (truncation
 * below 5e-18 relative), then scaling by 2^k built from the exponent bits.
 * Relative error below 2u (u = 2^-53; tested against MPFR's correctly
 * rounded exp) for -708.39 <= x <= 709.78 (normal results); below, the
 * result underflows gradually (subnormal, within one subnormal step plus 2u)
 * and is 0 under -745.14; above, +Inf; NaN gives NaN.  2^k is applied as
 * 2^floor(k/2) 2^(k - floor(k/2)), two exact scalings.  y may equal x. */
void ac_nn_exp(double *y, const double *x, size_t n);

/* Embedding.  out (B,T,C) = wte[inp[b,t]] + wpe[t]; inp (B,T) token ids in
 * [0, V) (not checked here: ac_nn_forward checks); wte (V,C); wpe (maxT,C)
 * or NULL for no positions. */
void ac_nn_encoder_forward(double *out, const int32_t *inp, const double *wte, const double *wpe,
                           size_t B, size_t T, size_t C);
/* dwte (V,C) += scatter of dout (B,T,C) by inp; dwpe (maxT,C) += sum over b
 * (dwpe may be NULL).  Rows are added in order b, t. */
void ac_nn_encoder_backward(double *dwte, double *dwpe, const double *dout, const int32_t *inp,
                            size_t B, size_t T, size_t C);

/* Linear layer.  out (N,OC) = inp (N,IC) w^T + bias, w (OC,IC), bias (OC)
 * or NULL; accumulate != 0 adds to out instead (a fused residual add).
 * One dgemm. */
void ac_nn_linear_forward(double *out, const double *inp, const double *w, const double *bias,
                          size_t N, size_t IC, size_t OC, int accumulate);
void ac_nn_linear_forward_ref(double *out, const double *inp, const double *w, const double *bias,
                              size_t N, size_t IC, size_t OC, int accumulate);
/* dinp (N,IC) = dout (N,OC) w (or += with accumulate).  One dgemm. */
void ac_nn_linear_backward_input(double *dinp, const double *dout, const double *w, size_t N,
                                 size_t IC, size_t OC, int accumulate);
void ac_nn_linear_backward_input_ref(double *dinp, const double *dout, const double *w, size_t N,
                                     size_t IC, size_t OC, int accumulate);
/* The weight gradient on one tile: dw[o0:o1, i0:i1] += dout[:, o0:o1]^T
 * inp[:, i0:i1] (sum over the N rows) and, if dbias != NULL,
 * dbias[o0:o1] += sum over rows of dout[:, o0:o1].  Tiles never overlap,
 * so a fixed tiling gives results independent of which thread runs which
 * tile.  One dgemm. */
void ac_nn_linear_backward_weight(double *dw, double *dbias, const double *dout, const double *inp,
                                  size_t N, size_t IC, size_t OC, size_t o0, size_t o1, size_t i0,
                                  size_t i1);
void ac_nn_linear_backward_weight_ref(double *dw, double *dbias, const double *dout,
                                      const double *inp, size_t N, size_t IC, size_t OC);

/* Per-head output projection of the bare attention layer (doc/mathematics.md §4.1):
 * out (N,C) = sum_h y_h Wo_h^T, y (N,D) with head h in columns h*S..,
 * Wo (H,C,S) (the stack Wo_1..Wo_H of the paper, Wo_h in R^{C x S}).
 * One dgemm per head. */
void ac_nn_headproj_forward(double *out, const double *y, const double *wo, size_t N, size_t C,
                            size_t H, size_t S);
/* dy (N,D) = per head dout Wo_h (=). */
void ac_nn_headproj_backward_input(double *dy, const double *dout, const double *wo, size_t N,
                                   size_t C, size_t H, size_t S);
/* dwo[h] (C,S) += dout^T y_h for the one head h. */
void ac_nn_headproj_backward_weight(double *dwo, const double *dout, const double *y, size_t N,
                                    size_t C, size_t H, size_t S, size_t h);

/* LayerNorm over the last dimension, eps = 1e-5 (PyTorch's default):
 * out (N,C) = (inp - mean) * rstd * w + b, rstd = 1/sqrt(var + eps), var the
 * biased variance (two-pass); mean, rstd (N) are kept for the backward. */
#define AC_NN_LN_EPS 1e-5
void ac_nn_layernorm_forward(double *out, double *mean, double *rstd, const double *inp,
                             const double *w, const double *b, size_t N, size_t C);
/* The same with another eps (BERT's 1e-12, ...); ac_nn_layernorm_forward is
 * this function with eps = AC_NN_LN_EPS. */
void ac_nn_layernorm_forward_eps(double *out, double *mean, double *rstd, const double *inp,
                                 const double *w, const double *b, size_t N, size_t C, double eps);
/* dinp (N,C) = dres + the input gradient:
 *   dinp = dres + rstd (g - mean(g) - norm mean(g norm)),  g = w dout,
 *   norm = (inp - mean) rstd;
 * dres (N,C), the gradient reaching inp by another path (a residual), may be
 * NULL (none) or equal to dinp. */
void ac_nn_layernorm_backward(double *dinp, const double *dres, const double *dout,
                              const double *inp, const double *w, const double *mean,
                              const double *rstd, size_t N, size_t C);
/* dw (C) += sum_n dout norm, db (C) += sum_n dout (rows in order). */
void ac_nn_layernorm_backward_params(double *dw, double *db, const double *dout,
                                     const double *inp, const double *mean, const double *rstd,
                                     size_t N, size_t C);

/* Attention scores.  qk rows have stride ld; head h's query is at column
 * h*S, its key at column D + h*S (D = H*S).  att (B,H,T,T):
 *     pre[b,h,t,j] = q_{b,t,h} . k_{b,j,h} / sqrt(S),
 *     att[b,h,t,j] = Softmax_j(pre[b,h,t,:]),
 * over j <= t when causal (entries j > t are set to 0), over all j
 * otherwise.  pre (B,H,T,T) receives the logits when not NULL. */
void ac_nn_scores_forward(double *att, double *pre, const double *qk, size_t ld, size_t B,
                          size_t T, size_t H, size_t S, int causal);
/* Softmax backward in place: datt (B,H,T,T), the gradient with respect to
 * att, becomes the gradient with respect to the logits pre,
 *     dpre[t,j] = att[t,j] (datt[t,j] - sum_i att[t,i] datt[t,i]). */
void ac_nn_softmax_backward(double *datt, const double *att, size_t B, size_t T, size_t H,
                            int causal);
/* From the logit gradient dpre (B,H,T,T): dqk's query and key columns
 * (layout of qk, row stride ldd) are set (=), other columns untouched:
 *     dq_t = sum_j dpre[t,j] k_j / sqrt(S),  dk_j = sum_t dpre[t,j] q_t / sqrt(S). */
void ac_nn_scores_backward(double *dqk, size_t ldd, const double *dpre, const double *qk,
                           size_t ld, size_t B, size_t T, size_t H, size_t S);

/* Multi-head attention.  qkv (B,T,3D): queries, keys, values of head h at
 * columns h*S, D + h*S, 2D + h*S; out (B,T,D) = per head att V_h; att as in
 * ac_nn_scores_forward.  Per (b,h): two products and a masked softmax;
 * for head sizes S up to 32 that are multiples of the tile width (8 with
 * AVX2 FMA, 16 with AVX-512) register-tiled kernels over the unmasked keys
 * only, otherwise two dgemms. */
void ac_nn_attention_forward(double *out, double *att, const double *qkv, size_t B, size_t T,
                             size_t H, size_t S, int causal);
void ac_nn_attention_forward_ref(double *out, double *att, const double *qkv, size_t B, size_t T,
                                 size_t H, size_t S, int causal);
/* dqkv (B,T,3D) = the gradient (=), given dout (B,T,D); scratch holds T*T
 * doubles.  Per (b,h): four products and the softmax backward (tiled
 * kernels for S <= 16 as above, otherwise four dgemms). */
void ac_nn_attention_backward(double *dqkv, double *scratch, const double *dout,
                              const double *qkv, const double *att, size_t B, size_t T, size_t H,
                              size_t S, int causal);
void ac_nn_attention_backward_ref(double *dqkv, const double *dout, const double *qkv,
                                  const double *att, size_t B, size_t T, size_t H, size_t S,
                                  int causal);

/* GELU, tanh form (GPT-2; PyTorch's gelu(approximate='tanh')):
 *   gelu(x) = x/2 (1 + tanh(z)) = x sigma(2z),  z = sqrt(2/pi) (x + 0.044715 x^3),
 * computed in the sigmoid form (one exp, no cancellation). */
void ac_nn_gelu_forward(double *out, const double *inp, size_t n);
/* dinp = dout gelu'(inp), given out = gelu(inp) from the forward (dinp may
 * equal dout): gelu' = s + x s (1 - s) 2 z'(x) with s = out/x. */
void ac_nn_gelu_backward(double *dinp, const double *inp, const double *out, const double *dout,
                         size_t n);

/* Residual start: out (N,C) = inp + bias (bias may be NULL); then
 * ac_nn_linear_forward(out, ..., NULL, ..., accumulate = 1) completes
 * out = inp + (y W^T + bias) in two passes instead of three. */
void ac_nn_residual_forward(double *out, const double *inp, const double *bias, size_t N,
                            size_t C);

/* Softmax cross-entropy per row: probs (N,V) = Softmax(logits),
 * losses (N) = logsumexp(logits) - logits[target] (probs may equal logits).
 * Returns the number of rows whose argmax (first maximum) is the target. */
size_t ac_nn_xent_forward(double *losses, double *probs, const double *logits,
                          const int32_t *targets, size_t N, size_t V);
/* dlogits (N,V) = (probs - onehot(target)) * scale (may equal probs). */
void ac_nn_xent_backward(double *dlogits, const double *probs, const int32_t *targets,
                         double scale, size_t N, size_t V);

/* ------------------------------------------------------------------ model */

typedef enum {
    AC_NN_ARCH_TRANSFORMER = 0, /* embedding, L blocks, final LayerNorm, head */
    AC_NN_ARCH_ATTENTION = 1,   /* one bare multi-head attention layer f(X) */
    AC_NN_ARCH_SCORES = 2       /* attention scores only: Softmax(QK^T/sqrt(S)) */
} ac_nn_arch;

typedef enum {
    AC_NN_ATTN_STANDARD = 0, /* H heads of size S = C/H */
    AC_NN_ATTN_FIXED = 1     /* H heads of size S = dp, output projection C x H*dp */
} ac_nn_attn_kind;

typedef enum { AC_NN_LN_PRE = 0, AC_NN_LN_POST = 1 } ac_nn_ln_place;
typedef enum { AC_NN_INPUT_TOKENS = 0, AC_NN_INPUT_VECTORS = 1 } ac_nn_input;
typedef enum {
    AC_NN_HEAD_LM = 0,       /* next-token cross-entropy on every row */
    AC_NN_HEAD_CLASSIFY = 1, /* cross-entropy on one pooled vector per sequence */
    AC_NN_HEAD_REGRESS = 2,  /* mean squared error on every row */
    AC_NN_HEAD_SCORES = 3    /* cross-entropy of target attention rows (ARCH_SCORES) */
} ac_nn_head;
typedef enum { AC_NN_POOL_FIRST = 0, AC_NN_POOL_LAST = 1, AC_NN_POOL_MEAN = 2 } ac_nn_pool;

/* The names of the values above, in enum order, NULL-terminated: the one
 * spelling of each (a checkpoint's config.json, the options of attncheck
 * train, messages).  ac_nn_arch_names: "transformer", "attention", "scores";
 * ac_nn_input_names: "tokens", "vectors"; ac_nn_kind_names: "standard",
 * "fixed"; ac_nn_ln_names: "pre", "post"; ac_nn_head_names: "lm",
 * "classify", "regress", "scores"; ac_nn_pool_names: "first", "last",
 * "mean". */
extern const char *const ac_nn_arch_names[];
extern const char *const ac_nn_input_names[];
extern const char *const ac_nn_kind_names[];
extern const char *const ac_nn_ln_names[];
extern const char *const ac_nn_head_names[];
extern const char *const ac_nn_pool_names[];

/* The model.  Which fields matter:
 *   ARCH_TRANSFORMER: everything.  Blocks (pre-LN, GPT-2):
 *        x = x + Wo Attn(LN1(x));  x = x + FFN(LN2(x));
 *     post-LN (paper 1, eq. 2):
 *        x = LN1(x + Wo Attn(x));  x = LN2(x + FFN(x));
 *     FFN(x) = W2 gelu(W1 x + b1) + b2; then a final LayerNorm and the head.
 *     Inputs: tokens (embedding V x C) or vectors (linear I -> C), plus
 *     learned positions (maxT x C) when positions != 0.
 *   ARCH_ATTENTION: f(X) = sum_h Wo_h Wv_h X Softmax(...) (doc/mathematics.md §4.1), no
 *     biases, no residual, no LayerNorm; input vectors of size C = I,
 *     output C, head REGRESS.
 *   ARCH_SCORES: Softmax((Wk X)^T (Wq X)/sqrt(S)) only (Theorem 1); input
 *     vectors of size C, head SCORES.
 */
typedef struct {
    ac_nn_arch arch;
    ac_nn_input input;
    size_t vocab;           /* V (tokens) */
    size_t in_dim;          /* I (vectors, transformer only) */
    int positions;          /* learned positions (transformer) */
    size_t max_seq;         /* maxT: longest sequence */
    size_t width;           /* C */
    size_t layers;          /* L (transformer) */
    size_t heads;           /* H */
    ac_nn_attn_kind kind;
    size_t head_dim;        /* dp for FIXED; ignored (C/H) for STANDARD */
    size_t ffn;             /* F (transformer) */
    ac_nn_ln_place ln;
    int causal;             /* causal mask in every attention layer */
    ac_nn_head head;
    size_t out_dim;         /* K: classes (CLASSIFY), outputs (REGRESS) */
    ac_nn_pool pool;        /* CLASSIFY */
} ac_nn_config;

/* A parameter tensor: a named slice [offset, offset+size) of the blocks. */
#define AC_NN_NAME_MAX 48
typedef struct {
    char name[AC_NN_NAME_MAX]; /* e.g. "layer0.attn.qkv.weight"; file name + ".npy" */
    size_t ndim;
    size_t shape[3];
    size_t size, offset;
    int decay;                 /* weight decay applies (matrices, not biases or norms) */
    int init;                  /* AC_NN_INIT_*: how ac_nn_model_init_weights fills it */
    size_t fan_in;             /* inputs summed per output (for std <= 0) */
    double init_gain;          /* multiplies the standard deviation */
} ac_nn_tensor;

enum { AC_NN_INIT_ZERO = 0, AC_NN_INIT_ONE = 1, AC_NN_INIT_NORMAL = 2 };

/* One batch.  Inputs: tokens (B,T) or x (B,T,I); targets by head:
 * LM tokens (B,T), CLASSIFY labels (B), REGRESS y (B,T,K),
 * SCORES y (B,H,T,T) (rows are distributions).
 * len (B entries, 1 <= len[b] <= T) or NULL: sequence b has len[b] real
 * tokens followed by padding.  ARCH_TRANSFORMER masks the padding: no
 * attention row attends to a position t >= len[b] (its weight is 0, the
 * softmax runs over the real keys; with causal, over j <= min(t, len-1)),
 * and CLASSIFY pools row 0 (FIRST), row len-1 (LAST) or the mean of the
 * len real rows (MEAN).  Padded rows are still computed but reach neither
 * the loss nor any real row.  NULL: every position is real.
 * keep (T x T, row t = query t, entry j = key j) or NULL: ARCH_SCORES only
 * (AC_EUSAGE otherwise), the same mask for every sequence and head: the
 * softmax of row t runs over the keys j with keep[t * T + j] != 0 (and
 * j <= t when causal), the others get weight exactly 0, and the loss of
 * the row sums over its visible keys only, so that a masked key reaches
 * neither the loss nor the gradient (doc/mathematics.md §3.8, the masked
 * head; every row must see a key: AC_EDATA). */
typedef struct {
    size_t B, T;
    const int32_t *tokens;
    const double *x;
    const int32_t *targets;
    const double *y;
    const size_t *len;
    const unsigned char *keep;
} ac_nn_batch;

typedef struct ac_nn_work ac_nn_work; /* private: activations, plans */

typedef struct {
    ac_nn_config cfg;
    size_t S, D;              /* head size, H*S */
    size_t ntensors;
    ac_nn_tensor *tensors;
    size_t nparams;
    double *params, *grads, *m, *v; /* nparams each (m, v: AdamW moments) */
    size_t B, T;              /* largest batch the activations hold */
    ac_nn_work *w;
} ac_nn_model;

/* Check a configuration: AC_EUSAGE with a message naming the offending
 * option (e.g. "--heads 3 does not divide --width 64"). */
int ac_nn_config_check(const ac_nn_config *c, ac_err *err);

/* Allocate a model for batches of up to B sequences of up to T tokens
 * (T <= cfg.max_seq): the tensor table, the four parameter blocks (zeroed)
 * and the activations.  m need not be initialised; on failure nothing is
 * left allocated.  AC_EUSAGE (bad config, sizes overflow), AC_EINTERNAL
 * (out of memory). */
int ac_nn_model_init(ac_nn_model *m, const ac_nn_config *cfg, size_t B, size_t T, ac_err *err);
void ac_nn_model_free(ac_nn_model *m);

/* Initial weights, one random stream per tensor, keyed by (seed, tensor
 * index): matrices and embeddings N(0, (gain std)^2) (std <= 0 means
 * 1/sqrt(fan-in)), gain = 1/sqrt(2L) for the output projections of the
 * blocks (GPT-2) and 1 otherwise; biases 0, LayerNorm weights 1.  Zeroes
 * the gradients and the AdamW moments. */
void ac_nn_model_init_weights(ac_nn_model *m, uint64_t seed, double std);

/* The tensor called name, or NULL. */
const ac_nn_tensor *ac_nn_tensor_find(const ac_nn_model *m, const char *name);

/* Statistics of the last forward pass. */
typedef struct {
    double loss;      /* mean loss */
    size_t count;     /* rows (or sequences) the loss averages over */
    size_t correct;   /* LM / CLASSIFY: argmax == target */
    double maxdev;    /* SCORES: max |att - y|; REGRESS: max |out - y| */
} ac_nn_stats;

/* Forward pass with loss.  b->B <= m->B, b->T <= m->T (T == m->T for
 * ARCH_TRANSFORMER with LM/REGRESS is not required).  Checks token ids and
 * labels: AC_EDATA on an id out of range.  Threads: OpenMP. */
int ac_nn_forward(ac_nn_model *m, const ac_nn_batch *b, ac_nn_stats *st, ac_err *err);

/* Model outputs after ac_nn_forward, (rows, cols) in *rows, *cols:
 * probabilities (LM (N,V), CLASSIFY (B,K)), predictions (REGRESS (N,K)) or
 * attention (SCORES (B*H*T, T)). */
const double *ac_nn_output(const ac_nn_model *m, size_t *rows, size_t *cols);

/* Set the gradient block to 0. */
void ac_nn_zero_grad(ac_nn_model *m);
/* Backward pass of the last ac_nn_forward: grads += d loss / d params. */
void ac_nn_backward(ac_nn_model *m);

/* Euclidean norm of the gradient block (summed in a fixed order). */
double ac_nn_grad_norm(const ac_nn_model *m);

/* AdamW (Loshchilov & Hutter 2019, PyTorch's torch.optim.AdamW):
 *   p -= lr wd p  (tensors with decay only);
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   p -= lr (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps),
 * t = 1, 2, ... the step number; gscale multiplies every gradient first
 * (gradient clipping). */
typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
} ac_nn_adamw;
void ac_nn_adamw_step(ac_nn_model *m, const ac_nn_adamw *o, long t, double gscale);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_NN_H */
