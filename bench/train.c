/* bench/train.c — tokens per second of attncheck's training step (forward,
 * backward, gradient clipping, AdamW) on random tokens, for bench/train.sh.
 *
 *   bench/train [--vocab V] [--seq T] [--width C] [--layers L] [--heads H]
 *               [--attention standard|fixed] [--head-dim DP] [--ffn-mult M]
 *               [--batch B] [--steps N] [--warmup W] [--threads K] [--ln pre|post]
 *
 * Prints one line: "attncheck tokens_per_s X step_ms Y params P threads K
 * loss L gflops G cpu_ms Z": G = the step's matrix-product flops (forward
 * 2 m n k per product, backward twice that; attention counted dense, T^2
 * per head, as a dgemm implementation computes it, although the causal
 * paths skip most of the masked half; with heads at least as wide as the
 * model, the products the merged block computes: src/nn/attn_merged.c)
 * / step time; Z = the process's CPU
 * time per step (all threads, clock_gettime(CLOCK_PROCESS_CPUTIME_ID)),
 * which a loaded machine inflates much less than the wall clock.
 *
 *   bench/train --peak    prints "dgemm_peak_gflops X cpu_gflops Y"
 *                         (bench/bench_peak.h): the best of 5
 *                         single-threaded 512^3 dgemms by the wall clock
 *                         (X, the machine's dgemm peak under the same
 *                         load) and by the calling thread's CPU time (Y).
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cblas.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "bench_peak.h"
#include "attncheck/nn.h"
#include "attncheck/rng.h"

static size_t arg_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || !*s) {
        fprintf(stderr, "bench/train: bad number '%s'\n", s);
        exit(64);
    }
    return (size_t)v;
}

/* CPU time of the process (all threads) */
static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    ac_blas_fix_core(argv);
    if (argc == 2 && !strcmp(argv[1], "--peak"))
        return bench_dgemm_peak();
    ac_nn_config c;
    memset(&c, 0, sizeof c);
    c.arch = AC_NN_ARCH_TRANSFORMER;
    c.input = AC_NN_INPUT_TOKENS;
    c.vocab = 64;
    c.positions = 1;
    c.max_seq = 64;
    c.width = 64;
    c.layers = 2;
    c.heads = 4;
    c.kind = AC_NN_ATTN_STANDARD;
    c.ln = AC_NN_LN_PRE;
    c.causal = 1;
    c.head = AC_NN_HEAD_LM;
    size_t B = 32, steps = 20, warm = 3, mult = 4;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench/train: %s needs a value\n", a);
            return 64;
        }
        i++;
        if (!strcmp(a, "--vocab")) c.vocab = arg_size(v);
        else if (!strcmp(a, "--seq")) c.max_seq = arg_size(v);
        else if (!strcmp(a, "--width")) c.width = arg_size(v);
        else if (!strcmp(a, "--layers")) c.layers = arg_size(v);
        else if (!strcmp(a, "--heads")) c.heads = arg_size(v);
        else if (!strcmp(a, "--head-dim")) c.head_dim = arg_size(v);
        else if (!strcmp(a, "--ffn-mult")) mult = arg_size(v);
        else if (!strcmp(a, "--batch")) B = arg_size(v);
        else if (!strcmp(a, "--steps")) steps = arg_size(v);
        else if (!strcmp(a, "--warmup")) warm = arg_size(v);
        else if (!strcmp(a, "--threads")) threads = (int)arg_size(v);
        else if (!strcmp(a, "--attention")) c.kind = strcmp(v, "fixed") ? AC_NN_ATTN_STANDARD : AC_NN_ATTN_FIXED;
        else if (!strcmp(a, "--ln")) c.ln = strcmp(v, "post") ? AC_NN_LN_PRE : AC_NN_LN_POST;
        else {
            fprintf(stderr, "bench/train: unknown option %s\n", a);
            return 64;
        }
    }
    c.ffn = mult * c.width;
    ac_blas_set_threads(1);
#ifdef _OPENMP
    if (threads > 0)
        omp_set_num_threads(threads);
    threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    ac_nn_model m;
    ac_err err;
    if (ac_nn_model_init(&m, &c, B, c.max_seq, &err)) {
        fprintf(stderr, "bench/train: %s\n", err.msg);
        return 64;
    }
    ac_nn_model_init_weights(&m, 1, 0.02);
    size_t N = B * c.max_seq;
    int32_t *tok = malloc(N * sizeof *tok), *tgt = malloc(N * sizeof *tgt);
    ac_rng r;
    ac_rng_init(&r, 1, 2, 3);
    for (size_t i = 0; i < N; i++) {
        tok[i] = (int32_t)ac_rng_below(&r, c.vocab);
        tgt[i] = (int32_t)ac_rng_below(&r, c.vocab);
    }
    ac_nn_batch b = {.B = B, .T = c.max_seq, .tokens = tok, .targets = tgt};
    ac_nn_adamw o = {1e-3, 0.9, 0.999, 1e-8, 0.0};
    double t0 = 0, c0 = 0, loss = 0;
    for (size_t s = 0; s < warm + steps; s++) {
        if (s == warm) {
            t0 = ac_seconds();
            c0 = cpu_seconds();
        }
        ac_nn_stats st;
        if (ac_nn_forward(&m, &b, &st, &err)) {
            fprintf(stderr, "bench/train: %s\n", err.msg);
            return 70;
        }
        ac_nn_zero_grad(&m);
        ac_nn_backward(&m);
        double gn = ac_nn_grad_norm(&m);
        ac_nn_adamw_step(&m, &o, (long)s + 1, gn > 1.0 ? 1.0 / gn : 1.0);
        loss = st.loss;
    }
    double dt = (ac_seconds() - t0) / (double)steps;
    double dc = (cpu_seconds() - c0) / (double)steps;
    /* matrix-product flops of one forward: per layer qkv, projection, FFN;
     * attention scores and weighted sum per (sequence, head); the LM head */
    double T = (double)c.max_seq, C = (double)c.width, D = (double)m.D, F = (double)c.ffn;
    double H = (double)c.heads, S = (double)m.S;
    /* heads at least as wide as the model run merged (src/nn/attn_merged.c):
     * products Q' and V' of width H C, attention at head size C, no key or
     * output projection */
    double attn = m.S >= c.width ? 2.0 * (double)N * C * 2 * H * C + 4.0 * (double)B * H * T * T * C
                                 : 2.0 * (double)N * (C * 3 * D + D * C) +
                                       4.0 * (double)B * H * T * T * S;
    double fwd = (double)c.layers * (attn + 2.0 * (double)N * 2 * C * F) +
                 2.0 * (double)N * C * (double)c.vocab;
    printf("attncheck tokens_per_s %.0f step_ms %.2f params %zu threads %d loss %.6f gflops %.2f "
           "cpu_ms %.2f\n",
           (double)N / dt, dt * 1e3, m.nparams, threads, loss, 3.0 * fwd / dt * 1e-9, dc * 1e3);
    ac_nn_model_free(&m);
    free(tok);
    free(tgt);
    return 0;
}
