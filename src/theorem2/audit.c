/* audit.c — the two gaps of the proof of Theorem 2 of paper 1, exhibited on
 * the instance (--audit; doc/mathematics.md §4.7), each decided exactly on
 * the dyadic products:
 *   audit_dependence  gap 1: the proof of cases 2 and 3 uses "for any v != 0,
 *                     {Wo_i Wv_i v} is linearly independent", which fails for
 *                     v in the null space of Wv_1;
 *   audit_parallel    gap 2 (case 3): a v1 = e_j for which U v1 and A_i v1 are
 *                     positively parallel, so no v2~ separates the signs of
 *                     v2~'U v1 and v2~'A_i v1.
 * run_audit adds the independence of {Wo_i Wv_i v} for the generic v the
 * construction uses, which is why the theorem still holds at that v. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "t2_impl.h"

/* Gap 1 (paper 1, Theorem 2, cases 2 and 3): a v != 0 in the null space of
 * Wv_1 (exact integers), so that Wo_1 Wv_1 v = 0 and {Wo_i Wv_i v} is
 * linearly dependent. */
static void audit_dependence(ac_t2_audit *a, const ac_mh *W)
{
    size_t d = W->d, hs = W->hs;
    ac_xmat Wv;
    a->dep = AC_UNDECIDED;
    if (ac_xmat_from_d(&Wv, W->wv, hs, d, d, 0, 0) != AC_XMAT_OK) {
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
    } else {
        a->parallel = AC_UNDECIDED;
        snprintf(a->par_note, sizeof a->par_note,
                 "not applicable: the second gap concerns case 3's construction and the "
                 "instance is in %s", ac_t2_case_name(res->cls.kase));
    }
    return AC_OK;
}
