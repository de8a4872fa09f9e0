/* test_nn_attn.c — the attention kernels of src/nn (layers.c, attn_fused.c,
 * attn_tiled.c, softmax_fused.c) against their naive twins: the public
 * path, the register-tiled fused kernels, the per-head dgemms, the causal
 * row blocks on BLAS and the causal row strips on nn_tgemm against
 * ac_nn_attention_*_ref with tolerances from the error bounds in the
 * comments; the vector softmax rows against their scalar
 * twins on every length 1..130; padding masks.  (The finite-difference
 * checks of the attention backward are in test_nn.c.)
 */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/blas.h"
#include "attncheck/nn.h"
#include "nn/attn_fused.h"
#include "nn/nn_tgemm.h"
#include "testutil.h"

static const double U = 0x1p-53;

typedef void (*attn_fwd_fn)(double *, double *, const double *, size_t, size_t, size_t, size_t,
                            int, const size_t *);
typedef void (*attn_bwd_fn)(double *, double *, const double *, const double *, const double *,
                            size_t, size_t, size_t, size_t, int);

static void public_fwd(double *out, double *att, const double *qkv, size_t B, size_t T, size_t H,
                       size_t S, int causal, const size_t *klen)
{
    (void)klen;
    ac_nn_attention_forward(out, att, qkv, B, T, H, S, causal);
}

/* The attention kernels fwd / bwd against the naive references on one
 * shape, with tolerances from the error bounds in the comments (padding
 * masks: test_attention_fused_mask). */
static void check_attention(test_rng *r, attn_fwd_fn fwd, attn_bwd_fn bwd, size_t B, size_t T,
                            size_t H, size_t S, int causal)
{
    size_t D = H * S, N = B * T;
    double *qkv = test_vec(N * 3 * D), *o1 = test_vec(N * D), *o2 = test_vec(N * D);
    double *a1 = test_vec(B * H * T * T), *a2 = test_vec(B * H * T * T);
    double *dout = test_vec(N * D), *dq1 = test_vec(N * 3 * D), *dq2 = test_vec(N * 3 * D);
    double *scr = test_vec(T * T);
    test_gauss(r, qkv, N * 3 * D, 1);
    test_gauss(r, dout, N * D, 1);
    fwd(o1, a1, qkv, B, T, H, S, causal, NULL);
    ac_nn_attention_forward_ref(o2, a2, qkv, B, T, H, S, causal);
    /* logits: error <= gamma_S sum|q||k|/sqrt(S) <= (S+2) u L, L = max
     * sum|q||k|/sqrt(S); exp within 2u (test above) or libm's 1u;
     * a softmax entry then within (2 (S+2) L + T + 8) u relative */
    double L = 0, vmax = 0;
    for (size_t i = 0; i < N * 3 * D; i++)
        vmax = fabs(qkv[i]) > vmax ? fabs(qkv[i]) : vmax;
    L = vmax * vmax * sqrt((double)S);
    double ta = (2.0 * (double)(S + 2) * L + (double)T + 8.0) * U;
    size_t bad = 0;
    for (size_t i = 0; i < B * H * T * T; i++)
        bad += !(fabs(a1[i] - a2[i]) <= ta * fabs(a2[i]) + DBL_MIN);
    ck_assert_msg(bad == 0, "attention probabilities, shape %zu %zu %zu %zu", B, T, H, S);
    /* out = att V: each of T terms off by ta relative, plus gamma_T */
    double to = ((double)T * ta + (double)(T + 2) * U) * vmax * 2;
    bad = 0;
    for (size_t i = 0; i < N * D; i++)
        bad += !(fabs(o1[i] - o2[i]) <= to);
    ck_assert_msg(bad == 0, "attention output, shape %zu %zu %zu %zu", B, T, H, S);
    /* backward: gradients are sums of T S products of the inputs,
     * their relative errors bounded as above; normwise check */
    bwd(dq1, scr, dout, qkv, a1, B, T, H, S, causal);
    ac_nn_attention_backward_ref(dq2, dout, qkv, a2, B, T, H, S, causal);
    double gmax = 0, dmax = 0;
    for (size_t i = 0; i < N * 3 * D; i++) {
        gmax = fabs(dq2[i]) > gmax ? fabs(dq2[i]) : gmax;
        dmax = fabs(dq1[i] - dq2[i]) > dmax ? fabs(dq1[i] - dq2[i]) : dmax;
    }
    double tb = 4.0 * (double)(T + S + 4) * ta * (vmax * vmax * (double)(T + S) + 1);
    ck_assert_msg(dmax <= tb * (gmax + 1), "attention backward, shape %zu %zu %zu %zu: %g > %g",
                  B, T, H, S, dmax, tb * (gmax + 1));
    free(qkv), free(o1), free(o2), free(a1), free(a2), free(dout), free(dq1), free(dq2);
    free(scr);
}

START_TEST(test_attention_vs_ref)
{
    test_rng r;
    test_rng_init(&r, 3);
    static const size_t shapes[][4] = {{1, 1, 1, 1}, {2, 5, 3, 4}, {3, 64, 4, 16}, {2, 17, 2, 9},
                                       {1, 40, 1, 64}, {2, 33, 2, 32}, {1, 3, 2, 16}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int causal = 0; causal < 2; causal++)
            check_attention(&r, public_fwd, ac_nn_attention_backward, shapes[s][0], shapes[s][1],
                            shapes[s][2], shapes[s][3], causal);
}
END_TEST

/* Both implementations behind ac_nn_attention_* (attn_fused.h): the
 * register-tiled kernels and the per-head dgemms, each against the
 * references, on the head sizes the fused kernels take (multiples of the
 * tile width) and sequence lengths off the tile grid. */
START_TEST(test_attention_fused_blas)
{
    test_rng r;
    test_rng_init(&r, 31);
    static const size_t shapes[][4] = {{2, 64, 4, 16}, {1, 37, 2, 16}, {2, 6, 1, 16},
                                       {1, 50, 2, 32}, {1, 64, 1, 64}, {1, 1, 1, 16}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int causal = 0; causal < 2; causal++) {
            size_t B = shapes[s][0], T = shapes[s][1], H = shapes[s][2], S = shapes[s][3];
            if (nn_attn_fused_fits(T, S))
                check_attention(&r, nn_attention_forward_fused, nn_attention_backward_fused, B, T,
                                H, S, causal);
            check_attention(&r, nn_attention_forward_blas, nn_attention_backward_blas, B, T, H, S,
                            causal);
        }
}
END_TEST

/* The vector softmax row (softmax_fused.c) against its scalar twin on
 * every length 1..130 (vector body and every masked tail), on rows of
 * moderate, huge and tiny spreads, and on rows where every entry but the
 * maximum underflows: each entry within (len + 8) u relative (the sums
 * differ only by association) plus the smallest normal; lanes past len
 * untouched. */
START_TEST(test_softmax_row)
{
    test_rng r;
    test_rng_init(&r, 34);
    const double spreads[] = {1.0, 30.0, 1e-12, 2000.0};
    double a[140], b[140];
    for (size_t sp = 0; sp < sizeof spreads / sizeof *spreads; sp++)
        for (size_t len = 1; len <= 130; len++) {
            test_gauss(&r, a, 140, spreads[sp]);
            a[len / 2] += sp == 3 ? 1e4 : 0.0;
            memcpy(b, a, sizeof a);
            nn_softmax_row(a, len);
            nn_softmax_row_ref(b, len);
            double tol = (double)(len + 8) * U, sum = 0;
            for (size_t j = 0; j < len; j++) {
                ck_assert_msg(fabs(a[j] - b[j]) <= tol * b[j] + DBL_MIN,
                              "softmax len %zu spread %g entry %zu: %.17g vs %.17g", len,
                              spreads[sp], j, a[j], b[j]);
                sum += a[j];
            }
            ck_assert(fabs(sum - 1.0) <= 2 * tol);
            for (size_t j = len; j < 140; j++)
                ck_assert(memcmp(&a[j], &b[j], sizeof a[j]) == 0);
        }
}
END_TEST

/* The vector softmax backward row against its twin (index-order dot
 * product) on every length 1..130 and padding n - len of 0..9: each entry
 * within |a_j| |scale| (len + 8) u sum_i |a_i d_i| (association of the dot
 * product) + 4u |scale a_j (d_j - s)|; zeros exactly from len to n; lanes
 * past n untouched. */
START_TEST(test_softmax_backward_row)
{
    test_rng r;
    test_rng_init(&r, 35);
    double a[150], d[150], e[150];
    for (size_t len = 1; len <= 130; len++) {
        size_t n = len + len % 10;
        double scale = len % 3 ? 0.125 : 1.0;
        test_gauss(&r, a, 150, 1.0);
        for (size_t j = 0; j < 150; j++)
            a[j] = fabs(a[j]) / (double)len;
        test_gauss(&r, d, 150, len % 2 ? 1.0 : 1e3);
        memcpy(e, d, sizeof d);
        double sad = 0, s = 0;
        for (size_t j = 0; j < len; j++) {
            sad += fabs(a[j] * d[j]);
            s += a[j] * d[j];
        }
        nn_softmax_backward_row(d, a, len, n, scale);
        double dd[150];
        memcpy(dd, e, sizeof e);
        nn_softmax_backward_row_ref(e, a, len, n, scale);
        for (size_t j = 0; j < len; j++) {
            double tol = fabs(a[j] * scale) * (double)(len + 8) * U * sad +
                         4 * U * fabs(scale * a[j] * (dd[j] - s));
            ck_assert_msg(fabs(d[j] - e[j]) <= tol + DBL_MIN, "len %zu entry %zu: %g vs %g", len,
                          j, d[j], e[j]);
        }
        for (size_t j = len; j < n; j++)
            ck_assert(d[j] == 0.0 && e[j] == 0.0);
        for (size_t j = n; j < 150; j++)
            ck_assert(memcmp(&d[j], &dd[j], sizeof d[j]) == 0);
    }
}
END_TEST

/* The causal row blocks on BLAS (attn_fused.h) against the references:
 * sequence lengths below, at and across the block size, head sizes off
 * every tile grid. */
static void causal_fwd(double *out, double *att, const double *qkv, size_t B, size_t T, size_t H,
                       size_t S, int causal, const size_t *klen)
{
    ck_assert(causal && !klen);
    nn_attention_forward_causal_blas(out, att, qkv, B, T, H, S);
}

static void causal_bwd(double *dqkv, double *scratch, const double *dout, const double *qkv,
                       const double *att, size_t B, size_t T, size_t H, size_t S, int causal)
{
    ck_assert(causal);
    nn_attention_backward_causal_blas(dqkv, scratch, dout, qkv, att, B, T, H, S);
}

START_TEST(test_attention_causal_blocks)
{
    test_rng r;
    test_rng_init(&r, 33);
    const size_t Ts[] = {1, 2, AC_NN_CAUSAL_BLOCK - 1, AC_NN_CAUSAL_BLOCK, AC_NN_CAUSAL_BLOCK + 1,
                         2 * AC_NN_CAUSAL_BLOCK + 5, 64, 70};
    const size_t Ss[] = {1, 3, 16, 64};
    for (size_t i = 0; i < sizeof Ts / sizeof *Ts; i++)
        for (size_t j = 0; j < sizeof Ss / sizeof *Ss; j++)
            check_attention(&r, causal_fwd, causal_bwd, 2, Ts[i], 2, Ss[j], 1);
}
END_TEST

/* The causal row strips on the register-tiled product (attn_tiled.c)
 * against the references: sequence lengths below, at and across the strip
 * and the tile sizes, head sizes off every tile grid (on builds without
 * AVX-512 the functions fall back to the BLAS blocks, tested the same
 * way), and a head larger than nn_tgemm's block of the inner dimension. */
static void tiled_fwd(double *out, double *att, const double *qkv, size_t B, size_t T, size_t H,
                      size_t S, int causal, const size_t *klen)
{
    ck_assert(causal && !klen);
    nn_attention_forward_causal_tiled(out, att, qkv, B, T, H, S);
}

static void tiled_bwd(double *dqkv, double *scratch, const double *dout, const double *qkv,
                      const double *att, size_t B, size_t T, size_t H, size_t S, int causal)
{
    ck_assert(causal);
    nn_attention_backward_causal_tiled(dqkv, scratch, dout, qkv, att, B, T, H, S);
}

START_TEST(test_attention_causal_tiled)
{
    test_rng r;
    test_rng_init(&r, 34);
    const size_t Ts[] = {1, 2, AC_NN_TILED_STRIP - 1, AC_NN_TILED_STRIP, AC_NN_TILED_STRIP + 1,
                         17, 24, 25, 37, 64, 70};
    const size_t Ss[] = {1, 3, 8, 9, 23, 24, 25, 64};
    for (size_t i = 0; i < sizeof Ts / sizeof *Ts; i++)
        for (size_t j = 0; j < sizeof Ss / sizeof *Ss; j++)
            check_attention(&r, tiled_fwd, tiled_bwd, 2, Ts[i], 2, Ss[j], 1);
    ck_assert(nn_attn_tiled_fits(AC_NN_TILED_STRIP + 1, 16) == NN_TGEMM_SIMD);
    ck_assert(!nn_attn_tiled_fits(AC_NN_TILED_STRIP, 16));
    check_attention(&r, tiled_fwd, tiled_bwd, 1, 133, 1, 130, 1);
}
END_TEST

/* Padding masks (ListOps' len): the fused forward and the BLAS forward
 * agree to rounding on every key length, and masked keys get weight 0. */
START_TEST(test_attention_fused_mask)
{
    test_rng r;
    test_rng_init(&r, 32);
    size_t B = 4, T = 21, H = 2, S = 16, D = H * S, N = B * T;
    if (!nn_attn_fused_fits(T, S))
        return; /* no vector FMA on this machine: one path only */
    size_t klen[4] = {1, 7, 20, 21};
    double *qkv = test_vec(N * 3 * D), *o1 = test_vec(N * D), *o2 = test_vec(N * D);
    double *a1 = test_vec(B * H * T * T), *a2 = test_vec(B * H * T * T);
    test_gauss(&r, qkv, N * 3 * D, 1);
    for (int causal = 0; causal < 2; causal++) {
        nn_attention_forward_fused(o1, a1, qkv, B, T, H, S, causal, klen);
        nn_attention_forward_blas(o2, a2, qkv, B, T, H, S, causal, klen);
        for (size_t b = 0; b < B; b++)
            for (size_t h = 0; h < H; h++)
                for (size_t t = 0; t < T; t++)
                    for (size_t j = 0; j < T; j++) {
                        size_t i = ((b * H + h) * T + t) * T + j;
                        ck_assert(fabs(a1[i] - a2[i]) <= 1e-13);
                        if (j >= klen[b] || (causal && j > t))
                            ck_assert(a1[i] == 0.0);
                    }
        for (size_t i = 0; i < N * D; i++)
            ck_assert(fabs(o1[i] - o2[i]) <= 1e-12);
    }
    free(qkv), free(o1), free(o2), free(a1), free(a2);
}
END_TEST

int main(void)
{
    test_seed_init();
    ac_blas_set_threads(1);
    Suite *s = suite_create("nn_attn");
    TCase *tc = tcase_create("attention");
    test_no_timeout(tc);
    tcase_add_test(tc, test_attention_vs_ref);
    tcase_add_test(tc, test_attention_fused_blas);
    tcase_add_test(tc, test_attention_fused_mask);
    tcase_add_test(tc, test_attention_causal_blocks);
    tcase_add_test(tc, test_attention_causal_tiled);
    tcase_add_test(tc, test_softmax_row);
    tcase_add_test(tc, test_softmax_backward_row);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
