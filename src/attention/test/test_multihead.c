/* test_multihead.c — multi-head attention layers: the BLAS forward pass
 * against the naive reference kernel, the backward pass against forward-mode
 * differentiation (dual numbers on the naive loops), the stage-0 enclosure
 * against Arb at 512 bits (containment), and the .npy layout and its errors.
 *
 * Tolerances: first-order forward error bounds.  An output entry is a sum
 * over heads of Wo Wv X P; with M = max_ij (|Wo_cat| |Wv_stack| |X|)_ij and
 * the logits bounded by Lam = max |K|'|Q|/sqrt(hs), every rounding in the
 * projections (gamma_d), the logits (gamma_hs, amplified by at most Lam in the
 * softmax), the softmax (about n + 4 roundings) and the output sums
 * (gamma_{hh + n}) contributes at most (d + hs + hh + n + 8) u M (1 + 2 Lam)
 * to first order; two algorithms differ by at most twice that. */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/ac_arb.h"
#include "core/ball.h"
#include "attention/multihead_arb.h"
#include "attncheck/blas.h"
#include "attncheck/multihead.h"
#include "testutil.h"

/* Threads of the forward pass: it uses min(OpenMP, BLAS) threads. */
static void set_threads(int t)
{
    ac_blas_set_threads(t);
#ifdef _OPENMP
    omp_set_num_threads(t);
#endif
}

static void fill_layer(ac_mh *L, size_t d, size_t h, size_t hs, test_rng *r, double scale)
{
    ck_assert(ac_mh_init(L, d, h, hs, NULL) == AC_OK);
    for (size_t i = 0; i < ac_mh_nparams(L); i++)
        L->params[i] = scale * test_rng_gauss(r);
}

static void fill_mat(ac_mat *X, size_t d, size_t n, test_rng *r, double scale)
{
    ck_assert(ac_mat_init(X, d, n, NULL) == AC_OK);
    for (size_t i = 0; i < d * n; i++)
        X->data[i] = scale * test_rng_gauss(r);
}

/* the first-order bound of the header comment */
static double forward_tol(const ac_mh *L, const ac_mat *X)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs, n = X->cols;
    double M = 0, Lam = 0;
    /* |Wo_cat| (|Wv_stack| |X|) and |K|'|Q| / sqrt(hs), naively */
    for (size_t r = 0; r < d; r++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t c = 0; c < hh; c++) {
                double t = 0;
                for (size_t k = 0; k < d; k++)
                    t += fabs(L->wv[c * d + k]) * fabs(AC_MAT(X, k, j));
                s += fabs(L->wo[r * hh + c]) * t;
            }
            if (s > M)
                M = s;
        }
    for (size_t i = 0; i < L->h; i++)
        for (size_t a = 0; a < n; a++)
            for (size_t b = 0; b < n; b++) {
                double s = 0;
                for (size_t r = 0; r < hs; r++) {
                    double ka = 0, qb = 0;
                    for (size_t k = 0; k < d; k++) {
                        ka += fabs(L->wk[(i * hs + r) * d + k]) * fabs(AC_MAT(X, k, a));
                        qb += fabs(L->wq[(i * hs + r) * d + k]) * fabs(AC_MAT(X, k, b));
                    }
                    s += ka * qb;
                }
                s /= sqrt((double)hs);
                if (s > Lam)
                    Lam = s;
            }
    return 2.0 * (double)(d + hs + hh + n + 8) * AC_U * M * (1 + 2 * Lam) + DBL_MIN;
}

START_TEST(test_forward_vs_reference)
{
    static const size_t shapes[][4] = {/* d, h, hs, n */
                                       {1, 1, 1, 1}, {4, 2, 2, 3}, {5, 1, 3, 1}, {8, 4, 2, 8},
                                       {16, 4, 8, 5}, {12, 3, 4, 17}, {32, 8, 4, 16},
                                       {7, 2, 9, 2}, {9, 1, 13, 1}, {20, 3, 7, 31},
                                       {17, 2, 33, 129}, {6, 2, 5, 140}};
    test_rng r;
    test_rng_init(&r, 301);
    int bad = 0;
    char msg[256] = "";
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++)
        for (int rep = 0; rep < 4; rep++) {
            size_t d = shapes[t][0], h = shapes[t][1], hs = shapes[t][2], n = shapes[t][3];
            ac_mh L;
            ac_mat X = {0}, Y1 = {0}, Y2 = {0};
            fill_layer(&L, d, h, hs, &r, 1.0 / sqrt((double)d));
            fill_mat(&X, d, n, &r, rep == 3 ? 4.0 : 1.0);
            ac_mat_init(&Y1, d, n, NULL);
            ac_mat_init(&Y2, d, n, NULL);
            ck_assert(ac_mh_forward(&Y1, &L, &X, NULL, NULL) == AC_OK);
            ck_assert(ac_mh_forward_ref(&Y2, &L, &X, NULL) == AC_OK);
            double tol = forward_tol(&L, &X);
            for (size_t i = 0; i < d * n; i++)
                if (!(fabs(Y1.data[i] - Y2.data[i]) <= tol)) {
                    if (!bad)
                        snprintf(msg, sizeof msg, "shape %zu: |%g - %g| > %g", t, Y1.data[i],
                                 Y2.data[i], tol);
                    bad++;
                }
            /* a reused workspace gives the same bits */
            ac_mh_work w;
            ck_assert(ac_mh_work_init(&w, &L, n, NULL) == AC_OK);
            ac_mat Y3 = {0};
            ac_mat_init(&Y3, d, n, NULL);
            ac_mh_forward(&Y3, &L, &X, &w, NULL);
            ac_mh_forward(&Y3, &L, &X, &w, NULL);
            ck_assert(memcmp(Y3.data, Y1.data, d * n * sizeof(double)) == 0);
            ac_mh_work_free(&w);
            ac_mat_free(&Y3);
            ac_mh_free(&L);
            ac_mat_free(&X);
            ac_mat_free(&Y1);
            ac_mat_free(&Y2);
        }
    ck_assert_msg(bad == 0, "%d entries off (first: %s)", bad, msg);
}
END_TEST

START_TEST(test_forward_blocks_and_threads)
{
    /* Shapes above the threading threshold (~2 Mflop), with several
     * projection blocks (3 h hs > 128, a partial last block) and output
     * blocks (d > 32, not a multiple of 8): the blocked, threaded pass
     * against the naive reference within the first-order bound, and the
     * same bits with 1, 2 and 3 threads (the decomposition does not depend
     * on the thread count).  n <= 128 takes the small path (register-tiled
     * products, mh_gemm.c, when AVX-512 is targeted), n = 140 the BLAS path. */
    static const size_t shapes[][4] = {/* d, h, hs, n */
                                       {64, 8, 32, 16}, {100, 5, 40, 33}, {48, 16, 3, 70},
                                       {130, 2, 65, 15}, {96, 1, 160, 45}, {24, 3, 8, 140}};
    test_rng r;
    test_rng_init(&r, 307);
    int bad = 0, diff = 0;
    char msg[256] = "";
    int old = ac_blas_get_threads();
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++) {
        size_t d = shapes[t][0], h = shapes[t][1], hs = shapes[t][2], n = shapes[t][3];
        ac_mh L;
        ac_mat X = {0}, Y[3] = {{0}}, R = {0};
        fill_layer(&L, d, h, hs, &r, 1.0 / sqrt((double)d));
        fill_mat(&X, d, n, &r, 1.0);
        ck_assert(2.0 * (double)n * (double)(h * hs) * (4.0 * (double)d + 2.0 * (double)n) >= 2e6);
        ac_mat_init(&R, d, n, NULL);
        ck_assert(ac_mh_forward_ref(&R, &L, &X, NULL) == AC_OK);
        double tol = forward_tol(&L, &X);
        ac_mh_work w;
        set_threads(3); /* the workspace has softmax scratch for 3 threads */
        ck_assert(ac_mh_work_init(&w, &L, n, NULL) == AC_OK);
        ck_assert_int_ge(w.scratch_threads, 3);
        for (int k = 0; k < 3; k++) {
            set_threads(k + 1);
            ac_mat_init(&Y[k], d, n, NULL);
            ck_assert(ac_mh_forward(&Y[k], &L, &X, k == 1 ? NULL : &w, NULL) == AC_OK);
            if (k && memcmp(Y[k].data, Y[0].data, d * n * sizeof(double)) != 0) {
                snprintf(msg, sizeof msg, "shape %zu: %d threads give other bits than 1", t, k + 1);
                diff++;
            }
        }
        for (size_t i = 0; i < d * n; i++)
            if (!(fabs(Y[0].data[i] - R.data[i]) <= tol)) {
                if (!bad)
                    snprintf(msg, sizeof msg, "shape %zu: |%g - %g| > %g", t, Y[0].data[i],
                             R.data[i], tol);
                bad++;
            }
        ac_mh_work_free(&w);
        for (int k = 0; k < 3; k++)
            ac_mat_free(&Y[k]);
        ac_mat_free(&R);
        ac_mat_free(&X);
        ac_mh_free(&L);
    }
    set_threads(old);
    ck_assert_msg(bad == 0 && diff == 0, "%d entries off, %d thread-count differences (%s)", bad,
                  diff, msg);
}
END_TEST

START_TEST(test_forward_large_logits)
{
    /* Logits of several hundred (|K_i^T Q_i| / sqrt(hs) up to ~2000): e^z
     * overflows unless the softmax subtracts each column's maximum.  The
     * output must be finite and within the first-order bound of the
     * reference, and every column of every P_i must sum to 1 within
     * (n + 2) u.  Small path (n <= 128) and BLAS path (n = 131). */
    static const size_t shapes[][4] = {/* d, h, hs, n */
                                       {8, 2, 4, 1}, {16, 3, 8, 17}, {24, 1, 11, 64},
                                       {10, 2, 3, 131}};
    test_rng r;
    test_rng_init(&r, 311);
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++) {
        size_t d = shapes[t][0], h = shapes[t][1], hs = shapes[t][2], n = shapes[t][3];
        ac_mh L;
        ac_mat X = {0}, Y = {0}, R = {0};
        ac_mh_work w;
        fill_layer(&L, d, h, hs, &r, 1.0);
        fill_mat(&X, d, n, &r, 12.0);
        ac_mat_init(&Y, d, n, NULL);
        ac_mat_init(&R, d, n, NULL);
        ck_assert(ac_mh_work_init(&w, &L, n, NULL) == AC_OK);
        ck_assert(ac_mh_forward(&Y, &L, &X, &w, NULL) == AC_OK);
        ck_assert(ac_mh_forward_ref(&R, &L, &X, NULL) == AC_OK);
        double tol = forward_tol(&L, &X);
        for (size_t i = 0; i < d * n; i++)
            ck_assert_msg(isfinite(Y.data[i]) && fabs(Y.data[i] - R.data[i]) <= tol,
                          "shape %zu entry %zu: %g vs %g (bound %g)", t, i, Y.data[i], R.data[i],
                          tol);
        for (size_t i = 0; i < h; i++)
            for (size_t j = 0; j < n; j++) {
                double s = 0;
                for (size_t a = 0; a < n; a++)
                    s += w.p[i * n * n + a * n + j];
                ck_assert_msg(fabs(s - 1) <= (double)(n + 2) * AC_U,
                              "shape %zu head %zu column %zu sums to 1 + %g", t, i, j, s - 1);
            }
        ac_mh_work_free(&w);
        ac_mat_free(&Y);
        ac_mat_free(&R);
        ac_mat_free(&X);
        ac_mh_free(&L);
    }
}
END_TEST

START_TEST(test_forward_shapes)
{
    ac_mh L;
    ac_mat X = {0}, Y = {0};
    ac_err err;
    test_rng r;
    test_rng_init(&r, 302);
    fill_layer(&L, 6, 2, 3, &r, 1.0);
    fill_mat(&X, 5, 4, &r, 1.0);
    ac_mat_init(&Y, 6, 4, NULL);
    ck_assert_int_eq(ac_mh_forward(&Y, &L, &X, NULL, &err), AC_EUSAGE);
    ac_mat_free(&X);
    fill_mat(&X, 6, 3, &r, 1.0);
    ck_assert_int_eq(ac_mh_forward(&Y, &L, &X, NULL, &err), AC_EUSAGE); /* Y is 6 x 4 */
    ac_mh_work w;
    ac_mh_work_init(&w, &L, 4, NULL);
    ac_mat_free(&Y);
    ac_mat_init(&Y, 6, 3, NULL);
    ck_assert_int_eq(ac_mh_forward(&Y, &L, &X, &w, &err), AC_EUSAGE); /* workspace for n = 4 */
    ac_mh_work_free(&w);
    ck_assert_int_eq(ac_mh_forward(&Y, &L, &X, NULL, &err), AC_OK);
    /* n = 0: nothing to do */
    ac_mat X0 = {0}, Y0 = {0};
    ac_mat_init(&X0, 6, 0, NULL);
    ac_mat_init(&Y0, 6, 0, NULL);
    ck_assert_int_eq(ac_mh_forward(&Y0, &L, &X0, NULL, &err), AC_OK);
    ac_mat_free(&X0);
    ac_mat_free(&Y0);
    /* bad sizes */
    ac_mh Z;
    ck_assert_int_eq(ac_mh_init(&Z, 0, 1, 1, &err), AC_EUSAGE);
    ck_assert_int_eq(ac_mh_init(&Z, 1, 1, 0, &err), AC_EUSAGE);
    ck_assert_int_eq(ac_mh_init(&Z, SIZE_MAX / 2, 4, 4, &err), AC_EUSAGE);
    ac_mh_free(&Z);
    ac_mh_free(NULL);
    ac_mh_free(&L);
    ac_mat_free(&X);
    ac_mat_free(&Y);
}
END_TEST

/* ---- backward: forward-mode differentiation of the naive loops ---------- */

typedef struct {
    double v, e; /* value and derivative along E */
} dual;

static dual dmul(dual a, dual b) { return (dual){a.v * b.v, a.e * b.v + a.v * b.e}; }
static dual dadd(dual a, dual b) { return (dual){a.v + b.v, a.e + b.e}; }

/* y and dy/dt of y(X + t E) at t = 0, by the naive loops in dual numbers */
static void forward_dual(dual *Y, const ac_mh *L, const ac_mat *X, const ac_mat *E)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs, n = X->cols;
    dual *x = malloc(d * n * sizeof(dual)), *q = malloc(hs * n * sizeof(dual)),
         *k = malloc(hs * n * sizeof(dual)), *v = malloc(hs * n * sizeof(dual)),
         *p = malloc(n * n * sizeof(dual));
    for (size_t i = 0; i < d * n; i++)
        x[i] = (dual){X->data[i], E->data[i]};
    for (size_t i = 0; i < d * n; i++)
        Y[i] = (dual){0, 0};
    for (size_t i = 0; i < L->h; i++) {
        for (size_t r = 0; r < hs; r++)
            for (size_t j = 0; j < n; j++) {
                dual aq = {0, 0}, ak = {0, 0}, av = {0, 0};
                for (size_t c = 0; c < d; c++) {
                    dual xc = x[c * n + j];
                    aq = dadd(aq, dmul((dual){L->wq[(i * hs + r) * d + c], 0}, xc));
                    ak = dadd(ak, dmul((dual){L->wk[(i * hs + r) * d + c], 0}, xc));
                    av = dadd(av, dmul((dual){L->wv[(i * hs + r) * d + c], 0}, xc));
                }
                q[r * n + j] = aq;
                k[r * n + j] = ak;
                v[r * n + j] = av;
            }
        for (size_t j = 0; j < n; j++) {
            double mx = -INFINITY;
            for (size_t a = 0; a < n; a++) {
                dual z = {0, 0};
                for (size_t r = 0; r < hs; r++)
                    z = dadd(z, dmul(k[r * n + a], q[r * n + j]));
                z.v /= sqrt((double)hs);
                z.e /= sqrt((double)hs);
                p[a * n + j] = z;
                if (z.v > mx)
                    mx = z.v;
            }
            double s = 0, se = 0;
            for (size_t a = 0; a < n; a++) {
                double ev = exp(p[a * n + j].v - mx);
                p[a * n + j] = (dual){ev, ev * p[a * n + j].e};
                s += ev;
                se += p[a * n + j].e;
            }
            for (size_t a = 0; a < n; a++) {
                dual t = p[a * n + j];
                p[a * n + j] = (dual){t.v / s, (t.e * s - t.v * se) / (s * s)};
            }
        }
        for (size_t r = 0; r < d; r++)
            for (size_t j = 0; j < n; j++) {
                dual acc = {0, 0};
                for (size_t c = 0; c < hs; c++) {
                    dual hcj = {0, 0};
                    for (size_t t = 0; t < n; t++)
                        hcj = dadd(hcj, dmul(v[c * n + t], p[t * n + j]));
                    acc = dadd(acc, dmul((dual){L->wo[r * hh + i * hs + c], 0}, hcj));
                }
                Y[r * n + j] = dadd(Y[r * n + j], acc);
            }
    }
    free(x);
    free(q);
    free(k);
    free(v);
    free(p);
}

START_TEST(test_backward_vs_forward_mode)
{
    static const size_t shapes[][4] = {{1, 1, 1, 1}, {4, 2, 2, 3}, {8, 4, 2, 8}, {6, 2, 5, 4},
                                       {12, 3, 4, 7}};
    test_rng r;
    test_rng_init(&r, 303);
    int bad = 0;
    char msg[200] = "";
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++)
        for (int rep = 0; rep < 5; rep++) {
            size_t d = shapes[t][0], h = shapes[t][1], hs = shapes[t][2], n = shapes[t][3];
            ac_mh L;
            ac_mat X = {0}, E = {0}, dY = {0}, dX = {0};
            fill_layer(&L, d, h, hs, &r, 1.0 / sqrt((double)d));
            fill_mat(&X, d, n, &r, 1.0 + rep);
            fill_mat(&E, d, n, &r, 1.0);
            fill_mat(&dY, d, n, &r, 1.0);
            ac_mat_init(&dX, d, n, NULL);
            ck_assert(ac_mh_backward(&dX, &L, &X, &dY, NULL, NULL) == AC_OK);
            dual *Y = malloc(d * n * sizeof(dual));
            forward_dual(Y, &L, &X, &E);
            /* <dX, E> = d/dt <dY, y(X + t E)> */
            double lhs = 0, rhs = 0, scale = 0;
            for (size_t i = 0; i < d * n; i++) {
                lhs += dX.data[i] * E.data[i];
                rhs += dY.data[i] * Y[i].e;
                scale += fabs(dX.data[i] * E.data[i]) + fabs(dY.data[i] * Y[i].e);
            }
            /* both are sums of first-order-accurate terms: (d + hs + hh + 3n + 16) u
             * relative to the sum of magnitudes, times the logit amplification */
            double tol = 4.0 * (double)(d + hs + h * hs + 3 * n + 16) * AC_U * scale *
                         (1 + (double)(rep + 1) * (rep + 1));
            if (!(fabs(lhs - rhs) <= tol)) {
                if (!bad)
                    snprintf(msg, sizeof msg, "shape %zu rep %d: %.17g vs %.17g (tol %g)", t, rep,
                             lhs, rhs, tol);
                bad++;
            }
            free(Y);
            ac_mh_free(&L);
            ac_mat_free(&X);
            ac_mat_free(&E);
            ac_mat_free(&dY);
            ac_mat_free(&dX);
        }
    ck_assert_msg(bad == 0, "%d directional derivatives off (first: %s)", bad, msg);
}
END_TEST

/* ---- certified: stage 0 contains the 512-bit ball value ------------------ */

START_TEST(test_enclose_contains_arb)
{
    static const size_t shapes[][4] = {{1, 1, 1, 1}, {4, 2, 2, 3}, {8, 4, 2, 8}, {6, 2, 5, 4},
                                       {16, 4, 8, 6}};
    test_rng r;
    test_rng_init(&r, 304);
    int bad = 0, wide = 0;
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++)
        for (int rep = 0; rep < 4; rep++) {
            size_t d = shapes[t][0], h = shapes[t][1], hs = shapes[t][2], n = shapes[t][3];
            ac_mh L;
            ac_mat X = {0}, Y = {0};
            ac_imat E = {0};
            fill_layer(&L, d, h, hs, &r, 1.0 / sqrt((double)d));
            /* rep 3: large logits (saturated softmax) */
            fill_mat(&X, d, n, &r, rep == 3 ? 16.0 : 1.0);
            ck_assert(ac_mh_enclose(&E, &L, &X, NULL) == AC_OK);
            arb_mat_t Xa, Ya;
            arb_mat_init(Xa, (slong)d, (slong)n);
            arb_mat_init(Ya, (slong)d, (slong)n);
            ac_arb_mat_set_d(Xa, X.data, d, n);
            ac_mh_forward_arb(Ya, &L, Xa, 512);
            ac_mat_init(&Y, d, n, NULL);
            ac_mh_forward(&Y, &L, &X, NULL, NULL);
            for (size_t i = 0; i < d * n; i++) {
                arb_srcptr y = arb_mat_entry(Ya, (slong)(i / n), (slong)(i % n));
                /* the exact value is in the 512-bit ball; the ball must lie
                 * inside the stage-0 interval */
                if (!(ac_imat_lo(&E, i) <= ac_arb_lo(y) && ac_arb_hi(y) <= ac_imat_hi(&E, i)))
                    bad++;
                /* and the enclosure is not vacuous: within 1e6 u of the
                 * scale of the output */
                if (!(E.rad[i] <= 1e6 * AC_U * (1 + fabs(Y.data[i]))))
                    wide++;
            }
            arb_mat_clear(Xa);
            arb_mat_clear(Ya);
            ac_imat_free(&E);
            ac_mh_free(&L);
            ac_mat_free(&X);
            ac_mat_free(&Y);
        }
    ck_assert_msg(bad == 0, "%d entries of the 512-bit value outside the stage-0 enclosure", bad);
    ck_assert_msg(wide == 0, "%d enclosures wider than 1e6 u", wide);
}
END_TEST

/* ---- files ---------------------------------------------------------------- */

START_TEST(test_arrays_roundtrip_and_errors)
{
    test_rng r;
    test_rng_init(&r, 305);
    ac_mh L, M;
    ac_err err;
    fill_layer(&L, 6, 3, 2, &r, 1.0);
    ac_array a[4];
    memset(a, 0, sizeof a);
    for (int t = 0; t < 4; t++)
        ck_assert(ac_mh_get_array(&L, (ac_mh_param)t, &a[t], NULL) == AC_OK);
    ck_assert_int_eq(a[3].shape[0], 3);
    ck_assert_int_eq(a[3].shape[1], 6);
    ck_assert_int_eq(a[3].shape[2], 2);
    /* Wo[i][r][c] is element (r, c) of Wo_i */
    ck_assert(a[3].data[(1 * 6 + 4) * 2 + 1] == *ac_mh_wo_at(&L, 1, 4, 1));
    const char *names[4] = {"q", "k", "v", "o"};
    ck_assert(ac_mh_from_arrays(&M, &a[0], &a[1], &a[2], &a[3], names, NULL) == AC_OK);
    ck_assert(memcmp(M.params, L.params, ac_mh_nparams(&L) * sizeof(double)) == 0);
    ac_mh_free(&M);
    /* wrong number of dimensions */
    a[1].ndim = 2;
    ck_assert_int_eq(ac_mh_from_arrays(&M, &a[0], &a[1], &a[2], &a[3], names, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "k: expected a 3-D array") != NULL);
    a[1].ndim = 3;
    /* mismatched shapes */
    a[2].shape[1] = 3;
    ck_assert_int_eq(ac_mh_from_arrays(&M, &a[0], &a[1], &a[2], &a[3], names, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "does not match") != NULL);
    a[2].shape[1] = 2;
    a[3].shape[1] = 2;
    a[3].shape[2] = 6;
    ck_assert_int_eq(ac_mh_from_arrays(&M, &a[0], &a[1], &a[2], &a[3], names, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "expected (h, d, hs)") != NULL);
    a[3].shape[1] = 6;
    a[3].shape[2] = 2;
    /* non-finite entry */
    a[2].data[5] = NAN;
    ck_assert_int_eq(ac_mh_from_arrays(&M, &a[0], &a[1], &a[2], &a[3], names, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "v: entry") != NULL && strstr(err.msg, "NaN") != NULL);
    a[2].data[5] = 0;
    /* zero dimension */
    ac_array z;
    size_t zs[3] = {0, 2, 6};
    ac_array_init(&z, 3, zs, NULL);
    ck_assert_int_eq(ac_mh_from_arrays(&M, &z, &a[1], &a[2], &a[3], names, &err), AC_EDATA);
    ac_array_free(&z);
    for (int t = 0; t < 4; t++)
        ac_array_free(&a[t]);
    /* a missing directory */
    ck_assert_int_eq(ac_mh_load_dir(&M, "/nonexistent-attncheck-dir", 'W', &err), AC_ENOINPUT);
    ck_assert(strstr(err.msg, "Wq.npy") != NULL);
    char fn[16];
    ck_assert_str_eq(ac_mh_file_name(fn, sizeof fn, 'V', AC_MH_O), "Vo.npy");
    ac_mh_free(&L);
}
END_TEST

/* Write the four .npy files of L (prefix 'W') into dir: the library's
 * writer, or one head as 2-D arrays when two_d (h must be 1). */
static void write_layer_dir(const char *dir, const ac_mh *L, int two_d)
{
    if (!two_d) {
        ck_assert(ac_mh_save_dir(L, dir, 'W', NULL) == AC_OK);
        return;
    }
    for (int t = 0; t < 4; t++) {
        ac_array a = {0};
        char fn[16], path[512];
        ck_assert(ac_mh_get_array(L, (ac_mh_param)t, &a, NULL) == AC_OK);
        if (two_d) {
            a.ndim = 2;
            a.shape[0] = a.shape[1];
            a.shape[1] = a.shape[2];
            a.shape[2] = 0;
        }
        snprintf(path, sizeof path, "%s/%s", dir, ac_mh_file_name(fn, sizeof fn, 'W', (ac_mh_param)t));
        ck_assert(ac_npy_write(path, &a, NULL) == AC_OK);
        ac_array_free(&a);
    }
}

START_TEST(test_load_dir_flex)
{
    /* allow_2d: a 2-D array is one head, with the same numbers as the 3-D
     * stack; 3-D stacks read the same either way; the strict reader keeps
     * its message for 2-D arrays; the flexible one names all four shapes */
    test_rng r;
    test_rng_init(&r, 11);
    ac_mh L, M, N;
    ac_err err;
    char dir[] = "/tmp/ac_mh_flexXXXXXX", path[512];
    ck_assert(mkdtemp(dir) != NULL);
    fill_layer(&L, 5, 1, 3, &r, 1.0);
    write_layer_dir(dir, &L, 1);
    ck_assert_int_eq(ac_mh_load_dir_flex(&M, dir, 'W', 1, &err), AC_OK);
    ck_assert(M.d == 5 && M.h == 1 && M.hs == 3);
    ck_assert(memcmp(M.params, L.params, ac_mh_nparams(&L) * sizeof(double)) == 0);
    ac_mh_free(&M);
    ck_assert_int_eq(ac_mh_load_dir_flex(&M, dir, 'W', 0, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "Wq.npy: expected a 3-D array (h, hs, d)") != NULL);
    ck_assert_int_eq(ac_mh_load_dir(&N, dir, 'W', &err), AC_EDATA);
    ck_assert(strstr(err.msg, "Wq.npy: expected a 3-D array (h, hs, d)") != NULL);
    ac_mh_free(&L);
    /* 3-D stacks: both readers agree */
    fill_layer(&L, 4, 2, 3, &r, 1.0);
    write_layer_dir(dir, &L, 0);
    ck_assert_int_eq(ac_mh_load_dir_flex(&M, dir, 'W', 1, &err), AC_OK);
    ck_assert_int_eq(ac_mh_load_dir(&N, dir, 'W', &err), AC_OK);
    ck_assert(memcmp(M.params, N.params, ac_mh_nparams(&L) * sizeof(double)) == 0);
    ck_assert(memcmp(M.params, L.params, ac_mh_nparams(&L) * sizeof(double)) == 0);
    ac_mh_free(&M);
    ac_mh_free(&N);
    /* shapes that disagree: Wo of another layer */
    {
        ac_mh O;
        ac_array a = {0};
        fill_layer(&O, 4, 2, 2, &r, 1.0);
        ck_assert(ac_mh_get_array(&O, AC_MH_O, &a, NULL) == AC_OK);
        snprintf(path, sizeof path, "%s/Wo.npy", dir);
        ck_assert(ac_npy_write(path, &a, NULL) == AC_OK);
        ac_array_free(&a);
        ac_mh_free(&O);
    }
    ck_assert_int_eq(ac_mh_load_dir_flex(&M, dir, 'W', 1, &err), AC_EDATA);
    ck_assert_msg(strstr(err.msg, ": shapes do not form one attention layer: Wq, Wk, Wv must be "
                                  "(h, s, d) and Wo (h, d, s); got (2, 3, 4), (2, 3, 4), "
                                  "(2, 3, 4), (2, 4, 2)") != NULL, "%s", err.msg);
    ck_assert(M.params == NULL);
    /* a 1-D file is rejected as soon as it is read */
    {
        ac_array a = {0};
        size_t sh[1] = {3};
        ck_assert(ac_array_init(&a, 1, sh, NULL) == AC_OK);
        snprintf(path, sizeof path, "%s/Wk.npy", dir);
        ck_assert(ac_npy_write(path, &a, NULL) == AC_OK);
        ac_array_free(&a);
    }
    ck_assert_int_eq(ac_mh_load_dir_flex(&M, dir, 'W', 1, &err), AC_EDATA);
    ck_assert_msg(strstr(err.msg, "Wk.npy: expected a 2-D or 3-D array, got 1 dimensions") != NULL,
                  "%s", err.msg);
    for (int t = 0; t < 4; t++) {
        char fn[16];
        snprintf(path, sizeof path, "%s/%s", dir, ac_mh_file_name(fn, sizeof fn, 'W', (ac_mh_param)t));
        remove(path);
    }
    rmdir(dir);
    ac_mh_free(&L);
}
END_TEST

START_TEST(test_save_dir_roundtrip)
{
    /* ac_mh_save_dir then ac_mh_load_dir gives the same bits, for sizes 1
     * and non-square heads and entries from 1e-300 to 1e300; ac_mh_files
     * names the arrays STEM PREFIX q|k|v|o and holds the file layout; a name
     * too long and a directory that does not exist are refused */
    static const size_t shapes[][3] = {{1, 1, 1}, {5, 1, 3}, {4, 2, 2}, {6, 3, 4}, {2, 4, 7}};
    static const double scales[] = {1e-300, 1.0, 1e300};
    test_rng r;
    test_rng_init(&r, 701);
    ac_err err;
    char dir[] = "/tmp/ac_mh_saveXXXXXX", path[512];
    ck_assert(mkdtemp(dir) != NULL);
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (size_t k = 0; k < 3; k++)
            for (int pv = 0; pv < 2; pv++) {
                ac_mh L, M;
                char prefix = pv ? 'V' : 'W';
                fill_layer(&L, shapes[i][0], shapes[i][1], shapes[i][2], &r, scales[k]);
                ck_assert_msg(ac_mh_save_dir(&L, dir, prefix, &err) == AC_OK, "%s", err.msg);
                ck_assert_msg(ac_mh_load_dir(&M, dir, prefix, &err) == AC_OK, "%s", err.msg);
                ck_assert(M.d == L.d && M.h == L.h && M.hs == L.hs);
                ck_assert_msg(memcmp(M.params, L.params, ac_mh_nparams(&L) * sizeof(double)) == 0,
                              "seed %llu: layer %zu x %zu x %zu, scale %g differs after saving",
                              (unsigned long long)test_seed_value, shapes[i][0], shapes[i][1],
                              shapes[i][2], scales[k]);
                ac_mh_file f[4];
                ck_assert(ac_mh_files(f, &L, "standard_h4_seed1_", prefix, &err) == AC_OK);
                for (int t = 0; t < 4; t++) {
                    ac_array a = {0};
                    char want[64], fn[16];
                    ac_mh_file_name(fn, sizeof fn, prefix, (ac_mh_param)t);
                    snprintf(want, sizeof want, "standard_h4_seed1_%.2s", fn);
                    ck_assert_str_eq(f[t].name, want);
                    ck_assert(ac_mh_get_array(&L, (ac_mh_param)t, &a, NULL) == AC_OK);
                    ck_assert(a.ndim == 3 && f[t].a.ndim == 3 && a.size == f[t].a.size);
                    ck_assert(memcmp(a.shape, f[t].a.shape, sizeof a.shape) == 0);
                    ck_assert(memcmp(a.data, f[t].a.data, a.size * sizeof(double)) == 0);
                    ac_array_free(&a);
                }
                ac_mh_files_free(f);
                ck_assert(f[0].a.data == NULL && f[0].name[0] == 0);
                ac_mh_free(&L);
                ac_mh_free(&M);
            }
    /* the name: NULL stem, and a stem too long */
    {
        ac_mh L;
        ac_mh_file f[4];
        char stem[AC_MH_FILE_NAME_MAX];
        fill_layer(&L, 3, 1, 2, &r, 1.0);
        ck_assert(ac_mh_files(f, &L, NULL, 'W', NULL) == AC_OK);
        ck_assert_str_eq(f[3].name, "Wo");
        ac_mh_files_free(f);
        memset(stem, 'x', sizeof stem - 2);
        stem[sizeof stem - 2] = 0; /* + "Wq" is one byte too many */
        ck_assert_int_eq(ac_mh_files(f, &L, stem, 'W', &err), AC_EUSAGE);
        ck_assert(f[0].a.data == NULL && f[1].a.data == NULL);
        /* a directory that does not exist: the file is named, nothing left */
        snprintf(path, sizeof path, "%s/none", dir);
        ck_assert_int_eq(ac_mh_save_dir(&L, path, 'W', &err), AC_ECANTCREAT);
        ck_assert_msg(strstr(err.msg, "none/Wq.npy") != NULL, "%s", err.msg);
        ac_mh_free(&L);
    }
    for (int pv = 0; pv < 2; pv++)
        for (int t = 0; t < 4; t++) {
            char fn[16];
            snprintf(path, sizeof path, "%s/%s", dir,
                     ac_mh_file_name(fn, sizeof fn, pv ? 'V' : 'W', (ac_mh_param)t));
            ck_assert(remove(path) == 0);
        }
    ck_assert(rmdir(dir) == 0); /* nothing else was written */
}
END_TEST

START_TEST(test_random_layer)
{
    /* ac_mh_random is reproducible and scaled as documented: the sample
     * variance of Wq is 1/d within 5 standard errors (sd of a sample
     * variance of N draws: sqrt(2/N) relative) */
    ac_mh A, B;
    size_t d = 64, h = 8, hs = 8;
    ck_assert(ac_mh_random(&A, d, h, hs, test_seed_value, 2, NULL) == AC_OK);
    ck_assert(ac_mh_random(&B, d, h, hs, test_seed_value, 2, NULL) == AC_OK);
    ck_assert(memcmp(A.params, B.params, ac_mh_nparams(&A) * sizeof(double)) == 0);
    size_t N = h * hs * d;
    double s = 0, so = 0;
    for (size_t i = 0; i < N; i++) {
        s += A.wq[i] * A.wq[i];
        so += A.wo[i] * A.wo[i];
    }
    double rel = fabs(s / N * d - 1), relo = fabs(so / N * (double)(h * hs) - 1);
    ck_assert_msg(rel < 5 * sqrt(2.0 / N), "var(Wq) d = %g", s / N * d);
    ck_assert_msg(relo < 5 * sqrt(2.0 / N), "var(Wo) h hs = %g", so / N * (double)(h * hs));
    ac_mh_free(&A);
    ac_mh_free(&B);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("multihead");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_forward_vs_reference);
    tcase_add_test(tc, test_forward_blocks_and_threads);
    tcase_add_test(tc, test_forward_large_logits);
    tcase_add_test(tc, test_forward_shapes);
    tcase_add_test(tc, test_backward_vs_forward_mode);
    tcase_add_test(tc, test_enclose_contains_arb);
    tcase_add_test(tc, test_arrays_roundtrip_and_errors);
    tcase_add_test(tc, test_load_dir_flex);
    tcase_add_test(tc, test_save_dir_roundtrip);
    tcase_add_test(tc, test_random_layer);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
