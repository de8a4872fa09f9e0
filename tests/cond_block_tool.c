/* cond_block_tool.c — the attention samples of `attncheck condition
 * --certify` with their factors, for the independent oracle
 * tests/cond_block.py (mpmath at 50 digits).
 *
 *   cond_block_tool N h d E SEED TRIALS [direct] [RTOL]
 *
 * prints one JSON object: rank_bound, m, the run's verdict, and for every
 * sample the certify fields and the sampled inputs, regenerated from the
 * documented streams (attncheck/condition.h: X row-major, then per head
 * Wq_i, Wk_i, Wv_i; in the factor form E > N the N x d draws Z).
 * Exit status 0, or the library's status with its message on stderr. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "attncheck/condition.h"
#include "attncheck/rng.h"

static void print_vec(const char *key, const double *x, size_t n)
{
    printf("\"%s\": [", key);
    for (size_t i = 0; i < n; i++)
        printf("%s%.17g", i ? ", " : "", x[i]);
    printf("]");
}

static void print_num(const char *key, double x)
{
    if (x != x)
        printf("\"%s\": \"nan\"", key);
    else if (x == 1.0 / 0.0 || x == -1.0 / 0.0)
        printf("\"%s\": \"%sinf\"", key, x < 0 ? "-" : "");
    else
        printf("\"%s\": %.17g", key, x);
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: cond_block_tool N h d E SEED TRIALS [direct|factor] [RTOL]\n");
        return 64;
    }
    ac_cond_opts o;
    ac_cond_opts_default(&o);
    o.N = strtoull(argv[1], NULL, 10);
    size_t h = strtoull(argv[2], NULL, 10), d = strtoull(argv[3], NULL, 10);
    o.input_dim = strtoull(argv[4], NULL, 10);
    o.seed = strtoull(argv[5], NULL, 10);
    o.trials = strtoull(argv[6], NULL, 10);
    o.attention_direct = argc > 7 && argv[7][0] == 'd';
    if (argc > 8)
        o.rtol = strtod(argv[8], NULL);
    o.mode = AC_COND_ATTENTION;
    o.certify = 1;
    o.threads = 1;
    size_t N = o.N, E = o.input_dim;
    ac_cond_result r;
    ac_err err;
    ac_err_clear(&err);
    int st = ac_cond_run(&r, h, d, &o, &err);
    if (st) {
        fprintf(stderr, "cond_block_tool: %s\n", err.msg);
        return st;
    }
    int factor = E > N && !o.attention_direct;
    size_t nw = factor ? N * d : E * d;
    double *X = malloc(N * E * sizeof(double)), *W = malloc(nw * sizeof(double));
    if (!X || !W)
        return 70;
    printf("{\"N\": %zu, \"h\": %zu, \"d\": %zu, \"E\": %zu, \"factor\": %d, \"rank_bound\": %zu, "
           "\"m\": %zu, \"rtol\": %.17g, \"verdict\": \"%s\", \"samples\": [\n",
           N, h, d, E, factor, r.rank_bound, r.m, o.rtol, ac_verdict_name(r.verdict));
    for (size_t t = 0; t < r.trials; t++) {
        const ac_cond_sample *s = &r.samples[t];
        ac_rng g;
        ac_rng_init(&g, o.seed, (uint64_t)h, t);
        ac_rng_normal_fill(&g, X, N * E);
        printf("%s{\"cert\": \"%s\", \"rank_refuted\": %d, ", t ? ",\n" : "",
               ac_verdict_name(s->cert), s->rank_refuted);
        print_num("kappa", s->kappa);
        printf(", ");
        print_num("s1_lo", s->s1_lo);
        printf(", ");
        print_num("s1_hi", s->s1_hi);
        printf(", ");
        print_num("smin_lo", s->smin_lo);
        printf(", ");
        print_num("smin_hi", s->smin_hi);
        printf(", ");
        print_num("block_rad", s->block_rad);
        printf(", \"stage\": %d", s->cert_stage);
        printf(", ");
        print_vec("X", X, N * E);
        printf(", \"W\": [");
        for (size_t i = 0; i < 3 * h; i++) {
            ac_rng_normal_fill(&g, W, nw);
            printf("%s", i ? ", " : "");
            printf("{"); print_vec("w", W, nw); printf("}");
        }
        printf("]}");
    }
    printf("]}\n");
    free(X);
    free(W);
    ac_cond_result_free(&r);
    return 0;
}
