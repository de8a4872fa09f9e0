/* mask_construct.c — logits and weights for masked heads
 * (doc/mathematics.md §3.8):
 *   - Woerdeman's completion of [log P 1] on a staircase Omega (the proof of
 *     Lemma W): the keys of block k after the first take, off Omega, the
 *     combination W T of the keys before them, W = V U^+ the coefficients
 *     that reproduce their visible entries V from those of the earlier keys
 *     U (least squares with the relative cut rel on U's singular values);
 *     then Z = K N (K = I - 11'/n) has rank rank([N 1]) - 1 (Lemma S);
 *   - the alternating projection between the logits that reproduce P on
 *     Omega up to column shifts and those of rank dk in {Q C Q'} (an
 *     approximation only: every weight written is certified);
 *   - the masked error of logits in double, to choose among candidates.
 *
 * Dimension letters: n tokens, dk head size, r = rank X.  Buffers are
 * row-major; logits are n x n, row = key, column = query.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/linalg.h"
#include "attncheck/rng.h"
#include "attncheck/theorem1.h"
#include "attention/head_impl.h"
#include "theorem1/t1_mask.h"

/* ---- Woerdeman's completion ------------------------------------------------- */

/* M(rows R, cols C) gathered into A (|R| x |C| + ones: the last column of
 * [N 1] is column n of M, which holds 1). */
static int gather(ac_mat *A, const ac_mat *M, const size_t *R, size_t nr, const size_t *C,
                  size_t nc, int ones, ac_err *err)
{
    int st = ac_mat_init(A, nr, nc + (ones != 0), err);
    if (st)
        return st;
    for (size_t u = 0; u < nr; u++) {
        for (size_t v = 0; v < nc; v++)
            AC_MAT(A, u, v) = AC_MAT(M, R[u], C[v]);
        if (ones)
            AC_MAT(A, u, nc) = 1.0;
    }
    return AC_OK;
}

int t1_woerdeman_completion(ac_mat *N, const t1_support *s, const ac_mat *P, double rel,
                            ac_err *err)
{
    const t1_stair *st = &s->stair;
    size_t n = s->n;
    int rc;
    if (!s->chain)
        return ac_err_set(err, AC_EUSAGE, "Woerdeman's completion needs a staircase support");
    if ((rc = ac_mat_init(N, n, n, err)))
        return rc;
    for (size_t i = 0; i < n; i++) /* log P on Omega; the rest is filled below */
        for (size_t j = 0; j < n; j++)
            AC_MAT(N, i, j) = s->om[i * n + j] ? log(AC_MAT(P, i, j)) : 0.0;
    for (size_t k = 1; k < st->K && !rc; k++) {
        size_t a0 = st->ilen[k - 1], a1 = st->ilen[k], b = st->jlen[k];
        const size_t *G = st->korder + a0, *Sk = st->qorder, *Fk = st->qorder + b;
        ac_mat U = {0}, V = {0}, T = {0}, Up = {0}, W = {0}, F = {0};
        /* U = [N 1](I_{k-1}, S_k), V = [N 1](G_k, S_k), T = N(I_{k-1}, off S_k) */
        if (!(rc = gather(&U, N, st->korder, a0, Sk, b, 1, err)) &&
            !(rc = gather(&V, N, G, a1 - a0, Sk, b, 1, err)) &&
            !(rc = gather(&T, N, st->korder, a0, Fk, n - b, 0, err)) &&
            !(rc = ac_approx_pinv(&Up, &U, rel, err)) && !(rc = ac_mat_init(&W, a1 - a0, a0, err)) &&
            !(rc = ac_gemm(&W, AC_NOTRANS, &V, AC_NOTRANS, &Up, err)) &&
            !(rc = ac_mat_init(&F, a1 - a0, n - b, err)) &&
            !(rc = ac_gemm(&F, AC_NOTRANS, &W, AC_NOTRANS, &T, err)))
            for (size_t u = 0; u < a1 - a0; u++)
                for (size_t v = 0; v < n - b; v++)
                    AC_MAT(N, G[u], Fk[v]) = AC_MAT(&F, u, v);
        ac_mat_free(&U);
        ac_mat_free(&V);
        ac_mat_free(&T);
        ac_mat_free(&Up);
        ac_mat_free(&W);
        ac_mat_free(&F);
    }
    /* keys no query sees: a copy of the first key's row, so that [N 1]
     * keeps its rank (their logits never enter a softmax) */
    for (size_t t = st->ilen[st->K - 1]; t < n && !rc; t++)
        memcpy(N->data + st->korder[t] * n, N->data + st->korder[0] * n, n * sizeof(double));
    if (rc)
        ac_mat_free(N);
    return rc;
}

/* ---- Lemma G's construction ------------------------------------------------ */

int t1_general_position_logits(ac_mat *Z, const t1_support *s, const ac_mat *P, size_t dk,
                               ac_err *err)
{
    size_t n = s->n, m = dk + 1;
    ac_mat Kt = {0}, A = {0}, Ap = {0}, Q = {0};
    ac_rng g;
    int st;
    if (s->maxq > m)
        return ac_err_set(err, AC_EUSAGE, "Lemma G needs dk >= max_j |Omega_j| - 1");
    if ((st = ac_mat_init(&Kt, n, m, err)) || (st = ac_mat_init(&Q, n, m, err)) ||
        (st = ac_mat_init(Z, n, n, err)))
        goto out;
    /* keys (k_i, 1) in general position: Gaussian, a fixed stream */
    ac_rng_init(&g, 0x7431u, 1, 0);
    ac_rng_normal_fill(&g, Kt.data, n * m);
    for (size_t i = 0; i < n; i++)
        AC_MAT(&Kt, i, dk) = 1.0;
    for (size_t j = 0; j < n && !st; j++) {
        /* (k~_i)' q~_j = log P_ij for the visible keys: least-norm solution */
        size_t c = s->cq[j], t = 0;
        ac_mat_free(&A);
        ac_mat_free(&Ap);
        if ((st = ac_mat_init(&A, c, m, err)))
            break;
        double *rhs = malloc(c * sizeof(double));
        if (!rhs) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            break;
        }
        for (size_t i = 0; i < n; i++)
            if (s->om[i * n + j]) {
                memcpy(A.data + t * m, Kt.data + i * m, m * sizeof(double));
                rhs[t++] = log(AC_MAT(P, i, j));
            }
        if (!(st = ac_approx_pinv(&Ap, &A, 1e-14, err)))
            for (size_t k = 0; k < m; k++) {
                double v = 0;
                for (size_t u = 0; u < c; u++)
                    v += AC_MAT(&Ap, k, u) * rhs[u];
                AC_MAT(&Q, j, k) = v;
            }
        free(rhs);
    }
    if (!st) /* Z = K Q' over the first dk coordinates: rank <= dk */
        ac_dgemm(AC_NOTRANS, AC_TRANS, n, n, dk, 1.0, Kt.data, m, Q.data, m, 0.0, Z->data, n);
out:
    ac_mat_free(&Kt);
    ac_mat_free(&A);
    ac_mat_free(&Ap);
    ac_mat_free(&Q);
    if (st)
        ac_mat_free(Z);
    return st;
}

/* ---- the least-squares logits in {Q B Q'} ------------------------------------ */

int t1_masked_lsq_logits(ac_mat *Z, const t1_support *s, const ac_mat *P, const ac_mat *Q,
                         ac_err *err)
{
    size_t n = s->n, r = Q->cols, m = s->nvis, u = r * r + n;
    ac_mat D = {0}, Dp = {0};
    double *y = malloc((m ? m : 1) * sizeof(double)), *th = calloc(u, sizeof(double));
    int st;
    if (!y || !th) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    /* one row per visible (i, j): (Q_i (x) Q_j, e_j) . (vec B, c) = log P_ij */
    if ((st = ac_mat_init(&D, m, u, err)))
        goto out;
    for (size_t i = 0, row = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            if (!s->om[i * n + j])
                continue;
            for (size_t a = 0; a < r; a++)
                for (size_t b = 0; b < r; b++)
                    AC_MAT(&D, row, a * r + b) = AC_MAT(Q, i, a) * AC_MAT(Q, j, b);
            AC_MAT(&D, row, r * r + j) = 1.0;
            y[row++] = log(AC_MAT(P, i, j));
        }
    if ((st = ac_approx_pinv(&Dp, &D, 1e-12, err)))
        goto out;
    for (size_t k = 0; k < u; k++)
        for (size_t e = 0; e < m; e++)
            th[k] += AC_MAT(&Dp, k, e) * y[e];
    /* Z = Q B Q' (the shifts c only move columns on the support) */
    if ((st = ac_mat_init(Z, n, n, err)))
        goto out;
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < r; a++) {
            double qa = AC_MAT(Q, i, a);
            for (size_t b = 0; b < r; b++) {
                double f = qa * th[a * r + b];
                for (size_t j = 0; j < n; j++)
                    AC_MAT(Z, i, j) += f * AC_MAT(Q, j, b);
            }
        }
out:
    free(y);
    free(th);
    ac_mat_free(&D);
    ac_mat_free(&Dp);
    return st;
}

/* ---- the masked error in double --------------------------------------------- */

double t1_masked_err_logits(const ac_mat *Z, const t1_support *s, const ac_mat *P)
{
    size_t n = s->n;
    double *S = malloc(n * n * sizeof(double)), e = 0;
    if (!S)
        return INFINITY;
    memcpy(S, Z->data, n * n * sizeof(double));
    ac_head_softmax_cols_masked(S, n, s->om);
    for (size_t i = 0; i < n * n; i++) {
        double v = fabs(S[i] - P->data[i]);
        if (!(v <= e))
            e = v == v ? v : INFINITY;
    }
    free(S);
    return e;
}

/* ---- the alternating projection ---------------------------------------------- */

/* Z = Q trunc_dk(Q' M Q) Q' (Q NULL: trunc_dk(M)), by an SVD. */
static int truncate_logits(ac_mat *Z, const ac_mat *M, const ac_mat *Q, size_t dk, ac_err *err)
{
    size_t n = M->rows, r = Q ? Q->cols : n;
    ac_mat C = {0}, T = {0}, U = {0}, Vt = {0}, R = {0};
    double *sv = malloc((r ? r : 1) * sizeof(double));
    int st;
    if (!sv)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if (Q) {
        if ((st = ac_mat_init(&T, r, n, err)) || (st = ac_mat_init(&C, r, r, err)) ||
            (st = ac_gemm(&T, AC_TRANS, Q, AC_NOTRANS, M, err)) ||
            (st = ac_gemm(&C, AC_NOTRANS, &T, AC_NOTRANS, Q, err)))
            goto out;
    } else if ((st = ac_mat_copy(&C, M, err)))
        goto out;
    if ((st = ac_approx_svd(&C, &U, sv, &Vt, err)))
        goto out;
    size_t k = dk < r ? dk : r;
    if ((st = ac_mat_init(&R, r, r, err)))
        goto out;
    for (size_t a = 0; a < r; a++) /* R = U_k S_k Vt_k */
        for (size_t l = 0; l < k; l++) {
            double f = AC_MAT(&U, a, l) * sv[l];
            if (f != 0)
                for (size_t b = 0; b < r; b++)
                    AC_MAT(&R, a, b) += f * AC_MAT(&Vt, l, b);
        }
    if (Q) {
        ac_mat QR = {0};
        if (!(st = ac_mat_init(&QR, n, r, err)) &&
            !(st = ac_gemm(&QR, AC_NOTRANS, Q, AC_NOTRANS, &R, err)))
            st = ac_gemm(Z, AC_NOTRANS, &QR, AC_TRANS, Q, err);
        ac_mat_free(&QR);
    } else
        memcpy(Z->data, R.data, n * n * sizeof(double));
out:
    free(sv);
    ac_mat_free(&C);
    ac_mat_free(&T);
    ac_mat_free(&U);
    ac_mat_free(&Vt);
    ac_mat_free(&R);
    return st;
}

/* M = Z with the visible entries of each column j replaced by log P_ij + c_j,
 * c_j the mean of Z_ij - log P_ij over the visible keys (the nearest point
 * of the affine set of logits that reproduce P on Omega). */
static void impose(ac_mat *M, const ac_mat *Z, const double *L, const t1_support *s)
{
    size_t n = s->n;
    memcpy(M->data, Z->data, n * n * sizeof(double));
    for (size_t j = 0; j < n; j++) {
        double c = 0;
        for (size_t i = 0; i < n; i++)
            if (s->om[i * n + j])
                c += AC_MAT(Z, i, j) - L[i * n + j];
        c /= (double)s->cq[j];
        for (size_t i = 0; i < n; i++)
            if (s->om[i * n + j])
                AC_MAT(M, i, j) = L[i * n + j] + c;
    }
}

int t1_masked_project(ac_mat *Z, const t1_support *s, const ac_mat *P, const ac_mat *Q,
                      size_t dk, int iters, double stop, ac_err *err)
{
    size_t n = s->n;
    ac_mat M = {0}, best = {0};
    double *L = malloc(n * n * sizeof(double)), berr;
    int st;
    if (!L)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < n * n; i++)
        L[i] = s->om[i] ? log(P->data[i]) : 0.0;
    if ((st = ac_mat_copy(&M, Z, err)) ||
        (st = truncate_logits(Z, &M, Q, dk, err)) || (st = ac_mat_copy(&best, Z, err)))
        goto out;
    berr = t1_masked_err_logits(Z, s, P);
    for (int it = 0; it < iters && !(berr <= stop); it++) {
        impose(&M, Z, L, s);
        if ((st = truncate_logits(Z, &M, Q, dk, err)))
            goto out;
        double e = t1_masked_err_logits(Z, s, P);
        if (e < berr) {
            berr = e;
            memcpy(best.data, Z->data, n * n * sizeof(double));
        }
    }
    memcpy(Z->data, best.data, n * n * sizeof(double));
out:
    free(L);
    ac_mat_free(&M);
    ac_mat_free(&best);
    return st;
}
