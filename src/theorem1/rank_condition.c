/* rank_condition.c — route DECIDE of Theorem 1, the pieces shared by its
 * quantities (doc/mathematics.md §3.4): Pi and L = log P in balls, and the
 * rank condition sigma_{dk+1}(K Pi log(P) Pi) (dk < r) at stage 0 and in
 * Arb.  Split from decide.c, which keeps the decision itself.
 *
 * Dimension letters: d model width, n tokens, dk head size, r = rank X.
 * Buffers are row-major: X d x n, P n x n.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>

#include <mpfr.h>

#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "core/ac_arb.h"
#include "core/ball.h"
#include "theorem1/t1_decide.h"
#include "theorem1/t1_impl.h"
#include "theorem1/t1_stage0.h"

/* Pi (projector on the row space of X) and L = log P in balls. Returns 0 if
 * the Gram matrix of the basis rows could not be proved positive definite at
 * this precision. */
int ac_t1_ball_pi_L(arb_mat_t Pi, arb_mat_t L, const decide_ctx *c, slong prec)
{
    slong n = (slong)c->n, r = (slong)c->r;
    for (slong i = 0; i < n; i++)
        for (slong j = 0; j < n; j++) {
            arb_set_d(arb_mat_entry(L, i, j), AC_MAT(c->P, i, j));
            arb_log(arb_mat_entry(L, i, j), arb_mat_entry(L, i, j), prec);
        }
    if (c->pi_identity) {
        arb_mat_one(Pi);
        return 1;
    }
    arb_mat_t B, Bt, G, Z;
    arb_mat_init(B, r, n);
    arb_mat_init(Bt, n, r);
    arb_mat_init(G, r, r);
    arb_mat_init(Z, r, n);
    for (slong i = 0; i < r; i++) {
        size_t row = c->piv ? c->piv[i] : (size_t)i;
        for (slong j = 0; j < n; j++)
            arb_set_d(arb_mat_entry(B, i, j), AC_MAT(c->X, row, j));
    }
    arb_mat_transpose(Bt, B);
    arb_mat_mul(G, B, Bt, prec);
    int ok = arb_mat_spd_solve(Z, G, B, prec); /* Z = (B B')^-1 B */
    if (ok)
        arb_mat_mul(Pi, Bt, Z, prec); /* Pi = B' (B B')^-1 B */
    else
        ok = ac_t1_exact_pi(Pi, c->X, c->piv, c->r, prec);
    arb_mat_clear(B);
    arb_mat_clear(Bt);
    arb_mat_clear(G);
    arb_mat_clear(Z);
    return ok;
}

/* Stage 0 of sigma_{dk+1}(K Pi L Pi): an enclosure of K log P in double
 * and the Weyl enclosure around its SVD when Pi = I (criterion_stage0.c), or of
 * K~ Pi~ L Pi~ widened by the certified distance to K Pi L Pi when
 * rank X = d < n (criterion_stage0_pi.c). */
int ac_t1_lowrank_stage0(void *v, double *lo, double *hi, ac_err *err)
{
    decide_ctx *c = v;
    size_t n = c->n;
    double *slo = malloc(n * sizeof(double)), *shi = malloc(n * sizeof(double));
    *lo = 0;
    *hi = INFINITY;
    if (!slo || !shi) {
        free(slo);
        free(shi);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    if (c->pi_identity ? ac_t1_klogp_sv_stage0(c->P, slo, shi)
                       : ac_t1_kpilpi_sv_stage0(c->X, c->P, c->one_perp, slo, shi)) {
        long k = 0;
        while (k < (long)n && slo[k] > 0)
            k++;
        if (k > c->famrank_lo)
            c->famrank_lo = k;
        if (c->dk < n) {
            *lo = slo[c->dk];
            *hi = shi[c->dk];
        } else
            *lo = *hi = 0;
    }
    free(slo);
    free(shi);
    return AC_OK;
}

/* sigma_{dk+1}(K Pi L Pi), K = I - g g'/(g'g), g = Pi 1 (K = I if Pi 1 = 0):
 * K kills every term g (Pi c)', so the bound holds for all c at once
 * (doc/mathematics.md §3.4, dk < r): if it is positive, no rank-dk B fits. */
int ac_t1_lowrank_ball(void *v, long prec, mpfr_t lo, mpfr_t hi, ac_err *err)
{
    decide_ctx *c = v;
    slong n = (slong)c->n;
    arb_mat_t Pi, L, W, M, g, gtM;
    arb_t b, t;
    ac_imat A = {0};
    double *slo = NULL, *shi = NULL;
    int st = AC_OK;
    arb_mat_init(Pi, n, n);
    arb_mat_init(L, n, n);
    arb_mat_init(W, n, n);
    arb_mat_init(M, n, n);
    arb_mat_init(g, n, 1);
    arb_mat_init(gtM, 1, n);
    arb_init(b);
    arb_init(t);
    mpfr_set_zero(lo, 1);
    mpfr_set_inf(hi, 1);
    if (!ac_t1_ball_pi_L(Pi, L, c, prec))
        goto done;
    if (c->pi_identity)
        arb_mat_set(M, L);
    else {
        arb_mat_mul(W, Pi, L, prec);
        arb_mat_mul(M, W, Pi, prec); /* M = Pi L Pi */
    }
    if (!c->one_perp) {
        arb_zero(b);
        for (slong i = 0; i < n; i++) {
            arb_zero(arb_mat_entry(g, i, 0));
            for (slong j = 0; j < n; j++)
                arb_add(arb_mat_entry(g, i, 0), arb_mat_entry(g, i, 0), arb_mat_entry(Pi, i, j),
                        prec);
            arb_addmul(b, arb_mat_entry(g, i, 0), arb_mat_entry(g, i, 0), prec);
        }
        if (!arb_is_positive(b))
            goto done;
        /* M <- M - g (g' M) / b */
        for (slong j = 0; j < n; j++) {
            arb_zero(arb_mat_entry(gtM, 0, j));
            for (slong i = 0; i < n; i++)
                arb_addmul(arb_mat_entry(gtM, 0, j), arb_mat_entry(g, i, 0), arb_mat_entry(M, i, j),
                           prec);
            arb_div(arb_mat_entry(gtM, 0, j), arb_mat_entry(gtM, 0, j), b, prec);
        }
        for (slong i = 0; i < n; i++)
            for (slong j = 0; j < n; j++) {
                arb_mul(t, arb_mat_entry(g, i, 0), arb_mat_entry(gtM, 0, j), prec);
                arb_sub(arb_mat_entry(M, i, j), arb_mat_entry(M, i, j), t, prec);
            }
    }
    if (ac_arb_mat_to_imat(&A, M, err) != AC_OK) {
        ac_err_clear(err); /* a ball too wide for double: no bound here */
        goto done;
    }
    slo = malloc((size_t)n * sizeof(double));
    shi = malloc((size_t)n * sizeof(double));
    if (!slo || !shi) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto done;
    }
    if (ac_sv_enclose(&A, slo, shi, NULL, err) != AC_OK) {
        /* LAPACK gave up on this enclosure: no bound at this stage, not an
         * error (an optional step must not discard what was certified) */
        ac_err_clear(err);
        goto done;
    }
    long k = 0;
    while (k < n && slo[k] > 0)
        k++;
    if (k > c->famrank_lo)
        c->famrank_lo = k; /* sigma_1..sigma_k > 0: rank >= k */
    if ((slong)c->dk < n) {
        mpfr_set_d(lo, slo[c->dk], MPFR_RNDD);
        mpfr_set_d(hi, shi[c->dk], MPFR_RNDU);
    } else
        mpfr_set_zero(lo, 1), mpfr_set_zero(hi, 1);
done:
    free(slo);
    free(shi);
    ac_imat_free(&A);
    arb_mat_clear(Pi);
    arb_mat_clear(L);
    arb_mat_clear(W);
    arb_mat_clear(M);
    arb_mat_clear(g);
    arb_mat_clear(gtM);
    arb_clear(b);
    arb_clear(t);
    return st;
}
