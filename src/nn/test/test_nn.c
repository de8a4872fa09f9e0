/* test_nn.c — the layers and the model of attncheck/nn.h.
 *
 * Oracles:
 *   - ac_nn_exp is core's ac_exp_kernel, bit for bit (the kernel against
 *     MPFR: src/core/test/test_exp.c);
 *   - every optimised kernel against its naive _ref twin (the attention
 *     kernels and softmax rows: test_nn_attn.c), with the bound
 *     gamma_k sum |a||b| of the dot products involved (k the reduction
 *     length, Higham ASNA 3.5);
 *   - every backward against central finite differences of the forward
 *     (Richardson-extrapolated), for each layer and for whole small models of
 *     every architecture, head, LayerNorm placement and attention kind;
 *   - determinism: bit-identical loss and gradients for 1, 2 and 3 threads;
 *   - merged heads (attn_merged.c) against the unmerged block, and the
 *     choice between them by the flop count.
 *
 * AdamW: test_adamw.c.
 *
 * Finite differences.  For f evaluated with absolute rounding error at most
 * e_f, D(h) = (f(x+h) - f(x-h)) / (2h) has error h^2 |f'''|/6 + e_f/h; the
 * extrapolation R = (4 D(h/2) - D(h))/3 has truncation error O(h^4), far
 * below |D(h) - D(h/2)| ~ (3/4)(h^2/6)|f'''|.  The test requires
 *     |g - R| <= |D(h) - D(h/2)| + 8 e_f / h,   e_f = 64 n u (1 + sum|f terms|),
 * n the longest reduction in f.  A wrong derivative (one term missing, a
 * wrong factor) misses by O(|g|), many orders above this bound.
 */
#include <config.h>

#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "attncheck/nn.h"
#include "attncheck/rng.h"
#include "core/exp_kernel.h"
#include "nn/nn_impl.h"
#include "testutil.h"

static const double U = 0x1p-53;

/* ---------------------------------------------------------------- exp */

/* ac_nn_exp is core's fast kernel, ac_exp_kernel, entry by entry, bit for
 * bit (the kernel's accuracy against MPFR: src/core/test/test_exp.c), on
 * the arguments of that test and on the specials */
START_TEST(test_exp_is_kernel)
{
    test_rng r;
    test_rng_init(&r, 1);
    size_t n = 200009, bad = 0;
    double *x = test_vec(n), *y = test_vec(n);
    for (size_t i = 0; i < n; i++)
        x[i] = test_rng_range(&r, -750, 715);
    static const double sp[] = {0, -0.0, INFINITY, -INFINITY, NAN, 709.78, -708.39, -745.1};
    memcpy(x, sp, sizeof sp);
    ac_nn_exp(y, x, n);
    for (size_t i = 0; i < n; i++) {
        double k = ac_exp_kernel(x[i]);
        if (memcmp(&k, &y[i], sizeof k) != 0 && !(isnan(k) && isnan(y[i])))
            bad++;
    }
    free(x);
    free(y);
    ck_assert_msg(bad == 0, "%zu values differ from ac_exp_kernel (seed %llu)", bad,
                  (unsigned long long)test_seed_value);
}
END_TEST

/* ---------------------------------------------------------------- kernels vs references */

/* |a - b| <= tol entrywise; counts failures. */
static size_t count_bad(const double *a, const double *b, const double *tol, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabs(a[i] - b[i]) <= tol[i]))
            bad++;
    return bad;
}

START_TEST(test_linear_vs_ref)
{
    test_rng r;
    test_rng_init(&r, 2);
    static const size_t shapes[][3] = {{1, 1, 1}, {7, 3, 5}, {64, 64, 192}, {33, 70, 17},
                                       {5, 0, 4}, {300, 130, 260}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        size_t N = shapes[s][0], IC = shapes[s][1], OC = shapes[s][2];
        double *x = test_vec(N * IC), *w = test_vec(OC * IC), *b = test_vec(OC), *o1 = test_vec(N * OC),
               *o2 = test_vec(N * OC), *tol = test_vec(N * OC > N * IC ? N * OC : N * IC);
        double *dx1 = test_vec(N * IC), *dx2 = test_vec(N * IC), *dw1 = test_vec(OC * IC), *dw2 = test_vec(OC * IC),
               *db1 = test_vec(OC), *db2 = test_vec(OC), *tw = test_vec(OC * IC + OC);
        test_gauss(&r, x, N * IC, 1);
        test_gauss(&r, w, OC * IC, 1);
        test_gauss(&r, b, OC, 1);
        for (int acc = 0; acc < 2; acc++) {
            test_gauss(&r, o1, N * OC, 1);
            memcpy(o2, o1, N * OC * sizeof *o1);
            ac_nn_linear_forward(o1, x, w, b, N, IC, OC, acc);
            ac_nn_linear_forward_ref(o2, x, w, b, N, IC, OC, acc);
            /* gamma_{IC+2} (sum |x||w| + |b| + |out before|) */
            for (size_t n = 0; n < N; n++)
                for (size_t o = 0; o < OC; o++) {
                    double t = fabs(b[o]) + fabs(o2[n * OC + o]);
                    for (size_t i = 0; i < IC; i++)
                        t += fabs(x[n * IC + i] * w[o * IC + i]);
                    tol[n * OC + o] = 2 * (IC + 3) * U * t;
                }
            ck_assert_msg(count_bad(o1, o2, tol, N * OC) == 0, "linear forward %zux%zux%zu", N,
                          IC, OC);
        }
        /* backward input */
        double *dout = o1;
        test_gauss(&r, dout, N * OC, 1);
        ac_nn_linear_backward_input(dx1, dout, w, N, IC, OC, 0);
        ac_nn_linear_backward_input_ref(dx2, dout, w, N, IC, OC, 0);
        for (size_t n = 0; n < N; n++)
            for (size_t i = 0; i < IC; i++) {
                double t = 0;
                for (size_t o = 0; o < OC; o++)
                    t += fabs(dout[n * OC + o] * w[o * IC + i]);
                tol[n * IC + i] = 2 * (OC + 2) * U * t;
            }
        ck_assert(count_bad(dx1, dx2, tol, N * IC) == 0);
        /* backward weight, in tiles of 7 x 11 (any tiling gives the sums) */
        for (size_t o0 = 0; o0 < OC; o0 += 7)
            for (size_t i0 = 0; i0 < (IC ? IC : 1); i0 += 11)
                ac_nn_linear_backward_weight(dw1, i0 == 0 ? db1 : NULL, dout, x, N, IC, OC, o0,
                                             o0 + 7 < OC ? o0 + 7 : OC, i0,
                                             i0 + 11 < IC ? i0 + 11 : IC);
        ac_nn_linear_backward_weight_ref(dw2, db2, dout, x, N, IC, OC);
        for (size_t o = 0; o < OC; o++) {
            double tb = 0;
            for (size_t i = 0; i < IC; i++) {
                double t = 0;
                for (size_t n = 0; n < N; n++)
                    t += fabs(dout[n * OC + o] * x[n * IC + i]);
                tw[o * IC + i] = 2 * (N + 2) * U * t;
            }
            for (size_t n = 0; n < N; n++)
                tb += fabs(dout[n * OC + o]);
            tw[OC * IC + o] = 2 * (N + 2) * U * tb;
        }
        ck_assert(count_bad(dw1, dw2, tw, OC * IC) == 0);
        ck_assert(count_bad(db1, db2, tw + OC * IC, OC) == 0);
        free(x), free(w), free(b), free(o1), free(o2), free(tol), free(dx1), free(dx2);
        free(dw1), free(dw2), free(db1), free(db2), free(tw);
    }
}
END_TEST

/* ---------------------------------------------------------------- finite differences */

/* f(ctx) evaluates a scalar; fd_check perturbs p[0..n-1] one at a time and
 * compares with g.  scale: typical |terms| of f, n_red: longest reduction. */
typedef double (*scalar_fn)(void *ctx);

static size_t fd_check(scalar_fn f, void *ctx, double *p, const double *g, size_t n, double h,
                       double fscale, size_t n_red, const char *what)
{
    size_t bad = 0;
    double ef = 64.0 * (double)n_red * U * (1.0 + fscale);
    for (size_t i = 0; i < n; i++) {
        double x = p[i];
        double xp = x + h, xm = x - h, xp2 = x + h / 2, xm2 = x - h / 2;
        p[i] = xp;
        double fp = f(ctx);
        p[i] = xm;
        double fm = f(ctx);
        p[i] = xp2;
        double fp2 = f(ctx);
        p[i] = xm2;
        double fm2 = f(ctx);
        p[i] = x;
        double D1 = (fp - fm) / (xp - xm), D2 = (fp2 - fm2) / (xp2 - xm2);
        double R = (4 * D2 - D1) / 3;
        double tol = fabs(D1 - D2) + 8 * ef / h;
        if (!(fabs(g[i] - R) <= tol)) {
            if (bad < 3)
                fprintf(stderr, "%s[%zu]: backward %.17g, finite differences %.17g (tol %.3g)\n",
                        what, i, g[i], R, tol);
            bad++;
        }
    }
    return bad;
}

/* The scalar sum_i w_i out_i of a layer: the backward with dout = w gives
 * its gradient. */
typedef struct {
    size_t N, C, IC, OC, B, T, H, S, V;
    int causal;
    double *inp, *w, *b, *out, *mean, *rstd, *wts, *att, *aux;
    int32_t *tok, *tgt;
} layer_ctx;

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static double f_linear(void *v)
{
    layer_ctx *c = v;
    ac_nn_linear_forward(c->out, c->inp, c->w, c->b, c->N, c->IC, c->OC, 0);
    return dot(c->out, c->wts, c->N * c->OC);
}

START_TEST(test_fd_linear)
{
    test_rng r;
    test_rng_init(&r, 4);
    layer_ctx c = {.N = 5, .IC = 4, .OC = 3};
    c.inp = test_vec(20), c.w = test_vec(12), c.b = test_vec(3), c.out = test_vec(15), c.wts = test_vec(15);
    test_gauss(&r, c.inp, 20, 1), test_gauss(&r, c.w, 12, 1), test_gauss(&r, c.b, 3, 1), test_gauss(&r, c.wts, 15, 1);
    double *dx = test_vec(20), *dw = test_vec(12), *db = test_vec(3);
    ac_nn_linear_backward_input(dx, c.wts, c.w, 5, 4, 3, 0);
    ac_nn_linear_backward_weight(dw, db, c.wts, c.inp, 5, 4, 3, 0, 3, 0, 4);
    size_t bad = fd_check(f_linear, &c, c.inp, dx, 20, 1e-3, 20, 20, "linear dx") +
                 fd_check(f_linear, &c, c.w, dw, 12, 1e-3, 20, 20, "linear dw") +
                 fd_check(f_linear, &c, c.b, db, 3, 1e-3, 20, 20, "linear db");
    ck_assert_msg(bad == 0, "%zu linear gradients wrong (seed %llu)", bad,
                  (unsigned long long)test_seed_value);
    free(c.inp), free(c.w), free(c.b), free(c.out), free(c.wts), free(dx), free(dw), free(db);
}
END_TEST

static double f_layernorm(void *v)
{
    layer_ctx *c = v;
    ac_nn_layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->N, c->C);
    return dot(c->out, c->wts, c->N * c->C);
}

START_TEST(test_fd_layernorm)
{
    test_rng r;
    test_rng_init(&r, 5);
    static const size_t Cs[] = {1, 2, 7, 16};
    for (size_t k = 0; k < 4; k++) {
        size_t N = 3, C = Cs[k];
        layer_ctx c = {.N = N, .C = C};
        c.inp = test_vec(N * C), c.w = test_vec(C), c.b = test_vec(C), c.out = test_vec(N * C), c.wts = test_vec(N * C);
        c.mean = test_vec(N), c.rstd = test_vec(N);
        test_gauss(&r, c.inp, N * C, 2), test_gauss(&r, c.w, C, 1), test_gauss(&r, c.b, C, 1);
        test_gauss(&r, c.wts, N * C, 1);
        double *dx = test_vec(N * C), *dw = test_vec(C), *db = test_vec(C);
        f_layernorm(&c);
        ac_nn_layernorm_backward(dx, NULL, c.wts, c.inp, c.w, c.mean, c.rstd, N, C);
        ac_nn_layernorm_backward_params(dw, db, c.wts, c.inp, c.mean, c.rstd, N, C);
        size_t bad = fd_check(f_layernorm, &c, c.inp, dx, N * C, 1e-3, 10 * C, 4 * C, "ln dx") +
                     fd_check(f_layernorm, &c, c.w, dw, C, 1e-3, 10 * C, 4 * C, "ln dw") +
                     fd_check(f_layernorm, &c, c.b, db, C, 1e-3, 10 * C, 4 * C, "ln db");
        ck_assert_msg(bad == 0, "%zu layernorm gradients wrong, C = %zu", bad, C);
        /* dres adds, also in place */
        double *dx2 = test_vec(N * C);
        for (size_t i = 0; i < N * C; i++)
            dx2[i] = 1.0;
        ac_nn_layernorm_backward(dx2, dx2, c.wts, c.inp, c.w, c.mean, c.rstd, N, C);
        for (size_t i = 0; i < N * C; i++)
            ck_assert(fabs(dx2[i] - 1.0 - dx[i]) <= 4 * U * (1 + fabs(dx[i])));
        free(c.inp), free(c.w), free(c.b), free(c.out), free(c.wts), free(c.mean), free(c.rstd);
        free(dx), free(dw), free(db), free(dx2);
    }
}
END_TEST

static double f_gelu(void *v)
{
    layer_ctx *c = v;
    ac_nn_gelu_forward(c->out, c->inp, c->N);
    return dot(c->out, c->wts, c->N);
}

START_TEST(test_gelu)
{
    test_rng r;
    test_rng_init(&r, 6);
    size_t N = 40;
    layer_ctx c = {.N = N};
    c.inp = test_vec(N), c.out = test_vec(N), c.wts = test_vec(N);
    test_gauss(&r, c.inp, N, 3);
    c.inp[0] = 0, c.inp[1] = -30, c.inp[2] = 30, c.inp[3] = 1e-8;
    test_gauss(&r, c.wts, N, 1);
    double *dx = test_vec(N);
    c.inp[4] = 0x1p-600;
    c.inp[5] = -0x1p-1070;
    f_gelu(&c);
    ac_nn_gelu_backward(dx, c.inp, c.out, c.wts, N);
    ck_assert(fabs(dx[0] - 0.5 * c.wts[0]) <= U * fabs(c.wts[0]));
    ck_assert(fd_check(f_gelu, &c, c.inp, dx, N, 1e-3, 30, 4, "gelu") == 0);
    /* against the tanh form x/2 (1 + tanh z) in 256-bit MPFR (the
     * cancellation in 1 + tanh z costs at most 2|z|/ln 2 < 200 bits here).
     * Our z carries relative error <= 6u, so 2z absolute error 12u|z|,
     * which changes sigma(2z) by a relative 12u|z|; plus exp's 2u and three
     * more roundings. */
    f_gelu(&c);
    mpfr_t x, z, t;
    mpfr_inits2(256, x, z, t, (mpfr_ptr)0);
    for (size_t i = 0; i < N; i++) {
        mpfr_set_d(x, c.inp[i], MPFR_RNDN);
        mpfr_pow_ui(z, x, 3, MPFR_RNDN);
        mpfr_mul_d(z, z, 0.044715, MPFR_RNDN);
        mpfr_add(z, z, x, MPFR_RNDN);
        mpfr_mul_d(z, z, 0.7978845608028654, MPFR_RNDN);
        double zd = mpfr_get_d(z, MPFR_RNDN);
        mpfr_tanh(t, z, MPFR_RNDN);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        mpfr_mul(t, t, x, MPFR_RNDN);
        mpfr_div_ui(t, t, 2, MPFR_RNDN);
        double ref = mpfr_get_d(t, MPFR_RNDN);
        ck_assert_msg(fabs(c.out[i] - ref) <= (8 + 12 * fabs(zd)) * U * fabs(ref),
                      "gelu(%.17g) = %.17g, reference %.17g", c.inp[i], c.out[i], ref);
    }
    mpfr_clears(x, z, t, (mpfr_ptr)0);
    free(c.inp), free(c.out), free(c.wts), free(dx);
}
END_TEST

static double f_attention(void *v)
{
    layer_ctx *c = v;
    ac_nn_attention_forward(c->out, c->att, c->inp, c->B, c->T, c->H, c->S, c->causal);
    return dot(c->out, c->wts, c->B * c->T * c->H * c->S);
}

START_TEST(test_fd_attention)
{
    test_rng r;
    test_rng_init(&r, 7);
    for (int causal = 0; causal < 2; causal++) {
        size_t B = 2, T = 4, H = 2, S = 3, D = H * S, N = B * T;
        layer_ctx c = {.B = B, .T = T, .H = H, .S = S, .causal = causal};
        c.inp = test_vec(N * 3 * D), c.out = test_vec(N * D), c.wts = test_vec(N * D), c.att = test_vec(B * H * T * T);
        test_gauss(&r, c.inp, N * 3 * D, 1), test_gauss(&r, c.wts, N * D, 1);
        double *dqkv = test_vec(N * 3 * D), *scr = test_vec(T * T);
        f_attention(&c);
        ac_nn_attention_backward(dqkv, scr, c.wts, c.inp, c.att, B, T, H, S, causal);
        ck_assert(fd_check(f_attention, &c, c.inp, dqkv, N * 3 * D, 1e-3, 50, 3 * (T + S),
                           causal ? "causal attention" : "attention") == 0);
        free(c.inp), free(c.out), free(c.wts), free(c.att), free(dqkv), free(scr);
    }
}
END_TEST

static double f_headproj(void *v)
{
    layer_ctx *c = v;
    ac_nn_headproj_forward(c->out, c->inp, c->w, c->N, c->C, c->H, c->S);
    return dot(c->out, c->wts, c->N * c->C);
}

START_TEST(test_fd_headproj)
{
    test_rng r;
    test_rng_init(&r, 8);
    size_t N = 5, C = 3, H = 2, S = 4;
    layer_ctx c = {.N = N, .C = C, .H = H, .S = S};
    c.inp = test_vec(N * H * S), c.w = test_vec(H * C * S), c.out = test_vec(N * C), c.wts = test_vec(N * C);
    test_gauss(&r, c.inp, N * H * S, 1), test_gauss(&r, c.w, H * C * S, 1), test_gauss(&r, c.wts, N * C, 1);
    double *dy = test_vec(N * H * S), *dw = test_vec(H * C * S);
    ac_nn_headproj_backward_input(dy, c.wts, c.w, N, C, H, S);
    for (size_t h = 0; h < H; h++)
        ac_nn_headproj_backward_weight(dw, c.wts, c.inp, N, C, H, S, h);
    ck_assert(fd_check(f_headproj, &c, c.inp, dy, N * H * S, 1e-3, 20, 20, "headproj dy") == 0);
    ck_assert(fd_check(f_headproj, &c, c.w, dw, H * C * S, 1e-3, 20, 20, "headproj dW") == 0);
    free(c.inp), free(c.w), free(c.out), free(c.wts), free(dy), free(dw);
}
END_TEST

static double f_xent(void *v)
{
    layer_ctx *c = v;
    ac_nn_xent_forward(c->out, c->aux, c->inp, c->tgt, c->N, c->V);
    return dot(c->out, c->wts, c->N);
}

START_TEST(test_fd_xent)
{
    test_rng r;
    test_rng_init(&r, 9);
    size_t N = 4, V = 6;
    int32_t tgt[4] = {0, 5, 2, 2};
    layer_ctx c = {.N = N, .V = V, .tgt = tgt};
    c.inp = test_vec(N * V), c.out = test_vec(N), c.aux = test_vec(N * V), c.wts = test_vec(N);
    test_gauss(&r, c.inp, N * V, 2);
    c.inp[7] = 800; /* exp would overflow without the shift */
    for (size_t i = 0; i < N; i++)
        c.wts[i] = 1.0;
    f_xent(&c);
    ck_assert(isfinite(c.out[1]) && c.out[1] > 700);
    double *dl = test_vec(N * V);
    ac_nn_xent_backward(dl, c.aux, tgt, 1.0, N, V);
    ck_assert(fd_check(f_xent, &c, c.inp, dl, N * V, 1e-3, 1600, 2 * V, "xent") == 0);
    /* argmax count */
    size_t correct = ac_nn_xent_forward(c.out, c.aux, c.inp, tgt, N, V), mine = 0;
    for (size_t n = 0; n < N; n++) {
        size_t am = 0;
        for (size_t j = 1; j < V; j++)
            if (c.inp[n * V + j] > c.inp[n * V + am])
                am = j;
        mine += am == (size_t)tgt[n];
    }
    ck_assert_uint_eq(correct, mine);
    free(c.inp), free(c.out), free(c.aux), free(c.wts), free(dl);
}
END_TEST

START_TEST(test_encoder)
{
    size_t B = 2, T = 3, C = 2, V = 4;
    int32_t tok[6] = {1, 3, 1, 0, 1, 2};
    double wte[8] = {1, 2, 3, 4, 5, 6, 7, 8}, wpe[6] = {10, 20, 30, 40, 50, 60}, out[12];
    ac_nn_encoder_forward(out, tok, wte, wpe, B, T, C);
    ck_assert(out[0] == 13 && out[1] == 24 && out[2] == 37 && out[3] == 48);
    ac_nn_encoder_forward(out, tok, wte, NULL, B, T, C);
    ck_assert(out[6] == 1 && out[7] == 2);
    double dout[12], dwte[8] = {0}, dwpe[6] = {0};
    for (int i = 0; i < 12; i++)
        dout[i] = i;
    ac_nn_encoder_backward(dwte, dwpe, dout, tok, B, T, C);
    /* token 1 at rows 0, 2, 4: dout rows (0,1), (4,5), (8,9) */
    ck_assert(dwte[2] == 0 + 4 + 8 && dwte[3] == 1 + 5 + 9);
    ck_assert(dwpe[0] == 0 + 6 && dwpe[5] == 5 + 11);
    (void)V;
}
END_TEST

/* ---------------------------------------------------------------- whole models */

typedef struct {
    ac_nn_model *m;
    ac_nn_batch *b;
} model_ctx;

static double f_model(void *v)
{
    model_ctx *c = v;
    ac_nn_stats st;
    ac_err err;
    ck_assert(ac_nn_forward(c->m, c->b, &st, &err) == AC_OK);
    return st.loss;
}

typedef struct {
    const char *name;
    ac_nn_config c;
    size_t B, T;
} model_case;

static ac_nn_config base_tf(void)
{
    ac_nn_config c;
    memset(&c, 0, sizeof c);
    c.arch = AC_NN_ARCH_TRANSFORMER;
    c.input = AC_NN_INPUT_TOKENS;
    c.vocab = 7;
    c.positions = 1;
    c.max_seq = 6;
    c.width = 8;
    c.layers = 2;
    c.heads = 2;
    c.ffn = 12;
    c.causal = 1;
    c.head = AC_NN_HEAD_LM;
    return c;
}

static size_t model_cases(model_case *mc)
{
    size_t n = 0;
    ac_nn_config c = base_tf();
    mc[n++] = (model_case){"pre-LN causal LM", c, 3, 5};
    c.ln = AC_NN_LN_POST;
    mc[n++] = (model_case){"post-LN causal LM", c, 3, 5};
    c.causal = 0;
    c.kind = AC_NN_ATTN_FIXED;
    c.head_dim = 5;
    mc[n++] = (model_case){"post-LN fixed heads LM", c, 2, 6};
    c.head = AC_NN_HEAD_CLASSIFY;
    c.out_dim = 4;
    c.pool = AC_NN_POOL_MEAN;
    mc[n++] = (model_case){"classify mean", c, 3, 5};
    c.ln = AC_NN_LN_PRE;
    c.pool = AC_NN_POOL_FIRST;
    mc[n++] = (model_case){"classify first", c, 3, 4};
    c.pool = AC_NN_POOL_LAST;
    c.causal = 1;
    mc[n++] = (model_case){"classify last causal", c, 3, 4};
    c.input = AC_NN_INPUT_VECTORS;
    c.in_dim = 3;
    c.head = AC_NN_HEAD_REGRESS;
    c.out_dim = 2;
    mc[n++] = (model_case){"vectors regress", c, 2, 5};
    c.positions = 0;
    c.ln = AC_NN_LN_POST;
    c.layers = 1;
    mc[n++] = (model_case){"vectors regress post 1 layer", c, 2, 5};
    /* heads at least as wide as the model: the merged block (attn_merged.c) */
    ac_nn_config g = base_tf();
    g.kind = AC_NN_ATTN_FIXED;
    g.heads = 3;
    g.head_dim = 8;
    mc[n++] = (model_case){"pre-LN merged heads, S = C", g, 3, 5};
    g.ln = AC_NN_LN_POST;
    g.causal = 0;
    g.head_dim = 11;
    mc[n++] = (model_case){"post-LN merged heads, S > C", g, 2, 6};
    g = base_tf();
    g.heads = 1;
    mc[n++] = (model_case){"one standard head (merged)", g, 3, 5};
    ac_nn_config a;
    memset(&a, 0, sizeof a);
    a.arch = AC_NN_ARCH_ATTENTION;
    a.width = 6;
    a.heads = 3;
    a.max_seq = 5;
    a.head = AC_NN_HEAD_REGRESS;
    mc[n++] = (model_case){"attention standard", a, 2, 5};
    a.kind = AC_NN_ATTN_FIXED;
    a.head_dim = 4;
    a.causal = 1;
    mc[n++] = (model_case){"attention fixed causal", a, 2, 5};
    ac_nn_config s;
    memset(&s, 0, sizeof s);
    s.arch = AC_NN_ARCH_SCORES;
    s.width = 4;
    s.heads = 1;
    s.kind = AC_NN_ATTN_FIXED;
    s.head_dim = 4;
    s.max_seq = 4;
    s.head = AC_NN_HEAD_SCORES;
    mc[n++] = (model_case){"scores", s, 1, 4};
    s.heads = 2;
    s.head_dim = 3;
    s.causal = 1;
    mc[n++] = (model_case){"scores 2 heads causal", s, 2, 4};
    return n;
}

/* A random batch for a model: buffers owned by the caller (free_batch). */
static void make_batch(ac_nn_batch *b, const ac_nn_config *c, size_t B, size_t T, uint64_t seed)
{
    ac_rng r;
    ac_rng_init(&r, seed, 1, 2);
    size_t N = B * T, I = c->arch == AC_NN_ARCH_TRANSFORMER ? c->in_dim : c->width;
    size_t K = c->arch == AC_NN_ARCH_ATTENTION ? c->width : c->out_dim;
    int32_t *tok = calloc(N, sizeof *tok), *tgt = calloc(N, sizeof *tgt);
    double *x = test_vec(N * (I ? I : 1)), *y = test_vec(N * (K ? K : 1) + B * c->heads * T * T);
    for (size_t i = 0; i < N; i++) {
        tok[i] = (int32_t)ac_rng_below(&r, c->vocab ? c->vocab : 1);
        tgt[i] = (int32_t)ac_rng_below(&r, c->head == AC_NN_HEAD_LM ? c->vocab
                                                                    : (c->out_dim ? c->out_dim : 1));
    }
    ac_rng_normal_fill(&r, x, N * (I ? I : 1));
    if (c->head == AC_NN_HEAD_SCORES) {
        for (size_t q = 0; q < B * c->heads * T; q++) {
            size_t t = q % T, len = c->causal ? t + 1 : T;
            ac_rng_dirichlet(&r, len, NULL, y + q * T);
        }
    } else {
        ac_rng_normal_fill(&r, y, N * (K ? K : 1));
    }
    *b = (ac_nn_batch){.B = B, .T = T, .tokens = tok, .x = x, .targets = tgt, .y = y};
}

static void free_batch(ac_nn_batch *b)
{
    free((void *)b->tokens);
    free((void *)b->targets);
    free((void *)b->x);
    free((void *)b->y);
}

START_TEST(test_fd_models)
{
    model_case mc[24];
    size_t n = model_cases(mc);
    for (size_t k = 0; k < n; k++) {
        ac_nn_model m;
        ac_err err;
        ck_assert_msg(ac_nn_model_init(&m, &mc[k].c, mc[k].B, mc[k].T, &err) == AC_OK, "%s: %s",
                      mc[k].name, err.msg);
        ac_nn_model_init_weights(&m, test_seed_value + k, 0.4);
        /* LayerNorm weights and biases away from 1 and 0 */
        test_rng r;
        test_rng_init(&r, 100 + k);
        for (size_t i = 0; i < m.nparams; i++)
            m.params[i] += 0.1 * test_rng_gauss(&r);
        ac_nn_batch b;
        make_batch(&b, &mc[k].c, mc[k].B, mc[k].T, test_seed_value + k);
        model_ctx ctx = {&m, &b};
        double L = f_model(&ctx);
        ac_nn_zero_grad(&m);
        ac_nn_backward(&m);
        double *g = test_vec(m.nparams);
        memcpy(g, m.grads, m.nparams * sizeof *g);
        size_t bad = 0, nred = mc[k].B * mc[k].T * 16 + 64;
        for (size_t t = 0; t < m.ntensors; t++) {
            const ac_nn_tensor *tt = &m.tensors[t];
            /* every entry of small tensors, a spread of 24 of larger ones */
            size_t cnt = tt->size <= 24 ? tt->size : 24;
            for (size_t s = 0; s < cnt; s++) {
                size_t i = tt->offset + (tt->size <= 24 ? s : (s * 7919) % tt->size);
                bad += fd_check(f_model, &ctx, m.params + i, g + i, 1, 1e-3, fabs(L) + 1, nred,
                                tt->name);
            }
        }
        ck_assert_msg(bad == 0, "%s: %zu gradient entries disagree with finite differences "
                      "(seed %llu)", mc[k].name, bad, (unsigned long long)test_seed_value);
        free(g);
        free_batch(&b);
        ac_nn_model_free(&m);
    }
}
END_TEST

START_TEST(test_threads_deterministic)
{
#ifdef _OPENMP
    model_case mc[24];
    size_t n = model_cases(mc);
    /* and one whose causal attention takes the row strips on the tiled
     * product (AVX-512 builds: S > 16, T > 8) */
    ac_nn_config ct = base_tf();
    ct.kind = AC_NN_ATTN_FIXED;
    ct.head_dim = 20;
    ct.max_seq = 19;
    mc[n++] = (model_case){"pre-LN causal fixed heads, T 19", ct, 3, 19};
    int saved = omp_get_max_threads();
    for (size_t k = 0; k < n; k++) {
        /* a batch with several chunks: B T > 256 rows */
        size_t B = 70, T = mc[k].T;
        double loss[3], gn[3];
        double *g[3], *p[3];
        for (int th = 1; th <= 3; th++) {
            omp_set_num_threads(th);
            ac_nn_model m;
            ac_err err;
            ck_assert(ac_nn_model_init(&m, &mc[k].c, B, T, &err) == AC_OK);
            ac_nn_model_init_weights(&m, 5, 0.3);
            ac_nn_batch b;
            make_batch(&b, &mc[k].c, B, T, 9);
            ac_nn_stats st;
            ck_assert(ac_nn_forward(&m, &b, &st, &err) == AC_OK);
            ac_nn_zero_grad(&m);
            ac_nn_backward(&m);
            loss[th - 1] = st.loss;
            gn[th - 1] = ac_nn_grad_norm(&m);
            g[th - 1] = test_vec(m.nparams);
            memcpy(g[th - 1], m.grads, m.nparams * sizeof(double));
            ac_nn_adamw o = {1e-3, 0.9, 0.999, 1e-8, 0.01};
            ac_nn_adamw_step(&m, &o, 1, 0.5);
            p[th - 1] = test_vec(m.nparams);
            memcpy(p[th - 1], m.params, m.nparams * sizeof(double));
            size_t np = m.nparams;
            free_batch(&b);
            ac_nn_model_free(&m);
            if (th > 1) {
                ck_assert_msg(memcmp(&loss[0], &loss[th - 1], sizeof(double)) == 0 &&
                                  memcmp(&gn[0], &gn[th - 1], sizeof(double)) == 0,
                              "%s: loss or gradient norm differs with %d threads", mc[k].name, th);
                ck_assert_msg(memcmp(g[0], g[th - 1], np * sizeof(double)) == 0,
                              "%s: gradients differ with %d threads", mc[k].name, th);
                ck_assert_msg(memcmp(p[0], p[th - 1], np * sizeof(double)) == 0,
                              "%s: AdamW step differs with %d threads", mc[k].name, th);
            }
        }
        for (int i = 0; i < 3; i++) {
            free(g[i]);
            free(p[i]);
        }
    }
    omp_set_num_threads(saved);
#endif
}
END_TEST

/* Merged heads (attn_merged.c) against the unmerged block on the same
 * weights: the same function and gradients, so they differ by rounding
 * only, within the normwise bound train_torch.py derives for two
 * implementations of one model, applied to the whole gradient vector
 * (max|g_merged - g| <= tol max|g| over all parameters, tol = 2 * 16 * 12
 * (L + 2) n u, n the longest reduction; a wrong term misses by 1e-4 or more
 * of max|g|, as the planted bugs of the PyTorch check show), and the
 * key bias has an exactly zero gradient in the merged block (a softmax row
 * is unchanged by a constant). */
/* Random transformers with head size S >= width C: widths 1 to 13 (not
 * multiples of the register tiles), S = C, C + 1 or 2C + 3, 1 to 5 heads,
 * sequences of 1 to 9 tokens, 1 to 4 of them, causal or not, pre- or
 * post-LN, LM, classification or regression head. */
static size_t merged_cases(model_case *mc, size_t cap, uint64_t seed)
{
    ac_rng r;
    ac_rng_init(&r, seed, 0x6d657267 /* "merg" */, 0);
    size_t n = 0;
    while (n < cap) {
        ac_nn_config c = base_tf();
        c.width = 1 + (size_t)ac_rng_below(&r, 13);
        c.heads = 1 + (size_t)ac_rng_below(&r, 5);
        c.kind = AC_NN_ATTN_FIXED;
        size_t pick = (size_t)ac_rng_below(&r, 3);
        c.head_dim = pick == 0 ? c.width : pick == 1 ? c.width + 1 : 2 * c.width + 3;
        c.layers = 1 + (size_t)ac_rng_below(&r, 2);
        c.ffn = 1 + (size_t)ac_rng_below(&r, 9);
        c.causal = (int)ac_rng_below(&r, 2);
        c.ln = ac_rng_below(&r, 2) ? AC_NN_LN_POST : AC_NN_LN_PRE;
        size_t head = (size_t)ac_rng_below(&r, 3);
        c.max_seq = 9;
        if (head == 1) {
            c.head = AC_NN_HEAD_CLASSIFY;
            c.out_dim = 3;
            c.pool = AC_NN_POOL_MEAN;
        } else if (head == 2) {
            c.input = AC_NN_INPUT_VECTORS;
            c.in_dim = 2;
            c.head = AC_NN_HEAD_REGRESS;
            c.out_dim = 2;
        }
        size_t B = 1 + (size_t)ac_rng_below(&r, 4), T = 1 + (size_t)ac_rng_below(&r, 9);
        mc[n++] = (model_case){"random merged", c, B, T};
    }
    return n;
}

START_TEST(test_merged_vs_unmerged)
{
    model_case mc[24 + 40];
    size_t n = model_cases(mc), checked = 0;
    n += merged_cases(mc + n, 40, test_seed_value);
    for (size_t k = 0; k < n; k++) {
        ac_nn_model m;
        ac_err err;
        ck_assert(ac_nn_model_init(&m, &mc[k].c, mc[k].B, mc[k].T, &err) == AC_OK);
        if (!nn_merge_eligible(&m)) {
            ck_assert_msg(!m.w->merge, "%s: merged heads on an ineligible model", mc[k].name);
            ac_nn_model_free(&m);
            continue;
        }
        ck_assert_msg(m.w->merge == NN_MERGE_AUTO, "%s: merged heads are not chosen by the count",
                      mc[k].name);
        ac_nn_model_init_weights(&m, test_seed_value + k, 0.4);
        test_rng r;
        test_rng_init(&r, 300 + k);
        for (size_t i = 0; i < m.nparams; i++)
            m.params[i] += 0.1 * test_rng_gauss(&r); /* biases away from 0 */
        ac_nn_batch b;
        make_batch(&b, &mc[k].c, mc[k].B, mc[k].T, test_seed_value + k);
        double loss[2], *g[2];
        for (int merged = 1; merged >= 0; merged--) {
            nn_merge_set(&m, merged ? NN_MERGE_ON : NN_MERGE_OFF);
            ac_nn_stats st;
            ck_assert(ac_nn_forward(&m, &b, &st, &err) == AC_OK);
            ck_assert_int_eq(m.w->merge_pass, merged);
            ac_nn_zero_grad(&m);
            ac_nn_backward(&m);
            loss[merged] = st.loss;
            g[merged] = test_vec(m.nparams);
            memcpy(g[merged], m.grads, m.nparams * sizeof(double));
        }
        const ac_nn_config *c = &mc[k].c;
        size_t red = mc[k].B * mc[k].T;
        size_t cand[4] = {m.D, c->ffn, c->vocab, c->width};
        for (int i = 0; i < 4; i++)
            red = cand[i] > red ? cand[i] : red;
        double tol = 2.0 * 16 * 12 * (double)(c->layers + 2) * (double)red * U;
        ck_assert_msg(fabs(loss[1] - loss[0]) <= tol * fabs(loss[0]),
                      "%s (case %zu, seed %llu): loss %.17g vs %.17g", mc[k].name, k,
                      (unsigned long long)test_seed_value, loss[1], loss[0]);
        double gmax = 0;
        for (size_t i = 0; i < m.nparams; i++)
            gmax = fmax(gmax, fabs(g[0][i]));
        for (size_t t = 0; t < m.ntensors; t++) {
            const ac_nn_tensor *tt = &m.tensors[t];
            double scale = 0, diff = 0;
            for (size_t i = tt->offset; i < tt->offset + tt->size; i++) {
                scale = fmax(scale, fabs(g[0][i]));
                diff = fmax(diff, fabs(g[1][i] - g[0][i]));
            }
            /* normwise over the whole gradient: a tensor whose gradient
             * cancels (a LayerNorm of width 1 or 2, a nearly unused input)
             * carries rounding errors of the size of the terms that cancel,
             * which are of the order of the whole gradient, not of its own */
            ck_assert_msg(diff <= tol * gmax,
                          "%s (case %zu, seed %llu): %s: max|diff| %.3g > %.3g x max|g| %.3g "
                          "(this tensor's max|g| %.3g)",
                          mc[k].name, k, (unsigned long long)test_seed_value, tt->name, diff,
                          tol, gmax, scale);
            if (strstr(tt->name, "attn.qkv.bias"))
                for (size_t i = m.D; i < 2 * m.D; i++)
                    ck_assert_msg(g[1][tt->offset + i] == 0.0, "%s: key bias gradient %g",
                                  mc[k].name, g[1][tt->offset + i]);
        }
        checked++;
        free(g[0]);
        free(g[1]);
        free_batch(&b);
        ac_nn_model_free(&m);
    }
    ck_assert_uint_ge(checked, 43);
}
END_TEST

START_TEST(test_errors)
{
    ac_nn_config c = base_tf();
    ac_nn_model m;
    ac_err err;
    c.heads = 3; /* does not divide 8 */
    ck_assert_int_eq(ac_nn_model_init(&m, &c, 2, 4, &err), AC_EUSAGE);
    ck_assert(strstr(err.msg, "heads 3 does not divide width 8") != NULL);
    ck_assert_str_eq(err.fields, "heads,width,kind,head_dim");
    c = base_tf();
    ck_assert_int_eq(ac_nn_model_init(&m, &c, 2, 7, &err), AC_EUSAGE); /* T > max_seq */
    c.layers = 0;
    ck_assert_int_eq(ac_nn_model_init(&m, &c, 2, 4, &err), AC_EUSAGE);
    c = base_tf();
    c.input = AC_NN_INPUT_VECTORS;
    c.in_dim = 2;
    ck_assert_int_eq(ac_nn_model_init(&m, &c, 2, 4, &err), AC_EUSAGE); /* LM needs tokens */
    c = base_tf();
    c.width = (size_t)1 << 40;
    c.heads = 1;
    ck_assert(ac_nn_model_init(&m, &c, 2, 4, &err) != AC_OK);
    ac_nn_model_free(&m); /* zeroed after failure */
    c = base_tf();
    ck_assert(ac_nn_model_init(&m, &c, 2, 4, &err) == AC_OK);
    int32_t tok[8] = {0, 1, 2, 3, 4, 5, 6, 7}, tgt[8] = {0};
    ac_nn_batch b = {2, 4, tok, NULL, tgt, NULL, NULL, NULL};
    ck_assert_int_eq(ac_nn_forward(&m, &b, NULL, &err), AC_EDATA); /* token 7 >= V */
    ck_assert(strstr(err.msg, "token 7") != NULL);
    tok[7] = 1;
    tgt[3] = -1;
    ck_assert_int_eq(ac_nn_forward(&m, &b, NULL, &err), AC_EDATA);
    tgt[3] = 0;
    b.B = 3;
    ck_assert_int_eq(ac_nn_forward(&m, &b, NULL, &err), AC_EUSAGE);
    b.B = 1;
    b.T = 3; /* a smaller batch fits */
    ck_assert_int_eq(ac_nn_forward(&m, &b, NULL, &err), AC_OK);
    ck_assert(ac_nn_tensor_find(&m, "layer1.ffn.fc.weight") != NULL);
    ck_assert(ac_nn_tensor_find(&m, "layer2.ffn.fc.weight") == NULL);
    ac_nn_model_free(&m);
    ac_nn_model_free(NULL);
}
END_TEST

START_TEST(test_tensor_table)
{
    /* the blocks are carved without gaps, and the attention stacks are
     * consecutive (Wq, Wk, Wv form one (3D, C) matrix) */
    model_case mc[24];
    size_t n = model_cases(mc);
    for (size_t k = 0; k < n; k++) {
        ac_nn_model m;
        ck_assert(ac_nn_model_init(&m, &mc[k].c, 1, 2, NULL) == AC_OK);
        size_t off = 0;
        for (size_t i = 0; i < m.ntensors; i++) {
            ck_assert_uint_eq(m.tensors[i].offset, off);
            size_t s = 1;
            for (size_t d = 0; d < m.tensors[i].ndim; d++)
                s *= m.tensors[i].shape[d];
            ck_assert_uint_eq(s, m.tensors[i].size);
            off += s;
        }
        ck_assert_uint_eq(off, m.nparams);
        ac_nn_model_free(&m);
    }
}
END_TEST

/* The merge is chosen per batch by the flop count of §6.7 (iii): for S = C
 * exactly when N = B T > C; and a forward pass reports the form it ran. */
START_TEST(test_merge_by_count)
{
    static const size_t widths[] = {4, 8, 16};
    size_t checked = 0;
    for (size_t iw = 0; iw < 3; iw++)
        for (size_t dp = 0; dp <= 1; dp++) {
            ac_nn_config c = base_tf();
            c.width = widths[iw];
            c.heads = 1;
            c.max_seq = 40;
            if (dp) {
                c.kind = AC_NN_ATTN_FIXED;
                c.head_dim = 2 * c.width; /* S = 2C */
            }
            ac_nn_model m;
            ac_err err;
            ck_assert(ac_nn_model_init(&m, &c, 4, 40, &err) == AC_OK);
            ck_assert(nn_merge_eligible(&m));
            ac_nn_model_init_weights(&m, 7, 0.4);
            for (size_t B = 1; B <= 4; B++)
                for (size_t T = 1; T <= 40; T += 3) {
                    double C = (double)c.width, S = (double)m.S, N = (double)(B * T),
                           bt2 = (double)(B * T * T);
                    int want = 4 * N * C * C + 4 * bt2 * C + 4 * C * C * S <
                               8 * N * C * S + 4 * bt2 * S;
                    if (!dp)
                        ck_assert_int_eq(want, B * T > c.width); /* §6.7: N > C for S = C */
                    ck_assert_int_eq(nn_merge_pays(&m, B, T), want);
                    ac_nn_batch b;
                    make_batch(&b, &c, B, T, 11 + B * T);
                    ac_nn_stats st;
                    ck_assert(ac_nn_forward(&m, &b, &st, &err) == AC_OK);
                    ck_assert_msg(m.w->merge_pass == want, "C = %zu, S = %zu, B = %zu, T = %zu",
                                  c.width, m.S, B, T);
                    nn_merge_set(&m, NN_MERGE_OFF);
                    ck_assert(ac_nn_forward(&m, &b, &st, &err) == AC_OK);
                    ck_assert(!m.w->merge_pass);
                    nn_merge_set(&m, NN_MERGE_AUTO);
                    free_batch(&b);
                    checked++;
                }
            ac_nn_model_free(&m);
        }
    ck_assert_uint_eq(checked, 3 * 2 * 4 * 14);
}
END_TEST

int main(void)
{
    test_seed_init();
    ac_blas_set_threads(1);
    Suite *s = suite_create("nn");
    TCase *tc = tcase_create("kernels");
    test_no_timeout(tc);
    tcase_add_test(tc, test_exp_is_kernel);
    tcase_add_test(tc, test_linear_vs_ref);
    tcase_add_test(tc, test_fd_linear);
    tcase_add_test(tc, test_fd_layernorm);
    tcase_add_test(tc, test_gelu);
    tcase_add_test(tc, test_fd_attention);
    tcase_add_test(tc, test_fd_headproj);
    tcase_add_test(tc, test_fd_xent);
    tcase_add_test(tc, test_encoder);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("model");
    test_no_timeout(tm);
    tcase_add_test(tm, test_fd_models);
    tcase_add_test(tm, test_threads_deterministic);
    tcase_add_test(tm, test_merged_vs_unmerged);
    tcase_add_test(tm, test_merge_by_count);
    tcase_add_test(tm, test_errors);
    tcase_add_test(tm, test_tensor_table);
    suite_add_tcase(s, tm);
    return test_run_suite(s);
}
