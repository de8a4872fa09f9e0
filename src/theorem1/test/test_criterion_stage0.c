/* test_criterion_stage0.c — stage 0 of Theorem 1's route DECIDE (src/theorem1/
 * criterion_stage0.c, doc/mathematics.md §3.4 "Stage 0 of the criterion"): the
 * log-domain residual rho by a dual certificate in double, the singular
 * values of K log P from a double enclosure, and the verified logarithm.
 *
 * Oracles: rho in Arb at 256 bits (the projector by a Cholesky solve and
 * the exact minimiser c*, written here independently of decide.c); the
 * singular values of K log P from an Arb enclosure of K log P; log by MPFR.
 * Hostile classes: near-threshold rho (P representable up to rounding, or
 * perturbed by 1e-13 .. 1e-6), X close to rank deficient, X scaled by
 * 2^±300, tiny entries of P (1e-300), 1 in the row space of X, odd and
 * edge shapes (d = 1, n = d + 1).  Each case: the stage-0 enclosure must
 * intersect Arb's, and a positive stage-0 lower bound must lie below
 * Arb's upper end. */
#include <config.h>

#include <math.h>
#include <string.h>

#include <mpfr.h>

#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "core/ac_arb.h"
#include "core/ball.h"
#include "theorem1/t1_dist.h"
#include "theorem1/t1_impl.h"
#include "theorem1/t1_stage0.h"
#include "testutil.h"

/* The Arb oracles' common start: L = log P entrywise and the orthogonal
 * projector Pi = B'(BB')^{-1}B on the row space of X (B = X 2^-ex, which
 * leaves Pi unchanged), at prec bits.  Pi and L are initialised n x n by the
 * caller.  Returns 0 if the Cholesky solve fails (X not certified of full
 * row rank). */
static int arb_pi_and_log(arb_mat_t Pi, arb_mat_t L, const ac_mat *X, const ac_mat *P, int ex,
                          slong prec)
{
    slong d = (slong)X->rows, n = (slong)X->cols;
    arb_mat_t B, Bt, G, Z;
    arb_mat_init(B, d, n);
    arb_mat_init(Bt, n, d);
    arb_mat_init(G, d, d);
    arb_mat_init(Z, d, n);
    for (slong i = 0; i < d; i++)
        for (slong j = 0; j < n; j++)
            arb_set_d(arb_mat_entry(B, i, j), ldexp(AC_MAT(X, i, j), -ex));
    for (slong i = 0; i < n; i++)
        for (slong j = 0; j < n; j++) {
            arb_set_d(arb_mat_entry(L, i, j), AC_MAT(P, i, j));
            arb_log(arb_mat_entry(L, i, j), arb_mat_entry(L, i, j), prec);
        }
    arb_mat_transpose(Bt, B);
    arb_mat_mul(G, B, Bt, prec);
    int ok = arb_mat_spd_solve(Z, G, B, prec);
    if (ok)
        arb_mat_mul(Pi, Bt, Z, prec);
    arb_mat_clear(B);
    arb_mat_clear(Bt);
    arb_mat_clear(G);
    arb_mat_clear(Z);
    return ok;
}

/* rho = min_c ||M(c) - Pi M(c) Pi||_F in Arb (X d x n of full row rank);
 * Rmid (n x n, may be NULL) receives the midpoints of the residual. */
static double dist1_hi_; /* upper bound on dist(1, row space of X), by rho_arb_R */

static void rho_arb_R(const ac_mat *X, const ac_mat *P, slong prec, double *lo, double *hi,
                      double *Rmid)
{
    slong n = (slong)X->cols;
    arb_mat_t Pi, L, T, W;
    arb_ptr g = _arb_vec_init(n), v = _arb_vec_init(n), pv = _arb_vec_init(n);
    arb_ptr c = _arb_vec_init(n), pc = _arb_vec_init(n);
    arb_t b, nb, t;
    arb_mat_init(Pi, n, n);
    arb_mat_init(L, n, n);
    arb_mat_init(T, n, n);
    arb_mat_init(W, n, n);
    arb_init(b);
    arb_init(nb);
    arb_init(t);
    *lo = 0;
    *hi = INFINITY;
    if (!arb_pi_and_log(Pi, L, X, P, 0, prec))
        goto out;
    arb_mat_mul(W, Pi, L, prec);
    arb_mat_mul(T, W, Pi, prec);
    arb_mat_sub(T, L, T, prec); /* T = L - Pi L Pi */
    arb_zero(b);
    for (slong i = 0; i < n; i++)
        for (slong j = 0; j < n; j++) {
            arb_add(g + i, g + i, arb_mat_entry(Pi, i, j), prec);
            arb_add(v + j, v + j, arb_mat_entry(T, i, j), prec);
        }
    for (slong i = 0; i < n; i++)
        arb_add(b, b, g + i, prec);
    for (slong i = 0; i < n; i++)
        for (slong j = 0; j < n; j++)
            arb_addmul(pv + i, arb_mat_entry(Pi, i, j), v + j, prec);
    arb_sub_ui(nb, b, (ulong)n, prec);
    arb_neg(nb, nb);
    if (!arb_is_positive(nb))
        goto out;
    { /* dist(1, row space)^2 = n - 1'Pi 1 */
        arf_t u;
        arf_init(u);
        arb_sqrt(t, nb, prec);
        arb_get_ubound_arf(u, t, prec);
        dist1_hi_ = arf_get_d(u, ARF_RND_CEIL);
        arf_clear(u);
    }
    for (slong i = 0; i < n; i++) {
        arb_sub(c + i, v + i, pv + i, prec);
        arb_div_ui(c + i, c + i, (ulong)n, prec);
        arb_div(t, pv + i, nb, prec);
        arb_add(c + i, c + i, t, prec);
        arb_neg(c + i, c + i);
    }
    for (slong i = 0; i < n; i++)
        for (slong j = 0; j < n; j++)
            arb_addmul(pc + i, arb_mat_entry(Pi, i, j), c + j, prec);
    for (slong i = 0; i < n; i++)
        for (slong j = 0; j < n; j++) {
            arb_ptr e = arb_mat_entry(T, i, j);
            arb_add(e, e, c + j, prec);
            arb_mul(t, g + i, pc + j, prec);
            arb_sub(e, e, t, prec);
        }
    if (Rmid)
        for (slong i = 0; i < n; i++)
            for (slong j = 0; j < n; j++)
                Rmid[i * n + j] = arf_get_d(arb_midref(arb_mat_entry(T, i, j)), ARF_RND_NEAR);
    arb_mat_frobenius_norm(t, T, prec);
    arf_t a;
    arf_init(a);
    arb_get_lbound_arf(a, t, prec);
    *lo = fmax(0.0, arf_get_d(a, ARF_RND_FLOOR));
    arb_get_ubound_arf(a, t, prec);
    *hi = arf_get_d(a, ARF_RND_CEIL);
    arf_clear(a);
out:
    arb_mat_clear(Pi);
    arb_mat_clear(L);
    arb_mat_clear(T);
    arb_mat_clear(W);
    _arb_vec_clear(g, n);
    _arb_vec_clear(v, n);
    _arb_vec_clear(pv, n);
    _arb_vec_clear(c, n);
    _arb_vec_clear(pc, n);
    arb_clear(b);
    arb_clear(nb);
    arb_clear(t);
}

static void rho_arb(const ac_mat *X, const ac_mat *P, slong prec, double *lo, double *hi)
{
    rho_arb_R(X, P, prec, lo, hi, NULL);
}

/* sigma_d(X) >= *slo certified (left inverse of X'); 0 if not certified. */
static double sigma_lo_of(const ac_mat *X)
{
    size_t d = X->rows, n = X->cols;
    ac_mat Xt = {0}, Y = {0};
    double qlo, qhi, slo = 0;
    ck_assert(ac_mat_init(&Xt, n, d, NULL) == AC_OK);
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < n; j++)
            AC_MAT(&Xt, j, i) = AC_MAT(X, i, j);
    if (ac_approx_pinv_fullcol(&Y, &Xt, NULL) == AC_OK &&
        ac_cert_left_inverse(&Y, &Xt, &qlo, &qhi, &slo, NULL, NULL) == AC_OK && !(qhi < 1))
        slo = 0;
    ac_mat_free(&Xt);
    ac_mat_free(&Y);
    return slo;
}

/* One case: stage 0 against Arb; returns 1 if stage 0 certified rho > 0. */
static int check_case(const ac_mat *X, const ac_mat *P, const char *what)
{
    double slo = sigma_lo_of(X), lo, hi, h, alo, ahi;
    ck_assert(ac_t1_rho_stage0(X, P, slo, &lo, &hi, &h, NULL) == AC_OK);
    rho_arb(X, P, 256, &alo, &ahi);
    ck_assert_msg(lo >= 0 && lo <= hi, "%s: stage 0 [%g, %g] not ordered", what, lo, hi);
    ck_assert_msg(lo <= ahi && alo <= hi, "%s: stage 0 [%.17g, %.17g] vs Arb [%.17g, %.17g]",
                  what, lo, hi, alo, ahi);
    return lo > 0;
}

static void gauss(ac_mat *X, size_t d, size_t n, test_rng *r)
{
    ck_assert(ac_mat_init(X, d, n, NULL) == AC_OK);
    for (size_t i = 0; i < d * n; i++)
        X->data[i] = test_rng_gauss(r);
}

/* Gaussian X, Dirichlet P, odd and edge shapes: stage 0 decides and agrees. */
START_TEST(test_rho_generic)
{
    static const size_t shapes[][2] = {{1, 2},  {1, 5},  {2, 3},   {3, 7},  {5, 6},
                                       {7, 16}, {16, 33}, {31, 40}, {20, 64}, {40, 41}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        ac_mat X = {0}, P = {0};
        size_t d = shapes[s][0], n = shapes[s][1];
        ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + s, NULL) == AC_OK);
        char what[64];
        snprintf(what, sizeof what, "Gaussian %zu x %zu", d, n);
        ck_assert_msg(check_case(&X, &P, what), "%s: stage 0 did not decide", what);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* Near-threshold rho: P representable up to rounding (rho ~ 1e-15) and
 * perturbed by eps in the log domain; X scaled by 2^-300 and 2^300. */
START_TEST(test_rho_hostile_threshold_scale)
{
    test_rng r;
    test_rng_init(&r, 11);
    size_t d = 6, n = 15;
    static const double eps[] = {0, 1e-13, 1e-10, 1e-8, 1e-6};
    static const int scale[] = {0, -300, 300};
    int decided_small = 0;
    for (size_t e = 0; e < sizeof eps / sizeof eps[0]; e++)
        for (size_t k = 0; k < sizeof scale / sizeof scale[0]; k++) {
            ac_mat X = {0}, P = {0};
            gauss(&X, d, n, &r);
            ck_assert(ac_t1_generate_representable(&P, &X, d, test_seed_value + e, NULL) ==
                      AC_OK);
            for (size_t j = 0; j < n; j++) { /* P <- colnorm(P exp(eps E)) */
                double s = 0;
                for (size_t i = 0; i < n; i++)
                    s += (AC_MAT(&P, i, j) *= exp(eps[e] * test_rng_gauss(&r)));
                for (size_t i = 0; i < n; i++)
                    AC_MAT(&P, i, j) /= s;
            }
            for (size_t i = 0; i < d * n; i++)
                X.data[i] = ldexp(X.data[i], scale[k]);
            char what[64];
            snprintf(what, sizeof what, "eps %g, X * 2^%d", eps[e], scale[k]);
            int dec = check_case(&X, &P, what);
            if (eps[e] >= 1e-8 && dec)
                decided_small++;
            ac_mat_free(&X);
            ac_mat_free(&P);
        }
    /* the bound is not vacuous near the threshold: rho ~ 1e-8 * n is decided */
    ck_assert_int_ge(decided_small, 3);
}
END_TEST

/* X close to rank deficient (sigma_d = 1e-6 .. 1e-12), tiny entries of P,
 * and 1 in the row space of X (stage 0 must decline, not err). */
START_TEST(test_rho_hostile_structure)
{
    test_rng r;
    test_rng_init(&r, 12);
    size_t d = 5, n = 12;
    static const double smin[] = {1e-3, 1e-6, 1e-9, 1e-12};
    for (size_t k = 0; k < sizeof smin / sizeof smin[0]; k++) {
        ac_mat X = {0}, P = {0};
        ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + 40 + k, NULL) == AC_OK);
        /* last row = first row + smin * noise: sigma_d about smin */
        for (size_t j = 0; j < n; j++)
            AC_MAT(&X, d - 1, j) = AC_MAT(&X, 0, j) + smin[k] * test_rng_gauss(&r);
        char what[64];
        snprintf(what, sizeof what, "sigma_d ~ %g", smin[k]);
        check_case(&X, &P, what);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
    { /* tiny entries of P */
        ac_mat X = {0}, P = {0};
        ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + 50, NULL) == AC_OK);
        for (size_t j = 0; j < n; j += 2) {
            AC_MAT(&P, (j + 1) % n, j) = 1e-300;
            AC_MAT(&P, (j + 3) % n, j) = 0x1p-1000;
            double s = 0;
            for (size_t i = 0; i < n; i++)
                s += AC_MAT(&P, i, j);
            for (size_t i = 0; i < n; i++)
                AC_MAT(&P, i, j) /= s;
        }
        ck_assert_msg(check_case(&X, &P, "tiny P"), "tiny P: stage 0 did not decide");
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
    { /* 1 in the row space: the dual bound on dist(1, row space) must not be positive */
        ac_mat X = {0}, P = {0};
        double lo, hi, h;
        ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + 51, NULL) == AC_OK);
        for (size_t j = 0; j < n; j++)
            AC_MAT(&X, 2, j) = 1.0;
        ck_assert(ac_t1_rho_stage0(&X, &P, sigma_lo_of(&X), &lo, &hi, &h, NULL) == AC_OK);
        ck_assert_msg(h == 0 && lo == 0, "1 in the row space: h %g, rho_lo %g", h, lo);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
    { /* no certified sigma: stage 0 declines */
        ac_mat X = {0}, P = {0};
        double lo, hi, h;
        ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + 52, NULL) == AC_OK);
        ck_assert(ac_t1_rho_stage0(&X, &P, 0.0, &lo, &hi, &h, NULL) == AC_OK);
        ck_assert(lo == 0 && isinf(hi));
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* The dual bound is sound for ANY proposed Y: the residual plus t 1w' (only
 * the ||Y'1|| term accounts for it, since X 1 = 0 exactly here) or plus
 * t X'BX (only the ||XYX'|| term: 1'X' = 0), with w, B chosen to raise
 * <Y, L>; and the bound on dist(1, row space) for any hv. */
START_TEST(test_dual_any_Y)
{
    test_rng r;
    test_rng_init(&r, 14);
    size_t d = 4, n = 13, nn = n * n;
    ac_mat X = {0}, P = {0};
    ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + 70, NULL) == AC_OK);
    for (size_t i = 0; i < d; i++) { /* integer rows summing to 0 exactly */
        double s = 0;
        for (size_t j = 0; j + 1 < n; j++)
            s += (AC_MAT(&X, i, j) = round(8 * AC_MAT(&X, i, j)));
        AC_MAT(&X, i, n - 1) = -s;
    }
    double *R = malloc(nn * sizeof(double)), *Y = malloc(nn * sizeof(double));
    double *Llo = malloc(nn * sizeof(double)), *Lhi = malloc(nn * sizeof(double));
    double *w = calloc(n, sizeof(double)), *hv = malloc(n * sizeof(double));
    double alo, ahi, slo = sigma_lo_of(&X), lo;
    ac_mat B = {0}, XB = {0}, XBX = {0}, XL = {0}, Lm = {n, n, Llo};
    ck_assert(slo > 0);
    rho_arb_R(&X, &P, 256, &alo, &ahi, R);
    ck_assert(ac_t1_log_enclose(P.data, nn, Llo, Lhi));
    for (size_t i = 0; i < n; i++) /* w = L'1: <1w', L> = ||L'1||^2 > 0 */
        for (size_t j = 0; j < n; j++)
            w[j] += Llo[i * n + j];
    /* B = Yp L Yp', Yp ~ (X')^+: X'BX ~ Pi L Pi, the part of L that X'AX
     * can absorb; some multiple of it raises <Y, L>/||Y|| above rho */
    ac_mat Xt = {0}, Yp = {0};
    ck_assert(ac_mat_init(&Xt, n, d, NULL) == AC_OK);
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < n; j++)
            AC_MAT(&Xt, j, i) = AC_MAT(&X, i, j);
    ck_assert(ac_approx_pinv_fullcol(&Yp, &Xt, NULL) == AC_OK);
    ck_assert(ac_mat_init(&XL, d, n, NULL) == AC_OK && ac_mat_init(&B, d, d, NULL) == AC_OK &&
              ac_mat_init(&XB, n, d, NULL) == AC_OK && ac_mat_init(&XBX, n, n, NULL) == AC_OK);
    ac_gemm(&XL, AC_NOTRANS, &Yp, AC_NOTRANS, &Lm, NULL);
    ac_gemm(&B, AC_NOTRANS, &XL, AC_TRANS, &Yp, NULL);
    ac_mat_free(&Xt);
    ac_mat_free(&Yp);
    ac_gemm(&XB, AC_TRANS, &X, AC_NOTRANS, &B, NULL);
    ac_gemm(&XBX, AC_NOTRANS, &XB, AC_NOTRANS, &X, NULL);
    double h = sqrt((double)n); /* X 1 = 0: 1 is orthogonal to the row space */
    double ts[48];
    ts[0] = 0;
    for (int k = 1; k < 48; k++)
        ts[k] = ldexp(1.0, k - 36);
    for (int kind = 0; kind < 2; kind++)
        for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++)
                    Y[i * n + j] = R[i * n + j] + ts[k] * (kind == 0 ? w[j] : XBX.data[i * n + j]);
            ck_assert(ac_t1_rho_dual_lo(&X, Y, Llo, Lhi, slo, h * (1 - 1e-12), &lo, NULL) ==
                      AC_OK);
            ck_assert_msg(lo <= ahi, "kind %d t %g: dual bound %.17g > rho <= %.17g", kind, ts[k],
                          lo, ahi);
            if (ts[k] == 0)
                ck_assert_msg(lo > 0.999 * alo, "the exact residual must certify rho (%g, %g)",
                              lo, alo);
        }
    /* dist(1, row space) = sqrt(n) here; any hv gives at most that */
    for (int k = 0; k < 20; k++) {
        for (size_t j = 0; j < n; j++)
            hv[j] = 1.0 + (k % 4) * test_rng_gauss(&r) * (k < 10 ? 1e-3 : 10.0);
        if (k % 2)
            for (size_t j = 0; j < n; j++)
                hv[j] += k * AC_MAT(&X, 0, j);
        double hl = ac_t1_dist_one_lo(&X, hv, slo, NULL);
        ck_assert_msg(hl <= h, "dist(1, row space) %g > sqrt(n) %g", hl, h);
        if (k == 0)
            ck_assert(hl > 0.99 * h);
    }
    { /* a Gaussian X (1 not orthogonal to the row space): hv = h + t X'X1
       * raises hv'1; the bound must stay below the true distance */
        ac_mat G = {0}, PG = {0};
        double glo, ghi;
        ck_assert(ac_t1_generate(&G, &PG, d, n, test_seed_value + 71, NULL) == AC_OK);
        dist1_hi_ = -1;
        rho_arb_R(&G, &PG, 256, &glo, &ghi, NULL);
        ck_assert(dist1_hi_ > 0);
        double sg = sigma_lo_of(&G), *x1 = calloc(d, sizeof(double));
        double *dv = calloc(n, sizeof(double)), *h0 = malloc(n * sizeof(double));
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < n; j++)
                x1[i] += AC_MAT(&G, i, j);
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i < d; i++)
                dv[j] += AC_MAT(&G, i, j) * x1[i];
        /* h0 = 1 - Pi 1 from Arb's residual machinery is not exposed: use
         * stage 0's own computation through rho_stage0 */
        double lo0, hi0, hl0;
        ck_assert(ac_t1_rho_stage0(&G, &PG, sg, &lo0, &hi0, &hl0, NULL) == AC_OK);
        ck_assert_msg(hl0 > 0 && hl0 <= dist1_hi_, "h %g vs %g", hl0, dist1_hi_);
        double best = 0;
        for (int k = -30; k <= 10; k++) {
            double t = ldexp(1.0, k);
            for (size_t j = 0; j < n; j++)
                h0[j] = 1.0 + t * dv[j];
            double hl = ac_t1_dist_one_lo(&G, h0, sg, NULL);
            best = fmax(best, hl);
            ck_assert_msg(hl <= dist1_hi_, "t %g: dist(1, row space) >= %.17g > %.17g", t, hl,
                          dist1_hi_);
        }
        ck_assert(best >= 0);
        free(x1);
        free(dv);
        free(h0);
        ac_mat_free(&G);
        ac_mat_free(&PG);
    }
    free(R);
    free(Y);
    free(Llo);
    free(Lhi);
    free(w);
    free(hv);
    ac_mat_free(&B);
    ac_mat_free(&XB);
    ac_mat_free(&XBX);
    ac_mat_free(&XL);
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

/* The entrywise sum of the distance bound: the double version (verified
 * logarithm) and the MPFR reference both bound the 200-bit value from above,
 * and the double one within 1e-9 of it; +inf when t reaches an entry. */
START_TEST(test_phi_twins)
{
    test_rng r;
    test_rng_init(&r, 15);
    enum { N = 3001 };
    double *p = malloc(N * sizeof(double));
    mpfr_t q, acc;
    mpfr_inits2(200, q, acc, (mpfr_ptr)0);
    for (int round = 0; round < 6; round++) {
        double pmin = INFINITY;
        for (int e = 0; e < N; e++) {
            p[e] = ldexp(test_rng_range(&r, 1.0, 2.0), -(int)(test_rng_u64(&r) % (20 + 200 * round)));
            pmin = fmin(pmin, p[e]);
        }
        double t = pmin * (round == 5 ? 1.0 : test_rng_range(&r, 1e-3, 0.999));
        mpfr_set_zero(acc, 1);
        for (int e = 0; e < N && t < pmin; e++) {
            mpfr_set_d(q, t, MPFR_RNDN);
            mpfr_div_d(q, q, p[e], MPFR_RNDN);
            mpfr_ui_sub(q, 1, q, MPFR_RNDN);
            mpfr_log(q, q, MPFR_RNDN);
            mpfr_sqr(q, q, MPFR_RNDN);
            mpfr_add(acc, acc, q, MPFR_RNDN);
        }
        mpfr_sqrt(acc, acc, MPFR_RNDN);
        double ex = t < pmin ? mpfr_get_d(acc, MPFR_RNDN) : INFINITY;
        double a = ac_t1_phi_fro_up(p, N, t, 0), b = ac_t1_phi_fro_up(p, N, t, 1);
        if (isinf(ex)) {
            ck_assert(isinf(a) && isinf(b));
            continue;
        }
        ck_assert_msg(a >= ex * (1 - 1e-15) && b >= ex * (1 - 1e-15), "%g %g %g", a, b, ex);
        ck_assert_msg(b <= ex * (1 + 1e-9) + 1e-300, "double %.17g vs %.17g", b, ex);
    }
    mpfr_clears(q, acc, (mpfr_ptr)0);
    free(p);
}
END_TEST

/* The verified logarithm against MPFR, across the range of doubles. */
START_TEST(test_log_enclose)
{
    test_rng r;
    test_rng_init(&r, 13);
    enum { N = 2000 };
    double p[N], lo[N], hi[N];
    for (int i = 0; i < N; i++)
        p[i] = ldexp(test_rng_range(&r, 1.0, 2.0), (int)(test_rng_u64(&r) % 2040) - 1020);
    p[0] = 1.0;
    p[1] = 0x1p-1022;
    p[2] = 1.0 - 0x1p-53;
    p[3] = 1.0 + 0x1p-52;
    ck_assert(ac_t1_log_enclose(p, N, lo, hi));
    mpfr_t x, y;
    mpfr_init2(x, 128);
    mpfr_init2(y, 128);
    for (int i = 0; i < N; i++) {
        mpfr_set_d(x, p[i], MPFR_RNDN);
        mpfr_log(y, x, MPFR_RNDN);
        ck_assert_msg(mpfr_cmp_d(y, lo[i]) >= 0 && mpfr_cmp_d(y, hi[i]) <= 0, "log(%a)", p[i]);
        ck_assert(hi[i] - lo[i] <= 1e-11 * (1 + fabs(lo[i])));
    }
    mpfr_clear(x);
    mpfr_clear(y);
    double bad[2] = {0.0, 1.0};
    ck_assert(!ac_t1_log_enclose(bad, 2, lo, hi));
}
END_TEST

/* sigma_k(K log P) at stage 0 against an Arb enclosure of K log P. */
START_TEST(test_klogp_sv)
{
    static const size_t ns[] = {1, 2, 5, 17, 40};
    for (size_t s = 0; s < sizeof ns / sizeof ns[0]; s++) {
        size_t n = ns[s];
        ac_mat X = {0}, P = {0};
        ck_assert(ac_t1_generate(&X, &P, n, n, test_seed_value + 60 + s, NULL) == AC_OK);
        double *lo = malloc(n * sizeof(double)), *hi = malloc(n * sizeof(double));
        double *alo = malloc(n * sizeof(double)), *ahi = malloc(n * sizeof(double));
        ck_assert(ac_t1_klogp_sv_stage0(&P, lo, hi));
        arb_mat_t M;
        arb_t m;
        ac_imat A = {0};
        arb_mat_init(M, (slong)n, (slong)n);
        arb_init(m);
        for (size_t j = 0; j < n; j++) {
            arb_zero(m);
            for (size_t i = 0; i < n; i++) {
                arb_ptr e = arb_mat_entry(M, (slong)i, (slong)j);
                arb_set_d(e, AC_MAT(&P, i, j));
                arb_log(e, e, 256);
                arb_add(m, m, e, 256);
            }
            arb_div_ui(m, m, (ulong)n, 256);
            for (size_t i = 0; i < n; i++)
                arb_sub(arb_mat_entry(M, (slong)i, (slong)j), arb_mat_entry(M, (slong)i, (slong)j),
                        m, 256);
        }
        ck_assert(ac_arb_mat_to_imat(&A, M, NULL) == AC_OK);
        ck_assert(ac_sv_enclose(&A, alo, ahi, NULL, NULL) == AC_OK);
        for (size_t k = 0; k < n; k++)
            ck_assert_msg(lo[k] <= ahi[k] && alo[k] <= hi[k], "n %zu sigma_%zu", n, k + 1);
        /* K log P has rank <= n - 1, and a Dirichlet P has rank exactly n - 1 */
        if (n >= 2)
            ck_assert(lo[n - 2] > 0);
        if (n >= 5) { /* a submatrix: rows {n-1, 1, 3}, columns {0, 2, n-2, 4}: the
                       * rows centred over I, against Arb on the same entries */
            size_t I[3] = {n - 1, 1, 3}, J[4] = {0, 2, n - 2, 4};
            double sl[3], sh[3], al[3], ah[3];
            arb_mat_t S;
            ac_imat SA = {0};
            ck_assert(ac_t1_centred_log_sv_stage0(&P, I, 3, J, 4, sl, sh));
            arb_mat_init(S, 3, 4);
            for (size_t b = 0; b < 4; b++) {
                arb_zero(m);
                for (size_t a = 0; a < 3; a++) {
                    arb_ptr e = arb_mat_entry(S, (slong)a, (slong)b);
                    arb_set_d(e, AC_MAT(&P, I[a], J[b]));
                    arb_log(e, e, 256);
                    arb_add(m, m, e, 256);
                }
                arb_div_ui(m, m, 3, 256);
                for (size_t a = 0; a < 3; a++)
                    arb_sub(arb_mat_entry(S, (slong)a, (slong)b),
                            arb_mat_entry(S, (slong)a, (slong)b), m, 256);
            }
            ck_assert(ac_arb_mat_to_imat(&SA, S, NULL) == AC_OK);
            ck_assert(ac_sv_enclose(&SA, al, ah, NULL, NULL) == AC_OK);
            for (size_t q = 0; q < 3; q++)
                ck_assert_msg(sl[q] <= ah[q] && al[q] <= sh[q], "submatrix sigma_%zu", q + 1);
            ck_assert(sl[1] > 0 && sl[2] < 1e-9); /* centred 3-row: rank 2 */
            arb_mat_clear(S);
            ac_imat_free(&SA);
        }
        arb_mat_clear(M);
        arb_clear(m);
        ac_imat_free(&A);
        free(lo);
        free(hi);
        free(alo);
        free(ahi);
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
}
END_TEST

/* sigma_i(K Pi log P Pi) in Arb at 256 bits: Pi by a Cholesky solve on
 * X scaled by a power of two (Pi does not change), K = I - g g'/(g'g),
 * g = Pi 1 (K = I if one_perp), the Weyl enclosure around an SVD.
 * Returns 0 if Arb cannot build it. */
static int kpilpi_arb(const ac_mat *X, const ac_mat *P, int one_perp, double *lo, double *hi)
{
    slong n = (slong)X->cols, prec = 256;
    double mx = 0;
    for (size_t e = 0; e < X->rows * X->cols; e++)
        mx = fmax(mx, fabs(X->data[e]));
    int ex = 0;
    frexp(mx, &ex);
    arb_mat_t Pi, L, W, M;
    arb_t b, t;
    ac_imat A = {0};
    arb_mat_init(Pi, n, n);
    arb_mat_init(L, n, n);
    arb_mat_init(W, n, n);
    arb_mat_init(M, n, n);
    arb_init(b);
    arb_init(t);
    int ok = 0;
    if (!arb_pi_and_log(Pi, L, X, P, ex, prec))
        goto out;
    arb_mat_mul(W, Pi, L, prec);
    arb_mat_mul(M, W, Pi, prec);
    if (!one_perp) {
        arb_ptr g = _arb_vec_init(n), q = _arb_vec_init(n);
        arb_zero(b);
        for (slong i = 0; i < n; i++) {
            for (slong j = 0; j < n; j++)
                arb_add(g + i, g + i, arb_mat_entry(Pi, i, j), prec);
            arb_addmul(b, g + i, g + i, prec);
        }
        for (slong j = 0; j < n; j++) {
            for (slong i = 0; i < n; i++)
                arb_addmul(q + j, g + i, arb_mat_entry(M, i, j), prec);
            arb_div(q + j, q + j, b, prec);
        }
        for (slong i = 0; i < n; i++)
            for (slong j = 0; j < n; j++)
                arb_submul(arb_mat_entry(M, i, j), g + i, q + j, prec);
        _arb_vec_clear(g, n);
        _arb_vec_clear(q, n);
    }
    ok = ac_arb_mat_to_imat(&A, M, NULL) == AC_OK && ac_sv_enclose(&A, lo, hi, NULL, NULL) == AC_OK;
out:
    arb_mat_clear(Pi);
    arb_mat_clear(L);
    arb_mat_clear(W);
    arb_mat_clear(M);
    arb_clear(b);
    arb_clear(t);
    ac_imat_free(&A);
    return ok;
}

/* Stage 0 of the rank condition with Pi != I (criterion_stage0_pi.c) against Arb:
 * Gaussian X (odd shapes, d = 1, n = d + 1), X scaled by 2^+-300, X close to
 * rank deficient, 1 nearly in the row space, X 1 = 0 exactly (K = I), tiny
 * entries of P.  Every enclosure must meet Arb's; on well-conditioned X the
 * stage-0 enclosure must be narrow (relative width < 1e-3) and decide
 * sigma_{d+1-1} > 0. */
START_TEST(test_kpilpi_sv)
{
    static const size_t shapes[][2] = {{1, 2}, {1, 5}, {2, 5}, {3, 7}, {5, 6}, {7, 16}, {16, 33}};
    test_rng r;
    test_rng_init(&r, 21);
    int decided = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int kind = 0; kind < 6; kind++) {
            size_t d = shapes[s][0], n = shapes[s][1];
            ac_mat X = {0}, P = {0};
            ck_assert(ac_t1_generate(&X, &P, d, n, test_seed_value + 90 + s, NULL) == AC_OK);
            int one_perp = 0;
            if (kind == 1 || kind == 2)
                for (size_t i = 0; i < d * n; i++)
                    X.data[i] = ldexp(X.data[i], kind == 1 ? 300 : -300);
            if (kind == 3 && d >= 2)
                for (size_t j = 0; j < n; j++)
                    AC_MAT(&X, d - 1, j) = AC_MAT(&X, 0, j) + 1e-7 * test_rng_gauss(&r);
            if (kind == 4)
                for (size_t j = 0; j < n; j++)
                    AC_MAT(&X, 0, j) = 1.0 + 1e-9 * test_rng_gauss(&r);
            if (kind == 5) { /* small integers with rows summing to 0; a tiny P entry */
                for (size_t i = 0; i < d; i++) {
                    double sum = 0;
                    for (size_t j = 0; j + 1 < n; j++)
                        sum += (AC_MAT(&X, i, j) = floor(8 * test_rng_gauss(&r)));
                    AC_MAT(&X, i, n - 1) = -sum;
                }
                one_perp = ac_t1_rows_sum_to_zero(&X);
                ck_assert(one_perp);
                AC_MAT(&P, 0, 0) = 1e-300;
            }
            double *lo = malloc(n * sizeof(double)), *hi = malloc(n * sizeof(double));
            double *alo = malloc(n * sizeof(double)), *ahi = malloc(n * sizeof(double));
            int st0 = ac_t1_kpilpi_sv_stage0(&X, &P, one_perp, lo, hi);
            int arb = kpilpi_arb(&X, &P, one_perp, alo, ahi);
            if (st0 && arb)
                for (size_t k = 0; k < n; k++)
                    ck_assert_msg(lo[k] <= ahi[k] && alo[k] <= hi[k],
                                  "d %zu n %zu kind %d sigma_%zu: stage 0 [%.17g, %.17g] vs Arb "
                                  "[%.17g, %.17g]",
                                  d, n, kind, k + 1, lo[k], hi[k], alo[k], ahi[k]);
            if (kind == 0 && st0 && arb) { /* adversarial S = (XX')^{-1} (1 + 1e-4 noise) */
                ac_mat Xt = {0}, Yp = {0}, S = {0};
                ck_assert(ac_mat_init(&Xt, n, d, NULL) == AC_OK);
                for (size_t i = 0; i < d; i++)
                    for (size_t j = 0; j < n; j++)
                        AC_MAT(&Xt, j, i) = AC_MAT(&X, i, j);
                ck_assert(ac_approx_pinv_fullcol(&Yp, &Xt, NULL) == AC_OK);
                ck_assert(ac_mat_init(&S, d, d, NULL) == AC_OK);
                double *blo = malloc(n * sizeof(double)), *bhi = malloc(n * sizeof(double));
                for (double pert = 1e-6; pert <= 1e-2; pert *= 100) {
                    for (size_t i = 0; i < d; i++)
                        for (size_t k = 0; k < d; k++) {
                            double v = 0;
                            for (size_t j = 0; j < n; j++)
                                v += AC_MAT(&Yp, i, j) * AC_MAT(&Yp, k, j);
                            AC_MAT(&S, i, k) = v * (1 + pert * test_rng_gauss(&r));
                        }
                    if (ac_t1_kpilpi_sv_given(&X, &P, one_perp, &S, blo, bhi))
                        for (size_t k = 0; k < n; k++)
                            ck_assert_msg(blo[k] <= ahi[k] && alo[k] <= bhi[k],
                                          "d %zu n %zu S off by %g, sigma_%zu: [%.17g, %.17g] vs "
                                          "Arb [%.17g, %.17g]",
                                          d, n, pert, k + 1, blo[k], bhi[k], alo[k], ahi[k]);
                }
                free(blo);
                free(bhi);
                ac_mat_free(&Xt);
                ac_mat_free(&Yp);
                ac_mat_free(&S);
            }
            if ((kind == 0 || kind == 1 || kind == 2) && d >= 2) {
                /* rank(K Pi L Pi) = d - 1 generically: sigma_{d-1} > 0 */
                ck_assert_msg(st0 && arb, "d %zu n %zu kind %d: not enclosed", d, n, kind);
                size_t k = d - 2;
                ck_assert_msg(hi[k] - lo[k] <= 1e-3 * hi[k] && lo[k] > 0,
                              "d %zu n %zu kind %d sigma_%zu: [%g, %g] too wide", d, n, kind,
                              k + 1, lo[k], hi[k]);
                decided++;
            }
            free(lo);
            free(hi);
            free(alo);
            free(ahi);
            ac_mat_free(&X);
            ac_mat_free(&P);
        }
    ck_assert_int_ge(decided, 15);
}
END_TEST

/* Route DECIDE end to end: rho decided at stage 0 (no ball stage needed:
 * the schedule is empty), the stage recorded for each answer, and the
 * refinement's report (off, or run within its budget). */
START_TEST(test_route_stages)
{
    ac_mat X = {0}, P = {0};
    ck_assert(ac_t1_generate(&X, &P, 12, 24, test_seed_value + 80, NULL) == AC_OK);
    for (int opt = 0; opt <= 30; opt += 30) {
        ac_t1_opts o;
        ac_t1_result res;
        ac_t1_opts_default(&o);
        o.sched = ac_schedule_upto(0); /* stage 0 only */
        o.optimize = opt;
        ck_assert(ac_t1_check(&res, &X, &P, &o, NULL) == AC_OK);
        ck_assert_int_eq(res.rank_stage, AC_STAGE_DOUBLE);
        ck_assert_int_eq(res.rho_stage, AC_STAGE_DOUBLE);
        ck_assert(res.rho_lo > 0);
        ck_assert_int_eq(res.exact, AC_REFUTED);
        ck_assert_int_eq(res.exact_stage, AC_STAGE_DOUBLE);
        if (opt == 0) {
            ck_assert_str_eq(res.refine_stop, "off (--optimize 0)");
            ck_assert_int_eq(res.refine_iters, 0);
        } else {
            ck_assert(res.refine_iters > 0 && res.refine_iters <= opt + 4 * (opt / 4 + 1));
            ck_assert(strncmp(res.refine_stop, "completed", 9) == 0 ||
                      strncmp(res.refine_stop, "converged", 9) == 0);
        }
        ac_t1_result_free(&res);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("t1_stage0");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_rho_generic);
    tcase_add_test(tc, test_rho_hostile_threshold_scale);
    tcase_add_test(tc, test_rho_hostile_structure);
    tcase_add_test(tc, test_dual_any_Y);
    tcase_add_test(tc, test_log_enclose);
    tcase_add_test(tc, test_phi_twins);
    tcase_add_test(tc, test_klogp_sv);
    tcase_add_test(tc, test_kpilpi_sv);
    tcase_add_test(tc, test_route_stages);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
