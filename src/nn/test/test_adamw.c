/* test_adamw.c — the AdamW step of attncheck/nn.h (adamw.c) against its
 * scalar formula: one step of a four-parameter model to 8 ulps, and several
 * steps on tensors of odd sizes (vector body and scalar tail) bit for bit,
 * with decay on some tensors and clipping, for 1 and 3 threads. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "attncheck/nn.h"
#include "nn/nn_impl.h"
#include "testutil.h"

static const double U = 0x1p-53;

START_TEST(test_adamw)
{
    ac_nn_config c;
    memset(&c, 0, sizeof c);
    c.arch = AC_NN_ARCH_SCORES;
    c.width = 2;
    c.heads = 1;
    c.kind = AC_NN_ATTN_FIXED;
    c.head_dim = 1;
    c.max_seq = 2;
    c.head = AC_NN_HEAD_SCORES;
    ac_nn_model m;
    ck_assert(ac_nn_model_init(&m, &c, 1, 2, NULL) == AC_OK);
    ck_assert_uint_eq(m.nparams, 4);
    double p0[4] = {1, -2, 0.5, 3}, g[4] = {0.1, -0.2, 0, 4};
    memcpy(m.params, p0, sizeof p0);
    memcpy(m.grads, g, sizeof g);
    ac_nn_adamw o = {0.01, 0.9, 0.999, 1e-8, 0.1};
    ac_nn_adamw_step(&m, &o, 1, 0.5);
    /* step 1: m = 0.1 g', v = 0.001 g'^2, mhat = g', vhat = g'^2:
     * p = p (1 - lr wd) - lr g' / (|g'| + eps), g' = 0.5 g */
    for (int i = 0; i < 4; i++) {
        double gg = 0.5 * g[i];
        double want = p0[i] * (1 - 0.01 * 0.1) - 0.01 * gg / (fabs(gg) + 1e-8);
        ck_assert_msg(fabs(m.params[i] - want) <= 8 * U * fabs(want), "p[%d] = %.17g, want %.17g",
                      i, m.params[i], want);
    }
    ac_nn_model_free(&m);
}
END_TEST

/* The AdamW step against its scalar formula, bit for bit, on tensors of
 * odd sizes (vector body and scalar tail), over several steps, with decay
 * on some tensors and clipping; with 1 and 3 threads where OpenMP is on. */
START_TEST(test_adamw_vector)
{
    ac_nn_config c;
    memset(&c, 0, sizeof c);
    c.arch = AC_NN_ARCH_TRANSFORMER;
    c.input = AC_NN_INPUT_TOKENS;
    c.positions = 1;
    c.layers = 2;
    c.heads = 2;
    c.causal = 1;
    c.head = AC_NN_HEAD_LM;
    c.vocab = 13;
    c.width = 90; /* about 1.6e5 parameters: above the threshold of the parallel loop */
    c.ffn = 271;
    c.max_seq = 9;
    test_rng r;
    test_rng_init(&r, 41);
    for (int th = 1; th <= 3; th += 2) {
#ifdef _OPENMP
        int saved = omp_get_max_threads();
        omp_set_num_threads(th);
#endif
        ac_nn_model m;
        ck_assert(ac_nn_model_init(&m, &c, 1, 9, NULL) == AC_OK);
        size_t n = m.nparams;
        ck_assert(n > 65536);
        double *p = test_vec(n), *mm = test_vec(n), *vv = test_vec(n);
        test_gauss(&r, m.params, n, 1);
        memcpy(p, m.params, n * sizeof *p);
        memset(mm, 0, n * sizeof *mm);
        memset(vv, 0, n * sizeof *vv);
        ac_nn_adamw o = {3e-3, 0.9, 0.999, 1e-8, 0.05};
        for (long t = 1; t <= 3; t++) {
            test_gauss(&r, m.grads, n, t == 2 ? 1e-6 : 1.0);
            double gs = t == 3 ? 0.25 : 1.0;
            ac_nn_adamw_step(&m, &o, t, gs);
            double c1 = 1.0 - pow(o.beta1, (double)t), c2 = 1.0 - pow(o.beta2, (double)t);
            for (size_t k = 0; k < m.ntensors; k++) {
                const ac_nn_tensor *T = &m.tensors[k];
                double decay = T->decay ? 1.0 - o.lr * o.weight_decay : 1.0;
                for (size_t i = T->offset; i < T->offset + T->size; i++) {
                    double gi = m.grads[i] * gs;
                    mm[i] = o.beta1 * mm[i] + (1.0 - o.beta1) * gi;
                    vv[i] = o.beta2 * vv[i] + (1.0 - o.beta2) * gi * gi;
                    p[i] = p[i] * decay - o.lr * (mm[i] / c1) / (sqrt(vv[i] / c2) + o.eps);
                }
            }
            ck_assert_msg(memcmp(p, m.params, n * sizeof *p) == 0 &&
                              memcmp(mm, m.m, n * sizeof *mm) == 0 &&
                              memcmp(vv, m.v, n * sizeof *vv) == 0,
                          "AdamW step %ld differs from its formula (%d threads)", t, th);
        }
        free(p), free(mm), free(vv);
        ac_nn_model_free(&m);
#ifdef _OPENMP
        omp_set_num_threads(saved);
#endif
    }
}
END_TEST

int main(void)
{
    test_seed_init();
    ac_blas_set_threads(1);
    Suite *s = suite_create("adamw");
    TCase *tc = tcase_create("adamw");
    test_no_timeout(tc);
    tcase_add_test(tc, test_adamw);
    tcase_add_test(tc, test_adamw_vector);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
