/* test_head.c — one attention head (attncheck/head.h, attention/head.c):
 * the double softmax against a naive reference, the certified enclosures of
 * max|Softmax - P| against Arb at 1024 bits, the stage-0 softmax enclosure
 * around the double one, the certification of given weights, and the
 * stages of the certificate (gamma_k, split products, the column-wise ball
 * stage, the zero head) against Arb and against each other.
 *
 * Oracles: a naive triple loop with glibc's exp; Arb at 1024 bits with the
 * scale 1/sqrt(dk) as a division (the library multiplies by arb_rsqrt_ui);
 * Arb at 200 and 600 bits through ac_head_maxdev_enclose itself for the
 * stages. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ac_arb.h"
#include "core/ball.h"
#include "attention/head_impl.h"
#include "attncheck/head.h"
#include "attncheck/linalg.h"
#include "attncheck/rng.h"
#include "attncheck/theorem1.h"
#include "testutil.h"

/* ---- softmax and head evaluation ------------------------------------------ */

START_TEST(test_head_softmax_columns)
{
    ac_mat X = {0}, P = {0}, Wk = {0}, Wq = {0}, S = {0};
    ck_assert(ac_t1_generate(&X, &P, 5, 7, test_seed_value, NULL) == AC_OK);
    ac_mat_init(&Wk, 3, 5, NULL);
    ac_mat_init(&Wq, 3, 5, NULL);
    ac_rng r;
    ac_rng_init(&r, test_seed_value, 99, 0);
    ac_rng_normal_fill(&r, Wk.data, 15);
    ac_rng_normal_fill(&r, Wq.data, 15);
    ck_assert(ac_head_softmax(&S, &X, &Wk, &Wq, NULL) == AC_OK);
    /* naive reference: Z_ij = sum_a (Wk x_i)_a (Wq x_j)_a / sqrt(3) */
    for (size_t j = 0; j < 7; j++) {
        double z[7], mx = -INFINITY, s = 0, colsum = 0;
        for (size_t i = 0; i < 7; i++) {
            double acc = 0;
            for (size_t a = 0; a < 3; a++) {
                double k = 0, q = 0;
                for (size_t c = 0; c < 5; c++) {
                    k += AC_MAT(&Wk, a, c) * AC_MAT(&X, c, i);
                    q += AC_MAT(&Wq, a, c) * AC_MAT(&X, c, j);
                }
                acc += k * q;
            }
            z[i] = acc / sqrt(3.0);
            mx = fmax(mx, z[i]);
        }
        for (size_t i = 0; i < 7; i++)
            s += exp(z[i] - mx);
        for (size_t i = 0; i < 7; i++) {
            double ref = exp(z[i] - mx) / s;
            /* both in double: a few hundred u of the logits' size apart at most */
            ck_assert_msg(fabs(AC_MAT(&S, i, j) - ref) <= 1e3 * AC_U, "softmax (%zu,%zu)", i, j);
            colsum += AC_MAT(&S, i, j);
        }
        ck_assert(fabs(colsum - 1) <= 8 * AC_U);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    ac_mat_free(&S);
}
END_TEST

/* s (n x n, initialised) = (Wk X)^T (Wq X) / sqrt(dk) in Arb at prec bits,
 * the scale as a division */
static void oracle_logits(arb_mat_t s, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                          slong prec)
{
    size_t d = X->rows, n = X->cols, dk = Wk->rows;
    arb_mat_t x, wk, wq, k, kt, q;
    arb_t t;
    arb_mat_init(x, d, n);
    arb_mat_init(wk, dk, d);
    arb_mat_init(wq, dk, d);
    arb_mat_init(k, dk, n);
    arb_mat_init(kt, n, dk);
    arb_mat_init(q, dk, n);
    arb_init(t);
    ac_arb_mat_set_d(x, X->data, d, n);
    ac_arb_mat_set_d(wk, Wk->data, dk, d);
    ac_arb_mat_set_d(wq, Wq->data, dk, d);
    arb_mat_mul(k, wk, x, prec);
    arb_mat_mul(q, wq, x, prec);
    arb_mat_transpose(kt, k);
    arb_mat_mul(s, kt, q, prec);
    arb_sqrt_ui(t, dk, prec);
    arb_mat_scalar_div_arb(s, s, t, prec);
    arb_clear(t);
    arb_mat_clear(x);
    arb_mat_clear(wk);
    arb_mat_clear(wq);
    arb_mat_clear(k);
    arb_mat_clear(kt);
    arb_mat_clear(q);
}

/* max|Softmax - P| at 1024 bits as a ball */
static void maxdev_oracle(arb_t res, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                          const ac_mat *P)
{
    size_t n = X->cols;
    arb_mat_t s, p;
    arb_mat_init(s, n, n);
    arb_mat_init(p, n, n);
    oracle_logits(s, X, Wk, Wq, 1024);
    ac_arb_softmax_cols(p, s, 1024);
    ac_arb_max_abs_dev(res, p, P->data, 1024);
    arb_mat_clear(s);
    arb_mat_clear(p);
}

START_TEST(test_maxdev_enclosure_contains_oracle)
{
    ac_rng r;
    for (int t = 0; t < 40; t++) {
        size_t d = 1 + (size_t)t % 6, n = 1 + (size_t)(t * 7) % 9, dk = 1 + (size_t)t % 4;
        ac_mat X = {0}, P = {0}, Wk = {0}, Wq = {0};
        ac_t1_generate(&X, &P, d, n, test_seed_value + t, NULL);
        ac_mat_init(&Wk, dk, d, NULL);
        ac_mat_init(&Wq, dk, d, NULL);
        ac_rng_init(&r, test_seed_value + t, 77, 0);
        double scale = ldexp(1.0, t % 6);
        ac_rng_normal_fill(&r, Wk.data, dk * d);
        ac_rng_normal_fill(&r, Wq.data, dk * d);
        for (size_t i = 0; i < dk * d; i++)
            Wq.data[i] *= scale;
        arb_t o;
        arb_init(o);
        maxdev_oracle(o, &X, &Wk, &Wq, &P);
        double lo, hi;
        for (int stage = 0; stage < 2; stage++) {
            ck_assert(ac_head_maxdev_enclose(&lo, &hi, &X, &Wk, &Wq, &P, stage ? 256 : 0, NULL) ==
                      AC_OK);
            arb_t a, b;
            arb_init(a);
            arb_init(b);
            arb_set_d(a, lo);
            arb_set_d(b, hi);
            /* the 1024-bit ball must not lie outside [lo, hi] (it may straddle
             * an end only when the exact value is within 2^-1000 of it) */
            ck_assert_msg(!arb_lt(o, a) && !arb_gt(o, b),
                          "%s enclosure [%g, %g] misses the 1024-bit value (t=%d)",
                          stage ? "ball" : "stage-0", lo, hi, t);
            arb_clear(a);
            arb_clear(b);
        }
        arb_clear(o);
        ac_mat_free(&X);
        ac_mat_free(&P);
        ac_mat_free(&Wk);
        ac_mat_free(&Wq);
    }
}
END_TEST

START_TEST(test_softmax_inside_stage0)
{
    /* the double softmax (ac_head_softmax_kq through ac_head_softmax) lies in
     * the stage-0 enclosure of the same head, for every size 1..6 of n and
     * logits up to 2^5 in size */
    for (int t = 0; t < 24; t++) {
        size_t d = 1 + (size_t)t % 4, n = 1 + (size_t)t % 6, dk = 1 + (size_t)(t * 5) % 3;
        ac_mat X = {0}, P = {0}, Wk = {0}, Wq = {0}, S = {0};
        ac_rng r;
        ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + t, NULL) == AC_OK);
        ac_mat_init(&Wk, dk, d, NULL);
        ac_mat_init(&Wq, dk, d, NULL);
        ac_rng_init(&r, test_seed_value + t, 55, 0);
        ac_rng_normal_fill(&r, Wk.data, dk * d);
        ac_rng_normal_fill(&r, Wq.data, dk * d);
        for (size_t i = 0; i < dk * d; i++)
            Wq.data[i] *= ldexp(1.0, t % 6);
        ck_assert(ac_head_softmax(&S, &X, &Wk, &Wq, NULL) == AC_OK);
        double *llo = malloc(n * n * sizeof(double)), *lhi = malloc(n * n * sizeof(double));
        double *plo = malloc(n * n * sizeof(double)), *phi = malloc(n * n * sizeof(double));
        ck_assert(llo && lhi && plo && phi);
        ck_assert(ac_head_logits_stage0(llo, lhi, NULL, &X, &Wk, &Wq, NULL, NULL) == AC_OK);
        ck_assert(ac_head_softmax_enclose(plo, phi, llo, lhi, n));
        /* the double softmax is within a few u of the exact one */
        for (size_t i = 0; i < n * n; i++)
            ck_assert_msg(S.data[i] >= plo[i] - 64 * AC_U && S.data[i] <= phi[i] + 64 * AC_U,
                          "t=%d entry %zu: %g outside [%g, %g]", t, i, S.data[i], plo[i], phi[i]);
        free(llo);
        free(lhi);
        free(plo);
        free(phi);
        ac_mat_free(&X);
        ac_mat_free(&P);
        ac_mat_free(&Wk);
        ac_mat_free(&Wq);
        ac_mat_free(&S);
    }
}
END_TEST

START_TEST(test_certify_given_weights)
{
    /* weights of a representable P certify "max|Softmax - P| <= tol" at
     * stage 0; a false claim (tol below the certified lower end) is never
     * proved; shapes are checked */
    ac_mat X = {0}, P = {0}, Wk = {0}, Wq = {0}, S = {0};
    ac_cert c;
    ac_err err;
    double lo, hi;
    ac_rng r;
    ck_assert(ac_t1_generate(&X, &P, 4, 6, test_seed_value, NULL) == AC_OK);
    ac_mat_init(&Wk, 2, 4, NULL);
    ac_mat_init(&Wq, 2, 4, NULL);
    ac_rng_init(&r, test_seed_value, 56, 0);
    ac_rng_normal_fill(&r, Wk.data, 8);
    ac_rng_normal_fill(&r, Wq.data, 8);
    ck_assert(ac_head_softmax(&S, &X, &Wk, &Wq, NULL) == AC_OK);
    ck_assert(ac_head_certify(&c, &X, &Wk, &Wq, &S, 0x1p-26, NULL, &err) == AC_OK);
    ck_assert_int_eq(c.verdict, AC_PROVED);
    ck_assert(ac_head_maxdev_enclose(&lo, &hi, &X, &Wk, &Wq, &P, 0, NULL) == AC_OK);
    ck_assert(lo > 0);
    ac_schedule sched = ac_schedule_default();
    ck_assert(ac_head_certify(&c, &X, &Wk, &Wq, &P, lo / 2, &sched, &err) == AC_OK);
    ck_assert_int_eq(c.verdict, AC_REFUTED);
    ac_mat_free(&S);
    ck_assert_int_eq(ac_head_maxdev_enclose(&lo, &hi, &X, &Wk, &Wq, &Wk, 0, &err), AC_EUSAGE);
    ck_assert_int_eq(ac_head_softmax(&S, &X, &Wk, &P, &err), AC_EDATA);
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
}
END_TEST

/* ---- the stages of ac_head_maxdev_enclose and ac_head_certify -------------
 * (gamma_k, split products, norm-bounded products, the column-wise ball
 * stage) against Arb at 200 to 600 bits. */

/* A Theorem-1 style head on X (n x n): Wk = X^-1, Wq = Wt X^-1 with
 * Wt = sqrt(n) log P, so the logits are Wt up to rounding; cond scales one
 * column of X (sigma_min(X) small makes the weights large), wscale scales X
 * down and the weights up by the same power of two. */
static void t1_head(ac_mat *X, ac_mat *Wk, ac_mat *Wq, ac_mat *P, size_t n, double cond, int wexp,
                    test_rng *r)
{
    ac_mat Wt = {0};
    ck_assert_int_eq(ac_mat_init(X, n, n, NULL), AC_OK);
    ck_assert_int_eq(ac_mat_init(P, n, n, NULL), AC_OK);
    ck_assert_int_eq(ac_mat_init(&Wt, n, n, NULL), AC_OK);
    ck_assert_int_eq(ac_mat_init(Wq, n, n, NULL), AC_OK);
    for (size_t i = 0; i < n * n; i++)
        X->data[i] = test_rng_gauss(r);
    for (size_t i = 0; i < n; i++)
        X->data[i * n + 1] = X->data[i * n] + X->data[i * n + 1] / cond; /* near-dependent */
    for (size_t j = 0; j < n; j++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += (P->data[i * n + j] = -log(test_rng_unif(r) + 1e-300)); /* Dirichlet(1) */
        for (size_t i = 0; i < n; i++)
            P->data[i * n + j] /= s;
    }
    for (size_t i = 0; i < n * n; i++)
        Wt.data[i] = sqrt((double)n) * log(P->data[i]);
    for (size_t i = 0; i < n * n; i++)
        X->data[i] = ldexp(X->data[i], -wexp);
    ck_assert_int_eq(ac_approx_pinv_fullcol(Wk, X, NULL), AC_OK);
    ck_assert_int_eq(ac_gemm(Wq, AC_NOTRANS, &Wt, AC_NOTRANS, Wk, NULL), AC_OK);
    ac_mat_free(&Wt);
}

START_TEST(test_head_split_stage)
{
    test_rng r;
    test_rng_init(&r, test_seed_value + 13);
    static const struct {
        size_t n;
        double cond;
        int wexp, pad;
    } cases[] = {{6, 1, 0, 0},      {20, 1e3, 0, 0},  {33, 1e6, 0, 0}, {24, 10, 400, 0},
                 {24, 10, -400, 0}, {48, 1e4, 30, 0}, {9, 10, 0, 20},  {12, 1e3, 0, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ac_mat X = {0}, Wk = {0}, Wq = {0}, P = {0};
        t1_head(&X, &Wk, &Wq, &P, cases[c].n, cases[c].cond, cases[c].wexp, &r);
        if (cases[c].pad) {
            /* Theorem 1's [X^+; 0] with dk = n + pad: zero rows (one of Wq's
             * padded rows nonzero where Wk's is zero: it still adds 0) */
            size_t n = cases[c].n, dk = n + cases[c].pad;
            ac_mat K2 = {0}, Q2 = {0};
            ck_assert_int_eq(ac_mat_init(&K2, dk, n, NULL), AC_OK);
            ck_assert_int_eq(ac_mat_init(&Q2, dk, n, NULL), AC_OK);
            memcpy(K2.data, Wk.data, n * n * sizeof(double));
            memcpy(Q2.data, Wq.data, n * n * sizeof(double));
            Q2.data[(dk - 1) * n] = 3.0;
            ac_mat_free(&Wk);
            ac_mat_free(&Wq);
            Wk = K2;
            Wq = Q2;
        }
        double l0, h0, l1, h1, l2, h2;
        ck_assert_int_eq(ac_head_maxdev_enclose(&l0, &h0, &X, &Wk, &Wq, &P, 0, NULL), AC_OK);
        ck_assert_int_eq(ac_head_maxdev_enclose(&l1, &h1, &X, &Wk, &Wq, &P, -1, NULL), AC_OK);
        ck_assert_int_eq(ac_head_maxdev_enclose(&l2, &h2, &X, &Wk, &Wq, &P, 600, NULL), AC_OK);
        /* one number in all three: the Arb ball at 600 bits is tight */
        ck_assert_msg(l1 <= h2 && l2 <= h1, "case %zu: split [%g, %g] misses Arb [%g, %g]", c, l1,
                      h1, l2, h2);
        ck_assert_msg(l0 <= h2 && l2 <= h0, "case %zu: gamma stage misses Arb", c);
        ck_assert_msg(h1 <= h0, "case %zu: split %g looser than gamma_k %g", c, h1, h0);
        /* the split stage is close to the truth: width within 1e-12 + 10% */
        ck_assert_msg(h1 - l1 <= 1e-12 + 0.1 * h2, "case %zu: split [%g, %g] too wide (Arb %g)", c,
                      l1, h1, h2);
        ac_mat_free(&X);
        ac_mat_free(&Wk);
        ac_mat_free(&Wq);
        ac_mat_free(&P);
    }
}
END_TEST

START_TEST(test_head_certify_columns)
{
    /* tol between the truth and the split stage's upper bound: the gamma_k and
     * split stages cannot prove, the ball stage recomputes only the columns
     * whose split bound exceeds tol and proves */
    test_rng r;
    test_rng_init(&r, test_seed_value + 14);
    ac_mat X = {0}, Wk = {0}, Wq = {0}, P = {0};
    t1_head(&X, &Wk, &Wq, &P, 16, 1e3, 0, &r);
    for (size_t i = 0; i < 16 * 16; i++) /* perturb P so the deviation is clearly > 0 */
        P.data[i] *= 1 + 1e-9 * (double)(i % 7);
    double l1, h1, l2, h2;
    ck_assert_int_eq(ac_head_maxdev_enclose(&l1, &h1, &X, &Wk, &Wq, &P, -1, NULL), AC_OK);
    ck_assert_int_eq(ac_head_maxdev_enclose(&l2, &h2, &X, &Wk, &Wq, &P, 600, NULL), AC_OK);
    ck_assert(h2 < h1);
    double tol = (h2 + h1) / 2;
    ac_schedule sched = {1, {128}};
    ac_cert cert;
    ck_assert_int_eq(ac_head_certify(&cert, &X, &Wk, &Wq, &P, tol, &sched, NULL), AC_OK);
    ck_assert_int_eq(cert.verdict, AC_PROVED);
    ck_assert_int_eq(cert.stage, 1);
    ck_assert_msg(strstr(cert.method, "of 16 columns") != NULL, "method: %s", cert.method);
    ck_assert(cert.hi <= tol && cert.lo <= h2 && l2 <= cert.hi);
    /* and a tol between the gamma_k stage's lower bound and the split
     * stage's is refuted by the split stage */
    double l0, h0;
    ck_assert_int_eq(ac_head_maxdev_enclose(&l0, &h0, &X, &Wk, &Wq, &P, 0, NULL), AC_OK);
    ck_assert(l0 < l1);
    ck_assert_int_eq(ac_head_certify(&cert, &X, &Wk, &Wq, &P, (l0 + l1) / 2, &sched, NULL), AC_OK);
    ck_assert_int_eq(cert.verdict, AC_REFUTED);
    ck_assert_int_eq(cert.stage, 0);
    ck_assert_msg(strstr(cert.method, "split") != NULL, "method: %s", cert.method);
    /* a non-finite weight: the split stage cannot run; no error, no verdict */
    Wq.data[3] = INFINITY;
    ck_assert_int_eq(ac_head_certify(&cert, &X, &Wk, &Wq, &P, 1e-3, &sched, NULL), AC_OK);
    ck_assert_int_eq(cert.verdict, AC_UNDECIDED);
    ac_mat_free(&X);
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    ac_mat_free(&P);
}
END_TEST

/* The zero head (exact zero logits, uniform columns): stage 0 from the
 * extremes of P against the ball stage, and tight. */
START_TEST(test_zero_head)
{
    test_rng r;
    test_rng_init(&r, test_seed_value + 35);
    for (size_t n = 1; n < 40; n += 7) {
        size_t d = 3, dk = 2;
        ac_mat X = {0}, P = {0}, Wk = {0}, Wq = {0};
        ck_assert_int_eq(ac_mat_init(&X, d, n, NULL), AC_OK);
        ck_assert_int_eq(ac_mat_init(&P, n, n, NULL), AC_OK);
        ck_assert_int_eq(ac_mat_init(&Wk, dk, d, NULL), AC_OK);
        ck_assert_int_eq(ac_mat_init(&Wq, dk, d, NULL), AC_OK);
        for (size_t i = 0; i < d * n; i++)
            X.data[i] = test_rng_gauss(&r);
        for (size_t i = 0; i < n * n; i++)
            P.data[i] = test_rng_unif(&r) + 1e-3;
        Wk.data[0] = 1.5; /* row 0 of Wk live, row 0 of Wq zero: logits still 0 */
        double l0, h0, l1, h1;
        ck_assert_int_eq(ac_head_maxdev_enclose(&l0, &h0, &X, &Wk, &Wq, &P, 0, NULL), AC_OK);
        ck_assert_int_eq(ac_head_maxdev_enclose(&l1, &h1, &X, &Wk, &Wq, &P, 200, NULL), AC_OK);
        ck_assert_msg(l0 <= h1 && l1 <= h0, "n %zu: [%a, %a] and [%a, %a] disjoint", n, l0, h0, l1,
                      h1);
        ck_assert_msg(h0 - l0 <= 1e-15 && l0 > 0, "n %zu: [%a, %a] not tight", n, l0, h0);
        ac_mat_free(&X);
        ac_mat_free(&P);
        ac_mat_free(&Wk);
        ac_mat_free(&Wq);
    }
}
END_TEST

/* ---- the masked head (doc/mathematics.md §3.8) ---------------------------- */

/* max over all entries of |Softmax_Omega - P| at 1024 bits: the logits in
 * Arb, each column's softmax over its visible rows only, |P_ij| off the
 * mask. */
static void maxdev_oracle_masked(arb_t res, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                                 const ac_mat *P, const unsigned char *om)
{
    size_t n = X->cols;
    slong prec = 1024;
    arb_mat_t s;
    arb_t t, m, e;
    arb_mat_init(s, n, n);
    arb_init(t);
    arb_init(m);
    arb_init(e);
    oracle_logits(s, X, Wk, Wq, prec);
    arb_zero(res);
    for (size_t j = 0; j < n; j++) {
        arb_zero(m); /* the sum of exp over the visible rows */
        for (size_t i = 0; i < n; i++)
            if (om[i * n + j]) {
                arb_exp(t, arb_mat_entry(s, i, j), prec);
                arb_add(m, m, t, prec);
            }
        for (size_t i = 0; i < n; i++) {
            if (om[i * n + j]) {
                arb_exp(t, arb_mat_entry(s, i, j), prec);
                arb_div(t, t, m, prec);
            } else
                arb_zero(t);
            arb_set_d(e, AC_MAT(P, i, j));
            arb_sub(t, t, e, prec);
            arb_abs(t, t);
            arb_max(res, res, t, prec);
        }
    }
    arb_clear(t);
    arb_clear(m);
    arb_clear(e);
    arb_mat_clear(s);
}

/* Every stage of the masked enclosure contains the 1024-bit value, for
 * causal, windowed, padded and random masks (one visible key per column
 * included), weights from 2^-8 to 2^40 (the split stage at the large end),
 * and P with entries off the mask (they count as |P_ij|). */
START_TEST(test_masked_enclosure_contains_oracle)
{
    ac_rng r;
    for (int t = 0; t < 48; t++) {
        size_t d = 1 + (size_t)t % 5, n = 1 + (size_t)(t * 5) % 9, dk = 1 + (size_t)t % 3;
        ac_mat X = {0}, P = {0}, Wk = {0}, Wq = {0};
        unsigned char *om = malloc(n * n);
        ac_t1_generate(&X, &P, d, n, test_seed_value + t, NULL);
        ac_rng_init(&r, test_seed_value + t, 78, 0);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                int kind = t % 4;
                om[i * n + j] = kind == 0   ? i <= j
                                : kind == 1 ? i <= j && j - i < 2
                                : kind == 2 ? (i % 3 != 1 || i == j)
                                            : (ac_rng_uniform(&r) < 0.5 || i == j);
            }
        if (t % 2 == 0) /* P zero off the mask, as validated inputs are */
            for (size_t i = 0; i < n * n; i++)
                P.data[i] = om[i] ? P.data[i] : 0.0;
        ac_mat_init(&Wk, dk, d, NULL);
        ac_mat_init(&Wq, dk, d, NULL);
        double scale = ldexp(1.0, -8 + 6 * (t % 9));
        ac_rng_normal_fill(&r, Wk.data, dk * d);
        ac_rng_normal_fill(&r, Wq.data, dk * d);
        for (size_t i = 0; i < dk * d; i++)
            Wq.data[i] *= scale;
        if (t % 11 == 5) /* the zero head: exactly uniform on the visible keys */
            for (size_t i = 0; i < dk * d; i++)
                Wk.data[i] = 0;
        arb_t o;
        arb_init(o);
        maxdev_oracle_masked(o, &X, &Wk, &Wq, &P, om);
        for (int stage = 0; stage < 3; stage++) {
            double lo, hi;
            long prec = stage == 0 ? 0 : stage == 1 ? -1 : 256;
            ck_assert(ac_head_maxdev_enclose_masked(&lo, &hi, &X, &Wk, &Wq, &P, om, prec, NULL) ==
                      AC_OK);
            arb_t a, b;
            arb_init(a);
            arb_init(b);
            arb_set_d(a, lo);
            arb_set_d(b, hi);
            ck_assert_msg(!arb_lt(o, a) && !arb_gt(o, b),
                          "masked stage %d [%g, %g] misses the 1024-bit value (t=%d)", stage, lo,
                          hi, t);
            arb_clear(a);
            arb_clear(b);
        }
        /* the certificate agrees, and a false claim is never PROVED */
        ac_cert c;
        ac_schedule sch = ac_schedule_default();
        double v = arf_get_d(arb_midref(o), ARF_RND_NEAR);
        for (int side = 0; side < 2; side++) {
            double tau = side ? v * 2 + 1e-300 : v * 0.5;
            arb_t tb;
            arb_init(tb);
            arb_set_d(tb, tau);
            ck_assert(ac_head_certify_masked(&c, &X, &Wk, &Wq, &P, om, tau, &sch, NULL) == AC_OK);
            ck_assert_msg(!(arb_gt(o, tb) && c.verdict == AC_PROVED),
                          "t=%d: a false claim PROVED", t);
            ck_assert_msg(!(arb_lt(o, tb) && c.verdict == AC_REFUTED),
                          "t=%d: a true claim REFUTED", t);
            arb_clear(tb);
        }
        arb_clear(o);
        free(om);
        ac_mat_free(&X);
        ac_mat_free(&P);
        ac_mat_free(&Wk);
        ac_mat_free(&Wq);
    }
}
END_TEST

/* The double masked softmax: zero off the mask, columns sum to 1 on it, and
 * a query that sees no key is a usage error. */
START_TEST(test_masked_softmax_double)
{
    size_t d = 3, n = 6;
    ac_mat X = {0}, P = {0}, Wk = {0}, Wq = {0}, S = {0};
    unsigned char om[36];
    ac_t1_generate(&X, &P, d, n, test_seed_value, NULL);
    ac_mat_init(&Wk, 2, d, NULL);
    ac_mat_init(&Wq, 2, d, NULL);
    for (size_t i = 0; i < 2 * d; i++)
        Wk.data[i] = 0.3 * (double)i - 0.5, Wq.data[i] = 0.2 * (double)(5 - i);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            om[i * n + j] = i <= j;
    ck_assert(ac_head_softmax_masked(&S, &X, &Wk, &Wq, om, NULL) == AC_OK);
    for (size_t j = 0; j < n; j++) {
        double s = 0;
        for (size_t i = 0; i < n; i++) {
            ck_assert(om[i * n + j] ? AC_MAT(&S, i, j) > 0 : AC_MAT(&S, i, j) == 0);
            s += AC_MAT(&S, i, j);
        }
        ck_assert(fabs(s - 1) <= 4 * n * AC_U);
    }
    ck_assert(AC_MAT(&S, 0, 0) == 1.0); /* one visible key */
    ac_mat_free(&S);
    om[0] = 0; /* query 0 sees no key */
    ac_err err;
    ck_assert(ac_head_softmax_masked(&S, &X, &Wk, &Wq, om, &err) == AC_EUSAGE);
    ck_assert(strstr(err.msg, "query 0") != NULL);
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("head");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_head_softmax_columns);
    tcase_add_test(tc, test_maxdev_enclosure_contains_oracle);
    tcase_add_test(tc, test_softmax_inside_stage0);
    tcase_add_test(tc, test_certify_given_weights);
    tcase_add_test(tc, test_head_split_stage);
    tcase_add_test(tc, test_head_certify_columns);
    tcase_add_test(tc, test_zero_head);
    tcase_add_test(tc, test_masked_enclosure_contains_oracle);
    tcase_add_test(tc, test_masked_softmax_double);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
