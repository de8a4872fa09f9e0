/* test_dist_resid.c — the residual obstruction on a submatrix of P
 * (src/theorem1/dist_resid.c, doc/mathematics.md §3.6): the certified
 * lower bound on rho_IJ = dist_F(log P_IJ, {1 c' + X_I' A X_J}) and the
 * distance bound built on it.
 *
 * Oracle: rho_IJ in Arb at 256 bits by the normal equations on an explicit
 * spanning set of the subspace (vec(1 e_k'), and vec(X_I' e_p e_q' X_J) for
 * b >= d or vec(X_I' e_p e_q') for b < d), with X scaled exactly by a power
 * of two first (the subspace does not change); independent of the
 * projection formulas of dist_resid.c.  sigma_d(X_I) against a Cholesky
 * factorisation of X_I X_I' - s^2 I in Arb.
 * Classes: generic shapes (a = d + 2 .. 9, b = 1 .. d + 3), X scaled by
 * 2^±300, X_I nearly rank deficient, 1 nearly and exactly in range X_I',
 * tiny entries of P (1e-300), a <= d + 1 where rho_IJ = 0 for b <= d (no
 * positive bound may be claimed), adversarial certificates Y (random, L
 * itself, the residual plus large multiples of members of the subspace),
 * and the whole distance bound on small generated instances. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "core/ac_arb.h"
#include "theorem1/t1_dist.h"
#include "theorem1/t1_stage0.h"
#include "testutil.h"

#define PREC 256

/* The spanning set of S_IJ as columns of V (ab x m), X scaled by 2^-e. */
static slong span_set(arb_mat_t V, const ac_mat *X, const size_t *I, size_t a, const size_t *J,
                      size_t b)
{
    size_t d = X->rows, q_hi = b >= d ? d : b;
    double mx = 0;
    for (size_t e = 0; e < d * X->cols; e++)
        mx = fmax(mx, fabs(X->data[e]));
    int ex = 0;
    frexp(mx, &ex);
    slong m = (slong)(b + d * q_hi);
    arb_mat_init(V, (slong)(a * b), m);
    for (size_t k = 0; k < b; k++)
        for (size_t i = 0; i < a; i++)
            arb_one(arb_mat_entry(V, (slong)(i * b + k), (slong)k));
    for (size_t p = 0; p < d; p++)
        for (size_t q = 0; q < q_hi; q++) {
            slong col = (slong)(b + p * q_hi + q);
            for (size_t i = 0; i < a; i++)
                for (size_t j = 0; j < b; j++) {
                    arb_ptr e = arb_mat_entry(V, (slong)(i * b + j), col);
                    double xi = ldexp(AC_MAT(X, p, I[i]), -ex);
                    if (b >= d) {
                        arb_set_d(e, xi);
                        arb_t t;
                        arb_init(t);
                        arb_set_d(t, ldexp(AC_MAT(X, q, J[j]), -ex));
                        arb_mul(e, e, t, PREC);
                        arb_clear(t);
                    } else if (j == q)
                        arb_set_d(e, xi);
                }
        }
    return m;
}

/* rho_IJ enclosed in [lo, hi]; Rmid (a x b, may be NULL) the residual's
 * midpoints.  Returns 0 if the normal equations cannot be solved (the
 * spanning set is dependent within the precision). */
static int rho_oracle(const ac_mat *X, const ac_mat *P, const size_t *I, size_t a,
                      const size_t *J, size_t b, double *lo, double *hi, double *Rmid)
{
    arb_mat_t V, Vt, G, l, r, beta, Vb;
    slong ab = (slong)(a * b), m = span_set(V, X, I, a, J, b);
    arb_mat_init(Vt, m, ab);
    arb_mat_init(G, m, m);
    arb_mat_init(l, ab, 1);
    arb_mat_init(r, m, 1);
    arb_mat_init(beta, m, 1);
    arb_mat_init(Vb, ab, 1);
    for (size_t i = 0; i < a; i++)
        for (size_t j = 0; j < b; j++) {
            arb_ptr e = arb_mat_entry(l, (slong)(i * b + j), 0);
            arb_set_d(e, AC_MAT(P, I[i], J[j]));
            arb_log(e, e, PREC);
        }
    arb_mat_transpose(Vt, V);
    arb_mat_mul(G, Vt, V, PREC);
    arb_mat_mul(r, Vt, l, PREC);
    int ok = arb_mat_spd_solve(beta, G, r, PREC);
    if (ok) {
        arb_t s, t;
        arb_init(s);
        arb_init(t);
        arb_mat_mul(Vb, V, beta, PREC);
        arb_mat_sub(Vb, l, Vb, PREC);
        for (slong e = 0; e < ab; e++) {
            arb_sqr(t, arb_mat_entry(Vb, e, 0), PREC);
            arb_add(s, s, t, PREC);
            if (Rmid)
                Rmid[e] = arf_get_d(arb_midref(arb_mat_entry(Vb, e, 0)), ARF_RND_NEAR);
        }
        arb_sqrt(s, s, PREC);
        arb_t u;
        arb_init(u);
        arb_get_lbound_arf(arb_midref(u), s, PREC);
        *lo = arf_get_d(arb_midref(u), ARF_RND_DOWN);
        arb_get_ubound_arf(arb_midref(u), s, PREC);
        *hi = arf_get_d(arb_midref(u), ARF_RND_UP);
        if (!(*lo >= 0))
            *lo = 0;
        arb_clear(u);
        arb_clear(s);
        arb_clear(t);
    }
    arb_mat_clear(V);
    arb_mat_clear(Vt);
    arb_mat_clear(G);
    arb_mat_clear(l);
    arb_mat_clear(r);
    arb_mat_clear(beta);
    arb_mat_clear(Vb);
    return ok;
}

/* 1 if X_I X_I' - s^2 I is positive definite in Arb (so s <= sigma_d(X_I)),
 * with X scaled by 2^-e on both sides. */
static int sigma_below(const ac_mat *X, const size_t *I, size_t a, double s)
{
    size_t d = X->rows;
    double mx = 0;
    for (size_t e = 0; e < d * X->cols; e++)
        mx = fmax(mx, fabs(X->data[e]));
    int ex = 0;
    frexp(mx, &ex);
    arb_mat_t G, C;
    arb_t t, u;
    arb_mat_init(G, (slong)d, (slong)d);
    arb_mat_init(C, (slong)d, (slong)d);
    arb_init(t);
    arb_init(u);
    for (size_t p = 0; p < d; p++)
        for (size_t q = 0; q < d; q++) {
            arb_ptr e = arb_mat_entry(G, (slong)p, (slong)q);
            for (size_t i = 0; i < a; i++) {
                arb_set_d(t, ldexp(AC_MAT(X, p, I[i]), -ex));
                arb_set_d(u, ldexp(AC_MAT(X, q, I[i]), -ex));
                arb_addmul(e, t, u, PREC);
            }
            if (p == q) {
                arb_set_d(t, ldexp(s, -ex));
                arb_submul(e, t, t, PREC);
            }
        }
    int ok = arb_mat_cho(C, G, PREC);
    arb_mat_clear(G);
    arb_mat_clear(C);
    arb_clear(t);
    arb_clear(u);
    return ok;
}

static void gauss(ac_mat *X, size_t d, size_t n, test_rng *r)
{
    ck_assert(ac_mat_init(X, d, n, NULL) == AC_OK);
    for (size_t i = 0; i < d * n; i++)
        X->data[i] = test_rng_gauss(r);
}

/* A positive n x n P with entries exp(N(0,1)) (column sums do not matter
 * for rho_IJ). */
static void positive(ac_mat *P, size_t n, test_rng *r)
{
    ck_assert(ac_mat_init(P, n, n, NULL) == AC_OK);
    for (size_t i = 0; i < n * n; i++)
        P->data[i] = exp(test_rng_gauss(r)) / (double)n;
}

/* Distinct random indices idx[0..cnt) from [0, n). */
static void pick(size_t *idx, size_t cnt, size_t n, test_rng *r)
{
    size_t *all = malloc(n * sizeof(size_t));
    for (size_t i = 0; i < n; i++)
        all[i] = i;
    for (size_t i = 0; i < cnt; i++) {
        size_t k = i + (size_t)(test_rng_unif(r) * (double)(n - i));
        if (k >= n)
            k = n - 1;
        size_t t = all[i];
        all[i] = all[k];
        all[k] = t;
        idx[i] = all[i];
    }
    free(all);
}

/* The certified pieces for (I, J): X_I, X_J, sigma bounds, h, the
 * enclosure of L_IJ.  h from hv = 1 - Pi_I 1 computed in double here. */
typedef struct {
    ac_mat XI, XJ;
    double sI, sJ, h;
    double *Llo, *Lhi;
} pieces;

static void pieces_init(pieces *pc, const ac_mat *X, const ac_mat *P, const size_t *I, size_t a,
                        const size_t *J, size_t b)
{
    size_t d = X->rows;
    ac_mat XIt = {0}, XJt = {0}, G = {0};
    memset(pc, 0, sizeof *pc);
    ck_assert(ac_mat_init(&pc->XI, d, a, NULL) == AC_OK);
    ck_assert(ac_mat_init(&pc->XJ, d, b, NULL) == AC_OK);
    ck_assert(ac_mat_init(&XIt, a, d, NULL) == AC_OK);
    ck_assert(ac_mat_init(&XJt, b, d, NULL) == AC_OK);
    for (size_t p = 0; p < d; p++) {
        for (size_t i = 0; i < a; i++)
            AC_MAT(&pc->XI, p, i) = AC_MAT(&XIt, i, p) = AC_MAT(X, p, I[i]);
        for (size_t j = 0; j < b; j++)
            AC_MAT(&pc->XJ, p, j) = AC_MAT(&XJt, j, p) = AC_MAT(X, p, J[j]);
    }
    pc->sI = ac_t1_sigma_min_lo(&XIt, NULL);
    pc->sJ = b > d ? ac_t1_sigma_min_lo(&XJt, NULL) : ac_t1_sigma_min_lo(&pc->XJ, NULL);
    double *hv = calloc(a, sizeof(double)), *g = calloc(d, sizeof(double));
    if (a >= d && ac_approx_pinv_fullcol(&G, &XIt, NULL) == AC_OK) {
        for (size_t p = 0; p < d; p++)
            for (size_t i = 0; i < a; i++)
                g[p] += AC_MAT(&G, p, i);
        for (size_t i = 0; i < a; i++) {
            double s = 0;
            for (size_t p = 0; p < d; p++)
                s += AC_MAT(&XIt, i, p) * g[p];
            hv[i] = 1.0 - s;
        }
        pc->h = ac_t1_dist_one_lo(&pc->XI, hv, pc->sI, NULL);
    }
    pc->Llo = malloc(a * b * sizeof(double));
    pc->Lhi = malloc(a * b * sizeof(double));
    double *p = malloc(a * b * sizeof(double));
    for (size_t i = 0; i < a; i++)
        for (size_t j = 0; j < b; j++)
            p[i * b + j] = AC_MAT(P, I[i], J[j]);
    ck_assert(ac_t1_log_enclose(p, a * b, pc->Llo, pc->Lhi));
    free(p);
    free(hv);
    free(g);
    ac_mat_free(&XIt);
    ac_mat_free(&XJt);
    ac_mat_free(&G);
}

static void pieces_free(pieces *pc)
{
    ac_mat_free(&pc->XI);
    ac_mat_free(&pc->XJ);
    free(pc->Llo);
    free(pc->Lhi);
}

/* Adversarial certificates: every bound must stay below the oracle's upper
 * end.  Y = random, L, 1 1', the oracle residual plus s times a random
 * member of S_IJ (s = 1e-8 .. 1e4). */
static void adversarial(const pieces *pc, const double *Rmid, size_t a, size_t b, double ohi,
                        test_rng *r, const char *what)
{
    size_t d = pc->XI.rows, ab = a * b;
    double *Y = malloc(ab * sizeof(double)), *B = malloc(d * d * sizeof(double));
    double *c = malloc(b * sizeof(double));
    for (int kind = 0; kind < 8; kind++) {
        double s = kind >= 3 ? pow(10.0, -8.0 + 2.4 * (kind - 3)) : 0;
        for (size_t e = 0; e < d * d; e++)
            B[e] = test_rng_gauss(r);
        for (size_t j = 0; j < b; j++)
            c[j] = test_rng_gauss(r);
        for (size_t i = 0; i < a; i++)
            for (size_t j = 0; j < b; j++) {
                size_t e = i * b + j;
                if (kind == 0)
                    Y[e] = test_rng_gauss(r);
                else if (kind == 1)
                    Y[e] = 0.5 * pc->Llo[e] + 0.5 * pc->Lhi[e];
                else if (kind == 2)
                    Y[e] = 1.0;
                else { /* R + s (1 c' + X_I' B X_J) */
                    double w = c[j];
                    for (size_t p = 0; p < d; p++)
                        for (size_t q = 0; q < d; q++)
                            w += AC_MAT(&pc->XI, p, i) * B[p * d + q] * AC_MAT(&pc->XJ, q, j);
                    Y[e] = Rmid[e] + s * w;
                }
            }
        double lo = ac_t1_resid_dual_lo(&pc->XI, &pc->XJ, Y, pc->Llo, pc->Lhi, pc->sI, pc->sJ,
                                        pc->h);
        ck_assert_msg(lo >= 0 && lo <= ohi, "%s: adversarial Y %d: bound %.17g > rho_IJ <= %.17g",
                      what, kind, lo, ohi);
    }
    free(Y);
    free(B);
    free(c);
}

/* One case: the whole certification against the oracle.  tight: require
 * the certified bound within 1e-6 of the oracle (well-conditioned input). */
static void check_case(const ac_mat *X, const ac_mat *P, const size_t *I, size_t a,
                       const size_t *J, size_t b, int tight, test_rng *r, const char *what)
{
    double olo = 0, ohi = INFINITY, lo, est;
    double *Rmid = malloc(a * b * sizeof(double));
    int have = rho_oracle(X, P, I, a, J, b, &olo, &ohi, Rmid);
    ck_assert_msg(have || !tight, "%s: the oracle failed", what);
    ac_t1_resid_rho(X, P, I, a, J, b, 1, &lo, &est);
    ck_assert_msg(lo >= 0 && lo <= ohi, "%s: certified rho_IJ >= %.17g but rho_IJ <= %.17g", what,
                  lo, ohi);
    if (tight)
        ck_assert_msg(lo >= olo * (1 - 1e-6), "%s: certified %.17g far below rho_IJ %.17g", what,
                      lo, olo);
    pieces pc;
    pieces_init(&pc, X, P, I, a, J, b);
    if (pc.sI > 0)
        ck_assert_msg(sigma_below(X, I, a, pc.sI), "%s: sigma_d(X_I) < %.17g", what, pc.sI);
    if (have)
        adversarial(&pc, Rmid, a, b, ohi, r, what);
    pieces_free(&pc);
    free(Rmid);
}

START_TEST(test_generic)
{
    test_rng r;
    test_rng_init(&r, 101);
    int cases = 0;
    for (size_t d = 1; d <= 4; d++)
        for (size_t a = d + 2; a <= 9; a += 2)
            for (size_t b = 1; b <= d + 3; b++) {
                size_t n = 12, I[12], J[12];
                ac_mat X = {0}, P = {0};
                gauss(&X, d, n, &r);
                positive(&P, n, &r);
                pick(I, a, n, &r);
                pick(J, b, n, &r);
                char what[96];
                snprintf(what, sizeof what, "generic d %zu a %zu b %zu", d, a, b);
                check_case(&X, &P, I, a, J, b, 1, &r, what);
                /* the same at 2^300 and 2^-300, and with tiny entries of P */
                for (size_t e = 0; e < d * n; e++)
                    X.data[e] = ldexp(X.data[e], 300);
                check_case(&X, &P, I, a, J, b, 1, &r, "X * 2^300");
                for (size_t e = 0; e < d * n; e++)
                    X.data[e] = ldexp(X.data[e], -600);
                check_case(&X, &P, I, a, J, b, 1, &r, "X * 2^-300");
                P.data[I[0] * n + J[0]] = 1e-300;
                check_case(&X, &P, I, a, J, b, 1, &r, "P_IJ has 1e-300");
                ac_mat_free(&X);
                ac_mat_free(&P);
                cases++;
            }
    ck_assert_int_gt(cases, 40);
}
END_TEST

/* X_I nearly rank deficient, 1 nearly in range X_I': sound (maybe loose). */
START_TEST(test_ill_conditioned)
{
    test_rng r;
    test_rng_init(&r, 202);
    static const double eps[] = {1e-4, 1e-8, 1e-11};
    for (size_t k = 0; k < 3; k++)
        for (size_t b = 1; b <= 5; b += 2) {
            size_t d = 3, n = 10, a = 8, I[10], J[10];
            ac_mat X = {0}, P = {0};
            gauss(&X, d, n, &r);
            positive(&P, n, &r);
            pick(I, a, n, &r);
            pick(J, b, n, &r);
            for (size_t j = 0; j < n; j++) /* row 2 ~ row 1 */
                AC_MAT(&X, 2, j) = AC_MAT(&X, 1, j) + eps[k] * test_rng_gauss(&r);
            check_case(&X, &P, I, a, J, b, 0, &r, "X_I nearly rank deficient");
            ac_mat_free(&X);
            gauss(&X, d, n, &r);
            for (size_t j = 0; j < n; j++) /* row 0 ~ 1 */
                AC_MAT(&X, 0, j) = 1.0 + eps[k] * test_rng_gauss(&r);
            check_case(&X, &P, I, a, J, b, 0, &r, "1 nearly in range X_I'");
            ac_mat_free(&X);
            ac_mat_free(&P);
        }
}
END_TEST

/* rho_IJ = 0 or h = 0: no positive bound may be claimed, for any Y. */
START_TEST(test_zero_cases)
{
    test_rng r;
    test_rng_init(&r, 303);
    for (size_t d = 1; d <= 4; d++)
        for (size_t b = 1; b <= d; b++) {
            size_t n = 10, I[10], J[10];
            ac_mat X = {0}, P = {0};
            gauss(&X, d, n, &r);
            positive(&P, n, &r);
            pick(J, b, n, &r);
            for (size_t a = 1; a <= d + 1; a++) { /* rho_IJ = 0: a <= d + 1, b <= d */
                pick(I, a, n, &r);
                double lo = -1, est;
                ac_t1_resid_rho(&X, &P, I, a, J, b, 1, &lo, &est);
                ck_assert(lo == 0);
                pieces pc;
                pieces_init(&pc, &X, &P, I, a, J, b);
                double *Rz = calloc(a * b, sizeof(double));
                adversarial(&pc, Rz, a, b, 0.0, &r, "rho_IJ = 0 (a <= d + 1, b <= d)");
                free(Rz);
                pieces_free(&pc);
            }
            /* 1 exactly in range X_I': h = 0 cannot be certified positive */
            for (size_t j = 0; j < n; j++)
                AC_MAT(&X, 0, j) = 1.0;
            size_t a = d + 3 > n ? n : d + 3;
            pick(I, a, n, &r);
            pieces pc;
            pieces_init(&pc, &X, &P, I, a, J, b);
            ck_assert_msg(pc.h == 0, "h = %g certified but 1 is in range X_I'", pc.h);
            double lo = -1, est;
            ac_t1_resid_rho(&X, &P, I, a, J, b, 1, &lo, &est);
            ck_assert(lo == 0);
            pieces_free(&pc);
            ac_mat_free(&X);
            ac_mat_free(&P);
        }
}
END_TEST

/* The aligned worst case of the proof: L_IJ = kappa h c' + noise (h = the
 * part of 1_a off range X_I', X_I with orthonormal rows), so the nearest
 * point Z* ~ kappa h c' has the largest c the proof allows; the
 * certificates Y = K h c' (K the centring), h c' and Y = L make the terms
 * ||Y'1||/h and ||X_I Y X_J'|| (1 + sqrt(a)/h)/(sI sJ) of the bound tight,
 * so a weaker term (sqrt(b) for sqrt(a), ||Y'1|| without /h) fails here. */
START_TEST(test_aligned)
{
    test_rng r;
    test_rng_init(&r, 404);
    int cases = 0;
    for (size_t d = 1; d <= 3; d++)
        for (size_t b = 1; b <= d; b++)
            for (size_t a = d + 2; a <= 10; a += 3) {
                size_t n = 12, I[12], J[12];
                ac_mat X = {0}, P = {0};
                gauss(&X, d, n, &r);
                pick(I, a, n, &r);
                pick(J, b, n, &r);
                /* orthonormal rows on I (Gram-Schmidt), other columns as drawn */
                for (size_t p = 0; p < d; p++) {
                    for (size_t q = 0; q < p; q++) {
                        double s = 0;
                        for (size_t i = 0; i < a; i++)
                            s += AC_MAT(&X, p, I[i]) * AC_MAT(&X, q, I[i]);
                        for (size_t i = 0; i < a; i++)
                            AC_MAT(&X, p, I[i]) -= s * AC_MAT(&X, q, I[i]);
                    }
                    double s = 0;
                    for (size_t i = 0; i < a; i++)
                        s += AC_MAT(&X, p, I[i]) * AC_MAT(&X, p, I[i]);
                    for (size_t i = 0; i < a; i++)
                        AC_MAT(&X, p, I[i]) /= sqrt(s);
                }
                /* h = 1 - X_I' X_I 1 */
                double h[12], c[12], g[3] = {0, 0, 0};
                for (size_t p = 0; p < d; p++)
                    for (size_t i = 0; i < a; i++)
                        g[p] += AC_MAT(&X, p, I[i]);
                for (size_t i = 0; i < a; i++) {
                    h[i] = 1.0;
                    for (size_t p = 0; p < d; p++)
                        h[i] -= AC_MAT(&X, p, I[i]) * g[p];
                }
                for (size_t j = 0; j < b; j++)
                    c[j] = test_rng_gauss(&r);
                positive(&P, n, &r);
                for (size_t i = 0; i < a; i++)
                    for (size_t j = 0; j < b; j++)
                        AC_MAT(&P, I[i], J[j]) = exp(3.0 * h[i] * c[j] + 1e-3 * test_rng_gauss(&r));
                double olo, ohi;
                if (!rho_oracle(&X, &P, I, a, J, b, &olo, &ohi, NULL)) {
                    ac_mat_free(&X);
                    ac_mat_free(&P);
                    continue;
                }
                pieces pc;
                pieces_init(&pc, &X, &P, I, a, J, b);
                double Y[120], hm = 0;
                for (size_t i = 0; i < a; i++)
                    hm += h[i] / (double)a;
                for (int kind = 0; kind < 3; kind++) {
                    for (size_t i = 0; i < a; i++)
                        for (size_t j = 0; j < b; j++)
                            Y[i * b + j] = kind == 0   ? (h[i] - hm) * c[j]
                                           : kind == 1 ? h[i] * c[j]
                                                       : 0.5 * pc.Llo[i * b + j] + 0.5 * pc.Lhi[i * b + j];
                    double lo = ac_t1_resid_dual_lo(&pc.XI, &pc.XJ, Y, pc.Llo, pc.Lhi, pc.sI,
                                                    pc.sJ, pc.h);
                    ck_assert_msg(lo <= ohi,
                                  "aligned d %zu a %zu b %zu Y %d: bound %.17g > rho_IJ <= %.17g",
                                  d, a, b, kind, lo, ohi);
                }
                pieces_free(&pc);
                ac_mat_free(&X);
                ac_mat_free(&P);
                cases++;
            }
    ck_assert_int_gt(cases, 10);
}
END_TEST

/* The distance bound of one column on generated instances: the column and
 * rows it names have rho_IJ >= the reported rho (oracle), and the
 * reported t has sqrt(sum phi(t/P_ij)^2) < rho_IJ (MPFR). */
START_TEST(test_lb_resid)
{
    static const size_t shapes[][2] = {{1, 3}, {2, 7}, {3, 12}, {5, 16}, {8, 24}, {16, 40}};
    int positive_seen = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t d = shapes[s][0], n = shapes[s][1];
        ac_mat X = {0}, P = {0};
        ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + s, NULL) == AC_OK);
        size_t col, a;
        double rho, t = ac_t1_lb_resid(&X, &P, &col, &a, &rho);
        if (t > 0) {
            positive_seen++;
            size_t *I = malloc(n * sizeof(size_t));
            double *p = malloc(n * sizeof(double));
            for (size_t i = 0; i < n; i++)
                I[i] = i;
            for (size_t i = 0; i < n; i++) /* rows by P descending, ties by index */
                for (size_t k = i + 1; k < n; k++) {
                    double pi = AC_MAT(&P, I[i], col), pk = AC_MAT(&P, I[k], col);
                    if (pk > pi || (pk == pi && I[k] < I[i])) {
                        size_t tmp = I[i];
                        I[i] = I[k];
                        I[k] = tmp;
                    }
                }
            for (size_t i = 0; i < a; i++)
                p[i] = AC_MAT(&P, I[i], col);
            double olo, ohi;
            ck_assert(rho_oracle(&X, &P, I, a, &col, 1, &olo, &ohi, NULL));
            ck_assert_msg(rho <= ohi, "n %zu: reported rho %.17g > rho_IJ %.17g", n, rho, ohi);
            ck_assert_msg(ac_t1_phi_fro_up(p, a, t, 0) < olo, "n %zu: t = %g not below", n, t);
            free(I);
            free(p);
        }
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
    ck_assert_int_ge(positive_seen, 4);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("t1_resid");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_generic);
    tcase_add_test(tc, test_ill_conditioned);
    tcase_add_test(tc, test_zero_cases);
    tcase_add_test(tc, test_aligned);
    tcase_add_test(tc, test_lb_resid);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
