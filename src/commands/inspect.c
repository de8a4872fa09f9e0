/* inspect.c — the command inspect (attncheck/commands.h, attncheck/inspect.h):
 * every check on the layers and heads of a pretrained model.  The option
 * table, the run (the model, its input, each layer by
 * ac_inspect_layer_run), the JSON result and its arrays. */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/inspect.h"
#include "attncheck/interval.h"
#include "commands/cmd_impl.h"
#include "attncheck/shard.h"
#include "commands/inspect_cmd.h"
#include "core/fnv.h"

#define F(f) AC_OPT_FIELD(ac_inspect_request, f)
#define S(f) AC_OPT_SET(ac_inspect_request, f)
#define A(f) AC_OPT_ARRAY_AT(ac_inspect_request, f)
#define NS AC_OPT_NOSET

static const char *const rope_names[] = {"half", "interleaved", NULL};

const ac_opt ac_inspect_cmd_opts[] = {
    {.name = "model", .kind = AC_OPT_STRING, F(model), S(have_model), .arg = "DIR",
     .group = "Model and input:",
     .help = "the checkpoint: config.json and model.safetensors (or its index of shards) "
             "(ac_models(3))"},
    {.name = "layer", .kind = AC_OPT_SIZE, F(layer), S(have_layer), .min = 0, .max = 1e6,
     .arg = "L", .help = "inspect layer L only (from 0; default every layer; required with "
                         "--hidden or --normed on a model of several layers)"},
    {.name = "head", .kind = AC_OPT_SIZE, F(head), S(have_head), .min = 0, .max = 1e6,
     .arg = "H", .help = "inspect head H only (from 0; default every head)"},
    {.name = "tokens", .kind = AC_OPT_STRING, F(tokens), S(have_tokens), .arg = "FILE",
     .flags = AC_OPTF_ARRAY, A(tokens_mem),
     .help = "token ids (.npy vector, float64 or float32, of whole numbers in [0, vocab)): the "
             "model runs from its "
             "embeddings up to each layer (GPT-2, nanoGPT, the BERT family, Llama, Mistral, "
             "Qwen2)"},
    {.name = "hidden", .kind = AC_OPT_STRING, F(hidden), S(have_hidden), .arg = "FILE",
     .flags = AC_OPTF_ARRAY, A(hidden_mem),
     .help = "the residual stream entering the layer (.npy, n x d, one row per token); the "
             "layer's norm is applied"},
    {.name = "normed", .kind = AC_OPT_STRING, F(normed), S(have_normed), .arg = "FILE",
     .flags = AC_OPTF_ARRAY, A(normed_mem),
     .help = "the exact input of the q/k/v projections (.npy, n x d)"},
    {.name = "attention-mask", .kind = AC_OPT_STRING, F(attention_mask),
     S(have_attention_mask), .arg = "FILE", .flags = AC_OPTF_ARRAY, A(attention_mask_mem),
     .help = "padding, as Hugging Face's attention_mask: a .npy vector (float64 or float32) of "
             "one entry per token, 1 a real token and 0 padding, hidden as a key from every "
             "query (in every layer the model runs with --tokens, and in the patterns inspected); "
             "padded heads are decided by the masked criterion"},
    {.name = "rope", .kind = AC_OPT_CHOICE, F(rope), S(have_rope), .choices = rope_names,
     .arg = "PAIRING",
     .help = "the RoPE pairing of a rotary model whose config.json does not say it: half "
             "(Hugging Face's rotate_half: dimension i with i + dk/2) or interleaved (Meta's "
             "original layout: 2i with 2i + 1); refused on a model without rotary embeddings"},
    {.name = "tol", .kind = AC_OPT_DOUBLE, F(tol), S(have_tol), .min = 0x1p-60, .max = 1,
     .arg = "T", .def = "0x1p-26", .def_show = "2^-26 = 1.49e-08", .group = "Checks:",
     .help = "tolerance of C(tol) (some head of size dk has max|Softmax - P| <= T), of the "
             "threshold and of the self-check"},
    {.name = "dk-prime", .kind = AC_OPT_SIZES, F(dk_prime), S(have_dk_prime), .min = 1,
     .max = 1e6, .arg = "LIST",
     .help = "head sizes whose certified distance to each pattern is reported (at most 8; "
             "default dk/2,dk/4)"},
    {.name = "max-prec", .kind = AC_OPT_LONG, F(max_prec), .set_offset = NS, .min = 0,
     .max = 1 << 20, .arg = "BITS", .def = "512",
     .help = "highest precision of the ball stages (0 = double precision stage only)"},
    {.name = "optimize", .kind = AC_OPT_LONG, F(optimize), .set_offset = NS, .min = 0,
     .max = 1000000, .arg = "ITERS", .def = "0",
     .help = "BFGS iterations refining the compressed heads of --dk-prime from the truncated "
             "head (0 = off; scaled down to a work budget as rep-theorem's): a tighter upper "
             "end of the distances, at a cost (200 on GPT-2 small's heads: about 8 times the "
             "distances' time)"},
    {.name = "weights", .kind = AC_OPT_FLAG, F(weights), .set_offset = NS,
     .help = "keep the compressed heads found at each --dk-prime size (written by --out-dir "
             "as wq_dkK.npy, wk_dkK.npy, [layers, heads, K, d'])"},
    {.name = "threads", .kind = AC_OPT_LONG, F(threads), S(have_threads), .min = 0,
     .max = 1024, .arg = "N",
     .help = "threads over the heads (0: all cores); results are identical for any N"},
    {.name = "json", .kind = AC_OPT_FLAG, F(json), .set_offset = NS, .flags = AC_OPTF_PROGRAM,
     .group = "Output:", .help = "print one JSON object (schema/inspect.schema.json)"},
    {.name = "csv", .kind = AC_OPT_STRING, F(csv), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM, .help = "write one row per head as CSV"},
    {.name = "plot", .kind = AC_OPT_STRING, F(plot), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM, .check = ac_cmd_check_plot,
     .help = "a layer x head map of the thresholds at tol, beside kappa per layer with its "
             "Gaussian prediction (.svg, .png or .pdf) with gnuplot"},
    {.name = "out-dir", .kind = AC_OPT_STRING, F(out_dir), .set_offset = NS, .arg = "DIR",
     .flags = AC_OPTF_PROGRAM,
     .help = "write patterns.npy [layers, heads, n, n] (query rows summing to 1), normed.npy "
             "[layers, n, d], hidden.npy (when known), the compressed weights (--weights) and "
             "certificate.json"},
    {.name = "shard", .kind = AC_OPT_SHARD, F(shard), S(have_shard), .max = AC_COND_MAX_SHARDS,
     .arg = "I/K", .group = "Shards (the (layer, head) pairs split across processes or machines):",
     .help = "compute only shard I of K of the (layer, head) pairs (layer by layer, head by head "
             "within a layer)"},
    {.name = "shard-out", .kind = AC_OPT_STRING, F(shard_out), .set_offset = NS, .arg = "FILE",
     .help = "write the shard's heads to FILE (with --shard); then `attncheck merge FILE...` "
             "gives the whole result (kappa and Theorem 2's hypotheses are computed by the "
             "merge)"},
    {0},
};

/* The options a shard file records: those of the run (not --shard,
 * --shard-out, --threads, nor the program's). */
int ac_inspect_cmd_run_option(const ac_opt *o)
{
    return !(o->flags & AC_OPTF_PROGRAM) && strcmp(o->name, "shard") != 0 &&
           strcmp(o->name, "shard-out") != 0 && strcmp(o->name, "threads") != 0;
}

static const char in_description[] =
    "Every check of attncheck on the layers and heads of a pretrained model\n"
    "(doc/mathematics.md §6.9).  Per head: its pattern exactly as the model\n"
    "computes it; Theorem 1's threshold at tol (the smallest head size whose\n"
    "C(tol) is PROVED with the next smaller REFUTED, else the certified range);\n"
    "the certified distance of the best head of each smaller size --dk-prime\n"
    "(what compressing the head costs); the self-check (the head's own weights\n"
    "certified to reproduce its pattern); the singular values of the QK and OV\n"
    "circuits with certified ranks.  Heads with q/k biases are decided as heads\n"
    "on [X; 1'], masked heads by the masked criterion (doc/mathematics.md §3.8);\n"
    "rotary (RoPE) heads are not Theorem 1 heads and are not decided.  Per\n"
    "layer: kappa of the block [A_1 ... A_h] (Theorem 3.2 of paper 2) certified,\n"
    "beside the Gaussian prediction, and Theorem 2's hypotheses on the input.";

static const char in_epilogue[] =
    "Verdict: the self-check over every head inspected (PROVED: every head's\n"
    "weights are certified to reproduce its pattern within --tol; REFUTED: one\n"
    "is certified not to, a bug in the reading; UNDECIDED otherwise).\n"
    "Exit status: 0 proved, 1 refuted, 2 undecided, 64 usage error, 65 bad input\n"
    "data, 66 cannot open input, 70 internal error, 73 cannot create output.";

static int in_check(void *qv, ac_err *err)
{
    const ac_inspect_request *q = qv;
    if (!q->have_model)
        return ac_err_set(err, AC_EUSAGE, "--model DIR is required");
    int ninputs = q->have_tokens + q->have_hidden + q->have_normed;
    if (ninputs != 1)
        return ac_err_set(err, AC_EUSAGE,
                          "give exactly one input: --tokens, --hidden or --normed");
    if (q->have_dk_prime && q->dk_prime.n > AC_INSPECT_MAX_DKP)
        return ac_err_set(err, AC_EUSAGE, "--dk-prime: at most %d sizes", AC_INSPECT_MAX_DKP);
    if (q->have_shard != (q->shard_out != NULL))
        return ac_err_set(err, AC_EUSAGE, "--shard I/K and --shard-out FILE go together");
    if (q->have_shard && (q->csv || q->plot))
        return ac_err_set(err, AC_EUSAGE, "--%s needs the whole run: give it to `attncheck "
                          "merge`", q->csv ? "csv" : "plot");
    if (q->have_shard && (q->out_dir || q->weights))
        return ac_err_set(err, AC_EUSAGE, "--%s is not taken with --shard (the arrays come "
                          "from a whole run)", q->out_dir ? "out-dir" : "weights");
    return AC_OK;
}

/* The token ids of the input: whole numbers in [0, 2^31). */
static int read_tokens(int32_t **ids, size_t *n, const ac_inspect_request *q, ac_err *err)
{
    double *v = NULL;
    const char *name = ac_cmd_input_name(q->tokens, &q->tokens_mem, "tokens");
    int st = ac_cmd_input_vec(&v, n, q->tokens, &q->tokens_mem, "tokens", err);
    if (st)
        return st;
    if (*n == 0) {
        free(v);
        return ac_err_set(err, AC_EDATA, "%s: no tokens", name);
    }
    *ids = malloc(*n * sizeof **ids);
    if (!*ids) {
        free(v);
        return ac_err_set(err, AC_EINTERNAL, "out of memory (%zu tokens)", *n);
    }
    for (size_t i = 0; i < *n; i++) {
        if (!(v[i] >= 0 && v[i] < 2147483648.0 && v[i] == floor(v[i]))) {
            st = ac_err_set(err, AC_EDATA, "%s: entry %zu (%.17g) is not a token id (a whole "
                            "number >= 0)", name, i, v[i]);
            free(v);
            free(*ids);
            *ids = NULL;
            return st;
        }
        (*ids)[i] = (int32_t)v[i];
    }
    free(v);
    return AC_OK;
}

static int input_width(const ac_mat *R, const char *name, size_t n_expect, size_t d, ac_err *err)
{
    if (R->cols != d)
        return ac_err_set(err, AC_EDATA, "%s: %zu x %zu; the model's width is d = %zu (n x d, "
                          "one row per token)", name, R->rows, R->cols, d);
    if (R->rows == 0 || (n_expect && R->rows != n_expect))
        return ac_err_set(err, AC_EDATA, "%s: %zu tokens", name, R->rows);
    for (size_t k = 0; k < R->rows * R->cols; k++)
        if (!isfinite(R->data[k]))
            return ac_err_set(err, AC_EDATA, "%s: entry (%zu, %zu) is %s", name, k / R->cols,
                              k % R->cols, isnan(R->data[k]) ? "NaN" : "infinite");
    return AC_OK;
}

/* --attention-mask: n entries, each exactly 0 or 1, some 1. */
static int read_keep(unsigned char **keep, size_t n, const ac_inspect_request *q, ac_err *err)
{
    double *v = NULL;
    size_t m = 0;
    const char *name = ac_cmd_input_name(q->attention_mask, &q->attention_mask_mem,
                                         "attention_mask");
    int st = ac_cmd_input_vec(&v, &m, q->attention_mask, &q->attention_mask_mem,
                              "attention_mask", err);
    if (st)
        return st;
    if (m != n)
        st = ac_err_set(err, AC_EDATA, "%s: %zu entries; the input has %zu tokens (one entry "
                        "per token)", name, m, n);
    for (size_t i = 0; !st && i < n; i++)
        if (!(v[i] == 0 || v[i] == 1))
            st = ac_err_set(err, AC_EDATA, "%s: entry %zu (%.17g) is not 0 or 1 (1 a real "
                            "token, 0 padding)", name, i, v[i]);
    if (!st && !(*keep = malloc(n)))
        st = ac_err_set(err, AC_EINTERNAL, "out of memory (%zu tokens)", n);
    size_t real = 0;
    for (size_t i = 0; !st && i < n; i++)
        real += (*keep)[i] = v[i] == 1;
    if (!st && real == 0)
        st = ac_err_set(err, AC_EDATA, "%s: every token is padding (no real token)", name);
    free(v);
    if (st) {
        free(*keep);
        *keep = NULL;
    }
    return st;
}

/* The checksum of the input as read (token ids or the n x d matrix, and the
 * attention mask when given), with its shape: what a shard and its merge
 * must agree on. */
static uint64_t input_sum(const int32_t *ids, size_t nt, const ac_mat *R,
                          const unsigned char *keep)
{
    double shape[2] = {(double)(ids ? nt : R->rows), (double)(ids ? 0 : R->cols)};
    size_t n = ids ? nt : R->rows;
    uint64_t h = fnv_doubles(FNV_INIT, shape, 2);
    for (size_t i = 0; ids && i < nt; i++) {
        double x = ids[i];
        h = fnv_doubles(h, &x, 1);
    }
    if (!ids)
        h = fnv_doubles(h, R->data, R->rows * R->cols);
    for (size_t i = 0; keep && i < n; i++) {
        double x = keep[i] ? 1.0 : -1.0; /* apart from the entries before it */
        h = fnv_doubles(h, &x, 1);
    }
    return h;
}

/* The merge: the shard set complete and of this run (the same words, model
 * files and input; every I of 1..K once), and the shard holding each pair. */
static int shards_check(const ac_inspect_shard *sh, const char *const *names, size_t nsh,
                        const ac_model *m, uint64_t input, size_t P, const ac_inspect_shard **of,
                        ac_err *err)
{
    size_t k = sh[0].k;
    char hex[65];
    for (size_t a = 0; a < nsh; a++) {
        const ac_inspect_shard *s = &sh[a];
        int same = strcmp(s->attncheck, sh[0].attncheck) == 0 && s->nwords == sh[0].nwords &&
                   s->k == k && s->total == sh[0].total;
        for (size_t w = 0; same && w < s->nwords; w++)
            same = strcmp(s->words[w], sh[0].words[w]) == 0;
        if (!same)
            return ac_err_set(err, AC_EDATA, "%s: a shard of another run than %s (other options, "
                              "shard count or attncheck version)", names[a], names[0]);
        if (s->total != P)
            return ac_err_set(err, AC_EDATA, "%s: inconsistent inspect shard file: %zu pairs; "
                              "its options give %zu on this model", names[a], s->total, P);
        if (s->nfiles != m->st.nfiles)
            return ac_err_set(err, AC_EDATA, "%s: made on another model (%zu files, here %zu)",
                              names[a], s->nfiles, m->st.nfiles);
        for (size_t f = 0; f < s->nfiles; f++) {
            for (int b = 0; b < 32; b++)
                snprintf(hex + 2 * b, 3, "%02x", m->st.files[f].sha256[b]);
            if (strcmp(hex, s->sha256[f]) != 0)
                return ac_err_set(err, AC_EDATA, "%s: made on another model: %s has SHA-256 "
                                  "%.16s..., the shard's %.16s...", names[a],
                                  m->st.files[f].path, hex, s->sha256[f]);
        }
        if (s->input != input)
            return ac_err_set(err, AC_EDATA, "%s: made on another input (its checksum "
                              "%016" PRIx64 ", here %016" PRIx64 ")", names[a], s->input, input);
        if (of[s->i - 1])
            for (size_t b = 0; b < a; b++)
                if (&sh[b] == of[s->i - 1])
                    return ac_err_set(err, AC_EDATA, "%s: shard %zu/%zu given twice (also %s)",
                                      names[a], s->i, k, names[b]);
        of[s->i - 1] = s;
    }
    for (size_t i = 0; i < k; i++)
        if (!of[i])
            return ac_err_set(err, AC_EDATA, "%s: shard %zu/%zu of this run is missing",
                              names[0], i + 1, k);
    return AC_OK;
}

/* The merge of layer ly (its patterns, kappa and hypotheses computed):
 * every head's record from its shard, checked. */
static int merge_heads(ac_inspect_layer *ly, const ac_attn_layer *L, size_t li, size_t nh,
                       const size_t *hs, const ac_inspect_shard *const *of,
                       const ac_inspect_shard *sh, const char *const *names,
                       const unsigned char *keep, double tol, ac_err *err)
{
    size_t n = ly->n, k = of[0]->k;
    free(ly->heads);
    if (!(ly->heads = calloc(nh, sizeof *ly->heads)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory (%zu heads)", nh);
    for (size_t q = 0; q < nh; q++) {
        size_t p = li * nh + q, lo, hi, i = 0;
        for (; i < k; i++) {
            ac_cond_shard_range(of[0]->total, i + 1, k, &lo, &hi);
            if (p >= lo && p < hi)
                break;
        }
        const ac_inspect_shard *s = of[i];
        const ac_inspect_head *r = &s->heads[p - s->lo];
        int st = ac_inspect_shard_check_head(r, s->pattern[p - s->lo], L->layer, hs[q], L,
                                             ly->patterns.data + hs[q] * n * n, keep, n, tol,
                                             names[s - sh], err);
        if (st)
            return st;
        ac_inspect_head *hd = &ly->heads[q];
        *hd = *r;
        hd->qk.lo = hd->qk.hi = hd->ov.lo = hd->ov.hi = NULL;
        ly->nheads = q + 1;
        size_t m = r->qk.nsv ? r->qk.nsv : 1;
        if (!(hd->qk.lo = malloc(m * sizeof(double))) || !(hd->qk.hi = malloc(m * sizeof(double))) ||
            !(hd->ov.lo = malloc(m * sizeof(double))) || !(hd->ov.hi = malloc(m * sizeof(double))))
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        memcpy(hd->qk.lo, r->qk.lo, r->qk.nsv * sizeof(double));
        memcpy(hd->qk.hi, r->qk.hi, r->qk.nsv * sizeof(double));
        memcpy(hd->ov.lo, r->ov.lo, r->ov.nsv * sizeof(double));
        memcpy(hd->ov.hi, r->ov.hi, r->ov.nsv * sizeof(double));
        ly->t_threshold += hd->thr.seconds;
        ly->t_self += hd->self.seconds;
        ly->t_dist += hd->t_dist;
        ly->t_circuits += hd->t_circuits;
    }
    return AC_OK;
}

int ac_inspect_cmd_run(ac_inspect_result *res, const ac_inspect_request *q,
                       const ac_inspect_shard *sh, const char *const *names, size_t nsh,
                       ac_err *err)
{
    ac_attn_layer L = {0};
    ac_mat R = {0}, X = {0};
    int32_t *ids = NULL;
    size_t nt = 0, *hs = NULL;
    const ac_inspect_shard **of = NULL;
    int st;
    double t0 = ac_seconds();
    res->verdict = AC_UNDECIDED;
    ac_cmd_apply_threads(q->have_threads ? q->threads : 0);
    ac_model_opts mo;
    ac_model_opts_default(&mo);
    mo.checksum = 1;
    if (q->have_rope)
        mo.rope = q->rope == 0 ? AC_ROPE_HALF : AC_ROPE_INTERLEAVED;
    if ((st = ac_model_open(&res->m, q->model, &mo, err)))
        goto out;
    ac_model_describe(res->model_desc, sizeof res->model_desc, &res->m);
    const ac_model *m = &res->m;
    if (q->have_layer && q->layer >= m->layers) {
        st = ac_err_set(err, AC_EUSAGE, "--layer %zu: %s has %zu layer%s (0 .. %zu)", q->layer,
                        q->model, m->layers, m->layers == 1 ? "" : "s", m->layers - 1);
        goto out;
    }
    if (q->have_head && q->head >= m->h) {
        st = ac_err_set(err, AC_EUSAGE, "--head %zu: %s has %zu heads per layer (0 .. %zu)",
                        q->head, q->model, m->h, m->h - 1);
        goto out;
    }
    if (q->have_dk_prime)
        for (size_t j = 0; j < q->dk_prime.n; j++)
            if (q->dk_prime.v[j] > m->dk) {
                st = ac_err_set(err, AC_EUSAGE, "--dk-prime %zu: larger than the heads' "
                                "size dk = %zu", q->dk_prime.v[j], m->dk);
                goto out;
            }
    if (!q->have_tokens && !q->have_layer && m->layers > 1) {
        st = ac_err_set(err, AC_EUSAGE, "--%s gives the input of one layer: name it with "
                        "--layer (%s has %zu layers)", q->have_hidden ? "hidden" : "normed",
                        q->model, m->layers);
        goto out;
    }
    if (q->have_attention_mask && (m->family == AC_MODEL_VIT || m->family == AC_MODEL_VIT_TIMM)) {
        st = ac_err_set(err, AC_EUSAGE, "--attention-mask: %s (%s) takes no attention mask "
                        "(every patch is a real token)", q->model, ac_model_family_name(m->family));
        goto out;
    }
    const char *iname = q->have_tokens ? ac_cmd_input_name(q->tokens, &q->tokens_mem, "tokens")
                        : q->have_hidden ? ac_cmd_input_name(q->hidden, &q->hidden_mem, "hidden")
                                         : ac_cmd_input_name(q->normed, &q->normed_mem, "normed");
    snprintf(res->input_kind, sizeof res->input_kind, "%s",
             q->have_tokens ? "tokens" : q->have_hidden ? "hidden" : "normed");
    if (q->have_tokens) {
        if (m->family == AC_MODEL_LAYER || m->family == AC_MODEL_VIT ||
            m->family == AC_MODEL_VIT_TIMM) {
            st = ac_err_set(err, AC_EUSAGE, "--tokens: %s (%s) takes no token ids; give "
                            "--hidden or --normed", q->model, ac_model_family_name(m->family));
            goto out;
        }
        if ((st = read_tokens(&ids, &nt, q, err)))
            goto out;
        for (size_t i = 0; i < nt; i++)
            if ((size_t)ids[i] >= m->vocab) {
                st = ac_err_set(err, AC_EDATA, "%s: token %zu is %d, beyond the vocabulary "
                                "(%zu ids: 0 .. %zu)", iname, i, ids[i], m->vocab,
                                m->vocab - 1);
                goto out;
            }
        if (m->max_pos && nt > m->max_pos) {
            st = ac_err_set(err, AC_EDATA, "%s: %zu tokens; the model has %zu positions", iname,
                            nt, m->max_pos);
            goto out;
        }
    } else if ((st = ac_cmd_input_mat(&R, q->have_hidden ? q->hidden : q->normed,
                                      q->have_hidden ? &q->hidden_mem : &q->normed_mem,
                                      q->have_hidden ? "hidden" : "normed", err)) ||
               (st = input_width(&R, iname, 0, m->d, err))) {
        goto out;
    }
    size_t l0 = q->have_layer ? q->layer : 0, l1 = q->have_layer ? q->layer + 1 : m->layers;
    size_t nl = l1 - l0, n = q->have_tokens ? nt : R.rows, nh = q->have_head ? 1 : m->h;
    if (q->have_attention_mask) {
        if ((st = read_keep(&res->keep, n, q, err)))
            goto out;
        res->padded = ac_inspect_padded(res->keep, n);
    }
    uint64_t input = input_sum(ids, nt, &R, res->keep);
    /* the (layer, head) pairs: layer l0 + p / nh, head p % nh of the selection */
    size_t P = nl * nh, plo = 0, phi = P;
    res->n = n;
    res->pairs = P;
    if (q->have_shard) {
        if (q->shard[1] > P) {
            st = ac_err_set(err, AC_EUSAGE, "--shard %zu/%zu: more shards than the %zu (layer, "
                            "head) pairs", q->shard[0], q->shard[1], P);
            goto out;
        }
        ac_cond_shard_range(P, q->shard[0], q->shard[1], &plo, &phi);
        res->shard = 1;
    }
    res->pair_lo = plo;
    res->pair_hi = phi;
    if (sh) {
        res->merged = 1;
        if (!(of = calloc(sh[0].k, sizeof *of))) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory (%zu shards)", sh[0].k);
            goto out;
        }
        if ((st = shards_check(sh, names, nsh, m, input, P, of, err)))
            goto out;
    }
    res->layers = calloc(nl, sizeof *res->layers);
    hs = calloc(nh, sizeof *hs);
    if (!res->layers || !hs) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory (%zu layers)", nl);
        goto out;
    }
    size_t sp[4] = {nl, nh, n, n}, sx[3] = {nl, n, m->d};
    if (!res->shard &&
        ((st = ac_array_init(&res->patterns, 4, sp, err)) ||
         (st = ac_array_init(&res->normed, 3, sx, err)) ||
         (!q->have_normed && (st = ac_array_init(&res->hidden, 3, sx, err)))))
        goto out;
    ac_inspect_opts o;
    ac_inspect_opts_default(&o);
    o.tol = q->tol;
    o.sched = ac_schedule_upto(q->max_prec);
    o.weights = q->weights;
    o.optimize = (int)q->optimize;
    o.threads = q->have_threads ? (int)q->threads : 0;
    o.heads_only = res->shard;
    o.keep = res->keep;
    if (q->have_dk_prime) {
        o.ndkp = q->dk_prime.n;
        memcpy(o.dkp, q->dk_prime.v, o.ndkp * sizeof o.dkp[0]);
    }
    size_t rl = 0; /* with --tokens: R is the residual stream entering block rl */
    for (size_t l = l0; l < l1; l++) {
        size_t li = l - l0, a = li * nh, b = a + nh;
        /* this layer's heads: all of the selection, a shard's share, none at a merge */
        a = a > plo ? a : plo;
        b = b < phi ? b : phi;
        if (a >= b)
            continue;
        size_t nrun = sh ? 0 : b - a;
        for (size_t p = a; p < b; p++)
            hs[p - a] = q->have_head ? q->head : p - li * nh;
        ac_inspect_layer *ly = &res->layers[res->nlayers];
        if ((st = ac_model_layer(&L, m, l, err)))
            goto out;
        size_t blind = res->keep ? ac_attn_blind_query(&L, res->keep, n) : n;
        if (blind < n) {
            st = ac_err_set(err, AC_EDATA, "%s: token %zu sees no real key in layer %zu (%s): "
                            "every key it may attend to is padding",
                            ac_cmd_input_name(q->attention_mask, &q->attention_mask_mem,
                                              "attention_mask"),
                            blind, l, L.mask == AC_MASK_CAUSAL ? "a causal mask: keys up to "
                            "the token itself" : "its mask");
            goto out;
        }
        if (q->have_tokens) {
            /* R enters block rl: advance it, or run the model from its embeddings */
            ac_model_input in = {.n = nt, .ids = ids, .keep = res->keep};
            st = R.data && rl <= l ? ac_model_run_from(&R, m, rl, l, &in, err)
                                   : (ac_mat_free(&R), ac_model_run(&R, m, l, &in, err));
            if (st)
                goto out;
            rl = l;
        }
        if (q->have_normed) {
            if ((st = ac_mat_copy(&X, &R, err)))
                goto out;
        } else if ((st = ac_attn_input(&X, &L, &R, err))) {
            goto out;
        }
        st = ac_inspect_layer_run(ly, &L, &X, hs, nrun, &o, err);
        res->nlayers++;
        if (!st && sh)
            st = merge_heads(ly, &L, li, nh, hs, of, sh, names, res->keep, q->tol, err);
        if (st)
            goto out;
        if (!res->shard) {
            for (size_t k = 0; k < nh; k++) {
                size_t hi = ly->heads[k].head;
                memcpy(res->patterns.data + (li * nh + k) * n * n,
                       ly->patterns.data + hi * n * n, n * n * sizeof(double));
            }
            memcpy(res->normed.data + li * n * m->d, X.data, n * m->d * sizeof(double));
            if (res->hidden.data)
                memcpy(res->hidden.data + li * n * m->d, R.data, n * m->d * sizeof(double));
        }
        ac_mat_free(&X);
        ac_attn_layer_free(&L);
    }
    if (q->weights) {
        const ac_inspect_head *h0 = &res->layers[0].heads[0];
        for (size_t j = 0; j < h0->ndist; j++) {
            size_t sw[4] = {nl, nh, h0->dist[j].dk, h0->dprime};
            if ((st = ac_array_init(&res->wq[j], 4, sw, err)) ||
                (st = ac_array_init(&res->wk[j], 4, sw, err)))
                goto out;
            size_t blk = h0->dist[j].dk * h0->dprime;
            for (size_t l = 0; l < nl; l++)
                for (size_t k = 0; k < nh; k++) {
                    const ac_inspect_dist *ds = &res->layers[l].heads[k].dist[j];
                    if (ds->Wq.data && ds->Wq.rows * ds->Wq.cols == blk) {
                        memcpy(res->wq[j].data + (l * nh + k) * blk, ds->Wq.data,
                               blk * sizeof(double));
                        memcpy(res->wk[j].data + (l * nh + k) * blk, ds->Wk.data,
                               blk * sizeof(double));
                    }
                }
            snprintf(res->wnames[2 * j], sizeof res->wnames[0], "wq_dk%zu", h0->dist[j].dk);
            snprintf(res->wnames[2 * j + 1], sizeof res->wnames[0], "wk_dk%zu", h0->dist[j].dk);
        }
    }
    if (res->shard) {
        char **words = NULL;
        size_t nwords = 0;
        st = ac_cmd_words(&words, &nwords, ac_inspect_cmd_opts, q, ac_inspect_cmd_run_option,
                          err);
        if (!st)
            st = ac_inspect_shard_write(q->shard_out, (const char *const *)words, nwords,
                                        q->shard[0], q->shard[1], plo, phi, P, m, input,
                                        res->layers, res->nlayers, err);
        ac_cmd_words_free(words, nwords);
        res->verdict = AC_UNDECIDED; /* a shard decides nothing: merge does */
    } else {
        res->verdict = ac_inspect_verdict(res->layers, res->nlayers);
    }
out:
    res->seconds = ac_seconds() - t0;
    ac_attn_layer_free(&L);
    ac_mat_free(&R);
    ac_mat_free(&X);
    free(ids);
    free(hs);
    free(of);
    return st;
}

static int in_run(void *rv, const void *qv, void *hooks, ac_err *err)
{
    (void)hooks;
    return ac_inspect_cmd_run(rv, qv, NULL, NULL, 0, err);
}

/* ---- JSON ------------------------------------------------------------------------- */

static void json_long_or_null(ac_json *j, const char *k, long v)
{
    ac_json_key(j, k);
    if (v >= 0)
        ac_json_int(j, v);
    else
        ac_json_null(j);
}

static void json_circuit(ac_json *j, const char *key, const ac_inspect_circuit *c)
{
    ac_json_key(j, key);
    ac_json_begin_object(j);
    ac_json_kv_int(j, "rank_lo", c->rank_lo);
    ac_json_kv_int(j, "rank_hi", c->rank_hi);
    ac_json_kv_number(j, "eps", c->eps);
    ac_json_key(j, "sv_lo");
    ac_json_begin_array(j);
    for (size_t i = 0; i < c->nsv; i++)
        ac_json_number(j, c->lo[i]);
    ac_json_end_array(j);
    ac_json_key(j, "sv_hi");
    ac_json_begin_array(j);
    for (size_t i = 0; i < c->nsv; i++)
        ac_json_number(j, c->hi[i]);
    ac_json_end_array(j);
    /* the certified gaps sigma_i - sigma_{i+1} >= lo_i - hi_{i+1}, rounded down */
    ac_json_key(j, "gap_lo");
    ac_json_begin_array(j);
    for (size_t i = 0; i + 1 < c->nsv; i++) {
        double g = ac_sub_dn(c->lo[i], c->hi[i + 1]);
        ac_json_number(j, g > 0 ? g : 0);
    }
    ac_json_end_array(j);
    ac_json_end_object(j);
}

static void json_head(ac_json *j, const ac_inspect_head *hd)
{
    ac_json_begin_object(j);
    ac_json_kv_int(j, "layer", (long long)hd->layer);
    ac_json_kv_int(j, "head", (long long)hd->head);
    ac_json_kv_int(j, "kv_head", (long long)hd->kv_head);
    ac_json_kv_int(j, "dk", (long long)hd->dk);
    ac_json_kv_int(j, "d_class", (long long)hd->dprime);
    ac_json_kv_string(j, "class", hd->klass);
    ac_json_kv_bool(j, "bias", hd->bias);
    ac_json_kv_bool(j, "masked", hd->masked);
    ac_json_kv_number(j, "factor", hd->factor);
    ac_json_kv_number(j, "pattern_min", hd->pmin);
    ac_json_kv_number(j, "pattern_max", hd->pmax);
    ac_json_key(j, "threshold");
    ac_json_begin_object(j);
    json_long_or_null(j, "lo", hd->thr.lo);
    json_long_or_null(j, "hi", hd->thr.hi);
    ac_json_kv_bool(j, "exact", hd->thr.exact);
    ac_json_kv_int(j, "dk_max", (long long)hd->thr.dk_max);
    ac_json_kv_string(j, "method", hd->thr.method);
    ac_json_key(j, "exact_representability");
    ac_json_begin_object(j);
    json_long_or_null(j, "lo", hd->thr.exact_rep.lo);
    json_long_or_null(j, "hi", hd->thr.exact_rep.hi);
    ac_json_kv_bool(j, "exact", hd->thr.exact_rep.exact);
    ac_json_kv_bool(j, "none", hd->thr.exact_rep.none);
    ac_json_kv_string(j, "method", hd->thr.exact_rep.method);
    ac_json_end_object(j);
    ac_json_key(j, "evaluated");
    ac_json_begin_array(j);
    for (size_t e = 0; e < hd->thr.nevals; e++) {
        ac_json_begin_object(j);
        ac_json_kv_int(j, "dk", hd->thr.eval[e].dk);
        ac_json_kv_string(j, "verdict", ac_verdict_name(hd->thr.eval[e].verdict));
        ac_json_kv_number(j, "lo", hd->thr.eval[e].lo);
        ac_json_kv_number(j, "hi", hd->thr.eval[e].hi);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_kv_number(j, "seconds", hd->thr.seconds);
    ac_json_end_object(j);
    ac_json_kv_string(j, "own_dk", ac_verdict_name(hd->own));
    ac_json_key(j, "distances");
    ac_json_begin_array(j);
    for (size_t k = 0; k < hd->ndist; k++) {
        const ac_inspect_dist *ds = &hd->dist[k];
        ac_json_begin_object(j);
        ac_json_kv_int(j, "dk", (long long)ds->dk);
        ac_json_kv_string(j, "verdict", ac_verdict_name(ds->verdict));
        ac_json_kv_number(j, "lo", ds->lo);
        ac_json_kv_number(j, "hi", ds->hi);
        ac_json_kv_number(j, "decades", ds->decades);
        ac_json_kv_bool(j, "weights", ds->Wq.data != NULL);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_key(j, "self_check");
    ac_json_cert(j, &hd->self);
    ac_json_kv_string(j, "self_check_head", hd->self_note);
    ac_json_key(j, "circuits");
    ac_json_begin_object(j);
    json_circuit(j, "qk", &hd->qk);
    json_circuit(j, "ov", &hd->ov);
    ac_json_end_object(j);
    ac_json_kv_number(j, "seconds", hd->seconds);
    ac_json_key(j, "time");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "threshold", hd->thr.seconds);
    ac_json_kv_number(j, "distances", hd->t_dist);
    ac_json_kv_number(j, "self_check", hd->self.seconds);
    ac_json_kv_number(j, "circuits", hd->t_circuits);
    ac_json_end_object(j);
    ac_json_end_object(j);
}

static void json_layer(ac_json *j, const ac_inspect_layer *ly)
{
    ac_json_begin_object(j);
    ac_json_kv_int(j, "layer", (long long)ly->layer);
    ac_json_kv_int(j, "n", (long long)ly->n);
    ac_json_kv_int(j, "d", (long long)ly->d);
    ac_json_kv_int(j, "h", (long long)ly->h);
    ac_json_kv_int(j, "hkv", (long long)ly->hkv);
    ac_json_kv_int(j, "dk", (long long)ly->dk);
    ac_json_kv_string(j, "pattern_changes", ly->describe);
    ac_json_key(j, "kappa");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "estimate", ly->kappa.kappa);
    ac_json_kv_number(j, "lo", ly->kappa.kappa_lo);
    ac_json_kv_number(j, "hi", ly->kappa.kappa_hi);
    ac_json_kv_number(j, "sigma_min_lo", ly->kappa.smin_lo);
    ac_json_kv_number(j, "sigma_min_hi", ly->kappa.smin_hi);
    ac_json_kv_string(j, "full_rank", ac_verdict_name(ly->kappa_full_rank));
    ac_json_kv_string(j, "within_rtol", ac_verdict_name(ly->kappa.cert));
    ac_json_kv_string(j, "block", "[P_1 V_1 ... P_h V_h] as computed in double (n x h dk)");
    ac_json_end_object(j);
    ac_json_key(j, "prediction");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "median", ly->pred_median);
    ac_json_kv_number(j, "q05", ly->pred_q05);
    ac_json_kv_number(j, "q95", ly->pred_q95);
    ac_json_kv_string(j, "law", ly->n == ly->h * ly->dk ? "Edelman" : "Tracy-Widom");
    ac_json_end_object(j);
    ac_json_key(j, "theorem2");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "d_ge_n", ac_verdict_name(ly->d_ge_n));
    ac_json_kv_string(j, "rank_x_full", ac_verdict_name(ly->rank_x_full));
    json_long_or_null(j, "rank_x", ly->rank_x);
    ac_json_kv_string(j, "dk_ge_n", ac_verdict_name(ly->dk_ge_n));
    ac_json_kv_string(j, "line", ly->t2_line);
    ac_json_end_object(j);
    ac_json_kv_number(j, "seconds", ly->seconds);
    ac_json_key(j, "time");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "kappa", ly->t_kappa);
    ac_json_kv_number(j, "heads_threshold", ly->t_threshold);
    ac_json_kv_number(j, "heads_distances", ly->t_dist);
    ac_json_kv_number(j, "heads_self_check", ly->t_self);
    ac_json_kv_number(j, "heads_circuits", ly->t_circuits);
    ac_json_end_object(j);
    ac_json_key(j, "heads");
    ac_json_begin_array(j);
    for (size_t k = 0; k < ly->nheads; k++)
        json_head(j, &ly->heads[k]);
    ac_json_end_array(j);
    ac_json_end_object(j);
}

void ac_inspect_cmd_write_json(ac_json *j, const void *qv, const void *rv)
{
    const ac_inspect_request *q = qv;
    const ac_inspect_result *res = rv;
    const ac_model *m = &res->m;
    char hex[65];
    ac_json_envelope_begin(j, "inspect", ac_verdict_name(res->verdict), NULL);
    ac_json_parameters_begin(j, 0);
    ac_json_kv_number(j, "tol", q->tol);
    ac_json_key(j, "layer");
    if (q->have_layer)
        ac_json_int(j, (long long)q->layer);
    else
        ac_json_null(j);
    ac_json_key(j, "head");
    if (q->have_head)
        ac_json_int(j, (long long)q->head);
    else
        ac_json_null(j);
    ac_json_key(j, "dk_prime");
    ac_json_begin_array(j);
    for (size_t k = 0; q->have_dk_prime && k < q->dk_prime.n; k++)
        ac_json_int(j, (long long)q->dk_prime.v[k]);
    ac_json_end_array(j);
    ac_json_kv_int(j, "max_prec", q->max_prec);
    ac_json_kv_int(j, "optimize", q->optimize);
    ac_json_parameters_end(j);
    ac_json_kv_string(j, "claim", "every head inspected: its own weights reproduce its pattern "
                      "within tol (the self-check)");
    ac_json_key(j, "model");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "dir", q->model);
    ac_json_kv_string(j, "family", ac_model_family_name(m->family));
    ac_json_kv_string(j, "model_type", m->model_type);
    ac_json_kv_int(j, "layers", (long long)m->layers);
    ac_json_kv_int(j, "d", (long long)m->d);
    ac_json_kv_int(j, "h", (long long)m->h);
    ac_json_kv_int(j, "hkv", (long long)m->hkv);
    ac_json_kv_int(j, "dk", (long long)m->dk);
    ac_json_kv_string(j, "description", res->model_desc);
    ac_json_kv_bool(j, "weight_processing", 0);
    ac_json_key(j, "files");
    ac_json_begin_array(j);
    for (size_t f = 0; f < m->st.nfiles; f++) {
        const ac_st_file *sf = &m->st.files[f];
        ac_json_begin_object(j);
        ac_json_kv_string(j, "path", sf->path);
        ac_json_kv_uint(j, "bytes", sf->size);
        for (int b = 0; b < 32; b++)
            snprintf(hex + 2 * b, 3, "%02x", sf->sha256[b]);
        ac_json_kv_string(j, "sha256", sf->have_sha256 ? hex : NULL);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_end_object(j);
    ac_json_key(j, "input");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "kind", res->input_kind);
    ac_json_kv_string(j, "file", q->have_tokens ? ac_cmd_input_name(q->tokens, &q->tokens_mem, "tokens")
                      : q->have_hidden ? ac_cmd_input_name(q->hidden, &q->hidden_mem, "hidden")
                                       : ac_cmd_input_name(q->normed, &q->normed_mem, "normed"));
    ac_json_kv_int(j, "n", (long long)res->n);
    ac_json_key(j, "attention_mask");
    if (res->keep) {
        ac_json_begin_object(j);
        ac_json_kv_string(j, "file", ac_cmd_input_name(q->attention_mask,
                                                       &q->attention_mask_mem, "attention_mask"));
        ac_json_kv_int(j, "padding", (long long)res->padded);
        ac_json_key(j, "keep");
        ac_json_begin_array(j);
        for (size_t i = 0; i < res->n; i++)
            ac_json_int(j, res->keep[i]);
        ac_json_end_array(j);
        ac_json_end_object(j);
    } else {
        ac_json_null(j);
    }
    ac_json_end_object(j);
    if (res->shard) {
        /* one shard decides nothing: its heads are in its file, for merge */
        ac_json_key(j, "shard");
        ac_json_begin_object(j);
        ac_json_kv_int_pair(j, "shard", (long long)q->shard[0], (long long)q->shard[1]);
        ac_json_kv_int_pair(j, "pairs", (long long)res->pair_lo, (long long)res->pair_hi);
        ac_json_kv_int(j, "total", (long long)res->pairs);
        ac_json_kv_string(j, "file", q->shard_out);
        ac_json_end_object(j);
    }
    ac_json_kv_number(j, "seconds", res->seconds);
    ac_json_key(j, "layers");
    ac_json_begin_array(j);
    for (size_t l = 0; !res->shard && l < res->nlayers; l++)
        json_layer(j, &res->layers[l]);
    ac_json_end_array(j);
    ac_json_end_object(j);
}

size_t ac_inspect_cmd_arrays(const void *qv, const void *rv, ac_out_array *out, size_t max)
{
    const ac_inspect_result *res = rv;
    const ac_array *as[3] = {&res->patterns, &res->normed, &res->hidden};
    const char *names[3] = {"patterns", "normed", "hidden"};
    size_t k = 0;
    (void)qv;
    for (int a = 0; a < 3; a++) {
        if (!as[a]->data)
            continue;
        if (k < max) {
            out[k].name = names[a];
            out[k].ndim = as[a]->ndim;
            memcpy(out[k].shape, as[a]->shape, sizeof out[k].shape);
            out[k].data = as[a]->data;
        }
        k++;
    }
    for (size_t j = 0; j < AC_INSPECT_MAX_DKP; j++)
        for (int w = 0; w < 2; w++) {
            const ac_array *a = w ? &res->wk[j] : &res->wq[j];
            if (!a->data)
                continue;
            if (k < max) {
                out[k].name = res->wnames[2 * j + w];
                out[k].ndim = a->ndim;
                memcpy(out[k].shape, a->shape, sizeof out[k].shape);
                out[k].data = a->data;
            }
            k++;
        }
    return k;
}

static int in_status(const void *qv, const void *rv)
{
    const ac_inspect_result *res = rv;
    (void)qv;
    return res->shard ? 0 : ac_verdict_status(res->verdict); /* a shard: merge decides */
}

void ac_inspect_cmd_result_free(void *rv)
{
    ac_inspect_result *res = rv;
    for (size_t l = 0; l < res->nlayers; l++)
        ac_inspect_layer_free(&res->layers[l]);
    free(res->layers);
    res->layers = NULL;
    ac_array_free(&res->patterns);
    ac_array_free(&res->hidden);
    ac_array_free(&res->normed);
    for (size_t j = 0; j < AC_INSPECT_MAX_DKP; j++) {
        ac_array_free(&res->wq[j]);
        ac_array_free(&res->wk[j]);
    }
    ac_model_close(&res->m);
    free(res->keep);
    res->keep = NULL;
}

const ac_command ac_cmd_inspect = {
    .name = "inspect",
    .summary = "every check on the layers and heads of a pretrained model",
    .synopsis = "attncheck inspect --model DIR [--layer L] [--head H] "
                "(--tokens FILE | --hidden FILE | --normed FILE) [OPTIONS]",
    .description = in_description,
    .epilogue = in_epilogue,
    .opts = ac_inspect_cmd_opts,
    .request_size = sizeof(ac_inspect_request),
    .result_size = sizeof(ac_inspect_result),
    .check = in_check,
    .run = in_run,
    .write_json = ac_inspect_cmd_write_json,
    .arrays = ac_inspect_cmd_arrays,
    .status = in_status,
    .result_free = ac_inspect_cmd_result_free,
};
