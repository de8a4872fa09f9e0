/* mh_backward.c — the backward pass of a multi-head attention layer in
 * double (attncheck/multihead.h, ac_mh_backward): the forward pass is
 * recomputed into the workspace (mh_forward.c), then each head is
 * differentiated on the calling thread.
 *
 * Dimension letters: d model width, n tokens, h heads, hs head size,
 * hh = h hs.  Buffers are row-major.
 */
#include <config.h>

#include <math.h>

#include "attncheck/linalg.h"
#include "attncheck/multihead.h"
#include "attention/mh_impl.h"

int ac_mh_backward(ac_mat *dX, const ac_mh *L, const ac_mat *X, const ac_mat *dY,
                   ac_mh_work *w, ac_err *err)
{
    size_t d = L->d, hs = L->hs, hh = L->h * hs, n = X->cols;
    ac_mh_work local;
    int st;
    if ((st = ac_mh_check_x(L, X, err)))
        return st;
    if (dY->rows != d || dY->cols != n || dX->rows != d || dX->cols != n)
        return ac_err_set(err, AC_EUSAGE, "backward: dY and dX must be %zu x %zu", d, n);
    if (n == 0)
        return AC_OK;
    if ((st = ac_mh_work_prepare(&w, &local, L, n, err)))
        return st;
    ac_mh_forward_core(L, X, w, NULL, ac_mh_forward_threads(L, n, w));
    double s = 1.0 / sqrt((double)hs);
    double *dH = w->tmp, *dqkv = dH + hh * n, *dP = dqkv + 3 * hh * n, *dZ = dP + n * n;
    double *dot = ac_mh_work_scratch(w);
    /* y = Wo_cat H:  dH = Wo_cat^T dY (hh x n) */
    ac_dgemm(AC_TRANS, AC_NOTRANS, hh, n, d, 1.0, L->wo, hh, dY->data, n, 0.0, dH, n);
    for (size_t i = 0; i < L->h; i++) {
        const double *Q = w->qkv + i * hs * n, *K = w->qkv + (hh + i * hs) * n,
                     *V = w->qkv + (2 * hh + i * hs) * n, *P = w->p + i * n * n,
                     *dHi = dH + i * hs * n;
        /* H_i = V_i P_i:  dV_i = dH_i P_i^T,  dP_i = V_i^T dH_i */
        ac_dgemm(AC_NOTRANS, AC_TRANS, hs, n, n, 1.0, dHi, n, P, n, 0.0,
                 dqkv + (2 * hh + i * hs) * n, n);
        ac_dgemm(AC_TRANS, AC_NOTRANS, n, n, hs, 1.0, V, n, dHi, n, 0.0, dP, n);
        /* softmax over each column j:  dZ_aj = P_aj (dP_aj - sum_b P_bj dP_bj) */
        for (size_t j = 0; j < n; j++)
            dot[j] = 0.0;
        for (size_t a = 0; a < n; a++)
            for (size_t j = 0; j < n; j++)
                dot[j] += P[a * n + j] * dP[a * n + j];
        for (size_t a = 0; a < n; a++)
            for (size_t j = 0; j < n; j++)
                dZ[a * n + j] = P[a * n + j] * (dP[a * n + j] - dot[j]);
        /* Z_i = s K_i^T Q_i:  dQ_i = s K_i dZ,  dK_i = s Q_i dZ^T */
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, hs, n, n, s, K, n, dZ, n, 0.0, dqkv + i * hs * n, n);
        ac_dgemm(AC_NOTRANS, AC_TRANS, hs, n, n, s, Q, n, dZ, n, 0.0, dqkv + (hh + i * hs) * n, n);
    }
    /* QKV = W_stack X:  dX = W_stack^T dQKV */
    ac_dgemm(AC_TRANS, AC_NOTRANS, d, n, 3 * hh, 1.0, L->wq, d, dqkv, n, 0.0, dX->data, n);
    if (w == &local)
        ac_mh_work_free(&local);
    return AC_OK;
}
