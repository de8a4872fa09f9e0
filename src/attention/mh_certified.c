/* mh_certified.c — the certified forward pass of a multi-head attention
 * layer (paper 1, eq. (8)): stage 0 (ac_mh_enclose: interval products with
 * the gamma_k bound, doc/mathematics.md §2.3, and the rigorous column
 * softmax, §2.4) and Arb balls (multihead_arb.h) for the verdict engine's
 * later stages.  Each head's logits and softmax are head.c's.
 *
 * Dimension letters: d model width, n tokens, h heads, hs head size,
 * hh = h hs.  Buffers are row-major.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/interval.h"
#include "attncheck/multihead.h"
#include "attention/head_impl.h"
#include "attention/mh_impl.h"
#include "attention/multihead_arb.h"
#include "core/ball.h"

/* ---- certified (stage 0) -------------------------------------------------- */

int ac_mh_enclose(ac_imat *Y, const ac_mh *L, const ac_mat *X, ac_err *err)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs, n = X->cols;
    ac_imat QKV = {0}, Z = {0}, P = {0}, H = {0};
    double *plo = NULL, *phi = NULL, *llo = NULL, *lhi = NULL;
    int st;
    memset(Y, 0, sizeof *Y);
    if ((st = ac_mh_check_x(L, X, err)))
        return st;
    if ((st = ac_imat_init(Y, d, n, 1, err)))
        return st;
    if (n == 0)
        return AC_OK;
    if ((st = ac_imat_init(&QKV, 3 * hh, n, 1, err)) || (st = ac_imat_init(&Z, n, n, 1, err)) ||
        (st = ac_imat_init(&P, n, n, 1, err)) || (st = ac_imat_init(&H, hh, n, 1, err)))
        goto out;
    plo = malloc(n * n * sizeof(double));
    phi = malloc(n * n * sizeof(double));
    llo = malloc(n * n * sizeof(double));
    lhi = malloc(n * n * sizeof(double));
    if (!plo || !phi || !llo || !lhi) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    {
        ac_imat W3 = {3 * hh, d, L->wq, NULL}, Xi = ac_imat_view(X);
        if ((st = ac_imat_mul(&QKV, AC_NOTRANS, &W3, AC_NOTRANS, &Xi, err)))
            goto out;
    }
    for (size_t i = 0; i < L->h; i++) {
        size_t oq = i * hs * n, ok = (hh + i * hs) * n, ov = (2 * hh + i * hs) * n;
        ac_imat Qi = {hs, n, QKV.mid + oq, QKV.rad + oq};
        ac_imat Ki = {hs, n, QKV.mid + ok, QKV.rad + ok};
        ac_imat Vi = {hs, n, QKV.mid + ov, QKV.rad + ov};
        ac_imat Hi = {hs, n, H.mid + i * hs * n, H.rad + i * hs * n};
        /* Z = K^T Q, then the logits Z/sqrt(hs) and their softmax */
        if ((st = ac_head_logits_enclose(llo, lhi, &Z, &Ki, &Qi, hs, err)))
            goto out;
        if (!ac_head_softmax_enclose(plo, phi, llo, lhi, n)) {
            for (size_t t = 0; t < n * n; t++) {
                plo[t] = 0.0;
                phi[t] = 1.0;
            }
        }
        for (size_t t = 0; t < n * n; t++) {
            double m = 0.5 * (plo[t] + phi[t]); /* exact or rounded: the radius covers it */
            P.mid[t] = m;
            P.rad[t] = fmax(ac_sub_up(phi[t], m), ac_sub_up(m, plo[t]));
        }
        if ((st = ac_imat_mul(&Hi, AC_NOTRANS, &Vi, AC_NOTRANS, &P, err)))
            goto out;
    }
    {
        ac_imat Wo = {d, hh, L->wo, NULL};
        st = ac_imat_mul(Y, AC_NOTRANS, &Wo, AC_NOTRANS, &H, err);
    }
out:
    ac_imat_free(&QKV);
    ac_imat_free(&Z);
    ac_imat_free(&P);
    ac_imat_free(&H);
    free(plo);
    free(phi);
    free(llo);
    free(lhi);
    if (st)
        ac_imat_free(Y);
    return st;
}

/* ---- certified (ball arithmetic) ------------------------------------------ */

/* Q, K, V of head i (hs x n each) in balls. */
static void head_qkv_arb(arb_mat_t Q, arb_mat_t K, arb_mat_t V, const ac_mh *L, size_t i,
                         const arb_mat_t X, slong prec)
{
    size_t d = L->d, hs = L->hs;
    ac_head_project_arb(Q, L->wq + i * hs * d, hs, d, X, prec);
    ac_head_project_arb(K, L->wk + i * hs * d, hs, d, X, prec);
    ac_head_project_arb(V, L->wv + i * hs * d, hs, d, X, prec);
}

void ac_mh_head_softmax_arb(arb_mat_t P, const ac_mh *L, size_t i, const arb_mat_t X, slong prec)
{
    size_t d = L->d, hs = L->hs;
    slong n = arb_mat_ncols(X);
    arb_mat_t Q, K;
    arb_mat_init(Q, (slong)hs, n);
    arb_mat_init(K, (slong)hs, n);
    ac_head_project_arb(Q, L->wq + i * hs * d, hs, d, X, prec);
    ac_head_project_arb(K, L->wk + i * hs * d, hs, d, X, prec);
    ac_head_softmax_arb(P, K, Q, hs, prec);
    arb_mat_clear(Q);
    arb_mat_clear(K);
}

void ac_mh_forward_arb(arb_mat_t Y, const ac_mh *L, const arb_mat_t X, slong prec)
{
    slong d = (slong)L->d, hs = (slong)L->hs, hh = (slong)(L->h * L->hs), n = arb_mat_ncols(X);
    arb_mat_t Q, K, V, P, Hi, H, Wo;
    arb_mat_init(Q, hs, n);
    arb_mat_init(K, hs, n);
    arb_mat_init(V, hs, n);
    arb_mat_init(P, n, n);
    arb_mat_init(Hi, hs, n);
    arb_mat_init(H, hh, n);
    arb_mat_init(Wo, d, hh);
    for (size_t i = 0; i < L->h; i++) {
        head_qkv_arb(Q, K, V, L, i, X, prec);
        ac_head_softmax_arb(P, K, Q, L->hs, prec);
        arb_mat_mul(Hi, V, P, prec);
        for (slong r = 0; r < hs; r++)
            for (slong j = 0; j < n; j++)
                arb_swap(arb_mat_entry(H, (slong)i * hs + r, j), arb_mat_entry(Hi, r, j));
    }
    ac_arb_mat_set_d(Wo, L->wo, (size_t)d, (size_t)hh);
    arb_mat_mul(Y, Wo, H, prec);
    arb_mat_clear(Q);
    arb_mat_clear(K);
    arb_mat_clear(V);
    arb_mat_clear(P);
    arb_mat_clear(Hi);
    arb_mat_clear(H);
    arb_mat_clear(Wo);
}
