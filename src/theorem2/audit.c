/* audit.c — the three gaps of the proof of Theorem 2 of paper 1, exhibited on
 * the instance (--audit; doc/mathematics.md §4.7), each decided exactly on
 * the dyadic products:
 *   audit_dependence  gap 1: the proof of cases 2 and 3 uses "for any v != 0,
 *                     {Wo_i Wv_i v} is linearly independent", which fails for
 *                     v in the null space of Wv_1;
 *   audit_parallel    gap 2 (case 3): a v1 = e_j for which U v1 and A_i v1 are
 *                     positively parallel, so no v2~ separates the signs of
 *                     v2~'U v1 and v2~'A_i v1;
 *   audit_v2          gap 3 (case 3, step 3.4): a v1 with the right signs and
 *                     M_i v1 != 0 whose v2~ is in the null space of Wv_i, so
 *                     head i's part does not grow like alpha.
 * run_audit adds the independence of {Wo_i Wv_i v} for the generic v the
 * construction uses, which is why the theorem still holds at that v. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "core/ball.h"
#include "t2_impl.h"

static void unit_of(double *out, const fmpz *v, slong d);

/* Gap 1 (paper 1, Theorem 2, cases 2 and 3): a v != 0 in the null space of
 * Wv_1 (exact integers), so that Wo_1 Wv_1 v = 0 and {Wo_i Wv_i v} is
 * linearly dependent. */
static void audit_dependence(ac_t2_audit *a, const ac_mh *W)
{
    size_t d = W->d, hs = W->hs;
    ac_xmat Wv;
    a->dep = AC_UNDECIDED;
    if (ac_xmat_from_d(&Wv, W->wv, hs, d, d, 0, T2_X_BITS) != AC_XMAT_OK) {
        snprintf(a->note, sizeof a->note, "Wv_1 too wide for exact arithmetic");
        return;
    }
    fmpz *v = _fmpz_vec_init((slong)d);
    if (ac_xmat_null_vector(v, &Wv)) {
        /* re-check Wv_1 v = 0 exactly, independently of the null-space routine */
        int zero = 1;
        fmpz_t s;
        fmpz_init(s);
        for (slong r = 0; r < (slong)hs && zero; r++) {
            fmpz_zero(s);
            for (slong j = 0; j < (slong)d; j++)
                fmpz_addmul(s, fmpz_mat_entry(Wv.m, r, j), v + j);
            zero = fmpz_is_zero(s);
        }
        fmpz_clear(s);
        int nonzero = !_fmpz_vec_is_zero(v, (slong)d);
        if (zero && nonzero) {
            a->dep = AC_PROVED;
            a->dep_head = 1;
            a->dep_bits = (long)FLINT_ABS(_fmpz_vec_max_bits(v, (slong)d));
            /* display: v / ||v||, from the integers shifted to double range */
            long shift = a->dep_bits > 60 ? a->dep_bits - 60 : 0;
            double nn = 0, tmp[8];
            fmpz_t t;
            fmpz_init(t);
            a->dep_nshow = d < 8 ? d : 8;
            for (size_t j = 0; j < d; j++) {
                fmpz_tdiv_q_2exp(t, v + j, (ulong)shift);
                double x = fmpz_get_d(t);
                nn += x * x;
                if (j < a->dep_nshow)
                    tmp[j] = x;
            }
            fmpz_clear(t);
            for (size_t j = 0; j < a->dep_nshow; j++)
                a->dep_v[j] = nn > 0 ? tmp[j] / sqrt(nn) : 0.0;
            /* the whole vector (the JSON prints it) */
            a->dep_len = d;
            a->dep_vec = malloc(d * sizeof(double));
            if (a->dep_vec)
                unit_of(a->dep_vec, v, (slong)d);
        }
    }
    _fmpz_vec_clear(v, (slong)d);
    ac_xmat_clear(&Wv);
}

/* Column j of U and of A (exact): 1 when A e_j = kappa U e_j with kappa > 0
 * (U e_j != 0); *k receives the first nonzero row of U e_j. */
static int columns_positively_parallel(const ac_xmat *U, const ac_xmat *A, slong j, slong *k)
{
    slong d = fmpz_mat_nrows(U->m);
    *k = -1;
    for (slong l = 0; l < d; l++)
        if (!fmpz_is_zero(fmpz_mat_entry(U->m, l, j))) {
            *k = l;
            break;
        }
    if (*k < 0)
        return 0;
    const fmpz *ak = fmpz_mat_entry(U->m, *k, j), *bk = fmpz_mat_entry(A->m, *k, j);
    if (fmpz_sgn(bk) == 0 || fmpz_sgn(bk) != fmpz_sgn(ak))
        return 0;
    fmpz_t x, y;
    fmpz_init(x);
    fmpz_init(y);
    int par = 1;
    for (slong l = 0; l < d && par; l++) {
        /* b_l a_k == b_k a_l (the exponents cancel) */
        fmpz_mul(x, fmpz_mat_entry(A->m, l, j), ak);
        fmpz_mul(y, bk, fmpz_mat_entry(U->m, l, j));
        par = fmpz_equal(x, y);
    }
    fmpz_clear(x);
    fmpz_clear(y);
    return par;
}

/* M_i e_j = U e_j/sqrt(dp) - A_i e_j/sqrt(dh) != 0, exactly */
static int m_column_nonzero(const ac_xmat *U, const ac_xmat *A, slong j, const ac_mh *W,
                            const ac_mh *V)
{
    slong d = (slong)W->d;
    ac_xmat ca, cb;
    ac_xmat_block(&ca, U, 0, j, d, 1);
    ac_xmat_block(&cb, A, 0, j, d, 1);
    int mnz = !ac_xmat_scaled_equal(&ca, (unsigned long)W->hs, &cb, (unsigned long)V->hs);
    ac_xmat_clear(&ca);
    ac_xmat_clear(&cb);
    return mnz;
}

/* Gap 2 (paper 1, Theorem 2, case 3): a v1 = e_j and a head i with U e_j and
 * A_i e_j positively parallel and M_i e_j != 0: then v2~'U v1 and
 * v2~'A_i v1 have the same sign for every v2~, and no sign-separating v2~
 * exists. */
static void audit_parallel(ac_t2_audit *a, const ac_mh *W, const ac_mh *V)
{
    size_t d = W->d;
    ac_xmat U, A;
    a->parallel = AC_UNDECIDED;
    if (t2_x_qk(&U, V, 0) != AC_XMAT_OK) {
        snprintf(a->par_note, sizeof a->par_note, "U too wide for exact arithmetic");
        return;
    }
    for (size_t i = 0; i < W->h && a->parallel != AC_PROVED; i++) {
        if (t2_x_qk(&A, W, i) != AC_XMAT_OK)
            continue;
        for (slong j = 0; j < (slong)d && a->parallel != AC_PROVED; j++) {
            slong k;
            if (!columns_positively_parallel(&U, &A, j, &k) || !m_column_nonzero(&U, &A, j, W, V))
                continue;
            const fmpz *ak = fmpz_mat_entry(U.m, k, j), *bk = fmpz_mat_entry(A.m, k, j);
            a->parallel = AC_PROVED;
            a->par_head = i + 1;
            a->par_coord = (size_t)j + 1;
            double kappa = ldexp(fmpz_get_d(bk) / fmpz_get_d(ak), (int)(A.exp - U.exp));
            snprintf(a->par_note, sizeof a->par_note,
                     "v1 = e_%zu, head %zu: Wk_i'Wq_i v1 = %.6g U v1 exactly (kappa > 0) and "
                     "M_i v1 != 0, so v2~'U v1 and v2~'Wk_i'Wq_i v1 have the same sign for "
                     "every v2~", (size_t)j + 1, i + 1, kappa);
        }
        ac_xmat_clear(&A);
    }
    ac_xmat_clear(&U);
    if (a->parallel != AC_PROVED)
        snprintf(a->par_note, sizeof a->par_note,
                 "no basis vector v1 = e_j with U v1 and Wk_i'Wq_i v1 positively parallel "
                 "(such v1 need v1'U v1 = 0; not found here)");
}

/* ---- gap 3 (step 3.4): Wv_i v2~ = 0 ---------------------------------------- */

/* A = the d x 1 integer vector v (exponent 0) */
static void xvec_of(ac_xmat *A, const fmpz *v, slong d)
{
    fmpz_mat_init(A->m, d, 1);
    A->exp = 0;
    A->ready = 1;
    for (slong j = 0; j < d; j++)
        fmpz_set(fmpz_mat_entry(A->m, j, 0), v + j);
}

/* out = v / ||v|| in double for display (the integers shifted into range) */
static void unit_of(double *out, const fmpz *v, slong d)
{
    slong bits = FLINT_ABS(_fmpz_vec_max_bits(v, d));
    long shift = bits > 60 ? bits - 60 : 0;
    double nn = 0;
    fmpz_t t;
    fmpz_init(t);
    for (slong j = 0; j < d; j++) {
        fmpz_tdiv_q_2exp(t, v + j, (ulong)shift);
        out[j] = fmpz_get_d(t);
        nn += out[j] * out[j];
    }
    fmpz_clear(t);
    for (slong j = 0; j < d; j++)
        out[j] = nn > 0 ? out[j] / sqrt(nn) : 0.0;
}

/* The pieces of gap 3 for one head: U, A = A_i, Wv = Wv_i exactly, their
 * Arb copies at prec, and the d x 1 work balls. */
typedef struct {
    slong d, prec;
    arb_mat_t U, A, Wv, x, z, v, a, b, t1;
} g3_ctx;

/* phi(t) = |U v(t)|^2 - |A v(t)|^2 at v(t) = x + t z (t a ball) */
static void g3_phi(arb_t out, g3_ctx *g, const arb_t t)
{
    arb_t s;
    arb_init(s);
    arb_mat_scalar_mul_arb(g->v, g->z, t, g->prec);
    arb_mat_add(g->v, g->v, g->x, g->prec);
    arb_mat_mul(g->a, g->U, g->v, g->prec);
    arb_mat_mul(g->b, g->A, g->v, g->prec);
    arb_mat_frobenius_norm(out, g->a, g->prec);
    arb_sqr(out, out, g->prec);
    arb_mat_frobenius_norm(s, g->b, g->prec);
    arb_sqr(s, s, g->prec);
    arb_sub(out, out, s, g->prec);
    arb_clear(s);
}

/* Bisection of [0, 1] on the sign of phi (phi(0) > 0 > phi(1), both
 * certified): t receives a ball [lo, hi] with phi(lo) > 0 > phi(hi), so a
 * root of phi lies in it (intermediate value theorem). */
static void g3_root(arb_t t, g3_ctx *g)
{
    arf_t lo, hi, mid;
    arb_t m, f;
    arf_init(lo);
    arf_init(hi);
    arf_init(mid);
    arb_init(m);
    arb_init(f);
    arf_zero(lo);
    arf_one(hi);
    for (int it = 0; it < 80; it++) {
        arf_add(mid, lo, hi, g->prec, ARF_RND_NEAR);
        arf_mul_2exp_si(mid, mid, -1);
        arb_set_arf(m, mid);
        g3_phi(f, g, m);
        if (arb_is_positive(f))
            arf_set(lo, mid);
        else if (arb_is_negative(f))
            arf_set(hi, mid);
        else
            break; /* the root is within the precision of phi here */
    }
    arb_set_interval_arf(t, lo, hi, g->prec);
    arf_clear(lo);
    arf_clear(hi);
    arf_clear(mid);
    arb_clear(m);
    arb_clear(f);
}

/* At the root ball t: a = U v1, b = A v1 certified nonzero and not
 * positively parallel (|a||b| - a'b > 0: the signs of step 3.2),
 * ||M_i v1|| / ||v1|| >= *mnorm > 0.  1 when all are certified. */
static int g3_check(g3_ctx *g, const arb_t t, const ac_mh *W, const ac_mh *V, double *mnorm)
{
    arb_t na, nb, ab, r, s;
    arb_init(na);
    arb_init(nb);
    arb_init(ab);
    arb_init(r);
    arb_init(s);
    arb_mat_scalar_mul_arb(g->v, g->z, t, g->prec);
    arb_mat_add(g->v, g->v, g->x, g->prec);
    arb_mat_mul(g->a, g->U, g->v, g->prec);
    arb_mat_mul(g->b, g->A, g->v, g->prec);
    arb_mat_frobenius_norm(na, g->a, g->prec);
    arb_mat_frobenius_norm(nb, g->b, g->prec);
    arb_zero(ab);
    for (slong k = 0; k < g->d; k++)
        arb_addmul(ab, arb_mat_entry(g->a, k, 0), arb_mat_entry(g->b, k, 0), g->prec);
    arb_mul(r, na, nb, g->prec);
    arb_sub(r, r, ab, g->prec);
    int ok = arb_is_positive(na) && arb_is_positive(nb) && arb_is_positive(r);
    /* M_i v1 = a/sqrt(dp) - b/sqrt(dh) */
    arb_sqrt_ui(s, (ulong)V->hs, g->prec);
    arb_mat_scalar_div_arb(g->t1, g->a, s, g->prec);
    arb_sqrt_ui(s, (ulong)W->hs, g->prec);
    arb_mat_scalar_div_arb(g->a, g->b, s, g->prec);
    arb_mat_sub(g->t1, g->t1, g->a, g->prec);
    arb_mat_frobenius_norm(r, g->t1, g->prec);
    arb_mat_frobenius_norm(s, g->v, g->prec);
    arb_div(r, r, s, g->prec);
    ok = ok && arb_is_positive(r);
    *mnorm = ac_arb_lo(r);
    arb_clear(na);
    arb_clear(nb);
    arb_clear(ab);
    arb_clear(r);
    arb_clear(s);
    return ok;
}

/* ||Wv_i v2~|| at the double rounding of v1 (what a computation in double
 * sees: ~1e-16, not 0), v2~ = a/|a| - b/|b| */
static double g3_rounded(g3_ctx *g, const double *v1)
{
    arb_t na, nb;
    arb_mat_t w;
    arb_init(na);
    arb_init(nb);
    arb_mat_init(w, arb_mat_nrows(g->Wv), 1);
    ac_arb_mat_set_d(g->v, v1, (size_t)g->d, 1);
    arb_mat_mul(g->a, g->U, g->v, g->prec);
    arb_mat_mul(g->b, g->A, g->v, g->prec);
    arb_mat_frobenius_norm(na, g->a, g->prec);
    arb_mat_frobenius_norm(nb, g->b, g->prec);
    arb_mat_scalar_div_arb(g->a, g->a, na, g->prec);
    arb_mat_scalar_div_arb(g->b, g->b, nb, g->prec);
    arb_mat_sub(g->a, g->a, g->b, g->prec);
    arb_mat_mul(w, g->Wv, g->a, g->prec);
    arb_mat_frobenius_norm(na, w, g->prec);
    double r = arf_get_d(arb_midref(na), ARF_RND_NEAR);
    arb_clear(na);
    arb_clear(nb);
    arb_mat_clear(w);
    return r;
}

/* q(v) = |U v|^2 - |A v|^2, exactly: its sign (-1, 0, 1) */
static int q_sign(const fmpz *v, const ac_xmat *U, const ac_xmat *A, slong d)
{
    ac_xmat x, u, w, ut, wt, uu, ww, q;
    xvec_of(&x, v, d);
    ac_xmat_mul(&u, U, &x);
    ac_xmat_mul(&w, A, &x);
    ac_xmat_transpose(&ut, &u);
    ac_xmat_transpose(&wt, &w);
    ac_xmat_mul(&uu, &ut, &u);
    ac_xmat_mul(&ww, &wt, &w);
    ac_xmat_sub(&q, &uu, &ww);
    int sg = fmpz_sgn(fmpz_mat_entry(q.m, 0, 0));
    ac_xmat *all[] = {&x, &u, &w, &ut, &wt, &uu, &ww, &q};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        ac_xmat_clear(all[k]);
    return sg;
}

/* Candidates from the null-space basis N (d x nul): the basis vectors, then
 * their pairwise sums and differences; x with q(x) > 0 and y with
 * q(y) < 0.  1 when both were found. */
static int g3_pick(fmpz *x, fmpz *y, const fmpz_mat_t N, slong nul, const ac_xmat *U,
                   const ac_xmat *A, slong d)
{
    int hx = 0, hy = 0;
    fmpz *v = _fmpz_vec_init(d);
    for (slong c = 0; c < nul * nul + nul && !(hx && hy); c++) {
        slong p = c < nul ? c : (c - nul) / nul, r = c < nul ? -1 : (c - nul) % nul;
        if (r >= 0 && r <= p)
            continue;
        for (int sgn = 1; sgn >= (r >= 0 ? -1 : 1); sgn -= 2) {
            for (slong j = 0; j < d; j++) {
                fmpz_set(v + j, fmpz_mat_entry(N, j, p));
                if (r >= 0) {
                    if (sgn > 0)
                        fmpz_add(v + j, v + j, fmpz_mat_entry(N, j, r));
                    else
                        fmpz_sub(v + j, v + j, fmpz_mat_entry(N, j, r));
                }
            }
            int sg = q_sign(v, U, A, d);
            if (sg > 0 && !hx) {
                _fmpz_vec_set(x, v, d);
                hx = 1;
            } else if (sg < 0 && !hy) {
                _fmpz_vec_set(y, v, d);
                hy = 1;
            }
        }
    }
    _fmpz_vec_clear(v, d);
    return hx && hy;
}

static void g3_ctx_init(g3_ctx *g, slong d, slong hs)
{
    arb_mat_init(g->U, d, d);
    arb_mat_init(g->A, d, d);
    arb_mat_init(g->Wv, hs, d);
    arb_mat_init(g->x, d, 1);
    arb_mat_init(g->z, d, 1);
    arb_mat_init(g->v, d, 1);
    arb_mat_init(g->a, d, 1);
    arb_mat_init(g->b, d, 1);
    arb_mat_init(g->t1, d, 1);
}

static void g3_ctx_clear(g3_ctx *g)
{
    arb_mat_clear(g->U);
    arb_mat_clear(g->A);
    arb_mat_clear(g->Wv);
    arb_mat_clear(g->x);
    arb_mat_clear(g->z);
    arb_mat_clear(g->v);
    arb_mat_clear(g->a);
    arb_mat_clear(g->b);
    arb_mat_clear(g->t1);
}

/* The root and its checks for x, y (y is overwritten by z = y - x). */
static int g3_solve(ac_t2_audit *au, const ac_xmat *U, const ac_xmat *A, const ac_xmat *Wv,
                    fmpz *x, fmpz *y, const ac_mh *W, const ac_mh *V)
{
    slong d = (slong)W->d;
    g3_ctx g;
    int found = 0;
    g.d = d;
    g.prec = 256 + 2 * FLINT_MAX(FLINT_MAX(ac_xmat_bits(U), ac_xmat_bits(A)),
                                 FLINT_ABS(_fmpz_vec_max_bits(x, d)) +
                                     FLINT_ABS(_fmpz_vec_max_bits(y, d)));
    g3_ctx_init(&g, d, (slong)W->hs);
    ac_xmat_to_arb(g.U, U, g.prec);
    ac_xmat_to_arb(g.A, A, g.prec);
    ac_xmat_to_arb(g.Wv, Wv, g.prec);
    for (slong j = 0; j < d; j++) {
        arb_set_fmpz(arb_mat_entry(g.x, j, 0), x + j);
        fmpz_sub(y + j, y + j, x + j); /* z = y - x */
        arb_set_fmpz(arb_mat_entry(g.z, j, 0), y + j);
    }
    arb_t t;
    arb_init(t);
    g3_root(t, &g);
    double mn = 0;
    if (g3_check(&g, t, W, V, &mn)) {
        found = 1;
        au->v2_mnorm = mn;
        au->v2_len = (size_t)d;
        au->v2_v = malloc((size_t)d * sizeof(double));
        if (au->v2_v) {
            /* v1 / |v1| rounded to double (midpoints of the balls) */
            double nn = 0;
            for (slong j = 0; j < d; j++) {
                au->v2_v[j] = arf_get_d(arb_midref(arb_mat_entry(g.v, j, 0)), ARF_RND_NEAR);
                nn += au->v2_v[j] * au->v2_v[j];
            }
            for (slong j = 0; j < d; j++)
                au->v2_v[j] /= sqrt(nn);
            au->v2_rounded = g3_rounded(&g, au->v2_v);
        }
    }
    arb_clear(t);
    g3_ctx_clear(&g);
    return found;
}

/* Head i: v1 = x + t* (y - x) with x, y in the null space of Wv_i (U - A_i)
 * and |U v1| = |A_i v1| (t* a root of the quadratic phi between q(x) > 0
 * and q(y) < 0).  Then Wv_i v2~ = Wv_i (U - A_i) v1 / |U v1| = 0 exactly. */
static int audit_v2_head(ac_t2_audit *au, const ac_xmat *U, const ac_mh *W, const ac_mh *V,
                         size_t i)
{
    slong d = (slong)W->d;
    ac_xmat A, Wv, D, P;
    int found = 0;
    if (t2_x_qk(&A, W, i) != AC_XMAT_OK)
        return 0;
    if (ac_xmat_from_d(&Wv, W->wv + i * W->hs * W->d, W->hs, W->d, W->d, 0, T2_X_BITS) !=
        AC_XMAT_OK) {
        ac_xmat_clear(&A);
        return 0;
    }
    ac_xmat_sub(&D, U, &A);
    ac_xmat_mul(&P, &Wv, &D);
    fmpz_mat_t N;
    fmpz_mat_init(N, d, d);
    slong nul = fmpz_mat_nullspace(N, P.m);
    fmpz *x = _fmpz_vec_init(d), *y = _fmpz_vec_init(d);
    if (nul > 0 && g3_pick(x, y, N, nul, U, &A, d) && g3_solve(au, U, &A, &Wv, x, y, W, V)) {
        found = 1;
        au->v2null = AC_PROVED;
        au->v2_head = i + 1;
        au->v2_dim = (size_t)nul;
    }
    _fmpz_vec_clear(x, d);
    _fmpz_vec_clear(y, d);
    fmpz_mat_clear(N);
    ac_xmat_clear(&P);
    ac_xmat_clear(&D);
    ac_xmat_clear(&A);
    ac_xmat_clear(&Wv);
    return found;
}

/* Gap 3 (paper 1, Theorem 2, step 3.4): a v1 whose v2~ lies in the null space
 * of Wv_i although M_i v1 != 0 and the signs are right: head i's part of
 * column 1, Wo_i Wv_i (dphi_1 v1 + alpha dphi_2 v2~), stays bounded instead
 * of growing like alpha. */
static void audit_v2(ac_t2_audit *a, const ac_mh *W, const ac_mh *V)
{
    ac_xmat U;
    a->v2null = AC_UNDECIDED;
    if (t2_x_qk(&U, V, 0) != AC_XMAT_OK)
        return;
    for (size_t i = 0; i < W->h && a->v2null != AC_PROVED; i++)
        audit_v2_head(a, &U, W, V, i);
    ac_xmat_clear(&U);
    char fb[AC_FMT_BOUND_BUFSIZE];
    if (a->v2null == AC_PROVED)
        snprintf(a->v2_note, sizeof a->v2_note,
                 "head %zu: a v1 in the %zu-dimensional null space of Wv_i (U - Wk_i'Wq_i) with "
                 "|U v1| = |Wk_i'Wq_i v1| (a root, by the intermediate value theorem), "
                 "||M_i v1|| >= %s ||v1||, U v1, Wk_i'Wq_i v1 nonzero and not positively "
                 "parallel (the signs hold), so Wv_i v2~ = 0 exactly and head %zu's part does "
                 "not grow like alpha (at v1 rounded to double: ||Wv_i v2~|| = %.2g)",
                 a->v2_head, a->v2_dim, ac_str_lo(fb, ".3g", a->v2_mnorm), a->v2_head,
                 a->v2_rounded);
    else
        snprintf(a->v2_note, sizeof a->v2_note,
                 "no v1 certified with Wv_i v2~ = 0, M_i v1 != 0 and the right signs (tried "
                 "the null space of Wv_i (U - Wk_i'Wq_i) of every head)");
}

int t2_run_audit(ac_t2_result *res, const ac_mh *W, const ac_mh *V, const ac_mat *Xgen,
                 ac_err *err)
{
    ac_t2_audit *a = &res->audit;
    a->done = 1;
    audit_dependence(a, W);
    a->indep = AC_UNDECIDED;
    if (Xgen && Xgen->data) {
        arb_mat_t v;
        double lo, hi;
        arb_mat_init(v, (slong)W->d, 1);
        t2_arb_col_of(v, Xgen, 0);
        int st = t2_sigma_ov(&lo, &hi, W, v, err);
        arb_mat_clear(v);
        if (st)
            return st;
        a->indep_sigma_lo = lo;
        a->indep = lo > 0 ? AC_PROVED : AC_UNDECIDED;
    }
    if (res->cls.kase == AC_T2_CASE_3) {
        audit_parallel(a, W, V);
        audit_v2(a, W, V);
    } else {
        a->parallel = a->v2null = AC_UNDECIDED;
        snprintf(a->v2_note, sizeof a->v2_note, "not applicable: the third gap concerns case "
                 "3's construction");
        snprintf(a->par_note, sizeof a->par_note,
                 "not applicable: the second gap concerns case 3's construction and the "
                 "instance is in %s", ac_t2_case_name(res->cls.kase));
    }
    return AC_OK;
}
