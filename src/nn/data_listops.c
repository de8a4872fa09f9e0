/* data_listops.c — the ListOps task of the Long Range Arena (Tay et al.
 * 2021, used in paper 2): LRA's generator (generate_tree) and evaluator
 * (to_value) on the token ids of attncheck/train.h, and the task's batches:
 * [CLS] expression [PAD]..., label = the value 0-9. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/rng.h"
#include "nn/nn_impl.h"

typedef struct {
    ac_rng *r;
    int32_t *tok;
    size_t len, max_len, max_depth, max_args;
    int over;
} lo_gen;

static int lo_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Apply operator token op to vals[0..n-1] (LRA's to_value). */
static int lo_apply(int op, int *vals, size_t n)
{
    int r = 0;
    switch (op) {
    case AC_LISTOPS_MIN:
        r = vals[0];
        for (size_t i = 1; i < n; i++)
            r = vals[i] < r ? vals[i] : r;
        break;
    case AC_LISTOPS_MAX:
        r = vals[0];
        for (size_t i = 1; i < n; i++)
            r = vals[i] > r ? vals[i] : r;
        break;
    case AC_LISTOPS_MED:
        qsort(vals, n, sizeof *vals, lo_cmp);
        /* int(np.median): the middle value, or the mean of the two middle
         * values truncated (they are >= 0, so rounded down) */
        r = n % 2 ? vals[n / 2] : (vals[n / 2 - 1] + vals[n / 2]) / 2;
        break;
    default: /* SM */
        for (size_t i = 0; i < n; i++)
            r += vals[i];
        r %= 10;
        break;
    }
    return r;
}

/* LRA's generate_tree(depth): returns the value; appends tokens.  Stops
 * emitting (g->over) once the length exceeds max_len but keeps drawing the
 * same random numbers so the recursion stays that of LRA. */
static int lo_tree(lo_gen *g, size_t depth)
{
    double r = depth < g->max_depth ? ac_rng_uniform(g->r) : 1.0;
    if (r > 0.25) {
        int v = (int)ac_rng_below(g->r, 10);
        if (g->len < g->max_len)
            g->tok[g->len] = AC_LISTOPS_DIGIT0 + v;
        else
            g->over = 1;
        g->len++;
        return v;
    }
    size_t nargs = 2 + (size_t)ac_rng_below(g->r, g->max_args - 1); /* randint(2, max_args) */
    size_t op_pos = g->len++;
    int vals[64];
    int *v = nargs <= 64 ? vals : malloc(nargs * sizeof *v);
    if (!v) {
        g->over = 2;
        return 0;
    }
    for (size_t i = 0; i < nargs; i++)
        v[i] = lo_tree(g, depth + 1);
    /* the operator is drawn after the arguments, as in LRA */
    int op = AC_LISTOPS_MIN + (int)ac_rng_below(g->r, 4);
    if (op_pos < g->max_len)
        g->tok[op_pos] = op;
    if (g->len < g->max_len)
        g->tok[g->len] = AC_LISTOPS_END;
    else
        g->over = g->over ? g->over : 1;
    g->len++;
    int res = lo_apply(op, v, nargs);
    if (v != vals)
        free(v);
    return res;
}

int ac_listops_sample(int32_t *tokens, size_t *len, int *label, uint64_t seed, uint64_t stream,
                      uint64_t index, size_t max_depth, size_t max_args, size_t min_len,
                      size_t max_len, ac_err *err)
{
    ac_rng r;
    if (max_args < 2 || max_depth < 1 || max_len < 1 || min_len > max_len)
        return ac_err_set(err, AC_EUSAGE,
                          "ListOps needs depth >= 1, args >= 2 and min length <= max length");
    ac_rng_init(&r, seed, stream, index);
    for (int attempt = 0; attempt < 100000; attempt++) {
        lo_gen g = {&r, tokens, 0, max_len, max_depth, max_args, 0};
        int v = lo_tree(&g, 1);
        if (g.over == 2)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        if (!g.over && g.len >= min_len && g.len <= max_len) {
            *len = g.len;
            *label = v;
            return AC_OK;
        }
    }
    return ac_err_set(err, AC_EDATA,
                      "ListOps: no expression of length %zu..%zu in 100000 tries (depth %zu, "
                      "args %zu); widen the length range",
                      min_len, max_len, max_depth, max_args);
}

static int lo_eval_at(const int32_t *t, size_t len, size_t *pos)
{
    if (*pos >= len)
        return -1;
    int32_t k = t[(*pos)++];
    if (k >= AC_LISTOPS_DIGIT0 && k < AC_LISTOPS_DIGIT0 + 10)
        return k - AC_LISTOPS_DIGIT0;
    if (k < AC_LISTOPS_MIN || k > AC_LISTOPS_SM)
        return -1;
    int vals[4096];
    size_t n = 0;
    while (*pos < len && t[*pos] != AC_LISTOPS_END) {
        int v = lo_eval_at(t, len, pos);
        if (v < 0 || n == 4096)
            return -1;
        vals[n++] = v;
    }
    if (*pos >= len || n < 1)
        return -1;
    (*pos)++;
    return lo_apply(k, vals, n);
}

int ac_listops_eval(const int32_t *tokens, size_t len)
{
    size_t pos = 0;
    int v = lo_eval_at(tokens, len, &pos);
    return pos == len ? v : -1;
}

int train_listops_open(ac_train_data *d, ac_train_config *c, ac_err *err)
{
    if (c->seq < 2)
        return ac_err_set_field(err, AC_EUSAGE, "task,seq", "task listops needs seq >= 2 (a CLS "
                                "token and at least one more)");
    if (c->listops_max == 0 || c->listops_max > c->seq - 1)
        c->listops_max = c->seq - 1;
    if (c->listops_min == 0)
        c->listops_min = c->listops_max / 4 ? c->listops_max / 4 : 1;
    if (c->listops_min > c->listops_max)
        return ac_err_set_field(err, AC_EUSAGE, "listops_min,seq",
                                "listops_min %zu exceeds the longest possible expression (%zu = "
                                "seq - 1)", c->listops_min, c->listops_max);
    if (c->listops_args < 2)
        return ac_err_set_field(err, AC_EUSAGE, "listops_args", "listops_args must be at least 2");
    if (c->listops_depth < 1)
        return ac_err_set_field(err, AC_EUSAGE, "listops_depth",
                                "listops_depth must be at least 1");
    d->expr = malloc(c->listops_max * sizeof *d->expr);
    d->len = malloc((c->batch ? c->batch : 1) * sizeof *d->len);
    if (!d->expr || !d->len)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    c->model.input = AC_NN_INPUT_TOKENS;
    c->model.vocab = AC_LISTOPS_VOCAB;
    c->model.head = AC_NN_HEAD_CLASSIFY;
    c->model.out_dim = 10;
    snprintf(d->summary, sizeof d->summary,
             "ListOps (LRA): depth <= %zu, 2..%zu arguments, %zu..%zu tokens + CLS, padded to %zu",
             c->listops_depth, c->listops_args, c->listops_min, c->listops_max, c->seq);
    return AC_OK;
}

/* Example (index - 1) * B + i of the training stream (step `index`), or
 * index * B + i of the held-out stream; CLS first, PAD after. */
int train_listops_batch(ac_train_data *d, const ac_train_config *c, int split, size_t index,
                        ac_nn_batch *b, ac_err *err)
{
    size_t B = c->batch, T = c->seq;
    int st;
    for (size_t i = 0; i < B; i++) {
        size_t len;
        int label;
        uint64_t idx = (uint64_t)(split == 0 ? (index - 1) : index) * B + i;
        if ((st = ac_listops_sample(d->expr, &len, &label, c->seed,
                                    split == 0 ? STREAM_LISTOPS : STREAM_LISTOPS_EVAL, idx,
                                    c->listops_depth, c->listops_args, c->listops_min,
                                    c->listops_max, err)))
            return st;
        int32_t *t = d->tokens + i * T;
        t[0] = AC_LISTOPS_CLS;
        memcpy(t + 1, d->expr, len * sizeof *t);
        for (size_t k = len + 1; k < T; k++)
            t[k] = AC_LISTOPS_PAD;
        d->targets[i] = label;
        d->len[i] = len + 1; /* CLS + the expression; the rest is padding, masked */
    }
    b->tokens = d->tokens;
    b->targets = d->targets;
    b->len = d->len;
    return AC_OK;
}
